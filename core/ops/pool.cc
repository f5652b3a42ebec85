// Pooling and softmax.
#include <cmath>
#include <limits>

#include "ops/op_util.h"

namespace mtir {
namespace ops {
namespace {

using json = nlohmann::json;

constexpr double kInf = std::numeric_limits<double>::infinity();

// ---- max_pool2d / avg_pool2d ------------------------------------------------------

struct PoolParams {
  bool nhwc = false;
  int64_t n, c, h, w;
  int64_t kh, kw, sh, sw, dh, dw;
  int64_t pt, pl, pb, pr;
  bool ceil_mode;
  bool count_include_pad;
  bool indices;  // max_pool2d: output the flat input index of each maximum (int64)
  bool column_major;  // ... counting (h, w) column-major within each (n, c) image
  int64_t oh, ow;
};

std::vector<std::string> pool_attrs(bool avg) {
  std::vector<std::string> a = {"pool_size", "strides", "padding", "dilation", "layout", "ceil_mode"};
  if (avg) a.push_back("count_include_pad");
  else a.insert(a.end(), {"indices", "column_major_indices"});
  return a;
}

int64_t pool_out_size(int64_t in, int64_t pad_begin, int64_t pad_end, int64_t k, int64_t s, int64_t d,
                      bool ceil_mode) {
  int64_t span = in + pad_begin + pad_end - (d * (k - 1) + 1);
  int64_t out = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
  // The last window must start inside the input or the leading padding.
  if (ceil_mode && (out - 1) * s >= in + pad_begin) --out;
  return out;
}

PoolParams pool_params(const std::string& op, const std::vector<TensorType>& in, const json& attrs) {
  bool avg = op == "avg_pool2d";
  AttrReader r(op, attrs, pool_attrs(avg));
  // max takes integer data too (its result has the data's type); the average does not.
  check_inputs(op, in, 1, {"data"}, avg ? Dtypes::kFloat32 : Dtypes::kNumeric);
  PoolParams p;
  auto size = r.get_ints("pool_size", 2, 1, "positive integers", std::nullopt);
  auto strides = r.get_ints("strides", 2, 1, "positive integers", std::vector<int64_t>{1, 1});
  auto padding = r.get_ints("padding", 4, 0, "non-negative integers", std::vector<int64_t>{0, 0, 0, 0});
  auto dilation = r.get_ints("dilation", 2, 1, "positive integers", std::vector<int64_t>{1, 1});
  p.nhwc = r.get_string("layout", "NCHW", {"NCHW", "NHWC"}) == "NHWC";
  p.ceil_mode = r.get_bool("ceil_mode", false);
  p.count_include_pad = avg && r.get_bool("count_include_pad", false);
  p.indices = !avg && r.get_bool("indices", false);
  p.column_major = !avg && r.get_bool("column_major_indices", false);
  if (p.column_major && !p.indices) fail(op, "attribute 'column_major_indices' needs 'indices'");
  if (p.indices && p.nhwc) fail(op, "attribute 'indices' needs the NCHW layout");
  check_rank(op, in, 0, p.nhwc ? "data (NHWC)" : "data (NCHW)", 4);
  const auto& d = in[0].shape;
  if (p.nhwc) {
    p.n = d[0], p.h = d[1], p.w = d[2], p.c = d[3];
  } else {
    p.n = d[0], p.c = d[1], p.h = d[2], p.w = d[3];
  }
  p.kh = size[0], p.kw = size[1], p.sh = strides[0], p.sw = strides[1], p.dh = dilation[0], p.dw = dilation[1];
  p.pt = padding[0], p.pl = padding[1], p.pb = padding[2], p.pr = padding[3];
  int64_t eh = p.dh * (p.kh - 1) + 1, ew = p.dw * (p.kw - 1) + 1;
  if (eh > p.h + p.pt + p.pb || ew > p.w + p.pl + p.pr)
    fail(op, "the pooling window (" + std::to_string(eh) + "x" + std::to_string(ew) +
                 " with dilation) is larger than the padded input (" + std::to_string(p.h + p.pt + p.pb) + "x" +
                 std::to_string(p.w + p.pl + p.pr) + ")");
  if (p.pt >= eh || p.pb >= eh || p.pl >= ew || p.pr >= ew)
    fail(op, "padding " + shape_str(padding) + " must be smaller than the pooling window (" + std::to_string(eh) +
                 "x" + std::to_string(ew) + "), or some windows would see only padding");
  p.oh = pool_out_size(p.h, p.pt, p.pb, p.kh, p.sh, p.dh, p.ceil_mode);
  p.ow = pool_out_size(p.w, p.pl, p.pr, p.kw, p.sw, p.dw, p.ceil_mode);
  return p;
}

TensorType pool_infer(const std::string& op, const std::vector<TensorType>& in, const json& attrs) {
  PoolParams p = pool_params(op, in, attrs);
  std::vector<int64_t> s = p.nhwc ? std::vector<int64_t>{p.n, p.oh, p.ow, p.c}
                                  : std::vector<int64_t>{p.n, p.c, p.oh, p.ow};
  return TensorType{p.indices ? DataType::Int(64) : in[0].dtype, s};
}

// Number of kernel taps k in [0, K) with lo <= o*s + k*d - pad < hi.
int64_t taps_at(int64_t o, int64_t K, int64_t s, int64_t d, int64_t pad, int64_t lo, int64_t hi) {
  int64_t n = 0;
  for (int64_t k = 0; k < K; ++k) {
    int64_t x = o * s + k * d - pad;
    n += lo <= x && x < hi;
  }
  return n;
}

// The same count as an expression of the output coordinate `o` (0..out-1); a
// constant when it does not depend on `o`.
Expr taps_expr(Expr o, int64_t out, int64_t K, int64_t s, int64_t d, int64_t pad, int64_t lo, int64_t hi) {
  int64_t first = taps_at(0, K, s, d, pad, lo, hi);
  bool constant = true;
  for (int64_t i = 1; i < out && constant; ++i) constant = taps_at(i, K, s, d, pad, lo, hi) == first;
  if (constant) return ci(first);
  Expr os = mul(o, ci(s));  // tap k reads input coordinate os + k * d - pad
  if (d == 1) return sub(min_(add(os, ci(K - pad)), ci(hi)), max_(sub(os, ci(pad)), ci(lo)));
  // first tap: ceil((lo + pad - os) / d) clamped at 0; last: floor((hi - 1 + pad - os) / d) clamped at K - 1.
  Expr k0 = max_(floordiv(sub(ci(lo + pad + d - 1), os), ci(d)), ci(0));
  Expr k1 = min_(floordiv(sub(ci(hi - 1 + pad), os), ci(d)), ci(K - 1));
  return max_(add(sub(k1, k0), ci(1)), ci(0));
}

PrimFunc pool_build(const std::string& op, const std::string& fname, const std::vector<TensorType>& in,
                    const TensorType& out, const json& attrs) {
  bool avg = op == "avg_pool2d";
  PoolParams p = pool_params(op, in, attrs);
  FuncBuilder fb;
  Buffer data = fb.param("data", in[0].shape, in[0].dtype);
  Buffer o = fb.param("out", out.shape, out.dtype);
  LoopNest outer, red;
  Expr n = outer.axis("n", p.n), c, oh, ow;
  if (p.nhwc) {
    oh = outer.axis("oh", p.oh), ow = outer.axis("ow", p.ow), c = outer.axis("c", p.c);
  } else {
    c = outer.axis("c", p.c), oh = outer.axis("oh", p.oh), ow = outer.axis("ow", p.ow);
  }
  Expr rh = red.axis("rh", p.kh), rw = red.axis("rw", p.kw);
  Expr ih = sub(add(mul(oh, ci(p.sh)), mul(rh, ci(p.dh))), ci(p.pt));
  Expr iw = sub(add(mul(ow, ci(p.sw)), mul(rw, ci(p.dw))), ci(p.pl));
  Expr cond;
  if (p.pt > 0) cond = and_(cond, ge(ih, ci(0)));
  if ((p.oh - 1) * p.sh + (p.kh - 1) * p.dh - p.pt >= p.h) cond = and_(cond, lt(ih, ci(p.h)));
  if (p.pl > 0) cond = and_(cond, ge(iw, ci(0)));
  if ((p.ow - 1) * p.sw + (p.kw - 1) * p.dw - p.pl >= p.w) cond = and_(cond, lt(iw, ci(p.w)));
  std::vector<Expr> oidx = p.nhwc ? std::vector<Expr>{n, oh, ow, c} : std::vector<Expr>{n, c, oh, ow};
  std::vector<Expr> didx = p.nhwc ? std::vector<Expr>{n, ih, iw, c} : std::vector<Expr>{n, c, ih, iw};
  Expr x = load(data, didx);
  if (p.indices) {
    // The first maximum in window order (a later equal value does not replace it), as
    // numpy's argmax; its index into the whole NCHW input, row-major.
    Buffer best = scratch("best", {1}, in[0].dtype);
    Expr image = mul(add(mul(n, ci(p.c)), c), ci(p.h * p.w));
    Expr flat = p.column_major ? add(image, add(mul(iw, ci(p.h)), ih)) : add(image, add(mul(ih, ci(p.w)), iw));
    Expr better = and_(cond, lt(load(best, {ci(0)}), x));
    Stmt take = IfThenElse(better, SeqStmt({store(best, x, {ci(0)}), store(o, Cast(DataType::Int(64), flat), oidx)}));
    Stmt init = SeqStmt({store(best, cv(in[0].dtype, -kInf), {ci(0)}), store(o, cv(DataType::Int(64), -1), oidx)});
    return fb.finish(fname, Allocate(best, "global", outer.wrap(SeqStmt({init, red.wrap(take)}))));
  }
  Expr acc = load(o, oidx);
  Stmt update = store(o, avg ? add(acc, x) : max_(acc, x), oidx);
  if (cond) update = IfThenElse(cond, update);
  std::vector<Stmt> body;
  body.push_back(store(o, cv(out.dtype, avg ? 0.0 : -kInf), oidx));
  body.push_back(red.wrap(update));
  if (avg) {
    Expr cnt_h, cnt_w;
    if (p.count_include_pad) {
      cnt_h = taps_expr(oh, p.oh, p.kh, p.sh, p.dh, p.pt, -p.pt, p.h + p.pb);
      cnt_w = taps_expr(ow, p.ow, p.kw, p.sw, p.dw, p.pl, -p.pl, p.w + p.pr);
    } else {
      cnt_h = taps_expr(oh, p.oh, p.kh, p.sh, p.dh, p.pt, 0, p.h);
      cnt_w = taps_expr(ow, p.ow, p.kw, p.sw, p.dw, p.pl, 0, p.w);
    }
    Expr count = mul(cnt_h, cnt_w);
    // A window that sees only padding (possible with dilation) averages to 0.
    int64_t lo_h = p.count_include_pad ? -p.pt : 0, hi_h = p.count_include_pad ? p.h + p.pb : p.h;
    int64_t lo_w = p.count_include_pad ? -p.pl : 0, hi_w = p.count_include_pad ? p.w + p.pr : p.w;
    bool empty = false;
    for (int64_t i = 0; i < p.oh; ++i) empty |= taps_at(i, p.kh, p.sh, p.dh, p.pt, lo_h, hi_h) == 0;
    for (int64_t i = 0; i < p.ow; ++i) empty |= taps_at(i, p.kw, p.sw, p.dw, p.pl, lo_w, hi_w) == 0;
    if (empty) count = max_(count, ci(1));
    Expr divisor = as_const_int(count) ? cf(static_cast<double>(*as_const_int(count)))
                                       : Cast(DataType::Float(32), count);
    body.push_back(store(o, fdiv(load(o, oidx), divisor), oidx));
  }
  return fb.finish(fname, outer.wrap(SeqStmt(body)));
}

OpDef pool_op(const std::string& name) {
  OpDef d;
  d.name = name;
  d.infer = [name](const std::vector<TensorType>& in, const json& attrs) { return pool_infer(name, in, attrs); };
  d.build = [name](const std::string& fname, const std::vector<TensorType>& in, const TensorType& out,
                   const json& attrs) { return pool_build(name, fname, in, out, attrs); };
  return d;
}

// ---- global_avg_pool2d ------------------------------------------------------------

TensorType gap_infer(const std::vector<TensorType>& in, const json& attrs) {
  AttrReader r("global_avg_pool2d", attrs, {"layout"});
  check_inputs("global_avg_pool2d", in, 1, {"data"});
  bool nhwc = r.get_string("layout", "NCHW", {"NCHW", "NHWC"}) == "NHWC";
  check_rank("global_avg_pool2d", in, 0, nhwc ? "data (NHWC)" : "data (NCHW)", 4);
  const auto& s = in[0].shape;
  return TensorType{DataType::Float(32), nhwc ? std::vector<int64_t>{s[0], 1, 1, s[3]}
                                              : std::vector<int64_t>{s[0], s[1], 1, 1}};
}

PrimFunc gap_build(const std::string& fname, const std::vector<TensorType>& in, const TensorType& out,
                   const json& attrs) {
  AttrReader r("global_avg_pool2d", attrs, {"layout"});
  bool nhwc = r.get_string("layout", "NCHW", {"NCHW", "NHWC"}) == "NHWC";
  const auto& s = in[0].shape;
  FuncBuilder fb;
  Buffer data = fb.param("data", s);
  Buffer o = fb.param("out", out.shape);
  LoopNest outer, red;
  Expr n = outer.axis("n", s[0]);
  Expr c = outer.axis("c", nhwc ? s[3] : s[1]);
  int64_t h = nhwc ? s[1] : s[2], w = nhwc ? s[2] : s[3];
  Expr rh = red.axis("rh", h), rw = red.axis("rw", w);
  std::vector<Expr> oidx = nhwc ? std::vector<Expr>{n, ci(0), ci(0), c} : std::vector<Expr>{n, c, ci(0), ci(0)};
  std::vector<Expr> didx = nhwc ? std::vector<Expr>{n, rh, rw, c} : std::vector<Expr>{n, c, rh, rw};
  Stmt init = store(o, cf(0), oidx);
  Stmt update = store(o, add(load(o, oidx), load(data, didx)), oidx);
  Stmt fin = store(o, fdiv(load(o, oidx), cf(static_cast<double>(h * w))), oidx);
  return fb.finish(fname, outer.wrap(SeqStmt({init, red.wrap(update), fin})));
}

// ---- softmax ----------------------------------------------------------------------

int64_t softmax_axis(const std::string& op, const std::vector<TensorType>& in, const AttrReader& r) {
  int64_t rank = static_cast<int64_t>(in[0].shape.size());
  if (rank < 1) fail(op, "data must have rank >= 1");
  return normalize_axis(op, "axis", r.get_int("axis", -1), rank);
}

TensorType softmax_infer(const std::string& op, const std::vector<TensorType>& in, const json& attrs) {
  AttrReader r(op, attrs, {"axis"});
  check_inputs(op, in, 1, {"data"});
  softmax_axis(op, in, r);
  return in[0];
}

// softmax, or log_softmax (`log`): x - max - log(sum(exp(x - max))), which stays finite
// where the softmax itself underflows to 0.
PrimFunc softmax_build(const std::string& op, bool log, const std::string& fname, const std::vector<TensorType>& in,
                       const TensorType& out, const json& attrs) {
  AttrReader r(op, attrs, {"axis"});
  int64_t axis = softmax_axis(op, in, r);
  const auto& s = in[0].shape;
  FuncBuilder fb;
  Buffer data = fb.param("data", s);
  Buffer o = fb.param("out", out.shape);
  Buffer mx = scratch("max_val", {1});
  Buffer sum = scratch("sum_val", {1});
  LoopNest outer;
  std::vector<Expr> base;
  for (size_t k = 0; k < s.size(); ++k)
    base.push_back(static_cast<int64_t>(k) == axis ? nullptr : outer.axis("i" + std::to_string(k), s[k]));
  // Three passes over the axis, each with its own loop variable.
  auto pass = [&](const std::string& name, const std::function<Stmt(const std::vector<Expr>&)>& body) {
    LoopNest l;
    std::vector<Expr> idx = base;
    idx[axis] = l.axis(name, s[axis]);
    return l.wrap(body(idx));
  };
  // The maximum and the sum are reduced in one-element buffers, then bound to scalars.
  Var row_max = MakeVar("row_max", DataType::Float(32));
  Var row_sum = MakeVar("row_sum", DataType::Float(32));
  Stmt divide = pass("k2", [&](const std::vector<Expr>& idx) {
    if (log) return store(o, sub(sub(load(data, idx), row_max), call("log", {row_sum})), idx);
    return store(o, fdiv(load(o, idx), row_sum), idx);
  });
  Stmt exp_sum = pass("k1", [&](const std::vector<Expr>& idx) {
    return SeqStmt({store(o, call("exp", {sub(load(data, idx), row_max)}), idx),
                    store(sum, add(load(sum, {ci(0)}), load(o, idx)), {ci(0)})});
  });
  Stmt max_loop = pass("k0", [&](const std::vector<Expr>& idx) {
    return store(mx, max_(load(mx, {ci(0)}), load(data, idx)), {ci(0)});
  });
  Stmt after_max = SeqStmt({store(sum, cf(0), {ci(0)}), exp_sum, LetStmt(row_sum, load(sum, {ci(0)}), divide)});
  std::vector<Stmt> body = {store(mx, cf(-kInf), {ci(0)}), max_loop, LetStmt(row_max, load(mx, {ci(0)}), after_max)};
  Stmt loops = outer.wrap(SeqStmt(body));
  return fb.finish(fname, Allocate(mx, "global", Allocate(sum, "global", loops)));
}

}  // namespace

void register_pool_ops(std::vector<OpDef>& ops) {
  ops.push_back(pool_op("max_pool2d"));
  ops.push_back(pool_op("avg_pool2d"));
  ops.push_back(OpDef{"global_avg_pool2d", gap_infer, gap_build});
  for (bool log : {false, true}) {
    std::string name = log ? "log_softmax" : "softmax";
    ops.push_back(OpDef{
        name, [name](const std::vector<TensorType>& in, const json& attrs) { return softmax_infer(name, in, attrs); },
        [name, log](const std::string& fname, const std::vector<TensorType>& in, const TensorType& out,
                    const json& attrs) { return softmax_build(name, log, fname, in, out, attrs); }});
  }
}

}  // namespace ops
}  // namespace mtir
