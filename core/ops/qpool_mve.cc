// See qpool_mve.h. TFLM with CMSIS-NN sums a pooling window with MVE the same way
// (arm_avgpool_s8); the rounding division stays scalar (Helium has no integer divide).
#include "ops/qpool_mve.h"

namespace mtir {
namespace ops {

namespace {

constexpr int kLanes = 4;

}  // namespace

bool mve_avg_pool_applies(int64_t channels, const std::vector<int64_t>& padding) {
  for (int64_t v : padding)
    if (v != 0) return false;
  return channels >= kLanes;
}

Stmt mve_avg_pool(const MveAvgPool& p, const std::function<Expr(Expr sum)>& finish) {
  Buffer data = flat_view(p.data, p.n * p.h * p.w * p.c), out = flat_view(p.out, p.n * p.oh * p.ow * p.c);
  LoopNest outer;
  Expr n = outer.axis("n", p.n), oh = outer.axis("oh", p.oh), ow = outer.axis("ow", p.ow);
  Var g = ivar("g");
  // The window row rh of channels c0 ..: kw contiguous-channel vectors added to the sums.
  auto at = [&](Expr c0, const Var& row, int64_t col) {
    Expr ih = add(mul(oh, ci(p.sh)), row), iw = add(mul(ow, ci(p.sw)), ci(col));
    return add(mul(add(mul(add(mul(n, ci(p.h)), ih), ci(p.w)), iw), ci(p.c)), c0);
  };
  auto window = [&](Expr c0, int lanes, const Buffer& acc) {
    Var rh = ivar("rh"), k = ivar("k");
    auto span = [&](const Buffer& b, Expr i) { return lanes == 1 ? load(b, {i}) : load(b, {Ramp(i, ci(1), lanes)}); };
    DataType t = kI32.with_lanes(lanes);
    Expr sum = span(acc, ci(0));
    for (int64_t col = 0; col < p.kw; ++col) sum = add(sum, Cast(t, span(data, at(c0, rh, col))));
    Expr zero = lanes == 1 ? ci(0) : Broadcast(ci(0), lanes);
    Expr first = lanes == 1 ? ci(0) : Ramp(ci(0), ci(1), lanes);
    Expr o = add(mul(add(mul(add(mul(n, ci(p.oh)), oh), ci(p.ow)), ow), ci(p.c)), c0);
    return SeqStmt({store(acc, zero, {first}), For(rh, ci(0), ci(p.kh), ForKind::kSerial, store(acc, sum, {first})),
                    For(k, ci(0), ci(lanes), ForKind::kSerial, store(out, finish(load(acc, {k})), {add(o, k)}))});
  };
  std::vector<Stmt> s;
  Buffer acc = scratch("acc", {kLanes}, kI32);
  s.push_back(For(g, ci(0), ci(p.c / kLanes), ForKind::kSerial, window(mul(g, ci(kLanes)), kLanes, acc)));
  for (int64_t c = p.c / kLanes * kLanes; c < p.c; ++c) s.push_back(window(ci(c), 1, acc));
  Stmt body = Allocate(acc, "local", outer.wrap(SeqStmt(s)));
  return DeclBuffer(data, DeclBuffer(out, body));
}

}  // namespace ops
}  // namespace mtir
