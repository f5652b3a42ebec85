// Elementwise ops: binary arithmetic with numpy broadcasting, and unary activations.
#include <cmath>
#include <limits>

#include "ops/op_util.h"

namespace mtir {
namespace ops {
namespace {

using json = nlohmann::json;

// ---- binary arithmetic with broadcasting --------------------------------------
// Integer types too: the arithmetic of C on the type (wrapping for unsigned types;
// div truncates toward zero, as ONNX's integer Div does).

TensorType infer_broadcast(const std::string& op, const std::vector<TensorType>& in, const json& attrs) {
  AttrReader r(op, attrs, {});
  check_inputs(op, in, 2, {"lhs", "rhs"}, Dtypes::kNumeric);
  return TensorType{in[0].dtype, broadcast_shape(op, in[0].shape, in[1].shape)};
}

using BinaryFn = std::function<Expr(Expr, Expr)>;

OpDef binary_op(const std::string& name, BinaryFn fn) {
  OpDef d;
  d.name = name;
  d.sharing = OutputSharing::kElementwise;
  d.infer = [name](const std::vector<TensorType>& in, const json& attrs) { return infer_broadcast(name, in, attrs); };
  d.build = [fn](const std::string& fname, const std::vector<TensorType>& in, const TensorType& out,
                 const json&) {
    FuncBuilder fb;
    Buffer a = fb.param("lhs", in[0].shape, in[0].dtype);
    Buffer b = fb.param("rhs", in[1].shape, in[1].dtype);
    Buffer o = fb.param("out", out.shape, out.dtype);
    LoopNest nest;
    std::vector<Expr> idx = nest.axes(out.shape);
    Expr va = load(a, broadcast_index(in[0].shape, out.shape, idx));
    Expr vb = load(b, broadcast_index(in[1].shape, out.shape, idx));
    return fb.finish(fname, nest.wrap(store(o, fn(va, vb), idx)));
  };
  return d;
}

OpDef binary_op(const std::string& name, ExprKind kind) {
  return binary_op(name, [kind](Expr a, Expr b) { return Binary(kind, std::move(a), std::move(b)); });
}

// C's trunc(a / b) on floats: toward zero.
Expr trunc_div(Expr a, Expr b) {
  Expr q = fdiv(std::move(a), std::move(b));
  return Select(lt(q, cv(q->dtype, 0)), call("ceil", {q}), call("floor", {q}));
}

// ---- unary ops ------------------------------------------------------------------

// `fn` maps the loaded element to the result; `dtypes` says whether integer data is
// taken too (then the result has the data's type).
OpDef unary_op(const std::string& name, std::vector<std::string> known,
               std::function<void(const AttrReader&)> check,
               std::function<Expr(Expr, const AttrReader&)> fn, Dtypes dtypes = Dtypes::kFloat32) {
  OpDef d;
  d.name = name;
  d.sharing = OutputSharing::kElementwise;
  d.infer = [name, known, check, dtypes](const std::vector<TensorType>& in, const json& attrs) {
    AttrReader r(name, attrs, known);
    check_inputs(name, in, 1, {"data"}, dtypes);
    if (check) check(r);
    return TensorType{in[0].dtype, in[0].shape};
  };
  d.build = [name, known, fn](const std::string& fname, const std::vector<TensorType>& in, const TensorType& out,
                              const json& attrs) {
    AttrReader r(name, attrs, known);
    FuncBuilder fb;
    Buffer x = fb.param("data", in[0].shape, in[0].dtype);
    Buffer o = fb.param("out", out.shape, out.dtype);
    LoopNest nest;
    std::vector<Expr> idx = nest.axes(out.shape);
    return fb.finish(fname, nest.wrap(store(o, fn(load(x, idx), r), idx)));
  };
  return d;
}

constexpr double kInf = std::numeric_limits<double>::infinity();

void register_binary_ops(std::vector<OpDef>& ops) {
  ops.push_back(binary_op("add", ExprKind::Add));
  ops.push_back(binary_op("sub", ExprKind::Sub));
  ops.push_back(binary_op("mul", ExprKind::Mul));
  ops.push_back(binary_op("div", ExprKind::Div));
  // `a > b ? a : b` and `a < b ? a : b` as C computes them: with a NaN operand the
  // result is the second operand.
  ops.push_back(binary_op("maximum", ExprKind::Max));
  ops.push_back(binary_op("minimum", ExprKind::Min));
  ops.push_back(binary_op("squared_difference", [](Expr a, Expr b) {
    Expr d = sub(std::move(a), std::move(b));
    return mul(d, d);
  }));
  // TFLite's FLOOR_DIV and FLOOR_MOD: floor(a / b) on floats; on integers the floored
  // division and the remainder with the divisor's sign.
  ops.push_back(binary_op("floor_div", [](Expr a, Expr b) {
    return a->dtype.is_float() ? call("floor", {fdiv(a, b)}) : floordiv(a, b);
  }));
  // On floats std::fmod (exact), then moved to the divisor's sign; fmod is a - trunc(a /
  // b) * b computed in float64, exact while |a / b| < 2^29.
  ops.push_back(binary_op("floor_mod", [](Expr a, Expr b) -> Expr {
    if (!a->dtype.is_float()) return floormod(a, b);
    const DataType t = a->dtype, f64 = DataType::Float(64);
    Expr a64 = Cast(f64, a), b64 = Cast(f64, b);
    Expr m = Cast(t, sub(a64, mul(trunc_div(a64, b64), b64)));
    Expr zero = cv(t, 0);
    Expr wrong_sign = and_(Binary(ExprKind::NE, m, zero), Binary(ExprKind::NE, lt(b, zero), lt(m, zero)));
    return Select(wrong_sign, add(m, b), m);
  }));
}

void register_unary_ops(std::vector<OpDef>& ops) {
  ops.push_back(unary_op(
      "relu", {}, nullptr, [](Expr x, const AttrReader&) { return max_(x, cv(x->dtype, 0)); }, Dtypes::kNumeric));
  // The float math intrinsics take float32 and float64 (expf or exp in C).
  for (const char* fn : {"sigmoid", "tanh", "exp", "sqrt", "log", "sin", "cos", "floor", "ceil"}) {
    std::string intrinsic = fn;
    ops.push_back(unary_op(
        fn, {}, nullptr, [intrinsic](Expr x, const AttrReader&) { return call(intrinsic, {x}); }, Dtypes::kFloat));
  }
  ops.push_back(unary_op(
      "square", {}, nullptr, [](Expr x, const AttrReader&) { return mul(x, x); }, Dtypes::kFloat));
  ops.push_back(unary_op(
      "rsqrt", {}, nullptr,
      [](Expr x, const AttrReader&) { return fdiv(cv(x->dtype, 1), call("sqrt", {x})); }, Dtypes::kFloat));
  // Half to even (ONNX's Round, TFLite's RoundToNearest): floor, then up past the half
  // and at the half from an odd floor.
  ops.push_back(unary_op(
      "round", {}, nullptr,
      [](Expr x, const AttrReader&) {
        Expr f = call("floor", {x}), half = cv(x->dtype, 0.5), d = sub(x, f);
        Expr odd = Binary(ExprKind::NE, sub(f, mul(cv(x->dtype, 2), call("floor", {mul(f, half)}))), cv(x->dtype, 0));
        Expr up = Binary(ExprKind::Or, Binary(ExprKind::GT, d, half), and_(Binary(ExprKind::EQ, d, half), odd));
        return Select(up, add(f, cv(x->dtype, 1)), f);
      },
      Dtypes::kFloat));
  // x * min(6, max(0, x + 3)) / 6, in TFLite's order.
  ops.push_back(unary_op(
      "hard_swish", {}, nullptr,
      [](Expr x, const AttrReader&) {
        Expr relu6 = min_(max_(add(x, cv(x->dtype, 3)), cv(x->dtype, 0)), cv(x->dtype, 6));
        return fdiv(mul(x, relu6), cv(x->dtype, 6));
      },
      Dtypes::kFloat32));
  // x below 0: exp(x) - 1 in float64, so that it keeps expm1's relative precision near 0.
  ops.push_back(unary_op(
      "elu", {}, nullptr,
      [](Expr x, const AttrReader&) {
        const DataType f64 = DataType::Float(64);
        Expr em1 = Cast(x->dtype, sub(call("exp", {Cast(f64, x)}), cv(f64, 1)));
        return Select(lt(x, cv(x->dtype, 0)), em1, x);
      },
      Dtypes::kFloat32));
  ops.push_back(unary_op(
      "abs", {}, nullptr, [](Expr x, const AttrReader&) { return call("abs", {x}); }, Dtypes::kNumeric));
  ops.push_back(unary_op(
      "neg", {}, nullptr, [](Expr x, const AttrReader&) { return sub(cv(x->dtype, 0), x); }, Dtypes::kNumeric));
  // max(x, 0) + alpha * min(x, 0): no select, so it fuses like relu does.
  ops.push_back(unary_op(
      "leaky_relu", {"alpha"}, [](const AttrReader& r) { r.get_float("alpha", 0.01); },
      [](Expr x, const AttrReader& r) {
        Expr zero = cv(x->dtype, 0);
        return add(max_(x, zero), mul(cv(x->dtype, r.get_float("alpha", 0.01)), min_(x, zero)));
      },
      Dtypes::kFloat));
  ops.push_back(unary_op(
      "clip", {"min", "max"},
      [](const AttrReader& r) {
        double lo = r.get_float("min", -kInf), hi = r.get_float("max", kInf);
        if (lo > hi) fail("clip", "attribute 'min' (" + std::to_string(lo) + ") is greater than 'max' (" +
                                      std::to_string(hi) + ")");
      },
      [](Expr x, const AttrReader& r) {
        // On integer data the bounds are clamped to the type's range (truncated).
        if (r.has("min")) x = max_(x, cv(x->dtype, r.get_float("min", 0)));
        if (r.has("max")) x = min_(x, cv(x->dtype, r.get_float("max", 0)));
        return x;
      },
      Dtypes::kNumeric));
}

}  // namespace

void register_elemwise_ops(std::vector<OpDef>& ops) {
  register_binary_ops(ops);
  register_unary_ops(ops);
}

}  // namespace ops
}  // namespace mtir
