#include "ops/lookup_tables.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "ops/fixed_point.h"
#include "ops/quant_util.h"

namespace mtir {
namespace ops {
namespace {

using fixed_point::divide_by_pot;
using fixed_point::doubling_high_mul;
using fixed_point::multiply_by_pot;

NDArray make_table(const std::function<int32_t(int32_t)>& f) {
  NDArray t = NDArray::zeros(DataType::Int(8), {256});
  for (int32_t code = -128; code < 128; ++code) t.set_int(code + 128, std::max(-128, std::min(127, f(code))));
  return t;
}

// TFLite's MultiplyByQuantizedMultiplier on one int32.
int32_t multiply_quantized(int32_t x, int32_t multiplier, int shift) {
  const int left = shift > 0 ? shift : 0, right = shift > 0 ? 0 : -shift;
  const int32_t scaled = static_cast<int32_t>(static_cast<uint32_t>(x) << left);
  return divide_by_pot(doubling_high_mul(scaled, multiplier), right);
}

// ---- int16 fixed point of HARD_SWISH --------------------------------------------------

int16_t clamp16(int64_t v) {
  return static_cast<int16_t>(std::max<int64_t>(-32768, std::min<int64_t>(32767, v)));
}
// gemmlowp's SaturatingRoundingDoublingHighMul on int16 (nudge, truncating division).
int16_t rounding_high_mul16(int16_t a, int16_t b) {
  if (a == b && a == -32768) return 32767;
  const int32_t ab = int32_t{a} * int32_t{b};
  const int32_t nudge = ab >= 0 ? (1 << 14) : 1 - (1 << 14);
  return static_cast<int16_t>((ab + nudge) / (1 << 15));
}
// TFLite's SaturatingDoublingHighMul: the same, truncating toward zero without the nudge.
int16_t truncating_high_mul16(int16_t a, int16_t b) {
  if (a == b && a == -32768) return 32767;
  return static_cast<int16_t>((int32_t{a} * int32_t{b}) / (1 << 15));
}
int16_t divide_by_pot16(int16_t x, int exponent) {
  const int32_t mask = (1 << exponent) - 1, remainder = x & mask;
  const int32_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
  return static_cast<int16_t>((x >> exponent) + (remainder > threshold ? 1 : 0));
}
int16_t saturating_left_shift16(int16_t x, int amount) { return clamp16(int64_t{x} * (int64_t{1} << amount)); }
// TFLite's DownScaleInt32ToInt16Multiplier.
int16_t to_int16_multiplier(int32_t m) {
  if (m >= std::numeric_limits<int32_t>::max() - (1 << 15)) return 32767;
  return static_cast<int16_t>((m + (1 << 15)) >> 16);
}

}  // namespace

NDArray hard_swish_table(const Int8Quant& q, const std::string& op) {
  const float input_scale = static_cast<float>(q.input_scale), output_scale = static_cast<float>(q.output_scale);
  const float hires_input_scale = (1.0f / 128.0f) * input_scale;
  const float reluish_scale = 3.0f / 32768.0f;
  const QuantMultiplier out_m = quantize_multiplier(static_cast<double>(hires_input_scale / output_scale), op,
                                                    "input_scale / 128 / output_scale");
  if (out_m.shift > 0)
    fail(op, "input_scale / output_scale must be below 128 (TFLite's HARD_SWISH shifts its output right only)");
  const QuantMultiplier relu_m = quantize_multiplier(static_cast<double>(hires_input_scale / reluish_scale), op,
                                                     "input_scale / 128 / (3 / 32768)");
  const int16_t out_mult = to_int16_multiplier(out_m.multiplier), relu_mult = to_int16_multiplier(relu_m.multiplier);
  return make_table([&](int32_t code) {
    const int16_t hires = static_cast<int16_t>((code - q.input_zero_point) * (1 << 7));
    const int16_t preshift_out = rounding_high_mul16(hires, out_mult);
    int16_t reluish = hires;
    if (relu_m.shift > 0) reluish = saturating_left_shift16(reluish, relu_m.shift - 1);
    reluish = rounding_high_mul16(reluish, relu_mult);
    if (relu_m.shift > 0) reluish = saturating_left_shift16(reluish, 1);
    if (relu_m.shift < 0) reluish = divide_by_pot16(reluish, -relu_m.shift);
    reluish = static_cast<int16_t>((int32_t{reluish} + (1 << 15)) >> 1);  // [-1, 1] to [0, 1]
    const int16_t out = divide_by_pot16(truncating_high_mul16(reluish, preshift_out), -out_m.shift);
    return int32_t{out} + q.output_zero_point;
  });
}

NDArray elu_table(const Int8Quant& q) {
  const float input_scale = static_cast<float>(q.input_scale);
  const float inverse_scale = 1 / static_cast<float>(q.output_scale);
  return make_table([&](int32_t code) {
    const float x = input_scale * static_cast<float>(code - q.input_zero_point);
    const float y = x < 0.0f ? std::exp(x) - 1.0f : x;
    return static_cast<int32_t>(std::round(y * inverse_scale) + static_cast<float>(q.output_zero_point));
  });
}

namespace {

// TFLite's GetInvSqrtQuantizedMultiplierExp(input, reverse_shift = -1): 1 / sqrt(input)
// as a multiplier and a (left) shift, by five Newton-Raphson steps in Q3.28.
void inv_sqrt_multiplier(int32_t input, int32_t* multiplier, int* shift) {
  if (input <= 1) {
    *multiplier = std::numeric_limits<int32_t>::max();
    *shift = 0;
    return;
  }
  int right = 11;
  while (input >= (1 << 29)) {
    input /= 4;
    ++right;
  }
  int leading_zeros = 0;
  while (!(static_cast<uint32_t>(input) & (0x80000000u >> leading_zeros))) ++leading_zeros;
  const int pairs = (leading_zeros - 1) / 2 - 1;
  right -= pairs;
  input <<= 2 * pairs;
  auto wrap = [](int64_t v) { return static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(v))); };
  const int32_t half_input = multiply_by_pot(input >> 1, -1);
  const int32_t half_three = (1 << 28) + (1 << 27);
  int32_t x = 1 << 28;  // 1.0 in Q3.28
  for (int i = 0; i < 5; ++i) {
    // x * x * x is Q9.22; back to Q3.28 with a saturating shift by 6.
    const int32_t x3 = multiply_by_pot(doubling_high_mul(doubling_high_mul(x, x), x), 6);
    x = multiply_by_pot(wrap(int64_t{doubling_high_mul(half_three, x)} - doubling_high_mul(half_input, x3)), 3);
  }
  x = doubling_high_mul(x, 1518500250);  // * sqrt(2) / 2
  if (right < 0) {
    x = static_cast<int32_t>(static_cast<uint32_t>(x) << -right);
    right = 0;
  }
  *multiplier = x;
  *shift = -right;
}

}  // namespace

NDArray rsqrt_table(const Int8Quant& q, const std::string& op) {
  const double scale = 1.0 / (std::sqrt(static_cast<double>(static_cast<float>(q.input_scale))) *
                              static_cast<double>(static_cast<float>(q.output_scale)));
  const QuantMultiplier m = quantize_multiplier(scale, op, "1 / (sqrt(input_scale) * output_scale)");
  const int kShift = 20;
  return make_table([&](int32_t code) {
    const int32_t v = code - q.input_zero_point;
    if (v <= 0) return 127;
    int32_t inv_m = 0;
    int inv_shift = 0;
    inv_sqrt_multiplier(v, &inv_m, &inv_shift);
    const int32_t data = multiply_quantized(1, inv_m, inv_shift + kShift);
    return multiply_quantized(data, m.multiplier, m.shift - kShift) + q.output_zero_point;
  });
}

}  // namespace ops
}  // namespace mtir
