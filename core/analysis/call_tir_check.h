// Checks of call_tir, the calls between PrimFuncs of one module: the callee exists in
// the module, the arity matches, every buffer argument is a compact, contiguous, in-
// bounds region whose dtype and shape match the callee's buffer, scalars go to scalar
// parameters, and no function calls itself, directly or through others. Each error
// names the caller, the callee, the parameter, both sides, and the call's location.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "ir/function.h"
#include "ir/function_memo.h"

namespace mtir {

// Calls of call_tir and call_global (Module.sub(...)) are checked here; a cycle of
// call_tir is refused here, one of call_global when it is compiled (lower_call_tir):
// the interpreter runs recursion.
// Functions in `no_calls` are known to call no function of the module and are not walked.
std::vector<Diagnostic> check_call_tir(const IRModule& m, const FunctionSet& no_calls);

// Calls between functions: caller -> (callee, call).
using CallEdges = std::map<std::string, std::vector<std::pair<std::string, const CallNode*>>>;
struct CallCycle {
  const CallNode* call;  // the call that closes the cycle
  std::string caller, callee;
  std::string path;  // "f -> g -> f"
};
// Every call of `edges` that closes a cycle, walking from m's functions in order.
std::vector<CallCycle> call_cycles(const CallEdges& edges, const IRModule& m);

}  // namespace mtir
