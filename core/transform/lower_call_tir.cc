// LowerCallTIR: `T.call_tir("g", A, B[0:4, :], n)` becomes a direct C call of g's
// kernel with data pointers (offset to each region's first element) and scalars, and
// a check of its return code that hands a failure up unchanged. For a packed callee
// the kernel is `g_compute`: the packed wrapper's run-time checks are not needed,
// because the validation (analysis/call_tir_check.h) proved at compile time that every
// argument matches. Each call site has its own arguments and touches nothing global,
// so a call moves freely into another function.
//
// A kernel that cannot return an error (no assertion, no workspace allocation, no
// return of a code, no call whose code it could pass on) gets a plain call: its
// return value is 0, and checking it costs three instructions and a branch per call
// in the AOT main (VWW: 34 calls).
#include "ir/mutator.h"
#include "ir/op.h"
#include "ir/visitor.h"
#include "transform/transform.h"

namespace mtir {
namespace {

const DataType kI32 = DataType::Int(32);

// Whether a function may return something other than 0: an assertion, a workspace
// allocation (a constant-size "local" buffer is a C array and cannot fail; the wasm
// backend allocates it from a pool sized for every local at once, so it cannot fail
// there either), a return of anything but the constant 0, tvm_throw_last_error, or a
// call that lowers to a return of its code.
class MayFail : public Visitor {
 public:
  bool found = false;

 protected:
  void visit_AssertStmt(const AssertStmtNode* op) override {
    found = true;
    Visitor::visit_AssertStmt(op);
  }
  void visit_Allocate(const AllocateNode* op) override {
    int64_t n = 0;
    if (op->scope != "local" || !const_num_elements(op->buffer, &n)) found = true;
    Visitor::visit_Allocate(op);
  }
  void visit_Call(const CallNode* op) override {
    if (op->is(Builtin::TvmReturn)) {
      const int64_t* v = op->args.empty() ? nullptr : as_const_int(op->args[0]);
      if (!v || *v != 0) found = true;
    }
    // tvm_throw_last_error sets the message and returns -1 in every backend.
    if (op->is(Builtin::CallTir) || op->is(Builtin::TvmCallPacked) || op->is(Builtin::TvmCallPackedLowered) ||
        op->is(Builtin::TvmThrowLastError))
      found = true;
    Visitor::visit_Call(op);
  }
};

bool may_fail(const PrimFunc& f) {
  MayFail v;
  v.visit(f->body);
  return v.found;
}


class Lowerer : public Mutator {
 public:
  explicit Lowerer(const IRModule& m) : m_(m) {}

 protected:
  Stmt mutate_Evaluate(const EvaluateNode* op, const Stmt& self) override {
    const auto* call = as<CallNode>(op->value);
    if (!call || !call->is(Builtin::CallTir)) return Mutator::mutate_Evaluate(op, self);
    const auto* name = call->args.empty() ? nullptr : as<StringImmNode>(call->args[0]);
    PrimFunc callee = name ? m_.lookup(name->value) : nullptr;
    if (!callee) user_error(op->span, "call_tir: no function '" + (name ? name->value : "?") + "' in the module");
    // The kernel to call: the packed function's own, or the function itself.
    std::string kernel_name = name->value;
    PrimFunc kernel = callee;
    if (is_packed(callee)) {
      kernel_name = name->value + "_compute";
      kernel = m_.lookup(kernel_name);
      if (!kernel) user_error(op->span, "call_tir: the packed function '" + name->value + "' has no kernel");
    }
    std::vector<Expr> args = {StringImm(symbol_of(kernel_name, kernel))};
    for (size_t i = 1; i < call->args.size(); ++i) {
      const auto* region = as<CallNode>(call->args[i]);
      if (region && region->is(Builtin::TirRegion)) {
        args.push_back(Call(DataType::Handle(), "address_of", {mutate(region->args.at(0))}));
      } else {
        Expr v = mutate(call->args[i]);
        DataType want = i - 1 < kernel->params.size() ? kernel->params[i - 1]->dtype : v->dtype;
        args.push_back(v->dtype == want ? v : Cast(want, v));
      }
    }
    if (!may_fail(kernel)) return Evaluate(Call(kI32, "call_extern", std::move(args)), op->span);
    Var rc = MakeVar("call_rc", kI32);
    Stmt fail = Evaluate(Call(kI32, "tvm_return", {rc}));
    return LetStmt(rc, Call(kI32, "call_extern", std::move(args)), IfThenElse(Binary(ExprKind::NE, rc, IntImm(kI32, 0)), fail),
                   op->span);
  }

 private:
  const IRModule& m_;
};

}  // namespace

Pass LowerCallTIR() {
  Pass p;
  p.name = "lower_call_tir";
  p.run = [](const IRModule& m) {
    IRModule out = m;
    for (auto& [name, f] : out.functions) f = Lowerer(m).mutate_func(f);
    return out;
  };
  return p;
}

}  // namespace mtir
