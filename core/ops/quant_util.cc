#include "ops/quant_util.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "interp/scalar.h"
#include "ir/structural_equal.h"

namespace mtir {
namespace ops {

QuantMultiplier quantize_multiplier(double m, const std::string& op, const std::string& what) {
  auto out_of_range = [&]() {
    fail(op, "requantization multiplier out of range (" + what + " = " + interp::format_double(m) +
                 "; it must be a finite number > 0 and below 2^30)");
  };
  if (!std::isfinite(m) || m <= 0) out_of_range();
  int shift = 0;
  double q = std::frexp(m, &shift);  // m = q * 2^shift, q in [0.5, 1)
  int64_t fixed = static_cast<int64_t>(std::round(q * static_cast<double>(int64_t{1} << 31)));
  if (fixed == (int64_t{1} << 31)) {
    fixed /= 2;
    ++shift;
  }
  // Below -31 every bit would be shifted out: TFLite says so with a zero multiplier.
  if (shift < -31) return QuantMultiplier{0, 0};
  if (shift > 30) out_of_range();
  return QuantMultiplier{static_cast<int32_t>(fixed), shift};
}

namespace {

bool is_const(const Expr& e, int64_t v) {
  const int64_t* c = as_const_int(e);
  return c && *c == v;
}
}  // namespace

Expr bool_to_int(Expr cond) { return Select(std::move(cond), ci(1), ci(0)); }

Expr saturating_rounding_doubling_high_mul(Expr a, Expr b, bool b_nonnegative) {
  const int64_t kMin = std::numeric_limits<int32_t>::min();
  Expr prod = Binary(ExprKind::Mul, Cast(kI64, a), Cast(kI64, b));
  Expr high = Cast(kI32, Call(kI64, "shift_right", {Binary(ExprKind::Add, prod, IntImm(kI64, int64_t{1} << 30)),
                                                    IntImm(kI64, 31)}));
  const int64_t* ca = as_const_int(a);
  const int64_t* cb = as_const_int(b);
  if (b_nonnegative || (ca && *ca != kMin) || (cb && *cb != kMin)) return high;
  Expr both_min = and_(Binary(ExprKind::EQ, a, ci(kMin)), Binary(ExprKind::EQ, b, ci(kMin)));
  return Select(both_min, ci(std::numeric_limits<int32_t>::max()), high);
}

Expr rounding_divide_by_pot(Expr x, Expr exponent) {
  if (is_const(exponent, 0)) return x;
  Expr mask;
  if (const int64_t* e = as_const_int(exponent)) {
    mask = ci((int64_t{1} << *e) - 1);
  } else {
    // (1 << e) - 1 in uint32, so e = 31 does not overflow.
    const DataType u32 = DataType::UInt(32);
    Expr one = IntImm(u32, 1);
    mask = Cast(kI32, Binary(ExprKind::Sub, Call(u32, "shift_left", {one, Cast(u32, exponent)}), one));
  }
  Expr remainder = call("bitwise_and", {x, mask});
  Expr threshold = add(call("shift_right", {mask, ci(1)}), bool_to_int(lt(x, ci(0))));
  return add(call("shift_right", {x, exponent}), bool_to_int(Binary(ExprKind::GT, remainder, threshold)));
}

namespace {
// Q = x * M + 2^30 in int64.
Expr nudged_product(Expr x, Expr multiplier) {
  return Binary(ExprKind::Add, Binary(ExprKind::Mul, Cast(kI64, std::move(x)), Cast(kI64, std::move(multiplier))),
                IntImm(kI64, int64_t{1} << 30));
}
Expr high_word(Expr v) { return Cast(kI32, Call(kI64, "shift_right", {std::move(v), IntImm(kI64, 32)})); }
}  // namespace

Expr onnx_round_shift(Expr acc, Expr multiplier, Expr shift) {
  const DataType i64 = DataType::Int(64);
  Expr one = IntImm(i64, 1);
  Expr p = Binary(ExprKind::Mul, Cast(i64, std::move(acc)), std::move(multiplier));
  Expr half_less = as_const_int(shift)
                       ? IntImm(i64, (int64_t{1} << (*as_const_int(shift) - 1)) - 1)
                       : Binary(ExprKind::Sub, Call(i64, "shift_left", {one, Binary(ExprKind::Sub, shift, one)}), one);
  Expr odd = Call(i64, "bitwise_and", {Call(i64, "shift_right", {p, shift}), one});
  return Call(i64, "shift_right", {Binary(ExprKind::Add, Binary(ExprKind::Add, p, half_less), odd), shift});
}

bool onnx_high_word_form(int64_t m, int64_t s, OnnxHighWord* out) {
  if (m < 0 || m >= (int64_t{1} << 24) || s < 1 || s > 62) return false;
  int bits = 0;
  while (bits < 63 && (m >> bits) != 0) ++bits;
  int64_t k = std::max<int64_t>(0, 33 - s);
  if (bits + k > 31 || s + k > 62) return false;
  out->multiplier = m << k;
  out->shift = s + k - 32;
  return true;
}

Expr onnx_high_word_requantize(Expr acc, Expr multiplier, Expr shift, Expr half) {
  const DataType i32 = DataType::Int(32), i64 = DataType::Int(64), u32 = DataType::UInt(32);
  Expr p = Binary(ExprKind::Mul, Cast(i64, std::move(acc)), Cast(i64, std::move(multiplier)));
  Expr hi = Cast(i32, Call(i64, "shift_right", {p, IntImm(i64, 32)}));
  Expr lo_zero = Binary(ExprKind::EQ, Cast(u32, p), IntImm(u32, 0));
  Expr even = Binary(ExprKind::EQ, Call(i32, "bitwise_and", {Call(i32, "shift_right", {hi, shift}), ci(1)}), ci(0));
  Expr down = bool_to_int(Binary(ExprKind::And, lo_zero, even));
  return Call(i32, "shift_right", {add(sub(hi, down), std::move(half)), shift});
}

Expr corrected_high_word(Expr x, Expr multiplier) {
  // With Q = H * 2^32 + L: subtracting 2^31 when Q < 0 (H < 0) borrows from H exactly
  // when L's top bit is clear, so the high word is H + ((H >> 31) & ((L >> 31) - 1)).
  Expr q = nudged_product(std::move(x), std::move(multiplier));
  Expr h = high_word(q);
  Expr low_top = Cast(kI32, Call(DataType::UInt(32), "shift_right", {Cast(DataType::UInt(32), q), IntImm(DataType::UInt(32), 31)}));
  return add(h, call("bitwise_and", {call("shift_right", {h, ci(31)}), sub(low_top, ci(1))}));
}

bool smmlar_form(const QuantMultiplier& q, int32_t zero_point, SmmlarForm* out) {
  const int64_t m = q.multiplier, r = q.right_shift();
  if (m < (int64_t{1} << 30) || q.left_shift() > 0 || r > 31) return false;
  const int64_t c = (r > 0 ? int64_t{1} << (r - 1) : 0) + int64_t{zero_point} * (int64_t{1} << r);
  if (c < std::numeric_limits<int32_t>::min() || c > std::numeric_limits<int32_t>::max()) return false;
  *out = SmmlarForm{2 * m - (int64_t{1} << 32), r, c};
  return true;
}

int64_t reduced_multiplier(int32_t m) { return m < 0x7FFF0000 ? (int64_t{m} + (1 << 15)) >> 16 : 0x7FFF; }

Expr requantize_wide(Expr acc, Expr reduced, Expr total_shift) {
  const DataType i64 = DataType::Int(64);
  const int64_t* ts = as_const_int(total_shift);
  Expr round = ts ? IntImm(i64, int64_t{1} << (*ts - 1))
                  : Call(i64, "shift_left", {IntImm(i64, 1), Binary(ExprKind::Sub, total_shift, IntImm(i64, 1))});
  Expr scaled = Binary(ExprKind::Add, Binary(ExprKind::Mul, std::move(acc), std::move(reduced)), round);
  return Cast(DataType::Int(32), Call(i64, "shift_right", {scaled, total_shift}));
}

Expr multiply_by_quantized_multiplier_wide(Expr acc, const QuantMultiplier& q) {
  const DataType i64 = DataType::Int(64);
  return requantize_wide(std::move(acc), IntImm(i64, reduced_multiplier(q.multiplier)), IntImm(i64, 15 - q.shift));
}

Expr multiply_by_quantized_multiplier(Expr x, const QuantMultiplier& q) {
  if (q.left_shift() > 0) x = mul(x, ci(int64_t{1} << q.left_shift()));
  const int right = q.right_shift();
  if (right == 0) return saturating_rounding_doubling_high_mul(std::move(x), ci(q.multiplier), true);
  if (right == 1) {
    // (Q - [Q < 0] * 2^31 + 2^31) >> 32, in int64.
    Expr nudged = nudged_product(std::move(x), ci(q.multiplier));
    Expr sign = Binary(ExprKind::Mul, Call(kI64, "shift_right", {nudged, IntImm(kI64, 63)}), IntImm(kI64, int64_t{1} << 31));
    return high_word(Binary(ExprKind::Add, Binary(ExprKind::Add, nudged, sign), IntImm(kI64, int64_t{1} << 31)));
  }
  // Both roundings in one step (see quant_util.h).
  return call("shift_right", {add(corrected_high_word(std::move(x), ci(q.multiplier)), ci(int64_t{1} << (right - 2))),
                              ci(right - 1)});
}

namespace {
// The first int64 product int64(x) * int64(M) of a constant M in `e`, outermost first.
bool find_product(const Expr& e, Expr* x, int64_t* m) {
  if (e->kind == ExprKind::Mul && e->dtype == kI64) {
    const auto* op = static_cast<const BinaryNode*>(e.get());
    const auto* a = as<CastNode>(op->a);
    const auto* b = as<CastNode>(op->b);
    const int64_t* c = b ? as_const_int(b->value) : nullptr;
    if (a && c && a->value->dtype == kI32) {
      *x = a->value, *m = *c;
      return true;
    }
  }
  if (const auto* cast = as<CastNode>(e)) return find_product(cast->value, x, m);
  if (const auto* call = as<CallNode>(e)) {
    for (const Expr& arg : call->args)
      if (find_product(arg, x, m)) return true;
    return false;
  }
  if (is_binary(e->kind)) {
    const auto* op = static_cast<const BinaryNode*>(e.get());
    return find_product(op->a, x, m) || find_product(op->b, x, m);
  }
  return false;
}
}  // namespace

bool match_multiply_by_quantized_multiplier(const Expr& e, Expr* x, QuantMultiplier* q) {
  if (e->dtype != kI32 || (e->kind != ExprKind::Call && e->kind != ExprKind::Cast)) return false;
  Expr px;
  int64_t m = 0;
  if (!find_product(e, &px, &m) || m < 0 || m > std::numeric_limits<int32_t>::max()) return false;
  for (int shift = 0; shift >= -31; --shift) {
    const QuantMultiplier c{static_cast<int32_t>(m), shift};
    if (structural_equal(multiply_by_quantized_multiplier(px, c), e)) {
      *x = px, *q = c;
      return true;
    }
  }
  return false;
}

Expr multiply_by_quantized_multiplier(Expr x, Expr multiplier, Expr shift) {
  // The shift's range in [-31, 30] (the caller's promise) said in the IR: the shifts by
  // left and right need no mask (T.known_range, which the interpreter checks).
  Expr left = Call(kI32, "known_range", {max_(shift, ci(0)), ci(0), ci(30)});
  Expr right = Call(kI32, "known_range", {max_(sub(ci(0), shift), ci(0)), ci(0), ci(31)});
  Expr scaled = mul(std::move(x), call("shift_left", {ci(1), left}));
  Expr high = saturating_rounding_doubling_high_mul(std::move(scaled), std::move(multiplier), true);
  return rounding_divide_by_pot(std::move(high), std::move(right));
}

ActBounds dtype_bounds(DataType t) {
  if (t == DataType::UInt(8)) return ActBounds{0, 255};
  const int bits = t.bits() >= 32 ? 32 : t.bits();
  const int64_t hi = (int64_t{1} << (bits - 1)) - 1;
  return ActBounds{static_cast<int32_t>(-hi - 1), static_cast<int32_t>(hi)};
}

// TFLite's CalculateActivationRangeQuantized: zero_point + round(f / scale) in float32.
ActBounds activation_bounds(const std::string& activation, double output_scale, int32_t output_zero_point,
                            DataType t) {
  const ActBounds whole = dtype_bounds(t);
  ActBounds b = whole;
  if (activation == "none") return b;
  auto quantize = [&](float f) {
    float r = std::round(f / static_cast<float>(output_scale));
    return output_zero_point + static_cast<int32_t>(std::max(-1e6f, std::min(1e6f, r)));  // beyond int16 either way
  };
  if (activation == "relu_n1_to_1") {
    b.lo = std::max(whole.lo, quantize(-1.0f));
    b.hi = std::min(whole.hi, quantize(1.0f));
    return b;
  }
  b.lo = std::max(whole.lo, quantize(0.0f));
  if (activation == "relu6") b.hi = std::min(whole.hi, quantize(6.0f));
  return b;
}

Expr saturate_int8(Expr y, int32_t zero_point, ActBounds bounds) {
  return saturate_to(DataType::Int(8), std::move(y), zero_point, bounds);
}

Expr saturate_to(DataType t, Expr y, int32_t zero_point, ActBounds bounds) {
  Expr v = add(std::move(y), ci(zero_point));
  const ActBounds whole = dtype_bounds(DataType::Int(32));
  if (bounds.lo != whole.lo) v = max_(v, ci(bounds.lo));
  if (bounds.hi != whole.hi) v = min_(v, ci(bounds.hi));
  return t == kI32 ? v : Cast(t, v);
}

double read_scale(const std::string& op, const AttrReader& r, const std::string& key) {
  if (!r.has(key)) fail(op, "missing required attribute '" + key + "' (a number > 0)");
  double v = r.get_float(key, 0);
  if (!(v > 0)) r.bad(key, "a number > 0");
  return v;
}

int32_t read_zero_point(const AttrReader& r, const std::string& key, DataType t) {
  const ActBounds range = dtype_bounds(t);
  int64_t v = r.get_int(key, 0);
  if (v < range.lo || v > range.hi)
    r.bad(key, "an integer in [" + std::to_string(range.lo) + ", " + std::to_string(range.hi) + "]");
  return static_cast<int32_t>(v);
}

std::string read_activation(const AttrReader& r) {
  return r.get_string("activation", "none", {"none", "relu", "relu6", "relu_n1_to_1"});
}

namespace {

std::vector<double> read_weight_scales(const std::string& op, const AttrReader& r, int64_t out_channels) {
  const nlohmann::json* v = r.raw("weight_scale");
  if (!v) fail(op, "missing required attribute 'weight_scale' (a number > 0, or a list of one per output channel)");
  std::vector<double> scales;
  if (v->is_number()) {
    scales.push_back(v->get<double>());
  } else if (v->is_array()) {
    if (static_cast<int64_t>(v->size()) != out_channels)
      r.bad("weight_scale", "a number or a list of " + std::to_string(out_channels) +
                                " numbers (one per output channel), not a list of " + std::to_string(v->size()));
    for (const auto& e : *v) {
      if (!e.is_number()) r.bad("weight_scale", "a list of numbers > 0");
      scales.push_back(e.get<double>());
    }
  } else {
    r.bad("weight_scale", "a number > 0 or a list of numbers > 0");
  }
  for (double s : scales)
    if (!std::isfinite(s) || !(s > 0)) r.bad("weight_scale", "made of finite numbers > 0");
  return scales;
}

void check_weight_zero_point(const AttrReader& r) {
  const nlohmann::json* v = r.raw("weight_zero_point");
  if (!v) return;
  bool zero = v->is_number_integer() && v->get<int64_t>() == 0;
  if (v->is_array()) {
    zero = true;
    for (const auto& e : *v) zero = zero && e.is_number_integer() && e.get<int64_t>() == 0;
  }
  if (!zero) r.bad("weight_zero_point", "0: int8 weights are symmetric, a non-zero weight zero point is not supported");
}

}  // namespace

QuantAttrs read_quant_attrs(const std::string& op, const AttrReader& r, int64_t out_channels) {
  QuantAttrs q;
  q.input_scale = read_scale(op, r, "input_scale");
  q.input_zero_point = read_zero_point(r, "input_zero_point");
  q.weight_scale = read_weight_scales(op, r, out_channels);
  check_weight_zero_point(r);
  q.output_scale = read_scale(op, r, "output_scale");
  q.output_zero_point = read_zero_point(r, "output_zero_point");
  q.activation = read_activation(r);
  q.bounds = activation_bounds(q.activation, q.output_scale, q.output_zero_point);
  for (int64_t c = 0; c < out_channels; ++c) {
    double ws = q.weight_scale[q.weight_scale.size() == 1 ? 0 : c];
    std::string what = "input_scale * weight_scale" + (q.weight_scale.size() == 1 ? "" : "[" + std::to_string(c) + "]") +
                       " / output_scale";
    q.multipliers.push_back(quantize_multiplier(q.input_scale * ws / q.output_scale, op, what));
  }
  return q;
}

void check_dtype(const std::string& op, const std::vector<TensorType>& inputs, size_t i, const std::string& name,
                 DataType t) {
  if (inputs[i].dtype != t)
    fail(op, "input '" + name + "' has type " + inputs[i].dtype.str() + "; " + t.str() + " is required");
}

Expr saturating_multiply_by_pot(Expr x, int exponent) {
  const int64_t limit = (int64_t{1} << (31 - exponent)) - 1;
  Expr shifted = mul(x, ci(int64_t{1} << exponent));
  return Select(Binary(ExprKind::GT, x, ci(limit)), ci(std::numeric_limits<int32_t>::max()),
                Select(lt(x, ci(-limit)), ci(std::numeric_limits<int32_t>::min()), shifted));
}

Stmt with_one_over_one_plus_x(Expr a, const std::function<Stmt(Expr)>& body) {
  const DataType i32 = DataType::Int(32);
  // RoundingHalfSum(a, 1.0) for a >= 0 is 2^30 + (a >> 1).
  Var half_den = MakeVar("half_denominator", i32);
  // The three Newton-Raphson steps x += 4 * (x * (1 - half_denominator * x)) as one loop
  // over a local: the same arithmetic as three copies (bit-exact), a third of the code.
  Buffer x_buf = scratch("recip", {1}, i32);
  Var x = MakeVar("x", i32), err = MakeVar("err", i32);
  Expr initial = add(ci(1515870810), saturating_rounding_doubling_high_mul(half_den, ci(-1010580540)));
  Stmt step = LetStmt(x, load(x_buf, {ci(0)}),
                      LetStmt(err, sub(ci(1 << 29), saturating_rounding_doubling_high_mul(half_den, x)),
                              store(x_buf, add(x, saturating_multiply_by_pot(saturating_rounding_doubling_high_mul(x, err), 2)),
                                    {ci(0)})));
  LoopNest newton;
  newton.axis("newton", 3);
  Var recip = MakeVar("reciprocal", i32);
  Stmt s = LetStmt(recip, saturating_multiply_by_pot(load(x_buf, {ci(0)}), 1), body(recip));
  s = SeqStmt({store(x_buf, initial, {ci(0)}), newton.wrap(step), s});
  return Allocate(x_buf, "local", LetStmt(half_den, add(call("shift_right", {a, ci(1)}), ci(1 << 30)), s));
}

Expr count_leading_zeros(Expr v, int lowest_bit) {
  Expr clz = ci(1);
  for (int k = 30; k > lowest_bit; --k) clz = add(clz, bool_to_int(lt(v, ci(int64_t{1} << k))));
  return clz;
}

}  // namespace ops
}  // namespace mtir
