// LowerAllocateConst: `p = T.allocate_const([v0, v1, ...], dtype, [extents])` (TVM's
// AllocateConst) becomes an allocation of its buffer at the top of the function and, where
// the constant stood, one store per value (row-major) before its body. Every backend then
// runs it as it runs T.allocate: at the top, the allocation is planned into the workspace
// pool (an allocation further in would need a pool of its own on wasm); the values are
// written on each entry, as the interpreter makes a fresh copy, where TVM links them in
// as a constant array.
#include "ir/mutator.h"
#include "transform/transform.h"

namespace mtir {
namespace {

class ConstLowerer : public Mutator {
 public:
  std::vector<Buffer> hoisted;  // the constant buffers, in program order

 protected:
  Stmt mutate_AllocateConst(const AllocateConstNode* op, const Stmt& self) override {
    (void)self;
    const Buffer& b = op->buffer;
    std::vector<int64_t> extents;
    for (const Expr& d : b->shape) extents.push_back(*as_const_int(d));  // constants (the parser checks)
    std::vector<Stmt> seq;
    for (size_t i = 0; i < op->size(); ++i) {
      std::vector<Expr> indices(extents.size());
      auto rest = static_cast<int64_t>(i);
      for (size_t k = extents.size(); k-- > 0;) {
        indices[k] = IntImm(b->shape[k]->dtype, rest % extents[k], op->span);
        rest /= extents[k];
      }
      Expr value =
          b->dtype.is_float() ? FloatImm(b->dtype, op->floats[i], op->span) : IntImm(b->dtype, op->ints[i], op->span);
      seq.push_back(BufferStore(b, value, std::move(indices), op->span));
    }
    hoisted.push_back(b);
    seq.push_back(mutate(op->body));
    return SeqStmt(std::move(seq), op->span);
  }
};

PrimFunc lower(const PrimFunc& f) {
  ConstLowerer lowerer;
  PrimFunc g = lowerer.mutate_func(f);
  if (lowerer.hoisted.empty()) return g;
  Stmt body = g->body;
  for (size_t i = lowerer.hoisted.size(); i-- > 0;) body = Allocate(lowerer.hoisted[i], "global", body, body->span);
  return WithBody(g, body);
}

}  // namespace

Pass LowerAllocateConst() { return MakeFunctionPass("lower_allocate_const", lower); }

}  // namespace mtir
