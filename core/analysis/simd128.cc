#include "analysis/simd128.h"

#include "ir/op.h"

namespace mtir {
namespace {

// Whether consecutive elements of the last axis are adjacent in memory.
bool last_axis_contiguous(const Buffer& b) {
  if (b->strides.empty()) return true;
  const int64_t* s = as_const_int(b->strides.back());
  return s && *s == 1;
}

// A vector value wasm SIMD128 computes directly: a contiguous load of the buffer's own
// element type, a Broadcast of a scalar, or add/sub/mul/min/max (float div) of such values,
// where wasm has the instruction for the lane shape (no i8x16.mul, no i64x2.min/max).
bool simd128_value(const Expr& e) {
  const DataType t = e->dtype;
  switch (e->kind) {
    case ExprKind::BufferLoad: {
      const auto* op = as<BufferLoadNode>(e);
      return op->buffer->dtype == t.element_of() && last_axis_contiguous(op->buffer) &&
             simd128_index(op->indices, t.lanes());
    }
    case ExprKind::Broadcast: return as<BroadcastNode>(e)->value->dtype.is_scalar();
    case ExprKind::Add:
    case ExprKind::Sub: break;
    case ExprKind::Mul:
      if (t.is_integer() && t.bits() == 8) return false;
      break;
    case ExprKind::Min:
    case ExprKind::Max:
      if (t.is_integer() && t.bits() == 64) return false;
      break;
    case ExprKind::Div:
      if (!t.is_float()) return false;
      break;
    default: return false;
  }
  const auto* op = static_cast<const BinaryNode*>(e.get());
  return op->a->dtype == t && op->b->dtype == t && simd128_value(op->a) && simd128_value(op->b);
}

}  // namespace

bool simd128_lane_type(DataType t) {
  if (t.bits() * t.lanes() != 128) return false;
  return (t.is_integer() && (t.bits() == 8 || t.bits() == 16 || t.bits() == 32 || t.bits() == 64)) ||
         (t.is_float() && (t.bits() == 32 || t.bits() == 64));
}

bool simd128_index(const std::vector<Expr>& indices, int lanes) {
  if (indices.empty()) return false;
  for (size_t i = 0; i + 1 < indices.size(); ++i)
    if (!indices[i]->dtype.is_scalar()) return false;
  const auto* r = as<RampNode>(indices.back());
  const int64_t* stride = r ? as_const_int(r->stride) : nullptr;
  return r && r->lanes == lanes && stride && *stride == 1 && r->base->dtype.is_scalar();
}

bool simd128_store(const BufferStoreNode* op) {
  const DataType t = op->value->dtype;
  return t.is_vector() && simd128_lane_type(t) && op->buffer->dtype == t.element_of() &&
         last_axis_contiguous(op->buffer) &&
         simd128_index(op->indices, t.lanes()) && simd128_value(op->value);
}

}  // namespace mtir
