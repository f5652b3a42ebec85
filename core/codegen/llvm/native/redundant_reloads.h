// After register allocation, before the virtual registers are rewritten: a reload from a
// spill slot into the physical register that still holds the slot's value (stored from it
// or loaded into it earlier in the block, the register not written since) becomes a copy
// of the register into itself, which the rewriter deletes.
//
// Why: PBQP (register_allocator.h) does not split live ranges. A value it spills gets a
// store after its definition and a reload before each use, so the requantization after a
// 3x2 SMLAD tile's loop stored a value and loaded it back at once, or loaded the same slot
// twice into one register (VWW's 128-channel pointwise kernel: seven an output channel pair).
#pragma once

namespace llvm {
class LiveIntervals;
class VirtRegMap;
}  // namespace llvm

namespace mtir::llvm_native {

// The number of reloads removed from the function `vrm` holds the assignment of.
int remove_redundant_reloads(llvm::VirtRegMap& vrm, llvm::LiveIntervals& lis);

}  // namespace mtir::llvm_native
