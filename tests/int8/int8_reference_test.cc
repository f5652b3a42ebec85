// The int8 reference itself, on cases worked out by hand (multipliers, rounding, padding
// with a non-zero input zero point, per-channel scales, activation clamps, saturation),
// and on the generated int8 MLPerf Tiny graphs: deterministic, every op kind present, and
// no layer whose codes pile up on the int8 bounds.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include <unistd.h>

#include "int8_reference.h"
#include "support/source_dir.h"

namespace int8ref {
namespace {

using nlohmann::json;

Tensor t8(std::vector<int64_t> shape, std::vector<int32_t> data) { return Tensor{"int8", std::move(shape), std::move(data)}; }
Tensor t32(std::vector<int64_t> shape, std::vector<int32_t> data) { return Tensor{"int32", std::move(shape), std::move(data)}; }

TEST(Int8Reference, QuantizeMultiplier) {
  EXPECT_EQ(quantize_multiplier(0.5).m, 1 << 30);
  EXPECT_EQ(quantize_multiplier(0.5).shift, 0);
  EXPECT_EQ(quantize_multiplier(1.0).shift, 1);
  EXPECT_EQ(quantize_multiplier(0.75).m, 1610612736);
  EXPECT_EQ(quantize_multiplier(0.001).shift, -9);
  // A mantissa that rounds up to 2^31 is halved and the exponent bumped.
  Multiplier q = quantize_multiplier(1.0 - 1e-12);
  EXPECT_EQ(q.m, 1 << 30);
  EXPECT_EQ(q.shift, 1);
  // Below 2^-31 TFLite uses multiplier 0 and shift 0; just above, the right shift is 31.
  EXPECT_EQ(quantize_multiplier(1e-30).m, 0);
  EXPECT_EQ(quantize_multiplier(1e-30).shift, 0);
  EXPECT_EQ(quantize_multiplier(std::ldexp(0.75, -31)).shift, -31);
  EXPECT_THROW(quantize_multiplier(1e12), Error);  // shift > 30
  EXPECT_THROW(quantize_multiplier(0.0), Error);
}

TEST(Int8Reference, DoubleRounding) {
  // SaturatingRoundingDoublingHighMul rounds half up (the nudge is 1 - 2^30 for negative
  // products, with a truncating division); RoundingDivideByPOT rounds half away from zero.
  EXPECT_EQ(saturating_rounding_doubling_high_mul(3, 1 << 30), 2);    // 1.5 -> 2
  EXPECT_EQ(saturating_rounding_doubling_high_mul(-3, 1 << 30), -1);  // -1.5 -> -1
  EXPECT_EQ(saturating_rounding_doubling_high_mul(INT32_MIN, INT32_MIN), INT32_MAX);
  EXPECT_EQ(rounding_divide_by_pot(5, 1), 3);    // 2.5 -> 3
  EXPECT_EQ(rounding_divide_by_pot(-5, 1), -3);  // -2.5 -> -3
  EXPECT_EQ(rounding_divide_by_pot(-6, 2), -2);  // -1.5 -> -2
  EXPECT_EQ(rounding_divide_by_pot(INT32_MAX, 1), 1 << 30);
  EXPECT_EQ(rounding_divide_by_pot(INT32_MIN, 31), -1);
  // Two roundings. 13 * 0.125: 13 * 0.5 = 6.5 -> 7, then 7 / 4 = 1.75 -> 2.
  EXPECT_EQ(multiply_by_quantized_multiplier(13, quantize_multiplier(0.125)), 2);
  // 5 * 0.25 = 1.25 rounds to 1 in one step; TFLite: 5 * 0.5 = 2.5 -> 3, 3 / 2 = 1.5 -> 2.
  EXPECT_EQ(multiply_by_quantized_multiplier(5, Multiplier{1 << 30, -1}), 2);
  // -2 * 0.25 = -0.5: -1 exactly, then -0.5 rounds away from zero to -1.
  EXPECT_EQ(multiply_by_quantized_multiplier(-2, Multiplier{1 << 30, -1}), -1);
  // -3 * 0.25: -1.5 rounds half up to -1, then -0.5 -> -1; -1 * 0.25: -0.5 -> 0.
  EXPECT_EQ(multiply_by_quantized_multiplier(-3, Multiplier{1 << 30, -1}), -1);
  EXPECT_EQ(multiply_by_quantized_multiplier(-1, Multiplier{1 << 30, -1}), 0);
  EXPECT_EQ(multiply_by_quantized_multiplier(3, Multiplier{1 << 30, 2}), 6);     // left shift
}

TEST(Int8Reference, AverageRounding) {
  EXPECT_EQ(div_round_away(11, 4), 3);
  EXPECT_EQ(div_round_away(-11, 4), -3);
  EXPECT_EQ(div_round_away(10, 4), 3);    // 2.5 -> 3
  EXPECT_EQ(div_round_away(-10, 4), -3);  // -2.5 -> -3
}

// 3x3 image 1..9 with input zero point 1, 3x3 kernels (+1 and -1), padding 1: padded
// positions count as x == zx, so the corner sums (1-1)+(2-1)+(4-1)+(5-1) = 8, the centre 36.
json conv_attrs(std::string act, double so, int zo) {
  return {{"padding", {1, 1, 1, 1}}, {"input_scale", 0.5}, {"input_zero_point", 1}, {"weight_scale", {0.25, 0.5}},
          {"output_scale", so}, {"output_zero_point", zo}, {"activation", act}};
}

TEST(Int8Reference, Qconv2dPaddingPerChannelAndActivations) {
  Tensor x = t8({1, 3, 3, 1}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  std::vector<int32_t> w(18, 1);
  for (int i = 9; i < 18; ++i) w[i] = -1;
  Tensor wt = t8({2, 3, 3, 1}, w), bias = t32({2}, {5, -3});
  // Multipliers 0.5 * 0.25 / 0.125 = 1 and 0.5 * 0.5 / 0.125 = 2.
  Tensor y = eval_op("qconv2d", {&x, &wt, &bias}, conv_attrs("none", 0.125, 10));
  ASSERT_EQ(y.shape, (std::vector<int64_t>{1, 3, 3, 2}));
  EXPECT_EQ(y.data[0], 8 + 5 + 10);             // corner, channel 0
  EXPECT_EQ(y.data[1], 2 * (-8 - 3) + 10);      // corner, channel 1
  EXPECT_EQ(y.data[8], 36 + 5 + 10);            // centre, channel 0
  EXPECT_EQ(y.data[9], 2 * (-36 - 3) + 10);     // centre, channel 1
  Tensor r = eval_op("qconv2d", {&x, &wt, &bias}, conv_attrs("relu", 0.125, 10));
  EXPECT_EQ(r.data[9], 10);  // negative -> the zero point
  // ReLU6: ceiling zo + round(6 / 0.125) = 58.
  Tensor big_bias = t32({2}, {20, -3});
  Tensor r6 = eval_op("qconv2d", {&x, &wt, &big_bias}, conv_attrs("relu6", 0.125, 10));
  EXPECT_EQ(r6.data[0], 8 + 20 + 10);
  EXPECT_EQ(r6.data[8], 58);
  // Saturation: multiplier 100.
  Tensor s = eval_op("qconv2d", {&x, &wt, &bias}, conv_attrs("none", 0.00125, 0));
  EXPECT_EQ(s.data[8], 127);
  EXPECT_EQ(s.data[9], -128);
}

TEST(Int8Reference, Qconv2dDepthwiseStride) {
  // groups == C: each channel sees only its own kernel; stride 2 without padding.
  Tensor x = t8({1, 3, 3, 2}, {1, 10, 2, 20, 3, 30, 4, 40, 5, 50, 6, 60, 7, 70, 8, 80, 9, 90});
  Tensor w = t8({2, 1, 1, 1}, {1, 2});
  json a = {{"strides", {2, 2}}, {"groups", 2}, {"input_scale", 1.0}, {"weight_scale", 1.0}, {"output_scale", 2.0}};
  Tensor y = eval_op("qconv2d", {&x, &w}, a);
  ASSERT_EQ(y.shape, (std::vector<int64_t>{1, 2, 2, 2}));
  // (1, 10) -> (1 * 1 / 2, 10 * 2 / 2) = (1 (0.5 rounds up), 10); (9, 90) -> (5, 90).
  EXPECT_EQ(y.data, (std::vector<int32_t>{1, 10, 2, 30, 4, 70, 5, 90}));
}

TEST(Int8Reference, QdenseAndQadd) {
  Tensor x = t8({1, 3}, {-3, 0, 3}), w = t8({2, 3}, {1, 2, 3, -1, -1, -1}), b = t32({2}, {1, 0});
  json a = {{"input_scale", 1.0}, {"input_zero_point", -3}, {"weight_scale", {1.0, 4.0}}, {"output_scale", 2.0}};
  // x - zx = (0, 3, 6): acc = (1 + 6 + 18, -9) = (25, -9); m = (0.5, 2) -> (13, -18).
  EXPECT_EQ(eval_op("qdense", {&x, &w, &b}, a).data, (std::vector<int32_t>{13, -18}));
  Tensor p = t8({3}, {3, 100, -10}), q = t8({3}, {4, 100, 2});
  json add = {{"a_scale", 1.0}, {"b_scale", 1.0}, {"output_scale", 1.0}, {"output_zero_point", -5}, {"activation", "relu"}};
  EXPECT_EQ(eval_op("qadd", {&p, &q}, add).data, (std::vector<int32_t>{2, 127, -5}));
  json scaled = {{"a_scale", 0.5}, {"a_zero_point", 1}, {"b_scale", 0.25}, {"output_scale", 0.5}};
  // (3 - 1) * 0.5 + 4 * 0.25 = 2.0 -> code 4.
  EXPECT_EQ(eval_op("qadd", {&p, &q}, scaled).data[0], 4);
}

TEST(Int8Reference, PoolsSoftmaxConcat) {
  Tensor x = t8({1, 2, 2, 1}, {1, 2, 3, 5}), n = t8({1, 2, 2, 1}, {-1, -2, -3, -5});
  EXPECT_EQ(eval_op("qglobal_avg_pool2d", {&x}, json::object()).data[0], 3);   // 2.75
  EXPECT_EQ(eval_op("qavg_pool2d", {&n}, {{"pool_size", {2, 2}}}).data[0], -3);  // -2.75
  // MEAN requantizes, as TFLM 90b983c2 does even with equal quantization (-11 / 4 = -2.75
  // rounds to -3; the truncating division of older TFLM gave -2), and otherwise too
  // (0.5 * (-11 / 4 - 1) / 0.25 = -7.5 -> -7 after TFLite's roundings, + 2).
  EXPECT_EQ(eval_op("qmean", {&n}, {{"input_scale", 0.5}, {"output_scale", 0.5}}).data[0], -3);
  EXPECT_EQ(eval_op("qmean", {&n}, {{"input_scale", 0.5}, {"input_zero_point", 1}, {"output_scale", 0.25},
                                    {"output_zero_point", 2}}).data[0], -5);
  // Padding is not counted: the bottom-right window of a 3x3 input holds one value.
  Tensor g = t8({1, 3, 3, 1}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  json pad = {{"pool_size", {2, 2}}, {"strides", {2, 2}}, {"padding", {0, 0, 1, 1}}};
  EXPECT_EQ(eval_op("qavg_pool2d", {&g}, pad).data, (std::vector<int32_t>{3, 5, 8, 9}));  // 3, 4.5, 7.5, 9
  Tensor l = t8({2, 4}, {7, 7, 7, 7, 100, -100, -100, -100});
  Tensor sm = eval_op("qsoftmax", {&l}, {{"input_scale", 0.1}});
  EXPECT_EQ(sm.data, (std::vector<int32_t>{-64, -64, -64, -64, 127, -128, -128, -128}));
  EXPECT_THROW(eval_op("qsoftmax", {&l}, {{"input_scale", 0.1}, {"output_scale", 0.5}}), Error);
  Tensor a = t8({1, 2}, {1, -2}), b = t8({1, 1}, {100});
  json cat = {{"axis", 1}, {"input_scales", {1.0, 2.0}}, {"input_zero_points", {0, 0}}, {"output_scale", 1.0}};
  EXPECT_EQ(eval_op("qconcat", {&a, &b}, cat).data, (std::vector<int32_t>{1, -2, 127}));
}

TEST(Int8Reference, ErrorsNameTheProblem) {
  Tensor x = t8({1, 3}, {0, 0, 0}), w = t8({2, 3}, {0, 0, 0, 0, 0, 0});
  try {
    eval_op("qdense", {&x, &w}, {{"input_scale", 1.0}, {"weight_scale", 1.0}});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("output_scale"), std::string::npos) << e.what();
  }
  EXPECT_THROW(eval_op("qfoo", {&x}, json::object()), Error);
  EXPECT_THROW(eval_op("qdense", {&x, &w}, {{"input_scale", 1.0}, {"weight_scale", {1.0}}, {"output_scale", 1.0}}), Error);
}

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Writes the int8 graphs with the tool into a fresh folder under the test's working directory.
std::string generate(const std::string& name) {
  std::string dir = testing::TempDir() + "int8_ref_" + std::to_string(getpid()) + "_" + name;
  std::string cmd = "rm -rf '" + dir + "' && python3 '" + std::string(mtir::source_dir()) + "/tools/make_mlperf_graphs.py' --int8 '" +
                    dir + "' > '" + dir + ".macs'";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  return dir;
}

TEST(Int8Reference, MlperfGraphsAreDeterministicAndSpreadOut) {
  std::string a = generate("a"), b = generate("b");
  std::set<std::string> ops, activations;
  bool per_tensor = false, per_channel = false;
  for (std::string model : {"ds_cnn", "mobilenet_v1_025", "resnet8", "fc_autoencoder"}) {
    SCOPED_TRACE(model);
    std::string graph = a + "/" + model + "/" + model + ".json";
    ASSERT_EQ(slurp(graph), slurp(b + "/" + model + "/" + model + ".json"));
    Tensor x = read_npy(a + "/" + model + "/input.npy");
    ASSERT_EQ(x.dtype, "int8");
    json g = json::parse(slurp(graph));
    for (const json& c : g["constants"])
      ASSERT_EQ(slurp(a + "/" + model + "/" + c["file"].get<std::string>()),
                slurp(b + "/" + model + "/" + c["file"].get<std::string>()));
    for (const json& n : g["nodes"]) {
      ops.insert(n["op"].get<std::string>());
      json at = n.value("attrs", json::object());
      if (at.contains("activation")) activations.insert(at["activation"].get<std::string>());
      if (at.contains("weight_scale")) (at["weight_scale"].is_array() ? per_channel : per_tensor) = true;
    }
    GraphResult r = run_graph(graph, {{"x", x}});
    for (const NodeStats& s : r.stats) {
      SCOPED_TRACE(s.name);
      // Not saturated wholesale: few codes on the top bound, and the ReLU floor (at -128
      // when the zero point is -128) holds at most about two thirds.
      EXPECT_LT(s.at_max, s.size / 10 + 1);
      if (s.op != "qsoftmax") {
        EXPECT_LT(s.at_min, s.size * 3 / 4 + 1);
      }
      if (s.size >= 64) {
        EXPECT_GE(s.distinct, 20);
      }
    }
  }
  for (const char* op : {"qconv2d", "qdense", "qadd", "qavg_pool2d", "qglobal_avg_pool2d", "qsoftmax", "reshape"})
    EXPECT_TRUE(ops.count(op)) << op;
  EXPECT_EQ(activations, (std::set<std::string>{"none", "relu", "relu6"}));
  EXPECT_TRUE(per_tensor && per_channel);
  // The MAC counts match the float graphs' (same layer shapes).
  EXPECT_EQ(slurp(a + ".macs"), "ds_cnn 2656768\nmobilenet_v1_025 7489664\nresnet8 12501632\nfc_autoencoder 264192\n");
  std::string cleanup = "rm -rf '" + a + "' '" + b + "' '" + a + ".macs' '" + b + ".macs'";
  EXPECT_EQ(std::system(cleanup.c_str()), 0);
}

TEST(Int8Reference, NpyRoundTrip) {
  Tensor t = t32({2, 2}, {-1, 2147483647, -2147483647 - 1, 7});
  std::string path = testing::TempDir() + "int8_ref_roundtrip_" + std::to_string(getpid()) + ".npy";
  write_npy(path, t);
  Tensor back = read_npy(path);
  EXPECT_EQ(back.dtype, "int32");
  EXPECT_EQ(back.shape, t.shape);
  EXPECT_EQ(back.data, t.data);
}

}  // namespace
}  // namespace int8ref
