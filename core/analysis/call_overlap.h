// Where an AOT main may place a call's output so that it overlaps an input still live:
// the memory planner's overlap candidates (memory/planner.h: OverlapCandidate).
//
// Each step of the main that touches the pair must be a call_tir whose buffer arguments
// are constant regions (tir_region with constant starts, as the patch stages' band calls
// pass rows of a tensor): the output only ever as a call's result, the input never. A
// kernel touches nothing of its buffers outside the regions it gets, so it is enough
// that no call writes a byte of the output region over a byte of the input that it or a
// later call still reads. With the output `shift` bytes below the input that holds when
// every write ends below every later read of the input; above it, when every write
// starts above. Band by band from the top row down (executor/patch_stages.h), the band
// writes of a stage's output trail its band reads, so the output fits a few rows below
// its input; from the bottom up, a few rows above it.
//
// A call may also read the input where it writes the output (a residual stage's conv+add
// on a band's rows, over the residual): `in_place` names, per step, the argument
// positions the callee reads element by element at the index it writes
// (analysis/elementwise_overwrite.h). Such a read does not count against that call's own
// write when it spans exactly the bytes the write does; it holds only with the output
// placed over the input (shift 0), and only that placement is offered. A call may also
// read the output where it writes exactly those bytes (a two-branch residual stage: the
// shortcut's rows in the output, the fused add over them): the input is never written,
// so that read sees what an earlier call wrote to the output at any shift.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "ir/function.h"

namespace mtir {

struct CallOverlap {
  const VarNode* output = nullptr;  // data pointers of the two buffers
  const VarNode* input = nullptr;
  int64_t shift = 0;  // offset(output) - offset(input), bytes, a multiple of the alignment
  int64_t saved = 0;  // bytes the two take less than apart
  // The calls (step, argument position) whose in-place reads the overlap relies on: their
  // callees then write over that parameter (it may alias the output).
  std::vector<std::pair<int, size_t>> in_place;
};

// The overlaps of the tensors in `sizes` (data pointer and bytes, in allocation order)
// over `steps`, with `live` each pointer's first and last step: for each output and each
// input live at its first step, the smaller of the two placements (below or above), when
// it takes fewer bytes than the two apart. Most bytes saved first, then in the order of
// `sizes` (never of pointer values: the result is the same on every run and platform).
std::vector<CallOverlap> call_overlaps(const std::vector<Stmt>& steps,
                                       const std::vector<std::pair<const VarNode*, int64_t>>& sizes,
                                       const std::map<const VarNode*, std::pair<int, int>>& live, int64_t alignment,
                                       const std::vector<std::set<size_t>>& in_place = {});

}  // namespace mtir
