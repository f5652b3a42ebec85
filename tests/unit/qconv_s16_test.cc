// qconv2d_s16, qdense_s16, qtranspose_conv2d and transpose_conv2d (core/ops/qconv_s16.cc)
// against references written here from TFLM's reference kernels: plain loops (the
// transposed convolution as TFLM's scatter), the fixed-point multiplier found without
// frexp, TFLM's 64-bit MultiplyByQuantizedMultiplier (16-bit reduced multiplier, one
// rounding shift) for int64 accumulators and the two-rounding one, as exact rational
// steps, for int32 ones. Each case is checked in the reference interpreter, then as host
// C and wasm (backend_cases.h) bit for bit; refusals by message.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "backend_cases.h"
#include "op_test_support.h"
#include "interp/interpreter.h"
#include "ops/ops.h"
#include "script/printer.h"
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

const DataType kI8 = DataType::Int(8), kI16 = DataType::Int(16), kI32 = DataType::Int(32), kI64 = DataType::Int(64);
const DataType kF32 = DataType::Float(32);

const auto* const kBackends = ::testing::AddGlobalTestEnvironment(new backend_cases::Environment(
    {"qs16", {"c -unpacked-api=1"}, true, 0}));

NDArray random_ints(DataType t, const Shape& s, uint32_t seed, int64_t lo, int64_t hi) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int64_t> d(lo, hi);
  NDArray a = NDArray::zeros(t, s);
  for (int64_t i = 0; i < a.num_elements(); ++i) a.set_int(i, d(rng));
  return a;
}

NDArray random_floats(const Shape& s, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1, 1);
  NDArray a = NDArray::zeros(kF32, s);
  auto* p = reinterpret_cast<float*>(a.data.data());
  for (int64_t i = 0; i < a.num_elements(); ++i) p[i] = d(rng);
  return a;
}


void expect_equal(const NDArray& got, const NDArray& want, const std::string& what) {
  ASSERT_EQ(got.shape, want.shape) << what;
  ASSERT_EQ(got.dtype, want.dtype) << what;
  int bad = 0;
  for (int64_t i = 0; i < got.num_elements() && bad < 5; ++i) {
    bool same = got.dtype.is_float() ? got.get_float(i) == want.get_float(i) : got.get_int(i) == want.get_int(i);
    if (!same) {
      ADD_FAILURE() << what << ": element " << i << " is "
                    << (got.dtype.is_float() ? std::to_string(got.get_float(i)) : std::to_string(got.get_int(i)))
                    << ", expected "
                    << (got.dtype.is_float() ? std::to_string(want.get_float(i)) : std::to_string(want.get_int(i)));
      ++bad;
    }
  }
}

// ---- reference arithmetic ----------------------------------------------------------------


// TFLM's int64 form: the multiplier rounded to 16 bits, one rounding (half up) shift.
int64_t requant64(int64_t acc, RefMult r) {
  int64_t reduced = r.M < 0x7FFF0000 ? (r.M + 32768) / 65536 : 0x7FFF;
  int total = 15 - r.shift;
  return floor_div(acc * reduced + (int64_t{1} << (total - 1)), int64_t{1} << total);
}

struct Quant {
  double in_scale, out_scale;
  std::vector<double> w_scales;
  int64_t zi = 0, zo = 0, lo = -32768, hi = 32767;
  bool wide = true;
  int64_t out(int64_t acc, int64_t c) const {
    RefMult m = ref_multiplier(in_scale * w_scales[w_scales.size() == 1 ? 0 : c] / out_scale);
    int64_t v = (wide ? requant64(acc, m) : ref_requant(acc, m)) + zo;
    return std::min(std::max(v, lo), hi);
  }
  json attrs() const {
    json a = {{"input_scale", in_scale}, {"output_scale", out_scale}, {"input_zero_point", zi},
              {"output_zero_point", zo}, {"accumulator", wide ? "int64" : "int32"}};
    if (w_scales.size() == 1) a["weight_scale"] = w_scales[0];
    else a["weight_scale"] = w_scales;
    return a;
  }
  // The per-channel (multiplier, shift) table prepare_quantized adds.
  NDArray table() const {
    NDArray t = NDArray::zeros(kI32, {static_cast<int64_t>(w_scales.size()), 2});
    for (size_t c = 0; c < w_scales.size(); ++c) {
      RefMult m = ref_multiplier(in_scale * w_scales[c] / out_scale);
      t.set_int(static_cast<int64_t>(2 * c), m.M);
      t.set_int(static_cast<int64_t>(2 * c + 1), m.shift);
    }
    return t;
  }
};

std::vector<double> channel_scales(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> d(0.002, 0.02);
  std::vector<double> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(static_cast<float>(d(rng)));
  return v;
}

// conv: x NHWC, w OHWI [O, KH, KW, C / groups]; padding {t, l} (bottom/right implied by out).
NDArray ref_conv(const NDArray& x, const NDArray& w, const NDArray* bias, const Quant& q, Shape stride, Shape pad,
                 Shape dil, int64_t groups, int64_t oh, int64_t ow) {
  const auto& xs = x.shape;
  const auto& ws = w.shape;
  NDArray out = NDArray::zeros(x.dtype, {xs[0], oh, ow, ws[0]});
  const int64_t per_group = ws[0] / groups;
  for (int64_t n = 0; n < xs[0]; ++n)
    for (int64_t y = 0; y < oh; ++y)
      for (int64_t xx = 0; xx < ow; ++xx)
        for (int64_t o = 0; o < ws[0]; ++o) {
          int64_t acc = bias ? bias->get_int(o) : 0;
          for (int64_t ky = 0; ky < ws[1]; ++ky)
            for (int64_t kx = 0; kx < ws[2]; ++kx) {
              int64_t iy = y * stride[0] - pad[0] + ky * dil[0], ix = xx * stride[1] - pad[1] + kx * dil[1];
              if (iy < 0 || iy >= xs[1] || ix < 0 || ix >= xs[2]) continue;
              for (int64_t c = 0; c < ws[3]; ++c)
                acc += (x.get_int(((n * xs[1] + iy) * xs[2] + ix) * xs[3] + o / per_group * ws[3] + c) - q.zi) *
                       w.get_int(((o * ws[1] + ky) * ws[2] + kx) * ws[3] + c);
            }
          out.set_int(((n * oh + y) * ow + xx) * ws[0] + o, q.out(acc, o));
        }
  return out;
}

// TFLM's scatter: input (iy, ix) into output (iy * s - pad + fy, ix * s - pad + fx).
template <typename T>
std::vector<T> scatter(const NDArray& x, const NDArray& w, Shape stride, Shape pad, int64_t oh, int64_t ow,
                       const std::function<T(int64_t)>& xv, const std::function<T(int64_t)>& wv) {
  const auto& xs = x.shape;
  const auto& ws = w.shape;
  std::vector<T> acc(static_cast<size_t>(xs[0] * oh * ow * ws[0]), T(0));
  for (int64_t n = 0; n < xs[0]; ++n)
    for (int64_t iy = 0; iy < xs[1]; ++iy)
      for (int64_t ix = 0; ix < xs[2]; ++ix)
        for (int64_t c = 0; c < xs[3]; ++c)
          for (int64_t fy = 0; fy < ws[1]; ++fy)
            for (int64_t fx = 0; fx < ws[2]; ++fx)
              for (int64_t o = 0; o < ws[0]; ++o) {
                int64_t y = iy * stride[0] - pad[0] + fy, xx = ix * stride[1] - pad[1] + fx;
                if (y < 0 || y >= oh || xx < 0 || xx >= ow) continue;
                acc[static_cast<size_t>(((n * oh + y) * ow + xx) * ws[0] + o)] +=
                    xv(((n * xs[1] + iy) * xs[2] + ix) * xs[3] + c) * wv(((o * ws[1] + fy) * ws[2] + fx) * ws[3] + c);
              }
  return acc;
}

// ---- cases ---------------------------------------------------------------------------------

TEST(QconvS16, Int64BiasPerChannelSamePaddingStride) {
  NDArray x = random_ints(kI16, {1, 7, 6, 3}, 1, -32768, 32767), w = random_ints(kI8, {4, 3, 3, 3}, 2, -127, 127);
  NDArray b = random_ints(kI64, {4}, 3, -(int64_t{1} << 33), int64_t{1} << 33);
  Quant q{0.0009, 0.004, channel_scales(4, 4)};
  json a = q.attrs();
  a.update({{"strides", {2, 2}}, {"padding", {1, 1, 1, 1}}});
  NDArray got = run_op("qconv2d_s16", {x, w, b, q.table()}, a);
  expect_equal(got, ref_conv(x, w, &b, q, {2, 2}, {1, 1}, {1, 1}, 1, 4, 3), "conv int64");
}

TEST(QconvS16, Int32AccumulatorGroupsDilationRelu) {
  NDArray x = random_ints(kI16, {2, 6, 7, 4}, 5, -32768, 32767), w = random_ints(kI8, {6, 2, 2, 2}, 6, -127, 127);
  NDArray b = random_ints(kI32, {6}, 7, -100000, 100000);
  Quant q{0.0005, 0.002, {0.01}};
  q.wide = false;
  q.lo = 0;  // relu
  json a = q.attrs();
  a.update({{"groups", 2}, {"dilation", {2, 1}}, {"activation", "relu"}});
  NDArray got = run_op("qconv2d_s16", {x, w, b}, a);
  expect_equal(got, ref_conv(x, w, &b, q, {1, 1}, {0, 0}, {2, 1}, 2, 4, 6), "conv int32 groups");
  // Without bias, per-channel scales.
  Quant q2{0.0005, 0.003, channel_scales(6, 8)};
  q2.wide = false;
  got = run_op("qconv2d_s16", {x, w, q2.table()}, [&] { json j = q2.attrs(); j["groups"] = 2; return j; }());
  expect_equal(got, ref_conv(x, w, nullptr, q2, {1, 1}, {0, 0}, {1, 1}, 2, 5, 6), "conv int32 no bias");
}

TEST(QconvS16, DepthwiseMultiplierInt64) {
  NDArray x = random_ints(kI16, {1, 5, 5, 3}, 9, -32768, 32767), w = random_ints(kI8, {6, 3, 3, 1}, 10, -127, 127);
  NDArray b = random_ints(kI64, {6}, 11, -1000000, 1000000);
  Quant q{0.001, 0.0025, channel_scales(6, 12)};
  q.lo = -5000, q.hi = 5000;  // relu_n1_to_1 with 1 / 0.0002
  q.out_scale = 0.0002;
  json a = q.attrs();
  a.update({{"groups", 3}, {"padding", {1, 0, 1, 2}}, {"activation", "relu_n1_to_1"}});
  NDArray got = run_op("qconv2d_s16", {x, w, b, q.table()}, a);
  expect_equal(got, ref_conv(x, w, &b, q, {1, 1}, {1, 0}, {1, 1}, 3, 5, 5), "depthwise");
}

TEST(QdenseS16, Int64AndInt32) {
  NDArray x = random_ints(kI16, {3, 20}, 13, -32768, 32767), w = random_ints(kI8, {5, 20}, 14, -127, 127);
  for (bool wide : {true, false}) {
    NDArray b = wide ? random_ints(kI64, {5}, 15, -(int64_t{1} << 34), int64_t{1} << 34)
                     : random_ints(kI32, {5}, 15, -100000, 100000);
    Quant q{0.0007, 0.009, {0.004}};
    q.wide = wide;
    NDArray want = NDArray::zeros(kI16, {3, 5});
    for (int64_t n = 0; n < 3; ++n)
      for (int64_t m = 0; m < 5; ++m) {
        int64_t acc = b.get_int(m);
        for (int64_t k = 0; k < 20; ++k) acc += x.get_int(n * 20 + k) * w.get_int(m * 20 + k);
        want.set_int(n * 5 + m, q.out(acc, m));
      }
    expect_equal(run_op("qdense_s16", {x, w, b}, q.attrs()), want, wide ? "dense int64" : "dense int32");
  }
}

// An int64 accumulator sums in int32 partials of at most 256 products: 600 products of
// -32768 * -128 (2^22 each, 2.5e9 in all) overflow int32 unless the chunks are right.
// With the unroll schedule and without.
TEST(QdenseS16, LongReductionOfExtremeProducts) {
  NDArray x = NDArray::zeros(kI16, {2, 600}), w = NDArray::zeros(kI8, {3, 600});
  for (int64_t i = 0; i < 1200; ++i) x.set_int(i, i < 1100 ? -32768 : 32767);
  for (int64_t i = 0; i < 1800; ++i) w.set_int(i, i % 7 == 0 ? 127 : -128);
  NDArray b = random_ints(kI64, {3}, 23, -1000, 1000);
  Quant q{0.001, 0.15, {0.001}};  // out = acc / 150,000: about 16,000
  NDArray want = NDArray::zeros(kI16, {2, 3});
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t m = 0; m < 3; ++m) {
      int64_t acc = b.get_int(m);
      for (int64_t k = 0; k < 600; ++k) acc += x.get_int(n * 600 + k) * w.get_int(m * 600 + k);
      want.set_int(n * 3 + m, q.out(acc, m));
    }
  for (bool unroll : {true, false}) {
    json a = q.attrs();
    a["schedule"] = {{"unroll", unroll}};
    expect_equal(run_op("qdense_s16", {x, w, b}, a), want, unroll ? "dense 600, unrolled" : "dense 600");
  }
}

TEST(QtransposeConv2d, Int16AndInt8) {
  NDArray w = random_ints(kI8, {4, 3, 4, 3}, 16, -127, 127);
  for (bool int16 : {true, false}) {
    NDArray x = int16 ? random_ints(kI16, {2, 3, 4, 3}, 17, -32768, 32767) : random_ints(kI8, {2, 3, 4, 3}, 17, -128, 127);
    NDArray b = int16 ? random_ints(kI64, {4}, 18, -1000000, 1000000) : random_ints(kI32, {4}, 18, -5000, 5000);
    Quant q{int16 ? 0.0006 : 0.02, int16 ? 0.004 : 0.05, channel_scales(4, 19)};
    if (!int16) q.zi = 7, q.zo = -3, q.lo = -128, q.hi = 127, q.wide = false;
    json a = q.attrs();
    a.update({{"strides", {2, 3}}, {"padding", {1, 2}}, {"output_size", {6, 11}}});
    NDArray got = run_op("qtranspose_conv2d", {x, w, b, q.table()}, a);
    auto acc = scatter<int64_t>(x, w, {2, 3}, {1, 2}, 6, 11, [&](int64_t i) { return x.get_int(i) - q.zi; },
                                [&](int64_t i) { return w.get_int(i); });
    NDArray want = NDArray::zeros(x.dtype, {2, 6, 11, 4});
    for (int64_t i = 0; i < want.num_elements(); ++i) want.set_int(i, q.out(acc[i] + b.get_int(i % 4), i % 4));
    expect_equal(got, want, int16 ? "transposed int16" : "transposed int8");
  }
}

TEST(TransposeConv2d, FloatInTflmOrder) {
  NDArray x = random_floats({1, 4, 3, 2}, 20), w = random_floats({3, 4, 3, 2}, 21), b = random_floats({3}, 22);
  json a = {{"strides", {2, 2}}, {"padding", {1, 1}}, {"output_size", {8, 5}}};
  NDArray got = run_op("transpose_conv2d", {x, w, b}, a);
  const auto* xp = reinterpret_cast<const float*>(x.data.data());
  const auto* wp = reinterpret_cast<const float*>(w.data.data());
  auto acc = scatter<float>(x, w, {2, 2}, {1, 1}, 8, 5, [&](int64_t i) { return xp[i]; }, [&](int64_t i) { return wp[i]; });
  NDArray want = NDArray::zeros(kF32, {1, 8, 5, 3});
  auto* out = reinterpret_cast<float*>(want.data.data());
  const auto* bp = reinterpret_cast<const float*>(b.data.data());
  for (size_t i = 0; i < acc.size(); ++i) out[i] = acc[i] + bp[i % 3];
  expect_equal(got, want, "transposed float32");  // the same sums in the same order: equal bits
}

TEST(QconvS16, Refusals) {
  TensorType x{kI16, {1, 4, 4, 2}}, w{kI8, {3, 1, 1, 2}}, b64{kI64, {3}}, b32{kI32, {3}};
  json q = {{"input_scale", 0.001}, {"weight_scale", 0.01}, {"output_scale", 0.002}};
  json zp = q;
  zp["output_zero_point"] = 3;
  expect_error("qconv2d_s16", {x, w, b64}, zp, "int16 activations are symmetric");
  json narrow = q;
  narrow["accumulator"] = "int32";
  expect_error("qconv2d_s16", {x, w, b64}, narrow, "int64");
  json channels = q;
  channels["weight_scale"] = {0.01, 0.02, 0.03};
  expect_error("qconv2d_s16", {x, w, b64}, channels, "requant table", true);
  json big = q;
  big["output_scale"] = 1e-8;  // a multiplier of 1000: TFLM's int64 form takes less than 128
  expect_error("qconv2d_s16", {x, w, b64}, big, "128 or more");
  expect_error("qconv2d_s16", {TensorType{kI8, {1, 4, 4, 2}}, w}, q, "int16 is required");
  json t = q;
  t["output_size"] = {4, 4};
  expect_error("qtranspose_conv2d", {TensorType{kI8, {1, 4, 4, 2}}, w, b64}, t, "int32 bias");
  expect_error("qdense_s16", {TensorType{kI16, {2, 5}}, TensorType{kI8, {3, 4}}, b32}, q, "rows of 5");
}

}  // namespace
}  // namespace mtir
