// STRIDED_SLICE: every dtype, with constant begin, end and strides tensors (int32 as
// TFLM reads them, or int64), the begin, end and shrink-axis masks and negative strides
// (`strided_slice` resolves them as TFLite's strided_slice_logic does). The ellipsis and
// new-axis masks are refused: TFLM's kernel ignores them (it sets both to 0), so no
// TFLM output exists to match. `offset` (end relative to begin) is TFLite's meaning;
// TFLM ignores it too, so its output shape check fails for a model that uses it.
#include "frontend/tflite/converter.h"

namespace mtir {
namespace tflite_import {

void TfliteConverter::strided_slice(const tflite::Operator& op) {
  int x = input(op, 0), out = output(op);
  TensorType xt = tensor_type(x);
  const int64_t rank = static_cast<int64_t>(xt.shape.size());
  const auto* opt = op.builtin_options_as_StridedSliceOptions();
  auto indices = [&](size_t i, const char* what) {
    int t = input(op, i);
    if (!has_data(t)) unsupported(std::string(what) + " computed at run time (TFLM requires constant begin, end, strides)");
    NDArray a = constant_value(t);
    if (a.dtype != DataType::Int(32) && a.dtype != DataType::Int(64))
      fail(std::string("the ") + what + " tensor must be int32, it is " + a.dtype.str());
    if (a.num_elements() != rank)
      fail(std::string("the ") + what + " tensor has " + std::to_string(a.num_elements()) + " values for the " +
           std::to_string(rank) + " axes of the input");
    std::vector<int64_t> v;
    for (int64_t k = 0; k < rank; ++k) v.push_back(a.get_int(k));
    return v;
  };
  json attrs = {{"begin", indices(1, "begin")}, {"end", indices(2, "end")}, {"strides", indices(3, "strides")}};
  if (opt) {
    if (opt->ellipsis_mask() != 0 || opt->new_axis_mask() != 0)
      unsupported("STRIDED_SLICE with an ellipsis or new-axis mask (TFLM's kernel does not implement them)");
    attrs["begin_mask"] = opt->begin_mask();
    attrs["end_mask"] = opt->end_mask();
    attrs["shrink_axis_mask"] = opt->shrink_axis_mask();
    if (opt->offset()) attrs["offset"] = true;
  }
  emit(values_.at(out), "strided_slice", {value(x)}, attrs);
}

}  // namespace tflite_import
}  // namespace mtir
