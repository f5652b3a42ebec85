#include "analysis/bound_vars.h"

#include "ir/visitor.h"

namespace mtir {

std::unordered_set<const VarNode*> bound_inside(const Stmt& s) {
  struct Binder : Visitor {
    std::unordered_set<const VarNode*> vars;
    void visit_For(const ForNode* op) override {
      vars.insert(op->loop_var.get());
      Visitor::visit_For(op);
    }
    void visit_LetStmt(const LetStmtNode* op) override {
      vars.insert(op->var.get());
      Visitor::visit_LetStmt(op);
    }
    void visit_Allocate(const AllocateNode* op) override {
      vars.insert(op->buffer->data.get());
      Visitor::visit_Allocate(op);
    }
    void visit_Let(const LetNode* op) override {  // T.Let: bound only inside its body
      vars.insert(op->var.get());
      Visitor::visit_Let(op);
    }
  } b;
  b.visit(s);
  return std::move(b.vars);
}

}  // namespace mtir
