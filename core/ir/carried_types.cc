#include "ir/carried_types.h"

#include <set>

#include "ir/buffer.h"
#include "ir/visitor.h"
#include "support/diagnostic.h"

namespace mtir {

namespace {

bool is_carried(DataType t) { return t.is_scalable() || is_sub_byte(t); }

// The first parameter, buffer or expression (in program order) of a carried type.
struct FindCarried : Visitor {
  DataType type;
  const Span* where = nullptr;

  void found(DataType t, const Span& span) {
    if (where || !is_carried(t)) return;
    type = t;
    where = &span;
  }
  void visit(const Expr& e) override {
    if (where || !e) return;
    found(e->dtype, e->span);
    if (!where) Visitor::visit(e);
  }
  using Visitor::visit;
  void visit_buffer(const Buffer& b) override {
    if (b) found(b->dtype, b->span);
    if (!where) Visitor::visit_buffer(b);
  }
  // A statement of unflattened TIR.
  bool realize = false;
  void visit_BufferRealize(const BufferRealizeNode* op) override {
    if (where) return;
    realize = true;
    where = &op->span;
  }
  // TVM's masked vector accesses, A.vload(..., predicate=p) and A.vstore(...). A mask of
  // every lane (T.Broadcast(True, n)) is a plain access, which everything runs.
  bool masked = false;
  void masked_access(const Expr& predicate, const Span& span) {
    const auto* all = as<BroadcastNode>(predicate);
    const int64_t* lane = all ? as_const_int(all->value) : nullptr;
    if (where || !predicate || (lane && *lane == 1)) return;
    masked = true;
    where = &span;
  }
  void visit_BufferLoad(const BufferLoadNode* op) override {
    masked_access(op->predicate, op->span);
    if (!where) Visitor::visit_BufferLoad(op);
  }
  void visit_BufferStore(const BufferStoreNode* op) override {
    masked_access(op->predicate, op->span);
    if (!where) Visitor::visit_BufferStore(op);
  }
  // TVM's `T.Buffer(...)` in a body without data=: a buffer over a pointer nothing binds.
  const std::set<const VarNode*>* bound_pointers = nullptr;
  Buffer unbound;
  void visit_DeclBuffer(const DeclBufferNode* op) override {
    if (where) return;
    if (!bound_pointers->count(op->buffer->data.get())) {
      unbound = op->buffer;
      where = &op->span;
      return;
    }
    Visitor::visit_DeclBuffer(op);
  }
  // A parameter in GPU memory: T.Buffer(..., scope="shared"), T.handle("float32", "shared").
  std::string scoped_param, scope;
  void scoped(const std::string& name, const Var& pointer) {
    if (where || !pointer || pointer->pointer_scope.empty() || pointer->pointer_scope == "global") return;
    scoped_param = name;
    scope = pointer->pointer_scope;
    where = &pointer->span;
  }
  void visit_params(const PrimFunc& f) {
    for (size_t i = 0; i < f->params.size(); ++i) {
      const Var& p = f->params[i];
      found(p->dtype, p->span);
      found(p->pointee, p->span);  // T.handle("int4")
      const Buffer& b = i < f->param_buffers.size() ? f->param_buffers[i] : nullptr;
      if (b) scoped(b->name, b->data);
      scoped(p->name, p);
    }
  }
};

// The pointers a parameter, an allocation or a let binds in `f`.
std::set<const VarNode*> bound_pointers(const PrimFunc& f) {
  struct Collector : Visitor {
    std::set<const VarNode*> vars;
    void visit_Allocate(const AllocateNode* op) override {
      vars.insert(op->buffer->data.get());
      Visitor::visit_Allocate(op);
    }
    void visit_AllocateConst(const AllocateConstNode* op) override {
      vars.insert(op->buffer->data.get());
      Visitor::visit_AllocateConst(op);
    }
    void visit_LetStmt(const LetStmtNode* op) override {
      vars.insert(op->var.get());
      Visitor::visit_LetStmt(op);
    }
  } collector;
  for (const Var& p : f->params) collector.vars.insert(p.get());
  for (const Buffer& b : f->param_buffers)
    if (b) collector.vars.insert(b->data.get());
  collector.visit(f->body);
  return collector.vars;
}

std::string why_refused(DataType t) {
  if (t.is_scalable())
    return "the scalable vector type " + t.str() + " (T.vscale() lanes, SVE/RVV): microtir reads and prints it, but ";
  return "the sub-byte type " + t.str() + " (TVM packs two int4 values to a byte): microtir reads and prints it, but ";
}

std::string reason(DataType t) {
  if (t.is_scalable()) return "since its vectors have a constant number of lanes";
  return "since its values and buffer elements are 8 to 64 bits wide";
}

}  // namespace

void refuse_carried_types(const IRModule& m, const std::string& who) {
  for (const auto& [name, f] : m.functions) {
    if (!f) continue;
    const std::set<const VarNode*> bound = bound_pointers(f);
    FindCarried finder;
    finder.bound_pointers = &bound;
    finder.visit_params(f);
    if (!finder.where) finder.visit_func(f);
    if (!finder.where) continue;
    if (!finder.scoped_param.empty())
      user_error(*finder.where, "function '" + name + "': parameter '" + finder.scoped_param + "' is in storage scope \"" +
                                    finder.scope + "\" (GPU memory): microtir reads and prints it, but " + who +
                                    " cannot run it; parameters of CPU and microcontroller functions are in \"global\"");
    if (finder.masked)
      user_error(*finder.where, "function '" + name +
                                    "' uses a vector access with a predicate (A.vload/A.vstore(..., predicate=p), "
                                    "TVM's masked load or store): microtir reads and prints it, but " + who +
                                    " cannot run it; vector accesses here read and write every lane");
    if (finder.unbound)
      user_error(*finder.where,
                 "function '" + name + "': buffer '" + finder.unbound->name +
                     "' has no memory (T.Buffer in a function body without data=, which TVM binds later with "
                     "T.attr([" + finder.unbound->name + ", ...], \"buffer_bind_scope\", ...) or T.realize, before "
                     "StorageFlatten): microtir reads and prints it, but " + who + " cannot run it");
    if (finder.realize)
      user_error(*finder.where,
                 "function '" + name +
                     "' uses T.realize (TVM's BufferRealize, a statement of TIR before "
                     "storage flattening): microtir reads and prints it, but " +
                     who + " cannot run it; run TVM's StorageFlatten (tvm.tir.transform.StorageFlatten) first");
    user_error(*finder.where, "function '" + name + "' uses " + why_refused(finder.type) + who + " cannot run it, " +
                                  reason(finder.type));
  }
}

}  // namespace mtir
