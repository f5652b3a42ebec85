// Compute-heavy ops: conv2d, conv3d, conv_transpose, dense, gemm, matmul, batch_norm.
// Reductions are emitted as an init store followed by accumulation into the output element.
#include "ops/op_util.h"

namespace mtir {
namespace ops {
namespace {

using json = nlohmann::json;

// ---- conv2d -------------------------------------------------------------------

const std::vector<std::string> kConvAttrs = {"strides", "padding", "dilation", "groups", "layout"};

struct ConvParams {
  bool nhwc = false;
  int64_t n, c, h, w;        // data
  int64_t o, cg, kh, kw;     // weight: output channels, input channels per group, kernel
  int64_t groups;
  int64_t sh, sw, dh, dw;
  int64_t pt, pl, pb, pr;
  int64_t oh, ow;
  bool bias;
};

ConvParams conv_params(const std::vector<TensorType>& in, const json& attrs) {
  const std::string op = "conv2d";
  AttrReader r(op, attrs, kConvAttrs);
  check_inputs(op, in, 2, {"data", "weight", "bias"});
  ConvParams p;
  auto strides = r.get_ints("strides", 2, 1, "positive integers", std::vector<int64_t>{1, 1});
  auto padding = r.get_ints("padding", 4, 0, "non-negative integers", std::vector<int64_t>{0, 0, 0, 0});
  auto dilation = r.get_ints("dilation", 2, 1, "positive integers", std::vector<int64_t>{1, 1});
  p.groups = r.get_int("groups", 1);
  if (p.groups < 1) r.bad("groups", "a positive integer");
  p.nhwc = r.get_string("layout", "NCHW", {"NCHW", "NHWC"}) == "NHWC";
  check_rank(op, in, 0, p.nhwc ? "data (NHWC)" : "data (NCHW)", 4);
  check_rank(op, in, 1, p.nhwc ? "weight (HWIO)" : "weight (OIHW)", 4);
  const auto& d = in[0].shape;
  const auto& wt = in[1].shape;
  if (p.nhwc) {
    p.n = d[0], p.h = d[1], p.w = d[2], p.c = d[3];
    p.kh = wt[0], p.kw = wt[1], p.cg = wt[2], p.o = wt[3];
  } else {
    p.n = d[0], p.c = d[1], p.h = d[2], p.w = d[3];
    p.o = wt[0], p.cg = wt[1], p.kh = wt[2], p.kw = wt[3];
  }
  if (p.c % p.groups != 0)
    fail(op, "groups (" + std::to_string(p.groups) + ") must divide the " + std::to_string(p.c) +
                 " input channels of the data");
  if (p.o % p.groups != 0)
    fail(op, "groups (" + std::to_string(p.groups) + ") must divide the " + std::to_string(p.o) +
                 " output channels of the weight");
  if (p.cg * p.groups != p.c)
    fail(op, "weight has " + std::to_string(p.cg) + " input channels per group but the data has " +
                 std::to_string(p.c) + " channels in " + std::to_string(p.groups) + " group(s) (expected " +
                 std::to_string(p.c / p.groups) + ")");
  p.bias = in.size() == 3;
  if (p.bias && (in[2].shape.size() != 1 || in[2].shape[0] != p.o))
    fail(op, "bias must have shape (" + std::to_string(p.o) + ",), got " + shape_str(in[2].shape));
  p.sh = strides[0], p.sw = strides[1];
  p.dh = dilation[0], p.dw = dilation[1];
  p.pt = padding[0], p.pl = padding[1], p.pb = padding[2], p.pr = padding[3];
  int64_t eh = p.dh * (p.kh - 1) + 1, ew = p.dw * (p.kw - 1) + 1;
  int64_t ph = p.h + p.pt + p.pb, pw = p.w + p.pl + p.pr;
  if (eh > ph || ew > pw)
    fail(op, "the dilated kernel (" + std::to_string(eh) + "x" + std::to_string(ew) +
                 ") is larger than the padded input (" + std::to_string(ph) + "x" + std::to_string(pw) + ")");
  p.oh = (ph - eh) / p.sh + 1;
  p.ow = (pw - ew) / p.sw + 1;
  return p;
}

TensorType conv_infer(const std::vector<TensorType>& in, const json& attrs) {
  ConvParams p = conv_params(in, attrs);
  std::vector<int64_t> s = p.nhwc ? std::vector<int64_t>{p.n, p.oh, p.ow, p.o}
                                  : std::vector<int64_t>{p.n, p.o, p.oh, p.ow};
  return TensorType{DataType::Float(32), s};
}

// The input coordinate `o * stride + k * dilation - pad` and the bound checks it needs
// (only those that can fail for some output position).
Expr in_coord(Expr o, Expr k, int64_t stride, int64_t dilation, int64_t pad) {
  return sub(add(mul(o, ci(stride)), mul(k, ci(dilation))), ci(pad));
}
Expr bound_check(Expr coord, int64_t pad, int64_t extent, int64_t out, int64_t kernel, int64_t stride,
                 int64_t dilation) {
  Expr cond;
  if (pad > 0) cond = ge(coord, ci(0));
  int64_t max_coord = (out - 1) * stride + (kernel - 1) * dilation - pad;
  if (max_coord >= extent) cond = and_(cond, lt(coord, ci(extent)));
  return cond;
}

// Padding checks cost a compare chain per multiply-add. Copying the input once into a
// zero-bordered scratch buffer costs one checked copy per padded element; it pays when
// each padded element feeds at least two multiply-adds (every usual kernel: a 3x3 conv
// feeds ~9 per element), but the scratch buffer is as large as the padded input and
// lives next to the conv's input and output, so it can raise the workspace's peak. On
// a microcontroller RAM is the scarcer resource: only small inputs are padded (the
// MLPerf-Tiny-shaped graphs' pools grew by 40-70% when every input was), larger ones
// keep the checks.
constexpr int64_t kMaxPaddedInputBytes = 2048;
// Extents of the padded input that the windows actually read (stride may skip the end).
int64_t padded_rows(const ConvParams& p) { return (p.oh - 1) * p.sh + (p.kh - 1) * p.dh + 1; }
int64_t padded_cols(const ConvParams& p) { return (p.ow - 1) * p.sw + (p.kw - 1) * p.dw + 1; }

bool pad_first(const ConvParams& p) {
  int64_t macs = p.n * p.o * p.oh * p.ow * p.cg * p.kh * p.kw;
  int64_t padded = p.n * p.c * padded_rows(p) * padded_cols(p);
  return macs >= 2 * padded && padded * 4 <= kMaxPaddedInputBytes;
}

Buffer padded_input(const ConvParams& p, const Buffer& data) {
  int64_t ph = padded_rows(p), pw = padded_cols(p);
  return scratch(data->name + "_pad", p.nhwc ? std::vector<int64_t>{p.n, ph, pw, p.c} : std::vector<int64_t>{p.n, p.c, ph, pw});
}

// padded[n, c, y, x] = data[n, c, y - pt, x - pl] inside the data, 0 in the border.
Stmt fill_padded(const ConvParams& p, const Buffer& data, const Buffer& padded) {
  LoopNest nest;
  Expr n = nest.axis("n", p.n), c, y, x;
  if (p.nhwc) {
    y = nest.axis("y", padded_rows(p)), x = nest.axis("x", padded_cols(p)), c = nest.axis("c", p.c);
  } else {
    c = nest.axis("c", p.c), y = nest.axis("y", padded_rows(p)), x = nest.axis("x", padded_cols(p));
  }
  Expr iy = sub(y, ci(p.pt)), ix = sub(x, ci(p.pl));
  Expr cond;
  if (p.pt > 0) cond = and_(cond, ge(iy, ci(0)));
  if (padded_rows(p) - p.pt > p.h) cond = and_(cond, lt(iy, ci(p.h)));
  if (p.pl > 0) cond = and_(cond, ge(ix, ci(0)));
  if (padded_cols(p) - p.pl > p.w) cond = and_(cond, lt(ix, ci(p.w)));
  std::vector<Expr> src = p.nhwc ? std::vector<Expr>{n, iy, ix, c} : std::vector<Expr>{n, c, iy, ix};
  std::vector<Expr> dst = p.nhwc ? std::vector<Expr>{n, y, x, c} : std::vector<Expr>{n, c, y, x};
  return nest.wrap(store(padded, lazy_select(cond, load(data, src), cf(0)), dst));
}

PrimFunc conv_build(const std::string& fname, const std::vector<TensorType>& in, const TensorType& out,
                    const json& attrs) {
  ConvParams p = conv_params(in, attrs);
  FuncBuilder fb;
  Buffer data = fb.param("data", in[0].shape);
  Buffer weight = fb.param("weight", in[1].shape);
  Buffer bias = p.bias ? fb.param("bias", in[2].shape) : nullptr;
  Buffer o = fb.param("out", out.shape);

  LoopNest outer;
  Expr n = outer.axis("n", p.n);
  Expr oh, ow, oc;
  if (p.nhwc) {
    oh = outer.axis("oh", p.oh), ow = outer.axis("ow", p.ow), oc = outer.axis("oc", p.o);
  } else {
    oc = outer.axis("oc", p.o), oh = outer.axis("oh", p.oh), ow = outer.axis("ow", p.ow);
  }
  LoopNest red;
  Expr rc, rh, rw;
  if (p.nhwc) {
    rh = red.axis("rh", p.kh), rw = red.axis("rw", p.kw), rc = red.axis("rc", p.cg);
  } else {
    rc = red.axis("rc", p.cg), rh = red.axis("rh", p.kh), rw = red.axis("rw", p.kw);
  }
  int64_t og = p.o / p.groups;
  // Input channel: group * channels_per_group + rc, with group = oc // (O / groups).
  Expr ic = p.groups == 1 ? rc : add(mul(floordiv(oc, ci(og)), ci(p.cg)), rc);
  Expr ih = in_coord(oh, rh, p.sh, p.dh, p.pt);
  Expr iw = in_coord(ow, rw, p.sw, p.dw, p.pl);
  Expr cond = and_(bound_check(ih, p.pt, p.h, p.oh, p.kh, p.sh, p.dh),
                   bound_check(iw, p.pl, p.w, p.ow, p.kw, p.sw, p.dw));
  std::vector<Expr> out_idx = p.nhwc ? std::vector<Expr>{n, oh, ow, oc} : std::vector<Expr>{n, oc, oh, ow};
  std::vector<Expr> data_idx = p.nhwc ? std::vector<Expr>{n, ih, iw, ic} : std::vector<Expr>{n, ic, ih, iw};
  std::vector<Expr> w_idx = p.nhwc ? std::vector<Expr>{rh, rw, rc, oc} : std::vector<Expr>{oc, rc, rh, rw};
  Stmt init = store(o, p.bias ? load(bias, {oc}) : cf(0), out_idx);
  if (cond && pad_first(p)) {
    // The same products in the same order: a padded element is the 0 the check gave.
    Buffer padded = padded_input(p, data);
    Expr ph = add(mul(oh, ci(p.sh)), mul(rh, ci(p.dh))), pw = add(mul(ow, ci(p.sw)), mul(rw, ci(p.dw)));
    std::vector<Expr> pad_idx = p.nhwc ? std::vector<Expr>{n, ph, pw, ic} : std::vector<Expr>{n, ic, ph, pw};
    Stmt update = store(o, add(load(o, out_idx), mul(load(padded, pad_idx), load(weight, w_idx))), out_idx);
    Stmt conv = outer.wrap(SeqStmt({init, red.wrap(update)}));
    return fb.finish(fname, Allocate(padded, "global", SeqStmt({fill_padded(p, data, padded), conv})));
  }
  Expr x = lazy_select(cond, load(data, data_idx), cf(0));
  Stmt update = store(o, add(load(o, out_idx), mul(x, load(weight, w_idx))), out_idx);
  return fb.finish(fname, outer.wrap(SeqStmt({init, red.wrap(update)})));
}

// ---- conv3d -------------------------------------------------------------------
// NCDHW data, OIDHW weight: conv2d's loop nest with a depth axis. Zero padding is read
// through the same lazy bound checks (no padded copy: a 3-D input is rarely small).

const std::vector<std::string> kConv3dAttrs = {"strides", "padding", "dilation", "groups"};

struct Conv3dParams {
  std::vector<int64_t> in, kernel, stride, dilation, pad_begin, out;  // each (D, H, W)
  int64_t n, c, o, cg, groups;
  bool bias;
};

Conv3dParams conv3d_params(const std::vector<TensorType>& in, const json& attrs) {
  const std::string op = "conv3d";
  AttrReader r(op, attrs, kConv3dAttrs);
  check_inputs(op, in, 2, {"data", "weight", "bias"});
  check_rank(op, in, 0, "data (NCDHW)", 5);
  check_rank(op, in, 1, "weight (OIDHW)", 5);
  Conv3dParams p;
  p.stride = r.get_ints("strides", 3, 1, "positive integers", std::vector<int64_t>{1, 1, 1});
  auto padding = r.get_ints("padding", 6, 0, "non-negative integers", std::vector<int64_t>(6, 0));
  p.dilation = r.get_ints("dilation", 3, 1, "positive integers", std::vector<int64_t>{1, 1, 1});
  p.groups = r.get_int("groups", 1);
  if (p.groups < 1) r.bad("groups", "a positive integer");
  const auto& d = in[0].shape;
  const auto& wt = in[1].shape;
  p.n = d[0], p.c = d[1], p.o = wt[0], p.cg = wt[1];
  if (p.c % p.groups != 0 || p.o % p.groups != 0 || p.cg * p.groups != p.c)
    fail(op, "the data's " + std::to_string(p.c) + " channels and the weight's " + std::to_string(p.o) +
                 " outputs of " + std::to_string(p.cg) + " input channels do not form " + std::to_string(p.groups) +
                 " group(s)");
  p.bias = in.size() == 3;
  if (p.bias && (in[2].shape.size() != 1 || in[2].shape[0] != p.o))
    fail(op, "bias must have shape (" + std::to_string(p.o) + ",), got " + shape_str(in[2].shape));
  for (size_t k = 0; k < 3; ++k) {
    p.in.push_back(d[2 + k]);
    p.kernel.push_back(wt[2 + k]);
    p.pad_begin.push_back(padding[k]);
    int64_t extent = p.dilation[k] * (p.kernel[k] - 1) + 1, padded = d[2 + k] + padding[k] + padding[k + 3];
    if (extent > padded)
      fail(op, "the dilated kernel " + shape_str(wt) + " is larger than the padded input along axis " +
                   std::to_string(2 + k) + " (" + std::to_string(extent) + " > " + std::to_string(padded) + ")");
    p.out.push_back((padded - extent) / p.stride[k] + 1);
  }
  return p;
}

TensorType conv3d_infer(const std::vector<TensorType>& in, const json& attrs) {
  Conv3dParams p = conv3d_params(in, attrs);
  return TensorType{DataType::Float(32), {p.n, p.o, p.out[0], p.out[1], p.out[2]}};
}

PrimFunc conv3d_build(const std::string& fname, const std::vector<TensorType>& in, const TensorType& out,
                      const json& attrs) {
  Conv3dParams p = conv3d_params(in, attrs);
  FuncBuilder fb;
  Buffer data = fb.param("data", in[0].shape);
  Buffer weight = fb.param("weight", in[1].shape);
  Buffer bias = p.bias ? fb.param("bias", in[2].shape) : nullptr;
  Buffer o = fb.param("out", out.shape);
  LoopNest outer, red;
  Expr n = outer.axis("n", p.n), oc = outer.axis("oc", p.o);
  Expr rc = red.axis("rc", p.cg);
  const char* names[] = {"d", "h", "w"};
  std::vector<Expr> out_idx = {n, oc}, data_idx = {n}, w_idx = {oc, rc};
  std::vector<Expr> ox, rx;
  for (size_t k = 0; k < 3; ++k) ox.push_back(outer.axis(std::string("o") + names[k], p.out[k]));
  for (size_t k = 0; k < 3; ++k) rx.push_back(red.axis(std::string("r") + names[k], p.kernel[k]));
  int64_t og = p.o / p.groups;
  data_idx.push_back(p.groups == 1 ? rc : add(mul(floordiv(oc, ci(og)), ci(p.cg)), rc));
  Expr cond;
  for (size_t k = 0; k < 3; ++k) {
    Expr coord = in_coord(ox[k], rx[k], p.stride[k], p.dilation[k], p.pad_begin[k]);
    cond = and_(cond, bound_check(coord, p.pad_begin[k], p.in[k], p.out[k], p.kernel[k], p.stride[k], p.dilation[k]));
    out_idx.push_back(ox[k]);
    data_idx.push_back(coord);
    w_idx.push_back(rx[k]);
  }
  Stmt init = store(o, p.bias ? load(bias, {oc}) : cf(0), out_idx);
  Expr x = lazy_select(cond, load(data, data_idx), cf(0));
  Stmt update = store(o, add(load(o, out_idx), mul(x, load(weight, w_idx))), out_idx);
  return fb.finish(fname, outer.wrap(SeqStmt({init, red.wrap(update)})));
}

// ---- conv_transpose -------------------------------------------------------------
// The transpose (gradient) of a convolution on 1 to 3 spatial axes, NC* data and
// (C, O/groups, K...) weight, written as a gather so each output element is one
// reduction like conv2d's: input position i feeds output o = i * stride + k * dilation
// - pad_begin, so o reads i = (o + pad_begin - k * dilation) / stride when that divides
// exactly and lies inside the input.

const std::vector<std::string> kConvTransposeAttrs = {"strides", "padding", "dilation", "output_padding", "groups"};

struct ConvTransposeParams {
  size_t dims;
  std::vector<int64_t> in, kernel, stride, dilation, pad_begin, out;
  int64_t n, c, o, og, groups;
  bool bias;
};

ConvTransposeParams conv_transpose_params(const std::vector<TensorType>& in, const json& attrs) {
  const std::string op = "conv_transpose";
  AttrReader r(op, attrs, kConvTransposeAttrs);
  check_inputs(op, in, 2, {"data", "weight", "bias"});
  ConvTransposeParams p;
  const auto& d = in[0].shape;
  const auto& wt = in[1].shape;
  if (d.size() < 3 || d.size() > 5) fail(op, "data must have rank 3, 4 or 5, got shape " + shape_str(d));
  if (wt.size() != d.size())
    fail(op, "weight must have the data's rank " + std::to_string(d.size()) + ", got shape " + shape_str(wt));
  p.dims = d.size() - 2;
  p.stride = r.get_ints("strides", p.dims, 1, "positive integers", std::vector<int64_t>(p.dims, 1));
  auto padding = r.get_ints("padding", 2 * p.dims, 0, "non-negative integers", std::vector<int64_t>(2 * p.dims, 0));
  p.dilation = r.get_ints("dilation", p.dims, 1, "positive integers", std::vector<int64_t>(p.dims, 1));
  auto output_padding =
      r.get_ints("output_padding", p.dims, 0, "non-negative integers", std::vector<int64_t>(p.dims, 0));
  p.groups = r.get_int("groups", 1);
  if (p.groups < 1) r.bad("groups", "a positive integer");
  p.n = d[0], p.c = d[1], p.og = wt[1], p.o = wt[1] * p.groups;
  if (wt[0] != p.c || p.c % p.groups != 0)
    fail(op, "weight " + shape_str(wt) + " must have the data's " + std::to_string(p.c) +
                 " channels first, in " + std::to_string(p.groups) + " group(s)");
  p.bias = in.size() == 3;
  if (p.bias && (in[2].shape.size() != 1 || in[2].shape[0] != p.o))
    fail(op, "bias must have shape (" + std::to_string(p.o) + ",), got " + shape_str(in[2].shape));
  for (size_t k = 0; k < p.dims; ++k) {
    p.in.push_back(d[2 + k]);
    p.kernel.push_back(wt[2 + k]);
    p.pad_begin.push_back(padding[k]);
    int64_t full = p.stride[k] * (d[2 + k] - 1) + output_padding[k] + p.dilation[k] * (wt[2 + k] - 1) + 1;
    int64_t out = full - padding[k] - padding[k + p.dims];
    if (out < 1)
      fail(op, "the padding " + shape_str(padding) + " leaves no output along axis " + std::to_string(2 + k));
    p.out.push_back(out);
  }
  return p;
}

TensorType conv_transpose_infer(const std::vector<TensorType>& in, const json& attrs) {
  ConvTransposeParams p = conv_transpose_params(in, attrs);
  std::vector<int64_t> shape = {p.n, p.o};
  shape.insert(shape.end(), p.out.begin(), p.out.end());
  return TensorType{DataType::Float(32), shape};
}

PrimFunc conv_transpose_build(const std::string& fname, const std::vector<TensorType>& in, const TensorType& out,
                              const json& attrs) {
  ConvTransposeParams p = conv_transpose_params(in, attrs);
  FuncBuilder fb;
  Buffer data = fb.param("data", in[0].shape);
  Buffer weight = fb.param("weight", in[1].shape);
  Buffer bias = p.bias ? fb.param("bias", in[2].shape) : nullptr;
  Buffer o = fb.param("out", out.shape);
  LoopNest outer, red;
  Expr n = outer.axis("n", p.n), oc = outer.axis("oc", p.o);
  Expr rc = red.axis("rc", p.c / p.groups);
  const char* names[] = {"d", "h", "w"};
  const char* const* axis_names = names + (3 - p.dims);
  std::vector<Expr> ox, rx;
  for (size_t k = 0; k < p.dims; ++k) ox.push_back(outer.axis(std::string("o") + axis_names[k], p.out[k]));
  for (size_t k = 0; k < p.dims; ++k) rx.push_back(red.axis(std::string("r") + axis_names[k], p.kernel[k]));
  Expr ic = p.groups == 1 ? rc : add(mul(floordiv(oc, ci(p.og)), ci(p.c / p.groups)), rc);
  std::vector<Expr> out_idx = {n, oc}, data_idx = {n, ic}, w_idx = {ic, p.groups == 1 ? oc : floormod(oc, ci(p.og))};
  Expr cond;
  for (size_t k = 0; k < p.dims; ++k) {
    // t = o + pad_begin - k * dilation ranges over [pad_begin - (K-1) * dilation, out - 1 + pad_begin].
    Expr t = sub(add(ox[k], ci(p.pad_begin[k])), mul(rx[k], ci(p.dilation[k])));
    int64_t t_min = p.pad_begin[k] - (p.kernel[k] - 1) * p.dilation[k], t_max = p.out[k] - 1 + p.pad_begin[k];
    if (t_min < 0) cond = and_(cond, ge(t, ci(0)));
    if (p.stride[k] > 1) cond = and_(cond, Binary(ExprKind::EQ, floormod(t, ci(p.stride[k])), ci(0)));
    Expr i = p.stride[k] > 1 ? floordiv(t, ci(p.stride[k])) : t;
    if (t_max / p.stride[k] >= p.in[k]) cond = and_(cond, lt(i, ci(p.in[k])));
    out_idx.push_back(ox[k]);
    data_idx.push_back(i);
    w_idx.push_back(rx[k]);
  }
  Stmt init = store(o, p.bias ? load(bias, {oc}) : cf(0), out_idx);
  Expr x = lazy_select(cond, load(data, data_idx), cf(0));
  Stmt update = store(o, add(load(o, out_idx), mul(x, load(weight, w_idx))), out_idx);
  return fb.finish(fname, outer.wrap(SeqStmt({init, red.wrap(update)})));
}

// ---- dense --------------------------------------------------------------------

TensorType dense_infer(const std::vector<TensorType>& in, const json& attrs) {
  AttrReader r("dense", attrs, {});
  check_inputs("dense", in, 2, {"data", "weight", "bias"});
  check_rank("dense", in, 0, "data", 2);
  check_rank("dense", in, 1, "weight", 2);
  int64_t k = in[0].shape[1], m = in[1].shape[0];
  if (in[1].shape[1] != k)
    fail("dense", "weight has " + std::to_string(in[1].shape[1]) + " input features but the data has " +
                      std::to_string(k) + " (data " + shape_str(in[0].shape) + ", weight " +
                      shape_str(in[1].shape) + ")");
  if (in.size() == 3 && (in[2].shape.size() != 1 || in[2].shape[0] != m))
    fail("dense", "bias must have shape (" + std::to_string(m) + ",), got " + shape_str(in[2].shape));
  return TensorType{DataType::Float(32), {in[0].shape[0], m}};
}

PrimFunc dense_build(const std::string& fname, const std::vector<TensorType>& in, const TensorType& out,
                     const json&) {
  FuncBuilder fb;
  Buffer data = fb.param("data", in[0].shape);
  Buffer weight = fb.param("weight", in[1].shape);
  Buffer bias = in.size() == 3 ? fb.param("bias", in[2].shape) : nullptr;
  Buffer o = fb.param("out", out.shape);
  LoopNest outer, red;
  Expr i = outer.axis("i", out.shape[0]);
  Expr j = outer.axis("j", out.shape[1]);
  Expr k = red.axis("k", in[0].shape[1]);
  Stmt init = store(o, bias ? load(bias, {j}) : cf(0), {i, j});
  Stmt update = store(o, add(load(o, {i, j}), mul(load(data, {i, k}), load(weight, {j, k}))), {i, j});
  return fb.finish(fname, outer.wrap(SeqStmt({init, red.wrap(update)})));
}

// ---- gemm (ONNX) ----------------------------------------------------------------

const std::vector<std::string> kGemmAttrs = {"alpha", "beta", "transA", "transB"};

TensorType gemm_infer(const std::vector<TensorType>& in, const json& attrs) {
  AttrReader r("gemm", attrs, kGemmAttrs);
  check_inputs("gemm", in, 2, {"A", "B", "C"});
  r.get_float("alpha", 1.0), r.get_float("beta", 1.0);
  bool ta = r.get_bool("transA", false), tb = r.get_bool("transB", false);
  check_rank("gemm", in, 0, "A", 2);
  check_rank("gemm", in, 1, "B", 2);
  int64_t m = ta ? in[0].shape[1] : in[0].shape[0];
  int64_t ka = ta ? in[0].shape[0] : in[0].shape[1];
  int64_t kb = tb ? in[1].shape[1] : in[1].shape[0];
  int64_t n = tb ? in[1].shape[0] : in[1].shape[1];
  if (ka != kb)
    fail("gemm", "inner dimensions differ: A" + std::string(ta ? "^T" : "") + " is " + std::to_string(m) + "x" +
                     std::to_string(ka) + " but B" + (tb ? "^T" : "") + " is " + std::to_string(kb) + "x" +
                     std::to_string(n));
  if (in.size() == 3) {
    const auto& c = in[2].shape;
    bool ok = c.size() <= 2;
    std::vector<int64_t> full = {m, n};
    for (size_t k = 0; ok && k < c.size(); ++k) {
      int64_t target = full[k + 2 - c.size()];
      ok = c[k] == 1 || c[k] == target;
    }
    if (!ok)
      fail("gemm", "C has shape " + shape_str(c) + ", which does not broadcast to the result shape " +
                       shape_str(full));
  }
  return TensorType{DataType::Float(32), {m, n}};
}

PrimFunc gemm_build(const std::string& fname, const std::vector<TensorType>& in, const TensorType& out,
                    const json& attrs) {
  AttrReader r("gemm", attrs, kGemmAttrs);
  double alpha = r.get_float("alpha", 1.0), beta = r.get_float("beta", 1.0);
  bool ta = r.get_bool("transA", false), tb = r.get_bool("transB", false);
  FuncBuilder fb;
  Buffer a = fb.param("A", in[0].shape);
  Buffer b = fb.param("B", in[1].shape);
  Buffer c = in.size() == 3 ? fb.param("C", in[2].shape) : nullptr;
  Buffer o = fb.param("out", out.shape);
  LoopNest outer, red;
  Expr i = outer.axis("i", out.shape[0]);
  Expr j = outer.axis("j", out.shape[1]);
  Expr k = red.axis("k", ta ? in[0].shape[0] : in[0].shape[1]);
  std::vector<Stmt> body;
  body.push_back(store(o, cf(0), {i, j}));
  Expr prod = mul(load(a, ta ? std::vector<Expr>{k, i} : std::vector<Expr>{i, k}),
                  load(b, tb ? std::vector<Expr>{j, k} : std::vector<Expr>{k, j}));
  body.push_back(red.wrap(store(o, add(load(o, {i, j}), prod), {i, j})));
  Expr result = load(o, {i, j});
  bool rewrite = false;
  if (alpha != 1.0) result = mul(cf(alpha), result), rewrite = true;
  if (c && beta != 0.0) {
    std::vector<Expr> cidx;
    const auto& cs = in[2].shape;
    std::vector<Expr> full = {i, j};
    for (size_t d = 0; d < cs.size(); ++d) cidx.push_back(cs[d] == 1 ? ci(0) : full[d + 2 - cs.size()]);
    Expr cv = load(c, cidx);
    if (beta != 1.0) cv = mul(cf(beta), cv);
    result = add(result, cv);
    rewrite = true;
  }
  if (rewrite) body.push_back(store(o, result, {i, j}));
  return fb.finish(fname, outer.wrap(SeqStmt(body)));
}

// ---- matmul (numpy) -------------------------------------------------------------

TensorType matmul_infer(const std::vector<TensorType>& in, const json& attrs) {
  AttrReader r("matmul", attrs, {});
  check_inputs("matmul", in, 2, {"A", "B"});
  for (size_t i = 0; i < 2; ++i)
    if (in[i].shape.size() < 2)
      fail("matmul", std::string(i ? "B" : "A") + " has shape " + shape_str(in[i].shape) +
                         "; 1-D operands are not supported, reshape them to 2-D first");
  const auto& a = in[0].shape;
  const auto& b = in[1].shape;
  int64_t m = a[a.size() - 2], ka = a.back(), kb = b[b.size() - 2], n = b.back();
  if (ka != kb)
    fail("matmul", "inner dimensions differ: A " + shape_str(a) + " has " + std::to_string(ka) +
                       " columns but B " + shape_str(b) + " has " + std::to_string(kb) + " rows");
  size_t ra = a.size() - 2, rb = b.size() - 2, rank = std::max(ra, rb);
  std::vector<int64_t> out(rank);
  for (size_t k = 0; k < rank; ++k) {
    int64_t da = k < rank - ra ? 1 : a[k - (rank - ra)];
    int64_t db = k < rank - rb ? 1 : b[k - (rank - rb)];
    if (da != db && da != 1 && db != 1)
      fail("matmul", "batch dimensions of A " + shape_str(a) + " and B " + shape_str(b) +
                         " cannot be broadcast together");
    out[k] = std::max(da, db);
  }
  out.push_back(m);
  out.push_back(n);
  return TensorType{DataType::Float(32), out};
}

PrimFunc matmul_build(const std::string& fname, const std::vector<TensorType>& in, const TensorType& out,
                      const json&) {
  FuncBuilder fb;
  Buffer a = fb.param("A", in[0].shape);
  Buffer b = fb.param("B", in[1].shape);
  Buffer o = fb.param("out", out.shape);
  size_t rank = out.shape.size(), batch = rank - 2;
  LoopNest outer, red;
  std::vector<Expr> bidx = outer.axes({out.shape.begin(), out.shape.begin() + batch}, "b");
  Expr i = outer.axis("i", out.shape[rank - 2]);
  Expr j = outer.axis("j", out.shape[rank - 1]);
  Expr k = red.axis("k", in[0].shape.back());
  auto operand_idx = [&](const std::vector<int64_t>& s, Expr r, Expr c) {
    std::vector<Expr> idx;
    size_t ob = s.size() - 2, off = batch - ob;
    for (size_t d = 0; d < ob; ++d) idx.push_back(s[d] == 1 ? ci(0) : bidx[d + off]);
    idx.push_back(r);
    idx.push_back(c);
    return idx;
  };
  std::vector<Expr> oidx = bidx;
  oidx.push_back(i);
  oidx.push_back(j);
  Stmt init = store(o, cf(0), oidx);
  Expr prod = mul(load(a, operand_idx(in[0].shape, i, k)), load(b, operand_idx(in[1].shape, k, j)));
  Stmt update = store(o, add(load(o, oidx), prod), oidx);
  return fb.finish(fname, outer.wrap(SeqStmt({init, red.wrap(update)})));
}

// ---- batch_norm (inference) -----------------------------------------------------

const std::vector<std::string> kBnAttrs = {"epsilon", "axis"};
const std::vector<std::string> kBnInputs = {"data", "gamma", "beta", "mean", "var"};

TensorType bn_infer(const std::vector<TensorType>& in, const json& attrs) {
  AttrReader r("batch_norm", attrs, kBnAttrs);
  check_inputs("batch_norm", in, 5, kBnInputs);
  double eps = r.get_float("epsilon", 1e-5);
  if (eps < 0) r.bad("epsilon", "a non-negative number");
  int64_t rank = static_cast<int64_t>(in[0].shape.size());
  if (rank < 1) fail("batch_norm", "data must have rank >= 1");
  int64_t axis = normalize_axis("batch_norm", "axis", r.get_int("axis", 1), rank);
  int64_t c = in[0].shape[axis];
  for (size_t i = 1; i < 5; ++i)
    if (in[i].shape != std::vector<int64_t>{c})
      fail("batch_norm", kBnInputs[i] + " must have shape (" + std::to_string(c) + ",) to match axis " +
                             std::to_string(axis) + " of the data " + shape_str(in[0].shape) + ", got " +
                             shape_str(in[i].shape));
  return TensorType{DataType::Float(32), in[0].shape};
}

PrimFunc bn_build(const std::string& fname, const std::vector<TensorType>& in, const TensorType& out,
                  const json& attrs) {
  AttrReader r("batch_norm", attrs, kBnAttrs);
  double eps = r.get_float("epsilon", 1e-5);
  int64_t rank = static_cast<int64_t>(in[0].shape.size());
  int64_t axis = normalize_axis("batch_norm", "axis", r.get_int("axis", 1), rank);
  FuncBuilder fb;
  std::vector<Buffer> bufs;
  for (size_t i = 0; i < 5; ++i) bufs.push_back(fb.param(kBnInputs[i], in[i].shape));
  Buffer o = fb.param("out", out.shape);
  LoopNest nest;
  std::vector<Expr> idx = nest.axes(out.shape);
  Expr c = idx[axis];
  Expr norm = fdiv(sub(load(bufs[0], idx), load(bufs[3], {c})), call("sqrt", {add(load(bufs[4], {c}), cf(eps))}));
  Expr v = add(mul(norm, load(bufs[1], {c})), load(bufs[2], {c}));
  return fb.finish(fname, nest.wrap(store(o, v, idx)));
}

}  // namespace

void register_nn_ops(std::vector<OpDef>& ops) {
  ops.push_back(OpDef{"conv2d", conv_infer, conv_build});
  ops.push_back(OpDef{"conv3d", conv3d_infer, conv3d_build});
  ops.push_back(OpDef{"conv_transpose", conv_transpose_infer, conv_transpose_build});
  ops.push_back(OpDef{"dense", dense_infer, dense_build});
  ops.push_back(OpDef{"gemm", gemm_infer, gemm_build});
  ops.push_back(OpDef{"matmul", matmul_infer, matmul_build});
  ops.push_back(OpDef{"batch_norm", bn_infer, bn_build});
}

}  // namespace ops
}  // namespace mtir
