// Simplify: constant folding, algebraic identities and removal of dead code whose
// deadness is decided by constants. Folding follows C exactly (the interpreter and the
// generated C must agree with the folded program), so anything whose value depends on
// a runtime condition -- division by zero, float->int overflow, NaN in min/max -- is
// left for the runtime.
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include "analysis/int_bound.h"
#include "ir/mutator.h"
#include "ir/tvm_intrinsics.h"
#include "ir/op.h"
#include "ir/structural_equal.h"
#include "ir/visitor.h"
#include "ir/substitute.h"
#include "transform/transform.h"

namespace mtir {
namespace {

Expr make_binary(ExprKind k, DataType t, Expr a, Expr b, Span s) {
  switch (k) {
#define MTIR_BINARY(Name) \
  case ExprKind::Name: return std::make_shared<Name##Node>(t, std::move(a), std::move(b), std::move(s));
#include "ir/nodes.def"
    default: break;
  }
  MTIR_ICHECK(false, std::string("not a binary node kind: ") + expr_kind_name(k));
}

const double* as_const_float(const Expr& e) {
  const auto* imm = as<FloatImmNode>(e);
  return imm ? &imm->value : nullptr;
}

bool is_constant(const Expr& e) { return as<IntImmNode>(e) || as<FloatImmNode>(e) || as<StringImmNode>(e); }

// Whether evaluating `e` can be skipped without changing what the program does:
// no external calls (they may have side effects) and no integer division by
// something that might be zero (that is a runtime error the program must still hit).
class DropChecker : public Visitor {
 public:
  bool droppable = true;

 protected:
  void visit_Call(const CallNode* op) override {
    if (!is_pure(op->builtin)) droppable = false;
    Visitor::visit_Call(op);
  }
  void check_divisor(const BinaryNode* op) {
    if (op->dtype.is_float()) return;
    const int64_t* c = as_const_int(op->b);
    if (!c || *c == 0) droppable = false;
  }
  void visit_Div(const DivNode* op) override {
    check_divisor(op);
    Visitor::visit_Div(op);
  }
  void visit_Mod(const ModNode* op) override {
    check_divisor(op);
    Visitor::visit_Mod(op);
  }
  void visit_FloorDiv(const FloorDivNode* op) override {
    check_divisor(op);
    Visitor::visit_FloorDiv(op);
  }
  void visit_FloorMod(const FloorModNode* op) override {
    check_divisor(op);
    Visitor::visit_FloorMod(op);
  }
};

bool droppable(const Expr& e) {
  DropChecker c;
  c.visit(e);
  return c.droppable;
}

// Whether `v` occurs in the shape of a buffer declared inside `s`. substitute() leaves
// buffers alone (they are shared by identity), so a variable used there cannot be
// substituted away without leaving that use unbound.
class BufferShapeUse : public Visitor {
 public:
  explicit BufferShapeUse(const VarNode* v) : var_(v) {}
  bool found = false;

  void visit_buffer(const Buffer& b) override {
    bool saved = in_buffer_;
    in_buffer_ = true;
    Visitor::visit_buffer(b);
    in_buffer_ = saved;
  }

 protected:
  void visit_Var(const VarNode* op) override {
    if (in_buffer_ && op == var_) found = true;
  }

 private:
  const VarNode* var_;
  bool in_buffer_ = false;
};

bool used_in_buffer_shape(const Stmt& s, const Var& v) {
  BufferShapeUse finder(v.get());
  finder.visit(s);
  return finder.found;
}

// ---- constant folding ------------------------------------------------------------

// Integer (and bool) operands, both of type `t`. Arithmetic runs on uint64 so that
// overflow wraps instead of being undefined, then wrap_int narrows to t's width.
Expr fold_int(ExprKind k, DataType t, int64_t x, int64_t y, const Span& s) {
  const bool is_signed = t.is_int();
  const uint64_t ux = static_cast<uint64_t>(x), uy = static_cast<uint64_t>(y);
  auto cmp_lt = [&](int64_t p, int64_t q) {
    return is_signed || t.is_bool() ? p < q : static_cast<uint64_t>(p) < static_cast<uint64_t>(q);
  };
  if (t.is_bool()) {
    // Only equality and logic are defined on bool; arithmetic on it is ill-formed.
    switch (k) {
      case ExprKind::EQ: return Bool(x == y, s);
      case ExprKind::NE: return Bool(x != y, s);
      case ExprKind::And: return Bool(x && y, s);
      case ExprKind::Or: return Bool(x || y, s);
      default: return nullptr;
    }
  }
  if (!t.is_integer()) return nullptr;
  // INT64_MIN / -1 overflows in the 64-bit arithmetic we fold with; narrower types
  // cannot reach it and simply wrap like C's conversion back to the narrow type.
  const bool overflow_div = is_signed && t.bits() == 64 && x == std::numeric_limits<int64_t>::min() && y == -1;
  switch (k) {
    case ExprKind::Add: return IntImm(t, static_cast<int64_t>(ux + uy), s);
    case ExprKind::Sub: return IntImm(t, static_cast<int64_t>(ux - uy), s);
    case ExprKind::Mul: return IntImm(t, static_cast<int64_t>(ux * uy), s);
    case ExprKind::Div:
      if (y == 0 || overflow_div) return nullptr;
      return IntImm(t, is_signed ? x / y : static_cast<int64_t>(ux / uy), s);
    case ExprKind::Mod:
      if (y == 0 || overflow_div) return nullptr;
      return IntImm(t, is_signed ? x % y : static_cast<int64_t>(ux % uy), s);
    case ExprKind::FloorDiv: {
      if (y == 0 || overflow_div) return nullptr;
      if (!is_signed) return IntImm(t, static_cast<int64_t>(ux / uy), s);
      int64_t q = x / y;
      if (x % y != 0 && ((x < 0) != (y < 0))) --q;  // round toward -inf, not zero
      return IntImm(t, q, s);
    }
    case ExprKind::FloorMod: {
      if (y == 0 || overflow_div) return nullptr;
      if (!is_signed) return IntImm(t, static_cast<int64_t>(ux % uy), s);
      int64_t r = x % y;
      if (r != 0 && ((r < 0) != (y < 0))) r += y;  // the result takes the divisor's sign
      return IntImm(t, r, s);
    }
    case ExprKind::Min: return IntImm(t, cmp_lt(y, x) ? y : x, s);
    case ExprKind::Max: return IntImm(t, cmp_lt(x, y) ? y : x, s);
    case ExprKind::EQ: return Bool(x == y, s);
    case ExprKind::NE: return Bool(x != y, s);
    case ExprKind::LT: return Bool(cmp_lt(x, y), s);
    case ExprKind::LE: return Bool(!cmp_lt(y, x), s);
    case ExprKind::GT: return Bool(cmp_lt(y, x), s);
    case ExprKind::GE: return Bool(!cmp_lt(x, y), s);
    default: return nullptr;
  }
}

// Rounds an exact double result to `t` (float32 results are rounded to float, which
// for + - * / gives exactly the float32 operation's result).
double round_to(DataType t, double v) { return t.bits() == 32 ? static_cast<double>(static_cast<float>(v)) : v; }

Expr fold_float(ExprKind k, DataType t, double x, double y, const Span& s) {
  if (t.bits() != 32 && t.bits() != 64) return nullptr;  // float16: no exact host type
  switch (k) {
    case ExprKind::Add: return FloatImm(t, round_to(t, x + y), s);
    case ExprKind::Sub: return FloatImm(t, round_to(t, x - y), s);
    case ExprKind::Mul: return FloatImm(t, round_to(t, x * y), s);
    case ExprKind::Div:
      if (y == 0) return nullptr;  // keep the program's own x / 0.0
      return FloatImm(t, round_to(t, x / y), s);
    case ExprKind::Min:
    case ExprKind::Max:
      // NaN handling and the order of -0.0 and 0.0 differ between implementations.
      if (std::isnan(x) || std::isnan(y) || (x == y && std::signbit(x) != std::signbit(y))) return nullptr;
      return FloatImm(t, k == ExprKind::Min ? std::fmin(x, y) : std::fmax(x, y), s);
    // IEEE comparisons are exact, NaN included (every ordered comparison is false).
    case ExprKind::EQ: return Bool(x == y, s);
    case ExprKind::NE: return Bool(x != y, s);
    case ExprKind::LT: return Bool(x < y, s);
    case ExprKind::LE: return Bool(x <= y, s);
    case ExprKind::GT: return Bool(x > y, s);
    case ExprKind::GE: return Bool(x >= y, s);
    default: return nullptr;  // Mod/FloorDiv/FloorMod on floats: left to the runtime
  }
}

// Whether float `v` truncated toward zero fits integer type `t` (C leaves out-of-range
// conversions undefined, so those are not folded).
bool float_fits(DataType t, double v) {
  if (std::isnan(v)) return false;
  double tv = std::trunc(v);
  if (t.is_uint()) return tv >= 0 && tv < std::ldexp(1.0, t.bits());
  return tv >= -std::ldexp(1.0, t.bits() - 1) && tv < std::ldexp(1.0, t.bits() - 1);
}

Expr fold_cast(DataType to, const Expr& v, const Span& s) {
  DataType from = v->dtype;
  if (from == to) return v;
  if (from.is_vector() || to.is_vector()) return nullptr;
  if (const int64_t* iv = as_const_int(v)) {
    if (!from.is_integer() && !from.is_bool()) return nullptr;
    if (to.is_bool()) return Bool(*iv != 0, s);
    if (to.is_integer()) return IntImm(to, *iv, s);  // two's complement truncation / extension
    if (to.is_float() && (to.bits() == 32 || to.bits() == 64)) {
      // Convert straight to the target width: int64 -> double -> float could round twice.
      bool unsigned_src = from.is_uint();
      uint64_t u = static_cast<uint64_t>(*iv);
      double d = to.bits() == 32 ? (unsigned_src ? static_cast<double>(static_cast<float>(u))
                                                 : static_cast<double>(static_cast<float>(*iv)))
                                 : (unsigned_src ? static_cast<double>(u) : static_cast<double>(*iv));
      return FloatImm(to, d, s);
    }
    return nullptr;
  }
  if (const double* fv = as_const_float(v)) {
    if (from.bits() != 32 && from.bits() != 64) return nullptr;
    if (to.is_bool()) return Bool(*fv != 0, s);  // NaN is "true", as in C
    if (to.is_integer()) {
      if (!float_fits(to, *fv)) return nullptr;
      double tv = std::trunc(*fv);
      // uint64 values past INT64_MAX go through uint64 to keep their bit pattern.
      int64_t iv = tv >= std::ldexp(1.0, 63) ? static_cast<int64_t>(static_cast<uint64_t>(tv)) : static_cast<int64_t>(tv);
      return IntImm(to, iv, s);
    }
    if (to.is_float() && (to.bits() == 32 || to.bits() == 64)) return FloatImm(to, round_to(to, *fv), s);
  }
  return nullptr;
}

bool is_float_one(const Expr& e) {
  const double* v = as_const_float(e);
  return v && *v == 1.0;
}

// `e` as `base + c` for a constant c (also `c + base` and `base - c`), for combining
// constants across nested additions.
bool split_add_const(const Expr& e, Expr* base, int64_t* c) {
  if (const auto* add = as<AddNode>(e)) {
    if (const int64_t* v = as_const_int(add->b)) return *base = add->a, *c = *v, true;
    if (const int64_t* v = as_const_int(add->a)) return *base = add->b, *c = *v, true;
  }
  if (const auto* sub = as<SubNode>(e)) {
    if (const int64_t* v = as_const_int(sub->b)) {
      *base = sub->a;
      *c = wrap_int(e->dtype, static_cast<int64_t>(0 - static_cast<uint64_t>(*v)));
      return true;
    }
  }
  return false;
}

// `base + c`, written `base - |c|` for a negative c so `i + -1` reads `i - 1`.
Expr make_add_const(const Expr& base, DataType t, int64_t c, const Span& s) {
  c = wrap_int(t, c);
  if (c == 0) return base;
  if (t.is_int() && c < 0 && c != std::numeric_limits<int64_t>::min() && wrap_int(t, -c) == -c)
    return make_binary(ExprKind::Sub, t, base, IntImm(t, -c, s), s);
  return make_binary(ExprKind::Add, t, base, IntImm(t, c, s), s);
}

// `e` as `inner * m` for a constant m on either side; a bare `inner` has m = 1.
const Expr& split_scale(const Expr& e, int64_t* m) {
  *m = 1;
  if (const auto* mul = as<MulNode>(e)) {
    if (const int64_t* c = as_const_int(mul->b)) return *m = *c, mul->a;
    if (const int64_t* c = as_const_int(mul->a)) return *m = *c, mul->b;
  }
  return e;
}

// One rounding family: floordiv/floormod, or C's truncating div/mod. The rules below
// hold in either, but never across them.
struct DivFamily {
  ExprKind div, mod;
};
constexpr DivFamily kDivFamilies[] = {{ExprKind::FloorDiv, ExprKind::FloorMod}, {ExprKind::Div, ExprKind::Mod}};

// `e` as `kind(x, c)` for a positive constant c.
const BinaryNode* as_by_positive(const Expr& e, ExprKind kind, int64_t* c) {
  const auto* node = dynamic_cast<const BinaryNode*>(e.get());
  if (!node || node->kind != kind) return nullptr;
  const int64_t* v = as_const_int(node->b);
  if (!v || *v <= 0) return nullptr;
  *c = *v;
  return node;
}

// A digit of x in base a: div(x, a), or mod(div(x, a), b) (b = 0 for the first form).
const BinaryNode* as_digit(const Expr& e, DivFamily f, int64_t* a, int64_t* b) {
  *b = 0;
  if (const BinaryNode* outer = as_by_positive(e, f.mod, b)) {
    const BinaryNode* d = as_by_positive(outer->a, f.div, a);
    return d ? d : (*b = 0, nullptr);
  }
  return as_by_positive(e, f.div, a);
}

// div(x, a) * (a * m) + mod(x, a) * m -> x * m, and
// mod(div(x, a), b) * (a * m) + mod(x, a) * m -> mod(x, a * b) * m, for positive
// constants a, b. With q = div(x, a), r = mod(x, a): x = q * a + r exactly, and the
// same splitting of q by b gives mod(x, a * b) = mod(q, b) * a + r, in floor rounding
// (every remainder non-negative) and in truncating rounding alike (x, q and both
// remainders share a sign); so the sum is exact in wrapping arithmetic too. A tensor's
// flattened index leaves these digits behind (row * (W * C) + column * C for the pixel
// row * W + column; a reshape's i / 512 % 2 * 512 + i / 16 % 32 * 16 + i % 16).
// Returns x or mod(x, a * b), and m in *m.
Expr combine_digit(const Expr& digit_term, const Expr& remainder_term, DataType t, const Span& s, int64_t* m) {
  int64_t mq, mr;
  const Expr& digit = split_scale(digit_term, &mq);
  const Expr& remainder = split_scale(remainder_term, &mr);
  for (DivFamily f : kDivFamilies) {
    int64_t a, b, ar;
    const BinaryNode* q = as_digit(digit, f, &a, &b);
    const BinaryNode* r = q ? as_by_positive(remainder, f.mod, &ar) : nullptr;
    if (!r || ar != a || !same_expr(q->a, r->a) || !droppable(q->a)) continue;
    if (wrap_int(t, static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(mr))) != wrap_int(t, mq))
      continue;
    *m = mr;
    if (b == 0) return q->a;
    int64_t ab;
    if (__builtin_mul_overflow(a, b, &ab) || ab > type_range(t).max) continue;
    return make_binary(f.mod, t, q->a, IntImm(t, ab, s), s);
  }
  return nullptr;
}

// ---- the pass ------------------------------------------------------------------

class Simplifier : public Mutator {
 protected:
#define MTIR_BINARY(Name) \
  Expr mutate_##Name(const Name##Node* op, const Expr& self) override { return simplify_binary(op, self); }
#include "ir/nodes.def"

  Expr mutate_Not(const NotNode* op, const Expr& self) override {
    Expr a = mutate(op->a);
    if (const int64_t* v = as_const_int(a); v && a->dtype.is_bool()) return Bool(*v == 0, op->span);
    if (const auto* inner = as<NotNode>(a)) return inner->a;  // not not x -> x
    return a == op->a ? self : Not(a, op->span);
  }

  Expr mutate_Select(const SelectNode* op, const Expr& self) override {
    Expr c = mutate(op->condition), t = mutate(op->true_value), f = mutate(op->false_value);
    // Select evaluates both sides, so the discarded one must be safe to skip.
    if (const int64_t* v = as_const_int(c); v && c->dtype.is_bool()) {
      if (*v && droppable(f)) return t;
      if (!*v && droppable(t)) return f;
    }
    if (c == op->condition && t == op->true_value && f == op->false_value) return self;
    return Select(c, t, f, op->span);
  }

  Expr mutate_Cast(const CastNode* op, const Expr& self) override {
    Expr v = mutate(op->value);
    if (Expr folded = fold_cast(op->dtype, v, op->span)) return folded;
    return v == op->value ? self : Cast(op->dtype, v, op->span);
  }

  Expr mutate_Call(const CallNode* op, const Expr& self) override {
    Expr out = Mutator::mutate_Call(op, self);
    const auto* call = as<CallNode>(out);
    // if_then_else is lazy: only the taken side is ever evaluated, so the other one
    // can always go.
    if (call && call->is(Builtin::IfThenElse) && call->args.size() == 3) {
      const int64_t* v = as_const_int(call->args[0]);
      if (v && call->args[0]->dtype.is_bool()) return *v ? call->args[1] : call->args[2];
    }
    return out;
  }

  Stmt mutate_IfThenElse(const IfThenElseNode* op, const Stmt& self) override {
    Expr c = mutate(op->condition);
    if (const int64_t* v = as_const_int(c); v && c->dtype.is_bool()) {
      if (*v) return mutate(op->then_case);
      return op->else_case ? mutate(op->else_case) : NoOp(op->span);
    }
    Stmt t = mutate(op->then_case), e = mutate(op->else_case);
    if (c == op->condition && t == op->then_case && e == op->else_case) return self;
    return IfThenElse(c, t, e, op->span);
  }

  Stmt mutate_For(const ForNode* op, const Stmt& self) override {
    Expr min = mutate(op->min), extent = mutate(op->extent);
    if (const int64_t* n = as_const_int(extent)) {
      bool never_runs = extent->dtype.is_int() ? *n <= 0 : *n == 0;
      if (never_runs) return NoOp(op->span);
      // A single trip: the body once, with the loop variable fixed to the start. The
      // start is copied to every use, so it must be safe to evaluate more than once; a
      // `break` or `continue` of this loop keeps it.
      if (*n == 1 && droppable(min) && !used_in_buffer_shape(op->body, op->loop_var) && !exits_loop(op->body))
        return mutate(substitute(op->body, op->loop_var, min));
    }
    IntBound range;
    Stmt body = bounds_.loop_range(min, extent, &range) ? mutate_bound(op->body, op->loop_var, range) : mutate(op->body);
    if (min == op->min && extent == op->extent && body == op->body) return self;
    return ForLike(op, min, extent, body);
  }

  Stmt mutate_LetStmt(const LetStmtNode* op, const Stmt& self) override {
    Expr v = mutate(op->value);
    if ((as<IntImmNode>(v) || as<FloatImmNode>(v)) && v->dtype == op->var->dtype &&
        !used_in_buffer_shape(op->body, op->var))
      return mutate(substitute(op->body, op->var, v));
    Stmt body = v->dtype.is_integer() && v->dtype.is_scalar() ? mutate_bound(op->body, op->var, bounds_.bound(v)) : mutate(op->body);
    if (v == op->value && body == op->body) return self;
    return LetStmt(op->var, v, body, op->span);
  }

  Stmt mutate_SeqStmt(const SeqStmtNode* op, const Stmt& self) override {
    bool changed = false;
    std::vector<Stmt> seq;
    seq.reserve(op->seq.size());
    for (const auto& s : op->seq) {
      Stmt m = mutate(s);
      if (m != s) changed = true;
      if (is_no_op(m)) {
        changed = true;
        continue;
      }
      seq.push_back(std::move(m));
    }
    if (!changed) return self;
    return SeqStmt(std::move(seq), op->span);  // empty -> no-op, one statement -> itself
  }

  Stmt mutate_Evaluate(const EvaluateNode* op, const Stmt& self) override {
    Expr v = mutate(op->value);
    // A constant computes nothing; the canonical no-op is Evaluate(int32 0).
    if (is_constant(v)) {
      const int64_t* iv = as_const_int(v);
      bool canonical = iv && *iv == 0 && v->dtype == DataType::Int(32);
      if (!canonical) return NoOp(op->span);
    }
    return v == op->value ? self : Evaluate(v, op->span);
  }

  Stmt mutate_AssertStmt(const AssertStmtNode* op, const Stmt& self) override {
    Expr c = mutate(op->condition);
    if (const int64_t* v = as_const_int(c); v && *v && c->dtype.is_bool()) return mutate(op->body);
    Stmt body = mutate(op->body);
    if (c == op->condition && body == op->body) return self;
    return AssertStmt(c, op->message, body, op->span);
  }

 private:
  IntBoundAnalyzer bounds_;  // the ranges of the loop and let variables in scope

  // `body` mutated with `v` in `range`.
  Stmt mutate_bound(const Stmt& body, const Var& v, IntBound range) {
    const IntBound* outer = bounds_.lookup(v.get());
    const std::optional<IntBound> saved = outer ? std::optional<IntBound>(*outer) : std::nullopt;
    bounds_.bind(v.get(), range);
    Stmt out = mutate(body);
    if (saved) bounds_.bind(v.get(), *saved);
    else bounds_.unbind(v.get());
    return out;
  }

  Expr simplify_binary(const BinaryNode* op, const Expr& self) {
    Expr a = mutate(op->a), b = mutate(op->b);
    // Ill-typed nodes are the verifier's business; never fold them into something valid.
    // Vector operations are left alone: their constants are Broadcasts, not immediates.
    if (a && b && a->dtype == b->dtype && a->dtype.is_scalar()) {
      if (Expr r = fold(op, a, b)) return r;
      if (Expr r = identity(op, a, b)) return r;
    }
    if (a == op->a && b == op->b) return self;
    return make_binary(op->kind, op->dtype, a, b, op->span);
  }

  Expr fold(const BinaryNode* op, const Expr& a, const Expr& b) {
    const ExprKind k = op->kind;
    const DataType t = a->dtype;
    if (const int64_t *x = as_const_int(a), *y = as_const_int(b); x && y) return fold_int(k, t, *x, *y, op->span);
    if (const double *x = as_const_float(a), *y = as_const_float(b); x && y) return fold_float(k, t, *x, *y, op->span);
    if (is_logical(k) && t.is_bool()) {
      // One constant side: true/false absorb or vanish.
      const int64_t* ca = as_const_int(a);
      const int64_t* cb = as_const_int(b);
      const Expr& other = ca ? b : a;
      const int64_t* c = ca ? ca : cb;
      if (!c) return nullptr;
      bool absorbing = (k == ExprKind::And) ? *c == 0 : *c != 0;
      if (!absorbing) return other;
      return droppable(other) ? Bool(*c != 0, op->span) : nullptr;
    }
    return nullptr;
  }

  Expr identity(const BinaryNode* op, const Expr& a, const Expr& b) {
    const ExprKind k = op->kind;
    const DataType t = a->dtype;
    const Span& s = op->span;
    if ((k == ExprKind::Min || k == ExprKind::Max) && same_expr(a, b) && droppable(a)) return a;
    if (t.is_float()) {
      // Only the exact ones: x + 0.0 is not x for x = -0.0, x * 0.0 is not 0 for inf/NaN.
      if (k == ExprKind::Mul && is_float_one(b)) return a;
      if (k == ExprKind::Mul && is_float_one(a)) return b;
      if (k == ExprKind::Div && is_float_one(b)) return a;
      return nullptr;
    }
    if (!t.is_integer()) return nullptr;
    const int64_t* ca = as_const_int(a);
    const int64_t* cb = as_const_int(b);
    auto is = [](const int64_t* c, int64_t v) { return c && *c == v; };
    switch (k) {
      case ExprKind::Add: {
        if (is(cb, 0)) return a;
        if (is(ca, 0)) return b;
        if (Expr r = combine_digits(a, b, t, s)) return r;
        // (x + c1) + c2 -> x + (c1 + c2), and c1 + (x + c2) alike; wrapping arithmetic
        // is associative, so this is exact for every integer type.
        Expr base;
        int64_t c1;
        if (cb && split_add_const(a, &base, &c1))
          return make_add_const(base, t, static_cast<int64_t>(static_cast<uint64_t>(c1) + static_cast<uint64_t>(*cb)), s);
        if (ca && split_add_const(b, &base, &c1))
          return make_add_const(base, t, static_cast<int64_t>(static_cast<uint64_t>(c1) + static_cast<uint64_t>(*ca)), s);
        return nullptr;
      }
      case ExprKind::Sub: {
        if (is(cb, 0)) return a;
        if (same_expr(a, b) && droppable(a)) return IntImm(t, 0, s);
        Expr base;
        int64_t c1;
        if (cb && split_add_const(a, &base, &c1))
          return make_add_const(base, t, static_cast<int64_t>(static_cast<uint64_t>(c1) - static_cast<uint64_t>(*cb)), s);
        return nullptr;
      }
      case ExprKind::Mul: {
        if (is(cb, 1)) return a;
        if (is(ca, 1)) return b;
        if (is(cb, 0) && droppable(a)) return IntImm(t, 0, s);
        if (is(ca, 0) && droppable(b)) return IntImm(t, 0, s);
        // (x * c1) * c2 -> x * (c1 * c2)
        if (const auto* inner = as<MulNode>(a); inner && cb) {
          if (const int64_t* c1 = as_const_int(inner->b)) {
            int64_t c = wrap_int(t, static_cast<int64_t>(static_cast<uint64_t>(*c1) * static_cast<uint64_t>(*cb)));
            return simplify_binary_again(ExprKind::Mul, t, inner->a, IntImm(t, c, s), s);
          }
        }
        return nullptr;
      }
      case ExprKind::Div:
      case ExprKind::FloorDiv:
        if (is(cb, 1)) return a;
        if (within(a, cb) && droppable(a)) return IntImm(t, 0, s);
        return nullptr;
      case ExprKind::Mod:
      case ExprKind::FloorMod:
        if (is(cb, 1) && droppable(a)) return IntImm(t, 0, s);
        if (within(a, cb)) return a;
        return nullptr;
      default: return nullptr;
    }
  }

  // Whether x lies in [0, c) for a positive constant c (the ranges of the enclosing
  // loops and lets): then div(x, c) is 0 and mod(x, c) is x in either rounding.
  bool within(const Expr& x, const int64_t* c) const {
    if (!c || *c <= 0) return false;
    IntBound r = bounds_.bound(x);
    return r.min >= 0 && r.max < *c;
  }

  // a + b, where b and a term of the sum a may be two digits of one index
  // (combine_digit); what they combine into may combine with a further term, so a
  // whole flattened index folds, in any order of its terms.
  Expr combine_digits(const Expr& a, const Expr& b, DataType t, const Span& s) {
    int64_t m;
    const ExprKind k = split_scale(b, &m)->kind;
    if (k != ExprKind::FloorDiv && k != ExprKind::FloorMod && k != ExprKind::Div && k != ExprKind::Mod) return nullptr;
    std::vector<Expr> terms = sum_terms(a);
    Expr pending = b;
    bool changed = false;
    for (size_t k = terms.size(); k-- > 0;) {
      Expr c = combine_digit(terms[k], pending, t, s, &m);
      if (!c) c = combine_digit(pending, terms[k], t, s, &m);
      if (!c) continue;
      const auto* mod = dynamic_cast<const BinaryNode*>(c.get());
      if (mod && (mod->kind == ExprKind::Mod || mod->kind == ExprKind::FloorMod) && within(mod->a, as_const_int(mod->b)))
        c = mod->a;
      pending = m == 1 ? c : simplify_binary_again(ExprKind::Mul, t, c, IntImm(t, m, s), s);
      terms.erase(terms.begin() + static_cast<std::ptrdiff_t>(k));
      changed = true;
      k = terms.size();  // the combined term may pair with any of the rest
    }
    if (!changed) return nullptr;
    Expr sum;
    for (const Expr& term : terms) sum = sum ? make_binary(ExprKind::Add, t, sum, term, s) : term;
    return sum ? make_binary(ExprKind::Add, t, sum, pending, s) : pending;
  }

  // The terms of a left-nested sum, left to right; past kMaxSumTerms the rest of the
  // sum stays one term (flattened indices have a handful).
  static std::vector<Expr> sum_terms(const Expr& e) {
    constexpr size_t kMaxSumTerms = 16;
    std::vector<Expr> terms;
    Expr rest = e;
    while (terms.size() + 1 < kMaxSumTerms) {
      const auto* add = as<AddNode>(rest);
      if (!add || add->dtype != e->dtype) break;
      terms.push_back(add->b);
      rest = add->a;
    }
    terms.push_back(rest);
    return {terms.rbegin(), terms.rend()};
  }

  // A freshly combined node may itself simplify further (x * 0, x * 1).
  Expr simplify_binary_again(ExprKind k, DataType t, const Expr& a, const Expr& b, const Span& s) {
    Expr e = make_binary(k, t, a, b, s);
    Expr r = identity(static_cast<const BinaryNode*>(e.get()), a, b);
    return r ? r : e;
  }
};

}  // namespace

Pass Simplify() {
  return MakeFunctionPass("simplify", [](const PrimFunc& f) { return Simplifier().mutate_func(f); });
}

}  // namespace mtir
