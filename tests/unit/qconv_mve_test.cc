// The Helium (mve) schedules of qconv2d and qdense (Cortex-M55): the depthwise kernel,
// the int32x4 requantization of pointwise and dense layers, and T.multiply_by_quantized_multiplier
// in vectors, each against qconv_cases.h's reference; at the end of the process every case
// also runs as host C and through the wasm backend, and must equal the interpreter.
#include <gtest/gtest.h>

#include <limits>

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
      const std::string label = k.op + " K = " + std::to_string(k.weight.back()) + (on ? "" : " [off: mve_short_requant]");
      SCOPED_TRACE(label);
      run_case(k, o, label);
      Graph g;
      g.inputs = {{"x", TensorType{DataType::Int(8), k.data}}};
      g.constants["w"] = NDArray::zeros(DataType::Int(8), k.weight);
      GraphNode node;
      node.name = "y", node.op = k.op, node.inputs = {"x", "w"}, node.attrs = k.attrs;
      node.type = find_op(k.op)->infer({g.inputs[0].second, TensorType{DataType::Int(8), k.weight}}, node.attrs);
      g.nodes.push_back(node);
      g.outputs = {"y"};
      const json sched = prepare_quantized(g, o).nodes[0].attrs["schedule"];
      const bool short_k = k.weight.back() <= 32 && on;
      EXPECT_EQ(sched["mve_short_requant"].get<bool>(), short_k);
      EXPECT_EQ(sched["smmlar_requant"].get<bool>(), !short_k);
    }
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
