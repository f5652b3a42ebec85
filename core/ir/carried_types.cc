#include "ir/carried_types.h"

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
  void visit_params(const PrimFunc& f) {
    for (const Var& p : f->params) {
      found(p->dtype, p->span);
      found(p->pointee, p->span);  // T.handle("int4")
    }
  }
};

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
    FindCarried finder;
    finder.visit_params(f);
    if (!finder.where) finder.visit_func(f);
    if (!finder.where) continue;
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
