// resize_nearest_neighbor and resize_bilinear: TFLite's RESIZE_NEAREST_NEIGHBOR and
// RESIZE_BILINEAR on NHWC data to a size known at compile time, with TFLite's
// align_corners and half_pixel_centers. The source coordinates are computed as the
// reference kernels compute them: in float32 (scale = in / out, or (in - 1) / (out - 1)
// with align_corners; nearest rounds half away from zero with align_corners, else
// floors) for nearest and float bilinear; for integer bilinear (TFLM's int8 kernel,
// ResizeBilinearInteger) in fixed point with 10 fractional bits, the four weighted taps
// summed to 20 fractional bits and rounded half away from zero.
#include "ops/op_util.h"

namespace mtir {
namespace ops {
namespace {

using json = nlohmann::json;

struct ResizeParams {
  int64_t oh, ow;
  bool align_corners, half_pixel_centers;
};

ResizeParams resize_params(const std::string& op, const std::vector<TensorType>& in, const json& attrs) {
  AttrReader r(op, attrs, {"size", "align_corners", "half_pixel_centers"});
  check_inputs(op, in, 1, {"data"}, Dtypes::kNumeric);
  check_rank(op, in, 0, "data (NHWC)", 4);
  auto size = r.get_ints("size", 2, 1, "two positive integers [height, width]", std::nullopt);
  ResizeParams p{size[0], size[1], r.get_bool("align_corners", false), r.get_bool("half_pixel_centers", false)};
  if (p.align_corners && p.half_pixel_centers) fail(op, "align_corners and half_pixel_centers cannot both be set");
  return p;
}

TensorType resize_infer(const std::string& op, const std::vector<TensorType>& in, const json& attrs) {
  ResizeParams p = resize_params(op, in, attrs);
  const auto& s = in[0].shape;
  return TensorType{in[0].dtype, {s[0], p.oh, p.ow, s[3]}};
}

// TFLite's scale from output to input coordinates, a float32 as the kernels compute it.
float resize_scale(int64_t in, int64_t out, bool align_corners) {
  if (align_corners && out > 1) return static_cast<float>(in - 1) / static_cast<float>(out - 1);
  return static_cast<float>(in) / static_cast<float>(out);
}

// ---- nearest ----------------------------------------------------------------------

// The input row (column) for output row `o`: min(floor((o + offset) * scale), n - 1), or
// round instead of floor with align_corners; at least 0 with half-pixel centers.
Expr nearest_source(Expr o, int64_t in, int64_t out, const ResizeParams& p) {
  if (in == 1) return ci(0);
  Expr x = mul(add(Cast(DataType::Float(32), o), cf(p.half_pixel_centers ? 0.5 : 0.0)),
               cf(resize_scale(in, out, p.align_corners)));
  Expr v = min_(Cast(kI32, call(p.align_corners ? "round" : "floor", {x})), ci(in - 1));
  return p.half_pixel_centers ? max_(v, ci(0)) : v;
}

TensorType nearest_infer(const std::vector<TensorType>& in, const json& attrs) {
  return resize_infer("resize_nearest_neighbor", in, attrs);
}

PrimFunc nearest_build(const std::string& fname, const std::vector<TensorType>& in, const TensorType& out,
                       const json& attrs) {
  ResizeParams p = resize_params("resize_nearest_neighbor", in, attrs);
  const auto& s = in[0].shape;
  FuncBuilder fb;
  Buffer data = fb.param("data", s, in[0].dtype);
  Buffer o = fb.param("out", out.shape, out.dtype);
  LoopNest rows, cols;
  Expr n = rows.axis("n", s[0]), y = rows.axis("y", p.oh);
  Expr x = cols.axis("x", p.ow), c = cols.axis("c", s[3]);
  Var iy = ivar("iy"), ix = ivar("ix");
  Stmt inner = LetStmt(ix, nearest_source(x, s[2], p.ow, p), store(o, load(data, {n, iy, ix, c}), {n, y, x, c}));
  return fb.finish(fname, rows.wrap(LetStmt(iy, nearest_source(y, s[1], p.oh, p), cols.wrap(inner))));
}

// ---- bilinear ---------------------------------------------------------------------

TensorType bilinear_infer(const std::vector<TensorType>& in, const json& attrs) {
  TensorType t = resize_infer("resize_bilinear", in, attrs);
  if (t.dtype != DataType::Float(32) && t.dtype != DataType::Int(8) && t.dtype != DataType::Int(16))
    fail("resize_bilinear", "the data is " + t.dtype.str() + "; float32, int8 and int16 are supported");
  return t;
}

// One axis of the interpolation: the two source indices and the source coordinate.
struct Taps {
  Var pos, lo, hi;  // pos: float32 coordinate, or int32 with 10 fractional bits
  std::vector<std::pair<Var, Expr>> lets;
  Stmt bind(Stmt body) const {
    for (size_t k = lets.size(); k-- > 0;) body = LetStmt(lets[k].first, lets[k].second, body);
    return body;
  }
};

// ComputeInterpolationValues: pos = (o + 0.5) * scale - 0.5 with half-pixel centers,
// else o * scale; lo = max(floor(pos), 0), hi = min(ceil(pos), n - 1).
Taps float_taps(const std::string& a, Expr o, int64_t in, int64_t out, const ResizeParams& p) {
  Taps t{MakeVar(a + "_pos", DataType::Float(32)), ivar(a + "0"), ivar(a + "1"), {}};
  const float scale = resize_scale(in, out, p.align_corners);
  Expr of = Cast(DataType::Float(32), o);
  Expr pos = p.half_pixel_centers ? sub(mul(add(of, cf(0.5)), cf(scale)), cf(0.5)) : mul(of, cf(scale));
  t.lets = {{t.pos, pos},
            {t.lo, max_(Cast(kI32, call("floor", {Expr(t.pos)})), ci(0))},
            {t.hi, min_(Cast(kI32, call("ceil", {Expr(t.pos)})), ci(in - 1))}};
  return t;
}

// ComputeInterpolationValuesInteger: scale_10 = round(2^10 * in / out) (or with in - 1,
// out - 1 under align_corners); pos = o * scale_10 (+ scale_10 / 2 - 2^9 with half-pixel
// centers); lo = max(pos / 2^10, 0), hi = min((pos + 2^10 - 1) / 2^10, n - 1), C division.
Taps int_taps(const std::string& a, Expr o, int64_t in, int64_t out, const ResizeParams& p) {
  Taps t{ivar(a + "_pos"), ivar(a + "0"), ivar(a + "1"), {}};
  int64_t scale = ((int64_t{1} << 10) * in + out / 2) / out;
  if (p.align_corners && out > 1) scale = ((int64_t{1} << 10) * (in - 1) + (out - 1) / 2) / (out - 1);
  Expr pos = mul(o, ci(scale));
  if (p.half_pixel_centers) pos = add(pos, ci(scale / 2 - (1 << 9)));
  auto cdiv = [](Expr x, int64_t d) { return Binary(ExprKind::Div, x, ci(d)); };
  t.lets = {{t.pos, pos},
            {t.lo, max_(cdiv(Expr(t.pos), 1 << 10), ci(0))},
            {t.hi, min_(cdiv(add(Expr(t.pos), ci((1 << 10) - 1)), 1 << 10), ci(in - 1))}};
  return t;
}

PrimFunc bilinear_build(const std::string& fname, const std::vector<TensorType>& in, const TensorType& out,
                        const json& attrs) {
  ResizeParams p = resize_params("resize_bilinear", in, attrs);
  const auto& s = in[0].shape;
  const DataType dt = in[0].dtype;
  const bool integer = !dt.is_float();
  FuncBuilder fb;
  Buffer data = fb.param("data", s, dt);
  Buffer o = fb.param("out", out.shape, out.dtype);
  LoopNest rows, cols, chans;
  Expr n = rows.axis("n", s[0]), y = rows.axis("y", p.oh);
  Expr x = cols.axis("x", p.ow);
  Expr c = chans.axis("c", s[3]);
  Taps ty = integer ? int_taps("y", y, s[1], p.oh, p) : float_taps("y", y, s[1], p.oh, p);
  Taps tx = integer ? int_taps("x", x, s[2], p.ow, p) : float_taps("x", x, s[2], p.ow, p);
  auto at = [&](const Var& yy, const Var& xx) { return load(data, {n, yy, xx, c}); };
  Expr value;
  if (!integer) {
    // in00 * (1 - dy) * (1 - dx) + in10 * dy * (1 - dx) + in01 * (1 - dy) * dx + in11 * dy * dx,
    // dy = pos_y - y0, left to right in float32 as the reference kernel writes it.
    const DataType f32 = DataType::Float(32);
    Expr dy = sub(Expr(ty.pos), Cast(f32, Expr(ty.lo))), dx = sub(Expr(tx.pos), Cast(f32, Expr(tx.lo)));
    Expr ny = sub(cf(1), dy), nx = sub(cf(1), dx);
    value = add(add(add(mul(mul(at(ty.lo, tx.lo), ny), nx), mul(mul(at(ty.hi, tx.lo), dy), nx)),
                    mul(mul(at(ty.lo, tx.hi), ny), dx)),
                mul(mul(at(ty.hi, tx.hi), dy), dx));
  } else {
    // The weights in 10 fractional bits; each product of a value (|v| <= 2^15) and two
    // weights (each within [-2^9, 2^10 + 2^9]) and their sum fit an int64.
    const DataType i64 = DataType::Int(64);
    Expr wy = sub(Expr(ty.pos), mul(Expr(ty.lo), ci(1 << 10))), wx = sub(Expr(tx.pos), mul(Expr(tx.lo), ci(1 << 10)));
    Expr vy = sub(ci(1 << 10), wy), vx = sub(ci(1 << 10), wx);
    auto term = [&](Expr v, Expr a, Expr b) { return mul(mul(Cast(i64, v), Cast(i64, a)), Cast(i64, b)); };
    Expr sum = add(add(add(term(at(ty.lo, tx.lo), vy, vx), term(at(ty.hi, tx.lo), wy, vx)), term(at(ty.lo, tx.hi), vy, wx)),
                   term(at(ty.hi, tx.hi), wy, wx));
    Var acc = MakeVar("acc", i64);
    const int64_t half = int64_t{1} << 19;
    Expr rounded = Binary(ExprKind::Div,
                          add(Expr(acc), Select(Binary(ExprKind::GT, Expr(acc), IntImm(i64, 0)), IntImm(i64, half),
                                                IntImm(i64, -half))),
                          IntImm(i64, int64_t{1} << 20));
    Stmt st = store(o, Cast(dt, rounded), {n, y, x, c});
    return fb.finish(fname, rows.wrap(ty.bind(cols.wrap(tx.bind(chans.wrap(LetStmt(acc, sum, st)))))));
  }
  return fb.finish(fname, rows.wrap(ty.bind(cols.wrap(tx.bind(chans.wrap(store(o, value, {n, y, x, c})))))));
}

}  // namespace

void register_resize_ops(std::vector<OpDef>& ops) {
  ops.push_back(OpDef{"resize_nearest_neighbor", nearest_infer, nearest_build});
  ops.push_back(OpDef{"resize_bilinear", bilinear_infer, bilinear_build});
}

}  // namespace ops
}  // namespace mtir
