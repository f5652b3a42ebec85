#include "ir/visitor.h"

namespace mtir {

void Visitor::visit(const Expr& e) {
  if (!e) return;
  switch (e->kind) {
#define MTIR_EXPR(Name) \
  case ExprKind::Name: return visit_##Name(static_cast<const Name##Node*>(e.get()));
#include "ir/nodes.def"
  }
}

void Visitor::visit(const Stmt& s) {
  if (!s) return;
  switch (s->kind) {
#define MTIR_STMT(Name) \
  case StmtKind::Name: return visit_##Name(static_cast<const Name##Node*>(s.get()));
#include "ir/nodes.def"
  }
}

void Visitor::visit_buffer(const Buffer& b) {
  for (const auto& e : b->shape) visit(e);
  for (const auto& e : b->strides) visit(e);
  visit(b->elem_offset);
}

void Visitor::visit_func(const PrimFunc& f) {
  for (const auto& b : f->param_buffers)
    if (b) visit_buffer(b);
  visit(f->body);
}

void Visitor::visit_IntImm(const IntImmNode*) {}
void Visitor::visit_FloatImm(const FloatImmNode*) {}
void Visitor::visit_StringImm(const StringImmNode*) {}
void Visitor::visit_Var(const VarNode*) {}
#define MTIR_BINARY(Name)                               \
  void Visitor::visit_##Name(const Name##Node* op) {    \
    visit(op->a);                                       \
    visit(op->b);                                       \
  }
#include "ir/nodes.def"
void Visitor::visit_Not(const NotNode* op) { visit(op->a); }
void Visitor::visit_Select(const SelectNode* op) {
  visit(op->condition);
  visit(op->true_value);
  visit(op->false_value);
}
void Visitor::visit_Cast(const CastNode* op) { visit(op->value); }
void Visitor::visit_BufferLoad(const BufferLoadNode* op) {
  visit_buffer(op->buffer);
  for (const auto& i : op->indices) visit(i);
  if (op->predicate) visit(op->predicate);
}
void Visitor::visit_Call(const CallNode* op) {
  for (const auto& a : op->args) visit(a);
}
void Visitor::visit_Ramp(const RampNode* op) {
  visit(op->base);
  visit(op->stride);
}
void Visitor::visit_Broadcast(const BroadcastNode* op) { visit(op->value); }
void Visitor::visit_Shuffle(const ShuffleNode* op) {
  for (const auto& v : op->vectors) visit(v);
}
void Visitor::visit_Let(const LetNode* op) {
  visit(op->value);
  visit(op->body);
}

void Visitor::visit_BufferStore(const BufferStoreNode* op) {
  visit_buffer(op->buffer);
  visit(op->value);
  for (const auto& i : op->indices) visit(i);
  if (op->predicate) visit(op->predicate);
}
void Visitor::visit_For(const ForNode* op) {
  visit(op->min);
  visit(op->extent);
  visit(op->body);
}
void Visitor::visit_While(const WhileNode* op) {
  visit(op->condition);
  visit(op->body);
}
void Visitor::visit_IfThenElse(const IfThenElseNode* op) {
  visit(op->condition);
  visit(op->then_case);
  visit(op->else_case);
}
void Visitor::visit_LetStmt(const LetStmtNode* op) {
  visit(op->value);
  visit(op->body);
}
void Visitor::visit_SeqStmt(const SeqStmtNode* op) {
  for (const auto& s : op->seq) visit(s);
}
void Visitor::visit_Evaluate(const EvaluateNode* op) { visit(op->value); }
void Visitor::visit_Allocate(const AllocateNode* op) {
  visit_buffer(op->buffer);
  visit(op->body);
}
void Visitor::visit_DeclBuffer(const DeclBufferNode* op) {
  visit_buffer(op->buffer);
  visit(op->body);
}
void Visitor::visit_AttrStmt(const AttrStmtNode* op) {
  visit(op->node);
  visit(op->value);
  visit(op->body);
}
void Visitor::visit_AssertStmt(const AssertStmtNode* op) {
  visit(op->condition);
  visit(op->body);
}
void Visitor::visit_AllocateConst(const AllocateConstNode* op) {
  visit_buffer(op->buffer);
  visit(op->body);
}
void Visitor::visit_BufferRealize(const BufferRealizeNode* op) {
  visit_buffer(op->buffer);
  for (const auto& [min, extent] : op->bounds) {
    visit(min);
    visit(extent);
  }
  visit(op->condition);
  visit(op->body);
}

}  // namespace mtir
