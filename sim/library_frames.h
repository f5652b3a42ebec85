// The frames of the library functions a firmware's call graph reaches (the C library,
// libm, libgcc's helpers: prebuilt, so GCC's .ci files only declare them), read from the
// linked firmware's disassembly (`objdump -d -t`). Every stack-pointer decrement in a
// function's body is summed, an upper bound of its frame; direct calls and branches to
// another function become call edges. A call or tail branch through a register, or a
// decrement by a register, is recorded as GCC would (an indirect call, a dynamic
// frame), so no bound is claimed through it. Functions absent from the firmware (the
// host's shared C library) stay without data: listed, not counted.
#pragma once

#include <string>

#include "sim/stack_bound.h"

namespace mtir::sim {

enum class DisassemblyArch { kThumb, kRiscv };

// Fills in `graph`'s library functions (declared only, is_library_declaration) and the
// library functions they reach from `disassembly`.
void add_library_frames(CallGraph& graph, const std::string& disassembly, DisassemblyArch arch);

}  // namespace mtir::sim
