// qsquared_difference: TFLite Micro's int8 / int16 SQUARED_DIFFERENCE, broadcast (numpy
// rules). Both inputs, less their zero points and shifted left by 7 (int16: 0), are
// rescaled to half the larger input scale (multipliers below 1), subtracted and squared;
// the square is requantized by (2 * max_scale)^2 / (2^14 * output_scale) (the
// denominator in float32, as TFLM computes it), plus the output zero point, clamped.
#include <algorithm>

#include "ops/quant_util.h"

namespace mtir {
namespace ops {
namespace {

using json = nlohmann::json;

struct SqDiffParams {
  DataType dtype;
  int32_t za = 0, zb = 0, zo = 0;
  int left_shift = 7;
  QuantMultiplier ma, mb, mo;
  std::vector<int64_t> shape;
};

SqDiffParams sqdiff_params(const std::vector<TensorType>& in, const json& attrs) {
  const std::string op = "qsquared_difference";
  AttrReader r(op, attrs, {"a_scale", "a_zero_point", "b_scale", "b_zero_point", "output_scale", "output_zero_point"});
  if (in.size() != 2) fail(op, "expected 2 inputs (a, b), got " + std::to_string(in.size()));
  SqDiffParams p;
  p.dtype = in[0].dtype == kI16 ? kI16 : kI8;
  check_dtype(op, in, 0, "a", p.dtype);
  check_dtype(op, in, 1, "b", p.dtype);
  const float sa = static_cast<float>(read_scale(op, r, "a_scale"));
  const float sb = static_cast<float>(read_scale(op, r, "b_scale"));
  const float so = static_cast<float>(read_scale(op, r, "output_scale"));
  p.za = read_zero_point(r, "a_zero_point", p.dtype);
  p.zb = read_zero_point(r, "b_zero_point", p.dtype);
  p.zo = read_zero_point(r, "output_zero_point", p.dtype);
  if (p.dtype == kI16) {
    if (p.za || p.zb || p.zo) fail(op, "int16 data needs zero points of 0 (TFLite's int16x8 quantization)");
    p.left_shift = 0;
  }
  const double twice_max = 2.0 * static_cast<double>(std::max(sa, sb));
  p.ma = quantize_multiplier(static_cast<double>(sa) / twice_max, op, "a_scale / (2 * max scale)");
  p.mb = quantize_multiplier(static_cast<double>(sb) / twice_max, op, "b_scale / (2 * max scale)");
  const float denominator = static_cast<float>(1 << (p.left_shift * 2)) * so;
  p.mo = quantize_multiplier(twice_max * twice_max / static_cast<double>(denominator), op,
                             "(2 * max scale)^2 / (2^14 * output_scale)");
  p.shape = broadcast_shape(op, in[0].shape, in[1].shape);
  return p;
}

PrimFunc sqdiff_build(const std::string& fname, const std::vector<TensorType>& in, const TensorType& out,
                      const json& attrs) {
  const SqDiffParams p = sqdiff_params(in, attrs);
  FuncBuilder fb;
  Buffer a = fb.param("a", in[0].shape, p.dtype), b = fb.param("b", in[1].shape, p.dtype);
  Buffer o = fb.param("out", out.shape, p.dtype);
  LoopNest nest;
  std::vector<Expr> idx = nest.axes(out.shape);
  auto scaled = [&](const Buffer& x, const std::vector<int64_t>& shape, int32_t zp, const QuantMultiplier& m) {
    Expr v = sub(Cast(kI32, load(x, broadcast_index(shape, out.shape, idx))), ci(zp));
    return multiply_by_quantized_multiplier(mul(v, ci(int64_t{1} << p.left_shift)), m);
  };
  Var d = MakeVar("diff", kI32);
  Expr y = multiply_by_quantized_multiplier(mul(d, d), p.mo);
  Stmt body = LetStmt(d, sub(scaled(a, in[0].shape, p.za, p.ma), scaled(b, in[1].shape, p.zb, p.mb)),
                      store(o, saturate_to(p.dtype, y, p.zo, dtype_bounds(p.dtype)), idx));
  return fb.finish(fname, nest.wrap(body));
}

}  // namespace

void register_qsquared_difference_ops(std::vector<OpDef>& ops) {
  ops.push_back(OpDef{"qsquared_difference",
                      [](const std::vector<TensorType>& in, const json& attrs) {
                        const SqDiffParams p = sqdiff_params(in, attrs);
                        return TensorType{p.dtype, p.shape};
                      },
                      sqdiff_build, OutputSharing::kElementwise});
}

}  // namespace ops
}  // namespace mtir
