// Well-formedness: every variable defined before use, operand types that agree,
// stores and loads with the buffer's index arity, stores only to buffers, loop bounds
// of integer type, unique function names. Each problem is a diagnostic with a span.
#pragma once

#include <vector>

#include "ir/function.h"

namespace mtir {

std::vector<Diagnostic> check_well_formed(const IRModule& m);

// How many function bodies check_well_formed has walked in this process: a function
// found well-formed once is not walked again (tests check that).
size_t well_formed_functions_walked();

}  // namespace mtir
