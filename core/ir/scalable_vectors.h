// TVM's scalable vectors (SVE/RVV): T.Ramp(0, 1, T.vscale() * 4), types such as
// "float32xvscalex4". microtir reads and prints them; the interpreter and every backend
// refuse the first one with this one message, since microtir's vectors have a constant
// number of lanes.
#pragma once

#include <string>

#include "ir/function.h"

namespace mtir {

// A user error at the first expression of a scalable vector type in `m`, naming `who`
// ("the interpreter", "the backends"); nothing when there is none.
void refuse_scalable_vectors(const IRModule& m, const std::string& who);

}  // namespace mtir
