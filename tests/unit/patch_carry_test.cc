// patch_carry (executor/patch_stages.h): VWW's second block in small. A 1x1 convolution
// feeds a 3x3 stride-2 depthwise one; a stage of the two in bands of one output row
// needs three rows of the 1x1 layer's output per band, one of them the band before's.
// Recomputed, that row costs a third of the 1x1 layer's MACs again (VWW: 3.5 instead of
// 2.4 instructions per MAC); carried, it is copied to the top of the band buffer.
#include <gtest/gtest.h>

#include <random>

#include "executor/patch_stages.h"
#include "patch_cases.h"
#include "support/diagnostic.h"

namespace mtir {
namespace {

using namespace qconv_cases;
using namespace patch_cases;

// x (12x6x8) -> c0, 1x1 to 16 channels (12x6x16) -> c1, depthwise 3x3 stride 2 (6x3x16)
// -> y, a 1x1 convolution to 4 channels.
Graph pointwise_then_strided_depthwise(std::mt19937& rng) {
  auto values = [&](const Shape& shape) { return random_values(rng, shape); };
  Graph g;
  g.name = "carry_stage";
  g.inputs = {{"x", TensorType{DataType::Int(8), {1, 12, 6, 8}}}};
  const std::string a = append_qconv(g, "c0", "x", {16, 1, 1, 8}, values({16, 1, 1, 8}), quant({{"activation", "relu"}}));
  const std::string down =
      append_qconv(g, "c1", a, {16, 3, 3, 1}, values({16, 3, 3, 1}),
                   quant({{"padding", {0, 0, 1, 1}}, {"strides", {2, 2}}, {"groups", 16}, {"activation", "relu"}}));
  g.outputs = {append_qconv(g, "y", down, {4, 1, 1, 16}, values({4, 1, 1, 16}), quant({}))};
  return g;
}

TEST(PatchCarry, HaloRowsAreCarriedNotRecomputed) {
  std::mt19937 rng(53);
  const Graph prepared = prepare_quantized(pointwise_then_strided_depthwise(rng), ScheduleOptions{});
  // Six bands of one output row: recomputed, c0 computes rows 2k..2k+2 in band k.
  const PatchStage recomputing = make_patch_stage(prepared, {0, 1}, 6);
  EXPECT_FALSE(recomputing.carried);
  EXPECT_EQ(recomputing.bands[1][0].out_begin, 2);
  EXPECT_EQ(recomputing.bands[1][0].out_rows, 3);
  const int64_t c0_row_macs = 6 * 16 * 8;
  EXPECT_EQ(recomputing.recomputed_macs, 5 * c0_row_macs);
  // Carried: band k > 0 keeps row 2k and computes rows 2k+1, 2k+2 (the last band row 11
  // and c1's padding row, a zero-point row of the buffer).
  const std::optional<PatchStage> carrying = restage(prepared, recomputing, 6, true);
  ASSERT_TRUE(carrying);
  EXPECT_TRUE(carrying->carried);
  EXPECT_EQ(carrying->recomputed_macs, 0);
  EXPECT_EQ(carrying->bands[1][0].carried, 1);
  EXPECT_EQ(carrying->bands[1][0].out_begin, 3);
  EXPECT_EQ(carrying->bands[1][0].out_rows, 2);
  EXPECT_EQ(carrying->bands[5][1].zero_bottom, 1);
  // Without `carry` restage keeps recomputing (a stage without a residual add).
  EXPECT_EQ(restage(prepared, recomputing, 6)->recomputed_macs, recomputing.recomputed_macs);

  // The planner takes the carried choice when it keeps the bound, and runs it top down.
  const PatchPlan recomputed = plan_patch_stages(prepared, 100, true, false, 0, false);
  const PatchPlan carried = plan_patch_stages(prepared, 100, true, false, 0, true);
  auto stage_of = [](const PatchPlan& plan) -> const PatchStage* {
    for (const PatchStage& s : plan.stages)
      if (s.nodes == std::vector<size_t>{0, 1}) return &s;
    return nullptr;
  };
  ASSERT_NE(stage_of(recomputed), nullptr);
  ASSERT_NE(stage_of(carried), nullptr);
  EXPECT_GT(stage_of(recomputed)->recomputed_macs, 0);
  EXPECT_FALSE(stage_of(recomputed)->carried);
  EXPECT_TRUE(stage_of(carried)->carried);
  EXPECT_EQ(stage_of(carried)->recomputed_macs, 0);
  EXPECT_FALSE(stage_of(carried)->bottom_up);
  EXPECT_EQ(carried.patched_bound, recomputed.patched_bound);

  // The planned main (plan_memory within the bound) computes the whole-tensor run's bytes.
  // (The default 3 % of recomputed MACs would not let the stage of two layers be chosen
  // here: the search prices a stage as recomputing; VWW's is within it.)
  AotOptions options;
  options.patch_max_recomputed_percent = 100;
  const std::vector<int64_t> input = random_values(rng, {1, 12, 6, 8});
  expect_planned_run_bit_exact(prepared, input, carried.patched_bound, options);
  // A whole-model schedule; -disabled-schedules=patch_carry recomputes the halo again.
  EXPECT_TRUE(is_model_schedule("patch_carry"));
  const AotModule with = build_aot(prepared, options);
  EXPECT_EQ(with.band_kernel_of.count("tvmgen_carry_stage_c0_carry0"), 1u);
  AotOptions plain = options;
  plain.patch_carry = false;
  const AotModule without = build_aot(prepared, plain);
  EXPECT_EQ(without.band_kernel_of.count("tvmgen_carry_stage_c0_carry0"), 0u);
  EXPECT_EQ(run_int8_aot(prepared, without, input).back().data, run_int8_aot(prepared, with, input).back().data);
}

}  // namespace
}  // namespace mtir
