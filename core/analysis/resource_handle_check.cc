#include "analysis/resource_handle_check.h"

#include <set>

#include "ir/visitor.h"
#include "ir/attrs.h"

namespace mtir {
namespace {

bool is_device_call(const CallNode* call) { return call->is(Builtin::CallExtern) && call->attrs.count(kResourceHandleAttr); }

std::string callee_name(const CallNode* call) {
  const auto* s = call->args.empty() ? nullptr : as<StringImmNode>(call->args[0]);
  return s ? s->value : "?";
}

class Checker : public Visitor {
 public:
  Checker(const std::string& fname, const PrimFunc& f, std::vector<Diagnostic>* diags) : fname_(fname), diags_(diags) {
    for (size_t i = 0; i < f->params.size(); ++i)
      if (!f->param_buffers[i] && f->params[i]->dtype.is_handle()) handle_params_.insert(f->params[i].get());
  }

  // Pass 1: the contexts are what marked calls pass last.
  void collect(const Stmt& body) {
    struct Collector : Visitor {
      std::set<const VarNode*>* contexts;
      void visit_Call(const CallNode* op) override {
        if (is_device_call(op) && op->args.size() > 1)
          if (auto* v = as<VarNode>(op->args.back())) contexts->insert(v);
        Visitor::visit_Call(op);
      }
    } c;
    c.contexts = &contexts_;
    c.visit(body);
  }

 protected:
  void visit_Call(const CallNode* op) override {
    const bool marked = is_device_call(op);
    if (marked) {
      const auto* last = op->args.size() > 1 ? as<VarNode>(op->args.back()) : nullptr;
      if (!last || !handle_params_.count(last)) {
        error(op->span, "device call '" + callee_name(op) + "' in '" + fname_ +
                            "' has no resource handle as its last argument (it must be a T.handle parameter of '" +
                            fname_ + "', the device's context)");
      }
    }
    for (size_t i = 0; i < op->args.size(); ++i) {
      const auto* v = as<VarNode>(op->args[i]);
      if (v && contexts_.count(v)) {
        if (!marked) {
          error(op->span, "'" + fname_ + "' passes the device context '" + v->name + "' to '" +
                              (op->is(Builtin::CallExtern) ? callee_name(op) : op->op) +
                              "', which is not marked as a device call (attribute \"" + kResourceHandleAttr + "\")");
        } else if (i + 1 != op->args.size()) {
          error(op->span, "device call '" + callee_name(op) + "' in '" + fname_ + "' passes the device context '" +
                              v->name + "' as argument " + std::to_string(i - 1) + " of " +
                              std::to_string(op->args.size() - 1) +
                              "; the resource handle must be the last argument");
        }
        continue;
      }
      visit(op->args[i]);
    }
  }
  void visit_Var(const VarNode* op) override {
    if (contexts_.count(op))
      error(Span{}, "'" + fname_ + "' uses the device context '" + op->name +
                        "' outside a device call; it may only be passed on as a resource handle");
  }

 private:
  void error(const Span& at, std::string message) {
    Diagnostic d;
    d.span = at;
    d.message = std::move(message);
    diags_->push_back(std::move(d));
  }

  std::string fname_;
  std::vector<Diagnostic>* diags_;
  std::set<const VarNode*> handle_params_, contexts_;
};

}  // namespace

void check_resource_handles(const std::string& name, const PrimFunc& f, std::vector<Diagnostic>* diags) {
  if (!f || !f->body) return;
  Checker c(name, f, diags);
  c.collect(f->body);
  c.visit(f->body);
}

}  // namespace mtir
