// lstm and qlstm (TFLite Micro's UNIDIRECTIONAL_SEQUENCE_LSTM) against references written
// here: the float LSTM in double, the integer one from TFLite's arithmetic with the
// fixed-point helpers of the independent int8 reference (tests/int8, no code shared with
// core/) and TFLite's int16 sigmoid and tanh written out below. The int16 activations are
// also checked on every int16 input. The states are updated in place: a second run goes on
// from the first one's. Every case runs in the reference interpreter, and at the end of the
// process as host C and wasm, bit for bit (backend_cases.h).
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "backend_cases.h"
#include "op_test_support.h"
#include "int8_reference.h"
#include "interp/interpreter.h"
#include "ops/int16_activation.h"
#include "ops/ops.h"
#include "script/printer.h"
#include "support/diagnostic.h"

namespace mtir {
namespace {

using json = nlohmann::json;
using Shape = std::vector<int64_t>;
using op_test::expect_error;
using op_test::run_op_in_place;

const DataType kI8 = DataType::Int(8), kI16 = DataType::Int(16), kI32 = DataType::Int(32), kF32 = DataType::Float(32);
const DataType kU16 = DataType::UInt(16);

const auto* const kBackends = ::testing::AddGlobalTestEnvironment(
    new backend_cases::Environment({"lstm", {"c -unpacked-api=1"}, true, 1e-5}));


NDArray random_array(DataType t, const Shape& s, uint32_t seed, double lo, double hi) {
  std::mt19937 rng(seed);
  NDArray a = NDArray::zeros(t, s);
  if (t.is_float()) {
    std::uniform_real_distribution<float> d(static_cast<float>(lo), static_cast<float>(hi));
    for (int64_t i = 0; i < a.num_elements(); ++i) a.set_float(i, d(rng));
  } else {
    std::uniform_int_distribution<int64_t> d(static_cast<int64_t>(lo), static_cast<int64_t>(hi));
    for (int64_t i = 0; i < a.num_elements(); ++i) a.set_int(i, d(rng));
  }
  return a;
}

// ---- TFLite's int16 sigmoid and tanh (reference_integer_ops), written out -------------------

int64_t table(int64_t i) { return ops::sigmoid_table_uint16()[static_cast<size_t>(i)]; }

// Rounds x * multiplier right by `shift` (TFLite's multiplier 0: 3 << shift, no shift).
int64_t scaled(int64_t x, int64_t multiplier, int shift) {
  if (multiplier == 0) return x * (int64_t{3} << shift);
  return (x * multiplier + (shift > 0 ? int64_t{1} << (shift - 1) : 0)) >> shift;
}

int64_t ref_logistic(int64_t x, int64_t multiplier, int shift) {
  int64_t v = scaled(x, multiplier, shift), a = std::llabs(v), uh = a >> 9;
  int64_t r = uh >= 255 ? int64_t{0x7FFF} << 10 : (table(uh) << 9) + (a & 511) * (table(uh + 1) - table(uh));
  r = v >= 0 ? r + 512 : (int64_t{1} << 25) - r + 511;
  return r >> 10;
}

int64_t ref_tanh(int64_t x, int64_t multiplier, int shift) {
  int64_t v = scaled(x, multiplier, shift), a = std::llabs(v), uh = a >> 8;
  int64_t r = uh >= 255 ? int64_t{0xFFFF} << 8 : (table(uh) << 8) + (a & 255) * (table(uh + 1) - table(uh));
  r = v >= 0 ? r - (int64_t{1} << 23) + 128 : -r + (int64_t{1} << 23) + 127;
  return r >> 8;  // arithmetic: floor
}

TEST(Int16Activation, TableIsTflitesPublishedOne) {
  // Entries where a plain rounding of 65536 / (1 + exp(-i / 24)) differs, and the ends.
  EXPECT_EQ(table(0), 32768);
  EXPECT_EQ(table(1), 33451);
  EXPECT_EQ(table(4), 35493);
  EXPECT_EQ(table(8), 38180);
  EXPECT_EQ(table(120), 65097);
  EXPECT_EQ(table(255), 65535);
  for (int64_t i = 1; i < 256; ++i) EXPECT_LE(table(i - 1), table(i)) << i;
}

// Every int16 input through the TIR expressions, interpreted (and as C at the end).
void check_activation(bool tanh, int32_t multiplier, int32_t shift) {
  ops::FuncBuilder fb;
  Buffer x = fb.param("x", {65536}, kI16), tab = fb.param("table", {256}, kU16), o = fb.param("out", {65536}, kI16);
  ops::LoopNest nest;
  Expr i = nest.axis("i", 65536);
  Expr v = Cast(kI32, ops::load(x, {i}));
  auto use = [&](Expr y) { return ops::store(o, Cast(kI16, y), {i}); };
  Stmt body = tanh ? ops::int16_tanh("t", v, tab, multiplier, shift, use)
                   : ops::int16_logistic("t", v, tab, multiplier, shift, use);
  PrimFunc f = fb.finish("act", nest.wrap(body));
  IRModule m;
  m.set("act", f);
  NDArray in = NDArray::zeros(kI16, {65536}), out = NDArray::zeros(kI16, {65536});
  for (int64_t k = 0; k < 65536; ++k) in.set_int(k, k - 32768);
  NDArray t = ops::sigmoid_table_array();
  std::vector<NDArray> arrays = {in, t, out};
  std::vector<InterpArg> args;
  for (auto& a : arrays) args.push_back(&a);
  interpret(m, "act", args);
  backend_cases::record_kernel(std::string(tanh ? "tanh" : "logistic") + " " + std::to_string(multiplier) + " " +
                                   std::to_string(shift),
                               f, arrays);
  int bad = 0;
  for (int64_t k = 0; k < 65536 && bad < 5; ++k) {
    int64_t want = tanh ? ref_tanh(k - 32768, multiplier, shift) : ref_logistic(k - 32768, multiplier, shift);
    if (arrays[2].get_int(k) != want) {
      ADD_FAILURE() << (tanh ? "tanh" : "logistic") << "(" << k - 32768 << ") is " << arrays[2].get_int(k)
                    << ", TFLite gives " << want;
      ++bad;
    }
  }
}

TEST(Int16Activation, LogisticOnEveryInput) { check_activation(false, 0, 0); }
TEST(Int16Activation, TanhOnEveryInput) {
  check_activation(true, 0, 0);  // Q3.12 in (the cell gate; cell state 2^-12)
  check_activation(true, 0, 1);  // cell state 2^-11
  check_activation(true, 3, 3);  // cell state 2^-15: a rounding right shift
}

// ---- the LSTM references ----------------------------------------------------------------------

struct Case {
  int64_t batch, time, input, state;
  bool time_major;
  double cell_clip;
};

Shape data_shape(const Case& c) {
  return c.time_major ? Shape{c.time, c.batch, c.input} : Shape{c.batch, c.time, c.input};
}
int64_t data_at(const Case& c, int64_t b, int64_t t) {  // the flat offset of row (b, t)
  return (c.time_major ? t * c.batch + b : b * c.time + t);
}

std::vector<double> float_reference(const Case& c, const NDArray& x, const NDArray& wx, const NDArray& wh,
                                    const NDArray& bias) {
  const int64_t S = c.state, I = c.input;
  std::vector<double> out(static_cast<size_t>(c.batch * c.time * S));
  auto sigmoid = [](double v) { return v > 16.619047164916992 ? 1.0 : v < -9 ? std::exp(v) : 1 / (1 + std::exp(-v)); };
  for (int64_t b = 0; b < c.batch; ++b) {
    std::vector<double> h(S, 0.0), cell(S, 0.0), gate(4 * S);
    for (int64_t t = 0; t < c.time; ++t) {
      int64_t row = data_at(c, b, t);
      for (int64_t g = 0; g < 4; ++g)
        for (int64_t s = 0; s < S; ++s) {
          double acc = bias.get_float(g * S + s);
          for (int64_t k = 0; k < I; ++k) acc += x.get_float(row * I + k) * wx.get_float((g * S + s) * I + k);
          for (int64_t k = 0; k < S; ++k) acc += h[k] * wh.get_float((g * S + s) * S + k);
          gate[g * S + s] = g == 2 ? std::tanh(acc) : sigmoid(acc);
        }
      for (int64_t s = 0; s < S; ++s) {
        cell[s] = gate[S + s] * cell[s] + gate[s] * gate[2 * S + s];
        if (c.cell_clip > 0) cell[s] = std::max(-c.cell_clip, std::min(c.cell_clip, cell[s]));
        h[s] = std::tanh(cell[s]) * gate[3 * S + s];
        out[static_cast<size_t>(row * S + s)] = h[s];
      }
    }
  }
  return out;
}

struct QuantCase {
  double input_scale;
  int64_t input_zero_point;
  double hidden_scale;
  int64_t hidden_zero_point;
  int cell_power;
  std::vector<double> wx_scales, wh_scales;
};

int64_t sat16(int64_t v) { return std::min<int64_t>(32767, std::max<int64_t>(-32768, v)); }
int64_t requant(int64_t acc, double m) {
  return int8ref::multiply_by_quantized_multiplier(static_cast<int32_t>(acc), int8ref::quantize_multiplier(m));
}

// `hs` and `cs` (batch x cells) hold the states before the run and after it.
std::vector<int64_t> int_reference(const Case& c, const QuantCase& q, const NDArray& x, const NDArray& wx,
                                   const NDArray& wh, const NDArray& bias, std::vector<int64_t>* hs,
                                   std::vector<int64_t>* cs) {
  const int64_t S = c.state, I = c.input;
  const double cell_scale = std::ldexp(1.0, q.cell_power);
  const int64_t clip = c.cell_clip > 0 ? sat16(static_cast<int64_t>(c.cell_clip / cell_scale)) : 0;
  int tanh_shift = 15 + q.cell_power - 3, tanh_mult = 0;
  if (tanh_shift < 0) tanh_shift = -tanh_shift, tanh_mult = 3;
  std::vector<int64_t> out(static_cast<size_t>(c.batch * c.time * S));
  for (int64_t b = 0; b < c.batch; ++b) {
    std::vector<int64_t> h(hs->begin() + b * S, hs->begin() + (b + 1) * S),
        cell(cs->begin() + b * S, cs->begin() + (b + 1) * S), gate(4 * S);
    for (int64_t t = 0; t < c.time; ++t) {
      int64_t row = data_at(c, b, t);
      for (int64_t g = 0; g < 4; ++g)
        for (int64_t s = 0; s < S; ++s) {
          int64_t ax = bias.get_int(g * S + s), ah = 0;
          for (int64_t k = 0; k < I; ++k)
            ax += (x.get_int(row * I + k) - q.input_zero_point) * wx.get_int((g * S + s) * I + k);
          for (int64_t k = 0; k < S; ++k) ah += (h[k] - q.hidden_zero_point) * wh.get_int((g * S + s) * S + k);
          int64_t pre = sat16(sat16(requant(ax, q.input_scale * q.wx_scales[g] * 4096)) +
                              sat16(requant(ah, q.hidden_scale * q.wh_scales[g] * 4096)));
          gate[g * S + s] = g == 2 ? ref_tanh(pre, 0, 0) : ref_logistic(pre, 0, 0);
        }
      for (int64_t s = 0; s < S; ++s) {
        int64_t fc = sat16(requant(gate[S + s] * cell[s], std::ldexp(1.0, -15)));
        int64_t ic = sat16(requant(gate[s] * gate[2 * S + s], std::ldexp(1.0, -30) / cell_scale));
        cell[s] = sat16(fc + ic);
        if (c.cell_clip > 0) cell[s] = std::max(-clip, std::min(clip, cell[s]));
        int64_t th = ref_tanh(cell[s], tanh_mult, tanh_shift);
        h[s] = std::max<int64_t>(-128, std::min<int64_t>(127, requant(th * gate[3 * S + s],
                                                                      std::ldexp(1.0, -30) / q.hidden_scale) +
                                                                  q.hidden_zero_point));
        out[static_cast<size_t>(row * S + s)] = h[s];
      }
    }
    std::copy(h.begin(), h.end(), hs->begin() + b * S);
    std::copy(cell.begin(), cell.end(), cs->begin() + b * S);
  }
  return out;
}

void check_float(const Case& c, uint32_t seed) {
  NDArray x = random_array(kF32, data_shape(c), seed, -2, 2);
  NDArray wx = random_array(kF32, {4, c.state, c.input}, seed + 1, -0.7, 0.7);
  NDArray wh = random_array(kF32, {4, c.state, c.state}, seed + 2, -0.7, 0.7);
  NDArray bias = random_array(kF32, {4, c.state}, seed + 3, -0.5, 0.5);
  NDArray h = NDArray::zeros(kF32, {c.batch, c.state}), cell = NDArray::zeros(kF32, {c.batch, c.state});
  std::vector<NDArray> inputs = {x, wx, wh, bias, h, cell};
  NDArray got = run_op_in_place("lstm", inputs, {{"time_major", c.time_major}, {"cell_clip", c.cell_clip}});
  std::vector<double> want = float_reference(c, x, wx, wh, bias);
  Shape out_shape = c.time_major ? Shape{c.time, c.batch, c.state} : Shape{c.batch, c.time, c.state};
  ASSERT_EQ(got.shape, out_shape);
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(got.get_float(static_cast<int64_t>(i)), want[i], 1e-5 * std::max(1.0, std::fabs(want[i]))) << i;
}

// Two runs, the second continuing from the states the first left (TFLM's second Invoke).
void check_int(const Case& c, const QuantCase& q, uint32_t seed) {
  NDArray x = random_array(kI8, data_shape(c), seed, -128, 127);
  NDArray x2 = random_array(kI8, data_shape(c), seed + 9, -128, 127);
  NDArray wx = random_array(kI8, {4, c.state, c.input}, seed + 1, -127, 127);
  NDArray wh = random_array(kI8, {4, c.state, c.state}, seed + 2, -127, 127);
  NDArray bias = random_array(kI32, {4, c.state}, seed + 3, -4000, 4000);
  NDArray h = NDArray::zeros(kI8, {c.batch, c.state}), cell = NDArray::zeros(kI16, {c.batch, c.state});
  for (int64_t i = 0; i < h.num_elements(); ++i) h.set_int(i, q.hidden_zero_point);
  // The op takes the zero points folded into two bias rows: b - zx * sum(W) and -zh * sum(R).
  NDArray folded = NDArray::zeros(kI32, {2, 4, c.state});
  for (int64_t row = 0; row < 4 * c.state; ++row) {
    int64_t sw = 0, sr = 0;
    for (int64_t k = 0; k < c.input; ++k) sw += wx.get_int(row * c.input + k);
    for (int64_t k = 0; k < c.state; ++k) sr += wh.get_int(row * c.state + k);
    folded.set_int(row, bias.get_int(row) - q.input_zero_point * sw);
    folded.set_int(4 * c.state + row, -q.hidden_zero_point * sr);
  }
  json attrs = {{"time_major", c.time_major},     {"cell_clip", c.cell_clip},
                {"input_scale", q.input_scale},
                {"hidden_scale", q.hidden_scale}, {"hidden_zero_point", q.hidden_zero_point},
                {"cell_scale", std::ldexp(1.0, q.cell_power)}, {"input_weight_scales", q.wx_scales},
                {"recurrent_weight_scales", q.wh_scales}};
  std::vector<NDArray> inputs = {x, wx, wh, folded, h, cell, ops::sigmoid_table_array()};
  std::vector<int64_t> hs(static_cast<size_t>(c.batch * c.state), q.hidden_zero_point), cs(hs.size(), 0);
  for (int pass = 0; pass < 2; ++pass) {
    if (pass == 1) inputs[0] = x2;
    NDArray got = run_op_in_place("qlstm", inputs, attrs);
    std::vector<int64_t> want = int_reference(c, q, inputs[0], wx, wh, bias, &hs, &cs);
    ASSERT_EQ(got.dtype, kI8);
    int bad = 0;
    for (size_t i = 0; i < want.size() && bad < 5; ++i)
      if (got.get_int(static_cast<int64_t>(i)) != want[i]) {
        ADD_FAILURE() << "run " << pass + 1 << ": element " << i << " is " << got.get_int(static_cast<int64_t>(i))
                      << ", expected " << want[i];
        ++bad;
      }
    for (size_t i = 0; i < hs.size(); ++i) {
      EXPECT_EQ(inputs[4].get_int(static_cast<int64_t>(i)), hs[i]) << "hidden state " << i << " after run " << pass + 1;
      EXPECT_EQ(inputs[5].get_int(static_cast<int64_t>(i)), cs[i]) << "cell state " << i << " after run " << pass + 1;
    }
  }
}

// Scales that are float32 values, as a .tflite holds them.
double f32(double v) { return static_cast<float>(v); }
QuantCase quant_case(int cell_power) {
  return {f32(0.04), -9, f32(0.0079), 4, cell_power,
          {f32(0.011), f32(0.006), f32(0.02), f32(0.009)}, {f32(0.013), f32(0.008), f32(0.005), f32(0.017)}};
}

TEST(Lstm, FloatBatchMajor) { check_float({2, 5, 3, 4, false, 0}, 1); }
TEST(Lstm, FloatTimeMajorClipped) { check_float({3, 4, 5, 6, true, 0.6}, 2); }
TEST(Lstm, FloatOneStep) { check_float({1, 1, 7, 5, false, 10}, 3); }

TEST(Lstm, IntegerBatchMajor) { check_int({2, 6, 5, 4, false, 10}, quant_case(-11), 4); }
TEST(Lstm, IntegerTimeMajor) { check_int({2, 5, 3, 6, true, 10}, quant_case(-12), 5); }
TEST(Lstm, IntegerTightClipAndOtherCellScales) {
  check_int({1, 8, 4, 5, false, 1.2}, quant_case(-11), 6);
  check_int({2, 3, 4, 3, true, 0}, quant_case(-15), 7);
  check_int({1, 4, 3, 3, false, 0}, quant_case(-9), 8);
}


TEST(Lstm, StatesAreWrittenInPlace) {
  EXPECT_EQ(written_inputs(*find_op("lstm"), json::object(), 6), (std::vector<size_t>{4, 5}));
  EXPECT_EQ(written_inputs(*find_op("qlstm"), json::object(), 7), (std::vector<size_t>{4, 5}));
}

TEST(Lstm, Errors) {
  std::vector<TensorType> f = {{kF32, {1, 3, 2}}, {kF32, {4, 5, 2}}, {kF32, {4, 5, 5}},
                               {kF32, {4, 5}},    {kF32, {1, 5}},    {kF32, {1, 5}}};
  EXPECT_EQ(find_op("lstm")->infer(f, json::object()).shape, (Shape{1, 3, 5}));
  auto bad = f;
  bad[2].shape = {4, 5, 4};
  expect_error("lstm", bad, json::object(), "input 'recurrent_weights' has shape (4, 5, 4); (4, 5, 5) is required");
  bad = f;
  bad[4].shape = {2, 5};
  expect_error("lstm", bad, json::object(), "input 'hidden_state' has shape (2, 5)");
  expect_error("lstm", f, {{"cell_clip", -1}}, "cell_clip");
  std::vector<TensorType> q = {{kI8, {1, 3, 2}}, {kI8, {4, 5, 2}}, {kI8, {4, 5, 5}}, {kI32, {2, 4, 5}},
                               {kI8, {1, 5}},    {kI16, {1, 5}},   {kU16, {256}}};
  json attrs = {{"input_scale", 0.1},      {"hidden_scale", 0.01},
                {"cell_scale", 0.0003},    {"input_weight_scales", {0.1, 0.1, 0.1, 0.1}},
                {"recurrent_weight_scales", {0.1, 0.1, 0.1, 0.1}}};
  expect_error("qlstm", q, attrs, "attribute 'cell_scale' must be a power of two");
  attrs["cell_scale"] = 1.0 / 4096;
  EXPECT_EQ(find_op("qlstm")->infer(q, attrs).dtype, kI8);
  attrs["input_weight_scales"] = {0.1, 0.1};
  expect_error("qlstm", q, attrs, "input_weight_scales");
  attrs["input_weight_scales"] = {0.1, 0.1, 0.1, 0.1};
  auto qbad = q;
  qbad[5].dtype = kI8;
  expect_error("qlstm", qbad, attrs, "cell_state");
}

// TFLM's 16x8: int16 data and hidden state, an int64 bias [4, cells] (no zero points to fold).
TEST(Lstm, Int16x8TypesAndRefusals) {
  const DataType i64 = DataType::Int(64);
  std::vector<TensorType> q = {{kI16, {2, 3, 2}}, {kI8, {4, 5, 2}}, {kI8, {4, 5, 5}}, {i64, {4, 5}},
                               {kI16, {2, 5}},    {kI16, {2, 5}},   {kU16, {256}}};
  json attrs = {{"input_scale", 1e-4},         {"hidden_scale", 3e-5},
                {"cell_scale", 1.0 / 2048},    {"input_weight_scales", {0.01, 0.01, 0.01, 0.01}},
                {"recurrent_weight_scales", {0.01, 0.01, 0.01, 0.01}}};
  TensorType out = find_op("qlstm")->infer(q, attrs);
  EXPECT_EQ(out.dtype, kI16);
  EXPECT_EQ(out.shape, (Shape{2, 3, 5}));
  auto bad = q;
  bad[3] = {kI32, {4, 5}};
  expect_error("qlstm", bad, attrs, "bias");
  bad = q;
  bad[3] = {i64, {2, 4, 5}};
  expect_error("qlstm", bad, attrs, "(4, 5) is required");
  bad = q;
  bad[4].dtype = kI8;
  expect_error("qlstm", bad, attrs, "hidden_state");
  json zp = attrs;
  zp["hidden_zero_point"] = 3;
  expect_error("qlstm", q, zp, "hidden_zero_point");
  // TFLM's 64-bit requantization asserts shift < 8: a gate multiplier of 128 or more.
  json big = attrs;
  big["input_scale"] = 1.0;
  big["input_weight_scales"] = {0.5, 0.01, 0.01, 0.01};
  expect_error("qlstm", q, big, "input gate's requantization multiplier is 128 or more");
}

}  // namespace
}  // namespace mtir
