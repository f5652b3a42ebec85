#include "ir/scalable_vectors.h"

#include "ir/visitor.h"
#include "support/diagnostic.h"

namespace mtir {

namespace {

// The first expression (in program order) whose type is a scalable vector.
struct FindScalable : Visitor {
  const ExprNode* found = nullptr;
  void visit(const Expr& e) override {
    if (found || !e) return;
    if (e->dtype.is_scalable()) {
      found = e.get();
      return;
    }
    Visitor::visit(e);
  }
  using Visitor::visit;
};

}  // namespace

void refuse_scalable_vectors(const IRModule& m, const std::string& who) {
  for (const auto& [name, f] : m.functions) {
    FindScalable finder;
    if (f) finder.visit_func(f);
    if (!finder.found) continue;
    user_error(finder.found->span, "function '" + name + "' uses the scalable vector type " +
                                       finder.found->dtype.str() + " (T.vscale() lanes, SVE/RVV): microtir reads and "
                                       "prints it, but " + who + " cannot run it, since its vectors have a constant "
                                       "number of lanes");
  }
}

}  // namespace mtir
