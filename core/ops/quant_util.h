// int8 quantization helpers shared by the quantized operators (TFLite int8 style, see
// docs/quantization.md): the compile-time fixed-point multiplier, the TIR of the run-time
// requantization (TFLite's MultiplyByQuantizedMultiplier), activation bounds,
// and reading the shared quantization attributes with errors that name the attribute.
// Internal to core/ops.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ops/op_util.h"

namespace mtir {
namespace ops {

// A real multiplier m > 0 as TFLite's QuantizeMultiplier gives it: m ~= multiplier *
// 2^(shift - 31), multiplier in [2^30, 2^31) and shift in [-31, 30] (positive: a left
// shift). A multiplier below about 2^-31 is multiplier 0, shift 0, as in TFLite.
struct QuantMultiplier {
  int32_t multiplier = 0;
  int shift = 0;
  int left_shift() const { return shift > 0 ? shift : 0; }
  int right_shift() const { return shift > 0 ? 0 : -shift; }
};

// TFLite's QuantizeMultiplier (frexp, round half away from zero, 2^31 becomes 2^30 with
// shift + 1, shift < -31 becomes multiplier 0). A user error "op: requantization
// multiplier out of range (what = m; ...)" when m is not a finite number > 0 or is
// 2^30 or more (TFLite's left shift x * (1 << shift) would overflow).
QuantMultiplier quantize_multiplier(double m, const std::string& op, const std::string& what);

// 1 where `cond` holds, else 0 (int32): gemmlowp's branch-free masks and counts.
Expr bool_to_int(Expr cond);
// gemmlowp's SaturatingRoundingDoublingHighMul on int32 expressions: the high word of
// 2 * a * b rounded half up ((a * b + 2^30) >> 31 in int64, which equals gemmlowp's nudge
// and truncating division), INT32_MAX for INT32_MIN * INT32_MIN. `b_nonnegative` drops
// that saturation case when b can never be INT32_MIN (a multiplier >= 0).
Expr saturating_rounding_doubling_high_mul(Expr a, Expr b, bool b_nonnegative = false);
// gemmlowp's RoundingDivideByPOT: x / 2^exponent rounded half away from zero, for an
// int32 x and an int32 exponent in [0, 31] (a constant or a run-time value).
Expr rounding_divide_by_pot(Expr x, Expr exponent);
// x * 2^exponent saturated to int32 (gemmlowp's SaturatingRoundingMultiplyByPOT, exponent > 0).
Expr saturating_multiply_by_pot(Expr x, int exponent);
// CountLeadingZeros of a uint32 value v known to lie in [2^lowest_bit, 2^31): 1 plus the
// powers 2^30 .. 2^(lowest_bit + 1) it is below.
Expr count_leading_zeros(Expr v, int lowest_bit);
// gemmlowp's one_over_one_plus_x_for_x_in_0_1 of a Q0.31 `a` in [0, 1) (three
// Newton-Raphson steps on a local): `body(result)` runs where the result is defined.
Stmt with_one_over_one_plus_x(Expr a, const std::function<Stmt(Expr)>& body);
// TFLite's MultiplyByQuantizedMultiplier(x, multiplier, shift):
// RoundingDivideByPOT(SaturatingRoundingDoublingHighMul(x * (1 << left), multiplier), right)
// with left = max(shift, 0), right = max(-shift, 0); int32 in, int32 out.
Expr multiply_by_quantized_multiplier(Expr x, const QuantMultiplier& q);
// The same with a run-time multiplier (>= 0) and shift (in [-31, 30]), e.g. from a table.
Expr multiply_by_quantized_multiplier(Expr x, Expr multiplier, Expr shift);
// Whether `e` is exactly multiply_by_quantized_multiplier(x, q) of a constant q with no
// left shift (the form above), and its x and q: the epilogue of a fused elementwise op
// recovers T.multiply_by_quantized_multiplier from it to compute it in int32x4.
bool match_multiply_by_quantized_multiplier(const Expr& e, Expr* x, QuantMultiplier* q);
// TFLM's MultiplyByQuantizedMultiplier(int64 x, M, shift) (int16 kernels' wide
// accumulators): the multiplier rounded to its top 16 bits (0x7FFF at the top), then
// (x * reduced + 2^(14 - shift)) >> (15 - shift), as int32. requantize_wide takes the
// reduced multiplier and 15 - shift as int64 expressions (a run-time table's).
int64_t reduced_multiplier(int32_t m);
Expr requantize_wide(Expr acc, Expr reduced, Expr total_shift);
Expr multiply_by_quantized_multiplier_wide(Expr acc, const QuantMultiplier& q);
// For a multiplier M >= 0 and a right shift r >= 2, both roundings in one step:
// MultiplyByQuantizedMultiplier(x, M, -r) = (corrected_high_word(x, M) + 2^(r-2)) >> (r-1),
// where corrected_high_word is the upper 32 bits of Q - [Q < 0] * 2^31, Q = x * M + 2^30
// (int64). Why: the high multiply is floor(Q / 2^31), the rounding divide of h by 2^r is
// floor((h + 2^(r-1) - [h < 0]) / 2^r), and floor divisions compose.
Expr corrected_high_word(Expr x, Expr multiplier);

// Schedule smmlar_requant's per-tensor form of MultiplyByQuantizedMultiplier(x, M, -r)
// plus the output zero point zo, for M in [2^30, 2^31) and r in [0, 31]:
//   y = smmlar(x, M', x + C) >> r,  M' = 2M - 2^32,  C = 2^(r-1) (0 for r = 0) + zo * 2^r,
// where smmlar(a, b, c) = c + floor((a * b + 2^31) / 2^32), so the SMMLAR gives
// C + floor((x * M + 2^30) / 2^31) = C + h, h TFLite's rounded doubling high multiply; and
// its RoundingDivideByPOT(h, r) = floor((h + 2^(r-1) - [h < 0]) / 2^r) (floor divisions)
// for r >= 1, h itself for r = 0. The [h < 0] term is -(x >> 31) for M > 2^30 (x <= -1
// gives x * M + 2^30 < 0), added to C by the kernel where r >= 1 and no ReLU clamps
// every negative h anyway. Exact while C + h fits int32,
// which the caller guarantees from the accumulator's range (|h| <= |x|); false (and no
// form) when M, r or C are out of range.
struct SmmlarForm {
  int64_t multiplier = 0;  // M'
  int64_t shift = 0;       // r
  int64_t rounding = 0;    // C
};
bool smmlar_form(const QuantMultiplier& q, int32_t zero_point, SmmlarForm* out);

// ONNX's requantization round_half_even(acc * M / 2^s) (M in [0, 2^24), s in [1, 62],
// core/ops/onnx_quant.cc) in 32-bit steps: with M' = M * 2^k < 2^31 and t = s + k - 32 >= 1,
// P = acc * M' (int64), hi = P >> 32 and lo = P mod 2^32,
//   y = (hi - [lo == 0 and bit t of hi is 0] + 2^(t-1)) >> t
// (hi - [lo == 0] is floor((P - 1) / 2^32): ties go down to the even neighbour, up from
// the odd one). False when no such k exists (m = M * 2^-s of 1/8 or more, roughly).
// round_half_even(acc * M / 2^s) as int64 for int64 expressions M >= 0 and s in [1, 62]:
// (P + 2^(s-1) - 1 + bit s of P) >> s with P = acc * M (ties go to the even neighbour).
// qlinear_conv's requantization and qconv2d's requant "onnx" when the 32-bit form below
// does not apply.
Expr onnx_round_shift(Expr acc, Expr multiplier, Expr shift);

struct OnnxHighWord {
  int64_t multiplier = 0;  // M'
  int64_t shift = 0;       // t in [1, 30]
};
bool onnx_high_word_form(int64_t m, int64_t s, OnnxHighWord* out);
// y as above for an int32 `acc` and int32 expressions M', t and 2^(t-1); int32 out.
Expr onnx_high_word_requantize(Expr acc, Expr multiplier, Expr shift, Expr half);

// The output range an activation allows (bounds inclusive); int8's whole range by default.
struct ActBounds {
  int32_t lo = -128;
  int32_t hi = 127;
};
// The whole range of an integer type of at most 32 bits (int8: [-128, 127], uint8: [0, 255]).
ActBounds dtype_bounds(DataType t);
// activation "none" | "relu" | "relu6" | "relu_n1_to_1" for an output of this scale and
// zero point, as TFLite's CalculateActivationRangeQuantized (zp + round(f / scale) in
// float32), within the range of the output type `t` (int8 or int16).
ActBounds activation_bounds(const std::string& activation, double output_scale, int32_t output_zero_point,
                            DataType t = DataType::Int(8));

// (int8)clamp(y + zero_point, lo, hi) for an int32 expression `y`.
Expr saturate_int8(Expr y, int32_t zero_point, ActBounds bounds);
// The same for an output of type `t` (int8, int16 or int32; the clamp is left out where
// the bounds are int32's whole range).
Expr saturate_to(DataType t, Expr y, int32_t zero_point, ActBounds bounds);

// The shared attributes of qconv2d and qdense.
struct QuantAttrs {
  double input_scale = 0;
  int32_t input_zero_point = 0;
  std::vector<double> weight_scale;  // one value (per tensor) or one per output channel
  double output_scale = 0;
  int32_t output_zero_point = 0;
  std::string activation = "none";
  ActBounds bounds;
  // input_scale * weight_scale[c] / output_scale as fixed point, one per output channel.
  std::vector<QuantMultiplier> multipliers;
};
// Reads and checks the quantization attributes ("input_scale", "input_zero_point",
// "weight_scale", "weight_zero_point", "output_scale", "output_zero_point",
// "activation"): scales required, finite and > 0; zero points default 0, in
// [-128, 127]; weight_zero_point must be 0 (weights are symmetric); a per-channel
// weight_scale must have `out_channels` entries. Errors name the attribute.
QuantAttrs read_quant_attrs(const std::string& op, const AttrReader& r, int64_t out_channels);

// A required scale attribute: a finite number > 0.
double read_scale(const std::string& op, const AttrReader& r, const std::string& key);
// An optional zero point attribute in [-128, 127] (default 0), or in the range of `t`.
int32_t read_zero_point(const AttrReader& r, const std::string& key, DataType t = DataType::Int(8));
// The "activation" attribute: "none" (default), "relu", "relu6" or "relu_n1_to_1".
std::string read_activation(const AttrReader& r);

// Input `i` must have element type `t`.
void check_dtype(const std::string& op, const std::vector<TensorType>& inputs, size_t i, const std::string& name,
                 DataType t);

}  // namespace ops
}  // namespace mtir
