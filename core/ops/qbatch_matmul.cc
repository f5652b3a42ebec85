// qbatch_matmul: TFLite Micro's int8 and int16 BATCH_MATMUL (reference batch_matmul.h as
// TFLM's kernel calls it): A [..., M, K] times B [..., K, N], batch dimensions broadcast
// as matmul's; each sum of (a - a_zero_point) * (b - b_zero_point) is requantized by
// float32(a_scale * b_scale) / output_scale (as a double, TFLite's
// GetQuantizedConvolutionMultipler), plus the output zero point, clamped to the type.
// int8 sums in int32 (MultiplyByQuantizedMultiplier); int16 (zero points 0, as TFLM's
// Prepare requires) in int64, requantized by the int64 MultiplyByQuantizedMultiplier.
#include "ops/ops.h"
#include "ops/quant_util.h"

namespace mtir {
namespace ops {
namespace {

using json = nlohmann::json;
const std::vector<std::string> kAttrs = {"a_scale",      "a_zero_point",     "b_scale",
                                         "b_zero_point", "output_scale", "output_zero_point"};

struct BatchMatmulParams {
  DataType dtype;  // int8 or int16, of A, B and the output
  int32_t za, zb, zo;
  QuantMultiplier m;
};

BatchMatmulParams bmm_params(const std::vector<TensorType>& in, const json& attrs) {
  const std::string op = "qbatch_matmul";
  AttrReader r(op, attrs, kAttrs);
  if (in.size() != 2) fail(op, "expected 2 inputs (A, B), got " + std::to_string(in.size()));
  const DataType t = in[0].dtype;
  if (t != kI8 && t != kI16) fail(op, "input 'A' has type " + t.str() + "; int8 or int16 is required");
  check_dtype(op, in, 1, "B", t);
  const float product = static_cast<float>(read_scale(op, r, "a_scale")) * static_cast<float>(read_scale(op, r, "b_scale"));
  const float so = static_cast<float>(read_scale(op, r, "output_scale"));
  BatchMatmulParams p;
  p.dtype = t;
  p.za = read_zero_point(r, "a_zero_point", t);
  p.zb = read_zero_point(r, "b_zero_point", t);
  p.zo = read_zero_point(r, "output_zero_point", t);
  if (t == kI16 && (p.za != 0 || p.zb != 0 || p.zo != 0)) fail(op, "int16 zero points must be 0 (TFLite's int16x16)");
  p.m = quantize_multiplier(static_cast<double>(product) / static_cast<double>(so), op, "a_scale * b_scale / output_scale");
  return p;
}

// The result's shape: matmul's (broadcast batches, [M, N]), checked by matmul itself.
TensorType bmm_infer(const std::vector<TensorType>& in, const json& attrs) {
  bmm_params(in, attrs);
  const DataType f32 = DataType::Float(32);
  TensorType t = find_op("matmul")->infer({{f32, in[0].shape}, {f32, in[1].shape}}, json::object());
  return TensorType{in[0].dtype, t.shape};
}

PrimFunc bmm_build(const std::string& fname, const std::vector<TensorType>& in, const TensorType& out,
                   const json& attrs) {
  const BatchMatmulParams p = bmm_params(in, attrs);
  FuncBuilder fb;
  const bool wide = p.dtype == kI16;
  Buffer a = fb.param("A", in[0].shape, p.dtype), b = fb.param("B", in[1].shape, p.dtype);
  Buffer o = fb.param("out", out.shape, p.dtype);
  Buffer acc = scratch("acc", {1}, wide ? kI64 : kI32);
  const size_t rank = out.shape.size(), batch = rank - 2;
  LoopNest outer, red;
  const std::vector<Expr> oidx = outer.axes(out.shape, "o");
  Expr k = red.axis("k", in[0].shape.back());
  // An operand's indices: its batch dimensions right-aligned with the output's, size 1 read at 0.
  auto operand = [&](const Buffer& x, const std::vector<int64_t>& s, Expr row, Expr col, int32_t zp) {
    std::vector<Expr> idx;
    const size_t ob = s.size() - 2, off = batch - ob;
    for (size_t d = 0; d < ob; ++d) idx.push_back(s[d] == 1 ? ci(0) : oidx[d + off]);
    idx.push_back(std::move(row));
    idx.push_back(std::move(col));
    return sub(Cast(kI32, load(x, idx)), ci(zp));
  };
  Expr prod = mul(operand(a, in[0].shape, oidx[rank - 2], k, p.za), operand(b, in[1].shape, k, oidx[rank - 1], p.zb));
  // |int16 * int16| <= 2^30: each product is exact in int32, the sum is int64.
  if (wide) prod = Cast(kI64, prod);
  Stmt update = store(acc, Binary(ExprKind::Add, load(acc, {ci(0)}), prod), {ci(0)});
  Expr y = wide ? multiply_by_quantized_multiplier_wide(load(acc, {ci(0)}), p.m)
                : multiply_by_quantized_multiplier(load(acc, {ci(0)}), p.m);
  Expr zero = wide ? IntImm(kI64, 0) : ci(0);
  Stmt body = SeqStmt({store(acc, zero, {ci(0)}), red.wrap(update),
                       store(o, saturate_to(p.dtype, y, p.zo, dtype_bounds(p.dtype)), oidx)});
  return fb.finish(fname, Allocate(acc, "global", outer.wrap(body)));
}

}  // namespace

void register_qbatch_matmul_ops(std::vector<OpDef>& ops) {
  ops.push_back(OpDef{"qbatch_matmul", bmm_infer, bmm_build});
}

}  // namespace ops
}  // namespace mtir
