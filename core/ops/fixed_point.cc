#include "ops/fixed_point.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/op_util.h"
#include "ops/quant_util.h"

namespace mtir {
namespace ops {
namespace fixed_point {
namespace {

constexpr int32_t kMax = std::numeric_limits<int32_t>::max();
constexpr int32_t kMin = std::numeric_limits<int32_t>::min();

int32_t wrap(int64_t v) { return static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(v))); }

}  // namespace

int32_t multiply_by_pot(int32_t x, int exponent) {
  if (exponent <= 0) return divide_by_pot(x, -exponent);
  const int64_t limit = (int64_t{1} << (31 - exponent)) - 1;
  if (x > limit) return kMax;
  if (x < -limit) return kMin;
  return wrap(int64_t{x} * (int64_t{1} << exponent));
}

namespace {

int32_t one(int integer_bits) { return integer_bits == 0 ? kMax : int32_t{1} << (31 - integer_bits); }

// x ~= 1 / half_denominator (2 integer bits) by three Newton-Raphson steps from 48/17 - 32/17 d.
int32_t reciprocal_of_half_denominator(int32_t a) {
  const int64_t sum = int64_t{a} + kMax;
  const int32_t d = static_cast<int32_t>((sum + (sum >= 0 ? 1 : -1)) / 2);  // RoundingHalfSum(a, 1)
  int32_t x = wrap(int64_t{1515870810} + doubling_high_mul(d, -1010580540));
  for (int i = 0; i < 3; ++i) {
    const int32_t err = wrap(int64_t{one(2)} - doubling_high_mul(d, x));
    x = wrap(int64_t{x} + multiply_by_pot(doubling_high_mul(x, err), 2));
  }
  return x;
}

int32_t one_over_one_plus_x(int32_t a) { return multiply_by_pot(reciprocal_of_half_denominator(a), 1); }
int32_t one_minus_x_over_one_plus_x(int32_t a) {
  return multiply_by_pot(wrap(int64_t{reciprocal_of_half_denominator(a)} - one(2)), 2);
}

// exp on [-1/4, 0): the Taylor series around -1/8 to the fourth power.
int32_t exp_near_zero(int32_t a) {
  const int32_t e_minus_eighth = 1895147668, third = 715827883;
  const int32_t x = wrap(int64_t{a} + (1 << 28));
  const int32_t x2 = doubling_high_mul(x, x), x3 = doubling_high_mul(x2, x), x4 = doubling_high_mul(x2, x2);
  const int32_t poly = wrap(int64_t{doubling_high_mul(wrap(int64_t{divide_by_pot(x4, 2)} + x3), third)} + x2);
  const int32_t tail = divide_by_pot(poly, 1);
  return wrap(int64_t{e_minus_eighth} + doubling_high_mul(e_minus_eighth, wrap(int64_t{x} + tail)));
}

}  // namespace

int32_t doubling_high_mul(int32_t a, int32_t b) {
  if (a == kMin && b == kMin) return kMax;
  // Round half up of a * b / 2^31: gemmlowp's nudge with a truncating division.
  return static_cast<int32_t>((int64_t{a} * b + (int64_t{1} << 30)) >> 31);
}

int32_t divide_by_pot(int32_t x, int exponent) {
  if (exponent == 0) return x;
  // Round half away from zero, in int64 so that x + half cannot overflow.
  const int64_t half = int64_t{1} << (exponent - 1);
  return static_cast<int32_t>((int64_t{x} + half - (x < 0 ? 1 : 0)) >> exponent);
}

int32_t exp_on_negative_values(int32_t a, int integer_bits) {
  const int fraction = 31 - integer_bits;
  const int32_t quarter = int32_t{1} << (fraction - 2);
  const int32_t reduced = (a & (quarter - 1)) - quarter;  // in [-1/4, 0)
  int32_t result = exp_near_zero(multiply_by_pot(reduced, integer_bits));
  const int32_t remainder = wrap(int64_t{reduced} - a);  // a multiple of 1/4: the rest of -a
  // exp(-2^k) for k = -2..4 with 0 integer bits.
  static const int32_t kFactors[] = {1672461947, 1302514674, 790015084, 290630308, 39332535, 720401, 242};
  for (int k = -2; k <= 4; ++k)
    if (integer_bits > k && (remainder & (int32_t{1} << (fraction + k)))) result = doubling_high_mul(result, kFactors[k + 2]);
  if (integer_bits > 5 && a < -(int32_t{1} << (36 - integer_bits))) result = 0;
  return a == 0 ? kMax : result;
}

int32_t logistic(int32_t a, int integer_bits) {
  if (a == 0) return int32_t{1} << 30;
  const int32_t positive = one_over_one_plus_x(exp_on_negative_values(a > 0 ? -a : a, integer_bits));
  return a > 0 ? positive : wrap(int64_t{kMax} - positive);
}

int32_t tanh(int32_t a, int integer_bits) {
  if (a == 0) return 0;
  const int32_t t = one_minus_x_over_one_plus_x(exp_on_negative_values(a < 0 ? a : -a, integer_bits + 1));
  return a < 0 ? -t : t;
}

SoftmaxParams softmax_params(double input_scale, double beta, const std::string& op) {
  const int kScaledDiffIntegerBits = 5;
  double real = std::min(beta * input_scale * double(int64_t{1} << (31 - kScaledDiffIntegerBits)),
                         double(int64_t{1} << 31) - 1.0);
  if (!(real > 1))
    fail(op, "beta * input_scale * 2^26 must be above 1 (TFLite's QuantizeMultiplierGreaterThanOne), got " +
                 std::to_string(real));
  int shift = 0;
  double q = std::frexp(real, &shift);
  int64_t fixed = static_cast<int64_t>(std::round(q * double(int64_t{1} << 31)));
  if (fixed == (int64_t{1} << 31)) fixed /= 2, ++shift;
  if (shift > 30)
    fail(op, "beta * input_scale is too large (the input multiplier would shift left by " + std::to_string(shift) +
                 "; at most 30)");
  const double radius = 1.0 * ((1 << kScaledDiffIntegerBits) - 1) *
                        double(int64_t{1} << (31 - kScaledDiffIntegerBits)) / double(int64_t{1} << shift);
  return SoftmaxParams{static_cast<int32_t>(fixed), shift, -static_cast<int>(std::floor(radius))};
}

std::array<int32_t, 256> softmax_exp_table(const SoftmaxParams& p) {
  std::array<int32_t, 256> t{};
  for (int d = 0; d < 256; ++d) {
    if (-d < p.diff_min) continue;  // excluded: TFLite adds nothing and outputs -128
    const int32_t scaled = doubling_high_mul(-d * (1 << p.input_left_shift), p.input_multiplier);
    t[d] = exp_on_negative_values(scaled, 5);
  }
  return t;
}

std::array<int8_t, 256> activation_table(bool is_tanh, double input_scale, int32_t input_zero_point,
                                         const std::string& op) {
  const int kInputIntegerBits = 4;
  int shift = 0;
  const double q = std::frexp(input_scale * double(1 << (31 - kInputIntegerBits)), &shift);
  const int64_t multiplier = static_cast<int64_t>(std::round(q * double(int64_t{1} << 31)));
  if (multiplier >= (int64_t{1} << 31) || shift < 0 || !std::isfinite(input_scale))
    fail(op, "input_scale out of the range TFLite's int8 kernel handles (input_scale * 2^27 must be at least 0.5)");
  const double radius_real = 1.0 * ((1 << kInputIntegerBits) - 1) * double(int64_t{1} << (31 - kInputIntegerBits)) /
                             std::ldexp(1.0, shift);
  const int32_t radius = static_cast<int32_t>(std::floor(radius_real));
  std::array<int8_t, 256> t{};
  for (int code = -128; code < 128; ++code) {
    const int32_t x = code - input_zero_point;
    int32_t y;
    if (x <= -radius) {
      y = -128;
    } else if (x >= radius) {
      y = 127;
    } else {
      // MultiplyByQuantizedMultiplier with a left shift (shift >= 0 here).
      const int32_t left = std::min(shift, 31);
      const int32_t in_q4 = doubling_high_mul(wrap(int64_t{x} * (int64_t{1} << left)), static_cast<int32_t>(multiplier));
      y = is_tanh ? divide_by_pot(tanh(in_q4, kInputIntegerBits), 24)
                  : divide_by_pot(logistic(in_q4, kInputIntegerBits), 23) - 128;
      y = std::max(-128, std::min(127, y));
    }
    t[code + 128] = static_cast<int8_t>(y);
  }
  return t;
}

std::array<int16_t, 513> softmax_int16_lut(bool exp) {
  auto f = [exp](float v) { return exp ? std::exp(v) : 1.0f / (1.0f + v); };
  const float input_min = exp ? -10.0f : 0.0f, input_max = exp ? 0.0f : 1.0f;
  const int steps = 512;
  const float step = (input_max - input_min) / steps;
  const float half_step = step / 2;
  const float scale = 65536.0f / 2.0f;  // (max - min + 1) of int16 over the output range [-1, 1]
  auto clamp16 = [](float v) { return static_cast<int16_t>(std::min(std::max(v, -32768.0f), 32767.0f)); };
  std::array<int16_t, 513> lut{};
  for (int i = 0; i < steps; ++i) {
    const float val = f(input_min + static_cast<float>(i) * step);
    const float val_midpoint = f(input_min + static_cast<float>(i) * step + half_step);
    const float val_next = f(input_min + static_cast<float>(i + 1) * step);
    const float sample = std::round(val * scale);
    const float midpoint_interp = std::round((val_next * scale + std::round(val * scale)) / 2);
    const float midpoint = std::round(val_midpoint * scale);
    const float bias = std::round((midpoint_interp - midpoint) / 2);
    lut[static_cast<size_t>(i)] = clamp16(sample - bias);
  }
  lut[steps] = clamp16(std::round(f(input_max) * scale));
  return lut;
}

}  // namespace fixed_point
}  // namespace ops
}  // namespace mtir
