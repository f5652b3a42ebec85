// ql2_normalization: TFLite Micro's int8 L2_NORMALIZATION (reference integer_ops
// l2normalization.h) over the last axis. Per row, the sum of (x - input_zero_point)^2 in
// int32 gives 1 / sqrt(sum) as a multiplier and shift at run time
// (GetInvSqrtQuantizedMultiplierExp: five Newton-Raphson steps in Q3.28); each
// x - input_zero_point times it, shifted left by 7 more (the output's scale is 1/128,
// zero point 0), is clamped to int8.
#include <limits>

#include "ops/quant_util.h"

namespace mtir {
namespace ops {
namespace {

using json = nlohmann::json;
// Squares of int8 differences are below 2^16: more of them could overflow int32 (TFLM
// would overflow too).
constexpr int64_t kMaxDepth = (int64_t{1} << 31) / (255 * 255);

int32_t l2_params(const std::vector<TensorType>& in, const json& attrs) {
  const std::string op = "ql2_normalization";
  AttrReader r(op, attrs, {"input_zero_point"});
  if (in.size() != 1) fail(op, "expected 1 input (data), got " + std::to_string(in.size()));
  check_dtype(op, in, 0, "data", kI8);
  if (in[0].shape.empty()) fail(op, "input 'data' must have at least one dimension");
  if (in[0].shape.back() > kMaxDepth)
    fail(op, "the last axis has " + std::to_string(in[0].shape.back()) + " elements; more than " +
                 std::to_string(kMaxDepth) + " would overflow TFLite's int32 sum of squares");
  return read_zero_point(r, "input_zero_point");
}

// GetInvSqrtQuantizedMultiplierExp(sum, -1) at run time: `body(multiplier, shift)` runs
// inside the statements that define them (`work`, a local int32, holds the iteration;
// `sum` is read several times: a variable).
Stmt with_inv_sqrt(Var sum, const Buffer& work, const std::function<Stmt(Expr, Expr)>& body) {
  // sum < 2^31, so at most one division by 4 brings it below 2^29.
  Var big = MakeVar("big", DataType::Bool()), in = MakeVar("in", kI32), clz = MakeVar("clz", kI32);
  Var pairs = MakeVar("pairs", kI32), right = MakeVar("right", kI32), v = MakeVar("v", kI32);
  Expr lz = count_leading_zeros(in, 1);  // in is in [2, 2^29)
  // Newton-Raphson in Q3.28 from x = 1: x = (1.5 x - v/2 x^3), five times.
  Var x = MakeVar("x", kI32), x3 = MakeVar("x3", kI32), half_v = MakeVar("half_v", kI32);
  auto high = [](Expr a, Expr b) { return saturating_rounding_doubling_high_mul(std::move(a), std::move(b)); };
  Stmt step = LetStmt(
      x, load(work, {ci(0)}),
      LetStmt(x3, saturating_multiply_by_pot(high(high(x, x), x), 6),
              store(work, saturating_multiply_by_pot(sub(high(ci((1 << 28) + (1 << 27)), x), high(half_v, x3)), 3),
                    {ci(0)})));
  LoopNest newton;
  newton.axis("newton", 5);
  // x * sqrt(2)/2; a negative right shift moves into the multiplier.
  Var root = MakeVar("root", kI32);
  Expr negative = lt(right, ci(0));
  // (Both sides of a select are evaluated: the shift is max(-right, 0).)
  const DataType u32 = DataType::UInt(32);
  Expr multiplier = Cast(kI32, Call(u32, "shift_left", {Cast(u32, root), Cast(u32, max_(sub(ci(0), right), ci(0)))}));
  // A sum of 0 or 1 (computed alongside, harmlessly): the multiplier INT32_MAX, shift 0.
  Var m = MakeVar("inv_multiplier", kI32), s = MakeVar("inv_shift", kI32), tiny = MakeVar("tiny", DataType::Bool());
  Stmt tail = LetStmt(
      root, high(load(work, {ci(0)}), ci(1518500250)),
      LetStmt(tiny, Binary(ExprKind::LE, sum, ci(1)),
              LetStmt(m, Select(tiny, ci(std::numeric_limits<int32_t>::max()), multiplier),
                      LetStmt(s, Select(tiny, ci(0), Select(negative, ci(0), sub(ci(0), right))), body(m, s)))));
  Stmt general = LetStmt(
      v, call("shift_left", {in, mul(pairs, ci(2))}),
      LetStmt(half_v, rounding_divide_by_pot(call("shift_right", {v, ci(1)}), ci(1)),
              SeqStmt({store(work, ci(1 << 28), {ci(0)}), newton.wrap(step), tail})));
  general = LetStmt(clz, lz, LetStmt(pairs, sub(call("shift_right", {sub(clz, ci(1)), ci(1)}), ci(1)),
                                     LetStmt(right, sub(Select(big, ci(12), ci(11)), pairs), general)));
  return LetStmt(big, Binary(ExprKind::GE, sum, ci(1 << 29)),
                 LetStmt(in, Select(big, call("shift_right", {sum, ci(2)}), sum), general));
}

PrimFunc l2_build(const std::string& fname, const std::vector<TensorType>& in, const TensorType& out,
                  const json& attrs) {
  const int32_t zp = l2_params(in, attrs);
  FuncBuilder fb;
  Buffer x = fb.param("data", in[0].shape, kI8);
  Buffer o = fb.param("out", out.shape, kI8);
  Buffer acc = scratch("sum_squares", {1}, kI32), work = scratch("inv_sqrt", {1}, kI32);
  LoopNest rows, l0, l1;
  const std::vector<Expr> ridx = rows.axes({in[0].shape.begin(), in[0].shape.end() - 1}, "r");
  auto at = [&](Expr c) {
    std::vector<Expr> idx = ridx;
    idx.push_back(std::move(c));
    return idx;
  };
  Expr c0 = l0.axis("c0", in[0].shape.back()), c1 = l1.axis("c1", in[0].shape.back());
  Var d = MakeVar("d", kI32);
  Stmt square = LetStmt(d, sub(Cast(kI32, load(x, at(c0))), ci(zp)), store(acc, add(load(acc, {ci(0)}), mul(d, d)), {ci(0)}));
  auto scale_row = [&](Expr m, Expr s) {
    Expr y = multiply_by_quantized_multiplier(sub(Cast(kI32, load(x, at(c1))), ci(zp)), m, add(s, ci(7)));
    return l1.wrap(store(o, Cast(kI8, max_(min_(y, ci(127)), ci(-128))), at(c1)));
  };
  Var sum = MakeVar("sum", kI32);
  Stmt row = SeqStmt({store(acc, ci(0), {ci(0)}), l0.wrap(square),
                      LetStmt(sum, load(acc, {ci(0)}), with_inv_sqrt(sum, work, scale_row))});
  return fb.finish(fname, Allocate(acc, "global", Allocate(work, "local", rows.wrap(row))));
}

}  // namespace

void register_ql2_normalization_ops(std::vector<OpDef>& ops) {
  ops.push_back(OpDef{"ql2_normalization",
                      same_type_as_input(l2_params), l2_build, OutputSharing::kNone});
}

}  // namespace ops
}  // namespace mtir
