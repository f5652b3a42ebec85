// The Helium (mve) schedules of qconv2d and qdense (Cortex-M55): the depthwise kernel,
// the int32x4 requantization of pointwise and dense layers, and T.multiply_by_quantized_multiplier
// in vectors, each against qconv_cases.h's reference; at the end of the process every case
// also runs as host C and through the wasm backend, and must equal the interpreter.
#include <gtest/gtest.h>

#include <limits>

#include "analysis/elementwise_overwrite.h"
#include "ir/visitor.h"
#include "codegen/c/codegen_c.h"
#include "driver/build.h"
#include "driver/pipeline.h"
#include "qconv_cases.h"

namespace mtir {
namespace {

using namespace qconv_cases;

const auto* const kBackends =
    ::testing::AddGlobalTestEnvironment(new backend_cases::Environment({"qconv_mve", {"c -unpacked-api=1"}, true, 0}));

// The Helium depthwise kernel (schedule mve) on 21 channels: five groups of four and a
// last channel alone; multipliers of 1/4 and above make the (multiplier, shift) table,
// one with a left shift (the scale ratio 1.25). Rows of 4 (two constant tiles), 11 (a
// border tile, a loop of three tiles of three, a constant tile of two) and, at stride 2,
// 6 outputs, padding on every side. Only the combinations that take it: the sweep above
// runs it on the other depthwise shapes.
TEST(QConv, MveDepthwiseTilesOfFourChannels) {
  std::vector<double> scales;
  for (int c = 0; c < 21; ++c) scales.push_back(c == 3 ? 10.0 : c % 2 ? 2.0 : 0.02 + 0.01 * c);
  const Case cases[] = {
      {"qconv2d", {1, 5, 4, 21}, {21, 3, 3, 1}, quant({{"padding", {1, 1, 1, 1}}, {"groups", 21}}, scales)},
      {"qconv2d", {1, 4, 11, 21}, {21, 3, 3, 1}, quant({{"padding", {1, 1, 1, 1}}, {"groups", 21}}, scales)},
      {"qconv2d", {1, 7, 12, 21}, {21, 3, 3, 1},
       quant({{"padding", {0, 0, 1, 1}}, {"strides", {2, 2}}, {"groups", 21}, {"activation", "relu"}}, scales)}};
  for (const Case& k : cases)
    for (bool tile : {true, false}) {
      ScheduleOptions o;
      o.smlad = o.sxtb16 = false, o.mve = true, o.depthwise_tile = tile;
      const std::string label = "mve depthwise 3x3 on " + std::to_string(k.data[1]) + "x" + std::to_string(k.data[2]) +
                                ", 21 channels" + (tile ? "" : " [off: depthwise_tile]");
      SCOPED_TRACE(label);
      run_case(k, o, label);
    }
}

int32_t tflite_multiply_by_quantized_multiplier(int32_t x, int32_t m, int s);

// The schedule a one-node graph takes from prepare_quantized under `o`.
json prepared_schedule(const Case& k, const ScheduleOptions& o) {
  return prepare_quantized(zero_weight_graph(k, ""), o).nodes[0].attrs["schedule"];
}

// The operator kernel of a one-node graph prepared under `o`: whether it copies its
// input into a padded scratch (mve_depthwise_padded), and how many stores it makes into
// its output (each tile variant of the kernel stores its outputs once).
struct DepthwiseKernel {
  bool padded_copy = false;
  int output_stores = 0;
};
DepthwiseKernel depthwise_kernel(const Case& k, const ScheduleOptions& o) {
  AotModule aot = build_aot(prepare_quantized(zero_weight_graph(k, "dw"), o));
  struct Walk : Visitor {
    DepthwiseKernel seen;
    void visit_Allocate(const AllocateNode* op) override {
      seen.padded_copy = seen.padded_copy || op->buffer->name == "data_pad";
      Visitor::visit_Allocate(op);
    }
    void visit_BufferStore(const BufferStoreNode* op) override {
      seen.output_stores += op->buffer->name == "out_flat";
      Visitor::visit_BufferStore(op);
    }
  } walk;
  for (const auto& [name, f] : aot.module.functions)
    if (name != aot.main) walk.visit(f->body);
  return walk.seen;
}

// mve_depthwise_padded: a padded depthwise layer copies its input into a scratch
// bordered with the input zero point, and its kernel is one tile loop (one tile variant
// instead of one per border); the bytes are the reference's with it on and off. Uneven
// padding on every side (top 2, right 2), a stride-2 dilated window that leaves input
// rows and columns unread, 21 channels (the row copies end in single bytes), 8 channels
// (the copies whole vectors), a 5x5 kernel, and a layer whose padded input is over the
// 16 KiB stack limit, which keeps its border tiles.
TEST(QConv, MveDepthwisePaddedCopyIsOneTileLoop) {
  const json relu = {{"activation", "relu"}};
  const Case cases[] = {
      {"qconv2d", {1, 6, 7, 21}, {21, 3, 3, 1}, quant({{"padding", {2, 1, 1, 2}}, {"groups", 21}})},
      {"qconv2d", {1, 9, 10, 8}, {8, 3, 3, 1},
       quant({{"padding", {1, 0, 0, 1}}, {"strides", {2, 2}}, {"dilation", {2, 2}}, {"groups", 8}, {"activation", "relu"}})},
      {"qconv2d", {2, 7, 12, 8}, {8, 5, 5, 1}, quant({{"padding", {2, 2, 2, 2}}, {"groups", 8}})},
      {"qconv2d", {1, 14, 20, 64}, {64, 3, 3, 1}, quant({{"padding", {1, 1, 1, 1}}, {"groups", 64}})}};
  for (const Case& k : cases) {
    const bool fits = k.data[1] * k.data[2] * k.data[3] < 16 * 1024;
    int stores[2] = {0, 0};
    for (bool on : {true, false}) {
      ScheduleOptions o;
      o.smlad = o.sxtb16 = false, o.mve = true, o.mve_depthwise_padded = on;
      const std::string label = "mve depthwise " + std::to_string(k.weight[1]) + "x" + std::to_string(k.weight[2]) +
                                " on " + std::to_string(k.data[1]) + "x" + std::to_string(k.data[2]) + "x" +
                                std::to_string(k.data[3]) + (on ? "" : " [off: mve_depthwise_padded]");
      SCOPED_TRACE(label);
      run_case(k, o, label);
      EXPECT_EQ(prepared_schedule(k, o)["mve_depthwise_padded"].get<bool>(), on);
      const DepthwiseKernel kernel = depthwise_kernel(k, o);
      EXPECT_EQ(kernel.padded_copy, on && fits);
      stores[on] = kernel.output_stores;
    }
    if (fits) {
      EXPECT_LT(stores[1], stores[0]) << "the padded kernel has fewer tile variants";
    } else {
      EXPECT_EQ(stores[1], stores[0]);
    }
  }
}

// Two bands of one layer as the patch executor makes them: the same output rows, the
// first band padded above, the last below. Under mve_depthwise_padded their kernels
// differ only in constants and merge_kernels emits one; with border tiles both stay.
TEST(QConv, MveDepthwisePaddedBandsShareOneKernel) {
  for (bool on : {true, false}) {
    SCOPED_TRACE(on ? "mve_depthwise_padded" : "border tiles");
    Graph g;
    g.name = "bands";
    const int64_t pads[2][4] = {{1, 1, 0, 1}, {0, 1, 1, 1}};
    for (int b = 0; b < 2; ++b) {
      const std::string x = "x" + std::to_string(b), w = "w" + std::to_string(b), y = "y" + std::to_string(b);
      g.inputs.push_back({x, TensorType{DataType::Int(8), {1, 3, 6, 8}}});
      g.constants[w] = NDArray::zeros(DataType::Int(8), {8, 3, 3, 1});
      GraphNode node;
      node.name = y, node.op = "qconv2d", node.inputs = {x, w};
      node.attrs = quant({{"padding", {pads[b][0], pads[b][1], pads[b][2], pads[b][3]}}, {"groups", 8}});
      node.type = find_op("qconv2d")->infer({g.inputs.back().second, TensorType{DataType::Int(8), {8, 3, 3, 1}}}, node.attrs);
      ASSERT_EQ(node.type.shape, (std::vector<int64_t>{1, 2, 6, 8}));
      g.nodes.push_back(node);
      g.outputs.push_back(y);
    }
    ScheduleOptions o;
    o.smlad = o.sxtb16 = false, o.mve = true, o.mve_depthwise_padded = on;
    AotModule aot = build_aot(prepare_quantized(g, o));
    BuildResult built = build_c(aot.module, parse_target("c -unpacked-api=1"));
    std::string all;
    for (const auto& f : built.sources) all += f.text;
    const std::string k0 = symbol_of(aot.kernel_of.at("y0"), aot.module.lookup(aot.kernel_of.at("y0")));
    const std::string k1 = symbol_of(aot.kernel_of.at("y1"), aot.module.lookup(aot.kernel_of.at("y1")));
    ASSERT_NE(k0, k1);
    EXPECT_NE(all.find("int32_t " + k0 + "("), std::string::npos);
    EXPECT_EQ(all.find("int32_t " + k1 + "(") != std::string::npos, !on);
  }
}

// mve_short_requant: 1x1 convolutions and a dense layer of reductions up to 32 with
// multipliers below 1/4 (the three-column table) and ReLU, where smmlar_requant would
// rewrite the table, keep it and requantize four channels an int32x4; a reduction of 36
// takes smmlar_requant as before, and so does every one with the schedule off.
TEST(QConv, MveShortReductionsRequantizeFourChannelsAVector) {
  const json scales = {0.01, 0.02, 0.015, 0.03, 0.012, 0.0015, 0.001, 0.025, 0.004};
  const json relu = {{"output_scale", 0.4}, {"activation", "relu"}};
  const Case cases[] = {{"qconv2d", {1, 3, 4, 8}, {9, 1, 1, 8}, quant(relu, scales)},
                        {"qconv2d", {2, 3, 2, 32}, {9, 1, 1, 32}, quant(relu, scales)},
                        {"qconv2d", {1, 5, 3, 36}, {9, 1, 1, 36}, quant(relu, scales)},
                        {"qdense", {3, 16}, {9, 16}, quant(relu, scales)}};
  for (const Case& k : cases)
    for (bool on : {true, false}) {
      ScheduleOptions o;
      o.smlad = o.sxtb16 = false, o.mve = true, o.smmlar_requant = true, o.mve_short_requant = on;
      o.mve_pair_requant = false;  // its ReLU layers' 2x2 tiles: MvePairRequantReluTilesAreOneVector
      const std::string label = k.op + " K = " + std::to_string(k.weight.back()) + (on ? "" : " [off: mve_short_requant]");
      SCOPED_TRACE(label);
      run_case(k, o, label);
      const json sched = prepared_schedule(k, o);
      const bool short_k = k.weight.back() <= 32 && on;
      EXPECT_EQ(sched["mve_short_requant"].get<bool>(), short_k);
      EXPECT_EQ(sched["smmlar_requant"].get<bool>(), !short_k);
    }
}

// mve_pair_requant: ReLU layers of the three-column table (multipliers below 1/4) with
// reductions above 32 keep the table and requantize each 2x2 tile as one int32x4 (a
// gathered table, scattered bytes), a pixel alone four channels a vector; 15 pixels (one
// alone), 9 channels (one left to the scalar form), 3x3 through im2col, a dense layer, the
// output zero point -128 (the clamp is int8 saturation) and 3 (a bound above -128). A
// layer without ReLU, and every layer with the schedule off, takes smmlar_requant.
TEST(QConv, MvePairRequantReluTilesAreOneVector) {
  const json scales = {0.01, 0.02, 0.015, 0.03, 0.012, 0.0015, 0.001, 0.025, 0.004};
  const json relu = {{"output_scale", 0.4}, {"activation", "relu"}};
  const json relu128 = {{"output_scale", 0.3}, {"activation", "relu"}, {"output_zero_point", -128}};
  const Case cases[] = {{"qconv2d", {1, 5, 3, 64}, {9, 1, 1, 64}, quant(relu128, scales)},
                        {"qconv2d", {2, 3, 2, 40}, {9, 1, 1, 40}, quant(relu, scales)},
                        {"qconv2d", {1, 4, 5, 16}, {9, 3, 3, 16},
                         quant({{"output_scale", 0.4}, {"activation", "relu"}, {"padding", {1, 1, 1, 1}}}, scales)},
                        {"qdense", {3, 48}, {9, 48}, quant(relu128, scales)},
                        {"qconv2d", {1, 5, 3, 64}, {9, 1, 1, 64}, quant({{"output_scale", 0.4}}, scales)}};
  for (const Case& k : cases)
    for (bool on : {true, false}) {
      ScheduleOptions o;
      o.smlad = o.sxtb16 = false, o.mve = true, o.smmlar_requant = true, o.mve_pair_requant = on;
      const bool relu_layer = k.attrs.contains("activation");
      const std::string label = k.op + " K = " + std::to_string(k.weight.back()) + " kernel " +
                                std::to_string(k.op == "qdense" ? 1 : k.weight[1]) + (relu_layer ? " relu" : "") +
                                (on ? "" : " [off: mve_pair_requant]");
      SCOPED_TRACE(label);
      run_case(k, o, label);
      const json sched = prepared_schedule(k, o);
      EXPECT_EQ(sched["mve_pair_requant"].get<bool>(), on && relu_layer);
      EXPECT_EQ(sched["smmlar_requant"].get<bool>(), !(on && relu_layer) && relu_layer);
    }
}

// A 3x3 convolution without a ReLU bound (10 channels: five 2x2 tiles; 25 pixels: the
// last alone, two tiles of four channels and two left to the scalar form) into a residual
// qadd with a ReLU, as IC's blocks end. Under mve_signed_requant each tile's sums
// requantize as one int32x4 with TFLite's rounding, and fuse_elementwise applies the add
// to the four lanes: the residual input gathered (VLDRB.S32 at offsets 0, 1, 10, 11), the
// add's requantizations recovered from their int64 form (constant ones as
// mtir_v4_mbqm_right), one scattered VSTRB.32. The outputs equal those of the scalar form
// (the schedule off), and the output may still overwrite the residual input
// (writes_elementwise_over); host C and wasm at the end.
TEST(QConv, MveSignedRequantFusesTheResidualAdd) {
  const json scales = {0.01, 0.02, 0.015, 0.03, 0.012, 0.0015, 0.001, 0.025, 0.004, 0.008};
  std::mt19937 rng(41);
  auto draw = [&](int64_t n, int lo, int hi) {
    std::uniform_int_distribution<int> d(lo, hi);
    std::vector<int64_t> v(n);
    for (auto& e : v) e = d(rng);
    return v;
  };
  const std::vector<int64_t> xv = draw(250, -128, 127), wv = draw(900, -127, 127);
  Graph g;
  g.name = "residual";
  g.inputs = {{"x", TensorType{DataType::Int(8), {1, 5, 5, 10}}}};
  g.constants["w"] = array_of(DataType::Int(8), {10, 3, 3, 10}, wv);
  GraphNode conv;
  conv.name = "c", conv.op = "qconv2d", conv.inputs = {"x", "w"};
  conv.attrs = quant({{"padding", {1, 1, 1, 1}}}, scales);
  conv.type = find_op("qconv2d")->infer({g.inputs[0].second, TensorType{DataType::Int(8), {10, 3, 3, 10}}}, conv.attrs);
  GraphNode add;
  add.name = "s", add.op = "qadd", add.inputs = {"x", "c"};
  add.attrs = {{"a_scale", 0.05}, {"a_zero_point", -5}, {"b_scale", 0.4}, {"b_zero_point", 3}, {"output_scale", 0.5},
               {"output_zero_point", -2}, {"activation", "relu"}};
  add.type = find_op("qadd")->infer({g.inputs[0].second, conv.type}, add.attrs);
  g.nodes = {conv, add};
  g.outputs = {"s"};
  auto run = [&](const ScheduleOptions& o, const std::string& label, std::string* c_text) {
    const Graph prepared = prepare_quantized(g, o);
    EXPECT_EQ(prepared.nodes[0].attrs["schedule"]["mve_signed_requant"].get<bool>(), o.mve && o.mve_signed_requant);
    AotModule aot = build_aot(prepared);
    std::vector<NDArray> arrays;
    for (const auto& p : aot.params) {
      if (p.role == AotModule::Role::kInput) arrays.push_back(array_of(DataType::Int(8), {1, 5, 5, 10}, xv));
      else if (p.role == AotModule::Role::kConstant) arrays.push_back(prepared.constants.at(p.name));
      else arrays.push_back(NDArray::zeros(DataType::Int(8), {1, 5, 5, 10}));
    }
    std::vector<InterpArg> args;
    for (auto& a : arrays) args.push_back(&a);
    interpret(aot.module, aot.main, args);
    // The output may take the residual input's bytes (plan_memory): read lane by lane at
    // the element each flat store writes.
    for (const auto& [name, f] : aot.module.functions)
      if (name.find("fused") != std::string::npos) {
        EXPECT_TRUE(writes_elementwise_over(f, 4)) << name;
      }
    if (c_text) *c_text = codegen_c(run_pipeline(aot.module, lowering_pipeline(true, true, true, false, false)).module);
    backend_cases::record_module(label, aot.module, aot.main, arrays);
    return arrays.back();
  };
  NDArray want;
  for (bool on : {false, true}) {
    ScheduleOptions o;
    o.smlad = o.sxtb16 = false, o.mve = true, o.mve_signed_requant = on;
    std::string c;
    const std::string label = std::string("residual add under mve") + (on ? "" : " [off: mve_signed_requant]");
    SCOPED_TRACE(label);
    const NDArray got = run(o, label, &c);
    if (on) {
      EXPECT_EQ(got.data, want.data);
    } else {
      want = got;
    }
    for (const char* helper : {"mtir_v4_gather_s8((&a[", "0u, 1u, 10u, 11u)", "mtir_v4_shl(", "mtir_v4_mbqm_rinc(", "mtir_v4_mbqm_right(",
                             "mtir_v4_scatter_s8("})
      EXPECT_EQ(c.find(helper) != std::string::npos, on) << helper << " in\n" << c;
  }
}

// The Helium grammar of mve_pair_requant's store: four scalar sums as lanes, table
// columns gathered at lane offsets 0, 3, 0, 3, T.multiply_by_quantized_multiplier with
// shift 0 (VQRDMULH alone), T.shift_right by a column plus one, the int8 clamp, and a
// scatter to bytes 2, 3, 10, 11: one mtir_v4 helper each in C, and the interpreter's
// values are the formula's (host C and wasm at the end of the process).
TEST(QConv, HeliumGatherScatterAndShiftsInC) {
  const DataType i32 = DataType::Int(32), i8 = DataType::Int(8);
  ops::FuncBuilder fb;
  Buffer table = fb.param("T", {6}, i32), sums = fb.param("A", {4}, i32), out = fb.param("O", {16}, i8);
  auto runs = [](int64_t a, int64_t b, int64_t stride) {
    return Shuffle({Ramp(ops::ci(a), ops::ci(stride), 2), Ramp(ops::ci(b), ops::ci(stride), 2)}, {0, 1, 2, 3});
  };
  auto column = [&](int64_t k) { return ops::load(table, {runs(k, k, 3)}); };
  Expr lanes = Shuffle({ops::load(sums, {ops::ci(0)}), ops::load(sums, {ops::ci(1)}), ops::load(sums, {ops::ci(2)}),
                        ops::load(sums, {ops::ci(3)})},
                       {0, 1, 2, 3});
  Expr h = Call(i32.with_lanes(4), "multiply_by_quantized_multiplier", {lanes, column(0), Broadcast(ops::ci(0), 4)});
  Expr y = ops::call("shift_right", {ops::add(ops::add(h, column(2)), column(2)), ops::add(column(1), Broadcast(ops::ci(1), 4))});
  y = ops::min_(ops::max_(y, Broadcast(ops::ci(-128), 4)), Broadcast(ops::ci(127), 4));
  Stmt body = ops::store(out, Cast(i8.with_lanes(4), y), {Shuffle({Ramp(ops::ci(2), ops::ci(1), 2), Ramp(ops::add(ops::ci(2), ops::ci(8)), ops::ci(1), 2)}, {0, 1, 2, 3})});
  IRModule module;
  module.set("pair", fb.finish("pair", body));
  const std::string c = codegen_c(module);
  for (const char* helper : {"mtir_v4_scatter_s8((&O[2]), 0u, 1u, 8u, 9u, ", "mtir_v4_gather((&T[0]), 0u, 3u, 0u, 3u)",
                             "mtir_v4_lanes(A[0], A[1], A[2], A[3])", "mtir_v4_srdhm(", "mtir_v4_shr_inc(", "mtir_v4_sat8("})
    EXPECT_NE(c.find(helper), std::string::npos) << helper << " in\n" << c;
  const std::vector<int64_t> t = {1518500250, 7, -16000, 1100000000, 5, 96}, a = {-3000000, 900000, 45000000, -1};
  std::vector<NDArray> arrays = {array_of(i32, {6}, t), array_of(i32, {4}, a), NDArray::zeros(i8, {16})};
  std::vector<InterpArg> args;
  for (auto& x : arrays) args.push_back(&x);
  interpret(module, "pair", args);
  const int64_t at[4] = {2, 3, 10, 11};
  for (int lane = 0; lane < 4; ++lane) {
    const int ch = lane % 2;
    const int64_t hv = tflite_multiply_by_quantized_multiplier(static_cast<int32_t>(a[lane]), static_cast<int32_t>(t[3 * ch]), 0);
    const int64_t want = std::min<int64_t>(127, std::max<int64_t>(-128, (hv + 2 * t[3 * ch + 2]) >> (t[3 * ch + 1] + 1)));
    EXPECT_EQ(arrays[2].get_int(at[lane]), want) << "lane " << lane;
  }
  backend_cases::record_module("helium gather and scatter", module, "pair", arrays);
}

// Per-channel multipliers near 1 and above (left shifts): the table keeps TFLite's
// (multiplier, shift) form, which mve requantizes four channels a vector (int32x4
// stores, VQRDMULH and VRSHL) where the pixels are read in place: 9 channels are two
// vectors and one channel alone, in 1x1 convolutions (one strided, with a ReLU). Only
// the combinations that take mve (the sweep runs the rest on these tables' shapes).
TEST(QConv, MveGeneralRequantTableFourChannelsAVector) {
  const json scales = {0.01, 0.02, 0.015, 0.03, 0.012, 0.0015, 0.001, 0.025, 0.004};
  const Case cases[] = {
      {"qconv2d", {2, 3, 2, 20}, {9, 1, 1, 20}, quant({{"output_scale", 0.0004}}, scales)},
      {"qconv2d", {1, 5, 3, 36}, {9, 1, 1, 36},
       quant({{"output_scale", 0.002}, {"strides", {2, 2}}, {"activation", "relu"}}, scales)}};
  for (const Case& k : cases)
    for (bool unroll : {true, false}) {
      ScheduleOptions o;
      o.smlad = o.sxtb16 = false, o.mve = true, o.unroll = unroll;
      const std::string label = "mve conv " + std::to_string(k.weight[1]) + "x" + std::to_string(k.weight[2]) +
                                ", general table" + (unroll ? "" : " [off: unroll]");
      SCOPED_TRACE(label);
      run_case(k, o, label);
    }
}

// A reduction one past a whole number of 16-lane steps (K % 16 == 1: a 3x3 convolution
// of 9 channels, K = 81; a dense of 17 inputs) ends in a one-lane step, a scalar
// multiply-add (a vector of one lane is no vector).
TEST(QConv, MveReductionEndingInOneLane) {
  const Case cases[] = {{"qconv2d", {1, 4, 4, 9}, {8, 3, 3, 9}, quant({{"output_scale", 0.003}, {"padding", {1, 1, 1, 1}}})},
                        {"qdense", {2, 17}, {6, 17}, quant({{"output_scale", 0.002}})}};
  for (const Case& k : cases) {
    ScheduleOptions o;
    o.smlad = o.sxtb16 = false, o.mve = true;
    const std::string label = std::string("mve ") + k.op + " with K % 16 == 1";
    SCOPED_TRACE(label);
    run_case(k, o, label);
  }
}

// The C text of a one-node graph under `o` (prepared, AOT-built, lowered).
std::string case_c_text(const Case& k, const ScheduleOptions& o) {
  AotModule aot = build_aot(prepare_quantized(zero_weight_graph(k, ""), o));
  return codegen_c(run_pipeline(aot.module, lowering_pipeline(true, true, true, false, false)).module);
}

// mve_direct: convolutions of 16k input channels read the windows of their interior
// pixels from the input itself (a kernel row a loop, its taps' 16-byte vectors unrolled),
// the border pixels through the im2col column as before. 3x3 with padding on every side
// (5 interior columns a row: two tiles and a pixel alone), strided with padding on the
// right and bottom only, dilated, a batch of two, and unpadded 48 channels (no column at
// all); signed and ReLU tables and a per-tensor multiplier (scalar requantization). The
// outputs are the reference's with the schedule on and off (host C and wasm at the end).
TEST(QConv, MveDirectReadsInteriorWindowsInPlace) {
  const json scales = {0.01, 0.02, 0.015, 0.03, 0.012, 0.0015, 0.001, 0.025, 0.004, 0.008};
  const json pad1 = {1, 1, 1, 1};
  const Case cases[] = {
      {"qconv2d", {1, 6, 7, 16}, {10, 3, 3, 16}, quant({{"padding", pad1}, {"output_scale", 0.9}}, scales)},
      {"qconv2d", {1, 7, 8, 32}, {9, 3, 3, 32},
       quant({{"padding", {0, 0, 1, 1}}, {"strides", {2, 2}}, {"activation", "relu"}, {"output_scale", 0.9}},
             {0.01, 0.02, 0.015, 0.03, 0.012, 0.0015, 0.001, 0.025, 0.004})},
      {"qconv2d", {1, 7, 7, 16}, {6, 3, 3, 16}, quant({{"padding", {2, 2, 2, 2}}, {"dilation", {2, 2}}, {"output_scale", 0.9}})},
      {"qconv2d", {2, 5, 5, 16}, {4, 3, 3, 16}, quant({{"padding", pad1}, {"output_scale", 0.9}})},
      {"qconv2d", {1, 4, 6, 48}, {5, 3, 3, 48}, quant({{"output_scale", 1.5}}, {0.01, 0.02, 0.015, 0.03, 0.012})}};
  for (const Case& k : cases)
    for (bool on : {true, false}) {
      ScheduleOptions o;
      o.smlad = o.sxtb16 = false, o.mve = true, o.mve_direct = on;
      const std::string label = "mve 3x3 conv " + std::to_string(k.data[0]) + "x" + std::to_string(k.data[1]) + "x" +
                                std::to_string(k.data[2]) + "x" + std::to_string(k.data[3]) + (on ? "" : " [off: mve_direct]");
      SCOPED_TRACE(label);
      run_case(k, o, label);
      EXPECT_EQ(prepared_schedule(k, o)["mve_direct"].get<bool>(), on);
      // Unpadded, no pixel is gathered; padded, the border still is.
      const bool padded = k.attrs.contains("padding");
      EXPECT_EQ(case_c_text(k, o).find(" col[") != std::string::npos, padded || !on) << label;
    }
}

// TFLite's MultiplyByQuantizedMultiplier as gemmlowp writes it (the nudge and the
// truncating division, then RoundingDivideByPOT's mask and threshold).
int32_t tflite_multiply_by_quantized_multiplier(int32_t x, int32_t m, int s) {
  const int left = s > 0 ? s : 0, right = s > 0 ? 0 : -s;
  const int32_t a = static_cast<int32_t>(static_cast<uint32_t>(x) << left);
  int32_t h = std::numeric_limits<int32_t>::max();
  if (a != std::numeric_limits<int32_t>::min() || m != std::numeric_limits<int32_t>::min()) {
    const int64_t ab = int64_t{a} * m, nudge = ab >= 0 ? (1 << 30) : (1 - (1 << 30));
    h = static_cast<int32_t>((ab + nudge) / (int64_t{1} << 31));
  }
  const int32_t mask = static_cast<int32_t>((int64_t{1} << right) - 1), threshold = (mask >> 1) + (h < 0 ? 1 : 0);
  return (h >> right) + ((h & mask) > threshold ? 1 : 0);
}

// T.multiply_by_quantized_multiplier (the mve depthwise kernel's vector requantization)
// in int32x4 stores the C backend keeps for Helium, in a narrowing int8x4 store, and in
// scalars: the interpreter against the reference above on the rounding's edges (halves of
// both signs, INT32_MIN, the saturating INT32_MIN * INT32_MIN) for every shift (and shifts
// outside [-31, 30], which every backend clamps to it), then host C and wasm at the end of
// the process.
TEST(QConv, VectorRequantizationIsTflites) {
  const int32_t kMin = std::numeric_limits<int32_t>::min(), kMax = std::numeric_limits<int32_t>::max();
  std::vector<int32_t> xs = {kMin, kMin + 1, -(1 << 30), -65536 - 32768, -3145728, -1024, -513, -512, -511, -3, -1, 0, 1,
                             3, 511, 512, 513, 1 << 20, 98304, 1 << 30, kMax};
  std::mt19937 rng(40);
  for (int i = 0; i < 7; ++i) xs.push_back(static_cast<int32_t>(rng()));
  const std::vector<int32_t> ms = {1 << 30, (1 << 30) + 1, 1518500250, kMax, kMin};
  std::vector<int64_t> x, m, s;
  std::vector<int> shifts = {-64, -40, -32, 31, 33, 64};  // outside TFLite's range: clamped to [-31, 30]
  for (int shift = -31; shift <= 30; shift += shift < -12 || shift > 2 ? 3 : 1) shifts.push_back(shift);
  for (int shift : shifts)
    for (int32_t mv : ms)
      for (int32_t xv : xs) x.push_back(xv), m.push_back(mv), s.push_back(shift);
  while (x.size() % 4) x.push_back(7), m.push_back(1 << 30), s.push_back(-2);
  const int64_t n = static_cast<int64_t>(x.size());
  const DataType i32 = DataType::Int(32), i8 = DataType::Int(8);
  ops::FuncBuilder fb;
  Buffer bx = fb.param("X", {n}, i32), bm = fb.param("M", {n}, i32), bs = fb.param("S", {n}, i32);
  Buffer vec = fb.param("V", {n}, i32), narrow = fb.param("N", {n}, i8), scalar = fb.param("Q", {n}, i32);
  Var i = ops::ivar("i"), j = ops::ivar("j");
  auto lanes = [&](const Buffer& b) { return ops::load(b, {Ramp(ops::mul(i, ops::ci(4)), ops::ci(1), 4)}); };
  Expr v = Call(i32.with_lanes(4), "multiply_by_quantized_multiplier", {lanes(bx), lanes(bm), lanes(bs)});
  Expr clamped = ops::min_(ops::max_(ops::add(v, Broadcast(ops::ci(-5), 4)), Broadcast(ops::ci(-128), 4)), Broadcast(ops::ci(127), 4));
  Stmt body = SeqStmt(
      {For(i, ops::ci(0), ops::ci(n / 4), ForKind::kSerial,
           SeqStmt({ops::store(vec, v, {Ramp(ops::mul(i, ops::ci(4)), ops::ci(1), 4)}),
                    ops::store(narrow, Cast(i8.with_lanes(4), clamped), {Ramp(ops::mul(i, ops::ci(4)), ops::ci(1), 4)})})),
       For(j, ops::ci(0), ops::ci(n), ForKind::kSerial,
           ops::store(scalar, Call(i32, "multiply_by_quantized_multiplier", {ops::load(bx, {j}), ops::load(bm, {j}), ops::load(bs, {j})}), {j}))});
  IRModule module;
  module.set("requant", fb.finish("requant", body));
  std::vector<NDArray> arrays = {array_of(i32, {n}, x), array_of(i32, {n}, m), array_of(i32, {n}, s),
                                 NDArray::zeros(i32, {n}), NDArray::zeros(i8, {n}), NDArray::zeros(i32, {n})};
  std::vector<InterpArg> args;
  for (auto& a : arrays) args.push_back(&a);
  interpret(module, "requant", args);
  int64_t wrong = 0;
  for (int64_t k = 0; k < n; ++k) {
    const int shift = static_cast<int>(std::min<int64_t>(30, std::max<int64_t>(-31, s[k])));
    const int32_t want = tflite_multiply_by_quantized_multiplier(static_cast<int32_t>(x[k]), static_cast<int32_t>(m[k]), shift);
    // The zero point's add wraps in int32, as TIR's does, before the clamp.
    const int32_t shifted = static_cast<int32_t>(static_cast<uint32_t>(want) - 5u);
    const int64_t want8 = std::min<int64_t>(127, std::max<int64_t>(-128, shifted));
    if (arrays[3].get_int(k) != want || arrays[5].get_int(k) != want || arrays[4].get_int(k) != want8)
      if (wrong++ < 5)
        ADD_FAILURE() << "x " << x[k] << " m " << m[k] << " s " << s[k] << ": want " << want << ", vector "
                      << arrays[3].get_int(k) << ", scalar " << arrays[5].get_int(k) << ", int8 " << arrays[4].get_int(k);
  }
  EXPECT_EQ(wrong, 0) << "of " << n;
  backend_cases::record_module("vector requantization", module, "requant", arrays);
}

}  // namespace
}  // namespace mtir
