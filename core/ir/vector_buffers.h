// Buffers of vector type (TVM's `T.Buffer((4,), "int32x2")`): an element is a whole
// vector, stored as its lanes side by side. Everything that runs a program sees them as
// scalar buffers with one more, innermost, dimension of the lanes: `A[i]` of an int32x2
// buffer is `A[i, 0:2]` of an int32 buffer of shape (4, 2). The text format keeps the
// vector type; the interpreter and the lowering (pass expand_vector_buffers) expand it.
#pragma once

#include "ir/function.h"

namespace mtir {

// `f` with every buffer of vector type made scalar, or `f` itself when it has none.
PrimFunc expand_vector_buffers(const PrimFunc& f);
// The same for every function of `m`.
IRModule expand_vector_buffers(const IRModule& m);

}  // namespace mtir
