// Whether a kernel reads one of its inputs wholly before it touches its output: then that
// input may lie anywhere in the output's bytes when it dies at the call (the memory
// planner's placement of an intermediate in a model output buffer, transform/plan_memory.cc).
#pragma once

#include <cstddef>

#include "ir/function.h"

namespace mtir {

// True when `kernel` (destination passing: its last buffer parameter is the output)
// touches input parameter `input` only in statements that run before the first statement
// touching the output: the body's top-level sequence (through its declarations,
// allocations and lets) splits into a part that may read the input and a part that may
// touch the output, in that order. A dense layer that gathers its row into a local
// column before its products passes; a loop that reads and writes in one body does not.
// A pointer taken from either buffer in a let counts as that buffer.
bool reads_before_writing(const PrimFunc& kernel, size_t input);

}  // namespace mtir
