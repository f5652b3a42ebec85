// LowerTvmIntrinsics: the calls of TVM intrinsics that are not microtir builtins
// (ir/tvm_intrinsics.def) become builtins and arithmetic, as TVM's own legalization
// does (T.assume disappears, T.isnullptr is tvm_handle_is_null, T.q_multiply_shift the
// int64 rounding multiply); the carried ones (GPU, LLVM-only, TVM runtime internals) are
// refused here, with their location, before any backend meets them.
#include "ir/mutator.h"
#include "ir/tvm_intrinsics.h"
#include "transform/transform.h"

namespace mtir {
namespace {

class Expander : public Mutator {
  Expr mutate_Call(const CallNode* op, const Expr& self) override {
    Expr e = Mutator::mutate_Call(op, self);
    const auto* call = as<CallNode>(e);
    if (!call || call->builtin) return e;
    return mutate(expand_tvm_intrinsic(call, "the backends"));
  }
  // A statement that only states an assumption is nothing; `break` and `continue` stay
  // statements, which every backend runs.
  Stmt mutate_Evaluate(const EvaluateNode* op, const Stmt& self) override {
    if (loop_exit(self) != LoopExit::kNone) return self;
    const auto* call = as<CallNode>(op->value);
    if (call && !call->builtin && call->op == "assume") return Evaluate(IntImm(DataType::Int(32), 0, op->span), op->span);
    return Mutator::mutate_Evaluate(op, self);
  }
};

}  // namespace

Pass LowerTvmIntrinsics() {
  return MakeFunctionPass("lower_tvm_intrinsics", [](const PrimFunc& f) { return Expander().mutate_func(f); });
}

}  // namespace mtir
