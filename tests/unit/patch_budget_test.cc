// The band planner's rule (executor/patch_stages.h): after the greedy search reaches its
// lowest bound, each stage takes its cheapest choice (fewest recomputed MACs, then
// fewest bands; running whole is cheapest) that keeps the bound within the target: that
// lowest bound, or a workspace budget (-workspace-budget) above it. A budget below the
// lowest bound is refused naming it, and plan_memory refuses a pool over the budget.
#include <gtest/gtest.h>

#include <random>

#include "driver/pipeline.h"
#include "executor/aot.h"
#include "executor/patch_report.h"
#include "executor/patch_stages.h"
#include "support/diagnostic.h"
#include "transform/plan_memory.h"

#include "patch_cases.h"

namespace mtir {
namespace {

using namespace qconv_cases;
using namespace patch_cases;

// x (16x8x4) -> a, b (16x8x16: 2,048 bytes, 128-byte rows, pointwise) -> c (8x4x16, a 3x3
// stride-2 layer) -> p (8x4x32, pointwise) -> q, pointwise with the add s = p + q fused
// into it -> y. The tail holds p and s (2,048 bytes) at q's step, and no stage lowers it;
// the front holds a and b (4,096 bytes) whole.
Graph front_and_tail(std::mt19937& rng) {
  auto values = [&](const Shape& shape) { return random_values(rng, shape); };
  Graph g;
  g.name = "front_and_tail";
  g.inputs = {{"x", TensorType{DataType::Int(8), {1, 16, 8, 4}}}};
  const json relu = quant({{"activation", "relu"}});
  std::string at = append_qconv(g, "c0", "x", {16, 1, 1, 4}, values({16, 1, 1, 4}), relu);
  at = append_qconv(g, "c1", at, {16, 1, 1, 16}, values({16, 1, 1, 16}), relu);
  at = append_qconv(g, "c2", at, {16, 3, 3, 16}, values({16, 3, 3, 16}),
                    quant({{"padding", {1, 1, 1, 1}}, {"strides", {2, 2}}, {"activation", "relu"}}));
  const std::string p = append_qconv(g, "c3", at, {32, 1, 1, 16}, values({32, 1, 1, 16}), relu);
  const std::string q = append_qconv(g, "c4", p, {32, 1, 1, 32}, values({32, 1, 1, 32}), quant({}));
  append_qadd(g, "s", p, q);
  g.outputs = {append_qconv(g, "y", "s", {4, 1, 1, 32}, values({4, 1, 1, 32}), quant({}))};
  return prepare_quantized(g, ScheduleOptions{});
}

// A chain of three 3x3 layers whose halos are recomputed (no overlap): more bands, more MACs.
Graph halo_chain(std::mt19937& rng) {
  auto values = [&](const Shape& shape) { return random_values(rng, shape); };
  Graph g;
  g.name = "halo_chain";
  g.inputs = {{"x", TensorType{DataType::Int(8), {1, 24, 8, 4}}}};
  const json pad1 = quant({{"padding", {1, 1, 1, 1}}, {"activation", "relu"}});
  std::string at = append_qconv(g, "c0", "x", {8, 3, 3, 4}, values({8, 3, 3, 4}), pad1);
  at = append_qconv(g, "c1", at, {8, 3, 3, 8}, values({8, 3, 3, 8}), pad1);
  at = append_qconv(g, "c2", at, {8, 3, 3, 8}, values({8, 3, 3, 8}), pad1);
  g.outputs = {append_qconv(g, "y", at, {4, 1, 1, 8}, values({4, 1, 1, 8}), quant({}))};
  return prepare_quantized(g, ScheduleOptions{});
}

// Every stage of `plan` is at its cheapest within `target`: running it whole, or in any
// band count that recomputes fewer MACs (or as many in fewer bands), breaks the target.
void expect_cheapest_within(const Graph& g, const PatchPlan& plan, int64_t target, bool overlap) {
  EXPECT_LE(plan.patched_bound, target);
  EXPECT_EQ(plan.patched_bound, patched_bound(g, plan.stages, overlap));
  for (size_t s = 0; s < plan.stages.size(); ++s) {
    const PatchStage& stage = plan.stages[s];
    std::vector<PatchStage> without = plan.stages;
    without.erase(without.begin() + static_cast<std::ptrdiff_t>(s));
    EXPECT_GT(patched_bound(g, without, overlap), target) << "stage " << s << " could run whole";
    // A stage that recomputes and carries nothing keeps its bands (its shift; patch_stages.cc).
    if (!stage.carried && stage.recomputed_macs == 0) continue;
    for (int64_t bands = 2; bands <= 32; ++bands) {
      const std::optional<PatchStage> other = restage(g, stage, bands);
      if (!other || std::make_pair(other->recomputed_macs, other->bands.size()) >=
                        std::make_pair(stage.recomputed_macs, stage.bands.size()))
        continue;
      std::vector<PatchStage> trial = plan.stages;
      trial[s] = *other;
      EXPECT_GT(patched_bound(g, trial, overlap), target) << "stage " << s << " could run in " << bands << " bands";
    }
  }
}

// The default build of `prepared` with `budget` (and `percent` of its MACs recomputed at most), its memory planned: the pool within the
// budget and the bytes of the whole-tensor run.
void expect_budgeted_run_bit_exact(const Graph& prepared, int64_t budget, int64_t percent, std::mt19937& rng) {
  const std::vector<int64_t> input = random_values(rng, prepared.inputs.at(0).second.shape);
  AotOptions whole, budgeted;
  whole.patch = false;
  budgeted.workspace_budget = budget;
  budgeted.patch_max_recomputed_percent = percent;
  AotModule aot = build_aot(prepared, budgeted);
  PipelineResult planned = run_pipeline(aot.module, {*find_pass("simplify"), *find_pass("plan_memory")});
  const PrimFunc main = planned.module.lookup(aot.main);
  EXPECT_LE(std::get<int64_t>(main->attrs.at("workspace.pool_bytes")), budget) << memory_report(main);
  // The memory report and `run --json` state the lowest bound, the budget kept and the stages' choices.
  const int64_t lowest = aot.patch_plan.at("lowest_bound").get<int64_t>();
  EXPECT_EQ(aot.patch_plan.at("budget"), budget);
  EXPECT_LE(aot.patch_plan.at("bound").get<int64_t>(), budget);
  EXPECT_NE(memory_report(main).find("lowest bound the band planner reaches " + std::to_string(lowest) +
                                     " bytes; each stage takes the fewest recomputed MACs, then bands, that keep "
                                     "-workspace-budget=" + std::to_string(budget)),
            std::string::npos)
      << memory_report(main);
  aot.module = planned.module;
  EXPECT_EQ(run_int8_aot(prepared, aot, input).back().data,
            run_int8_aot(prepared, build_aot(prepared, whole), input).back().data);
}

// The front's stages lower it below the tail's 2,048 bytes, but bands beyond what keeps
// the model's lowest bound save no byte: those stages run in fewer bands or whole.
TEST(PatchBudget, BandsBelowThePeakAreNotAdded) {
  std::mt19937 rng(53);
  const Graph g = front_and_tail(rng);
  const PatchPlan plan = plan_patch_stages(g, 0, true, true);
  EXPECT_EQ(plan.whole_tensor_bound, 4096);
  // c1 in 16 bands of one row, its output 128 bytes beside a. The tail's step holds p and
  // s (2,048 bytes): q is fused into the add's kernel and never exists (counted, it made
  // 3,072 bytes the lowest bound, and the rule widened c1's bands up to it).
  EXPECT_EQ(plan.lowest_bound, 2048 + 128);
  EXPECT_EQ(plan.patched_bound, plan.lowest_bound);
  expect_cheapest_within(g, plan, plan.lowest_bound, true);
  // The greedy search's stages lowered every step it could; the rule kept fewer bands.
  size_t lowest_bands = 0, bands = 0;
  for (const PatchStage& s : plan.lowest_stages) lowest_bands += s.bands.size();
  for (const PatchStage& s : plan.stages) bands += s.bands.size();
  EXPECT_LT(bands, lowest_bands);
  // The report names each stage's choice beside the lowest bound's.
  const std::string text = describe_patch_stages(g, plan);
  EXPECT_NE(text.find("(at the lowest bound: "), std::string::npos) << text;
  const nlohmann::json j = patch_plan_json(g, plan);
  EXPECT_EQ(j.at("lowest_bound"), plan.lowest_bound);
  EXPECT_TRUE(j.at("budget").is_null());
  EXPECT_EQ(j.at("stages").size(), plan.lowest_stages.size());
  expect_budgeted_run_bit_exact(g, plan.lowest_bound, 0, rng);
}

// A budget between the lowest bound and the whole tensors: fewer bands fit it, at fewer
// recomputed MACs; a tighter one forces more bands, down to the lowest bound's plan.
TEST(PatchBudget, TighterBudgetsForceMoreBands) {
  std::mt19937 rng(59);
  const Graph g = halo_chain(rng);
  const PatchPlan lowest = plan_patch_stages(g, 100, true, true);
  ASSERT_LT(lowest.lowest_bound + 512, lowest.whole_tensor_bound);
  const int64_t loose = lowest.whole_tensor_bound - 1, tight = lowest.lowest_bound + 256;
  const PatchPlan at_loose = plan_patch_stages(g, 100, true, true, loose);
  const PatchPlan at_tight = plan_patch_stages(g, 100, true, true, tight);
  expect_cheapest_within(g, at_loose, loose, true);
  expect_cheapest_within(g, at_tight, tight, true);
  EXPECT_EQ(at_loose.lowest_bound, lowest.lowest_bound);
  EXPECT_EQ(at_loose.budget, loose);
  size_t few = 0, more = 0;
  for (const PatchStage& s : at_loose.stages) few += s.bands.size();
  for (const PatchStage& s : at_tight.stages) more += s.bands.size();
  EXPECT_LT(few, more);
  EXPECT_LE(at_loose.recomputed_macs, at_tight.recomputed_macs);
  EXPECT_LE(at_tight.recomputed_macs, lowest.recomputed_macs);
  // A budget at the whole tensors' bound needs no stage.
  EXPECT_TRUE(plan_patch_stages(g, 100, true, true, lowest.whole_tensor_bound).stages.empty());
  expect_budgeted_run_bit_exact(g, loose, 100, rng);
  expect_budgeted_run_bit_exact(g, tight, 100, rng);
}

// Recomputed halos: the loosest budget that still needs the chain takes the fewest
// recomputed MACs, a tighter one more.
TEST(PatchBudget, BudgetTradesBytesForRecomputedMacs) {
  std::mt19937 rng(61);
  const Graph g = halo_chain(rng);
  const PatchPlan lowest = plan_patch_stages(g, 100, false);
  ASSERT_FALSE(lowest.stages.empty());
  expect_cheapest_within(g, lowest, lowest.lowest_bound, false);
  ASSERT_LT(lowest.lowest_bound + 256, lowest.whole_tensor_bound);
  const int64_t loose = lowest.whole_tensor_bound - 1;
  const PatchPlan at_loose = plan_patch_stages(g, 100, false, false, loose);
  expect_cheapest_within(g, at_loose, loose, false);
  ASSERT_FALSE(at_loose.stages.empty());
  EXPECT_LT(at_loose.recomputed_macs, lowest.recomputed_macs);
  EXPECT_GT(at_loose.patched_bound, lowest.patched_bound);
}

// Nothing fits a budget below the lowest bound: the planner says which bound it reaches.
// Without bands (-disabled-schedules=patch) plan_memory refuses the pool over the budget.
TEST(PatchBudget, BudgetBelowTheLowestBoundIsRefused) {
  std::mt19937 rng(67);
  const Graph g = front_and_tail(rng);
  const PatchPlan lowest = plan_patch_stages(g, 0, true, true);
  const std::string reached = "the lowest bound the patch planner reaches is " + std::to_string(lowest.lowest_bound) + " bytes";
  try {
    plan_patch_stages(g, 0, true, true, lowest.lowest_bound - 1);
    ADD_FAILURE() << "a budget below the lowest bound was accepted";
  } catch (const DiagnosticError& e) {
    EXPECT_NE(std::string(e.what()).find("-workspace-budget=" + std::to_string(lowest.lowest_bound - 1)),
              std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(reached), std::string::npos) << e.what();
  }
  AotOptions refused;
  refused.workspace_budget = lowest.lowest_bound - 1;
  EXPECT_THROW(build_aot(g, refused), DiagnosticError);
  AotOptions unbanded;
  unbanded.patch = false;
  unbanded.workspace_budget = lowest.lowest_bound;
  const AotModule aot = build_aot(g, unbanded);
  try {
    run_pipeline(aot.module, {*find_pass("simplify"), *find_pass("plan_memory")});
    ADD_FAILURE() << "a pool over the budget was accepted";
  } catch (const DiagnosticError& e) {
    EXPECT_NE(std::string(e.what()).find("plan_memory's workspace pool is"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("no band stages"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace mtir
