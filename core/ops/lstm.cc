// lstm (float32) and qlstm (int8 activations and weights, int16 cell state): TFLite Micro's
// UNIDIRECTIONAL_SEQUENCE_LSTM (kernels/unidirectional_sequence_lstm.cc, lstm_eval.h,
// lstm_eval_common.cc), the standard LSTM it evaluates: no CIFG, peephole, projection or
// layer norm (TFLM refuses those tensors too). One step per batch row and time step, in
// time order, the time loop a loop of the kernel; the hidden and cell states are updated in
// place (graph state: they carry over from run to run, as TFLM's variable tensors do):
//   gate_g = act_g(W_g x_t + b_g + R_g h)   g = input, forget, cell, output (TFLite's order)
//   c = f * c + i * cell_gate (clipped to +-cell_clip when cell_clip > 0)
//   h = tanh(c) * o, and h is the step's output.
// The gate activations are sigmoid, the cell gate's tanh (the only one a .tflite can name).
// qlstm is TFLM's integer form: each gate's two fully-connected products are int8 x int8
// with int32 accumulators, each requantized to int16 Q3.12 (scale 2^-12) and added with
// int16 saturation; sigmoid and tanh are TFLite's int16 ones (int16_activation.h), giving
// Q0.15; the products f * c, i * g and tanh(c) * o are TFLite's int16 MUL, requantized to
// the cell state (int16, a power-of-two scale) and the hidden state (int8).
// On int16 data qlstm is TFLM's 16x8 LSTM (EvalLstm<int16_t, int8_t, int16_t, int64_t>):
// the same steps, but the products are int16 x int8 in int64 accumulators with an int64
// bias, requantized by TFLM's 64-bit MultiplyByQuantizedMultiplier (int16 FullyConnected),
// the zero points are 0 and the hidden state is int16.
#include <algorithm>
#include <cmath>
#include <functional>

#include "ops/int16_activation.h"
#include "ops/quant_util.h"

namespace mtir {
namespace ops {
namespace {

using json = nlohmann::json;

const std::vector<std::string> kInputNames = {"data",   "input_weights", "recurrent_weights", "bias",
                                              "hidden_state", "cell_state", "sigmoid_table"};
const std::vector<std::string> kFloatAttrs = {"time_major", "cell_clip"};
const std::vector<std::string> kQuantAttrs = {"time_major",     "cell_clip",
                                              "input_scale",    "input_weight_scales",
                                              "recurrent_weight_scales", "hidden_scale", "hidden_zero_point",
                                              "cell_scale"};
const char* const kGateNames[4] = {"input", "forget", "cell", "output"};

struct Lstm {
  int64_t batch = 0, time = 0, input = 0, state = 0;
  bool time_major = false;
  double cell_clip = 0;   // the float32 value; 0 = no clipping
  // qlstm only:
  bool wide = false;  // 16x8: int16 data, int64 accumulators and bias
  int32_t hidden_zero_point = 0;
  QuantMultiplier input_fc[4], recurrent_fc[4];  // to Q3.12
  QuantMultiplier forget_cell, input_cell, hidden;
  int cell_power = 0;              // cell scale = 2^cell_power
  int32_t quantized_cell_clip = 0;
};

std::vector<double> read_scales(const std::string& op, const AttrReader& r, const std::string& key) {
  const json* v = r.raw(key);
  if (!v || !v->is_array() || v->size() != 4) r.bad(key, "a list of 4 scales (input, forget, cell, output gates)");
  std::vector<double> out;
  for (const auto& e : *v) {
    if (!e.is_number() || !(e.get<double>() > 0) || !std::isfinite(e.get<double>()))
      r.bad(key, "finite numbers > 0");
    out.push_back(e.get<double>());
  }
  (void)op;
  return out;
}

Lstm lstm_params(const std::string& op, const std::vector<TensorType>& in, const json& attrs) {
  const bool q = op == "qlstm";
  AttrReader r(op, attrs, q ? kQuantAttrs : kFloatAttrs);
  std::vector<std::string> names(kInputNames.begin(), kInputNames.end() - (q ? 0 : 1));
  if (in.size() != names.size()) check_inputs(op, in, names.size(), names, Dtypes::kNumeric);  // names the count
  for (size_t i = 0; i < in.size(); ++i) check_inputs(op, {in[i]}, 1, {names[i]}, Dtypes::kNumeric);
  Lstm p;
  p.time_major = r.get_bool("time_major", false);
  p.cell_clip = r.get_float("cell_clip", 0);
  if (!(p.cell_clip >= 0) || !std::isfinite(p.cell_clip)) r.bad("cell_clip", "a finite number >= 0 (0: no clipping)");
  check_rank(op, in, 0, "data", 3);
  const auto& d = in[0].shape;
  p.time = p.time_major ? d[0] : d[1];
  p.batch = p.time_major ? d[1] : d[0];
  p.input = d[2];
  check_rank(op, in, 1, "input_weights", 3);
  p.state = in[1].shape[1];
  auto want = [&](size_t i, std::vector<int64_t> shape) {
    if (in[i].shape != shape)
      fail(op, "input '" + names[i] + "' has shape " + shape_str(in[i].shape) + "; " + shape_str(shape) +
                   " is required (4 gates: input, forget, cell, output; " + std::to_string(p.state) + " cells; " +
                   std::to_string(p.input) + " inputs; batch " + std::to_string(p.batch) + ")");
  };
  want(1, {4, p.state, p.input});
  want(2, {4, p.state, p.state});
  p.wide = q && in[0].dtype == kI16;
  if (q && !p.wide) want(3, {2, 4, p.state});
  else want(3, {4, p.state});
  want(4, {p.batch, p.state});
  want(5, {p.batch, p.state});
  if (!q) {
    for (size_t i = 0; i < names.size(); ++i) check_dtype(op, in, i, names[i], kF32);
    return p;
  }
  const DataType act = p.wide ? kI16 : kI8;
  const DataType types[7] = {act, kI8, kI8, p.wide ? kI64 : kI32, act, kI16, DataType::UInt(16)};
  for (size_t i = 0; i < names.size(); ++i) check_dtype(op, in, i, names[i], types[i]);
  want(6, {256});
  double input_scale = read_scale(op, r, "input_scale");
  double hidden_scale = read_scale(op, r, "hidden_scale");
  double cell_scale = read_scale(op, r, "cell_scale");
  p.hidden_zero_point = read_zero_point(r, "hidden_zero_point", act);
  if (p.wide && p.hidden_zero_point != 0)
    r.bad("hidden_zero_point", "0 with int16 data (TFLite's int16x8 quantization is symmetric)");
  std::vector<double> ws = read_scales(op, r, "input_weight_scales");
  std::vector<double> rs = read_scales(op, r, "recurrent_weight_scales");
  // TFLM's gate products go to int16 with scale 2^-12 (Q3.12, the activations' input).
  const double q3_12 = std::ldexp(1.0, -12), q0_15 = std::ldexp(1.0, -15);
  for (int g = 0; g < 4; ++g) {
    std::string gate = kGateNames[g];
    p.input_fc[g] = quantize_multiplier(input_scale * ws[static_cast<size_t>(g)] / q3_12, op,
                                        "input_scale * input_weight_scales[" + gate + "] / 2^-12");
    p.recurrent_fc[g] = quantize_multiplier(hidden_scale * rs[static_cast<size_t>(g)] / q3_12, op,
                                            "hidden_scale * recurrent_weight_scales[" + gate + "] / 2^-12");
    // TFLM's 64-bit requantization shifts right by 15 - shift (it asserts shift < 8).
    if (p.wide && std::max(p.input_fc[g].shift, p.recurrent_fc[g].shift) >= 8)
      fail(op, "the " + gate + " gate's requantization multiplier is 128 or more (TFLM's int64 requantization "
                               "of int16 data takes less)");
  }
  p.forget_cell = quantize_multiplier(q0_15 * cell_scale / cell_scale, op, "2^-15");
  p.input_cell = quantize_multiplier(q0_15 * q0_15 / cell_scale, op, "2^-30 / cell_scale");
  p.hidden = quantize_multiplier(q0_15 * q0_15 / hidden_scale, op, "2^-30 / hidden_scale");
  // TFLM's CheckedLog2 (float32, rounded): the tanh of the cell state assumes 2^power.
  const float log2_scale = std::log(static_cast<float>(cell_scale)) * (1.0f / std::log(2.0f));
  p.cell_power = static_cast<int>(std::round(log2_scale));
  if (std::abs(log2_scale - std::round(log2_scale)) >= 1e-3f)
    r.bad("cell_scale", "a power of two (TFLite's integer LSTM takes the cell state's tanh at 2^n)");
  if (p.cell_power > 12 || p.cell_power < -30) r.bad("cell_scale", "2^n with n in [-30, 12]");
  if (p.cell_clip > 0)
    p.quantized_cell_clip = static_cast<int32_t>(static_cast<int16_t>(
        std::min(std::max(static_cast<double>(static_cast<float>(p.cell_clip)) / cell_scale, -32768.0), 32767.0)));
  return p;
}

TensorType lstm_infer(const std::string& op, const std::vector<TensorType>& in, const json& attrs) {
  Lstm p = lstm_params(op, in, attrs);
  std::vector<int64_t> shape = p.time_major ? std::vector<int64_t>{p.time, p.batch, p.state}
                                            : std::vector<int64_t>{p.batch, p.time, p.state};
  return TensorType{in[0].dtype, shape};
}

Expr clamp(Expr v, int64_t lo, int64_t hi) { return min_(max_(std::move(v), ci(lo)), ci(hi)); }
Expr clamp16(Expr v) { return clamp(std::move(v), -32768, 32767); }
Expr i32(Expr v) { return Cast(kI32, std::move(v)); }

// TFLM's float sigmoid (reference_ops::Logistic): 1 above 16.619047, exp(x) below -9.
Expr float_sigmoid(Expr x) {
  Expr mid = fdiv(cf(1.0), add(cf(1.0), call("exp", {sub(cf(0.0), x)})));
  return Select(Binary(ExprKind::GT, x, cf(16.619047164916992)), cf(1.0),
                Select(lt(x, cf(-9.0)), call("exp", {x}), mid));
}

// acc[slot] += term(k) for k in [0, n): four terms per iteration (unrolled), then the rest.
Stmt dot(const Buffer& acc, int slot, int64_t n, const std::string& name, const std::function<Expr(Expr)>& term) {
  auto update = [&](Expr k) { return store(acc, add(load(acc, {ci(slot)}), term(k)), {ci(slot)}); };
  std::vector<Stmt> parts;
  if (n >= 4) {
    Var ko = ivar(name + "o"), ki = ivar(name + "i");
    Stmt inner = For(ki, ci(0), ci(4), ForKind::kUnrolled, update(add(mul(ko, ci(4)), ki)));
    parts.push_back(n / 4 == 1 ? For(ko, ci(0), ci(1), ForKind::kSerial, inner)
                               : For(ko, ci(0), ci(n / 4), ForKind::kSerial, inner));
  }
  if (n % 4) {
    Var kr = ivar(name + "r");
    parts.push_back(For(kr, ci(0), ci(n % 4), ForKind::kUnrolled, update(add(ci(n / 4 * 4), kr))));
  }
  return SeqStmt(parts);
}

// The buffers of one lstm PrimFunc: parameters, then the step's scratch.
struct LstmBuffers {
  Buffer x, wx, wh, bias, h, c, table, o;
  Buffer gates, acc;  // the four gates of one step; the two accumulators of a gate
};

// Gate g of step (b, t) for every cell: the input and recurrent dot products, then the
// gate's activation into gates[g].
Stmt lstm_gate(const Lstm& p, const LstmBuffers& B, bool q, int g, const Expr& b, const Expr& t) {
  // The integer products in int32 (|int16 x int8| < 2^22), summed in int64 by 16x8.
  auto product = [&](Expr w, Expr v) {
    if (!q) return mul(std::move(w), std::move(v));
    Expr prod = mul(i32(std::move(w)), i32(std::move(v)));
    return p.wide ? Cast(kI64, prod) : prod;
  };
  std::string n = std::string(1, kGateNames[g][0]);
  LoopNest cells;
  Expr s = cells.axis("s_" + n, p.state);
  Stmt in_dot = dot(B.acc, 0, p.input, "k_" + n, [&](Expr k) {
    Expr xv = load(B.x, p.time_major ? std::vector<Expr>{t, b, k} : std::vector<Expr>{b, t, k});
    return product(load(B.wx, {ci(g), s, k}), xv);
  });
  Stmt rec_dot = dot(B.acc, 1, p.state, "j_" + n,
                     [&](Expr j) { return product(load(B.wh, {ci(g), s, j}), load(B.h, {b, j})); });
  Expr a0 = load(B.acc, {ci(0)}), a1 = load(B.acc, {ci(1)});
  Stmt init0, init1, gate;
  if (q) {
    // TFLM's FullyConnected int8 -> int16 for each product; the zero points are folded
    // into the two bias rows (bias[0]: b - zx * sum(W), bias[1]: -zh * sum(R)). 16x8:
    // int16 -> int16 with the int64 bias on the input product, none on the recurrent one.
    init0 = store(B.acc, p.wide ? load(B.bias, {ci(g), s}) : load(B.bias, {ci(0), ci(g), s}), {ci(0)});
    init1 = store(B.acc, p.wide ? IntImm(kI64, 0) : load(B.bias, {ci(1), ci(g), s}), {ci(1)});
    Var pre = ivar("pre_" + n);
    auto requantize = [&](Expr acc, const QuantMultiplier& m) {
      return clamp16(p.wide ? multiply_by_quantized_multiplier_wide(std::move(acc), m)
                            : multiply_by_quantized_multiplier(std::move(acc), m));
    };
    Expr gx = requantize(a0, p.input_fc[g]);
    Expr gh = requantize(a1, p.recurrent_fc[g]);
    // Q3.12 in: sigmoid with multiplier 3 (TFLM passes 0, the power-of-two case), tanh
    // at cell_state_scale_power -12 (no shift, multiplier 3).
    auto use = [&](Expr y) { return store(B.gates, Cast(kI16, y), {ci(g), s}); };
    Stmt activation = g == 2 ? int16_tanh("act_" + n, pre, B.table, 0, 0, use)
                             : int16_logistic("act_" + n, pre, B.table, 0, 0, use);
    gate = LetStmt(pre, clamp16(add(gx, gh)), activation);
  } else {
    // TFLM's float FullyConnected: the sum, then the bias; the recurrent product has none.
    init0 = store(B.acc, cf(0.0), {ci(0)});
    init1 = store(B.acc, cf(0.0), {ci(1)});
    Expr pre = add(add(a0, load(B.bias, {ci(g), s})), a1);
    gate = store(B.gates, g == 2 ? call("tanh", {pre}) : float_sigmoid(pre), {ci(g), s});
  }
  return cells.wrap(SeqStmt({init0, in_dot, init1, rec_dot, gate}));
}

// The cell and hidden state updates of step (b, t), cell by cell, and the step's output.
Stmt lstm_state_update(const Lstm& p, const LstmBuffers& B, bool q, const Expr& b, const Expr& t) {
  LoopNest cells;
  Expr s = cells.axis("s", p.state);
  Expr ig = load(B.gates, {ci(0), s}), fg = load(B.gates, {ci(1), s}), cg = load(B.gates, {ci(2), s}),
       og = load(B.gates, {ci(3), s});
  Expr cv_ = load(B.c, {b, s});
  std::vector<Expr> out_idx = p.time_major ? std::vector<Expr>{t, b, s} : std::vector<Expr>{b, t, s};
  if (!q) {
    Expr cn = add(mul(fg, cv_), mul(ig, cg));
    if (p.cell_clip > 0) {
      Expr clip = cf(static_cast<float>(p.cell_clip));
      cn = max_(min_(clip, cn), sub(cf(0.0), clip));
    }
    return cells.wrap(SeqStmt({store(B.c, cn, {b, s}), store(B.h, mul(call("tanh", {load(B.c, {b, s})}), og), {b, s}),
                               store(B.o, load(B.h, {b, s}), out_idx)}));
  }
  Expr fc = clamp16(multiply_by_quantized_multiplier(mul(i32(fg), i32(cv_)), p.forget_cell));
  Expr icg = clamp16(multiply_by_quantized_multiplier(mul(i32(ig), i32(cg)), p.input_cell));
  Expr cn = clamp16(add(fc, icg));
  if (p.cell_clip > 0) cn = clamp(cn, -p.quantized_cell_clip, p.quantized_cell_clip);
  Var cell_new = ivar("cell_new");
  // tanh of the cell state at 2^cell_power: TFLite's int16 tanh wants Q3.12, so the
  // input is shifted left by 15 + power - 3 (a multiplier 3 << shift), or right.
  int32_t shift = 15 + p.cell_power - 3, mult = 0;
  if (shift < 0) shift = -shift, mult = 3;
  // The hidden state: int8 at its zero point, or int16 (16x8, zero point 0).
  const DataType act = p.wide ? kI16 : kI8;
  const ActBounds range = dtype_bounds(act);
  Stmt hidden = int16_tanh("tanh_c", cell_new, B.table, mult, shift, [&](Expr th) {
    Var hv = ivar("hidden_new");
    Expr v = clamp(add(multiply_by_quantized_multiplier(mul(th, i32(og)), p.hidden), ci(p.hidden_zero_point)),
                   range.lo, range.hi);
    return LetStmt(hv, v, SeqStmt({store(B.h, Cast(act, hv), {b, s}), store(B.o, Cast(act, hv), out_idx)}));
  });
  return cells.wrap(LetStmt(cell_new, cn, SeqStmt({store(B.c, Cast(kI16, cell_new), {b, s}), hidden})));
}

PrimFunc lstm_build(const std::string& op, const std::string& fname, const std::vector<TensorType>& in,
                    const TensorType& out, const json& attrs) {
  const bool q = op == "qlstm";
  Lstm p = lstm_params(op, in, attrs);
  const DataType act = q ? in[0].dtype : kF32, cell_t = q ? kI16 : kF32;
  const DataType acc_t = p.wide ? kI64 : q ? kI32 : kF32;
  FuncBuilder fb;
  LstmBuffers B;
  B.x = fb.param("data", in[0].shape, act);
  B.wx = fb.param("input_weights", in[1].shape, in[1].dtype);
  B.wh = fb.param("recurrent_weights", in[2].shape, in[2].dtype);
  B.bias = fb.param("bias", in[3].shape, in[3].dtype);
  // The states, updated in place step by step (OpDef::writes_inputs).
  B.h = fb.param("hidden_state", in[4].shape, act);
  B.c = fb.param("cell_state", in[5].shape, cell_t);
  if (q) B.table = fb.param("sigmoid_table", {256}, DataType::UInt(16));
  B.o = fb.param("out", out.shape, act);
  B.gates = scratch("gates", {4, p.state}, cell_t);
  B.acc = scratch("acc", {2}, acc_t);

  LoopNest steps;
  Expr b = steps.axis("b", p.batch), t = steps.axis("t", p.time);
  std::vector<Stmt> step;
  for (int g = 0; g < 4; ++g) step.push_back(lstm_gate(p, B, q, g, b, t));
  step.push_back(lstm_state_update(p, B, q, b, t));
  Stmt body = Allocate(B.acc, "local", steps.wrap(SeqStmt(step)));
  return fb.finish(fname, Allocate(B.gates, "global", body));
}

OpDef lstm_op(const std::string& op) {
  OpDef d;
  d.name = op;
  d.infer = [op](const std::vector<TensorType>& in, const json& attrs) { return lstm_infer(op, in, attrs); };
  d.build = [op](const std::string& fname, const std::vector<TensorType>& in, const TensorType& out,
                 const json& attrs) { return lstm_build(op, fname, in, out, attrs); };
  // hidden_state and cell_state carry over from run to run.
  d.writes_inputs = [](const json&, size_t) { return std::vector<size_t>{4, 5}; };
  return d;
}

}  // namespace

void register_lstm_ops(std::vector<OpDef>& ops) {
  ops.push_back(lstm_op("lstm"));
  ops.push_back(lstm_op("qlstm"));
}

}  // namespace ops
}  // namespace mtir
