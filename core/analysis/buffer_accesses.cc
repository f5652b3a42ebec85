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

std::set<const VarNode*> pointers_used(const Stmt& s) {
  struct Finder : Visitor {
    std::set<const VarNode*> found;
    void visit_Var(const VarNode* v) override { found.insert(v); }
    void visit_buffer(const Buffer& b) override {
      if (b && b->data) found.insert(b->data.get());
      Visitor::visit_buffer(b);
    }
  } f;
  f.visit(s);
  return f.found;
}

}  // namespace mtir
