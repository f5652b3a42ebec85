// The one rewriting walker. `mutate_<Kind>(op, self)` returns `self` when nothing below
// changed, so untouched subtrees are shared and callers can test `result == input`
// (the "changed" flag of the pass pipeline depends on this).
#pragma once

#include "ir/function.h"
#include "ir/stmt.h"

namespace mtir {

class Mutator {
 public:
  virtual ~Mutator() = default;
  virtual Expr mutate(const Expr& e);
  virtual Stmt mutate(const Stmt& s);
  // Where a buffer is used; the default leaves buffers as they are.
  virtual Buffer mutate_buffer(const Buffer& b) { return b; }
  // A copy of `f` with a mutated body, or `f` itself when the body did not change.
  PrimFunc mutate_func(const PrimFunc& f);

 protected:
  // Mutate each element; `changed` is set if any element changed.
  std::vector<Expr> mutate_all(const std::vector<Expr>& v, bool* changed);

#define MTIR_EXPR(Name) virtual Expr mutate_##Name(const Name##Node* op, const Expr& self);
#define MTIR_STMT(Name) virtual Stmt mutate_##Name(const Name##Node* op, const Stmt& self);
#include "ir/nodes.def"
};

}  // namespace mtir
