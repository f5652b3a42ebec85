// TFLite's integer arithmetic as its reference kernels spell it (quantization_util.cc,
// kernels/internal/common.h, gemmlowp fixedpoint.h): the multiplier from a real number,
// the doubling high multiply with its nudge and truncating division, the rounding
// divide by a power of two with its mask and threshold, and the fixed-point exp, 1/(1+x),
// logistic and tanh. Written from those formulas, in their shape, and sharing nothing
// with microtir's ops/, so that the two implementations check each other.
#include <cmath>
#include <limits>

#include "int8_reference.h"

namespace int8ref {

Multiplier quantize_multiplier(double real) {
  if (!(real > 0) || !std::isfinite(real)) throw Error("requantization multiplier out of range");
  int shift = 0;
  const double q = std::frexp(real, &shift);
  int64_t q_fixed = static_cast<int64_t>(std::round(q * (1LL << 31)));
  if (q_fixed == (1LL << 31)) {
    q_fixed /= 2;
    ++shift;
  }
  if (shift < -31) {
    shift = 0;
    q_fixed = 0;
  }
  if (shift > 30) throw Error("requantization multiplier out of range");
  return {static_cast<int32_t>(q_fixed), shift};
}

int32_t saturating_rounding_doubling_high_mul(int32_t a, int32_t b) {
  const bool overflow = a == b && a == std::numeric_limits<int32_t>::min();
  const int64_t ab_64 = static_cast<int64_t>(a) * static_cast<int64_t>(b);
  const int32_t nudge = ab_64 >= 0 ? (1 << 30) : (1 - (1 << 30));
  const int32_t ab_x2_high32 = static_cast<int32_t>((ab_64 + nudge) / (1LL << 31));
  return overflow ? std::numeric_limits<int32_t>::max() : ab_x2_high32;
}

int32_t rounding_divide_by_pot(int32_t x, int exponent) {
  if (exponent < 0 || exponent > 31) throw Error("rounding_divide_by_pot: exponent out of [0, 31]");
  const int32_t mask = static_cast<int32_t>((1LL << exponent) - 1);
  const int32_t remainder = x & mask;
  const int32_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
  return (x >> exponent) + (remainder > threshold ? 1 : 0);
}

int32_t multiply_by_quantized_multiplier(int32_t x, Multiplier q) {
  const int left_shift = q.shift > 0 ? q.shift : 0;
  const int right_shift = q.shift > 0 ? 0 : -q.shift;
  // x * (1 << left_shift) wraps in int32 as it does in TFLite's compiled code.
  const int32_t shifted = static_cast<int32_t>(static_cast<uint32_t>(x) * (uint32_t{1} << left_shift));
  return rounding_divide_by_pot(saturating_rounding_doubling_high_mul(shifted, q.m), right_shift);
}

namespace fixed_point {

int32_t saturating_rounding_multiply_by_pot(int32_t x, int exponent) {
  if (exponent == 0) return x;
  if (exponent < 0) return rounding_divide_by_pot(x, -exponent);
  const int32_t threshold = static_cast<int32_t>((1LL << (31 - exponent)) - 1);
  if (x > threshold) return std::numeric_limits<int32_t>::max();
  if (x < -threshold) return std::numeric_limits<int32_t>::min();
  return static_cast<int32_t>(static_cast<uint32_t>(x) << exponent);
}

int32_t mul(int32_t a, int32_t b) { return saturating_rounding_doubling_high_mul(a, b); }

// Rescale<dst>(x) of a value with `src` integer bits.
int32_t rescale(int32_t x, int src, int dst) { return saturating_rounding_multiply_by_pot(x, src - dst); }

int32_t one(int integer_bits) {
  return integer_bits == 0 ? std::numeric_limits<int32_t>::max() : static_cast<int32_t>(1LL << (31 - integer_bits));
}

int32_t rounding_half_sum(int32_t a, int32_t b) {
  const int64_t sum = static_cast<int64_t>(a) + static_cast<int64_t>(b);
  const int64_t sign = sum >= 0 ? 1 : -1;
  return static_cast<int32_t>((sum + sign) / 2);
}

// exp(a) for a in [-1/4, 0), 0 integer bits in and out.
int32_t exp_on_interval_between_negative_one_quarter_and_0_excl(int32_t a) {
  const int32_t constant_term = 1895147668;     // exp(-1/8)
  const int32_t constant_1_over_3 = 715827883;  // 1/3
  const int32_t x = a + (1 << 28);              // a + 1/8
  const int32_t x2 = mul(x, x);
  const int32_t x3 = mul(x2, x);
  const int32_t x4 = mul(x2, x2);
  const int32_t x4_over_4 = saturating_rounding_multiply_by_pot(x4, -2);
  const int32_t x4_over_24_plus_x3_over_6_plus_x2_over_2 =
      saturating_rounding_multiply_by_pot(mul(x4_over_4 + x3, constant_1_over_3) + x2, -1);
  return constant_term + mul(constant_term, x + x4_over_24_plus_x3_over_6_plus_x2_over_2);
}

int32_t exp_on_negative_values(int32_t a, int integer_bits) {
  const int fractional_bits = 31 - integer_bits;
  const int32_t one_quarter = static_cast<int32_t>(1LL << (fractional_bits - 2));
  const int32_t mask = one_quarter - 1;
  const int32_t a_mod_quarter_minus_one_quarter = (a & mask) - one_quarter;
  int32_t result = exp_on_interval_between_negative_one_quarter_and_0_excl(
      rescale(a_mod_quarter_minus_one_quarter, integer_bits, 0));
  const int32_t remainder = a_mod_quarter_minus_one_quarter - a;
  struct Barrel {
    int exponent;
    int32_t multiplier;  // exp(-2^exponent) with 0 integer bits
  };
  const Barrel barrels[] = {{-2, 1672461947}, {-1, 1302514674}, {0, 790015084}, {1, 290630308},
                            {2, 39332535},    {3, 720401},      {4, 242}};
  for (const Barrel& b : barrels) {
    if (integer_bits > b.exponent) {
      const int shift_amount = fractional_bits + b.exponent;
      if (remainder & (1 << shift_amount)) result = mul(result, b.multiplier);
    }
  }
  if (integer_bits > 5) {
    const int32_t clamp = -(1 << (36 - integer_bits));  // -32
    if (a < clamp) result = 0;
  }
  if (a == 0) result = one(0);
  return result;
}

// The Newton-Raphson of gemmlowp's one_over_one_plus_x_for_x_in_0_1 and
// one_minus_x_over_one_plus_x_for_x_in_0_1: x ~= 1 / half_denominator with 2 integer bits.
int32_t newton_reciprocal_of_half_denominator(int32_t half_denominator) {
  const int32_t constant_48_over_17 = 1515870810;
  const int32_t constant_neg_32_over_17 = -1010580540;
  int32_t x = constant_48_over_17 + mul(half_denominator, constant_neg_32_over_17);
  for (int i = 0; i < 3; ++i) {
    const int32_t half_denominator_times_x = mul(half_denominator, x);
    const int32_t one_minus_half_denominator_times_x = one(2) - half_denominator_times_x;
    x = x + rescale(mul(x, one_minus_half_denominator_times_x), 4, 2);
  }
  return x;
}

int32_t one_over_one_plus_x_for_x_in_0_1(int32_t a) {
  const int32_t x = newton_reciprocal_of_half_denominator(rounding_half_sum(a, one(0)));
  return rescale(x, 1, 0);  // ExactMulByPot<-1> makes it 1 integer bit, same raw
}

int32_t one_minus_x_over_one_plus_x_for_x_in_0_1(int32_t a) {
  const int32_t x = newton_reciprocal_of_half_denominator(rounding_half_sum(a, one(0)));
  return rescale(x - one(2), 2, 0);
}

int32_t logistic(int32_t a, int integer_bits) {
  if (a == 0) return 1 << 30;
  const int32_t abs_input = a > 0 ? a : -a;
  const int32_t result_if_positive = one_over_one_plus_x_for_x_in_0_1(exp_on_negative_values(-abs_input, integer_bits));
  return a > 0 ? result_if_positive : one(0) - result_if_positive;
}

int32_t tanh(int32_t a, int integer_bits) {
  if (a == 0) return 0;
  const int32_t n = a < 0 ? a : -a;
  // ExactMulByPot<1>: the same raw value read with one more integer bit.
  const int32_t t = one_minus_x_over_one_plus_x_for_x_in_0_1(exp_on_negative_values(n, integer_bits + 1));
  return a < 0 ? -t : t;
}

int32_t get_reciprocal(int32_t x, int x_integer_digits, int* num_bits_over_unit) {
  int headroom_plus_one = 0;
  for (uint32_t v = static_cast<uint32_t>(x); !(v & 0x80000000u); v <<= 1) ++headroom_plus_one;
  *num_bits_over_unit = x_integer_digits - headroom_plus_one;
  const int32_t shifted_sum_minus_one =
      static_cast<int32_t>((static_cast<uint32_t>(x) << headroom_plus_one) - (static_cast<uint32_t>(1) << 31));
  return one_over_one_plus_x_for_x_in_0_1(shifted_sum_minus_one);
}

}  // namespace fixed_point
}  // namespace int8ref
