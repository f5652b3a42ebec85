// The AOT executor: a graph becomes one IRModule holding a PrimFunc per operator and a
// main function that calls them, in topological order, with call_tir. Intermediate
// tensors are allocations of main (the memory planner places them later); model
// inputs, constants (weights) and outputs are main's buffer parameters.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "executor/patch_stages.h"
#include "frontend/graph.h"
#include "ir/function.h"

namespace mtir {

struct AotModule {
  IRModule module;
  std::string main;  // "tvmgen_<model>___tvm_main__"
  // What each parameter of main is, in order: model inputs, constants, state, then
  // outputs. A state (Graph::state) is memory the artifact owns and keeps between runs:
  // never in the workspace, never reused for anything else, written in place by the
  // kernel of the node that reads it (OpDef::writes_inputs).
  enum class Role { kInput, kConstant, kOutput, kState };
  struct Param {
    std::string name;    // the graph's name for it (a TFLite or ONNX name: any text)
    std::string c_name;  // its C identifier: main's buffer, the header's member (unique_c_identifiers)
    Role role;
    TensorType type;
  };
  std::vector<Param> params;
  // Device instances the model uses, sorted: main takes one context (T.handle) for each,
  // after the outputs.
  std::vector<std::string> devices;
  // The function of `module` that computes each graph node (several nodes share a fused
  // kernel), for tools that show a node's kernel.
  std::map<std::string, std::string> kernel_of;
  // Kernels that each compute a band of one node (a patch stage, patch_stages.h), for
  // tools that sum a node's calls: kernel -> node. kernel_of names the first of them.
  std::map<std::string, std::string> band_kernel_of;
  // What the patch planner chose and why (patch_report.h: patch_plan_json); null
  // without patch stages or a workspace budget.
  nlohmann::json patch_plan;
};

struct AotOptions {
  // Fold elementwise consumers (bias add, relu, clip, ...) into their producer's kernel.
  bool fuse_elementwise = true;
  // At most this many ops per fused kernel: a long chain would make one expression as
  // deep as the chain.
  size_t max_fused_ops = 16;
  // Run chains of int8 convolutions band by band where that lowers the memory bound
  // (executor/patch_stages.h); -disabled-schedules=patch turns it off.
  bool patch = true;
  // With patch: stages written beside their dying input (patch_stages.h); -disabled-schedules=patch_overlap.
  bool patch_overlap = true;
  // With patch_overlap: residual stages, the add fused into the last layer (patch_stages.h);
  // -disabled-schedules=patch_residual.
  bool patch_residual = true;
  // With patch_overlap: stages of several layers without a residual add carry their halo
  // rows instead of recomputing them (patch_stages.h); -disabled-schedules=patch_carry.
  bool patch_carry = true;
  // With patch_overlap: a one-layer stage's border rows in bands of their own
  // (patch_stages.h: edge_row_bands); -disabled-schedules=patch_edge_rows.
  bool patch_edge_rows = true;
  // A patch stage's interior bands as one loop over them (band_loops.h);
  // -disabled-schedules=band_loops.
  bool band_loops = true;
  // The share of the model's MACs (percent) that recomputed halos may add.
  int64_t patch_max_recomputed_percent = kMaxRecomputedPercent;
  // The workspace budget in bytes (-workspace-budget; 0: none): the patch stages need only
  // keep the bound within it, and plan_memory refuses a pool over it.
  int64_t workspace_budget = 0;
};

// The input or output that `name` names: the model's own name, or else its C identifier
// (unambiguous: an identifier is never another tensor's name, see unique_c_identifiers).
// Null when none has it.
const AotModule::Param* find_io_param(const AotModule& aot, const std::string& name);

// Throws DiagnosticError naming the node when an operator cannot be built.
AotModule build_aot(const Graph& g, const AotOptions& options = {});

}  // namespace mtir
