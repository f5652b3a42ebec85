// UnrollLoops: loops marked T.unroll with constant bounds become their iterations in
// sequence, the loop variable replaced by each value (Simplify then folds the index
// arithmetic). C compilers do not unroll at -O2/-Os, and on a microcontroller the loop
// compare-and-branch of a 2- or 4-MAC body is a large share of its cost; the op
// builders mark exactly the small inner loops worth unrolling. Loops whose body defines
// variables (inner loops, lets, allocations) stay loops: copies would define the same
// variable twice.
#include "analysis/bound_vars.h"
#include "ir/mutator.h"
#include "ir/tvm_intrinsics.h"
#include "ir/substitute.h"
#include "transform/transform.h"

namespace mtir {
namespace {

// Copies of one loop body: beyond this many the code growth outweighs the saving.
constexpr int64_t kMaxUnroll = 64;

class Unroller : public Mutator {
  Stmt mutate_For(const ForNode* op, const Stmt& self) override {
    Stmt body = mutate(op->body);
    const auto* min = as<IntImmNode>(op->min);
    const auto* extent = as<IntImmNode>(op->extent);
    if (op->for_kind != ForKind::kUnrolled || !min || !extent || extent->value > kMaxUnroll ||
        !bound_inside(body).empty() || exits_loop(body)) {
      return body == op->body ? self : ForLike(op, op->min, op->extent, body);
    }
    std::vector<Stmt> copies;
    for (int64_t i = 0; i < extent->value; ++i)
      copies.push_back(substitute(body, op->loop_var, IntImm(op->loop_var->dtype, min->value + i)));
    if (copies.empty()) return Evaluate(IntImm(DataType::Int(32), 0));
    return copies.size() == 1 ? copies[0] : SeqStmt(std::move(copies), op->span);
  }
};

}  // namespace

Pass UnrollLoops() {
  return MakeFunctionPass("unroll_loops", [](const PrimFunc& f) { return Unroller().mutate_func(f); });
}

}  // namespace mtir
