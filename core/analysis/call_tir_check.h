// Checks of call_tir, the calls between PrimFuncs of one module: the callee exists in
// the module, the arity matches, every buffer argument is a compact, contiguous, in-
// bounds region whose dtype and shape match the callee's buffer, scalars go to scalar
// parameters, and no function calls itself, directly or through others. Each error
// names the caller, the callee, the parameter, both sides, and the call's location.
#pragma once

#include <vector>

#include "ir/function.h"

namespace mtir {

std::vector<Diagnostic> check_call_tir(const IRModule& m);

}  // namespace mtir
