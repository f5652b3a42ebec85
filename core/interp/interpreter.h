// The reference TIR interpreter: the oracle every generated artifact is compared with.
// It favours being obviously correct over speed: C semantics for integer wrap-around
// and truncating division, TIR semantics for floordiv/floormod, IEEE floats, and a
// bounds check on every buffer access that reports buffer, index and source location.
// The exact scalar rules (wrap-around, division, float rounding per type, casts,
// intrinsics, min/max with NaN) are spelled out in interp/scalar.h. Further checks
// C would not make: reading an element of an Allocate'd buffer before writing it, a
// float -> int cast out of the target's range, division by zero, and a step limit.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "ir/function.h"
#include "support/ndarray.h"

namespace mtir {

// One argument per PrimFunc parameter: a host tensor for a buffer parameter, an
// integer or float for a scalar parameter.
using InterpArg = std::variant<NDArray*, int64_t, double>;

struct InterpOptions {
  // Statements executed before giving up, so a huge loop is an error and not a hang.
  int64_t max_steps = int64_t{1} << 32;
  // Host implementations of call_extern symbols, for tests and tools. Arguments arrive
  // as doubles (integers converted); the result is cast to the call's type. A symbol
  // not listed here is an error: the interpreter cannot call into C.
  std::map<std::string, std::function<double(const std::vector<double>&)>> extern_functions;
  // Largest allocation (in bytes) an Allocate may make before it is reported.
  int64_t max_alloc_bytes = int64_t{1} << 30;
  // Walk the IR tree instead of running the compiled form (interp/compiled.h), which
  // computes the same; tests compare the two. MICROTIR_INTERP_TREE_WALK=1 sets it too.
  bool tree_walk = false;
};

// Runs `func_name` of `mod` on `args` in place. Throws DiagnosticError on a user-level
// fault (out-of-bounds access, failed assert, wrong argument shape or count, division
// by zero, step limit). A function with a return type (-> T.int32, `return x` or
// T.ret(x)) gives back the value it returned; others give nullopt.
std::optional<int64_t> interpret(const IRModule& mod, const std::string& func_name,
                                 const std::vector<InterpArg>& args, const InterpOptions& options = {});

}  // namespace mtir
