// The types T.reinterpret (the builtin Reinterpret of ir/builtins.def) accepts, one rule
// for the parser and the verifier.
#pragma once

#include <string>

#include "ir/expr.h"

namespace mtir {

// Why reinterpret(to, x) is refused, or "": the same bits lane by lane, each lane a
// number of 32 or 64 bits (float32x4 <-> int32x4), or TVM's null pointer,
// T.reinterpret("handle", T.uint64(0)). TVM also reinterprets across lane counts
// (int8x16 <-> int32x4, its total bits equal) and other integers to handles; those are
// refused.
std::string reinterpret_refusal(const Expr& x, DataType to);

}  // namespace mtir
