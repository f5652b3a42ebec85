// ONNX's quantized operators, in ONNX's own arithmetic (the ONNX frontend maps
// QuantizeLinear, DequantizeLinear, QLinearConv, QLinearMatMul, ConvInteger,
// MatMulInteger and DynamicQuantizeLinear onto these; docs/onnx.md):
//
//   quantize_linear(data, scale, zero_point)      float32 -> int8/uint8 (the zero point's type)
//   dequantize_linear(data, scale, zero_point)    int8/uint8/int32 -> float32
//   qlinear_conv(data, weight, params)            NCHW/OIHW int8 or uint8 -> int32, int8 or uint8
//   qlinear_matmul(A, B, params)                  numpy matmul of int8 or uint8 -> int32, int8 or uint8
//   qlinear_add(a, b), qlinear_avg_pool(data)     folded QDQ Add, AveragePool / GlobalAveragePool
//   dynamic_quantize_linear(data)                 one of its three outputs ("output" attribute)
//
// scale and zero_point are 1-D: one value (per tensor) or one per element of `axis`.
// Rounding is ONNX's: half to even, then saturation. The requantization of qlinear_conv
// and qlinear_matmul is ONNX's reference (the float scale product m = x_scale * w_scale
// / y_scale in float32, then round half to even of acc * m), done exactly in integers:
// m is a float32, so m = M * 2^-s with a 24-bit M, and acc * M is exact in int64; the
// product is rounded half to even by the shift. That is not TFLite's fixed-point
// requantization (core/ops/quant_util.h), which rounds twice and can differ by one.
#include <algorithm>
#include <cmath>

#include "ops/op_util.h"
#include "ops/quant_util.h"

namespace mtir {
namespace ops {

namespace {

using json = nlohmann::json;

bool is_q8(DataType t) { return t == DataType::Int(8) || t == DataType::UInt(8); }
int32_t q_lo(DataType t) { return t.is_uint() ? 0 : -128; }
int32_t q_hi(DataType t) { return t.is_uint() ? 255 : 127; }

void need_dtype(const std::string& op, const TensorType& t, const std::string& name, bool ok, const std::string& want) {
  if (!ok) fail(op, "input '" + name + "' has type " + t.dtype.str() + "; " + want + " is required");
}

void need_vector(const std::string& op, const TensorType& t, const std::string& name) {
  if (t.shape.size() != 1) fail(op, "input '" + name + "' must be 1-D, got shape " + shape_str(t.shape));
}

// Round half to even of a float32 expression, from floor and selects (every backend
// has those): ties go to floor(v) + (floor(v) mod 2). |v| is first bounded to 2^24,
// where every float32 is an integer, so infinities saturate.
Expr round_half_even(Expr v) {
  v = min_(max_(v, cf(-16777216.0)), cf(16777216.0));
  Expr f = call("floor", {v});
  Expr d = sub(v, f);
  Expr parity = sub(f, mul(cf(2), call("floor", {mul(f, cf(0.5))})));
  return Select(Binary(ExprKind::GT, d, cf(0.5)), add(f, cf(1)),
                Select(lt(d, cf(0.5)), f, add(f, parity)));
}

// ---- quantize_linear / dequantize_linear --------------------------------------------

struct AffineAxis {
  int64_t axis = -1;  // -1: per tensor
};

AffineAxis affine_axis(const std::string& op, const std::vector<TensorType>& in, const json& attrs) {
  AttrReader r(op, attrs, {"axis"});
  if (in.size() != 3) fail(op, "expected 3 inputs (data, scale, zero_point), got " + std::to_string(in.size()));
  need_vector(op, in[1], "scale");
  need_vector(op, in[2], "zero_point");
  need_dtype(op, in[1], "scale", in[1].dtype == kF32, "float32");
  if (in[1].shape != in[2].shape)
    fail(op, "scale " + shape_str(in[1].shape) + " and zero_point " + shape_str(in[2].shape) + " differ in shape");
  AffineAxis a;
  int64_t rank = static_cast<int64_t>(in[0].shape.size());
  int64_t axis = r.get_int("axis", 1);  // read by per-tensor scales too, which ignore it (as ONNX does)
  if (in[1].shape[0] != 1) {
    if (rank > 0) axis = normalize_axis(op, "axis", axis, rank);
    if (rank == 0 || in[0].shape[axis] != in[1].shape[0])
      fail(op, "scale has " + std::to_string(in[1].shape[0]) + " values but the data " + shape_str(in[0].shape) +
                   " has " + (rank ? std::to_string(in[0].shape[axis]) : std::string("no")) + " along axis " +
                   std::to_string(axis));
    a.axis = axis;
  }
  return a;
}

TensorType quantize_infer(const std::vector<TensorType>& in, const json& attrs) {
  const std::string op = "quantize_linear";
  affine_axis(op, in, attrs);
  need_dtype(op, in[0], "data", in[0].dtype == kF32, "float32");
  need_dtype(op, in[2], "zero_point", is_q8(in[2].dtype), "int8 or uint8");
  return TensorType{in[2].dtype, in[0].shape};
}

TensorType dequantize_infer(const std::vector<TensorType>& in, const json& attrs) {
  const std::string op = "dequantize_linear";
  affine_axis(op, in, attrs);
  need_dtype(op, in[0], "data", is_q8(in[0].dtype) || in[0].dtype == kI32, "int8, uint8 or int32");
  if (in[2].dtype != in[0].dtype) fail(op, "zero_point has type " + in[2].dtype.str() + " but the data " + in[0].dtype.str());
  return TensorType{kF32, in[0].shape};
}

PrimFunc affine_build(const std::string& op, bool quantize, const std::string& fname, const std::vector<TensorType>& in,
                      const TensorType& out, const json& attrs) {
  AffineAxis a = affine_axis(op, in, attrs);
  FuncBuilder fb;
  Buffer data = fb.param("data", in[0].shape, in[0].dtype);
  Buffer scale = fb.param("scale", in[1].shape, kF32);
  Buffer zp = fb.param("zero_point", in[2].shape, in[2].dtype);
  Buffer o = fb.param("out", out.shape, out.dtype);
  LoopNest nest;
  std::vector<Expr> idx = nest.axes(out.shape);
  Expr c = a.axis < 0 ? ci(0) : idx[a.axis];
  Expr s = load(scale, {c});
  Expr x = load(data, idx);
  Expr y;
  if (quantize) {
    // ONNX: saturate(round_half_even(x / scale) + zero_point), the division in float32.
    Expr v = add(round_half_even(fdiv(x, s)), Cast(kF32, load(zp, {c})));
    y = Cast(out.dtype, min_(max_(v, cf(q_lo(out.dtype))), cf(q_hi(out.dtype))));
  } else {
    // ONNX: (x - zero_point) * scale, the difference exact in int32, the product in float32.
    y = mul(Cast(kF32, sub(Cast(kI32, x), Cast(kI32, load(zp, {c})))), s);
  }
  return fb.finish(fname, nest.wrap(store(o, y, idx)));
}

// ---- the integer accumulation and ONNX's requantization -----------------------------
//
// `params` is an int32 table [T, 4], T = 1 (per tensor) or one row per output channel
// (conv) or column (matmul): (weight zero point, bias, M, s). With M = 0 the output is the
// int32 accumulator (ConvInteger, MatMulInteger: attribute output_dtype "int32");
// otherwise y = saturate(round_half_even(acc * M / 2^s) + output_zero_point), s in [1, 62].

struct Requant {
  DataType out = kI32;
  int32_t output_zero_point = 0;
  int32_t data_zero_point = 0;
  bool relu = false;  // a folded Relu (QDQ): the output is at least its zero point (real 0)
};

Requant read_requant(const std::string& op, const AttrReader& r, const TensorType& data, const TensorType& params,
                     int64_t channels) {
  Requant q;
  std::string dt = r.get_string("output_dtype", "int32", {"int32", "int8", "uint8"});
  q.out = dt == "int32" ? kI32 : dt == "int8" ? DataType::Int(8) : DataType::UInt(8);
  q.data_zero_point = static_cast<int32_t>(r.get_int("data_zero_point", 0));
  q.output_zero_point = static_cast<int32_t>(r.get_int("output_zero_point", 0));
  q.relu = r.get_bool("relu", false);
  if (q.relu && q.out == kI32) r.bad("relu", "false with output_dtype \"int32\"");
  if (q.data_zero_point < q_lo(data.dtype) || q.data_zero_point > q_hi(data.dtype))
    r.bad("data_zero_point", "a value of the data's type " + data.dtype.str());
  if (q.out != kI32 && (q.output_zero_point < q_lo(q.out) || q.output_zero_point > q_hi(q.out)))
    r.bad("output_zero_point", "a value of the output type " + q.out.str());
  if (params.dtype != kI32 || params.shape.size() != 2 || params.shape[1] != 4 ||
      (params.shape[0] != 1 && params.shape[0] != channels))
    fail(op, "input 'params' must be int32 of shape (1, 4) or (" + std::to_string(channels) + ", 4), got " +
                 params.str());
  return q;
}

// The accumulator's final value as the output type.
Expr requantize(const Requant& q, Expr acc, const Buffer& params, Expr row) {
  if (q.out == kI32) return acc;
  Expr y = onnx_round_shift(std::move(acc), Cast(kI64, load(params, {row, ci(2)})), Cast(kI64, load(params, {row, ci(3)})));
  y = Binary(ExprKind::Add, y, IntImm(kI64, q.output_zero_point));
  int32_t lo = q.relu ? std::max(q_lo(q.out), q.output_zero_point) : q_lo(q.out);
  y = Binary(ExprKind::Min, Binary(ExprKind::Max, y, IntImm(kI64, lo)), IntImm(kI64, q_hi(q.out)));
  return Cast(q.out, y);
}

// ---- qlinear_conv ---------------------------------------------------------------------

const std::vector<std::string> kConvAttrs = {"strides",           "padding",      "dilation", "groups",
                                             "data_zero_point",   "output_zero_point", "output_dtype", "relu",
                                             "symmetric_weights"};

struct QConv {
  int64_t n, c, h, w, o, cg, kh, kw, groups, sh, sw, dh, dw, pt, pl, pb, pr, oh, ow;
  bool symmetric;  // every weight zero point is 0: nothing to subtract
  Requant q;
};

QConv qconv_params(const std::vector<TensorType>& in, const json& attrs) {
  const std::string op = "qlinear_conv";
  AttrReader r(op, attrs, kConvAttrs);
  if (in.size() != 3) fail(op, "expected 3 inputs (data, weight, params), got " + std::to_string(in.size()));
  need_dtype(op, in[0], "data", is_q8(in[0].dtype), "int8 or uint8");
  need_dtype(op, in[1], "weight", is_q8(in[1].dtype), "int8 or uint8");
  check_rank(op, in, 0, "data (NCHW)", 4);
  check_rank(op, in, 1, "weight (OIHW)", 4);
  QConv p;
  auto strides = r.get_ints("strides", 2, 1, "positive integers", std::vector<int64_t>{1, 1});
  auto padding = r.get_ints("padding", 4, 0, "non-negative integers", std::vector<int64_t>{0, 0, 0, 0});
  auto dilation = r.get_ints("dilation", 2, 1, "positive integers", std::vector<int64_t>{1, 1});
  p.groups = r.get_int("groups", 1);
  const auto& d = in[0].shape;
  const auto& wt = in[1].shape;
  p.n = d[0], p.c = d[1], p.h = d[2], p.w = d[3];
  p.o = wt[0], p.cg = wt[1], p.kh = wt[2], p.kw = wt[3];
  if (p.groups < 1 || p.c % p.groups || p.o % p.groups || p.cg * p.groups != p.c)
    fail(op, "the weight " + shape_str(wt) + " and groups = " + std::to_string(p.groups) + " do not fit the data " +
                 shape_str(d));
  p.sh = strides[0], p.sw = strides[1], p.dh = dilation[0], p.dw = dilation[1];
  p.pt = padding[0], p.pl = padding[1], p.pb = padding[2], p.pr = padding[3];
  p.symmetric = r.get_bool("symmetric_weights", false);
  int64_t eh = p.dh * (p.kh - 1) + 1, ew = p.dw * (p.kw - 1) + 1;
  int64_t ph = p.h + padding[0] + padding[2], pw = p.w + padding[1] + padding[3];
  if (eh > ph || ew > pw) fail(op, "the dilated kernel is larger than the padded input");
  p.oh = (ph - eh) / p.sh + 1;
  p.ow = (pw - ew) / p.sw + 1;
  p.q = read_requant(op, r, in[0], in[2], p.o);
  return p;
}

TensorType qconv_infer(const std::vector<TensorType>& in, const json& attrs) {
  QConv p = qconv_params(in, attrs);
  return TensorType{p.q.out, {p.n, p.o, p.oh, p.ow}};
}

// acc = bias + sum (x - x_zero_point) * (w - w_zero_point[oc]); padding holds the zero
// point (adds 0). The int32 accumulator lives in a one-element scratch buffer.
PrimFunc qconv_build(const std::string& fname, const std::vector<TensorType>& in, const TensorType& out,
                     const json& attrs) {
  QConv p = qconv_params(in, attrs);
  FuncBuilder fb;
  Buffer data = fb.param("data", in[0].shape, in[0].dtype);
  Buffer weight = fb.param("weight", in[1].shape, in[1].dtype);
  Buffer params = fb.param("params", in[2].shape, kI32);
  Buffer o = fb.param("out", out.shape, out.dtype);
  Buffer acc = scratch("acc", {1}, kI32);
  LoopNest outer, red;
  Expr n = outer.axis("n", p.n), oc = outer.axis("oc", p.o), oh = outer.axis("oh", p.oh), ow = outer.axis("ow", p.ow);
  Expr rc = red.axis("rc", p.cg), rh = red.axis("rh", p.kh), rw = red.axis("rw", p.kw);
  Expr row = in[2].shape[0] == 1 ? ci(0) : oc;
  int64_t og = p.o / p.groups;
  Expr ic = p.groups == 1 ? rc : add(mul(floordiv(oc, ci(og)), ci(p.cg)), rc);
  Expr y = add(mul(oh, ci(p.sh)), mul(rh, ci(p.dh))), x = add(mul(ow, ci(p.sw)), mul(rw, ci(p.dw)));
  // With padding, the input is first copied into a scratch buffer bordered with its zero
  // point (one byte per element), so the multiply-adds read it without bound checks.
  bool padded = p.pt > 0 || p.pl > 0 || p.pb > 0 || p.pr > 0;
  int64_t rows = (p.oh - 1) * p.sh + (p.kh - 1) * p.dh + 1, cols = (p.ow - 1) * p.sw + (p.kw - 1) * p.dw + 1;
  Buffer src = padded ? scratch("data_pad", {p.n, p.c, rows, cols}, in[0].dtype) : data;
  Expr xv = sub(Cast(kI32, load(src, {n, ic, y, x})), ci(p.q.data_zero_point));
  Expr wv = Cast(kI32, load(weight, {oc, rc, rh, rw}));
  if (!p.symmetric) wv = sub(wv, load(params, {row, ci(0)}));
  Stmt init = store(acc, load(params, {row, ci(1)}), {ci(0)});
  Stmt update = store(acc, add(load(acc, {ci(0)}), mul(xv, wv)), {ci(0)});
  Stmt fin = store(o, requantize(p.q, load(acc, {ci(0)}), params, row), {n, oc, oh, ow});
  Stmt body = outer.wrap(SeqStmt({init, red.wrap(update), fin}));
  // Both scratch buffers are allocated at the top, where PlanMemory places them.
  if (!padded) return fb.finish(fname, Allocate(acc, "local", body));
  LoopNest fill;
  Expr fn = fill.axis("n", p.n), fc = fill.axis("c", p.c), fy = fill.axis("y", rows), fx = fill.axis("x", cols);
  Expr iy = sub(fy, ci(p.pt)), ix = sub(fx, ci(p.pl));
  Expr inside = and_(and_(ge(iy, ci(0)), lt(iy, ci(p.h))), and_(ge(ix, ci(0)), lt(ix, ci(p.w))));
  Stmt copy = store(src, lazy_select(inside, load(data, {fn, fc, iy, ix}), IntImm(in[0].dtype, p.q.data_zero_point)),
                    {fn, fc, fy, fx});
  return fb.finish(fname, Allocate(src, "global", Allocate(acc, "local", SeqStmt({fill.wrap(copy), body}))));
}

// ---- qlinear_matmul ---------------------------------------------------------------------

struct QMatmul {
  std::vector<int64_t> out;  // batch..., m, n
  int64_t k;
  bool symmetric;  // every zero point of B is 0
  Requant q;
};

QMatmul qmatmul_params(const std::vector<TensorType>& in, const json& attrs) {
  const std::string op = "qlinear_matmul";
  AttrReader r(op, attrs, {"data_zero_point", "output_zero_point", "output_dtype", "relu", "symmetric_weights"});
  if (in.size() != 3) fail(op, "expected 3 inputs (A, B, params), got " + std::to_string(in.size()));
  need_dtype(op, in[0], "A", is_q8(in[0].dtype), "int8 or uint8");
  need_dtype(op, in[1], "B", is_q8(in[1].dtype), "int8 or uint8");
  const auto& a = in[0].shape;
  const auto& b = in[1].shape;
  if (a.size() < 2 || b.size() < 2) fail(op, "A and B must have rank 2 or more (reshape 1-D operands to 2-D first)");
  QMatmul p;
  p.k = a.back();
  if (b[b.size() - 2] != p.k) fail(op, "inner dimensions differ: A " + shape_str(a) + ", B " + shape_str(b));
  size_t ra = a.size() - 2, rb = b.size() - 2, rank = std::max(ra, rb);
  for (size_t k = 0; k < rank; ++k) {
    int64_t da = k < rank - ra ? 1 : a[k - (rank - ra)];
    int64_t db = k < rank - rb ? 1 : b[k - (rank - rb)];
    if (da != db && da != 1 && db != 1) fail(op, "batch dimensions of A " + shape_str(a) + " and B " + shape_str(b) + " differ");
    p.out.push_back(std::max(da, db));
  }
  p.out.push_back(a[a.size() - 2]);
  p.out.push_back(b.back());
  p.q = read_requant(op, r, in[0], in[2], b.back());
  p.symmetric = r.get_bool("symmetric_weights", false);
  return p;
}

TensorType qmatmul_infer(const std::vector<TensorType>& in, const json& attrs) {
  QMatmul p = qmatmul_params(in, attrs);
  return TensorType{p.q.out, p.out};
}

PrimFunc qmatmul_build(const std::string& fname, const std::vector<TensorType>& in, const TensorType& out,
                       const json& attrs) {
  QMatmul p = qmatmul_params(in, attrs);
  FuncBuilder fb;
  Buffer a = fb.param("A", in[0].shape, in[0].dtype);
  Buffer b = fb.param("B", in[1].shape, in[1].dtype);
  Buffer params = fb.param("params", in[2].shape, kI32);
  Buffer o = fb.param("out", out.shape, out.dtype);
  Buffer acc = scratch("acc", {1}, kI32);
  size_t rank = out.shape.size(), batch = rank - 2;
  LoopNest outer, red;
  std::vector<Expr> bidx = outer.axes({out.shape.begin(), out.shape.begin() + batch}, "b");
  Expr i = outer.axis("i", out.shape[rank - 2]), j = outer.axis("j", out.shape[rank - 1]);
  Expr kk = red.axis("k", p.k);
  auto operand_index = [&](const std::vector<int64_t>& shape, Expr r, Expr c) {
    std::vector<Expr> idx;
    size_t own = shape.size() - 2;
    for (size_t d = 0; d < own; ++d) idx.push_back(shape[d] == 1 ? ci(0) : bidx[batch - own + d]);
    idx.push_back(r);
    idx.push_back(c);
    return idx;
  };
  std::vector<Expr> oidx = bidx;
  oidx.push_back(i);
  oidx.push_back(j);
  Expr row = in[2].shape[0] == 1 ? ci(0) : j;
  Expr x = sub(Cast(kI32, load(a, operand_index(in[0].shape, i, kk))), ci(p.q.data_zero_point));
  Expr w = Cast(kI32, load(b, operand_index(in[1].shape, kk, j)));
  if (!p.symmetric) w = sub(w, load(params, {row, ci(0)}));
  Stmt init = store(acc, load(params, {row, ci(1)}), {ci(0)});
  Stmt update = store(acc, add(load(acc, {ci(0)}), mul(x, w)), {ci(0)});
  Stmt fin = store(o, requantize(p.q, load(acc, {ci(0)}), params, row), oidx);
  return fb.finish(fname, Allocate(acc, "local", outer.wrap(SeqStmt({init, red.wrap(update), fin}))));
}

// ---- qlinear_add ------------------------------------------------------------------------
// A folded QDQ Add: y = saturate(round_half_even((dequant(a) + dequant(b)) / y_scale) + y_zp),
// every step in float32 in the order of the float graph it replaces (DQ, Add, Q), so the
// result is that graph's to the bit; only the float intermediates are gone. Inputs
// broadcast as in numpy.

struct QAdd {
  double sa, sb, so;
  int32_t za, zb, zo;
  bool relu;
  DataType out;
  std::vector<int64_t> shape;
};

QAdd qadd_params(const std::vector<TensorType>& in, const json& attrs) {
  const std::string op = "qlinear_add";
  AttrReader r(op, attrs, {"a_scale", "a_zero_point", "b_scale", "b_zero_point", "output_scale", "output_zero_point",
                           "output_dtype", "relu"});
  if (in.size() != 2) fail(op, "expected 2 inputs (a, b), got " + std::to_string(in.size()));
  need_dtype(op, in[0], "a", is_q8(in[0].dtype), "int8 or uint8");
  need_dtype(op, in[1], "b", is_q8(in[1].dtype), "int8 or uint8");
  QAdd p;
  auto scale = [&](const std::string& key) {
    double v = r.get_float(key, 0);
    if (!(static_cast<float>(v) > 0)) r.bad(key, "a number > 0");
    return v;
  };
  p.sa = scale("a_scale"), p.sb = scale("b_scale"), p.so = scale("output_scale");
  p.za = static_cast<int32_t>(r.get_int("a_zero_point", 0));
  p.zb = static_cast<int32_t>(r.get_int("b_zero_point", 0));
  p.zo = static_cast<int32_t>(r.get_int("output_zero_point", 0));
  p.out = r.get_string("output_dtype", "uint8", {"int8", "uint8"}) == "int8" ? DataType::Int(8) : DataType::UInt(8);
  p.relu = r.get_bool("relu", false);
  const auto& a = in[0].shape;
  const auto& b = in[1].shape;
  size_t rank = std::max(a.size(), b.size());
  for (size_t k = 0; k < rank; ++k) {
    int64_t da = k < rank - a.size() ? 1 : a[k - (rank - a.size())];
    int64_t db = k < rank - b.size() ? 1 : b[k - (rank - b.size())];
    if (da != db && da != 1 && db != 1) fail(op, "shapes " + shape_str(a) + " and " + shape_str(b) + " do not broadcast");
    p.shape.push_back(std::max(da, db));
  }
  return p;
}

TensorType qadd_infer(const std::vector<TensorType>& in, const json& attrs) {
  QAdd p = qadd_params(in, attrs);
  return TensorType{p.out, p.shape};
}

PrimFunc qadd_build(const std::string& fname, const std::vector<TensorType>& in, const TensorType& out,
                    const json& attrs) {
  QAdd p = qadd_params(in, attrs);
  FuncBuilder fb;
  Buffer a = fb.param("a", in[0].shape, in[0].dtype);
  Buffer b = fb.param("b", in[1].shape, in[1].dtype);
  Buffer o = fb.param("out", out.shape, out.dtype);
  LoopNest nest;
  std::vector<Expr> idx = nest.axes(out.shape);
  auto operand = [&](const Buffer& buf, const std::vector<int64_t>& shape, int32_t zp, double scale) {
    std::vector<Expr> i;
    size_t skip = out.shape.size() - shape.size();
    for (size_t k = 0; k < shape.size(); ++k) i.push_back(shape[k] == 1 ? ci(0) : idx[skip + k]);
    return mul(Cast(kF32, sub(Cast(kI32, load(buf, i)), ci(zp))), cf(scale));
  };
  Expr sum = add(operand(a, in[0].shape, p.za, p.sa), operand(b, in[1].shape, p.zb, p.sb));
  Expr v = add(round_half_even(fdiv(sum, cf(p.so))), cf(p.zo));
  double lo = p.relu ? std::max<double>(q_lo(p.out), p.zo) : q_lo(p.out);
  Expr y = Cast(p.out, min_(max_(v, cf(lo)), cf(q_hi(p.out))));
  return fb.finish(fname, nest.wrap(store(o, y, idx)));
}

// ---- qlinear_avg_pool -------------------------------------------------------------------
// A folded QDQ AveragePool or GlobalAveragePool whose input and output share scale and zero
// point z: the exact mean of the window's real values, quantized as QuantizeLinear rounds,
// y = z + round_half_even(sum(q - z) / count), count the window's cells inside the input
// (or all of them with count_include_pad, padding being real 0). The float graph computes
// the same mean in float32 and can land one step away where float rounding moves an exact
// tie (docs/onnx.md). NCHW int8 or uint8 data; "global" pools every trailing dimension.

struct QAvgPool {
  bool global;
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, pt = 0, pl = 0, pb = 0, pr = 0, oh = 1, ow = 1;
  bool count_include_pad;
  int32_t zero_point;
  std::vector<int64_t> out;
};

QAvgPool qavg_params(const std::vector<TensorType>& in, const json& attrs) {
  const std::string op = "qlinear_avg_pool";
  AttrReader r(op, attrs, {"global", "pool_size", "strides", "padding", "count_include_pad", "zero_point"});
  if (in.size() != 1) fail(op, "expected 1 input (data), got " + std::to_string(in.size()));
  need_dtype(op, in[0], "data", is_q8(in[0].dtype), "int8 or uint8");
  QAvgPool p;
  p.global = r.get_bool("global", false);
  p.count_include_pad = r.get_bool("count_include_pad", false);
  p.zero_point = static_cast<int32_t>(r.get_int("zero_point", 0));
  if (p.zero_point < q_lo(in[0].dtype) || p.zero_point > q_hi(in[0].dtype))
    r.bad("zero_point", "a value of the data's type " + in[0].dtype.str());
  const auto& d = in[0].shape;
  if (p.global) {
    if (d.size() < 3) fail(op, "global pooling needs data of rank 3 or more, got " + shape_str(d));
    p.out = {d[0], d[1]};
    for (size_t k = 2; k < d.size(); ++k) p.out.push_back(1);
    int64_t cells = 1;
    for (size_t k = 2; k < d.size(); ++k) cells *= d[k];
    if (cells > (int64_t{1} << 23)) fail(op, "a window of " + std::to_string(cells) + " cells could overflow the int32 sum");
    return p;
  }
  check_rank(op, in, 0, "data (NCHW)", 4);
  auto size = r.get_ints("pool_size", 2, 1, "positive integers", std::nullopt);
  auto strides = r.get_ints("strides", 2, 1, "positive integers", std::vector<int64_t>{1, 1});
  auto pad = r.get_ints("padding", 4, 0, "non-negative integers", std::vector<int64_t>{0, 0, 0, 0});
  p.kh = size[0], p.kw = size[1], p.sh = strides[0], p.sw = strides[1];
  p.pt = pad[0], p.pl = pad[1], p.pb = pad[2], p.pr = pad[3];
  if (p.pt >= p.kh || p.pb >= p.kh || p.pl >= p.kw || p.pr >= p.kw)
    fail(op, "padding " + shape_str(pad) + " must be smaller than the window " + shape_str(size));
  if (p.kh > d[2] + p.pt + p.pb || p.kw > d[3] + p.pl + p.pr) fail(op, "the window is larger than the padded input");
  p.oh = (d[2] + p.pt + p.pb - p.kh) / p.sh + 1;
  p.ow = (d[3] + p.pl + p.pr - p.kw) / p.sw + 1;
  p.out = {d[0], d[1], p.oh, p.ow};
  return p;
}

TensorType qavg_infer(const std::vector<TensorType>& in, const json& attrs) {
  return TensorType{in.empty() ? DataType::Int(8) : in[0].dtype, qavg_params(in, attrs).out};
}

// The number of window cells inside [0, size) along one axis at output `o`.
Expr cells_inside(Expr o, int64_t k, int64_t stride, int64_t pad, int64_t size) {
  Expr start = sub(mul(o, ci(stride)), ci(pad));
  return sub(min_(add(start, ci(k)), ci(size)), max_(start, ci(0)));
}

PrimFunc qavg_build(const std::string& fname, const std::vector<TensorType>& in, const TensorType& out,
                    const json& attrs) {
  QAvgPool p = qavg_params(in, attrs);
  const auto& d = in[0].shape;
  FuncBuilder fb;
  Buffer data = fb.param("data", d, in[0].dtype);
  Buffer o = fb.param("out", out.shape, out.dtype);
  Buffer acc = scratch("acc", {1}, kI32);
  LoopNest outer, red;
  Expr n = outer.axis("n", d[0]), c = outer.axis("c", d[1]);
  std::vector<Expr> oidx = {n, c};
  Expr cond, count;
  std::vector<Expr> idx = {n, c};
  if (p.global) {
    std::vector<int64_t> spatial(d.begin() + 2, d.end());
    int64_t cells = 1;
    for (int64_t v : spatial) cells *= v;
    for (Expr e : unflatten(red.axis("r", cells), spatial)) idx.push_back(e);
    for (size_t k = 2; k < d.size(); ++k) oidx.push_back(ci(0));
    count = ci(cells);
  } else {
    Expr oh = outer.axis("oh", p.oh), ow = outer.axis("ow", p.ow);
    oidx.push_back(oh), oidx.push_back(ow);
    Expr ih = add(sub(mul(oh, ci(p.sh)), ci(p.pt)), red.axis("rh", p.kh));
    Expr iw = add(sub(mul(ow, ci(p.sw)), ci(p.pl)), red.axis("rw", p.kw));
    idx.push_back(ih), idx.push_back(iw);
    if (p.pt > 0) cond = and_(cond, ge(ih, ci(0)));
    if ((p.oh - 1) * p.sh - p.pt + p.kh > d[2]) cond = and_(cond, lt(ih, ci(d[2])));
    if (p.pl > 0) cond = and_(cond, ge(iw, ci(0)));
    if ((p.ow - 1) * p.sw - p.pl + p.kw > d[3]) cond = and_(cond, lt(iw, ci(d[3])));
    bool padded = p.pt || p.pl || p.pb || p.pr;
    count = p.count_include_pad || !padded ? ci(p.kh * p.kw)
                                           : mul(cells_inside(oh, p.kh, p.sh, p.pt, d[2]), cells_inside(ow, p.kw, p.sw, p.pl, d[3]));
  }
  Stmt update = store(acc, add(load(acc, {ci(0)}), sub(Cast(kI32, load(data, idx)), ci(p.zero_point))), {ci(0)});
  if (cond) update = IfThenElse(cond, update);
  // Half to even: q = floor(sum / count), r = sum - q * count in [0, count); up when 2r > count,
  // or 2r == count and q is odd.
  Expr sum = load(acc, {ci(0)});
  Expr q = floordiv(sum, count), r2 = mul(floormod(sum, count), ci(2));
  Expr odd = Binary(ExprKind::EQ, floormod(q, ci(2)), ci(1));
  Expr up = Binary(ExprKind::Or, Binary(ExprKind::GT, r2, count), Binary(ExprKind::And, Binary(ExprKind::EQ, r2, count), odd));
  Expr y = add(add(q, Select(up, ci(1), ci(0))), ci(p.zero_point));
  y = min_(max_(y, ci(q_lo(out.dtype))), ci(q_hi(out.dtype)));
  Stmt body = SeqStmt({store(acc, ci(0), {ci(0)}), red.wrap(update), store(o, Cast(out.dtype, y), oidx)});
  return fb.finish(fname, Allocate(acc, "global", outer.wrap(body)));
}

// ---- dynamic_quantize_linear ------------------------------------------------------------
// ONNX's DynamicQuantizeLinear (uint8): x_min = min(0, min x), x_max = max(0, max x),
// scale = (x_max - x_min) / 255, zero_point = saturate(round_half_even(-x_min / scale)),
// y = saturate(round_half_even(x / scale) + zero_point), all in float32. One op per output
// (attribute `output`); each recomputes the range, a pass over the data.

TensorType dynq_infer(const std::vector<TensorType>& in, const json& attrs) {
  const std::string op = "dynamic_quantize_linear";
  AttrReader r(op, attrs, {"output"});
  if (in.size() != 1) fail(op, "expected 1 input (data), got " + std::to_string(in.size()));
  need_dtype(op, in[0], "data", in[0].dtype == kF32, "float32");
  std::string which = r.get_string("output", "y", {"y", "scale", "zero_point"});
  if (which == "y") return TensorType{DataType::UInt(8), in[0].shape};
  return TensorType{which == "scale" ? kF32 : DataType::UInt(8), {}};  // ONNX's scalars
}

PrimFunc dynq_build(const std::string& fname, const std::vector<TensorType>& in, const TensorType& out,
                    const json& attrs) {
  AttrReader r("dynamic_quantize_linear", attrs, {"output"});
  std::string which = r.get_string("output", "y", {"y", "scale", "zero_point"});
  FuncBuilder fb;
  Buffer data = fb.param("data", in[0].shape, kF32);
  Buffer o = fb.param("out", out.shape, out.dtype);
  Buffer range = scratch("range", {2});  // min, max
  int64_t count = 1;
  for (int64_t d : in[0].shape) count *= d;
  LoopNest scan;
  Expr flat = scan.axis("i", count);
  Expr x = load(data, unflatten(flat, in[0].shape));
  std::vector<Stmt> body = {store(range, cf(0), {ci(0)}), store(range, cf(0), {ci(1)}),
                            scan.wrap(SeqStmt({store(range, min_(load(range, {ci(0)}), x), {ci(0)}),
                                               store(range, max_(load(range, {ci(1)}), x), {ci(1)})}))};
  Expr scale = fdiv(sub(load(range, {ci(1)}), load(range, {ci(0)})), cf(255));
  // A constant zero input has no range: ONNX divides by zero there; scale 0 and
  // zero point 0 give y = 0 instead of a NaN.
  Expr safe = Select(Binary(ExprKind::GT, scale, cf(0)), scale, cf(1));
  Expr zp = min_(max_(round_half_even(fdiv(sub(cf(0), load(range, {ci(0)})), safe)), cf(0)), cf(255));
  if (which == "scale") {
    body.push_back(store(o, scale, {}));
  } else if (which == "zero_point") {
    body.push_back(store(o, Cast(out.dtype, zp), {}));
  } else {
    LoopNest nest;
    std::vector<Expr> idx = nest.axes(out.shape, "j");
    Expr v = add(round_half_even(fdiv(load(data, idx), safe)), zp);
    body.push_back(nest.wrap(store(o, Cast(out.dtype, min_(max_(v, cf(0)), cf(255))), idx)));
  }
  return fb.finish(fname, Allocate(range, "global", SeqStmt(body)));
}

}  // namespace

void register_onnx_quant_ops(std::vector<OpDef>& ops) {
  ops.push_back(OpDef{"quantize_linear", quantize_infer,
                      [](const std::string& f, const std::vector<TensorType>& in, const TensorType& out, const json& a) {
                        return affine_build("quantize_linear", true, f, in, out, a);
                      }});
  ops.push_back(OpDef{"dequantize_linear", dequantize_infer,
                      [](const std::string& f, const std::vector<TensorType>& in, const TensorType& out, const json& a) {
                        return affine_build("dequantize_linear", false, f, in, out, a);
                      }});
  ops.push_back(OpDef{"qlinear_conv", qconv_infer, qconv_build});
  ops.push_back(OpDef{"qlinear_matmul", qmatmul_infer, qmatmul_build});
  ops.push_back(OpDef{"qlinear_add", qadd_infer, qadd_build});
  ops.push_back(OpDef{"qlinear_avg_pool", qavg_infer, qavg_build});
  ops.push_back(OpDef{"dynamic_quantize_linear", dynq_infer, dynq_build});
}

}  // namespace ops
}  // namespace mtir
