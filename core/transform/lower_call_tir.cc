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
//
// `Module.sub(args...)` (call_global, TVM's call by GlobalVar) becomes the same direct
// call with the arguments as they are (pointers and scalars); its value is the callee's
// return value, or for a function without one the same return-code check.
#include <functional>
#include <map>
#include <set>

#include "analysis/call_tir_check.h"
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
    if (op->is(Builtin::TvmReturn) && !op->args.empty()) {  // a bare `return` returns 0
      const int64_t* v = as_const_int(op->args[0]);
      if (!v || *v != 0) found = true;
    }
    // tvm_throw_last_error sets the message and returns -1 in every backend.
    if (op->is(Builtin::CallTir) || op->is(Builtin::CallGlobal) || op->is(Builtin::TvmCallPacked) ||
        op->is(Builtin::TvmCallPackedLowered) ||
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


// What a call by name reaches: the packed function's kernel, or the function itself.
struct Kernel {
  std::string symbol;
  PrimFunc f;
};

// The code generators return one 32-bit register: a float32 result travels as its bits
// (reinterpret to int32 at the return, back to float32 at each call), a bool as 0 or 1
// (cast to int32 at the return, back to bool at each call).
bool returns_in_int32(const PrimFunc& f) { return f->ret_type == DataType::Float(32) || f->ret_type.is_bool(); }

// `return v` in a function whose value travels as an int32; a bare `return` returns 0
// (success), as falling off the end does.
Expr int32_return_value(const CallNode* ret, DataType ret_type) {
  if (ret->args.empty()) return IntImm(kI32, 0, ret->span);
  const Expr& v = ret->args[0];
  if (ret_type == DataType::Float(32)) return Call(kI32, "reinterpret", {v});
  return v->dtype.is_bool() ? Cast(kI32, v) : v;
}

class Lowerer : public Mutator {
 public:
  Lowerer(const IRModule& m, const std::map<std::string, DataType>& int32_returns, DataType ret_type)
      : m_(m), int32_returns_(int32_returns), ret_type_(ret_type) {}

  Kernel kernel_of(const CallNode* call, const Span& at) const {
    const auto* name = call->args.empty() ? nullptr : as<StringImmNode>(call->args[0]);
    PrimFunc callee = name ? m_.lookup(name->value) : nullptr;
    if (!callee) user_error(at, call->op + ": no function '" + (name ? name->value : "?") + "' in the module");
    if (!is_packed(callee)) return {symbol_of(name->value, callee), callee};
    PrimFunc kernel = m_.lookup(name->value + "_compute");
    if (!kernel) user_error(at, call->op + ": the packed function '" + name->value + "' has no kernel");
    return {symbol_of(name->value + "_compute", kernel), kernel};
  }

 protected:
  Stmt mutate_Evaluate(const EvaluateNode* op, const Stmt& self) override {
    const auto* call = as<CallNode>(op->value);
    if (call && call->is(Builtin::TvmReturn)) {
      Expr value = int32_return_value(as<CallNode>(Mutator::mutate(op->value)), ret_type_);
      return Evaluate(Call(kI32, "tvm_return", {value}, call->attrs, call->span), op->span);
    }
    const bool void_call = call && (call->is(Builtin::CallTir) || (call->is(Builtin::CallGlobal) && call->dtype.is_void()));
    if (!void_call) return Mutator::mutate_Evaluate(op, self);
    const Kernel kernel = kernel_of(call, op->span);
    Expr lowered = Call(kI32, "call_extern", arguments(call, kernel));
    if (!may_fail(kernel.f)) return Evaluate(lowered, op->span);
    // A failure code of the callee is handed up unchanged.
    Var rc = MakeVar("call_rc", kI32);
    Stmt fail = Evaluate(Call(kI32, "tvm_return", {rc}));
    return LetStmt(rc, lowered, IfThenElse(Binary(ExprKind::NE, rc, IntImm(kI32, 0)), fail), op->span);
  }

  Expr mutate_Call(const CallNode* op, const Expr& self) override {
    if (op->is(Builtin::CallGlobal)) {
      const Kernel kernel = kernel_of(op, op->span);
      return value_of(Call(op->dtype, "call_extern", arguments(op, kernel), {}, op->span));
    }
    Expr e = Mutator::mutate_Call(op, self);
    return op->is(Builtin::CallExtern) ? value_of(e) : e;
  }

 private:
  // The kernel's arguments: regions become the address of their first element, scalars
  // take the parameter's type.
  std::vector<Expr> arguments(const CallNode* call, const Kernel& kernel) {
    std::vector<Expr> args = {StringImm(kernel.symbol)};
    for (size_t i = 1; i < call->args.size(); ++i) {
      const auto* region = as<CallNode>(call->args[i]);
      if (region && region->is(Builtin::TirRegion)) {
        args.push_back(Call(DataType::Handle(), "address_of", {mutate(region->args.at(0))}));
        continue;
      }
      Expr v = mutate(call->args[i]);
      DataType want = i - 1 < kernel.f->params.size() ? kernel.f->params[i - 1]->dtype : v->dtype;
      args.push_back(v->dtype == want ? v : Cast(want, v));
    }
    return args;
  }

  // A call of a function that returns a float32 as its bits or a bool as 0 or 1: the
  // int32 back to its type.
  Expr value_of(const Expr& e) const {
    const auto* call = as<CallNode>(e);
    const auto* symbol = call && !call->args.empty() ? as<StringImmNode>(call->args[0]) : nullptr;
    auto returns = symbol ? int32_returns_.find(symbol->value) : int32_returns_.end();
    if (returns == int32_returns_.end() || call->dtype != returns->second) return e;
    Expr bits = Call(kI32, "call_extern", call->args, call->attrs, call->span);
    if (call->dtype.is_bool()) return Binary(ExprKind::NE, bits, IntImm(kI32, 0), call->span);
    return Call(DataType::Float(32), "reinterpret", {bits}, {}, call->span);
  }

  const IRModule& m_;
  const std::map<std::string, DataType>& int32_returns_;  // symbol -> float32 or bool
  DataType ret_type_;                                     // of the function being lowered
};

// What the code generators return: nothing, an int32, a float32 (as its bits) or a bool
// (as 0 or 1); a
// recursion through Module.sub(...) calls cannot be compiled (the static memory plan and
// the stack bound need a call graph without cycles), though the interpreter runs it.
void check_compilable(const IRModule& m) {
  CallEdges edges;
  for (const auto& [name, f] : m.functions) {
    const DataType r = f->ret_type;
    if (!r.is_void() && r != kI32 && r != DataType::Float(32) && !r.is_bool())
      user_error(f->span, "function '" + name + "' returns " + r.str() +
                              ": compiled functions return int32, float32 or bool (the interpreter runs it)");
    struct Collect : Visitor {
      std::function<void(const CallNode*)> found;
      void visit_Call(const CallNode* op) override {
        if (op->is(Builtin::CallGlobal)) found(op);
        Visitor::visit_Call(op);
      }
    } collect;
    collect.found = [&, caller = name](const CallNode* call) {
      std::string kernel = as<StringImmNode>(call->args.at(0))->value;
      if (PrimFunc callee = m.lookup(kernel); callee && is_packed(callee)) kernel += "_compute";
      edges[caller].push_back({kernel, call});
    };
    collect.visit(f->body);
  }
  for (const CallCycle& c : call_cycles(edges, m))
    user_error(c.call->span, "the call from '" + c.caller + "' to '" + c.callee + "' is recursive (" + c.path +
                                 "): it runs in the interpreter, but compiled code needs a call graph without "
                                 "cycles (for the static memory plan and the stack bound)");
}

}  // namespace

Pass LowerCallTIR() {
  Pass p;
  p.name = "lower_call_tir";
  p.run = [](const IRModule& m) {
    check_compilable(m);
    std::map<std::string, DataType> int32_returns;
    for (const auto& [name, f] : m.functions)
      if (returns_in_int32(f)) int32_returns[symbol_of(name, f)] = f->ret_type;
    IRModule out = m;
    for (auto& [name, f] : out.functions) {
      const bool in_int32 = returns_in_int32(f);
      f = Lowerer(m, int32_returns, f->ret_type).mutate_func(f);
      if (in_int32) {
        auto g = std::make_shared<PrimFuncNode>(*f);
        g->ret_type = kI32;
        f = g;
      }
    }
    return out;
  };
  return p;
}

}  // namespace mtir
