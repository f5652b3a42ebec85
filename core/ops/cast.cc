// cast: each element converted to "dtype" as C converts it (and TFLite Micro's CAST,
// whose kernel is a static_cast per element, reading no quantization): float to integer
// truncates toward zero (a value out of the target's range is undefined in C and fails
// the interpreter's run), integer to integer wraps, anything to bool is `!= 0`, bool to
// a number is 0 or 1.
#include "ops/op_util.h"

namespace mtir {
namespace ops {
namespace {

using json = nlohmann::json;

const std::vector<std::string> kCastTypes = {"bool", "int8", "int16", "int32", "int64", "uint8", "float32", "float64"};

DataType cast_target(const std::vector<TensorType>& in, const json& attrs) {
  const std::string op = "cast";
  AttrReader r(op, attrs, {"dtype"});
  if (in.size() != 1) fail(op, "expected 1 input (data), got " + std::to_string(in.size()));
  const DataType from = in[0].dtype;
  if (!from.is_numeric() && !from.is_bool()) fail(op, "input 'data' has type " + from.str() + ", which cannot be cast");
  if (!r.has("dtype")) fail(op, "the attribute 'dtype' (the target type) is required");
  return *DataType::parse(r.get_string("dtype", "int32", kCastTypes));
}

PrimFunc cast_build(const std::string& fname, const std::vector<TensorType>& in, const TensorType& out,
                    const json&) {
  FuncBuilder fb;
  Buffer x = fb.param("data", in[0].shape, in[0].dtype);
  Buffer o = fb.param("out", out.shape, out.dtype);
  LoopNest nest;
  std::vector<Expr> idx = nest.axes(out.shape);
  Expr v = load(x, idx);
  // To bool: a comparison (C's conversion to _Bool); otherwise the conversion itself.
  Expr y = out.dtype.is_bool() ? Binary(ExprKind::NE, v, cv(in[0].dtype, 0)) : Cast(out.dtype, v);
  return fb.finish(fname, nest.wrap(store(o, y, idx)));
}

}  // namespace

void register_cast_ops(std::vector<OpDef>& ops) {
  ops.push_back(OpDef{"cast",
                      [](const std::vector<TensorType>& in, const json& attrs) {
                        return TensorType{cast_target(in, attrs), in[0].shape};
                      },
                      cast_build, OutputSharing::kElementwise});
}

}  // namespace ops
}  // namespace mtir
