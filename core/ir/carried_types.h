// Types microtir reads and prints but does not run: TVM's scalable vectors (SVE/RVV,
// T.Ramp(0, 1, T.vscale() * 4), "float32xvscalex4") and sub-byte integers ("int4",
// "uint4", "int4x8"), which TVM packs two to a byte in buffers. The interpreter and every
// backend refuse the first use with one message, located: microtir's vectors have a
// constant number of lanes, and its values and buffer elements are 8 to 64 bits wide.
// TVM's T.realize (BufferRealize, TIR before StorageFlatten) is carried the same way, and
// so are a `T.Buffer(...)` in a body without data= (memory bound later, before
// StorageFlatten), masked vector accesses (A.vload/A.vstore with predicate=) and
// parameters in a GPU storage scope (scope="shared").
#pragma once

#include <string>

#include "ir/function.h"

namespace mtir {

// int4 and uint4 ("int4x8" too): TVM packs them two to a byte in buffers.
inline bool is_sub_byte(DataType t) { return t.is_integer() && t.bits() < 8; }

// A user error at the first use of a carried type or form in `m` (a parameter, a buffer,
// an expression, a statement), naming `who` ("the interpreter", "the backends"); nothing when none is.
void refuse_carried_types(const IRModule& m, const std::string& who);

}  // namespace mtir
