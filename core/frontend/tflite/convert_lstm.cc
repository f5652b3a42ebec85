// UNIDIRECTIONAL_SEQUENCE_LSTM -> lstm (float32) or qlstm (int8 activations and weights,
// int16 cell state; or TFLM's 16x8: int16 activations, int8 weights, int64 biases, int16
// cell state): the variant TFLite Micro evaluates (kernels/lstm_eval_common.cc):
// all four gates (no CIFG), no peephole, projection or layer norm; the cell gate's
// activation TANH. The four gates' weights and biases (TFLite's order: input,
// forget, cell, output) are stacked into [4, cells, inputs], [4, cells, cells] and
// [4, cells] constants. The operator's `intermediates` are not read: TFLM's integer LSTM
// takes its gates at the fixed scale 2^-12 and ignores them.
#include "frontend/tflite/converter.h"
#include "ops/int16_activation.h"

namespace mtir {
namespace tflite_import {

namespace {

// TFLite's input numbering (lstm_shared.h).
constexpr size_t kInput = 0, kInputWeights = 1, kRecurrentWeights = 5, kCellToGate = 9, kBias = 12,
                 kProjection = 16, kOutputState = 18, kCellState = 19, kLayerNorm = 20, kInputCount = 24;

}  // namespace

NDArray TfliteConverter::stack_constants(const std::vector<int>& ids, DataType dtype) const {
  NDArray first = constant_value(ids[0]);
  NDArray out;
  out.dtype = dtype;
  out.shape = first.shape;
  out.shape.insert(out.shape.begin(), static_cast<int64_t>(ids.size()));
  for (int id : ids) {
    NDArray a = constant_value(id);
    if (a.dtype != dtype || a.shape != first.shape)
      fail(tensor_label(id) + " is " + TensorType{a.dtype, a.shape}.str() + ", but " + tensor_label(ids[0]) + " is " +
           TensorType{first.dtype, first.shape}.str() + " (the four gates' tensors must match)");
    out.data.insert(out.data.end(), a.data.begin(), a.data.end());
  }
  return out;
}

// The LSTM variants TFLite Micro refuses (LstmTensors::ValidateTensorStatus), and a
// cell gate activation other than TANH.
void TfliteConverter::check_lstm_variant(const tflite::Operator& op,
                                         const tflite::UnidirectionalSequenceLSTMOptions& opt) const {
  size_t n = op.inputs() ? op.inputs()->size() : 0;
  if (n != kInputCount) fail("it has " + std::to_string(n) + " inputs; an LSTM has 24 (TFLite's layout)");
  auto present = [&](size_t i) { return input(op, i, true) >= 0; };
  auto any_present = [&](size_t from, size_t to) {
    for (size_t i = from; i < to; ++i)
      if (present(i)) return true;
    return false;
  };
  if (!present(kInputWeights) || !present(kRecurrentWeights) || !present(kBias))
    unsupported("an LSTM without an input gate (CIFG), which TFLite Micro does not run either");
  if (any_present(kCellToGate, kCellToGate + 3))
    unsupported("an LSTM with peephole connections (cell-to-gate weights), which TFLite Micro does not run either");
  if (any_present(kProjection, kProjection + 2))
    unsupported("an LSTM with a projection, which TFLite Micro does not run either");
  if (any_present(kLayerNorm, kLayerNorm + 4))
    unsupported("a layer-norm LSTM, which TFLite Micro does not run either");
  if (opt.diagonal_recurrent_tensors()) unsupported("an LSTM with diagonal recurrent weights");
  // TFLM evaluates the cell gate with sigmoid or tanh only; a flatbuffer can only say TANH.
  if (opt.fused_activation_function() != ActivationFunctionType::TANH)
    unsupported("an LSTM whose cell gate activation is " + activation_text(opt.fused_activation_function()) +
                " (TANH is the one TFLite Micro runs)");
}

// The int8 LSTM's scales in `attrs` (every tensor quantized per tensor, weights
// symmetric, the int16 cell state's zero point 0); returns the input's and the hidden
// state's zero points.
std::pair<int64_t, int64_t> TfliteConverter::lstm_quant_attrs(int x, int h, int c, const std::vector<int>& wx,
                                                              const std::vector<int>& wh, json& attrs) const {
  auto per_tensor = [&](int t) {
    Quant qt = quant(t, true);
    if (!qt.per_tensor()) unsupported(tensor_label(t) + " is quantized per channel (TFLite Micro's LSTM takes one scale)");
    return qt;
  };
  auto weight_scales = [&](const std::vector<int>& ids) {
    json s = json::array();
    for (int id : ids) {
      Quant qw = per_tensor(id);
      if (qw.zero_point[0] != 0) unsupported(tensor_label(id) + " has a non-zero zero point (weights are symmetric)");
      s.push_back(qw.scale[0]);
    }
    return s;
  };
  Quant qx = per_tensor(x), qh = per_tensor(h), qc = per_tensor(c);
  if (qc.zero_point[0] != 0) unsupported(tensor_label(c) + ", the int16 cell state, has a non-zero zero point");
  // TFLM's int16 FullyConnected ignores the input's zero point: 16x8 is symmetric.
  for (int t : {x, h})
    if (tensor_type(t).dtype == DataType::Int(16) && per_tensor(t).zero_point[0] != 0)
      unsupported(tensor_label(t) + " has a non-zero zero point (TFLM's 16x8 LSTM takes int16 data symmetric)");
  attrs["input_scale"] = qx.scale[0];
  attrs["input_weight_scales"] = weight_scales(wx);
  attrs["recurrent_weight_scales"] = weight_scales(wh);
  attrs["hidden_scale"] = qh.scale[0];
  attrs["hidden_zero_point"] = qh.zero_point[0];
  attrs["cell_scale"] = qc.scale[0];
  return {qx.zero_point[0], qh.zero_point[0]};
}

// The zero points folded into two bias rows, so the products are plain int8 dot
// products: TFLM's sum of w * (x - zx) + b equals sum(w * x) + (b - zx * sum(w)), and the
// recurrent product's sum of r * (h - zh) equals sum(r * h) - zh * sum(r).
NDArray TfliteConverter::lstm_folded_bias(const NDArray& input_weights, const NDArray& recurrent_weights,
                                          const NDArray& biases, int64_t zx, int64_t zh) const {
  const int64_t cells = input_weights.shape[1];
  NDArray folded = NDArray::zeros(DataType::Int(32), {2, 4, cells});
  int64_t inputs_n = input_weights.shape[2];
  for (int64_t row = 0; row < 4 * cells; ++row) {
    int64_t sum_w = 0, sum_r = 0;
    for (int64_t k = 0; k < inputs_n; ++k) sum_w += input_weights.get_int(row * inputs_n + k);
    for (int64_t k = 0; k < cells; ++k) sum_r += recurrent_weights.get_int(row * cells + k);
    int64_t b0 = biases.get_int(row) - zx * sum_w, b1 = -zh * sum_r;
    if (b0 < INT32_MIN || b0 > INT32_MAX) fail("a gate's bias with the input's zero point folded overflows int32");
    folded.set_int(row, b0);
    folded.set_int(4 * cells + row, b1);
  }
  return folded;
}

void TfliteConverter::lstm(const tflite::Operator& op) {
  const auto* opt = op.builtin_options_as_UnidirectionalSequenceLSTMOptions();
  if (!opt) fail("the UnidirectionalSequenceLSTMOptions are missing");
  check_lstm_variant(op, *opt);
  if (!(opt->cell_clip() >= 0)) fail("cell_clip is " + std::to_string(opt->cell_clip()) + " (it must be >= 0)");

  int x = input(op, kInput), out = output(op);
  int h = input(op, kOutputState), c = input(op, kCellState);
  std::vector<int> wx, wh, bias;
  for (size_t g = 0; g < 4; ++g) {
    wx.push_back(input(op, kInputWeights + g));
    wh.push_back(input(op, kRecurrentWeights + g));
    bias.push_back(input(op, kBias + g));
  }
  for (int t : {h, c})
    if (!is_variable(t)) fail(tensor_label(t) + ", an LSTM state, is not a variable tensor");
  TensorType xt = tensor_type(x);
  if (xt.shape.size() != 3) fail("the input must be 3-D, it is " + xt.str());
  for (const auto& ids : {wx, wh, bias})
    for (int id : ids)
      if (!has_data(id)) unsupported("LSTM weights or biases computed at run time (" + tensor_label(id) + ")");
  const bool wide = xt.dtype == DataType::Int(16);  // TFLM's 16x8
  const bool q = wide || xt.dtype == DataType::Int(8);
  if (!q && xt.dtype != DataType::Float(32))
    unsupported(xt.dtype.str() + " LSTM data (float32, int8 and int16 are supported)");
  const DataType weight_t = q ? DataType::Int(8) : DataType::Float(32);
  const DataType bias_t = wide ? DataType::Int(64) : q ? DataType::Int(32) : DataType::Float(32);
  const DataType cell_t = q ? DataType::Int(16) : DataType::Float(32);
  if (tensor_type(wx[0]).dtype != weight_t)
    unsupported("an LSTM with " + tensor_type(wx[0]).dtype.str() + " weights on " + xt.dtype.str() +
                " data (hybrid LSTMs are not TFLite Micro's)");
  if (tensor_type(bias[0]).dtype != bias_t)
    unsupported("an LSTM with " + tensor_type(bias[0]).dtype.str() + " biases on " + xt.dtype.str() + " data (" +
                bias_t.str() + " is TFLite Micro's)");
  NDArray input_weights = stack_constants(wx, weight_t);
  NDArray recurrent_weights = stack_constants(wh, weight_t);
  NDArray biases = stack_constants(bias, bias_t);
  int64_t cells = input_weights.shape[1];
  bool time_major = opt->time_major();
  int64_t batch = time_major ? xt.shape[1] : xt.shape[0];
  // The states: the graph's state (TFLM's variable tensors, starting as AllocateTensors()
  // leaves them), [batch, cells].
  auto state = [&](int t, DataType want, const std::string& what) {
    TensorType st = tensor_type(t);
    if (st.dtype != want)
      unsupported(tensor_label(t) + ", the " + what + ", is " + st.dtype.str() + " (" + want.str() +
                  " is required with " + xt.dtype.str() + " data)");
    if (st.shape != std::vector<int64_t>{batch, cells})
      unsupported(tensor_label(t) + ", the " + what + ", has shape " + st.str() + " ([batch, cells] = [" +
                  std::to_string(batch) + ", " + std::to_string(cells) + "] is supported)");
    return state_value(t);
  };
  std::string name = values_.at(out);
  json attrs = {{"time_major", time_major}, {"cell_clip", opt->cell_clip()}};
  if (!q) {
    emit(name, "lstm",
         {value(x), add_constant(name + "_input_weights", std::move(input_weights)),
          add_constant(name + "_recurrent_weights", std::move(recurrent_weights)),
          add_constant(name + "_bias", std::move(biases)), state(h, xt.dtype, "hidden state"),
          state(c, cell_t, "cell state")},
         attrs);
    return;
  }
  const auto [zx, zh] = lstm_quant_attrs(x, h, c, wx, wh, attrs);
  // int8: the zero points folded into two int32 bias rows; 16x8: the int64 biases as they are.
  NDArray folded = wide ? std::move(biases) : lstm_folded_bias(input_weights, recurrent_weights, biases, zx, zh);
  if (sigmoid_table_.empty()) sigmoid_table_ = add_constant("sigmoid_table_uint16", ops::sigmoid_table_array());
  emit(name, "qlstm",
       {value(x), add_constant(name + "_input_weights", std::move(input_weights)),
        add_constant(name + "_recurrent_weights", std::move(recurrent_weights)),
        add_constant(name + "_bias_folded", std::move(folded)), state(h, xt.dtype, "hidden state"),
        state(c, cell_t, "cell state"), sigmoid_table_},
       attrs);
}

}  // namespace tflite_import
}  // namespace mtir
