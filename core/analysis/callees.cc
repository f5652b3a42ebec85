#include "analysis/callees.h"

#include "ir/visitor.h"

namespace mtir {

std::set<std::string> callees(const Stmt& body, Builtin call) {
  struct Collector : Visitor {
    Builtin call;
    std::set<std::string> names;
    explicit Collector(Builtin c) : call(c) {}
    void visit_Call(const CallNode* op) override {
      if (op->is(call) && !op->args.empty())
        if (const auto* s = as<StringImmNode>(op->args[0])) names.insert(s->value);
      Visitor::visit_Call(op);
    }
  } collector(call);
  collector.visit(body);
  return collector.names;
}

}  // namespace mtir
