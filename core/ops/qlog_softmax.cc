// qlog_softmax: TFLite Micro's int8 LOG_SOFTMAX over the last axis (reference
// log_softmax.h, LogSoftmaxQuantized; output scale 16/256, zero point 127). Per row: the
// maximum; the sum in Q12 of the exps of the scaled differences (from `table`, computed
// at compile time: a difference is 0..255); its natural log in Q5.26 at run time
// (gemmlowp's log_x_for_x_greater_than_or_equal_to_1); then each element whose
// difference passes the adjusted diff_min is (scaled difference - log) / 2^22 + 127,
// clamped, and the others -128.
#include "ops/qlog_softmax.h"

#include <limits>

#include "ops/fixed_point.h"
#include "ops/quant_util.h"

namespace mtir {
namespace ops {

namespace {

using json = nlohmann::json;

struct LogSoftmaxParams {
  fixed_point::SoftmaxParams scaling;  // input multiplier, left shift, diff_min
  QuantMultiplier reverse;             // TFLite's reverse_scaling_divisor and (left) shift
};

LogSoftmaxParams log_softmax_params(double input_scale, const std::string& op) {
  LogSoftmaxParams p;
  p.scaling = fixed_point::softmax_params(input_scale, 1.0, op);
  const double reverse = static_cast<double>(int64_t{1} << (31 - p.scaling.input_left_shift)) /
                         static_cast<double>(p.scaling.input_multiplier);
  p.reverse = quantize_multiplier(reverse, op, "the reverse scaling divisor");
  return p;
}

double check(const std::vector<TensorType>& in, const json& attrs) {
  const std::string op = "qlog_softmax";
  AttrReader r(op, attrs, {"input_scale"});
  if (in.size() != 2) fail(op, "expected 2 inputs (data, table), got " + std::to_string(in.size()));
  check_dtype(op, in, 0, "data", kI8);
  check_dtype(op, in, 1, "table", kI32);
  if (in[0].shape.empty()) fail(op, "input 'data' must have at least one dimension");
  if (in[1].shape != std::vector<int64_t>{2, 256}) fail(op, "input 'table' must be [2, 256] (log_softmax_table)");
  if (in[0].shape.back() > 4096) fail(op, "more than 4096 elements per row could overflow TFLite's Q12 sum of exps");
  return read_scale(op, r, "input_scale");
}

// gemmlowp's SaturatingRoundingMultiplyByPOTParam(x, e) for x > 0 and a run-time e >= 0.
Expr saturating_shift_left(Expr x, Expr e) {
  Expr limit = Binary(ExprKind::Sub, Call(kI64, "shift_left", {IntImm(kI64, 1), Cast(kI64, sub(ci(31), e))}), IntImm(kI64, 1));
  return Select(Binary(ExprKind::GT, Cast(kI64, x), limit), ci(std::numeric_limits<int32_t>::max()),
                call("shift_left", {x, e}));
}

// log(sum) in Q5.26 for a Q12 sum >= 1.0 (log_x_for_x_greater_than_or_equal_to_1<5, 12>):
// `body(log)` runs where it is defined.
Stmt with_log(Var sum, const std::function<Stmt(Expr)>& body) {
  auto mul0 = [](Expr a, Expr b) { return saturating_rounding_doubling_high_mul(std::move(a), std::move(b)); };
  const int64_t kSqrtHalf = 1518500250, kSqrtSqrtHalf = 1805811301, kLog2 = 1488522236;
  const int64_t kAlphaN = 117049297, kAlphaD = 127690142, kAlphaI = 1057819769, kAlphaF = 638450708;
  const int64_t kQuarterQ6 = int64_t{1} << 23;  // 1/4 with 6 integer bits
  Var clz_a = MakeVar("clz_a", kI32), zb = MakeVar("z_b", kI32), head_b = MakeVar("headroom_b", kI32);
  Var r = MakeVar("r", kI32), pow2 = MakeVar("z_pow_2_adj", kI32), q = MakeVar("q", kI32), sq = MakeVar("q_sq", kI32);
  Var p = MakeVar("p", kI32), denom = MakeVar("denom_minus_one", kI32), num = MakeVar("num", kI32);
  // r: the sum's mantissa in [sqrt(1/2), 1) as Q0.31 (of two candidate scalings, the smaller),
  // with the matching power of two (minus or plus a quarter, the larger).
  Expr r_a = saturating_multiply_by_pot(mul0(call("shift_left", {sum, sub(clz_a, ci(1))}), ci(kSqrtHalf)), 1);
  Expr r_b = saturating_shift_left(sum, head_b);
  Expr pow_a = add(mul(sub(ci(12), clz_a), ci(int64_t{1} << 25)), ci(kQuarterQ6));
  Expr pow_b = sub(mul(sub(ci(12), head_b), ci(int64_t{1} << 25)), ci(kQuarterQ6));
  Expr half_sum = Cast(kI32, Call(kI64, "shift_right", {Binary(ExprKind::Add, Cast(kI64, r), IntImm(kI64, kSqrtSqrtHalf + 1)),
                                                        IntImm(kI64, 1)}));
  auto finish = [&](Expr recip) {
    Expr num_scaled = rounding_divide_by_pot(num, ci(6));
    Expr total = add(mul0(pow2, ci(kLog2)), mul0(num_scaled, recip));
    Var log = MakeVar("log_sum", kI32);
    return LetStmt(log, saturating_multiply_by_pot(total, 1), body(log));
  };
  Stmt s = with_one_over_one_plus_x(denom, finish);
  s = LetStmt(num, add(mul0(q, r), mul0(mul0(q, sq), ci(kAlphaN))), s);
  s = LetStmt(denom, add(mul0(p, add(add(ci(kAlphaI), q), mul0(ci(kAlphaD), sq))), mul0(ci(kAlphaF), q)), s);
  s = LetStmt(p, half_sum, LetStmt(sq, mul0(q, q), s));
  s = LetStmt(q, mul(sub(r, ci(kSqrtSqrtHalf)), ci(2)), s);
  s = LetStmt(r, min_(r_a, r_b), LetStmt(pow2, max_(pow_a, pow_b), s));
  s = LetStmt(zb, mul0(sum, ci(kSqrtHalf)), LetStmt(head_b, sub(count_leading_zeros(zb, 17), ci(1)), s));
  return LetStmt(clz_a, count_leading_zeros(sum, 18), s);
}

PrimFunc build(const std::string& fname, const std::vector<TensorType>& in, const TensorType& out, const json& attrs) {
  const LogSoftmaxParams lp = log_softmax_params(check(in, attrs), "qlog_softmax");
  FuncBuilder fb;
  Buffer x = fb.param("data", in[0].shape, kI8), table = fb.param("table", {2, 256}, kI32);
  Buffer o = fb.param("out", out.shape, kI8);
  Buffer mx = scratch("row_max", {1}, kI32), acc = scratch("sum_of_exps", {1}, kI32);
  const int64_t depth = in[0].shape.back();
  LoopNest rows, l0, l1, l2;
  const std::vector<Expr> ridx = rows.axes({in[0].shape.begin(), in[0].shape.end() - 1}, "r");
  auto at = [&](Expr c) {
    std::vector<Expr> idx = ridx;
    idx.push_back(std::move(c));
    return idx;
  };
  Expr c0 = l0.axis("c0", depth), c1 = l1.axis("c1", depth), c2 = l2.axis("c2", depth);
  auto diff = [&](Expr c) { return sub(load(mx, {ci(0)}), Cast(kI32, load(x, at(std::move(c))))); };  // max - x, 0..255
  Stmt max_loop = l0.wrap(store(mx, max_(load(mx, {ci(0)}), Cast(kI32, load(x, at(c0)))), {ci(0)}));
  Stmt sum_loop = l1.wrap(store(acc, add(load(acc, {ci(0)}), load(table, {ci(0), diff(c1)})), {ci(0)}));
  Var sum = MakeVar("sum", kI32), adjusted = MakeVar("adjusted_diff_min", kI32), d = MakeVar("d", kI32);
  auto outputs = [&](Expr log) {
    Expr reverse = multiply_by_quantized_multiplier(add(log, ci(std::numeric_limits<int32_t>::min())), lp.reverse);
    Expr y = add(rounding_divide_by_pot(sub(load(table, {ci(1), d}), log), ci(22)), ci(127));
    Stmt each = LetStmt(d, diff(c2), store(o, Cast(kI8, Select(Binary(ExprKind::GT, sub(ci(0), d), adjusted),
                                                              max_(min_(y, ci(127)), ci(-128)), ci(-128))), at(c2)));
    return LetStmt(adjusted, max_(ci(lp.scaling.diff_min - 1), reverse), l2.wrap(each));
  };
  Stmt row = SeqStmt({store(mx, ci(-128), {ci(0)}), max_loop, store(acc, ci(0), {ci(0)}), sum_loop,
                      LetStmt(sum, load(acc, {ci(0)}), with_log(sum, outputs))});
  return fb.finish(fname, Allocate(mx, "global", Allocate(acc, "global", rows.wrap(row))));
}

}  // namespace

NDArray log_softmax_table(double input_scale) {
  const LogSoftmaxParams p = log_softmax_params(input_scale, "LOG_SOFTMAX");
  NDArray t = NDArray::zeros(kI32, {2, 256});
  for (int d = 0; d < 256; ++d) {
    if (-d < p.scaling.diff_min) continue;  // neither summed nor output (-128)
    const int32_t scaled = fixed_point::doubling_high_mul(-d * (1 << p.scaling.input_left_shift), p.scaling.input_multiplier);
    t.set_int(d, fixed_point::divide_by_pot(fixed_point::exp_on_negative_values(scaled, 5), 12));
    t.set_int(256 + d, scaled);
  }
  return t;
}

void register_qlog_softmax_ops(std::vector<OpDef>& ops) {
  ops.push_back(OpDef{"qlog_softmax",
                      same_type_as_input(check), build, OutputSharing::kNone});
}

}  // namespace ops
}  // namespace mtir
