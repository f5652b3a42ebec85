#include "codegen/llvm/native/register_allocator.h"

#include <memory>

#include <llvm/Analysis/LoopInfo.h>
#include <llvm/CodeGen/LiveIntervals.h>
#include <llvm/CodeGen/Passes.h>
#include <llvm/CodeGen/RegAllocPBQP.h>
#include <llvm/CodeGen/RegAllocRegistry.h>
#include <llvm/CodeGen/VirtRegMap.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/IntrinsicInst.h>
#include <llvm/IR/IntrinsicsARM.h>
#include <llvm/IR/Instructions.h>
#include <llvm/Pass.h>

#include "codegen/llvm/native/redundant_reloads.h"
#include "support/diagnostic.h"

namespace mtir::llvm_native {
namespace {

bool is_smlad(const llvm::Value* v) {
  const auto* call = llvm::dyn_cast<llvm::IntrinsicInst>(v);
  return call && call->getIntrinsicID() == llvm::Intrinsic::arm_smlad;
}

// Six accumulators that SMLAD carries around the loop, and at least 48 SMLADs in it.
bool is_long_tile_loop(const llvm::Loop& loop) {
  const llvm::BasicBlock* latch = loop.getLoopLatch();
  if (!latch) return false;
  int accumulators = 0;
  for (const llvm::PHINode& phi : loop.getHeader()->phis())
    accumulators += phi.getType()->isIntegerTy(32) && is_smlad(phi.getIncomingValueForBlock(latch));
  int smlads = 0;
  for (const llvm::BasicBlock* b : loop.blocks())
    for (const llvm::Instruction& i : *b) smlads += is_smlad(&i);
  return accumulators >= 6 && smlads >= 48;
}

// A short tile (schedules short_pairs, pair_records: a 1x1 layer of at most 32 channels):
// the whole reduction in one iteration of the channel loop, so no accumulator is carried;
// six SMLAD chains (3x2) of at least four SMLADs each; the weights and columns read as
// word pairs (LDRD), only the bias and table words as single loads. Its six accumulators,
// four widened weights, a column pair and two pointers fill the 14 registers: greedy spilled
// accumulators (8 to 10 stack accesses an iteration), PBQP none. Tiles that read their
// weights as single words (the first layers' im2col tiles, KWS's 64-channel 1x1 layers:
// eight) lose under PBQP (KWS +255,000 instructions, VWW's layer 0 +169,000).
bool is_short_tile_loop(const llvm::Loop& loop) {
  const llvm::BasicBlock* latch = loop.getLoopLatch();
  if (!latch) return false;
  for (const llvm::PHINode& phi : loop.getHeader()->phis())
    if (is_smlad(phi.getIncomingValueForBlock(latch))) return false;
  int smlads = 0, chain_ends = 0, word_pairs = 0, words = 0;
  for (const llvm::BasicBlock* b : loop.blocks())
    for (const llvm::Instruction& i : *b) {
      if (const auto* load = llvm::dyn_cast<llvm::LoadInst>(&i)) {
        const bool pair = load->isVolatile() && load->getType()->isIntegerTy(64);
        word_pairs += pair;
        words += !pair && load->getType()->isIntegerTy(32);
      }
      if (!is_smlad(&i)) continue;
      ++smlads;
      bool continued = false;
      for (const llvm::User* u : i.users())  // the accumulator of another SMLAD
        continued |= is_smlad(u) && llvm::cast<llvm::CallBase>(u)->getArgOperand(2) == &i;
      chain_ends += !continued;
    }
  return chain_ends == 6 && smlads >= 24 && word_pairs >= 6 && words <= 4;
}

// A legacy pass (code generation is the legacy pass manager's) that runs greedy or PBQP on
// each function. It asks for what either needs; each allocator reads it through a resolver
// of its own that the chooser fills from its own before each function.
class ChoosingRegisterAllocator : public llvm::FunctionPass {
 public:
  static char ID;
  ChoosingRegisterAllocator()
      : llvm::FunctionPass(ID), greedy_(llvm::createGreedyRegisterAllocator()), pbqp_(llvm::createPBQPRegisterAllocator()) {}

  llvm::StringRef getPassName() const override { return "greedy or PBQP register allocator (per function)"; }

  void getAnalysisUsage(llvm::AnalysisUsage& usage) const override {
    llvm::AnalysisUsage greedy, pbqp;
    greedy_->getAnalysisUsage(greedy);
    pbqp_->getAnalysisUsage(pbqp);
    for (const llvm::AnalysisUsage* u : {&greedy, &pbqp}) {
      for (llvm::AnalysisID id : u->getRequiredSet()) usage.addRequiredID(id);  // transitive ones included
      for (llvm::AnalysisID id : u->getUsedSet()) usage.addUsedIfAvailableID(id);
    }
    for (llvm::AnalysisID id : greedy.getPreservedSet())  // preserved by both
      if (pbqp.getPreservesAll() || llvm::is_contained(pbqp.getPreservedSet(), id)) usage.addPreservedID(id);
  }

  bool doInitialization(llvm::Module& m) override {
    for (llvm::FunctionPass* p : {greedy_.get(), pbqp_.get()}) {
      p->setResolver(new llvm::AnalysisResolver(getResolver()->getPMDataManager()));
      p->doInitialization(m);
    }
    return false;
  }

  bool doFinalization(llvm::Module& m) override {
    greedy_->doFinalization(m);
    pbqp_->doFinalization(m);
    return false;
  }

  bool runOnFunction(llvm::Function& f) override {
    const bool use_pbqp = f.getFnAttribute(kRegAllocAttr).getValueAsString() == kRegAllocPbqp;
    llvm::FunctionPass* allocator = use_pbqp ? pbqp_.get() : greedy_.get();
    llvm::AnalysisUsage usage;
    allocator->getAnalysisUsage(usage);
    llvm::AnalysisResolver* own = allocator->getResolver();
    own->clearAnalysisImpls();
    for (llvm::AnalysisID id : usage.getRequiredSet()) own->addAnalysisImplsPair(id, getResolver()->findImplPass(id));
    const bool changed = allocator->runOnFunction(f);
    // Greedy splits live ranges around their uses itself (no reload to remove on VWW).
    if (use_pbqp) remove_redundant_reloads(getAnalysis<llvm::VirtRegMap>(), getAnalysis<llvm::LiveIntervals>());
    return changed;
  }

  void releaseMemory() override {
    greedy_->releaseMemory();
    pbqp_->releaseMemory();
  }

 private:
  std::unique_ptr<llvm::FunctionPass> greedy_, pbqp_;
};

char ChoosingRegisterAllocator::ID = 0;

thread_local RegisterAllocation allocation = RegisterAllocation::kGreedy;

llvm::FunctionPass* create_allocator() {
  switch (allocation) {
    case RegisterAllocation::kGreedy: return llvm::createGreedyRegisterAllocator();
    case RegisterAllocation::kFast: return llvm::createFastRegisterAllocator();
    case RegisterAllocation::kNone: return nullptr;
    case RegisterAllocation::kPerFunction: return new ChoosingRegisterAllocator();
  }
  return nullptr;
}

}  // namespace

llvm::PreservedAnalyses TileRegisterAllocatorPass::run(llvm::Function& f, llvm::FunctionAnalysisManager& fam) {
  for (const llvm::Loop* loop : fam.getResult<llvm::LoopAnalysis>(f).getLoopsInPreorder()) {
    if (loop->isInnermost() && (is_long_tile_loop(*loop) || is_short_tile_loop(*loop))) {
      f.addFnAttr(kRegAllocAttr, kRegAllocPbqp);
      break;
    }
  }
  return llvm::PreservedAnalyses::all();
}

void install_register_allocator() {
  // The registry is a template's static member: check that it is libLLVM's, where the
  // allocators register themselves, not a copy of this program's.
  if (!llvm::RegisterRegAlloc::getList()) internal_error(__FILE__, __LINE__, "LLVM's register allocator registry is empty");
  llvm::RegisterRegAlloc::setDefault(create_allocator);
}

void set_register_allocation(RegisterAllocation a) { allocation = a; }

}  // namespace mtir::llvm_native
