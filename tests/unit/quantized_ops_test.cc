// The int8 quantized operators against independent references written here in plain
// C++ straight from the contract in docs/quantization.md (TFLite's integer arithmetic):
// the fixed-point multiplier is recomputed by a different method, the two roundings by
// floor divisions, so a shared mistake in core/ops/quant_util.cc cannot hide; softmax,
// logistic and tanh against gemmlowp's fixed point as tests/int8/tflite_arith.cc writes it. Every case
// is checked bit for bit in the reference interpreter, then all cases of the process are
// built into one module and run again as host C and (with Binaryen) as wasm, bit for bit
// equal to the interpreter. Refusals are checked by message.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>

#include "analysis/well_formed.h"
#include "backend_cases.h"
#include "op_test_support.h"
#include "driver/build.h"
#include "executor/aot.h"
#include "frontend/graph.h"
#include "int8_reference.h"
#include "ops/schedules.h"
#include "interp/interpreter.h"
#include "ir/structural_equal.h"
#include "ops/ops.h"
#include "script/parser.h"
#include "script/printer.h"
#include "sim/host_sim.h"
#include "support/diagnostic.h"

namespace mtir {
namespace {

using json = nlohmann::json;
using Shape = std::vector<int64_t>;
using op_test::expect_error;
using op_test::run_op;
using op_test::floor_div;
using op_test::ref_multiplier;
using op_test::ref_requant;
using op_test::RefMult;
namespace fs = std::filesystem;

const DataType kI8 = DataType::Int(8);
const DataType kI32 = DataType::Int(32);
const DataType kF32 = DataType::Float(32);

// ---- harness: interpreter now, host C and wasm at the end of the process ------------------

// Every case runs as host C (with hoist_loop_invariants and without it) and as wasm at
// the end of the process (backend_cases.h), bit for bit.
const auto* const kBackends = ::testing::AddGlobalTestEnvironment(new backend_cases::Environment(
    {"qops", {"c -unpacked-api=1", "c -unpacked-api=1 -disabled-schedules=hoist"}, true, 0}));

bool same_bits(const NDArray& a, const NDArray& b) { return backend_cases::same(a, b, 0); }

NDArray make(DataType t, const Shape& s, const std::vector<int64_t>& v) {
  NDArray a = NDArray::zeros(t, s);
  for (int64_t i = 0; i < a.num_elements(); ++i) a.set_int(i, v.at(i));
  return a;
}

// Uniform int8 values in [lo, hi].
NDArray random_i8(const Shape& s, uint32_t seed, int lo = -128, int hi = 127) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(lo, hi);
  NDArray a = NDArray::zeros(kI8, s);
  for (int64_t i = 0; i < a.num_elements(); ++i) a.set_int(i, d(rng));
  return a;
}

std::vector<int64_t> ints(const NDArray& a) {
  std::vector<int64_t> v(a.num_elements());
  for (int64_t i = 0; i < a.num_elements(); ++i) v[i] = a.get_int(i);
  return v;
}


void expect_ints(const NDArray& got, const Shape& shape, const std::vector<int64_t>& want, const std::string& what) {
  ASSERT_EQ(got.shape, shape) << what;
  ASSERT_EQ(got.num_elements(), static_cast<int64_t>(want.size())) << what;
  int bad = 0;
  for (int64_t i = 0; i < got.num_elements() && bad < 5; ++i)
    if (got.get_int(i) != want[i]) {
      ADD_FAILURE() << what << ": element " << i << " is " << got.get_int(i) << ", expected " << want[i];
      ++bad;
    }
}


// ---- independent reference arithmetic ---------------------------------------------------


int64_t clamp(int64_t v, int64_t lo, int64_t hi) { return std::min(std::max(v, lo), hi); }

struct Bounds {
  int64_t lo, hi;
};
// TFLite's CalculateActivationRangeQuantized: zo + round(f / so) in float32.
Bounds ref_bounds(const std::string& act, double so, int64_t zo) {
  auto q = [&](float f) { return zo + static_cast<int64_t>(std::round(f / static_cast<float>(so))); };
  if (act == "relu") return {std::max<int64_t>(-128, q(0)), 127};
  if (act == "relu6") return {std::max<int64_t>(-128, q(0)), std::min<int64_t>(127, q(6))};
  if (act == "relu_n1_to_1") return {std::max<int64_t>(-128, q(-1)), std::min<int64_t>(127, q(1))};
  return {-128, 127};
}

// TFLite's AveragePool rounding of the window sum: half away from zero, C division.
int64_t round_avg(int64_t sum, int64_t count) {
  return sum > 0 ? (sum + count / 2) / count : (sum - count / 2) / count;
}

// ---- the multiplier itself (through an op whose output exposes it) ---------------------

TEST(QuantRef, MultiplierReferenceMatchesKnownValues) {
  // 0.5 = 2^30 * 2^-31; 0.75 = 3 * 2^29 * 2^-31; 1/3 rounds; values near 2^31 round up.
  EXPECT_EQ(ref_multiplier(0.5).M, int64_t{1} << 30);
  EXPECT_EQ(ref_multiplier(0.5).shift, 0);
  EXPECT_EQ(ref_multiplier(0.75).M, 3 * (int64_t{1} << 29));
  EXPECT_EQ(ref_multiplier(1.0 / 3).M, 1431655765);
  EXPECT_EQ(ref_multiplier(1.0 / 3).shift, -1);
  EXPECT_EQ(ref_multiplier(0.99999999999).M, int64_t{1} << 30);  // rounded to 2^31, halved
  EXPECT_EQ(ref_multiplier(0.99999999999).shift, 1);
  EXPECT_EQ(ref_multiplier(1e-12).M, 0);  // below 2^-31: TFLite's zero multiplier
  // Round half up in the high multiply, then half away from zero in the shift.
  EXPECT_EQ(ref_requant(-3, ref_multiplier(0.5)), -1);  // -1.5 -> -1
  EXPECT_EQ(ref_requant(3, ref_multiplier(0.5)), 2);
  EXPECT_EQ(ref_requant(5, ref_multiplier(0.25)), 2);   // 2.5 -> 3, then 1.5 -> 2
  EXPECT_EQ(ref_requant(-2, ref_multiplier(0.25)), -1);  // -1, then -0.5 -> -1
  EXPECT_EQ(ref_requant(3, ref_multiplier(4.0)), 12);
}

// ---- qadd -------------------------------------------------------------------------------

// The element of `x` that output index `out_idx` reads under numpy broadcasting.
int64_t broadcast_get(const NDArray& x, const Shape& out_shape, const std::vector<int64_t>& out_idx) {
  int64_t flat = 0;
  const size_t lead = out_shape.size() - x.shape.size();
  for (size_t k = 0; k < x.shape.size(); ++k) flat = flat * x.shape[k] + (x.shape[k] == 1 ? 0 : out_idx[lead + k]);
  return x.get_int(flat);
}

// TFLite's int8 ADD / SUB (inputs to a common scale with 20 bits of headroom; SUB's
// multipliers in float32, as TFLM computes them) and MUL.
NDArray ref_qbinary(const std::string& op, const NDArray& a, const NDArray& b, const Shape& shape, double sa,
                    int64_t za, double sb, int64_t zb, double so, int64_t zo, const std::string& act) {
  double twice_max = 2 * std::max(sa, sb);
  RefMult ma = ref_multiplier(sa / twice_max), mb = ref_multiplier(sb / twice_max);
  RefMult mo = op == "qmul" ? ref_multiplier(sa * sb / so) : ref_multiplier(twice_max / (1048576.0 * so));
  if (op == "qsub") {  // TFLM's sub_common.cc: the quotients in float32
    const float fa = static_cast<float>(sa), fb = static_cast<float>(sb), fo = static_cast<float>(so);
    const float ftwice = 2 * std::max(fa, fb);
    ma = ref_multiplier(static_cast<double>(fa / ftwice));
    mb = ref_multiplier(static_cast<double>(fb / ftwice));
    mo = ref_multiplier(static_cast<double>(ftwice / (1048576.0f * fo)));
  }
  Bounds bd = ref_bounds(act, so, zo);
  NDArray out = NDArray::zeros(kI8, shape);
  std::vector<int64_t> idx(shape.size(), 0);
  for (int64_t i = 0; i < out.num_elements(); ++i) {
    for (int64_t k = static_cast<int64_t>(shape.size()) - 1, rest = i; k >= 0; --k) idx[k] = rest % shape[k], rest /= shape[k];
    int64_t va = broadcast_get(a, shape, idx) - za, vb = broadcast_get(b, shape, idx) - zb, raw;
    if (op == "qmul") {
      raw = ref_requant(va * vb, mo);
    } else {
      int64_t x = ref_requant(va * 1048576, ma), y = ref_requant(vb * 1048576, mb);
      raw = ref_requant(op == "qadd" ? x + y : x - y, mo);
    }
    out.set_int(i, clamp(raw + zo, bd.lo, bd.hi));
  }
  return out;
}

// The quantization of a two-input elementwise op, as its attributes.
struct BinaryQuant {
  double sa;
  int za;
  double sb;
  int zb;
  double so;
  int zo;
  const char* act;
  json attrs() const {
    return {{"a_scale", sa},     {"a_zero_point", za},      {"b_scale", sb},        {"b_zero_point", zb},
            {"output_scale", so}, {"output_zero_point", zo}, {"activation", act}};
  }
};

TEST(QuantizedOps, QaddQsubQmulMatchReference) {
  struct P {
    Shape sa_shape, sb_shape, out;
    BinaryQuant q;
  };
  const P params[] = {
      {{1, 4, 4, 8}, {1, 4, 4, 8}, {1, 4, 4, 8}, 0.05, 3, 0.02, -7, 0.06, -2, "none"},
      {{2, 17}, {2, 17}, {2, 17}, 0.1, -128, 0.1, 127, 0.1, 0, "none"},         // equal scales, extreme zero points
      {{3, 5, 7}, {3, 5, 7}, {3, 5, 7}, 0.5, 0, 0.25, 10, 0.01, 5, "none"},     // small output scale: saturates
      {{1, 3, 3, 16}, {16}, {1, 3, 3, 16}, 0.031, -20, 0.047, 11, 0.052, -30, "relu"},  // broadcast b
      {{1, 2, 6, 6}, {1, 2, 1, 6}, {1, 2, 6, 6}, 0.02, 0, 0.03, 0, 0.025, -128, "relu6"},
      {{4, 1}, {1, 5}, {4, 5}, 0.07, 4, 0.09, -3, 0.11, 1, "relu_n1_to_1"},     // both broadcast
      {{64}, {64}, {64}, 3e-4, 1, 7e-3, -1, 2.5, 0, "none"},                    // large output scale: mostly 0
  };
  uint32_t seed = 1;
  for (const char* op : {"qadd", "qsub", "qmul"})
    for (const auto& p : params) {
      json attrs = p.q.attrs();
      if (std::string(op) == "qmul") attrs["output_scale"] = p.q.so * 40;  // products of two scales
      NDArray a = random_i8(p.sa_shape, seed++), b = random_i8(p.sb_shape, seed++);
      NDArray got = run_op(op, {a, b}, attrs);
      NDArray want = ref_qbinary(op, a, b, p.out, p.q.sa, p.q.za, p.q.sb, p.q.zb, attrs["output_scale"].get<double>(), p.q.zo,
                                 p.q.act);
      expect_ints(got, p.out, ints(want), std::string(op) + " " + attrs.dump());
    }
  // The saturating case really reaches both ends.
  NDArray a = random_i8({3, 5, 7}, 100), b = random_i8({3, 5, 7}, 101);
  NDArray sat = ref_qbinary("qadd", a, b, {3, 5, 7}, 0.5, 0, 0.25, 10, 0.01, 5, "none");
  auto v = ints(sat);
  EXPECT_NE(std::count(v.begin(), v.end(), -128), 0);
  EXPECT_NE(std::count(v.begin(), v.end(), 127), 0);
  // Ties of TFLite's two roundings in qmul. Multiplier 0.5 (M = 2^30, no shift): the high
  // multiply rounds half up, 1.5 -> 2 and -1.5 -> -1. Multiplier 0.25 (M = 2^30, shift
  // -1): 3 -> 2 -> 1 and -3 -> -1 -> -1 (the shift rounds -0.5 away from zero), and
  // -2 -> -1 -> -1 where one rounding of -0.5 would give 0.
  NDArray x = make(kI8, {3}, {3, -3, -2}), one = make(kI8, {1}, {1});
  json half = {{"a_scale", 1.0}, {"b_scale", 0.5}, {"output_scale", 1.0}};
  expect_ints(run_op("qmul", {x, one}, half), {3}, {2, -1, -1}, "qmul ties, multiplier 0.5");
  json quarter = {{"a_scale", 1.0}, {"b_scale", 0.5}, {"output_scale", 2.0}};
  expect_ints(run_op("qmul", {x, one}, quarter), {3}, {1, -1, -1}, "qmul ties, multiplier 0.25");
}

TEST(QuantizedOps, QaddRefusals) {
  json ok = {{"a_scale", 0.1}, {"b_scale", 0.2}, {"output_scale", 0.3}};
  std::vector<TensorType> t = {{kI8, {2, 3}}, {kI8, {2, 3}}};
  json missing = ok;
  missing.erase("b_scale");
  expect_error("qadd", t, missing, "missing required attribute 'b_scale'");
  json zero = ok;
  zero["a_scale"] = 0;
  expect_error("qadd", t, zero, "attribute 'a_scale' must be a number > 0");
  json zp = ok;
  zp["output_zero_point"] = 128;
  expect_error("qadd", t, zp, "attribute 'output_zero_point' must be an integer in [-128, 127]");
  json act = ok;
  act["activation"] = "tanh";
  expect_error("qadd", t, act, "attribute 'activation' must be one of \"none\", \"relu\", \"relu6\"");
  json huge = ok;
  huge["output_scale"] = 1e-20;
  expect_error("qadd", t, huge, "requantization multiplier out of range");
  // TFLite requires ADD's and SUB's output multiplier below 1 (QuantizeMultiplierSmallerThanOneExp).
  json above_one = ok;
  above_one["output_scale"] = 1e-7;
  expect_error("qsub", t, above_one, "TFLite requires it below 1");
  expect_error("qmul", t, {{"a_scale", 1e6}, {"b_scale", 1e6}, {"output_scale", 1e-6}}, "requantization multiplier out of range");
  expect_error("qadd", {{kI8, {2, 3}}, {kI8, {3, 2}}}, ok, "do not broadcast");
  expect_error("qadd", {{kF32, {2, 3}}, {kF32, {2, 3}}}, ok, "input 'a' has type float32; int8 is required");
  expect_error("qadd", {{kI8, {2, 3}}, {DataType::UInt(8), {2, 3}}}, ok, "input 'b' has type uint8");
  expect_error("qadd", {{kI8, {2, 3}}}, ok, "expected 2 inputs");
}

// Schedule smmlar_add (ops/qadd_smmlar.h): ADD and SUB with each rounding in one SMMLAR,
// over every pair of int8 inputs (a down, b across), against the reference: input zero
// points at int8's lowest (no sign term) or not, the larger input's multiplier 0.5 or
// not, ReLU (no output sign term) or none, an output multiplier of exactly 2^30 (the
// sign of the high word itself) and an output shift of 0. The kernel must really take
// the form: its TIR holds the smmlar builtin, which the generic form never uses.
TEST(QuantizedOps, SmmlarAddMatchesReferenceOnEveryPair) {
  const BinaryQuant params[] = {
      {0.0731, -128, 0.1042, -124, 0.1311, -128, "relu"},  // IC's residual add: b's multiplier is 0.5
      {0.05, 3, 0.02, -7, 0.06, -2, "none"},               // both multipliers below 0.5, sign terms everywhere
      {0.031, -20, 0.047, 11, 0.052, -30, "relu6"},
      {0.5, 17, 0.25, -128, 1.0 / 131072, 0, "none"},      // output multiplier 2^-3: M = 2^30
      {0.0123, 5, 0.0077, -9, 0.0625, 0, "none"},
      {0.05, -1, 0.02, 2, 1e-7, 1, "none"},                 // output multiplier above 0.5: no shift
  };
  std::vector<int64_t> all(256);
  for (int v = 0; v < 256; ++v) all[v] = v - 128;
  NDArray a = make(kI8, {256, 1}, all), b = make(kI8, {1, 256}, all);
  for (const char* op : {"qadd", "qsub"})
    for (const auto& p : params) {
      json attrs = p.attrs();
      attrs["schedule"] = {{"smmlar_add", true}};
      const std::vector<TensorType> types = {{kI8, {256, 1}}, {kI8, {1, 256}}};
      const OpDef* def = find_op(op);
      PrimFunc f = def->build("k", types, def->infer(types, attrs), attrs);
      EXPECT_NE(print_func("k", f).find("smmlar"), std::string::npos) << op << " " << attrs.dump();
      NDArray got = run_op(op, {a, b}, attrs);
      NDArray want = ref_qbinary(op, a, b, {256, 256}, p.sa, p.za, p.sb, p.zb, p.so, p.zo, p.act);
      expect_ints(got, {256, 256}, ints(want), std::string(op) + " smmlar_add " + attrs.dump());
    }
  // int16 keeps the generic form (v * 2^21 would not fit); qmul has no schedule.
  json i16 = {{"a_scale", 0.1}, {"b_scale", 0.2}, {"output_scale", 0.3}, {"schedule", {{"smmlar_add", true}}}};
  const std::vector<TensorType> t16 = {{DataType::Int(16), {4}}, {DataType::Int(16), {4}}};
  PrimFunc f16 = find_op("qadd")->build("k", t16, find_op("qadd")->infer(t16, i16), i16);
  EXPECT_EQ(print_func("k", f16).find("smmlar"), std::string::npos);
  const std::vector<TensorType> t8 = {{kI8, {4}}, {kI8, {4}}};
  expect_error("qmul", t8, i16, "qmul has no schedule");
  json bad = i16;
  bad["schedule"] = {{"smlad", true}};
  expect_error("qadd", t8, bad, "attribute 'schedule' must be an object {\"smmlar_add\": true or false}");
}

// ---- qavg_pool2d / qglobal_avg_pool2d ------------------------------------------------------

NDArray ref_qavg(const NDArray& x, int64_t kh, int64_t kw, int64_t sh, int64_t sw, const std::vector<int64_t>& pad) {
  int64_t N = x.shape[0], H = x.shape[1], W = x.shape[2], C = x.shape[3];
  int64_t OH = (H + pad[0] + pad[2] - kh) / sh + 1, OW = (W + pad[1] + pad[3] - kw) / sw + 1;
  NDArray out = NDArray::zeros(kI8, {N, OH, OW, C});
  for (int64_t n = 0; n < N; ++n)
    for (int64_t oy = 0; oy < OH; ++oy)
      for (int64_t ox = 0; ox < OW; ++ox)
        for (int64_t c = 0; c < C; ++c) {
          int64_t sum = 0, count = 0;
          for (int64_t ky = 0; ky < kh; ++ky)
            for (int64_t kx = 0; kx < kw; ++kx) {
              int64_t iy = oy * sh + ky - pad[0], ix = ox * sw + kx - pad[1];
              if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
              sum += x.get_int(((n * H + iy) * W + ix) * C + c);
              ++count;
            }
          out.set_int(((n * OH + oy) * OW + ox) * C + c, round_avg(sum, count));
        }
  return out;
}

TEST(QuantizedOps, QavgPool2dMatchesReference) {
  struct P {
    Shape shape;
    int64_t kh, kw, sh, sw;
    std::vector<int64_t> pad;
  };
  const P params[] = {
      {{1, 6, 6, 3}, 2, 2, 2, 2, {0, 0, 0, 0}},  {{2, 7, 5, 4}, 3, 3, 1, 1, {1, 1, 1, 1}},
      {{1, 9, 8, 2}, 3, 2, 2, 3, {1, 0, 2, 1}},  {{1, 5, 5, 1}, 5, 5, 1, 1, {0, 0, 0, 0}},
      {{1, 4, 10, 5}, 1, 3, 1, 2, {0, 1, 0, 1}},
  };
  uint32_t seed = 10;
  for (const auto& p : params) {
    json attrs = {{"pool_size", {p.kh, p.kw}}, {"strides", {p.sh, p.sw}}, {"padding", p.pad}};
    NDArray x = random_i8(p.shape, seed++);
    NDArray want = ref_qavg(x, p.kh, p.kw, p.sh, p.sw, p.pad);
    expect_ints(run_op("qavg_pool2d", {x}, attrs), want.shape, ints(want), "qavg_pool2d " + attrs.dump());
  }
  // Ties round away from zero: (1 + 2) / 2 -> 2 and (-1 - 2) / 2 -> -2; the extremes stay put.
  NDArray x = make(kI8, {1, 1, 2, 4}, {1, -1, -128, 127, 2, -2, -128, 127});
  json attrs = {{"pool_size", {1, 2}}};
  expect_ints(run_op("qavg_pool2d", {x}, attrs), {1, 1, 1, 4}, {2, -2, -128, 127}, "ties");
}

// Schedule mve (Cortex-M55): unpadded pools sum four channels an int32x4, the last 1-3
// channels as scalars: KWS's 25x5 window over 64 channels, a strided 3x3 one over 10
// channels with a ReLU, a 2x2 one of batch 2 over 7; a padded pool keeps the scalar loops.
TEST(QuantizedOps, QavgPool2dMveSumsFourChannelsAVector) {
  struct P {
    Shape shape;
    int64_t kh, kw, sh, sw;
    std::vector<int64_t> pad;
    bool relu;
  };
  const P params[] = {{{1, 25, 5, 64}, 25, 5, 1, 1, {0, 0, 0, 0}, false},
                      {{1, 7, 8, 10}, 3, 3, 2, 2, {0, 0, 0, 0}, true},
                      {{2, 4, 4, 7}, 2, 2, 2, 2, {0, 0, 0, 0}, false},
                      {{1, 5, 5, 8}, 3, 3, 1, 1, {1, 1, 1, 1}, false}};
  uint32_t seed = 40;
  for (const auto& p : params) {
    json attrs = {{"pool_size", {p.kh, p.kw}}, {"strides", {p.sh, p.sw}}, {"padding", p.pad}, {"schedule", {{"mve", true}}}};
    if (p.relu) attrs.update({{"activation", "relu"}, {"output_scale", 0.5}, {"output_zero_point", -3}});
    NDArray x = random_i8(p.shape, seed++);
    NDArray want = ref_qavg(x, p.kh, p.kw, p.sh, p.sw, p.pad);
    if (p.relu)
      for (int64_t i = 0; i < want.num_elements(); ++i) want.set_int(i, std::max<int64_t>(-3, want.get_int(i)));
    expect_ints(run_op("qavg_pool2d", {x}, attrs), want.shape, ints(want), "qavg_pool2d mve " + attrs.dump());
  }
}

TEST(QuantizedOps, QglobalAvgPool2dMatchesReference) {
  uint32_t seed = 20;
  for (Shape s : {Shape{1, 5, 5, 8}, Shape{2, 3, 7, 3}, Shape{1, 1, 1, 4}, Shape{1, 25, 5, 64}}) {
    NDArray x = random_i8(s, seed++);
    NDArray want = ref_qavg(x, s[1], s[2], 1, 1, {0, 0, 0, 0});
    expect_ints(run_op("qglobal_avg_pool2d", {x}, json::object()), {s[0], 1, 1, s[3]}, ints(want), "qglobal_avg_pool2d");
  }
  NDArray lo = make(kI8, {1, 2, 2, 1}, {-128, -128, -128, -128});
  expect_ints(run_op("qglobal_avg_pool2d", {lo}, json::object()), {1, 1, 1, 1}, {-128}, "all -128");
}

// ---- qmean ----------------------------------------------------------------------------

// TFLite's int8 MEAN over H and W (TFLM 90b983c2's EvalIntegerMean): QuantizedMeanOrSum,
// equal quantization or not, folds 1/count into the multiplier (shifted up by
// floor(log2 count), capped at 32 and at 31 + shift) and requantizes sum - zi * count.
NDArray ref_qmean(const NDArray& x, double si, int64_t zi, double so, int64_t zo) {
  int64_t N = x.shape[0], H = x.shape[1], W = x.shape[2], C = x.shape[3], count = H * W;
  RefMult m = ref_multiplier(si / so);
  int shift = 0;
  for (int64_t v = count; v > 1; v >>= 1) ++shift;
  shift = std::min({shift, 32, 31 + m.shift});
  RefMult folded{(m.M << shift) / count, m.shift - shift};
  NDArray out = NDArray::zeros(kI8, {N, 1, 1, C});
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c) {
      int64_t sum = 0;
      for (int64_t i = 0; i < count; ++i) sum += x.get_int((n * count + i) * C + c);
      int64_t y = clamp(ref_requant(sum - zi * count, folded) + zo, -128, 127);
      out.set_int(n * C + c, y);
    }
  return out;
}

TEST(QuantizedOps, QmeanMatchesReference) {
  struct P {
    Shape shape;
    double si;
    int64_t zi;
    double so;
    int64_t zo;
  };
  const float f = 0.0171f;  // a float32 scale, as TFLite stores it
  const P params[] = {
      {{1, 5, 5, 8}, f, -3, f, -3},          // equal: requantized too, not a truncating division
      {{2, 3, 7, 3}, f, 12, f, 12},          // equal, odd count
      {{1, 4, 4, 6}, f, -3, f, 5},           // same scale, other zero point
      {{1, 6, 6, 5}, 0.05, 7, 0.02, -10},    // output scale finer
      {{1, 7, 9, 4}, 0.02, -128, 0.05, 0},   // coarser
      {{1, 1, 1, 4}, 0.1, 3, 0.3, 1},        // count 1
      {{1, 10, 10, 3}, 0.03, 0, 0.0007, 2},  // ratio ~43: left shift, saturates
      {{1, 25, 5, 16}, 1e-3, 4, 0.9, -7},    // ratio near 2^-10
      {{1, 64, 64, 2}, 0.01, -1, 0.011, 3},  // count 4096, a power of two
      {{1, 2, 3, 2}, 1e-11, 0, 1.0, 0},      // multiplier below 2^-31: TFLite's 0
  };
  uint32_t seed = 30;
  for (const auto& p : params) {
    json attrs = {{"input_scale", p.si}, {"input_zero_point", p.zi}, {"output_scale", p.so}, {"output_zero_point", p.zo}};
    for (auto [lo, hi] : {std::pair{-128, 127}, std::pair{-128, -120}, std::pair{120, 127}}) {
      NDArray x = random_i8(p.shape, seed++, lo, hi);
      NDArray want = ref_qmean(x, p.si, p.zi, p.so, p.zo);
      expect_ints(run_op("qmean", {x}, attrs), want.shape, ints(want), "qmean " + attrs.dump());
    }
  }
  // Equal quantization rounds like the rest (TFLM's MobileNetV2 MEAN shows it): the means
  // -1.5 and 1.5 become -1 and 2 (TFLite's rounding of the requantization: half up), where
  // a truncating division would give -1 and 1.
  NDArray x = make(kI8, {1, 1, 2, 2}, {-1, 1, -2, 2});
  json same = {{"input_scale", 0.5}, {"output_scale", 0.5}};
  expect_ints(run_op("qmean", {x}, same), {1, 1, 1, 2}, {-1, 2}, "equal quantization, rounded");
}

TEST(QuantizedOps, QmeanRefusals) {
  json ok = {{"input_scale", 0.1}, {"output_scale", 0.1}};
  expect_error("qmean", {{kI8, {4, 4, 2}}}, ok, "data (NHWC) must have rank 4");
  expect_error("qmean", {{kF32, {1, 4, 4, 2}}}, ok, "int8 is required");
  expect_error("qmean", {{kI8, {1, 4, 4, 2}}}, {{"input_scale", 0.1}}, "output_scale");
  expect_error("qmean", {{kI8, {1, 2, 2, 2}}}, {{"input_scale", 100.0}, {"output_scale", 1e-6}},
               "would overflow int32");
}

TEST(QuantizedOps, PoolRefusals) {
  expect_error("qavg_pool2d", {{kI8, {1, 4, 4, 2}}}, {{"pool_size", {2, 2}}, {"layout", "NCHW"}},
               "attribute 'layout' must be one of \"NHWC\"");
  expect_error("qavg_pool2d", {{kF32, {1, 4, 4, 2}}}, {{"pool_size", {2, 2}}}, "int8 is required");
  expect_error("qavg_pool2d", {{kI8, {1, 4, 4, 2}}}, {{"pool_size", {2, 2}}, {"padding", {2, 0, 0, 0}}},
               "must be smaller than the pooling window");
  expect_error("qavg_pool2d", {{kI8, {1, 4, 4, 2}}}, json::object(), "missing required attribute 'pool_size'");
  expect_error("qglobal_avg_pool2d", {{kI8, {4, 4, 2}}}, json::object(), "data (NHWC) must have rank 4");
}

// ---- qsoftmax, qlogistic, qtanh ----------------------------------------------------------
// The reference is TFLite's fixed-point arithmetic as tests/int8/tflite_arith.cc writes
// it (gemmlowp's formulas in their shape, no code shared with core/).

int8ref::Tensor to_ref(const NDArray& a) {
  int8ref::Tensor t{"int8", a.shape, {}};
  for (int64_t i = 0; i < a.num_elements(); ++i) t.data.push_back(static_cast<int32_t>(a.get_int(i)));
  return t;
}

// The exp table prepare_quantized gives a qsoftmax node with these attributes.
NDArray prepared_table(const std::string& op, const json& attrs, const Shape& shape) {
  Graph g;
  g.inputs.push_back({"x", TensorType{kI8, shape}});
  GraphNode n;
  n.name = "s";
  n.op = op;
  n.inputs = {"x"};
  n.attrs = attrs;
  n.type = TensorType{kI8, shape};
  g.nodes.push_back(n);
  g.outputs = {"s"};
  Graph p = prepare_quantized(g, ScheduleOptions{});
  EXPECT_EQ(p.nodes[0].inputs.size(), 2u);
  return p.constants.at(p.nodes[0].inputs.at(1));
}

TEST(QuantizedOps, QsoftmaxExpTableIsTflitesExpForEveryDifference) {
  // Every entry against the reference's exp_on_negative_values of the scaled difference,
  // for scales that put diff_min inside and outside [-255, 0].
  for (double scale : {0.0039, 0.0625, 0.1, 0.14469251036643982, 0.5, 1.0, 3.7}) {
    for (double beta : {1.0, 0.5}) {
      json attrs = {{"input_scale", scale}, {"beta", beta}};
      NDArray table = prepared_table("qsoftmax", attrs, {1, 4});
      int8ref::Multiplier m = int8ref::quantize_multiplier(std::min(beta * scale * 67108864.0, 2147483647.0));
      int diff_min = -static_cast<int>(std::floor(31.0 * 67108864.0 / std::ldexp(1.0, m.shift)));
      for (int d = 0; d < 256; ++d) {
        int64_t want = 0;
        if (-d >= diff_min) {
          int32_t scaled = int8ref::saturating_rounding_doubling_high_mul(-d * (1 << m.shift), m.m);
          want = int8ref::fixed_point::exp_on_negative_values(scaled, 5);
        }
        ASSERT_EQ(table.get_int(d), want) << "scale " << scale << " beta " << beta << " d " << d;
      }
    }
  }
}

TEST(QuantizedOps, QsoftmaxMatchesReference) {
  uint32_t seed = 30;
  for (double scale : {0.0625, 0.1, 0.01, 1.0, 0.14469251036643982}) {
    std::vector<Shape> shapes = {Shape{1, 10}, Shape{4, 12}, Shape{2, 1}, Shape{3, 300}};
    for (Shape s : shapes) {
      NDArray x = random_i8(s, seed++);
      json attrs = {{"input_scale", scale}, {"output_scale", 1.0 / 256}, {"output_zero_point", -128}};
      NDArray table = prepared_table("qsoftmax", attrs, s);
      int8ref::Tensor rx = to_ref(x);
      std::vector<int64_t> want;
      for (int32_t v : int8ref::eval_op("qsoftmax", {&rx}, attrs).data) want.push_back(v);
      expect_ints(run_op("qsoftmax", {x, table}, attrs), s, want, "qsoftmax " + attrs.dump());
    }
  }
  // Sums of exps across their range: row k holds k copies of the maximum and k of each
  // of a few lower values (the sum grows with k; its leading zeros walk from 12 down).
  for (double scale : {0.02, 0.3}) {
    const int64_t rows = 40, cols = 480;
    NDArray x = NDArray::zeros(kI8, {rows, cols});
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) x.set_int(r * cols + c, c < 12 * (r + 1) ? 100 - (c % 12) * 3 : -128);
    json attrs = {{"input_scale", scale}};
    NDArray table = prepared_table("qsoftmax", attrs, {rows, cols});
    int8ref::Tensor rx = to_ref(x);
    std::vector<int64_t> want;
    for (int32_t v : int8ref::eval_op("qsoftmax", {&rx}, attrs).data) want.push_back(v);
    expect_ints(run_op("qsoftmax", {x, table}, attrs), {rows, cols}, want, "qsoftmax sums");
  }
  // One dominant element saturates at 127 (256/256 would be 128); the rest drop to -128.
  NDArray x = make(kI8, {1, 4}, {127, -128, -128, -128});
  json one = {{"input_scale", 1.0}};
  expect_ints(run_op("qsoftmax", {x, prepared_table("qsoftmax", one, {1, 4})}, one), {1, 4}, {127, -128, -128, -128},
              "dominant");
}

TEST(QuantizedOps, QlogisticAndQtanhMatchReferenceForEveryInput) {
  // All 256 codes, so the table is checked entry by entry through the kernel.
  NDArray x = NDArray::zeros(kI8, {1, 256});
  for (int64_t i = 0; i < 256; ++i) x.set_int(i, i - 128);
  int8ref::Tensor rx = to_ref(x);
  for (const char* op : {"qlogistic", "qtanh"})
    for (double scale : {0.001, 0.0078125, 0.02, 0.0625, 0.1, 0.3, 1.0, 7.9})
      for (int zp : {-128, -3, 0, 40, 127}) {
        json attrs = {{"input_scale", scale}, {"input_zero_point", zp}};
        NDArray table = prepared_table(op, attrs, {1, 256});
        std::vector<int64_t> want;
        for (int32_t v : int8ref::eval_op(op, {&rx}, attrs).data) want.push_back(v);
        expect_ints(run_op(op, {x, table}, attrs), {1, 256}, want, std::string(op) + " " + attrs.dump());
      }
  // Sanity of the reference itself: logistic(0) = 0.5 -> 0; tanh(0) = 0; the extremes saturate.
  json unit = {{"input_scale", 0.1}, {"input_zero_point", 0}};
  int8ref::Tensor edge{"int8", {3}, {-128, 0, 127}};
  EXPECT_EQ(int8ref::eval_op("qlogistic", {&edge}, unit).data, (std::vector<int32_t>{-128, 0, 127}));
  EXPECT_EQ(int8ref::eval_op("qtanh", {&edge}, unit).data, (std::vector<int32_t>{-128, 0, 127}));
}

TEST(QuantizedOps, QlogisticAndQtanhRefusals) {
  std::vector<TensorType> t = {{kI8, {2, 8}}, {kI8, {256}}};
  expect_error("qlogistic", t, json::object(), "missing required attribute 'input_scale'");
  expect_error("qlogistic", t, {{"input_scale", 0.1}, {"output_zero_point", 0}}, "must be -128");
  expect_error("qtanh", t, {{"input_scale", 0.1}, {"output_scale", 1.0 / 256}}, "must be 1/128");
  expect_error("qtanh", {{kI8, {2, 8}}, {kI32, {256}}}, {{"input_scale", 0.1}}, "input 'table' has type int32");
  expect_error("qtanh", {{kI8, {2, 8}}}, {{"input_scale", 1e-12}}, "input_scale out of the range");
  expect_error("qtanh", {{kI8, {2, 8}}}, {{"input_scale", 0.1}}, "input 'table' is missing", true);
}

TEST(QuantizedOps, QsoftmaxRefusals) {
  std::vector<TensorType> t = {{kI8, {2, 8}}, {kI32, {256}}};
  expect_error("qsoftmax", t, json::object(), "missing required attribute 'input_scale'");
  expect_error("qsoftmax", t, {{"input_scale", 0.1}, {"output_scale", 0.1}}, "attribute 'output_scale' must be 1/256");
  expect_error("qsoftmax", t, {{"input_scale", 0.1}, {"output_zero_point", 0}},
               "attribute 'output_zero_point' must be -128");
  expect_error("qsoftmax", {{kI8, {2, 8}}, {kI32, {255}}}, {{"input_scale", 0.1}}, "(256) is required");
  expect_error("qsoftmax", {{kI8, {2, 8}}, {kI8, {256}}}, {{"input_scale", 0.1}}, "input 'exp_table' has type int8");
  expect_error("qsoftmax", {{kI8, {2, 2, 8}}}, {{"input_scale", 0.1}}, "data must have rank 2");
  // Shape inference works before the rewrite adds the table; building does not.
  expect_error("qsoftmax", {{kI8, {2, 8}}}, {{"input_scale", 0.1}}, "input 'exp_table' is missing", true);
}

// ---- qconcat ----------------------------------------------------------------------------

TEST(QuantizedOps, QconcatMatchesReference) {
  struct P {
    std::vector<Shape> shapes;
    int64_t axis;
    std::vector<double> scales;
    std::vector<int64_t> zps;
    double so;
    int64_t zo;
  };
  const P params[] = {
      {{{1, 4, 4, 3}, {1, 4, 4, 5}}, 3, {0.1, 0.1}, {2, 2}, 0.1, 2},                 // identity copies
      {{{1, 4, 4, 3}, {1, 4, 4, 5}}, -1, {0.1, 0.05}, {2, -9}, 0.1, 2},             // one copy, one requantized
      {{{2, 3}, {1, 3}, {4, 3}}, 0, {0.2, 0.01, 0.5}, {0, 100, -50}, 0.03, -10},     // saturates (0.5 / 0.03)
      {{{3, 2, 2}, {3, 1, 2}}, 1, {0.7, 0.002}, {-128, 127}, 0.9, 127},
  };
  uint32_t seed = 40;
  for (const auto& p : params) {
    std::vector<NDArray> in;
    for (const auto& s : p.shapes) in.push_back(random_i8(s, seed++));
    json attrs = {{"axis", p.axis}, {"input_scales", p.scales}, {"input_zero_points", p.zps},
                  {"output_scale", p.so}, {"output_zero_point", p.zo}};
    int64_t rank = static_cast<int64_t>(p.shapes[0].size()), axis = p.axis < 0 ? p.axis + rank : p.axis;
    Shape os = p.shapes[0];
    os[axis] = 0;
    for (const auto& s : p.shapes) os[axis] += s[axis];
    // outer x (axis x inner) blocks, one input after the other.
    int64_t outer = 1, inner = 1;
    for (int64_t k = 0; k < axis; ++k) outer *= os[k];
    for (int64_t k = axis + 1; k < rank; ++k) inner *= os[k];
    std::vector<int64_t> want;
    for (int64_t o = 0; o < outer; ++o)
      for (size_t i = 0; i < in.size(); ++i) {
        int64_t block = p.shapes[i][axis] * inner;
        bool same = p.scales[i] == p.so && p.zps[i] == p.zo;
        RefMult m = ref_multiplier(p.scales[i] / p.so);
        for (int64_t j = 0; j < block; ++j) {
          int64_t x = in[i].get_int(o * block + j);
          want.push_back(same ? x : clamp(ref_requant(x - p.zps[i], m) + p.zo, -128, 127));
        }
      }
    expect_ints(run_op("qconcat", in, attrs), os, want, "qconcat " + attrs.dump());
  }
}

TEST(QuantizedOps, QconcatRefusals) {
  std::vector<TensorType> t = {{kI8, {2, 3}}, {kI8, {2, 4}}};
  json ok = {{"axis", 1}, {"input_scales", {0.1, 0.2}}, {"output_scale", 0.1}};
  json bad_len = ok;
  bad_len["input_scales"] = {0.1};
  expect_error("qconcat", t, bad_len, "attribute 'input_scales' must be a list of 2 numbers > 0 (one per input)");
  json no_scales = ok;
  no_scales.erase("input_scales");
  expect_error("qconcat", t, no_scales, "missing required attribute 'input_scales'");
  json bad_zp = ok;
  bad_zp["input_zero_points"] = {0, 200};
  expect_error("qconcat", t, bad_zp, "attribute 'input_zero_points' must be a list of 2 integers in [-128, 127]");
  json huge = ok;  // 2^30 and above: TFLite's left shift would overflow
  huge["input_scales"] = {0.1, 1e12};
  expect_error("qconcat", t, huge, "requantization multiplier out of range");
  expect_error("qconcat", {{kI8, {2, 3}}, {kI8, {3, 4}}}, ok, "does not match input 0");
  expect_error("qconcat", {{kI8, {2, 3}}, {kI32, {2, 4}}}, ok, "input 'input1' has type int32");
}

// ---- quantize / dequantize ----------------------------------------------------------------

TEST(QuantizedOps, QuantizeAndDequantizeMatchReference) {
  std::mt19937 rng(50);
  std::uniform_real_distribution<float> d(-40.0f, 40.0f);
  for (auto [scale, zp] : {std::pair<double, int>{0.25, 0}, {0.1, -5}, {0.37, 127}, {0.013, -128}}) {
    NDArray x = NDArray::zeros(kF32, {3, 41});
    for (int64_t i = 0; i < x.num_elements(); ++i) x.set_float(i, d(rng));
    // Exact ties (x / scale = k + 0.5) round away from zero; infinities and NaN saturate.
    x.set_float(0, 0.0);
    x.set_float(1, 2.5f * static_cast<float>(scale));
    x.set_float(2, -2.5f * static_cast<float>(scale));
    x.set_float(3, INFINITY);
    x.set_float(4, -INFINITY);
    x.set_float(5, NAN);
    json attrs = {{"scale", scale}, {"zero_point", zp}};
    std::vector<int64_t> want;
    for (int64_t i = 0; i < x.num_elements(); ++i) {
      float v = static_cast<float>(x.get_float(i)) / static_cast<float>(scale);
      float r = std::round(v) + static_cast<float>(zp);
      want.push_back(std::isnan(r) ? -128 : r < -128 ? -128 : r > 127 ? 127 : static_cast<int64_t>(r));
    }
    NDArray q = run_op("quantize", {x}, attrs);
    expect_ints(q, {3, 41}, want, "quantize " + attrs.dump());
    NDArray back = run_op("dequantize", {q}, attrs);
    ASSERT_EQ(back.dtype, kF32);
    for (int64_t i = 0; i < q.num_elements(); ++i) {
      float w = static_cast<float>(q.get_int(i) - zp) * static_cast<float>(scale);
      EXPECT_EQ(static_cast<float>(back.get_float(i)), w) << "dequantize element " << i;
    }
  }
  expect_error("quantize", {{kI8, {4}}}, {{"scale", 0.1}}, "input 'data' has type int8; float32 is required");
  expect_error("dequantize", {{kF32, {4}}}, {{"scale", 0.1}}, "input 'data' has type float32; int8 is required");
  expect_error("quantize", {{kF32, {4}}}, json::object(), "missing required attribute 'scale'");
  expect_error("dequantize", {{kI8, {4}}}, {{"scale", 0.1}, {"zero_point", -129}},
               "attribute 'zero_point' must be an integer in [-128, 127]");
}

// ---- qconv2d / qdense -------------------------------------------------------------------

struct QConv {
  int64_t sh = 1, sw = 1, pt = 0, pl = 0, pb = 0, pr = 0, dh = 1, dw = 1, groups = 1;
  double si = 0.05;
  int64_t zi = 0;
  std::vector<double> ws = {0.01};  // one (per tensor) or one per output channel
  double so = 0.1;
  int64_t zo = 0;
  std::string act = "none";
};

json qconv_attrs(const QConv& p, bool conv) {
  json a = {{"input_scale", p.si}, {"input_zero_point", p.zi}, {"output_scale", p.so},
            {"output_zero_point", p.zo}, {"activation", p.act}};
  a["weight_scale"] = p.ws.size() == 1 ? json(p.ws[0]) : json(p.ws);
  if (conv) {
    a["strides"] = {p.sh, p.sw};
    a["padding"] = {p.pt, p.pl, p.pb, p.pr};
    a["dilation"] = {p.dh, p.dw};
    a["groups"] = p.groups;
  }
  return a;
}

// NHWC data, OHWI weight [O, KH, KW, C/groups], int32 bias [O] or none.
NDArray ref_qconv2d(const NDArray& x, const NDArray& w, const NDArray* bias, const QConv& p) {
  int64_t N = x.shape[0], H = x.shape[1], W = x.shape[2], C = x.shape[3];
  int64_t O = w.shape[0], KH = w.shape[1], KW = w.shape[2], CG = w.shape[3];
  int64_t OH = (H + p.pt + p.pb - p.dh * (KH - 1) - 1) / p.sh + 1;
  int64_t OW = (W + p.pl + p.pr - p.dw * (KW - 1) - 1) / p.sw + 1;
  int64_t opg = O / p.groups;
  Bounds bd = ref_bounds(p.act, p.so, p.zo);
  NDArray out = NDArray::zeros(kI8, {N, OH, OW, O});
  for (int64_t o = 0; o < O; ++o) {
    RefMult m = ref_multiplier(p.si * p.ws[p.ws.size() == 1 ? 0 : o] / p.so);
    int64_t g = o / opg;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t oy = 0; oy < OH; ++oy)
        for (int64_t ox = 0; ox < OW; ++ox) {
          int64_t acc = bias ? bias->get_int(o) : 0;
          for (int64_t ky = 0; ky < KH; ++ky)
            for (int64_t kx = 0; kx < KW; ++kx) {
              int64_t iy = oy * p.sh + ky * p.dh - p.pt, ix = ox * p.sw + kx * p.dw - p.pl;
              if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;  // (zx - zx) * w == 0
              for (int64_t c = 0; c < CG; ++c)
                acc += (x.get_int(((n * H + iy) * W + ix) * C + g * CG + c) - p.zi) *
                       w.get_int(((o * KH + ky) * KW + kx) * CG + c);
            }
          out.set_int(((n * OH + oy) * OW + ox) * O + o, clamp(ref_requant(acc, m) + p.zo, bd.lo, bd.hi));
        }
  }
  return out;
}

NDArray ref_qdense(const NDArray& x, const NDArray& w, const NDArray* bias, const QConv& p) {
  int64_t N = x.shape[0], K = x.shape[1], M = w.shape[0];
  Bounds bd = ref_bounds(p.act, p.so, p.zo);
  NDArray out = NDArray::zeros(kI8, {N, M});
  for (int64_t m = 0; m < M; ++m) {
    RefMult r = ref_multiplier(p.si * p.ws[p.ws.size() == 1 ? 0 : m] / p.so);
    for (int64_t n = 0; n < N; ++n) {
      int64_t acc = bias ? bias->get_int(m) : 0;
      for (int64_t k = 0; k < K; ++k) acc += (x.get_int(n * K + k) - p.zi) * w.get_int(m * K + k);
      out.set_int(n * M + m, clamp(ref_requant(acc, r) + p.zo, bd.lo, bd.hi));
    }
  }
  return out;
}

NDArray random_bias(int64_t n, uint32_t seed, int64_t range) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int64_t> d(-range, range);
  NDArray b = NDArray::zeros(kI32, {n});
  for (int64_t i = 0; i < n; ++i) b.set_int(i, d(rng));
  return b;
}

std::vector<double> channel_scales(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> d(0.002, 0.03);
  std::vector<double> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// Every combination of the schedules the graph rewrite and the op builders follow
// (hoist acts in the lowering pipeline: the backends build every case with it on and off).
std::vector<ScheduleOptions> all_schedules() {
  std::vector<ScheduleOptions> out;
  for (int bits = 0; bits < 32; ++bits) {
    ScheduleOptions o;
    o.fold_zero_point = bits & 1;
    o.block = bits & 2;
    o.unroll = bits & 4;
    o.smlad = bits & 8;
    o.sxtb16 = bits & 16;
    if (o.sxtb16 && !o.smlad) continue;
    // Depthwise tiles in half the combinations, the blocked and plain depthwise loops in
    // the other half; the 64-bit requantization with the zero point folded.
    o.depthwise_tile = bits & 4;
    // The border loop off in the tiled combinations with smlad (which depthwise ignores).
    o.depthwise_border_tiles = bits & 8;
    o.smlal_requant = bits & 1;
    o.smmlar_requant = bits & 2;  // with smlal_requant, ReLU outputs: half the combinations
    // The 3x2 tile wherever it applies (these small layers would not pay for its code).
    o.pixel_triples_stack = o.pixel_triples_code = false;
    out.push_back(o);
    // interleave (on by default) only changes anything with smlad and block; switched off
    // once per weight packing (int8 quads, int16 pairs), the other schedules on.
    // So is fold_output_zero_point (it applies to every kernel with a per-channel table).
    if (o.smlad && o.block && o.unroll && o.fold_zero_point) {
      o.interleave = false;
      o.fold_output_zero_point = false;
      o.few_channels = false;
      o.smlal_requant = false;
      o.dense_chunks = false;
      out.push_back(o);
    }
  }
  return out;
}

// A one-node graph over constant weight (and bias), prepared by prepare_quantized as
// `opts` allow (zero point folded into the bias, weights packed for smlad, per-channel
// tables), then the prepared node run through `run`.
NDArray run_prepared(const std::string& op, const NDArray& x, const NDArray& w, const NDArray* bias, const json& attrs,
                     const ScheduleOptions& opts) {
  Graph g;
  g.name = "q";
  g.inputs = {{"x", TensorType{kI8, x.shape}}};
  g.constants["w"] = w;
  std::vector<std::string> inputs = {"x", "w"};
  if (bias) g.constants["b"] = *bias, inputs.push_back("b");
  std::vector<TensorType> types;
  for (const auto& n : inputs) types.push_back(g.type_of(n));
  g.nodes = {GraphNode{"y", op, inputs, attrs, find_op(op)->infer(types, attrs), ""}};
  g.outputs = {"y"};
  Graph p = prepare_quantized(g, opts);
  const GraphNode& node = p.nodes.at(0);
  std::vector<NDArray> arrays = {x};
  for (size_t i = 1; i < node.inputs.size(); ++i) arrays.push_back(p.constants.at(node.inputs[i]));
  return run_op(op, arrays, node.attrs);
}

std::string schedule_str(const ScheduleOptions& o) {
  std::string d = o.disabled();
  return "schedules off: " + (d.empty() ? std::string("none") : d);
}

struct ConvCase {
  Shape data;
  int64_t O, KH, KW;
  QConv p;
  bool bias;
  std::string what;
};

std::vector<ConvCase> conv_cases() {
  std::vector<ConvCase> v;
  QConv a;  // per tensor, no padding
  a.zi = -3;
  a.zo = 4;
  v.push_back({{1, 6, 6, 4}, 8, 3, 3, a, true, "3x3 per tensor"});
  QConv b;  // per channel, padding, stride 2, relu
  b.sh = b.sw = 2;
  b.pt = b.pl = b.pb = b.pr = 1;
  b.zi = 12;
  b.zo = -20;
  b.ws = channel_scales(6, 7);
  b.si = 0.07;
  b.so = 0.05;
  b.act = "relu";
  v.push_back({{2, 7, 5, 3}, 6, 3, 3, b, true, "strided padded per channel relu"});
  QConv d;  // depthwise with multiplier 2, asymmetric padding, relu6
  d.groups = 5;
  d.pt = 1, d.pl = 0, d.pb = 2, d.pr = 1;
  d.zi = -128;
  d.zo = -128;
  d.ws = channel_scales(10, 8);
  d.so = 0.02;
  d.act = "relu6";
  v.push_back({{1, 6, 7, 5}, 10, 3, 3, d, true, "depthwise x2 relu6"});
  QConv dw;  // depthwise (multiplier 1), stride 2, padding, 7 channels, relu
  dw.groups = 7;
  dw.sh = dw.sw = 2;
  dw.pt = dw.pl = dw.pb = dw.pr = 1;
  dw.zi = -100;
  dw.zo = 9;
  dw.ws = channel_scales(7, 11);
  dw.act = "relu";
  v.push_back({{1, 7, 15, 7}, 7, 3, 3, dw, true, "depthwise stride 2 padded"});
  QConv wide;  // depthwise, stride 1, rows wide enough for checked border columns (depthwise_tile)
  wide.groups = 3;
  wide.pt = wide.pl = wide.pb = 1, wide.pr = 2;
  wide.zi = -7;
  wide.ws = channel_scales(3, 12);
  v.push_back({{1, 3, 13, 3}, 3, 3, 3, wide, true, "depthwise stride 1, 14-wide rows"});
  QConv g;  // grouped, dilation, no bias
  g.groups = 2;
  g.dh = g.dw = 2;
  g.zi = 5;
  v.push_back({{1, 8, 8, 4}, 6, 2, 2, g, false, "grouped dilated no bias"});
  QConv p1;  // pointwise 1x1
  p1.ws = channel_scales(16, 9);
  p1.zi = 1;
  p1.zo = -1;
  v.push_back({{1, 5, 5, 8}, 16, 1, 1, p1, true, "pointwise"});
  QConv sat;  // large accumulators: (x - zx) near -255, weights near 127: saturates low and high
  sat.zi = 127;
  sat.si = 0.5;
  sat.ws = {0.5};
  sat.so = 0.01;
  v.push_back({{1, 4, 4, 16}, 4, 3, 3, sat, true, "saturating"});
  QConv one;  // one input channel, stride (2, 1), padding on three sides (few_channels)
  one.sh = 2;
  one.pt = 2, one.pl = 1, one.pb = 1;
  one.zi = -9;
  one.zo = 6;
  one.ws = channel_scales(5, 4);
  v.push_back({{1, 9, 6, 1}, 5, 4, 3, one, true, "one input channel strided padded"});
  return v;
}

TEST(QuantizedOps, Qconv2dMatchesReferenceUnderEverySchedule) {
  uint32_t seed = 70;
  for (const auto& c : conv_cases()) {
    int64_t C = c.data[3];
    NDArray x = random_i8(c.data, seed++);
    NDArray w = random_i8({c.O, c.KH, c.KW, C / c.p.groups}, seed++, -127, 127);
    if (c.what == "saturating") {
      for (int64_t i = 0; i < w.num_elements(); ++i) w.set_int(i, i % 2 ? 127 : -127);
      for (int64_t i = 0; i < x.num_elements(); ++i) x.set_int(i, i % 3 ? -128 : 127);
    }
    NDArray bias = random_bias(c.O, seed++, 5000);
    NDArray want = ref_qconv2d(x, w, c.bias ? &bias : nullptr, c.p);
    // (prepare_quantized packs weights for smlad only where groups == 1; elsewhere the
    // node records smlad off, and the result must not change either way.)
    for (const ScheduleOptions& opts : all_schedules()) {
      expect_ints(run_prepared("qconv2d", x, w, c.bias ? &bias : nullptr, qconv_attrs(c.p, true), opts), want.shape,
                  ints(want), "qconv2d " + c.what + ", " + schedule_str(opts));
    }
  }
}

TEST(QuantizedOps, QdenseMatchesReferenceUnderEverySchedule) {
  uint32_t seed = 90;
  struct D {
    int64_t N, K, M;
    QConv p;
    bool bias;
  };
  QConv a;
  a.zi = -7;
  a.zo = 3;
  QConv b;
  b.ws = channel_scales(10, 3);
  b.zi = 100;
  b.act = "relu";
  b.so = 0.2;
  QConv sat;
  sat.zi = -128;
  sat.si = 1.0;
  sat.ws = {0.9};
  sat.so = 0.003;
  // Batch 1 with k well above twice the channels takes dense_chunks (with smlad): whole
  // chunks of 64 only (256), and chunks then an odd tail (149) with an odd last channel.
  const D cases[] = {{1, 64, 12, a, true},   {3, 37, 10, b, true},   {2, 250, 5, sat, false},
                     {1, 1, 1, a, true},     {1, 256, 10, b, true},  {1, 149, 3, a, false}};
  for (const auto& c : cases) {
    NDArray x = random_i8({c.N, c.K}, seed++), w = random_i8({c.M, c.K}, seed++, -127, 127);
    NDArray bias = random_bias(c.M, seed++, 20000);
    NDArray want = ref_qdense(x, w, c.bias ? &bias : nullptr, c.p);
    for (const ScheduleOptions& opts : all_schedules())
      expect_ints(run_prepared("qdense", x, w, c.bias ? &bias : nullptr, qconv_attrs(c.p, false), opts), want.shape,
                  ints(want), "qdense, " + schedule_str(opts));
  }
}

TEST(QuantizedOps, QconvAndQdenseRefusals) {
  QConv p;
  std::vector<TensorType> conv = {{kI8, {1, 5, 5, 4}}, {kI8, {6, 3, 3, 4}}, {kI32, {6}}};
  std::vector<TensorType> dense = {{kI8, {2, 8}}, {kI8, {6, 8}}, {kI32, {6}}};
  for (auto [op, types] : {std::pair<const char*, std::vector<TensorType>>{"qconv2d", conv}, {"qdense", dense}}) {
    bool is_conv = std::string(op) == "qconv2d";
    json ok = qconv_attrs(p, is_conv);
    json missing = ok;
    missing.erase("input_scale");
    expect_error(op, types, missing, "missing required attribute 'input_scale'");
    json no_ws = ok;
    no_ws.erase("weight_scale");
    expect_error(op, types, no_ws, "missing required attribute 'weight_scale'");
    json wzp = ok;
    wzp["weight_zero_point"] = 3;
    expect_error(op, types, wzp, "attribute 'weight_zero_point' must be 0");
    json len = ok;
    len["weight_scale"] = {0.1, 0.2, 0.3};
    expect_error(op, types, len, "attribute 'weight_scale' must be a number or a list of 6 numbers");
    json neg = ok;
    neg["output_scale"] = -1;
    expect_error(op, types, neg, "attribute 'output_scale' must be a number > 0");
    json range = ok;
    range["output_scale"] = 1e-30;
    expect_error(op, types, range, "requantization multiplier out of range");
    std::vector<TensorType> f32 = types;
    f32[0].dtype = kF32;
    expect_error(op, f32, ok, "float32");
    std::vector<TensorType> bias64 = types;
    bias64[2].dtype = DataType::Int(64);
    expect_error(op, bias64, ok, "int64");
  }
}

// ---- existing ops on int8 -----------------------------------------------------------------

TEST(QuantizedOps, MaxPoolReshapeFlattenTakeInt8) {
  NDArray x = random_i8({1, 5, 6, 3}, 60);
  json attrs = {{"pool_size", {2, 3}}, {"strides", {2, 2}}, {"padding", {1, 1, 0, 1}}, {"layout", "NHWC"}};
  NDArray got = run_op("max_pool2d", {x}, attrs);
  ASSERT_EQ(got.dtype, kI8);
  int64_t OH = (5 + 1 - 2) / 2 + 1, OW = (6 + 2 - 3) / 2 + 1;
  std::vector<int64_t> want;
  for (int64_t oy = 0; oy < OH; ++oy)
    for (int64_t ox = 0; ox < OW; ++ox)
      for (int64_t c = 0; c < 3; ++c) {
        int64_t m = -128;
        for (int64_t ky = 0; ky < 2; ++ky)
          for (int64_t kx = 0; kx < 3; ++kx) {
            int64_t iy = oy * 2 + ky - 1, ix = ox * 2 + kx - 1;
            if (iy >= 0 && iy < 5 && ix >= 0 && ix < 6) m = std::max(m, x.get_int((iy * 6 + ix) * 3 + c));
          }
        want.push_back(m);
      }
  expect_ints(got, {1, OH, OW, 3}, want, "max_pool2d int8 NHWC");
  NDArray r = run_op("reshape", {x}, {{"newshape", {5, 18}}});
  expect_ints(r, {5, 18}, ints(x), "reshape int8");
  NDArray f = run_op("flatten", {x}, json::object());
  ASSERT_EQ(f.dtype, kI8);
  EXPECT_EQ(ints(f), ints(x));
}

// ---- requantization corners ---------------------------------------------------------------
// qdense with one input feature and weights of 1 makes acc = bias + x, so chosen biases
// put the accumulator on rounding ties, next to INT32_MAX and INT32_MIN, and chosen
// scales put the multiplier at its limits: right shifts of 31 and 0, left shifts, a
// mantissa that rounds up to 2^31, a multiplier below 2^-31 (zero in TFLite). Per tensor
// (constants in the kernel) and per channel (the table prepare_quantized builds, in both
// its forms), against ref_requant.

// The node's inputs after prepare_quantized (its requantization table added), as arrays.
std::vector<NDArray> prepared_dense(const NDArray& x, const NDArray& w, const NDArray& bias, json* attrs) {
  Graph g;
  g.inputs.push_back({"x", TensorType{kI8, x.shape}});
  g.constants["w"] = w;
  g.constants["b"] = bias;
  GraphNode n;
  n.name = "d";
  n.op = "qdense";
  n.inputs = {"x", "w", "b"};
  n.attrs = *attrs;
  n.type = TensorType{kI8, {x.shape[0], w.shape[0]}};
  g.nodes.push_back(n);
  g.outputs = {"d"};
  ScheduleOptions opts;
  opts.fold_zero_point = opts.block = opts.unroll = false;
  Graph p = prepare_quantized(g, opts);
  *attrs = p.nodes[0].attrs;
  std::vector<NDArray> in = {x};
  for (size_t i = 1; i < p.nodes[0].inputs.size(); ++i) in.push_back(p.constants.at(p.nodes[0].inputs[i]));
  return in;
}

TEST(QuantizedOps, RequantizationCornersMatchReference) {
  NDArray x = NDArray::zeros(kI8, {256, 1});
  for (int64_t i = 0; i < 256; ++i) x.set_int(i, i - 128);
  const int64_t kMax = 2147483647, kMin = -2147483648LL;
  // Accumulators: ties at several powers of two, and the int32 ends (acc = bias + x).
  const std::vector<int64_t> biases = {0, 1 << 20, -(1 << 20), 3 << 24, kMax - 127, kMin + 128, 12345678, -87654321};
  // Multipliers (input_scale 1, weight 1, so m = 1 / output_scale).
  const std::vector<double> multipliers = {
      std::ldexp(0.75, -31),          // right shift 31
      std::ldexp(1.0, -32) * 0.9,     // below 2^-31 after rounding: TFLite's zero multiplier
      0.5, 0.75, 0.25, 0.375, 0.125,  // right shifts 0, 0, 1, 1, 2: exact ties
      1.0 - 1e-12,                    // the mantissa rounds up to 2^31: 2^30 with shift 1
      0.0123456789, 3e-5, 1.7, 1000.5};
  for (double m : multipliers)
    for (int64_t b : biases) {
      if (m > 1 && (b > 100000 || b < -100000)) continue;  // x * 2^left would wrap in int32
      json attrs = {{"input_scale", 1.0}, {"weight_scale", 1.0}, {"output_scale", 1.0 / m}, {"output_zero_point", -3}};
      NDArray w = make(kI8, {1, 1}, {1}), bias = make(kI32, {1}, {b});
      NDArray got = run_op("qdense", {x, w, bias}, attrs);
      RefMult r = ref_multiplier(1.0 * 1.0 / (1.0 / m));  // as the op computes it from the scales
      std::vector<int64_t> want;
      for (int64_t i = 0; i < 256; ++i) want.push_back(clamp(ref_requant(b + i - 128, r) - 3, -128, 127));
      expect_ints(got, {256, 1}, want, "qdense corner " + attrs.dump());
    }
  // Per channel: one channel per multiplier, every bias in turn; the table takes its
  // (multiplier, shift) form when some channel's right shift is below 2, its high-word
  // form when all are at least 2.
  for (bool small_only : {false, true}) {
    std::vector<double> ms;
    for (double m : multipliers)
      if (m < 100 && (!small_only || (m < 0.25 && m > std::ldexp(1.0, -31)))) ms.push_back(m);
    const int64_t channels = static_cast<int64_t>(ms.size());
    for (int64_t b : {int64_t{0}, int64_t{3} << 24, kMax - 127, kMin + 128}) {
      if (!small_only && (b > 100000 || b < -100000)) continue;  // the 1.7 channel shifts left
      std::vector<double> scales;
      for (double m : ms) scales.push_back(m);
      json attrs = {{"input_scale", 1.0}, {"weight_scale", scales}, {"output_scale", 1.0}, {"output_zero_point", 5}};
      NDArray w = make(kI8, {channels, 1}, std::vector<int64_t>(channels, 1));
      NDArray bias = make(kI32, {channels}, std::vector<int64_t>(channels, b));
      std::vector<NDArray> in = prepared_dense(x, w, bias, &attrs);
      ASSERT_EQ(in.size(), 4u);
      EXPECT_EQ(in[3].shape[1], small_only ? 3 : 2);
      NDArray got = run_op("qdense", in, attrs);
      std::vector<int64_t> want;
      for (int64_t i = 0; i < 256; ++i)
        for (double m : ms) want.push_back(clamp(ref_requant(b + i - 128, ref_multiplier(m)) + 5, -128, 127));
      expect_ints(got, {256, channels}, want, "qdense per-channel corner " + attrs.dump());
    }
  }
}

// ---- a JSON graph through the AOT executor ----------------------------------------------

// quantize -> qadd(q, q) -> qsoftmax -> dequantize: prepare_quantized adds the softmax's
// table as a constant, and main runs bit for bit like the references, interpreted and as
// host C.
TEST(QuantizedOps, Int8GraphRunsThroughTheAotExecutor) {
  const char* text = R"({
    "format": "microtir-graph", "version": 1, "name": "qgraph",
    "inputs": [{"name": "x", "shape": [3, 10], "dtype": "float32"}],
    "nodes": [
      {"name": "q", "op": "quantize", "inputs": ["x"], "attrs": {"scale": 0.05, "zero_point": 3}},
      {"name": "s", "op": "qadd", "inputs": ["q", "q"],
       "attrs": {"a_scale": 0.05, "a_zero_point": 3, "b_scale": 0.05, "b_zero_point": 3,
                 "output_scale": 0.08, "output_zero_point": -5}},
      {"name": "p", "op": "qsoftmax", "inputs": ["s"], "attrs": {"input_scale": 0.08}},
      {"name": "y", "op": "dequantize", "inputs": ["p"], "attrs": {"scale": 0.00390625, "zero_point": -128}}
    ],
    "outputs": ["y"]
  })";
  Graph loaded = load_graph_json(text, "qgraph.json", [](const std::string&) -> std::string { return ""; });
  // A qsoftmax as written has no table; building it so is refused, the rewrite adds it.
  ASSERT_EQ(loaded.find_node("p")->inputs.size(), 1u);
  EXPECT_THROW(build_aot(loaded), DiagnosticError);
  Graph g = prepare_quantized(loaded, ScheduleOptions{});
  ASSERT_EQ(g.constants.count("p__exp_table"), 1u);
  EXPECT_TRUE(same_bits(g.constants.at("p__exp_table"), prepared_table("qsoftmax", {{"input_scale", 0.08}}, {3, 10})));
  ASSERT_EQ(g.find_node("p")->inputs, (std::vector<std::string>{"s", "p__exp_table"}));

  NDArray x = NDArray::zeros(kF32, {3, 10});
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> d(-4.0f, 4.0f);
  for (int64_t i = 0; i < x.num_elements(); ++i) x.set_float(i, d(rng));
  // The references, op by op.
  NDArray q = NDArray::zeros(kI8, {3, 10});
  for (int64_t i = 0; i < q.num_elements(); ++i)
    q.set_int(i, clamp(static_cast<int64_t>(std::round(static_cast<float>(x.get_float(i)) / 0.05f) + 3.0f), -128, 127));
  int8ref::Tensor sum = to_ref(ref_qbinary("qadd", q, q, {3, 10}, 0.05, 3, 0.05, 3, 0.08, -5, "none"));
  int8ref::Tensor p = int8ref::eval_op("qsoftmax", {&sum}, {{"input_scale", 0.08}});

  AotModule aot = build_aot(g);
  std::vector<NDArray> interp_arrays;
  for (const auto& param : aot.params) {
    NDArray a = NDArray::zeros(param.type.dtype, param.type.shape);
    if (param.role == AotModule::Role::kConstant) a = g.constants.at(param.name);
    if (param.role == AotModule::Role::kInput) a = x;
    interp_arrays.push_back(std::move(a));
  }
  std::vector<NDArray> host_arrays = interp_arrays;
  auto as_args = [](std::vector<NDArray>& arrays) {
    std::vector<InterpArg> args;
    for (auto& a : arrays) args.push_back(&a);
    return args;
  };
  interpret(aot.module, aot.main, as_args(interp_arrays));
  BuildResult built = build_c(aot.module, parse_target("c -unpacked-api=0"));
  sim::HostSimOptions options;
  options.work_dir = (fs::temp_directory_path() / ("microtir-qgraph-" + std::to_string(getpid()))).string();
  sim::run_on_host({&built, aot.main, aot.module.lookup(aot.main)}, as_args(host_arrays), options);
  fs::remove_all(options.work_dir);
  const NDArray& y = interp_arrays.back();
  ASSERT_EQ(aot.params.back().name, "y");
  for (int64_t i = 0; i < y.num_elements(); ++i) {
    float want = static_cast<float>(p.data[i] + 128) * 0.00390625f;
    ASSERT_EQ(static_cast<float>(y.get_float(i)), want) << "element " << i;
  }
  EXPECT_TRUE(same_bits(host_arrays.back(), y));
}

}  // namespace
}  // namespace mtir
