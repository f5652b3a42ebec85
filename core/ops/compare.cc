// Comparisons, selection and logic on bool tensors, broadcast (numpy rules), as TFLite
// Micro's EQUAL ... GREATER_EQUAL, SELECT_V2 and LOGICAL_AND / OR / NOT:
//   equal, not_equal, less, less_equal, greater, greater_equal
//       any numeric inputs of one type → bool. On int8 or int16 data with the attributes
//       a_scale, a_zero_point, b_scale, b_zero_point, TFLM's quantized comparison: each
//       side (x - zero_point) * 2^8, times its scale as a fixed-point multiplier below
//       one (MultiplyByQuantizedMultiplierSmallerThanOneExp), then compared.
//   select              bool condition, x, y of one type → x where true, else y.
//   logical_and, logical_or (bool, bool → bool), logical_not (bool → bool).
#include "ops/quant_util.h"

namespace mtir {
namespace ops {
namespace {

using json = nlohmann::json;
const DataType kBool = DataType::Bool();

struct CompareParams {
  bool scaled = false;
  int32_t za = 0, zb = 0;
  QuantMultiplier ma, mb;
  std::vector<int64_t> shape;
};

const std::vector<std::string> kCompareAttrs = {"a_scale", "a_zero_point", "b_scale", "b_zero_point"};

CompareParams compare_params(const std::string& op, const std::vector<TensorType>& in, const json& attrs) {
  AttrReader r(op, attrs, kCompareAttrs);
  check_inputs(op, in, 2, {"a", "b"}, Dtypes::kNumeric);
  CompareParams p;
  p.shape = broadcast_shape(op, in[0].shape, in[1].shape);
  p.scaled = r.has("a_scale") || r.has("b_scale");
  if (!p.scaled) return p;
  if (in[0].dtype != DataType::Int(16)) check_dtype(op, in, 0, "a", DataType::Int(8));  // (x - zp) * 2^8 fits int32
  auto multiplier = [&](const std::string& key) {
    QuantMultiplier m = quantize_multiplier(static_cast<float>(read_scale(op, r, key)), op, key);
    if (m.shift > 0) r.bad(key, "a scale below 1 (TFLite's quantized comparison)");
    return m;
  };
  p.ma = multiplier("a_scale");
  p.mb = multiplier("b_scale");
  p.za = read_zero_point(r, "a_zero_point");
  p.zb = read_zero_point(r, "b_zero_point");
  return p;
}

OpDef compare_op(const std::string& op, ExprKind kind) {
  OpDef d;
  d.name = op;
  d.infer = [op](const std::vector<TensorType>& in, const json& attrs) {
    return TensorType{kBool, compare_params(op, in, attrs).shape};
  };
  d.build = [op, kind](const std::string& fname, const std::vector<TensorType>& in, const TensorType& out,
                       const json& attrs) {
    const CompareParams p = compare_params(op, in, attrs);
    FuncBuilder fb;
    Buffer a = fb.param("a", in[0].shape, in[0].dtype), b = fb.param("b", in[1].shape, in[1].dtype);
    Buffer o = fb.param("out", out.shape, kBool);
    LoopNest nest;
    std::vector<Expr> idx = nest.axes(out.shape);
    Expr va = load(a, broadcast_index(in[0].shape, out.shape, idx));
    Expr vb = load(b, broadcast_index(in[1].shape, out.shape, idx));
    if (p.scaled) {
      auto scale = [](Expr v, int32_t zp, const QuantMultiplier& m) {
        return multiply_by_quantized_multiplier(mul(sub(Cast(kI32, std::move(v)), ci(zp)), ci(1 << 8)), m);
      };
      va = scale(va, p.za, p.ma);
      vb = scale(vb, p.zb, p.mb);
    }
    return fb.finish(fname, nest.wrap(store(o, Binary(kind, va, vb), idx)));
  };
  return d;
}

std::vector<int64_t> select_shape(const std::vector<TensorType>& in, const json& attrs) {
  const std::string op = "select";
  AttrReader r(op, attrs, {});
  if (in.size() != 3) fail(op, "expected 3 inputs (condition, x, y), got " + std::to_string(in.size()));
  check_dtype(op, in, 0, "condition", kBool);
  check_inputs(op, {in[1], in[2]}, 2, {"x", "y"}, Dtypes::kNumeric);
  return broadcast_shape(op, in[0].shape, broadcast_shape(op, in[1].shape, in[2].shape));
}

PrimFunc select_build(const std::string& fname, const std::vector<TensorType>& in, const TensorType& out,
                      const json&) {
  FuncBuilder fb;
  Buffer c = fb.param("condition", in[0].shape, kBool);
  Buffer x = fb.param("x", in[1].shape, in[1].dtype), y = fb.param("y", in[2].shape, in[2].dtype);
  Buffer o = fb.param("out", out.shape, out.dtype);
  LoopNest nest;
  std::vector<Expr> idx = nest.axes(out.shape);
  auto at = [&](const Buffer& buf, size_t i) { return load(buf, broadcast_index(in[i].shape, out.shape, idx)); };
  return fb.finish(fname, nest.wrap(store(o, Select(at(c, 0), at(x, 1), at(y, 2)), idx)));
}

OpDef logical_op(const std::string& op, size_t arity) {
  OpDef d;
  d.name = op;
  d.sharing = OutputSharing::kElementwise;
  d.infer = [op, arity](const std::vector<TensorType>& in, const json& attrs) {
    AttrReader r(op, attrs, {});
    if (in.size() != arity) fail(op, "expected " + std::to_string(arity) + " bool inputs, got " + std::to_string(in.size()));
    for (size_t i = 0; i < in.size(); ++i) check_dtype(op, in, i, i ? "b" : "a", kBool);
    return TensorType{kBool, arity == 1 ? in[0].shape : broadcast_shape(op, in[0].shape, in[1].shape)};
  };
  d.build = [op](const std::string& fname, const std::vector<TensorType>& in, const TensorType& out, const json&) {
    FuncBuilder fb;
    std::vector<Buffer> bufs;
    for (size_t i = 0; i < in.size(); ++i) bufs.push_back(fb.param(i ? "b" : "a", in[i].shape, kBool));
    Buffer o = fb.param("out", out.shape, kBool);
    LoopNest nest;
    std::vector<Expr> idx = nest.axes(out.shape);
    auto at = [&](size_t i) { return load(bufs[i], broadcast_index(in[i].shape, out.shape, idx)); };
    Expr v = op == "logical_not" ? Not(at(0))
                                 : Binary(op == "logical_and" ? ExprKind::And : ExprKind::Or, at(0), at(1));
    return fb.finish(fname, nest.wrap(store(o, v, idx)));
  };
  return d;
}

}  // namespace

void register_compare_ops(std::vector<OpDef>& ops) {
  ops.push_back(compare_op("equal", ExprKind::EQ));
  ops.push_back(compare_op("not_equal", ExprKind::NE));
  ops.push_back(compare_op("less", ExprKind::LT));
  ops.push_back(compare_op("less_equal", ExprKind::LE));
  ops.push_back(compare_op("greater", ExprKind::GT));
  ops.push_back(compare_op("greater_equal", ExprKind::GE));
  ops.push_back(OpDef{"select",
                      [](const std::vector<TensorType>& in, const json& attrs) {
                        return TensorType{in.size() > 1 ? in[1].dtype : kBool, select_shape(in, attrs)};
                      },
                      select_build});
  ops.push_back(logical_op("logical_and", 2));
  ops.push_back(logical_op("logical_or", 2));
  ops.push_back(logical_op("logical_not", 1));
}

}  // namespace ops
}  // namespace mtir
