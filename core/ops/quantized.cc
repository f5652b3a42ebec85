// int8 quantized operators other than qconv2d/qdense: qadd, qavg_pool2d,
// qglobal_avg_pool2d, qsoftmax, qconcat, quantize and dequantize. The arithmetic is
// integer only (fixed-point multipliers computed here at compile time, see
// quant_util.h); docs/quantization.md states each op's exact rounding.
#include <cmath>
#include <optional>

#include "ops/quant_util.h"

namespace mtir {
namespace ops {
namespace {

using json = nlohmann::json;

const DataType kI8 = DataType::Int(8);
const DataType kI32 = DataType::Int(32);

Expr to_i32(Expr e) { return Cast(kI32, std::move(e)); }

// Every input int8, all dimensions positive.
void check_int8_inputs(const std::string& op, const std::vector<TensorType>& in, size_t min_count,
                       const std::vector<std::string>& names) {
  check_inputs(op, in, min_count, names, Dtypes::kNumeric);
  for (size_t i = 0; i < in.size(); ++i) check_dtype(op, in, i, names[i], kI8);
}

// A loop nest over every element of `shape`; returns the indices.
std::vector<Expr> all_axes(LoopNest& nest, const std::vector<int64_t>& shape, const std::string& suffix = "") {
  std::vector<Expr> idx;
  for (size_t k = 0; k < shape.size(); ++k) idx.push_back(nest.axis("i" + std::to_string(k) + suffix, shape[k]));
  return idx;
}

// ---- qadd ---------------------------------------------------------------------------
// TFLite's reference: both inputs are brought to a common scale with 20 bits of
// headroom, added, and the sum requantized to the output.

const std::vector<std::string> kQaddAttrs = {"a_scale",      "a_zero_point",      "b_scale",   "b_zero_point",
                                             "output_scale", "output_zero_point", "activation"};

struct QaddParams {
  int32_t za, zb, zo;
  QuantMultiplier ma, mb, mo;
  ActBounds bounds;
};

QaddParams qadd_params(const std::vector<TensorType>& in, const json& attrs) {
  const std::string op = "qadd";
  AttrReader r(op, attrs, kQaddAttrs);
  check_int8_inputs(op, in, 2, {"a", "b"});
  if (in[0].shape != in[1].shape)
    fail(op, "inputs 'a' " + shape_str(in[0].shape) + " and 'b' " + shape_str(in[1].shape) +
                 " must have the same shape (qadd does not broadcast)");
  double sa = read_scale(op, r, "a_scale"), sb = read_scale(op, r, "b_scale"), so = read_scale(op, r, "output_scale");
  QaddParams p;
  p.za = read_zero_point(r, "a_zero_point");
  p.zb = read_zero_point(r, "b_zero_point");
  p.zo = read_zero_point(r, "output_zero_point");
  p.bounds = activation_bounds(read_activation(r), so, p.zo);
  double twice_max = 2 * std::max(sa, sb);
  p.ma = quantize_multiplier(sa / twice_max, op, "a_scale / (2 * max(a_scale, b_scale))");
  p.mb = quantize_multiplier(sb / twice_max, op, "b_scale / (2 * max(a_scale, b_scale))");
  p.mo = quantize_multiplier(twice_max / (std::ldexp(1.0, 20) * so), op,
                             "2 * max(a_scale, b_scale) / (2^20 * output_scale)");
  return p;
}

TensorType qadd_infer(const std::vector<TensorType>& in, const json& attrs) {
  qadd_params(in, attrs);
  return in[0];
}

PrimFunc qadd_build(const std::string& fname, const std::vector<TensorType>& in, const TensorType& out,
                    const json& attrs) {
  QaddParams p = qadd_params(in, attrs);
  FuncBuilder fb;
  Buffer a = fb.param("a", in[0].shape, kI8), b = fb.param("b", in[1].shape, kI8);
  Buffer o = fb.param("out", out.shape, kI8);
  LoopNest nest;
  std::vector<Expr> idx = all_axes(nest, out.shape);
  auto side = [&](const Buffer& x, int32_t zero_point, const QuantMultiplier& m) {
    Expr shifted = Call(kI32, "shift_left", {sub(to_i32(load(x, idx)), ci(zero_point)), ci(20)});
    return requantize(shifted, m);
  };
  Expr sum = add(side(a, p.za, p.ma), side(b, p.zb, p.mb));
  return fb.finish(fname, nest.wrap(store(o, saturate_int8(requantize(sum, p.mo), p.zo, p.bounds), idx)));
}

// ---- qavg_pool2d / qglobal_avg_pool2d -------------------------------------------------

// sum / count rounded half away from zero (count > 0), with C's truncating division.
Expr rounded_div(Expr sum, Expr count) {
  Expr half = as_const_int(count) ? ci(*as_const_int(count) / 2) : floordiv(count, ci(2));
  Expr up = Binary(ExprKind::Div, add(sum, half), count);
  Expr down = Binary(ExprKind::Div, sub(sum, half), count);
  return Select(ge(sum, ci(0)), up, down);
}

struct QpoolParams {
  int64_t n, h, w, c, kh, kw, sh, sw, pt, pl, pb, pr, oh, ow;
};

QpoolParams qpool_params(const std::vector<TensorType>& in, const json& attrs) {
  const std::string op = "qavg_pool2d";
  AttrReader r(op, attrs, {"pool_size", "strides", "padding", "layout"});
  check_int8_inputs(op, in, 1, {"data"});
  r.get_string("layout", "NHWC", {"NHWC"});
  check_rank(op, in, 0, "data (NHWC)", 4);
  auto size = r.get_ints("pool_size", 2, 1, "positive integers", std::nullopt);
  auto strides = r.get_ints("strides", 2, 1, "positive integers", std::vector<int64_t>{1, 1});
  auto pad = r.get_ints("padding", 4, 0, "non-negative integers", std::vector<int64_t>{0, 0, 0, 0});
  const auto& d = in[0].shape;
  QpoolParams p{d[0], d[1], d[2], d[3], size[0], size[1], strides[0], strides[1], pad[0], pad[1], pad[2], pad[3], 0, 0};
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
  return TensorType{kI8, {p.n, p.oh, p.ow, p.c}};
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
  Buffer data = fb.param("data", in[0].shape, kI8);
  Buffer o = fb.param("out", out.shape, kI8);
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
  Stmt fin = store(o, Cast(kI8, rounded_div(load(acc, {ci(0)}), count)), {n, oh, ow, c});
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

PrimFunc qgap_build(const std::string& fname, const std::vector<TensorType>& in, const TensorType& out, const json&) {
  const auto& s = in[0].shape;
  FuncBuilder fb;
  Buffer data = fb.param("data", s, kI8);
  Buffer o = fb.param("out", out.shape, kI8);
  Buffer acc = scratch("acc", {1}, kI32);
  LoopNest outer, red;
  Expr n = outer.axis("n", s[0]), c = outer.axis("c", s[3]);
  Expr rh = red.axis("rh", s[1]), rw = red.axis("rw", s[2]);
  Stmt update = store(acc, add(load(acc, {ci(0)}), to_i32(load(data, {n, rh, rw, c}))), {ci(0)});
  Stmt fin = store(o, Cast(kI8, rounded_div(load(acc, {ci(0)}), ci(s[1] * s[2]))), {n, ci(0), ci(0), c});
  Stmt body = SeqStmt({store(acc, ci(0), {ci(0)}), red.wrap(update), fin});
  return fb.finish(fname, Allocate(acc, "global", outer.wrap(body)));
}

// ---- qsoftmax -----------------------------------------------------------------------
// Fixed point over the last axis with a 256-entry exp table (exp(-d * input_scale) in
// Q16, an input added by the prepare_quantized graph rewrite): out = table[max - x] / sum
// in Q8, minus 128.

void qsoftmax_check(const std::vector<TensorType>& in, const json& attrs) {
  const std::string op = "qsoftmax";
  AttrReader r(op, attrs, {"input_scale", "input_zero_point", "output_scale", "output_zero_point"});
  // The table is int32 and the data int8, so the inputs are checked one by one.
  if (in.empty() || in.size() > 2)
    fail(op, "expected 1 or 2 inputs (data, [exp_table]), got " + std::to_string(in.size()));
  check_inputs(op, {in[0]}, 1, {"data"}, Dtypes::kNumeric);
  check_dtype(op, in, 0, "data", kI8);
  check_rank(op, in, 0, "data", 2);
  read_scale(op, r, "input_scale");
  read_zero_point(r, "input_zero_point");  // cancels in max - x
  if (r.has("output_scale") && r.get_float("output_scale", 0) != 1.0 / 256)
    r.bad("output_scale", "1/256 (0.00390625): qsoftmax produces that scale");
  if (r.has("output_zero_point") && r.get_int("output_zero_point", 0) != -128)
    r.bad("output_zero_point", "-128: qsoftmax produces that zero point");
  if (in[0].shape[1] > 32767) fail(op, "rows longer than 32767 elements could overflow the int32 sum");
  if (in.size() == 2) {
    check_dtype(op, in, 1, "exp_table", kI32);
    if (in[1].shape != std::vector<int64_t>{256})
      fail(op, "input 'exp_table' has shape " + shape_str(in[1].shape) + "; (256) is required");
  }
}

TensorType qsoftmax_infer(const std::vector<TensorType>& in, const json& attrs) {
  qsoftmax_check(in, attrs);
  return in[0];
}

PrimFunc qsoftmax_build(const std::string& fname, const std::vector<TensorType>& in, const TensorType& out,
                        const json& attrs) {
  qsoftmax_check(in, attrs);
  if (in.size() != 2)
    fail("qsoftmax", "input 'exp_table' is missing: the graph rewrite prepare_quantized adds it");
  const int64_t rows = in[0].shape[0], k = in[0].shape[1];
  FuncBuilder fb;
  Buffer data = fb.param("data", in[0].shape, kI8);
  Buffer table = fb.param("exp_table", {256}, kI32);
  Buffer o = fb.param("out", out.shape, kI8);
  Buffer mx = scratch("max_val", {1}, kI32), sum = scratch("sum_val", {1}, kI32);
  LoopNest outer;
  Expr row = outer.axis("n", rows);
  Var row_max = MakeVar("row_max", kI32), row_sum = MakeVar("row_sum", kI32);
  auto pass = [&](const std::string& name, const std::function<Stmt(Expr x, const std::vector<Expr>&)>& body) {
    LoopNest l;
    std::vector<Expr> idx = {row, l.axis(name, k)};
    return l.wrap(body(to_i32(load(data, idx)), idx));
  };
  Stmt max_loop = pass("k0", [&](Expr x, const std::vector<Expr>&) {
    return store(mx, max_(load(mx, {ci(0)}), x), {ci(0)});
  });
  Stmt sum_loop = pass("k1", [&](Expr x, const std::vector<Expr>&) {
    return store(sum, add(load(sum, {ci(0)}), load(table, {sub(row_max, x)})), {ci(0)});
  });
  Stmt out_loop = pass("k2", [&](Expr x, const std::vector<Expr>& idx) {
    Expr num = add(mul(load(table, {sub(row_max, x)}), ci(512)), row_sum);
    Expr q = sub(Binary(ExprKind::Div, num, mul(row_sum, ci(2))), ci(128));
    return store(o, Cast(kI8, min_(max_(q, ci(-128)), ci(127))), idx);
  });
  Stmt after_max = SeqStmt({store(sum, ci(0), {ci(0)}), sum_loop, LetStmt(row_sum, load(sum, {ci(0)}), out_loop)});
  Stmt body = SeqStmt({store(mx, ci(-128), {ci(0)}), max_loop, LetStmt(row_max, load(mx, {ci(0)}), after_max)});
  return fb.finish(fname, Allocate(mx, "global", Allocate(sum, "global", outer.wrap(body))));
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
    std::vector<Expr> idx = all_axes(nest, in[i].shape, "_" + std::to_string(i));
    std::vector<Expr> oidx = idx;
    oidx[p.axis] = add(idx[p.axis], ci(offset));
    Expr x = load(bufs[i], idx);
    if (const auto& m = p.multipliers[i])
      x = saturate_int8(requantize(sub(to_i32(x), ci(p.zero_points[i])), *m), p.output_zero_point, ActBounds{});
    copies.push_back(nest.wrap(store(o, x, oidx)));
    offset += in[i].shape[p.axis];
  }
  return fb.finish(fname, SeqStmt(copies));
}

// ---- quantize / dequantize ------------------------------------------------------------

struct Affine {
  double scale;
  int32_t zero_point;
};

Affine affine_params(const std::string& op, const std::vector<TensorType>& in, const json& attrs, DataType input) {
  AttrReader r(op, attrs, {"scale", "zero_point"});
  check_inputs(op, in, 1, {"data"}, Dtypes::kNumeric);
  check_dtype(op, in, 0, "data", input);
  Affine a{read_scale(op, r, "scale"), read_zero_point(r, "zero_point")};
  // The scale is applied in float32.
  if (!(static_cast<float>(a.scale) > 0)) r.bad("scale", "a number > 0 that float32 can represent");
  return a;
}

OpDef affine_op(const std::string& name, bool quantize) {
  DataType from = quantize ? DataType::Float(32) : kI8, to = quantize ? kI8 : DataType::Float(32);
  OpDef d;
  d.name = name;
  d.infer = [=](const std::vector<TensorType>& in, const json& attrs) {
    affine_params(name, in, attrs, from);
    return TensorType{to, in[0].shape};
  };
  d.build = [=](const std::string& fname, const std::vector<TensorType>& in, const TensorType& out, const json& attrs) {
    Affine a = affine_params(name, in, attrs, from);
    FuncBuilder fb;
    Buffer data = fb.param("data", in[0].shape, from);
    Buffer o = fb.param("out", out.shape, to);
    LoopNest nest;
    std::vector<Expr> idx = all_axes(nest, out.shape);
    Expr x = load(data, idx), y;
    if (quantize) {
      // Saturate in float before the conversion (a NaN compares false and becomes -128).
      Expr v = add(call("round", {fdiv(x, cf(a.scale))}), cf(a.zero_point));
      y = Cast(kI8, min_(max_(v, cf(-128)), cf(127)));
    } else {
      y = mul(Cast(DataType::Float(32), sub(to_i32(x), ci(a.zero_point))), cf(a.scale));
    }
    return fb.finish(fname, nest.wrap(store(o, y, idx)));
  };
  return d;
}

}  // namespace

void register_quantized_ops(std::vector<OpDef>& ops) {
  ops.push_back(OpDef{"qadd", qadd_infer, qadd_build});
  ops.push_back(OpDef{"qavg_pool2d", qpool_infer, qpool_build});
  ops.push_back(OpDef{"qglobal_avg_pool2d", qgap_infer, qgap_build});
  ops.push_back(OpDef{"qsoftmax", qsoftmax_infer, qsoftmax_build});
  ops.push_back(OpDef{"qconcat", qconcat_infer, qconcat_build});
  ops.push_back(affine_op("quantize", true));
  ops.push_back(affine_op("dequantize", false));
}

}  // namespace ops

}  // namespace mtir
