// Integer activations as TFLite Micro computes them, one element at a time:
//   qlookup        int8 -> int8 through a 256-entry table made at compile time (the
//                  frontend fills it with TFLM's arithmetic, ops/lookup_tables.h), as
//                  TFLM itself runs ELU and as our int8 LOGISTIC/TANH do;
//   qlogistic_s16, qtanh_s16
//                  TFLM's int16 LOGISTIC and TANH (reference_integer_ops, int16
//                  overloads): the input rescaled as their Prepare does, then the
//                  interpolated sigmoid table (ops/int16_activation.h);
//   qabs           int8/int16 ABS (TFLM's AbsEvalQuantized): |x - zp_in|, rescaled when
//                  the scales differ, plus zp_out, clamped to the type.
#include <cmath>

#include "ops/int16_activation.h"
#include "ops/quant_util.h"

namespace mtir {
namespace ops {
namespace {

using json = nlohmann::json;

// ---- qlookup ---------------------------------------------------------------------------

void lookup_check(const std::vector<TensorType>& in) {
  const std::string op = "qlookup";
  if (in.size() != 2) fail(op, "expected 2 inputs (data, table), got " + std::to_string(in.size()));
  check_inputs(op, {in[0]}, 1, {"data"}, Dtypes::kNumeric);
  check_dtype(op, in, 0, "data", kI8);
  check_dtype(op, in, 1, "table", kI8);
  if (in[1].shape != std::vector<int64_t>{256})
    fail(op, "input 'table' has shape " + shape_str(in[1].shape) + "; (256) is required");
}

OpDef lookup_op() {
  OpDef d;
  d.name = "qlookup";
  d.sharing = OutputSharing::kElementwise;
  d.infer = [](const std::vector<TensorType>& in, const json& attrs) {
    AttrReader("qlookup", attrs, {});
    lookup_check(in);
    return in[0];
  };
  d.build = [](const std::string& fname, const std::vector<TensorType>& in, const TensorType& out, const json&) {
    lookup_check(in);
    FuncBuilder fb;
    Buffer data = fb.param("data", in[0].shape, kI8);
    Buffer table = fb.param("table", {256}, kI8);
    Buffer o = fb.param("out", out.shape, kI8);
    LoopNest nest;
    std::vector<Expr> idx = nest.axes(out.shape);
    return fb.finish(fname, nest.wrap(store(o, load(table, {add(Cast(kI32, load(data, idx)), ci(128))}), idx)));
  };
  return d;
}

// ---- qlogistic_s16, qtanh_s16 -----------------------------------------------------------

struct Int16ActParams {
  int32_t multiplier = 0;  // 0: the power-of-two case (3 << shift)
  int32_t shift = 0;
};

// TFLM's CheckedLog2: log2 of a float32 scale in float32, rounded; true when within 1e-3.
bool checked_log2(float x, int* log2_result) {
  const float l = std::log(x) * (1.0f / std::log(2.0f));
  const float rounded = std::round(l);
  *log2_result = static_cast<int>(rounded);
  return std::abs(l - rounded) < 1e-3f;
}

// The int16 branch of TFLM's LOGISTIC / TANH Prepare: zero points 0, output scale 2^-15;
// a power-of-two input scale of 2^-12 (tanh also 2^-11) is multiplier 0 and the shift,
// any other scale becomes scale * 3 * 4096 doubled until above 32767 / 2, truncated.
Int16ActParams int16_act_params(const std::string& op, const std::vector<TensorType>& in, const json& attrs) {
  AttrReader r(op, attrs, {"input_scale", "input_zero_point", "output_scale", "output_zero_point"});
  if (in.size() != 2) fail(op, "expected 2 inputs (data, sigmoid_table), got " + std::to_string(in.size()));
  check_inputs(op, {in[0]}, 1, {"data"}, Dtypes::kNumeric);
  check_dtype(op, in, 0, "data", kI16);
  check_dtype(op, in, 1, "sigmoid_table", DataType::UInt(16));
  if (in[1].shape != std::vector<int64_t>{256})
    fail(op, "input 'sigmoid_table' has shape " + shape_str(in[1].shape) + "; (256) is required");
  if (r.get_int("input_zero_point", 0) != 0) r.bad("input_zero_point", "0 (TFLite's int16 " + op + ")");
  if (r.get_int("output_zero_point", 0) != 0) r.bad("output_zero_point", "0 (TFLite's int16 " + op + ")");
  const float scale = static_cast<float>(read_scale(op, r, "input_scale"));
  int out_log2 = 0;
  if (!checked_log2(static_cast<float>(read_scale(op, r, "output_scale")), &out_log2) || out_log2 != -15)
    r.bad("output_scale", "2^-15 (" + op + " produces Q0.15)");
  const bool tanh = op == "qtanh_s16";
  Int16ActParams p;
  int scale_log2 = 0;
  bool pot = checked_log2(scale, &scale_log2);
  p.shift = 12 + scale_log2;
  pot = pot && (p.shift == 0 || (tanh && p.shift == 1));
  if (pot) {
    p.multiplier = 0;
    return p;
  }
  double m = static_cast<double>(scale) * 4096.0 * 3.0;
  p.shift = 0;
  while (m <= 32767.0 / 2.0 && p.shift <= 30) {
    ++p.shift;
    m *= 2.0;
  }
  p.multiplier = static_cast<int32_t>(m);
  if (p.multiplier > 32767)
    r.bad("input_scale", "at most 2^-12 * 32767 / 3 / 4096 * 8 (TFLite's int16 " + op + " multiplier fits 15 bits)");
  return p;
}

OpDef int16_act_op(const std::string& op) {
  OpDef d;
  d.name = op;
  d.sharing = OutputSharing::kElementwise;
  d.infer = same_type_as_input(
      [op](const std::vector<TensorType>& in, const json& attrs) { return int16_act_params(op, in, attrs); });
  d.build = [op](const std::string& fname, const std::vector<TensorType>& in, const TensorType& out,
                 const json& attrs) {
    const Int16ActParams p = int16_act_params(op, in, attrs);
    FuncBuilder fb;
    Buffer data = fb.param("data", in[0].shape, kI16);
    Buffer table = fb.param("sigmoid_table", {256}, DataType::UInt(16));
    Buffer o = fb.param("out", out.shape, kI16);
    LoopNest nest;
    std::vector<Expr> idx = nest.axes(out.shape);
    auto use = [&](Expr y) { return store(o, Cast(kI16, std::move(y)), idx); };
    Expr x = Cast(kI32, load(data, idx));
    Stmt body = op == "qtanh_s16" ? int16_tanh("t", x, table, p.multiplier, p.shift, use)
                                  : int16_logistic("s", x, table, p.multiplier, p.shift, use);
    return fb.finish(fname, nest.wrap(body));
  };
  return d;
}

// ---- qabs -------------------------------------------------------------------------------

struct AbsParams {
  DataType dtype;
  int32_t input_zero_point = 0, output_zero_point = 0;
  bool rescale = false;
  QuantMultiplier multiplier;
};

AbsParams abs_params(const std::vector<TensorType>& in, const json& attrs) {
  const std::string op = "qabs";
  AttrReader r(op, attrs, {"input_scale", "input_zero_point", "output_scale", "output_zero_point"});
  check_inputs(op, in, 1, {"data"}, Dtypes::kNumeric);
  AbsParams p;
  p.dtype = in[0].dtype == kI16 ? kI16 : kI8;
  check_dtype(op, in, 0, "data", p.dtype);
  const float si = static_cast<float>(read_scale(op, r, "input_scale"));
  const float so = static_cast<float>(read_scale(op, r, "output_scale"));
  p.input_zero_point = read_zero_point(r, "input_zero_point", p.dtype);
  p.output_zero_point = read_zero_point(r, "output_zero_point", p.dtype);
  if (p.dtype == kI16 && (p.input_zero_point != 0 || p.output_zero_point != 0))
    fail(op, "int16 data needs zero points of 0 (TFLite's int16x8 quantization)");
  p.rescale = si != so;
  if (p.rescale)
    p.multiplier = quantize_multiplier(static_cast<double>(si) / static_cast<double>(so), op,
                                       "input_scale / output_scale");
  return p;
}

PrimFunc abs_build(const std::string& fname, const std::vector<TensorType>& in, const TensorType& out,
                   const json& attrs) {
  const AbsParams p = abs_params(in, attrs);
  FuncBuilder fb;
  Buffer data = fb.param("data", in[0].shape, p.dtype);
  Buffer o = fb.param("out", out.shape, p.dtype);
  LoopNest nest;
  std::vector<Expr> idx = nest.axes(out.shape);
  Expr v = call("abs", {sub(Cast(kI32, load(data, idx)), ci(p.input_zero_point))});
  if (p.rescale) v = multiply_by_quantized_multiplier(v, p.multiplier);
  return fb.finish(fname, nest.wrap(store(o, saturate_to(p.dtype, v, p.output_zero_point, dtype_bounds(p.dtype)), idx)));
}

}  // namespace

void register_qactivation_ops(std::vector<OpDef>& ops) {
  ops.push_back(lookup_op());
  ops.push_back(int16_act_op("qlogistic_s16"));
  ops.push_back(int16_act_op("qtanh_s16"));
  ops.push_back(OpDef{"qabs",
                      same_type_as_input(abs_params), abs_build, OutputSharing::kElementwise});
}

}  // namespace ops
}  // namespace mtir
