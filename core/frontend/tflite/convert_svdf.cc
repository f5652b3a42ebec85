// SVDF: float32 to svdf, TFLM's integer form (int8 data and weights_feature, int8 or
// int16 weights_time and state, int32 bias) to qsvdf (core/ops/svdf.cc). Input 4, the
// activation state, is a variable tensor: a state of the graph that the op updates.
#include <cmath>

#include "frontend/tflite/converter.h"

namespace mtir {
namespace tflite_import {

void TfliteConverter::svdf(const tflite::Operator& op) {
  int x = input(op, 0), wf = input(op, 1), wt = input(op, 2), bias = input(op, 3, true), st = input(op, 4), out = output(op);
  const auto* opt = op.builtin_options_as_SVDFOptions();
  if (!opt) fail("the SVDFOptions are missing");
  if (!is_variable(st)) fail(tensor_label(st) + ", the activation state, must be a variable tensor");
  if (!has_data(wf) || !has_data(wt) || (bias >= 0 && !has_data(bias)))
    unsupported("weights or bias computed at run time");
  std::vector<std::string> inputs = {value(x), value(wf), value(wt)};
  if (bias >= 0) inputs.push_back(value(bias));
  inputs.push_back(state_value(st));
  const std::string name = values_.at(out);
  const ActivationFunctionType act = opt->fused_activation_function();
  const DataType dt = tensor_type(x).dtype;
  if (dt == DataType::Float(32)) {
    if (opt->asymmetric_quantize_inputs()) unsupported("hybrid SVDF (asymmetric_quantize_inputs)");
    std::string a;
    switch (act) {
      case ActivationFunctionType::NONE: a = "none"; break;
      case ActivationFunctionType::RELU: a = "relu"; break;
      case ActivationFunctionType::RELU6: a = "relu6"; break;
      case ActivationFunctionType::RELU_N1_TO_1: a = "relu_n1_to_1"; break;
      default: unsupported("the fused activation " + activation_text(act));
    }
    emit(name, "svdf", inputs, {{"rank", opt->rank()}, {"activation", a}});
    return;
  }
  if (dt != DataType::Int(8)) unsupported(dt.str() + " SVDF (float32 and int8 are supported)");
  Quant qx = quant(x, true), qwf = quant(wf, true), qwt = quant(wt, true), qs = quant(st, true), qo = quant(out, true);
  for (const Quant* q : {&qx, &qwf, &qwt, &qs, &qo})
    if (!q->per_tensor()) unsupported("per-channel quantization");
  if (bias >= 0) {
    // TFLM's Prepare: the bias scale must be state_scale * weights_time_scale (float32).
    Quant qb = quant(bias, true);
    const float want = static_cast<float>(qs.scale[0]) * static_cast<float>(qwt.scale[0]);
    if (!(std::abs(qb.scale[0] - static_cast<double>(want)) < 1e-5))
      fail("the bias scale " + std::to_string(qb.scale[0]) + " is not state_scale * weights_time_scale (" +
           std::to_string(want) + ")");
  }
  // TFLM's integer SVDF applies no fused activation: the output's quantization range
  // is the activation, so the option is not carried.
  json attrs = {{"rank", opt->rank()},
                {"input_scale", qx.scale[0]},
                {"input_zero_point", qx.zero_point[0]},
                {"weights_feature_scale", qwf.scale[0]},
                {"weights_time_scale", qwt.scale[0]},
                {"state_scale", qs.scale[0]},
                {"state_zero_point", qs.zero_point[0]},
                {"output_scale", qo.scale[0]},
                {"output_zero_point", qo.zero_point[0]}};
  emit(name, "qsvdf", inputs, attrs);
}

}  // namespace tflite_import
}  // namespace mtir
