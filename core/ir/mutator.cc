#include "ir/mutator.h"

namespace mtir {

Expr Mutator::mutate(const Expr& e) {
  if (!e) return e;
  switch (e->kind) {
#define MTIR_EXPR(Name) \
  case ExprKind::Name: return mutate_##Name(static_cast<const Name##Node*>(e.get()), e);
#include "ir/nodes.def"
  }
  return e;
}

Stmt Mutator::mutate(const Stmt& s) {
  if (!s) return s;
  switch (s->kind) {
#define MTIR_STMT(Name) \
  case StmtKind::Name: return mutate_##Name(static_cast<const Name##Node*>(s.get()), s);
#include "ir/nodes.def"
  }
  return s;
}

PrimFunc Mutator::mutate_func(const PrimFunc& f) {
  Stmt body = mutate(f->body);
  return body == f->body ? f : WithBody(f, body);
}

std::vector<Expr> Mutator::mutate_all(const std::vector<Expr>& v, bool* changed) {
  std::vector<Expr> out;
  out.reserve(v.size());
  for (const auto& e : v) {
    out.push_back(mutate(e));
    if (out.back() != e) *changed = true;
  }
  return out;
}

Expr Mutator::mutate_IntImm(const IntImmNode*, const Expr& self) { return self; }
Expr Mutator::mutate_FloatImm(const FloatImmNode*, const Expr& self) { return self; }
Expr Mutator::mutate_StringImm(const StringImmNode*, const Expr& self) { return self; }
Expr Mutator::mutate_Var(const VarNode*, const Expr& self) { return self; }

#define MTIR_BINARY(Name)                                                        \
  Expr Mutator::mutate_##Name(const Name##Node* op, const Expr& self) {          \
    Expr a = mutate(op->a), b = mutate(op->b);                                   \
    if (a == op->a && b == op->b) return self;                                   \
    return std::make_shared<Name##Node>(op->dtype, std::move(a), std::move(b), op->span); \
  }
#include "ir/nodes.def"

Expr Mutator::mutate_Not(const NotNode* op, const Expr& self) {
  Expr a = mutate(op->a);
  return a == op->a ? self : Not(a, op->span);
}
Expr Mutator::mutate_Select(const SelectNode* op, const Expr& self) {
  Expr c = mutate(op->condition), t = mutate(op->true_value), f = mutate(op->false_value);
  if (c == op->condition && t == op->true_value && f == op->false_value) return self;
  return Select(c, t, f, op->span);
}
Expr Mutator::mutate_Cast(const CastNode* op, const Expr& self) {
  Expr v = mutate(op->value);
  return v == op->value ? self : Cast(op->dtype, v, op->span);
}
Expr Mutator::mutate_BufferLoad(const BufferLoadNode* op, const Expr& self) {
  bool changed = false;
  Buffer b = mutate_buffer(op->buffer);
  auto idx = mutate_all(op->indices, &changed);
  Expr predicate = op->predicate ? mutate(op->predicate) : nullptr;
  if (!changed && b == op->buffer && predicate == op->predicate) return self;
  auto load = std::make_shared<BufferLoadNode>(op->dtype, b, std::move(idx), op->span);
  load->predicate = predicate;
  return load;
}
Expr Mutator::mutate_Call(const CallNode* op, const Expr& self) {
  bool changed = false;
  auto args = mutate_all(op->args, &changed);
  if (!changed) return self;
  return Call(op->dtype, op->op, std::move(args), op->attrs, op->span);
}
Expr Mutator::mutate_Ramp(const RampNode* op, const Expr& self) {
  Expr base = mutate(op->base), stride = mutate(op->stride);
  if (base == op->base && stride == op->stride) return self;
  return Ramp(base, stride, op->lanes, op->span, op->dtype.is_scalable());
}
Expr Mutator::mutate_Broadcast(const BroadcastNode* op, const Expr& self) {
  Expr v = mutate(op->value);
  return v == op->value ? self : Broadcast(v, op->lanes, op->span, op->dtype.is_scalable());
}
Expr Mutator::mutate_Shuffle(const ShuffleNode* op, const Expr& self) {
  bool changed = false;
  auto vectors = mutate_all(op->vectors, &changed);
  if (!changed) return self;
  return Shuffle(std::move(vectors), op->indices, op->span);
}
Expr Mutator::mutate_Let(const LetNode* op, const Expr& self) {
  Expr v = mutate(op->value), body = mutate(op->body);
  if (v == op->value && body == op->body) return self;
  return Let(op->var, v, body, op->span);
}

Stmt Mutator::mutate_BufferStore(const BufferStoreNode* op, const Stmt& self) {
  bool changed = false;
  Buffer b = mutate_buffer(op->buffer);
  Expr v = mutate(op->value);
  auto idx = mutate_all(op->indices, &changed);
  Expr predicate = op->predicate ? mutate(op->predicate) : nullptr;
  if (!changed && b == op->buffer && v == op->value && predicate == op->predicate) return self;
  auto store = std::make_shared<BufferStoreNode>(b, v, std::move(idx), op->span);
  store->predicate = predicate;
  return store;
}
Stmt Mutator::mutate_For(const ForNode* op, const Stmt& self) {
  Expr min = mutate(op->min), ext = mutate(op->extent);
  Stmt body = mutate(op->body);
  if (min == op->min && ext == op->extent && body == op->body) return self;
  return ForLike(op, min, ext, body);
}
Stmt Mutator::mutate_While(const WhileNode* op, const Stmt& self) {
  Expr c = mutate(op->condition);
  Stmt body = mutate(op->body);
  if (c == op->condition && body == op->body) return self;
  return While(c, body, op->span);
}
Stmt Mutator::mutate_IfThenElse(const IfThenElseNode* op, const Stmt& self) {
  Expr c = mutate(op->condition);
  Stmt t = mutate(op->then_case), e = mutate(op->else_case);
  if (c == op->condition && t == op->then_case && e == op->else_case) return self;
  return IfThenElse(c, t, e, op->span);
}
Stmt Mutator::mutate_LetStmt(const LetStmtNode* op, const Stmt& self) {
  Expr v = mutate(op->value);
  Stmt body = mutate(op->body);
  if (v == op->value && body == op->body) return self;
  return LetStmt(op->var, v, body, op->span);
}
Stmt Mutator::mutate_SeqStmt(const SeqStmtNode* op, const Stmt& self) {
  bool changed = false;
  std::vector<Stmt> seq;
  seq.reserve(op->seq.size());
  for (const auto& s : op->seq) {
    seq.push_back(mutate(s));
    if (seq.back() != s) changed = true;
  }
  if (!changed) return self;
  return SeqStmt(std::move(seq), op->span);
}
Stmt Mutator::mutate_Evaluate(const EvaluateNode* op, const Stmt& self) {
  Expr v = mutate(op->value);
  return v == op->value ? self : Evaluate(v, op->span);
}
Stmt Mutator::mutate_Allocate(const AllocateNode* op, const Stmt& self) {
  Buffer b = mutate_buffer(op->buffer);
  Stmt body = mutate(op->body);
  if (b == op->buffer && body == op->body) return self;
  return Allocate(b, op->scope, body, op->span);
}
Stmt Mutator::mutate_DeclBuffer(const DeclBufferNode* op, const Stmt& self) {
  Buffer b = mutate_buffer(op->buffer);
  Stmt body = mutate(op->body);
  if (b == op->buffer && body == op->body) return self;
  return DeclBuffer(b, body, op->span);
}
Stmt Mutator::mutate_AttrStmt(const AttrStmtNode* op, const Stmt& self) {
  Expr node = mutate(op->node), v = mutate(op->value);
  Stmt body = mutate(op->body);
  if (node == op->node && v == op->value && body == op->body) return self;
  return AttrStmt(node, op->key, v, body, op->span);
}
Stmt Mutator::mutate_AssertStmt(const AssertStmtNode* op, const Stmt& self) {
  Expr c = mutate(op->condition);
  Stmt body = mutate(op->body);
  if (c == op->condition && body == op->body) return self;
  return AssertStmt(c, op->message, body, op->span);
}
Stmt Mutator::mutate_AllocateConst(const AllocateConstNode* op, const Stmt& self) {
  Buffer b = mutate_buffer(op->buffer);
  Stmt body = mutate(op->body);
  if (b == op->buffer && body == op->body) return self;
  return AllocateConst(b, op->ints, op->floats, body, op->span);
}
Stmt Mutator::mutate_BufferRealize(const BufferRealizeNode* op, const Stmt& self) {
  Buffer b = mutate_buffer(op->buffer);
  bool changed = b != op->buffer;
  std::vector<std::pair<Expr, Expr>> bounds;
  for (const auto& [min, extent] : op->bounds) {
    bounds.emplace_back(mutate(min), mutate(extent));
    changed = changed || bounds.back().first != min || bounds.back().second != extent;
  }
  Expr c = mutate(op->condition);
  Stmt body = mutate(op->body);
  if (!changed && c == op->condition && body == op->body) return self;
  return BufferRealize(b, std::move(bounds), op->scope, c, body, op->span);
}

}  // namespace mtir
