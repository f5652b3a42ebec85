// The parts of qconv2d and qdense that do not depend on the layer's shape: their
// attributes (the requantization rule, the schedule, the optional inputs), the
// requantization of an accumulator, and the matrix-product core both ops run (rows are
// output pixels or batch rows, columns output channels, the reduction runs over the
// receptive field; the schedules it implements are described in qconv.cc). As CMSIS-NN
// keeps its convolutions over one shared matrix-multiply kernel.
#include <algorithm>
#include <set>

#include "ops/qconv_internal.h"
#include "ir/substitute.h"

namespace mtir {
namespace ops {
namespace qconv_impl {
namespace {

int32_t lowest(DataType t) { return t.is_uint() ? 0 : -128; }
int32_t highest(DataType t) { return t.is_uint() ? 255 : 127; }

}  // namespace

// Reads "requant" and, for the tflite rule, the scale attributes (read_quant_attrs);
// for the onnx rule the zero points in the range of their types, "output_dtype",
// "activation" ("none" or "relu": the output is at least its zero point) and
// "onnx_multiplier" [M, s] (M in [0, 2^24), s in [1, 62]).
Rule read_rule(const std::string& op, const AttrReader& r, QuantAttrs* q, int64_t out_channels) {
  Rule rule;
  rule.onnx = r.get_string("requant", "tflite", {"tflite", "onnx"}) == "onnx";
  if (!rule.onnx) {
    for (const char* key : {"output_dtype", "onnx_multiplier"})
      if (r.has(key)) fail(op, std::string("attribute '") + key + "' needs requant \"onnx\"");
    *q = read_quant_attrs(op, r, out_channels);
    return rule;
  }
  for (const char* key : {"input_scale", "weight_scale", "output_scale", "weight_zero_point"})
    if (r.has(key)) fail(op, std::string("attribute '") + key + "' does not apply to requant \"onnx\"");
  rule.out = r.get_string("output_dtype", "int8", {"int8", "uint8"}) == "uint8" ? kU8 : kI8;
  auto zero_point = [&](const std::string& key, DataType t) {
    int64_t v = r.get_int(key, 0);
    if (v < lowest(t) || v > highest(t)) r.bad(key, "a value of type " + t.str());
    return static_cast<int32_t>(v);
  };
  q->output_zero_point = zero_point("output_zero_point", rule.out);
  q->activation = r.get_string("activation", "none", {"none", "relu"});
  q->bounds.lo = q->activation == "relu" ? std::max(lowest(rule.out), q->output_zero_point) : lowest(rule.out);
  q->bounds.hi = highest(rule.out);
  q->input_zero_point = static_cast<int32_t>(r.get_int("input_zero_point", 0));  // checked against the data's type
  if (const json* m = r.raw("onnx_multiplier")) {
    if (!m->is_array() || m->size() != 2 || !(*m)[0].is_number_integer() || !(*m)[1].is_number_integer() ||
        (*m)[0].get<int64_t>() < 0 || (*m)[0].get<int64_t>() >= (int64_t{1} << 24) || (*m)[1].get<int64_t>() < 1 ||
        (*m)[1].get<int64_t>() > 62)
      r.bad("onnx_multiplier", "a pair [M, s] with M in [0, 2^24) and s in [1, 62]");
    rule.uniform = true;
    rule.m = (*m)[0].get<int64_t>();
    rule.s = (*m)[1].get<int64_t>();
  }
  return rule;
}

// The data's type: int8, or uint8 under the onnx rule; its zero point must fit it.
void check_data(const std::string& op, const std::vector<TensorType>& in, Rule& rule, const QuantAttrs& q) {
  if (in.empty()) return;
  DataType t = in[0].dtype;
  if (t != kI8 && !(rule.onnx && t == kU8))
    fail(op, std::string("data must be int8") + (rule.onnx ? " or uint8" : "") + ", got " + t.str());
  rule.data = t;
  if (rule.onnx && (q.input_zero_point < lowest(t) || q.input_zero_point > highest(t)))
    fail(op, "attribute 'input_zero_point' must be a value of the data's type " + t.str() + ", got " +
                 std::to_string(q.input_zero_point));
}

Schedule read_schedule(const std::string& op, const AttrReader& r) {
  Schedule s;
  const json* j = r.raw("schedule");
  if (!j || j->is_null()) return s;
  if (!j->is_object()) r.bad("schedule", "an object of booleans");
  for (const auto& [key, value] : j->items()) {
    if (!value.is_boolean()) r.bad("schedule", "an object of booleans ('" + key + "' is not a boolean)");
    bool on = value.get<bool>();
    if (key == "fold_zero_point")
      s.fold_zero_point = on;
    else if (key == "block")
      s.block = on;
    else if (key == "unroll")
      s.unroll = on;
    else if (key == "smlad")
      s.smlad = on;
    else if (key == "sxtb16")
      s.sxtb16 = on;
    else if (key == "interleave")
      s.interleave = on;
    else if (key == "fold_output_zero_point")
      s.fold_output_zero_point = on;
    else if (key == "few_channels")
      s.few_channels = on;
    else if (key == "depthwise_tile")
      s.depthwise_tile = on;
    else if (key == "depthwise_border_tiles")
      s.depthwise_border_tiles = on;
    else if (key == "smlal_requant")
      s.smlal_requant = on;
    else if (key == "smmlar_requant")
      s.smmlar_requant = on;
    else if (key == "dense_chunks")
      s.dense_chunks = on;
    else if (key == "mve")
      s.mve = on;
    else if (key == "mve_short_requant")
      s.mve_short_requant = on;
    else if (key == "mve_pair_requant")
      s.mve_pair_requant = on;
    else if (key == "mve_signed_requant")
      s.mve_signed_requant = on;
    else if (key == "mve_direct")
      s.mve_direct = on;
    else if (key == "pixel_triples")
      s.pixel_triples = on;
    else if (key == "rolled_leftovers")
      s.rolled_leftovers = on;
    else if (key == "mve_depthwise_padded")
      s.mve_depthwise_padded = on;
    else if (key == "word_gather")
      s.word_gather = on;
    else if (key == "pair_loads")
      s.pair_loads = on;
    else if (key == "pair_records")
      s.pair_records = on;
    else if (key != "hoist")
      fail(op, "unknown schedule '" + key + "' (known: " + schedule_names() + ")");
  }
  return s;
}

QParams declare_params(FuncBuilder& fb, const std::vector<TensorType>& in, const TensorType& out, const QInputs& q,
                       int64_t out_channels) {
  QParams b;
  b.data = fb.param("data", in[0].shape, in[0].dtype);
  b.weight = fb.param("weight", in[1].shape, in[1].dtype);
  if (q.bias && !q.records) b.bias = fb.param("bias", {out_channels}, kI32);
  if (q.table && !q.records) b.table = fb.param("requant", {out_channels, q.table_columns}, kI32);
  b.out = fb.param("out", out.shape, out.dtype);
  return b;
}

QInputs classify_inputs(const std::string& op, const std::vector<TensorType>& in, int64_t out_channels) {
  if (in.size() < 2 || in.size() > 4)
    fail(op, "takes 2 to 4 inputs (data, weight, bias, requant), got " + std::to_string(in.size()));
  QInputs q;
  q.packed = in[1].dtype == kI32;
  if (!q.packed && in[1].dtype != kI8) fail(op, "weight must be int8, got " + in[1].dtype.str());
  for (size_t i = 2; i < in.size(); ++i) {
    const TensorType& t = in[i];
    if (t.dtype != kI32)
      fail(op, "input " + std::to_string(i) + " (bias or requant table) must be int32, got " + t.dtype.str());
    if (t.shape.size() == 1 && !q.bias && !q.table) {
      if (t.shape[0] != out_channels)
        fail(op, "bias must have shape (" + std::to_string(out_channels) + ",), got " + shape_str(t.shape));
      q.bias = true;
    } else if (t.shape.size() == 2 && !q.table) {
      if (t.shape[0] != out_channels || (t.shape[1] != 2 && t.shape[1] != 3))
        fail(op, "the requant table must have shape (" + std::to_string(out_channels) + ", 2) or (" +
                     std::to_string(out_channels) + ", 3), got " + shape_str(t.shape));
      q.table = true;
      q.table_columns = t.shape[1];
    } else {
      fail(op, "input " + std::to_string(i) + " must be the bias (" + std::to_string(out_channels) +
                   ",) or the requant table (" + std::to_string(out_channels) + ", 2), got " + shape_str(t.shape));
    }
  }
  return q;
}

// The schedule and the weight's packing agree: packed (int32) exactly when smlad, in
// the shape prepare_quantized gives it for a reduction of length k.
void check_packing(const std::string& op, const Schedule& s, const QInputs& q, const QuantAttrs& attrs,
                   const std::vector<int64_t>& shape, int64_t rows, int64_t k) {
  if (q.packed && !s.smlad) fail(op, "a packed (int32) weight needs schedule 'smlad'");
  if (s.smlad && !q.packed) fail(op, "schedule 'smlad' needs the weight packed by prepare_quantized");
  if (s.sxtb16 && !s.smlad) fail(op, "schedule 'sxtb16' needs schedule 'smlad'");
  if (s.interleave && !(s.smlad && s.block)) fail(op, "schedule 'interleave' needs schedules 'smlad' and 'block'");
  if (s.few_channels && !s.smlad) fail(op, "schedule 'few_channels' needs schedule 'smlad'");
  if (s.pixel_triples && !(s.smlad && s.block)) fail(op, "schedule 'pixel_triples' needs schedules 'smlad' and 'block'");
  if (s.dense_chunks && !s.smlad) fail(op, "schedule 'dense_chunks' needs schedule 'smlad'");
  if (s.rolled_leftovers && !s.block) fail(op, "schedule 'rolled_leftovers' needs schedule 'block'");
  if (s.word_gather && !(s.smlad && s.fold_zero_point))
    fail(op, "schedule 'word_gather' needs schedules 'smlad' and 'fold_zero_point'");
  if (s.pair_loads && !s.smlad) fail(op, "schedule 'pair_loads' needs schedule 'smlad'");
  // Without a ReLU its rounding needs the sign of the accumulator, which is the sign of
  // the high word only for multipliers above 2^30 (smmlar_requantize).
  if (s.smmlar_requant && attrs.bounds.lo < attrs.output_zero_point)
    for (const QuantMultiplier& m : attrs.multipliers)
      if (m.multiplier <= (int64_t{1} << 30))
        fail(op, "schedule 'smmlar_requant' without a ReLU (output lower bound " + std::to_string(attrs.bounds.lo) +
                     " below the zero point " + std::to_string(attrs.output_zero_point) +
                     ") needs every multiplier above 2^30, got " + std::to_string(m.multiplier));
  SmmlarForm form;
  if (s.smmlar_requant && !q.table && !smmlar_form(attrs.multipliers.at(0), attrs.output_zero_point, &form))
    fail(op, "schedule 'smmlar_requant' needs a multiplier in [2^30, 2^31) with a right shift of at most 31 and "
             "a rounding term within int32, got multiplier " + std::to_string(attrs.multipliers.at(0).multiplier) +
             ", shift " + std::to_string(attrs.multipliers.at(0).shift));
  if (s.fold_output_zero_point && !(q.table && q.table_columns == 3))
    fail(op, "schedule 'fold_output_zero_point' needs the requant table of shape (O, 3) that prepare_quantized builds");
  if (s.smlal_requant && !(q.table && q.table_columns == 3))
    fail(op, "schedule 'smlal_requant' needs the requant table of shape (O, 3) that prepare_quantized builds");
  if (s.smmlar_requant && q.table && !s.smlal_requant)
    fail(op,
         "schedule 'smmlar_requant' on a requant table needs schedule 'smlal_requant' (and the table prepare_quantized "
         "builds for it)");
  if (s.pair_records && !(op == "qconv2d" && s.pair_loads && s.word_gather && s.interleave && s.smmlar_requant &&
                          !s.sxtb16 && !s.mve && q.records))
    fail(op, "schedule 'pair_records' applies to qconv2d under pair_loads, word_gather, interleave and smmlar_requant "
             "without sxtb16, its weight input the records prepare_quantized builds (and no bias or table input)");
  if (s.pair_records) {
    const std::vector<int64_t> want = {rows / 2, pair_record_words(s.weight_words(k))};
    if (shape != want)
      fail(op, "the pair records must have shape " + shape_str(want) + ", got " + shape_str(shape));
    return;
  }
  if (q.packed && shape != std::vector<int64_t>{rows, s.weight_words(k)})
    fail(op, "the packed weight must have shape (" + std::to_string(rows) + ", " + std::to_string(s.weight_words(k)) +
                 "), got " + shape_str(shape));
}

// The three-column form (corrected_high_word(x, M) + R) >> s in one 64-bit multiply-add
// (SMLAL on a Cortex-M): corrected_high_word subtracts 2^31 from Q = x * M + 2^30 when
// Q < 0, and Q < 0 exactly when x < 0 once M > 2^30 (x <= -1 gives Q <= 2^30 - M < 0).
// So (h + R) >> s = hi32(x * M + V) >> s with V = (R - [x < 0]) * 2^32 + (x < 0 ?
// 0xC0000000 : 0x40000000): the high word of V is R + (x >> 31), the low word
// 0x40000000 | (x & 0x80000000). |x * M| < 2^62 and R < 2^30: no int64 overflow.
// With `negatives_clamp` (the output's lower bound is at least its zero point: ReLU) V is
// R * 2^32 + 2^30 for every x, one instruction fewer: for x < 0, x * M + 2^30 < 0, so
// both forms give at most the zero point after the shift (R / 2^s is zo + 1/2), and
// the clamp makes either the lower bound.
Expr smlal_requantize(Expr x, Expr multiplier, Expr shift, Expr rounding, bool negatives_clamp) {
  const DataType u32 = DataType::UInt(32), u64 = DataType::UInt(64);
  Expr hi = negatives_clamp ? std::move(rounding) : add(std::move(rounding), call("shift_right", {x, ci(31)}));
  Expr lo = negatives_clamp ? IntImm(u32, 0x40000000u)
                            : call("bitwise_or", {call("bitwise_and", {Cast(u32, x), IntImm(u32, 0x80000000u)}),
                                                  IntImm(u32, 0x40000000u)});
  Expr v =
      Cast(kI64, call("bitwise_or", {call("shift_left", {Cast(u64, Cast(u32, hi)), IntImm(u64, 32)}), Cast(u64, lo)}));
  Expr sum = Binary(ExprKind::Add, Binary(ExprKind::Mul, Cast(kI64, x), Cast(kI64, std::move(multiplier))), v);
  Expr high = Cast(kI32, Call(kI64, "shift_right", {sum, IntImm(kI64, 32)}));
  return call("shift_right", {high, std::move(shift)});
}

// Schedule smmlar_requant: y = smmlar(x, M', x + C) >> s with (M', s, C) from the table
// (2M - 2^32, r, 2R) or, per tensor, from smmlar_form (quant_util.h says why that is
// TFLite's value). With `sign_correction` (no ReLU clamps a negative accumulator, and a
// right shift s of at least 1 rounds), C also takes x >> 31, the -[h < 0] of TFLite's
// rounding, which is -[x < 0] for M above 2^30.
Expr smmlar_requantize(Expr x, Expr multiplier, Expr shift, Expr rounding, bool sign_correction) {
  Expr c = sign_correction ? add(add(std::move(rounding), x), call("shift_right", {x, ci(31)})) : add(std::move(rounding), x);
  return call("shift_right", {Call(kI32, "smmlar", {x, std::move(multiplier), std::move(c)}), std::move(shift)});
}

// The requantized int8 value of accumulator `acc` for output channel `oc`: TFLite's
// MultiplyByQuantizedMultiplier, then the zero point and the activation bounds. A
// per-tensor multiplier is a constant; per-channel ones come from the table that
// prepare_quantized builds, in one of two forms. (multiplier, shift) is TFLite's pair for
// any shift. (multiplier, r - 1, 1 << (r - 2)), used when every channel's right shift r
// is at least 2 (multipliers below 1/4, the usual case), does both roundings in one
// step on the high word of the corrected product (quant_util.h): a few 32-bit
// instructions on a Cortex-M instead of TFLite's case split and mask.
// Under the onnx rule: the 32-bit form when it exists, else p = acc * M in int64
// (|p| < 2^55), rounded half to even by the
// shift, (p + 2^(s-1) - 1 + bit s of p) >> s, then the zero point and the bounds in
// int64 (the quotient may exceed int32), as qlinear_conv does it.
// With `zero_point_folded` (tflite rule only) the table's third column already holds the
// output zero point. With `smlal` (schedule smlal_requant, tflite rule, three columns,
// every multiplier above 2^30) the rounding term joins the product: see smlal_requantize.
// With `smmlar` (schedule smmlar_requant; prepare_quantized rewrote the table as
// (2M - 2^32, s + 1, 2R), see there) one SMMLAR and the shift: hi32((2R + x) * 2^32 + x *
// (2M - 2^32) + 2^31) is 2R + floor((x * M + 2^30) / 2^31), so shifting it by s + 1 gives
// hi32(x * M + R * 2^32 + 2^30) >> s (smmlar_requantize adds the sign correction where
// there is no ReLU); a per-tensor multiplier takes the same form from smmlar_form.
// `column(k)`, when given, is the table's column k of channel `oc` (values the caller
// loaded once for several outputs).
Expr requantize_channel(const QuantAttrs& q, const Rule& rule, const Buffer& table, int64_t columns, Expr acc, Expr oc,
                        bool zero_point_folded, bool smlal, bool smmlar, const std::function<Expr(int64_t)>& column) {
  // A two-column table's channel oc = base + c, column k at base * 2 + (2c + k): a tile's
  // channels share one address and differ in the offset. LLVM kept (base + 1) * 2 as a
  // product of its own, one more value live across the tile loop (VWW's 128-channel 1x1
  // layers under PBQP). Not the three-column tables: GCC's VWW layer 0 took 863 more.
  auto col = [&](int64_t k) {
    if (column) return column(k);
    Expr base = oc;
    int64_t c = 0;
    if (const auto* a = as<AddNode>(oc); a && as_const_int(a->b) && a->b->dtype == kI32 && columns == 2) {
      base = a->a;
      c = *as_const_int(a->b);
    }
    return load(table, {add(mul(base, ci(columns)), ci(c * columns + k))});
  };
  // The three-column tables' shift (r - 1, or r for smmlar, with TFLite's right shift r in
  // [2, 31]) is within [0, 31]: said in the IR, a shift by it needs no mask (one AND less
  // per channel in C and LLVM); the interpreter checks it.
  auto shift_col = [&] { return Call(kI32, "known_range", {col(1), ci(0), ci(31)}); };
  if (rule.onnx) {
    OnnxHighWord hw;
    if (table ? columns == 3 : onnx_high_word_form(rule.m, rule.s, &hw)) {
      // 32-bit steps (quant_util.h): the table holds (M', t, 2^(t-1)).
      Expr y = table
                   ? onnx_high_word_requantize(acc, col(0), col(1), col(2))
                   : onnx_high_word_requantize(acc, ci(hw.multiplier), ci(hw.shift), ci(int64_t{1} << (hw.shift - 1)));
      return Cast(rule.out, min_(max_(add(y, ci(q.output_zero_point)), ci(q.bounds.lo)), ci(q.bounds.hi)));
    }
    Expr y = table ? onnx_round_shift(acc, Cast(kI64, col(0)), Cast(kI64, col(1)))
                   : onnx_round_shift(acc, IntImm(kI64, rule.m), IntImm(kI64, rule.s));
    y = Binary(ExprKind::Add, y, IntImm(kI64, q.output_zero_point));
    y = Binary(ExprKind::Min, Binary(ExprKind::Max, y, IntImm(kI64, q.bounds.lo)), IntImm(kI64, q.bounds.hi));
    return Cast(rule.out, y);
  }
  Expr y;
  const bool negatives_clamp = q.bounds.lo >= q.output_zero_point;
  SmmlarForm form;
  if (!table && smmlar && smmlar_form(q.multipliers.at(0), q.output_zero_point, &form)) {
    y = smmlar_requantize(acc, ci(form.multiplier), ci(form.shift), ci(form.rounding),
                          !negatives_clamp && form.shift > 0);
    zero_point_folded = true;
  } else if (!table) {
    y = multiply_by_quantized_multiplier(acc, q.multipliers.at(0));
  } else if (columns == 2) {
    y = multiply_by_quantized_multiplier(acc, col(0), col(1));
  } else if (smmlar) {
    y = smmlar_requantize(acc, col(0), shift_col(), col(2), !negatives_clamp);  // the table's shifts are at least 2
  } else if (smlal) {
    y = smlal_requantize(acc, col(0), shift_col(), col(2), negatives_clamp);
  } else {
    y = call("shift_right", {add(corrected_high_word(acc, col(0)), col(2)), shift_col()});
  }
  return saturate_int8(y, zero_point_folded ? 0 : q.output_zero_point, q.bounds);
}

bool uniform(const QuantAttrs& q) {
  for (const auto& m : q.multipliers)
    if (m.multiplier != q.multipliers[0].multiplier || m.shift != q.multipliers[0].shift) return false;
  return true;
}

// Per-channel multipliers that differ need the table input (prepare_quantized adds it);
// checked when building, so a graph as the user wrote it still type-checks.
void check_requant_table(const std::string& op, const QuantAttrs& q, const Rule& rule, const QInputs& in) {
  if (rule.onnx) {
    if (!rule.uniform && !in.table)
      fail(op,
           "requant \"onnx\" needs attribute 'onnx_multiplier' [M, s] or the table input (int32 [O, 2] of M and s "
           "per channel, or [O, 3] of quant_util.h's 32-bit form)");
    return;
  }
  if (!in.table && !uniform(q))
    fail(op,
         "per-channel weight scales need the requantization table input (int32 [O, 2], multiplier and shift per "
         "channel as TFLite's QuantizeMultiplier gives them), which prepare_quantized adds to the graph");
}

Expr i32(Expr e) { return e->dtype == kI32 ? e : Cast(kI32, std::move(e)); }

// Two int16 values (int32 expressions in range) as one word, `lo` in the low half:
// built in uint32 so no signed shift or overflow is involved.
Expr pack_pair(Expr lo, Expr hi) {
  const DataType u32 = DataType::UInt(32);
  Expr l = call("bitwise_and", {Cast(u32, std::move(lo)), IntImm(u32, 0xffff)});
  Expr h = call("shift_left", {Cast(u32, std::move(hi)), IntImm(u32, 16)});
  return Cast(kI32, call("bitwise_or", {l, h}));
}

Expr smlad(Expr a, Expr b, Expr acc) { return Call(kI32, "smlad", {std::move(a), std::move(b), std::move(acc)}); }
Expr builtin1(const char* name, Expr x) { return Call(kI32, name, {std::move(x)}); }

// The part of the reduction one pass covers: all of it (the default), or, for
// dense_chunks, `k` values from weight word `word0` on, the sums carried across parts
// in `carry` (one int32 per channel from channel `carry0` on) instead of starting at the
// bias and ending in the requantization.
struct Part {
  int64_t k;
  Expr word0;
  Buffer carry;
  Expr carry0;
};

// One pass of the core as the reduction steps see it: `rows` pixels (their gathered
// words in col slots 0..np-1, or read directly) times `nc` channels from `oc0`, summed
// in `acc`.
struct Tile {
  const Gemm& g;
  const Buffer& col;
  const std::vector<Expr>& rows;
  Expr oc0;
  int64_t nc, kw, ww;  // channels, words per gathered pixel, words per weight row
  Buffer acc;
  Expr word0;
  bool pairs = false;  // pair_loads: a step covers two words (tile_step_pairs)
  int64_t np() const { return static_cast<int64_t>(rows.size()); }
  Expr gathered(int64_t p, Expr word) const {
    return col ? load(col, {add(ci(p * kw), word)}) : g.gathered(rows[p], word);
  }
  // Weight word `kg` of tile channel c. Interleaved: a whole pair (nc == 2, oc0 even)
  // alternates word by word; the odd last channel (nc == 1) keeps its own row.
  Expr weight(int64_t c, Expr kg) const {
    Expr pair = g.record_words ? add(mul(oc0, ci(g.record_words / 2)), ci(kRecordBiasWords)) : mul(oc0, ci(ww));
    return g.sched->interleave && nc == 2 ? load(g.weight, {add(add(pair, mul(kg, ci(2))), ci(c))})
                                          : load(g.weight, {add(mul(add(oc0, ci(c)), ci(ww)), kg)});
  }
  Expr sum(int64_t p, int64_t c) const { return load(acc, {ci(p * nc + c)}); }
};

// `lets` around `body`, the first one outermost.
Stmt bind_lets(const std::vector<std::pair<Var, Expr>>& lets, Stmt body) {
  for (auto it = lets.rbegin(); it != lets.rend(); ++it) body = LetStmt(it->first, it->second, body);
  return body;
}

// One weight word `kk` of every channel against the matching gathered words of every
// pixel (with sxtb16 the word holds two pairs, the second absent in a last, half-full
// word). Under smlad the weight words, their widened pairs and each pixel's gathered
// words are lets, bound in memory order next to each other: GCC then loads two adjacent
// words with one LDRD and widens each weight word once per step.
Stmt tile_step_pairs(const Tile& t, Expr kk);

Stmt tile_step(const Tile& t, Expr kk, bool half) {
  if (t.pairs && !half) return tile_step_pairs(t, kk);
  if (t.pairs) {  // the last, odd word: one word as without pair_loads
    Tile one = t;
    one.pairs = false;
    return tile_step(one, mul(kk, ci(2)), false);
  }
  const bool quads = t.g.sched->sxtb16;
  Expr kg = add(kk, t.word0);  // the weight word
  if (!t.g.sched->smlad) {
    std::vector<Stmt> s;
    for (int64_t p = 0; p < t.np(); ++p)
      for (int64_t c = 0; c < t.nc; ++c)
        s.push_back(store(t.acc, add(t.sum(p, c), mul(i32(t.gathered(p, kk)), i32(t.weight(c, kg)))), {ci(p * t.nc + c)}));
    return SeqStmt(s);
  }
  std::vector<std::pair<Var, Expr>> outer;
  std::vector<Var> words, lo, hi;
  for (int64_t c = 0; c < t.nc; ++c) outer.emplace_back(words.emplace_back(ivar("w")), t.weight(c, kg));
  for (int64_t c = 0; c < t.nc && quads; ++c) {
    outer.emplace_back(lo.emplace_back(ivar("wlo")), builtin1("sxtb16", words[c]));
    if (!half) outer.emplace_back(hi.emplace_back(ivar("whi")), builtin1("sxtb16_ror8", words[c]));
  }
  std::vector<Stmt> pixels;
  for (int64_t p = 0; p < t.np(); ++p) {
    Var x0 = ivar("x"), x1 = ivar("x");
    const bool two = quads && !half;
    std::vector<Stmt> s;
    for (int64_t c = 0; c < t.nc; ++c) {
      Expr v = smlad(x0, quads ? Expr(lo[c]) : Expr(words[c]), t.sum(p, c));
      if (two) v = smlad(x1, hi[c], v);
      s.push_back(store(t.acc, v, {ci(p * t.nc + c)}));
    }
    Stmt body = SeqStmt(s);
    if (two) body = LetStmt(x1, i32(t.gathered(p, add(mul(kk, ci(2)), ci(1)))), body);
    pixels.push_back(LetStmt(x0, i32(t.gathered(p, quads ? mul(kk, ci(2)) : kk)), body));
  }
  return bind_lets(outer, SeqStmt(pixels));
}

// pair_loads (int16 weights): words 2kk and 2kk + 1 of the reduction, every two
// adjacent words one word_pair (the C backend's LDRD): per word the weight words of an
// interleaved channel pair (else two words of a channel's row), then each pixel's
// gathered pair. A batch-1 dense: 7 instructions per 8 MACs of a channel pair instead
// of 11 with single loads; the 3x2 tile of a short convolution (short_pairs): 17 per
// 24 MACs, no SXTB16.
Stmt tile_step_pairs(const Tile& t, Expr kk) {
  const DataType i64 = DataType::Int(64);
  auto pair = [&](std::vector<std::pair<Var, Expr>>& lets, Expr lo, Expr hi) {
    Var p = MakeVar("pair", i64), a = ivar("lo"), b = ivar("hi");
    lets.emplace_back(p, Call(i64, "word_pair", {std::move(lo), std::move(hi)}));
    lets.emplace_back(a, Cast(kI32, p));
    lets.emplace_back(b, Cast(kI32, call("shift_right", {p, IntImm(i64, 32)})));
    return std::make_pair(a, b);
  };
  Expr first = mul(kk, ci(2)), second = add(mul(kk, ci(2)), ci(1));
  Expr w0 = add(first, t.word0), w1 = add(second, t.word0);
  // One pixel (a batch-1 dense) binds its gathered pair first, as the loads lie in memory.
  std::vector<std::pair<Var, Expr>> outer, single;
  std::pair<Var, Var> x;
  if (t.np() == 1) x = pair(single, t.gathered(0, first), t.gathered(0, second));
  std::vector<std::pair<Var, Var>> w(t.nc);  // channel c's words w0 and w1
  if (t.g.sched->interleave && t.nc == 2) {
    auto [a0, b0] = pair(outer, t.weight(0, w0), t.weight(1, w0));
    auto [a1, b1] = pair(outer, t.weight(0, w1), t.weight(1, w1));
    w[0] = {a0, a1}, w[1] = {b0, b1};
  } else {
    for (int64_t c = 0; c < t.nc; ++c) w[c] = pair(outer, t.weight(c, w0), t.weight(c, w1));
  }
  std::vector<Stmt> pixels;
  for (int64_t p = 0; p < t.np(); ++p) {
    std::vector<std::pair<Var, Expr>> lets;
    auto [x0, x1] = t.np() == 1 ? x : pair(lets, t.gathered(p, first), t.gathered(p, second));
    std::vector<Stmt> s;
    for (int64_t c = 0; c < t.nc; ++c)
      s.push_back(store(t.acc, smlad(x1, w[c].second, smlad(x0, w[c].first, t.sum(p, c))), {ci(p * t.nc + c)}));
    pixels.push_back(bind_lets(lets, SeqStmt(s)));
  }
  return bind_lets(single, bind_lets(outer, SeqStmt(pixels)));
}

// Whether a tile takes pair_loads: int16 weights and gathered words (`gathered`: in a
// col buffer), in a batch-1 dense (one row) or a convolution gathered by words or by
// few_channels (prepare_quantized sets pair_loads there under few_channel_pairs).
bool takes_pair_loads(const Gemm& g, bool gathered) {
  const Schedule& s = *g.sched;
  return s.pair_loads && s.smlad && !s.sxtb16 && gathered && (g.rows == 1 || s.word_gather || s.few_channels);
}

// `count` reduction steps from `first`, unrolled: as a kUnrolled loop for unroll_loops
// without smlad, copied here under smlad (unroll_loops leaves a body with lets alone).
Stmt unrolled_steps(const Tile& t, Expr first, int64_t count) {
  if (t.g.sched->smlad) {
    std::vector<Stmt> s;
    for (int64_t i = 0; i < count; ++i) s.push_back(tile_step(t, add(first, ci(i)), false));
    return SeqStmt(s);
  }
  Var ki = ivar("ki");
  return For(ki, ci(0), ci(count), ForKind::kUnrolled, tile_step(t, add(first, ki), false));
}

// The reduction steps one pass of the main loop covers (ops/schedules.h).
int64_t unroll_factor(const Schedule& s, bool two_words, int64_t whole) {
  return gemm_unroll_factor(s.unroll, s.interleave, two_words, whole);
}

// The tile's sums requantized and stored (dense_chunks: carried). Under pair_loads with
// a three-column table, channel by channel, the channel's columns 1 and 2 as one
// word_pair (LDRD) for all its pixels, and from kTableHeadReduction values on column 0
// too (columns 0 and 1 another pair): GCC reloads a plain table load at every output
// rather than hold it in a register, and cannot rematerialize the pairs' inline LDRDs.
// On shorter reductions the second pair costs more than it saves (GCC spills the pairs;
// VWW's 8-channel 1x1 layer: +5 %).
constexpr int64_t kTableHeadReduction = 16;

std::vector<Stmt> tile_outputs(const Tile& t, const Part& part) {
  const Gemm& g = t.g;
  // pair_records: the table columns lie in the records (and come through `column`).
  const Buffer& table = g.record_words ? g.weight : g.table;
  auto output = [&](int64_t p, int64_t c, const std::function<Expr(int64_t)>& column) {
    Expr oc = add(t.oc0, ci(c));
    if (part.carry) return store(part.carry, t.sum(p, c), {sub(oc, part.carry0)});
    Expr v = requantize_channel(*g.q, *g.rule, table, g.table_columns, t.sum(p, c), oc,
                                g.sched->fold_output_zero_point, g.sched->smlal_requant, g.sched->smmlar_requant, column);
    // The tile's outputs at constant offsets from its first pixel's: one pointer.
    if (t.pairs && g.out_flat) return store(g.out_flat, v, {add(add(g.out_start(t.rows[0]), ci(p * g.cols)), oc)});
    return g.store(t.rows[p], oc, v);
  };
  std::vector<Stmt> out;
  if (!(t.pairs && table && g.table_columns == 3 && !part.carry)) {
    if (g.record_words) fail("qconv2d", "schedule 'pair_records' needs the paired 3x2 tile (internal)");
    for (int64_t p = 0; p < t.np(); ++p)
      for (int64_t c = 0; c < t.nc; ++c) out.push_back(output(p, c, nullptr));
    return out;
  }
  const DataType i64 = DataType::Int(64);
  for (int64_t c = 0; c < t.nc; ++c) {
    Expr first = g.record_words ? add(mul(t.oc0, ci(g.record_words / 2)), ci(kRecordBiasWords + 2 * t.ww + 3 * c))
                                : mul(add(t.oc0, ci(c)), ci(3));
    const bool with_head = part.k >= kTableHeadReduction;
    Var head = MakeVar("head", i64), tail = MakeVar("tail", i64), lead = ivar("lead"), second = ivar("second"),
        third = ivar("third");
    auto column = [&](int64_t k) -> Expr {
      return k == 0 ? (with_head ? Expr(lead) : load(table, {first})) : k == 1 ? Expr(second) : Expr(third);
    };
    auto pair = [&](int64_t k) {
      return Call(i64, "word_pair", {load(table, {add(first, ci(k))}), load(table, {add(first, ci(k + 1))})});
    };
    std::vector<Stmt> s;
    for (int64_t p = 0; p < t.np(); ++p) s.push_back(output(p, c, column));
    Stmt body = SeqStmt(s);
    body = LetStmt(third, Cast(kI32, call("shift_right", {tail, IntImm(i64, 32)})), body);
    body = LetStmt(second, Cast(kI32, tail), body);
    if (with_head) body = LetStmt(head, pair(0), LetStmt(lead, Cast(kI32, head), body));
    out.push_back(LetStmt(tail, pair(1), body));
  }
  return out;
}

// One pass of the core: `np` pixels (their gathered values in col slots 0..np-1, or
// read directly) times `nc` channels starting at `row0` and `oc0`; `rolled`: the
// reduction one step a pass, whatever the unroll schedule (rolled_leftovers).
Stmt gemm_tile(const Gemm& g, const Buffer& col, const std::vector<Expr>& rows, Expr oc0, int64_t nc,
               const Part& part, bool rolled = false) {
  const int64_t np = static_cast<int64_t>(rows.size());
  const bool packed = g.sched->smlad, pairs = takes_pair_loads(g, static_cast<bool>(col));
  const bool quads = g.sched->sxtb16 || pairs;  // a step covers two gathered words
  const int64_t kw = packed ? (part.k + 1) / 2 : part.k;  // words per gathered pixel
  Buffer acc = scratch("acc", {np * nc}, kI32);
  const Tile t{g, col, rows, oc0, nc, kw, g.sched->weight_words(g.k), acc, part.word0, pairs};
  std::vector<Stmt> init;
  for (int64_t p = 0; p < np; ++p)
    for (int64_t c = 0; c < nc; ++c) {
      Expr oc = add(oc0, ci(c));
      Expr start = part.carry          ? load(part.carry, {sub(oc, part.carry0)})
                   : g.record_words ? load(g.weight, {add(mul(oc0, ci(g.record_words / 2)), ci(c))})
                   : g.bias         ? load(g.bias, {oc})
                                    : ci(0);
      init.push_back(store(acc, start, {ci(p * nc + c)}));
    }
  // The reduction over whole words, split by four gathered words when unrolled (the
  // remainder runs as a short loop), then a half-full last word.
  const int64_t whole = quads ? kw / 2 : kw;
  const bool half_word = quads && kw % 2;
  const int64_t factor = rolled ? 1 : unroll_factor(*g.sched, quads, whole);
  int64_t main_iters = whole / factor, rest = whole % factor;
  std::vector<Stmt> parts;
  if (main_iters > 0) {
    Var ko = ivar("ko");
    if (factor == 1) {
      parts.push_back(For(ko, ci(0), ci(main_iters), ForKind::kSerial, tile_step(t, ko, false)));
    } else {
      Stmt inner = unrolled_steps(t, mul(ko, ci(factor)), factor);
      parts.push_back(main_iters == 1 ? substitute(inner, ko, ci(0))
                                      : For(ko, ci(0), ci(main_iters), ForKind::kSerial, inner));
    }
  }
  if (rest > 0) parts.push_back(unrolled_steps(t, ci(main_iters * factor), rest));
  if (half_word) parts.push_back(tile_step(t, ci(whole), true));
  std::vector<Stmt> finish = tile_outputs(t, part);
  std::vector<Stmt> body = init;
  body.insert(body.end(), parts.begin(), parts.end());
  body.insert(body.end(), finish.begin(), finish.end());
  return Allocate(acc, "local", SeqStmt(body));
}

// How `rows` pixels split into tiles: {pixels per tile, tiles}, in order. In pairs (or
// one by one without `block`); with pixel_triples in threes. From kTriplesOnlyRows
// pixels on (ops/schedules.h), the one or two left over go one by one (the slower 1x2
// tile, but a third of the code of a 2x2 copy that would serve two pixels); below it in
// pairs, where a remainder of one takes a triple back (3 + 1 becomes 2 + 2: a band of
// five is 3 + 2). With `leftover_pair` (pair_loads' short reductions, where requantizing
// and loading the weights for one pixel costs about half the tile's MACs again) two
// pixels left over stay a 2x2 tile.
std::vector<std::pair<int64_t, int64_t>> pixel_tiles(int64_t rows, bool block, bool triples, bool leftover_pair) {
  if (!block) return {{1, rows}};
  if (!triples || rows < 3) return {{2, rows / 2}, {1, rows % 2}};
  if (rows >= kTriplesOnlyRows && leftover_pair && rows % 3 == 2) return {{3, rows / 3}, {2, 1}};
  if (rows >= kTriplesOnlyRows) return {{3, rows / 3}, {1, rows % 3}};
  const int64_t threes = rows % 3 == 1 ? rows / 3 - 1 : rows / 3;
  const int64_t rest = rows - 3 * threes;
  return {{3, threes}, {2, rest / 2}, {1, rest % 2}};
}

// rolled_leftovers: the one or two pixels a layer of kTriplesOnlyRows pixels or more
// leaves after its tiles run once, one by one; their reduction runs one step a pass, so
// the layer carries no unrolled copy of the 1x2 tile (IC's 64-pixel layers: under 2 % of
// the layer's pixels).
bool rolled_leftover(const Gemm& g, int64_t pixels_per_tile) {
  return g.sched->rolled_leftovers && g.sched->block && pixels_per_tile == 1 && g.rows >= kTriplesOnlyRows;
}

// Pixels in tiles of pixel_tiles, channels in pairs, odd ones last.
Stmt gemm(const Gemm& g) {
  if (g.sched->mve) return gemm_mve(g);
  const bool packed = g.sched->smlad;
  const int64_t kw = packed ? (g.k + 1) / 2 : g.k;
  const int64_t chans = g.sched->block ? 2 : 1;
  const bool gather = static_cast<bool>(g.gather);
  const Part whole{g.k, ci(0), nullptr, ci(0)};
  auto pixels = [&](Expr row0, int64_t np, bool rolled) {
    std::vector<Expr> rows;
    for (int64_t p = 0; p < np; ++p) rows.push_back(add(row0, ci(p)));
    Buffer col = gather ? scratch("col", {np * kw}, packed ? kI32 : kI16) : nullptr;
    std::vector<Stmt> s;
    // One copy of the gather (im2col with its bound checks) for all the tile's pixels.
    Var pg = ivar("pg");
    if (gather) s.push_back(np == 1 ? g.gather(rows[0], col, ci(0))
                                    : For(pg, ci(0), ci(np), ForKind::kSerial, g.gather(add(row0, pg), col, pg)));
    int64_t full = g.cols / chans;
    if (full > 0) {
      Var ob = ivar("ob");
      Stmt tile = gemm_tile(g, col, rows, mul(ob, ci(chans)), chans, whole, rolled);
      s.push_back(full == 1 ? substitute(tile, ob, ci(0)) : For(ob, ci(0), ci(full), ForKind::kSerial, tile));
    }
    if (g.cols % chans) s.push_back(gemm_tile(g, col, rows, ci(full * chans), g.cols % chans, whole, rolled));
    Stmt body = SeqStmt(s);
    return gather ? Allocate(col, "local", body) : body;
  };
  std::vector<Stmt> s;
  int64_t row0 = 0;
  const bool leftover_pair = takes_pair_loads(g, gather);
  for (const auto& [pix, tiles] : pixel_tiles(g.rows, g.sched->block, g.sched->pixel_triples, leftover_pair)) {
    if (tiles == 0) continue;
    Var pp = ivar("pp");
    Stmt tile = pixels(add(ci(row0), mul(pp, ci(pix))), pix, rolled_leftover(g, pix));
    s.push_back(tiles == 1 ? substitute(tile, pp, ci(0)) : For(pp, ci(0), ci(tiles), ForKind::kSerial, tile));
    row0 += pix * tiles;
  }
  return SeqStmt(s);
}

// dense_chunks: a batch-1 dense whose gathered row (k / 2 int32 words, on the stack)
// outweighs one int32 sum per channel plus two chunks (a smaller saving is not worth the
// chunk loop and the kernel it no longer shares with merge_kernels) gathers its input kDenseChunk values
// at a time: each chunk runs the core over a group of channels with their sums carried
// in `sums`, and the requantization of the group follows its last chunk. The same sums
// (wrapping int32 adds, in another order). The groups keep the stack at kDenseScratch
// bytes (sums of a group and one chunk): each group gathers the input again, about
// two instructions per input value (AD's first layer: 4 groups of 32 channels, 256 B of
// scratch instead of 640 B, for 4,000 more instructions; a whole row would be 1,280 B).
constexpr int64_t kDenseChunk = 64;     // input values; a multiple of 4 (whole sxtb16 weight words)
constexpr int64_t kDenseScratch = 256;  // bytes: what a 128-input dense gathers whole

bool takes_dense_chunks(const Gemm& g) {
  return g.sched->dense_chunks && g.sched->smlad && g.rows == 1 && (g.k + 1) / 2 > g.cols + kDenseChunk;
}

// `gather_range(col, k0, len)` fills col words 0..(len + 1) / 2 - 1 with the int16 pairs of
// input values k0..k0 + len - 1 of row 0.
Stmt dense_chunked(const Gemm& g, const std::function<Stmt(const Buffer&, Expr, int64_t)>& gather_range) {
  const int64_t chans = g.sched->block ? 2 : 1, per_word = g.sched->sxtb16 ? 4 : 2;
  // Channels per group: a multiple of the core's channel block, the sums within budget.
  const int64_t group = std::min(g.cols, std::max(chans, (kDenseScratch - 2 * kDenseChunk) / 4 / chans * chans));
  Buffer sums = scratch("sums", {group}, kI32);
  Buffer col = scratch("col", {kDenseChunk / 2}, kI32);
  const std::vector<Expr> rows = {ci(0)};
  // The channels oc0 .. oc0 + n - 1: their sums, every chunk, their requantization.
  auto channels = [&](Expr oc0, int64_t n) {
    std::vector<Stmt> s;
    Var c = ivar("c");
    Expr oc_c = add(oc0, c);
    s.push_back(For(c, ci(0), ci(n), ForKind::kSerial, store(sums, g.bias ? load(g.bias, {oc_c}) : ci(0), {c})));
    auto chunk = [&](Expr k0, Expr word0, int64_t len) {
      const Part part{len, word0, sums, oc0};
      std::vector<Stmt> b = {gather_range(col, k0, len)};
      int64_t full = n / chans;
      Var ob = ivar("ob");
      Stmt tile = gemm_tile(g, col, rows, add(oc0, mul(ob, ci(chans))), chans, part);
      b.push_back(full == 1 ? substitute(tile, ob, ci(0)) : For(ob, ci(0), ci(full), ForKind::kSerial, tile));
      if (n % chans) b.push_back(gemm_tile(g, col, rows, add(oc0, ci(full * chans)), n % chans, part));
      return SeqStmt(b);
    };
    const int64_t chunks = g.k / kDenseChunk, tail = g.k % kDenseChunk;
    Var ch = ivar("ch");
    s.push_back(For(ch, ci(0), ci(chunks), ForKind::kSerial,
                    chunk(mul(ch, ci(kDenseChunk)), mul(ch, ci(kDenseChunk / per_word)), kDenseChunk)));
    if (tail) s.push_back(chunk(ci(chunks * kDenseChunk), ci(chunks * kDenseChunk / per_word), tail));
    Var oc = ivar("oc");
    s.push_back(For(oc, ci(0), ci(n), ForKind::kSerial,
                    g.store(ci(0), add(oc0, oc),
                            requantize_channel(*g.q, *g.rule, g.table, g.table_columns, load(sums, {oc}), add(oc0, oc),
                                               g.sched->fold_output_zero_point, g.sched->smlal_requant,
                                               g.sched->smmlar_requant))));
    return SeqStmt(s);
  };
  std::vector<Stmt> s;
  const int64_t groups = g.cols / group, rest = g.cols % group;
  Var gi = ivar("g");
  Stmt each = channels(mul(gi, ci(group)), group);
  s.push_back(groups == 1 ? substitute(each, gi, ci(0)) : For(gi, ci(0), ci(groups), ForKind::kSerial, each));
  if (rest) s.push_back(channels(ci(groups * group), rest));
  return Allocate(sums, "local", Allocate(col, "local", SeqStmt(s)));
}

// A flat view of a whole buffer (same data).

Stmt declare_views(const Gemm& g, Stmt body) {
  if (g.direct) body = DeclBuffer(g.direct, body);
  if (g.table) body = DeclBuffer(g.table, body);
  return DeclBuffer(g.weight, body);
}

}  // namespace qconv_impl
}  // namespace ops
}  // namespace mtir
