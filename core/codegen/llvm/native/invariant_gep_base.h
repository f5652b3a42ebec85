// A function pass for the functions TileRegisterAllocatorPass marked for PBQP: in a loop
// that holds other loops, addresses p + (a + b) on one pointer p and one varying a, with
// at least two different invariant b (the rows of a tile's outputs), become (p + b) + a,
// each p + b computed once in the loop's preheader.
//
// Why: VWW's 128-channel 1x1 kernel stores each of its three pixels' outputs at out +
// (row offset + 2 * channel pair), the row offsets invariant in the channel loop around
// the tile loop. LLVM 14's LICM does not reassociate the sum, so out, three row offsets
// and the channel offset were all live across the tile loop, which PBQP spills: each
// store reloaded two of them and added twice. With one row, p + b is as live as p and b
// were, and on IC's 3x3 kernels it cost more than it saved: left alone. Innermost loops
// are left to loop strength reduction.
#pragma once

#include <llvm/IR/PassManager.h>

namespace mtir::llvm_native {

struct InvariantGepBasePass : llvm::PassInfoMixin<InvariantGepBasePass> {
  llvm::PreservedAnalyses run(llvm::Function& f, llvm::FunctionAnalysisManager& fam);
};

}  // namespace mtir::llvm_native
