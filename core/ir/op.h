// The intrinsics a CallNode may name. One table, used by the parser (arity, result
// type), the verifier (argument types) and the interpreter (what to compute).
#pragma once

#include <string>
#include <vector>

namespace mtir {

struct OpInfo {
  enum class Kind {
    kUnaryMath,   // f(x) -> type of x; floats only unless `int_ok`
    kBinaryMath,  // f(x, y) -> type of x, both the same type
    kIfThenElse,  // if_then_else(cond, a, b): lazy select
    kCallExtern,  // call_extern("dtype", "symbol", args...): an external C function
  };
  const char* name;
  Kind kind;
  bool int_ok;  // also defined on integers (abs)
};

// nullptr for an unknown name.
const OpInfo* lookup_op(const std::string& name);
// Every op, for diagnostics ("did you mean") and documentation.
const std::vector<OpInfo>& all_ops();

}  // namespace mtir
