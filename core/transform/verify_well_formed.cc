// VerifyWellFormed: a checkpoint in the pipeline. It never rewrites anything; it
// turns the verifier's findings into one error carrying every diagnostic, so the user
// sees all problems at once rather than one per run.
#include "analysis/well_formed.h"
#include "transform/transform.h"

namespace mtir {

Pass VerifyWellFormed() {
  Pass p;
  p.name = "verify_well_formed";
  p.run = [](const IRModule& m) {
    std::vector<Diagnostic> diags = check_well_formed(m);
    if (!diags.empty()) throw DiagnosticError(std::move(diags));
    return m;
  };
  return p;
}

}  // namespace mtir
