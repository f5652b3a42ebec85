// Schedule smmlar_add: TFLite's int8 ADD/SUB in three SMMLARs. Why it is exact, with
// smmlar(a, b, c) = c + floor((a * b + 2^31) / 2^32):
// - SaturatingRoundingDoublingHighMul(x, M) is floor((x * M + 2^30) / 2^31) (its nudge
//   and truncating division round half up for either sign; x * M is never INT32_MIN^2).
//   For x = v * 2^20 that is floor((v * M + 2^10) / 2^11) = smmlar(v * 2^21, M, 0), and
//   v * 2^21 fits int32 for |v| <= 255. For a sum of two such scaled inputs (|s| < 2^28,
//   every input multiplier being at most 1/2), smmlar(2 * s, M, 0) likewise.
// - RoundingDivideByPOT(h, r) (r >= 1) is floor((h + 2^(r-1) - [h < 0]) / 2^r), and the
//   integer c of smmlar adds before the floor: smmlar(x, M, 2^(r-1) - [h < 0]) >> r.
//   With M >= 2^30, h < 0 exactly when x < 0 (an input; for the output M > 2^30 is
//   needed: at M = 2^30 a sum of -1 gives h = 0), so [h < 0] is -(x >> 31), one add.
// - Where the output's lower bound is at least its zero point (ReLU), a negative sum
//   gives h <= 0 and a value at most the zero point either way: the term is dropped.
#include "ops/qadd_smmlar.h"

namespace mtir {
namespace ops {
namespace {

constexpr int64_t kHalf = int64_t{1} << 30;  // the multiplier of 0.5 (and the least of any other)

bool exactly_half(const QuantMultiplier& m) { return m.multiplier == kHalf && m.shift == 0; }
bool right_shift_form(const QuantMultiplier& m) { return m.multiplier >= kHalf && m.shift <= 0 && m.shift >= -31; }

Expr smmlar(Expr a, int64_t m, Expr c) { return Call(DataType::Int(32), "smmlar", {std::move(a), ci(m), std::move(c)}); }
Expr sign(Expr x) { return call("shift_right", {std::move(x), ci(31)}); }  // 0 or -1

// Twice the input's value at the common scale: 2 * MBQM(v * 2^20, M, -r).
Expr scaled_twice(Expr v, const SmmlarAddInput& in) {
  if (exactly_half(in.m)) return mul(std::move(v), ci(int64_t{1} << 20));  // v * 2^19, doubled
  const int r = in.m.right_shift();
  Expr x = mul(std::move(v), ci(int64_t{1} << 21));
  if (r == 0) return mul(smmlar(x, in.m.multiplier, ci(0)), ci(2));
  Expr c = ci(int64_t{1} << (r - 1));
  if (!in.never_negative) c = add(c, sign(x));
  return mul(call("shift_right", {smmlar(x, in.m.multiplier, c), ci(r)}), ci(2));
}

}  // namespace

bool read_smmlar_add(const std::string& op, const AttrReader& r) {
  const nlohmann::json* j = r.raw("schedule");
  if (!j || j->is_null()) return false;
  if (op == "qmul") r.bad("schedule", "absent: qmul has no schedule ('smmlar_add' is one of qadd and qsub)");
  const char* shape = "an object {\"smmlar_add\": true or false}";
  if (!j->is_object()) r.bad("schedule", shape);
  for (const auto& [key, value] : j->items())
    if (key != "smmlar_add" || !value.is_boolean()) r.bad("schedule", shape);
  return j->value("smmlar_add", false);
}

PrimFunc with_smmlar_add_mark(const PrimFunc& f) {
  auto marked = std::make_shared<PrimFuncNode>(*f);
  marked->attrs[kSmmlarAddAttr] = true;
  return marked;
}

bool smmlar_add_applies(const SmmlarAddInput& a, const SmmlarAddInput& b, const QuantMultiplier& out) {
  auto input_ok = [](const SmmlarAddInput& in) { return exactly_half(in.m) || right_shift_form(in.m); };
  return input_ok(a) && input_ok(b) && right_shift_form(out);
}

Expr smmlar_add(Expr va, Expr vb, const SmmlarAddInput& a, const SmmlarAddInput& b, const QuantMultiplier& out,
                bool subtract, bool negatives_clamp) {
  Expr ta = scaled_twice(std::move(va), a), tb = scaled_twice(std::move(vb), b);
  Expr t = subtract ? sub(ta, tb) : add(ta, tb);
  const int r = out.right_shift();
  if (r == 0) return smmlar(t, out.multiplier, ci(0));
  const Expr half = ci(int64_t{1} << (r - 1));
  if (negatives_clamp) return call("shift_right", {smmlar(t, out.multiplier, half), ci(r)});
  if (out.multiplier > kHalf) return call("shift_right", {smmlar(t, out.multiplier, add(half, sign(t))), ci(r)});
  // M = 2^30: the sign of the high word itself.
  Var h = MakeVar("high", DataType::Int(32));
  return Let(h, smmlar(t, out.multiplier, ci(0)), call("shift_right", {add(add(h, half), sign(h)), ci(r)}));
}

}  // namespace ops
}  // namespace mtir
