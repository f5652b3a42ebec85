// frontend/schedule_records.h: applicable_schedules lists the knobs a tuner may switch for
// one layer, and only those that change the layer's kernel on that target (e2e_tune_qemu
// checks the same on firmware; these cases pin the rules on graphs built by hand).
#include <gtest/gtest.h>

#include <algorithm>

#include "frontend/schedule_records.h"
#include "qconv_cases.h"

namespace mtir {
namespace {

// A Cortex-M4's options: the DSP schedules on, as the target sets them.
ScheduleOptions m4() {
  ScheduleOptions s;
  s.smlad = true;
  s.sxtb16 = true;
  s.smmlar_requant = true;
  return s;
}

using qconv_cases::Case;
using qconv_cases::quant;
using qconv_cases::zero_weight_graph;

// One int8 qdense of `rows` x `depth` -> `units` with constant weights.
Graph dense_graph(int64_t rows, int64_t depth, int64_t units) {
  return zero_weight_graph(Case{"qdense", {rows, depth}, {units, depth}, quant({})}, "dense");
}

// One int8 1x1 qconv2d (NHWC, OHWI weights) of c -> c channels over h x w pixels.
Graph pointwise_graph(int64_t h, int64_t w, int64_t c) {
  return zero_weight_graph(Case{"qconv2d", {1, h, w, c}, {c, 1, 1, c}, quant({})}, "pointwise");
}

bool has(const std::vector<std::string>& knobs, const std::string& name) {
  return std::find(knobs.begin(), knobs.end(), name) != knobs.end();
}

TEST(ApplicableSchedules, PairLoadsOnlyWhereTheWeightsAreInt16) {
  const Graph g = dense_graph(1, 640, 128);
  // With sxtb16 the weights stay int8 and pair_loads would change nothing.
  const std::vector<std::string> int8_weights = applicable_schedules(g, g.nodes[0], m4());
  EXPECT_TRUE(has(int8_weights, "sxtb16"));
  EXPECT_FALSE(has(int8_weights, "pair_loads"));
  ScheduleOptions int16 = m4();
  int16.sxtb16 = false;
  EXPECT_TRUE(has(applicable_schedules(g, g.nodes[0], int16), "pair_loads"));
  // Two rows are no batch-1 row: neither knob applies.
  const Graph batch2 = dense_graph(2, 640, 128);
  const std::vector<std::string> two_rows = applicable_schedules(batch2, batch2.nodes[0], int16);
  EXPECT_FALSE(has(two_rows, "pair_loads"));
  EXPECT_FALSE(has(two_rows, "dense_chunks"));
}

TEST(ApplicableSchedules, ShortPairsOnlyOnShortReductions) {
  // 16 input channels: int16 weights and paired loads; 64: int8 weights, nothing to pair.
  const Graph shallow = pointwise_graph(5, 5, 16);
  const std::vector<std::string> short_k = applicable_schedules(shallow, shallow.nodes[0], m4());
  EXPECT_TRUE(has(short_k, "short_pairs"));
  EXPECT_TRUE(has(short_k, "pair_loads"));
  // 25 pixels leave one after the triples: rolled; 26 leave two, a 2x2 tile.
  EXPECT_TRUE(has(short_k, "rolled_leftovers"));
  // One multiplier for all channels: no table to pack into pair records; per channel: records.
  EXPECT_FALSE(has(short_k, "pair_records"));
  std::vector<double> scales(16, 0.02);
  scales[1] = 0.03;
  const Graph per_channel = zero_weight_graph(Case{"qconv2d", {1, 5, 5, 16}, {16, 1, 1, 16}, quant({}, scales)}, "pc");
  EXPECT_TRUE(has(applicable_schedules(per_channel, per_channel.nodes[0], m4()), "pair_records"));
  const Graph two_left = pointwise_graph(2, 13, 16);
  EXPECT_FALSE(has(applicable_schedules(two_left, two_left.nodes[0], m4()), "rolled_leftovers"));
  const Graph deep = pointwise_graph(5, 5, 64);
  const std::vector<std::string> long_k = applicable_schedules(deep, deep.nodes[0], m4());
  EXPECT_FALSE(has(long_k, "short_pairs"));
  EXPECT_FALSE(has(long_k, "pair_loads"));
}

TEST(ApplicableSchedules, DenseChunksOnlyWhereTheRowOutgrowsTheSums) {
  // k / 2 words (320) above 128 sums + 64: chunked; k = 256 (128 words): not.
  const Graph wide = dense_graph(1, 640, 128);
  EXPECT_TRUE(has(applicable_schedules(wide, wide.nodes[0], m4()), "dense_chunks"));
  const Graph narrow = dense_graph(1, 256, 128);
  EXPECT_FALSE(has(applicable_schedules(narrow, narrow.nodes[0], m4()), "dense_chunks"));
}

TEST(ApplicableSchedules, OnlyTheKnobsTheTargetHasOn) {
  const Graph g = dense_graph(1, 640, 128);
  ScheduleOptions plain;  // no DSP: none of the SMLAD schedules apply
  const std::vector<std::string> knobs = applicable_schedules(g, g.nodes[0], plain);
  for (const char* dsp : {"smlad", "sxtb16", "interleave", "dense_chunks", "pair_loads", "pixel_triples"})
    EXPECT_FALSE(has(knobs, dsp)) << dsp;
  EXPECT_TRUE(has(knobs, "block"));
  // A batch-1 dense has one pixel: no triples, and none left over for rolled_leftovers.
  const std::vector<std::string> dsp = applicable_schedules(g, g.nodes[0], m4());
  EXPECT_FALSE(has(dsp, "pixel_triples"));
  EXPECT_FALSE(has(dsp, "rolled_leftovers"));
}

TEST(ApplicableSchedules, RolledLeftoversOnlyWherePixelsAreLeftOver) {
  // 144 pixels are 48 3x2 tiles: nothing left over; 169 leave one pixel after the triples.
  const Graph even = pointwise_graph(12, 12, 128);
  const std::vector<std::string> tiled = applicable_schedules(even, even.nodes[0], m4());
  EXPECT_TRUE(has(tiled, "pixel_triples"));
  EXPECT_TRUE(has(tiled, "word_gather"));  // 128 input channels: whole words
  EXPECT_FALSE(has(tiled, "rolled_leftovers"));
  const Graph odd = pointwise_graph(13, 13, 128);
  EXPECT_TRUE(has(applicable_schedules(odd, odd.nodes[0], m4()), "rolled_leftovers"));
  // In pairs (pixel_triples off), 144 pixels leave none either, 169 still one.
  ScheduleOptions pairs = m4();
  pairs.pixel_triples = false;
  EXPECT_FALSE(has(applicable_schedules(even, even.nodes[0], pairs), "rolled_leftovers"));
  EXPECT_TRUE(has(applicable_schedules(odd, odd.nodes[0], pairs), "rolled_leftovers"));
}

TEST(ApplicableSchedules, PixelTriplesOnlyWhereTheyPayForTheirBytes) {
  // 128 channels over 144 pixels save far more instructions than the triple's stack and code
  // cost (frontend/pixel_triples_budget.h); 16 channels over 36 pixels do not, and run in
  // pairs whatever the knob says, so the knob is not offered.
  const Graph big = pointwise_graph(12, 12, 128);
  EXPECT_TRUE(has(applicable_schedules(big, big.nodes[0], m4()), "pixel_triples"));
  const Graph small = pointwise_graph(6, 6, 16);
  EXPECT_FALSE(has(applicable_schedules(small, small.nodes[0], m4()), "pixel_triples"));
  // Without the budget rules the small layer keeps its triples, and the knob is offered.
  ScheduleOptions unbudgeted = m4();
  unbudgeted.pixel_triples_stack = false;
  unbudgeted.pixel_triples_code = false;
  EXPECT_TRUE(has(applicable_schedules(small, small.nodes[0], unbudgeted), "pixel_triples"));
}

TEST(ApplicableSchedules, SmmlarRequantOnPerTensorMultipliersWithItsForm) {
  // m = 0.05 * 0.02 / 0.4 = 0.0025: the SMMLAR form, with or without a ReLU (M above 2^30).
  Graph g = dense_graph(1, 640, 128);
  g.nodes[0].attrs = {{"input_scale", 0.05}, {"weight_scale", 0.02}, {"output_scale", 0.4}};
  EXPECT_TRUE(has(applicable_schedules(g, g.nodes[0], m4()), "smmlar_requant"));
  // m = 0.25 is M = 2^30: only with a ReLU; m = 2.5 (a left shift) has no form.
  g.nodes[0].attrs["output_scale"] = 0.004;
  EXPECT_FALSE(has(applicable_schedules(g, g.nodes[0], m4()), "smmlar_requant"));
  g.nodes[0].attrs["activation"] = "relu";
  EXPECT_TRUE(has(applicable_schedules(g, g.nodes[0], m4()), "smmlar_requant"));
  g.nodes[0].attrs["output_scale"] = 0.0004;
  EXPECT_FALSE(has(applicable_schedules(g, g.nodes[0], m4()), "smmlar_requant"));
  // Off on the target: not a knob.
  g.nodes[0].attrs["output_scale"] = 0.4;
  ScheduleOptions off = m4();
  off.smmlar_requant = false;
  EXPECT_FALSE(has(applicable_schedules(g, g.nodes[0], off), "smmlar_requant"));
}

}  // namespace
}  // namespace mtir
