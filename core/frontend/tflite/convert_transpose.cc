// TRANSPOSE: a permutation of the axes, given by a constant int32 tensor, as TFLM's
// kernel takes it (ranks 1 to 5, a constant permutation of 0..rank-1). The data is only
// moved, so any dtype we read moves bytes for bytes; the output's quantization is the
// input's bytes reinterpreted, as in TFLM, which copies without requantizing.
#include "frontend/tflite/converter.h"

namespace mtir {
namespace tflite_import {

void TfliteConverter::transpose(const tflite::Operator& op) {
  int x = input(op, 0), p = input(op, 1), out = output(op);
  TensorType xt = tensor_type(x), ot = tensor_type(out);
  int64_t rank = static_cast<int64_t>(xt.shape.size());
  if (rank < 1 || rank > 5) unsupported("TRANSPOSE of a rank-" + std::to_string(rank) + " tensor (ranks 1 to 5, as in TFLM)");
  if (ot.dtype != xt.dtype) fail("the output is " + ot.dtype.str() + " but the input is " + xt.dtype.str());
  if (!has_data(p)) unsupported("a permutation computed at run time (" + tensor_label(p) + " must be a constant)");
  NDArray perm = constant_value(p);
  if (perm.dtype != DataType::Int(32) && perm.dtype != DataType::Int(64))
    fail("the permutation " + tensor_label(p) + " is " + perm.dtype.str() + " (int32 expected)");
  if (perm.shape != std::vector<int64_t>{rank})
    fail("the permutation must be [" + std::to_string(rank) + "], it is " + TensorType{perm.dtype, perm.shape}.str());
  json axes = json::array();
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (int64_t k = 0; k < rank; ++k) {
    int64_t a = perm.get_int(k);
    if (a < 0 || a >= rank || seen[static_cast<size_t>(a)])
      fail("the permutation " + TensorType{perm.dtype, perm.shape}.str() + " is not a permutation of 0.." +
           std::to_string(rank - 1) + " (entry " + std::to_string(k) + " is " + std::to_string(a) + ")");
    seen[static_cast<size_t>(a)] = true;
    axes.push_back(a);
  }
  emit(values_.at(out), "transpose", {value(x)}, {{"axes", axes}});
}

}  // namespace tflite_import
}  // namespace mtir
