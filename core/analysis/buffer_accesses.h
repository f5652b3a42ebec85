// What a statement does with buffers, for the code generators' register allocation
// (the wasm backend promotes an accumulator to a local and keeps small arrays in
// locals): the accesses of a loop body, and how an allocation's body uses it.
#pragma once

#include <set>
#include <vector>

#include "ir/op.h"
#include "ir/visitor.h"

namespace mtir {

// The memory accesses of a loop body, for promoting an accumulator to a local: which
// buffers (by data variable) are read and written at which indices, the variables bound
// inside, and whether anything else could touch memory (a call).
struct LoopAccesses : Visitor {
  struct Access {
    const VarNode* data;
    Buffer buffer;
    std::vector<Expr> indices;
    bool store;
  };
  std::vector<Access> accesses;
  std::set<const VarNode*> bound;  // loop variables, lets and allocations inside the loop
  bool has_call = false;

  void visit_BufferLoad(const BufferLoadNode* op) override {
    accesses.push_back({op->buffer->data.get(), op->buffer, op->indices, false});
    Visitor::visit_BufferLoad(op);
  }
  void visit_BufferStore(const BufferStoreNode* op) override {
    accesses.push_back({op->buffer->data.get(), op->buffer, op->indices, true});
    Visitor::visit_BufferStore(op);
  }
  void visit_Call(const CallNode* op) override {
    // Calls out and the fixed-signature builtins may touch memory; math does not.
    const OpInfo::Kind kind = op->builtin ? builtin_info(*op->builtin).kind : OpInfo::Kind::kCallExtern;
    if (kind == OpInfo::Kind::kCallExtern || kind == OpInfo::Kind::kBuiltin) has_call = true;
    Visitor::visit_Call(op);
  }
  void visit_For(const ForNode* op) override {
    bound.insert(op->loop_var.get());
    Visitor::visit_For(op);
  }
  void visit_LetStmt(const LetStmtNode* op) override {
    bound.insert(op->var.get());
    Visitor::visit_LetStmt(op);
  }
  void visit_Allocate(const AllocateNode* op) override {
    bound.insert(op->buffer->data.get());
    Visitor::visit_Allocate(op);
  }
};

// Whether `e` reads any of `vars`.
bool uses_any(const Expr& e, const std::set<const VarNode*>& vars);

// How the body of an allocation uses it, for keeping a small one in locals: whether every
// use is a scalar load or store of one element, and the loop variables its indices read.
struct RegisterArrayUses : Visitor {
  const VarNode* data = nullptr;
  DataType dtype;
  bool escapes = false;  // the pointer itself is used (a call, address_of, a vector access, a view)
  std::set<const VarNode*> index_vars;

  bool element_access(const Buffer& b, const std::vector<Expr>& indices) {
    if (b->data.get() != data) return false;
    if (indices.size() != 1 || indices[0]->dtype.is_vector() || b->dtype != dtype) escapes = true;
    for (const auto& i : indices) {
      struct Vars : Visitor {
        std::set<const VarNode*>* out;
        void visit_Var(const VarNode* op) override { out->insert(op); }
      } vars;
      vars.out = &index_vars;
      vars.visit(i);
      visit(i);
    }
    return true;
  }
  void visit_BufferLoad(const BufferLoadNode* op) override {
    if (!element_access(op->buffer, op->indices)) Visitor::visit_BufferLoad(op);
  }
  void visit_BufferStore(const BufferStoreNode* op) override {
    if (op->buffer->data.get() != data) {
      Visitor::visit_BufferStore(op);
      return;
    }
    if (op->value->dtype.is_vector()) escapes = true;
    visit(op->value);
    element_access(op->buffer, op->indices);
  }
  void visit_Var(const VarNode* op) override { escapes = escapes || op == data; }
  void visit_Call(const CallNode* op) override {
    const auto* l = op->is(Builtin::AddressOf) && op->args.size() == 1 ? as<BufferLoadNode>(op->args[0]) : nullptr;
    if (l && l->buffer->data.get() == data) escapes = true;
    Visitor::visit_Call(op);
  }
};

// The pointers statement `s` touches: the variables it uses and its buffers' data
// pointers (the memory planner's and call_overlap's question: may it reach this memory?).
std::set<const VarNode*> pointers_used(const Stmt& s);

}  // namespace mtir
