// qconv2d's depthwise kernels and its one-output-at-a-time loop nests: the tiled
// depthwise schedule (depthwise_tile), the blocked depthwise loops (block) and the plain
// loop nest that every other convolution the matrix-product core does not take runs
// (grouped convolutions, and dense ones without a schedule). As CMSIS-NN keeps
// arm_depthwise_conv_s8 apart from its matrix-product convolutions.
#include <algorithm>
#include <map>
#include <set>

#include "ops/qconv_internal.h"

namespace mtir {
namespace ops {
namespace qconv_impl {
namespace {

// Depthwise, tiled (schedule depthwise_tile): each output row in tiles of up to four
// outputs along the width (a row of five or fewer is one tile), every channel of a tile
// in turn (channel innermost: nothing in that loop is invariant but the addresses, so
// GCC does not hoist the weights out of it and spill them).
// Within a tile every input element of the tiles' windows and every weight is loaded
// once and feeds each output whose window holds it (stride 1: an input column serves up
// to three outputs), the accumulators stay in registers, and the channel's bias and
// requantization values are read once per tile instead of once per output. Tiles whose
// windows reach into the padding are emitted at constant positions along the row, and
// border rows as loops over the rows with the same valid kernel rows
// (depthwise_border_rows), so which taps are padding is known here: they add the padding
// value times the weight and load nothing (a kernel row of padding once per channel), and
// the interior loops carry no bound checks.
struct DepthwiseTiler {
  DepthwiseTiler(const QConv& p, const QParams& b);
  Stmt build();

  // The tile of `t` outputs (oh, ow0 + i); oh_c and ow0_c are the constant positions, or
  // -1 where oh or ow0 is a loop variable whose every window lies inside the input (or,
  // with `win`, a border row whose valid kernel rows `win` gives).
  Stmt tile(Expr oh, int64_t oh_c, Expr ow0, int64_t ow0_c, int64_t t, const RowWindow* win = nullptr) const;
  // Counter k over the positions of one or two ranges, as a position: k itself shifted
  // to the first range, shifted past the gap between them in the second.
  // A tile's steps in order: a binding (a weight or an input value, loaded once) or an
  // update.
  struct Step {
    Var v;
    Expr value;
    Stmt update;
  };
  // Channel c's starting sum: the bias, and a padding row's weights times the padding
  // value (the same for every output of the tile: added once, not once per output).
  Expr starting_sum(Var c, const std::vector<Expr>& padding_rows, std::vector<Step>* steps,
                    std::set<const VarNode*>* used) const;
  static Expr positions(Expr k, const std::vector<OutputRange>& ranges);
  static int64_t total(const std::vector<OutputRange>& ranges);
  // Output (oh, ow) of every channel, one at a time, each tap checked along the axes that
  // may leave the input.
  Stmt checked_output(Expr oh, bool check_h, Expr ow, bool check_w) const;
  // One output row: one constant tile when it is narrow, constant tiles of balanced
  // widths when its interior is too short for two loop tiles (seven is 4 + 3, not
  // 4 + 1 + 1 + 1). Wider: a constant tile over the left border and the tile after it,
  // a loop of tiles over the interior, constant tiles over the rest.
  Stmt row(Expr oh, int64_t oh_c, const RowWindow* win = nullptr) const;
  // The border rows (windows reaching above or below the input) are few: one loop over
  // them all, one output at a time with every tap checked, costs a few instructions per
  // MAC more there but is one copy of the code, where a copy of the whole tiled row per
  // border row cost ~1 KB each (VWW: ~10 KB).
  Stmt checked_rows(const std::vector<OutputRange>& ranges) const;

  const QConv& p;
  const QParams& b;
  const int64_t pad_value;
  Buffer table, data, weight, out;
  // Element strides of image, channel, row and column in the data and the output.
  const int64_t in_n, in_c, in_h, in_w, out_n, out_c, out_h, out_w;
  LoopNest outer;
  Expr n;
  // Tile widths that GCC keeps in the Cortex-M4's registers (measured on the MLPerf Tiny
  // models): loop tiles of four outputs (at stride 2 four share three of the nine input
  // columns; three tiles: VWW's first stride-2 layer 3.17 instead of 3.10 instructions per
  // MAC); constant tiles of up to six at stride 1 and five at stride 2 (six spill).
  const int64_t wide = 4, widest;
  // Stride-1 rows at least this wide take their border columns through the checked
  // per-output loop: there they are a small share of the work, and unrolled border tiles
  // cost ~0.2-0.5 KB of code each (VWW: -1.1 KB for +0.25 M instructions). Narrower rows
  // keep them unrolled (KWS's five-wide rows would check two outputs in five), and so do
  // stride-2 rows, whose one border column is a single narrow tile.
  static constexpr int64_t kCheckedColumnsMinWidth = 12;
};

DepthwiseTiler::DepthwiseTiler(const QConv& p, const QParams& b)
    : p(p),
      b(b),
      pad_value(p.sched.fold_zero_point ? p.q.input_zero_point : 0),
      table(b.table ? flat_view(b.table, p.o * p.inputs.table_columns) : nullptr),
      data(flat_view(b.data, p.n * p.h * p.w * p.c)),
      weight(flat_view(b.weight, p.o * p.kh * p.kw)),
      out(flat_view(b.out, p.n * p.oh * p.ow * p.o)),
      in_n(p.h * p.w * p.c),
      in_c(p.nchw ? p.h * p.w : 1),
      in_h(p.nchw ? p.w : p.w * p.c),
      in_w(p.nchw ? 1 : p.c),
      out_n(p.oh * p.ow * p.o),
      out_c(p.nchw ? p.oh * p.ow : 1),
      out_h(p.nchw ? p.ow : p.ow * p.o),
      out_w(p.nchw ? 1 : p.o),
      n(outer.axis("n", p.n)),
      widest(p.sw == 1 ? 6 : 5) {}

Stmt DepthwiseTiler::tile(Expr oh, int64_t oh_c, Expr ow0, int64_t ow0_c, int64_t t, const RowWindow* win) const {
  Var c = ivar("c");
  Buffer acc = scratch("acc", {t}, kI32);
  std::vector<Step> steps;
  // The bindings some update reads (a weight whose taps are all zero padding is not
  // loaded: C99 with -Werror refuses an unused variable).
  // The flat index of the window's top left element and of the tile's first output:
  // every tap is a constant offset from it, so one pointer serves the whole tile.
  Var in_base = ivar("in_base"), out_base = ivar("out_base");
  std::set<const VarNode*> used = {out_base.get()};
  Expr top = oh_c < 0 ? sub(mul(oh, ci(p.sh)), ci(p.pt)) : ci(oh_c * p.sh - p.pt);
  if (win) top = add(top, mul(win->first, ci(p.dh)));
  Expr left = ow0_c < 0 ? sub(mul(ow0, ci(p.sw)), ci(p.pl)) : ci(ow0_c * p.sw - p.pl);
  steps.push_back(
      {in_base, add(add(add(mul(n, ci(in_n)), mul(c, ci(in_c))), mul(top, ci(in_h))), mul(left, ci(in_w))), Stmt()});
  steps.push_back(
      {out_base, add(add(add(mul(n, ci(out_n)), mul(c, ci(out_c))), mul(oh, ci(out_h))), mul(ow0, ci(out_w))), Stmt()});
  std::vector<std::pair<Expr, int64_t>> rows;
  std::vector<Expr> padding_rows;
  window_rows(p, oh_c, win, p.kw, &rows, &padding_rows);
  Expr start = starting_sum(c, padding_rows, &steps, &used);
  for (int64_t i = 0; i < t; ++i) steps.push_back({Var(), Expr(), store(acc, start, {ci(i)})});
  for (const auto& [rh, offset] : rows) {
    std::vector<Var> w;
    for (int64_t rw = 0; rw < p.kw; ++rw) {
      w.push_back(ivar("w" + std::to_string(offset) + std::to_string(rw)));
      steps.push_back({w.back(), Cast(kI32, load(weight, {add(add(mul(c, ci(p.kh * p.kw)), rh), ci(rw))})), Stmt()});
    }
    for (const TileColumn& column : tile_columns(p, t, ow0_c)) {
      if (!column.inside && pad_value == 0) continue;
      Var x = ivar("x");
      Expr v = Cast(kI32, load(data, {add(in_base, ci(offset * p.dh * in_h + column.j * in_w))}));
      if (!p.sched.fold_zero_point && p.q.input_zero_point != 0) v = sub(v, ci(p.q.input_zero_point));
      steps.push_back({x, column.inside ? v : ci(pad_value), Stmt()});
      if (column.inside) used.insert(in_base.get());
      used.insert(x.get());
      for (auto [i, rw] : column.taps) {
        used.insert(w[rw].get());
        // smlabb: x and the weight are int8 values (see builtins.def for why not + and *).
        steps.push_back({Var(), Expr(), store(acc, Call(kI32, "smlabb", {x, w[rw], load(acc, {ci(i)})}), {ci(i)})});
      }
    }
  }
  std::vector<Stmt> stores;
  for (int64_t i = 0; i < t; ++i)
    stores.push_back(
        store(out,
              requantize_channel(p.q, p.rule, table, p.inputs.table_columns, load(acc, {ci(i)}), c,
                                 p.sched.fold_output_zero_point, p.sched.smlal_requant, p.sched.smmlar_requant),
              {add(out_base, ci(i * out_w))}));
  Stmt body = SeqStmt(stores);
  for (auto it = steps.rbegin(); it != steps.rend(); ++it)
    if (it->update)
      body = SeqStmt({it->update, body});
    else if (used.count(it->v.get()))
      body = LetStmt(it->v, it->value, body);
  return For(c, ci(0), ci(p.o), ForKind::kSerial, Allocate(acc, "local", body));
}

Expr DepthwiseTiler::starting_sum(Var c, const std::vector<Expr>& padding_rows, std::vector<Step>* steps,
                                  std::set<const VarNode*>* used) const {
  Expr start = b.bias ? load(b.bias, {c}) : ci(0);
  if (pad_value == 0 || padding_rows.empty()) return start;
  Var pad = ivar("pad"), padded = ivar("padded");
  steps->push_back({pad, ci(pad_value), Stmt()});
  for (const Expr& rh : padding_rows)
    for (int64_t rw = 0; rw < p.kw; ++rw) {
      Var w = ivar("wp");
      steps->push_back({w, Cast(kI32, load(weight, {add(add(mul(c, ci(p.kh * p.kw)), rh), ci(rw))})), Stmt()});
      used->insert(w.get());
      start = Call(kI32, "smlabb", {pad, w, start});
    }
  steps->push_back({padded, start, Stmt()});
  used->insert(pad.get()), used->insert(padded.get());
  return padded;
}

Expr DepthwiseTiler::positions(Expr k, const std::vector<OutputRange>& ranges) {
  const int64_t first = ranges[0].end - ranges[0].begin;
  Expr at = add(k, ci(ranges[0].begin));
  if (ranges.size() == 2) at = Select(lt(k, ci(first)), at, add(k, ci(ranges[1].begin - first)));
  return at;
}

int64_t DepthwiseTiler::total(const std::vector<OutputRange>& ranges) {
  int64_t n = 0;
  for (const auto& r : ranges) n += r.end - r.begin;
  return n;
}

Stmt DepthwiseTiler::checked_output(Expr oh, bool check_h, Expr ow, bool check_w) const {
  Var c = ivar("c");
  Buffer acc = scratch("acc", {1}, kI32);
  std::vector<Stmt> taps = {store(acc, b.bias ? load(b.bias, {c}) : ci(0), {ci(0)})};
  // The kernel rows as a loop (their bound check inside it, not kept live across the
  // channel loop), the columns unrolled.
  Var rh = ivar("rh");
  std::vector<Stmt> columns;
  for (int64_t rw = 0; rw < p.kw; ++rw) {
    Expr ih = tap(oh, rh, p.sh, p.dh, p.pt), iw = tap(ow, ci(rw), p.sw, p.dw, p.pl);
    Expr cond = and_(check_h ? inside(ih, p.pt, p.h, p.oh, p.kh, p.sh, p.dh) : Expr(),
                     check_w ? inside(iw, p.pl, p.w, p.ow, p.kw, p.sw, p.dw) : Expr());
    Expr x = Cast(
        kI32, load(data, {add(add(add(mul(n, ci(in_n)), mul(c, ci(in_c))), mul(ih, ci(in_h))), mul(iw, ci(in_w)))}));
    if (!p.sched.fold_zero_point && p.q.input_zero_point != 0) x = sub(x, ci(p.q.input_zero_point));
    Expr w = Cast(kI32, load(b.weight, {c, rh, ci(rw), ci(0)}));
    columns.push_back(store(acc, add(load(acc, {ci(0)}), mul(lazy_select(cond, x, ci(pad_value)), w)), {ci(0)}));
  }
  taps.push_back(For(rh, ci(0), ci(p.kh), ForKind::kSerial, SeqStmt(columns)));
  Expr out_index = add(add(add(mul(n, ci(out_n)), mul(c, ci(out_c))), mul(oh, ci(out_h))), mul(ow, ci(out_w)));
  taps.push_back(
      store(out,
            requantize_channel(p.q, p.rule, table, p.inputs.table_columns, load(acc, {ci(0)}), c,
                               p.sched.fold_output_zero_point, p.sched.smlal_requant, p.sched.smmlar_requant),
            {out_index}));
  return For(c, ci(0), ci(p.o), ForKind::kSerial, Allocate(acc, "local", SeqStmt(taps)));
}

Stmt DepthwiseTiler::row(Expr oh, int64_t oh_c, const RowWindow* win) const {
  std::vector<Stmt> s;
  auto constant_tiles = [&](int64_t begin, int64_t end) {
    for (const auto& [o, width] : balanced_tiles(begin, end, widest)) s.push_back(tile(oh, oh_c, ci(o), o, width, win));
  };
  OutputRange inner{0, 0, false};
  std::vector<OutputRange> border_columns;
  for (const auto& r : border_split(p.ow, p.pl, p.w, p.kw, p.sw, p.dw))
    if (!r.check)
      inner = r;
    else
      border_columns.push_back(r);
  if (!p.sched.depthwise_border_tiles && p.sw == 1 && p.ow >= kCheckedColumnsMinWidth &&
      inner.end - inner.begin >= wide) {
    // A wide row: its few border columns one output at a time, checked (one copy of
    // code), the interior a loop of tiles and one narrower tile for the rest.
    const int64_t whole = (inner.end - inner.begin) / wide, rest_begin = inner.begin + whole * wide;
    Var tw = ivar("tw");
    s.push_back(
        For(tw, ci(0), ci(whole), ForKind::kSerial, tile(oh, oh_c, add(ci(inner.begin), mul(tw, ci(wide))), -1, wide)));
    if (rest_begin < inner.end) s.push_back(tile(oh, oh_c, ci(rest_begin), rest_begin, inner.end - rest_begin));
    if (!border_columns.empty()) {
      Var bc = ivar("bc"), ow = ivar("ow");
      s.push_back(For(bc, ci(0), ci(total(border_columns)), ForKind::kSerial,
                      LetStmt(ow, positions(bc, border_columns), checked_output(oh, oh_c >= 0, ow, true))));
    }
  } else if (p.ow <= widest || inner.end - inner.begin < 2 * wide) {
    constant_tiles(0, p.ow);
  } else {
    const int64_t left = inner.begin > 0 ? std::min(inner.begin + wide, inner.end) : 0;
    const int64_t whole = (inner.end - left) / wide, right = left + wide * whole;
    constant_tiles(0, left);
    if (whole > 0) {
      Var tw = ivar("tw");
      s.push_back(For(tw, ci(0), ci(whole), ForKind::kSerial,
                      tile(oh, oh_c, add(ci(left), mul(tw, ci(wide))), -1, wide, win)));
    }
    constant_tiles(right, p.ow);
  }
  return SeqStmt(s);
}

Stmt DepthwiseTiler::checked_rows(const std::vector<OutputRange>& ranges) const {
  Var br = ivar("br"), ohv = ivar("oh"), ow = ivar("ow");
  return For(br, ci(0), ci(total(ranges)), ForKind::kSerial,
             LetStmt(ohv, positions(br, ranges),
                     For(ow, ci(0), ci(p.ow), ForKind::kSerial, checked_output(ohv, true, ow, true))));
}

Stmt DepthwiseTiler::build() {
  std::vector<Stmt> rows;
  std::vector<OutputRange> border;
  for (const auto& r : border_split(p.oh, p.pt, p.h, p.kh, p.sh, p.dh)) {
    if (r.check) {
      border.push_back(r);
      continue;
    }
    Var oh = ivar("oh");
    rows.push_back(For(oh, ci(r.begin), ci(r.end - r.begin), ForKind::kSerial, row(oh, -1)));
  }
  if (!border.empty()) {
    if (p.sched.depthwise_border_tiles)
      for (Stmt& s : depthwise_border_rows(p, border, [this](Expr oh, int64_t oh_c, const RowWindow* win) {
             return row(oh, oh_c, win);
           }))
        rows.push_back(s);
    else
      rows.push_back(checked_rows(border));
  }
  Stmt body = outer.wrap(SeqStmt(rows));
  body = DeclBuffer(data, DeclBuffer(weight, DeclBuffer(out, body)));
  return table ? DeclBuffer(table, body) : body;
}

}  // namespace

std::vector<TileColumn> tile_columns(const QConv& p, int64_t t, int64_t ow0_c) {
  std::vector<TileColumn> columns;
  const int64_t width = (t - 1) * p.sw + (p.kw - 1) * p.dw + 1;
  for (int64_t j = 0; j < width; ++j) {
    TileColumn column{j, {}, true};
    for (int64_t i = 0; i < t; ++i)
      for (int64_t rw = 0; rw < p.kw; ++rw)
        if (i * p.sw + rw * p.dw == j) column.taps.push_back({i, rw});
    if (column.taps.empty()) continue;
    const int64_t iw = ow0_c * p.sw - p.pl + j;
    column.inside = ow0_c < 0 || (iw >= 0 && iw < p.w);
    columns.push_back(std::move(column));
  }
  return columns;
}

void window_rows(const QConv& p, int64_t oh_c, const RowWindow* win, int64_t row_elements,
                 std::vector<std::pair<Expr, int64_t>>* rows, std::vector<Expr>* padding_rows) {
  if (win) {
    Expr first = mul(win->first, ci(row_elements));
    for (int64_t q = 0; q < win->rows; ++q) rows->push_back({add(first, ci(q * row_elements)), q});
    for (const Expr& rh : win->padding) padding_rows->push_back(mul(rh, ci(row_elements)));
    return;
  }
  for (int64_t rh = 0; rh < p.kh; ++rh) {
    const int64_t ih_c = oh_c * p.sh + rh * p.dh - p.pt;
    if (oh_c < 0 || (ih_c >= 0 && ih_c < p.h))
      rows->push_back({ci(rh * row_elements), rh});
    else
      padding_rows->push_back(ci(rh * row_elements));
  }
}

namespace {

// The value values[k] for a loop counter k: linear in k for two values (a loop over the
// top and the bottom row: no select), a select per change for more.
Expr by_counter(Expr k, const std::vector<int64_t>& values) {
  if (values.size() == 2) return add(ci(values[0]), mul(k, ci(values[1] - values[0])));
  Expr at = ci(values.back());
  for (size_t i = values.size() - 1; i-- > 0;)
    if (values[i] != values[i + 1]) at = Select(lt(k, ci(static_cast<int64_t>(i) + 1)), ci(values[i]), at);
  return at;
}

}  // namespace

std::vector<Stmt> depthwise_border_rows(const QConv& p, const std::vector<OutputRange>& ranges,
                                        const std::function<Stmt(Expr, int64_t, const RowWindow*)>& row) {
  // Each border row's kernel rows inside the input (the first of them) and of padding,
  // grouped by how many are inside (the rows of a group in order).
  struct Member {
    int64_t oh, first = -1;
    std::vector<int64_t> padding;
  };
  std::map<int64_t, std::vector<Member>> groups;
  for (const auto& r : ranges)
    for (int64_t oh = r.begin; oh < r.end; ++oh) {
      Member m{oh, -1, {}};
      for (int64_t rh = 0; rh < p.kh; ++rh) {
        const int64_t ih = oh * p.sh + rh * p.dh - p.pt;
        if (ih < 0 || ih >= p.h)
          m.padding.push_back(rh);
        else if (m.first < 0)
          m.first = rh;
      }
      groups[p.kh - static_cast<int64_t>(m.padding.size())].push_back(m);
    }
  std::vector<Stmt> s;
  for (const auto& [count, members] : groups) {
    // The group's rows as at most two ranges of consecutive rows (positions()).
    std::vector<OutputRange> spans;
    for (const Member& m : members)
      if (!spans.empty() && spans.back().end == m.oh)
        spans.back().end += 1;
      else
        spans.push_back({m.oh, m.oh + 1, true});
    if (members.size() < 2 || count == 0 || spans.size() > 2) {
      for (const Member& m : members) s.push_back(row(ci(m.oh), m.oh, nullptr));
      continue;
    }
    Var k = ivar("br"), oh = ivar("oh"), first = ivar("first");
    std::vector<int64_t> rows, firsts;
    for (const Member& m : members) rows.push_back(m.oh), firsts.push_back(m.first);
    RowWindow win{first, count, {}};
    for (int64_t j = 0; j < p.kh - count; ++j) {
      std::vector<int64_t> padding;
      for (const Member& m : members) padding.push_back(m.padding[j]);
      win.padding.push_back(by_counter(k, padding));
    }
    Expr oh_of = members.size() == 2 ? by_counter(k, rows) : DepthwiseTiler::positions(k, spans);
    s.push_back(For(k, ci(0), ci(static_cast<int64_t>(members.size())), ForKind::kSerial,
                    LetStmt(oh, oh_of, LetStmt(first, by_counter(k, firsts), row(oh, -1, &win)))));
  }
  return s;
}

Stmt depthwise_tiles(const QConv& p, const QParams& b) { return DepthwiseTiler(p, b).build(); }

Stmt conv_loops(const QConv& p, const QParams& b) {
  const Buffer &data = b.data, &weight = b.weight, &bias = b.bias, &table = b.table, &o = b.out;
  // One output at a time, the kernel window innermost (unrolled when asked for
  // depthwise windows). `checks` says whether the window may leave the input along
  // the height and the width.
  const bool unroll_window = p.sched.unroll && p.cg == 1 && p.kh * p.kw <= 16;
  Buffer table_flat = table ? flat_view(table, p.o * p.inputs.table_columns) : nullptr;
  auto one_output = [&](Expr n, Expr oh, Expr ow, Expr oc, bool check_h, bool check_w) {
    Var rh = ivar("rh"), rw = ivar("rw"), rcv = ivar("rc");
    Expr rc = p.cg == 1 ? ci(0) : Expr(rcv);
    int64_t og = p.o / p.groups;
    Expr ic = p.groups == 1 ? rc : add(mul(floordiv(oc, ci(og)), ci(p.cg)), rc);
    Expr ih = tap(oh, rh, p.sh, p.dh, p.pt), iw = tap(ow, rw, p.sw, p.dw, p.pl);
    Expr cond = and_(check_h ? inside(ih, p.pt, p.h, p.oh, p.kh, p.sh, p.dh) : Expr(),
                     check_w ? inside(iw, p.pl, p.w, p.ow, p.kw, p.sw, p.dw) : Expr());
    Buffer acc = scratch("acc", {1}, kI32);
    Stmt update = store(acc,
                        add(load(acc, {ci(0)}),
                            mul(conv_input(p, data, n, ih, iw, ic, cond), Cast(kI32, load(weight, {oc, rh, rw, rc})))),
                        {ci(0)});
    if (p.cg > 1) update = For(rcv, ci(0), ci(p.cg), ForKind::kSerial, update);
    ForKind wk = unroll_window ? ForKind::kUnrolled : ForKind::kSerial;
    Stmt window = For(rh, ci(0), ci(p.kh), wk, For(rw, ci(0), ci(p.kw), wk, update));
    Stmt init = store(acc, bias ? load(bias, {oc}) : ci(0), {ci(0)});
    Stmt fin = store(o,
                     requantize_channel(p.q, p.rule, table_flat, p.inputs.table_columns, load(acc, {ci(0)}), oc,
                                        p.sched.fold_output_zero_point, p.sched.smlal_requant, p.sched.smmlar_requant),
                     p.at(n, oh, ow, oc));
    return Allocate(acc, "local", SeqStmt({init, window, fin}));
  };
  Stmt body;
  if (p.sched.block && p.cg == 1 && p.groups == p.c && p.o == p.c) {
    // Depthwise, blocked: channel outermost (its weights, bias and multiplier stay put
    // while the window slides) and the output split into border and interior regions,
    // so only the border pays for the padding checks.
    LoopNest outer;
    Expr n = outer.axis("n", p.n), oc = outer.axis("c", p.o);
    std::vector<Stmt> regions;
    for (const auto& rh : border_split(p.oh, p.pt, p.h, p.kh, p.sh, p.dh))
      for (const auto& rw : border_split(p.ow, p.pl, p.w, p.kw, p.sw, p.dw)) {
        Var oh = ivar("oh"), ow = ivar("ow");
        Stmt s = one_output(n, oh, ow, oc, rh.check, rw.check);
        regions.push_back(For(oh, ci(rh.begin), ci(rh.end - rh.begin), ForKind::kSerial,
                              For(ow, ci(rw.begin), ci(rw.end - rw.begin), ForKind::kSerial, s)));
      }
    body = outer.wrap(SeqStmt(regions));
  } else {
    // Plain loop nest (and every other grouped convolution).
    LoopNest outer;
    Expr n = outer.axis("n", p.n), oh = outer.axis("oh", p.oh), ow = outer.axis("ow", p.ow), oc = outer.axis("oc", p.o);
    body = outer.wrap(one_output(n, oh, ow, oc, true, true));
  }
  return table_flat ? DeclBuffer(table_flat, body) : body;
}

}  // namespace qconv_impl
}  // namespace ops
}  // namespace mtir
