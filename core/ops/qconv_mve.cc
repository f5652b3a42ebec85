// Schedule mve: the matrix-product core of qconv2d and qdense (qconv_gemm.cc) for
// Helium, Armv8.1-M's vector extension (Cortex-M55). The weights stay int8 rows of the
// reduction (OHWI), the pixels int8 too: read where they lie (dense rows, unpadded 1x1
// convolutions) or gathered once per pixel pair into an int8 column (im2col). Each step
// is T.vmladava over 16 lanes of one pixel and one channel, the C backend's VLDRB.8 pair
// and VMLADAVA.S8 (CMSIS-NN's arm_nn_mat_mult_nt_t_s8 computes the same way); a last
// partial step takes the lanes that remain, tail-predicated with VCTP. The input zero
// point is folded into the bias (prepare_quantized), so the products are of raw int8
// values and padding gathers the zero point. The 2x2 tile of `block` (two pixels, two
// channels: each loaded vector feeds two dot products) and the requantization (scalar,
// per output, exactly as the other schedules) are the core's; under a (multiplier,
// shift) table, whose scalar form is TFLite's whole case split, a tile has four channels
// of each pixel, whose sums requantize as one int32x4 (helium_requantize: VQRDMULH,
// VRSHL, a narrowing VSTRB.32).
#include "ops/qconv_internal.h"
#include "ir/substitute.h"

namespace mtir {
namespace ops {
namespace qconv_impl {
namespace {

constexpr int64_t kLanes = 16;  // int8 lanes of one 128-bit Q register
constexpr int kVectorChannels = 4;  // int32 lanes: the outputs requantized together

// Whether four output channels requantize as one int32x4 (helium_requantize): int8
// outputs of the tflite rule that lie contiguous, with a (multiplier, shift) table, whose
// scalar form is TFLite's whole case split, or a three-column table that
// mve_short_requant kept from the smmlar_requant rewrite (short reductions: there the
// requantization is much of the work, and the vector's share is below SMMLAR's scalar
// form; at K >= 64 it is not, KWS's layers +10%).
// Only where the pixels are read in place (1x1 convolutions, dense layers): through an
// im2col column the one-pixel tile costs more than it saves (IC's 3x3 layers +30%).
bool vector_outputs(const Gemm& g) {
  const bool table = g.table && (g.table_columns == 2 || (g.table_columns == 3 && g.sched->mve_short_requant));
  return g.out_flat && g.direct && !g.rule->onnx && g.rule->out == kI8 && table && g.cols >= kVectorChannels;
}

// mve_pair_requant (prepare_quantized kept the three-column table (M, r - 1, R) of a ReLU
// layer for it): the four sums of a tile, two pixels by two channels (or one pixel by
// four), requantize as one int32x4. TFLite's value is RoundingDivideByPOT(h, r) + zo with
// h = SaturatingRoundingDoublingHighMul(x, M) (VQRDMULH); with R = 2^(r-2) + zo * 2^(r-1)
// (the zero point folded) (h + 2R) >> r is floor((h + 2^(r-1)) / 2^r) + zo, which rounds
// half up where TFLite rounds half away from zero: they differ only for h < 0, where both
// are at most zo and the ReLU's bound (at least zo) takes both. No overflow and r < 32:
// prepare_quantized's smmlar_form_fits. One VQRDMULH, two VADD, a VMVN and VSHL per four
// outputs instead of SMMLAR's four scalar chains; lanes gathered from the table and
// scattered to the output where the tile is two pixels.
bool pair_outputs(const Gemm& g) {
  return g.sched->mve_pair_requant && g.out_flat && !g.rule->onnx && g.rule->out == kI8 && g.table &&
         g.table_columns == 3 && !g.sched->smmlar_requant && g.q->bounds.lo >= g.q->output_zero_point;
}

// mve_signed_requant (prepare_quantized kept the table of a layer mve_pair_requant and
// mve_short_requant leave, most often one without a ReLU bound: IC's convolutions fused
// with the residual ADD): the same tiles as pair_outputs, requantized with TFLite's own
// rounding (helium_requantize: VQRDMULH, then VRSHL with negative lanes one lower, so the
// half rounds away from zero), exact for every int32. Its stores are to the flat view, so
// fuse_elementwise applies a consumer to the four lanes at once.
bool signed_outputs(const Gemm& g) {
  const bool table = g.table && (g.table_columns == 2 || (g.table_columns == 3 && !g.sched->smmlar_requant));
  return g.sched->mve_signed_requant && g.out_flat && !g.rule->onnx && g.rule->out == kI8 && table && !pair_outputs(g);
}

// The lanes p * nc + c (c < nc) of `np` runs of nc values from `starts` with stride
// `stride`: one Ramp, or a Shuffle of one per run.
Expr runs(const std::vector<Expr>& starts, int64_t stride, int64_t nc) {
  std::vector<Expr> ramps;
  for (const Expr& start : starts) ramps.push_back(Ramp(start, ci(stride), static_cast<int>(nc)));
  if (ramps.size() == 1) return ramps[0];
  std::vector<int> lanes;
  for (int k = 0; k < static_cast<int>(nc) * static_cast<int>(ramps.size()); ++k) lanes.push_back(k);
  return Shuffle(ramps, lanes);
}

// The requantized tile of pair_outputs or signed_outputs: `sums` its four int32 sums
// (pixel-major), stored at the pixels' channels from oc0.
Stmt pair_requantize(const Gemm& g, const std::vector<Expr>& rows, Expr oc0, int64_t nc, Expr sums) {
  const int n = kVectorChannels;
  auto column = [&](int64_t k) {
    std::vector<Expr> starts(rows.size(), add(mul(oc0, ci(g.table_columns)), ci(k)));
    return load(g.table, {runs(starts, g.table_columns, nc)});
  };
  Expr bytes;
  if (pair_outputs(g)) {
    Expr h = Call(kI32.with_lanes(n), "multiply_by_quantized_multiplier", {sums, column(0), Broadcast(ci(0), n)});
    Expr y = call("shift_right", {add(add(h, column(2)), column(2)), add(column(1), Broadcast(ci(1), n))});
    if (!g.sched->fold_output_zero_point) y = add(y, Broadcast(ci(g.q->output_zero_point), n));
    y = min_(max_(y, Broadcast(ci(g.q->bounds.lo), n)), Broadcast(ci(g.q->bounds.hi), n));
    bytes = Cast(kI8.with_lanes(n), y);
  } else {
    bytes = requantize_lanes(*g.q, g.table_columns, sums, column, n);
  }
  // Consecutive pixels' outputs lie cols apart: lane 0's index plus a constant, which
  // the Helium store sees as a scatter at constant offsets.
  std::vector<Expr> starts;
  const Expr start = add(g.out_start(rows[0]), oc0);
  for (size_t p = 0; p < rows.size(); ++p) starts.push_back(p ? add(start, ci(static_cast<int64_t>(p) * g.cols)) : start);
  return store(g.out_flat, bytes, {runs(starts, 1, nc)});
}

Expr vmladava(Expr acc, Expr a, Expr b) { return Call(kI32, "vmladava", {std::move(acc), std::move(a), std::move(b)}); }

Stmt mve_requantize_tile(const Gemm& g, const Buffer& acc, const std::vector<Expr>& rows, Expr oc0, int64_t nc,
                         std::vector<Stmt> body);

// mve_direct: the reduction of pixels whose windows start at `windows` (inside the
// input): a loop over the kernel rows, each row's taps and 16-channel blocks unrolled,
// every step's pixel vectors one VLDRB.8 each from the input itself.
using StepAt = std::function<Stmt(Expr k0, int lanes, const std::function<Expr(int64_t)>& x_at)>;
Stmt window_reduction(const Gemm& g, const std::vector<Expr>& windows, const StepAt& step_at) {
  const Window& w = *g.window;
  Var rh = ivar("rh");
  std::vector<Stmt> taps;
  for (int64_t rw = 0; rw < w.kw; ++rw)
    for (int64_t c0 = 0; c0 < w.channels; c0 += kLanes) {
      Expr k0 = add(mul(rh, ci(w.kw * w.channels)), ci(rw * w.channels + c0));
      Expr row_offset = mul(rh, ci(w.tap_row));
      taps.push_back(step_at(k0, kLanes, [&](int64_t p) { return add(add(windows[p], row_offset), ci(rw * w.tap_col + c0)); }));
    }
  Stmt row = SeqStmt(taps);
  return w.kh == 1 ? substitute(row, rh, ci(0)) : For(rh, ci(0), ci(w.kh), ForKind::kSerial, row);
}

// `np` pixels (`rows`) times `nc` channels from `oc0`: int32 sums from the bias, the
// reduction 16 lanes a step, then the requantized outputs. The pixels' values come from
// col, from g.direct, or (mve_direct, `windows` given) from each pixel's window in the
// input, a kernel row a loop iteration with its taps unrolled.
Stmt mve_tile(const Gemm& g, const Buffer& col, const std::vector<Expr>& rows, Expr oc0, int64_t nc,
              const std::vector<Expr>& windows = {}) {
  const int64_t np = static_cast<int64_t>(rows.size()), k = g.k;
  Buffer acc = scratch("acc", {np * nc}, kI32);
  // `lanes` consecutive values from `start`; one lane (K % 16 == 1) is a scalar.
  auto run_of = [](const Buffer& b, Expr start, int lanes) {
    return lanes == 1 ? load(b, {std::move(start)}) : load(b, {Ramp(std::move(start), ci(1), lanes)});
  };
  const Buffer& source = !windows.empty() ? g.window->data : col ? col : g.direct;
  // Reduction values k0.. of the weight, pixel p's from x_at(p) in `source`.
  auto step_at = [&](Expr k0, int lanes, const std::function<Expr(int64_t)>& x_at) {
    std::vector<Stmt> s;
    for (int64_t p = 0; p < np; ++p)
      for (int64_t c = 0; c < nc; ++c) {
        Expr w = run_of(g.weight, add(mul(add(oc0, ci(c)), ci(k)), k0), lanes), x = run_of(source, x_at(p), lanes);
        Expr sum = load(acc, {ci(p * nc + c)});
        sum = lanes == 1 ? add(sum, mul(Cast(kI32, x), Cast(kI32, w))) : vmladava(sum, x, w);
        s.push_back(store(acc, sum, {ci(p * nc + c)}));
      }
    return SeqStmt(s);
  };
  auto step = [&](Expr k0, int lanes) {
    return step_at(k0, lanes, [&](int64_t p) { return col ? add(ci(p * k), k0) : add(g.row_start(rows[p]), k0); });
  };
  std::vector<Stmt> body;
  for (int64_t p = 0; p < np; ++p)
    for (int64_t c = 0; c < nc; ++c)
      body.push_back(store(acc, g.bias ? load(g.bias, {add(oc0, ci(c))}) : ci(0), {ci(p * nc + c)}));
  if (!windows.empty()) {
    body.push_back(window_reduction(g, windows, step_at));
    return mve_requantize_tile(g, acc, rows, oc0, nc, body);
  }
  // Whole steps, unrolled by four when `unroll` (the rest unrolled), then the tail.
  const int64_t steps = k / kLanes, factor = g.sched->unroll ? 4 : 1;
  const int64_t main_iters = steps / factor, rest = steps % factor;
  if (main_iters > 0) {
    Var ko = ivar("ko"), ki = ivar("ki");
    Stmt inner = factor == 1 ? step(mul(ko, ci(kLanes)), kLanes)
                             : For(ki, ci(0), ci(factor), ForKind::kUnrolled,
                                   step(mul(add(mul(ko, ci(factor)), ki), ci(kLanes)), kLanes));
    body.push_back(main_iters == 1 ? substitute(inner, ko, ci(0)) : For(ko, ci(0), ci(main_iters), ForKind::kSerial, inner));
  }
  for (int64_t r = 0; r < rest; ++r) body.push_back(step(ci((main_iters * factor + r) * kLanes), kLanes));
  if (k % kLanes) body.push_back(step(ci(steps * kLanes), static_cast<int>(k % kLanes)));
  return mve_requantize_tile(g, acc, rows, oc0, nc, body);
}

// The tile's requantized outputs from its sums in `acc`, after `body` (which computes
// them), as one scope of acc.
Stmt mve_requantize_tile(const Gemm& g, const Buffer& acc, const std::vector<Expr>& rows, Expr oc0, int64_t nc,
                         std::vector<Stmt> body) {
  const int64_t np = static_cast<int64_t>(rows.size());
  if (np * nc == kVectorChannels && (pair_outputs(g) || signed_outputs(g))) {
    std::vector<Expr> lanes;
    for (int64_t i = 0; i < np * nc; ++i) lanes.push_back(load(acc, {ci(i)}));
    body.push_back(pair_requantize(g, rows, oc0, nc, Shuffle(lanes, {0, 1, 2, 3})));
    return Allocate(acc, "local", SeqStmt(body));
  }
  for (int64_t p = 0; p < np; ++p) {
    if (nc == kVectorChannels && vector_outputs(g)) {
      // The four sums as one int32x4 (VLDRW of the accumulators), requantized and stored
      // as four bytes (VSTRB.32).
      Expr sums = load(acc, {Ramp(ci(p * nc), ci(1), kVectorChannels)});
      Expr bytes = helium_requantize(*g.q, g.table, g.table_columns, sums, oc0, kVectorChannels);
      body.push_back(store(g.out_flat, bytes, {Ramp(add(g.out_start(rows[p]), oc0), ci(1), kVectorChannels)}));
      continue;
    }
    for (int64_t c = 0; c < nc; ++c) {
      Expr oc = add(oc0, ci(c));
      body.push_back(g.store(rows[p], oc,
                             requantize_channel(*g.q, *g.rule, g.table, g.table_columns, load(acc, {ci(p * nc + c)}), oc,
                                                g.sched->fold_output_zero_point, g.sched->smlal_requant,
                                                g.sched->smmlar_requant)));
    }
  }
  return Allocate(acc, "local", SeqStmt(body));
}

// `np` pixels from `row0`: gathered (unless direct), then every channel pair, an odd
// last channel alone.
// With `windows` (mve_direct), the pixels' windows in the input, nothing gathered.
Stmt mve_pixels(const Gemm& g, Expr row0, int64_t np, int64_t chans, const std::vector<Expr>& windows = {}) {
  std::vector<Expr> rows;
  for (int64_t p = 0; p < np; ++p) rows.push_back(add(row0, ci(p)));
  Buffer col = g.direct || !windows.empty() ? nullptr : scratch("col", {np * g.k}, kI8);
  std::vector<Stmt> s;
  if (col)
    for (int64_t p = 0; p < np; ++p) s.push_back(g.gather(rows[p], col, ci(p)));
  const int64_t full = g.cols / chans;
  Var ob = ivar("ob");
  Stmt tile = mve_tile(g, col, rows, mul(ob, ci(chans)), chans, windows);
  s.push_back(full == 1 ? substitute(tile, ob, ci(0)) : For(ob, ci(0), ci(full), ForKind::kSerial, tile));
  if (g.cols % chans) s.push_back(mve_tile(g, col, rows, ci(full * chans), g.cols % chans, windows));
  Stmt body = SeqStmt(s);
  return col ? Allocate(col, "local", body) : body;
}

// mve_direct: the tiles of `pix` pixels (column pix * t on) whose windows all lie inside
// the input, in output rows [row_begin, row_end) and tiles [tile_begin, tile_end); none
// unless a row is whole tiles (the gathered loop's tiles never straddle rows then).
struct InteriorTiles {
  int64_t row_begin = 0, row_end = 0, tile_begin = 0, tile_end = 0;
  bool empty() const { return row_end <= row_begin || tile_end <= tile_begin; }
};
InteriorTiles interior_tiles(const Gemm& g, int64_t pix) {
  InteriorTiles t;
  if (!g.window || g.window->out_w % pix) return t;
  for (const OutputRange& r : g.window->rows)
    if (!r.check) t.row_begin = r.begin, t.row_end = r.end;
  for (const OutputRange& c : g.window->cols)
    if (!c.check) t.tile_begin = (c.begin + pix - 1) / pix, t.tile_end = c.end / pix;
  return t;
}

// mve_direct: the interior tiles, each pixel's window read in place.
Stmt interior_pixels(const Gemm& g, const InteriorTiles& t, int64_t pix, int64_t chans) {
  const Window& w = *g.window;
  Var oy = ivar("oy"), tx = ivar("tx");
  Expr ox = mul(tx, ci(pix));
  std::vector<Expr> windows;
  // The next pixel's window a constant step on: stride 1 shares its taps' addresses,
  // so the C compiler loads each input vector once for both pixels.
  windows.push_back(w.start(oy, ox));
  for (int64_t p = 1; p < pix; ++p) windows.push_back(add(windows[0], ci(p * w.pixel_step)));
  Stmt tile = mve_pixels(g, add(mul(oy, ci(w.out_w)), ox), pix, chans, windows);
  Stmt row = For(tx, ci(t.tile_begin), ci(t.tile_end - t.tile_begin), ForKind::kSerial, tile);
  return For(oy, ci(t.row_begin), ci(t.row_end - t.row_begin), ForKind::kSerial, row);
}

// Whether the tile from output pixel `row0` is one of the interior tiles.
Expr interior_tile(const Gemm& g, const InteriorTiles& t, int64_t pix, Expr row0) {
  Expr oy = floordiv(row0, ci(g.window->out_w)), ox = floormod(row0, ci(g.window->out_w));
  Expr rows = and_(ge(oy, ci(t.row_begin)), lt(oy, ci(t.row_end)));
  return and_(rows, and_(ge(ox, ci(t.tile_begin * pix)), lt(ox, ci(t.tile_end * pix))));
}

}  // namespace

Expr requantize_lanes(const QuantAttrs& q, int64_t columns, Expr acc, const std::function<Expr(int64_t)>& column,
                      int64_t lanes) {
  const int n = static_cast<int>(lanes);
  auto splat = [&](int64_t x) { return n == 1 ? ci(x) : Broadcast(ci(x), n); };
  Expr multiplier, shift;
  if (!column) {
    multiplier = splat(q.multipliers.at(0).multiplier), shift = splat(q.multipliers.at(0).shift);
  } else if (columns == 2) {
    multiplier = column(0), shift = column(1);
  } else {
    // (M, r - 1, ...): the right shift r, no left shift (r - 1 >= 1: the min changes no
    // value, and tells the Helium C helper there is no left shift).
    multiplier = column(0), shift = sub(splat(-1), column(1));
    if (n > 1) shift = min_(shift, splat(0));
  }
  Expr y = Call(kI32.with_lanes(n), "multiply_by_quantized_multiplier", {std::move(acc), multiplier, shift});
  y = add(y, splat(q.output_zero_point));
  y = min_(max_(y, splat(q.bounds.lo)), splat(q.bounds.hi));
  return Cast(kI8.with_lanes(n), y);
}

Expr helium_requantize(const QuantAttrs& q, const Buffer& table, int64_t columns, Expr acc, Expr c0, int64_t lanes) {
  auto column = [&](int64_t k) {  // column k of the table for channels c0 ..
    Expr start = add(mul(c0, ci(columns)), ci(k));
    return lanes == 1 ? load(table, {start}) : load(table, {Ramp(start, ci(columns), static_cast<int>(lanes))});
  };
  return requantize_lanes(q, columns, std::move(acc), table ? std::function<Expr(int64_t)>(column) : nullptr, lanes);
}

void check_mve(const std::string& op, const Schedule& s, const Rule& rule, const QInputs& q) {
  if (s.smlad) fail(op, "schedules 'mve' and 'smlad' exclude each other (mve keeps the weight int8)");
  if (q.packed) fail(op, "schedule 'mve' needs the int8 weight, not one packed for smlad");
  if (!s.fold_zero_point) fail(op, "schedule 'mve' needs schedule 'fold_zero_point' (it multiplies raw int8 inputs)");
  if (rule.data != kI8) fail(op, "schedule 'mve' needs int8 data, got " + rule.data.str());
}

Stmt gemm_mve(const Gemm& g) {
  MTIR_ICHECK(g.direct || g.gather, "the mve core needs direct rows or a gather");
  // Vector outputs: four channels a tile (two pixels with `block`: eight sums), else the
  // 2x2 tile of `block`.
  const bool vector = vector_outputs(g), pair = pair_outputs(g) || signed_outputs(g);
  const int64_t pix = g.sched->block ? 2 : 1;
  const int64_t chans = vector ? kVectorChannels : g.sched->block ? 2 : 1;
  // pair_outputs: a pixel alone (the last of an odd count, or every one without block)
  // takes four channels, so its sums are one vector too.
  const int64_t single_chans = pair ? kVectorChannels : chans;
  std::vector<Stmt> s;
  // mve_direct: the interior tiles first, the gathered loop skips them.
  const InteriorTiles interior = interior_tiles(g, pix);
  if (!interior.empty()) s.push_back(interior_pixels(g, interior, pix, pix == 1 ? single_chans : chans));
  // Every tile interior (an unpadded convolution): nothing left to gather.
  const int64_t interior_pixels_count =
      (interior.row_end - interior.row_begin) * (interior.tile_end - interior.tile_begin) * pix;
  const bool all_interior = !interior.empty() && interior_pixels_count == g.rows;
  const int64_t pairs = all_interior ? 0 : g.rows / pix;
  if (pairs > 0) {
    Var pp = ivar("pp");
    Stmt tile = mve_pixels(g, mul(pp, ci(pix)), pix, pix == 1 ? single_chans : chans);
    if (!interior.empty()) tile = IfThenElse(Not(interior_tile(g, interior, pix, mul(pp, ci(pix)))), tile);
    s.push_back(pairs == 1 ? substitute(tile, pp, ci(0)) : For(pp, ci(0), ci(pairs), ForKind::kSerial, tile));
  }
  if (g.rows % pix) s.push_back(mve_pixels(g, ci(pairs * pix), g.rows % pix, single_chans));
  Stmt body = SeqStmt(s);
  // The flat view only where it is stored to: fuse_elementwise folds a consumer into the
  // stores of the output buffer itself.
  return vector || pair ? DeclBuffer(g.out_flat, body) : body;
}

}  // namespace qconv_impl
}  // namespace ops
}  // namespace mtir
