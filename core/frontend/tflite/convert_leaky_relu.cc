// LEAKY_RELU: float32 (`leaky_relu`, x > 0 ? x : alpha * x) and int8/int16
// (`qleaky_relu`, TFLM's QuantizeLeakyRelu with its two multipliers).
#include "frontend/tflite/converter.h"

namespace mtir {
namespace tflite_import {

void TfliteConverter::leaky_relu(const tflite::Operator& op) {
  int x = input(op, 0), out = output(op);
  const auto* opt = op.builtin_options_as_LeakyReluOptions();
  // A missing table is TFLite's default options, alpha 0.
  double alpha = opt ? static_cast<double>(opt->alpha()) : 0.0;
  TensorType xt = tensor_type(x);
  std::string name = values_.at(out);
  if (xt.dtype == DataType::Float(32)) {
    emit(name, "leaky_relu", {value(x)}, {{"alpha", alpha}});
    return;
  }
  if (xt.dtype != DataType::Int(8) && xt.dtype != DataType::Int(16))
    unsupported(xt.dtype.str() + " LEAKY_RELU (float32, int8 and int16 are supported)");
  if (tensor_type(out).dtype != xt.dtype) fail("the output type must be the input's (" + xt.dtype.str() + ")");
  json attrs = int8_attrs(x, out);
  attrs["alpha"] = alpha;
  emit(name, "qleaky_relu", {value(x)}, attrs);
}

}  // namespace tflite_import
}  // namespace mtir
