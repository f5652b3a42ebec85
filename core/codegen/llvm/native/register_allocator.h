// The register allocator, chosen per function. LLVM's greedy allocator keeps one
// accumulator of a 3x2 SMLAD tile's loop in a stack slot that rotates through the unrolled
// steps (a load and a store every two SMLADs); PBQP allocates that loop as GCC does, but is
// worse on the rest of the kernels. LLVM chooses the allocator per process (-regalloc), so
// the choice is a function attribute that one allocator pass reads.
#pragma once

#include <llvm/IR/PassManager.h>

namespace llvm {
class Function;
}

namespace mtir::llvm_native {

// The attribute and value that give a function the PBQP allocator.
inline constexpr const char* kRegAllocAttr = "mtir-regalloc";
inline constexpr const char* kRegAllocPbqp = "pbqp";

// On Arm DSP cores: marks each function with an innermost loop of a 3x2 SMLAD tile (six
// accumulators carried by SMLAD around the loop) of at least four reduction steps (48
// SMLADs) for PBQP. A shorter tile (KWS's first layer, two and a half steps) allocates
// without spills under greedy, and PBQP spills more elsewhere. Also a short tile's channel
// loop (the whole 3x2 reduction in one iteration, weights and columns as word pairs:
// register_allocator.cc says which).
struct TileRegisterAllocatorPass : llvm::PassInfoMixin<TileRegisterAllocatorPass> {
  llvm::PreservedAnalyses run(llvm::Function& f, llvm::FunctionAnalysisManager& fam);
};

// How the code generation pipelines a thread builds allocate registers: as the targets do
// by default (greedy; the fast allocator at -O0; none on WebAssembly), or per function.
enum class RegisterAllocation { kGreedy, kFast, kNone, kPerFunction };

// Installs the allocator that follows set_register_allocation as LLVM's default (once, before
// any code generation; LLVM reads the default as it builds a code generation pipeline).
void install_register_allocator();
// For the pipelines this thread builds from now on.
void set_register_allocation(RegisterAllocation allocation);

}  // namespace mtir::llvm_native
