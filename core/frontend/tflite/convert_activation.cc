// Activations and unary math, in the dtypes TFLite Micro's kernels take:
//   RELU, RELU6, LOGISTIC, TANH, HARD_SWISH, ELU: float32, int8 (HARD_SWISH and ELU as
//     a 256-entry table made at compile time with TFLM's arithmetic), int16 for RELU,
//     RELU6, LOGISTIC and TANH;
//   ABS (float32, int8, int16), RSQRT (float32, int8), NEG, SQUARE, SQRT, EXP, LOG, SIN,
//     COS, FLOOR, CEIL, ROUND (float32).
#include <cmath>

#include "frontend/tflite/converter.h"
#include "ops/int16_activation.h"
#include "ops/lookup_tables.h"

namespace mtir {
namespace tflite_import {

namespace {

bool quantized(DataType t) { return t == DataType::Int(8) || t == DataType::Int(16); }

}  // namespace

void TfliteConverter::activation(const tflite::Operator& op, BuiltinOperator code) {
  int x = input(op, 0), out = output(op);
  const DataType dt = tensor_type(x).dtype;
  const std::string name = values_.at(out), what = dt.str() + " " + op_name(code);
  if (tensor_type(out).dtype != dt) fail("the output type must be the input's (" + dt.str() + ")");
  if (dt == DataType::Float(32)) {
    switch (code) {
      case BuiltinOperator::RELU: emit(name, "relu", {value(x)}); return;
      case BuiltinOperator::RELU6: emit(name, "clip", {value(x)}, {{"min", 0}, {"max", 6}}); return;
      case BuiltinOperator::LOGISTIC: emit(name, "sigmoid", {value(x)}); return;
      case BuiltinOperator::TANH: emit(name, "tanh", {value(x)}); return;
      case BuiltinOperator::HARD_SWISH: emit(name, "hard_swish", {value(x)}); return;
      case BuiltinOperator::ELU: emit(name, "elu", {value(x)}); return;
      default: break;
    }
  }
  if (!quantized(dt)) unsupported(what + " (TFLite Micro's kernel takes float32, int8 and int16)");
  Quant qi = quant(x, true), qo = quant(out, true);
  if (!qi.per_tensor() || !qo.per_tensor()) unsupported("per-channel quantized activations");
  const bool int8 = dt == DataType::Int(8);
  const int64_t type_min = int8 ? -128 : -32768, type_max = int8 ? 127 : 32767;
  if (code == BuiltinOperator::RELU) {
    // TFLM's ReluQuantized: requantized to the output, then clamped at the output's zero.
    std::string v = value(x);
    if (qi.scale != qo.scale || qi.zero_point != qo.zero_point)
      v = emit(fresh(name + "_requant"), "requantize", {v},
               {{"input_scale", qi.scale[0]}, {"input_zero_point", qi.zero_point[0]}, {"output_scale", qo.scale[0]},
                {"output_zero_point", qo.zero_point[0]}, {"dtype", dt.str()}});
    emit(name, "clip", {v}, {{"min", std::max(type_min, qo.zero_point[0])}, {"max", type_max}});
    return;
  }
  if (code == BuiltinOperator::RELU6) {
    // TFLM's Relu6Quantized clamps the raw input between its own zero and six (TFLM's
    // FloatToQuantizedType: in float32, within the type); the output's quantization
    // plays no part.
    int64_t six = static_cast<int64_t>(std::round(6.0f / static_cast<float>(qi.scale[0]))) + qi.zero_point[0];
    six = std::min(type_max, std::max(type_min, six));
    emit(name, "clip", {value(x)}, {{"min", qi.zero_point[0]}, {"max", six}});
    return;
  }
  json attrs = int8_attrs(x, out);
  if (code == BuiltinOperator::LOGISTIC || code == BuiltinOperator::TANH) {
    const bool tanh = code == BuiltinOperator::TANH;
    if (int8) {
      emit(name, tanh ? "qtanh" : "qlogistic", {value(x)}, attrs);
      return;
    }
    if (sigmoid_table_.empty()) sigmoid_table_ = add_constant("sigmoid_table_uint16", ops::sigmoid_table_array());
    emit(name, tanh ? "qtanh_s16" : "qlogistic_s16", {value(x), sigmoid_table_}, attrs);
    return;
  }
  if (!int8) unsupported(what + " (TFLite Micro's kernel takes float32 and int8)");
  const ops::Int8Quant q{qi.scale[0], static_cast<int32_t>(qi.zero_point[0]), qo.scale[0],
                         static_cast<int32_t>(qo.zero_point[0])};
  NDArray table = code == BuiltinOperator::HARD_SWISH ? ops::hard_swish_table(q, "HARD_SWISH") : ops::elu_table(q);
  emit(name, "qlookup", {value(x), add_constant(name + "_table", std::move(table))});
}

void TfliteConverter::unary_math(const tflite::Operator& op, BuiltinOperator code) {
  int x = input(op, 0), out = output(op);
  const DataType dt = tensor_type(x).dtype;
  const std::string name = values_.at(out), what = dt.str() + " " + op_name(code);
  if (tensor_type(out).dtype != dt) fail("the output type must be the input's (" + dt.str() + ")");
  if (dt == DataType::Float(32)) {
    static const std::map<BuiltinOperator, std::string> kFloatOps = {
        {BuiltinOperator::ABS, "abs"},     {BuiltinOperator::NEG, "neg"},     {BuiltinOperator::SQUARE, "square"},
        {BuiltinOperator::SQRT, "sqrt"},   {BuiltinOperator::RSQRT, "rsqrt"}, {BuiltinOperator::EXP, "exp"},
        {BuiltinOperator::LOG, "log"},     {BuiltinOperator::SIN, "sin"},     {BuiltinOperator::COS, "cos"},
        {BuiltinOperator::FLOOR, "floor"}, {BuiltinOperator::CEIL, "ceil"},   {BuiltinOperator::ROUND, "round"}};
    emit(name, kFloatOps.at(code), {value(x)});
    return;
  }
  const bool abs = code == BuiltinOperator::ABS, rsqrt = code == BuiltinOperator::RSQRT;
  if (abs && dt == DataType::Int(16) && !quant(x, false).scale.size()) {
    emit(name, "abs", {value(x)});  // TFLM's unquantized int16 ABS: std::abs
    return;
  }
  if (!(abs && quantized(dt)) && !(rsqrt && dt == DataType::Int(8)))
    unsupported(what + " (TFLite Micro's kernel takes float32" +
                (abs ? ", int8 and int16)" : rsqrt ? " and int8)" : ")"));
  json attrs = int8_attrs(x, out);
  if (abs) {
    emit(name, "qabs", {value(x)}, attrs);
    return;
  }
  Quant qi = quant(x, true), qo = quant(out, true);
  const ops::Int8Quant q{qi.scale[0], static_cast<int32_t>(qi.zero_point[0]), qo.scale[0],
                         static_cast<int32_t>(qo.zero_point[0])};
  emit(name, "qlookup", {value(x), add_constant(name + "_table", ops::rsqrt_table(q, "RSQRT"))});
}

}  // namespace tflite_import
}  // namespace mtir
