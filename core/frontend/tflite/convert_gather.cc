// GATHER (axis, batch_dims) and GATHER_ND: the indices may be constants or computed at
// run time (int32, as TFLM reads them, or int64); constant indices are checked here, the
// others by the kernel before each use (an index outside its axis makes the run fail,
// as TFLM's Eval does). The data is moved bytes for bytes in every dtype. And
// EMBEDDING_LOOKUP, a gather of rows.
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

// EMBEDDING_LOOKUP (TFLM's embedding_lookup.cc): rows of the table (input 1, float32 or
// int8, rank 2 or more) picked by int32 ids (input 0, rank 1): a `gather` on axis 0. An
// int8 table with a float32 output is TFLM's hybrid lookup: the rows dequantized with
// the table's scale and a zero point of 0 (TFLM requires 0).
void TfliteConverter::embedding_lookup(const tflite::Operator& op) {
  int ids = input(op, 0), table = input(op, 1), out = output(op);
  TensorType it = tensor_type(ids), tt = tensor_type(table), ot = tensor_type(out);
  if (it.dtype != DataType::Int(32) || it.shape.size() != 1) fail("the ids " + tensor_label(ids) + " must be int32 of rank 1");
  if (tt.shape.size() < 2) fail("the table " + tensor_label(table) + " must have rank 2 or more");
  const std::string name = values_.at(out);
  const bool hybrid = tt.dtype == DataType::Int(8) && ot.dtype == DataType::Float(32);
  if (!hybrid && ot.dtype != tt.dtype) fail("the output is " + ot.dtype.str() + ", the table " + tt.dtype.str());
  if (has_data(ids)) {
    NDArray a = constant_value(ids);
    for (int64_t k = 0; k < a.num_elements(); ++k)
      if (a.get_int(k) < 0 || a.get_int(k) >= tt.shape[0])
        fail("id " + std::to_string(a.get_int(k)) + " is outside [0, " + std::to_string(tt.shape[0]) + ")");
  }
  const json axis0 = {{"axis", 0}, {"batch_dims", 0}};
  if (!hybrid) {
    emit(name, "gather", {value(table), value(ids)}, axis0);
    return;
  }
  Quant q = quant(table, true);
  if (!q.per_tensor() || q.zero_point[0] != 0) unsupported("a hybrid EMBEDDING_LOOKUP table without one scale and zero point 0");
  std::string rows = emit(fresh(name + "_rows"), "gather", {value(table), value(ids)}, axis0);
  emit(name, "dequantize", {rows}, {{"scale", q.scale[0]}, {"zero_point", 0}});
}

}  // namespace tflite_import
}  // namespace mtir
