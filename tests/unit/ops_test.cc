// The operator library: every op is run through the reference interpreter and compared
// with an independent naive C++ implementation written here (plain loops over
// std::vector<float>), and every emitted PrimFunc is checked for well-formedness and a
// print/parse round trip. Shape-inference errors are checked by message. Then every
// case a test ran goes through the host C artifact too: at the end of the test's process
// all its kernels are built into one module, called in turn by one driver function,
// compiled with the host C compiler, run, and compared with the interpreter's outputs.
#include <gtest/gtest.h>

#include <filesystem>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <limits>
#include <random>
#include <sstream>

#include "analysis/well_formed.h"
#include "backend_cases.h"
#include "op_test_support.h"
#include "support/compare.h"
#include "interp/interpreter.h"
#include "ir/structural_equal.h"
#include "ops/op_util.h"
#include "ops/ops.h"
#include "script/parser.h"
#include "script/printer.h"
#include "support/diagnostic.h"
#include "support/source_dir.h"

namespace mtir {
namespace {

using json = nlohmann::json;
using Shape = std::vector<int64_t>;
using Vec = std::vector<float>;

// ---- harness --------------------------------------------------------------------

// Every case runs as host C and wasm at the end of the process (backend_cases.h).
const auto* const kBackends =
    ::testing::AddGlobalTestEnvironment(new backend_cases::Environment({"ops", {"c -unpacked-api=1"}, true, 1e-5}));

int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

Vec random_vec(const Shape& s, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  Vec v(numel(s));
  for (auto& x : v) x = dist(rng);
  return v;
}

struct Tensor {
  Shape shape;
  Vec data;
};

Tensor rnd(const Shape& s, uint32_t seed) { return Tensor{s, random_vec(s, seed)}; }

NDArray to_nd(const Tensor& t) {
  NDArray a = NDArray::zeros(DataType::Float(32), t.shape);
  for (size_t i = 0; i < t.data.size(); ++i) a.set_float(static_cast<int64_t>(i), t.data[i]);
  return a;
}

// Emits `op`, checks it and runs it; returns the output.
Tensor run_op(const std::string& op, const std::vector<Tensor>& inputs, const json& attrs = json::object()) {
  const OpDef* def = find_op(op);
  EXPECT_NE(def, nullptr) << op;
  if (!def) return {};
  std::vector<TensorType> types;
  for (const auto& t : inputs) types.push_back(TensorType{DataType::Float(32), t.shape});
  TensorType out;
  PrimFunc f = backend_cases::build_checked_kernel(*def, types, attrs, &out);
  IRModule m;
  m.set(op + "_kernel", f);
  std::vector<NDArray> arrays;
  for (const auto& t : inputs) arrays.push_back(to_nd(t));
  arrays.push_back(NDArray::zeros(DataType::Float(32), out.shape));
  std::vector<InterpArg> args;
  for (auto& a : arrays) args.push_back(&a);
  try {
    interpret(m, op + "_kernel", args);
    std::string what = op;
    for (const auto& t : inputs) what += " " + TensorType{DataType::Float(32), t.shape}.str();
    backend_cases::record_kernel(what + " " + attrs.dump(), f, arrays);
  } catch (const DiagnosticError& e) {
    ADD_FAILURE() << "interpreter: " << render_all(e.diagnostics()) << "\n" << print_module(m);
  }
  Tensor result{out.shape, Vec(numel(out.shape))};
  for (size_t i = 0; i < result.data.size(); ++i) result.data[i] = static_cast<float>(arrays.back().get_float(i));
  return result;
}

void expect_close(const Tensor& got, const Tensor& want, const std::string& what = "") {
  ASSERT_EQ(got.shape, want.shape) << what;
  ASSERT_EQ(got.data.size(), want.data.size()) << what;
  int bad = 0;
  for (size_t i = 0; i < got.data.size() && bad < 5; ++i) {
    float g = got.data[i], w = want.data[i];
    if (std::isinf(w) && g == w) continue;
    float tol = 1e-5f * std::max(1.0f, std::fabs(w));
    if (!(std::fabs(g - w) <= tol)) {
      ADD_FAILURE() << what << ": element " << i << " is " << g << ", expected " << w;
      ++bad;
    }
  }
}

// Expects infer to throw a user error whose message contains `needle` (float32 inputs).
void expect_error(const std::string& op, const std::vector<Shape>& shapes, const json& attrs,
                  const std::string& needle) {
  std::vector<TensorType> types;
  for (const auto& s : shapes) types.push_back(TensorType{DataType::Float(32), s});
  op_test::expect_error(op, types, attrs, needle);
}

Shape infer_shape(const std::string& op, const std::vector<Shape>& shapes, const json& attrs = json::object()) {
  std::vector<TensorType> types;
  for (const auto& s : shapes) types.push_back(TensorType{DataType::Float(32), s});
  return find_op(op)->infer(types, attrs).shape;
}

// NCHW <-> NHWC and OIHW -> HWIO for testing the NHWC layouts against NCHW references.
Tensor nchw_to_nhwc(const Tensor& t) {
  int64_t n = t.shape[0], c = t.shape[1], h = t.shape[2], w = t.shape[3];
  Tensor o{{n, h, w, c}, Vec(t.data.size())};
  for (int64_t a = 0; a < n; ++a)
    for (int64_t b = 0; b < c; ++b)
      for (int64_t y = 0; y < h; ++y)
        for (int64_t x = 0; x < w; ++x) o.data[((a * h + y) * w + x) * c + b] = t.data[((a * c + b) * h + y) * w + x];
  return o;
}
Tensor oihw_to_hwio(const Tensor& t) {
  int64_t O = t.shape[0], I = t.shape[1], H = t.shape[2], W = t.shape[3];
  Tensor o{{H, W, I, O}, Vec(t.data.size())};
  for (int64_t a = 0; a < O; ++a)
    for (int64_t b = 0; b < I; ++b)
      for (int64_t y = 0; y < H; ++y)
        for (int64_t x = 0; x < W; ++x) o.data[((y * W + x) * I + b) * O + a] = t.data[((a * I + b) * H + y) * W + x];
  return o;
}

// ---- naive references ---------------------------------------------------------------

struct Conv {
  int64_t sh = 1, sw = 1, pt = 0, pl = 0, pb = 0, pr = 0, dh = 1, dw = 1, groups = 1;
};

Tensor ref_conv2d(const Tensor& x, const Tensor& w, const Tensor* bias, const Conv& p) {
  int64_t N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3];
  int64_t O = w.shape[0], CG = w.shape[1], KH = w.shape[2], KW = w.shape[3];
  int64_t OH = (H + p.pt + p.pb - p.dh * (KH - 1) - 1) / p.sh + 1;
  int64_t OW = (W + p.pl + p.pr - p.dw * (KW - 1) - 1) / p.sw + 1;
  Tensor out{{N, O, OH, OW}, Vec(N * O * OH * OW)};
  int64_t opg = O / p.groups;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < O; ++o)
      for (int64_t y = 0; y < OH; ++y)
        for (int64_t xx = 0; xx < OW; ++xx) {
          float acc = bias ? bias->data[o] : 0.0f;
          int64_t g = o / opg;
          for (int64_t c = 0; c < CG; ++c)
            for (int64_t ky = 0; ky < KH; ++ky)
              for (int64_t kx = 0; kx < KW; ++kx) {
                int64_t iy = y * p.sh + ky * p.dh - p.pt, ix = xx * p.sw + kx * p.dw - p.pl;
                float v = 0.0f;
                if (iy >= 0 && iy < H && ix >= 0 && ix < W) v = x.data[((n * C + g * CG + c) * H + iy) * W + ix];
                acc += v * w.data[((o * CG + c) * KH + ky) * KW + kx];
              }
          out.data[((n * O + o) * OH + y) * OW + xx] = acc;
        }
  (void)C;
  return out;
}

struct Pool {
  int64_t kh, kw, sh = 1, sw = 1, pt = 0, pl = 0, pb = 0, pr = 0, dh = 1, dw = 1;
  bool ceil = false, include_pad = false;
};

int64_t ref_pool_out(int64_t in, int64_t pb, int64_t pe, int64_t k, int64_t s, int64_t d, bool ceil) {
  double v = static_cast<double>(in + pb + pe - d * (k - 1) - 1) / static_cast<double>(s);
  int64_t out = static_cast<int64_t>(ceil ? std::ceil(v) : std::floor(v)) + 1;
  if (ceil && (out - 1) * s >= in + pb) out -= 1;  // PyTorch's rule
  return out;
}

Tensor ref_pool(const Tensor& x, const Pool& p, bool avg) {
  int64_t N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3];
  int64_t OH = ref_pool_out(H, p.pt, p.pb, p.kh, p.sh, p.dh, p.ceil);
  int64_t OW = ref_pool_out(W, p.pl, p.pr, p.kw, p.sw, p.dw, p.ceil);
  Tensor out{{N, C, OH, OW}, Vec(N * C * OH * OW)};
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t y = 0; y < OH; ++y)
        for (int64_t xx = 0; xx < OW; ++xx) {
          float acc = avg ? 0.0f : -std::numeric_limits<float>::infinity();
          int64_t count = 0;
          for (int64_t ky = 0; ky < p.kh; ++ky)
            for (int64_t kx = 0; kx < p.kw; ++kx) {
              int64_t iy = y * p.sh + ky * p.dh - p.pt, ix = xx * p.sw + kx * p.dw - p.pl;
              bool inside = iy >= 0 && iy < H && ix >= 0 && ix < W;
              bool in_padded = iy >= -p.pt && iy < H + p.pb && ix >= -p.pl && ix < W + p.pr;
              if (inside) {
                float v = x.data[((n * C + c) * H + iy) * W + ix];
                acc = avg ? acc + v : std::max(acc, v);
              }
              if (p.include_pad ? in_padded : inside) ++count;
            }
          if (avg) acc /= static_cast<float>(std::max<int64_t>(count, 1));
          out.data[((n * C + c) * OH + y) * OW + xx] = acc;
        }
  return out;
}

Shape broadcast_shape(const Shape& a, const Shape& b) {
  size_t r = std::max(a.size(), b.size());
  Shape o(r);
  for (size_t k = 0; k < r; ++k) {
    int64_t da = k + a.size() >= r ? a[k + a.size() - r] : 1;
    int64_t db = k + b.size() >= r ? b[k + b.size() - r] : 1;
    o[k] = std::max(da, db);
  }
  return o;
}

// The flat offset into `s` for multi-index `idx` of the broadcast shape `o`.
int64_t bcast_offset(const Shape& s, const Shape& o, const Shape& idx) {
  int64_t off = 0;
  size_t lead = o.size() - s.size();
  for (size_t k = 0; k < s.size(); ++k) off = off * s[k] + (s[k] == 1 ? 0 : idx[k + lead]);
  return off;
}

Shape unravel(int64_t flat, const Shape& s) {
  Shape idx(s.size());
  for (size_t k = s.size(); k-- > 0;) {
    idx[k] = flat % s[k];
    flat /= s[k];
  }
  return idx;
}

Tensor ref_binary(const Tensor& a, const Tensor& b, const std::function<float(float, float)>& f) {
  Shape o = broadcast_shape(a.shape, b.shape);
  Tensor out{o, Vec(numel(o))};
  for (int64_t i = 0; i < numel(o); ++i) {
    Shape idx = unravel(i, o);
    out.data[i] = f(a.data[bcast_offset(a.shape, o, idx)], b.data[bcast_offset(b.shape, o, idx)]);
  }
  return out;
}

Tensor ref_matmul(const Tensor& a, const Tensor& b) {
  Shape ab(a.shape.begin(), a.shape.end() - 2), bb(b.shape.begin(), b.shape.end() - 2);
  Shape batch = broadcast_shape(ab, bb);
  int64_t M = a.shape[a.shape.size() - 2], K = a.shape.back(), N = b.shape.back();
  Shape os = batch;
  os.push_back(M), os.push_back(N);
  Tensor out{os, Vec(numel(os))};
  int64_t nb = numel(batch);
  for (int64_t bi = 0; bi < nb; ++bi) {
    Shape idx = unravel(bi, batch);
    int64_t oa = bcast_offset(ab, batch, idx) * M * K, ob = bcast_offset(bb, batch, idx) * K * N;
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        float acc = 0;
        for (int64_t k = 0; k < K; ++k) acc += a.data[oa + i * K + k] * b.data[ob + k * N + j];
        out.data[(bi * M + i) * N + j] = acc;
      }
  }
  return out;
}

// ---- registry -------------------------------------------------------------------------

const std::vector<std::string> kAllOps = {
    "abs", "add", "argmax", "argmin", "assign_variable", "avg_pool2d", "batch_norm", "batch_to_space_nd",
    "broadcast_to", "cast", "ceil", "clip", "concat", "control_output", "conv2d", "conv3d", "conv_transpose", "cos",
    "cumsum", "dense", "depth_to_space", "dequantize", "dequantize_linear", "div", "dynamic_quantize_linear", "elu",
    "equal", "exp", "flatten", "floor", "floor_div", "floor_mod", "full", "gather", "gather_nd", "gemm",
    "global_avg_pool2d", "greater", "greater_equal", "hard_swish", "if", "leaky_relu", "less", "less_equal", "log",
    "log_softmax", "logical_and", "logical_not", "logical_or", "lstm", "matmul", "max_pool2d", "maximum", "minimum",
    "mul", "neg", "not_equal", "pad", "prelu", "qabs", "qadd", "qavg_pool2d", "qbatch_matmul", "qconcat", "qconv2d",
    "qconv2d_s16", "qdense", "qdense_s16", "qdiv", "qglobal_avg_pool2d", "ql2_normalization", "qleaky_relu",
    "qlinear_add",
    "qlinear_avg_pool", "qlinear_conv", "qlinear_matmul", "qlog_softmax", "qlogistic", "qlogistic_s16", "qlookup",
    "qlstm", "qmean", "qmul", "qprelu", "qsoftmax", "qsquared_difference", "qsub", "qsum", "qsvdf", "qtanh",
    "qtanh_s16", "qtranspose_conv2d", "quantize", "quantize_linear", "read_variable", "reduce_max", "reduce_mean",
    "reduce_min", "reduce_sum", "relu", "requantize", "reshape", "resize_bilinear", "resize_nearest_neighbor",
    "reverse", "round", "rsqrt", "select", "sigmoid", "sin", "softmax", "space_to_batch_nd", "space_to_depth",
    "sqrt", "square", "squared_difference", "strided_slice", "sub", "svdf", "tanh", "transpose", "transpose_conv2d",
    "while"};

TEST(Ops, RegistryIsSortedAndComplete) {
  std::vector<std::string> names;
  for (const auto& d : all_op_defs()) {
    names.push_back(d.name);
    EXPECT_TRUE(d.infer) << d.name;
    EXPECT_TRUE(d.build) << d.name;
  }
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  for (const auto& n : kAllOps) {
    ASSERT_NE(find_op(n), nullptr) << n;
    EXPECT_EQ(find_op(n)->name, n);
  }
  EXPECT_EQ(names.size(), kAllOps.size());
  EXPECT_EQ(find_op("conv1d"), nullptr);
  EXPECT_EQ(find_op(""), nullptr);
}

// same_type_as_input (op_util.h), the infer of reverse, cumsum, qabs, qleaky_relu,
// ql2_normalization and qlog_softmax: the op's check runs first, then the output takes
// the first input's type.
TEST(Ops, SameTypeAsInputChecksFirst) {
  int checks = 0;
  auto infer = ops::same_type_as_input([&](const std::vector<TensorType>& in, const json&) {
    ++checks;
    if (in.size() != 1) ops::fail("op", "takes one input");
    return 7;  // the op's parameters, which infer drops
  });
  const TensorType x{DataType::Int(8), {2, 3}};
  EXPECT_EQ(infer({x}, json::object()).str(), "int8(2, 3)");
  EXPECT_THROW(infer({x, x}, json::object()), DiagnosticError);
  EXPECT_EQ(checks, 2);
  EXPECT_EQ(find_op("reverse")->infer({x}, {{"axes", {1}}}).str(), "int8(2, 3)");
  EXPECT_THROW(find_op("reverse")->infer({x}, {{"axes", {2}}}), DiagnosticError);
}

// LoopNest::axes (op_util.h), the element loops of the elementwise, compare, reduce and
// quantized ops: an axis per dimension named <prefix><k><suffix>, extent 1 the index 0.
TEST(Ops, LoopNestAxesNameEveryDimension) {
  ops::LoopNest nest;
  const std::vector<Expr> idx = nest.axes({2, 1, 3}, "o", "_1");
  ASSERT_EQ(idx.size(), 3u);
  EXPECT_EQ(print_expr(idx[0]), "o0_1");
  EXPECT_EQ(print_expr(idx[1]), "0");
  EXPECT_EQ(print_expr(idx[2]), "o2_1");
  EXPECT_EQ(print_stmt(nest.wrap(Evaluate(ops::ci(0)))), "for o0_1, o2_1 in T.grid(2, 3):\n    T.evaluate(0)\n");
  EXPECT_EQ(print_expr(ops::LoopNest().axes({4})[0]), "i0");
}

TEST(Ops, QdivBroadcastsInt8AndRefusesWhatTflmCannotShift) {
  const json attrs = {{"a_scale", 0.05}, {"a_zero_point", 3}, {"b_scale", 0.04}, {"b_zero_point", -5},
                      {"output_scale", 0.06}, {"output_zero_point", -7}};
  const TensorType a{DataType::Int(8), {4, 6, 8}}, b{DataType::Int(8), {1, 6, 8}};
  EXPECT_EQ(find_op("qdiv")->infer({a, b}, attrs).str(), "int8(4, 6, 8)");
  expect_error("qdiv", {{2}, {2}}, attrs, "input 'a' has type float32; int8 is required");
  json too_big = attrs;
  too_big["a_scale"] = 100.0;
  too_big["b_scale"] = 0.001;
  too_big["output_scale"] = 0.0015;
  try {
    find_op("qdiv")->infer({a, b}, too_big);
    ADD_FAILURE() << "a multiplier of 2^26 was accepted";
  } catch (const DiagnosticError& e) {
    EXPECT_NE(std::string(e.what()).find("TFLM's int8 DIV takes at most 2^23"), std::string::npos) << e.what();
  }
}

TEST(Ops, ControlFlowNodesAreTypedButHaveNoKernel) {
  // if: a bool condition of one element, the result types from "outputs"; while: the
  // first loop-carried input's type. The AOT executor calls their functions instead.
  const json if_attrs = {{"then", "a"}, {"else", "b"}, {"then_args", {1}}, {"else_args", {1}},
                         {"outputs", {{{"dtype", "int8"}, {"shape", {3}}}}}};
  const TensorType flag{DataType::Bool(), {1}}, x{DataType::Float(32), {2, 2}};
  EXPECT_EQ(find_op("if")->infer({flag, x}, if_attrs).str(), "int8(3)");
  expect_error("if", {{1}, {2, 2}}, if_attrs, "the first input must be the condition, a bool tensor of one element");
  const json while_attrs = {{"cond", "c"}, {"body", "d"}, {"carried", 1}, {"cond_args", {0}}, {"body_args", {0}}};
  EXPECT_EQ(find_op("while")->infer({x}, while_attrs).str(), "float32(2, 2)");
  EXPECT_THROW(find_op("while")->build("w", {x}, x, while_attrs), DiagnosticError);
}

TEST(Ops, TensorTypeHelpers) {
  TensorType t{DataType::Float(32), {1, 8, 8, 8}};
  EXPECT_EQ(t.num_elements(), 512);
  EXPECT_EQ(t.str(), "float32(1, 8, 8, 8)");
}

TEST(Ops, DocsDescribeEveryOp) {
  std::ifstream in(std::string(mtir::source_dir()) + "/docs/operators.md");
  ASSERT_TRUE(in) << "docs/operators.md is missing";
  std::stringstream ss;
  ss << in.rdbuf();
  std::string doc = ss.str();
  for (const auto& d : all_op_defs()) EXPECT_NE(doc.find("### `" + d.name + "`"), std::string::npos) << d.name;
}

TEST(Ops, EmittedFunctionSignatureAndAttributes) {
  const OpDef* d = find_op("conv2d");
  std::vector<TensorType> in = {{DataType::Float(32), {1, 3, 5, 5}}, {DataType::Float(32), {4, 3, 3, 3}},
                                {DataType::Float(32), {4}}};
  TensorType out = d->infer(in, json::object());
  EXPECT_EQ(out.shape, (Shape{1, 4, 3, 3}));
  PrimFunc f = d->build("my_conv", in, out, json::object());
  ASSERT_EQ(f->params.size(), 4u);
  ASSERT_EQ(f->param_buffers.size(), 4u);
  for (const auto& b : f->param_buffers) ASSERT_NE(b, nullptr);
  EXPECT_EQ(f->param_buffers[0]->name, "data");
  EXPECT_EQ(f->param_buffers[3]->name, "out");
  EXPECT_EQ(std::get<std::string>(f->attrs.at("global_symbol")), "my_conv");
  EXPECT_EQ(std::get<bool>(f->attrs.at("tir.noalias")), true);
}

TEST(Ops, CommonRules) {
  // null attributes mean {}.
  EXPECT_EQ(infer_shape("relu", {{2, 3}}, json()), (Shape{2, 3}));
  expect_error("tanh", {{2, 3}}, {{"alpha", 1}}, "unknown attribute 'alpha'; this op takes no attributes");
  expect_error("tanh", {}, json::object(), "expected 1 input (data), got 0");
  expect_error("add", {{65536, 1}, {1, 65536}}, json::object(), "would have more than 2^31-1 elements");
  expect_error("pad", {{2}}, {{"pad_width", {{0, 2147483647}}}}, "would have more than 2^31-1 elements");
  expect_error("softmax", {{2}}, {{"axis", int64_t{1} << 40}}, "attribute 'axis' must be an integer of at most 31 bits");
  expect_error("transpose", {{2, 3}}, {{"axes", {uint64_t{18446744073709551615u}, 0}}},
               "attribute 'axes' must be a list of axis indices");
  expect_error("conv2d", {{1, 3, 8, 8}, {4, 3, 3, 3}}, {{"dilation", {int64_t{1} << 40, 1}}},
               "attribute 'dilation' must be a list of 2 positive integers");
  // Shapes that need no loop at all still produce a valid function.
  expect_close(run_op("relu", {Tensor{{1}, {-2.0f}}}), Tensor{{1}, {0.0f}}, "relu on one element");
  expect_close(run_op("add", {Tensor{{}, {1.5f}}, Tensor{{}, {2.0f}}}), Tensor{{}, {3.5f}}, "add on scalars");
}

std::string emitted_text(const std::string& op, const std::vector<Shape>& shapes, const json& attrs) {
  std::vector<TensorType> in;
  for (const auto& sh : shapes) in.push_back(TensorType{DataType::Float(32), sh});
  const OpDef* d = find_op(op);
  return print_func("f", d->build("f", in, d->infer(in, attrs), attrs));
}

TEST(Ops, EmittedCodeIsLean) {
  // Depthwise: no loop over input channels; the channel index is the output channel.
  std::string dw = emitted_text("conv2d", {{1, 4, 5, 5}, {4, 1, 3, 3}}, {{"groups", 4}});
  EXPECT_EQ(dw.find("rc"), std::string::npos) << dw;
  EXPECT_NE(dw.find("data[0, oc, oh + rh, ow + rw]"), std::string::npos) << dw;
  // Unpadded pooling: no guard; a constant divisor.
  std::string pool = emitted_text("avg_pool2d", {{1, 2, 4, 4}}, {{"pool_size", {2, 2}}, {"strides", {2, 2}}});
  EXPECT_EQ(pool.find("if "), std::string::npos) << pool;
  EXPECT_NE(pool.find("/ T.float32(4)"), std::string::npos) << pool;
  // count_include_pad without ceil_mode: every window has the full size.
  std::string inc = emitted_text("avg_pool2d", {{1, 2, 4, 4}},
                                 {{"pool_size", {3, 3}}, {"padding", {1, 1, 1, 1}}, {"count_include_pad", true}});
  EXPECT_NE(inc.find("/ T.float32(9)"), std::string::npos) << inc;
  // Padding only at the bottom: only the upper bound is checked.
  std::string pad = emitted_text("pad", {{2, 3}}, {{"pad_width", {{0, 1}, {0, 0}}}});
  EXPECT_NE(pad.find("T.if_then_else(i0 < 2, data[i0, i1], T.float32(0))"), std::string::npos) << pad;
  // A reshape (and the patch planner's row copies, built by it) is one straight flat copy:
  // indexed by the shapes, i / 4 % 3 * 4 + i % 4 ... never folds back to i.
  std::string copy = emitted_text("reshape", {{2, 3, 4}}, {{"newshape", {4, 6}}});
  EXPECT_NE(copy.find("out_flat[i] = data_flat[i]"), std::string::npos) << copy;
  EXPECT_EQ(copy.find("%"), std::string::npos) << copy;
}

// ---- conv2d -----------------------------------------------------------------------------

void check_conv(const Shape& xs, const Shape& ws, bool bias, const Conv& p, uint32_t seed) {
  Tensor x = rnd(xs, seed), w = rnd(ws, seed + 1), b = rnd({ws[0]}, seed + 2);
  json attrs = {{"strides", {p.sh, p.sw}},
                {"padding", {p.pt, p.pl, p.pb, p.pr}},
                {"dilation", {p.dh, p.dw}},
                {"groups", p.groups}};
  Tensor want = ref_conv2d(x, w, bias ? &b : nullptr, p);
  std::vector<Tensor> ins = {x, w};
  if (bias) ins.push_back(b);
  expect_close(run_op("conv2d", ins, attrs), want, "conv2d NCHW " + attrs.dump());
  // The same convolution in NHWC / HWIO.
  attrs["layout"] = "NHWC";
  std::vector<Tensor> ins2 = {nchw_to_nhwc(x), oihw_to_hwio(w)};
  if (bias) ins2.push_back(b);
  expect_close(run_op("conv2d", ins2, attrs), nchw_to_nhwc(want), "conv2d NHWC " + attrs.dump());
}

TEST(OpsConv2d, Basic) { check_conv({1, 3, 6, 6}, {4, 3, 3, 3}, false, Conv{}, 1); }
TEST(OpsConv2d, BiasAndBatch) { check_conv({2, 2, 5, 4}, {3, 2, 2, 3}, true, Conv{}, 2); }
TEST(OpsConv2d, Stride2SymmetricPadding) {
  Conv p;
  p.sh = p.sw = 2, p.pt = p.pl = p.pb = p.pr = 1;
  check_conv({1, 3, 7, 7}, {4, 3, 3, 3}, true, p, 3);
}
TEST(OpsConv2d, AsymmetricPaddingAndStrides) {
  Conv p;
  p.sh = 2, p.sw = 1, p.pt = 0, p.pl = 2, p.pb = 1, p.pr = 0;
  check_conv({1, 2, 6, 5}, {3, 2, 3, 2}, true, p, 4);
}
TEST(OpsConv2d, Dilation) {
  Conv p;
  p.dh = 2, p.dw = 3, p.pt = 2, p.pl = 1, p.pb = 1, p.pr = 2;
  check_conv({1, 2, 7, 8}, {2, 2, 3, 2}, false, p, 5);
}
TEST(OpsConv2d, Groups) {
  Conv p;
  p.groups = 2, p.pt = p.pl = p.pb = p.pr = 1;
  check_conv({1, 4, 5, 5}, {6, 2, 3, 3}, true, p, 6);
}
TEST(OpsConv2d, Depthwise) {
  Conv p;
  p.groups = 4, p.sh = p.sw = 2, p.pt = p.pl = 1, p.pb = p.pr = 1;
  check_conv({1, 4, 6, 6}, {4, 1, 3, 3}, true, p, 7);
}
TEST(OpsConv2d, DepthwiseWithChannelMultiplier) {
  Conv p;
  p.groups = 3, p.pl = 1, p.pr = 1;
  check_conv({1, 3, 4, 4}, {6, 1, 3, 3}, false, p, 8);
}
TEST(OpsConv2d, PointwiseWithoutBoundChecks) {
  check_conv({2, 5, 3, 3}, {4, 5, 1, 1}, true, Conv{}, 9);
  // No padding: no bound checks and no if_then_else in the emitted code.
  std::vector<TensorType> in = {{DataType::Float(32), {1, 5, 3, 3}}, {DataType::Float(32), {4, 5, 1, 1}}};
  const OpDef* d = find_op("conv2d");
  std::string text = print_func("f", d->build("f", in, d->infer(in, json::object()), json::object()));
  EXPECT_EQ(text.find("if_then_else"), std::string::npos) << text;
}

// Random attribute combinations, each checked in both layouts.
TEST(OpsConv2d, RandomSweep) {
  std::mt19937 rng(1234);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int done = 0;
  while (done < 40) {
    Conv p;
    int64_t groups = pick(1, 3), cg = pick(1, 2), og = pick(1, 2);
    if (pick(0, 3) == 0) cg = 1, og = 1, groups = pick(2, 4);  // depthwise
    p.groups = groups;
    int64_t kh = pick(1, 3), kw = pick(1, 3), h = pick(1, 7), w = pick(1, 7);
    p.sh = pick(1, 3), p.sw = pick(1, 3), p.dh = pick(1, 2), p.dw = pick(1, 2);
    p.pt = pick(0, 2), p.pl = pick(0, 2), p.pb = pick(0, 2), p.pr = pick(0, 2);
    if (p.dh * (kh - 1) + 1 > h + p.pt + p.pb || p.dw * (kw - 1) + 1 > w + p.pl + p.pr) continue;
    check_conv({pick(1, 2), groups * cg, h, w}, {groups * og, cg, kh, kw}, pick(0, 1) == 1, p,
               static_cast<uint32_t>(500 + done));
    ++done;
  }
}

TEST(OpsConv2d, ShapeInference) {
  EXPECT_EQ(infer_shape("conv2d", {{1, 3, 32, 32}, {8, 3, 3, 3}}, {{"strides", {2, 2}}, {"padding", {1, 1, 1, 1}}}),
            (Shape{1, 8, 16, 16}));
  EXPECT_EQ(infer_shape("conv2d", {{1, 32, 32, 3}, {3, 3, 3, 8}}, {{"layout", "NHWC"}}), (Shape{1, 30, 30, 8}));
  EXPECT_EQ(infer_shape("conv2d", {{1, 8, 10, 10}, {8, 1, 3, 3}}, {{"groups", 8}, {"dilation", {2, 2}}}),
            (Shape{1, 8, 6, 6}));
}

TEST(OpsConv2d, Errors) {
  expect_error("conv2d", {{1, 3, 8, 8}}, json::object(), "expected 2 or 3 inputs (data, weight, [bias]), got 1");
  expect_error("conv2d", {{3, 8, 8}, {4, 3, 3, 3}}, json::object(), "data (NCHW) must have rank 4");
  expect_error("conv2d", {{1, 3, 8, 8}, {4, 3, 3}}, json::object(), "weight (OIHW) must have rank 4");
  expect_error("conv2d", {{1, 4, 8, 8}, {4, 3, 3, 3}}, json::object(),
               "weight has 3 input channels per group but the data has 4 channels");
  expect_error("conv2d", {{1, 4, 8, 8}, {6, 1, 3, 3}}, {{"groups", 3}}, "groups (3) must divide the 4 input channels");
  expect_error("conv2d", {{1, 4, 8, 8}, {6, 2, 3, 3}}, {{"groups", 4}}, "groups (4) must divide the 6 output channels");
  expect_error("conv2d", {{1, 3, 8, 8}, {4, 3, 3, 3}, {5}}, json::object(), "bias must have shape (4,)");
  expect_error("conv2d", {{1, 3, 2, 2}, {4, 3, 3, 3}}, json::object(), "larger than the padded input");
  expect_error("conv2d", {{1, 3, 8, 8}, {4, 3, 3, 3}}, {{"strides", {0, 1}}},
               "attribute 'strides' must be a list of 2 positive integers");
  expect_error("conv2d", {{1, 3, 8, 8}, {4, 3, 3, 3}}, {{"strides", 2}},
               "attribute 'strides' must be a list of 2 positive integers (got 2)");
  expect_error("conv2d", {{1, 3, 8, 8}, {4, 3, 3, 3}}, {{"padding", {1, 1}}},
               "attribute 'padding' must be a list of 4 non-negative integers");
  expect_error("conv2d", {{1, 3, 8, 8}, {4, 3, 3, 3}}, {{"dilation", {1, 1.5}}},
               "attribute 'dilation' must be a list of 2 positive integers");
  expect_error("conv2d", {{1, 3, 8, 8}, {4, 3, 3, 3}}, {{"groups", 0}}, "attribute 'groups' must be a positive integer");
  expect_error("conv2d", {{1, 3, 8, 8}, {4, 3, 3, 3}}, {{"groups", "1"}}, "attribute 'groups' must be an integer");
  expect_error("conv2d", {{1, 3, 8, 8}, {4, 3, 3, 3}}, {{"layout", "NCWH"}},
               "attribute 'layout' must be one of \"NCHW\", \"NHWC\"");
  expect_error("conv2d", {{1, 3, 8, 8}, {4, 3, 3, 3}}, {{"stride", {2, 2}}},
               "unknown attribute 'stride'; known attributes: strides, padding, dilation, groups, layout");
  expect_error("conv2d", {{1, 3, 8, 8}, {4, 3, 3, 3}}, json::array(), "attributes must be a JSON object");
  expect_error("conv2d", {{1, 0, 8, 8}, {4, 3, 3, 3}}, json::object(), "every dimension must be positive");
}

TEST(OpsConv2d, NonFloatInputIsRefused) {
  std::vector<TensorType> in = {{DataType::Int(8), {1, 3, 8, 8}}, {DataType::Float(32), {4, 3, 3, 3}}};
  try {
    find_op("conv2d")->infer(in, json::object());
    ADD_FAILURE() << "expected an error";
  } catch (const DiagnosticError& e) {
    EXPECT_NE(e.diagnostics()[0].message.find("input 'data' has type int8; only float32 is supported"),
              std::string::npos)
        << e.diagnostics()[0].message;
  }
}

// ---- conv3d -----------------------------------------------------------------------------

struct Conv3 {
  Shape stride = {1, 1, 1}, dilation = {1, 1, 1}, pad = {0, 0, 0, 0, 0, 0};  // pad: d, h, w begins, then ends
  int64_t groups = 1;
};

Tensor ref_conv3d(const Tensor& x, const Tensor& w, const Tensor* bias, const Conv3& p) {
  int64_t N = x.shape[0], C = x.shape[1], O = w.shape[0], CG = w.shape[1];
  Shape in(x.shape.begin() + 2, x.shape.end()), k(w.shape.begin() + 2, w.shape.end()), out(3);
  for (int a = 0; a < 3; ++a)
    out[a] = (in[a] + p.pad[a] + p.pad[a + 3] - p.dilation[a] * (k[a] - 1) - 1) / p.stride[a] + 1;
  Tensor o{{N, O, out[0], out[1], out[2]}, Vec(N * O * out[0] * out[1] * out[2])};
  int64_t opg = O / p.groups;
  size_t flat = 0;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t oc = 0; oc < O; ++oc)
      for (int64_t od = 0; od < out[0]; ++od)
        for (int64_t oh = 0; oh < out[1]; ++oh)
          for (int64_t ow = 0; ow < out[2]; ++ow) {
            float acc = bias ? bias->data[oc] : 0.0f;
            for (int64_t c = 0; c < CG; ++c)
              for (int64_t kd = 0; kd < k[0]; ++kd)
                for (int64_t kh = 0; kh < k[1]; ++kh)
                  for (int64_t kw = 0; kw < k[2]; ++kw) {
                    int64_t id = od * p.stride[0] + kd * p.dilation[0] - p.pad[0];
                    int64_t ih = oh * p.stride[1] + kh * p.dilation[1] - p.pad[1];
                    int64_t iw = ow * p.stride[2] + kw * p.dilation[2] - p.pad[2];
                    float v = 0.0f;
                    if (id >= 0 && id < in[0] && ih >= 0 && ih < in[1] && iw >= 0 && iw < in[2])
                      v = x.data[(((n * C + oc / opg * CG + c) * in[0] + id) * in[1] + ih) * in[2] + iw];
                    acc += v * w.data[(((oc * CG + c) * k[0] + kd) * k[1] + kh) * k[2] + kw];
                  }
            o.data[flat++] = acc;
          }
  return o;
}

void check_conv3d(const Shape& xs, const Shape& ws, bool bias, const Conv3& p, uint32_t seed) {
  Tensor x = rnd(xs, seed), w = rnd(ws, seed + 1), b = rnd({ws[0]}, seed + 2);
  json attrs = {{"strides", p.stride}, {"padding", p.pad}, {"dilation", p.dilation}, {"groups", p.groups}};
  std::vector<Tensor> ins = {x, w};
  if (bias) ins.push_back(b);
  expect_close(run_op("conv3d", ins, attrs), ref_conv3d(x, w, bias ? &b : nullptr, p), "conv3d " + attrs.dump());
}

TEST(OpsConv3d, Basic) { check_conv3d({1, 2, 4, 5, 5}, {3, 2, 3, 3, 3}, true, Conv3{}, 11); }
TEST(OpsConv3d, StridesPaddingDilationGroups) {
  Conv3 p;
  p.stride = {2, 1, 2}, p.dilation = {1, 2, 1}, p.pad = {1, 0, 2, 0, 1, 1}, p.groups = 2;
  check_conv3d({2, 4, 5, 6, 5}, {6, 2, 2, 3, 3}, true, p, 12);
  Conv3 depthwise;
  depthwise.groups = 3, depthwise.pad = {1, 1, 1, 1, 1, 1};
  check_conv3d({1, 3, 3, 4, 4}, {3, 1, 3, 3, 3}, false, depthwise, 13);
}

// Random attribute combinations (small: each output element is a 3-D window).
TEST(OpsConv3d, RandomSweep) {
  std::mt19937 rng(4321);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int done = 0;
  while (done < 12) {
    Conv3 p;
    int64_t cg = pick(1, 2), og = pick(1, 2);
    p.groups = pick(1, 2);
    Shape in(3), k(3);
    for (int a = 0; a < 3; ++a) {
      in[a] = pick(1, 5), k[a] = pick(1, 3), p.stride[a] = pick(1, 2), p.dilation[a] = pick(1, 2);
      p.pad[a] = pick(0, 1), p.pad[a + 3] = pick(0, 1);
    }
    bool fits = true;
    for (int a = 0; a < 3; ++a) fits = fits && p.dilation[a] * (k[a] - 1) + 1 <= in[a] + p.pad[a] + p.pad[a + 3];
    if (!fits) continue;
    check_conv3d({1, p.groups * cg, in[0], in[1], in[2]}, {p.groups * og, cg, k[0], k[1], k[2]}, pick(0, 1) == 1, p,
                 static_cast<uint32_t>(700 + done));
    ++done;
  }
}

TEST(OpsConv3d, ShapeInferenceAndErrors) {
  EXPECT_EQ(infer_shape("conv3d", {{1, 2, 8, 9, 10}, {4, 2, 3, 3, 3}},
                        {{"strides", {2, 1, 3}}, {"padding", {1, 1, 1, 1, 1, 1}}}),
            (Shape{1, 4, 4, 9, 4}));
  expect_error("conv3d", {{1, 3, 8, 8}, {4, 3, 3, 3}}, json::object(), "data (NCDHW) must have rank 5");
  expect_error("conv3d", {{1, 3, 4, 8, 8}, {4, 3, 3, 3}}, json::object(), "weight (OIDHW) must have rank 5");
  expect_error("conv3d", {{1, 4, 4, 4, 4}, {6, 3, 1, 1, 1}}, json::object(), "do not form 1 group(s)");
  expect_error("conv3d", {{1, 3, 4, 4, 4}, {4, 3, 1, 1, 1}, {3}}, json::object(), "bias must have shape (4,)");
  expect_error("conv3d", {{1, 3, 2, 4, 4}, {4, 3, 3, 1, 1}}, json::object(),
               "larger than the padded input along axis 2");
  expect_error("conv3d", {{1, 3, 4, 4, 4}, {4, 3, 1, 1, 1}}, {{"padding", {1, 1, 1, 1}}},
               "attribute 'padding' must be a list of 6 non-negative integers");
  expect_error("conv3d", {{1, 3, 4, 4, 4}, {4, 3, 1, 1, 1}}, {{"layout", "NDHWC"}}, "unknown attribute 'layout'");
}

// ---- conv_transpose ------------------------------------------------------------------

struct ConvT {
  Shape stride, dilation, pad, output_padding;  // pad: begins, then ends
  int64_t groups = 1;
};

// The scatter form (each input element adds its kernel-sized patch into the output),
// independent of the op's gather form. Any number of spatial axes, flattened.
Tensor ref_conv_transpose(const Tensor& x, const Tensor& w, const Tensor* bias, const ConvT& p) {
  size_t dims = x.shape.size() - 2;
  int64_t N = x.shape[0], C = x.shape[1], OG = w.shape[1], O = OG * p.groups, CG = C / p.groups;
  Shape in(x.shape.begin() + 2, x.shape.end()), k(w.shape.begin() + 2, w.shape.end()), out(dims);
  for (size_t a = 0; a < dims; ++a)
    out[a] = p.stride[a] * (in[a] - 1) + p.output_padding[a] + p.dilation[a] * (k[a] - 1) + 1 - p.pad[a] -
             p.pad[a + dims];
  Shape oshape = {N, O};
  oshape.insert(oshape.end(), out.begin(), out.end());
  Tensor o{oshape, Vec(numel(oshape), 0.0f)};
  int64_t in_size = numel(in), k_size = numel(k), out_size = numel(out);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t oc = 0; oc < O; ++oc)
      for (int64_t e = 0; e < out_size; ++e) o.data[(n * O + oc) * out_size + e] = bias ? bias->data[oc] : 0.0f;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t ic = 0; ic < C; ++ic)
      for (int64_t ie = 0; ie < in_size; ++ie) {
        Shape ii = unravel(ie, in);
        for (int64_t j = 0; j < OG; ++j)
          for (int64_t ke = 0; ke < k_size; ++ke) {
            Shape kk = unravel(ke, k);
            int64_t flat = 0;
            bool inside = true;
            for (size_t a = 0; a < dims; ++a) {
              int64_t oa = ii[a] * p.stride[a] + kk[a] * p.dilation[a] - p.pad[a];
              inside = inside && oa >= 0 && oa < out[a];
              flat = flat * out[a] + oa;
            }
            if (!inside) continue;
            int64_t oc = ic / CG * OG + j;
            o.data[(n * O + oc) * out_size + flat] +=
                x.data[(n * C + ic) * in_size + ie] * w.data[(ic * OG + j) * k_size + ke];
          }
      }
  return o;
}

void check_conv_transpose(const Shape& xs, const Shape& ws, bool bias, const ConvT& p, uint32_t seed) {
  Tensor x = rnd(xs, seed), w = rnd(ws, seed + 1), b = rnd({ws[1] * p.groups}, seed + 2);
  json attrs = {{"strides", p.stride},
                {"padding", p.pad},
                {"dilation", p.dilation},
                {"output_padding", p.output_padding},
                {"groups", p.groups}};
  std::vector<Tensor> ins = {x, w};
  if (bias) ins.push_back(b);
  expect_close(run_op("conv_transpose", ins, attrs), ref_conv_transpose(x, w, bias ? &b : nullptr, p),
               "conv_transpose " + attrs.dump());
}

TEST(OpsConvTranspose, OneTwoAndThreeSpatialAxes) {
  check_conv_transpose({1, 2, 5}, {2, 3, 3}, true, ConvT{{2}, {1}, {1, 0}, {1}, 1}, 21);
  check_conv_transpose({2, 2, 3, 4}, {2, 2, 3, 2}, false, ConvT{{3, 2}, {1, 2}, {1, 0, 2, 1}, {0, 1}, 1}, 22);
  check_conv_transpose({1, 4, 3, 3}, {4, 1, 3, 3}, true, ConvT{{2, 2}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 2}, 23);
  check_conv_transpose({1, 1, 2, 3, 2}, {1, 2, 2, 2, 3}, true,
                       ConvT{{2, 1, 2}, {1, 1, 1}, {0, 0, 1, 0, 1, 0}, {1, 0, 0}, 1}, 24);
}

TEST(OpsConvTranspose, RandomSweep) {
  std::mt19937 rng(999);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int done = 0;
  while (done < 16) {
    size_t dims = static_cast<size_t>(pick(1, 3));
    ConvT p;
    p.groups = pick(1, 2);
    int64_t cg = pick(1, 2), og = pick(1, 2);
    Shape xs = {1, p.groups * cg}, ws = {p.groups * cg, og};
    bool ok = true;
    for (size_t a = 0; a < dims; ++a) {
      int64_t in = pick(1, 4), k = pick(1, 3);
      p.stride.push_back(pick(1, 3)), p.dilation.push_back(pick(1, 2));
      p.output_padding.push_back(pick(0, p.stride.back() - 1));
      xs.push_back(in), ws.push_back(k);
    }
    for (size_t a = 0; a < dims; ++a) p.pad.push_back(pick(0, 1));
    for (size_t a = 0; a < dims; ++a) p.pad.push_back(pick(0, 1));
    for (size_t a = 0; a < dims; ++a)
      ok = ok && p.stride[a] * (xs[2 + a] - 1) + p.output_padding[a] + p.dilation[a] * (ws[2 + a] - 1) + 1 >
                     p.pad[a] + p.pad[a + dims];
    if (!ok) continue;
    check_conv_transpose(xs, ws, pick(0, 1) == 1, p, static_cast<uint32_t>(900 + done));
    ++done;
  }
}

TEST(OpsConvTranspose, ShapeInferenceAndErrors) {
  EXPECT_EQ(infer_shape("conv_transpose", {{1, 2, 3, 3}, {2, 4, 3, 3}},
                        {{"strides", {3, 2}}, {"output_padding", {1, 1}}}),
            (Shape{1, 4, 10, 8}));
  EXPECT_EQ(infer_shape("conv_transpose", {{1, 4, 5}, {4, 3, 2}}, {{"groups", 2}, {"padding", {1, 0}}}),
            (Shape{1, 6, 5}));
  expect_error("conv_transpose", {{1, 2}, {2, 2}}, json::object(), "data must have rank 3, 4 or 5");
  expect_error("conv_transpose", {{1, 2, 3, 3}, {2, 2, 3}}, json::object(), "weight must have the data's rank 4");
  expect_error("conv_transpose", {{1, 2, 3, 3}, {3, 2, 3, 3}}, json::object(), "must have the data's 2 channels first");
  expect_error("conv_transpose", {{1, 2, 3, 3}, {2, 2, 3, 3}, {3}}, json::object(), "bias must have shape (2,)");
  expect_error("conv_transpose", {{1, 1, 1, 1}, {1, 1, 1, 1}}, {{"padding", {1, 0, 0, 0}}},
               "leaves no output along axis 2");
  expect_error("conv_transpose", {{1, 1, 2, 2}, {1, 1, 1, 1}}, {{"output_padding", {1}}},
               "attribute 'output_padding' must be a list of 2 non-negative integers");
}

// ---- dense / gemm / matmul ------------------------------------------------------------

TEST(OpsDense, WithAndWithoutBias) {
  for (bool bias : {false, true}) {
    Tensor x = rnd({3, 7}, 11), w = rnd({5, 7}, 12), b = rnd({5}, 13);
    Tensor want{{3, 5}, Vec(15)};
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 5; ++j) {
        float acc = bias ? b.data[j] : 0.0f;
        for (int k = 0; k < 7; ++k) acc += x.data[i * 7 + k] * w.data[j * 7 + k];
        want.data[i * 5 + j] = acc;
      }
    std::vector<Tensor> ins = {x, w};
    if (bias) ins.push_back(b);
    expect_close(run_op("dense", ins), want, bias ? "dense+bias" : "dense");
  }
  Tensor x = rnd({1, 4}, 14), w = rnd({1, 4}, 15);
  Tensor want{{1, 1}, {0}};
  for (int k = 0; k < 4; ++k) want.data[0] += x.data[k] * w.data[k];
  expect_close(run_op("dense", {x, w}), want, "dense 1x1");
}

TEST(OpsDense, Errors) {
  expect_error("dense", {{2, 3}}, json::object(), "expected 2 or 3 inputs");
  expect_error("dense", {{2, 3}, {4, 5}}, json::object(), "weight has 5 input features but the data has 3");
  expect_error("dense", {{2, 3, 1}, {4, 3}}, json::object(), "data must have rank 2");
  expect_error("dense", {{2, 3}, {4, 3}, {3}}, json::object(), "bias must have shape (4,)");
  expect_error("dense", {{2, 3}, {4, 3}}, {{"units", 4}}, "unknown attribute 'units'; this op takes no attributes");
}

void check_gemm(bool ta, bool tb, double alpha, double beta, const Shape* cshape, uint32_t seed) {
  int64_t M = 3, K = 4, N = 5;
  Tensor a = rnd(ta ? Shape{K, M} : Shape{M, K}, seed), b = rnd(tb ? Shape{N, K} : Shape{K, N}, seed + 1);
  Tensor c = cshape ? rnd(*cshape, seed + 2) : Tensor{};
  Tensor want{{M, N}, Vec(M * N)};
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      float acc = 0;
      for (int64_t k = 0; k < K; ++k)
        acc += a.data[ta ? k * M + i : i * K + k] * b.data[tb ? j * K + k : k * N + j];
      float r = static_cast<float>(alpha) * acc;
      if (cshape) {
        const Shape& cs = *cshape;
        int64_t ci = 0;
        if (cs.size() == 2) ci = (cs[0] == 1 ? 0 : i) * cs[1] + (cs[1] == 1 ? 0 : j);
        if (cs.size() == 1) ci = cs[0] == 1 ? 0 : j;
        r += static_cast<float>(beta) * c.data[ci];
      }
      want.data[i * N + j] = r;
    }
  json attrs = {{"alpha", alpha}, {"beta", beta}, {"transA", ta ? 1 : 0}, {"transB", tb}};
  std::vector<Tensor> ins = {a, b};
  if (cshape) ins.push_back(c);
  expect_close(run_op("gemm", ins, attrs), want, "gemm " + attrs.dump());
}

TEST(OpsGemm, TransposesScalesAndBroadcastC) {
  Shape full{3, 5}, row{5}, col{3, 1}, scalar1{1}, scalar0{};
  check_gemm(false, false, 1.0, 1.0, nullptr, 20);
  check_gemm(false, false, 1.0, 1.0, &full, 21);
  check_gemm(true, false, 0.5, 2.0, &row, 22);
  check_gemm(false, true, 1.0, -1.0, &col, 23);
  check_gemm(true, true, 2.5, 0.25, &scalar1, 24);
  check_gemm(false, false, 1.0, 3.0, &scalar0, 25);
  check_gemm(true, true, 1.0, 0.0, &full, 26);
}

TEST(OpsGemm, Errors) {
  expect_error("gemm", {{3, 4}, {5, 6}}, json::object(), "inner dimensions differ");
  expect_error("gemm", {{3, 4}, {4, 5}, {4, 5}}, json::object(), "C has shape (4, 5), which does not broadcast");
  expect_error("gemm", {{3, 4}, {4, 5}, {2, 3, 5}}, json::object(), "does not broadcast");
  expect_error("gemm", {{3, 4}, {4, 5}}, {{"transA", 2}}, "attribute 'transA' must be a boolean");
  expect_error("gemm", {{3, 4}, {4, 5}}, {{"alpha", "x"}}, "attribute 'alpha' must be a number");
  expect_error("gemm", {{3, 4, 1}, {4, 5}}, json::object(), "A must have rank 2");
}

TEST(OpsMatmul, BatchBroadcasting) {
  std::vector<std::pair<Shape, Shape>> cases = {
      {{3, 4}, {4, 2}}, {{2, 3, 4}, {2, 4, 5}}, {{2, 3, 4}, {4, 5}}, {{3, 4}, {2, 4, 5}},
      {{2, 1, 3, 4}, {3, 4, 2}}, {{1, 2, 3}, {4, 3, 2}}};
  uint32_t seed = 30;
  for (const auto& [sa, sb] : cases) {
    Tensor a = rnd(sa, seed++), b = rnd(sb, seed++);
    expect_close(run_op("matmul", {a, b}), ref_matmul(a, b), "matmul");
  }
}

TEST(OpsMatmul, Errors) {
  expect_error("matmul", {{4}, {4, 3}}, json::object(), "1-D operands are not supported");
  expect_error("matmul", {{3, 4}, {5, 3}}, json::object(), "inner dimensions differ");
  expect_error("matmul", {{2, 3, 4}, {3, 4, 5}}, json::object(), "cannot be broadcast together");
  expect_error("matmul", {{3, 4}}, json::object(), "expected 2 inputs (A, B), got 1");
}

// ---- elementwise ----------------------------------------------------------------------

TEST(OpsElementwise, BinaryBroadcasting) {
  std::vector<std::pair<Shape, Shape>> cases = {
      {{2, 3}, {2, 3}}, {{2, 3, 4}, {4}}, {{4}, {2, 3, 4}}, {{2, 1, 4}, {3, 1}},
      {{1}, {3, 2}}, {{2, 3}, {}}, {{5}, {5}}, {{1, 3, 1, 2}, {2, 1, 4, 1}}};
  std::vector<std::pair<std::string, std::function<float(float, float)>>> ops = {
      {"add", [](float a, float b) { return a + b; }},
      {"sub", [](float a, float b) { return a - b; }},
      {"mul", [](float a, float b) { return a * b; }},
      {"div", [](float a, float b) { return a / b; }}};
  uint32_t seed = 40;
  for (const auto& [sa, sb] : cases)
    for (const auto& [name, f] : ops) {
      Tensor a = rnd(sa, seed++), b = rnd(sb, seed++);
      if (name == "div")
        for (auto& v : b.data) v = v < 0 ? v - 0.5f : v + 0.5f;  // away from zero
      expect_close(run_op(name, {a, b}), ref_binary(a, b, f), name);
    }
}

TEST(OpsElementwise, BinaryErrors) {
  expect_error("add", {{2, 3}, {4}}, json::object(), "shapes (2, 3) and (4) cannot be broadcast together");
  expect_error("mul", {{2, 3}}, json::object(), "expected 2 inputs (lhs, rhs), got 1");
  expect_error("div", {{2}, {2}, {2}}, json::object(), "expected 2 inputs");
  expect_error("sub", {{2}, {2}}, {{"axis", 1}}, "unknown attribute 'axis'");
}

Tensor ref_unary(const Tensor& x, const std::function<float(float)>& f) {
  Tensor o = x;
  for (auto& v : o.data) v = f(v);
  return o;
}

TEST(OpsElementwise, Activations) {
  uint32_t seed = 60;
  for (const Shape& s : {Shape{7}, Shape{2, 3, 4}, Shape{1, 2, 1, 3}}) {
    Tensor x = rnd(s, seed++);
    for (auto& v : x.data) v *= 8.0f;  // cover the saturating ranges too
    expect_close(run_op("relu", {x}), ref_unary(x, [](float v) { return v > 0 ? v : 0.0f; }), "relu");
    expect_close(run_op("sigmoid", {x}), ref_unary(x, [](float v) { return 1.0f / (1.0f + std::exp(-v)); }),
                 "sigmoid");
    expect_close(run_op("tanh", {x}), ref_unary(x, [](float v) { return std::tanh(v); }), "tanh");
    expect_close(run_op("clip", {x}, {{"min", 0.0}, {"max", 6.0}}),
                 ref_unary(x, [](float v) { return std::min(std::max(v, 0.0f), 6.0f); }), "relu6");
    expect_close(run_op("clip", {x}, {{"min", -1.5}}), ref_unary(x, [](float v) { return std::max(v, -1.5f); }),
                 "clip min");
    expect_close(run_op("clip", {x}, {{"max", 2}}), ref_unary(x, [](float v) { return std::min(v, 2.0f); }),
                 "clip max");
    expect_close(run_op("clip", {x}), x, "clip without bounds");
    expect_close(run_op("exp", {x}), ref_unary(x, [](float v) { return std::exp(v); }), "exp");
    expect_close(run_op("abs", {x}), ref_unary(x, [](float v) { return std::fabs(v); }), "abs");
    expect_close(run_op("neg", {x}), ref_unary(x, [](float v) { return -v; }), "neg");
    expect_close(run_op("sqrt", {run_op("abs", {x})}), ref_unary(x, [](float v) { return std::sqrt(std::fabs(v)); }),
                 "sqrt");
    expect_close(run_op("leaky_relu", {x}), ref_unary(x, [](float v) { return v > 0 ? v : 0.01f * v; }),
                 "leaky_relu default alpha");
    expect_close(run_op("leaky_relu", {x}, {{"alpha", 0.5}}), ref_unary(x, [](float v) { return v > 0 ? v : 0.5f * v; }),
                 "leaky_relu alpha 0.5");
  }
}

TEST(OpsElementwise, ActivationErrors) {
  expect_error("relu", {{2}, {2}}, json::object(), "expected 1 input (data), got 2");
  expect_error("clip", {{2}}, {{"min", 3}, {"max", 1}}, "attribute 'min' (3.000000) is greater than 'max'");
  expect_error("clip", {{2}}, {{"min", "0"}}, "attribute 'min' must be a number");
  expect_error("clip", {{2}}, {{"lo", 0}}, "unknown attribute 'lo'; known attributes: min, max");
  expect_error("sigmoid", {{2, 0}}, json::object(), "every dimension must be positive");
}

// ---- pooling ----------------------------------------------------------------------

void check_pool(const Shape& xs, const Pool& p, uint32_t seed) {
  Tensor x = rnd(xs, seed);
  for (bool avg : {false, true}) {
    json attrs = {{"pool_size", {p.kh, p.kw}},
                  {"strides", {p.sh, p.sw}},
                  {"padding", {p.pt, p.pl, p.pb, p.pr}},
                  {"dilation", {p.dh, p.dw}},
                  {"ceil_mode", p.ceil}};
    if (avg) attrs["count_include_pad"] = p.include_pad;
    std::string op = avg ? "avg_pool2d" : "max_pool2d";
    Tensor want = ref_pool(x, p, avg);
    expect_close(run_op(op, {x}, attrs), want, op + " NCHW " + attrs.dump());
    attrs["layout"] = "NHWC";
    expect_close(run_op(op, {nchw_to_nhwc(x)}, attrs), nchw_to_nhwc(want), op + " NHWC " + attrs.dump());
  }
}

TEST(OpsPool, Basic) {
  Pool p;
  p.kh = p.kw = 2, p.sh = p.sw = 2;
  check_pool({1, 3, 6, 6}, p, 70);
  p.sh = p.sw = 1;
  check_pool({2, 2, 4, 5}, p, 71);
}

TEST(OpsPool, PaddingBothCountModes) {
  for (bool include : {false, true}) {
    Pool p;
    p.kh = p.kw = 3, p.sh = p.sw = 2, p.pt = p.pl = p.pb = p.pr = 1, p.include_pad = include;
    check_pool({1, 2, 7, 7}, p, 72);
    Pool q;  // asymmetric
    q.kh = 3, q.kw = 2, q.sh = 1, q.sw = 2, q.pt = 2, q.pl = 0, q.pb = 0, q.pr = 1, q.include_pad = include;
    check_pool({1, 2, 5, 6}, q, 73);
  }
}

TEST(OpsPool, CeilMode) {
  for (bool include : {false, true}) {
    Pool p;
    p.kh = p.kw = 3, p.sh = p.sw = 2, p.ceil = true, p.include_pad = include;
    check_pool({1, 2, 8, 6}, p, 74);  // 8: the last window hangs over the edge
    Pool q;
    q.kh = q.kw = 2, q.sh = q.sw = 2, q.pt = q.pl = q.pb = q.pr = 1, q.ceil = true, q.include_pad = include;
    check_pool({1, 1, 5, 6}, q, 75);  // ceil would add a window starting in the padding: dropped
    Pool r;
    r.kh = 3, r.kw = 2, r.sh = 3, r.sw = 2, r.pt = 1, r.pb = 0, r.pl = 0, r.pr = 1, r.ceil = true;
    r.include_pad = include;
    check_pool({1, 2, 7, 7}, r, 76);
  }
  EXPECT_EQ(infer_shape("max_pool2d", {{1, 1, 5, 5}}, {{"pool_size", {2, 2}}, {"strides", {2, 2}}}),
            (Shape{1, 1, 2, 2}));
  EXPECT_EQ(infer_shape("max_pool2d", {{1, 1, 5, 5}}, {{"pool_size", {2, 2}}, {"strides", {2, 2}}, {"ceil_mode", true}}),
            (Shape{1, 1, 3, 3}));
  EXPECT_EQ(infer_shape("max_pool2d", {{1, 1, 4, 4}},
                        {{"pool_size", {2, 2}}, {"strides", {2, 2}}, {"padding", {1, 1, 1, 1}}, {"ceil_mode", 1}}),
            (Shape{1, 1, 3, 3}));
}

TEST(OpsPool, Dilation) {
  for (bool include : {false, true}) {
    Pool p;
    p.kh = p.kw = 2, p.dh = 2, p.dw = 3, p.pt = 1, p.pl = 2, p.pb = 1, p.pr = 0, p.include_pad = include;
    check_pool({1, 2, 6, 7}, p, 77);
    p.ceil = true, p.sh = 2, p.sw = 2;
    check_pool({1, 1, 7, 8}, p, 78);
  }
}

TEST(OpsPool, RandomSweep) {
  std::mt19937 rng(4321);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int done = 0;
  while (done < 60) {
    Pool p;
    p.kh = pick(1, 3), p.kw = pick(1, 3), p.sh = pick(1, 3), p.sw = pick(1, 3);
    p.dh = pick(1, 2), p.dw = pick(1, 2);
    int64_t eh = p.dh * (p.kh - 1) + 1, ew = p.dw * (p.kw - 1) + 1;
    p.pt = pick(0, static_cast<int>(eh - 1)), p.pb = pick(0, static_cast<int>(eh - 1));
    p.pl = pick(0, static_cast<int>(ew - 1)), p.pr = pick(0, static_cast<int>(ew - 1));
    p.ceil = pick(0, 1) == 1, p.include_pad = pick(0, 1) == 1;
    int64_t h = pick(1, 8), w = pick(1, 8);
    if (eh > h + p.pt + p.pb || ew > w + p.pl + p.pr) continue;
    check_pool({1, pick(1, 2), h, w}, p, static_cast<uint32_t>(700 + done));
    ++done;
  }
}

TEST(OpsPool, Errors) {
  expect_error("max_pool2d", {{1, 1, 4, 4}}, json::object(), "missing required attribute 'pool_size'");
  expect_error("max_pool2d", {{1, 1, 4, 4}}, {{"pool_size", {0, 2}}},
               "max_pool2d: attribute 'pool_size' must be a list of 2 positive integers");
  expect_error("max_pool2d", {{1, 1, 4, 4}}, {{"pool_size", 2}},
               "attribute 'pool_size' must be a list of 2 positive integers");
  expect_error("avg_pool2d", {{1, 1, 4, 4}}, {{"pool_size", {2, 2}}, {"count_include_pad", "yes"}},
               "attribute 'count_include_pad' must be a boolean");
  expect_error("max_pool2d", {{1, 1, 4, 4}}, {{"pool_size", {2, 2}}, {"count_include_pad", true}},
               "unknown attribute 'count_include_pad'; known attributes: pool_size, strides, padding, dilation, "
               "layout, ceil_mode");
  expect_error("avg_pool2d", {{1, 1, 4, 4}}, {{"pool_size", {5, 2}}}, "larger than the padded input");
  expect_error("avg_pool2d", {{1, 1, 4, 4}}, {{"pool_size", {2, 2}}, {"padding", {2, 0, 0, 0}}},
               "must be smaller than the pooling window");
  expect_error("max_pool2d", {{1, 4, 4}}, {{"pool_size", {2, 2}}}, "data (NCHW) must have rank 4");
  expect_error("max_pool2d", {{1, 1, 4, 4}}, {{"pool_size", {2, 2}}, {"ceil_mode", 2}},
               "attribute 'ceil_mode' must be a boolean");
}

TEST(OpsPool, GlobalAvgPool) {
  Tensor x = rnd({2, 3, 4, 5}, 80);
  Tensor want{{2, 3, 1, 1}, Vec(6)};
  for (int n = 0; n < 2; ++n)
    for (int c = 0; c < 3; ++c) {
      float acc = 0;
      for (int i = 0; i < 20; ++i) acc += x.data[(n * 3 + c) * 20 + i];
      want.data[n * 3 + c] = acc / 20.0f;
    }
  expect_close(run_op("global_avg_pool2d", {x}), want, "gap NCHW");
  Tensor wn = want;
  wn.shape = {2, 1, 1, 3};
  expect_close(run_op("global_avg_pool2d", {nchw_to_nhwc(x)}, {{"layout", "NHWC"}}), wn, "gap NHWC");
  expect_error("global_avg_pool2d", {{2, 3, 4}}, json::object(), "data (NCHW) must have rank 4");
  expect_error("global_avg_pool2d", {{2, 3, 4, 4}}, {{"layout", 1}}, "attribute 'layout' must be one of");
}

// ---- softmax ----------------------------------------------------------------------

Tensor ref_softmax(const Tensor& x, int64_t axis) {
  const Shape& s = x.shape;
  int64_t outer = 1, inner = 1, n = s[axis];
  for (int64_t k = 0; k < axis; ++k) outer *= s[k];
  for (size_t k = axis + 1; k < s.size(); ++k) inner *= s[k];
  Tensor o = x;
  for (int64_t a = 0; a < outer; ++a)
    for (int64_t b = 0; b < inner; ++b) {
      double mx = -1e300, sum = 0;
      for (int64_t k = 0; k < n; ++k) mx = std::max(mx, static_cast<double>(x.data[(a * n + k) * inner + b]));
      for (int64_t k = 0; k < n; ++k) sum += std::exp(x.data[(a * n + k) * inner + b] - mx);
      for (int64_t k = 0; k < n; ++k)
        o.data[(a * n + k) * inner + b] = static_cast<float>(std::exp(x.data[(a * n + k) * inner + b] - mx) / sum);
    }
  return o;
}

TEST(OpsSoftmax, AxesAndStability) {
  Tensor x = rnd({2, 3, 4}, 90);
  for (auto& v : x.data) v *= 30.0f;  // large values: overflow without the max subtraction
  for (int64_t axis : {-1, 0, 1, 2, -3})
    expect_close(run_op("softmax", {x}, {{"axis", axis}}), ref_softmax(x, axis < 0 ? axis + 3 : axis),
                 "softmax axis " + std::to_string(axis));
  expect_close(run_op("softmax", {x}), ref_softmax(x, 2), "softmax default axis");
  Tensor big{{1, 3}, {1000.0f, 1001.0f, 1002.0f}};
  expect_close(run_op("softmax", {big}), ref_softmax(big, 1), "softmax large");
  Tensor v = rnd({10}, 91);
  expect_close(run_op("softmax", {v}), ref_softmax(v, 0), "softmax 1-D");
}

TEST(OpsSoftmax, LogSoftmax) {
  Tensor x = rnd({2, 3, 4}, 92);
  for (auto& v : x.data) v *= 30.0f;
  for (int64_t axis : {-1, 0, 1}) {
    Tensor ref = ref_softmax(x, axis < 0 ? axis + 3 : axis);
    // log of the reference softmax where it does not underflow; the op itself must stay finite.
    Tensor got = run_op("log_softmax", {x}, {{"axis", axis}});
    for (size_t i = 0; i < ref.data.size(); ++i) {
      ASSERT_TRUE(std::isfinite(got.data[i])) << "log_softmax axis " << axis << " element " << i;
      if (ref.data[i] > 1e-30f) {
        EXPECT_NEAR(got.data[i], std::log(ref.data[i]), 1e-4) << "axis " << axis << " element " << i;
      }
    }
  }
  expect_error("log_softmax", {{}}, json::object(), "data must have rank >= 1");
}

TEST(OpsSoftmax, Errors) {
  expect_error("softmax", {{2, 3}}, {{"axis", 2}}, "attribute 'axis' is 2, out of range [-2, 1] for rank 2");
  expect_error("softmax", {{2, 3}}, {{"axis", 1.0}}, "attribute 'axis' must be an integer");
  expect_error("softmax", {{}}, json::object(), "data must have rank >= 1");
}

// ---- shape ops ------------------------------------------------------------------------

TEST(OpsReshape, NewShapes) {
  Tensor x = rnd({2, 3, 4}, 100);
  std::vector<std::pair<json, Shape>> cases = {
      {{4, 6}, {4, 6}}, {{-1}, {24}}, {{2, -1}, {2, 12}}, {{0, -1}, {2, 12}}, {{0, 0, 2, 2}, {2, 3, 2, 2}},
      {{1, 24, 1}, {1, 24, 1}}, {{-1, 3, 0}, {2, 3, 4}}};
  for (const auto& [ns, shape] : cases) {
    Tensor got = run_op("reshape", {x}, {{"newshape", ns}});
    EXPECT_EQ(got.shape, shape) << ns.dump();
    expect_close(got, Tensor{shape, x.data}, "reshape " + ns.dump());
  }
  expect_error("reshape", {{2, 3}}, {{"newshape", {4, 2}}}, "cannot reshape data (2, 3) (6 elements) to (4, 2)");
  expect_error("reshape", {{2, 3}}, {{"newshape", {-1, -1}}}, "has more than one -1");
  expect_error("reshape", {{2, 3}}, {{"newshape", {4, -1}}}, "6 is not a multiple of 4");
  expect_error("reshape", {{2, 3}}, {{"newshape", {6, 1, 0}}}, "has 0 at position 2");
  expect_error("reshape", {{2, 3}}, {{"newshape", {-2, 3}}}, "attribute 'newshape' must be a list of integers >= -1");
  expect_error("reshape", {{2, 3}}, json::object(), "missing required attribute 'newshape'");
}

TEST(OpsFlatten, Axes) {
  Tensor x = rnd({2, 3, 2, 2}, 101);
  std::vector<std::pair<int64_t, Shape>> cases = {{1, {2, 12}}, {0, {1, 24}}, {4, {24, 1}}, {2, {6, 4}}, {-1, {12, 2}}};
  for (const auto& [axis, shape] : cases) {
    Tensor got = run_op("flatten", {x}, {{"axis", axis}});
    expect_close(got, Tensor{shape, x.data}, "flatten " + std::to_string(axis));
  }
  expect_close(run_op("flatten", {x}), Tensor{{2, 12}, x.data}, "flatten default");
  expect_error("flatten", {{2, 3}}, {{"axis", 3}}, "attribute 'axis' is 3, out of range [-2, 2]");
}

TEST(OpsConcat, Axes) {
  Tensor a = rnd({2, 3, 2}, 110), b = rnd({2, 1, 2}, 111), c = rnd({2, 2, 2}, 112);
  Tensor got = run_op("concat", {a, b, c}, {{"axis", 1}});
  Tensor want{{2, 6, 2}, {}};
  for (int n = 0; n < 2; ++n) {
    for (const Tensor* t : {&a, &b, &c}) {
      int64_t rows = t->shape[1];
      for (int64_t r = 0; r < rows * 2; ++r) want.data.push_back(t->data[n * rows * 2 + r]);
    }
  }
  expect_close(got, want, "concat axis 1");
  Tensor d = rnd({1, 3, 2}, 113);
  Tensor want0{{3, 3, 2}, a.data};
  want0.data.insert(want0.data.end(), d.data.begin(), d.data.end());
  expect_close(run_op("concat", {a, d}), want0, "concat default axis 0");
  Tensor e = rnd({2, 3, 1}, 114);
  Tensor want2{{2, 3, 3}, {}};
  for (int r = 0; r < 6; ++r) {
    want2.data.push_back(a.data[r * 2]);
    want2.data.push_back(a.data[r * 2 + 1]);
    want2.data.push_back(e.data[r]);
  }
  expect_close(run_op("concat", {a, e}, {{"axis", -1}}), want2, "concat axis -1");
  expect_error("concat", {{2, 3}}, {{"axis", 0}}, "expected at least 2 inputs, got 1");
  expect_error("concat", {{2, 3}, {3, 3}}, {{"axis", 1}}, "input 1 has shape (3, 3), which does not match input 0");
  expect_error("concat", {{2, 3}, {2, 3, 1}}, json::object(), "does not match");
  expect_error("concat", {{2, 3}, {2, 3}}, {{"axis", 2}}, "out of range");
}

TEST(OpsTranspose, Permutations) {
  Tensor x = rnd({2, 3, 4}, 120);
  std::vector<std::vector<int64_t>> perms = {{0, 1, 2}, {2, 1, 0}, {1, 0, 2}, {0, 2, 1}, {2, 0, 1}, {1, -1, 0}};
  for (const auto& perm : perms) {
    std::vector<int64_t> p = perm;
    for (auto& v : p)
      if (v < 0) v += 3;
    Shape os = {x.shape[p[0]], x.shape[p[1]], x.shape[p[2]]};
    Tensor want{os, Vec(24)};
    for (int64_t i = 0; i < 24; ++i) {
      Shape oi = unravel(i, os), ii(3);
      for (int k = 0; k < 3; ++k) ii[p[k]] = oi[k];
      want.data[i] = x.data[(ii[0] * 3 + ii[1]) * 4 + ii[2]];
    }
    expect_close(run_op("transpose", {x}, {{"axes", perm}}), want, "transpose " + json(perm).dump());
  }
  Tensor m = rnd({3, 5}, 121);
  Tensor mt{{5, 3}, Vec(15)};
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 5; ++j) mt.data[j * 3 + i] = m.data[i * 5 + j];
  expect_close(run_op("transpose", {m}), mt, "transpose default");
  expect_error("transpose", {{2, 3}}, {{"axes", {0, 0}}}, "attribute 'axes' must be a permutation of the 2 axes");
  expect_error("transpose", {{2, 3}}, {{"axes", {0, 1, 2}}}, "must be a permutation");
  expect_error("transpose", {{2, 3}}, {{"axes", {0, 2}}}, "must be a permutation");
}

// numpy.pad's "edge" and "reflect" for one index.
int64_t pad_source(int64_t x, int64_t n, bool reflect) {
  if (!reflect) return std::min(std::max<int64_t>(x, 0), n - 1);
  if (x < 0) return -x;
  if (x >= n) return 2 * (n - 1) - x;
  return x;
}

TEST(OpsPad, EdgeAndReflectModes) {
  Tensor x = rnd({3, 4}, 132);
  for (bool reflect : {false, true}) {
    for (json pw : {json{{1, 2}, {3, 0}}, json{{2, 2}, {0, 3}}, json{{0, 0}, {1, 1}}}) {
      int64_t t = pw[0][0], b = pw[0][1], l = pw[1][0], r = pw[1][1];
      Shape os = {3 + t + b, 4 + l + r};
      Tensor want{os, Vec(numel(os))};
      for (int64_t i = 0; i < os[0]; ++i)
        for (int64_t j = 0; j < os[1]; ++j)
          want.data[i * os[1] + j] = x.data[pad_source(i - t, 3, reflect) * 4 + pad_source(j - l, 4, reflect)];
      std::string mode = reflect ? "reflect" : "edge";
      expect_close(run_op("pad", {x}, {{"pad_width", pw}, {"mode", mode}}), want, "pad " + mode + " " + pw.dump());
    }
  }
}

TEST(OpsPad, ConstantMode) {
  Tensor x = rnd({2, 3}, 130);
  std::vector<std::pair<json, double>> cases = {
      {{{1, 2}, {0, 3}}, 0.0}, {{{0, 0}, {2, 0}}, -1.5}, {{{0, 0}, {0, 0}}, 0.0}, {{{3, 0}, {1, 1}}, 7.0}};
  for (const auto& [pw, value] : cases) {
    int64_t t = pw[0][0], b = pw[0][1], l = pw[1][0], r = pw[1][1];
    Shape os = {2 + t + b, 3 + l + r};
    Tensor want{os, Vec(numel(os), static_cast<float>(value))};
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j) want.data[(i + t) * os[1] + j + l] = x.data[i * 3 + j];
    expect_close(run_op("pad", {x}, {{"pad_width", pw}, {"pad_value", value}}), want, "pad " + pw.dump());
  }
  Tensor y = rnd({1, 2, 2, 2}, 131);
  Tensor got = run_op("pad", {y}, {{"pad_width", {{0, 0}, {0, 0}, {1, 1}, {1, 1}}}, {"mode", "constant"}});
  EXPECT_EQ(got.shape, (Shape{1, 2, 4, 4}));
  EXPECT_EQ(got.data[0], 0.0f);
  EXPECT_EQ(got.data[5], y.data[0]);
  expect_error("pad", {{2, 3}}, {{"pad_width", {{1, 1}, {1, 1}}}, {"mode", "wrap"}},
               "mode 'wrap' is not supported; only \"constant\", \"edge\", \"reflect\" and \"symmetric\" padding are implemented");
  expect_error("pad", {{2, 3}}, {{"pad_width", {{0, 2}, {1, 1}}}, {"mode", "reflect"}},
               "reflect padding of dimension 0 (size 2) is wider than 1");
  expect_error("pad", {{2, 3}}, {{"pad_width", {{1, 1}}}},
               "attribute 'pad_width' must be a list of 2 [before, after] pairs of non-negative integers");
  expect_error("pad", {{2, 3}}, {{"pad_width", {{1, -1}, {0, 0}}}}, "pairs of non-negative integers");
  expect_error("pad", {{2, 3}}, json::object(), "missing required attribute 'pad_width'");
  expect_error("pad", {{2, 3}}, {{"pad_width", {{0, 0}, {0, 0}}}, {"pad_value", "0"}},
               "attribute 'pad_value' must be a number");
}

// ---- batch_norm -----------------------------------------------------------------------

TEST(OpsBatchNorm, Inference) {
  for (int64_t axis : {1, 3, -1}) {
    Shape s = {2, 3, 2, 4};
    int64_t ax = axis < 0 ? axis + 4 : axis;
    int64_t c = s[ax];
    Tensor x = rnd(s, 140), g = rnd({c}, 141), b = rnd({c}, 142), m = rnd({c}, 143);
    Tensor v{{c}, random_vec({c}, 144, 0.1f, 2.0f)};
    double eps = axis == 1 ? 1e-5 : 1e-3;
    Tensor want = x;
    for (int64_t i = 0; i < numel(s); ++i) {
      int64_t ch = unravel(i, s)[ax];
      want.data[i] = (x.data[i] - m.data[ch]) / std::sqrt(v.data[ch] + static_cast<float>(eps)) * g.data[ch] +
                     b.data[ch];
    }
    json attrs = {{"axis", axis}};
    if (axis != 1) attrs["epsilon"] = eps;
    expect_close(run_op("batch_norm", {x, g, b, m, v}, attrs), want, "batch_norm " + attrs.dump());
  }
  expect_error("batch_norm", {{1, 3, 2, 2}, {3}, {3}, {3}}, json::object(),
               "expected 5 inputs (data, gamma, beta, mean, var), got 4");
  expect_error("batch_norm", {{1, 3, 2, 2}, {3}, {3}, {4}, {3}}, json::object(),
               "mean must have shape (3,) to match axis 1 of the data (1, 3, 2, 2), got (4)");
  expect_error("batch_norm", {{1, 3}, {3}, {3}, {3}, {3}}, {{"axis", 2}}, "out of range");
  expect_error("batch_norm", {{1, 3}, {3}, {3}, {3}, {3}}, {{"epsilon", -1}}, "attribute 'epsilon' must be a non-negative");
  expect_error("batch_norm", {{1, 3}, {3}, {3}, {3}, {3}}, {{"momentum", 0.9}},
               "unknown attribute 'momentum'; known attributes: epsilon, axis");
}

// ---- integer data ---------------------------------------------------------------------
// The dtype-generic ops (arithmetic, max, clip, data movement) on integer tensors, against
// naive references computing in the type as C does (wrapping unsigned arithmetic,
// division truncating toward zero).

struct ITensor {
  Shape shape;
  std::vector<int64_t> data;
};

// Emits `op` on inputs of type `dt`, checks it, runs it in the interpreter (and, at the
// end of the process, as host C) and returns the output, which must be of type `dt`.
ITensor run_int_op(const std::string& op, DataType dt, const std::vector<ITensor>& inputs,
                   const json& attrs = json::object()) {
  const OpDef* def = find_op(op);
  std::vector<TensorType> types;
  for (const auto& t : inputs) types.push_back(TensorType{dt, t.shape});
  TensorType out = def->infer(types, attrs);
  EXPECT_EQ(out.dtype, dt) << op;
  PrimFunc f = def->build(op + "_kernel", types, out, attrs);
  IRModule m;
  m.set(op + "_kernel", f);
  auto diags = check_well_formed(m);
  EXPECT_TRUE(diags.empty()) << render_all(diags) << "\n" << print_module(m);
  std::vector<NDArray> arrays;
  for (const auto& t : inputs) {
    arrays.push_back(NDArray::zeros(dt, t.shape));
    for (size_t i = 0; i < t.data.size(); ++i) arrays.back().set_int(static_cast<int64_t>(i), t.data[i]);
  }
  arrays.push_back(NDArray::zeros(out.dtype, out.shape));
  std::vector<InterpArg> args;
  for (auto& a : arrays) args.push_back(&a);
  interpret(m, op + "_kernel", args);
  backend_cases::record_kernel(op + " on " + dt.str() + " " + attrs.dump(), f, arrays);
  ITensor r{out.shape, {}};
  for (int64_t i = 0; i < arrays.back().num_elements(); ++i) r.data.push_back(arrays.back().get_int(i));
  return r;
}

ITensor iseq(const Shape& s, int64_t start, int64_t step) {
  ITensor t{s, {}};
  for (int64_t i = 0; i < numel(s); ++i) t.data.push_back(start + i * step);
  return t;
}

TEST(OpsIntegerData, ArithmeticWrapsAndTruncates) {
  // uint8: every pair of a few values, including sums and products past 255.
  ITensor a{{4, 1}, {0, 7, 200, 255}}, b{{1, 3}, {1, 100, 250}};
  const std::vector<std::pair<std::string, std::function<int64_t(int64_t, int64_t)>>> ops = {
      {"add", [](int64_t x, int64_t y) { return static_cast<uint8_t>(x + y); }},
      {"sub", [](int64_t x, int64_t y) { return static_cast<uint8_t>(x - y); }},
      {"mul", [](int64_t x, int64_t y) { return static_cast<uint8_t>(x * y); }},
      {"div", [](int64_t x, int64_t y) { return static_cast<uint8_t>(x / y); }}};
  for (const auto& [name, f] : ops) {
    ITensor got = run_int_op(name, DataType::UInt(8), {a, b});
    ASSERT_EQ(got.shape, (Shape{4, 3})) << name;
    for (int64_t i = 0; i < 4; ++i)
      for (int64_t j = 0; j < 3; ++j) EXPECT_EQ(got.data[i * 3 + j], f(a.data[i], b.data[j])) << name << " " << i << "," << j;
  }
  // int32 division truncates toward zero (ONNX's integer Div; numpy's // would floor).
  ITensor n{{6}, {7, -7, 7, -7, 0, -9}}, d{{6}, {2, 2, -2, -2, 3, 4}};
  EXPECT_EQ(run_int_op("div", DataType::Int(32), {n, d}).data, (std::vector<int64_t>{3, -3, -3, 3, 0, -2}));
  EXPECT_EQ(run_int_op("sub", DataType::Int(64), {n, d}).data, (std::vector<int64_t>{5, -9, 9, -5, -3, -13}));
}

TEST(OpsIntegerData, UnaryAndClip) {
  ITensor x{{2, 4}, {-128, -5, -1, 0, 1, 5, 100, 127}};
  std::vector<int64_t> neg, abs, relu, clip;
  for (int64_t v : x.data) {
    neg.push_back(static_cast<int8_t>(-v));  // -(-128) wraps to -128 in int8
    abs.push_back(static_cast<int8_t>(v < 0 ? -v : v));
    relu.push_back(std::max<int64_t>(v, 0));
    clip.push_back(std::min<int64_t>(std::max<int64_t>(v, -3), 99));
  }
  EXPECT_EQ(run_int_op("neg", DataType::Int(8), {x}).data, neg);
  EXPECT_EQ(run_int_op("abs", DataType::Int(8), {x}).data, abs);
  EXPECT_EQ(run_int_op("relu", DataType::Int(8), {x}).data, relu);
  EXPECT_EQ(run_int_op("clip", DataType::Int(8), {x}, {{"min", -3}, {"max", 99}}).data, clip);
  // Bounds outside the type's range clamp to it: no change; only a max.
  EXPECT_EQ(run_int_op("clip", DataType::Int(8), {x}, {{"min", -1000}, {"max", 1e9}}).data, x.data);
  std::vector<int64_t> capped;
  for (int64_t v : x.data) capped.push_back(std::min<int64_t>(v, 4));
  EXPECT_EQ(run_int_op("clip", DataType::Int(8), {x}, {{"max", 4}}).data, capped);
}

TEST(OpsIntegerData, MaxPool) {
  // int8 with negative values and padding: the padding never wins (the start is -128).
  for (DataType dt : {DataType::Int(8), DataType::UInt(8)}) {
    ITensor x = iseq({1, 2, 3, 4}, dt.is_uint() ? 3 : -60, dt.is_uint() ? 7 : 5);
    json attrs = {{"pool_size", {2, 2}}, {"strides", {2, 2}}, {"padding", {1, 1, 1, 1}}};
    ITensor got = run_int_op("max_pool2d", dt, {x}, attrs);
    ASSERT_EQ(got.shape, (Shape{1, 2, 2, 3}));
    for (int64_t c = 0; c < 2; ++c)
      for (int64_t oh = 0; oh < 2; ++oh)
        for (int64_t ow = 0; ow < 3; ++ow) {
          int64_t want = std::numeric_limits<int64_t>::min();
          for (int64_t ih = oh * 2 - 1; ih <= oh * 2; ++ih)
            for (int64_t iw = ow * 2 - 1; iw <= ow * 2; ++iw)
              if (ih >= 0 && ih < 3 && iw >= 0 && iw < 4) want = std::max(want, x.data[(c * 3 + ih) * 4 + iw]);
          EXPECT_EQ(got.data[(c * 2 + oh) * 3 + ow], want) << dt.str() << " " << c << "," << oh << "," << ow;
        }
  }
  expect_error("avg_pool2d", {}, json::object(), "expected 1 input");
  std::vector<TensorType> in = {{DataType::Int(8), {1, 1, 4, 4}}};
  try {
    find_op("avg_pool2d")->infer(in, {{"pool_size", {2, 2}}});
    ADD_FAILURE() << "avg_pool2d took int8 data";
  } catch (const DiagnosticError& e) {
    EXPECT_NE(e.diagnostics()[0].message.find("input 'data' has type int8; only float32 is supported"),
              std::string::npos);
  }
}

TEST(OpsPool, MaxIndices) {
  // Float data with ties (the first maximum in window order wins) and padding, in both
  // index orders; then the values of an int8 pool with a tie.
  Shape s = {2, 2, 4, 5};
  Tensor x = rnd(s, 150);
  x.data[7] = x.data[8] = 5.0f;  // a tie inside one window of image (0, 0)
  for (bool column_major : {false, true}) {
    json attrs = {{"pool_size", {2, 3}}, {"strides", {2, 2}}, {"padding", {1, 1, 0, 1}}, {"indices", true}};
    if (column_major) attrs["column_major_indices"] = true;
    const OpDef* def = find_op("max_pool2d");
    std::vector<TensorType> in = {{DataType::Float(32), s}};
    TensorType out = def->infer(in, attrs);
    ASSERT_EQ(out.dtype, DataType::Int(64));
    ASSERT_EQ(out.shape, (Shape{2, 2, 2, 3}));
    PrimFunc f = def->build("idx", in, out, attrs);
    IRModule m;
    m.set("idx", f);
    EXPECT_TRUE(check_well_formed(m).empty()) << print_module(m);
    std::vector<NDArray> arrays = {to_nd(x), NDArray::zeros(DataType::Int(64), out.shape)};
    std::vector<InterpArg> args = {&arrays[0], &arrays[1]};
    interpret(m, "idx", args);
    backend_cases::record_kernel("max_pool2d indices " + attrs.dump(), f, arrays);
    for (int64_t nc = 0; nc < 4; ++nc)
      for (int64_t oh = 0; oh < 2; ++oh)
        for (int64_t ow = 0; ow < 3; ++ow) {
          float best = -std::numeric_limits<float>::infinity();
          int64_t want = -1;
          for (int64_t kh = 0; kh < 2; ++kh)
            for (int64_t kw = 0; kw < 3; ++kw) {
              int64_t ih = oh * 2 + kh - 1, iw = ow * 2 + kw - 1;
              if (ih < 0 || ih >= 4 || iw < 0 || iw >= 5) continue;
              float v = x.data[(nc * 4 + ih) * 5 + iw];
              if (v > best) best = v, want = nc * 20 + (column_major ? iw * 4 + ih : ih * 5 + iw);
            }
          EXPECT_EQ(arrays[1].get_int((nc * 2 + oh) * 3 + ow), want) << column_major << " " << nc << "," << oh << "," << ow;
        }
  }
  ITensor q{{1, 1, 2, 2}, {-5, 3, 3, -128}};
  EXPECT_EQ(run_int_op("max_pool2d", DataType::Int(8), {q}, {{"pool_size", {2, 2}}}).data, (std::vector<int64_t>{3}));
  expect_error("max_pool2d", {{1, 1, 4, 4}}, {{"pool_size", {2, 2}}, {"column_major_indices", true}},
               "attribute 'column_major_indices' needs 'indices'");
  expect_error("max_pool2d", {{1, 4, 4, 1}}, {{"pool_size", {2, 2}}, {"indices", true}, {"layout", "NHWC"}},
               "attribute 'indices' needs the NCHW layout");
  expect_error("avg_pool2d", {{1, 1, 4, 4}}, {{"pool_size", {2, 2}}, {"indices", true}}, "unknown attribute 'indices'");
}

TEST(OpsIntegerData, DataMovement) {
  ITensor x = iseq({2, 3}, -4, 3);  // -4 -1 2 / 5 8 11
  for (const char* mode : {"constant", "edge", "reflect"}) {
    ITensor got = run_int_op("pad", DataType::Int(32), {x}, {{"pad_width", {{1, 0}, {0, 2}}}, {"mode", mode}, {"pad_value", 7}});
    ASSERT_EQ(got.shape, (Shape{3, 5})) << mode;
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < 5; ++j) {
        int64_t want;
        if (std::string(mode) == "constant") {
          want = (i == 0 || j >= 3) ? 7 : x.data[(i - 1) * 3 + j];
        } else {
          bool reflect = std::string(mode) == "reflect";
          want = x.data[pad_source(i - 1, 2, reflect) * 3 + pad_source(j, 3, reflect)];
        }
        EXPECT_EQ(got.data[i * 5 + j], want) << mode << " " << i << "," << j;
      }
  }
  EXPECT_EQ(run_int_op("transpose", DataType::Int(16), {x}).data, (std::vector<int64_t>{-4, 5, -1, 8, 2, 11}));
  EXPECT_EQ(run_int_op("reshape", DataType::Int(64), {x}, {{"newshape", {3, 2}}}).shape, (Shape{3, 2}));
  ITensor y = iseq({2, 1}, int64_t{1} << 40, 1);  // int64 values beyond 32 bits survive the copy
  EXPECT_EQ(run_int_op("concat", DataType::Int(64), {iseq({2, 1}, 0, 1), y}, {{"axis", 1}}).data,
            (std::vector<int64_t>{0, int64_t{1} << 40, 1, (int64_t{1} << 40) + 1}));
  EXPECT_EQ(run_int_op("flatten", DataType::UInt(16), {iseq({2, 1, 3}, 0, 9000)}).data.back(), 45000);
}

TEST(OpsFull, EveryElementHoldsTheValue) {
  struct Case {
    json attrs;
    DataType dt;
    Shape shape;
    double want;
  };
  const std::vector<Case> cases = {
      {{{"shape", {2, 3}}, {"value", 1}, {"dtype", "bool"}}, DataType::Bool(), {2, 3}, 1},
      {{{"shape", {4}}, {"value", -2.5}}, DataType::Float(32), {4}, -2.5},
      {{{"shape", {1, 2, 1}}, {"value", -2.5}, {"dtype", "int8"}}, DataType::Int(8), {1, 2, 1}, -2},  // truncated
      {{{"shape", {3}}, {"value", 1e12}, {"dtype", "uint16"}}, DataType::UInt(16), {3}, 65535},     // clamped
      {{{"shape", {1}}, {"value", 0}, {"dtype", "bool"}}, DataType::Bool(), {1}, 0}};
  for (const auto& c : cases) {
    const OpDef* def = find_op("full");
    TensorType out = def->infer({}, c.attrs);
    ASSERT_EQ(out.dtype, c.dt) << c.attrs.dump();
    ASSERT_EQ(out.shape, c.shape) << c.attrs.dump();
    PrimFunc f = def->build("full_kernel", {}, out, c.attrs);
    IRModule m;
    m.set("full_kernel", f);
    EXPECT_TRUE(check_well_formed(m).empty()) << print_module(m);
    // Start from a different value, so the kernel must write every element.
    std::vector<NDArray> arrays = {NDArray::zeros(out.dtype, out.shape)};
    for (int64_t i = 0; i < arrays[0].num_elements(); ++i) arrays[0].set_int(i, 1 - static_cast<int64_t>(c.want != 0));
    std::vector<InterpArg> args = {&arrays[0]};
    interpret(m, "full_kernel", args);
    backend_cases::record_kernel("full " + c.attrs.dump(), f, arrays);
    for (int64_t i = 0; i < arrays[0].num_elements(); ++i) EXPECT_EQ(arrays[0].get_float(i), c.want) << c.attrs.dump();
  }
  expect_error("full", {{2}}, {{"shape", {2}}}, "expected 0 inputs");
  expect_error("full", {}, {{"shape", json::array()}}, "attribute 'shape' must be a non-empty list");
  expect_error("full", {}, {{"shape", {2, 0}}}, "attribute 'shape' must be a list of positive integers");
  expect_error("full", {}, {{"shape", {2}}, {"dtype", "float16"}}, "attribute 'dtype' must be one of");
  expect_error("full", {}, {{"shape", {65536, 65536}}}, "more than 2^31-1 elements");
  expect_error("full", {}, json::object(), "missing required attribute 'shape'");
}

// int64 beyond 2^53 (where a double would round): C's arithmetic on int64_t.
TEST(OpsIntegerData, Int64BeyondDoublePrecision) {
  const int64_t big = (int64_t{1} << 60) + 3;
  ITensor a{{6}, {big, -big, big, -big, 7, std::numeric_limits<int64_t>::min() + 1}};
  ITensor b{{6}, {2, 2, -(int64_t{1} << 40) - 1, 5, -7, -1}};
  std::vector<int64_t> div, mx, mn, add;
  for (size_t i = 0; i < a.data.size(); ++i) {
    div.push_back(a.data[i] / b.data[i]);
    mx.push_back(std::max(a.data[i], b.data[i]));
    mn.push_back(std::min(a.data[i], b.data[i]));
    add.push_back(a.data[i] + b.data[i]);
  }
  EXPECT_EQ(run_int_op("div", DataType::Int(64), {a, b}).data, div);
  EXPECT_EQ(run_int_op("maximum", DataType::Int(64), {a, b}).data, mx);
  EXPECT_EQ(run_int_op("minimum", DataType::Int(64), {a, b}).data, mn);
  EXPECT_EQ(run_int_op("add", DataType::Int(64), {a, b}).data, add);
  // uint64 compares unsigned (the pattern of 2^63 + 1 is negative as an int64_t).
  const int64_t high = std::numeric_limits<int64_t>::min() + 1;
  ITensor u{{2}, {high, 5}}, v{{2}, {5, high}};
  EXPECT_EQ(run_int_op("maximum", DataType::UInt(64), {u, v}).data, (std::vector<int64_t>{high, high}));
  EXPECT_EQ(run_int_op("minimum", DataType::UInt(64), {u, v}).data, (std::vector<int64_t>{5, 5}));
}

// float64 data: each op computes in double (what C's double arithmetic and the double
// overloads of <cmath> give), so the results are the reference's bits.
std::vector<double> run_f64_op(const std::string& op, const std::vector<std::vector<double>>& inputs,
                               const json& attrs = json::object()) {
  const OpDef* def = find_op(op);
  const DataType f64 = DataType::Float(64);
  std::vector<TensorType> types;
  for (const auto& v : inputs) types.push_back(TensorType{f64, {static_cast<int64_t>(v.size())}});
  TensorType out = def->infer(types, attrs);
  EXPECT_EQ(out.dtype, f64) << op;
  PrimFunc f = def->build(op + "_kernel", types, out, attrs);
  IRModule m;
  m.set(op + "_kernel", f);
  auto diags = check_well_formed(m);
  EXPECT_TRUE(diags.empty()) << render_all(diags) << "\n" << print_module(m);
  std::vector<NDArray> arrays;
  for (const auto& v : inputs) {
    arrays.push_back(NDArray::zeros(f64, {static_cast<int64_t>(v.size())}));
    for (size_t i = 0; i < v.size(); ++i) arrays.back().set_float(static_cast<int64_t>(i), v[i]);
  }
  arrays.push_back(NDArray::zeros(f64, out.shape));
  std::vector<InterpArg> args;
  for (auto& a : arrays) args.push_back(&a);
  interpret(m, op + "_kernel", args);
  backend_cases::record_kernel(op + " on float64 " + attrs.dump(), f, arrays);
  std::vector<double> r;
  for (int64_t i = 0; i < arrays.back().num_elements(); ++i) r.push_back(arrays.back().get_float(i));
  return r;
}

TEST(OpsFloat64, ArithmeticAndMathInDouble) {
  // Values a float32 cannot hold: 1 + 2^-40, 1e300, 1e-310 (a double subnormal).
  std::vector<double> a = {1.0 + std::ldexp(1.0, -40), 1e300, -2.5, 1e-310, 0.1, -7.0};
  std::vector<double> b = {1.0, 1e-10, 3.0, 2.0, 0.2, -0.5};
  const std::vector<std::pair<std::string, std::function<double(double, double)>>> binary = {
      {"add", [](double x, double y) { return x + y; }},     {"sub", [](double x, double y) { return x - y; }},
      {"mul", [](double x, double y) { return x * y; }},     {"div", [](double x, double y) { return x / y; }},
      {"maximum", [](double x, double y) { return x > y ? x : y; }},
      {"minimum", [](double x, double y) { return x < y ? x : y; }}};
  for (const auto& [name, fn] : binary) {
    std::vector<double> want;
    for (size_t i = 0; i < a.size(); ++i) want.push_back(fn(a[i], b[i]));
    EXPECT_EQ(run_f64_op(name, {a, b}), want) << name;
  }
  const std::vector<std::pair<std::string, std::function<double(double)>>> unary = {
      {"neg", [](double x) { return -x; }},
      {"abs", [](double x) { return std::fabs(x); }},
      {"relu", [](double x) { return x > 0 ? x : 0.0; }},
      {"exp", [](double x) { return std::exp(x); }},
      {"tanh", [](double x) { return std::tanh(x); }},
      {"sigmoid", [](double x) { return 1.0 / (1.0 + std::exp(-x)); }}};
  std::vector<double> x = {0.5, -3.25, 1.0 + std::ldexp(1.0, -40), 20.0, -0.0, 1e-310};
  for (const auto& [name, fn] : unary) {
    std::vector<double> want;
    for (double v : x) want.push_back(fn(v));
    EXPECT_EQ(run_f64_op(name, {x}), want) << name;
  }
  std::vector<double> sq;
  for (double v : b) sq.push_back(std::sqrt(std::fabs(v)));
  EXPECT_EQ(run_f64_op("sqrt", {run_f64_op("abs", {b})}), sq);
  std::vector<double> leaky;
  for (double v : x) leaky.push_back(std::max(v, 0.0) + 0.1 * std::min(v, 0.0));
  EXPECT_EQ(run_f64_op("leaky_relu", {x}, {{"alpha", 0.1}}), leaky);
  std::vector<double> clipped;
  for (double v : x) clipped.push_back(std::min(std::max(v, -1.0), 1.0 + std::ldexp(1.0, -45)));
  EXPECT_EQ(run_f64_op("clip", {x}, {{"min", -1.0}, {"max", 1.0 + std::ldexp(1.0, -45)}}), clipped);
}

TEST(OpsIntegerData, MixedAndUnsupportedTypesAreRefused) {
  auto refused = [](const std::string& op, std::vector<TensorType> in, const std::string& needle) {
    try {
      find_op(op)->infer(in, json::object());
      ADD_FAILURE() << op << " took " << in[0].str();
    } catch (const DiagnosticError& e) {
      EXPECT_NE(e.diagnostics()[0].message.find(needle), std::string::npos) << e.diagnostics()[0].message;
    }
  };
  refused("add", {{DataType::Int(8), {2}}, {DataType::Float(32), {2}}},
          "add: input 'rhs' has type float32 but 'lhs' has type int8");
  refused("mul", {{DataType::Bool(), {2}}, {DataType::Bool(), {2}}},
          "input 'lhs' has type bool; only float32, float64 and integer types are supported");
  refused("exp", {{DataType::Int(32), {2}}}, "input 'data' has type int32; only float32 and float64 are supported");
  refused("conv3d", {{DataType::Float(64), {1, 1, 1, 1, 1}}, {DataType::Float(64), {1, 1, 1, 1, 1}}},
          "input 'data' has type float64; only float32 is supported");
  refused("dense", {{DataType::Int(8), {1, 2}}, {DataType::Int(8), {3, 2}}}, "only float32 is supported");
}

}  // namespace
}  // namespace mtir
