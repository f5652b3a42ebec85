#include "analysis/int_bound.h"

#include <algorithm>
#include <limits>

namespace mtir {

IntBound type_range(DataType t) {
  if (t.is_bool()) return {0, 1};
  if (!t.is_integer()) return {std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()};
  if (t.is_uint()) {
    if (t.bits() >= 63) return {0, std::numeric_limits<int64_t>::max()};
    return {0, (int64_t{1} << t.bits()) - 1};
  }
  if (t.bits() >= 64) return {std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()};
  return {-(int64_t{1} << (t.bits() - 1)), (int64_t{1} << (t.bits() - 1)) - 1};
}

namespace {

bool fits(const IntBound& b, DataType t) {
  IntBound r = type_range(t);
  return r.min <= b.min && b.max <= r.max;
}

// Range of {x op y | x in a, y in b} for a monotone-per-argument op, from the corners.
template <typename Op>
bool corners(const IntBound& a, const IntBound& b, Op op, IntBound* out) {
  int64_t values[4];
  const int64_t xs[2] = {a.min, a.max}, ys[2] = {b.min, b.max};
  int n = 0;
  for (int64_t x : xs)
    for (int64_t y : ys)
      if (!op(x, y, &values[n++])) return false;
  *out = {*std::min_element(values, values + 4), *std::max_element(values, values + 4)};
  return true;
}

}  // namespace

bool IntBoundAnalyzer::exact(const Expr& e, IntBound* out) const {
  const auto* bin = static_cast<const BinaryNode*>(e.get());
  IntBound a = bound(bin->a), b = bound(bin->b);
  switch (e->kind) {
    case ExprKind::Add:
      return corners(a, b, [](int64_t x, int64_t y, int64_t* r) { return !__builtin_add_overflow(x, y, r); }, out);
    case ExprKind::Sub:
      // x - y is monotone in x and anti-monotone in y: the corners still bound it.
      return corners(a, b, [](int64_t x, int64_t y, int64_t* r) { return !__builtin_sub_overflow(x, y, r); }, out);
    case ExprKind::Mul:
      return corners(a, b, [](int64_t x, int64_t y, int64_t* r) { return !__builtin_mul_overflow(x, y, r); }, out);
    default: return false;
  }
}

bool IntBoundAnalyzer::no_overflow(const Expr& e) const {
  IntBound r;
  return exact(e, &r) && fits(r, e->dtype);
}

bool IntBoundAnalyzer::loop_range(const Expr& min, const Expr& extent, IntBound* out) const {
  IntBound lo = bound(min), ext = bound(extent);
  int64_t hi;
  if (ext.max < 1 || __builtin_add_overflow(lo.max, ext.max - 1, &hi)) return false;
  *out = {lo.min, hi};
  return true;
}

IntBound IntBoundAnalyzer::bound(const Expr& e) const {
  DataType t = e->dtype;
  IntBound full = type_range(t);
  if (!t.is_integer() && !t.is_bool()) return full;
  switch (e->kind) {
    case ExprKind::IntImm: {
      int64_t v = static_cast<const IntImmNode*>(e.get())->value;
      return {v, v};
    }
    case ExprKind::Var: {
      auto it = bounds_.find(static_cast<const VarNode*>(e.get()));
      return it == bounds_.end() ? full : it->second;
    }
    case ExprKind::Add:
    case ExprKind::Sub:
    case ExprKind::Mul: {
      IntBound r;
      // An operation that may wrap can take any value of its type.
      return exact(e, &r) && fits(r, t) ? r : full;
    }
    case ExprKind::Div:
    case ExprKind::FloorDiv: {
      const auto* bin = static_cast<const BinaryNode*>(e.get());
      IntBound a = bound(bin->a), b = bound(bin->b);
      // Both rounding modes agree on non-negative operands.
      if (a.non_negative() && b.min > 0) return {a.min / b.max, a.max / b.min};
      return full;
    }
    case ExprKind::Mod:
    case ExprKind::FloorMod: {
      const auto* bin = static_cast<const BinaryNode*>(e.get());
      IntBound a = bound(bin->a), b = bound(bin->b);
      if (b.min > 0 && (a.non_negative() || e->kind == ExprKind::FloorMod)) {
        return {0, a.non_negative() ? std::min(a.max, b.max - 1) : b.max - 1};
      }
      return full;
    }
    case ExprKind::Min:
    case ExprKind::Max: {
      const auto* bin = static_cast<const BinaryNode*>(e.get());
      IntBound a = bound(bin->a), b = bound(bin->b);
      if (e->kind == ExprKind::Min) return {std::min(a.min, b.min), std::min(a.max, b.max)};
      return {std::max(a.min, b.min), std::max(a.max, b.max)};
    }
    case ExprKind::Select: {
      const auto* op = static_cast<const SelectNode*>(e.get());
      IntBound a = bound(op->true_value), b = bound(op->false_value);
      return {std::min(a.min, b.min), std::max(a.max, b.max)};
    }
    case ExprKind::Cast: {
      const auto* op = static_cast<const CastNode*>(e.get());
      if (!op->value->dtype.is_integer() && !op->value->dtype.is_bool()) return full;
      IntBound v = bound(op->value);
      return fits(v, t) ? v : full;
    }
    case ExprKind::Call: {
      // An arithmetic right shift by a constant in range is monotonic: it divides the
      // bounds (requantization's shift, which then fits its int32 result).
      const auto* op = static_cast<const CallNode*>(e.get());
      const int64_t* amount = op->is(Builtin::ShiftRight) && op->args.size() == 2 ? as_const_int(op->args[1]) : nullptr;
      if (!amount || !t.is_int() || *amount < 0 || *amount >= t.bits()) return full;
      IntBound v = bound(op->args[0]);
      return {v.min >> *amount, v.max >> *amount};
    }
    default: return full;
  }
}

}  // namespace mtir
