// TFLM's int8 ADD_N and CUMSUM (reference_ops::AddN and CumSum for int8, as add_n.cc and
// cumsum.cc prepare them): each input (x - zp) * 2^20 times the multiplier of
// scale / (2 scale) = 0.5, which is exactly (x - zp) * 2^19; an int32 sum that starts at
// the input offset, -zp * 2^19 (the kernels set "accumulator = input1_offset", not 0);
// the sum requantized by 2 scale / (2^20 output scale) to int8. Here: `requantize` of
// each input to int32 at scale / 2^19 (its multiplier is exactly 2^19), int32 `add` or
// `cumsum`, the start added, and `requantize` to the output.
#include "frontend/tflite/converter.h"

namespace mtir {
namespace tflite_import {

namespace {
constexpr double kUnit = 1.0 / (1 << 19);  // the int32 sum's scale, relative to the input's
}

// The input's quantization, which every input shares (TFLM's Prepare requires it).
Quant TfliteConverter::scaled_sum_quant(const tflite::Operator& op, size_t inputs) const {
  Quant q = quant(input(op, 0), true);
  if (!q.per_tensor()) unsupported("per-channel quantized activations");
  for (size_t i = 1; i < inputs; ++i) {
    Quant qi = quant(input(op, i), true);
    if (qi.scale != q.scale || qi.zero_point != q.zero_point)
      unsupported("int8 inputs of different quantization (TFLM requires one scale and zero point)");
  }
  return q;
}

std::string TfliteConverter::scaled_input(int t, const Quant& q, const std::string& base) {
  return emit(fresh(base), "requantize", {value(t)},
              {{"input_scale", q.scale[0]}, {"input_zero_point", q.zero_point[0]},
               {"output_scale", q.scale[0] * kUnit}, {"output_zero_point", 0}, {"dtype", "int32"}});
}

void TfliteConverter::scaled_sum_output(int out, const Quant& q, const std::string& sum) {
  const std::string name = values_.at(out);
  NDArray start = NDArray::zeros(DataType::Int(32), {1});
  start.set_int(0, -q.zero_point[0] * (int64_t{1} << 19));
  std::string total = emit(fresh(name + "_from_offset"), "add", {sum, add_constant(name + "_start", std::move(start))});
  Quant qo = quant(out, true);
  if (!qo.per_tensor()) unsupported("per-channel quantized activations");
  emit(name, "requantize", {total},
       {{"input_scale", q.scale[0] * kUnit}, {"input_zero_point", 0}, {"output_scale", qo.scale[0]},
        {"output_zero_point", qo.zero_point[0]}, {"dtype", "int8"}});
}

}  // namespace tflite_import
}  // namespace mtir
