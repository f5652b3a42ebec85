#include "ir/vector_buffers.h"

#include <map>

#include "ir/mutator.h"
#include "ir/visitor.h"

namespace mtir {
namespace {

Expr times(const Expr& e, int lanes) {
  if (const int64_t* v = as_const_int(e)) return IntImm(e->dtype, *v * lanes, e->span);
  return Binary(ExprKind::Mul, e, IntImm(e->dtype, lanes, e->span), e->span);
}

class VectorBufferExpander : public Mutator {
 public:
  Buffer mutate_buffer(const Buffer& b) override {
    if (!b || !b->dtype.is_vector()) return b;
    auto it = expanded_.find(b.get());
    if (it != expanded_.end()) return it->second;
    const int lanes = b->dtype.lanes();
    auto s = std::make_shared<BufferNode>(*b);
    s->dtype = b->dtype.element_of();
    for (auto& e : s->shape) e = mutate(e);
    s->shape.push_back(IntImm(DataType::Int(32), lanes, b->span));
    if (!s->strides.empty()) {
      for (auto& e : s->strides) e = times(mutate(e), lanes);
      s->strides.push_back(IntImm(DataType::Int(32), 1, b->span));
    }
    s->elem_offset = times(mutate(b->elem_offset), lanes);
    return expanded_[b.get()] = s;
  }

 protected:
  // A scalar index of a vector-typed buffer becomes the whole row of its lanes.
  std::vector<Expr> lane_indices(const Buffer& b, std::vector<Expr> indices, const Span& span) {
    const int lanes = b->dtype.lanes();
    DataType t = indices.empty() ? DataType::Int(32) : indices.back()->dtype;
    indices.push_back(Ramp(IntImm(t, 0, span), IntImm(t, 1, span), lanes, span));
    return indices;
  }
  Expr mutate_BufferLoad(const BufferLoadNode* op, const Expr& self) override {
    if (!op->buffer->dtype.is_vector()) return Mutator::mutate_BufferLoad(op, self);
    bool changed = false;
    auto idx = mutate_all(op->indices, &changed);
    return BufferLoad(mutate_buffer(op->buffer), lane_indices(op->buffer, std::move(idx), op->span), op->span);
  }
  Stmt mutate_BufferStore(const BufferStoreNode* op, const Stmt& self) override {
    if (!op->buffer->dtype.is_vector()) return Mutator::mutate_BufferStore(op, self);
    bool changed = false;
    auto idx = mutate_all(op->indices, &changed);
    return BufferStore(mutate_buffer(op->buffer), mutate(op->value),
                       lane_indices(op->buffer, std::move(idx), op->span), op->span);
  }

 private:
  std::map<const BufferNode*, Buffer> expanded_;
};

bool has_vector_buffer(const PrimFunc& f) {
  struct Finder : Visitor {
    bool found = false;
    void visit_buffer(const Buffer& b) override {
      found = found || (b && b->dtype.is_vector());
      Visitor::visit_buffer(b);
    }
  } finder;
  finder.visit_func(f);
  return finder.found;
}

}  // namespace

PrimFunc expand_vector_buffers(const PrimFunc& f) {
  if (!has_vector_buffer(f)) return f;
  VectorBufferExpander expander;
  auto g = std::make_shared<PrimFuncNode>(*f);
  for (auto& b : g->param_buffers) b = expander.mutate_buffer(b);
  g->body = expander.mutate(f->body);
  return g;
}

IRModule expand_vector_buffers(const IRModule& m) {
  IRModule out = m;
  for (auto& entry : out.functions) entry.second = expand_vector_buffers(entry.second);
  return out;
}

}  // namespace mtir
