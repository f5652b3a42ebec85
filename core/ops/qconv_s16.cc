// The multiply-accumulate operators TFLite Micro runs in int16x8 (int16 activations with
// zero point 0, int8 weights, int64 or int32 bias) and the transposed convolution in
// float32, int8 and int16x8:
//   qconv2d_s16        CONV_2D and DEPTHWISE_CONV_2D (groups = C) on int16 data
//   qdense_s16         FULLY_CONNECTED on int16 data
//   qtranspose_conv2d  TRANSPOSE_CONV on int8 or int16 data
//   transpose_conv2d   TRANSPOSE_CONV on float32 data
// The arithmetic is TFLM's reference kernels' (reference/integer_ops/conv.h,
// depthwise_conv.h, fully_connected.h, transpose_conv.h), see docs/quantization.md:
// the accumulator is int64 (int32 with an int32 bias, where TFLM takes one: CONV_2D,
// FULLY_CONNECTED); an int64 accumulator is requantized by
// TFLM's 64-bit MultiplyByQuantizedMultiplier (the multiplier rounded to 16 bits, one
// rounding shift), an int32 one by the usual two-rounding form (quant_util.h). These are
// plain loop nests, apart from the heavily scheduled int8 qconv2d/qdense (qconv.cc).
#include <algorithm>
#include <limits>

#include "ir/substitute.h"
#include "ops/op_util.h"
#include "ops/quant_util.h"

namespace mtir {
namespace ops {
namespace {

using nlohmann::json;

Expr i64(int64_t v) { return IntImm(kI64, v); }
Expr add64(Expr a, Expr b) { return Binary(ExprKind::Add, std::move(a), std::move(b)); }

// What the three ops share: the optional inputs after data and weight, the quantization
// and the accumulator.
struct MacParams {
  DataType data;             // int8 or int16 activations
  int64_t channels = 0;      // output channels
  bool has_bias = false;
  bool has_table = false;    // the int32 [O, 2] (multiplier, shift) table of per-channel multipliers
  size_t bias_index = 0, table_index = 0;
  bool wide = false;         // int64 accumulator
  QuantAttrs q;
  ActBounds bounds;
  bool uniform = true;       // every channel has the same multiplier
};

const std::vector<std::string> kQuantKeys = {"input_scale", "input_zero_point", "weight_scale", "weight_zero_point",
                                             "output_scale", "output_zero_point", "activation", "accumulator",
                                             "schedule"};

// The `unroll` schedule (ops/schedules.h): prepare_quantized records it in
// attrs["schedule"]; on where the attribute does not say.
bool unroll_schedule(const json& attrs) {
  if (!attrs.is_object() || !attrs.contains("schedule") || !attrs["schedule"].is_object()) return true;
  const json& s = attrs["schedule"];
  return !s.contains("unroll") || !s["unroll"].is_boolean() || s["unroll"].get<bool>();
}

// A reduction loop over [0, extent): with `unroll`, four iterations a step as straight
// line code (the unroll_loops pass), the remainder a short loop; the same additions in
// the same order.
Stmt reduction_loop(const std::string& name, int64_t extent, bool unroll, const std::function<Stmt(Expr)>& body) {
  if (extent == 1) return body(ci(0));
  const int64_t factor = unroll && extent >= 4 ? 4 : 1;
  const int64_t steps = extent / factor, rest = extent % factor;
  std::vector<Stmt> parts;
  Var outer = ivar(name + "o");
  if (factor == 1) {
    parts.push_back(For(outer, ci(0), ci(steps), ForKind::kSerial, body(outer)));
  } else {
    Var inner = ivar(name + "i");
    Stmt four = For(inner, ci(0), ci(factor), ForKind::kUnrolled, body(add(mul(outer, ci(factor)), inner)));
    parts.push_back(steps == 1 ? substitute(four, outer, ci(0)) : For(outer, ci(0), ci(steps), ForKind::kSerial, four));
  }
  if (rest > 0) {
    Var r = ivar(name + "r");
    parts.push_back(For(r, ci(0), ci(rest), ForKind::kUnrolled, body(add(r, ci(steps * factor)))));
  }
  return SeqStmt(parts);
}

// Inputs from index 2 on: an optional bias [O] (int32 or int64; int32 only for int8
// data) and an optional requant table int32 [O, 2], told apart by rank.
MacParams mac_params(const std::string& op, const std::vector<TensorType>& in, const AttrReader& r,
                     int64_t channels) {
  MacParams p;
  p.data = in[0].dtype;
  p.channels = channels;
  for (size_t i = 2; i < in.size(); ++i) {
    if (in[i].shape.size() == 1 && !p.has_bias && !p.has_table) {
      if (in[i].shape[0] != channels)
        fail(op, "the bias has " + std::to_string(in[i].shape[0]) + " elements, the output has " +
                     std::to_string(channels) + " channels");
      bool ok = in[i].dtype == kI64 ? p.data == kI16 : in[i].dtype == kI32;
      if (!ok)
        fail(op, "the bias is " + in[i].dtype.str() + "; " + p.data.str() + " data takes an " +
                     (p.data == kI16 ? "int64 or int32" : "int32") + " bias");
      p.has_bias = true, p.bias_index = i;
    } else if (in[i].shape == std::vector<int64_t>{channels, 2} && in[i].dtype == kI32 && !p.has_table) {
      p.has_table = true, p.table_index = i;
    } else {
      fail(op, "input " + std::to_string(i) + " is " + in[i].str() + ": after data and weight come an optional bias [" +
                   std::to_string(channels) + "] and an optional requant table int32 [" + std::to_string(channels) +
                   ", 2]");
    }
  }
  p.q = read_quant_attrs(op, r, channels);
  if (p.data == kI16) {
    if (p.q.input_zero_point != 0 || p.q.output_zero_point != 0)
      fail(op, "int16 activations are symmetric: input_zero_point and output_zero_point must be 0");
    p.bounds = activation_bounds(p.q.activation, p.q.output_scale, 0, kI16);
  } else {
    p.bounds = p.q.bounds;
  }
  // int16 data: int64, but int32 with an int32 bias (TFLM's templates take the bias type
  // as the accumulator's); int8 data: int32.
  bool bias64 = p.has_bias && in[p.bias_index].dtype == kI64;
  bool bias32 = p.has_bias && in[p.bias_index].dtype == kI32;
  std::string def = p.data == kI16 && !bias32 ? "int64" : "int32";
  p.wide = r.get_string("accumulator", def, {"int32", "int64"}) == "int64";
  if (p.wide && p.data != kI16) r.bad("accumulator", "\"int32\" for int8 data");
  if (bias64 && !p.wide) r.bad("accumulator", "\"int64\" with an int64 bias");
  for (const auto& m : p.q.multipliers)
    p.uniform = p.uniform && m.multiplier == p.q.multipliers[0].multiplier && m.shift == p.q.multipliers[0].shift;
  // TFLM's 64-bit MultiplyByQuantizedMultiplier shifts right by 15 - shift: shift < 8.
  if (p.wide)
    for (size_t c = 0; c < p.q.multipliers.size(); ++c)
      if (p.q.multipliers[c].shift > 7)
        fail(op, "requantization multiplier out of range (input_scale * weight_scale" +
                     (p.q.multipliers.size() > 1 ? "[" + std::to_string(c) + "]" : std::string()) +
                     " / output_scale is 128 or more; TFLM's int64 requantization takes less)");
  return p;
}

// Building needs the table where the multipliers differ (a graph gets it from
// prepare_quantized, after import has inferred the types without it).
void need_table(const std::string& op, const MacParams& p) {
  if (!p.uniform && !p.has_table)
    fail(op, "the channels' multipliers differ and there is no requant table input (prepare_quantized adds it)");
}

// The output value of channel `c` from its accumulator (int32 or int64 by p.wide).
Expr requantize(const MacParams& p, Expr acc, const Buffer* table, Expr c) {
  Expr y;
  if (p.uniform) {
    const QuantMultiplier& m = p.q.multipliers[0];
    if (p.wide) {
      y = requantize_wide(acc, i64(reduced_multiplier(m.multiplier)), i64(15 - m.shift));
    } else {
      y = multiply_by_quantized_multiplier(acc, m);
    }
  } else {
    Expr m = load(*table, {c, ci(0)}), s = load(*table, {c, ci(1)});
    if (p.wide) {
      Expr reduced = Select(lt(m, ci(0x7FFF0000)), call("shift_right", {add(m, ci(1 << 15)), ci(16)}), ci(0x7FFF));
      y = requantize_wide(acc, Cast(kI64, reduced), Cast(kI64, sub(ci(15), s)));
    } else {
      y = multiply_by_quantized_multiplier(acc, m, s);
    }
  }
  return saturate_to(p.data, y, p.q.output_zero_point, p.bounds);  // int16: zero point 0
}

// One product term: x * w (x - input_zero_point for int8) in int32.
Expr product(const MacParams& p, Expr x, Expr w) {
  Expr xi = Cast(kI32, std::move(x)), wi = Cast(kI32, std::move(w));
  if (p.q.input_zero_point != 0) xi = sub(xi, ci(p.q.input_zero_point));
  return mul(xi, wi);
}

// An int64 accumulator takes its products in int32 partial sums of at most this many:
// |int16 * int8| <= 2^22, so 256 of them stay within 2^30, and the total is exactly
// TFLM's int64 sum whatever the grouping. The int32 sums are what a Cortex-M does in
// one SMLABB each; a chain of 64-bit adds GCC reassociates into more instructions.
constexpr int64_t kPartialProducts = 256;

// The shared kernel frame: acc = bias[c] (or 0), the products added by sum(), then
// out = requantize(acc).
struct MacKernel {
  FuncBuilder fb;
  Buffer data, weight, bias, table, out, acc, part;
  const MacParams& p;
  MacKernel(const MacParams& params, const std::vector<TensorType>& in, const TensorType& o) : p(params) {
    data = fb.param("data", in[0].shape, in[0].dtype);
    weight = fb.param("weight", in[1].shape, in[1].dtype);
    for (size_t i = 2; i < in.size(); ++i) {
      if (p.has_bias && i == p.bias_index) bias = fb.param("bias", in[i].shape, in[i].dtype);
      if (p.has_table && i == p.table_index) table = fb.param("requant", in[i].shape, kI32);
    }
    out = fb.param("out", o.shape, o.dtype);
    acc = scratch("acc", {1}, p.wide ? kI64 : kI32);
    part = scratch("part", {1}, kI32);
  }
  Expr acc_value() const { return load(acc, {ci(0)}); }
  // acc += the products prod(k) for k in [0, extent), a reduction loop (unrolled by four
  // with `unroll`); with an int64 acc through int32 partial sums.
  Stmt sum(const std::string& name, int64_t extent, bool unroll, const std::function<Expr(Expr)>& prod) const {
    if (!p.wide)
      return reduction_loop(name, extent, unroll,
                            [&](Expr k) { return store(acc, add(acc_value(), prod(k)), {ci(0)}); });
    auto chunk = [&](Expr base, int64_t n) {
      Stmt adds = reduction_loop(name, n, unroll, [&](Expr k) {
        return store(part, add(load(part, {ci(0)}), prod(add(base, k))), {ci(0)});
      });
      return SeqStmt({store(part, ci(0), {ci(0)}), adds,
                      store(acc, add64(acc_value(), Cast(kI64, load(part, {ci(0)}))), {ci(0)})});
    };
    const int64_t whole = extent / kPartialProducts, rest = extent % kPartialProducts;
    std::vector<Stmt> parts;
    if (whole == 1) parts.push_back(chunk(ci(0), kPartialProducts));
    if (whole > 1) {
      Var c = ivar(name + "_chunk");
      parts.push_back(For(c, ci(0), ci(whole), ForKind::kSerial, chunk(mul(c, ci(kPartialProducts)), kPartialProducts)));
    }
    if (rest > 0) parts.push_back(chunk(ci(whole * kPartialProducts), rest));
    return SeqStmt(parts);
  }
  Stmt init(Expr c) const {
    Expr v = p.wide ? i64(0) : ci(0);
    if (p.has_bias) v = p.wide ? Cast(kI64, load(bias, {c})) : load(bias, {c});
    return store(acc, v, {ci(0)});
  }
  Stmt finish_out(Expr c, std::vector<Expr> idx) const {
    return store(out, requantize(p, acc_value(), p.has_table ? &table : nullptr, std::move(c)), std::move(idx));
  }
  PrimFunc build(const std::string& fname, Stmt body) const {
    if (p.wide) body = Allocate(part, "global", body);
    return fb.finish(fname, Allocate(acc, "global", body));
  }
};

void check_data(const std::string& op, const std::vector<TensorType>& in, const std::vector<DataType>& data_types) {
  if (in.size() < 2) fail(op, "takes data, weight, an optional bias and an optional requant table");
  bool ok = false;
  for (auto t : data_types) ok = ok || in[0].dtype == t;
  if (!ok) {
    std::string list;
    for (auto t : data_types) list += (list.empty() ? "" : " or ") + t.str();
    fail(op, "input 'data' has type " + in[0].dtype.str() + "; " + list + " is required");
  }
  check_dtype(op, in, 1, "weight", kI8);
}

// ---- qconv2d_s16 --------------------------------------------------------------------
// CONV_2D / DEPTHWISE_CONV_2D on int16 NHWC data with an OHWI int8 filter [O, KH, KW,
// C / groups] (depthwise: groups = C, filter [C * M, KH, KW, 1]); padded taps add 0.

struct Conv {
  int64_t sh, sw, dh, dw, pt, pl, pb, pr, groups, oh, ow;
};

Conv conv_geometry(const std::string& op, const AttrReader& r, const std::vector<TensorType>& in) {
  check_rank(op, in, 0, "data (NHWC)", 4);
  check_rank(op, in, 1, "weight (OHWI)", 4);
  auto s = r.get_ints("strides", 2, 1, "positive integers", std::vector<int64_t>{1, 1});
  auto d = r.get_ints("dilation", 2, 1, "positive integers", std::vector<int64_t>{1, 1});
  auto pad = r.get_ints("padding", 4, 0, "non-negative integers", std::vector<int64_t>{0, 0, 0, 0});
  Conv g{s[0], s[1], d[0], d[1], pad[0], pad[1], pad[2], pad[3], r.get_int("groups", 1), 0, 0};
  const auto& x = in[0].shape;
  const auto& w = in[1].shape;
  if (g.groups < 1 || x[3] % g.groups != 0 || w[0] % g.groups != 0 || w[3] * g.groups != x[3])
    fail(op, "groups " + std::to_string(g.groups) + " does not fit data " + in[0].str() + " and weight " + in[1].str() +
                 " (the weight's last dimension times groups must be the data's channels, and groups must divide the "
                 "output channels)");
  int64_t eh = (w[1] - 1) * g.dh + 1, ew = (w[2] - 1) * g.dw + 1;
  int64_t hh = x[1] + g.pt + g.pb, ww = x[2] + g.pl + g.pr;
  if (hh < eh || ww < ew) fail(op, "the padded input is smaller than the dilated kernel");
  g.oh = (hh - eh) / g.sh + 1;
  g.ow = (ww - ew) / g.sw + 1;
  return g;
}

const std::vector<std::string> kConvKeys = [] {
  std::vector<std::string> k = kQuantKeys;
  for (const char* e : {"strides", "padding", "dilation", "groups", "layout"}) k.push_back(e);
  return k;
}();

TensorType qconv_s16_infer(const std::vector<TensorType>& in, const json& attrs) {
  const std::string op = "qconv2d_s16";
  AttrReader r(op, attrs, kConvKeys);
  r.get_string("layout", "NHWC", {"NHWC"});
  check_data(op, in, {kI16});
  Conv g = conv_geometry(op, r, in);
  mac_params(op, in, r, in[1].shape[0]);
  return TensorType{kI16, {in[0].shape[0], g.oh, g.ow, in[1].shape[0]}};
}

PrimFunc qconv_s16_build(const std::string& fname, const std::vector<TensorType>& in, const TensorType& out,
                         const json& attrs) {
  const std::string op = "qconv2d_s16";
  AttrReader r(op, attrs, kConvKeys);
  Conv g = conv_geometry(op, r, in);
  MacParams p = mac_params(op, in, r, in[1].shape[0]);
  need_table(op, p);
  MacKernel k(p, in, out);
  const auto& x = in[0].shape;
  const auto& w = in[1].shape;
  const int64_t per_group = w[0] / g.groups, cin = w[3];
  const bool unroll = unroll_schedule(attrs);
  LoopNest outer;
  Expr n = outer.axis("n", x[0]), oy = outer.axis("oy", g.oh), ox = outer.axis("ox", g.ow), oc = outer.axis("oc", w[0]);
  const bool pad_rows = g.pt > 0 || g.pb > 0, pad_cols = g.pl > 0 || g.pr > 0;
  // One tap (ky, kx): whether it lies inside the input (null: always) and its products.
  auto tap = [&](Expr ky, Expr kx) {
    Expr iy = add(sub(mul(oy, ci(g.sh)), ci(g.pt)), mul(ky, ci(g.dh)));
    Expr ix = add(sub(mul(ox, ci(g.sw)), ci(g.pl)), mul(kx, ci(g.dw)));
    // By value: the tap's expressions outlive this call.
    auto prod = [&k, &p, n, oc, iy, ix, ky, kx, per_group, cin, groups = g.groups](Expr ic) {
      Expr chan = groups == 1 ? ic : add(mul(floordiv(oc, ci(per_group)), ci(cin)), ic);
      return product(p, load(k.data, {n, iy, ix, chan}), load(k.weight, {oc, ky, kx, ic}));
    };
    Expr inside;
    if (pad_rows) inside = and_(ge(iy, ci(0)), lt(iy, ci(x[1])));
    if (pad_cols) inside = and_(inside, and_(ge(ix, ci(0)), lt(ix, ci(x[2]))));
    return std::make_pair(inside, std::function<Expr(Expr)>(prod));
  };
  Var ky = ivar("ky");
  Stmt row;
  if (cin == 1) {
    // A depthwise tap is one product: the kernel row is the reduction (a padded tap adds 0).
    row = k.sum("kx", w[2], unroll, [&](Expr kx) {
      auto [inside, prod] = tap(ky, kx);
      return lazy_select(inside, prod(ci(0)), ci(0));
    });
  } else {
    Var kx = ivar("kx");
    auto [inside, prod] = tap(ky, kx);
    Stmt mac = k.sum("ic", cin, unroll, prod);
    if (inside) mac = IfThenElse(inside, mac);
    row = w[2] == 1 ? substitute(mac, kx, ci(0)) : For(kx, ci(0), ci(w[2]), ForKind::kSerial, mac);
  }
  Stmt taps = w[1] == 1 ? substitute(row, ky, ci(0)) : For(ky, ci(0), ci(w[1]), ForKind::kSerial, row);
  Stmt body = SeqStmt({k.init(oc), taps, k.finish_out(oc, {n, oy, ox, oc})});
  return k.build(fname, outer.wrap(body));
}

// ---- qdense_s16 ---------------------------------------------------------------------
// FULLY_CONNECTED on int16 rows [N, K] with an int8 weight [M, K].

TensorType qdense_s16_infer(const std::vector<TensorType>& in, const json& attrs) {
  const std::string op = "qdense_s16";
  AttrReader r(op, attrs, kQuantKeys);
  check_data(op, in, {kI16});
  check_rank(op, in, 0, "data", 2);
  check_rank(op, in, 1, "weight", 2);
  if (in[0].shape[1] != in[1].shape[1])
    fail(op, "the data has rows of " + std::to_string(in[0].shape[1]) + " but the weight of " +
                 std::to_string(in[1].shape[1]));
  mac_params(op, in, r, in[1].shape[0]);
  return TensorType{kI16, {in[0].shape[0], in[1].shape[0]}};
}

PrimFunc qdense_s16_build(const std::string& fname, const std::vector<TensorType>& in, const TensorType& out,
                          const json& attrs) {
  const std::string op = "qdense_s16";
  AttrReader r(op, attrs, kQuantKeys);
  MacParams p = mac_params(op, in, r, in[1].shape[0]);
  need_table(op, p);
  MacKernel k(p, in, out);
  LoopNest outer;
  Expr n = outer.axis("n", in[0].shape[0]), m = outer.axis("m", in[1].shape[0]);
  Stmt mac = k.sum("k", in[0].shape[1], unroll_schedule(attrs),
                   [&](Expr kk) { return product(p, load(k.data, {n, kk}), load(k.weight, {m, kk})); });
  return k.build(fname, outer.wrap(SeqStmt({k.init(m), mac, k.finish_out(m, {n, m})})));
}

// ---- transposed convolution ---------------------------------------------------------
// TFLite's TRANSPOSE_CONV: data NHWC [N, H, W, C], weight [O, KH, KW, C], output
// [N, OH, OW, O] with input (iy, ix) feeding output (iy * sh - pt + fy, ix * sw - pl + fx).
// TFLM scatters; we gather: output row oy takes fy = u - iy * sh for u = oy + pt, so the
// input rows from ceil((u - KH + 1) / sh) on, at most ceil(KH / sh) of them, ascending.
// Their sum in ascending (iy, ix, c) order is the order TFLM's scatter adds them in, so
// the float32 result is TFLM's too.

struct Transposed {
  int64_t sh, sw, pt, pl, oh, ow;
};

const std::vector<std::string> kTransposedKeys = {"strides", "padding", "output_size"};

Transposed transposed_geometry(const std::string& op, const AttrReader& r, const std::vector<TensorType>& in) {
  check_rank(op, in, 0, "data (NHWC)", 4);
  check_rank(op, in, 1, "weight (OHWI)", 4);
  if (in[1].shape[3] != in[0].shape[3])
    fail(op, "the weight " + in[1].str() + " takes " + std::to_string(in[1].shape[3]) + " input channels, the data " +
                 in[0].str() + " has " + std::to_string(in[0].shape[3]));
  auto s = r.get_ints("strides", 2, 1, "positive integers", std::vector<int64_t>{1, 1});
  auto pad = r.get_ints("padding", 2, 0, "non-negative integers (top, left)", std::vector<int64_t>{0, 0});
  auto size = r.get_ints("output_size", 2, 1, "positive integers (height, width)", std::nullopt);
  return Transposed{s[0], s[1], pad[0], pad[1], size[0], size[1]};
}

// The gather loops for output (oy, ox), in TFLM's order.
// `channels(iy, ix, fy, fx)` adds one tap's channels.
Stmt transposed_taps(const Transposed& g, const std::vector<int64_t>& x, const std::vector<int64_t>& w, Expr oy,
                     Expr ox, const std::function<Stmt(Expr, Expr, Expr, Expr)>& channels) {
  auto taps = [](int64_t k, int64_t s) { return (k + s - 1) / s; };
  LoopNest ny, nx;
  Expr ty = ny.axis("ty", taps(w[1], g.sh));
  Expr tx = nx.axis("tx", taps(w[2], g.sw));
  Expr uy = add(oy, ci(g.pt)), ux = add(ox, ci(g.pl));
  Expr iy = add(floordiv(add(uy, ci(g.sh - w[1])), ci(g.sh)), ty);
  Expr ix = add(floordiv(add(ux, ci(g.sw - w[2])), ci(g.sw)), tx);
  Expr fy = sub(uy, mul(iy, ci(g.sh))), fx = sub(ux, mul(ix, ci(g.sw)));
  Expr row_ok = and_(and_(ge(iy, ci(0)), lt(iy, ci(x[1]))), ge(fy, ci(0)));
  Expr col_ok = and_(and_(ge(ix, ci(0)), lt(ix, ci(x[2]))), ge(fx, ci(0)));
  Stmt inner = IfThenElse(col_ok, channels(iy, ix, fy, fx));
  return ny.wrap(IfThenElse(row_ok, nx.wrap(inner)));
}

const std::vector<std::string> kQTransposedKeys = [] {
  std::vector<std::string> k = kQuantKeys;
  for (const auto& e : kTransposedKeys) k.push_back(e);
  return k;
}();

TensorType qtransposed_infer(const std::vector<TensorType>& in, const json& attrs) {
  const std::string op = "qtranspose_conv2d";
  AttrReader r(op, attrs, kQTransposedKeys);
  check_data(op, in, {kI8, kI16});
  Transposed g = transposed_geometry(op, r, in);
  mac_params(op, in, r, in[1].shape[0]);
  return TensorType{in[0].dtype, {in[0].shape[0], g.oh, g.ow, in[1].shape[0]}};
}

PrimFunc qtransposed_build(const std::string& fname, const std::vector<TensorType>& in, const TensorType& out,
                           const json& attrs) {
  const std::string op = "qtranspose_conv2d";
  AttrReader r(op, attrs, kQTransposedKeys);
  Transposed g = transposed_geometry(op, r, in);
  MacParams p = mac_params(op, in, r, in[1].shape[0]);
  need_table(op, p);
  MacKernel k(p, in, out);
  LoopNest outer;
  Expr n = outer.axis("n", in[0].shape[0]), oy = outer.axis("oy", g.oh), ox = outer.axis("ox", g.ow);
  Expr oc = outer.axis("oc", in[1].shape[0]);
  const bool unroll = unroll_schedule(attrs);
  Stmt taps = transposed_taps(g, in[0].shape, in[1].shape, oy, ox, [&](Expr iy, Expr ix, Expr fy, Expr fx) {
    return k.sum("c", in[0].shape[3], unroll,
                 [&](Expr c) { return product(p, load(k.data, {n, iy, ix, c}), load(k.weight, {oc, fy, fx, c})); });
  });
  return k.build(fname, outer.wrap(SeqStmt({k.init(oc), taps, k.finish_out(oc, {n, oy, ox, oc})})));
}

TensorType transposed_infer(const std::vector<TensorType>& in, const json& attrs) {
  const std::string op = "transpose_conv2d";
  AttrReader r(op, attrs, kTransposedKeys);
  check_inputs(op, in, 2, {"data", "weight", "bias"});
  Transposed g = transposed_geometry(op, r, in);
  if (in.size() > 2 && in[2].shape != std::vector<int64_t>{in[1].shape[0]})
    fail(op, "the bias must be [" + std::to_string(in[1].shape[0]) + "], it is " + in[2].str());
  return TensorType{kF32, {in[0].shape[0], g.oh, g.ow, in[1].shape[0]}};
}

PrimFunc transposed_build(const std::string& fname, const std::vector<TensorType>& in, const TensorType& out,
                          const json& attrs) {
  AttrReader r("transpose_conv2d", attrs, kTransposedKeys);
  Transposed g = transposed_geometry("transpose_conv2d", r, in);
  FuncBuilder fb;
  Buffer data = fb.param("data", in[0].shape, kF32), weight = fb.param("weight", in[1].shape, kF32), bias;
  if (in.size() > 2) bias = fb.param("bias", in[2].shape, kF32);
  Buffer o = fb.param("out", out.shape, kF32);
  Buffer acc = scratch("acc", {1}, kF32);
  LoopNest outer;
  Expr n = outer.axis("n", in[0].shape[0]), oy = outer.axis("oy", g.oh), ox = outer.axis("ox", g.ow);
  Expr oc = outer.axis("oc", in[1].shape[0]);
  Stmt taps = transposed_taps(g, in[0].shape, in[1].shape, oy, ox, [&](Expr iy, Expr ix, Expr fy, Expr fx) {
    return reduction_loop("c", in[0].shape[3], true, [&](Expr c) {
      Expr prod = Binary(ExprKind::Mul, load(data, {n, iy, ix, c}), load(weight, {oc, fy, fx, c}));
      return store(acc, Binary(ExprKind::Add, load(acc, {ci(0)}), prod), {ci(0)});
    });
  });
  Expr result = load(acc, {ci(0)});
  if (in.size() > 2) result = Binary(ExprKind::Add, result, load(bias, {oc}));
  Stmt body = SeqStmt({store(acc, cf(0.0), {ci(0)}), taps, store(o, result, {n, oy, ox, oc})});
  return fb.finish(fname, Allocate(acc, "global", outer.wrap(body)));
}

}  // namespace

void register_qconv_s16_ops(std::vector<OpDef>& ops) {
  ops.push_back(OpDef{"qconv2d_s16", qconv_s16_infer, qconv_s16_build});
  ops.push_back(OpDef{"qdense_s16", qdense_s16_infer, qdense_s16_build});
  ops.push_back(OpDef{"qtranspose_conv2d", qtransposed_infer, qtransposed_build});
  ops.push_back(OpDef{"transpose_conv2d", transposed_infer, transposed_build});
}

}  // namespace ops
}  // namespace mtir
