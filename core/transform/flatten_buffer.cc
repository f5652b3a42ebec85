// FlattenBuffer: every multi-dimensional (or strided, or offset) buffer access becomes
// a 1-D access into a flat view of the same memory, using the buffer's shape, strides
// and element offset. Parameter buffers keep their declared shape in the signature
// (MakePackedAPI checks callers against it); the body reads them through a
// `T.decl_buffer` view. Allocations become flat allocations.
#include <unordered_map>

#include "ir/mutator.h"
#include "transform/transform.h"

namespace mtir {
namespace {

Expr typed_int(DataType t, int64_t v) { return IntImm(t, v); }

// Converts an extent/stride expression to the index type, so the arithmetic agrees.
// A vector index keeps its lanes (a Ramp stays a Ramp).
Expr as_index_type(const Expr& e, DataType t) {
  if (e->dtype.element_of() == t) return e;
  if (const auto* r = as<RampNode>(e)) return Ramp(as_index_type(r->base, t), as_index_type(r->stride, t), r->lanes, e->span);
  if (e->dtype.is_vector()) return Cast(t.with_lanes(e->dtype.lanes()), e);
  if (const int64_t* c = as_const_int(e)) return typed_int(t, *c);
  return Cast(t, e);
}

Expr add(const Expr& a, const Expr& b);

// Index arithmetic where `a` may be a vector index (a stride is always scalar): a Ramp
// stays a Ramp, so the backend can still see a contiguous access.
Expr vector_mul(const Expr& a, const Expr& stride);
Expr vector_add(const Expr& a, const Expr& b);

Expr mul(const Expr& a, const Expr& b) {
  if (a->dtype.is_vector()) return vector_mul(a, b);
  const int64_t *ca = as_const_int(a), *cb = as_const_int(b);
  if (ca && cb) return typed_int(a->dtype, wrap_int(a->dtype, *ca * *cb));
  if (cb && *cb == 1) return a;
  if (ca && *ca == 1) return b;
  return Binary(ExprKind::Mul, a, b);
}

Expr add(const Expr& a, const Expr& b) {
  if (a->dtype.is_vector() || b->dtype.is_vector()) return vector_add(a, b);
  const int64_t *ca = as_const_int(a), *cb = as_const_int(b);
  if (ca && cb) return typed_int(a->dtype, wrap_int(a->dtype, *ca + *cb));
  if (cb && *cb == 0) return a;
  if (ca && *ca == 0) return b;
  return Binary(ExprKind::Add, a, b);
}

Expr vector_mul(const Expr& a, const Expr& stride) {
  if (const int64_t* c = as_const_int(stride); c && *c == 1) return a;
  if (const auto* r = as<RampNode>(a)) return Ramp(mul(r->base, stride), mul(r->stride, stride), r->lanes, a->span);
  return Binary(ExprKind::Mul, a, Broadcast(stride, a->dtype.lanes()));
}

Expr vector_add(const Expr& a, const Expr& b) {
  if (a->dtype.is_vector() && b->dtype.is_vector()) return Binary(ExprKind::Add, a, b);
  const Expr& vec = a->dtype.is_vector() ? a : b;
  const Expr& scalar = a->dtype.is_vector() ? b : a;
  if (const int64_t* c = as_const_int(scalar); c && *c == 0) return vec;
  if (const auto* r = as<RampNode>(vec)) return Ramp(add(scalar, r->base), r->stride, r->lanes, vec->span);
  return Binary(ExprKind::Add, Broadcast(scalar, vec->dtype.lanes()), vec);
}

// The buffer's strides in elements: declared ones, or row-major compact ones.
std::vector<Expr> strides_of(const Buffer& b, DataType t) {
  if (!b->strides.empty()) {
    std::vector<Expr> s;
    for (const auto& e : b->strides) s.push_back(as_index_type(e, t));
    return s;
  }
  std::vector<Expr> s(b->shape.size());
  Expr running = typed_int(t, 1);
  for (size_t k = b->shape.size(); k-- > 0;) {
    s[k] = running;
    running = mul(running, as_index_type(b->shape[k], t));
  }
  return s;
}

bool is_flat(const Buffer& b) {
  const int64_t* offset = b->elem_offset ? as_const_int(b->elem_offset) : nullptr;
  return b->shape.size() == 1 && b->strides.empty() && (!b->elem_offset || (offset && *offset == 0));
}

class Flattener : public Mutator {
 public:
  // The flat view of `b` (made once per buffer, so every access shares it).
  Buffer flat_of(const Buffer& b) {
    if (is_flat(b)) return b;
    auto it = flat_.find(b.get());
    if (it != flat_.end()) return it->second;
    DataType t = DataType::Int(32);
    for (const auto& e : b->shape)
      if (e->dtype.is_integer() && e->dtype.bits() > t.bits()) t = e->dtype;
    // Elements reachable from the data pointer: offset + sum((extent - 1) * stride) + 1,
    // which is the product of the extents for a compact buffer.
    Expr extent;
    if (b->strides.empty()) {
      extent = typed_int(t, 1);
      for (const auto& e : b->shape) extent = mul(extent, as_index_type(e, t));
    } else {
      extent = typed_int(t, 1);
      std::vector<Expr> s = strides_of(b, t);
      for (size_t k = 0; k < b->shape.size(); ++k) {
        Expr last = Binary(ExprKind::Sub, as_index_type(b->shape[k], t), typed_int(t, 1));
        extent = add(extent, mul(last, s[k]));
      }
    }
    if (b->elem_offset) extent = add(extent, as_index_type(b->elem_offset, t));
    auto f = std::make_shared<BufferNode>();
    f->name = b->name + "_flat";
    f->dtype = b->dtype;
    f->shape = {extent};
    f->elem_offset = typed_int(DataType::Int(32), 0);
    f->data = b->data;
    f->align = b->align;
    f->span = b->span;
    flat_[b.get()] = f;
    return f;
  }

  std::vector<Expr> flat_index(const Buffer& b, const std::vector<Expr>& indices) {
    // The widest index type: mixing int32 and int64 loop variables is allowed.
    DataType t = DataType::Int(32);
    for (const auto& i : indices)
      if (i->dtype.is_integer() && i->dtype.bits() > t.bits()) t = i->dtype.element_of();
    std::vector<Expr> s = strides_of(b, t);
    Expr index = b->elem_offset ? as_index_type(b->elem_offset, t) : typed_int(t, 0);
    for (size_t k = 0; k < indices.size(); ++k) index = add(index, mul(as_index_type(indices[k], t), s[k]));
    return {index};
  }

 protected:
  Expr mutate_BufferLoad(const BufferLoadNode* op, const Expr& self) override {
    bool changed = false;
    std::vector<Expr> idx = mutate_all(op->indices, &changed);
    if (is_flat(op->buffer)) return changed ? BufferLoad(op->buffer, idx, op->span) : self;
    return BufferLoad(flat_of(op->buffer), flat_index(op->buffer, idx), op->span);
  }

  Stmt mutate_BufferStore(const BufferStoreNode* op, const Stmt& self) override {
    bool changed = false;
    std::vector<Expr> idx = mutate_all(op->indices, &changed);
    Expr value = mutate(op->value);
    if (is_flat(op->buffer)) {
      return changed || value != op->value ? BufferStore(op->buffer, value, idx, op->span) : self;
    }
    return BufferStore(flat_of(op->buffer), value, flat_index(op->buffer, idx), op->span);
  }

  // An allocation is flat from the start: nothing else refers to its N-D form.
  Stmt mutate_Allocate(const AllocateNode* op, const Stmt& self) override {
    Stmt body = mutate(op->body);
    if (is_flat(op->buffer)) return body == op->body ? self : Allocate(op->buffer, op->scope, body, op->span);
    Buffer flat = flat_of(op->buffer);
    return Allocate(flat, op->scope, body, op->span);
  }

  Stmt mutate_DeclBuffer(const DeclBufferNode* op, const Stmt& self) override {
    Stmt body = mutate(op->body);
    if (is_flat(op->buffer)) return body == op->body ? self : DeclBuffer(op->buffer, body, op->span);
    return DeclBuffer(flat_of(op->buffer), body, op->span);
  }

 public:
  bool has_view(const Buffer& b) const { return flat_.count(b.get()) > 0; }

 private:
  std::unordered_map<const BufferNode*, Buffer> flat_;
};

PrimFunc flatten(const PrimFunc& f) {
  Flattener flattener;
  Stmt body = flattener.mutate(f->body);
  if (body == f->body) return f;
  // Views of the parameters, declared at the top (in parameter order) when used.
  for (size_t i = f->param_buffers.size(); i-- > 0;) {
    const Buffer& b = f->param_buffers[i];
    if (!b || is_flat(b) || !flattener.has_view(b)) continue;
    body = DeclBuffer(flattener.flat_of(b), body, b->span);
  }
  return WithBody(f, body);
}

}  // namespace

Pass FlattenBuffer() { return MakeFunctionPass("flatten_buffer", flatten); }

}  // namespace mtir
