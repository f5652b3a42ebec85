#include "driver/pipeline.h"

#include "ir/structural_equal.h"
#include "transform/transform.h"

namespace mtir {
namespace {

// THE pass table, in pipeline order. A new pass is one line here (plus its factory in
// transform/transform.h); `in_default` says whether `default_pipeline()` runs it.
struct PassEntry {
  Pass (*factory)();
  bool in_default;
};

const PassEntry kPassTable[] = {
    {VerifyWellFormed, true},
    {Simplify, true},
    {ScalarizeVectors, false},
    {ScalarizeVectorsSimd128, false},
    {PlanMemory, false},
    {FlattenBuffer, false},
    {UnrollLoops, false},
    {HoistLoopInvariants, false},
    {MakePackedAPI, false},
    {MakeUnpackedAPI, false},
    {LowerCallTIR, false},
    {LowerBuiltins, false},
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
    for (const auto& entry : kPassTable) v.push_back(entry.factory());
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
  const auto& passes = all_passes();
  for (size_t i = 0; i < passes.size(); ++i)
    if (kPassTable[i].in_default) v.push_back(passes[i]);
  return v;
}

std::vector<Pass> lowering_pipeline(bool unpacked_api, bool hoist_loop_invariants, bool scalarize_vectors,
                                    bool keep_simd128) {
  std::vector<std::string> names = {"verify_well_formed", "simplify"};
  if (scalarize_vectors) names.push_back(keep_simd128 ? "scalarize_vectors_simd128" : "scalarize_vectors");
  for (const char* n : {"plan_memory", "flatten_buffer", "unroll_loops", "simplify"}) names.push_back(n);
  if (hoist_loop_invariants) names.push_back("hoist_loop_invariants");
  for (const char* n : {unpacked_api ? "make_unpacked_api" : "make_packed_api", "lower_call_tir", "lower_builtins",
                        "verify_well_formed"})
    names.push_back(n);
  std::vector<Pass> v;
  for (const auto& n : names) v.push_back(*find_pass(n));
  return v;
}

PipelineResult run_pipeline(const IRModule& m, const std::vector<Pass>& passes) {
  PipelineResult result;
  result.input = m;
  result.module = m;
  for (const auto& pass : passes) {
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
