// Whether a kernel may write its output over one of its inputs: the check the memory
// planner makes before it gives an output the bytes of an input (transform/plan_memory.cc).
#pragma once

#include <cstddef>

#include "ir/function.h"

namespace mtir {

// True when `kernel` (destination passing: its last buffer parameter is the output)
// reads input parameter `input` only element by element: the input has the output's
// shape and dtype, the body is a perfect nest of loops from 0 around let statements and
// one store to the output at an index made of the loop variables (each once, so every
// iteration writes its own element), and every read of the input is at the store's
// index, inside those lets or the stored value, so an element is read before the
// iteration that writes it overwrites it and never after. Nothing reads the output.
// Convolutions, pools and reductions fail the check by their shape.
// Or, for kernels that write their output from several stores (a convolution with an
// elementwise consumer fused into it, executor/fuse_elementwise.h): every read of the
// input is in the value of a store to the output at that store's index, nothing reads
// the output, and no element is written twice, which is counted by running the loops
// around the stores at compile time (outputs of up to 2^22 elements). The element a
// store reads is then never overwritten before that store.
bool writes_elementwise_over(const PrimFunc& kernel, size_t input);

}  // namespace mtir
