// The live bytes of a graph's intermediates with patch stages run band by band, on
// integer tensor ids (private to executor/patch_stages.cc).
//
// plan_patch_stages evaluates thousands of candidate plans per graph (every start x chain
// x band count, every greedy round). What does not depend on the candidate (which names
// are intermediates, views and their roots, tensor sizes, each node's row bytes) is
// resolved once here, so one evaluation is a walk over the steps with no string, map or
// type look-up. The result is what the name-keyed walk computed before, entry for entry.
#pragma once

#include <cstdint>
#include <vector>

#include "executor/patch_stages.h"
#include "frontend/graph.h"

namespace mtir {

// One tensor's aligned bytes over its inclusive steps.
struct StepSpan {
  int64_t size = 0;
  int first = 0, last = 0;
};

class PatchProfiler {
 public:
  PatchProfiler(const Graph& g, bool overlap);

  // The tensors of the graph with `stages` (and `extra`, when not null, as one more
  // stage), model inputs, outputs, constants and state aside; sizes unaligned.
  std::vector<StepSpan> lifetimes(const std::vector<PatchStage>& stages, const PatchStage* extra = nullptr) const;
  // The live bytes (each tensor aligned) at each step where some tensor starts or ends,
  // highest first: patched_profile.
  std::vector<int64_t> profile(const std::vector<PatchStage>& stages, const PatchStage* extra = nullptr) const;
  // The most bytes live at once: patched_bound.
  int64_t bound(const std::vector<PatchStage>& stages, const PatchStage* extra = nullptr) const;

 private:
  struct NodeUse {
    bool view = false;        // a view of its input's memory: no step of its own
    std::vector<int> inputs;  // root tensor id per input, -1 when not an intermediate
    std::vector<int> fused_inputs;  // the inputs of the node fused into this one (its kernel reads them)
    int output = -1;          // root tensor id of the node's output
    int first_input = -1;     // root tensor id of inputs[0] (a stage's input)
    int64_t row_bytes = 0;    // one row of an NHWC output (patchable convolutions)
    int64_t in_row_bytes = 0; // one row of its NHWC input (patchable convolutions)
  };
  std::vector<NodeUse> nodes_;
  // The nodes in the order build_aot runs them: a node that an elementwise op fuses into
  // runs where that op is (its group's last node), so a residual's other producer runs first.
  std::vector<size_t> order_;
  std::vector<int64_t> sizes_;  // per root tensor id
  bool overlap_ = false;
};

// overlap_shift with the rows' bytes of the stage's input and output given.
int64_t overlap_shift_of_rows(const PatchStage& stage, int64_t in_row_bytes, int64_t out_row_bytes);

}  // namespace mtir
