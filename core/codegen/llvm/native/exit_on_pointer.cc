#include "codegen/llvm/native/exit_on_pointer.h"

#include <cstdint>
#include <cstdlib>

#include <llvm/Analysis/ScalarEvolution.h>
#include <llvm/Analysis/ScalarEvolutionExpressions.h>
#include <llvm/IR/Instructions.h>
#include <llvm/Transforms/Utils/Local.h>
#include <llvm/Transforms/Utils/ScalarEvolutionExpander.h>

namespace mtir::llvm_native {
namespace {

using llvm::dyn_cast;

// The loop's counter: a header phi used only by its own step, whose step is used only by
// the phi and the exit compare (the form LSR leaves: `%c.next = add %c, -1`, exit when 0).
llvm::PHINode* counting_phi(llvm::Loop& loop, llvm::ICmpInst* exit_cmp) {
  llvm::BasicBlock* latch = loop.getLoopLatch();
  for (llvm::PHINode& phi : loop.getHeader()->phis()) {
    if (!phi.getType()->isIntegerTy() || !phi.hasOneUse()) continue;
    auto* step = dyn_cast<llvm::Instruction>(phi.getIncomingValueForBlock(latch));
    if (!step || *phi.user_begin() != step || !step->hasNUses(2)) continue;
    const int at = exit_cmp->getOperand(0) == step ? 0 : exit_cmp->getOperand(1) == step ? 1 : -1;
    if (at < 0 || !loop.isLoopInvariant(exit_cmp->getOperand(1 - at))) continue;
    bool only_phi_and_cmp = true;
    for (llvm::User* u : step->users()) only_phi_and_cmp &= (u == &phi || u == exit_cmp);
    if (only_phi_and_cmp) return &phi;
  }
  return nullptr;
}

struct PointerExit {
  llvm::Instruction* next = nullptr;  // the pointer's value after a step (the phi's latch input)
  const llvm::SCEV* end = nullptr;    // its value after the last step
};

// A pointer the loop steps by a constant, whose value after the last step is the end the
// exit compares with. The steps, trip count times, must stay below 2^31 bytes so no
// earlier step can reach the end. One whose end the enclosing loop does not change is
// preferred: its end is computed once, outside.
PointerExit stepped_pointer(llvm::Loop& loop, llvm::ScalarEvolution& se, llvm::PHINode* counter) {
  const llvm::SCEV* taken = se.getBackedgeTakenCount(&loop);
  const auto* max_taken = dyn_cast<llvm::SCEVConstant>(se.getConstantMaxBackedgeTakenCount(&loop));
  if (llvm::isa<llvm::SCEVCouldNotCompute>(taken) || !max_taken) return {};
  PointerExit best;
  for (llvm::PHINode& phi : loop.getHeader()->phis()) {
    if (&phi == counter || !phi.getType()->isPointerTy()) continue;
    auto* next = dyn_cast<llvm::Instruction>(phi.getIncomingValueForBlock(loop.getLoopLatch()));
    const auto* rec = next ? dyn_cast<llvm::SCEVAddRecExpr>(se.getSCEV(next)) : nullptr;
    if (!rec || rec->getLoop() != &loop || !rec->isAffine()) continue;
    const auto* step = dyn_cast<llvm::SCEVConstant>(rec->getStepRecurrence(se));
    if (!step || step->getValue()->isZero()) continue;
    const uint64_t trips = max_taken->getAPInt().getLimitedValue(UINT32_MAX) + 1;
    const uint64_t bytes = static_cast<uint64_t>(std::llabs(step->getAPInt().getSExtValue()));
    if (bytes >= (1u << 31) || trips * bytes >= (1u << 31)) continue;
    const llvm::SCEV* count = se.getTruncateOrZeroExtend(taken, step->getType());
    const llvm::SCEV* end = se.getAddExpr(rec->getStart(), se.getMulExpr(count, step));
    if (!llvm::isSafeToExpand(end, se)) continue;
    const bool outside = !loop.getParentLoop() || se.isLoopInvariant(end, loop.getParentLoop());
    if (!best.next || outside) best = {next, end};
    if (outside) break;
  }
  return best;
}

}  // namespace

llvm::PreservedAnalyses ExitOnPointerPass::run(llvm::Loop& loop, llvm::LoopAnalysisManager&,
                                               llvm::LoopStandardAnalysisResults& results, llvm::LPMUpdater&) {
  llvm::BasicBlock* latch = loop.getLoopLatch();
  llvm::BasicBlock* preheader = loop.getLoopPreheader();
  if (!loop.isInnermost() || !latch || !preheader || loop.getExitingBlock() != latch)
    return llvm::PreservedAnalyses::all();
  auto* branch = dyn_cast<llvm::BranchInst>(latch->getTerminator());
  auto* cmp = branch && branch->isConditional() ? dyn_cast<llvm::ICmpInst>(branch->getCondition()) : nullptr;
  if (!cmp || !cmp->isEquality() || !cmp->hasOneUse()) return llvm::PreservedAnalyses::all();
  llvm::PHINode* counter = counting_phi(loop, cmp);
  if (!counter) return llvm::PreservedAnalyses::all();
  llvm::ScalarEvolution& se = results.SE;
  PointerExit exit = stepped_pointer(loop, se, counter);
  if (!exit.next) return llvm::PreservedAnalyses::all();
  llvm::SCEVExpander expander(se, preheader->getModule()->getDataLayout(), "mtir.end");
  llvm::Value* end = expander.expandCodeFor(exit.end, exit.next->getType(), preheader->getTerminator());
  se.forgetLoop(&loop);
  // The step may no longer promise to stay in bounds: past the last step it is compared, not used.
  exit.next->dropPoisonGeneratingFlags();
  const bool exits_when_true = !loop.contains(branch->getSuccessor(0));
  auto* reached = new llvm::ICmpInst(branch, exits_when_true ? llvm::ICmpInst::ICMP_EQ : llvm::ICmpInst::ICMP_NE,
                                     exit.next, end, "mtir.reached");
  branch->setCondition(reached);
  cmp->eraseFromParent();
  llvm::RecursivelyDeleteDeadPHINode(counter);
  return llvm::getLoopPassPreservedAnalyses();
}

}  // namespace mtir::llvm_native
