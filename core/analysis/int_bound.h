// Constant integer bounds of expressions: the inclusive range an integer expression can
// take, given ranges for the variables in scope. Code generators use it to prove that
// an operation cannot overflow (so plain C arithmetic has no undefined behaviour) or
// that operands are non-negative (so floor division is C division).
#pragma once

#include <cstdint>
#include <unordered_map>

#include "ir/expr.h"

namespace mtir {

struct IntBound {
  int64_t min = 0;
  int64_t max = 0;  // inclusive
  bool contains(int64_t v) const { return min <= v && v <= max; }
  bool non_negative() const { return min >= 0; }
};

// The full range of integer (or bool) type `t`; uint64 is clamped to INT64_MAX, which
// is safe for every use here (it only makes bounds less precise).
IntBound type_range(DataType t);

class IntBoundAnalyzer {
 public:
  // Variables without a binding take the range of their type.
  void bind(const VarNode* v, IntBound b) { bounds_[v] = b; }
  void unbind(const VarNode* v) { bounds_.erase(v); }
  // The range bound to `v`, or null.
  const IntBound* lookup(const VarNode* v) const {
    auto it = bounds_.find(v);
    return it == bounds_.end() ? nullptr : &it->second;
  }

  // The range of a loop variable that starts at `min` and runs `extent` trips, when a
  // trip can happen: [min, min + extent - 1] over every value the two can take.
  bool loop_range(const Expr& min, const Expr& extent, IntBound* out) const;
  // The range of integer expression `e`.
  IntBound bound(const Expr& e) const;
  // True when `a op b`, computed with unbounded integers, stays inside its type, so C
  // evaluates it without overflow.
  bool no_overflow(const Expr& e) const;

 private:
  // The mathematically exact range of a binary op on two bounded operands, or nullopt-
  // like failure (returns false) when it exceeds int64 or cannot be bounded.
  bool exact(const Expr& e, IntBound* out) const;
  std::unordered_map<const VarNode*, IntBound> bounds_;
};

}  // namespace mtir
