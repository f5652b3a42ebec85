// SVDF (TFLite's singular-value-decomposition filter, a stateful layer of keyword
// spotters): svdf in float32 and qsvdf in TFLM's integer form. Inputs: data (batch,
// input_size), weights_feature (filters, input_size), weights_time (filters, memory),
// an optional bias (units), then the state (batch, memory * filters), which the kernel
// updates in place (OpDef::writes_inputs): the state of each filter is its last
// `memory` feature activations, oldest first.
//
// One step, as TFLM's reference kernels (micro/kernels/svdf_common.cc) compute it:
//   1. the whole state moves left by one element (the oldest activation drops out);
//   2. each filter's newest activation is its feature dot product with the data (int:
//      rescaled by input_scale * weights_feature_scale / state_scale, the state's zero
//      point added, saturated to the state's type);
//   3. each filter's time dot product with its state (int: state minus its zero point,
//      in int32);
//   4. each unit: bias + the sum of its `rank` filters' time products, in that order;
//      float: the fused activation; int: rescaled by state_scale * weights_time_scale /
//      output_scale, plus the output zero point, saturated to int8 (TFLM's integer
//      kernel applies no activation beyond that).
// Both effective scales are formed in float32, as TFLM's Prepare does. The time loop
// stays a loop of the kernel.
#include <limits>

#include "ops/quant_util.h"

namespace mtir {
namespace ops {
namespace {

using json = nlohmann::json;

struct SvdfShape {
  int64_t batch, input_size, filters, memory, rank, units;
  bool has_bias;
};

// The shapes of every input, checked; `state_type` is the state's dtype.
SvdfShape svdf_shape(const std::string& op, const std::vector<TensorType>& in, int64_t rank) {
  if (in.size() != 4 && in.size() != 5)
    fail(op, "expected 4 or 5 inputs (data, weights_feature, weights_time, [bias,] state), got " +
                 std::to_string(in.size()));
  SvdfShape s;
  s.has_bias = in.size() == 5;
  const TensorType& state = in.back();
  check_rank(op, in, 0, "data", 2);
  check_rank(op, in, 1, "weights_feature", 2);
  check_rank(op, in, 2, "weights_time", 2);
  check_rank(op, in, in.size() - 1, "state", 2);
  for (const auto& t : in)
    for (int64_t d : t.shape)
      if (d <= 0) fail(op, "every dimension must be positive, got " + t.str());
  s.batch = in[0].shape[0];
  s.input_size = in[0].shape[1];
  s.filters = in[1].shape[0];
  s.memory = in[2].shape[1];
  s.rank = rank;
  if (rank <= 0) fail(op, "rank must be positive, got " + std::to_string(rank));
  if (s.filters % rank != 0)
    fail(op, "weights_feature has " + std::to_string(s.filters) + " filters, not a multiple of the rank " +
                 std::to_string(rank));
  s.units = s.filters / rank;
  if (in[1].shape[1] != s.input_size)
    fail(op, "weights_feature is " + in[1].str() + " but the data has " + std::to_string(s.input_size) + " features");
  if (in[2].shape[0] != s.filters)
    fail(op, "weights_time has " + std::to_string(in[2].shape[0]) + " rows, weights_feature " +
                 std::to_string(s.filters) + " filters");
  if (s.has_bias && (in[3].shape.size() != 1 || in[3].shape[0] != s.units))
    fail(op, "bias must have shape (" + std::to_string(s.units) + ",), got " + shape_str(in[3].shape));
  if (state.shape[0] != s.batch || state.shape[1] != s.memory * s.filters)
    fail(op, "state must have shape (" + std::to_string(s.batch) + ", " + std::to_string(s.memory * s.filters) +
                 ") (batch, memory * filters), got " + shape_str(state.shape));
  return s;
}

std::vector<size_t> state_is_last(const json&, size_t num_inputs) {
  return num_inputs ? std::vector<size_t>{num_inputs - 1} : std::vector<size_t>{};
}

// Step 1: state[i] = state[i + 1] over the flat state, in increasing i.
Stmt shift_state(const Buffer& state, const SvdfShape& s) {
  const int64_t n = s.batch * s.memory * s.filters;
  if (n < 2) return Evaluate(ci(0));
  Var i = ivar("i");
  Expr next = add(i, ci(1));
  Stmt move = store(state, load(state, {floordiv(next, ci(s.memory * s.filters)), floormod(next, ci(s.memory * s.filters))}),
                    {floordiv(i, ci(s.memory * s.filters)), floormod(i, ci(s.memory * s.filters))});
  return For(i, ci(0), ci(n - 1), ForKind::kSerial, move);
}

// ---- svdf (float32) -------------------------------------------------------------------

const std::vector<std::string> kSvdfAttrs = {"rank", "activation"};

TensorType svdf_infer(const std::vector<TensorType>& in, const json& attrs) {
  AttrReader r("svdf", attrs, kSvdfAttrs);
  read_activation(r);
  SvdfShape s = svdf_shape("svdf", in, r.get_int("rank", 1));
  for (size_t i = 0; i < in.size(); ++i)
    if (in[i].dtype != DataType::Float(32))
      fail("svdf", "every input must be float32 (qsvdf is the integer form), input " + std::to_string(i) + " is " +
                       in[i].str());
  return TensorType{DataType::Float(32), {s.batch, s.units}};
}

Expr float_activation(const std::string& act, Expr x) {
  if (act == "relu") return max_(x, cf(0));
  if (act == "relu6") return min_(max_(x, cf(0)), cf(6));
  if (act == "relu_n1_to_1") return min_(max_(x, cf(-1)), cf(1));
  return x;
}

PrimFunc svdf_build(const std::string& fname, const std::vector<TensorType>& in, const TensorType& out,
                    const json& attrs) {
  AttrReader r("svdf", attrs, kSvdfAttrs);
  const std::string act = read_activation(r);
  const SvdfShape s = svdf_shape("svdf", in, r.get_int("rank", 1));
  FuncBuilder fb;
  Buffer data = fb.param("data", in[0].shape);
  Buffer wf = fb.param("weights_feature", in[1].shape);
  Buffer wt = fb.param("weights_time", in[2].shape);
  Buffer bias = s.has_bias ? fb.param("bias", in[3].shape) : nullptr;
  Buffer state = fb.param("state", in.back().shape);
  Buffer o = fb.param("out", out.shape);
  Buffer acc = scratch("acc", {1});
  Buffer sum = scratch("sum", {1});
  const Expr zero = ci(0);
  const Expr newest = ci(s.memory - 1);

  // Step 2: the feature dot products, into each filter's newest state element.
  LoopNest feat, feat_red;
  Expr b = feat.axis("b", s.batch), f = feat.axis("f", s.filters);
  Expr k = feat_red.axis("k", s.input_size);
  Expr slot = add(mul(f, ci(s.memory)), newest);
  Stmt features = feat.wrap(SeqStmt({store(acc, cf(0), {zero}),
                                     feat_red.wrap(store(acc, add(load(acc, {zero}), mul(load(wf, {f, k}), load(data, {b, k}))), {zero})),
                                     store(state, load(acc, {zero}), {b, slot})}));

  // Steps 3 and 4: per unit, bias plus each of its filters' time products in order.
  LoopNest unit, rank_loop, time;
  Expr ub = unit.axis("b", s.batch), u = unit.axis("u", s.units);
  Expr rk = rank_loop.axis("r", s.rank);
  Expr j = time.axis("j", s.memory);
  Expr filter = add(mul(u, ci(s.rank)), rk);
  Stmt time_sum = SeqStmt({store(sum, cf(0), {zero}),
                           time.wrap(store(sum, add(load(sum, {zero}), mul(load(wt, {filter, j}),
                                                                            load(state, {ub, add(mul(filter, ci(s.memory)), j)}))),
                                           {zero})),
                           store(acc, add(load(acc, {zero}), load(sum, {zero})), {zero})});
  Stmt units = unit.wrap(SeqStmt({store(acc, bias ? load(bias, {u}) : cf(0), {zero}), rank_loop.wrap(time_sum),
                                  store(o, float_activation(act, load(acc, {zero})), {ub, u})}));
  Stmt body = SeqStmt({shift_state(state, s), features, units});
  return fb.finish(fname, Allocate(acc, "local", Allocate(sum, "local", body)));
}

// ---- qsvdf (TFLM's integer SVDF) -----------------------------------------------------------

const std::vector<std::string> kQsvdfAttrs = {"rank",          "input_scale",      "input_zero_point",
                                              "weights_feature_scale", "weights_time_scale", "state_scale",
                                              "state_zero_point",      "output_scale",       "output_zero_point"};

struct QsvdfParams {
  SvdfShape shape;
  DataType state_type;
  int32_t input_zero_point, state_zero_point, output_zero_point;
  QuantMultiplier feature, output;  // effective_scale_1 and effective_scale_2
};

QsvdfParams qsvdf_params(const std::vector<TensorType>& in, const json& attrs) {
  const std::string op = "qsvdf";
  // No activation: TFLM's integer kernel applies none (the output's range carries it).
  AttrReader r(op, attrs, kQsvdfAttrs);
  QsvdfParams p;
  p.shape = svdf_shape(op, in, r.get_int("rank", 1));
  check_dtype(op, in, 0, "data", kI8);
  check_dtype(op, in, 1, "weights_feature", kI8);
  p.state_type = in.back().dtype;
  if (p.state_type != kI8 && p.state_type != kI16) fail(op, "the state must be int8 or int16, got " + in.back().str());
  if (in[2].dtype != p.state_type)
    fail(op, "weights_time (" + in[2].str() + ") must have the state's type (" + p.state_type.str() + ")");
  if (p.shape.has_bias) check_dtype(op, in, 3, "bias", kI32);
  const double si = read_scale(op, r, "input_scale"), swf = read_scale(op, r, "weights_feature_scale");
  const double swt = read_scale(op, r, "weights_time_scale"), ss = read_scale(op, r, "state_scale");
  const double so = read_scale(op, r, "output_scale");
  p.input_zero_point = read_zero_point(r, "input_zero_point");
  p.output_zero_point = read_zero_point(r, "output_zero_point");
  const int64_t szp = r.get_int("state_zero_point", 0);
  const int64_t lo = p.state_type == kI8 ? -128 : -32768, hi = p.state_type == kI8 ? 127 : 32767;
  if (szp < lo || szp > hi) r.bad("state_zero_point", "an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  p.state_zero_point = static_cast<int32_t>(szp);
  // TFLM's Prepare multiplies and divides the float32 scales in float32.
  const float m1 = static_cast<float>(si) * static_cast<float>(swf) / static_cast<float>(ss);
  const float m2 = static_cast<float>(ss) * static_cast<float>(swt) / static_cast<float>(so);
  p.feature = quantize_multiplier(static_cast<double>(m1), op, "input_scale * weights_feature_scale / state_scale");
  p.output = quantize_multiplier(static_cast<double>(m2), op, "state_scale * weights_time_scale / output_scale");
  return p;
}

TensorType qsvdf_infer(const std::vector<TensorType>& in, const json& attrs) {
  QsvdfParams p = qsvdf_params(in, attrs);
  return TensorType{kI8, {p.shape.batch, p.shape.units}};
}

PrimFunc qsvdf_build(const std::string& fname, const std::vector<TensorType>& in, const TensorType& out,
                     const json& attrs) {
  const QsvdfParams p = qsvdf_params(in, attrs);
  const SvdfShape& s = p.shape;
  FuncBuilder fb;
  Buffer data = fb.param("data", in[0].shape, kI8);
  Buffer wf = fb.param("weights_feature", in[1].shape, kI8);
  Buffer wt = fb.param("weights_time", in[2].shape, p.state_type);
  Buffer bias = s.has_bias ? fb.param("bias", in[3].shape, kI32) : nullptr;
  Buffer state = fb.param("state", in.back().shape, p.state_type);
  Buffer o = fb.param("out", out.shape, kI8);
  Buffer acc = scratch("acc", {1}, kI32);
  Buffer sum = scratch("sum", {1}, kI32);
  const Expr zero = ci(0);
  const int64_t state_min = p.state_type == kI8 ? -128 : -32768, state_max = p.state_type == kI8 ? 127 : 32767;

  // Step 2: int32 feature dot products, rescaled into the state's type.
  LoopNest feat, feat_red;
  Expr b = feat.axis("b", s.batch), f = feat.axis("f", s.filters);
  Expr k = feat_red.axis("k", s.input_size);
  Expr x = sub(Cast(kI32, load(data, {b, k})), ci(p.input_zero_point));
  Expr activation = add(multiply_by_quantized_multiplier(load(acc, {zero}), p.feature), ci(p.state_zero_point));
  Stmt features = feat.wrap(SeqStmt(
      {store(acc, ci(0), {zero}),
       feat_red.wrap(store(acc, add(load(acc, {zero}), mul(Cast(kI32, load(wf, {f, k})), x)), {zero})),
       store(state, Cast(p.state_type, min_(max_(activation, ci(state_min)), ci(state_max))),
             {b, add(mul(f, ci(s.memory)), ci(s.memory - 1))})}));

  // Steps 3 and 4 (integer sums: the order of TFLM's scratch does not change them).
  LoopNest unit, rank_loop, time;
  Expr ub = unit.axis("b", s.batch), u = unit.axis("u", s.units);
  Expr rk = rank_loop.axis("r", s.rank);
  Expr j = time.axis("j", s.memory);
  Expr filter = add(mul(u, ci(s.rank)), rk);
  Expr st = sub(Cast(kI32, load(state, {ub, add(mul(filter, ci(s.memory)), j)})), ci(p.state_zero_point));
  Stmt time_sum = SeqStmt({store(sum, ci(0), {zero}),
                           time.wrap(store(sum, add(load(sum, {zero}), mul(Cast(kI32, load(wt, {filter, j})), st)), {zero})),
                           store(acc, add(load(acc, {zero}), load(sum, {zero})), {zero})});
  Expr result = multiply_by_quantized_multiplier(load(acc, {zero}), p.output);
  Stmt units = unit.wrap(SeqStmt({store(acc, bias ? load(bias, {u}) : ci(0), {zero}), rank_loop.wrap(time_sum),
                                  store(o, saturate_int8(result, p.output_zero_point, ActBounds{}), {ub, u})}));
  Stmt body = SeqStmt({shift_state(state, s), features, units});
  return fb.finish(fname, Allocate(acc, "local", Allocate(sum, "local", body)));
}

OpDef svdf_op(const std::string& name, decltype(OpDef::infer) infer, decltype(OpDef::build) build) {
  OpDef d;
  d.name = name;
  d.infer = std::move(infer);
  d.build = std::move(build);
  d.writes_inputs = state_is_last;
  return d;
}

}  // namespace

void register_svdf_ops(std::vector<OpDef>& ops) {
  ops.push_back(svdf_op("svdf", svdf_infer, svdf_build));
  ops.push_back(svdf_op("qsvdf", qsvdf_infer, qsvdf_build));
}

}  // namespace ops
}  // namespace mtir
