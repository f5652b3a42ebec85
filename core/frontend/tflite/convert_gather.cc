// GATHER (axis, batch_dims) and GATHER_ND: the indices may be constants or computed at
// run time (int32, as TFLM reads them, or int64); constant indices are checked here, the
// others by the kernel before each use (an index outside its axis makes the run fail,
// as TFLM's Eval does). The data is moved bytes for bytes in every dtype.
#include "frontend/tflite/converter.h"

namespace mtir {
namespace tflite_import {

void TfliteConverter::gather(const tflite::Operator& op, bool nd) {
  int x = input(op, 0), idx = input(op, 1), out = output(op);
  TensorType xt = tensor_type(x), it = tensor_type(idx);
  if (it.dtype != DataType::Int(32) && it.dtype != DataType::Int(64))
    fail("the indices " + tensor_label(idx) + " are " + it.dtype.str() + " (int32 expected)");
  json attrs = json::object();
  const int64_t rank = static_cast<int64_t>(xt.shape.size());
  // The size of the axis each index addresses: for GATHER the gathered axis; for
  // GATHER_ND index k (of the last axis of the indices) addresses data axis k.
  std::function<int64_t(int64_t)> bound;
  if (!nd) {
    const auto* opt = op.builtin_options_as_GatherOptions();
    int64_t axis = opt ? opt->axis() : 0;
    if (axis < -rank || axis >= rank) fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
    if (axis < 0) axis += rank;
    attrs = {{"axis", axis}, {"batch_dims", opt ? opt->batch_dims() : 0}};
    bound = [&, axis](int64_t) { return xt.shape[static_cast<size_t>(axis)]; };
  } else {
    if (it.shape.empty() || it.shape.back() > rank)
      fail("the indices " + it.str() + " must end in an axis of at most the data's rank (" + std::to_string(rank) + ")");
    const int64_t depth = it.shape.back();
    bound = [&, depth](int64_t k) { return xt.shape[static_cast<size_t>(k % depth)]; };
  }
  if (has_data(idx)) {
    NDArray a = constant_value(idx);
    for (int64_t k = 0; k < a.num_elements(); ++k)
      if (a.get_int(k) < 0 || a.get_int(k) >= bound(k))
        fail("index " + std::to_string(a.get_int(k)) + " (element " + std::to_string(k) + " of " + tensor_label(idx) +
             ") is outside [0, " + std::to_string(bound(k)) + ")");
  }
  emit(values_.at(out), nd ? "gather_nd" : "gather", {value(x), value(idx)}, attrs);
}

}  // namespace tflite_import
}  // namespace mtir
