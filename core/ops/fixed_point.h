// gemmlowp's fixed-point arithmetic as TFLite's int8 kernels use it, evaluated at compile
// time: the tables of qsoftmax (exp of every input difference), qlogistic and qtanh
// (the output of every int8 input) hold exactly the values TFLite's reference kernels
// compute at run time, because those values depend on nothing but the int8 input (or
// difference) and the quantization parameters. See docs/quantization.md.
#pragma once

#include <array>
#include <cstdint>
#include <string>

namespace mtir {
namespace ops {
namespace fixed_point {

// SaturatingRoundingDoublingHighMul and RoundingDivideByPOT (exponent in [0, 31]).
int32_t doubling_high_mul(int32_t a, int32_t b);
int32_t divide_by_pot(int32_t x, int exponent);
// SaturatingRoundingMultiplyByPOT: x * 2^exponent saturated (exponent > 0), else rounded.
int32_t multiply_by_pot(int32_t x, int exponent);
// exp(a) for a <= 0 with `integer_bits` integer bits in, 0 out (exp_on_negative_values).
int32_t exp_on_negative_values(int32_t a, int integer_bits);
// gemmlowp's logistic and tanh with 0 integer bits out.
int32_t logistic(int32_t a, int integer_bits);
int32_t tanh(int32_t a, int integer_bits);

// Compile-time parameters of TFLite's int8 SOFTMAX (PreprocessSoftmaxScaling,
// CalculateInputRadius); `op` names the op in errors.
struct SoftmaxParams {
  int32_t input_multiplier;
  int input_left_shift;
  int diff_min;
};
SoftmaxParams softmax_params(double input_scale, double beta, const std::string& op);
// exp of the scaled difference -d for d = 0..255, 0 for d beyond -diff_min (excluded).
std::array<int32_t, 256> softmax_exp_table(const SoftmaxParams& p);

// TFLite's int8 LOGISTIC (out scale 1/256, zero point -128) or TANH (1/128, 0): the int8
// output for every input code x, at table[x + 128].
std::array<int8_t, 256> activation_table(bool tanh, double input_scale, int32_t input_zero_point, const std::string& op);

// TFLite's gen_lut<float, int16_t, int16_t> as TFLM's int16 SOFTMAX prepares it: 512
// samples of f over [input_min, input_max] scaled to [-32768, 32767] (output range
// [-1, 1]), each corrected by half the rounded error of linear interpolation at the
// midpoint, and f(input_max) as entry 512 (for the last slope). `exp`: std::exp on
// [-10, 0]; otherwise 1 / (1 + x) on [0, 1]. In float32, as TFLM computes it.
std::array<int16_t, 513> softmax_int16_lut(bool exp);

}  // namespace fixed_point
}  // namespace ops
}  // namespace mtir
