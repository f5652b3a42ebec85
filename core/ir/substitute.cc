#include "ir/substitute.h"

#include "ir/mutator.h"

namespace mtir {
namespace {

class Substituter : public Mutator {
 public:
  explicit Substituter(const VarMap& vmap) : vmap_(vmap) {}

 protected:
  Expr mutate_Var(const VarNode* op, const Expr& self) override {
    auto it = vmap_.find(op);
    return it == vmap_.end() ? self : it->second;
  }

 private:
  const VarMap& vmap_;
};

}  // namespace

Expr substitute(const Expr& e, const VarMap& vmap) {
  if (vmap.empty()) return e;
  return Substituter(vmap).mutate(e);
}

Stmt substitute(const Stmt& s, const VarMap& vmap) {
  if (vmap.empty()) return s;
  return Substituter(vmap).mutate(s);
}

Expr substitute(const Expr& e, const Var& v, const Expr& value) { return substitute(e, VarMap{{v.get(), value}}); }
Stmt substitute(const Stmt& s, const Var& v, const Expr& value) { return substitute(s, VarMap{{v.get(), value}}); }

}  // namespace mtir
