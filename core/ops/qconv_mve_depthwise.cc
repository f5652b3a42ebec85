// Schedule mve on int8 depthwise convolutions (Cortex-M55's Helium): channels four to
// an int32x4 vector, sixteen per loop step. The weight comes as TFLite has it, [1, KH,
// KW, C] (prepare_quantized leaves it so for these nodes), so one tap of four channels
// is a contiguous int8 load of the weight as of the input (NHWC): both widened to int32
// (VLDRB.S32), multiplied and added (VMUL, VADD), the bias first. The requantization is
// in the same vector: T.multiply_by_quantized_multiplier (VQRDMULH, then VRSHL after
// TFLite's rounding fix-up), the zero point, the bounds (VMAX, VMIN) and a narrowing
// store (VSTRB.32); the per-channel multipliers and shifts are strided loads of the
// requantization table. CMSIS-NN's arm_depthwise_conv_s8_opt computes the same way.
// Each output position is one vector expression per four channels (analysis/
// helium_vectors.h's grammar, emitted whole by the C backend): rows and columns whose
// windows reach into the padding are emitted at constant positions, so their padding
// taps are known here (they add the input zero point times the weight: the zero point
// is folded into the bias) and the interior loops check nothing. A last 1 to 3 channels
// take narrower vectors, which the C backend scalarizes.
#include "ops/qconv_internal.h"

namespace mtir {
namespace ops {
namespace qconv_impl {
namespace {

constexpr int64_t kVectorLanes = 4, kStepChannels = 16;

// One position along an axis: a constant (`fixed` >= 0) or the loop variable of an
// interior range whose windows lie inside the input.
struct Position {
  Expr at;
  int64_t fixed;
};

struct MveDepthwise {
  const QConv& p;
  const QParams& b;
  Buffer data, weight, out, table;
  Expr n;

  // `lanes` contiguous elements of `buf` from `start` (a scalar when lanes is 1).
  static Expr span(const Buffer& buf, Expr start, int64_t lanes) {
    return lanes == 1 ? load(buf, {start}) : load(buf, {Ramp(start, ci(1), static_cast<int>(lanes))});
  }
  static Expr splat(Expr x, int64_t lanes) { return lanes == 1 ? x : Broadcast(x, static_cast<int>(lanes)); }
  static DataType i32(int64_t lanes) { return kI32.with_lanes(static_cast<int>(lanes)); }

  // The outputs at (oh, ow) of channels c0 .. c0 + lanes - 1; in_base is the flat index
  // of the window's top-left element at channel 0, out_base the output's.
  Stmt channels(const Position& oh, const Position& ow, Expr in_base, Expr out_base, Expr c0, int64_t lanes) const {
    const int64_t pad_value = p.q.input_zero_point;
    Expr acc = b.bias ? span(b.bias, c0, lanes) : splat(ci(0), lanes);
    for (int64_t rh = 0; rh < p.kh; ++rh) {
      const int64_t ih = oh.fixed * p.sh + rh * p.dh - p.pt;
      const bool row_inside = oh.fixed < 0 || (ih >= 0 && ih < p.h);
      for (int64_t rw = 0; rw < p.kw; ++rw) {
        const int64_t iw = ow.fixed * p.sw + rw * p.dw - p.pl;
        const bool inside = row_inside && (ow.fixed < 0 || (iw >= 0 && iw < p.w));
        if (!inside && pad_value == 0) continue;
        Expr w = Cast(i32(lanes), span(weight, add(ci((rh * p.kw + rw) * p.c), c0), lanes));
        Expr x = inside ? Cast(i32(lanes), span(data, add(add(in_base, ci((rh * p.dh * p.w + rw * p.dw) * p.c)), c0), lanes))
                        : splat(ci(pad_value), lanes);
        acc = add(acc, mul(x, w));
      }
    }
    Expr at = lanes == 1 ? add(out_base, c0) : Ramp(add(out_base, c0), ci(1), static_cast<int>(lanes));
    return store(out, helium_requantize(p.q, table, p.inputs.table_columns, acc, c0, lanes), {at});
  }

  // Every channel of output (oh, ow): sixteen a step, then fours, then the rest.
  Stmt position(const Position& oh, const Position& ow) const {
    Var in_base = ivar("in_base"), out_base = ivar("out_base");
    Expr top = sub(mul(oh.at, ci(p.sh)), ci(p.pt)), left = sub(mul(ow.at, ci(p.sw)), ci(p.pl));
    Expr in_value = mul(add(mul(add(mul(n, ci(p.h)), top), ci(p.w)), left), ci(p.c));
    Expr out_value = mul(add(mul(add(mul(n, ci(p.oh)), oh.at), ci(p.ow)), ow.at), ci(p.c));
    std::vector<Stmt> s;
    const int64_t steps = p.c / kStepChannels;
    if (steps > 0) {
      Var cs = ivar("cs");
      std::vector<Stmt> step;
      for (int64_t j = 0; j < kStepChannels / kVectorLanes; ++j)
        step.push_back(channels(oh, ow, in_base, out_base, add(mul(cs, ci(kStepChannels)), ci(j * kVectorLanes)), kVectorLanes));
      s.push_back(For(cs, ci(0), ci(steps), ForKind::kSerial, SeqStmt(step)));
    }
    int64_t c0 = steps * kStepChannels;
    for (; c0 + kVectorLanes <= p.c; c0 += kVectorLanes)
      s.push_back(channels(oh, ow, in_base, out_base, ci(c0), kVectorLanes));
    if (c0 < p.c) s.push_back(channels(oh, ow, in_base, out_base, ci(c0), p.c - c0));
    Stmt body = s.size() == 1 ? s[0] : SeqStmt(s);
    return LetStmt(in_base, in_value, LetStmt(out_base, out_value, body));
  }

  // The positions of one axis: each of a border range at its constant place, an interior
  // range as a loop.
  static Stmt along(const std::vector<OutputRange>& ranges, const std::string& name,
                    const std::function<Stmt(const Position&)>& body) {
    std::vector<Stmt> s;
    for (const auto& r : ranges) {
      if (r.check) {
        for (int64_t i = r.begin; i < r.end; ++i) s.push_back(body({ci(i), i}));
      } else if (r.end > r.begin) {
        Var v = ivar(name);
        s.push_back(For(v, ci(r.begin), ci(r.end - r.begin), ForKind::kSerial, body({v, -1})));
      }
    }
    return s.size() == 1 ? s[0] : SeqStmt(s);
  }

  Stmt build() const {
    auto rows = border_split(p.oh, p.pt, p.h, p.kh, p.sh, p.dh);
    auto cols = border_split(p.ow, p.pl, p.w, p.kw, p.sw, p.dw);
    return along(rows, "oh", [&](const Position& oh) {
      return along(cols, "ow", [&](const Position& ow) { return position(oh, ow); });
    });
  }
};

}  // namespace

bool mve_depthwise_applies(const QConv& p) {
  return p.sched.mve && !p.nchw && p.cg == 1 && p.groups == p.c && p.o == p.c && p.groups > 1;
}

Stmt mve_depthwise(const QConv& p, const QParams& b) {
  LoopNest outer;
  Expr n = outer.axis("n", p.n);
  MveDepthwise k{p,
                 b,
                 flat_view(b.data, p.n * p.h * p.w * p.c),
                 flat_view(b.weight, p.kh * p.kw * p.c),
                 flat_view(b.out, p.n * p.oh * p.ow * p.o),
                 b.table ? flat_view(b.table, p.o * p.inputs.table_columns) : nullptr,
                 n};
  Stmt body = outer.wrap(k.build());
  if (k.table) body = DeclBuffer(k.table, body);
  return DeclBuffer(k.data, DeclBuffer(k.weight, DeclBuffer(k.out, body)));
}

}  // namespace qconv_impl
}  // namespace ops
}  // namespace mtir
