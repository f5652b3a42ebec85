#include "ir/tvm_intrinsics.h"

#include <functional>
#include <unordered_map>
#include <vector>

#include "ir/visitor.h"
#include "support/diagnostic.h"

namespace mtir {

namespace {

const std::vector<TvmIntrinsic>& all_tvm_intrinsics() {
  using R = TvmIntrinsic::Result;
  const R I32 = R::kI32, Bool = R::kBool, Handle = R::kHandle, Arg = R::kArg, First = R::kFirst, Last = R::kLast;
  const bool Run = true, Carry = false;
  static const std::vector<TvmIntrinsic> table = {
#define MTIR_TVM_INTRINSIC(name, Result, min_args, variadic, Mode, what) {name, Result, min_args, variadic, Mode, what},
#include "ir/tvm_intrinsics.def"
  };
  (void)I32, (void)Bool, (void)Handle, (void)Arg, (void)First, (void)Last, (void)Run, (void)Carry;
  return table;
}

// A constant of `t`'s element type, broadcast to its lanes.
Expr constant(DataType t, int64_t v, const Span& s) {
  Expr c = IntImm(t.element_of(), v, s);
  return t.is_vector() ? Broadcast(c, t.lanes(), s) : c;
}

Expr shift(const char* op, const Expr& a, const Expr& b, const Span& s) { return Call(a->dtype, op, {a, b}, {}, s); }

// The value of a constant (or a broadcast constant), if it is one.
const int64_t* constant_value(const Expr& e) {
  if (const auto* b = as<BroadcastNode>(e)) return as_const_int(b->value);
  return as_const_int(e);
}

// TVM's legalization of tir.q_multiply_shift(x, y, q, s) (src/target/intrin_rule.cc):
// round(x * y * 2^(s - q)) for a Q31-style multiplier y, computed in int64 with the
// rounding constant added before the arithmetic right shift; a constant multiplier of
// 2^30 (the value 0.5 in Q31) is a plain shift in int32.
Expr q_multiply_shift(const CallNode* call) {
  const Span& at = call->span;
  Expr x = call->args[0], y = call->args[1], q = call->args[2], s = call->args[3];
  for (const Expr& a : call->args)
    if (!a->dtype.element_of().is_int() || a->dtype.element_of().bits() != 32)
      user_error(at, "T.q_multiply_shift takes int32 arguments, not " + a->dtype.str());
  const DataType lp = x->dtype, hp = DataType::Int(64).with_lanes(lp.lanes());
  const DataType st = s->dtype;
  const int64_t* m = constant_value(y);
  const int64_t* q31 = constant_value(q);
  if (m && *m == (int64_t{1} << 30) && q31 && *q31 == 31) {
    Expr e = Binary(ExprKind::Sub, s, constant(st, 1, at), at);
    const int64_t* c = constant_value(s);
    if (!c) user_error(at, "T.q_multiply_shift with the multiplier 2^30 needs a constant shift, as in TVM");
    if (*c - 1 > 0) return shift("shift_left", x, e, at);
    if (*c - 1 == 0) return x;  // x * 0.5 * 2: TVM's rounding term would shift by -1
    Expr right = Binary(ExprKind::Sub, constant(st, 0, at), e, at);
    Expr rounding = shift("shift_left", constant(lp, 1, at), Binary(ExprKind::Sub, right, constant(st, 1, at), at), at);
    return shift("shift_right", Binary(ExprKind::Add, x, rounding, at), right, at);
  }
  Expr zero = constant(st, 0, at);
  Expr positive = Binary(ExprKind::GT, s, zero, at);
  Expr left = Cast(hp, Select(positive, s, zero, at), at);
  Expr right = Select(positive, zero, Binary(ExprKind::Sub, zero, s, at), at);
  Expr wide = Cast(hp, x, at);
  wide = Select(Binary(ExprKind::NE, left, constant(hp, 0, at), at), shift("shift_left", wide, left, at), wide, at);
  wide = Binary(ExprKind::Mul, wide, Cast(hp, y, at), at);
  Expr total = Cast(hp, Binary(ExprKind::Add, right, q, at), at);
  Expr rounding = shift("shift_left", constant(hp, 1, at), Binary(ExprKind::Sub, total, constant(hp, 1, at), at), at);
  wide = Binary(ExprKind::Add, wide, rounding, at);
  return Cast(lp, shift("shift_right", wide, total, at), at);
}

}  // namespace

const TvmIntrinsic* lookup_tvm_intrinsic(const std::string& name) {
  static const std::unordered_map<std::string, const TvmIntrinsic*> by_name = [] {
    std::unordered_map<std::string, const TvmIntrinsic*> m;
    for (const auto& in : all_tvm_intrinsics()) m.emplace(in.name, &in);
    return m;
  }();
  auto it = by_name.find(name);
  return it == by_name.end() ? nullptr : it->second;
}

bool tvm_intrinsic_arity_ok(const TvmIntrinsic& in, size_t num_args, std::string* why) {
  if (num_args == in.min_args || (in.variadic && num_args > in.min_args)) return true;
  *why = std::string("T.") + in.name + " takes " + (in.variadic ? "at least " : "") + std::to_string(in.min_args) +
         " argument(s), got " + std::to_string(num_args);
  return false;
}

Expr expand_tvm_intrinsic(const CallNode* call, const std::string& where) {
  const TvmIntrinsic* in = lookup_tvm_intrinsic(call->op);
  if (!in) user_error(call->span, "unknown intrinsic 'T." + call->op + "'");
  if (std::string why; !tvm_intrinsic_arity_ok(*in, call->args.size(), &why)) user_error(call->span, why);
  if (!in->runs)
    user_error(call->span, "T." + call->op + " is " + in->what + ": microtir reads and prints it, but " + where + " cannot run it");
  const std::string name = call->op;
  if (name == "break_loop" || name == "continue_loop")
    user_error(call->span, std::string("T.") + name + " is " + in->what + ": a statement of its own, not a value");
  if (name == "assume") return Bool(true, call->span);
  if (name == "ignore_loop_partition") return call->args[0];  // the condition, unpartitioned
  if (name == "isnullptr") {
    if (!call->args[0]->dtype.is_handle())
      user_error(call->span, "T.isnullptr takes a handle, not " + call->args[0]->dtype.str());
    // TVM's null pointer, T.reinterpret("handle", T.uint64(0)) (the only reinterpret to a
    // handle the verifier takes), is null where it stands, so the interpreter runs it too.
    const auto* ptr = as<CallNode>(call->args[0]);
    if (ptr && ptr->is(Builtin::Reinterpret)) return Bool(true, call->span);
    return Call(DataType::Bool(), "tvm_handle_is_null", {call->args[0]}, {}, call->span);
  }
  if (name == "q_multiply_shift") return q_multiply_shift(call);
  const Expr& x = call->args[0];
  if ((name == "rsqrt" || name == "isnan") && !x->dtype.element_of().is_float())
    user_error(call->span, "T." + name + " is defined on floats, not " + x->dtype.str());
  if (name == "rsqrt") {
    Expr one = FloatImm(x->dtype.element_of(), 1.0, call->span);
    if (x->dtype.is_vector()) one = Broadcast(one, x->dtype.lanes(), call->span);
    return Binary(ExprKind::Div, one, Call(x->dtype, "sqrt", {x}, {}, call->span), call->span);
  }
  if (name == "isnan") return Binary(ExprKind::NE, x, x, call->span);
  internal_error(__FILE__, __LINE__, "a Run intrinsic without an expansion: " + name);
}

namespace {

LoopExit loop_exit_of(const EvaluateNode* eval) {
  const auto* call = eval ? as<CallNode>(eval->value) : nullptr;
  if (!call || call->builtin || !call->args.empty()) return LoopExit::kNone;
  if (call->op == "break_loop") return LoopExit::kBreak;
  if (call->op == "continue_loop") return LoopExit::kContinue;
  return LoopExit::kNone;
}

}  // namespace

LoopExit loop_exit(const Stmt& s) { return loop_exit_of(s ? as<EvaluateNode>(s) : nullptr); }

bool exits_loop(const Stmt& body) {
  struct Finder : Visitor {
    bool found = false;
    void visit_For(const ForNode*) override {}
    void visit_While(const WhileNode*) override {}
    void visit_Evaluate(const EvaluateNode* op) override { found = found || loop_exit_of(op) != LoopExit::kNone; }
  } finder;
  finder.visit(body);
  return finder.found;
}

std::unordered_set<const AllocateNode*> allocations_left_by_loop_exit(const Stmt& root) {
  struct Finder : Visitor {
    std::unordered_set<const AllocateNode*> found;
    std::vector<const AllocateNode*> open;  // the allocations around the node visited
    size_t floor = 0;                       // open[floor...] are inside the innermost loop
    void in_loop(const std::function<void()>& visit_loop) {
      const size_t saved = floor;
      floor = open.size();
      visit_loop();
      floor = saved;
    }
    void visit_For(const ForNode* op) override {
      in_loop([&] { Visitor::visit_For(op); });
    }
    void visit_While(const WhileNode* op) override {
      in_loop([&] { Visitor::visit_While(op); });
    }
    void visit_Evaluate(const EvaluateNode* op) override {
      if (loop_exit_of(op) != LoopExit::kNone && open.size() > floor) found.insert(open.back());
    }
    // An allocation left by an exit: so is the one around it, in the same loop.
    void visit_Allocate(const AllocateNode* op) override {
      open.push_back(op);
      Visitor::visit_Allocate(op);
      open.pop_back();
      if (found.count(op) && open.size() > floor) found.insert(open.back());
    }
  } finder;
  finder.visit(root);
  return finder.found;
}

}  // namespace mtir
