#include "transform/pointer_signature.h"

#include <algorithm>
#include <unordered_set>

#include "ir/visitor.h"

namespace mtir {
namespace {

// Uses of a tensor handle parameter itself (not its data pointer) in the body.
class HandleUseFinder : public Visitor {
 public:
  explicit HandleUseFinder(const std::unordered_set<const VarNode*>& handles) : handles_(handles) {}
  const VarNode* found = nullptr;

 protected:
  void visit_Var(const VarNode* v) override {
    if (!found && handles_.count(v)) found = v;
  }

 private:
  const std::unordered_set<const VarNode*>& handles_;
};

// The Var objects of a buffer's declaration, by node, so they can be reused as params.
void collect_vars(const Expr& e, std::vector<Var>* out) {
  if (!e) return;
  if (e->kind == ExprKind::Var) {
    Var v = std::static_pointer_cast<const VarNode>(e);
    if (std::find(out->begin(), out->end(), v) == out->end()) out->push_back(v);
    return;
  }
  struct Walk : Visitor {
    std::vector<Var>* out;
    void visit(const Expr& x) override {
      if (x && x->kind == ExprKind::Var) {
        Var v = std::static_pointer_cast<const VarNode>(x);
        if (std::find(out->begin(), out->end(), v) == out->end()) out->push_back(v);
        return;
      }
      Visitor::visit(x);
    }
  } walk;
  walk.out = out;
  walk.visit(e);
}

}  // namespace

PrimFunc to_pointer_signature(const std::string& name, const PrimFunc& f, bool runtime_shapes,
                              std::vector<Var>* extra_params) {
  std::unordered_set<const VarNode*> scalars, handles;
  for (size_t i = 0; i < f->params.size(); ++i) {
    if (!f->param_buffers[i]) scalars.insert(f->params[i].get());
    else if (f->params[i] != f->param_buffers[i]->data) handles.insert(f->params[i].get());
  }
  std::vector<Var> extra;
  for (const Buffer& b : f->param_buffers) {
    if (!b) continue;
    std::vector<Var> vars;
    for (const auto& e : b->shape) collect_vars(e, &vars);
    for (const auto& e : b->strides) collect_vars(e, &vars);
    collect_vars(b->elem_offset, &vars);
    for (const Var& v : vars) {
      if (scalars.count(v.get()) || std::find(extra.begin(), extra.end(), v) != extra.end()) continue;
      if (!runtime_shapes) {
        user_error(b->span, "make_unpacked_api: function '" + name + "' reads '" + v->name +
                                "' from the shape of buffer '" + b->name +
                                "' at run time, which a plain pointer argument cannot carry",
                   {"pass '" + v->name + "' as a scalar parameter, or use the packed API (-unpacked-api=0)"});
      }
      extra.push_back(v);
    }
  }
  if (!runtime_shapes) {
    // A packed call needs the registry, which an unpacked build does not have.
    struct PackedCallFinder : Visitor {
      const CallNode* found = nullptr;
      void visit_Call(const CallNode* op) override {
        if (!found && op->is(Builtin::TvmCallPacked)) found = op;
        Visitor::visit_Call(op);
      }
    } packed;
    packed.visit(f->body);
    if (packed.found) {
      const auto* callee = packed.found->args.empty() ? nullptr : as<StringImmNode>(packed.found->args[0]);
      user_error(packed.found->span, "make_unpacked_api: function '" + name + "' calls '" +
                                         (callee ? callee->value : std::string("?")) +
                                         "' through the packed API (T.tvm_call_packed), which needs -unpacked-api=0");
    }
  }
  HandleUseFinder uses(handles);
  uses.visit(f->body);
  if (uses.found) {
    const std::string pass = runtime_shapes ? "make_packed_api" : "make_unpacked_api";
    std::vector<std::string> notes;
    if (!runtime_shapes) notes.push_back("an unpacked argument is only the data pointer; use the packed API (-unpacked-api=0)");
    user_error(f->span, pass + ": function '" + name + "' uses the tensor handle '" + uses.found->name +
                            "' itself, which its kernel cannot see; use the buffer's elements or its .data instead",
               notes);
  }

  auto out = std::make_shared<PrimFuncNode>(*f);
  Stmt body = f->body;
  for (size_t i = f->params.size(); i-- > 0;) {
    const Buffer& b = f->param_buffers[i];
    if (!b) continue;
    body = DeclBuffer(b, body, b->span);
    out->params[i] = b->data;
    out->param_buffers[i] = nullptr;
  }
  for (const Var& v : extra) {
    out->params.push_back(v);
    out->param_buffers.push_back(nullptr);
  }
  out->body = body;
  out->attrs["calling_conv"] = std::string("unpacked");
  if (extra_params) *extra_params = extra;
  return out;
}

}  // namespace mtir
