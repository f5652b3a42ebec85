// ExpandVectorBuffers: a buffer of vector type (TVM's `T.Buffer((4,), "int32x2")`) becomes
// a scalar buffer with one more, innermost, dimension of its lanes, and each access of a
// whole element a slice of that row (ir/vector_buffers.h). First in the lowering, so no
// later pass or backend sees a buffer of vector type.
#include "ir/vector_buffers.h"
#include "transform/transform.h"

namespace mtir {

Pass ExpandVectorBuffers() {
  return MakeFunctionPass("expand_vector_buffers", [](const PrimFunc& f) { return expand_vector_buffers(f); });
}

}  // namespace mtir
