// Schedule mve on int8 depthwise convolutions (Cortex-M55's Helium): channels four to
// an int32x4 vector. prepare_quantized lays the weight out in blocks of four channels
// (mve_depthwise_weight_index): a block's taps lie 4 bytes apart, so one pointer reaches
// all of them. Each output row goes in tiles of up to kTileWidth positions along the
// width, and within a tile every group of four channels in turn (channels innermost, as
// depthwise_tile: nothing in that loop is invariant but addresses, so GCC hoists no
// vector out of it). In a tile every input vector (VLDRB.S32, widening) and every weight
// vector is loaded once and feeds each output whose window holds it (stride 1: an input
// column serves up to three outputs); the sums are int32x4 lets the C backend keeps in Q
// registers (analysis/helium_vectors.h), from the bias on, each tap a VMUL and a VADD.
// The requantization is in the same vectors (helium_requantize: VQRDMULH, VRSHL, the zero
// point, the bounds, a narrowing VSTRB.32); its table columns are strided loads, once per
// tile. Tiles whose windows reach into the padding are emitted at constant positions
// along the row, border rows as depthwise_border_rows groups them, so their padding taps
// are known here: the input zero point (folded into the bias) times the weight, nothing
// loaded (a kernel row of padding once per tile, into the starting sum); interior loops
// check nothing. The last 1 to 3
// channels take narrower vectors, which the C backend scalarizes.
// mve_depthwise_padded (on by default): a padded layer first copies its input into a
// stack scratch bordered with the zero point (sixteen bytes a VLDRB.8 / VSTRB.8), and
// the kernel is the tile loop alone, no border code: VWW's 13 depthwise functions take
// about 10 KB instead of 33 KB on the Cortex-M55, for 2 % more instructions (the copy,
// and border outputs computed over their padding taps); band kernels of one layer differ
// only in constants, so merge_kernels shares one between them.
#include "ops/qconv_internal.h"

#include <algorithm>
#include <functional>
#include <set>

namespace mtir {
namespace ops {
namespace qconv_impl {
namespace {

constexpr int64_t kVectorLanes = kMveDepthwiseBlock;
// Positions per loop tile: its sums, a kernel row's three weights, an input vector and a
// product fill the eight Q registers (four and five spill: VWW +0.2%). A constant tile
// (a narrow row, a border) may be as wide as kWidestTile: KWS's five-wide rows as one
// tile each save 7% of their depthwise layers' instructions against 3 + 2.
constexpr int64_t kTileWidth = 3, kWidestTile = 5;
// mve_depthwise_padded's scratch is a C array on the stack: larger padded inputs keep the
// border tiles (VWW's largest copy, 14 x 14 x 64, is 12,544 bytes; the Cortex-M ports'
// stack is 64 KiB).
constexpr int64_t kMaxPaddedBytes = 16 * 1024;

struct MveDepthwise {
  const QConv& p;
  const QParams& b;
  Buffer data, weight, out, table;
  Expr n;
  // The image index into `data`: n, or 0 where data is a one-image padded copy.
  Expr in_n;

  // `lanes` contiguous elements of `buf` from `start` (a scalar when lanes is 1).
  static Expr span(const Buffer& buf, Expr start, int64_t lanes) {
    return lanes == 1 ? load(buf, {start}) : load(buf, {Ramp(start, ci(1), static_cast<int>(lanes))});
  }
  static DataType i32(int64_t lanes) { return kI32.with_lanes(static_cast<int>(lanes)); }
  static Expr splat(int64_t x, int64_t lanes) { return lanes == 1 ? ci(x) : Broadcast(ci(x), static_cast<int>(lanes)); }

  // The tile of `t` outputs (oh, ow0 + i) of channels c0 .. c0 + lanes - 1; oh_c and ow0_c
  // are the constant positions, or -1 where oh or ow0 is a loop variable of the interior
  // (or, with `win`, a border row whose valid kernel rows `win` gives).
  Stmt tile(Expr oh, int64_t oh_c, Expr ow0, int64_t ow0_c, int64_t t, Expr c0, int64_t lanes,
            const RowWindow* win) const {
    const int64_t pad_value = p.q.input_zero_point, taps = p.kh * p.kw;
    // The steps in order: a let (a loaded vector or a new sum), folded into nested lets.
    struct Step {
      Var v;
      Expr value;
    };
    std::vector<Step> steps;
    std::set<const VarNode*> used;
    auto bind = [&](const std::string& name, Expr value) {
      Var v = MakeVar(name, i32(lanes), Span());
      steps.push_back({v, std::move(value)});
      return v;
    };
    Expr top = oh_c < 0 ? sub(mul(oh, ci(p.sh)), ci(p.pt)) : ci(oh_c * p.sh - p.pt);
    if (win) top = add(top, mul(win->first, ci(p.dh)));
    Expr left = ow0_c < 0 ? sub(mul(ow0, ci(p.sw)), ci(p.pl)) : ci(ow0_c * p.sw - p.pl);
    Expr in_base = add(mul(add(mul(add(mul(in_n, ci(p.h)), top), ci(p.w)), left), ci(p.c)), c0);
    Expr out_base = add(mul(add(mul(add(mul(n, ci(p.oh)), oh), ci(p.ow)), ow0), ci(p.c)), c0);
    // The weight block of these channels (mve_depthwise_weight_index).
    Expr w_base = lanes == kMveDepthwiseBlock ? mul(c0, ci(taps)) : ci(p.c / kMveDepthwiseBlock * kMveDepthwiseBlock * taps);
    // The weight vector of a kernel row (its offset in the block), column rw.
    auto weight_at = [&](Expr row, int64_t rw) {
      Expr at = add(add(w_base, row), ci(rw * lanes));
      return bind("w", Cast(i32(lanes), span(weight, at, lanes)));
    };
    std::vector<std::pair<Expr, int64_t>> rows;
    std::vector<Expr> padding_rows;
    window_rows(p, oh_c, win, p.kw * lanes, &rows, &padding_rows);
    // A padding row adds the padding value times its weights to every output of the tile:
    // summed once into the starting sum instead of once per output.
    Var start = bind("bias", b.bias ? span(b.bias, c0, lanes) : splat(0, lanes));
    if (pad_value != 0)
      for (const Expr& rh : padding_rows)
        for (int64_t rw = 0; rw < p.kw; ++rw) {
          Var w = weight_at(rh, rw);
          used.insert(w.get()), used.insert(start.get());
          start = bind("bias", add(start, mul(splat(pad_value, lanes), w)));
        }
    std::vector<Var> acc(t, start);
    for (const auto& [rh, offset] : rows) {
      std::vector<Var> w;
      for (int64_t rw = 0; rw < p.kw; ++rw) w.push_back(weight_at(rh, rw));
      for (const TileColumn& column : tile_columns(p, t, ow0_c)) {
        if (!column.inside && pad_value == 0) continue;
        const Expr column_base = add(in_base, ci((offset * p.dh * p.w + column.j) * p.c));
        Expr x_value = column.inside ? Cast(i32(lanes), span(data, column_base, lanes)) : splat(pad_value, lanes);
        Var x = bind("x", x_value);
        for (auto [i, rw] : column.taps) {
          used.insert(x.get()), used.insert(w[rw].get()), used.insert(acc[i].get());
          acc[i] = bind("acc", add(acc[i], mul(x, w[rw])));
        }
      }
    }
    std::vector<Stmt> stores;
    for (int64_t i = 0; i < t; ++i) {
      used.insert(acc[i].get());
      Expr at = add(out_base, ci(i * p.c));
      if (lanes > 1) at = Ramp(at, ci(1), static_cast<int>(lanes));
      stores.push_back(store(out, helium_requantize(p.q, table, p.inputs.table_columns, acc[i], c0, lanes), {at}));
    }
    Stmt body = SeqStmt(stores);
    for (auto it = steps.rbegin(); it != steps.rend(); ++it)
      if (used.count(it->v.get())) body = LetStmt(it->v, it->value, body);
    return body;
  }

  // Every channel of the tile: groups of four as a loop, then the rest.
  Stmt channels(Expr oh, int64_t oh_c, Expr ow0, int64_t ow0_c, int64_t t, const RowWindow* win) const {
    std::vector<Stmt> s;
    const int64_t groups = p.c / kVectorLanes, rest = p.c % kVectorLanes;
    if (groups > 0) {
      Var g = ivar("cg");
      s.push_back(For(g, ci(0), ci(groups), ForKind::kSerial,
                      tile(oh, oh_c, ow0, ow0_c, t, mul(g, ci(kVectorLanes)), kVectorLanes, win)));
    }
    if (rest > 0) s.push_back(tile(oh, oh_c, ow0, ow0_c, t, ci(groups * kVectorLanes), rest, win));
    return SeqStmt(s);
  }

  // One output row: the left border columns as constant tiles, the interior a loop of
  // whole tiles, the rest (interior remainder and right border) constant tiles of
  // balanced widths (seven is 4 + 3, not 5 + 1 + 1).
  Stmt row(Expr oh, int64_t oh_c, const RowWindow* win) const {
    std::vector<Stmt> s;
    auto constant_tiles = [&](int64_t begin, int64_t end) {
      for (const auto& [o, width] : balanced_tiles(begin, end, kWidestTile))
        s.push_back(channels(oh, oh_c, ci(o), o, width, win));
    };
    OutputRange inner{0, 0, false};
    for (const auto& r : border_split(p.ow, p.pl, p.w, p.kw, p.sw, p.dw))
      if (!r.check) inner = r;
    const int64_t whole = (inner.end - inner.begin) / kTileWidth;
    if (whole < 2) {
      constant_tiles(0, p.ow);
    } else {
      constant_tiles(0, inner.begin);
      Var tw = ivar("tw");
      s.push_back(For(tw, ci(0), ci(whole), ForKind::kSerial,
                      channels(oh, oh_c, add(ci(inner.begin), mul(tw, ci(kTileWidth))), -1, kTileWidth, win)));
      constant_tiles(inner.begin + whole * kTileWidth, p.ow);
    }
    return SeqStmt(s);
  }

  // The interior rows as a loop, the border rows as depthwise_border_rows groups them.
  Stmt build() const {
    std::vector<Stmt> s;
    std::vector<OutputRange> border;
    for (const auto& r : border_split(p.oh, p.pt, p.h, p.kh, p.sh, p.dh)) {
      if (r.check) {
        border.push_back(r);
      } else if (r.end > r.begin) {
        Var oh = ivar("oh");
        s.push_back(For(oh, ci(r.begin), ci(r.end - r.begin), ForKind::kSerial, row(oh, -1, nullptr)));
      }
    }
    for (Stmt& r : depthwise_border_rows(
             p, border, [this](Expr oh, int64_t oh_c, const RowWindow* win) { return row(oh, oh_c, win); }))
      s.push_back(r);
    return SeqStmt(s);
  }
};

}  // namespace

bool mve_depthwise_applies(const QConv& p) {
  return p.sched.mve && !p.nchw && p.cg == 1 && p.groups == p.c && p.o == p.c && p.groups > 1;
}

namespace {

// The rows (or columns) of input the outputs read, padding included.
int64_t window_extent(int64_t out, int64_t kernel, int64_t stride, int64_t dilation) {
  return (out - 1) * stride + (kernel - 1) * dilation + 1;
}

// Bytes of the padded copy sixteen at a time (one VLDRB.8 / VSTRB.8 each, analysis/
// helium_vectors.h), the last count % 16 one by one: dst[at + i] = value(i).
Stmt byte_run(const Buffer& dst, Expr at, int64_t count, const std::function<Expr(Expr, int)>& value) {
  constexpr int kBytes = 16;
  std::vector<Stmt> s;
  if (count >= kBytes) {
    Var e = ivar("e");
    Expr first = mul(e, ci(kBytes));
    s.push_back(For(e, ci(0), ci(count / kBytes), ForKind::kSerial,
                    store(dst, value(first, kBytes), {Ramp(add(at, first), ci(1), kBytes)})));
  }
  if (count % kBytes > 0) {
    Var i = ivar("i");
    Expr k = add(ci(count / kBytes * kBytes), i);
    s.push_back(For(i, ci(0), ci(count % kBytes), ForKind::kSerial, store(dst, value(k, 1), {add(at, k)})));
  }
  if (s.empty()) return nullptr;
  return SeqStmt(s);
}

// Bytes of slack past the padded windows: a run of zero points is written in whole
// vectors, at least two (a loop of one the simplifier unrolls, and then the bands'
// kernels would differ in form), so the last run may write up to 47 bytes past the
// windows' end, the next row's left padding included.
int64_t pad_slack(const QConv& p) { return std::min(p.pl, window_extent(p.ow, p.kw, p.sw, p.dw)) * p.c + 48; }

// The image n of `data` copied into `pad` (the windows' rows x columns x channels), its
// border the input zero point, in address order: the top rows of padding and the first
// row's left padding, then each input row followed by its right padding and the next
// row's left padding, then the bottom rows. A run of zero points is whole vectors (at
// least two): what it writes past its end a later copy or run overwrites. The same loops
// whatever padding a band of a layer has, so merge_kernels shares one kernel between
// the bands (only the constants differ).
Stmt copy_padded(const QConv& p, const Buffer& data, const Buffer& pad, Expr n) {
  constexpr int kBytes = 16;
  const int64_t cols = window_extent(p.ow, p.kw, p.sw, p.dw), row_bytes = cols * p.c;
  const int64_t rows = window_extent(p.oh, p.kh, p.sh, p.dh);
  const int64_t top = std::min(p.pt, rows), in_rows = std::max<int64_t>(0, std::min(p.h, rows - top));
  const int64_t left = std::min(p.pl, cols), in_cols = std::max<int64_t>(0, std::min(p.w, cols - left));
  const int64_t right = cols - left - in_cols;
  // Addresses as scalar lets outside the vector nodes, where merge_kernels may turn
  // their constants into parameters.
  auto zero_points = [&](Expr at, int64_t count, int64_t at_least) {
    Var e = ivar("e"), v = ivar("at");
    const int64_t vectors = std::max(at_least, (count + kBytes - 1) / kBytes);
    return For(e, ci(0), ci(vectors), ForKind::kSerial,
               LetStmt(v, add(at, mul(e, ci(kBytes))),
                       store(pad, Broadcast(IntImm(kI8, p.q.input_zero_point), kBytes), {Ramp(v, ci(1), kBytes)})));
  };
  const int64_t first = top * row_bytes + left * p.c, filled = (top + in_rows) * row_bytes + left * p.c;
  std::vector<Stmt> s = {zero_points(ci(0), first, 2)};
  if (in_rows > 0) {
    Var y = ivar("y"), dst = ivar("row_at");
    Expr src = mul(add(mul(n, ci(p.h)), y), ci(p.w * p.c));
    auto input = [&](Expr k, int lanes) -> Expr {
      return lanes == 1 ? load(data, {add(src, k)}) : load(data, {Ramp(add(src, k), ci(1), lanes)});
    };
    std::vector<Stmt> row;
    if (Stmt copy = byte_run(pad, dst, in_cols * p.c, input)) row.push_back(copy);
    if ((right + left) * p.c > 0) row.push_back(zero_points(add(dst, ci(in_cols * p.c)), (right + left) * p.c, 1));
    s.push_back(For(y, ci(0), ci(in_rows), ForKind::kSerial,
                    LetStmt(dst, add(mul(y, ci(row_bytes)), ci(first)), SeqStmt(row))));
  }
  s.push_back(zero_points(ci(filled), rows * row_bytes - filled, 2));
  return SeqStmt(s);
}

}  // namespace

Stmt mve_depthwise(const QConv& p, const QParams& b) {
  LoopNest outer;
  Expr n = outer.axis("n", p.n);
  Buffer data = flat_view(b.data, p.n * p.h * p.w * p.c);
  Buffer weight = flat_view(b.weight, p.kh * p.kw * p.c), out = flat_view(b.out, p.n * p.oh * p.ow * p.o);
  Buffer table = b.table ? flat_view(b.table, p.o * p.inputs.table_columns) : nullptr;
  // The padded copy is the input of a convolution without padding.
  QConv pp = p;
  pp.h = window_extent(p.oh, p.kh, p.sh, p.dh), pp.w = window_extent(p.ow, p.kw, p.sw, p.dw);
  pp.pt = pp.pl = pp.pb = pp.pr = 0;
  const int64_t pad_bytes = pp.h * pp.w * p.c + pad_slack(p);
  const bool padded = p.sched.mve_depthwise_padded && (p.pt > 0 || p.pl > 0 || p.pb > 0 || p.pr > 0) &&
                      pad_bytes <= kMaxPaddedBytes;
  Stmt body;
  if (padded) {
    Buffer pad = scratch("data_pad", {pad_bytes}, kI8);
    MveDepthwise k{pp, b, pad, weight, out, table, n, ci(0)};
    body = Allocate(pad, "local", outer.wrap(SeqStmt({copy_padded(p, data, pad, n), k.build()})));
  } else {
    body = outer.wrap(MveDepthwise{p, b, data, weight, out, table, n, n}.build());
  }
  if (table) body = DeclBuffer(table, body);
  return DeclBuffer(data, DeclBuffer(weight, DeclBuffer(out, body)));
}

}  // namespace qconv_impl
}  // namespace ops
}  // namespace mtir
