// MakeUnpackedAPI: the signature transformation of the unpacked calling convention.
// Each buffer parameter becomes its data pointer (`int32_t f(float* A, float* B)` in C)
// and the body sees the buffer through a `T.decl_buffer` on that pointer. A pointer
// carries nothing but an address, so a function that needs anything else from its
// buffer argument at run time (a shape, stride or offset not known at compile time
// and not given as a scalar parameter) is refused, naming that use.
#include <unordered_set>

#include "ir/visitor.h"
#include "transform/transform.h"

namespace mtir {
namespace {

// Variables in a buffer's declaration that only the caller's tensor could supply.
class RuntimeFieldFinder : public Visitor {
 public:
  explicit RuntimeFieldFinder(const std::unordered_set<const VarNode*>& scalars) : scalars_(scalars) {}
  const VarNode* found = nullptr;

 protected:
  void visit_Var(const VarNode* v) override {
    if (!found && !scalars_.count(v)) found = v;
  }

 private:
  const std::unordered_set<const VarNode*>& scalars_;
};

// Uses of a buffer parameter's handle itself (not its data pointer) in the body.
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

PrimFunc make_unpacked(const std::string& name, const PrimFunc& f) {
  std::unordered_set<const VarNode*> scalars, handles;
  for (size_t i = 0; i < f->params.size(); ++i) {
    if (!f->param_buffers[i]) scalars.insert(f->params[i].get());
    else if (f->params[i] != f->param_buffers[i]->data) handles.insert(f->params[i].get());
  }
  bool any_buffer = false;
  for (const Buffer& b : f->param_buffers) {
    if (!b) continue;
    any_buffer = true;
    RuntimeFieldFinder finder(scalars);
    for (const auto& e : b->shape) finder.visit(e);
    for (const auto& e : b->strides) finder.visit(e);
    finder.visit(b->elem_offset);
    if (finder.found) {
      user_error(b->span, "make_unpacked_api: function '" + name + "' reads '" + finder.found->name +
                              "' from the shape of buffer '" + b->name +
                              "' at run time, which a plain pointer argument cannot carry",
                 {"pass '" + finder.found->name + "' as a scalar parameter, or use the packed API (-unpacked-api=0)"});
    }
  }
  HandleUseFinder uses(handles);
  uses.visit(f->body);
  if (uses.found) {
    user_error(f->span, "make_unpacked_api: function '" + name + "' uses the tensor handle '" + uses.found->name +
                            "' itself, not only its data pointer",
               {"an unpacked argument is only the data pointer; use the packed API (-unpacked-api=0)"});
  }
  if (!any_buffer) return f;

  auto out = std::make_shared<PrimFuncNode>(*f);
  Stmt body = f->body;
  for (size_t i = f->params.size(); i-- > 0;) {
    const Buffer& b = f->param_buffers[i];
    if (!b) continue;
    body = DeclBuffer(b, body, b->span);
    out->params[i] = b->data;
    out->param_buffers[i] = nullptr;
  }
  out->body = body;
  out->attrs["calling_conv"] = std::string("unpacked");
  return out;
}

}  // namespace

Pass MakeUnpackedAPI() {
  Pass p;
  p.name = "make_unpacked_api";
  p.run = [](const IRModule& m) {
    IRModule out = m;
    for (auto& [name, f] : out.functions) f = make_unpacked(name, f);
    return out;
  };
  return p;
}

}  // namespace mtir
