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
//                    pack per word); the border keeps the checked gather.
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
#include <algorithm>
#include <set>

#include "ops/op_util.h"
#include "ops/quant_util.h"
#include "ops/schedules.h"
#include "ir/substitute.h"

namespace mtir {
namespace ops {
namespace {

using json = nlohmann::json;

const DataType kI8 = DataType::Int(8), kI16 = DataType::Int(16), kI32 = DataType::Int(32), kI64 = DataType::Int(64);
const DataType kU8 = DataType::UInt(8);

// The requantization rule and the element types it implies.
struct Rule {
  bool onnx = false;
  DataType data = kI8, out = kI8;
  // onnx: (M, s) shared by every channel, or absent when the table input holds them
  // ([O, 2]: M and s; [O, 3]: onnx_high_word_form's M', t and 2^(t-1)).
  bool uniform = false;
  int64_t m = 0, s = 1;
};

int32_t lowest(DataType t) { return t.is_uint() ? 0 : -128; }
int32_t highest(DataType t) { return t.is_uint() ? 255 : 127; }

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

struct Schedule {
  bool fold_zero_point = false, block = false, unroll = false, smlad = false, sxtb16 = false, interleave = false,
       fold_output_zero_point = false, few_channels = false, depthwise_tile = false, depthwise_border_tiles = false,
       smlal_requant = false, smmlar_requant = false, dense_chunks = false;
  // Packed weight words per output channel for a reduction of length k.
  int64_t weight_words(int64_t k) const { return smlad ? packed_weight_words(k, sxtb16) : k; }
};

Schedule read_schedule(const std::string& op, const AttrReader& r) {
  Schedule s;
  const json* j = r.raw("schedule");
  if (!j || j->is_null()) return s;
  if (!j->is_object()) r.bad("schedule", "an object of booleans");
  for (const auto& [key, value] : j->items()) {
    if (!value.is_boolean()) r.bad("schedule", "an object of booleans ('" + key + "' is not a boolean)");
    bool on = value.get<bool>();
    if (key == "fold_zero_point") s.fold_zero_point = on;
    else if (key == "block") s.block = on;
    else if (key == "unroll") s.unroll = on;
    else if (key == "smlad") s.smlad = on;
    else if (key == "sxtb16") s.sxtb16 = on;
    else if (key == "interleave") s.interleave = on;
    else if (key == "fold_output_zero_point") s.fold_output_zero_point = on;
    else if (key == "few_channels") s.few_channels = on;
    else if (key == "depthwise_tile") s.depthwise_tile = on;
    else if (key == "depthwise_border_tiles") s.depthwise_border_tiles = on;
    else if (key == "smlal_requant") s.smlal_requant = on;
    else if (key == "smmlar_requant") s.smmlar_requant = on;
    else if (key == "dense_chunks") s.dense_chunks = on;
    else if (key != "hoist") fail(op, "unknown schedule '" + key + "' (known: " + schedule_names() + ")");
  }
  return s;
}

// The inputs of both ops after the data: the weight (int8, or int16 pairs packed in
// int32 words by prepare_quantized for smlad), then an optional int32 bias [O] and an
// optional int32 requantization table [O, 2] or [O, 3] (see requantize_channel).
struct QInputs {
  bool bias = false, table = false, packed = false;
  int64_t table_columns = 0;
};

// The kernel's buffer parameters, in the order of the inputs, then the output.
struct QParams {
  Buffer data, weight, bias, table, out;
};
QParams declare_params(FuncBuilder& fb, const std::vector<TensorType>& in, const TensorType& out, const QInputs& q,
                       int64_t out_channels) {
  QParams b;
  b.data = fb.param("data", in[0].shape, in[0].dtype);
  b.weight = fb.param("weight", in[1].shape, in[1].dtype);
  if (q.bias) b.bias = fb.param("bias", {out_channels}, kI32);
  if (q.table) b.table = fb.param("requant", {out_channels, q.table_columns}, kI32);
  b.out = fb.param("out", out.shape, out.dtype);
  return b;
}

QInputs classify_inputs(const std::string& op, const std::vector<TensorType>& in, int64_t out_channels) {
  if (in.size() < 2 || in.size() > 4) fail(op, "takes 2 to 4 inputs (data, weight, bias, requant), got " + std::to_string(in.size()));
  QInputs q;
  q.packed = in[1].dtype == kI32;
  if (!q.packed && in[1].dtype != kI8) fail(op, "weight must be int8, got " + in[1].dtype.str());
  for (size_t i = 2; i < in.size(); ++i) {
    const TensorType& t = in[i];
    if (t.dtype != kI32) fail(op, "input " + std::to_string(i) + " (bias or requant table) must be int32, got " + t.dtype.str());
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
  if (s.dense_chunks && !s.smlad) fail(op, "schedule 'dense_chunks' needs schedule 'smlad'");
  // Its rounding has no sign correction: exact only where a negative accumulator clamps.
  if (s.smmlar_requant && attrs.bounds.lo < attrs.output_zero_point)
    fail(op, "schedule 'smmlar_requant' needs an output lower bound at or above the output zero point (a ReLU), got " +
                 std::to_string(attrs.bounds.lo) + " below " + std::to_string(attrs.output_zero_point));
  if (s.fold_output_zero_point && !(q.table && q.table_columns == 3))
    fail(op, "schedule 'fold_output_zero_point' needs the requant table of shape (O, 3) that prepare_quantized builds");
  if (s.smlal_requant && !(q.table && q.table_columns == 3))
    fail(op, "schedule 'smlal_requant' needs the requant table of shape (O, 3) that prepare_quantized builds");
  if (s.smmlar_requant && !s.smlal_requant)
    fail(op, "schedule 'smmlar_requant' needs schedule 'smlal_requant' (and the table prepare_quantized builds for it)");
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
                            : call("bitwise_or", {call("bitwise_and", {Cast(u32, x), IntImm(u32, 0x80000000u)}), IntImm(u32, 0x40000000u)});
  Expr v = Cast(kI64, call("bitwise_or", {call("shift_left", {Cast(u64, Cast(u32, hi)), IntImm(u64, 32)}), Cast(u64, lo)}));
  Expr sum = Binary(ExprKind::Add, Binary(ExprKind::Mul, Cast(kI64, x), Cast(kI64, std::move(multiplier))), v);
  Expr high = Cast(kI32, Call(kI64, "shift_right", {sum, IntImm(kI64, 32)}));
  return call("shift_right", {high, std::move(shift)});
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
// hi32(x * M + R * 2^32 + 2^30) >> s, the form without the sign correction (ReLU only).
Expr requantize_channel(const QuantAttrs& q, const Rule& rule, const Buffer& table, int64_t columns, Expr acc, Expr oc,
                        bool zero_point_folded, bool smlal = false, bool smmlar = false) {
  auto col = [&](int64_t k) { return load(table, {add(mul(oc, ci(columns)), ci(k))}); };
  if (rule.onnx) {
    OnnxHighWord hw;
    if (table ? columns == 3 : onnx_high_word_form(rule.m, rule.s, &hw)) {
      // 32-bit steps (quant_util.h): the table holds (M', t, 2^(t-1)).
      Expr y = table ? onnx_high_word_requantize(acc, col(0), col(1), col(2))
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
  if (!table) {
    y = multiply_by_quantized_multiplier(acc, q.multipliers.at(0));
  } else if (columns == 2) {
    y = multiply_by_quantized_multiplier(acc, col(0), col(1));
  } else if (smmlar) {
    y = call("shift_right", {Call(kI32, "smmlar", {acc, col(0), add(col(2), acc)}), col(1)});
  } else if (smlal) {
    y = smlal_requantize(acc, col(0), col(1), col(2), q.bounds.lo >= q.output_zero_point);
  } else {
    y = call("shift_right", {add(corrected_high_word(acc, col(0)), col(2)), col(1)});
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
      fail(op, "requant \"onnx\" needs attribute 'onnx_multiplier' [M, s] or the table input (int32 [O, 2] of M and s "
               "per channel, or [O, 3] of quant_util.h's 32-bit form)");
    return;
  }
  if (!in.table && !uniform(q))
    fail(op, "per-channel weight scales need the requantization table input (int32 [O, 2], multiplier and shift per "
             "channel as TFLite's QuantizeMultiplier gives them), which prepare_quantized adds to the graph");
}

// ---- geometry ------------------------------------------------------------------

const std::vector<std::string> kQConvAttrs = {"strides", "padding", "dilation", "groups", "weight_shape",
                                              "input_scale", "input_zero_point", "weight_scale", "weight_zero_point",
                                              "output_scale", "output_zero_point", "activation", "schedule",
                                              "requant", "output_dtype", "onnx_multiplier", "layout"};

struct QConv {
  int64_t n, h, w, c;
  int64_t o, kh, kw, cg, groups;
  int64_t sh, sw, dh, dw, pt, pl, pb, pr;
  int64_t oh, ow;
  bool nchw = false;  // layout "NCHW" (the weight is OHWI in both layouts)
  QInputs inputs;
  QuantAttrs q;
  Rule rule;
  Schedule sched;
  int64_t k() const { return kh * kw * cg; }
  // The data (and output) index of image n, row y, column x, channel c.
  std::vector<Expr> at(Expr n, Expr y, Expr x, Expr c) const {
    return nchw ? std::vector<Expr>{n, c, y, x} : std::vector<Expr>{n, y, x, c};
  }
};

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
  const auto& d = in[0].shape;
  p.n = d[0], p.h = d[p.nchw ? 2 : 1], p.w = d[p.nchw ? 3 : 2], p.c = d[p.nchw ? 1 : 3];
  p.o = wshape[0], p.kh = wshape[1], p.kw = wshape[2], p.cg = wshape[3];
  p.rule = read_rule(op, r, &p.q, p.o);
  if (p.nchw && !p.rule.onnx) fail(op, "layout \"NCHW\" needs requant \"onnx\"");
  check_data(op, in, p.rule, p.q);
  p.inputs = classify_inputs(op, in, p.o);
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
  p.sched = read_schedule(op, r);
  check_packing(op, p.sched, p.inputs, p.q, in[1].shape, p.o, p.k());
  if (p.sched.smlad && p.groups != 1) fail(op, "schedule 'smlad' applies to convolutions with groups == 1");
  return p;
}

// ---- the shared matrix-product core ------------------------------------------

// Everything the core needs to know about one op instance.
struct Gemm {
  int64_t rows, cols, k;  // output pixels (per image), output channels, reduction length
  const QuantAttrs* q;
  const Rule* rule;
  const Schedule* sched;
  Buffer weight;          // flat [cols * weight_words(k)]: int8, or packed int32 words
  Buffer bias, table;     // may be null
  int64_t table_columns = 0;
  // Stores the value of reduction element `kk` of pixel `row` (an int16 expression:
  // the input minus its zero point, or the raw input when the zero point is folded).
  std::function<Expr(Expr row, Expr kk)> gathered;
  // Fills col[slot * k + kk] for pixel `row`, or null when the core reads `gathered`
  // directly (dense: the pixel is a contiguous row).
  std::function<Stmt(Expr row, const Buffer& col, Expr slot)> gather;
  std::function<Stmt(Expr row, Expr col, Expr value)> store;
};

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
// in `carry` (one int32 per channel) instead of starting at the bias and ending in the
// requantization.
struct Part {
  int64_t k;
  Expr word0;
  Buffer carry;
};

// One pass of the core: `np` pixels (their gathered values in col slots 0..np-1, or
// read directly) times `nc` channels starting at `row0` and `oc0`.
Stmt gemm_tile(const Gemm& g, const Buffer& col, const std::vector<Expr>& rows, Expr oc0, int64_t nc,
               const Part& part) {
  const int64_t np = static_cast<int64_t>(rows.size());
  const bool packed = g.sched->smlad, quads = g.sched->sxtb16;
  const int64_t kw = packed ? (part.k + 1) / 2 : part.k;  // words per gathered pixel
  const int64_t ww = g.sched->weight_words(g.k);          // words per weight row
  Buffer acc = scratch("acc", {np * nc}, kI32);
  std::vector<Stmt> init, update, finish;
  for (int64_t p = 0; p < np; ++p)
    for (int64_t c = 0; c < nc; ++c) {
      Expr oc = add(oc0, ci(c));
      Expr start = part.carry ? load(part.carry, {oc}) : g.bias ? load(g.bias, {oc}) : ci(0);
      init.push_back(store(acc, start, {ci(p * nc + c)}));
    }
  // One weight word `kk` of every channel against the matching gathered words: with
  // sxtb16 the word holds two pairs (the second absent in a last, half-full word).
  auto step_with = [&](Expr kk, bool half) {
    Expr kg = add(kk, part.word0);  // the weight word
    std::vector<Stmt> s;
    for (int64_t p = 0; p < np; ++p) {
      auto x = [&](Expr word) { return col ? load(col, {add(ci(p * kw), word)}) : g.gathered(rows[p], word); };
      for (int64_t c = 0; c < nc; ++c) {
        // Interleaved: a whole pair (nc == 2, oc0 even) alternates word by word; the odd
        // last channel (nc == 1) keeps its own row.
        Expr w = g.sched->interleave && nc == 2 ? load(g.weight, {add(add(mul(oc0, ci(ww)), mul(kg, ci(2))), ci(c))})
                                                : load(g.weight, {add(mul(add(oc0, ci(c)), ci(ww)), kg)});
        Expr a = load(acc, {ci(p * nc + c)});
        Expr v;
        if (quads) {
          v = smlad(x(mul(kk, ci(2))), builtin1("sxtb16", w), a);
          if (!half) v = smlad(x(add(mul(kk, ci(2)), ci(1))), builtin1("sxtb16_ror8", w), v);
        } else {
          v = packed ? smlad(x(kk), w, a) : add(a, mul(i32(x(kk)), i32(w)));
        }
        s.push_back(store(acc, v, {ci(p * nc + c)}));
      }
    }
    return s.size() == 1 ? s[0] : SeqStmt(s);
  };
  auto step = [&](Expr kk) { return step_with(kk, false); };
  // The reduction over whole words, split by four gathered words when unrolled (the
  // remainder runs as a short loop), then a half-full last word.
  const int64_t whole = quads ? kw / 2 : kw;
  const bool half_word = quads && kw % 2;
  int64_t factor = !g.sched->unroll ? 1 : g.sched->interleave ? 8 : quads ? 2 : 4;
  int64_t main_iters = whole / factor, rest = whole % factor;
  std::vector<Stmt> parts;
  if (main_iters > 0) {
    Var ko = ivar("ko");
    if (factor == 1) {
      parts.push_back(For(ko, ci(0), ci(main_iters), ForKind::kSerial, step(ko)));
    } else {
      Var ki = ivar("ki");
      Stmt inner = For(ki, ci(0), ci(factor), ForKind::kUnrolled, step(add(mul(ko, ci(factor)), ki)));
      parts.push_back(main_iters == 1 ? substitute(inner, ko, ci(0)) : For(ko, ci(0), ci(main_iters), ForKind::kSerial, inner));
    }
  }
  if (rest > 0) {
    Var kr = ivar("kr");
    parts.push_back(For(kr, ci(0), ci(rest), ForKind::kUnrolled, step(add(kr, ci(main_iters * factor)))));
  }
  if (half_word) parts.push_back(step_with(ci(whole), true));
  for (int64_t p = 0; p < np; ++p)
    for (int64_t c = 0; c < nc; ++c) {
      Expr oc = add(oc0, ci(c));
      if (part.carry) {
        finish.push_back(store(part.carry, load(acc, {ci(p * nc + c)}), {oc}));
        continue;
      }
      finish.push_back(g.store(rows[p], oc, requantize_channel(*g.q, *g.rule, g.table, g.table_columns,
                                                                  load(acc, {ci(p * nc + c)}), oc,
                                                                  g.sched->fold_output_zero_point, g.sched->smlal_requant, g.sched->smmlar_requant)));
    }
  std::vector<Stmt> body = init;
  body.insert(body.end(), parts.begin(), parts.end());
  body.insert(body.end(), finish.begin(), finish.end());
  return Allocate(acc, "local", SeqStmt(body));
}

// Pixels in pairs (or one by one without `block`), channels in pairs, odd ones last.
Stmt gemm(const Gemm& g) {
  const bool packed = g.sched->smlad;
  const int64_t kw = packed ? (g.k + 1) / 2 : g.k;
  const int64_t pix = g.sched->block ? 2 : 1, chans = g.sched->block ? 2 : 1;
  const bool gather = static_cast<bool>(g.gather);
  const Part whole{g.k, ci(0), nullptr};
  auto pixels = [&](Expr row0, int64_t np) {
    std::vector<Expr> rows;
    for (int64_t p = 0; p < np; ++p) rows.push_back(add(row0, ci(p)));
    Buffer col = gather ? scratch("col", {np * kw}, packed ? kI32 : kI16) : nullptr;
    std::vector<Stmt> s;
    if (gather)
      for (int64_t p = 0; p < np; ++p) s.push_back(g.gather(rows[p], col, ci(p)));
    int64_t full = g.cols / chans;
    if (full > 0) {
      Var ob = ivar("ob");
      Stmt tile = gemm_tile(g, col, rows, mul(ob, ci(chans)), chans, whole);
      s.push_back(full == 1 ? substitute(tile, ob, ci(0)) : For(ob, ci(0), ci(full), ForKind::kSerial, tile));
    }
    if (g.cols % chans) s.push_back(gemm_tile(g, col, rows, ci(full * chans), g.cols % chans, whole));
    Stmt body = s.size() == 1 ? s[0] : SeqStmt(s);
    return gather ? Allocate(col, "local", body) : body;
  };
  std::vector<Stmt> s;
  int64_t pairs = g.rows / pix;
  if (pairs > 0) {
    Var pp = ivar("pp");
    Stmt tile = pixels(mul(pp, ci(pix)), pix);
    s.push_back(pairs == 1 ? substitute(tile, pp, ci(0)) : For(pp, ci(0), ci(pairs), ForKind::kSerial, tile));
  }
  if (g.rows % pix) s.push_back(pixels(ci(pairs * pix), g.rows % pix));
  return s.size() == 1 ? s[0] : SeqStmt(s);
}

// dense_chunks: a batch-1 dense whose gathered row (k / 2 int32 words, on the stack)
// outweighs one int32 sum per channel plus two chunks (a smaller saving is not worth the
// chunk loop and the kernel it no longer shares with merge_kernels) gathers its input kDenseChunk values
// at a time: each chunk runs the core over every channel with the sums carried in
// `sums`, and the requantization follows the last chunk. The same sums (wrapping int32
// adds, in another order); the stack holds 4 * cols + 2 * kDenseChunk bytes instead of
// 2 * k (AD's first layer: 640 B instead of 1,280 B).
constexpr int64_t kDenseChunk = 64;  // input values; a multiple of 4 (whole sxtb16 weight words)

bool takes_dense_chunks(const Gemm& g) {
  return g.sched->dense_chunks && g.sched->smlad && g.rows == 1 && (g.k + 1) / 2 > g.cols + kDenseChunk;
}

// `gather_range(col, k0, len)` fills col words 0..(len + 1) / 2 - 1 with the int16 pairs of
// input values k0..k0 + len - 1 of row 0.
Stmt dense_chunked(const Gemm& g, const std::function<Stmt(const Buffer&, Expr, int64_t)>& gather_range) {
  const int64_t chans = g.sched->block ? 2 : 1, per_word = g.sched->sxtb16 ? 4 : 2;
  Buffer sums = scratch("sums", {g.cols}, kI32);
  Buffer col = scratch("col", {kDenseChunk / 2}, kI32);
  const std::vector<Expr> rows = {ci(0)};
  std::vector<Stmt> s;
  Var c = ivar("c");
  s.push_back(For(c, ci(0), ci(g.cols), ForKind::kSerial, store(sums, g.bias ? load(g.bias, {c}) : ci(0), {c})));
  auto chunk = [&](Expr k0, Expr word0, int64_t len) {
    const Part part{len, word0, sums};
    std::vector<Stmt> b = {gather_range(col, k0, len)};
    int64_t full = g.cols / chans;
    Var ob = ivar("ob");
    Stmt tile = gemm_tile(g, col, rows, mul(ob, ci(chans)), chans, part);
    b.push_back(full == 1 ? substitute(tile, ob, ci(0)) : For(ob, ci(0), ci(full), ForKind::kSerial, tile));
    if (g.cols % chans) b.push_back(gemm_tile(g, col, rows, ci(full * chans), g.cols % chans, part));
    return SeqStmt(b);
  };
  const int64_t chunks = g.k / kDenseChunk, tail = g.k % kDenseChunk;
  Var ch = ivar("ch");
  s.push_back(For(ch, ci(0), ci(chunks), ForKind::kSerial,
                  chunk(mul(ch, ci(kDenseChunk)), mul(ch, ci(kDenseChunk / per_word)), kDenseChunk)));
  if (tail) s.push_back(chunk(ci(chunks * kDenseChunk), ci(chunks * kDenseChunk / per_word), tail));
  Var oc = ivar("oc");
  s.push_back(For(oc, ci(0), ci(g.cols), ForKind::kSerial,
                  g.store(ci(0), oc, requantize_channel(*g.q, *g.rule, g.table, g.table_columns, load(sums, {oc}), oc,
                                                        g.sched->fold_output_zero_point, g.sched->smlal_requant, g.sched->smmlar_requant))));
  return Allocate(sums, "local", Allocate(col, "local", SeqStmt(s)));
}

// A flat view of a whole buffer (same data).
Buffer flat_view(const Buffer& b, int64_t n) {
  auto v = std::make_shared<BufferNode>(*b);
  v->shape = {ci(n)};
  v->name = b->name + "_flat";
  return v;
}

Stmt declare_views(const Gemm& g, Stmt body) {
  if (g.table) body = DeclBuffer(g.table, body);
  return DeclBuffer(g.weight, body);
}

TensorType qconv_infer(const std::vector<TensorType>& in, const json& attrs) {
  QConv p = qconv_params(in, attrs);
  if (p.nchw) return TensorType{p.rule.out, {p.n, p.o, p.oh, p.ow}};
  return TensorType{p.rule.out, {p.n, p.oh, p.ow, p.o}};
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

// The output positions along one axis in up to three ranges: those whose window starts
// before the input, those whose window lies inside it, and those whose window ends
// past it. Only the first and last need bound checks.
struct OutputRange {
  int64_t begin, end;
  bool check;
};
std::vector<OutputRange> border_split(int64_t out, int64_t pad, int64_t extent, int64_t kernel, int64_t stride,
                                      int64_t dilation) {
  // Inside when o * stride - pad >= 0 and o * stride - pad + (kernel - 1) * dilation < extent.
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

// Depthwise, tiled (schedule depthwise_tile): each output row in tiles of up to four
// outputs along the width (a row of five or fewer is one tile), every channel of a tile
// in turn (channel innermost: nothing in that loop is invariant but the addresses, so
// GCC does not hoist the weights out of it and spill them).
// Within a tile every input element of the tiles' windows and every weight is loaded
// once and feeds each output whose window holds it (stride 1: an input column serves up
// to three outputs), the accumulators stay in registers, and the channel's bias and
// requantization values are read once per tile instead of once per output. Rows and
// tiles whose windows reach into the padding are emitted at constant positions, so which
// taps are padding is known here: they add the padding value times the weight and load
// nothing, and the interior loops carry no bound checks.
Stmt depthwise_tiles(const QConv& p, const QParams& b) {
  const int64_t pad_value = p.sched.fold_zero_point ? p.q.input_zero_point : 0;
  Buffer table = b.table ? flat_view(b.table, p.o * p.inputs.table_columns) : nullptr;
  Buffer data = flat_view(b.data, p.n * p.h * p.w * p.c), out = flat_view(b.out, p.n * p.oh * p.ow * p.o);
  // Element strides of image, channel, row and column in the data and the output.
  const int64_t in_n = p.h * p.w * p.c, in_c = p.nchw ? p.h * p.w : 1, in_h = p.nchw ? p.w : p.w * p.c,
                in_w = p.nchw ? 1 : p.c;
  const int64_t out_n = p.oh * p.ow * p.o, out_c = p.nchw ? p.oh * p.ow : 1, out_h = p.nchw ? p.ow : p.ow * p.o,
                out_w = p.nchw ? 1 : p.o;
  LoopNest outer;
  Expr n = outer.axis("n", p.n);
  // Tile widths that GCC keeps in the Cortex-M4's registers (measured on the MLPerf Tiny
  // models): loop tiles of four outputs (at stride 2 four share three of the nine input
  // columns; three tiles: VWW's first stride-2 layer 3.17 instead of 3.10 instructions per
  // MAC); constant tiles of up to six at stride 1 and five at stride 2 (six spill).
  const int64_t wide = 4, widest = p.sw == 1 ? 6 : 5;
  // Stride-1 rows at least this wide take their border columns through the checked
  // per-output loop: there they are a small share of the work, and unrolled border tiles
  // cost ~0.2-0.5 KB of code each (VWW: -1.1 KB for +0.25 M instructions). Narrower rows
  // keep them unrolled (KWS's five-wide rows would check two outputs in five), and so do
  // stride-2 rows, whose one border column is a single narrow tile.
  const int64_t kCheckedColumnsMinWidth = 12;
  // The tile of `t` outputs (oh, ow0 + i); oh_c and ow0_c are the constant positions, or
  // -1 where oh or ow0 is a loop variable whose every window lies inside the input.
  auto tile = [&](Expr oh, int64_t oh_c, Expr ow0, int64_t ow0_c, int64_t t) {
    Var c = ivar("c");
    Buffer acc = scratch("acc", {t}, kI32);
    // The steps in order: a binding (a weight or an input value, loaded once) or an update.
    struct Step {
      Var v;
      Expr value;
      Stmt update;
    };
    std::vector<Step> steps;
    // The bindings some update reads (a weight whose taps are all zero padding is not
    // loaded: C99 with -Werror refuses an unused variable).
    // The flat index of the window's top left element and of the tile's first output:
    // every tap is a constant offset from it, so one pointer serves the whole tile.
    Var in_base = ivar("in_base"), out_base = ivar("out_base");
    std::set<const VarNode*> used = {out_base.get()};
    Expr top = oh_c < 0 ? sub(mul(oh, ci(p.sh)), ci(p.pt)) : ci(oh_c * p.sh - p.pt);
    Expr left = ow0_c < 0 ? sub(mul(ow0, ci(p.sw)), ci(p.pl)) : ci(ow0_c * p.sw - p.pl);
    steps.push_back({in_base, add(add(add(mul(n, ci(in_n)), mul(c, ci(in_c))), mul(top, ci(in_h))), mul(left, ci(in_w))), Stmt()});
    steps.push_back({out_base, add(add(add(mul(n, ci(out_n)), mul(c, ci(out_c))), mul(oh, ci(out_h))), mul(ow0, ci(out_w))), Stmt()});
    for (int64_t i = 0; i < t; ++i) steps.push_back({Var(), Expr(), store(acc, b.bias ? load(b.bias, {c}) : ci(0), {ci(i)})});
    for (int64_t rh = 0; rh < p.kh; ++rh) {
      const int64_t ih_c = oh_c < 0 ? 0 : oh_c * p.sh + rh * p.dh - p.pt;
      const bool row_inside = oh_c < 0 || (ih_c >= 0 && ih_c < p.h);
      if (!row_inside && pad_value == 0) continue;
      std::vector<Var> w;
      for (int64_t rw = 0; rw < p.kw; ++rw) {
        w.push_back(ivar("w" + std::to_string(rh) + std::to_string(rw)));
        steps.push_back({w.back(), Cast(kI32, load(b.weight, {c, ci(rh), ci(rw), ci(0)})), Stmt()});
      }
      const int64_t columns = (t - 1) * p.sw + (p.kw - 1) * p.dw + 1;
      for (int64_t j = 0; j < columns; ++j) {
        std::vector<std::pair<int64_t, int64_t>> uses;  // (output i, tap column rw)
        for (int64_t i = 0; i < t; ++i)
          for (int64_t rw = 0; rw < p.kw; ++rw)
            if (i * p.sw + rw * p.dw == j) uses.push_back({i, rw});
        if (uses.empty()) continue;
        const int64_t iw_c = ow0_c < 0 ? 0 : ow0_c * p.sw - p.pl + j;
        const bool inside = row_inside && (ow0_c < 0 || (iw_c >= 0 && iw_c < p.w));
        if (!inside && pad_value == 0) continue;
        Var x = ivar("x");
        Expr v = Cast(kI32, load(data, {add(in_base, ci(rh * p.dh * in_h + j * in_w))}));
        if (!p.sched.fold_zero_point && p.q.input_zero_point != 0) v = sub(v, ci(p.q.input_zero_point));
        steps.push_back({x, inside ? v : ci(pad_value), Stmt()});
        if (inside) used.insert(in_base.get());
        used.insert(x.get());
        for (auto [i, rw] : uses) {
          used.insert(w[rw].get());
          // smlabb: x and the weight are int8 values (see builtins.def for why not + and *).
          steps.push_back({Var(), Expr(), store(acc, Call(kI32, "smlabb", {x, w[rw], load(acc, {ci(i)})}), {ci(i)})});
        }
      }
    }
    std::vector<Stmt> stores;
    for (int64_t i = 0; i < t; ++i)
      stores.push_back(store(out,
                          requantize_channel(p.q, p.rule, table, p.inputs.table_columns, load(acc, {ci(i)}), c,
                                             p.sched.fold_output_zero_point, p.sched.smlal_requant, p.sched.smmlar_requant),
                          {add(out_base, ci(i * out_w))}));
    Stmt body = SeqStmt(stores);
    for (auto it = steps.rbegin(); it != steps.rend(); ++it)
      if (it->update) body = SeqStmt({it->update, body});
      else if (used.count(it->v.get())) body = LetStmt(it->v, it->value, body);
    return For(c, ci(0), ci(p.o), ForKind::kSerial, Allocate(acc, "local", body));
  };
  // Counter k over the positions of one or two ranges, as a position: k itself shifted
  // to the first range, shifted past the gap between them in the second.
  auto positions = [&](Expr k, const std::vector<OutputRange>& ranges) {
    const int64_t first = ranges[0].end - ranges[0].begin;
    Expr at = add(k, ci(ranges[0].begin));
    if (ranges.size() == 2) at = Select(lt(k, ci(first)), at, add(k, ci(ranges[1].begin - first)));
    return at;
  };
  auto total = [](const std::vector<OutputRange>& ranges) {
    int64_t n = 0;
    for (const auto& r : ranges) n += r.end - r.begin;
    return n;
  };
  // Output (oh, ow) of every channel, one at a time, each tap checked along the axes that
  // may leave the input.
  auto checked_output = [&](Expr oh, bool check_h, Expr ow, bool check_w) {
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
      Expr x = Cast(kI32, load(data, {add(add(add(mul(n, ci(in_n)), mul(c, ci(in_c))), mul(ih, ci(in_h))), mul(iw, ci(in_w)))}));
      if (!p.sched.fold_zero_point && p.q.input_zero_point != 0) x = sub(x, ci(p.q.input_zero_point));
      Expr w = Cast(kI32, load(b.weight, {c, rh, ci(rw), ci(0)}));
      columns.push_back(store(acc, add(load(acc, {ci(0)}), mul(lazy_select(cond, x, ci(pad_value)), w)), {ci(0)}));
    }
    taps.push_back(For(rh, ci(0), ci(p.kh), ForKind::kSerial, columns.size() == 1 ? columns[0] : SeqStmt(columns)));
    Expr out_index = add(add(add(mul(n, ci(out_n)), mul(c, ci(out_c))), mul(oh, ci(out_h))), mul(ow, ci(out_w)));
    taps.push_back(store(out,
                         requantize_channel(p.q, p.rule, table, p.inputs.table_columns, load(acc, {ci(0)}), c,
                                            p.sched.fold_output_zero_point, p.sched.smlal_requant, p.sched.smmlar_requant),
                         {out_index}));
    return For(c, ci(0), ci(p.o), ForKind::kSerial, Allocate(acc, "local", SeqStmt(taps)));
  };
  // One output row: one constant tile when it is narrow, constant tiles of balanced
  // widths when its interior is too short for two loop tiles (seven is 4 + 3, not
  // 4 + 1 + 1 + 1). Wider: a constant tile over the left border and the tile after it,
  // a loop of tiles over the interior, constant tiles over the rest.
  auto row = [&](Expr oh, int64_t oh_c) {
    std::vector<Stmt> s;
    auto constant_tiles = [&](int64_t begin, int64_t end) {
      const int64_t count = (end - begin + widest - 1) / widest;
      for (int64_t k = 0, o = begin; k < count; ++k) {
        const int64_t width = (end - o) / (count - k);
        s.push_back(tile(oh, oh_c, ci(o), o, width));
        o += width;
      }
    };
    OutputRange inner{0, 0, false};
    std::vector<OutputRange> border_columns;
    for (const auto& r : border_split(p.ow, p.pl, p.w, p.kw, p.sw, p.dw))
      if (!r.check) inner = r;
      else border_columns.push_back(r);
    if (!p.sched.depthwise_border_tiles && p.sw == 1 && p.ow >= kCheckedColumnsMinWidth && inner.end - inner.begin >= wide) {
      // A wide row: its few border columns one output at a time, checked (one copy of
      // code), the interior a loop of tiles and one narrower tile for the rest.
      const int64_t whole = (inner.end - inner.begin) / wide, rest_begin = inner.begin + whole * wide;
      Var tw = ivar("tw");
      s.push_back(For(tw, ci(0), ci(whole), ForKind::kSerial, tile(oh, oh_c, add(ci(inner.begin), mul(tw, ci(wide))), -1, wide)));
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
        s.push_back(For(tw, ci(0), ci(whole), ForKind::kSerial, tile(oh, oh_c, add(ci(left), mul(tw, ci(wide))), -1, wide)));
      }
      constant_tiles(right, p.ow);
    }
    return s.size() == 1 ? s[0] : SeqStmt(s);
  };
  // The border rows (windows reaching above or below the input) are few: one loop over
  // them all, one output at a time with every tap checked, costs a few instructions per
  // MAC more there but is one copy of the code, where a copy of the whole tiled row per
  // border row cost ~1 KB each (VWW: ~10 KB).
  auto checked_rows = [&](const std::vector<OutputRange>& ranges) {
    Var br = ivar("br"), ohv = ivar("oh"), ow = ivar("ow");
    return For(br, ci(0), ci(total(ranges)), ForKind::kSerial,
               LetStmt(ohv, positions(br, ranges), For(ow, ci(0), ci(p.ow), ForKind::kSerial, checked_output(ohv, true, ow, true))));
  };
  std::vector<Stmt> rows;
  std::vector<OutputRange> border_rows;
  for (const auto& r : border_split(p.oh, p.pt, p.h, p.kh, p.sh, p.dh)) {
    if (r.check && !p.sched.depthwise_border_tiles) {
      border_rows.push_back(r);
      continue;
    }
    if (r.check) {
      for (int64_t oh = r.begin; oh < r.end; ++oh) rows.push_back(row(ci(oh), oh));
      continue;
    }
    Var oh = ivar("oh");
    rows.push_back(For(oh, ci(r.begin), ci(r.end - r.begin), ForKind::kSerial, row(oh, -1)));
  }
  if (!border_rows.empty()) rows.push_back(checked_rows(border_rows));
  Stmt body = outer.wrap(rows.size() == 1 ? rows[0] : SeqStmt(rows));
  body = DeclBuffer(data, DeclBuffer(out, body));
  return table ? DeclBuffer(table, body) : body;
}

PrimFunc qconv_build(const std::string& fname, const std::vector<TensorType>& in, const TensorType& out,
                     const json& attrs) {
  QConv p = qconv_params(in, attrs);
  check_requant_table("qconv2d", p.q, p.rule, p.inputs);
  FuncBuilder fb;
  QParams b = declare_params(fb, in, out, p.inputs, p.o);
  const Buffer &data = b.data, &weight = b.weight, &bias = b.bias, &table = b.table, &o = b.out;
  const int64_t zx = p.q.input_zero_point;
  const bool fold = p.sched.fold_zero_point;
  // An input element as the reduction sees it; padding reads as zero after the zero
  // point is subtracted, i.e. as the zero point itself when it is folded.
  auto value = [&](Expr n, Expr ih, Expr iw, Expr ic, Expr cond) {
    Expr x = Cast(kI32, load(data, p.at(n, ih, iw, ic)));
    if (!fold && zx != 0) x = sub(x, ci(zx));
    return lazy_select(cond, x, ci(fold ? zx : 0));
  };
  if (p.groups == 1 && (p.sched.block || p.sched.smlad || p.sched.unroll)) {
    const int64_t k = p.k();
    Gemm g;
    g.rows = p.oh * p.ow, g.cols = p.o, g.k = k, g.q = &p.q, g.rule = &p.rule, g.sched = &p.sched;
    g.weight = flat_view(weight, p.o * p.sched.weight_words(k));
    g.bias = bias;
    g.table = table ? flat_view(table, p.o * p.inputs.table_columns) : nullptr;
    g.table_columns = p.inputs.table_columns;
    Var n = ivar("n");
    // Pixel `row` of image n: its receptive field in (kh, kw, ci) order, into col.
    auto checked_gather = [&](Expr row, const Buffer& col, Expr slot) -> Stmt {
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
        auto element = [&](Expr c) { return value(n, ih, iw, c, Expr()); };
        Expr pad = ci(fold ? zx : 0);
        Expr in = p.sched.smlad ? pack_pair(element(mul(e, ci(2))), element(add(mul(e, ci(2)), ci(1))))
                                : Cast(kI16, element(e));
        Expr out_of_range = p.sched.smlad ? pack_pair(pad, pad) : Cast(kI16, pad);
        auto at = [&](Expr i) { return add(add(mul(slot, ci(row_words)), floordiv(first, ci(step))), i); };
        Stmt fill = For(e, ci(0), ci(p.cg / step), ForKind::kSerial, store(col, in, {at(e)}));
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
      std::vector<Stmt> s = {taps.wrap(For(rc, ci(0), ci(p.cg), ForKind::kSerial, store(staged, value(n, ih, iw, rc, cond), {add(first, rc)})))};
      if (k % 2) s.push_back(store(staged, ci(0), {ci(k)}));
      s.push_back(For(j, ci(0), ci(words), ForKind::kSerial, store(col, word, {add(mul(slot, ci(words)), j)})));
      return Allocate(staged, "local", SeqStmt(s));
    };
    g.gather = checked_gather;
    // few_channels (NHWC): interior pixels unchecked and unrolled, the border checked
    // (prepare_quantized asks for it only on short reductions; a long one stays a loop).
    const bool few_channels = p.sched.few_channels && !p.nchw && p.k() <= kFewChannelsMaxReduction;
    Buffer data_flat = few_channels ? flat_view(data, p.n * p.h * p.w * p.c) : nullptr;
    if (data_flat) {
      g.gather = [&](Expr row, const Buffer& col, Expr slot) -> Stmt {
        auto element = [&](Expr i) {
          Expr x = Cast(kI32, load(data_flat, {i}));
          return !fold && zx != 0 ? sub(x, ci(zx)) : x;
        };
        Stmt fast = few_channels_gather(p, n, row, col, slot, element);
        Expr interior = window_inside(p, row);
        return interior ? IfThenElse(interior, fast, checked_gather(row, col, slot)) : fast;
      };
    }
    g.store = [&](Expr row, Expr oc, Expr v) {
      return store(o, v, p.at(n, floordiv(row, ci(p.ow)), floormod(row, ci(p.ow)), oc));
    };
    Stmt body = gemm(g);
    if (data_flat) body = DeclBuffer(data_flat, body);
    if (p.n > 1) body = For(n, ci(0), ci(p.n), ForKind::kSerial, body);
    else body = substitute(body, n, ci(0));
    return fb.finish(fname, declare_views(g, body));
  }

  const bool depthwise = p.cg == 1 && p.groups == p.c && p.o == p.c;
  if (p.sched.depthwise_tile && depthwise) return fb.finish(fname, depthwise_tiles(p, b));

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
    Stmt update = store(acc, add(load(acc, {ci(0)}), mul(value(n, ih, iw, ic, cond), Cast(kI32, load(weight, {oc, rh, rw, rc})))), {ci(0)});
    if (p.cg > 1) update = For(rcv, ci(0), ci(p.cg), ForKind::kSerial, update);
    ForKind wk = unroll_window ? ForKind::kUnrolled : ForKind::kSerial;
    Stmt window = For(rh, ci(0), ci(p.kh), wk, For(rw, ci(0), ci(p.kw), wk, update));
    Stmt init = store(acc, bias ? load(bias, {oc}) : ci(0), {ci(0)});
    Stmt fin = store(o, requantize_channel(p.q, p.rule, table_flat, p.inputs.table_columns, load(acc, {ci(0)}), oc,
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
    body = outer.wrap(regions.size() == 1 ? regions[0] : SeqStmt(regions));
  } else {
    // Plain loop nest (and every other grouped convolution).
    LoopNest outer;
    Expr n = outer.axis("n", p.n), oh = outer.axis("oh", p.oh), ow = outer.axis("ow", p.ow), oc = outer.axis("oc", p.o);
    body = outer.wrap(one_output(n, oh, ow, oc, true, true));
  }
  return fb.finish(fname, table_flat ? DeclBuffer(table_flat, body) : body);
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
  // `row` as int16 pairs, a last odd value paired with 0.
  auto gather_pairs = [&](Expr row, const Buffer& col, Expr first, Expr k0, int64_t len) {
    Var j = ivar("j");
    Expr word = pack_pair(x_of(row, add(k0, mul(j, ci(2)))), x_of(row, add(k0, add(mul(j, ci(2)), ci(1)))));
    std::vector<Stmt> s;
    if (len / 2 > 0) s.push_back(For(j, ci(0), ci(len / 2), ForKind::kSerial, store(col, word, {add(first, j)})));
    if (len % 2) s.push_back(store(col, pack_pair(x_of(row, add(k0, ci(len - 1))), ci(0)), {add(first, ci(len / 2))}));
    return s.size() == 1 ? s[0] : SeqStmt(s);
  };
  if (p.sched.smlad) {
    const int64_t words = (p.k + 1) / 2;
    g.gather = [&, words](Expr row, const Buffer& col, Expr slot) {
      return gather_pairs(row, col, mul(slot, ci(words)), ci(0), p.k);
    };
  }
  g.store = [&](Expr row, Expr oc, Expr v) { return store(o, v, {row, oc}); };
  Stmt body = takes_dense_chunks(g) ? dense_chunked(g, [&](const Buffer& col, Expr k0, int64_t len) {
    return gather_pairs(ci(0), col, ci(0), k0, len);
  })
                                    : gemm(g);
  return fb.finish(fname, declare_views(g, body));
}

}  // namespace

void register_qconv_ops(std::vector<OpDef>& ops) {
  ops.push_back({"qconv2d", qconv_infer, qconv_build});
  ops.push_back({"qdense", qdense_infer, qdense_build});
}

}  // namespace ops
}  // namespace mtir
