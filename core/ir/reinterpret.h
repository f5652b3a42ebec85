// The types T.reinterpret (the builtin Reinterpret of ir/builtins.def) accepts, one rule
// for the parser and the verifier.
#pragma once

#include <string>

#include "ir/dtype.h"

namespace mtir {

// Why reinterpret(to, x of type `from`) is refused, or "": the same bits lane by lane,
// each lane a number of 32 or 64 bits (float32x4 <-> int32x4). TVM also reinterprets
// across lane counts (int8x16 <-> int32x4, its total bits equal); that is refused.
std::string reinterpret_refusal(DataType from, DataType to);

}  // namespace mtir
