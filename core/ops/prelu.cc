// PRELU, TFLite's parametric ReLU: x where x >= 0, x * alpha below, alpha broadcast to
// the data (numpy rules, as TFLite's BroadcastPrelu4DSlow).
//   prelu    float32
//   qprelu   int8 (int8 alpha) and int16 (int8 alpha), as TFLite Micro's kernel: with
//            v = x - input_zero_point, MBQM(v, input_scale / output_scale) for v >= 0,
//            MBQM(v * (alpha - alpha_zero_point), input_scale * alpha_scale /
//            output_scale) below, plus output_zero_point, clamped to the type.
#include "ops/quant_util.h"

namespace mtir {
namespace ops {
namespace {

using json = nlohmann::json;

TensorType prelu_infer(const std::vector<TensorType>& in, const json& attrs) {
  AttrReader r("prelu", attrs, {});
  check_inputs("prelu", in, 2, {"data", "alpha"}, Dtypes::kFloat32);
  return TensorType{in[0].dtype, broadcast_shape("prelu", in[0].shape, in[1].shape)};
}

struct QPreluParams {
  DataType dtype;
  int32_t input_zero_point = 0, alpha_zero_point = 0, output_zero_point = 0;
  QuantMultiplier positive, negative;
  std::vector<int64_t> shape;
};

QPreluParams qprelu_params(const std::vector<TensorType>& in, const json& attrs) {
  const std::string op = "qprelu";
  AttrReader r(op, attrs, {"input_scale", "input_zero_point", "alpha_scale", "alpha_zero_point", "output_scale",
                           "output_zero_point"});
  if (in.size() != 2) fail(op, "expected 2 inputs (data, alpha), got " + std::to_string(in.size()));
  QPreluParams p;
  p.dtype = in[0].dtype == kI16 ? kI16 : kI8;
  check_dtype(op, in, 0, "data", p.dtype);
  check_dtype(op, in, 1, "alpha", kI8);
  const double si = static_cast<float>(read_scale(op, r, "input_scale"));
  const double sa = static_cast<float>(read_scale(op, r, "alpha_scale"));
  const double so = static_cast<float>(read_scale(op, r, "output_scale"));
  p.input_zero_point = read_zero_point(r, "input_zero_point", p.dtype);
  p.alpha_zero_point = read_zero_point(r, "alpha_zero_point");
  p.output_zero_point = read_zero_point(r, "output_zero_point", p.dtype);
  p.positive = quantize_multiplier(si / so, op, "input_scale / output_scale");
  p.negative = quantize_multiplier(si * sa / so, op, "input_scale * alpha_scale / output_scale");
  p.shape = broadcast_shape(op, in[0].shape, in[1].shape);
  return p;
}

PrimFunc prelu_build(const std::string& fname, const std::vector<TensorType>& in, const TensorType& out,
                     const json& attrs) {
  const bool quantized = in[0].dtype != DataType::Float(32);
  QPreluParams p;
  if (quantized) p = qprelu_params(in, attrs);
  FuncBuilder fb;
  Buffer data = fb.param("data", in[0].shape, in[0].dtype), alpha = fb.param("alpha", in[1].shape, in[1].dtype);
  Buffer o = fb.param("out", out.shape, out.dtype);
  LoopNest nest;
  std::vector<Expr> idx = nest.axes(out.shape);
  Expr x = load(data, broadcast_index(in[0].shape, out.shape, idx));
  Expr a = load(alpha, broadcast_index(in[1].shape, out.shape, idx));
  if (!quantized) return fb.finish(fname, nest.wrap(store(o, Select(ge(x, cf(0)), x, mul(x, a)), idx)));
  Var v = MakeVar("v", kI32);
  Expr scaled_alpha = sub(Cast(kI32, a), ci(p.alpha_zero_point));
  Expr y = Select(ge(v, ci(0)), multiply_by_quantized_multiplier(v, p.positive),
                  multiply_by_quantized_multiplier(mul(v, scaled_alpha), p.negative));
  Stmt body = LetStmt(v, sub(Cast(kI32, x), ci(p.input_zero_point)),
                      store(o, saturate_to(p.dtype, y, p.output_zero_point, dtype_bounds(p.dtype)), idx));
  return fb.finish(fname, nest.wrap(body));
}

}  // namespace

void register_prelu_ops(std::vector<OpDef>& ops) {
  ops.push_back(OpDef{"prelu", prelu_infer, prelu_build, OutputSharing::kElementwise});
  ops.push_back(OpDef{"qprelu",
                      [](const std::vector<TensorType>& in, const json& attrs) {
                        const QPreluParams p = qprelu_params(in, attrs);
                        return TensorType{p.dtype, p.shape};
                      },
                      prelu_build, OutputSharing::kElementwise});
}

}  // namespace ops
}  // namespace mtir
