// The harness of the qconv2d and qdense schedule tests (qconv_test.cc, qconv_mve_test.cc):
// an independent reference (plain loops, the requantization computed from the scales
// with its own fixed-point code), one-node int8 graphs prepared by prepare_quantized and
// run by the interpreter, the schedule sweep. Each test file registers its own
// backend_cases::Environment, so its cases also run as host C and wasm at its end.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "backend_cases.h"
#include "executor/aot.h"
#include "frontend/graph.h"
#include "interp/interpreter.h"
#include "ops/op_util.h"

namespace mtir {
namespace qconv_cases {


using json = nlohmann::json;
using Shape = std::vector<int64_t>;

// ---- the reference ----------------------------------------------------------------

// TFLite's QuantizeMultiplier, m = M * 2^(e - 31) with M in [2^30, 2^31): found by
// scaling, not frexp; e < -31 means M = 0.
inline std::pair<int64_t, int> fixed_point(double m) {
  int e = 0;
  while (m < 0.5) m *= 2, --e;
  while (m >= 1.0) m /= 2, ++e;
  int64_t mult = static_cast<int64_t>(std::llround(m * 2147483648.0));
  if (mult == (int64_t{1} << 31)) mult /= 2, ++e;
  if (e < -31) return {0, 0};
  return {mult, e};
}

// TFLite's MultiplyByQuantizedMultiplier: x << left, the high word of 2 * x * M rounded
// half up, then / 2^right rounded half away from zero (std::div's truncation, adjusted).
inline int8_t requant(int64_t acc, double m, int zo, int lo, int hi) {
  auto [mult, e] = fixed_point(m);
  int64_t x = static_cast<int32_t>(static_cast<uint32_t>(acc) << std::max(e, 0));
  int64_t high = (x * mult + (int64_t{1} << 30)) >> 31;
  int64_t y = high;
  if (e < 0) {
    int64_t d = int64_t{1} << -e;
    auto qr = std::lldiv(high, d);
    y = qr.quot + (2 * std::llabs(qr.rem) >= d ? (high < 0 ? -1 : 1) : 0);
  }
  y += zo;
  return static_cast<int8_t>(std::min<int64_t>(hi, std::max<int64_t>(lo, y)));
}

struct Case {
  std::string op;  // qconv2d | qdense
  Shape data, weight;
  json attrs;
  bool bias = true;
  int weight_range = 127;
};

// TFLite's activation range: zo + round(f / output_scale) in float32.
inline std::pair<int, int> bounds(const json& a) {
  int zo = a.value("output_zero_point", 0);
  std::string act = a.value("activation", "none");
  float so = a["output_scale"].get<float>();
  if (act == "relu") return {std::max(-128, zo), 127};
  if (act == "relu6") return {std::max(-128, zo), std::min<int>(127, zo + static_cast<int>(std::round(6.0f / so)))};
  return {-128, 127};
}

inline double wscale(const json& a, int64_t c) { return a["weight_scale"].is_array() ? a["weight_scale"][c].get<double>() : a["weight_scale"].get<double>(); }

// NHWC data, OHWI weight.
inline std::vector<int8_t> conv_ref(const Case& k, const std::vector<int8_t>& x, const std::vector<int8_t>& w,
                             const std::vector<int32_t>& b, Shape* out_shape) {
  const json& a = k.attrs;
  int64_t N = k.data[0], H = k.data[1], W = k.data[2], C = k.data[3];
  int64_t O = k.weight[0], KH = k.weight[1], KW = k.weight[2], CG = k.weight[3];
  auto v = [&](const char* key, size_t i, int64_t def) { return a.contains(key) ? a[key][i].get<int64_t>() : def; };
  int64_t sh = v("strides", 0, 1), sw = v("strides", 1, 1), dh = v("dilation", 0, 1), dw = v("dilation", 1, 1);
  int64_t pt = v("padding", 0, 0), pl = v("padding", 1, 0), pb = v("padding", 2, 0), pr = v("padding", 3, 0);
  int64_t G = a.value("groups", 1);
  int64_t OH = (H + pt + pb - dh * (KH - 1) - 1) / sh + 1, OW = (W + pl + pr - dw * (KW - 1) - 1) / sw + 1;
  *out_shape = {N, OH, OW, O};
  int zx = a.value("input_zero_point", 0), zo = a.value("output_zero_point", 0);
  auto [lo, hi] = bounds(a);
  std::vector<int8_t> y(N * OH * OW * O);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow)
        for (int64_t o = 0; o < O; ++o) {
          int64_t acc = k.bias ? b[o] : 0;
          int64_t g = o / (O / G);
          for (int64_t r = 0; r < KH; ++r)
            for (int64_t s = 0; s < KW; ++s)
              for (int64_t c = 0; c < CG; ++c) {
                int64_t ih = oh * sh + r * dh - pt, iw = ow * sw + s * dw - pl;
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                acc += (x[((n * H + ih) * W + iw) * C + g * CG + c] - zx) * w[((o * KH + r) * KW + s) * CG + c];
              }
          double m = a["input_scale"].get<double>() * wscale(a, o) / a["output_scale"].get<double>();
          y[((n * OH + oh) * OW + ow) * O + o] = requant(acc, m, zo, lo, hi);
        }
  return y;
}

inline std::vector<int8_t> dense_ref(const Case& k, const std::vector<int8_t>& x, const std::vector<int8_t>& w,
                              const std::vector<int32_t>& b, Shape* out_shape) {
  const json& a = k.attrs;
  int64_t N = k.data[0], K = k.data[1], M = k.weight[0];
  *out_shape = {N, M};
  int zx = a.value("input_zero_point", 0), zo = a.value("output_zero_point", 0);
  auto [lo, hi] = bounds(a);
  std::vector<int8_t> y(N * M);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m) {
      int64_t acc = k.bias ? b[m] : 0;
      for (int64_t i = 0; i < K; ++i) acc += (x[n * K + i] - zx) * w[m * K + i];
      double mult = a["input_scale"].get<double>() * wscale(a, m) / a["output_scale"].get<double>();
      y[n * M + m] = requant(acc, mult, zo, lo, hi);
    }
  return y;
}

// ---- harness ------------------------------------------------------------------------

inline NDArray array_of(DataType t, const Shape& shape, const std::vector<int64_t>& values) {
  NDArray a = NDArray::zeros(t, shape);
  for (size_t i = 0; i < values.size(); ++i) a.set_int(static_cast<int64_t>(i), values[i]);
  return a;
}

// Every case also runs as host C and wasm at the end of the process (backend_cases.h).
inline int case_counter = 0;

// Runs the case under one schedule combination; returns the interpreter's output.
inline void run_case(const Case& k, const ScheduleOptions& opts, const std::string& label) {
  std::mt19937 rng(1234 + k.data[0] * 7 + k.weight[0]);
  auto draw = [&](int64_t n, int lo, int hi) {
    std::uniform_int_distribution<int> d(lo, hi);
    std::vector<int64_t> v(n);
    for (auto& e : v) e = d(rng);
    return v;
  };
  int64_t nx = 1, nw = 1;
  for (int64_t d : k.data) nx *= d;
  for (int64_t d : k.weight) nw *= d;
  std::vector<int64_t> xv = draw(nx, -128, 127), wv = draw(nw, -k.weight_range, k.weight_range),
                       bv = draw(k.weight[0], -3000, 3000);
  std::vector<int8_t> x8(xv.begin(), xv.end()), w8(wv.begin(), wv.end());
  std::vector<int32_t> b32(bv.begin(), bv.end());
  Shape out_shape;
  std::vector<int8_t> want = k.op == "qconv2d" ? conv_ref(k, x8, w8, b32, &out_shape) : dense_ref(k, x8, w8, b32, &out_shape);

  Graph g;
  g.name = "q" + std::to_string(case_counter++);
  g.inputs = {{"x", TensorType{DataType::Int(8), k.data}}};
  g.constants["w"] = array_of(DataType::Int(8), k.weight, wv);
  GraphNode node;
  node.name = "y";
  node.op = k.op;
  node.inputs = {"x", "w"};
  if (k.bias) g.constants["b"] = array_of(DataType::Int(32), {k.weight[0]}, bv), node.inputs.push_back("b");
  node.attrs = k.attrs;
  std::vector<TensorType> in_types = {g.inputs[0].second, TensorType{DataType::Int(8), k.weight}};
  if (k.bias) in_types.push_back(TensorType{DataType::Int(32), {k.weight[0]}});
  node.type = find_op(k.op)->infer(in_types, node.attrs);
  ASSERT_EQ(node.type.shape, out_shape);
  g.nodes.push_back(node);
  g.outputs = {"y"};

  Graph prepared = prepare_quantized(g, opts);
  const json& sched = prepared.nodes[0].attrs["schedule"];
  if (opts.fold_zero_point) {
    EXPECT_TRUE(sched["fold_zero_point"].get<bool>()) << label;
  }
  bool grouped = k.attrs.value("groups", 1) != 1;
  // few_channels: 1-4 input channels, a receptive field of at most 128 values; those
  // layers keep int16 weight pairs.
  bool few = k.op == "qconv2d" && opts.smlad && !grouped && opts.few_channels && k.weight[3] <= 4 &&
             k.weight[1] * k.weight[2] * k.weight[3] <= 128;
  // mve also takes depthwise convolutions (one output channel per input channel).
  const bool depthwise = grouped && k.weight[3] == 1 && k.weight[0] == k.attrs.value("groups", 1);
  const bool mve = opts.mve && (!grouped || (depthwise && opts.mve_depthwise)) && sched["fold_zero_point"].get<bool>();
  EXPECT_EQ(sched["mve"].get<bool>(), mve) << label;
  // The mve depthwise kernel reads the weight in blocks of four channels, which prepare_quantized makes.
  if (mve && grouped) {
    EXPECT_NE(prepared.nodes[0].inputs.at(1).find("__weight_blocks"), std::string::npos) << label;
  }
  EXPECT_EQ(sched["smlad"].get<bool>(), opts.smlad && !grouped) << label;
  EXPECT_EQ(sched["few_channels"].get<bool>(), few) << label;
  // word_gather: NHWC convolutions of 4k input channels under smlad with the zero point
  // folded; short_pairs: those of a reduction up to 32 keep int16 weights (no sxtb16).
  const bool nhwc = k.op == "qconv2d" && k.attrs.value("layout", std::string("NHWC")) == "NHWC";
  const bool words = opts.smlad && !grouped && !few && opts.word_gather && nhwc && k.weight[3] % 4 == 0 &&
                     sched["fold_zero_point"].get<bool>();
  const bool short_pairs = words && opts.pair_loads && opts.short_pairs &&
                           k.weight[1] * k.weight[2] * k.weight[3] <= kShortPairsMaxReduction;
  EXPECT_EQ(sched["sxtb16"].get<bool>(), opts.smlad && opts.sxtb16 && !grouped && !few && !short_pairs) << label;
  EXPECT_EQ(sched["interleave"].get<bool>(), opts.smlad && opts.block && opts.interleave && !grouped) << label;
  EXPECT_EQ(sched["pixel_triples"].get<bool>(), opts.smlad && opts.block && opts.pixel_triples && !grouped && !mve)
      << label;
  EXPECT_EQ(sched["rolled_leftovers"].get<bool>(), opts.block && opts.rolled_leftovers) << label;
  EXPECT_EQ(sched["word_gather"].get<bool>(), words) << label;
  EXPECT_EQ(sched["pair_loads"].get<bool>(), sched["smlad"].get<bool>() && opts.pair_loads &&
                                                 (k.op != "qconv2d" || ((words || (few && opts.few_channel_pairs)) && !sched["sxtb16"].get<bool>())))
      << label;
  // The output zero point goes into a three-column requant table (these cases' shifts are
  // all far below the limit of 22).
  bool three_columns = false;
  for (const auto& in : prepared.nodes[0].inputs) {
    auto c = prepared.constants.find(in);
    three_columns = three_columns || (in.find("__requant") != std::string::npos && c != prepared.constants.end() &&
                                      c->second.shape.size() == 2 && c->second.shape[1] == 3);
  }
  // pair_records: a short convolution's bias, weights and three-column table in one input.
  const bool records = opts.pair_records && k.op == "qconv2d" && sched["pair_loads"].get<bool>() &&
                       sched["word_gather"].get<bool>() && sched["interleave"].get<bool>() && sched["smmlar_requant"].get<bool>() &&
                       sched["smlal_requant"].get<bool>() && k.weight[0] % 2 == 0 &&
                       k.weight[1] * k.weight[2] * k.weight[3] <= kShortPairsMaxReduction;
  EXPECT_EQ(sched["pair_records"].get<bool>(), records) << label;
  if (records) {
    EXPECT_EQ(prepared.nodes[0].inputs.size(), 2u) << label;
    three_columns = true;
  }
  EXPECT_EQ(sched["fold_output_zero_point"].get<bool>(),
            opts.fold_output_zero_point && three_columns && k.attrs.value("output_zero_point", 0) != 0)
      << label;
  // The 64-bit requantization with every three-column table (no case has a multiplier
  // of exactly 2^30), so the cases above do run it.
  // (The mve depthwise kernel requantizes in vectors: no smlal form.)
  EXPECT_EQ(sched["smlal_requant"].get<bool>(), opts.smlal_requant && three_columns && !(mve && grouped)) << label;
  AotModule aot = build_aot(prepared);
  PrimFunc main = aot.module.lookup(aot.main);
  std::vector<NDArray> arrays;
  for (const auto& p : aot.params) {
    if (p.role == AotModule::Role::kInput) arrays.push_back(array_of(DataType::Int(8), k.data, xv));
    else if (p.role == AotModule::Role::kConstant) arrays.push_back(prepared.constants.at(p.name));
    else arrays.push_back(NDArray::zeros(DataType::Int(8), out_shape));
  }
  std::vector<InterpArg> args;
  for (auto& a : arrays) args.push_back(&a);
  interpret(aot.module, aot.main, args);
  const NDArray& got = arrays.back();
  ASSERT_EQ(got.num_elements(), static_cast<int64_t>(want.size()));
  int64_t mismatches = 0, first = -1;
  for (size_t i = 0; i < want.size(); ++i)
    if (got.get_int(static_cast<int64_t>(i)) != want[i]) mismatches += 1, first = first < 0 ? static_cast<int64_t>(i) : first;
  EXPECT_EQ(mismatches, 0) << label << ": first at " << first << " got " << (first >= 0 ? got.get_int(first) : 0)
                           << " want " << (first >= 0 ? int(want[first]) : 0);
  backend_cases::record_module(label, aot.module, aot.main, arrays);
}

// All 32 combinations of the five kernel schedules (sxtb16 only with smlad, mve in its
// place without), interleave and
// fold_output_zero_point on, and two with both off; depthwise_tile follows unroll,
// depthwise_border_tiles smlad, smlal_requant fold_zero_point and smmlar_requant block.
inline void run_all_schedules(const Case& k, const std::string& name) {
  for (int bits = 0; bits < 32; ++bits) {
    ScheduleOptions o;
    o.fold_zero_point = bits & 1, o.block = bits & 2, o.unroll = bits & 4, o.smlad = bits & 8, o.sxtb16 = bits & 16;
    // The combinations of sxtb16 without smlad take mve instead (int8 weights, 16-lane
    // dot products; only where the zero point folds).
    if (o.sxtb16 && !o.smlad) o.sxtb16 = false, o.mve = true;
    // interleave (on by default) only changes anything with smlad and block; switched off
    // once per weight packing (int8 quads, int16 pairs), the other schedules on.
    for (bool interleave : {true, false}) {
      if (!interleave && !(o.smlad && o.block && o.unroll && o.fold_zero_point)) continue;
      o.interleave = interleave;
      // The output zero point added after the shift again, and the few-channel gather
      // off: once per weight packing.
      o.fold_output_zero_point = interleave;
      o.few_channels = interleave;
      o.dense_chunks = interleave;
      // The 3x2 tile off in the combinations without unroll (with and without interleave
      // it stays on elsewhere).
      o.pixel_triples = (bits & 4) || !interleave;
      // The leftover pixels' unrolled reduction in the combinations without interleave.
      // The triples wherever they apply (these small layers would not pay for their code).
      o.rolled_leftovers = interleave;
      // The channel quads read as words (weights in their order) where interleave is on;
      // int16-pair gathers of the same layers where it is off.
      o.word_gather = interleave;
      // The paired loads of batch-1 dense layers with int16 weights (smlad without
      // sxtb16) off in the combinations without unroll that interleave.
      o.pair_loads = (bits & 4) || !interleave;
      // Short reductions' int16 weights (with sxtb16, word_gather and pair_loads) off in
      // the combinations without block: their int8 quads under word_gather.
      o.short_pairs = bits & 2;
      // Their records (bias, weights, table a channel pair) with sxtb16 on, not without.
      o.pair_records = bits & 16;
      o.pixel_triples_stack = o.pixel_triples_code = false;
      // Depthwise tiles in half the combinations (the blocked and plain depthwise loops in
      // the other half); the 64-bit requantization off with the folds.
      o.depthwise_tile = bits & 4;
      // The border loop off in the tiled combinations with smlad (which depthwise
      // ignores): the border rows and tiles unrolled at constant positions.
      o.depthwise_border_tiles = bits & 8;
      o.smlal_requant = interleave && (bits & 1);
      // With it, the one-SMMLAR form (ReLU outputs) in half the combinations.
      o.smmlar_requant = bits & 2;
      // Under mve: the Helium depthwise kernel where the scalar tiles are off, and the
      // short reductions' vector requantization with unroll (with and without smmlar).
      o.mve_depthwise = !(bits & 4);
      o.mve_short_requant = bits & 4;
      // The 2x2 tiles' vector requantization of ReLU layers off once (unroll, no block).
      o.mve_pair_requant = (bits & 6) != 4;
      // The signed layers' vector requantization off once too (block, no unroll).
      o.mve_signed_requant = (bits & 6) != 2;
      // The padded copy of mve_depthwise in half the Helium depthwise combinations (block
      // off: the border tiles at constant positions).
      o.mve_depthwise_padded = bits & 2;
      // The interior windows read in place off once (no block, no unroll).
      o.mve_direct = (bits & 6) != 0;
      std::string label = name + " [" + (o.disabled().empty() ? "all" : "off: " + o.disabled()) + "]";
      SCOPED_TRACE(label);
      run_case(k, o, label);
    }
  }
}

// A one-node graph of the case over zero weights (and with `bias` a zero bias), to see
// what prepare_quantized and the op builder make of it.
inline Graph zero_weight_graph(const Case& k, const std::string& name, bool bias = false) {
  Graph g;
  g.name = name;
  g.inputs = {{"x", TensorType{DataType::Int(8), k.data}}};
  g.constants["w"] = NDArray::zeros(DataType::Int(8), k.weight);
  GraphNode node;
  node.name = "y", node.op = k.op, node.inputs = {"x", "w"}, node.attrs = k.attrs;
  std::vector<TensorType> types = {g.inputs[0].second, TensorType{DataType::Int(8), k.weight}};
  if (bias) {
    g.constants["b"] = NDArray::zeros(DataType::Int(32), {k.weight[0]});
    node.inputs.push_back("b");
    types.push_back(TensorType{DataType::Int(32), {k.weight[0]}});
  }
  node.type = find_op(k.op)->infer(types, node.attrs);
  g.nodes.push_back(node);
  g.outputs = {"y"};
  return g;
}

inline json quant(json extra, json wscale = 0.02) {
  json a = {{"input_scale", 0.05}, {"input_zero_point", -5}, {"weight_scale", wscale}, {"output_scale", 0.4},
            {"output_zero_point", 3}};
  for (auto& [key, v] : extra.items()) a[key] = v;
  return a;
}

}  // namespace qconv_cases
}  // namespace mtir
