// qconv2d and qdense: int8 convolution and fully connected layers with int32
// accumulation and requantization (docs/quantization.md), and the schedules that decide
// their speed on a microcontroller. Both compute a matrix product: rows are output
// pixels (dense: batch rows), columns output channels, the reduction runs over the
// receptive field. The schedules, each switchable in attrs["schedule"]:
//   fold_zero_point  the input zero point was folded into the bias at compile time
//                    (prepare_quantized): the inner loop multiplies raw int8 values and
//                    padding reads as the zero point;
//   block            the receptive field of two pixels is gathered once (im2col) and
//                    reused by every output channel, two channels at a time: four
//                    accumulators per pass, each load feeding two multiply-adds;
//   unroll           the reduction is unrolled by four (UnrollLoops expands it);
//   smlad            the gathered pixels and the weights are int16 pairs in int32 words
//                    and each step is one dual 16-bit multiply-accumulate (Cortex-M DSP
//                    SMLAD; a portable expression elsewhere);
//   sxtb16           with smlad, the weights stay int8, four to a word, and SXTB16
//                    widens them into int16 pairs in registers: half the weight flash
//                    for one extra instruction per two multiply-accumulate pairs;
//   interleave       with smlad and block, the weight words of each channel pair
//                    alternate (packed_weight_index), so the 2x2 tile reads both rows
//                    through one pointer and GCC keeps the accumulators in registers,
//                    and the reduction is unrolled by eight words instead of two to four;
//   fold_output_zero_point  the per-channel table's rounding term carries the output
//                    zero point (prepare_quantized), one add fewer per output;
//   few_channels     with smlad, convolutions of 1-4 input channels (first layers): a
//                    pixel whose window lies inside the input gathers its int16 pairs
//                    in straight-line code without bound checks (two byte loads and a
//                    pack per word); the border keeps the checked gather;
//   pixel_triples    with smlad and block, three pixels by two channels per pass (a 3x2
//                    register tile), the remainder in pairs.
// Under smlad the tile's weight words, widened pairs and gathered words are lets in
// memory order (qconv_gemm.cc's tile_step), so GCC pairs adjacent loads into LDRD.
// Depthwise convolutions (groups == channels) run channel by channel over the kernel
// window; other grouped convolutions take the plain loop nest.
//
// Two requantization rules (attribute "requant"): "tflite" (default), TFLite's fixed
// point from the scale attributes; "onnx", ONNX's rule exactly as qlinear_conv computes
// it (core/ops/onnx_quant.cc): y = round_half_even(acc * M / 2^s) + output_zero_point,
// (M, s) the float32 multiplier x_scale * w_scale / y_scale, exact: in 32-bit steps from
// the high word of acc * M * 2^k when M * 2^-s is below about 1/8 (quant_util.h's
// onnx_high_word_form), in int64 otherwise. The onnx
// rule also takes uint8 data and output ("output_dtype") and, for qconv2d, layout
// "NCHW" (the weight stays OHWI). prepare_quantized lowers qlinear_conv and
// qlinear_matmul onto these kernels with it, so ONNX models get the fast schedules
// with the same bits as the plain loops.
//
// The files: this one holds the ops (attributes, shapes, registration) and the dense
// and pointwise convolutions through the matrix-product core; qconv_gemm.cc the
// requantization and that core; qconv_depthwise.cc the depthwise tiles and the
// one-output-at-a-time loop nests; qconv_internal.h what they share.
#include <algorithm>
#include <set>

#include "ops/qconv_internal.h"
#include "ir/substitute.h"

namespace mtir {
namespace ops {
namespace qconv_impl {

// ---- geometry ------------------------------------------------------------------

Expr conv_input(const QConv& p, const Buffer& data, Expr n, Expr ih, Expr iw, Expr ic, Expr cond) {
  const int64_t zx = p.q.input_zero_point;
  const bool fold = p.sched.fold_zero_point;
  Expr x = Cast(kI32, load(data, p.at(n, ih, iw, ic)));
  if (!fold && zx != 0) x = sub(x, ci(zx));
  return lazy_select(cond, x, ci(fold ? zx : 0));
}

// The input coordinate of output `o` and kernel tap `k`, and its bound check.
Expr tap(Expr o, Expr k, int64_t stride, int64_t dilation, int64_t pad) {
  return sub(add(mul(o, ci(stride)), mul(k, ci(dilation))), ci(pad));
}
Expr inside(Expr coord, int64_t pad, int64_t extent, int64_t out, int64_t kernel, int64_t stride, int64_t dilation) {
  Expr cond;
  if (pad > 0) cond = ge(coord, ci(0));
  if ((out - 1) * stride + (kernel - 1) * dilation - pad >= extent) cond = and_(cond, lt(coord, ci(extent)));
  return cond;
}

// Inside when o * stride - pad >= 0 and o * stride - pad + (kernel - 1) * dilation < extent.
std::vector<OutputRange> border_split(int64_t out, int64_t pad, int64_t extent, int64_t kernel, int64_t stride,
                                      int64_t dilation) {
  int64_t lo = (pad + stride - 1) / stride;
  int64_t last = extent - 1 + pad - (kernel - 1) * dilation;
  int64_t hi = last < 0 ? 0 : last / stride + 1;
  lo = std::min(lo, out), hi = std::max(lo, std::min(hi, out));
  std::vector<OutputRange> r;
  if (lo > 0) r.push_back({0, lo, true});
  if (hi > lo) r.push_back({lo, hi, false});
  if (out > hi) r.push_back({hi, out, true});
  return r;
}

std::vector<std::pair<int64_t, int64_t>> balanced_tiles(int64_t begin, int64_t end, int64_t widest) {
  std::vector<std::pair<int64_t, int64_t>> tiles;
  const int64_t count = (end - begin + widest - 1) / widest;
  for (int64_t k = 0, o = begin; k < count; ++k) {
    const int64_t width = (end - o) / (count - k);
    tiles.emplace_back(o, width);
    o += width;
  }
  return tiles;
}

namespace {

const std::vector<std::string> kQConvAttrs = {"strides", "padding", "dilation", "groups", "weight_shape",
                                              "input_scale", "input_zero_point", "weight_scale", "weight_zero_point",
                                              "output_scale", "output_zero_point", "activation", "schedule",
                                              "requant", "output_dtype", "onnx_multiplier", "layout"};

QConv qconv_params(const std::vector<TensorType>& in, const json& attrs) {
  const std::string op = "qconv2d";
  AttrReader r(op, attrs, kQConvAttrs);
  QConv p;
  if (in.size() < 2) fail(op, "takes 2 to 4 inputs (data, weight, bias, requant), got " + std::to_string(in.size()));
  p.nchw = r.get_string("layout", "NHWC", {"NHWC", "NCHW"}) == "NCHW";
  check_rank(op, in, 0, p.nchw ? "data (NCHW)" : "data (NHWC)", 4);
  std::vector<int64_t> wshape = in[1].shape;
  if (in[1].dtype == kI32) {
    // Packed for smlad: the original OHWI shape travels in an attribute.
    wshape = r.get_ints("weight_shape", 4, 1, "positive integers", std::nullopt);
  } else {
    check_rank(op, in, 1, "weight (OHWI)", 4);
  }
  p.sched = read_schedule(op, r);
  if (p.sched.mve && r.get_int("groups", 1) > 1) {
    // A depthwise convolution under mve takes its weight as [1, KH, KW, O], the channels in
    // blocks of four (mve_depthwise_weight_index): the same geometry as OHWI [O, KH, KW, 1].
    if (wshape[0] != 1)
      fail(op, "schedule 'mve' on a grouped convolution needs the depthwise weight as [1, KH, KW, O], got " +
                   shape_str(wshape));
    wshape = {wshape[3], wshape[1], wshape[2], 1};
  }
  const auto& d = in[0].shape;
  p.n = d[0], p.h = d[p.nchw ? 2 : 1], p.w = d[p.nchw ? 3 : 2], p.c = d[p.nchw ? 1 : 3];
  p.o = wshape[0], p.kh = wshape[1], p.kw = wshape[2], p.cg = wshape[3];
  p.rule = read_rule(op, r, &p.q, p.o);
  if (p.nchw && !p.rule.onnx) fail(op, "layout \"NCHW\" needs requant \"onnx\"");
  check_data(op, in, p.rule, p.q);
  p.inputs = classify_inputs(op, in, p.o);
  // pair_records: the bias and the three-column table travel in the weight's records.
  if (p.sched.pair_records) {
    if (in.size() != 2 || p.o % 2)
      fail(op, "schedule 'pair_records' takes the data and the pair records only, for an even number of output "
               "channels, got " + std::to_string(in.size()) + " inputs and " + std::to_string(p.o) + " channels");
    p.inputs.bias = p.inputs.table = p.inputs.records = true;
    p.inputs.table_columns = kRecordTableColumns;
  }
  auto strides = r.get_ints("strides", 2, 1, "positive integers", std::vector<int64_t>{1, 1});
  auto padding = r.get_ints("padding", 4, 0, "non-negative integers", std::vector<int64_t>{0, 0, 0, 0});
  auto dilation = r.get_ints("dilation", 2, 1, "positive integers", std::vector<int64_t>{1, 1});
  p.groups = r.get_int("groups", 1);
  if (p.groups < 1) r.bad("groups", "a positive integer");
  if (p.c % p.groups != 0 || p.o % p.groups != 0)
    fail(op, "groups (" + std::to_string(p.groups) + ") must divide the " + std::to_string(p.c) + " input and " +
                 std::to_string(p.o) + " output channels");
  if (p.cg * p.groups != p.c)
    fail(op, "weight has " + std::to_string(p.cg) + " input channels per group but the data has " +
                 std::to_string(p.c) + " channels in " + std::to_string(p.groups) + " group(s)");
  p.sh = strides[0], p.sw = strides[1], p.dh = dilation[0], p.dw = dilation[1];
  p.pt = padding[0], p.pl = padding[1], p.pb = padding[2], p.pr = padding[3];
  int64_t eh = p.dh * (p.kh - 1) + 1, ew = p.dw * (p.kw - 1) + 1;
  if (eh > p.h + p.pt + p.pb || ew > p.w + p.pl + p.pr)
    fail(op, "the dilated kernel (" + std::to_string(eh) + "x" + std::to_string(ew) + ") is larger than the padded input");
  p.oh = (p.h + p.pt + p.pb - eh) / p.sh + 1;
  p.ow = (p.w + p.pl + p.pr - ew) / p.sw + 1;
  check_packing(op, p.sched, p.inputs, p.q, in[1].shape, p.o, p.k());
  if (p.sched.mve) check_mve(op, p.sched, p.rule, p.inputs);
  if (p.sched.smlad && p.groups != 1) fail(op, "schedule 'smlad' applies to convolutions with groups == 1");
  if (p.sched.word_gather && (p.nchw || p.c % 4 != 0 || p.rule.data != kI8))
    fail(op, "schedule 'word_gather' applies to NHWC int8 convolutions of a multiple of 4 input channels, got " +
                 std::to_string(p.c) + (p.nchw ? " (NCHW)" : ""));
  if (p.sched.mve && p.groups != 1 && !mve_depthwise_applies(p))
    fail(op, "schedule 'mve' applies to convolutions with groups == 1 and to NHWC depthwise ones (one output channel "
             "per input channel)");
  if (p.sched.mve && p.groups != 1 && p.sched.smmlar_requant)
    fail(op, "schedule 'mve' on a depthwise convolution reads the requantization table as (multiplier, shift) or "
             "(multiplier, r - 1, ...), not smmlar_requant's");
  return p;
}

TensorType qconv_infer(const std::vector<TensorType>& in, const json& attrs) {
  QConv p = qconv_params(in, attrs);
  if (p.nchw) return TensorType{p.rule.out, {p.n, p.o, p.oh, p.ow}};
  return TensorType{p.rule.out, {p.n, p.oh, p.ow, p.o}};
}

// few_channels: pixel `row` of image n, its receptive field as int16 pairs into col
// words slot * words + j, unrolled at compile time (the reduction is short): word j holds
// elements 2j and 2j + 1 in (kh, kw, ci) order, a zero after an odd last one.
// `element(i)` is the value of flat NHWC data index i as the reduction sees it; every
// index is the window's first one plus a constant, so each load is one instruction with
// an immediate offset. The window must lie inside the input.
Stmt few_channels_gather(const QConv& p, Expr n, Expr row, const Buffer& col, Expr slot,
                         const std::function<Expr(Expr)>& element) {
  const int64_t k = p.k(), words = (k + 1) / 2;
  Expr oh = floordiv(row, ci(p.ow)), ow = floormod(row, ci(p.ow));
  Expr top = sub(mul(oh, ci(p.sh)), ci(p.pt)), left = sub(mul(ow, ci(p.sw)), ci(p.pl));
  Var base = ivar("window");
  auto at = [&](int64_t e) {
    const int64_t rh = e / (p.kw * p.cg), rw = e / p.cg % p.kw, c = e % p.cg;
    return element(add(base, ci((rh * p.dh * p.w + rw * p.dw) * p.c + c)));
  };
  std::vector<Stmt> s;
  for (int64_t j = 0; j < words; ++j)
    s.push_back(store(col, pack_pair(at(2 * j), 2 * j + 1 < k ? at(2 * j + 1) : ci(0)), {add(mul(slot, ci(words)), ci(j))}));
  return LetStmt(base, mul(add(mul(add(mul(n, ci(p.h)), top), ci(p.w)), left), ci(p.c)), SeqStmt(s));
}

// Whether the window of pixel `row` lies inside the input (null when every one does).
Expr window_inside(const QConv& p, Expr row) {
  Expr oh = floordiv(row, ci(p.ow)), ow = floormod(row, ci(p.ow));
  const int64_t eh = (p.kh - 1) * p.dh, ew = (p.kw - 1) * p.dw;
  Expr top = sub(mul(oh, ci(p.sh)), ci(p.pt)), left = sub(mul(ow, ci(p.sw)), ci(p.pl));
  Expr cond;
  if (p.pt > 0) cond = ge(top, ci(0));
  if ((p.oh - 1) * p.sh - p.pt + eh >= p.h) cond = and_(cond, lt(top, ci(p.h - eh)));
  if (p.pl > 0) cond = and_(cond, ge(left, ci(0)));
  if ((p.ow - 1) * p.sw - p.pl + ew >= p.w) cond = and_(cond, lt(left, ci(p.w - ew)));
  return cond;
}

// mve with channels a multiple of 16 (NHWC, groups 1): pixel `row`'s receptive field
// into col sixteen bytes at a time (one VLDRB.8 and one VSTRB.8, analysis/
// helium_vectors.h), a tap in the padding filled with the zero point (folded).
Stmt byte_vector_gather(const QConv& p, const Buffer& bytes, Expr n, Expr row, const Buffer& col, Expr slot) {
  constexpr int kBytes = 16;
  Expr oh = floordiv(row, ci(p.ow)), ow = floormod(row, ci(p.ow));
  LoopNest taps;
  Expr rh = taps.axis("rh", p.kh), rw = taps.axis("rw", p.kw);
  Expr ih = tap(oh, rh, p.sh, p.dh, p.pt), iw = tap(ow, rw, p.sw, p.dw, p.pl);
  Expr cond = and_(inside(ih, p.pt, p.h, p.oh, p.kh, p.sh, p.dh), inside(iw, p.pl, p.w, p.ow, p.kw, p.sw, p.dw));
  Expr first = add(mul(slot, ci(p.k())), mul(add(mul(rh, ci(p.kw)), rw), ci(p.c)));
  Expr pixel = mul(add(mul(add(mul(n, ci(p.h)), ih), ci(p.w)), iw), ci(p.c));
  // Each loop its own variable: `value(e)` is what goes to bytes 16e .. 16e + 15.
  auto into = [&](const std::function<Expr(Expr)>& value) {
    Var e = ivar("e");
    return For(e, ci(0), ci(p.c / kBytes), ForKind::kSerial,
               store(col, value(e), {Ramp(add(first, mul(e, ci(kBytes))), ci(1), kBytes)}));
  };
  Stmt fill = into([&](Expr e) { return load(bytes, {Ramp(add(pixel, mul(e, ci(kBytes))), ci(1), kBytes)}); });
  if (cond)
    fill = IfThenElse(cond, fill, into([&](Expr) { return Broadcast(IntImm(kI8, p.q.input_zero_point), kBytes); }));
  return taps.wrap(fill);
}

bool takes_byte_vector_gather(const QConv& p) {
  return p.sched.mve && p.sched.fold_zero_point && !p.nchw && p.groups == 1 && p.c % 16 == 0;
}

constexpr int64_t kWordGatherUnrolled = 16;  // words

// word_gather: the channels of tap (ih, iw) of image n four at a time, each four one word
// read from `words` (the flat data); SXTB16 widens elements (4e, 4e + 2) into col word
// `first_word` + 2e and SXTB16 ROR #8 elements (4e + 1, 4e + 3) into the next, the order
// prepare_quantized packs the weights in (a permutation of the reduction: same sums).
// Up to 64 channels the words are straight-line code (a loop's counter, compare and
// branch cost as much as a word; unroll_loops keeps loops that bind variables).
Stmt word_gather(const QConv& p, const Buffer& words, const Buffer& col, Expr n, Expr ih, Expr iw, Expr first_word) {
  Var at = ivar("px");
  auto copy = [&](Expr e) {
    std::vector<Expr> bytes;
    for (int64_t k = 0; k < 4; ++k) bytes.push_back(load(words, {add(at, add(mul(e, ci(4)), ci(k)))}));
    Var word = ivar("word");
    Expr dst = add(first_word, mul(e, ci(2)));
    Stmt widen = SeqStmt({store(col, Call(kI32, "sxtb16", {word}), {dst}),
                          store(col, Call(kI32, "sxtb16_ror8", {word}), {add(dst, ci(1))})});
    return LetStmt(word, Call(kI32, "pack_bytes", bytes), widen);
  };
  std::vector<Stmt> copies;
  if (p.sched.unroll && p.cg / 4 <= kWordGatherUnrolled) {
    for (int64_t e = 0; e < p.cg / 4; ++e) copies.push_back(copy(ci(e)));
  } else {
    Var e = ivar("e");
    copies.push_back(For(e, ci(0), ci(p.cg / 4), ForKind::kSerial, copy(e)));
  }
  Expr pixel = mul(add(mul(add(mul(n, ci(p.h)), ih), ci(p.w)), iw), ci(p.c));
  return LetStmt(at, pixel, SeqStmt(copies));
}

// Pixel `row` of image n: its receptive field in (kh, kw, ci) order, into col, every
// tap checked against the input's bounds (`flat`: the flat data, read under word_gather).
Stmt checked_gather(const QConv& p, const Buffer& data, Expr n, Expr row, const Buffer& col, Expr slot,
                    const Buffer& flat = nullptr) {
  const int64_t k = p.k(), zx = p.q.input_zero_point;
  const bool fold = p.sched.fold_zero_point;
  Expr oh = floordiv(row, ci(p.ow)), ow = floormod(row, ci(p.ow));
  LoopNest taps;
  Expr rh = taps.axis("rh", p.kh), rw = taps.axis("rw", p.kw);
  Expr ih = tap(oh, rh, p.sh, p.dh, p.pt), iw = tap(ow, rw, p.sw, p.dw, p.pl);
  Expr cond = and_(inside(ih, p.pt, p.h, p.oh, p.kh, p.sh, p.dh), inside(iw, p.pl, p.w, p.ow, p.kw, p.sw, p.dw));
  Expr first = mul(add(mul(rh, ci(p.kw)), rw), ci(p.cg));  // the tap's first element
  if (!p.sched.smlad || p.cg % 2 == 0) {
    // Channels innermost, the tap's bound check once around them; with smlad,
    // adjacent channels make the int16 pairs.
    const int64_t step = p.sched.smlad ? 2 : 1;
    const int64_t row_words = p.sched.smlad ? k / 2 : k;
    Var e = ivar("e");
    auto element = [&](Expr c) { return conv_input(p, data, n, ih, iw, c, Expr()); };
    Expr pad = ci(fold ? zx : 0);
    const DataType value = p.sched.mve ? kI8 : kI16;  // mve: raw int8 (the zero point is folded)
    Expr in = p.sched.smlad ? pack_pair(element(mul(e, ci(2))), element(add(mul(e, ci(2)), ci(1))))
                            : Cast(value, element(e));
    Expr out_of_range = p.sched.smlad ? pack_pair(pad, pad) : Cast(value, pad);
    auto at = [&](Expr i) { return add(add(mul(slot, ci(row_words)), floordiv(first, ci(step))), i); };
    Stmt fill = p.sched.word_gather ? word_gather(p, flat, col, n, ih, iw, at(ci(0)))
                                    : For(e, ci(0), ci(p.cg / step), ForKind::kSerial, store(col, in, {at(e)}));
    Var pe = ivar("pe");
    if (cond) fill = IfThenElse(cond, fill, For(pe, ci(0), ci(p.cg / step), ForKind::kSerial, store(col, out_of_range, {at(pe)})));
    return taps.wrap(fill);
  }
  // An odd channel count with smlad: the values first, then paired in order
  // (element 2j low, 2j+1 high, a zero after the last).
  Var rc = ivar("rc");
  Buffer staged = scratch("staged", {k + (k % 2)}, kI32);
  const int64_t words = (k + 1) / 2;
  Var j = ivar("j");
  Expr word = pack_pair(load(staged, {mul(j, ci(2))}), load(staged, {add(mul(j, ci(2)), ci(1))}));
  std::vector<Stmt> s = {taps.wrap(For(rc, ci(0), ci(p.cg), ForKind::kSerial, store(staged, conv_input(p, data, n, ih, iw, rc, cond), {add(first, rc)})))};
  if (k % 2) s.push_back(store(staged, ci(0), {ci(k)}));
  s.push_back(For(j, ci(0), ci(words), ForKind::kSerial, store(col, word, {add(mul(slot, ci(words)), j)})));
  return Allocate(staged, "local", SeqStmt(s));
}

// A convolution with groups == 1 through the matrix-product core (schedules block,
// smlad, unroll and the ones that build on them): pixels gathered into columns.
Stmt gemm_conv(const QConv& p, const QParams& b) {
  const Buffer &data = b.data, &weight = b.weight, &bias = b.bias, &table = b.table, &o = b.out;
  const int64_t zx = p.q.input_zero_point;
  const bool fold = p.sched.fold_zero_point;
  const int64_t k = p.k();
  Gemm g;
  g.rows = p.oh * p.ow, g.cols = p.o, g.k = k, g.q = &p.q, g.rule = &p.rule, g.sched = &p.sched;
  g.record_words = p.sched.pair_records ? pair_record_words(p.sched.weight_words(k)) : 0;
  g.weight = flat_view(weight, g.record_words ? p.o / 2 * g.record_words : p.o * p.sched.weight_words(k));
  g.bias = bias;
  g.table = table ? flat_view(table, p.o * p.inputs.table_columns) : nullptr;
  g.table_columns = p.inputs.table_columns;
  Var n = ivar("n");
  // few_channels (NHWC): interior pixels unchecked and unrolled, the border checked
  // (prepare_quantized asks for it only on short reductions; a long one stays a loop).
  const bool few_channels = p.sched.few_channels && !p.nchw && p.k() <= kFewChannelsMaxReduction;
  const bool byte_vectors = takes_byte_vector_gather(p);
  Buffer data_flat =
      few_channels || byte_vectors || p.sched.word_gather ? flat_view(data, p.n * p.h * p.w * p.c) : nullptr;
  g.gather = [&](Expr row, const Buffer& col, Expr slot) {
    return checked_gather(p, b.data, n, row, col, slot, data_flat);
  };
  if (byte_vectors) {
    g.gather = [&](Expr row, const Buffer& col, Expr slot) { return byte_vector_gather(p, data_flat, n, row, col, slot); };
  }
  if (few_channels) {
    g.gather = [&](Expr row, const Buffer& col, Expr slot) -> Stmt {
      auto element = [&](Expr i) {
        Expr x = Cast(kI32, load(data_flat, {i}));
        return !fold && zx != 0 ? sub(x, ci(zx)) : x;
      };
      Stmt fast = few_channels_gather(p, n, row, col, slot, element);
      Expr interior = window_inside(p, row);
      return interior ? IfThenElse(interior, fast, checked_gather(p, b.data, n, row, col, slot)) : fast;
    };
  }
  g.store = [&](Expr row, Expr oc, Expr v) {
    return store(o, v, p.at(n, floordiv(row, ci(p.ow)), floormod(row, ci(p.ow)), oc));
  };
  // pair_loads: the tile stores through the flat output too (qconv_gemm.cc's tile_outputs).
  if ((p.sched.mve || p.sched.pair_loads) && !p.nchw) {
    g.out_flat = flat_view(o, p.n * p.oh * p.ow * p.o);
    g.out_start = [&](Expr row) { return mul(add(mul(n, ci(g.rows)), row), ci(p.o)); };
  }
  if (p.sched.mve && p.kh == 1 && p.kw == 1 && p.pt + p.pl + p.pb + p.pr == 0 && !p.nchw) {
    // An unpadded 1x1 convolution reads each pixel's channels where they lie.
    g.direct = flat_view(data, p.n * p.h * p.w * p.c);
    g.row_start = [&](Expr row) {
      Expr ih = mul(floordiv(row, ci(p.ow)), ci(p.sh)), iw = mul(floormod(row, ci(p.ow)), ci(p.sw));
      return mul(add(mul(add(mul(n, ci(p.h)), ih), ci(p.w)), iw), ci(p.c));
    };
  }
  Window window;
  if (byte_vectors && p.sched.mve_direct && !g.direct) {
    window.data = data_flat, window.out_w = p.ow, window.kh = p.kh, window.kw = p.kw, window.channels = p.c;
    window.rows = border_split(p.oh, p.pt, p.h, p.kh, p.sh, p.dh);
    window.cols = border_split(p.ow, p.pl, p.w, p.kw, p.sw, p.dw);
    window.tap_row = p.dh * p.w * p.c, window.tap_col = p.dw * p.c, window.pixel_step = p.sw * p.c;
    window.start = [&](Expr oy, Expr ox) {
      Expr ih = sub(mul(oy, ci(p.sh)), ci(p.pt)), iw = sub(mul(ox, ci(p.sw)), ci(p.pl));
      return mul(add(mul(add(mul(n, ci(p.h)), ih), ci(p.w)), iw), ci(p.c));
    };
    g.window = &window;
  }
  Stmt body = gemm(g);
  if (g.out_flat && !p.sched.mve) body = DeclBuffer(g.out_flat, body);
  if (data_flat) body = DeclBuffer(data_flat, body);
  if (p.n > 1) body = For(n, ci(0), ci(p.n), ForKind::kSerial, body);
  else body = substitute(body, n, ci(0));
  return declare_views(g, body);
}

PrimFunc qconv_build(const std::string& fname, const std::vector<TensorType>& in, const TensorType& out,
                     const json& attrs) {
  QConv p = qconv_params(in, attrs);
  check_requant_table("qconv2d", p.q, p.rule, p.inputs);
  FuncBuilder fb;
  QParams b = declare_params(fb, in, out, p.inputs, p.o);
  if (p.groups == 1 && (p.sched.block || p.sched.smlad || p.sched.unroll || p.sched.mve)) return fb.finish(fname, gemm_conv(p, b));
  if (mve_depthwise_applies(p)) return fb.finish(fname, mve_depthwise(p, b));
  const bool depthwise = p.cg == 1 && p.groups == p.c && p.o == p.c;
  if (p.sched.depthwise_tile && depthwise) return fb.finish(fname, depthwise_tiles(p, b));
  return fb.finish(fname, conv_loops(p, b));
}

// ---- qdense --------------------------------------------------------------------

const std::vector<std::string> kQDenseAttrs = {"weight_shape", "input_scale", "input_zero_point", "weight_scale",
                                               "weight_zero_point", "output_scale", "output_zero_point",
                                               "activation", "schedule", "requant", "output_dtype", "onnx_multiplier"};

struct QDense {
  int64_t n, k, m;
  QInputs inputs;
  QuantAttrs q;
  Rule rule;
  Schedule sched;
};

QDense qdense_params(const std::vector<TensorType>& in, const json& attrs) {
  const std::string op = "qdense";
  AttrReader r(op, attrs, kQDenseAttrs);
  if (in.size() < 2) fail(op, "takes 2 to 4 inputs (data, weight, bias, requant), got " + std::to_string(in.size()));
  check_rank(op, in, 0, "data", 2);
  QDense p;
  p.n = in[0].shape[0], p.k = in[0].shape[1];
  std::vector<int64_t> wshape = in[1].shape;
  if (in[1].dtype == kI32) {
    wshape = r.get_ints("weight_shape", 2, 1, "positive integers", std::nullopt);
  } else {
    check_rank(op, in, 1, "weight", 2);
  }
  p.m = wshape[0];
  if (wshape[1] != p.k)
    fail(op, "weight has " + std::to_string(wshape[1]) + " input features but the data has " + std::to_string(p.k));
  p.rule = read_rule(op, r, &p.q, p.m);
  check_data(op, in, p.rule, p.q);
  p.inputs = classify_inputs(op, in, p.m);
  p.sched = read_schedule(op, r);
  check_packing(op, p.sched, p.inputs, p.q, in[1].shape, p.m, p.k);
  if (p.sched.mve) check_mve(op, p.sched, p.rule, p.inputs);
  return p;
}

TensorType qdense_infer(const std::vector<TensorType>& in, const json& attrs) {
  QDense p = qdense_params(in, attrs);
  return TensorType{p.rule.out, {p.n, p.m}};
}

PrimFunc qdense_build(const std::string& fname, const std::vector<TensorType>& in, const TensorType& out,
                      const json& attrs) {
  QDense p = qdense_params(in, attrs);
  check_requant_table("qdense", p.q, p.rule, p.inputs);
  FuncBuilder fb;
  QParams b = declare_params(fb, in, out, p.inputs, p.m);
  const Buffer &data = b.data, &weight = b.weight, &bias = b.bias, &table = b.table, &o = b.out;
  const int64_t zx = p.q.input_zero_point;
  Gemm g;
  g.rows = p.n, g.cols = p.m, g.k = p.k, g.q = &p.q, g.rule = &p.rule, g.sched = &p.sched;
  g.weight = flat_view(weight, p.m * p.sched.weight_words(p.k));
  g.bias = bias;
  g.table = table ? flat_view(table, p.m * p.inputs.table_columns) : nullptr;
  g.table_columns = p.inputs.table_columns;
  auto x_of = [&](Expr row, Expr kk) {
    Expr x = Cast(kI32, load(data, {row, kk}));
    return p.sched.fold_zero_point || zx == 0 ? x : sub(x, ci(zx));
  };
  g.gathered = x_of;
  // Words first .. first + (len + 1) / 2 - 1 of col: input values k0 .. k0 + len - 1 of
  // `row` as int16 pairs, a last odd value paired with 0. `unroll` words per iteration
  // (the chunks of dense_chunks gather again for each group of channels).
  auto gather_pairs = [&](Expr row, const Buffer& col, Expr first, Expr k0, int64_t len, int64_t unroll = 1) {
    Var j = ivar("j");
    Expr word = pack_pair(x_of(row, add(k0, mul(j, ci(2)))), x_of(row, add(k0, add(mul(j, ci(2)), ci(1)))));
    std::vector<Stmt> s;
    if (unroll > 1 && len / 2 % unroll == 0) {
      Var jo = ivar("jo"), ji = ivar("ji");
      Stmt one = substitute(store(col, word, {add(first, j)}), j, add(mul(jo, ci(unroll)), ji));
      s.push_back(For(jo, ci(0), ci(len / 2 / unroll), ForKind::kSerial, For(ji, ci(0), ci(unroll), ForKind::kUnrolled, one)));
    } else if (len / 2 > 0) {
      s.push_back(For(j, ci(0), ci(len / 2), ForKind::kSerial, store(col, word, {add(first, j)})));
    }
    if (len % 2) s.push_back(store(col, pack_pair(x_of(row, add(k0, ci(len - 1))), ci(0)), {add(first, ci(len / 2))}));
    return SeqStmt(s);
  };
  if (p.sched.smlad) {
    const int64_t words = (p.k + 1) / 2;
    g.gather = [&, words](Expr row, const Buffer& col, Expr slot) {
      return gather_pairs(row, col, mul(slot, ci(words)), ci(0), p.k);
    };
  }
  g.store = [&](Expr row, Expr oc, Expr v) { return store(o, v, {row, oc}); };
  if (p.sched.mve) {
    g.direct = flat_view(data, p.n * p.k), g.row_start = [&](Expr row) { return mul(row, ci(p.k)); };
    g.out_flat = flat_view(o, p.n * p.m), g.out_start = [&](Expr row) { return mul(row, ci(p.m)); };
  }
  Stmt body = takes_dense_chunks(g) ? dense_chunked(g, [&](const Buffer& col, Expr k0, int64_t len) {
    return gather_pairs(ci(0), col, ci(0), k0, len, 4);
  })
                                    : gemm(g);
  return fb.finish(fname, declare_views(g, body));
}

}  // namespace
}  // namespace qconv_impl

void register_qconv_ops(std::vector<OpDef>& ops) {
  ops.push_back({"qconv2d", qconv_impl::qconv_infer, qconv_impl::qconv_build});
  ops.push_back({"qdense", qconv_impl::qdense_infer, qconv_impl::qdense_build});
}

}  // namespace ops
}  // namespace mtir
