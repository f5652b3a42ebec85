// Binary elementwise operators beyond ADD/SUB/MUL, broadcast as TFLite broadcasts:
//   MAXIMUM, MINIMUM   any dtype, on the raw values (TFLM ignores quantization here);
//   DIV                float32, int32 and int8 (qdiv: TFLM's fixed-point reciprocal), with its fused activation;
//   SQUARED_DIFFERENCE float32, int32, and int8/int16 requantized (qsquared_difference);
//   FLOOR_DIV, FLOOR_MOD float32 and int32;
//   ADD_N              float32 and int32: a chain of adds in TFLM's order; int8: TFLM's scaled sum;
//   PRELU              float32, and int8/int16 data with an int8 alpha (qprelu).
#include "frontend/tflite/converter.h"

namespace mtir {
namespace tflite_import {

void TfliteConverter::binary(const tflite::Operator& op, BuiltinOperator code) {
  int out = output(op);
  const DataType dt = tensor_type(out).dtype;
  const std::string name = values_.at(out), what = dt.str() + " " + op_name(code);
  const bool float32 = dt == DataType::Float(32), int32 = dt == DataType::Int(32);
  const bool quantized = dt == DataType::Int(8) || dt == DataType::Int(16);
  if (code == BuiltinOperator::ADD_N) {
    if (!float32 && !int32 && dt != DataType::Int(8)) unsupported(what + " (float32, int8 and int32 are supported)");
    size_t n = op.inputs() ? op.inputs()->size() : 0;
    if (n == 0) fail("it has no inputs");
    if (dt == DataType::Int(8)) {  // TFLM's scaled int32 sum (convert_scaled_sum.cc)
      const Quant q = scaled_sum_quant(op, n);
      std::string sum = scaled_input(input(op, 0), q, name + "_scaled0");
      for (size_t i = 1; i < n; ++i)
        sum = emit(fresh(name + "_sum" + std::to_string(i)), "add",
                   {sum, scaled_input(input(op, i), q, name + "_scaled" + std::to_string(i))});
      scaled_sum_output(out, q, sum);
      return;
    }
    std::string sum = value(input(op, 0));
    for (size_t i = 1; i < n; ++i) {
      std::string next = value(input(op, i));
      sum = emit(i + 1 == n ? name : fresh(name + "_sum" + std::to_string(i)), "add", {sum, next});
    }
    if (n == 1) emit(name, "reshape", {sum}, {{"newshape", tensor_type(out).shape}});
    return;
  }
  int a = input(op, 0), b = input(op, 1);
  if (tensor_type(a).dtype != dt || (code != BuiltinOperator::PRELU && tensor_type(b).dtype != dt))
    unsupported(op_name(code) + " of " + tensor_type(a).dtype.str() + " and " + tensor_type(b).dtype.str() + " into " +
                dt.str());
  auto quant_attrs = [&](const std::string& second) {
    Quant qa = quant(a, true), qb = quant(b, true), qo = quant(out, true);
    if (!qa.per_tensor() || !qb.per_tensor() || !qo.per_tensor()) unsupported("per-channel quantized activations");
    return json{{code == BuiltinOperator::PRELU ? "input_scale" : "a_scale", qa.scale[0]},
                {code == BuiltinOperator::PRELU ? "input_zero_point" : "a_zero_point", qa.zero_point[0]},
                {second + "_scale", qb.scale[0]},
                {second + "_zero_point", qb.zero_point[0]},
                {"output_scale", qo.scale[0]},
                {"output_zero_point", qo.zero_point[0]}};
  };
  switch (code) {
    case BuiltinOperator::MAXIMUM:
    case BuiltinOperator::MINIMUM:
      emit(name, code == BuiltinOperator::MAXIMUM ? "maximum" : "minimum", {value(a), value(b)});
      return;
    case BuiltinOperator::DIV: {
      if (!float32 && !int32 && dt != DataType::Int(8))
        unsupported(what + " (float32, int8 and int32 are supported)");  // int32: C's truncating /
      const auto* opt = op.builtin_options_as_DivOptions();
      const ActivationFunctionType act = opt ? opt->fused_activation_function() : ActivationFunctionType::NONE;
      if (dt == DataType::Int(8)) finish(out, "qdiv", {value(a), value(b)}, quant_attrs("b"), act, true);
      else finish(out, "div", {value(a), value(b)}, json::object(), act, false);
      return;
    }
    case BuiltinOperator::SQUARED_DIFFERENCE:
      if (quantized) emit(name, "qsquared_difference", {value(a), value(b)}, quant_attrs("b"));
      else if (float32 || int32) emit(name, "squared_difference", {value(a), value(b)});
      else unsupported(what + " (float32, int32, int8 and int16 are supported)");
      return;
    case BuiltinOperator::FLOOR_DIV:
    case BuiltinOperator::FLOOR_MOD:
      if (!float32 && !int32) unsupported(what + " (float32 and int32 are supported)");
      emit(name, code == BuiltinOperator::FLOOR_DIV ? "floor_div" : "floor_mod", {value(a), value(b)});
      return;
    case BuiltinOperator::PRELU:
      if (float32) emit(name, "prelu", {value(a), value(b)});
      else if (quantized) emit(name, "qprelu", {value(a), value(b)}, quant_attrs("alpha"));
      else unsupported(what + " (float32, int8 and int16 are supported)");
      return;
    default: fail("not a binary operator");
  }
}

}  // namespace tflite_import
}  // namespace mtir
