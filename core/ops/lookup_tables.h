// int8 activations whose output depends on nothing but the int8 input and the
// quantization: their 256 outputs computed at compile time with TFLite Micro's own
// arithmetic (the fixed point of its reference kernels, or its float steps in float32),
// for the `qlookup` op (ops/qactivation.cc) to read at table[x + 128]. `op` names the
// operator in errors.
#pragma once

#include <cstdint>
#include <string>

#include "support/ndarray.h"

namespace mtir {
namespace ops {

struct Int8Quant {
  double input_scale;
  int32_t input_zero_point;
  double output_scale;
  int32_t output_zero_point;
};

// TFLM's int8 HARD_SWISH (reference_ops::HardSwish with HardSwishPrepare's int16
// fixed-point multipliers).
NDArray hard_swish_table(const Int8Quant& q, const std::string& op);
// TFLM's int8 ELU: its own lookup table (dequantize, exp(x) - 1 below 0, round, requantize).
NDArray elu_table(const Int8Quant& q);
// TFLM's int8 RSQRT (RsqrtEvalQuantized: GetInvSqrtQuantizedMultiplierExp's Newton
// iteration, two requantizations). TFLM's Invoke fails on an input below the zero point
// (a negative real); the table gives the largest output there, as for 0.
NDArray rsqrt_table(const Int8Quant& q, const std::string& op);

}  // namespace ops
}  // namespace mtir
