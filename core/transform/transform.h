// Factories of every pass. One pass per file in this folder, named as the factory in
// snake_case (simplify.cc -> Simplify()).
#pragma once

#include "transform/pass.h"

namespace mtir {

// Checks the module (see analysis/well_formed.h) and returns it unchanged, or throws
// the diagnostics.
Pass VerifyWellFormed();
// Constant folding, algebraic identities, dead branches with constant conditions.
Pass Simplify();

}  // namespace mtir
