// A loop pass for after loop strength reduction (LLVM 16's -lsr-term-fold, which LLVM 14
// lacks): an innermost loop whose integer counter does nothing but count its iterations
// exits when a pointer it steps anyway reaches its end instead, and the counter goes.
#pragma once

#include <llvm/Analysis/LoopAnalysisManager.h>
#include <llvm/IR/PassManager.h>
#include <llvm/Transforms/Scalar/LoopPassManager.h>

namespace mtir::llvm_native {

struct ExitOnPointerPass : llvm::PassInfoMixin<ExitOnPointerPass> {
  llvm::PreservedAnalyses run(llvm::Loop& loop, llvm::LoopAnalysisManager& lam,
                              llvm::LoopStandardAnalysisResults& results, llvm::LPMUpdater& updater);
};

}  // namespace mtir::llvm_native
