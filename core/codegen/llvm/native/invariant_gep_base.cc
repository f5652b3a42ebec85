#include "codegen/llvm/native/invariant_gep_base.h"

#include <map>
#include <set>
#include <tuple>
#include <vector>

#include <llvm/Analysis/LoopInfo.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Instructions.h>

#include "codegen/llvm/native/register_allocator.h"

namespace mtir::llvm_native {
namespace {

// An address p + (a + b) in a loop with p and b invariant there and a not.
struct RowAddress {
  llvm::GetElementPtrInst* gep;
  llvm::Value *varying, *invariant;
};

bool row_address(llvm::GetElementPtrInst* gep, const llvm::Loop& loop, RowAddress* out) {
  if (!loop.getLoopPreheader() || gep->getNumIndices() != 1 || !loop.isLoopInvariant(gep->getPointerOperand()))
    return false;
  auto* sum = llvm::dyn_cast<llvm::BinaryOperator>(gep->getOperand(1));
  if (!sum || sum->getOpcode() != llvm::Instruction::Add) return false;
  llvm::Value *a = sum->getOperand(0), *b = sum->getOperand(1);
  if (loop.isLoopInvariant(a) == loop.isLoopInvariant(b)) return false;
  if (loop.isLoopInvariant(a)) std::swap(a, b);
  *out = {gep, a, b};
  return true;
}

// (p + b) + a, p + b in the loop's preheader: defined outside the loop and used in it, p
// and b dominate it. Without inbounds: p + b need not lie in the object.
void split(const RowAddress& r, const llvm::Loop& loop) {
  llvm::GetElementPtrInst* gep = r.gep;
  llvm::Value* row = llvm::IRBuilder<>(loop.getLoopPreheader()->getTerminator())
                         .CreateGEP(gep->getSourceElementType(), gep->getPointerOperand(), r.invariant, "row");
  llvm::Value* address = llvm::IRBuilder<>(gep).CreateGEP(gep->getSourceElementType(), row, r.varying);
  address->takeName(gep);
  gep->replaceAllUsesWith(address);
  gep->eraseFromParent();
}

}  // namespace

llvm::PreservedAnalyses InvariantGepBasePass::run(llvm::Function& f, llvm::FunctionAnalysisManager& fam) {
  if (f.getFnAttribute(kRegAllocAttr).getValueAsString() != kRegAllocPbqp) return llvm::PreservedAnalyses::all();
  const llvm::LoopInfo& loops = fam.getResult<llvm::LoopAnalysis>(f);
  // By loop, pointer and varying part: the addresses and their distinct invariant parts.
  using Key = std::tuple<const llvm::Loop*, llvm::Value*, llvm::Value*>;
  std::map<Key, std::pair<std::vector<RowAddress>, std::set<llvm::Value*>>> groups;
  for (llvm::BasicBlock& block : f) {
    const llvm::Loop* loop = loops.getLoopFor(&block);
    if (!loop || loop->isInnermost()) continue;
    for (llvm::Instruction& i : block) {
      RowAddress r;
      auto* gep = llvm::dyn_cast<llvm::GetElementPtrInst>(&i);
      if (!gep || !row_address(gep, *loop, &r)) continue;
      auto& g = groups[Key{loop, gep->getPointerOperand(), r.varying}];
      g.first.push_back(r);
      g.second.insert(r.invariant);
    }
  }
  bool changed = false;
  for (auto& [key, g] : groups) {
    if (g.second.size() < 2) continue;  // one row: p + b as live as p and b were (IC: +32,733)
    for (const RowAddress& r : g.first) split(r, *std::get<0>(key));
    changed = true;
  }
  if (!changed) return llvm::PreservedAnalyses::all();
  llvm::PreservedAnalyses kept;
  kept.preserveSet<llvm::CFGAnalyses>();
  return kept;
}

}  // namespace mtir::llvm_native
