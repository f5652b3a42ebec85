// The signature transformation shared by MakeUnpackedAPI and MakePackedAPI (whose
// wrapper calls an unpacked kernel): buffer parameters become their data pointers and
// the body sees each buffer through a T.decl_buffer on that pointer.
#pragma once

#include <string>

#include "ir/function.h"

namespace mtir {

// `runtime_shapes`: variables that only a tensor could supply (a shape bound by
// T.match_buffer) become extra int parameters at the end, in order of first use;
// without it such a function is refused, naming the variable and the buffer.
PrimFunc to_pointer_signature(const std::string& name, const PrimFunc& f, bool runtime_shapes,
                              std::vector<Var>* extra_params = nullptr);

}  // namespace mtir
