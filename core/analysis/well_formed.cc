// The well-formedness verifier. One walk per function that keeps track of which
// variables and buffers are in scope and checks the types of every node on the way.
// It never stops at the first problem: every finding becomes a diagnostic.
#include "analysis/well_formed.h"

#include "analysis/call_tir_check.h"
#include "analysis/resource_handle_check.h"

#include <atomic>
#include <map>
#include <set>
#include <string>
#include <unordered_set>

#include "ir/function_memo.h"
#include "ir/tvm_intrinsics.h"
#include "ir/op.h"
#include "ir/reinterpret.h"
#include "ir/visitor.h"

namespace mtir {
namespace {

// How an operator is written in the text format, for messages.
const char* op_symbol(ExprKind k) {
  switch (k) {
    case ExprKind::Add: return "+";
    case ExprKind::Sub: return "-";
    case ExprKind::Mul: return "*";
    case ExprKind::Div: return "/";
    case ExprKind::Mod: return "T.truncmod";
    case ExprKind::FloorDiv: return "//";
    case ExprKind::FloorMod: return "%";
    case ExprKind::Min: return "T.min";
    case ExprKind::Max: return "T.max";
    case ExprKind::EQ: return "==";
    case ExprKind::NE: return "!=";
    case ExprKind::LT: return "<";
    case ExprKind::LE: return "<=";
    case ExprKind::GT: return ">";
    case ExprKind::GE: return ">=";
    case ExprKind::And: return "and";
    case ExprKind::Or: return "or";
    default: return expr_kind_name(k);
  }
}

bool is_arith(ExprKind k) { return is_binary(k) && !is_comparison(k) && !is_logical(k); }

class WellFormedChecker : public Visitor {
 public:
  std::vector<Diagnostic> diags;

  // Whether the last function checked calls another function of the module.
  bool calls_module_functions() const { return calls_module_functions_; }

  void check_func(const PrimFunc& f) {
    calls_module_functions_ = false;
    in_scope_.clear();
    defined_.clear();
    buffers_.clear();
    span_stack_.clear();
    if (f->params.size() != f->param_buffers.size())
      error(f->span, "function has " + std::to_string(f->params.size()) + " parameters but " +
                         std::to_string(f->param_buffers.size()) + " parameter buffer slots");
    for (const auto& p : f->params) define(p, p->span);
    for (size_t i = 0; i < f->params.size() && i < f->param_buffers.size(); ++i) {
      const Buffer& b = f->param_buffers[i];
      if (!b) continue;
      if (!f->params[i]->dtype.is_handle())
        error(f->params[i]->span, "buffer parameter '" + f->params[i]->name + "' must be a handle, not " +
                                      f->params[i]->dtype.str());
      buffers_.insert(b.get());
      if (b->data && b->data != f->params[i] && !in_scope_.count(b->data.get())) define(b->data, b->span);
      // A bare variable in a parameter buffer's shape that is not a parameter is a
      // shape variable: the buffer declaration itself binds it (as in TVM).
      auto bind_shape_var = [&](const Expr& e) {
        if (const auto* v = as<VarNode>(e)) {
          if (!in_scope_.count(v)) define(std::static_pointer_cast<const VarNode>(e), b->span);
        }
      };
      for (const auto& e : b->shape) bind_shape_var(e);
      for (const auto& e : b->strides) bind_shape_var(e);
      bind_shape_var(b->elem_offset);
    }
    for (const auto& b : f->param_buffers)
      if (b) check_buffer_decl(b);
    left_by_loop_exit_ = allocations_left_by_loop_exit(f->body);
    visit(f->body);
  }

  void visit(const Expr& e) override {
    if (!e) return;
    // Variable nodes are shared between the definition and all uses, so their span is
    // the definition's; a problem with a use is reported at the enclosing node instead.
    bool push = e->kind != ExprKind::Var;
    if (push) span_stack_.push_back(&e->span);
    check_types(e);
    Visitor::visit(e);
    if (push) span_stack_.pop_back();
  }

  void visit(const Stmt& s) override {
    if (!s) return;
    span_stack_.push_back(&s->span);
    Visitor::visit(s);
    span_stack_.pop_back();
  }

 protected:
  // Declarations check their buffer explicitly (check_buffer_decl); a use does not
  // re-check the shape, which would repeat the same diagnostic at every access.
  void visit_buffer(const Buffer&) override {}

  void visit_Var(const VarNode* op) override {
    if (!in_scope_.count(op))
      error(enclosing_span(op->span), "variable '" + op->name + "' is used outside the scope that defines it");
  }

  void visit_BufferLoad(const BufferLoadNode* op) override {
    int lanes = check_access(op->buffer, op->indices, op->span);
    // with_lanes: a scalable vector's lanes (T.vscale() * k) compare by k
    if (op->buffer && op->dtype.with_lanes(op->dtype.lanes()) != access_dtype(op->buffer, lanes))
      error(op->span, "load from '" + op->buffer->name + "' has type " + op->dtype.str() + ", but the buffer holds " +
                          op->buffer->dtype.str() + (lanes > 1 ? " and the index has " + std::to_string(lanes) + " lanes" : ""));
    for (const auto& i : op->indices) visit(i);
  }

  void visit_BufferStore(const BufferStoreNode* op) override {
    int lanes = check_access(op->buffer, op->indices, op->span);
    if (op->buffer && op->value && op->value->dtype.with_lanes(op->value->dtype.lanes()) != access_dtype(op->buffer, lanes))
      error(op->span, "value stored into '" + op->buffer->name + "' has type " + op->value->dtype.str() +
                          ", but the buffer holds " + op->buffer->dtype.str() +
                          (lanes > 1 ? " and the index has " + std::to_string(lanes) + " lanes" : ""));
    visit(op->value);
    for (const auto& i : op->indices) visit(i);
  }

  void visit_For(const ForNode* op) override {
    visit(op->min);
    visit(op->extent);
    DataType vt = op->loop_var->dtype;
    if (!vt.is_integer()) {
      error(op->span, "loop variable '" + op->loop_var->name + "' must be an integer, not " + vt.str());
    } else {
      auto check_bound = [&](const Expr& e, const char* what) {
        if (e && e->dtype != vt)
          error(span_of(e, op->span), std::string("loop ") + what + " of '" + op->loop_var->name + "' has type " +
                                          e->dtype.str() + ", but the loop variable is " + vt.str());
      };
      check_bound(op->min, "start");
      check_bound(op->extent, "extent");
    }
    define(op->loop_var, op->span);
    visit(op->body);
    in_scope_.erase(op->loop_var.get());
  }

  void visit_LetStmt(const LetStmtNode* op) override {
    let_value_ = op->value.get();
    check_let(op);
  }
  void visit_Evaluate(const EvaluateNode* op) override {
    statement_value_ = op->value.get();
    visit(op->value);
  }
  void visit_Let(const LetNode* op) override { check_let(op); }

  // A let statement or expression: its value, then its variable in scope for its body.
  template <typename LetLike>
  void check_let(const LetLike* op) {
    visit(op->value);
    if (op->value && op->value->dtype != op->var->dtype)
      error(op->span, "value of '" + op->var->name + "' has type " + op->value->dtype.str() +
                          ", but the variable is " + op->var->dtype.str());
    define(op->var, op->span);
    visit(op->body);
    in_scope_.erase(op->var.get());
  }

  void visit_While(const WhileNode* op) override {
    check_bool(op->condition, "condition of 'while'", op->span);
    Visitor::visit_While(op);
  }

  void visit_IfThenElse(const IfThenElseNode* op) override {
    check_bool(op->condition, "condition of 'if'", op->span);
    Visitor::visit_IfThenElse(op);
  }

  // T.launch_thread binds its thread variable for the body (one env_thread variable
  // may be launched by several statements, as in TVM).
  void visit_AttrStmt(const AttrStmtNode* op) override {
    const auto* thread = as<VarNode>(op->node);
    if (op->key != "thread_extent" || !thread || thread->thread_tag.empty()) return Visitor::visit_AttrStmt(op);
    visit(op->value);
    if (op->value && !op->value->dtype.is_integer())
      error(op->span, "the extent of GPU thread '" + thread->thread_tag + "' must be an integer, not " +
                          op->value->dtype.str());
    const Var v = std::static_pointer_cast<const VarNode>(op->node);
    if (defined_.count(thread)) in_scope_.insert(thread);
    else define(v, op->span);
    visit(op->body);
    in_scope_.erase(thread);
  }

  void visit_AssertStmt(const AssertStmtNode* op) override {
    check_bool(op->condition, "condition of 'assert'", op->span);
    Visitor::visit_AssertStmt(op);
  }

  void visit_Allocate(const AllocateNode* op) override {
    const Buffer& b = op->buffer;
    if (!b) {
      error(op->span, "allocation without a buffer");
      visit(op->body);
      return;
    }
    check_buffer_decl(b);
    if (buffers_.count(b.get())) error(op->span, "buffer '" + b->name + "' is allocated twice");
    // Generated code frees an allocation where its scope ends, which a loop exit skips.
    if (left_by_loop_exit_.count(op))
      error(op->span, "a `break` or `continue` leaves the allocation of '" + b->name +
                          "', which would not be freed; allocate it outside the loop");
    buffers_.insert(b.get());
    if (b->data) define(b->data, op->span);
    visit(op->body);
    buffers_.erase(b.get());
    if (b->data) in_scope_.erase(b->data.get());
  }

  // A constant buffer binds its pointer like an allocation.
  void visit_AllocateConst(const AllocateConstNode* op) override {
    const Buffer& b = op->buffer;
    check_buffer_decl(b);
    buffers_.insert(b.get());
    define(b->data, op->span);
    visit(op->body);
    buffers_.erase(b.get());
    in_scope_.erase(b->data.get());
  }

  void visit_DeclBuffer(const DeclBufferNode* op) override {
    const Buffer& b = op->buffer;
    if (!b || !b->data) {
      error(op->span, "buffer declaration without a data pointer");
      visit(op->body);
      return;
    }
    // A view does not own memory: its pointer must already be bound here. A pointer
    // bound nowhere is TVM's `T.Buffer(...)` in a body without data=, a buffer whose memory
    // comes later (buffer_bind_scope, T.realize); it binds that pointer and the bare
    // variables of its shape (`n = T.int32()` before it), as a parameter's buffer does.
    std::vector<const VarNode*> bound;
    if (!defined_.count(b->data.get())) {
      define(b->data, op->span);
      bound.push_back(b->data.get());
      for (const Expr* e : shape_var_slots(b))
        if (const auto* v = as<VarNode>(*e); v && !in_scope_.count(v)) {
          define(std::static_pointer_cast<const VarNode>(*e), op->span);
          bound.push_back(v);
        }
    }
    check_buffer_decl(b);
    if (!in_scope_.count(b->data.get()))
      error(op->span, "buffer '" + b->name + "' views pointer '" + b->data->name + "', which is not defined here");
    bool fresh = buffers_.insert(b.get()).second;
    visit(op->body);
    if (fresh) buffers_.erase(b.get());
    for (const VarNode* v : bound) in_scope_.erase(v);
  }

  static std::vector<const Expr*> shape_var_slots(const Buffer& b) {
    std::vector<const Expr*> slots;
    for (const auto& e : b->shape) slots.push_back(&e);
    for (const auto& e : b->strides) slots.push_back(&e);
    slots.push_back(&b->elem_offset);
    return slots;
  }

 private:
  bool calls_module_functions_ = false;
  std::unordered_set<const VarNode*> in_scope_;        // usable at this point of the walk
  std::unordered_set<const VarNode*> defined_;         // defined anywhere so far in this function
  std::unordered_set<const BufferNode*> buffers_;      // parameter buffers and enclosing allocations
  std::unordered_set<const AllocateNode*> left_by_loop_exit_;  // allocations a break or continue leaves
  const ExprNode* statement_value_ = nullptr;  // the value of the innermost Evaluate
  const ExprNode* let_value_ = nullptr;        // the value of the innermost LetStmt
  std::vector<const Span*> span_stack_;                // spans of the nodes enclosing the current one

  void error(const Span& span, std::string message) {
    Diagnostic d;
    d.severity = Severity::kError;
    d.span = span;
    d.message = std::move(message);
    diags.push_back(std::move(d));
  }

  Span enclosing_span(const Span& fallback) const {
    for (auto it = span_stack_.rbegin(); it != span_stack_.rend(); ++it)
      if ((*it)->defined()) return **it;
    return fallback;
  }

  // The span of expression `e` itself, or `fallback` (the enclosing node) when it has
  // none. A variable's span is where it was defined, never the use, so it does not count.
  static const Span& span_of(const Expr& e, const Span& fallback) {
    return e && e->kind != ExprKind::Var && e->span.defined() ? e->span : fallback;
  }

  // Binds `v` for the rest of its scope. A variable node is one definition: binding the
  // same node twice would make its uses ambiguous, even in disjoint scopes.
  void define(const Var& v, const Span& where) {
    if (!v) return;
    if (defined_.count(v.get())) error(where, "variable '" + v->name + "' is defined more than once");
    defined_.insert(v.get());
    in_scope_.insert(v.get());
  }

  void check_buffer_decl(const Buffer& b) {
    for (const auto& e : b->shape) {
      visit(e);
      if (e && !e->dtype.is_integer())
        error(span_of(e, b->span), "shape of buffer '" + b->name + "' must be integer, not " + e->dtype.str());
    }
    for (const auto& e : b->strides) visit(e);
    visit(b->elem_offset);
  }

  // The lanes of the access: 1, or those of its vector indices (which must agree).
  int check_access(const Buffer& b, const std::vector<Expr>& indices, const Span& span) {
    int lanes = 1;
    for (const auto& i : indices) {
      if (!i || i->dtype.is_scalar()) continue;
      if (lanes != 1 && i->dtype.lanes() != lanes)
        error(span_of(i, span), "the vector indices of this access have different lanes");
      lanes = i->dtype.lanes();
    }
    if (!b) return error(span, "access to a missing buffer"), lanes;
    if (b->dtype.is_vector() && lanes > 1)
      error(span, "buffer '" + b->name + "' holds " + b->dtype.str() +
                      ": a vector index into a buffer of vector type is not supported (index it with a scalar)");
    if (!buffers_.count(b.get()))
      error(span, "buffer '" + b->name + "' is neither a parameter nor allocated in an enclosing scope");
    if (indices.size() != b->ndim())
      error(span, "buffer '" + b->name + "' has " + std::to_string(b->ndim()) + " dimension(s) but is accessed with " +
                      std::to_string(indices.size()) + " index(es)");
    for (size_t i = 0; i < indices.size(); ++i) {
      if (indices[i] && !indices[i]->dtype.is_integer())
        error(span_of(indices[i], span), "index " + std::to_string(i) + " of buffer '" + b->name +
                                              "' must be an integer, not " + indices[i]->dtype.str());
    }
    return lanes;
  }

  void check_bool(const Expr& e, const std::string& what, const Span& fallback, int lanes = 1) {
    if (e && (!e->dtype.is_bool() || e->dtype.lanes() != lanes))
      error(span_of(e, fallback), what + " must be " + DataType::Bool().with_lanes(lanes).str() + ", not " + e->dtype.str());
  }

  void check_vector_types(const Expr& e) {
    switch (e->kind) {
      case ExprKind::Ramp: {
        const auto* r = as<RampNode>(e);
        if (!r->base || !r->stride) return;
        if (!r->base->dtype.is_integer() || !r->base->dtype.is_scalar() || r->stride->dtype != r->base->dtype)
          error(e->span, "T.Ramp needs a scalar integer base and a stride of the same type, not " +
                             r->base->dtype.str() + " and " + r->stride->dtype.str());
        if (r->lanes < 2 || r->lanes > DataType::kMaxLanes)
          error(e->span, "T.Ramp needs 2 to " + std::to_string(DataType::kMaxLanes) + " lanes, not " +
                             std::to_string(r->lanes));
        return;
      }
      case ExprKind::Broadcast: {
        const auto* b = as<BroadcastNode>(e);
        if (b->value && (b->value->dtype.is_vector() || b->value->dtype.is_handle()))
          error(e->span, "T.Broadcast needs a scalar number, not " + b->value->dtype.str());
        if (b->lanes < 2 || b->lanes > DataType::kMaxLanes)
          error(e->span, "T.Broadcast needs 2 to " + std::to_string(DataType::kMaxLanes) + " lanes, not " +
                             std::to_string(b->lanes));
        return;
      }
      case ExprKind::Shuffle: {
        const auto* sh = as<ShuffleNode>(e);
        int total = 0;
        for (const auto& v : sh->vectors) {
          if (!v) continue;
          if (v->dtype.element_of() != e->dtype.element_of())
            error(e->span, "T.Shuffle mixes " + v->dtype.str() + " with " + e->dtype.element_of().str() + " lanes");
          total += v->dtype.lanes();
        }
        for (int i : sh->indices)
          if (i < 0 || i >= total)
            error(e->span, "T.Shuffle lane " + std::to_string(i) + " is outside the " + std::to_string(total) +
                               " lanes of its vectors");
        return;
      }
      default: return;
    }
  }

  void check_types(const Expr& e) {
    const ExprKind k = e->kind;
    check_vector_types(e);
    if (is_binary(k)) {
      const auto* bin = static_cast<const BinaryNode*>(e.get());
      if (!bin->a || !bin->b) return error(e->span, std::string("operand of ") + op_symbol(k) + " is missing");
      DataType ta = bin->a->dtype, tb = bin->b->dtype;
      std::string sym = op_symbol(k);
      if (is_logical(k)) {
        if (!ta.is_bool() || !tb.is_bool())
          error(e->span, "operands of '" + sym + "' must be bool, not " + ta.str() + " and " + tb.str());
        return;
      }
      bool eq_like = k == ExprKind::EQ || k == ExprKind::NE;
      bool ok_a = ta.is_numeric() || (eq_like && ta.is_bool());
      bool ok_b = tb.is_numeric() || (eq_like && tb.is_bool());
      if (!ok_a || !ok_b) {
        error(e->span, "operands of " + sym + " must be numbers, not " + ta.str() + " and " + tb.str());
      } else if (ta != tb) {
        error(e->span, "operands of " + sym + " have different types: " + ta.str() + " and " + tb.str());
      } else if (is_arith(k) && e->dtype != ta) {
        error(e->span, "result of " + sym + " has type " + e->dtype.str() + ", but its operands are " + ta.str());
      }
      return;
    }
    switch (k) {
      case ExprKind::Not: check_bool(as<NotNode>(e)->a, "operand of 'not'", e->span); return;
      case ExprKind::Select: {
        const auto* s = as<SelectNode>(e);
        check_bool(s->condition, "condition of T.Select", e->span, e->dtype.lanes());
        if (s->true_value && s->false_value && s->true_value->dtype != s->false_value->dtype)
          error(e->span, "branches of T.Select have different types: " + s->true_value->dtype.str() + " and " +
                             s->false_value->dtype.str());
        return;
      }
      case ExprKind::Cast: {
        const auto* c = as<CastNode>(e);
        if (!c->value) return;
        DataType from = c->value->dtype, to = c->dtype;
        if (from.is_handle() || from.is_void() || to.is_handle() || to.is_void() || from.lanes() != to.lanes())
          error(e->span, "cannot cast " + from.str() + " to " + to.str());
        return;
      }
      case ExprKind::Call: check_call(as<CallNode>(e), e->span); return;
      default: return;
    }
  }

  // multiply_by_quantized_multiplier is lane by lane: three int32 values of one width.
  bool int32_lanes_agree(const CallNode* c, const std::string& name, const Span& span) {
    for (const auto& a : c->args)
      if (a->dtype.element_of() != DataType::Int(32) || a->dtype.lanes() != c->args[0]->dtype.lanes()) {
        error(span_of(a, span), name + " takes three int32 values of the same lanes, got " + c->args[0]->dtype.str() +
                                    " and " + a->dtype.str());
        return false;
      }
    return true;
  }

  void check_call(const CallNode* c, const Span& span) {
    if (!c->builtin) return check_tvm_intrinsic(c, span);
    if (c->is(Builtin::CallTir) || c->is(Builtin::CallGlobal)) calls_module_functions_ = true;
    const OpInfo* info = &builtin_info(*c->builtin);
    const std::string name = "T." + c->op;
    // Arity from the table (ir/builtins.def), the same rule the parser applies.
    if (std::string why; !builtin_arity_ok(*info, c->args.size(), &why)) return error(span, why);
    for (const auto& a : c->args)
      if (!a) return error(span, "an argument of " + name + " is missing");
    if (info->position == OpInfo::Position::kStmt && c != statement_value_)
      return error(span, name + " returns from the function, so it can only be a statement of its own (T.evaluate)");
    if (info->position == OpInfo::Position::kLetValue && c != let_value_)
      return error(span, name + " declares storage, so it can only be the value of a let (x = " + name + "(...))");
    if (c->is(Builtin::Vmladava)) {
      // Two int8 vectors of up to 16 lanes or int16 vectors of up to 8: a 128-bit register.
      const DataType a = c->args.at(1)->dtype, b = c->args.at(2)->dtype;
      if (a != b || !a.is_int() || (a.bits() != 8 && a.bits() != 16) || a.lanes() * a.bits() > 128 ||
          c->args[0]->dtype.is_vector())
        return error(span, name + " takes a scalar accumulator and two int8 vectors of up to 16 lanes (or int16 of up to "
                                  "8) of the same type, got " + a.str() + " and " + b.str());
    } else if (c->is(Builtin::MultiplyByQuantizedMultiplier)) {
      if (!int32_lanes_agree(c, name, span)) return;
    } else if (info->kind != OpInfo::Kind::kUnaryMath && info->kind != OpInfo::Kind::kBinaryMath &&
               info->kind != OpInfo::Kind::kIntBinary && !c->is(Builtin::Reinterpret)) {
      // Math applies lane by lane; the other intrinsics take scalars.
      for (const auto& a : c->args)
        if (a->dtype.is_vector()) return error(span_of(a, span), name + " does not take vectors (" + a->dtype.str() + ")");
    }
    auto want_float = [&](const Expr& a) {
      if (a->dtype.is_float() || (info->int_ok && a->dtype.is_integer())) return;
      error(span_of(a, span), name + (info->int_ok ? " is defined on numbers" : " is only defined on floats") +
                                  ", not " + a->dtype.str());
    };
    check_result_type(c, *info, span);
    switch (info->kind) {
      case OpInfo::Kind::kUnaryMath: want_float(c->args[0]); return;
      case OpInfo::Kind::kBinaryMath:
        want_float(c->args[0]);
        want_float(c->args[1]);
        if (c->args[0]->dtype != c->args[1]->dtype)
          error(span, "arguments of " + name + " have different types: " + c->args[0]->dtype.str() + " and " +
                          c->args[1]->dtype.str());
        return;
      case OpInfo::Kind::kIntBinary: {
        for (const auto& a : c->args)
          if (!a->dtype.is_integer()) error(span_of(a, span), name + " is only defined on integers, not " + a->dtype.str());
        if (c->args[0]->dtype != c->args[1]->dtype)
          error(span, "arguments of " + name + " have different types: " + c->args[0]->dtype.str() + " and " +
                          c->args[1]->dtype.str());
        const int64_t* amount = as_const_int(c->args[1]);
        int bits = c->args[0]->dtype.bits();
        if (is_shift_op(*c->builtin) && amount && c->args[0]->dtype.is_integer() && (*amount < 0 || *amount >= bits))
          error(span_of(c->args[1], span), name + " by " + std::to_string(*amount) + " is out of range [0, " +
                                               std::to_string(bits) + ") for " + c->args[0]->dtype.str());
        return;
      }
      case OpInfo::Kind::kIfThenElse:
        check_bool(c->args[0], "condition of T.if_then_else", span);
        if (c->args[1]->dtype != c->args[2]->dtype)
          error(span, "branches of T.if_then_else have different types: " + c->args[1]->dtype.str() + " and " +
                          c->args[2]->dtype.str());
        return;
      case OpInfo::Kind::kCallExtern:
        if (!as<StringImmNode>(c->args[0]))
          error(span, "T.call_extern needs the name of the function as a string");
        return;
      case OpInfo::Kind::kBuiltin: {
        if (c->is(Builtin::Reinterpret)) {
          if (std::string why = reinterpret_refusal(c->args[0], c->dtype); !why.empty()) error(span, why);
          return;
        }
        std::vector<DataType> types;
        for (const auto& a : c->args) types.push_back(a->dtype);
        std::string why;
        if (!builtin_args_ok(*info, types, &why)) error(span, why);
        return;
      }
    }
  }

  // TVM's intrinsics that are not builtins (ir/tvm_intrinsics.def): arity and the
  // argument that gives the type.
  void check_tvm_intrinsic(const CallNode* c, const Span& span) {
    const TvmIntrinsic* in = lookup_tvm_intrinsic(c->op);
    if (!in) return error(span, "unknown intrinsic '" + c->op + "'");
    if (std::string why; !tvm_intrinsic_arity_ok(*in, c->args.size(), &why)) return error(span, why);
    using R = TvmIntrinsic::Result;
    if ((in->result == R::kFirst || in->result == R::kLast) &&
        !as<StringImmNode>(in->result == R::kFirst ? c->args.front() : c->args.back()))
      error(span, "T." + c->op + " needs its result type as a string " +
                      (in->result == R::kFirst ? "first" : "last"));
  }

  // The call's type against the table's result rule.
  void check_result_type(const CallNode* c, const OpInfo& info, const Span& span) {
    const std::string name = "T." + c->op;
    switch (info.result_rule) {
      case OpInfo::Result::kFirstArg:
        if (c->dtype != c->args[0]->dtype)
          error(span, name + " returns its operand's type " + c->args[0]->dtype.str() + ", but the call has type " +
                          c->dtype.str());
        return;
      case OpInfo::Result::kBranches:
        if (c->dtype != c->args[1]->dtype && c->args[1]->dtype == c->args[2]->dtype)
          error(span, name + " returns its branches' type " + c->args[1]->dtype.str() + ", but the call has type " +
                          c->dtype.str());
        return;
      case OpInfo::Result::kCallType: return;  // written in the call itself
      case OpInfo::Result::kFixed:
        if (c->dtype != info.result)
          error(span, name + " returns " + info.result.str() + ", but the call has type " + c->dtype.str());
        return;
    }
  }
};

}  // namespace

// Two functions that would be the same C symbol (equal global_symbols, or one's symbol
// equal to another's name) would be a redefinition in every backend; TVM refuses them
// when the module is built, and so do we, at the second definition.
static void check_symbols_unique(const IRModule& m, std::vector<Diagnostic>* diags) {
  std::map<std::string, std::string> owner;  // symbol -> the function that has it
  for (const auto& [name, f] : m.functions) {
    if (!f) continue;
    const std::string symbol = symbol_of(name, f);
    auto [it, fresh] = owner.emplace(symbol, name);
    if (fresh || it->second == name) continue;
    Diagnostic d;
    d.span = f->span;
    d.message = "function '" + name + "' has the symbol '" + symbol + "', which function '" + it->second +
                "' already has; give one of them another global_symbol";
    diags->push_back(std::move(d));
  }
}

namespace {
// Functions found well-formed with no call into the module (call_tir, call_global):
// nothing about them depends on the rest of the module, so they stay well-formed as
// long as they live. The lowering re-checks the module prepare_model just checked, and
// its last check sees the functions no pass changed; neither walks them again.
FunctionSet& clean_functions() {
  static FunctionSet* set = new FunctionSet;  // never destroyed: checks may run at exit
  return *set;
}
std::atomic<size_t> g_functions_walked{0};
}  // namespace

size_t well_formed_functions_walked() { return g_functions_walked; }

std::vector<Diagnostic> check_well_formed(const IRModule& m) {
  WellFormedChecker checker;
  std::set<std::string> names;
  for (const auto& [name, f] : m.functions) {
    if (!names.insert(name).second) {
      Diagnostic d;
      d.span = f ? f->span : Span{};
      d.message = "function '" + name + "' is defined more than once in the module";
      checker.diags.push_back(std::move(d));
    }
    if (!f) {
      Diagnostic d;
      d.message = "function '" + name + "' has no definition";
      checker.diags.push_back(std::move(d));
      continue;
    }
    if (clean_functions().contains(f)) continue;
    const size_t before = checker.diags.size();
    checker.check_func(f);
    check_resource_handles(name, f, &checker.diags);
    ++g_functions_walked;
    if (checker.diags.size() == before && !checker.calls_module_functions()) clean_functions().record(f);
  }
  check_symbols_unique(m, &checker.diags);
  for (auto& d : check_call_tir(m, clean_functions())) checker.diags.push_back(std::move(d));
  return std::move(checker.diags);
}

}  // namespace mtir
