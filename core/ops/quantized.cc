// int8 quantized operators other than qconv2d/qdense: qadd, qavg_pool2d,
// qglobal_avg_pool2d, qmean, qsoftmax, qconcat, quantize and dequantize. The arithmetic is
// integer only (fixed-point multipliers computed here at compile time, see
// quant_util.h); docs/quantization.md states each op's exact rounding.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>

#include "interp/scalar.h"
#include "ops/fixed_point.h"
#include "ops/qadd_smmlar.h"
#include "ops/qpool_mve.h"
#include "ops/quant_util.h"

namespace mtir {
namespace ops {
namespace {

using json = nlohmann::json;

Expr to_i32(Expr e) { return Cast(kI32, std::move(e)); }

// Every input int8 (or int16 with int16_too), all dimensions positive.
void check_int8_inputs(const std::string& op, const std::vector<TensorType>& in, size_t min_count,
                       const std::vector<std::string>& names, bool int16_too = false) {
  check_inputs(op, in, min_count, names, Dtypes::kNumeric);
  for (size_t i = 0; i < in.size(); ++i) check_dtype(op, in, i, names[i], int16_too && in[i].dtype == DataType::Int(16) ? in[i].dtype : kI8);
}

// ---- qadd, qsub, qmul ------------------------------------------------------------
// TFLite's int8 and int16 ADD and SUB (reference_ops add.h / sub.h, as TFLM runs them):
// both inputs are brought to a common scale with 20 (int8) or 15 (int16) bits of
// headroom, added or subtracted, and the result requantized to the output; every
// multiplier is below 1. TFLM computes ADD's multipliers in double and SUB's in float32
// (sub_common.cc), and takes the general path for int16 whatever pot_scale_int16 says.
// MUL (integer_ops mul.h): the product of the offset inputs requantized by
// a_scale * b_scale / output_scale. Inputs broadcast as in numpy (TFLite's
// BroadcastAdd/Sub/Mul give the same values).

const std::vector<std::string> kBinaryAttrs = {"a_scale",      "a_zero_point",      "b_scale",   "b_zero_point",
                                               "output_scale", "output_zero_point", "activation", "schedule"};

struct QBinaryParams {
  DataType dtype;              // int8 or int16, inputs and output alike
  int left_shift;              // ADD/SUB: 20 for int8, 15 for int16
  std::vector<int64_t> shape;  // the broadcast output shape
  int32_t za, zb, zo;
  QuantMultiplier ma, mb, mo;  // ADD/SUB: a, b and output; MUL: mo only
  ActBounds bounds;
  bool smmlar_add = false;  // schedule smmlar_add (ops/qadd_smmlar.h), where it applies
  SmmlarAddInput a_input() const { return {ma, za == -128}; }
  SmmlarAddInput b_input() const { return {mb, zb == -128}; }
};

// numpy broadcasting of two shapes; a user error naming both when they do not fit.
std::vector<int64_t> broadcast_shapes(const std::string& op, const std::vector<int64_t>& a,
                                      const std::vector<int64_t>& b) {
  std::vector<int64_t> out(std::max(a.size(), b.size()), 1);
  for (size_t k = 0; k < out.size(); ++k) {
    int64_t da = k < out.size() - a.size() ? 1 : a[k - (out.size() - a.size())];
    int64_t db = k < out.size() - b.size() ? 1 : b[k - (out.size() - b.size())];
    if (da != db && da != 1 && db != 1)
      fail(op, "inputs 'a' " + shape_str(a) + " and 'b' " + shape_str(b) + " do not broadcast (numpy rules)");
    out[k] = std::max(da, db);
  }
  return out;
}

// A multiplier TFLite's QuantizeMultiplierSmallerThanOneExp accepts: below 1.
QuantMultiplier below_one(double m, const std::string& op, const std::string& what) {
  QuantMultiplier q = quantize_multiplier(m, op, what);
  if (q.shift > 0 || m >= 1)
    fail(op, "requantization multiplier out of range (" + what + " = " + interp::format_double(m) +
                 "; TFLite requires it below 1)");
  return q;
}

// Both inputs int8, or both int16; returns that type.
DataType check_quantized_pair(const std::string& op, const std::vector<TensorType>& in) {
  check_inputs(op, in, 2, {"a", "b"}, Dtypes::kNumeric);
  DataType t = in[0].dtype == DataType::Int(16) ? DataType::Int(16) : kI8;
  check_dtype(op, in, 0, "a", t);
  check_dtype(op, in, 1, "b", t);
  return t;
}

QBinaryParams qbinary_params(const std::string& op, const std::vector<TensorType>& in, const json& attrs) {
  AttrReader r(op, attrs, kBinaryAttrs);
  QBinaryParams p;
  p.dtype = check_quantized_pair(op, in);
  double sa = read_scale(op, r, "a_scale"), sb = read_scale(op, r, "b_scale"), so = read_scale(op, r, "output_scale");
  p.shape = broadcast_shapes(op, in[0].shape, in[1].shape);
  p.za = read_zero_point(r, "a_zero_point", p.dtype);
  p.zb = read_zero_point(r, "b_zero_point", p.dtype);
  p.zo = read_zero_point(r, "output_zero_point", p.dtype);
  p.bounds = activation_bounds(read_activation(r), so, p.zo, p.dtype);
  p.left_shift = p.dtype == kI8 ? 20 : 15;
  const bool fast = read_smmlar_add(op, r);
  if (op == "qmul") {
    p.mo = quantize_multiplier(sa * sb / so, op, "a_scale * b_scale / output_scale");
    return p;
  }
  const std::string shift_text = std::to_string(p.left_shift);
  if (op == "qsub") {
    // TFLM's SUB: the scales' ratios in float32 (the scales are float32 values).
    const float fa = static_cast<float>(sa), fb = static_cast<float>(sb), fo = static_cast<float>(so);
    const float twice_max = 2 * std::max(fa, fb);
    p.ma = below_one(static_cast<double>(fa / twice_max), op, "a_scale / (2 * max(a_scale, b_scale))");
    p.mb = below_one(static_cast<double>(fb / twice_max), op, "b_scale / (2 * max(a_scale, b_scale))");
    p.mo = below_one(static_cast<double>(twice_max / (static_cast<float>(1 << p.left_shift) * fo)), op,
                     "2 * max(a_scale, b_scale) / (2^" + shift_text + " * output_scale)");
  } else {
    double twice_max = 2 * std::max(sa, sb);
    p.ma = below_one(sa / twice_max, op, "a_scale / (2 * max(a_scale, b_scale))");
    p.mb = below_one(sb / twice_max, op, "b_scale / (2 * max(a_scale, b_scale))");
    p.mo = below_one(twice_max / (std::ldexp(1.0, p.left_shift) * so), op,
                     "2 * max(a_scale, b_scale) / (2^" + shift_text + " * output_scale)");
  }
  p.smmlar_add = fast && p.dtype == kI8 && smmlar_add_applies(p.a_input(), p.b_input(), p.mo);
  return p;
}

OpDef qbinary_op(const std::string& op) {
  OpDef d;
  d.name = op;
  d.sharing = OutputSharing::kElementwise;
  d.infer = [op](const std::vector<TensorType>& in, const json& attrs) {
    QBinaryParams p = qbinary_params(op, in, attrs);
    return TensorType{p.dtype, p.shape};
  };
  d.build = [op](const std::string& fname, const std::vector<TensorType>& in, const TensorType& out,
                 const json& attrs) {
    QBinaryParams p = qbinary_params(op, in, attrs);
    FuncBuilder fb;
    Buffer a = fb.param("a", in[0].shape, p.dtype), b = fb.param("b", in[1].shape, p.dtype);
    Buffer o = fb.param("out", out.shape, p.dtype);
    LoopNest nest;
    std::vector<Expr> idx = nest.axes(out.shape);
    // The input's element for output index idx: trailing axes aligned, size-1 axes at 0.
    auto element = [&](const Buffer& x, const std::vector<int64_t>& shape, int32_t zero_point) {
      std::vector<Expr> xi;
      for (size_t k = 0; k < shape.size(); ++k) xi.push_back(shape[k] == 1 ? ci(0) : idx[idx.size() - shape.size() + k]);
      return sub(to_i32(load(x, xi)), ci(zero_point));
    };
    Expr va = element(a, in[0].shape, p.za), vb = element(b, in[1].shape, p.zb), y;
    if (op == "qmul") {
      y = multiply_by_quantized_multiplier(mul(va, vb), p.mo);
    } else {
      // v is an int8 (int16) minus its zero point, |v| <= 255 (65535), so v * 2^20
      // (2^15) fits in int32. The larger-scale input's multiplier is exactly 1/2 (2^30,
      // no shift): the rounding doubling high product of the even v * 2^shift by it is
      // exactly v * 2^(shift-1). Otherwise the shift is done on uint32 (the same value),
      // so that C compilers keep the product a 32 x 32 -> 64-bit multiply instead of
      // folding 2^20 into a 64-bit constant (three multiplies on a Cortex-M).
      auto scaled = [&](Expr v, const QuantMultiplier& m) {
        if (m.multiplier == (int64_t{1} << 30) && m.shift == 0) return mul(v, ci(1 << (p.left_shift - 1)));
        const DataType u32 = DataType::UInt(32);
        Expr shifted = Cast(kI32, call("shift_left", {Cast(u32, v), IntImm(u32, p.left_shift)}));
        return multiply_by_quantized_multiplier(shifted, m);
      };
      if (p.smmlar_add) {
        y = smmlar_add(va, vb, p.a_input(), p.b_input(), p.mo, op == "qsub", p.bounds.lo >= p.zo);
      } else {
        Expr sa = scaled(va, p.ma), sb = scaled(vb, p.mb);
        y = multiply_by_quantized_multiplier(op == "qadd" ? add(sa, sb) : sub(sa, sb), p.mo);
      }
    }
    PrimFunc f = fb.finish(fname, nest.wrap(store(o, saturate_to(p.dtype, y, p.zo, p.bounds), idx)));
    return p.smmlar_add ? with_smmlar_add_mark(f) : f;
  };
  return d;
}

// ---- qavg_pool2d / qglobal_avg_pool2d -------------------------------------------------

// sum / count rounded half away from zero (count > 0), with C's truncating division:
// TFLite's AveragePool, acc > 0 ? (acc + count/2) / count : (acc - count/2) / count
// (a sum of 0 gives 0 either way).
Expr rounded_div(Expr sum, Expr count) {
  Expr half = as_const_int(count) ? ci(*as_const_int(count) / 2) : floordiv(count, ci(2));
  Expr up = Binary(ExprKind::Div, add(sum, half), count);
  Expr down = Binary(ExprKind::Div, sub(sum, half), count);
  return Select(ge(sum, ci(0)), up, down);
}

struct QpoolParams {
  int64_t n, h, w, c, kh, kw, sh, sw, pt, pl, pb, pr, oh, ow;
  ActBounds bounds;
};

// A fused activation of a pool ("activation" with the output's "output_scale" and
// "output_zero_point", which equal the input's): TFLite clamps the average to its range.
ActBounds pool_activation(const std::string& op, const AttrReader& r, DataType t) {
  std::string act = read_activation(r);
  if (act == "none") return dtype_bounds(t);
  return activation_bounds(act, read_scale(op, r, "output_scale"), read_zero_point(r, "output_zero_point", t), t);
}

QpoolParams qpool_params(const std::vector<TensorType>& in, const json& attrs) {
  const std::string op = "qavg_pool2d";
  AttrReader r(op, attrs,
               {"pool_size", "strides", "padding", "layout", "activation", "output_scale", "output_zero_point", "schedule"});
  check_int8_inputs(op, in, 1, {"data"}, /*int16_too=*/true);  // TFLM's int16 AveragePool: the same arithmetic
  r.get_string("layout", "NHWC", {"NHWC"});
  check_rank(op, in, 0, "data (NHWC)", 4);
  auto size = r.get_ints("pool_size", 2, 1, "positive integers", std::nullopt);
  auto strides = r.get_ints("strides", 2, 1, "positive integers", std::vector<int64_t>{1, 1});
  auto pad = r.get_ints("padding", 4, 0, "non-negative integers", std::vector<int64_t>{0, 0, 0, 0});
  const auto& d = in[0].shape;
  QpoolParams p{d[0], d[1], d[2], d[3], size[0], size[1], strides[0], strides[1], pad[0], pad[1], pad[2], pad[3], 0, 0,
                pool_activation(op, r, in[0].dtype)};
  if (p.kh > p.h + p.pt + p.pb || p.kw > p.w + p.pl + p.pr)
    fail(op, "the pooling window " + shape_str(size) + " is larger than the padded input (" +
                 std::to_string(p.h + p.pt + p.pb) + "x" + std::to_string(p.w + p.pl + p.pr) + ")");
  if (p.pt >= p.kh || p.pb >= p.kh || p.pl >= p.kw || p.pr >= p.kw)
    fail(op, "padding " + shape_str(pad) + " must be smaller than the pooling window " + shape_str(size) +
                 ", or some windows would see only padding");
  p.oh = (p.h + p.pt + p.pb - p.kh) / p.sh + 1;
  p.ow = (p.w + p.pl + p.pr - p.kw) / p.sw + 1;
  return p;
}

TensorType qpool_infer(const std::vector<TensorType>& in, const json& attrs) {
  QpoolParams p = qpool_params(in, attrs);
  return TensorType{in[0].dtype, {p.n, p.oh, p.ow, p.c}};
}

// The number of window rows (or columns) inside the input at output coordinate `o`: a
// constant when it is the same everywhere, else min(o*s - pad + k, size) - max(o*s - pad, 0).
Expr valid_taps(Expr o, int64_t out, int64_t k, int64_t s, int64_t pad, int64_t size) {
  auto at = [&](int64_t i) { return std::min(i * s - pad + k, size) - std::max(i * s - pad, int64_t{0}); };
  bool constant = true;
  for (int64_t i = 1; i < out; ++i) constant = constant && at(i) == at(0);
  if (constant) return ci(at(0));
  Expr start = sub(mul(o, ci(s)), ci(pad));
  return sub(min_(add(start, ci(k)), ci(size)), max_(start, ci(0)));
}

PrimFunc qpool_build(const std::string& fname, const std::vector<TensorType>& in, const TensorType& out,
                     const json& attrs) {
  QpoolParams p = qpool_params(in, attrs);
  FuncBuilder fb;
  Buffer data = fb.param("data", in[0].shape, in[0].dtype), o = fb.param("out", out.shape, out.dtype);
  const ActBounds all = dtype_bounds(out.dtype);
  auto clamped = [&](Expr avg) {
    return p.bounds.lo != all.lo || p.bounds.hi != all.hi ? min_(max_(avg, ci(p.bounds.lo)), ci(p.bounds.hi)) : avg;
  };
  // Schedule mve (prepare_quantized records it for Cortex-M55): the sums four channels a vector.
  const bool mve = attrs.contains("schedule") && attrs["schedule"].value("mve", false);
  if (mve && in[0].dtype == kI8 && mve_avg_pool_applies(p.c, {p.pt, p.pl, p.pb, p.pr})) {
    const Expr count = ci(p.kh * p.kw);
    return fb.finish(fname, mve_avg_pool({data, o, p.n, p.h, p.w, p.c, p.kh, p.kw, p.sh, p.sw, p.oh, p.ow},
                                         [&](Expr sum) { return Cast(kI8, clamped(rounded_div(sum, count))); }));
  }
  Buffer acc = scratch("acc", {1}, kI32);
  LoopNest outer, red;
  Expr n = outer.axis("n", p.n), oh = outer.axis("oh", p.oh), ow = outer.axis("ow", p.ow), c = outer.axis("c", p.c);
  Expr rh = red.axis("rh", p.kh), rw = red.axis("rw", p.kw);
  Expr ih = add(sub(mul(oh, ci(p.sh)), ci(p.pt)), rh), iw = add(sub(mul(ow, ci(p.sw)), ci(p.pl)), rw);
  Expr cond;
  if (p.pt > 0) cond = and_(cond, ge(ih, ci(0)));
  if ((p.oh - 1) * p.sh - p.pt + p.kh > p.h) cond = and_(cond, lt(ih, ci(p.h)));
  if (p.pl > 0) cond = and_(cond, ge(iw, ci(0)));
  if ((p.ow - 1) * p.sw - p.pl + p.kw > p.w) cond = and_(cond, lt(iw, ci(p.w)));
  Stmt update = store(acc, add(load(acc, {ci(0)}), to_i32(load(data, {n, ih, iw, c}))), {ci(0)});
  if (cond) update = IfThenElse(cond, update);
  Expr count = mul(valid_taps(oh, p.oh, p.kh, p.sh, p.pt, p.h), valid_taps(ow, p.ow, p.kw, p.sw, p.pl, p.w));
  Stmt fin = store(o, Cast(out.dtype, clamped(rounded_div(load(acc, {ci(0)}), count))), {n, oh, ow, c});
  Stmt body = SeqStmt({store(acc, ci(0), {ci(0)}), red.wrap(update), fin});
  return fb.finish(fname, Allocate(acc, "global", outer.wrap(body)));
}

TensorType qgap_infer(const std::vector<TensorType>& in, const json& attrs) {
  AttrReader r("qglobal_avg_pool2d", attrs, {"layout"});
  check_int8_inputs("qglobal_avg_pool2d", in, 1, {"data"});
  r.get_string("layout", "NHWC", {"NHWC"});
  check_rank("qglobal_avg_pool2d", in, 0, "data (NHWC)", 4);
  const auto& s = in[0].shape;
  if (s[1] * s[2] > (int64_t{1} << 23))
    fail("qglobal_avg_pool2d", "the window of " + std::to_string(s[1] * s[2]) + " elements could overflow the int32 sum");
  return TensorType{kI8, {s[0], 1, 1, s[3]}};
}

// A kernel that sums `data` over `axes` into an output with those axes kept as 1: per
// output element the int32 sum of its window, then `finish(sum)` stored as the output.
// Loops: the kept axes outermost, then the reduced ones, in axis order; for NHWC data
// reduced over H and W they are named n, c and rh, rw.
PrimFunc reduce_sum_kernel(const std::string& fname, const TensorType& in, const std::vector<bool>& reduced,
                           const TensorType& out, const std::function<Expr(Expr sum)>& finish) {
  const auto& s = in.shape;
  const bool nhwc = s.size() == 4 && reduced == std::vector<bool>{false, true, true, false};
  auto name = [&](size_t k) {
    if (nhwc) return std::string(k == 0 ? "n" : k == 1 ? "rh" : k == 2 ? "rw" : "c");
    return (reduced[k] ? "r" : "i") + std::to_string(k);
  };
  FuncBuilder fb;
  Buffer data = fb.param("data", s, in.dtype);
  Buffer o = fb.param("out", out.shape, out.dtype);
  Buffer acc = scratch("acc", {1}, kI32);
  LoopNest outer, red;
  std::vector<Expr> idx(s.size()), oidx(s.size());
  for (size_t k = 0; k < s.size(); ++k)
    if (!reduced[k]) idx[k] = oidx[k] = outer.axis(name(k), s[k]);
  for (size_t k = 0; k < s.size(); ++k)
    if (reduced[k]) idx[k] = red.axis(name(k), s[k]), oidx[k] = ci(0);
  Stmt update = store(acc, add(load(acc, {ci(0)}), to_i32(load(data, idx))), {ci(0)});
  Stmt fin = store(o, finish(load(acc, {ci(0)})), oidx);
  Stmt body = SeqStmt({store(acc, ci(0), {ci(0)}), red.wrap(update), fin});
  return fb.finish(fname, Allocate(acc, "global", outer.wrap(body)));
}

PrimFunc window_sum_kernel(const std::string& fname, const std::vector<int64_t>& s, const TensorType& out,
                           const std::function<Expr(Expr sum)>& finish) {
  return reduce_sum_kernel(fname, TensorType{kI8, s}, {false, true, true, false}, out, finish);
}

PrimFunc qgap_build(const std::string& fname, const std::vector<TensorType>& in, const TensorType& out, const json&) {
  const auto& s = in[0].shape;
  return window_sum_kernel(fname, s, out, [&](Expr sum) { return Cast(kI8, rounded_div(sum, ci(s[1] * s[2]))); });
}

// ---- qmean, qsum ---------------------------------------------------------------------
// TFLite's int8 and int16 MEAN and SUM (TFLM's reduce kernel) over any axes: the int32
// sum of each output's window, kept axes as 1 (keep_dims false is the frontend's
// reshape). MEAN: QuantizedMeanOrSum, whether or not input and output share scale and
// zero point (EvalIntegerMean at TFLM 90b983c2, the commit the references come from;
// older TFLM divided the raw sum, truncating, when they did, and TFLM's MobileNetV2
// output tells the two apart): the input-to-output multiplier (QuantizeMultiplier of
// input_scale / output_scale) absorbs
// 1/count at compile time, shifted left by floor(log2(count)) (at most 32, and at most
// 31 + shift) before an integer division, and (sum - input_zero_point * count) is
// requantized with it, plus the output zero point, clamped to the type. SUM:
// (sum - input_zero_point * count) requantized by input_scale / output_scale itself.

const std::vector<std::string> kQmeanAttrs = {"input_scale", "input_zero_point", "output_scale", "output_zero_point",
                                              "axis"};

struct QmeanParams {
  DataType dtype;                    // int8 or int16
  std::vector<bool> reduced;         // per input axis
  int64_t count;                     // elements per window
  QuantMultiplier multiplier;        // MEAN: 1/count folded in; SUM: the scales' ratio
  int32_t input_zero_point, output_zero_point;
};

QmeanParams qmean_params(const std::string& op, const std::vector<TensorType>& in, const json& attrs) {
  const bool sum = op == "qsum";
  AttrReader r(op, attrs, kQmeanAttrs);
  check_inputs(op, in, 1, {"data"}, Dtypes::kNumeric);
  QmeanParams p;
  p.dtype = in[0].dtype == DataType::Int(16) ? in[0].dtype : kI8;
  check_dtype(op, in, 0, "data", p.dtype);
  const auto& s = in[0].shape;
  const int64_t rank = static_cast<int64_t>(s.size());
  // Without "axis", H and W of NHWC data (the form the graph format has always had).
  if (!r.has("axis")) check_rank(op, in, 0, "data (NHWC)", 4);
  auto axes = r.get_ints("axis", 0, -rank, "axis indices", std::vector<int64_t>{1, 2});
  p.reduced.assign(s.size(), false);
  for (int64_t a : axes) {
    if (a >= rank) r.bad("axis", "axis indices in [-" + std::to_string(rank) + ", " + std::to_string(rank) + ")");
    p.reduced[a < 0 ? a + rank : a] = true;
  }
  p.count = 1;
  for (size_t k = 0; k < s.size(); ++k)
    if (p.reduced[k]) p.count *= s[k];
  const ActBounds range = dtype_bounds(p.dtype);
  const int64_t span = int64_t{range.hi} - range.lo;  // the largest |x - zero point|
  if (p.count > std::numeric_limits<int32_t>::max() / span)
    fail(op, "the window of " + std::to_string(p.count) + " elements could overflow the int32 sum");
  double si = read_scale(op, r, "input_scale"), so = read_scale(op, r, "output_scale");
  p.input_zero_point = read_zero_point(r, "input_zero_point", p.dtype);
  p.output_zero_point = read_zero_point(r, "output_zero_point", p.dtype);
  QuantMultiplier m = quantize_multiplier(si / so, op, "input_scale / output_scale");
  if (sum) {
    p.multiplier = m;
  } else {
    int shift = 0;
    while ((int64_t{2} << shift) <= p.count) ++shift;  // floor(log2(count))
    shift = std::min({shift, 32, 31 + m.shift});
    p.multiplier.multiplier = static_cast<int32_t>((static_cast<int64_t>(m.multiplier) << shift) / p.count);
    p.multiplier.shift = m.shift - shift;
  }
  // TFLite shifts the int32 sum left by the remaining positive shift; refuse where that
  // would overflow (TFLite's result there is undefined).
  if (p.multiplier.left_shift() > 0 &&
      (span * p.count) > (std::numeric_limits<int32_t>::max() >> p.multiplier.left_shift()))
    fail(op, "input_scale / output_scale (" + interp::format_double(si / so) + ") is so large that TFLite's rescaled " +
                 "sum of " + std::to_string(p.count) + " elements would overflow int32");
  return p;
}

OpDef qreduce_op(const std::string& op) {
  OpDef d;
  d.name = op;
  d.infer = [op](const std::vector<TensorType>& in, const json& attrs) {
    const QmeanParams p = qmean_params(op, in, attrs);
    std::vector<int64_t> shape = in[0].shape;
    for (size_t k = 0; k < shape.size(); ++k)
      if (p.reduced[k]) shape[k] = 1;
    return TensorType{p.dtype, shape};
  };
  d.build = [op](const std::string& fname, const std::vector<TensorType>& in, const TensorType& out,
                 const json& attrs) {
    const QmeanParams p = qmean_params(op, in, attrs);
    return reduce_sum_kernel(fname, in[0], p.reduced, out, [&](Expr sum) -> Expr {
      Expr shifted = sub(sum, ci(int64_t{p.input_zero_point} * p.count));
      return saturate_to(p.dtype, multiply_by_quantized_multiplier(shifted, p.multiplier), p.output_zero_point,
                         dtype_bounds(p.dtype));
    });
  };
  return d;
}

// ---- qsoftmax -----------------------------------------------------------------------
// TFLite's int8 SOFTMAX (reference_ops::Softmax, as TFLM runs it) over the last axis.
// The exp of each input difference to the row maximum comes from a 256-entry table
// (fixed_point.h: exactly TFLite's exp_on_negative_values of the scaled difference, 0
// where TFLite leaves the element out), which prepare_quantized adds as an input. The
// run-time part is TFLite's: the sum of the exps rescaled to 12 integer bits, its
// reciprocal (GetReciprocal: leading zeros, then gemmlowp's Newton-Raphson
// one_over_one_plus_x_for_x_in_0_1), and each output
// RoundingDivideByPOT(reciprocal * exp, num_bits_over_unit + 23) - 128.

const std::vector<std::string> kQsoftmaxAttrs = {"input_scale", "input_zero_point", "output_scale", "output_zero_point",
                                                 "beta", "dtype"};

// The output type: int8 (scale 1/256, zero point -128) or int16 (1/65536, -32768).
DataType qsoftmax_output(const json& attrs) {
  AttrReader r("qsoftmax", attrs, kQsoftmaxAttrs);
  return r.get_string("dtype", "int8", {"int8", "int16"}) == "int16" ? DataType::Int(16) : kI8;
}

void qsoftmax_check(const std::vector<TensorType>& in, const json& attrs) {
  const std::string op = "qsoftmax";
  AttrReader r(op, attrs, kQsoftmaxAttrs);
  // The table is int32 and the data int8, so the inputs are checked one by one.
  if (in.empty() || in.size() > 2)
    fail(op, "expected 1 or 2 inputs (data, [exp_table]), got " + std::to_string(in.size()));
  check_inputs(op, {in[0]}, 1, {"data"}, Dtypes::kNumeric);
  check_dtype(op, in, 0, "data", kI8);
  check_rank(op, in, 0, "data", 2);
  double scale = read_scale(op, r, "input_scale");
  read_zero_point(r, "input_zero_point");  // cancels in x - max
  double beta = r.get_float("beta", 1.0);
  if (!(beta > 0) || !std::isfinite(beta)) r.bad("beta", "a finite number > 0");
  fixed_point::softmax_params(scale, beta, op);  // refuses what TFLite cannot scale
  if (qsoftmax_output(attrs) == kI8) {
    if (r.has("output_scale") && r.get_float("output_scale", 0) != 1.0 / 256)
      r.bad("output_scale", "1/256 (0.00390625): qsoftmax produces that scale");
    if (r.has("output_zero_point") && r.get_int("output_zero_point", 0) != -128)
      r.bad("output_zero_point", "-128: qsoftmax produces that zero point");
  } else {
    // TFLM accepts an int16 output scale within 0.1% of 1/65536.
    if (r.has("output_scale") && std::abs(r.get_float("output_scale", 0) - 1.0 / 65536) > 0.001 / 65536)
      r.bad("output_scale", "1/65536 (within 0.1%): qsoftmax with dtype int16 produces that scale");
    if (r.has("output_zero_point") && r.get_int("output_zero_point", 0) != -32768)
      r.bad("output_zero_point", "-32768: qsoftmax with dtype int16 produces that zero point");
  }
  if (in[0].shape[1] > 4096) fail(op, "rows longer than 4096 elements could overflow the int32 sum of exps");
  if (in.size() == 2) {
    check_dtype(op, in, 1, "exp_table", kI32);
    if (in[1].shape != std::vector<int64_t>{256})
      fail(op, "input 'exp_table' has shape " + shape_str(in[1].shape) + "; (256) is required");
  }
}

// TFLite's int16 SOFTMAX (reference_ops::SoftmaxInt16, as TFLM prepares it): every
// difference to the row maximum is scaled so that [-65535, 0] covers [-10, 0]
// (QuantizeMultiplier of input_scale * beta / (10 / 65535)), recentred by 32767 and
// looked up with interpolation in a 513-entry exp table; the reciprocal of the sum
// (Q16.15) comes from a second table of 1 / (1 + x) after normalising the sum by its
// leading zeros; each output is (exp * reciprocal) >> (31 - leading zeros), rounded,
// clamped to [0, 32767]. prepare_quantized adds both int16 tables (exp_lut,
// recip_lut; fixed_point::softmax_int16_lut).

struct Softmax16Params {
  QuantMultiplier multiplier;
};

Softmax16Params qsoftmax16_check(const std::vector<TensorType>& in, const json& attrs) {
  const std::string op = "qsoftmax";
  AttrReader r(op, attrs, kQsoftmaxAttrs);
  if (in.size() != 1 && in.size() != 3)
    fail(op, "int16 data takes 1 or 3 inputs (data, [exp_lut, recip_lut]), got " + std::to_string(in.size()));
  check_inputs(op, {in[0]}, 1, {"data"}, Dtypes::kNumeric);
  check_rank(op, in, 0, "data", 2);
  double scale = read_scale(op, r, "input_scale");
  read_zero_point(r, "input_zero_point", DataType::Int(16));  // cancels in x - max
  double beta = r.get_float("beta", 1.0);
  if (!(beta > 0) || !std::isfinite(beta)) r.bad("beta", "a finite number > 0");
  if (r.has("dtype") && r.get_string("dtype", "int16", {"int8", "int16"}) != "int16")
    r.bad("dtype", "\"int16\": int16 data gives int16 probabilities");
  if (r.has("output_scale") && std::abs(r.get_float("output_scale", 0) - 1.0 / 32768) > 0.001 / 32768)
    r.bad("output_scale", "1/32768 (within 0.1%): qsoftmax of int16 data produces that scale");
  if (r.has("output_zero_point") && r.get_int("output_zero_point", 0) != 0)
    r.bad("output_zero_point", "0: qsoftmax of int16 data produces that zero point");
  if (in[0].shape.back() > 65536) fail(op, "rows longer than 65536 elements could overflow the int32 sum of exps");
  for (size_t i = 1; i < in.size(); ++i) {
    const char* name = i == 1 ? "exp_lut" : "recip_lut";
    check_dtype(op, in, i, name, DataType::Int(16));
    if (in[i].shape != std::vector<int64_t>{513})
      fail(op, std::string("input '") + name + "' has shape " + shape_str(in[i].shape) + "; (513) is required");
  }
  Softmax16Params p;
  p.multiplier = quantize_multiplier(scale * beta / (10.0 / 65535.0), op, "input_scale * beta / (10 / 65535)");
  // TFLite shifts the difference (at most 65535 in magnitude) left by a positive shift.
  if (p.multiplier.left_shift() > 15)
    fail(op, "input_scale * beta (" + interp::format_double(scale * beta) +
                 ") is so large that TFLite's scaled input difference would overflow int32");
  return p;
}

// TFLite's LUT lookup with interpolation for an int16 value: 512 base entries, the
// 7 low bits interpolating to the next one.
Expr lut_lookup(const Buffer& lut, Expr value) {
  Expr index = add(call("shift_right", {value, ci(7)}), ci(256));
  Expr offset = call("bitwise_and", {value, ci(127)});
  Expr base = to_i32(load(lut, {index}));
  Expr slope = to_i32(Cast(DataType::Int(16), sub(to_i32(load(lut, {add(index, ci(1))})), base)));
  Expr delta = call("shift_right", {add(mul(slope, offset), ci(64)), ci(7)});
  return to_i32(Cast(DataType::Int(16), add(base, delta)));
}

PrimFunc qsoftmax16_build(const std::string& fname, const std::vector<TensorType>& in, const TensorType& out,
                          const json& attrs) {
  const Softmax16Params p = qsoftmax16_check(in, attrs);
  if (in.size() != 3)
    fail("qsoftmax", "inputs 'exp_lut' and 'recip_lut' are missing: the graph rewrite prepare_quantized adds them");
  const DataType i16 = DataType::Int(16), i64 = DataType::Int(64);
  const int64_t rows = in[0].shape[0], k = in[0].shape[1];
  FuncBuilder fb;
  Buffer data = fb.param("data", {rows, k}, i16);
  Buffer exp_lut = fb.param("exp_lut", {513}, i16), recip_lut = fb.param("recip_lut", {513}, i16);
  Buffer o = fb.param("out", {rows, k}, i16);
  Buffer mx = scratch("max_val", {1}, kI32), sum = scratch("sum_val", {1}, kI32);
  LoopNest outer;
  Expr row = outer.axis("n", rows);
  auto clamp16 = [](Expr v) { return min_(max_(v, ci(-32768)), ci(32767)); };
  LoopNest l0, l1, l2;
  Expr c0 = l0.axis("k0", k), c1 = l1.axis("k1", k), c2 = l2.axis("k2", k);
  Stmt max_loop = l0.wrap(store(mx, max_(load(mx, {ci(0)}), to_i32(load(data, {row, c0}))), {ci(0)}));
  Var row_max = MakeVar("row_max", kI32);
  // The exps go to the output first (TFLite caches them there too), and into the sum.
  Expr scaled = multiply_by_quantized_multiplier(sub(to_i32(load(data, {row, c1})), row_max), p.multiplier);
  Var e = MakeVar("e", kI32);
  Stmt exp_loop = l1.wrap(LetStmt(e, lut_lookup(exp_lut, clamp16(add(scaled, ci(32767)))),
                                  SeqStmt({store(o, Cast(i16, e), {row, c1}),
                                           store(sum, add(load(sum, {ci(0)}), e), {ci(0)})})));
  // Leading zeros of a sum in [2^14, 2^31): 1 plus the powers 2^30 .. 2^15 it is below.
  Var total = MakeVar("total", kI32), headroom = MakeVar("headroom_plus_one", kI32);
  Expr clz = ci(1);
  for (int b = 30; b >= 15; --b) clz = add(clz, Select(lt(total, ci(int64_t{1} << b)), ci(1), ci(0)));
  Expr shifted = Cast(kI32, Call(i64, "shift_right",
                                 {Binary(ExprKind::Add, Call(i64, "shift_left", {Cast(i64, total), Cast(i64, sub(headroom, ci(1)))}),
                                         IntImm(i64, 1 << 13)),
                                  IntImm(i64, 14)}));
  Var recip = MakeVar("reciprocal", kI32), right = MakeVar("right_shift", kI32);
  Expr product = Binary(ExprKind::Add, Binary(ExprKind::Mul, Cast(i64, to_i32(load(o, {row, c2}))), Cast(i64, recip)),
                        Cast(i64, call("shift_left", {ci(1), sub(right, ci(1))})));
  Expr result = Cast(kI32, Call(i64, "shift_right", {product, Cast(i64, right)}));
  Stmt out_loop = l2.wrap(store(o, Cast(i16, min_(max_(result, ci(0)), ci(32767))), {row, c2}));
  out_loop = LetStmt(right, sub(ci(31), headroom), out_loop);
  out_loop = LetStmt(recip, lut_lookup(recip_lut, clamp16(sub(shifted, ci((1 << 15) + (1 << 16))))), out_loop);
  out_loop = LetStmt(headroom, clz, out_loop);
  out_loop = LetStmt(total, load(sum, {ci(0)}), out_loop);
  Stmt body = SeqStmt({store(mx, ci(-32768), {ci(0)}), max_loop,
                       LetStmt(row_max, load(mx, {ci(0)}), SeqStmt({store(sum, ci(0), {ci(0)}), exp_loop, out_loop}))});
  return fb.finish(fname, Allocate(mx, "global", Allocate(sum, "global", outer.wrap(body))));
}

TensorType qsoftmax_infer(const std::vector<TensorType>& in, const json& attrs) {
  if (!in.empty() && in[0].dtype == DataType::Int(16)) {
    qsoftmax16_check(in, attrs);
    return in[0];
  }
  qsoftmax_check(in, attrs);
  return TensorType{qsoftmax_output(attrs), in[0].shape};
}

// The reciprocal of the sum of exps (12 integer bits, at least 2^19: the maximum's exp
// is 1) as TFLite's GetReciprocal computes it: `body(reciprocal, num_bits_over_unit)`
// runs inside the Let statements that define them.
Stmt with_reciprocal(Expr sum, const std::function<Stmt(Expr, Expr)>& body) {
  const DataType u32 = DataType::UInt(32);
  // Leading zeros of a sum in [2^19, 2^31): 1 plus the powers 2^30 .. 2^20 it is below.
  Expr clz = ci(1);
  for (int k = 30; k >= 20; --k) clz = add(clz, Select(lt(sum, ci(int64_t{1} << k)), ci(1), ci(0)));
  Var headroom = MakeVar("headroom", kI32);
  // (sum << headroom) - 1.0, in [0, 1).
  Expr minus_one = Cast(kI32, Binary(ExprKind::Sub, Call(u32, "shift_left", {Cast(u32, sum), Cast(u32, headroom)}),
                                     IntImm(u32, int64_t{1} << 31)));
  Var bits = MakeVar("num_bits_over_unit", kI32);
  Stmt s = with_one_over_one_plus_x(minus_one, [&](Expr recip) { return LetStmt(bits, sub(ci(12), headroom), body(recip, bits)); });
  return LetStmt(headroom, clz, s);
}

PrimFunc qsoftmax_build(const std::string& fname, const std::vector<TensorType>& in, const TensorType& out,
                        const json& attrs) {
  if (in[0].dtype == DataType::Int(16)) return qsoftmax16_build(fname, in, out, attrs);
  qsoftmax_check(in, attrs);
  if (in.size() != 2)
    fail("qsoftmax", "input 'exp_table' is missing: the graph rewrite prepare_quantized adds it");
  const int64_t rows = in[0].shape[0], k = in[0].shape[1];
  FuncBuilder fb;
  Buffer data = fb.param("data", in[0].shape, kI8);
  Buffer table = fb.param("exp_table", {256}, kI32);
  Buffer o = fb.param("out", out.shape, out.dtype);
  Buffer mx = scratch("max_val", {1}, kI32), sum = scratch("sum_val", {1}, kI32);
  // The output has 8 or 16 bits: RoundingDivideByPOT by bits + 31 - width, then the
  // type's minimum added (TFLite's reference Softmax<int8, OutputT>).
  const int width = out.dtype.bits();
  const ActBounds range = dtype_bounds(out.dtype);
  LoopNest outer;
  Expr row = outer.axis("n", rows);
  Var row_max = MakeVar("row_max", kI32);
  auto pass = [&](const std::string& name, const std::function<Stmt(Expr x, const std::vector<Expr>&)>& body) {
    LoopNest l;
    std::vector<Expr> idx = {row, l.axis(name, k)};
    return l.wrap(body(to_i32(load(data, idx)), idx));
  };
  Stmt max_loop = pass("k0", [&](Expr x, const std::vector<Expr>&) {
    return store(mx, max_(load(mx, {ci(0)}), x), {ci(0)});
  });
  // Rescale<12> of each exp (0 integer bits) is a rounding divide by 2^12.
  Stmt sum_loop = pass("k1", [&](Expr x, const std::vector<Expr>&) {
    Expr e = rounding_divide_by_pot(load(table, {sub(row_max, x)}), ci(12));
    return store(sum, add(load(sum, {ci(0)}), e), {ci(0)});
  });
  Stmt out_loop = with_reciprocal(load(sum, {ci(0)}), [&](Expr recip, Expr bits) {
    // TFLite's exponent exceeds 31 only for sums of 2^28 and more (rows of 512 and more
    // elements near the maximum), where its shift is undefined; 31 keeps ours defined.
    Expr exponent = min_(add(bits, ci(31 - width)), ci(31));
    return pass("k2", [&](Expr x, const std::vector<Expr>& idx) {
      Expr prod = saturating_rounding_doubling_high_mul(recip, load(table, {sub(row_max, x)}), true);
      Expr q = sub(rounding_divide_by_pot(prod, exponent), ci(-int64_t{range.lo}));
      return store(o, Cast(out.dtype, min_(max_(q, ci(range.lo)), ci(range.hi))), idx);
    });
  });
  Stmt after_max = SeqStmt({store(sum, ci(0), {ci(0)}), sum_loop, out_loop});
  Stmt body = SeqStmt({store(mx, ci(-128), {ci(0)}), max_loop, LetStmt(row_max, load(mx, {ci(0)}), after_max)});
  return fb.finish(fname, Allocate(mx, "global", Allocate(sum, "global", outer.wrap(body))));
}

// ---- qlogistic, qtanh ---------------------------------------------------------------
// TFLite's int8 LOGISTIC and TANH (reference_integer_ops, as TFLM prepares them). Their
// output depends only on the int8 input, so prepare_quantized computes all 256 outputs
// at compile time with TFLite's fixed-point arithmetic (fixed_point.h) and the kernel
// is one table lookup: out = table[x + 128].

const std::vector<std::string> kQactAttrs = {"input_scale", "input_zero_point", "output_scale", "output_zero_point"};

void qact_check(const std::string& op, const std::vector<TensorType>& in, const json& attrs) {
  AttrReader r(op, attrs, kQactAttrs);
  if (in.empty() || in.size() > 2) fail(op, "expected 1 or 2 inputs (data, [table]), got " + std::to_string(in.size()));
  check_inputs(op, {in[0]}, 1, {"data"}, Dtypes::kNumeric);
  check_dtype(op, in, 0, "data", kI8);
  double scale = read_scale(op, r, "input_scale");
  int32_t zp = read_zero_point(r, "input_zero_point");
  fixed_point::activation_table(op == "qtanh", scale, zp, op);  // refuses a scale TFLite cannot handle
  const bool tanh = op == "qtanh";
  const double out_scale = tanh ? 1.0 / 128 : 1.0 / 256;
  const int64_t out_zp = tanh ? 0 : -128;
  if (r.has("output_scale") && r.get_float("output_scale", 0) != out_scale)
    r.bad("output_scale", std::string(tanh ? "1/128 (0.0078125)" : "1/256 (0.00390625)") + ": " + op +
                              " produces that scale");
  if (r.has("output_zero_point") && r.get_int("output_zero_point", 0) != out_zp)
    r.bad("output_zero_point", std::to_string(out_zp) + ": " + op + " produces that zero point");
  if (in.size() == 2) {
    check_dtype(op, in, 1, "table", kI8);
    if (in[1].shape != std::vector<int64_t>{256})
      fail(op, "input 'table' has shape " + shape_str(in[1].shape) + "; (256) is required");
  }
}

OpDef qact_op(const std::string& op) {
  OpDef d;
  d.name = op;
  d.sharing = OutputSharing::kElementwise;
  d.infer =
      same_type_as_input([op](const std::vector<TensorType>& in, const json& attrs) { qact_check(op, in, attrs); });
  d.build = [op](const std::string& fname, const std::vector<TensorType>& in, const TensorType& out,
                 const json& attrs) {
    qact_check(op, in, attrs);
    if (in.size() != 2) fail(op, "input 'table' is missing: the graph rewrite prepare_quantized adds it");
    FuncBuilder fb;
    Buffer data = fb.param("data", in[0].shape, kI8);
    Buffer table = fb.param("table", {256}, kI8);
    Buffer o = fb.param("out", out.shape, kI8);
    LoopNest nest;
    std::vector<Expr> idx = nest.axes(out.shape);
    return fb.finish(fname, nest.wrap(store(o, load(table, {add(to_i32(load(data, idx)), ci(128))}), idx)));
  };
  return d;
}

// ---- qconcat ------------------------------------------------------------------------

struct QconcatParams {
  int64_t axis;
  std::vector<double> scales;
  std::vector<int64_t> zero_points;
  double output_scale;
  int32_t output_zero_point;
  std::vector<std::optional<QuantMultiplier>> multipliers;  // none: a plain copy
};

QconcatParams qconcat_params(const std::vector<TensorType>& in, const json& attrs) {
  const std::string op = "qconcat";
  AttrReader r(op, attrs, {"axis", "input_scales", "input_zero_points", "output_scale", "output_zero_point"});
  if (in.size() < 2) fail(op, "expected at least 2 inputs, got " + std::to_string(in.size()));
  std::vector<std::string> names;
  for (size_t i = 0; i < in.size(); ++i) names.push_back("input" + std::to_string(i));
  check_int8_inputs(op, in, in.size(), names);
  QconcatParams p;
  p.axis = normalize_axis(op, "axis", r.get_int("axis", 0), static_cast<int64_t>(in[0].shape.size()));
  const json* scales = r.raw("input_scales");
  std::string want = "a list of " + std::to_string(in.size()) + " numbers > 0 (one per input)";
  if (!scales) fail(op, "missing required attribute 'input_scales' (" + want + ")");
  if (!scales->is_array() || scales->size() != in.size()) r.bad("input_scales", want);
  for (const auto& s : *scales) {
    if (!s.is_number() || !std::isfinite(s.get<double>()) || !(s.get<double>() > 0)) r.bad("input_scales", want);
    p.scales.push_back(s.get<double>());
  }
  p.zero_points = r.get_ints("input_zero_points", in.size(), -128, "integers in [-128, 127]",
                             std::vector<int64_t>(in.size(), 0));
  for (int64_t z : p.zero_points)
    if (z > 127) r.bad("input_zero_points", "a list of " + std::to_string(in.size()) + " integers in [-128, 127]");
  p.output_scale = read_scale(op, r, "output_scale");
  p.output_zero_point = read_zero_point(r, "output_zero_point");
  for (size_t i = 0; i < in.size(); ++i) {
    if (p.scales[i] == p.output_scale && p.zero_points[i] == p.output_zero_point) {
      p.multipliers.emplace_back();
    } else {
      p.multipliers.push_back(quantize_multiplier(p.scales[i] / p.output_scale, op,
                                                  "input_scales[" + std::to_string(i) + "] / output_scale"));
    }
  }
  return p;
}

TensorType qconcat_infer(const std::vector<TensorType>& in, const json& attrs) {
  QconcatParams p = qconcat_params(in, attrs);
  std::vector<int64_t> out = in[0].shape;
  for (size_t i = 1; i < in.size(); ++i) {
    const auto& s = in[i].shape;
    bool ok = s.size() == out.size();
    for (size_t k = 0; ok && k < s.size(); ++k) ok = static_cast<int64_t>(k) == p.axis || s[k] == out[k];
    if (!ok)
      fail("qconcat", "input " + std::to_string(i) + " has shape " + shape_str(s) + ", which does not match input 0 " +
                          shape_str(in[0].shape) + " outside axis " + std::to_string(p.axis));
    out[p.axis] += s[p.axis];
  }
  return TensorType{kI8, out};
}

PrimFunc qconcat_build(const std::string& fname, const std::vector<TensorType>& in, const TensorType& out,
                       const json& attrs) {
  QconcatParams p = qconcat_params(in, attrs);
  FuncBuilder fb;
  std::vector<Buffer> bufs;
  for (size_t i = 0; i < in.size(); ++i) bufs.push_back(fb.param("input" + std::to_string(i), in[i].shape, kI8));
  Buffer o = fb.param("out", out.shape, kI8);
  std::vector<Stmt> copies;
  int64_t offset = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    LoopNest nest;
    std::vector<Expr> idx = nest.axes(in[i].shape, "i", "_" + std::to_string(i));
    std::vector<Expr> oidx = idx;
    oidx[p.axis] = add(idx[p.axis], ci(offset));
    Expr x = load(bufs[i], idx);
    if (const auto& m = p.multipliers[i])
      x = saturate_int8(multiply_by_quantized_multiplier(sub(to_i32(x), ci(p.zero_points[i])), *m), p.output_zero_point,
                        ActBounds{});
    copies.push_back(nest.wrap(store(o, x, oidx)));
    offset += in[i].shape[p.axis];
  }
  return fb.finish(fname, SeqStmt(copies));
}

// ---- quantize / dequantize ------------------------------------------------------------

struct Affine {
  double scale;
  int32_t zero_point;
  DataType quantized;  // int8 or int16
};

// quantize: float32 data to int8 (default) or int16 ("dtype"); dequantize: int8, int16
// or uint8 data to float32.
Affine affine_params(const std::string& op, const std::vector<TensorType>& in, const json& attrs, bool quantize) {
  AttrReader r(op, attrs, quantize ? std::vector<std::string>{"scale", "zero_point", "dtype"}
                                   : std::vector<std::string>{"scale", "zero_point"});
  check_inputs(op, in, 1, {"data"}, Dtypes::kNumeric);
  DataType q = kI8;
  if (quantize) {
    check_dtype(op, in, 0, "data", DataType::Float(32));
    if (r.get_string("dtype", "int8", {"int8", "int16"}) == "int16") q = DataType::Int(16);
  } else {
    if (in[0].dtype == DataType::Int(16) || in[0].dtype == DataType::UInt(8)) q = in[0].dtype;
    check_dtype(op, in, 0, "data", q);
  }
  Affine a{read_scale(op, r, "scale"), read_zero_point(r, "zero_point", q), q};
  // The scale is applied in float32.
  if (!(static_cast<float>(a.scale) > 0)) r.bad("scale", "a number > 0 that float32 can represent");
  return a;
}

OpDef affine_op(const std::string& name, bool quantize) {
  OpDef d;
  d.name = name;
  d.infer = [=](const std::vector<TensorType>& in, const json& attrs) {
    Affine a = affine_params(name, in, attrs, quantize);
    return TensorType{quantize ? a.quantized : DataType::Float(32), in[0].shape};
  };
  d.build = [=](const std::string& fname, const std::vector<TensorType>& in, const TensorType& out, const json& attrs) {
    Affine a = affine_params(name, in, attrs, quantize);
    FuncBuilder fb;
    Buffer data = fb.param("data", in[0].shape, in[0].dtype);
    Buffer o = fb.param("out", out.shape, out.dtype);
    LoopNest nest;
    std::vector<Expr> idx = nest.axes(out.shape);
    Expr x = load(data, idx), y;
    if (quantize) {
      // Saturate in float before the conversion (a NaN compares false and becomes the minimum).
      const ActBounds range = dtype_bounds(a.quantized);
      Expr v = add(call("round", {fdiv(x, cf(a.scale))}), cf(a.zero_point));
      y = Cast(a.quantized, min_(max_(v, cf(range.lo)), cf(range.hi)));
    } else {
      y = mul(Cast(DataType::Float(32), sub(to_i32(x), ci(a.zero_point))), cf(a.scale));
    }
    return fb.finish(fname, nest.wrap(store(o, y, idx)));
  };
  return d;
}

// ---- requantize -------------------------------------------------------------------------
// TFLite's QUANTIZE between integer types (reference_ops::Requantize, as TFLM prepares
// it): int8, int16, int32 or uint8 data to int8, int16, int32 or uint8 with
// out = clamp(MBQM(x - input_zero_point, input_scale / output_scale) + output_zero_point)
// to the output type's range; the ratio is QuantizeMultiplier's of the double quotient
// of the float32 scales.

const std::vector<std::string> kRequantizeAttrs = {"input_scale", "input_zero_point", "output_scale",
                                                   "output_zero_point", "dtype"};

struct RequantizeParams {
  DataType out;
  int32_t input_zero_point, output_zero_point;
  QuantMultiplier multiplier;
};

RequantizeParams requantize_params(const std::vector<TensorType>& in, const json& attrs) {
  const std::string op = "requantize";
  AttrReader r(op, attrs, kRequantizeAttrs);
  check_inputs(op, in, 1, {"data"}, Dtypes::kNumeric);
  const DataType t = in[0].dtype;
  if (t != kI8 && t != DataType::Int(16) && t != kI32 && t != DataType::UInt(8))
    fail(op, "input 'data' has type " + t.str() + "; int8, int16, int32 or uint8 is required");
  RequantizeParams p;
  p.out = *DataType::parse(r.get_string("dtype", "int8", {"int8", "int16", "int32", "uint8"}));
  double si = read_scale(op, r, "input_scale"), so = read_scale(op, r, "output_scale");
  p.input_zero_point = read_zero_point(r, "input_zero_point", t);
  p.output_zero_point = read_zero_point(r, "output_zero_point", p.out);
  p.multiplier = quantize_multiplier(si / so, op, "input_scale / output_scale");
  return p;
}

PrimFunc requantize_build(const std::string& fname, const std::vector<TensorType>& in, const TensorType& out,
                          const json& attrs) {
  const RequantizeParams p = requantize_params(in, attrs);
  FuncBuilder fb;
  Buffer data = fb.param("data", in[0].shape, in[0].dtype);
  Buffer o = fb.param("out", out.shape, out.dtype);
  LoopNest nest;
  std::vector<Expr> idx = nest.axes(out.shape);
  Expr v = sub(to_i32(load(data, idx)), ci(p.input_zero_point));
  Expr y = multiply_by_quantized_multiplier(v, p.multiplier);
  return fb.finish(fname, nest.wrap(store(o, saturate_to(p.out, y, p.output_zero_point, dtype_bounds(p.out)), idx)));
}

// ---- qleaky_relu ------------------------------------------------------------------------
// TFLite's int8 and int16 LEAKY_RELU (reference_ops::QuantizeLeakyRelu, as TFLM prepares
// it): v = x - input_zero_point, then output_zero_point + MBQM(v, identity) for v >= 0
// and output_zero_point + MBQM(v, alpha) below, clamped to the type. TFLM computes both
// real multipliers in float32 (input_scale * alpha / output_scale and input_scale /
// output_scale); a negative alpha gives a negative multiplier, as TFLite's
// QuantizeMultiplier does, and alpha 0 a multiplier of 0.

const std::vector<std::string> kLeakyAttrs = {"input_scale", "input_zero_point", "output_scale", "output_zero_point",
                                              "alpha"};

struct LeakyParams {
  DataType dtype;
  int32_t input_zero_point, output_zero_point;
  QuantMultiplier identity, alpha;
};

// TFLite's QuantizeMultiplier for a multiplier of either sign (0 gives 0). A negative
// mantissa that rounds to -2^31 stays there (TFLite moves only +2^31 to the next shift).
QuantMultiplier signed_multiplier(double m, const std::string& op, const std::string& what) {
  if (m >= 0) return m == 0 ? QuantMultiplier{0, 0} : quantize_multiplier(m, op, what);
  quantize_multiplier(-m, op, what);  // the same range checks
  int shift = 0;
  const double q = std::frexp(m, &shift);
  const int64_t fixed = static_cast<int64_t>(std::round(q * static_cast<double>(int64_t{1} << 31)));
  if (shift < -31) return QuantMultiplier{0, 0};
  return QuantMultiplier{static_cast<int32_t>(fixed), shift};
}

LeakyParams leaky_params(const std::vector<TensorType>& in, const json& attrs) {
  const std::string op = "qleaky_relu";
  AttrReader r(op, attrs, kLeakyAttrs);
  check_inputs(op, in, 1, {"data"}, Dtypes::kNumeric);
  LeakyParams p;
  p.dtype = in[0].dtype == DataType::Int(16) ? in[0].dtype : kI8;
  check_dtype(op, in, 0, "data", p.dtype);
  const float si = static_cast<float>(read_scale(op, r, "input_scale"));
  const float so = static_cast<float>(read_scale(op, r, "output_scale"));
  if (!r.has("alpha")) fail(op, "missing required attribute 'alpha' (a number)");
  const double alpha = r.get_float("alpha", 0);
  if (!std::isfinite(alpha)) r.bad("alpha", "a finite number");
  p.input_zero_point = read_zero_point(r, "input_zero_point", p.dtype);
  p.output_zero_point = read_zero_point(r, "output_zero_point", p.dtype);
  p.identity = quantize_multiplier(static_cast<double>(si / so), op, "input_scale / output_scale");
  p.alpha = signed_multiplier(static_cast<double>(si * static_cast<float>(alpha) / so), op,
                              "input_scale * alpha / output_scale");
  return p;
}

// MultiplyByQuantizedMultiplier with a multiplier that may be negative (the shared
// helper's one-step form needs M >= 0).
Expr multiply_signed(Expr x, const QuantMultiplier& q) {
  if (q.multiplier >= 0) return multiply_by_quantized_multiplier(std::move(x), q);
  if (q.left_shift() > 0) x = mul(x, ci(int64_t{1} << q.left_shift()));
  Expr high = saturating_rounding_doubling_high_mul(std::move(x), ci(q.multiplier));
  return q.right_shift() > 0 ? rounding_divide_by_pot(high, ci(q.right_shift())) : high;
}

PrimFunc leaky_build(const std::string& fname, const std::vector<TensorType>& in, const TensorType& out,
                     const json& attrs) {
  const LeakyParams p = leaky_params(in, attrs);
  FuncBuilder fb;
  Buffer data = fb.param("data", in[0].shape, p.dtype);
  Buffer o = fb.param("out", out.shape, p.dtype);
  LoopNest nest;
  std::vector<Expr> idx = nest.axes(out.shape);
  Var v = MakeVar("v", kI32);
  Expr y = Select(ge(v, ci(0)), multiply_by_quantized_multiplier(v, p.identity), multiply_signed(v, p.alpha));
  Stmt body = LetStmt(v, sub(to_i32(load(data, idx)), ci(p.input_zero_point)),
                      store(o, saturate_to(p.dtype, y, p.output_zero_point, dtype_bounds(p.dtype)), idx));
  return fb.finish(fname, nest.wrap(body));
}

}  // namespace

void register_quantized_ops(std::vector<OpDef>& ops) {
  ops.push_back(qbinary_op("qadd"));
  ops.push_back(qbinary_op("qsub"));
  ops.push_back(qbinary_op("qmul"));
  ops.push_back(OpDef{"qavg_pool2d", qpool_infer, qpool_build});
  ops.push_back(OpDef{"qglobal_avg_pool2d", qgap_infer, qgap_build});
  ops.push_back(qreduce_op("qmean"));
  ops.push_back(qreduce_op("qsum"));
  ops.push_back(OpDef{"qsoftmax", qsoftmax_infer, qsoftmax_build});
  ops.push_back(qact_op("qlogistic"));
  ops.push_back(qact_op("qtanh"));
  ops.push_back(OpDef{"qconcat", qconcat_infer, qconcat_build});
  ops.push_back(affine_op("quantize", true));
  ops.push_back(affine_op("dequantize", false));
  ops.push_back(OpDef{"requantize",
                      [](const std::vector<TensorType>& in, const json& attrs) {
                        return TensorType{requantize_params(in, attrs).out, in[0].shape};
                      },
                      requantize_build, OutputSharing::kElementwise});
  ops.push_back(OpDef{"qleaky_relu",
                      same_type_as_input(leaky_params), leaky_build, OutputSharing::kElementwise});
}

}  // namespace ops

}  // namespace mtir
