// qconv2d and qdense under every combination of their schedules: each case is a
// one-node int8 graph prepared by prepare_quantized (zero point folded, weights packed
// for smlad, per-channel tables), built as an AOT module and run by the interpreter,
// and compared bit for bit with an independent reference written here (plain loops,
// the requantization computed from the scales with its own fixed-point code). At the
// end of the process every case also runs as host C and through the wasm backend, and
// must equal the interpreter.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <limits>
#include <random>

#include "backend_cases.h"
#include "codegen/c/codegen_c.h"
#include "driver/build.h"
#include "executor/aot.h"
#include "frontend/graph.h"
#include "frontend/pixel_triples_budget.h"
#include "interp/interpreter.h"
#include "ir/visitor.h"
#include "ops/op_util.h"
#include "ops/qconv_internal.h"
#include "sim/host_sim.h"
#include "support/diagnostic.h"
#include "driver/pipeline.h"
#include "transform/plan_memory.h"

#include "patch_cases.h"
#include "qconv_cases.h"

namespace mtir {
namespace {

using namespace qconv_cases;
using namespace patch_cases;

const auto* const kBackends =
    ::testing::AddGlobalTestEnvironment(new backend_cases::Environment({"qconv", {"c -unpacked-api=1"}, true, 0}));

TEST(QConv, Conv3x3PaddedPerChannelRelu) {
  run_all_schedules({"qconv2d", {1, 5, 6, 3}, {4, 3, 3, 3}, quant({{"padding", {1, 1, 1, 1}}, {"activation", "relu"}},
                                                                   {0.01, 0.02, 0.015, 0.03})},
                    "conv 3x3 pad 1, 3->4, per-channel, relu");
}

TEST(QConv, Pointwise1x1BatchOfTwo) {
  run_all_schedules({"qconv2d", {2, 3, 3, 8}, {6, 1, 1, 8}, quant({})}, "conv 1x1 8->6, N=2");
}

// Reductions whose last packed word is partly padding: k = 6 and k = 5 leave an odd
// number of int16 pairs, so with sxtb16 the last weight word holds one pair.
TEST(QConv, ReductionsEndingInAPartialWord) {
  run_all_schedules({"qconv2d", {1, 3, 3, 6}, {5, 1, 1, 6}, quant({})}, "conv 1x1 6->5");
  run_all_schedules({"qconv2d", {1, 4, 6, 1}, {3, 1, 5, 1}, quant({{"padding", {0, 2, 0, 2}}})}, "conv 1x5 1->3 pad 2");
}

// A reduction long enough for the interleaved main loop (eight words a pass) plus its
// remainder and a half-full last word: k = 70 is 17.5 words of four; 5 output channels
// leave an odd one outside the interleaved pairs.
TEST(QConv, LongReductionOddChannels) {
  run_all_schedules({"qconv2d", {1, 2, 3, 70}, {5, 1, 1, 70}, quant({}, {0.01, 0.02, 0.015, 0.03, 0.025})},
                    "conv 1x1 70->5");
}

// pixel_triples: pixel counts of every remainder mod 3. Ten pixels are two triples and
// two pairs (3 + 1 becomes 2 + 2), five a triple and a pair, seven a triple and two pairs,
// one a single pixel; three channels leave an odd one beside the pair.
TEST(QConv, PixelTriplesEveryRemainder) {
  run_all_schedules({"qconv2d", {1, 2, 5, 12}, {3, 1, 1, 12}, quant({})}, "conv 1x1 12->3, 10 pixels");
  run_all_schedules({"qconv2d", {1, 1, 5, 9}, {4, 1, 1, 9}, quant({{"activation", "relu"}}, {0.01, 0.02, 0.015, 0.03})},
                    "conv 1x1 9->4, 5 pixels");
  run_all_schedules({"qconv2d", {1, 3, 3, 4}, {2, 3, 3, 4}, quant({{"strides", {2, 2}}, {"padding", {1, 0, 1, 0}}})},
                    "conv 3x3 stride 2, 4->2, 2x1 pixels");
  run_all_schedules({"qdense", {7, 10}, {3, 10}, quant({})}, "dense 10->3, batch 7");
  // From 24 pixels on the one or two left over go one by one (25 = 8 triples + 1); a
  // reduction of six quad words unrolled by six (no remainder after the loop).
  run_all_schedules({"qconv2d", {1, 5, 5, 24}, {2, 1, 1, 24}, quant({})}, "conv 1x1 24->2, 25 pixels");
}

TEST(QConv, StridedDilatedAsymmetricPaddingOddChannels) {
  run_all_schedules({"qconv2d", {1, 9, 7, 2}, {5, 3, 2, 2},
                     quant({{"strides", {2, 2}}, {"dilation", {2, 1}}, {"padding", {0, 1, 1, 0}}, {"activation", "relu6"}},
                           {0.01, 0.02, 0.015, 0.03, 0.025})},
                    "conv 3x2 stride 2 dilation (2,1), 2->5");
}

// First layers (few_channels): 1, 2 and 3 input channels, stride 1 and 2, padding on
// some sides, odd sizes; interior pixels take the unchecked gather, the border the
// checked one. Only the combinations that reach it (smlad, with and without sxtb16 and
// the zero point folded) and the default with it off: the other schedules do not see
// it, and the cases above run every combination on 2- and 3-channel shapes.
TEST(QConv, FewInputChannels) {
  const Case cases[] = {
      {"qconv2d", {1, 11, 6, 1}, {4, 4, 3, 1}, quant({{"strides", {2, 2}}, {"padding", {1, 1, 2, 1}}})},
      {"qconv2d", {1, 5, 7, 2}, {3, 3, 3, 2}, quant({{"padding", {1, 1, 1, 1}}, {"activation", "relu"}})},
      {"qconv2d", {1, 9, 7, 3}, {6, 3, 3, 3},
       quant({{"strides", {2, 2}}, {"padding", {0, 0, 1, 1}}, {"activation", "relu"}}, {0.01, 0.02, 0.015, 0.03, 0.025, 0.02})}};
  const std::string names[] = {"conv 4x3 stride 2, 1->4", "conv 3x3 pad 1, 2->3", "conv 3x3 stride 2 pad bottom/right, 3->6"};
  for (int i = 0; i < 3; ++i)
    for (int variant = 0; variant < 4; ++variant) {
      ScheduleOptions o;
      o.smlad = true, o.sxtb16 = variant != 1;
      o.fold_zero_point = variant != 2;
      o.few_channels = variant != 3;
      o.pixel_triples_stack = o.pixel_triples_code = false;  // the 3x2 tile on these small layers too
      std::string label = names[i] + " [" + (o.disabled().empty() ? "all" : "off: " + o.disabled()) + "]";
      SCOPED_TRACE(label);
      run_case(cases[i], o, label);
    }
}

TEST(QConv, DepthwiseAndGrouped) {
  run_all_schedules({"qconv2d", {1, 6, 5, 6}, {6, 3, 3, 1}, quant({{"padding", {1, 1, 1, 1}}, {"groups", 6}},
                                                                   {0.01, 0.02, 0.015, 0.03, 0.025, 0.02})},
                    "depthwise 3x3, 6 channels");
  run_all_schedules({"qconv2d", {1, 4, 4, 4}, {6, 3, 3, 2}, quant({{"groups", 2}})}, "grouped conv, 2 groups");
  // Stride 2 and a window larger than the padding: border ranges of different sizes.
  run_all_schedules({"qconv2d", {2, 7, 8, 4}, {4, 5, 3, 1}, quant({{"padding", {2, 0, 1, 1}}, {"strides", {2, 1}}, {"groups", 4}})},
                    "depthwise 5x3 stride (2,1), 4 channels");
  // A window wider than the input: no interior at all.
  run_all_schedules({"qconv2d", {1, 3, 2, 2}, {2, 3, 3, 1}, quant({{"padding", {1, 1, 1, 1}}, {"groups", 2}})},
                    "depthwise 3x3 on a 3x2 input");
  // Rows wider than one tile: a constant border tile each side, a loop of four-wide tiles
  // and a remainder; channel counts that are not a multiple of four.
  run_all_schedules({"qconv2d", {1, 4, 13, 5}, {5, 3, 3, 1}, quant({{"padding", {1, 1, 1, 1}}, {"groups", 5}},
                                                                    {0.01, 0.02, 0.015, 0.03, 0.025})},
                    "depthwise 3x3 pad 1, 13 wide, 5 channels");
  // A row of 12 or more at stride 1: its border columns (here only on the right) through
  // the checked per-output loop, the interior a loop of tiles and a narrower last one.
  run_all_schedules({"qconv2d", {1, 3, 15, 2}, {2, 3, 3, 1}, quant({{"padding", {1, 0, 0, 2}}, {"groups", 2}})},
                    "depthwise 3x3, right padding 2, 15 wide");
  // TFLite's SAME padding at stride 2 on an even input: padding only after.
  run_all_schedules({"qconv2d", {1, 6, 14, 3}, {3, 3, 3, 1}, quant({{"padding", {0, 0, 1, 1}}, {"strides", {2, 2}}, {"groups", 3}},
                                                                    {0.01, 0.02, 0.015})},
                    "depthwise 3x3 stride 2, padding after, 3 channels");
  // Stride 2, a row of 11: constant tiles, a loop of four-wide tiles, constant tiles;
  // ReLU with per-channel scales (the requantization without the sign correction).
  run_all_schedules({"qconv2d", {1, 3, 21, 2}, {2, 3, 3, 1}, quant({{"padding", {1, 1, 1, 1}}, {"strides", {2, 2}}, {"groups", 2},
                                                                    {"activation", "relu"}}, {0.01, 0.03})},
                    "depthwise 3x3 stride 2, 11-wide rows, relu");
  // One output column: both side taps are padding, whose weights the tile never loads
  // when the padding adds nothing (fold_zero_point off).
  run_all_schedules({"qconv2d", {1, 4, 1, 2}, {2, 3, 3, 1}, quant({{"padding", {1, 1, 1, 1}}, {"groups", 2}})},
                    "depthwise 3x3 on a one-column input");
  // An even number of taps (no unpaired last tap) with dilation; no padding.
  run_all_schedules({"qconv2d", {1, 5, 6, 3}, {3, 2, 2, 1}, quant({{"dilation", {2, 2}}, {"groups", 3}})},
                    "depthwise 2x2 dilation 2, 3 channels");
  // Border rows as loops (depthwise_border_rows): two per side with 3 and 4 valid kernel
  // rows (two loops, each over a top and a bottom row); every row a border row with its
  // padding rows above, on both sides and below (one loop, three first rows); dilation 2
  // (two rows a side in one loop of two ranges).
  run_all_schedules({"qconv2d", {1, 7, 6, 4}, {4, 5, 5, 1}, quant({{"padding", {2, 2, 2, 2}}, {"groups", 4}})},
                    "depthwise 5x5 pad 2, 4 channels");
  run_all_schedules({"qconv2d", {1, 3, 4, 5}, {5, 5, 3, 1}, quant({{"padding", {2, 1, 2, 1}}, {"groups", 5}})},
                    "depthwise 5x3 on 3 rows, 5 channels");
  run_all_schedules({"qconv2d", {1, 6, 5, 4}, {4, 3, 3, 1}, quant({{"padding", {2, 2, 2, 2}}, {"dilation", {2, 2}}, {"groups", 4}})},
                    "depthwise 3x3 dilation 2 pad 2, 4 channels");
}

// A graph of one node per case, node "y<i>" reading input "x<i>" (weights i % 7 - 3).
Graph one_node_graphs(const std::vector<Case>& cases) {
  Graph g;
  g.name = "q" + std::to_string(case_counter++);
  for (size_t c = 0; c < cases.size(); ++c) {
    const Case& k = cases[c];
    const std::string x = "x" + std::to_string(c), w = "w" + std::to_string(c), y = "y" + std::to_string(c);
    g.inputs.push_back({x, TensorType{DataType::Int(8), k.data}});
    int64_t nw = 1;
    for (int64_t d : k.weight) nw *= d;
    std::vector<int64_t> wv(nw);
    for (int64_t i = 0; i < nw; ++i) wv[i] = i % 7 - 3;
    g.constants[w] = array_of(DataType::Int(8), k.weight, wv);
    GraphNode node;
    node.name = y, node.op = k.op, node.inputs = {x, w}, node.attrs = k.attrs;
    node.type = find_op(k.op)->infer({g.inputs.back().second, TensorType{DataType::Int(8), k.weight}}, node.attrs);
    g.nodes.push_back(node);
    g.outputs.push_back(y);
  }
  return g;
}

// The int8 stores, smlabb and smlad calls and selects in the kernel of a one-node graph.
struct KernelCounts {
  int64_t stores = 0, smlabb = 0, smlad = 0, selects = 0, pack_bytes = 0, sxtb16 = 0, word_pairs = 0;
};
KernelCounts depthwise_kernel_counts(const Case& k, const ScheduleOptions& o) {
  AotModule aot = build_aot(prepare_quantized(one_node_graphs({k}), o));
  struct Counter : Visitor {
    KernelCounts n;
    void visit_BufferStore(const BufferStoreNode* op) override {
      n.stores += op->buffer->dtype == DataType::Int(8);
      Visitor::visit_BufferStore(op);
    }
    void visit_Call(const CallNode* op) override {
      n.smlabb += op->op == "smlabb";
      n.smlad += op->op == "smlad";
      n.pack_bytes += op->op == "pack_bytes";
      n.sxtb16 += op->op == "sxtb16" || op->op == "sxtb16_ror8";
      n.word_pairs += op->op == "word_pair";
      Visitor::visit_Call(op);
    }
    void visit_Select(const SelectNode* op) override {
      n.selects += 1;
      Visitor::visit_Select(op);
    }
  } counter;
  for (const auto& [name, f] : aot.module.functions)
    if (name != aot.main) counter.visit(f->body);
  return counter.n;
}

// The depthwise tilers' constant tiles: as few as fit, of balanced widths.
TEST(QConv, BalancedTilesSplitARangeEvenly) {
  using Tiles = std::vector<std::pair<int64_t, int64_t>>;
  EXPECT_EQ(ops::qconv_impl::balanced_tiles(0, 7, 5), (Tiles{{0, 3}, {3, 4}}));
  EXPECT_EQ(ops::qconv_impl::balanced_tiles(2, 10, 4), (Tiles{{2, 4}, {6, 4}}));
  EXPECT_EQ(ops::qconv_impl::balanced_tiles(1, 12, 4), (Tiles{{1, 3}, {4, 4}, {8, 4}}));
  EXPECT_EQ(ops::qconv_impl::balanced_tiles(3, 3, 4), Tiles{});
}

// The input columns a row of a depthwise tile reads (both tilers, scalar and Helium, walk
// them): each column's taps in output order, the padding columns of a border tile, and
// no column that no tap reads.
TEST(QConv, TileColumnsListTapsAndPadding) {
  using Taps = std::vector<std::pair<int64_t, int64_t>>;
  ops::qconv_impl::QConv p{};
  p.w = 5, p.kw = 3, p.sw = 1, p.dw = 1, p.pl = 1;
  // Outputs 0 and 1 read input columns -1 .. 2; column -1 is the left padding.
  std::vector<ops::qconv_impl::TileColumn> cols = ops::qconv_impl::tile_columns(p, 2, 0);
  ASSERT_EQ(cols.size(), 4u);
  EXPECT_EQ(cols[0].taps, (Taps{{0, 0}}));
  EXPECT_FALSE(cols[0].inside);
  EXPECT_EQ(cols[1].taps, (Taps{{0, 1}, {1, 0}}));
  EXPECT_EQ(cols[2].taps, (Taps{{0, 2}, {1, 1}}));
  EXPECT_EQ(cols[3].taps, (Taps{{1, 2}}));
  for (size_t j = 1; j < 4; ++j) EXPECT_TRUE(cols[j].inside) << j;
  // Outputs 3 and 4 read columns 2 .. 5; column 5 is the right padding.
  cols = ops::qconv_impl::tile_columns(p, 2, 3);
  ASSERT_EQ(cols.size(), 4u);
  EXPECT_TRUE(cols[2].inside);
  EXPECT_FALSE(cols[3].inside);
  // An interior tile (position unknown): every column inside.
  for (const auto& c : ops::qconv_impl::tile_columns(p, 2, -1)) EXPECT_TRUE(c.inside) << c.j;
  // Stride 2 with a 1-wide kernel: column 1, between the two outputs' columns, is left out.
  p.kw = 1, p.sw = 2, p.pl = 0;
  cols = ops::qconv_impl::tile_columns(p, 2, 0);
  ASSERT_EQ(cols.size(), 2u);
  EXPECT_EQ(cols[0].j, 0);
  EXPECT_EQ(cols[1].j, 2);
  EXPECT_EQ(cols[1].taps, (Taps{{1, 0}}));
}

// The border rows with the same number of valid kernel rows share one copy of the row's
// code (a loop over them), and a kernel row of padding adds its weights times the padding
// value once per channel, not once per output. Rows of six outputs (one tile): the stores
// count the copies of the row's code, six per copy.
TEST(QConv, DepthwiseBorderRowsShareOneLoop) {
  const Case pad1{"qconv2d", {1, 6, 6, 4}, {4, 3, 3, 1}, quant({{"padding", {1, 1, 1, 1}}, {"groups", 4}})};
  const Case pad2{"qconv2d", {1, 7, 6, 4}, {4, 5, 5, 1}, quant({{"padding", {2, 2, 2, 2}}, {"groups", 4}})};
  ScheduleOptions scalar;  // the Cortex-M4's defaults: depthwise_tile with its border tiles
  ScheduleOptions helium;
  // The border tiles of the Helium kernel (mve_depthwise_padded copies the input instead:
  // MveDepthwisePaddedCopyIsOneTileLoop).
  helium.smlad = helium.sxtb16 = false, helium.mve = true, helium.mve_depthwise_padded = false;
  // 3x3, padding 1: the interior rows and one loop over the top and the bottom row. Its
  // output row, first valid kernel row and padding row are linear in the loop counter:
  // no select (which cost the LLVM backend instructions).
  for (const ScheduleOptions& o : {scalar, helium}) {
    const KernelCounts n = depthwise_kernel_counts(pad1, o);
    EXPECT_EQ(n.stores, 2 * 6);
    EXPECT_EQ(n.selects, 0);
  }
  // 5x5, padding 2: the interior, the rows with three valid kernel rows, those with four.
  EXPECT_EQ(depthwise_kernel_counts(pad2, scalar).stores, 3 * 6);
  EXPECT_EQ(depthwise_kernel_counts(pad2, helium).stores, 3 * 6);
  // The smlabb per row copy: a 3x3 interior row of six outputs takes 6 x 9; the border
  // row 6 x 6 for its two input rows plus 3 for its padding row (6 x 9 if each output
  // added the padding row's taps itself).
  EXPECT_EQ(depthwise_kernel_counts(pad1, scalar).smlabb, 6 * 9 + 6 * 6 + 3);
}

// rolled_leftovers: 25 pixels are eight triples and one pixel left over, which runs once;
// its reduction (k = 24: six quad words, the 3x2 tile's six steps of 12 SMLADs) goes one
// step a pass, 4 SMLADs, instead of an unrolled copy of 6 x 4.
TEST(QConv, LeftoverPixelsReduceOneStepAPass) {
  const Case k{"qconv2d", {1, 5, 5, 24}, {2, 1, 1, 24}, quant({})};
  ScheduleOptions m4;  // the Cortex-M4's schedules, triples on this small layer too
  m4.smlad = m4.sxtb16 = m4.smmlar_requant = true;
  m4.pixel_triples_stack = m4.pixel_triples_code = false;
  EXPECT_EQ(depthwise_kernel_counts(k, m4).smlad, 6 * 12 + 4);
  ScheduleOptions unrolled = m4;
  unrolled.rolled_leftovers = false;
  EXPECT_EQ(depthwise_kernel_counts(k, unrolled).smlad, 6 * 12 + 6 * 4);
  // Below 24 pixels every tile is a triple or a pair: nothing left over to roll.
  const Case band{"qconv2d", {1, 2, 5, 24}, {2, 1, 1, 24}, quant({})};
  EXPECT_EQ(depthwise_kernel_counts(band, m4).smlad, depthwise_kernel_counts(band, unrolled).smlad);
}

// word_gather: a 3x3 layer of eight input channels gathers each tap's channels as two
// words (pack_bytes of four consecutive elements: one load in C), widened by SXTB16, in
// one copy of the gather per tile shape; bit-exact in the sweeps (QConv.WordGather...).
TEST(QConv, WordGatherReadsFourChannelsAWord) {
  const Case k{"qconv2d", {1, 6, 5, 8}, {4, 3, 3, 8}, quant({{"padding", {1, 1, 1, 1}}, {"activation", "relu"}})};
  ScheduleOptions m4;
  m4.smlad = m4.sxtb16 = m4.smmlar_requant = true;
  const KernelCounts on = depthwise_kernel_counts(k, m4);
  EXPECT_GT(on.pack_bytes, 0);
  ScheduleOptions off = m4;
  off.word_gather = false;
  EXPECT_EQ(depthwise_kernel_counts(k, off).pack_bytes, 0);
  EXPECT_EQ(depthwise_kernel_counts(k, off).smlad, on.smlad) << "the same tiles";
  // The C backend reads each four bytes as one word.
  AotModule aot = build_aot(prepare_quantized(one_node_graphs({k}), m4));
  const std::string c = codegen_c(run_pipeline(aot.module, lowering_pipeline(true, true, true, false, false)).module);
  EXPECT_NE(c.find("mtir_read_word(&"), std::string::npos);
  EXPECT_EQ(c.find("mtir_pack_bytes("), std::string::npos) << "every pack_bytes reads consecutive bytes";
  // Not on three channels (few_channels' int16 pairs); without sxtb16 too, the int16
  // weights packed in the gather's order.
  const Case three{"qconv2d", {1, 6, 5, 3}, {4, 3, 3, 3}, quant({{"padding", {1, 1, 1, 1}}})};
  EXPECT_EQ(depthwise_kernel_counts(three, m4).pack_bytes, 0);
  ScheduleOptions pairs = m4;
  pairs.sxtb16 = false;
  EXPECT_EQ(depthwise_kernel_counts(k, pairs).pack_bytes, on.pack_bytes);
}

// short_pairs: a 1x1 stride-2 layer of 16 input channels (IC's shortcuts; 26 pixels, 8 triples and a
// 2x2 tile) keeps int16 weights: no weight widened, word pairs (LDRD); from 64 channels on int8 weights.
TEST(QConv, ShortPairsKeepInt16WeightsOnShortReductions) {
  const json scales = {0.02, 0.03, 0.01, 0.04, 0.02, 0.05};
  const Case k{"qconv2d", {1, 4, 26, 16}, {6, 1, 1, 16}, quant({{"strides", {2, 2}}}, scales)};
  ScheduleOptions m4;
  m4.smlad = m4.sxtb16 = m4.smmlar_requant = true;
  m4.pixel_triples_stack = m4.pixel_triples_code = false;
  const json sched = prepare_quantized(one_node_graphs({k}), m4).nodes[0].attrs["schedule"];
  EXPECT_TRUE(!sched["sxtb16"].get<bool>() && sched["pair_loads"].get<bool>() && sched["word_gather"].get<bool>());
  const KernelCounts on = depthwise_kernel_counts(k, m4);
  // Only the gather widens (two per word of each pixel copy: the triple's and the pair's).
  EXPECT_EQ(on.sxtb16, 2 * 4 * 2);
  // The triple, the pair: 4 steps of two weight pairs and a gathered pair a pixel; two table pairs a channel.
  EXPECT_EQ(on.word_pairs, 4 * (2 + 3) + 4 + 4 * (2 + 2) + 4);
  EXPECT_EQ(on.smlad, 4 * 2 * 6 + 4 * 2 * 4);
  const Case eight{"qconv2d", {1, 4, 26, 8}, {6, 1, 1, 8}, quant({{"strides", {2, 2}}}, scales)};
  EXPECT_EQ(depthwise_kernel_counts(eight, m4).word_pairs, 2 * (2 + 3) + 2 + 2 * (2 + 2) + 2) << "one table pair";
  ScheduleOptions off = m4;
  off.short_pairs = false;
  const KernelCounts int8 = depthwise_kernel_counts(k, off);
  EXPECT_EQ(int8.word_pairs, 0);
  EXPECT_GT(int8.sxtb16, on.sxtb16) << "the weights widened in the tiles";
  EXPECT_EQ(depthwise_kernel_counts({"qconv2d", {1, 6, 6, 64}, {4, 1, 1, 64}, quant({})}, m4).word_pairs, 0);
}

// few_channel_pairs: a first layer of three input channels (VWW's 3x3, k = 27: seven steps
// of two words, 30 pixels: ten triples) loads its gathered and weight words as word_pair
// calls (one LDRD each in C): per step two weight pairs and three gathered pairs, then two
// table pairs a channel. Off (the LLVM backend's default), none; bit-exact both ways.
TEST(QConv, FewChannelPairsLoadFirstLayerWordsInPairs) {
  const Case k{"qconv2d", {1, 6, 10, 3}, {4, 3, 3, 3}, quant({{"padding", {1, 1, 1, 1}}, {"strides", {2, 2}}, {"activation", "relu"}}, {0.02, 0.03, 0.01, 0.04})};
  ScheduleOptions m4;
  m4.smlad = m4.sxtb16 = m4.smmlar_requant = true;
  m4.pixel_triples_stack = m4.pixel_triples_code = false;
  const json sched = prepare_quantized(one_node_graphs({k}), m4).nodes[0].attrs["schedule"];
  EXPECT_TRUE(sched["few_channels"].get<bool>() && sched["pair_loads"].get<bool>());
  EXPECT_EQ(depthwise_kernel_counts(k, m4).word_pairs, 7 * (2 + 3) + 2 * 2);
  ScheduleOptions off = m4;
  off.few_channel_pairs = false;
  EXPECT_FALSE(prepare_quantized(one_node_graphs({k}), off).nodes[0].attrs["schedule"]["pair_loads"].get<bool>());
  EXPECT_EQ(depthwise_kernel_counts(k, off).word_pairs, 0);
  EXPECT_TRUE(parse_target("c -mcpu=cortex-m4").schedules.few_channel_pairs);
  EXPECT_FALSE(parse_target("llvm -mtriple=thumbv7em-none-eabihf -mcpu=cortex-m4").schedules.few_channel_pairs);
  run_all_schedules(k, "conv 3x3 3->4 stride 2 relu");
}

TEST(QConv, ShortPairsBitExact) {
  for (int64_t w : {26, 10})  // two pixels left over (a 2x2 tile), one (rolled)
    run_all_schedules({"qconv2d", {1, w == 26 ? 4 : 10, w, 16}, {6, 1, 1, 16}, quant({{"strides", {2, 2}}})}, "conv 1x1 16->6 stride 2");
  run_all_schedules({"qconv2d", {1, 4, 26, 32}, {5, 1, 1, 32}, quant({{"strides", {2, 2}}, {"activation", "relu"}}, {0.1, 0.2, 0.05, 0.3, 0.15})},
                    "conv 1x1 32->5 stride 2 per-channel");
}

TEST(QConv, WordGatherEveryTapBitExact) {
  run_all_schedules({"qconv2d", {1, 6, 5, 8}, {4, 3, 3, 8}, quant({{"padding", {1, 1, 1, 1}}, {"activation", "relu"}})},
                    "conv 3x3 8->4 pad 1");
  run_all_schedules({"qconv2d", {2, 7, 6, 12}, {3, 3, 2, 12}, quant({{"padding", {0, 1, 2, 0}}, {"strides", {2, 1}},
                                                                       {"dilation", {1, 2}}})},
                    "conv 3x2 12->3 stride (2, 1) dilation (1, 2), N=2");
}

// pixel_triples_stack: a 3x3-pixel layer of k = 256 (VWW's last pointwise layer) would
// raise the deepest im2col scratch from two pixels' 1,024 bytes to three pixels' 1,536
// for 589,824 x 5/48 = 61,440 instructions, 120 a byte: it runs in pairs. A 6x6-pixel
// layer of k = 128 keeps its triple (768 bytes, under the 1,024 that stay), and so does
// the k = 256 layer with 6x6 pixels (245,760 instructions for 512 bytes).
TEST(QConv, PixelTriplesWhereTheyPayForTheirStack) {
  const Case deep{"qconv2d", {1, 3, 3, 256}, {256, 1, 1, 256}, quant({})};
  const Case wide{"qconv2d", {1, 6, 6, 128}, {128, 1, 1, 128}, quant({})};
  const Case deep_wide{"qconv2d", {1, 6, 6, 256}, {256, 1, 1, 256}, quant({})};
  ScheduleOptions m4;
  m4.smlad = m4.sxtb16 = true;
  EXPECT_EQ(triples_saved_instructions(589824, true), 61440);
  const Graph g = one_node_graphs({deep, wide});
  EXPECT_EQ(triples_over_budget(g, m4), std::set<std::string>{"y0"});
  EXPECT_EQ(triples_over_budget(one_node_graphs({deep_wide, wide}), m4), std::set<std::string>{});
  // The nodes as prepared: pairs where the rule says so, triples again with it off.
  auto triples = [&](const ScheduleOptions& o, const std::string& node) {
    return prepare_quantized(g, o).find_node(node)->attrs["schedule"]["pixel_triples"].get<bool>();
  };
  EXPECT_FALSE(triples(m4, "y0"));
  EXPECT_TRUE(triples(m4, "y1"));
  ScheduleOptions everywhere = m4;
  everywhere.pixel_triples_stack = false;
  EXPECT_TRUE(triples(everywhere, "y0"));
  // A schedule record's choice stands.
  ScheduleOptions recorded = m4;
  recorded.per_node["y0"]["pixel_triples"] = true;
  EXPECT_EQ(triples_over_budget(g, recorded), std::set<std::string>{});
  EXPECT_TRUE(triples(recorded, "y0"));
  // Not under mve (the Helium core), nor without triples.
  ScheduleOptions helium = m4;
  helium.mve = true;
  EXPECT_EQ(triples_over_budget(g, helium), std::set<std::string>{});
  ScheduleOptions pairs = m4;
  pairs.pixel_triples = false;
  EXPECT_EQ(triples_over_budget(g, pairs), std::set<std::string>{});
}

// pixel_triples_code: IC's 1x1 shortcut of k = 32 on 8x8 pixels, 64 channels, saves
// 131,072 x 5/48 = 13,653 instructions with triples for 4 x (5 x 8 + 20) = 240 bytes of
// code (eight unrolled quad steps), under 64 a byte: pairs. With sixteen times the pixels
// it keeps them, and with the rule off too.
TEST(QConv, PixelTriplesWhereTheyPayForTheirCode) {
  const Case shortcut{"qconv2d", {1, 8, 8, 32}, {64, 1, 1, 32}, quant({})};
  const Case wide{"qconv2d", {1, 32, 32, 32}, {64, 1, 1, 32}, quant({})};
  ScheduleOptions m4;
  m4.smlad = m4.sxtb16 = true;
  EXPECT_EQ(triples_code_bytes(8, true), 240);
  EXPECT_EQ(triples_over_budget(one_node_graphs({shortcut, wide}), m4), std::set<std::string>{"y0"});
  ScheduleOptions everywhere = m4;
  everywhere.pixel_triples_code = false;
  EXPECT_EQ(triples_over_budget(one_node_graphs({shortcut, wide}), everywhere), std::set<std::string>{});
}

TEST(QConv, SaturationAndNoBias) {
  // Large weights and a small output scale: most outputs clamp at -128 or 127.
  Case k{"qconv2d", {1, 4, 4, 16}, {4, 3, 3, 16}, quant({{"output_scale", 0.01}, {"input_zero_point", 0}})};
  k.bias = false;
  run_all_schedules(k, "conv saturating, no bias");
}

// Patch-based inference (executor/patch_stages.h): the MobileNet-shaped chain
// 16x16x3 -> conv 3x3 s2 -> depthwise 3x3 -> pointwise -> depthwise 3x3 s2 runs band by
// band, each band recomputing its halo, and gives the bytes of the whole-tensor run. The
// recomputation budget decides the bands (a larger one buys more bands and a lower bound).
TEST(QConv, ChainRunsBandByBandBitForBit) {
  std::mt19937 rng(77);
  auto values = [&](const Shape& shape, int lo, int hi) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    std::uniform_int_distribution<int> d(lo, hi);
    std::vector<int64_t> v(n);
    for (auto& e : v) e = d(rng);
    return v;
  };
  Graph g;
  g.name = "patched";
  g.inputs = {{"x", TensorType{DataType::Int(8), {1, 16, 16, 3}}}};
  struct Layer {
    const char* name;
    Shape weight;
    json attrs;
  };
  const std::vector<Layer> layers = {
      {"c0", {8, 3, 3, 3}, quant({{"strides", {2, 2}}, {"padding", {0, 0, 1, 1}}, {"activation", "relu6"}})},
      {"c1", {8, 3, 3, 1}, quant({{"padding", {1, 1, 1, 1}}, {"groups", 8}, {"activation", "relu6"}},
                                 {0.01, 0.02, 0.015, 0.03, 0.025, 0.02, 0.01, 0.03})},
      {"c2", {16, 1, 1, 8}, quant({{"activation", "relu6"}})},
      {"c3", {16, 3, 3, 1}, quant({{"strides", {2, 2}}, {"padding", {0, 0, 1, 1}}, {"groups", 16}})}};
  std::string previous = "x";
  for (const Layer& l : layers) {
    GraphNode node;
    node.name = l.name;
    node.op = "qconv2d";
    g.constants[std::string(l.name) + "_w"] = array_of(DataType::Int(8), l.weight, values(l.weight, -60, 60));
    g.constants[std::string(l.name) + "_b"] = array_of(DataType::Int(32), {l.weight[0]}, values({l.weight[0]}, -900, 900));
    node.inputs = {previous, std::string(l.name) + "_w", std::string(l.name) + "_b"};
    node.attrs = l.attrs;
    node.type = find_op("qconv2d")->infer({g.type_of(previous), TensorType{DataType::Int(8), l.weight},
                                            TensorType{DataType::Int(32), {l.weight[0]}}},
                                           node.attrs);
    g.nodes.push_back(node);
    previous = l.name;
  }
  g.outputs = {"c3"};
  const std::vector<int64_t> input = values({1, 16, 16, 3}, -128, 127);
  auto run = [&](const Graph& prepared, const AotModule& aot) { return run_int8_aot(prepared, aot, input); };
  for (bool smlad : {false, true}) {
    ScheduleOptions o;
    o.smlad = smlad;
    const Graph prepared = prepare_quantized(g, o);
    AotOptions whole;
    whole.patch = false;
    const NDArray want = run(prepared, build_aot(prepared, whole)).back();
    // Whole tensors: 512 + 1,024 bytes live at the pointwise layer.
    EXPECT_EQ(plan_patch_stages(prepared, 0).whole_tensor_bound, 1536);
    EXPECT_TRUE(plan_patch_stages(prepared, 0).stages.empty());
    // A chain that skips a layer, or more bands than output rows, is refused by name.
    try {
      make_patch_stage(prepared, {0, 2}, 2);
      ADD_FAILURE() << "a broken chain was accepted";
    } catch (const DiagnosticError& e) {
      EXPECT_NE(e.diagnostics().at(0).message.find("node 'c2' does not read 'c0'"), std::string::npos);
    }
    EXPECT_THROW(make_patch_stage(prepared, {0, 1, 2, 3}, 5), DiagnosticError);
    int64_t last_bound = 1536;
    for (int64_t percent : {25, 100}) {
      const std::string label = std::string("chain, ") + (smlad ? "smlad" : "no smlad") + ", recompute budget " +
                                std::to_string(percent) + "%";
      SCOPED_TRACE(label);
      const PatchPlan plan = plan_patch_stages(prepared, percent);
      ASSERT_EQ(plan.stages.size(), 1u);
      EXPECT_EQ(plan.stages[0].nodes, (std::vector<size_t>{0, 1, 2, 3}));
      EXPECT_LT(plan.patched_bound, last_bound);
      EXPECT_LE(plan.recomputed_macs, plan.model_macs * percent / 100);
      EXPECT_GT(plan.recomputed_macs, 0);
      last_bound = plan.patched_bound;
      // The bands cover the output rows once, in order, and each layer reads what the one
      // before it wrote.
      int64_t next_row = 0;
      for (const auto& band : plan.stages[0].bands) {
        EXPECT_EQ(band.back().out_begin, next_row);
        next_row += band.back().out_rows;
        for (size_t l = 1; l < band.size(); ++l) {
          EXPECT_EQ(band[l].in_begin, band[l - 1].out_begin);
          EXPECT_EQ(band[l].in_rows, band[l - 1].out_rows);
        }
      }
      EXPECT_EQ(next_row, 4);
      AotOptions patched;
      patched.patch_max_recomputed_percent = percent;
      patched.patch_overlap = false;  // the chain alone; PatchOverlap below has the overlap
      Graph named = prepared;  // the backend run links every case into one program
      named.name = "patched" + std::to_string(case_counter++);
      AotModule aot = build_aot(named, patched);
      const PrimFunc main = aot.module.lookup(aot.main);
      EXPECT_EQ(std::get<int64_t>(main->attrs.at("patch.bound_bytes")), plan.patched_bound);
      EXPECT_EQ(std::get<int64_t>(main->attrs.at("patch.whole_tensor_bound_bytes")), 1536);
      std::vector<NDArray> arrays = run(prepared, aot);
      EXPECT_EQ(arrays.back().data, want.data);
      backend_cases::record_module(label, aot.module, aot.main, arrays);
    }
  }
}

// A 1x1 convolution with padding 1 (valid in ONNX) has output rows whose window is all
// padding: a band of only such a row reads no input rows. The planner passes over those
// band counts instead of failing the build, and the patched run equals the whole one.
TEST(QConv, PatchPlannerSkipsBandsOfOnlyPadding) {
  Graph g;
  g.name = "pad_only_rows";
  g.inputs = {{"x", TensorType{DataType::Int(8), {1, 6, 5, 2}}}};
  std::string previous = "x";
  const std::vector<std::pair<Shape, json>> layers = {{{4, 3, 3, 2}, quant({{"padding", {1, 1, 1, 1}}})},
                                                      {{3, 1, 1, 4}, quant({{"padding", {1, 1, 1, 1}}})}};
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> d(-60, 60);
  for (size_t l = 0; l < layers.size(); ++l) {
    const auto& [w, attrs] = layers[l];
    const std::string name = "c" + std::to_string(l);
    std::vector<int64_t> wv(w[0] * w[1] * w[2] * w[3]);
    for (auto& e : wv) e = d(rng);
    previous = append_qconv(g, name, previous, w, wv, attrs);
  }
  g.outputs = {previous};
  EXPECT_THROW(make_patch_stage(g, {0, 1}, 8), DiagnosticError);  // band 0 is row 0 alone
  const PatchPlan plan = plan_patch_stages(g, 100);
  ASSERT_EQ(plan.stages.size(), 1u);
  for (const auto& stage : plan.stages)
    for (const auto& band : stage.bands)
      for (const auto& layer : band) EXPECT_GT(layer.in_rows, 0);
  std::vector<int64_t> input(60);
  for (auto& e : input) e = d(rng);
  auto run = [&](const AotOptions& options) { return run_int8_aot(g, build_aot(g, options), input).back(); };
  AotOptions whole, patched;
  whole.patch = false;
  patched.patch_max_recomputed_percent = 100;
  EXPECT_EQ(run(patched).data, run(whole).data);
}

// patch_overlap: KWS's shape (a pointwise layer, then depthwise 3x3 and pointwise twice,
// the same shape throughout, and a last pointwise layer). Every layer may be a stage of
// bands with no halo to recompute; a stage whose input dies in it gets its output a row or
// so beside that input (consecutive stages alternate sides), the planned pool
// (plan_memory, the overlap proved from the band calls) holds little more than one
// tensor, and the planned main computes the whole-tensor run's bytes.
TEST(QConv, PatchOverlapWritesBesideTheInput) {
  std::mt19937 rng(41);
  auto values = [&](const Shape& shape) { return random_values(rng, shape); };
  Graph g;
  g.name = "overlapped";
  g.inputs = {{"x", TensorType{DataType::Int(8), {1, 6, 3, 8}}}};
  std::string previous = "x";
  for (int k = 0; k < 6; ++k) {
    const bool depthwise = k == 1 || k == 3;
    const Shape w = depthwise ? Shape{8, 3, 3, 1} : Shape{8, 1, 1, 8};
    const std::string name = "c" + std::to_string(k);
    json attrs = depthwise ? quant({{"padding", {1, 1, 1, 1}}, {"groups", 8}, {"activation", "relu"}})
                           : quant({{"activation", "relu"}});
    previous = append_qconv(g, name, previous, w, values(w), attrs);
  }
  g.outputs = {previous};
  const Graph prepared = prepare_quantized(g, ScheduleOptions{});
  const PatchPlan plan = plan_patch_stages(prepared, 0, true);
  EXPECT_EQ(plan.whole_tensor_bound, 288);  // two tensors of 144 bytes at every layer
  EXPECT_EQ(plan.recomputed_macs, 0);
  ASSERT_FALSE(plan.stages.empty());
  bool both_sides = false;
  for (size_t s = 1; s < plan.stages.size(); ++s)
    both_sides = both_sides || plan.stages[s].bottom_up != plan.stages[s - 1].bottom_up;
  EXPECT_TRUE(both_sides);
  EXPECT_EQ(plan.patched_bound, 144 + 32 + 32);  // one tensor, a row (24 bytes, aligned) beside, a band
  const std::vector<int64_t> input = values({1, 6, 3, 8});
  const NDArray want = expect_planned_run_bit_exact(prepared, input, 240);
  // A whole-model schedule: a per-layer schedule record may not name it.
  EXPECT_TRUE(is_model_schedule("patch_overlap"));
  // -disabled-schedules=patch_overlap: the stages of before (none here: no halo pays).
  AotOptions plain;
  plain.patch_overlap = false;
  EXPECT_TRUE(plan_patch_stages(prepared, 0, false).stages.empty());
  EXPECT_EQ(run_int8_aot(prepared, build_aot(prepared, plain), input).back().data, want.data);
}

// A residual block that halves its rows (IC's second and third blocks): a 3x3 stride-2
// convolution, a 3x3 convolution and a 1x1 stride-2 shortcut, added. The add fuses into
// the 3x3 convolution (the first of its producers), which runs where the add is, so the
// shortcut runs second and its input dies in it: the shortcut may be a one-layer stage
// written beside that input, while the convolution the add fuses into may not.
TEST(QConv, PatchStageMayProduceTheResidual) {
  std::mt19937 rng(43);
  auto values = [&](const Shape& shape) { return random_values(rng, shape); };
  Graph g;
  g.name = "residual_stage";
  g.inputs = {{"x", TensorType{DataType::Int(8), {1, 8, 8, 4}}}};
  const json pad1 = quant({{"padding", {1, 1, 1, 1}}, {"activation", "relu"}});
  const std::string a = append_qconv(g, "c0", "x", {8, 3, 3, 4}, values({8, 3, 3, 4}), pad1);
  const std::string down = append_qconv(g, "c1", a, {16, 3, 3, 8}, values({16, 3, 3, 8}),
                                        quant({{"padding", {0, 0, 1, 1}}, {"strides", {2, 2}}}));
  const std::string conv = append_qconv(g, "c2", down, {16, 3, 3, 16}, values({16, 3, 3, 16}), pad1);
  const std::string shortcut = append_qconv(g, "c3", a, {16, 1, 1, 8}, values({16, 1, 1, 8}), quant({{"strides", {2, 2}}}));
  append_qadd(g, "s", shortcut, conv);
  g.outputs = {append_qconv(g, "y", "s", {4, 1, 1, 16}, values({4, 1, 1, 16}), quant({}))};
  const Graph prepared = prepare_quantized(g, ScheduleOptions{});
  EXPECT_EQ(fused_reader_of(prepared)[2], std::optional<size_t>(4));
  EXPECT_EQ(fused_reader_of(prepared)[3], std::nullopt);
  std::string why;
  EXPECT_FALSE(patchable_conv(prepared, 2, &why));
  EXPECT_NE(why.find("elementwise op 's' fuses into it"), std::string::npos) << why;
  EXPECT_TRUE(patchable_conv(prepared, 3, &why)) << why;
  const PatchPlan plan = plan_patch_stages(prepared, 0, true);
  // Whole tensors: c0's 512 bytes with c1's and the shortcut's 256 each at the shortcut.
  EXPECT_EQ(plan.whole_tensor_bound, 1024);
  ASSERT_FALSE(plan.stages.empty());
  EXPECT_EQ(plan.stages[0].nodes, (std::vector<size_t>{3}));
  EXPECT_EQ(plan.patched_bound, 512 + 64 + 256);  // c0's output, a row beside it, c1's
  const std::vector<int64_t> input = values({1, 8, 8, 4});
  expect_planned_run_bit_exact(prepared, input, plan.patched_bound);
}

// patch_residual: IC's first block in small. r = conv(x); y = add(conv2(conv1(r)), r).
// The stage conv1 -> conv2 ends in conv2 with the add fused (reading the band's rows of
// r), conv1's two halo rows carried from band to band, the add's output over r in place;
// plan_memory proves it (call_overlap's in-place reads) and the bytes are the whole run's.
TEST(QConv, ResidualStageWritesOverTheResidual) {
  std::mt19937 rng(41);
  auto values = [&](const Shape& shape) { return random_values(rng, shape); };
  Graph g;
  g.name = "residual_block";
  g.inputs = {{"x", TensorType{DataType::Int(8), {1, 12, 6, 3}}}};
  const json relu = quant({{"padding", {1, 1, 1, 1}}, {"activation", "relu"}});
  const std::string r = append_qconv(g, "c0", "x", {8, 3, 3, 3}, values({8, 3, 3, 3}), relu);
  const std::string c1 = append_qconv(g, "c1", r, {8, 3, 3, 8}, values({8, 3, 3, 8}), relu);
  const std::string c2 = append_qconv(g, "c2", c1, {8, 3, 3, 8}, values({8, 3, 3, 8}), quant({{"padding", {1, 1, 1, 1}}}));
  append_qadd(g, "s", r, c2);
  g.outputs = {append_qconv(g, "y", "s", {4, 1, 1, 8}, values({4, 1, 1, 8}), quant({}))};
  const Graph prepared = prepare_quantized(g, ScheduleOptions{});
  std::string why;
  EXPECT_FALSE(patchable_conv(prepared, 2, &why));
  EXPECT_EQ(residual_add_of(prepared, 2, &why), std::optional<size_t>(3)) << why;
  EXPECT_EQ(residual_add_of(prepared, 1, &why), std::nullopt);
  EXPECT_EQ(why, "no elementwise op fuses into it");
  // Four bands of three rows: conv1 computes rows 0-3, then keeps rows 2-3 and adds 4-6, ...
  const PatchStage stage = make_patch_stage(prepared, {1, 2}, 4, true);
  EXPECT_EQ(stage.fused, std::optional<size_t>(3));
  EXPECT_EQ(stage.recomputed_macs, 0);
  EXPECT_EQ(stage.bands[1][0].carried, 2);
  EXPECT_EQ(stage.bands[1][0].out_begin, 4);
  EXPECT_EQ(stage.bands[1][0].in_begin, 3);  // r's rows 3-7: none a band before wrote
  EXPECT_EQ(overlap_shift(prepared, stage), 0);
  // conv2's padding rows are zero-point rows of conv1's buffer: every band one kernel.
  EXPECT_EQ(stage.bands[0][1].zero_top, 1);
  EXPECT_EQ(stage.bands[3][1].zero_bottom, 1);
  for (const auto& band : stage.bands)
    EXPECT_EQ(std::make_tuple(band[1].in_rows, band[1].pad_top, band[1].pad_bottom), std::make_tuple(5, 0, 0));
  // Twelve one-row bands would move conv1's two kept rows of a three-row buffer over themselves.
  EXPECT_THROW(make_patch_stage(prepared, {1, 2}, 12, true), DiagnosticError);
  // The add must read the stage's input: a stage of conv2 alone would add c0's rows to conv2(c1).
  try {
    make_patch_stage(prepared, {2}, 2, true);
    ADD_FAILURE() << "a residual stage whose add does not read its input";
  } catch (const DiagnosticError& e) {
    EXPECT_NE(std::string(e.what()).find("does not add the stage's input 'c1'"), std::string::npos) << e.what();
  }
  const PatchPlan plan = plan_patch_stages(prepared, 0, true, true);
  ASSERT_EQ(plan.stages.size(), 1u);
  EXPECT_EQ(plan.stages[0].nodes, (std::vector<size_t>{1, 2}));
  // Whole: r and conv1's output (576 bytes each) and c2's; residual stage: r, a carried band buffer.
  EXPECT_LT(plan.patched_bound, plan_patch_stages(prepared, 0, true, false).patched_bound);
  EXPECT_LE(plan.patched_bound, 576 + 5 * 48);
  const std::vector<int64_t> input = values({1, 12, 6, 3});
  expect_planned_run_bit_exact(prepared, input, plan.patched_bound);
  // -disabled-schedules=patch_residual: no stage ends in the add.
  EXPECT_TRUE(is_model_schedule("patch_residual"));
  AotOptions plain;
  plain.patch_residual = false;
  AotModule without = build_aot(prepared, plain);
  EXPECT_EQ(without.band_kernel_of.count("tvmgen_residual_block_c2_band0"), 0u);
  const AotModule with = build_aot(prepared, AotOptions{});
  EXPECT_EQ(with.band_kernel_of.count("tvmgen_residual_block_c2_band0"), 1u);
  EXPECT_EQ(with.band_kernel_of.count("tvmgen_residual_block_c2_band1"), 0u);
  EXPECT_EQ(with.band_kernel_of.count("tvmgen_residual_block_c1_zero_rows0"), 1u);
  AotOptions whole;
  whole.patch = false;
  EXPECT_EQ(run_int8_aot(prepared, without, input).back().data,
            run_int8_aot(prepared, build_aot(prepared, whole), input).back().data);
}

// The planner's choices pinned on a graph with a view between two chains, strides and
// depthwise layers: each stage's layers, band count and direction, the bounds, the
// recomputed MACs and the step profile, with and without overlap and at several
// budgets. A faster planner (patch_profile.cc evaluates candidates on integer ids) must
// choose exactly what the name-keyed one chose.
TEST(QConv, PatchPlanIsPinned) {
  Graph g;
  g.name = "pinned_plan";
  g.inputs = {{"x", TensorType{DataType::Int(8), {1, 24, 12, 4}}}};
  std::mt19937 rng(7);
  auto weight = [&](const Shape& w) { return random_values(rng, w); };
  const json pad1 = quant({{"padding", {1, 1, 1, 1}}});
  std::string at = append_qconv(g, "c0", "x", {8, 3, 3, 4}, weight({8, 3, 3, 4}), pad1);
  at = append_qconv(g, "c1", at, {8, 1, 1, 8}, weight({8, 1, 1, 8}), quant({}));
  at = append_qconv(g, "c2", at, {8, 3, 3, 1}, weight({8, 3, 3, 1}),
                    quant({{"padding", {1, 1, 1, 1}}, {"strides", {2, 2}}, {"groups", 8}}));
  GraphNode view;  // a reshape to the same shape: a view, its uses count for c2
  view.name = "r0", view.op = "reshape", view.inputs = {at}, view.attrs = {{"newshape", {1, 12, 6, 8}}};
  view.type = find_op("reshape")->infer({g.type_of(at)}, view.attrs);
  g.nodes.push_back(view);
  at = append_qconv(g, "c3", "r0", {16, 1, 1, 8}, weight({16, 1, 1, 8}), quant({}));
  at = append_qconv(g, "c4", at, {16, 3, 3, 1}, weight({16, 3, 3, 1}), quant({{"padding", {1, 1, 1, 1}}, {"groups", 16}}));
  at = append_qconv(g, "c5", at, {8, 1, 1, 16}, weight({8, 1, 1, 16}), quant({}));
  g.outputs = {at};
  auto describe = [&](int64_t percent, bool overlap) {
    const PatchPlan plan = plan_patch_stages(g, percent, overlap);
    std::string text = "bound " + std::to_string(plan.whole_tensor_bound) + " -> " + std::to_string(plan.patched_bound) +
                       ", recomputed " + std::to_string(plan.recomputed_macs) + ";";
    for (const PatchStage& s : plan.stages) {
      text += " [";
      for (size_t n : s.nodes) text += g.nodes[n].name + " ";
      text += "x" + std::to_string(s.bands.size()) + (s.bottom_up ? " up" : "") + "]";
    }
    text += " profile";
    for (int64_t live : patched_profile(g, plan.stages, overlap)) text += " " + std::to_string(live);
    return text;
  };
  EXPECT_EQ(describe(0, false),
            "bound 4608 -> 2880, recomputed 0; [c0 c1 x4] profile 2880 2880 2880 2880 2880 2304 1728 1152 576 0");
  EXPECT_EQ(describe(3, false),
            "bound 4608 -> 2880, recomputed 0; [c0 c1 x4] profile 2880 2880 2880 2880 2880 2304 1728 1152 576 0");
  EXPECT_EQ(describe(100, false),
            "bound 4608 -> 2304, recomputed 8448; [c0 c1 c2 x3] profile 2304 2304 2304 1728 1536 1440 1440 1440 1440 1344 1152 768 0");
  EXPECT_EQ(describe(0, true),
            "bound 4608 -> 2400, recomputed 0; [c1 x24] [c2 x7 up] profile 2400 2352 2304 2304 1728 1152 0");
  EXPECT_EQ(describe(3, true),
            "bound 4608 -> 2784, recomputed 3840; [c1 c2 x6] profile 2784 2784 2784 2784 2784 2688 2688 2304 2304 1728 1152 1056 0");
  EXPECT_EQ(describe(100, true),
            "bound 4608 -> 2592, recomputed 8448; [c1 c2 x12] profile 2592 2592 2592 2592 2592 2592 2592 2592 2592 2592 2592 2496 2496 2304 2304 1728 1152 864 0");
}

TEST(QDense, PerTensorAndPerChannel) {
  run_all_schedules({"qdense", {1, 10}, {7, 10}, quant({})}, "dense 10->7");
  // Batch 1, 150 inputs, 3 outputs: dense_chunks (two chunks of 64, a tail of 22 that
  // ends in a half weight word with sxtb16).
  run_all_schedules({"qdense", {1, 150}, {3, 150}, quant({})}, "dense 150->3, chunked");
  run_all_schedules({"qdense", {3, 9}, {4, 9}, quant({{"activation", "relu"}}, {0.01, 0.02, 0.015, 0.03})},
                    "dense 9->4, N=3, per-channel");
  // Multipliers near 1 and above: some channels shift left, so the table keeps TFLite's
  // general (multiplier, shift) form.
  run_all_schedules({"qdense", {2, 12}, {5, 12}, quant({{"output_scale", 0.002}}, {0.01, 0.02, 0.015, 0.03, 0.012})},
                    "dense 12->5, per-channel multipliers near 1");
  run_all_schedules({"qdense", {2, 12}, {5, 12}, quant({{"output_scale", 0.0004}}, {0.001, 0.02, 0.0015, 0.03, 0.012})},
                    "dense 12->5, per-channel multipliers above 1 (left shifts)");
}

// dense_chunks keeps the kernel's stack scratch (the sums of a group of channels and one
// chunk of the gathered row) at 256 bytes however many channels: 71 channels run as groups
// of 32, 32 and 7 (an odd last channel), each gathering the row again, bit for bit.
TEST(QDense, ChunkedDenseRunsInGroupsOfChannels) {
  run_all_schedules({"qdense", {1, 640}, {71, 640}, quant({})}, "dense 640->71, chunked in groups");
  json attrs = quant({{"weight_shape", {71, 640}},
                      {"schedule", {{"smlad", true}, {"sxtb16", true}, {"block", true}, {"unroll", true},
                                    {"dense_chunks", true}}}});
  PrimFunc f = find_op("qdense")->build("k", {{DataType::Int(8), {1, 640}}, {DataType::Int(32), {71, 160}}, {DataType::Int(32), {71}}},
                                        TensorType{DataType::Int(8), {1, 71}}, attrs);
  struct LocalBytes : Visitor {
    std::map<std::string, int64_t> bytes;
    void visit_Allocate(const AllocateNode* op) override {
      int64_t n = 0;
      if (op->scope == "local" && const_num_elements(op->buffer, &n))
        bytes[op->buffer->name] = n * op->buffer->dtype.bytes();
      Visitor::visit_Allocate(op);
    }
  } locals;
  locals.visit(f->body);
  EXPECT_EQ(locals.bytes["sums"], 32 * 4) << "one group's sums";
  EXPECT_EQ(locals.bytes["col"], 32 * 4) << "one chunk of 64 values as int16 pairs";
}

// pair_loads: a batch-1 dense with int16 weights (smlad without sxtb16) reads its weight
// and gathered words as word_pair calls (one LDRD each in C), two words per call; without
// the schedule, or with int8 weights (sxtb16), none. 33 inputs: 17 words, the last one alone.
TEST(QDense, PairLoadsReadInt16WeightsTwoWordsAtATime) {
  auto pairs = [](bool pair_loads, bool sxtb16) {
    json attrs = quant({{"weight_shape", {5, 33}},
                        {"schedule", {{"smlad", true}, {"sxtb16", sxtb16}, {"block", true}, {"unroll", true},
                                      {"interleave", true}, {"pair_loads", pair_loads}}}});
    const int64_t words = sxtb16 ? 9 : 17;
    PrimFunc f = find_op("qdense")->build("k", {{DataType::Int(8), {1, 33}}, {DataType::Int(32), {5, words}}, {DataType::Int(32), {5}}},
                                          TensorType{DataType::Int(8), {1, 5}}, attrs);
    struct Count : Visitor {
      int n = 0;
      void visit_Call(const CallNode* op) override {
        n += op->op == "word_pair";
        Visitor::visit_Call(op);
      }
    } count;
    count.visit(f->body);
    return count.n;
  };
  // Eight steps of two words (one unrolled pass) in each of the two tiles' code (the loop
  // over channel pairs, the odd last channel): the input pair and two weight pairs for a
  // channel pair, the input pair and one for the last channel.
  EXPECT_EQ(pairs(true, false), 8 * (1 + 2) + 8 * (1 + 1));
  EXPECT_EQ(pairs(false, false), 0);
  EXPECT_EQ(pairs(true, true), 0);
}

TEST(QConv, RefusesBadInputs) {
  auto infer = [](const std::string& op, std::vector<TensorType> in, json attrs) {
    try {
      find_op(op)->infer(in, attrs);
    } catch (const DiagnosticError& e) {
      return e.diagnostics().at(0).message;
    }
    return std::string("no error");
  };
  const DataType i8 = DataType::Int(8), i32 = DataType::Int(32);
  TensorType x{i8, {1, 4, 4, 3}}, w{i8, {2, 3, 3, 3}};
  EXPECT_NE(infer("qconv2d", {TensorType{DataType::Float(32), {1, 4, 4, 3}}, w}, quant({})).find("data must be int8"),
            std::string::npos);
  EXPECT_NE(infer("qconv2d", {x, w, TensorType{i32, {3}}}, quant({})).find("bias must have shape (2,)"), std::string::npos);
  EXPECT_EQ(infer("qconv2d", {x, w}, quant({}, {0.1, 0.2})), "no error");  // the table comes with prepare_quantized
  try {
    find_op("qconv2d")->build("k", {x, w}, TensorType{i8, {1, 2, 2, 2}}, quant({}, {0.1, 0.2}));
    ADD_FAILURE() << "built per-channel qconv2d without its table";
  } catch (const DiagnosticError& e) {
    EXPECT_NE(e.diagnostics().at(0).message.find("requantization table"), std::string::npos);
  }
  EXPECT_NE(infer("qconv2d", {x, w}, quant({{"schedule", {{"smlad", true}}}})).find("packed"), std::string::npos);
  EXPECT_NE(infer("qconv2d", {x, w}, quant({{"schedule", {{"few_channels", true}}}})).find("'few_channels' needs schedule 'smlad'"),
            std::string::npos);
  EXPECT_NE(infer("qconv2d", {x, w}, quant({{"schedule", {{"sxtb16", true}}}})).find("'sxtb16' needs schedule 'smlad'"),
            std::string::npos);
  // smmlar_requant without a ReLU takes the accumulator's sign for the high word's, true
  // for multipliers above 2^30 only (m = 0.25 is 2^30); a left shift (m = 2.5) has no form.
  EXPECT_EQ(infer("qconv2d", {x, w}, quant({{"schedule", {{"smmlar_requant", true}}}})), "no error");
  EXPECT_NE(infer("qconv2d", {x, w}, quant({{"output_scale", 0.004}, {"schedule", {{"smmlar_requant", true}}}}))
                .find("'smmlar_requant' without a ReLU (output lower bound -128 below the zero point 3) needs every "
                      "multiplier above 2^30, got 1073741824"),
            std::string::npos);
  EXPECT_NE(infer("qconv2d", {x, w}, quant({{"output_scale", 0.0004}, {"schedule", {{"smmlar_requant", true}}}}))
                .find("'smmlar_requant' needs a multiplier in [2^30, 2^31) with a right shift of at most 31"),
            std::string::npos);
  EXPECT_NE(infer("qconv2d", {x, w, TensorType{i32, {2, 3}}},
                  quant({{"schedule", {{"smmlar_requant", true}, {"smlal_requant", false}}}}, {0.1, 0.2}))
                .find("'smmlar_requant' on a requant table needs schedule 'smlal_requant'"),
            std::string::npos);
  // A packed weight of the wrong width for its schedule: 27 weights are 7 words of four, not 14 pairs.
  json packed = quant({{"weight_shape", {2, 3, 3, 3}}, {"schedule", {{"smlad", true}, {"sxtb16", true}}}});
  EXPECT_EQ(infer("qconv2d", {x, TensorType{i32, {2, 7}}}, packed), "no error");
  EXPECT_NE(infer("qconv2d", {x, TensorType{i32, {2, 14}}}, packed).find("the packed weight must have shape (2, 7), got (2, 14)"),
            std::string::npos);
  EXPECT_NE(infer("qconv2d", {x, w}, quant({{"schedule", {{"fast", true}}}})).find("unknown schedule 'fast'"),
            std::string::npos);
  EXPECT_NE(infer("qdense", {TensorType{i8, {1, 5}}, TensorType{i8, {3, 4}}}, quant({})).find("4 input features"),
            std::string::npos);
  // The onnx rule: its own attributes, uint8 only with it, NCHW only with it.
  const DataType u8 = DataType::UInt(8);
  json onnx = {{"requant", "onnx"}, {"onnx_multiplier", {3, 9}}, {"output_dtype", "uint8"}, {"input_zero_point", 200}};
  EXPECT_EQ(infer("qconv2d", {TensorType{u8, {1, 4, 4, 3}}, w}, onnx), "no error");
  EXPECT_NE(infer("qconv2d", {TensorType{u8, {1, 4, 4, 3}}, w}, quant({})).find("data must be int8, got uint8"),
            std::string::npos);
  EXPECT_NE(infer("qconv2d", {x, w}, onnx).find("'input_zero_point' must be a value of the data's type int8, got 200"),
            std::string::npos);
  json with_scale = onnx;
  with_scale["input_scale"] = 0.1;
  EXPECT_NE(infer("qconv2d", {TensorType{u8, {1, 4, 4, 3}}, w}, with_scale).find("'input_scale' does not apply"),
            std::string::npos);
  json bad_multiplier = onnx;
  bad_multiplier["onnx_multiplier"] = {1 << 24, 9};
  EXPECT_NE(infer("qconv2d", {TensorType{u8, {1, 4, 4, 3}}, w}, bad_multiplier).find("M in [0, 2^24)"), std::string::npos);
  EXPECT_NE(infer("qconv2d", {x, w}, quant({{"layout", "NCHW"}})).find("layout \"NCHW\" needs requant \"onnx\""),
            std::string::npos);
  json nchw = onnx;
  nchw["layout"] = "NCHW";
  EXPECT_EQ(infer("qconv2d", {TensorType{u8, {1, 3, 4, 4}}, w}, nchw), "no error");
  EXPECT_NE(infer("qlinear_avg_pool", {TensorType{u8, {1, 3, 4, 4}}}, {{"global", true}, {"zero_point", -1}})
                .find("zero_point"),
            std::string::npos);
}


// ---- ONNX's requantization on the fast kernels ----------------------------------------
// qlinear_conv / qlinear_matmul (the plain loops, ONNX's rule) against the same node
// after prepare_quantized lowers it onto qconv2d / qdense (requant "onnx"), under several
// schedule combinations: the bits must be the same. The multipliers are chosen so ties
// are common (0.5 = 1 / 2^1, 0.375 = 3 / 2^3): round half to even is what is tested.

struct OnnxCase {
  std::string op;  // qlinear_conv | qlinear_matmul
  Shape data, weight;
  DataType data_type, weight_type;
  json attrs;
  std::vector<std::array<int64_t, 4>> params;  // (weight zero point, bias, M, s) per row
  int data_spread, weight_spread;               // values within zero point -spread .. spread - 1:
                                                // small, so the outputs do not saturate
};

void run_onnx_case(const OnnxCase& k, const std::string& name) {
  std::mt19937 rng(77 + k.data[1]);
  auto draw = [&](const Shape& shape, DataType t, int spread) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    int lo = t.is_uint() ? 128 - spread : -spread, hi = t.is_uint() ? 127 + spread : spread - 1;
    std::uniform_int_distribution<int> d(lo, hi);
    std::vector<int64_t> v(n);
    for (auto& e : v) e = d(rng);
    return v;
  };
  std::vector<int64_t> xv = draw(k.data, k.data_type, k.data_spread);
  std::vector<int64_t> wv = draw(k.weight, k.weight_type, k.weight_spread);  // minus its zero point, within int8
  std::vector<int64_t> pv;
  for (const auto& row : k.params) pv.insert(pv.end(), row.begin(), row.end());
  Graph g;
  g.name = "onnx" + std::to_string(case_counter++);
  g.inputs = {{"x", TensorType{k.data_type, k.data}}};
  g.constants["w"] = array_of(k.weight_type, k.weight, wv);
  g.constants["p"] = array_of(DataType::Int(32), {static_cast<int64_t>(k.params.size()), 4}, pv);
  GraphNode node;
  node.name = "y";
  node.op = k.op;
  node.inputs = {"x", "w", "p"};
  node.attrs = k.attrs;
  node.type = find_op(k.op)->infer({g.inputs[0].second, TensorType{k.weight_type, k.weight},
                                    TensorType{DataType::Int(32), {static_cast<int64_t>(k.params.size()), 4}}},
                                   node.attrs);
  g.nodes.push_back(node);
  g.outputs = {"y"};
  auto run = [&](const Graph& graph) {
    AotModule aot = build_aot(graph);
    std::vector<NDArray> arrays;
    for (const auto& p : aot.params) {
      if (p.role == AotModule::Role::kInput) arrays.push_back(array_of(k.data_type, k.data, xv));
      else if (p.role == AotModule::Role::kConstant) arrays.push_back(graph.constants.at(p.name));
      else arrays.push_back(NDArray::zeros(node.type.dtype, node.type.shape));
    }
    std::vector<InterpArg> args;
    for (auto& a : arrays) args.push_back(&a);
    interpret(aot.module, aot.main, args);
    return std::make_pair(aot, arrays);
  };
  NDArray want = run(g).second.back();  // qlinear_*: built without prepare_quantized
  for (int bits : {0, 1, 3, 7, 15, 31}) {
    ScheduleOptions o;
    o.fold_zero_point = bits & 1, o.block = bits & 2, o.unroll = bits & 4, o.smlad = bits & 8, o.sxtb16 = bits & 16;
    std::string label = name + " [" + (o.disabled().empty() ? "all" : "off: " + o.disabled()) + "]";
    Graph prepared = prepare_quantized(g, o);
    prepared.name = "onnx" + std::to_string(case_counter++);  // one name per recorded module
    ASSERT_EQ(prepared.nodes[0].op, k.op == "qlinear_conv" ? "qconv2d" : "qdense") << label;
    EXPECT_EQ(prepared.nodes[0].attrs["requant"], "onnx") << label;
    if (name.find("32-bit form (table)") != std::string::npos) {
      EXPECT_EQ(prepared.constants.at(prepared.nodes[0].inputs.back()).shape, (Shape{5, 3})) << label;
    }
    auto [aot, arrays] = run(prepared);
    const NDArray& got = arrays.back();
    ASSERT_EQ(got.num_elements(), want.num_elements()) << label;
    int64_t mismatches = 0, inside = 0;
    for (int64_t i = 0; i < want.num_elements(); ++i) {
      mismatches += got.get_int(i) != want.get_int(i);
      const bool u8 = k.attrs.value("output_dtype", "") == "uint8";
      inside += want.get_int(i) > (u8 ? 0 : -128) && want.get_int(i) < (u8 ? 255 : 127);
    }
    EXPECT_EQ(mismatches, 0) << label;
    EXPECT_GT(inside, want.num_elements() * 3 / 4) << label << ": outputs saturate, the test would prove little";
    backend_cases::record_module(label, aot.module, aot.main, arrays);
  }
}

TEST(QConv, OnnxRequantizationIsQlinearsBitForBit) {
  const DataType u8 = DataType::UInt(8), i8 = DataType::Int(8);
  // uint8 data and weights with zero points, per-channel (M, s) with ties, padding.
  run_onnx_case({"qlinear_conv", {1, 3, 6, 5}, {4, 3, 3, 3}, u8, u8,
                 {{"padding", {1, 1, 1, 1}}, {"data_zero_point", 130}, {"output_zero_point", 120},
                  {"output_dtype", "uint8"}},
                 {{128, 40, 1, 1}, {126, -7, 3, 3}, {131, 0, 1, 2}, {128, 3000, 12345677, 33}}, 5, 5},
                "qlinear_conv uint8 per-channel");
  // Depthwise, int8, stride 2, one shared multiplier.
  run_onnx_case({"qlinear_conv", {1, 4, 7, 7}, {4, 1, 3, 3}, i8, i8,
                 {{"padding", {1, 1, 1, 1}}, {"strides", {2, 2}}, {"groups", 4}, {"data_zero_point", -3},
                  {"output_zero_point", 5}, {"output_dtype", "int8"}},
                 {{0, 11, 1, 2}}, 12, 12},
                "qlinear_conv depthwise int8");
  // A matmul (qdense), uint8 A, int8 B with a zero point, odd K, per-column multipliers.
  run_onnx_case({"qlinear_matmul", {3, 13}, {13, 3}, u8, i8,
                 {{"data_zero_point", 126}, {"output_zero_point", -2}, {"output_dtype", "int8"}},
                 {{2, 0, 1, 2}, {-1, 0, 5, 7}, {0, 0, 1, 1}}, 8, 8},
                "qlinear_matmul uint8 x int8");
  // Multipliers of 2^-26 and 3 * 2^-27 take the 32-bit form (quant_util.h's
  // onnx_high_word_form): ties need accumulators of odd multiples of 2^25 (2^26), which
  // the biases give, and the one-element products step around them.
  const int64_t t25 = int64_t{1} << 25, t26 = int64_t{1} << 26;
  run_onnx_case({"qlinear_matmul", {9, 1}, {1, 5}, u8, i8,
                 {{"data_zero_point", 128}, {"output_zero_point", 0}, {"output_dtype", "int8"}},
                 {{0, t25, 1, 26}, {0, 3 * t25, 1, 26}, {0, -t25, 1, 26}, {0, t26, 3, 27}, {0, -3 * t26, 3, 27}}, 3, 3},
                "qlinear_matmul, ties in the 32-bit form (table)");
  run_onnx_case({"qlinear_matmul", {9, 1}, {1, 2}, u8, i8,
                 {{"data_zero_point", 128}, {"output_zero_point", 0}, {"output_dtype", "int8"}}, {{0, -t25, 1, 26}}, 3, 3},
                "qlinear_matmul, ties in the 32-bit form (constants)");
}

}  // namespace
}  // namespace mtir
