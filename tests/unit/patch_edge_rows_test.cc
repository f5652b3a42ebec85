// patch_edge_rows (executor/patch_stages.h: edge_row_bands): a one-layer band stage is cut
// again so that its border rows (windows reaching into the padding) are bands of their
// own and its interior runs in equal bands, one kernel for all of them, with the bytes
// of the whole-tensor run.
#include <gtest/gtest.h>

#include <random>
#include <set>
#include <tuple>

#include "driver/pipeline.h"
#include "executor/aot.h"
#include "executor/patch_stages.h"
#include "frontend/graph.h"
#include "ops/schedules.h"
#include "transform/plan_memory.h"

#include "patch_cases.h"
#include "qconv_cases.h"

namespace mtir {
namespace {

using namespace qconv_cases;
using namespace patch_cases;

// A depthwise 3x3 layer "dw" of 8 channels on a 1 x h x 5 x 8 input, after a pointwise
// layer with `before` and followed by one with `after` (so its input and output are
// intermediates, which a band stage may overlap).
Graph depthwise_graph(int64_t h, int64_t stride, const std::vector<int64_t>& padding, std::mt19937& rng,
                      bool before = false, bool after = false) {
  Graph g;
  g.name = "edge_rows";
  g.inputs = {{"x", TensorType{DataType::Int(8), {1, h, 5, 8}}}};
  const Shape pw = {8, 1, 1, 8}, w = {8, 3, 3, 1};
  std::string previous = "x";
  if (before) previous = append_qconv(g, "pw0", previous, pw, random_values(rng, pw), quant({{"activation", "relu"}}));
  const json attrs = quant({{"padding", padding}, {"strides", {stride, stride}}, {"groups", 8}, {"activation", "relu"}});
  previous = append_qconv(g, "dw", previous, w, random_values(rng, w), attrs);
  if (after) previous = append_qconv(g, "pw1", previous, pw, random_values(rng, pw), quant({{"activation", "relu"}}));
  if (after && before) {
    const Shape pw2 = {16, 1, 1, 8}, w2 = {16, 3, 3, 1}, pw3 = {32, 1, 1, 16};
    previous = append_qconv(g, "pw2", previous, pw2, random_values(rng, pw2), quant({{"activation", "relu"}}));
    const json s2 = quant({{"padding", {0, 0, 1, 1}}, {"strides", {2, 2}}, {"groups", 16}, {"activation", "relu"}});
    previous = append_qconv(g, "dw2", previous, w2, random_values(rng, w2), s2);
    previous = append_qconv(g, "pw3", previous, pw3, random_values(rng, pw3), quant({{"activation", "relu"}}));
  }
  g.outputs = {previous};
  return prepare_quantized(g, ScheduleOptions{});
}

struct Cut {
  int64_t begin, rows, pad_top, pad_bottom;
  bool operator==(const Cut& o) const {
    return begin == o.begin && rows == o.rows && pad_top == o.pad_top && pad_bottom == o.pad_bottom;
  }
};

std::vector<Cut> cuts_of(const PatchStage& s) {
  std::vector<Cut> cuts;
  for (const auto& band : s.bands) cuts.push_back({band[0].out_begin, band[0].out_rows, band[0].pad_top, band[0].pad_bottom});
  return cuts;
}

TEST(PatchEdgeRows, BorderRowsAreBandsOfTheirOwn) {
  std::mt19937 rng(7);
  // Stride 1, padding 1, 12 rows in 4 bands of 3: the first and last bands held a border
  // row and two interior rows. Re-cut: row 0, the 10 interior rows in bands of 2 (3 does
  // not divide 10), row 11.
  const Graph g = depthwise_graph(12, 1, {1, 1, 1, 1}, rng);
  const PatchStage planned = make_patch_stage(g, {0}, 4);
  const PatchStage recut = edge_row_bands(g, planned);
  const std::vector<Cut> want = {{0, 1, 1, 0}, {1, 2, 0, 0}, {3, 2, 0, 0}, {5, 2, 0, 0},
                                 {7, 2, 0, 0}, {9, 2, 0, 0}, {11, 1, 0, 1}};
  EXPECT_EQ(cuts_of(recut), want);
  // Stride 2 padded only below (TFLite's SAME on an even height): 8 rows -> 4, in 3
  // bands of 1, 1 and 2 rows. Re-cut: the 3 interior rows in bands of 1 (one kernel), row 3.
  const Graph g2 = depthwise_graph(8, 2, {0, 0, 1, 1}, rng);
  const std::vector<Cut> want2 = {{0, 1, 0, 0}, {1, 1, 0, 0}, {2, 1, 0, 0}, {3, 1, 0, 1}};
  EXPECT_EQ(cuts_of(edge_row_bands(g2, make_patch_stage(g2, {0}, 3))), want2);
  // IC's 1x1 stride-2 shortcut (no padding, 16 rows -> 8 in 5 bands of 1 and 2 rows): in
  // 4 bands of 2 rows (one kernel) its output would have to sit further from its input
  // (overlap_shift: more memory), so it comes back as it was.
  Graph g3;
  g3.inputs = {{"x", TensorType{DataType::Int(8), {1, 16, 4, 8}}}};
  const Shape w3 = {16, 1, 1, 8};
  g3.outputs = {append_qconv(g3, "sc", "x", w3, random_values(rng, w3), quant({{"strides", {2, 2}}}))};
  g3 = prepare_quantized(g3, ScheduleOptions{});
  const PatchStage shortcut = make_patch_stage(g3, {0}, 5);
  EXPECT_EQ(cuts_of(edge_row_bands(g3, shortcut)), cuts_of(shortcut));
  EXPECT_LT(overlap_shift(g3, shortcut), overlap_shift(g3, make_patch_stage(g3, {0}, 4)));
  // A stage of two layers comes back as it was.
  const Graph two = depthwise_graph(12, 1, {1, 1, 1, 1}, rng, false, true);
  const PatchStage chain = make_patch_stage(two, {0, 1}, 4);
  EXPECT_EQ(cuts_of(edge_row_bands(two, chain)), cuts_of(chain));
  EXPECT_TRUE(is_model_schedule("patch_edge_rows"));
}

// The band kernels of node "dw2" (its zero-point row fills aside).
std::set<std::string> band_kernels(const AotModule& aot) {
  std::set<std::string> names;
  for (const auto& [kernel, node] : aot.band_kernel_of)
    if (node == "dw2" && kernel.find("zero_rows") == std::string::npos) names.insert(kernel);
  return names;
}

// Builds `g` with `options`, plans its memory and checks the run against `want`: the
// band kernels of "dw2" and the pool's bytes.
std::pair<std::set<std::string>, int64_t> planned(const Graph& g, const AotOptions& options,
                                                  const std::vector<int64_t>& input, const NDArray& want) {
  AotModule aot = build_aot(g, options);
  const std::set<std::string> kernels = band_kernels(aot);
  PipelineResult result = run_pipeline(aot.module, {*find_pass("simplify"), *find_pass("plan_memory")});
  aot.module = result.module;
  EXPECT_EQ(run_int8_aot(g, aot, input).back().data, want.data);
  return {kernels, std::get<int64_t>(result.module.lookup(aot.main)->attrs.at("workspace.pool_bytes"))};
}

// planned() of `g` under `options` with patch_edge_rows off (before) and on (after), each
// run checked against the whole-tensor run (patch off).
struct EdgeRows {
  std::set<std::string> kernels_before, kernels_after;
  int64_t pool_before = 0, pool_after = 0;
};
EdgeRows without_and_with_edge_rows(const Graph& g, AotOptions options, const std::vector<int64_t>& input) {
  AotOptions whole;
  whole.patch = false;
  const NDArray want = run_int8_aot(g, build_aot(g, whole), input).back();
  EdgeRows r;
  options.patch_edge_rows = false;
  std::tie(r.kernels_before, r.pool_before) = planned(g, options, input, want);
  options.patch_edge_rows = true;
  std::tie(r.kernels_after, r.pool_after) = planned(g, options, input, want);
  return r;
}

// VWW's first blocks in small: the planner makes the stride-2 depthwise layer "dw2" (24
// rows -> 12, padded below) a stage of its own in 7 bands of 1 and 2 rows, written beside
// its dying input. Its band kernels were one per band geometry (1 row, 2 rows, the last 2
// rows with the border row: 3); re-cut, the 11 interior rows run in bands of one row and
// the border row alone: 2 kernels, in a pool no larger, with the whole-tensor run's bytes.
TEST(PatchEdgeRows, OneInteriorKernelSameBytes) {
  std::mt19937 rng(11);
  const Graph g = depthwise_graph(24, 1, {1, 1, 1, 1}, rng, true, true);
  const PatchPlan plan = plan_patch_stages(g, 0, true);
  bool alone = false;  // dw2 a stage of its own
  for (const PatchStage& s : plan.stages) alone = alone || (s.nodes.size() == 1 && g.nodes[s.nodes[0]].name == "dw2");
  ASSERT_TRUE(alone);
  const std::vector<int64_t> input = random_values(rng, {1, 24, 5, 8});
  AotOptions options;
  options.patch_max_recomputed_percent = 0;  // the plan above
  const EdgeRows r = without_and_with_edge_rows(g, options, input);
  EXPECT_EQ(r.kernels_before.size(), 3u);
  EXPECT_EQ(r.kernels_after.size(), 2u);
  EXPECT_LE(r.pool_after, r.pool_before);
}

// With the default budget the planner makes "pw2" and "dw2" one stage of 3 bands of 4
// rows (VWW's second block): dw2's last band reads 8 rows and a padding row, the others
// 9 rows. The padding row as a zero-point row of pw2's band buffer (filled by a small
// kernel), the last band runs the others' kernel: 1 kernel instead of 2, the same bytes.
TEST(PatchEdgeRows, LaterLayerReadsZeroPointRows) {
  std::mt19937 rng(11);
  const Graph g = depthwise_graph(24, 1, {1, 1, 1, 1}, rng, true, true);
  const std::vector<int64_t> input = random_values(rng, {1, 24, 5, 8});
  AotOptions options;  // the default budget
  bool second = false;  // dw2 the second layer of a stage
  for (const PatchStage& s : plan_patch_stages(g, options.patch_max_recomputed_percent, true).stages)
    second = second || (s.nodes.size() == 2 && g.nodes[s.nodes[1]].name == "dw2");
  ASSERT_TRUE(second);
  // patch_carry would carry pw2's halo, its buffer's padding rows zero-point rows anyway
  // (one kernel with patch_edge_rows off or on); this is the recomputing stage's rule.
  const EdgeRows carried = without_and_with_edge_rows(g, options, input);
  EXPECT_EQ(carried.kernels_before.size(), 1u);
  EXPECT_EQ(carried.kernels_after.size(), 1u);
  options.patch_carry = false;
  const EdgeRows r = without_and_with_edge_rows(g, options, input);
  EXPECT_EQ(r.kernels_before.size(), 2u);
  EXPECT_EQ(r.kernels_after.size(), 1u);
  EXPECT_LE(r.pool_after, r.pool_before);
}

}  // namespace
}  // namespace mtir
