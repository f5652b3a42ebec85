#include "analysis/buffer_accesses.h"

namespace mtir {

// Whether `e` reads any of `vars`.
bool uses_any(const Expr& e, const std::set<const VarNode*>& vars) {
  struct Finder : Visitor {
    const std::set<const VarNode*>* vars;
    bool found = false;
    void visit_Var(const VarNode* op) override { found = found || vars->count(op); }
  } f;
  f.vars = &vars;
  f.visit(e);
  return f.found;
}

}  // namespace mtir
