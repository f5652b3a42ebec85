#include "codegen/llvm/native/redundant_reloads.h"

#include <map>

#include <llvm/CodeGen/LiveIntervals.h>
#include <llvm/CodeGen/MachineFrameInfo.h>
#include <llvm/CodeGen/MachineFunction.h>
#include <llvm/CodeGen/MachineInstrBuilder.h>
#include <llvm/CodeGen/MachineRegisterInfo.h>
#include <llvm/CodeGen/TargetInstrInfo.h>
#include <llvm/CodeGen/TargetRegisterInfo.h>
#include <llvm/CodeGen/TargetSubtargetInfo.h>
#include <llvm/CodeGen/VirtRegMap.h>

namespace mtir::llvm_native {
namespace {

// The virtual register a plain (unpredicated, whole-register) spill or reload of a spill
// slot stores or loads, and the slot; no register for any other instruction.
llvm::Register spill_access(const llvm::MachineInstr& mi, bool load, int* slot) {
  const llvm::MachineFunction& mf = *mi.getMF();
  const llvm::TargetInstrInfo& tii = *mf.getSubtarget().getInstrInfo();
  const llvm::Register r = load ? tii.isLoadFromStackSlot(mi, *slot) : tii.isStoreToStackSlot(mi, *slot);
  const llvm::MachineFrameInfo& frame = mf.getFrameInfo();
  if (!r.isVirtual() || tii.isPredicated(mi)) return {};
  if (!frame.isSpillSlotObjectIndex(*slot) && !(load && frame.isImmutableObjectIndex(*slot))) return {};
  for (const llvm::MachineOperand& mo : mi.operands())
    if (mo.isReg() && mo.getReg() == r && mo.getSubReg() != 0) return {};
  return r;
}

// Which virtual register's value each spill slot holds in that register's physical
// register, within one block.
class SlotHolders {
 public:
  SlotHolders(const llvm::VirtRegMap& vrm, const llvm::TargetRegisterInfo& tri) : vrm_(vrm), tri_(tri) {}

  void clear() { held_.clear(); }
  llvm::Register holder(int slot) const {
    auto it = held_.find(slot);
    return it == held_.end() ? llvm::Register() : it->second;
  }
  void set(int slot, llvm::Register r) {
    if (vrm_.hasPhys(r)) held_[slot] = r;
  }
  // Forgets the slots `mi` reads or writes other than as a spill or reload, and the
  // holders whose physical register it writes.
  void forget(const llvm::MachineInstr& mi) {
    for (const llvm::MachineOperand& mo : mi.operands()) {
      if (mo.isFI()) held_.erase(mo.getIndex());
      for (auto it = held_.begin(); it != held_.end();) {
        const llvm::MCRegister p = vrm_.getPhys(it->second);
        it = writes(mo, p) ? held_.erase(it) : std::next(it);
      }
    }
  }

 private:
  bool writes(const llvm::MachineOperand& mo, llvm::MCRegister p) const {
    if (mo.isRegMask()) return mo.clobbersPhysReg(p);
    if (!mo.isReg() || !mo.isDef() || !mo.getReg()) return false;
    const llvm::Register d = mo.getReg();
    const llvm::MCRegister dp = d.isVirtual() ? vrm_.getPhys(d) : d.asMCReg();
    return dp == llvm::VirtRegMap::NO_PHYS_REG || tri_.regsOverlap(dp, p);
  }

  const llvm::VirtRegMap& vrm_;
  const llvm::TargetRegisterInfo& tri_;
  std::map<int, llvm::Register> held_;
};

// `reload` becomes `dst = COPY holder` (both in one physical register), the holder live
// up to it.
llvm::MachineInstr& copy_instead(llvm::MachineInstr& reload, llvm::Register dst, llvm::Register holder, llvm::LiveIntervals& lis) {
  llvm::MachineBasicBlock& mbb = *reload.getParent();
  const llvm::TargetInstrInfo& tii = *mbb.getParent()->getSubtarget().getInstrInfo();
  llvm::MachineInstr* copy =
      llvm::BuildMI(mbb, reload, reload.getDebugLoc(), tii.get(llvm::TargetOpcode::COPY), dst).addReg(holder);
  const llvm::SlotIndex at = lis.ReplaceMachineInstrInMaps(reload, *copy);
  reload.eraseFromParent();
  // The spill store killed the holder; the rewriter adds the kill where it now ends.
  for (llvm::MachineOperand& use : mbb.getParent()->getRegInfo().use_nodbg_operands(holder)) use.setIsKill(false);
  lis.extendToIndices(lis.getInterval(holder), {at.getRegSlot()});
  return *copy;
}

}  // namespace

int remove_redundant_reloads(llvm::VirtRegMap& vrm, llvm::LiveIntervals& lis) {
  llvm::MachineFunction& mf = vrm.getMachineFunction();
  SlotHolders held(vrm, *mf.getSubtarget().getRegisterInfo());
  int removed = 0;
  for (llvm::MachineBasicBlock& mbb : mf) {
    held.clear();
    for (llvm::MachineInstr& mi : llvm::make_early_inc_range(mbb)) {
      if (mi.isDebugInstr()) continue;
      int slot = 0;
      if (const llvm::Register r = spill_access(mi, /*load=*/false, &slot)) {
        held.forget(mi);
        held.set(slot, r);
        continue;
      }
      const llvm::Register r = spill_access(mi, /*load=*/true, &slot);
      const llvm::Register holder = r ? held.holder(slot) : llvm::Register();
      if (holder && vrm.hasPhys(r) && vrm.getPhys(holder) == vrm.getPhys(r) && !lis.getInterval(holder).hasSubRanges()) {
        held.forget(copy_instead(mi, r, holder, lis));
        held.set(slot, r);  // a later reload extends the copy, whose live range begins here
        ++removed;
        continue;
      }
      held.forget(mi);
      if (r) held.set(slot, r);
    }
  }
  return removed;
}

}  // namespace mtir::llvm_native
