// Integer Add, Sub and Mul of the compiled interpreter. A tree of them over variables
// (an index: `ob * 80 + ko * 4 + ki`) becomes one LinearInt (linear.h says why that
// computes the same bits); a tree with no variable (an accumulation `acc + x * w`)
// keeps one node per operator, the int32 case wrapping by one truncation.
#include "interp/linear.h"

#include "ir/op.h"

namespace mtir {
namespace interp {

namespace {

// Add, Sub, Mul on integers: wrap-around on the 64-bit patterns, then to the type.
template <ExprKind K>
uint64_t int_op(uint64_t x, uint64_t y) {
  return K == ExprKind::Add ? x + y : K == ExprKind::Sub ? x - y : x * y;
}
template <ExprKind K>
struct IntArith final : IntCExpr {
  IntArith(DataType t, CExprPtr a, CExprPtr b) : IntCExpr(t), a(std::move(a)), b(std::move(b)) {}
  int64_t eval_int(Frame& f) const override {
    const int64_t x = a->eval_int(f), y = b->eval_int(f);
    return wrap_int(type, static_cast<int64_t>(int_op<K>(static_cast<uint64_t>(x), static_cast<uint64_t>(y))));
  }
  CExprPtr a, b;
};
// The int32 case, the index and accumulator type: wrapping is one truncation.
template <ExprKind K>
struct Int32Arith final : IntCExpr {
  Int32Arith(CExprPtr a, CExprPtr b) : IntCExpr(DataType::Int(32)), a(std::move(a)), b(std::move(b)) {}
  int64_t eval_int(Frame& f) const override {
    const int64_t x = a->eval_int(f), y = b->eval_int(f);
    return static_cast<int32_t>(static_cast<uint32_t>(int_op<K>(static_cast<uint64_t>(x), static_cast<uint64_t>(y))));
  }
  CExprPtr a, b;
};

template <ExprKind K>
CExprPtr make_arith(DataType t, CExprPtr a, CExprPtr b) {
  if (t == DataType::Int(32)) return std::make_unique<Int32Arith<K>>(std::move(a), std::move(b));
  return std::make_unique<IntArith<K>>(t, std::move(a), std::move(b));
}

// An Add, Sub or Mul of type `t`: a node of the linear form.
const BinaryNode* arith_of_type(const Expr& e, DataType t) {
  if (!e || (e->kind != ExprKind::Add && e->kind != ExprKind::Sub && e->kind != ExprKind::Mul)) return nullptr;
  if (e->dtype.is_vector() || e->dtype.element_of() != t) return nullptr;
  return static_cast<const BinaryNode*>(e.get());
}

// Whether each operand of `op` belongs to its linear form (both of Add and Sub; the
// side of a Mul whose other side is a constant).
void operands_in_form(const BinaryNode* op, bool* a, bool* b) {
  const bool mul = op->kind == ExprKind::Mul;
  *a = !mul || as<IntImmNode>(op->b);
  *b = !mul || as<IntImmNode>(op->a);
}

}  // namespace

// Collects `scale` times the linear form of `e` (of type `t`) into `out`.
static void collect(Compiler* c, const Expr& e, DataType t, uint64_t scale, LinearInt* out) {
  if (const auto* imm = as<IntImmNode>(e)) {
    out->constant += scale * static_cast<uint64_t>(make_int(e->dtype, imm->value).i);
    return;
  }
  const auto* v = as<VarNode>(e);
  if (v && !v->dtype.is_vector() && c->in_scope(v)) {
    const int slot = c->var_slot(v);
    for (LinearInt::VarTerm& term : out->vars)
      if (term.slot == slot) return void(term.coef += scale);
    out->vars.push_back({slot, scale});
    return;
  }
  const BinaryNode* op = arith_of_type(e, t);
  if (!op) {
    out->exprs.push_back({c->expr(e), scale});
    return;
  }
  bool a_in, b_in;
  operands_in_form(op, &a_in, &b_in);
  if (op->kind != ExprKind::Mul) {
    collect(c, op->a, t, scale, out);
    collect(c, op->b, t, op->kind == ExprKind::Sub ? uint64_t{0} - scale : scale, out);
  } else if (a_in) {  // a * constant
    collect(c, op->a, t, scale * static_cast<uint64_t>(make_int(op->b->dtype, as<IntImmNode>(op->b)->value).i), out);
  } else if (b_in) {  // constant * b
    collect(c, op->b, t, scale * static_cast<uint64_t>(make_int(op->a->dtype, as<IntImmNode>(op->a)->value).i), out);
  } else {
    out->exprs.push_back({c->int_arith(e), scale});
  }
}

// Whether the linear form of `e` has a variable term.
static bool has_variable(const Compiler* c, const Expr& e, DataType t) {
  if (const auto* v = as<VarNode>(e)) return !v->dtype.is_vector() && c->in_scope(v);
  const BinaryNode* op = arith_of_type(e, t);
  if (!op) return false;
  bool a_in, b_in;
  operands_in_form(op, &a_in, &b_in);
  return (a_in && has_variable(c, op->a, t)) || (b_in && has_variable(c, op->b, t));
}

// One node per operator. Operands of the same form are nodes of it too when the form
// has no variable (`without_variable`), so it is not searched for one again; other
// operands start forms of their own.
static CExprPtr arith_tree(Compiler* c, const BinaryNode* op, DataType t, bool without_variable) {
  bool a_in, b_in;
  operands_in_form(op, &a_in, &b_in);
  auto operand = [&](const Expr& e, bool in_form) {
    const BinaryNode* inner = in_form && without_variable ? arith_of_type(e, t) : nullptr;
    return inner ? arith_tree(c, inner, t, true) : c->expr(e);
  };
  CExprPtr a = operand(op->a, a_in);
  CExprPtr b = operand(op->b, b_in);
  switch (op->kind) {
    case ExprKind::Add: return make_arith<ExprKind::Add>(t, std::move(a), std::move(b));
    case ExprKind::Sub: return make_arith<ExprKind::Sub>(t, std::move(a), std::move(b));
    default: return make_arith<ExprKind::Mul>(t, std::move(a), std::move(b));
  }
}

CExprPtr Compiler::int_arith(const Expr& e) {
  const auto* op = static_cast<const BinaryNode*>(e.get());
  const DataType t = op->dtype.element_of();
  bool a_in, b_in;
  operands_in_form(op, &a_in, &b_in);
  // A Mul of two non-constants is not linear; its operands may each be.
  if (!a_in && !b_in) return arith_tree(this, op, t, false);
  if (!has_variable(this, e, t)) return arith_tree(this, op, t, true);
  auto form = std::make_unique<LinearInt>(t);
  collect(this, e, t, 1, form.get());
  return form;
}

}  // namespace interp
}  // namespace mtir
