// The pass pipeline: the one ordered list of passes, run with a record of the module
// after each pass (for --dump-ir and the playground).
#pragma once

#include <string>
#include <vector>

#include "transform/pass.h"

namespace mtir {

struct PassRecord {
  std::string name;
  bool changed = false;  // not structurally equal to the module before the pass
  IRModule module;       // the module after the pass
};

struct PipelineResult {
  IRModule input;   // the module the first pass got (with the target's module attributes)
  IRModule module;
  std::vector<PassRecord> records;
};

// Every registered pass, in pipeline order.
const std::vector<Pass>& all_passes();
// nullptr if no pass has this name.
const Pass* find_pass(const std::string& name);
// The default lowering pipeline.
std::vector<Pass> default_pipeline();

// What decides which steps of the lowering run.
struct LoweringOptions {
  bool unpacked_api = false;           // make_unpacked_api instead of make_packed_api
  bool hoist_loop_invariants = true;   // off with the target's -disabled-schedules=hoist
  bool scalarize_vectors = true;       // off for a backend that emits vectors itself (LLVM)
  bool keep_simd128 = false;           // keep the stores wasm emits as SIMD128 (scalarize_vectors_simd128)
  bool merge_kernels = true;           // off with the target's -disabled-schedules=merge_kernels
};

// Lowering for the backends: checks, simplification, vectors scalarized, memory planning, flattening,
// unrolling, loop-invariant hoisting, then the calling convention (packed, or unpacked
// pointers), call_tir and builtins lowered, and a final check of the result.
std::vector<Pass> lowering_pipeline(const LoweringOptions& options);
std::vector<Pass> lowering_pipeline(bool unpacked_api, bool hoist_loop_invariants = true,
                                    bool scalarize_vectors = true, bool keep_simd128 = false,
                                    bool merge_kernels = true);

// Runs `passes` in order. Throws DiagnosticError naming the pass that failed.
PipelineResult run_pipeline(const IRModule& m, const std::vector<Pass>& passes);

}  // namespace mtir
