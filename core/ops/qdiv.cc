// qdiv: TFLite Micro's int8 DIV (reference_ops::DivElementwise), broadcast (numpy rules).
// Per element, with v1 = a - a_zp and v2 = b - b_zp, both negated when v2 < 0 so that the
// divisor is positive:
//   - the divisor's reciprocal as GetReciprocal(v2, 31) gives it: its leading zeros, then
//     gemmlowp's one_over_one_plus_x on the divisor shifted up to bit 31;
//   - the dividend shifted left by its redundant sign bits (GCC's __builtin_clrsb, which
//     TFLM's CountLeadingSignBits is under GCC), times the reciprocal (doubling high mul);
//   - that requantized by a_scale / (b_scale * output_scale) (the quotient in float32, as
//     TFLM computes it), the reciprocal's and the headroom's shifts folded into the
//     rounding right shift; plus the output zero point, clamped by the fused activation.
// Two cases TFLM leaves undefined get a defined answer here: a right shift of 32 or more
// (a quotient below half an output step; TFLM's C shifts an int32 by its width, and x86
// and Arm give different bytes) rounds to 0, as the arithmetic means; a zero divisor
// (a DCHECK in TFLM) saturates toward the dividend's sign (0 / 0 gives the zero point).
#include "ops/quant_util.h"

namespace mtir {
namespace ops {
namespace {

using json = nlohmann::json;

struct QDivParams {
  int32_t za = 0, zb = 0, zo = 0;
  QuantMultiplier mo;
  ActBounds bounds;
  std::vector<int64_t> shape;
};

QDivParams qdiv_params(const std::vector<TensorType>& in, const json& attrs) {
  const std::string op = "qdiv";
  AttrReader r(op, attrs,
               {"a_scale", "a_zero_point", "b_scale", "b_zero_point", "output_scale", "output_zero_point", "activation"});
  if (in.size() != 2) fail(op, "expected 2 inputs (a, b), got " + std::to_string(in.size()));
  check_dtype(op, in, 0, "a", kI8);
  check_dtype(op, in, 1, "b", kI8);
  QDivParams p;
  const float sa = static_cast<float>(read_scale(op, r, "a_scale"));
  const float sb = static_cast<float>(read_scale(op, r, "b_scale"));
  const float so = static_cast<float>(read_scale(op, r, "output_scale"));
  p.za = read_zero_point(r, "a_zero_point");
  p.zb = read_zero_point(r, "b_zero_point");
  p.zo = read_zero_point(r, "output_zero_point");
  p.mo = quantize_multiplier(static_cast<double>(sa / (sb * so)), op, "a_scale / (b_scale * output_scale)");
  // The rounding shift is 31 - shift - leading zeros + headroom >= 23 - shift: never a left shift.
  if (p.mo.shift > 23)
    fail(op, "a_scale / (b_scale * output_scale) is 2^" + std::to_string(p.mo.shift) +
                 " or more; TFLM's int8 DIV takes at most 2^23");
  p.bounds = activation_bounds(read_activation(r), so, p.zo, kI8);
  p.shape = broadcast_shape(op, in[0].shape, in[1].shape);
  return p;
}

// Leading zeros of a 32-bit value known to be in [0, 255]: 24 plus those of its low byte.
Expr leading_zeros_of_byte(const Expr& u) {
  Expr n = ci(24);
  for (int k = 0; k < 8; ++k) n = add(n, bool_to_int(lt(u, ci(int64_t{1} << k))));
  return n;
}

Expr shift_left_i64(Expr x, Expr bits) { return Call(kI64, "shift_left", {std::move(x), Cast(kI64, std::move(bits))}); }

PrimFunc qdiv_build(const std::string& fname, const std::vector<TensorType>& in, const TensorType& out,
                    const json& attrs) {
  const QDivParams p = qdiv_params(in, attrs);
  FuncBuilder fb;
  Buffer a = fb.param("a", in[0].shape, kI8), b = fb.param("b", in[1].shape, kI8);
  Buffer o = fb.param("out", out.shape, kI8);
  LoopNest nest;
  std::vector<Expr> idx = nest.axes(out.shape);
  auto centred = [&](const Buffer& x, const std::vector<int64_t>& shape, int32_t zp) {
    return sub(Cast(kI32, load(x, broadcast_index(shape, out.shape, idx))), ci(zp));
  };
  Var v1 = MakeVar("dividend", kI32), v2 = MakeVar("divisor", kI32), negate = MakeVar("negate", kI32);
  Var num = MakeVar("numerator", kI32), den = MakeVar("denominator", kI32);
  Var zeros = MakeVar("leading_zeros", kI32), headroom = MakeVar("headroom", kI32);
  // The divisor shifted up to bit 31, less 1.0: GetReciprocal's argument (in [0, 2^31)).
  Expr shifted = Cast(kI32, Binary(ExprKind::Sub, Binary(ExprKind::Mul, Cast(kI64, den), shift_left_i64(IntImm(kI64, 1), zeros)),
                                   IntImm(kI64, int64_t{1} << 31)));
  // The dividend times 2^headroom (at most 2^31 in magnitude: in int64, then back).
  Expr scaled = Cast(kI32, Binary(ExprKind::Mul, Cast(kI64, num), shift_left_i64(IntImm(kI64, 1), headroom)));
  Stmt compute = with_one_over_one_plus_x(shifted, [&](Expr recip) {
    Expr quotient = saturating_rounding_doubling_high_mul(scaled, recip, true);
    Expr high = saturating_rounding_doubling_high_mul(quotient, ci(p.mo.multiplier), true);
    Var right = MakeVar("right_shift", kI32);
    Expr rounded = Select(Binary(ExprKind::GT, right, ci(31)), ci(0), rounding_divide_by_pot(high, min_(right, ci(31))));
    // A zero divisor: toward the dividend's sign, as far as the output type goes.
    Expr infinite = Select(Binary(ExprKind::GT, v1, ci(0)), ci(1 << 30), Select(lt(v1, ci(0)), ci(-(1 << 30)), ci(0)));
    Expr y = Select(Binary(ExprKind::EQ, v2, ci(0)), infinite, rounded);
    return LetStmt(right, add(sub(ci(31 - p.mo.shift), zeros), headroom),
                   store(o, saturate_int8(y, p.zo, p.bounds), idx));
  });
  Expr magnitude_bits = Select(lt(num, ci(0)), sub(ci(-1), num), num);  // clrsb(n) = clz(n or ~n) - 1
  Stmt body = LetStmt(
      v1, centred(a, in[0].shape, p.za),
      LetStmt(v2, centred(b, in[1].shape, p.zb),
              LetStmt(negate, bool_to_int(lt(v2, ci(0))),
                      LetStmt(num, Select(Binary(ExprKind::NE, negate, ci(0)), sub(ci(0), v1), v1),
                              LetStmt(den, max_(Select(Binary(ExprKind::NE, negate, ci(0)), sub(ci(0), v2), v2), ci(1)),
                                      LetStmt(zeros, leading_zeros_of_byte(den),
                                              LetStmt(headroom, sub(leading_zeros_of_byte(magnitude_bits), ci(1)),
                                                      compute)))))));
  return fb.finish(fname, nest.wrap(body));
}

}  // namespace

void register_qdiv_ops(std::vector<OpDef>& ops) {
  ops.push_back(OpDef{"qdiv",
                      [](const std::vector<TensorType>& in, const json& attrs) {
                        return TensorType{kI8, qdiv_params(in, attrs).shape};
                      },
                      qdiv_build, OutputSharing::kElementwise});
}

}  // namespace ops
}  // namespace mtir
