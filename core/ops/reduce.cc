// Reductions along axes, as TFLite Micro's reference kernels compute them:
//   reduce_max, reduce_min, reduce_sum, reduce_mean
//       `axis` (a list of distinct axes); the reduced axes stay as size 1 (the TFLite
//       frontend reshapes without keep_dims). The output starts at the type's lowest
//       (max), highest (min) or 0 (sum, mean) and takes the input in row-major order,
//       as TFLM's ReduceGeneric does; mean divides each sum by the count last.
//   argmax, argmin
//       `axis`, `dtype` ("int32" or "int64"): the index of the first largest (smallest)
//       element along the axis, which is removed.
//   cumsum
//       `axis`, `exclusive`, `reverse`: running sums along the axis (TFLite's CUMSUM).
#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "ops/op_util.h"

namespace mtir {
namespace ops {
namespace {

using json = nlohmann::json;

std::set<int64_t> read_axes(const std::string& op, const AttrReader& r, int64_t rank) {
  const json* a = r.raw("axis");
  if (!a || !a->is_array() || a->empty()) r.bad("axis", "a non-empty list of axes");
  std::set<int64_t> axes;
  for (const auto& v : *a) {
    if (!v.is_number_integer()) r.bad("axis", "a non-empty list of axes");
    axes.insert(normalize_axis(op, "axis", v.get<int64_t>(), rank));
  }
  return axes;
}

TensorType reduce_infer(const std::string& op, const std::vector<TensorType>& in, const json& attrs) {
  AttrReader r(op, attrs, {"axis"});
  check_inputs(op, in, 1, {"data"}, op == "reduce_mean" ? Dtypes::kFloat : Dtypes::kNumeric);
  std::vector<int64_t> shape = in[0].shape;
  for (int64_t a : read_axes(op, r, static_cast<int64_t>(shape.size()))) shape[static_cast<size_t>(a)] = 1;
  return TensorType{in[0].dtype, shape};
}

OpDef reduce_op(const std::string& op) {
  OpDef d;
  d.name = op;
  d.infer = [op](const std::vector<TensorType>& in, const json& attrs) { return reduce_infer(op, in, attrs); };
  d.build = [op](const std::string& fname, const std::vector<TensorType>& in, const TensorType& out,
                 const json& attrs) {
    AttrReader r(op, attrs, {"axis"});
    const std::set<int64_t> axes = read_axes(op, r, static_cast<int64_t>(in[0].shape.size()));
    const DataType t = in[0].dtype;
    FuncBuilder fb;
    Buffer x = fb.param("data", in[0].shape, t);
    Buffer o = fb.param("out", out.shape, t);
    // The type's lowest / highest value (64-bit integers are refused: their highest
    // value is not a double).
    const double inf = std::numeric_limits<double>::infinity();
    const double bits = t.bits(), lowest = t.is_uint() ? 0 : -std::ldexp(1.0, t.bits() - 1);
    const double highest = t.is_uint() ? std::ldexp(1.0, t.bits()) - 1 : std::ldexp(1.0, t.bits() - 1) - 1;
    double init = 0;
    if (op == "reduce_max") init = t.is_float() ? -inf : lowest;
    if (op == "reduce_min") init = t.is_float() ? inf : highest;
    if (!t.is_float() && bits > 32 && (op == "reduce_max" || op == "reduce_min"))
      fail(op, "64-bit integer data is not supported");
    LoopNest onest;
    std::vector<Expr> oidx = onest.axes(out.shape, "o");
    Stmt first = onest.wrap(store(o, cv(t, init), oidx));
    LoopNest inest;
    std::vector<Expr> iidx = inest.axes(in[0].shape, "i");
    std::vector<Expr> target = iidx;
    for (int64_t a : axes) target[static_cast<size_t>(a)] = ci(0);
    Expr acc = load(o, target), v = load(x, iidx);
    // TFLM's max and min keep the current value unless the new one is strictly beyond it.
    Expr next = op == "reduce_max" ? Select(Binary(ExprKind::GT, v, acc), v, acc)
                : op == "reduce_min" ? Select(lt(v, acc), v, acc)
                                     : add(acc, v);
    std::vector<Stmt> body = {first, inest.wrap(store(o, next, target))};
    if (op == "reduce_mean") {
      int64_t count = 1;
      for (int64_t a : axes) count *= in[0].shape[static_cast<size_t>(a)];
      LoopNest mnest;
      std::vector<Expr> midx = mnest.axes(out.shape, "m");
      body.push_back(mnest.wrap(store(o, fdiv(load(o, midx), cv(t, static_cast<double>(count))), midx)));
    }
    return fb.finish(fname, SeqStmt(body));
  };
  return d;
}

// ---- argmax, argmin --------------------------------------------------------------------

struct ArgParams {
  int64_t axis;
  DataType dtype;
};

ArgParams arg_params(const std::string& op, const std::vector<TensorType>& in, const json& attrs) {
  AttrReader r(op, attrs, {"axis", "dtype"});
  check_inputs(op, in, 1, {"data"}, Dtypes::kNumeric);
  if (in[0].shape.empty()) fail(op, "input 'data' must have at least one dimension");
  ArgParams p;
  p.axis = normalize_axis(op, "axis", r.get_int("axis", 0), static_cast<int64_t>(in[0].shape.size()));
  p.dtype = *DataType::parse(r.get_string("dtype", "int32", {"int32", "int64"}));
  return p;
}

OpDef arg_op(const std::string& op) {
  OpDef d;
  d.name = op;
  d.infer = [op](const std::vector<TensorType>& in, const json& attrs) {
    ArgParams p = arg_params(op, in, attrs);
    std::vector<int64_t> shape = in[0].shape;
    shape.erase(shape.begin() + p.axis);
    return TensorType{p.dtype, shape};
  };
  d.build = [op](const std::string& fname, const std::vector<TensorType>& in, const TensorType& out,
                 const json& attrs) {
    const ArgParams p = arg_params(op, in, attrs);
    const DataType t = in[0].dtype;
    FuncBuilder fb;
    Buffer x = fb.param("data", in[0].shape, t);
    Buffer o = fb.param("out", out.shape, p.dtype);
    Buffer best = scratch("best", {1}, t);
    LoopNest onest;
    std::vector<Expr> oidx = onest.axes(out.shape, "o");
    auto at = [&](Expr k) {
      std::vector<Expr> idx = oidx;
      idx.insert(idx.begin() + p.axis, std::move(k));
      return load(x, idx);
    };
    Var k = MakeVar("k", kI32);
    Expr v = at(k);
    Expr better = op == "argmax" ? Binary(ExprKind::GT, v, load(best, {ci(0)})) : lt(v, load(best, {ci(0)}));
    Stmt take = IfThenElse(better, SeqStmt({store(best, v, {ci(0)}), store(o, Cast(p.dtype, k), oidx)}));
    const int64_t n = in[0].shape[static_cast<size_t>(p.axis)];
    Stmt scan = For(k, ci(1), ci(n - 1), ForKind::kSerial, take);
    Stmt init = SeqStmt({store(best, at(ci(0)), {ci(0)}), store(o, cv(p.dtype, 0), oidx)});
    return fb.finish(fname, Allocate(best, "global", onest.wrap(n > 1 ? SeqStmt({init, scan}) : init)));
  };
  return d;
}

// ---- cumsum ----------------------------------------------------------------------------

OpDef cumsum_op() {
  const std::string op = "cumsum";
  OpDef d;
  d.name = op;
  auto check = [op](const std::vector<TensorType>& in, const json& attrs) {
    AttrReader r(op, attrs, {"axis", "exclusive", "reverse"});
    check_inputs(op, in, 1, {"data"}, Dtypes::kNumeric);
    if (in[0].shape.empty()) fail(op, "input 'data' must have at least one dimension");
    return normalize_axis(op, "axis", r.get_int("axis", 0), static_cast<int64_t>(in[0].shape.size()));
  };
  d.infer = same_type_as_input(check);
  d.build = [op, check](const std::string& fname, const std::vector<TensorType>& in, const TensorType& out,
                        const json& attrs) {
    const int64_t axis = check(in, attrs);
    AttrReader r(op, attrs, {"axis", "exclusive", "reverse"});
    const bool exclusive = r.get_bool("exclusive", false), reverse = r.get_bool("reverse", false);
    const DataType t = in[0].dtype;
    FuncBuilder fb;
    Buffer x = fb.param("data", in[0].shape, t);
    Buffer o = fb.param("out", out.shape, t);
    Buffer acc = scratch("acc", {1}, t);
    std::vector<int64_t> outer_shape = in[0].shape;
    outer_shape[static_cast<size_t>(axis)] = 1;
    LoopNest onest;
    std::vector<Expr> oidx = onest.axes(outer_shape, "o");
    const int64_t n = in[0].shape[static_cast<size_t>(axis)];
    Var k = MakeVar("k", kI32);
    std::vector<Expr> idx = oidx;
    idx[static_cast<size_t>(axis)] = reverse ? sub(ci(n - 1), k) : Expr(k);
    Stmt add_in = store(acc, add(load(acc, {ci(0)}), load(x, idx)), {ci(0)});
    Stmt write = store(o, load(acc, {ci(0)}), idx);
    Stmt step = exclusive ? SeqStmt({write, add_in}) : SeqStmt({add_in, write});
    Stmt body = SeqStmt({store(acc, cv(t, 0), {ci(0)}), For(k, ci(0), ci(n), ForKind::kSerial, step)});
    return fb.finish(fname, Allocate(acc, "global", onest.wrap(body)));
  };
  return d;
}

}  // namespace

void register_reduce_ops(std::vector<OpDef>& ops) {
  for (const char* op : {"reduce_max", "reduce_min", "reduce_sum", "reduce_mean"}) ops.push_back(reduce_op(op));
  ops.push_back(arg_op("argmax"));
  ops.push_back(arg_op("argmin"));
  ops.push_back(cumsum_op());
}

}  // namespace ops
}  // namespace mtir
