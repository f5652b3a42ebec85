// HoistLoopInvariants: pure integer expressions that do not change inside a loop
// (address arithmetic of the outer loop variables, the padding bound checks of a
// convolution) are computed once, in a LetStmt before the loop, instead of once per
// iteration. C compilers do this themselves (LICM); V8's baseline and optimizing tiers
// do not hoist out of the wasm loops we emit, so the wasm backend depends on it.
//
// Loops are visited inner first. For each loop:
//   1. a let at the head of the body whose value is invariant moves out (it was
//      usually hoisted out of an inner loop a moment ago), so invariants climb as far
//      out as they can;
//   2. an integer add/sub chain that mixes invariant and varying terms is regrouped as
//      (invariant terms) + (varying terms) + constant; wrapping integer arithmetic is
//      associative, so this is exact for every integer type;
//   3. every maximal invariant subexpression that does some arithmetic becomes a let
//      before the loop (structurally equal ones share the let).
// Only trap-free, side-effect-free integer/bool arithmetic moves: never a load (the
// loop may store to it), never a call, never a division or remainder by anything but
// a non-zero constant other than -1, because the moved expression is evaluated even
// where the original was not (a loop that runs zero times, the untaken branch of an
// if_then_else). Floats are left alone. Runs after flatten_buffer, on flat indices.
#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "analysis/bound_vars.h"
#include "ir/mutator.h"
#include "ir/tvm_intrinsics.h"
#include "ir/structural_equal.h"
#include "ir/visitor.h"
#include "ir/substitute.h"
#include "transform/transform.h"

namespace mtir {
namespace {

using VarSet = std::unordered_set<const VarNode*>;

bool int_or_bool(DataType t) { return t.is_integer() || t.is_bool(); }

// Whether `e` can be evaluated anywhere in the loop's scope with the same result and
// no possible trap: integer arithmetic on variables bound outside the loop.
class Movability {
 public:
  explicit Movability(const VarSet* inner) : inner_(inner) {}

  bool movable(const Expr& e) {
    auto it = cache_.find(e.get());
    if (it != cache_.end()) return it->second.second;
    bool m = compute(e);
    cache_[e.get()] = {e, m};
    return m;
  }

 private:
  bool compute(const Expr& e) {
    if (!int_or_bool(e->dtype) || e->dtype.is_vector()) return false;
    switch (e->kind) {
      case ExprKind::IntImm: return true;
      case ExprKind::Var: return !inner_->count(static_cast<const VarNode*>(e.get()));
      case ExprKind::Add:
      case ExprKind::Sub:
      case ExprKind::Mul:
      case ExprKind::Min:
      case ExprKind::Max:
      case ExprKind::EQ:
      case ExprKind::NE:
      case ExprKind::LT:
      case ExprKind::LE:
      case ExprKind::GT:
      case ExprKind::GE:
      case ExprKind::And:
      case ExprKind::Or: {
        const auto* b = static_cast<const BinaryNode*>(e.get());
        return int_or_bool(b->a->dtype) && movable(b->a) && movable(b->b);
      }
      case ExprKind::Div:
      case ExprKind::Mod:
      case ExprKind::FloorDiv:
      case ExprKind::FloorMod: {
        // Only a divisor that can neither be zero nor overflow the quotient (MIN / -1).
        const auto* b = static_cast<const BinaryNode*>(e.get());
        const int64_t* c = as_const_int(b->b);
        return c && *c != 0 && *c != -1 && movable(b->a);
      }
      case ExprKind::Not: return movable(static_cast<const NotNode*>(e.get())->a);
      case ExprKind::Select: {
        const auto* s = static_cast<const SelectNode*>(e.get());
        return movable(s->condition) && movable(s->true_value) && movable(s->false_value);
      }
      case ExprKind::Cast: return movable(static_cast<const CastNode*>(e.get())->value);
      default: return false;  // loads, calls, floats, strings
    }
  }

  const VarSet* inner_;
  // Holding the node keeps its address from being reused by a later node.
  std::unordered_map<const ExprNode*, std::pair<Expr, bool>> cache_;
};

// Worth a let: does arithmetic and reads some variable (constants are simplify's).
bool worth_hoisting(const Expr& e) {
  if (e->kind == ExprKind::Var || e->kind == ExprKind::IntImm) return false;
  struct HasVar : Visitor {
    bool found = false;
    void visit_Var(const VarNode*) override { found = true; }
  } v;
  v.visit(e);
  return v.found;
}

// Step 2: (a + v) + b with a, b invariant and v varying becomes (a + b) + v.
class Regroup : public Mutator {
 public:
  explicit Regroup(Movability* m) : m_(m) {}

 protected:
  Expr mutate_Add(const AddNode* op, const Expr& self) override { return chain(op, self); }
  Expr mutate_Sub(const SubNode* op, const Expr& self) override { return chain(op, self); }

 private:
  struct Term {
    Expr e;
    bool negative;
  };
  static bool is_sum(const Expr& e, DataType t) {
    return (e->kind == ExprKind::Add || e->kind == ExprKind::Sub) && e->dtype == t;
  }
  // The signed terms of a sum, each multiplied by `scale`. A product of a constant and
  // a sum that varies, (oh + rh) * 6, is distributed (oh * 6 + rh * 6: exact in
  // wrapping arithmetic) so its invariant half can leave the loop too.
  void flatten(const Expr& e, DataType t, bool negative, uint64_t scale, std::vector<Term>* out) {
    if (is_sum(e, t)) {
      const auto* b = static_cast<const BinaryNode*>(e.get());
      flatten(b->a, t, negative, scale, out);
      flatten(b->b, t, e->kind == ExprKind::Sub ? !negative : negative, scale, out);
      return;
    }
    if (const auto* mul = as<MulNode>(e); mul && e->dtype == t && !m_->movable(e)) {
      const int64_t* c = as_const_int(mul->b);
      if (c && is_sum(mul->a, t)) return flatten(mul->a, t, negative, scale * static_cast<uint64_t>(*c), out);
    }
    const int64_t k = wrap_int(t, static_cast<int64_t>(scale));
    if (const int64_t* c = as_const_int(e)) {
      out->push_back({IntImm(t, wrap_int(t, static_cast<int64_t>(static_cast<uint64_t>(*c) * scale)), e->span), negative});
    } else {
      out->push_back({k == 1 ? e : Binary(ExprKind::Mul, e, IntImm(t, k, e->span), e->span), negative});
    }
  }
  Expr chain(const BinaryNode* op, const Expr& self) {
    const DataType t = op->dtype;
    if (m_->movable(self)) return self;  // hoisted whole
    if (!t.is_integer()) {
      Expr a = mutate(op->a), b = mutate(op->b);
      return a == op->a && b == op->b ? self : Binary(op->kind, a, b, op->span);
    }
    std::vector<Term> terms;
    flatten(self, t, false, 1, &terms);
    std::vector<Term> inv, var;
    for (auto& term : terms) (m_->movable(term.e) ? inv : var).push_back(term);
    // Regroup only when the invariant part becomes one subtree that is worth a let.
    int inv_nonconst = 0;
    for (const auto& term : inv) inv_nonconst += term.e->kind != ExprKind::IntImm;
    if (inv_nonconst == 0 || inv.size() < 2) return rebuild_leaves(self, t);
    // The constants go last, outside the invariant subtree: A[inv + v + 1] and
    // A[inv + v] then share one let, and the + 1 becomes the load's address offset.
    std::vector<Term> constants, rest;
    for (auto& term : inv) (term.e->kind == ExprKind::IntImm ? constants : rest).push_back(term);
    Expr sum = combine(rest, t, op->span);
    for (const auto& term : var)
      sum = Binary(term.negative ? ExprKind::Sub : ExprKind::Add, sum, mutate(term.e), op->span);
    if (!constants.empty()) {
      constants.insert(constants.begin(), Term{sum, false});
      sum = combine(constants, t, op->span);
    }
    return same_expr(sum, self) ? self : sum;
  }
  Expr combine(const std::vector<Term>& terms, DataType t, const Span& s) {
    // Positive terms first, so the sum rarely starts with a negation; the constants
    // folded into one, last (wrapping, as the arithmetic itself).
    Expr sum;
    uint64_t constant = 0;
    for (int pass = 0; pass < 2; ++pass)
      for (const auto& term : terms) {
        if (term.negative != (pass == 1)) continue;
        if (const int64_t* c = as_const_int(term.e)) {
          constant += term.negative ? 0 - static_cast<uint64_t>(*c) : static_cast<uint64_t>(*c);
          continue;
        }
        if (!sum) sum = term.negative ? Binary(ExprKind::Sub, IntImm(t, 0, s), term.e, s) : term.e;
        else sum = Binary(term.negative ? ExprKind::Sub : ExprKind::Add, sum, term.e, s);
      }
    const int64_t c = wrap_int(t, static_cast<int64_t>(constant));
    if (c != 0) {
      // x + (-5) reads as x - 5, unless negating wraps (the type's minimum).
      const bool as_sub = c < 0 && wrap_int(t, static_cast<int64_t>(0 - static_cast<uint64_t>(c))) > 0;
      sum = as_sub ? Binary(ExprKind::Sub, sum, IntImm(t, static_cast<int64_t>(0 - static_cast<uint64_t>(c)), s), s)
                   : Binary(ExprKind::Add, sum, IntImm(t, c, s), s);
    }
    return sum;
  }
  // The chain as it was, with its leaves rewritten (a leaf may hold another chain).
  Expr rebuild_leaves(const Expr& e, DataType t) {
    if ((e->kind != ExprKind::Add && e->kind != ExprKind::Sub) || e->dtype != t) return mutate(e);
    const auto* b = static_cast<const BinaryNode*>(e.get());
    Expr x = rebuild_leaves(b->a, t), y = rebuild_leaves(b->b, t);
    if (x == b->a && y == b->b) return e;
    return Binary(e->kind, x, y, e->span);
  }
  Movability* m_;
};

// Step 3: the maximal movable subexpressions worth a let, each structurally distinct
// one once, in the order they are first met.
class Collect : public Visitor {
 public:
  explicit Collect(Movability* m) : m_(m) {}
  std::vector<Expr> found;

  void visit(const Expr& e) override {
    if (m_->movable(e)) {
      if (worth_hoisting(e) && std::none_of(found.begin(), found.end(), [&](const Expr& f) { return same_expr(f, e); }))
        found.push_back(e);
      return;
    }
    Visitor::visit(e);
  }
  using Visitor::visit;
  // Buffer shapes are not rewritten (buffers are shared by identity), so not collected.
  void visit_buffer(const Buffer&) override {}

 private:
  Movability* m_;
};

// Replaces each occurrence of a hoisted expression by its variable.
class Replace : public Mutator {
 public:
  Replace(const std::vector<Expr>* exprs, const std::vector<Var>* vars, const VarSet* ours)
      : exprs_(exprs), vars_(vars), ours_(ours) {}
  Expr mutate(const Expr& e) override {
    for (size_t i = 0; e && i < exprs_->size(); ++i)
      if ((*exprs_)[i]->kind == e->kind && same_expr((*exprs_)[i], e)) return (*vars_)[i];
    return Mutator::mutate(e);
  }
  using Mutator::mutate;

 protected:
  // One of our lets whose whole value was hoisted would only copy a variable: use that
  // instead. (Not a program's own let: its variable may be in a buffer shape, which
  // substitute() does not rewrite.)
  Stmt mutate_LetStmt(const LetStmtNode* op, const Stmt& self) override {
    Expr v = mutate(op->value);
    if (v != op->value && v->kind == ExprKind::Var && ours_->count(op->var.get()))
      return mutate(substitute(op->body, op->var, v));
    Stmt body = mutate(op->body);
    if (v == op->value && body == op->body) return self;
    return LetStmt(op->var, v, body, op->span);
  }

 private:
  const std::vector<Expr>* exprs_;
  const std::vector<Var>* vars_;
  const VarSet* ours_;  // the variables of the lets this pass made
};

class Hoister : public Mutator {
 protected:
  Stmt mutate_For(const ForNode* op, const Stmt& self) override {
    Stmt body = mutate(op->body);  // inner loops first: their lets are then hoisted further
    // A loop that may stop early reads what it reads only on the iterations it runs.
    if (exits_loop(body)) return body == op->body ? self : ForLike(op, op->min, op->extent, body);
    std::vector<std::pair<Var, Expr>> lets;
    body = lift_leading_lets(op, body, &lets);

    VarSet inner = bound_inside(body);
    inner.insert(op->loop_var.get());
    Movability m(&inner);
    body = Regroup(&m).mutate(body);
    Collect c(&m);
    c.visit(body);
    std::vector<Var> vars;
    for (const auto& e : c.found) {
      vars.push_back(MakeVar(op->loop_var->name + "_inv" + std::to_string(next_id_++), e->dtype, e->span));
      lets.emplace_back(vars.back(), e);
      ours_.insert(vars.back().get());
    }
    if (!c.found.empty()) body = Replace(&c.found, &vars, &ours_).mutate(body);
    if (body == op->body) return self;
    Stmt out = ForLike(op, op->min, op->extent, body);
    for (size_t i = lets.size(); i-- > 0;) out = LetStmt(lets[i].first, lets[i].second, out, op->span);
    return out;
  }

 private:
  // Step 1: the lets at the head of the body whose values do not depend on the loop
  // (nor on a let kept inside) move out, in order.
  Stmt lift_leading_lets(const ForNode* op, const Stmt& body, std::vector<std::pair<Var, Expr>>* lifted) {
    VarSet inner = {op->loop_var.get()};
    std::vector<const LetStmtNode*> kept;
    Stmt rest = body;
    while (const auto* let = as<LetStmtNode>(rest)) {
      Movability m(&inner);
      if (m.movable(let->value)) {
        lifted->emplace_back(let->var, let->value);
      } else {
        kept.push_back(let);
        inner.insert(let->var.get());
      }
      rest = let->body;
    }
    if (lifted->empty()) return body;
    for (size_t i = kept.size(); i-- > 0;) rest = LetStmt(kept[i]->var, kept[i]->value, rest, kept[i]->span);
    return rest;
  }

  int next_id_ = 0;
  VarSet ours_;
};

}  // namespace

Pass HoistLoopInvariants() {
  return MakeFunctionPass("hoist_loop_invariants", [](const PrimFunc& f) { return Hoister().mutate_func(f); });
}

}  // namespace mtir
