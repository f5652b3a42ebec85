#include "driver/pipeline.h"

#include "ir/structural_equal.h"
#include "support/timing.h"
#include "transform/transform.h"

namespace mtir {
namespace {

// THE pipeline: every step of the lowering, in order, with the condition under which it
// runs. A new pass is one line here (plus its factory in transform/transform.h); the
// registry (all_passes, for --passes and the docs) is this table's passes by first
// appearance, and `in_default` marks what default_pipeline() runs.
struct PipelineStep {
  Pass (*factory)();
  bool (*runs)(const LoweringOptions&);
  bool in_default;
};

bool always(const LoweringOptions&) { return true; }
bool packed(const LoweringOptions& o) { return !o.unpacked_api; }
bool unpacked(const LoweringOptions& o) { return o.unpacked_api; }
bool hoisting(const LoweringOptions& o) { return o.hoist_loop_invariants; }
bool merging_kernels(const LoweringOptions& o) { return o.unpacked_api && o.merge_kernels; }
bool scalarizing_all(const LoweringOptions& o) { return o.scalarize_vectors && !o.keep_simd128; }
bool scalarizing_but_simd128(const LoweringOptions& o) { return o.scalarize_vectors && o.keep_simd128; }

const PipelineStep kPipeline[] = {
    {VerifyWellFormed, always, true},
    {ExpandVectorBuffers, always, false},
    {LowerTvmIntrinsics, always, false},
    {LowerAllocateConst, always, false},
    {Simplify, always, true},
    {ScalarizeVectors, scalarizing_all, false},
    {ScalarizeVectorsSimd128, scalarizing_but_simd128, false},
    {PlanMemory, always, false},
    {FlattenBuffer, always, false},
    {UnrollLoops, always, false},
    {Simplify, always, false},  // folds the index arithmetic flattening and unrolling leave
    {HoistLoopInvariants, hoisting, false},
    {MakePackedAPI, packed, false},
    {MakeUnpackedAPI, unpacked, false},
    {LowerCallTIR, always, false},
    {LowerBuiltins, always, false},
    {MergeKernels, merging_kernels, false},
    {VerifyWellFormed, always, false},
};

// Cheap first: a function pass that changed nothing hands back the same function
// objects, so identical pointers settle most comparisons without walking the IR.
bool same_module(const IRModule& a, const IRModule& b) {
  if (a.name != b.name || a.attrs != b.attrs || a.functions.size() != b.functions.size()) return false;
  bool all_identical = true;
  for (size_t i = 0; i < a.functions.size(); ++i) {
    if (a.functions[i].first != b.functions[i].first) return false;
    if (a.functions[i].second != b.functions[i].second) all_identical = false;
  }
  return all_identical || structural_equal(a, b);
}

}  // namespace

const std::vector<Pass>& all_passes() {
  static const std::vector<Pass> passes = [] {
    std::vector<Pass> v;
    for (const auto& step : kPipeline) {
      Pass p = step.factory();
      bool seen = false;
      for (const auto& q : v) seen = seen || q.name == p.name;
      if (!seen) v.push_back(std::move(p));
    }
    return v;
  }();
  return passes;
}

const Pass* find_pass(const std::string& name) {
  for (const auto& p : all_passes())
    if (p.name == name) return &p;
  return nullptr;
}

std::vector<Pass> default_pipeline() {
  std::vector<Pass> v;
  for (const auto& step : kPipeline)
    if (step.in_default) v.push_back(step.factory());
  return v;
}

std::vector<Pass> lowering_pipeline(const LoweringOptions& options) {
  std::vector<Pass> v;
  for (const auto& step : kPipeline)
    if (step.runs(options)) v.push_back(step.factory());
  return v;
}

std::vector<Pass> lowering_pipeline(bool unpacked_api, bool hoist_loop_invariants, bool scalarize_vectors,
                                    bool keep_simd128, bool merge_kernels) {
  return lowering_pipeline(
      LoweringOptions{unpacked_api, hoist_loop_invariants, scalarize_vectors, keep_simd128, merge_kernels});
}

PipelineResult run_pipeline(const IRModule& m, const std::vector<Pass>& passes) {
  PipelineResult result;
  result.input = m;
  result.module = m;
  for (const auto& pass : passes) {
    TimingScope timing("pass", pass.name);
    IRModule after;
    try {
      after = pass.run(result.module);
    } catch (const DiagnosticError& e) {
      // Name the pass so a failure deep in the pipeline can be traced back to it.
      std::vector<Diagnostic> diags = e.diagnostics();
      if (diags.empty()) {
        Diagnostic d;
        d.message = "pass failed";
        diags.push_back(std::move(d));
      }
      diags.front().notes.push_back("in pass '" + pass.name + "'");
      throw DiagnosticError(std::move(diags));
    }
    PassRecord rec;
    rec.name = pass.name;
    rec.changed = !same_module(result.module, after);
    rec.module = after;
    result.records.push_back(std::move(rec));
    result.module = std::move(after);
  }
  return result;
}

}  // namespace mtir
