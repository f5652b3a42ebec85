// Index arithmetic of the compiled interpreter as one node: a tree of integer Add, Sub
// and Mul-by-constant of one type over variables becomes `c + k0*v0 + k1*v1 + ...`,
// evaluated with no call per operator. Internal to core/interp.
//
// Why it computes exactly what the tree computes: every Add/Sub/Mul node of the tree
// wraps its result to the same type T, and wrapping to T is reduction modulo 2^bits(T),
// which commutes with + and * (a ring homomorphism from the 64-bit patterns): reducing
// once at the end gives the same bits as reducing at every node. Variables and
// constants cannot fail, so folding them together changes no error and no order; any
// other operand (a load, a division) stays a term of its own, evaluated in the tree's
// left-to-right order.
#pragma once

#include <cstdint>
#include <vector>

#include "interp/compiled.h"

namespace mtir {
namespace interp {

struct LinearInt final : IntCExpr {
  struct VarTerm {
    int slot;
    uint64_t coef;
  };
  struct ExprTerm {
    CExprPtr expr;
    uint64_t coef;
  };
  explicit LinearInt(DataType t) : IntCExpr(t) {}
  int64_t eval_int(Frame& f) const override { return value(f); }
  // Inline for the buffer accesses that hold their indices' linear forms.
  int64_t value(Frame& f) const {
    uint64_t sum = constant;
    for (const ExprTerm& t : exprs) sum += t.coef * static_cast<uint64_t>(t.expr->eval_int(f));
    for (const VarTerm& t : vars) sum += t.coef * static_cast<uint64_t>(f.vars[static_cast<size_t>(t.slot)].i);
    return wrap_int(type, static_cast<int64_t>(sum));
  }

  uint64_t constant = 0;
  std::vector<VarTerm> vars;   // one per slot
  std::vector<ExprTerm> exprs;  // in the tree's evaluation order
};

}  // namespace interp
}  // namespace mtir
