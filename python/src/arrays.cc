#include <cstring>
#include <string>

#include "python/src/bindings.h"
#include "support/diagnostic.h"

namespace mtir::python {

NDArray to_ndarray(py::handle value, const std::string& what) {
  py::array given = py::array::ensure(value);
  if (!given) {
    PyErr_Clear();
    user_error({}, what + " is not an array (numpy.asarray cannot read a " +
                       std::string(py::str(value.get_type().attr("__name__"))) + ")");
  }
  // numpy's name for the dtype is microtir's (float32, int8, uint8, int16, int32, bool, ...).
  const std::string name = py::str(given.dtype().attr("name"));
  std::optional<DataType> dtype = DataType::parse(name);
  if (!dtype) user_error({}, what + " has dtype " + name + ", which microtir does not take");
  py::array a = py::array::ensure(given, py::array::c_style | py::array::forcecast);
  NDArray out;
  out.dtype = *dtype;
  for (py::ssize_t d = 0; d < a.ndim(); ++d) out.shape.push_back(static_cast<int64_t>(a.shape(d)));
  out.data.resize(static_cast<size_t>(a.nbytes()));
  if (a.nbytes() > 0) std::memcpy(out.data.data(), a.data(), out.data.size());
  return out;
}

py::array to_numpy(const NDArray& a) {
  py::dtype dtype(a.dtype.str());
  std::vector<py::ssize_t> shape(a.shape.begin(), a.shape.end());
  py::array out(dtype, shape);
  if (!a.data.empty()) std::memcpy(out.mutable_data(), a.data.data(), a.data.size());
  return out;
}

}  // namespace mtir::python
