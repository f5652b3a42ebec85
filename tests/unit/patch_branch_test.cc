// patch_residual with two branches (executor/patch_stages.h, PatchStage::shortcut): IC's
// downsampling block in small. s = add(conv(down(a)), shortcut(a)), where down is a 3x3
// stride-2 convolution and shortcut a 1x1 stride-2 one, both of a. One stage runs down ->
// conv in bands (down's two halo rows carried), and in each band the shortcut writes its
// rows into the stage's output, where conv's fused add reads them and writes over them.
// a dies in the stage, so the output sits a few rows below it (plan_memory proves it from
// the band calls, analysis/call_overlap.h) and the bytes are the whole-tensor run's.
#include <gtest/gtest.h>

#include <random>

#include "backend_cases.h"
#include "executor/patch_stages.h"
#include "patch_cases.h"
#include "support/diagnostic.h"

namespace mtir {
namespace {

using namespace qconv_cases;
using namespace patch_cases;

const auto* const kBackends =
    ::testing::AddGlobalTestEnvironment(new backend_cases::Environment({"patch_branch", {"c -unpacked-api=1"}, true, 0}));

// x (16x8x4) -> a = c0 (16x8x8, 64-byte rows) -> c1 3x3 stride 2 (8x4x16, 64-byte rows)
// -> c2 3x3 + add of c3, a's 1x1 stride-2 shortcut -> y, a 1x1 convolution.
Graph downsampling_block(std::mt19937& rng) {
  auto values = [&](const Shape& shape) { return random_values(rng, shape); };
  Graph g;
  g.name = "branch_stage";
  g.inputs = {{"x", TensorType{DataType::Int(8), {1, 16, 8, 4}}}};
  const json pad1 = quant({{"padding", {1, 1, 1, 1}}, {"activation", "relu"}});
  const std::string a = append_qconv(g, "c0", "x", {8, 3, 3, 4}, values({8, 3, 3, 4}), pad1);
  const std::string down = append_qconv(g, "c1", a, {16, 3, 3, 8}, values({16, 3, 3, 8}),
                                        quant({{"padding", {0, 0, 1, 1}}, {"strides", {2, 2}}, {"activation", "relu"}}));
  const std::string conv = append_qconv(g, "c2", down, {16, 3, 3, 16}, values({16, 3, 3, 16}),
                                        quant({{"padding", {1, 1, 1, 1}}}));
  const std::string shortcut = append_qconv(g, "c3", a, {16, 1, 1, 8}, values({16, 1, 1, 8}), quant({{"strides", {2, 2}}}));
  append_qadd(g, "s", shortcut, conv);
  g.outputs = {append_qconv(g, "y", "s", {4, 1, 1, 16}, values({4, 1, 1, 16}), quant({}))};
  return g;
}

TEST(PatchBranch, ShortcutRowsAreWrittenWhereTheAddReadsThem) {
  std::mt19937 rng(47);
  const Graph prepared = prepare_quantized(downsampling_block(rng), ScheduleOptions{});
  // Four bands of two rows: the shortcut's band k reads a's rows 4k..4k+2 (stride 2).
  const PatchStage stage = make_patch_stage(prepared, {1, 2}, 4, true, 3);
  EXPECT_EQ(stage.fused, std::optional<size_t>(4));
  EXPECT_EQ(stage.shortcut, std::optional<size_t>(3));
  ASSERT_EQ(stage.shortcut_bands.size(), 4u);
  for (size_t b = 0; b < 4; ++b) {
    EXPECT_EQ(stage.shortcut_bands[b].out_begin, stage.bands[b].back().out_begin);
    EXPECT_EQ(stage.shortcut_bands[b].out_rows, 2);
    EXPECT_EQ(stage.shortcut_bands[b].in_begin, 4 * static_cast<int64_t>(b));
    EXPECT_EQ(stage.shortcut_bands[b].in_rows, 3);
  }
  EXPECT_EQ(stage.recomputed_macs, 0);
  // Band 0 writes the output's rows 0-1 in the call that reads a's rows 0-2: two rows below.
  EXPECT_EQ(overlap_shift(prepared, stage), 2 * 64);
  EXPECT_EQ(stage_members(stage), (std::vector<size_t>{1, 2, 4, 3}));
  // The shortcut must be the add's other operand, and needs a residual stage.
  try {
    make_patch_stage(prepared, {1, 2}, 4, true, 0);
    ADD_FAILURE() << "a shortcut the add does not read";
  } catch (const DiagnosticError& e) {
    EXPECT_NE(std::string(e.what()).find("'s' does not add 'c0'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(make_patch_stage(prepared, {1}, 4, false, 3), DiagnosticError);

  const PatchPlan plan = plan_patch_stages(prepared, 0, true, true);
  ASSERT_EQ(plan.stages.size(), 1u);
  EXPECT_EQ(plan.stages[0].nodes, (std::vector<size_t>{1, 2}));
  EXPECT_EQ(plan.stages[0].shortcut, std::optional<size_t>(3));
  // Whole tensors: a (1,024 bytes) with c1's and the shortcut's outputs (512 each). The
  // stage: a, two rows below it, c1's carried band buffer of four rows (zero-point rows
  // for c2's padding included).
  EXPECT_EQ(plan.whole_tensor_bound, 2048);
  EXPECT_LE(plan.patched_bound, 1024 + 128 + 4 * 64);
  EXPECT_LT(plan.patched_bound, plan_patch_stages(prepared, 0, true, false).patched_bound);
  const std::vector<int64_t> input = random_values(rng, {1, 16, 8, 4});
  expect_planned_run_bit_exact(prepared, input, plan.patched_bound);
  // The generated C (restrict dropped on the two aliased parameters) gives the same bytes.
  AotModule aot = build_aot(prepared, AotOptions{});
  backend_cases::record_module("two-branch residual stage", aot.module, aot.main, run_int8_aot(prepared, aot, input));
  // The fused kernel declares its operand and output aliased; -disabled-schedules=patch_residual
  // leaves c2 whole.
  const PrimFunc fused = aot.module.lookup("tvmgen_branch_stage_c2_band0");
  ASSERT_TRUE(fused);
  const size_t out = fused->param_buffers.size() - 1;
  EXPECT_EQ(std::get<std::string>(fused->attrs.at("tir.aliased_params")),
            std::to_string(out - 1) + "," + std::to_string(out));
  AotOptions plain;
  plain.patch_residual = false;
  EXPECT_EQ(build_aot(prepared, plain).band_kernel_of.count("tvmgen_branch_stage_c2_band0"), 0u);
}

}  // namespace
}  // namespace mtir
