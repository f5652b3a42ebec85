// Comparisons (EQUAL, NOT_EQUAL, LESS, LESS_EQUAL, GREATER, GREATER_EQUAL → bool; int8
// and int16 GREATER compared after TFLM's rescaling, other types on the raw values, bool
// EQUAL / NOT_EQUAL as 0 and 1), SELECT / SELECT_V2
// and LOGICAL_AND / OR / NOT, broadcast.
#include "frontend/tflite/converter.h"

namespace mtir {
namespace tflite_import {

void TfliteConverter::compare(const tflite::Operator& op, BuiltinOperator code) {
  int out = output(op);
  const std::string name = values_.at(out);
  static const std::map<BuiltinOperator, std::string> kOps = {
      {BuiltinOperator::EQUAL, "equal"},        {BuiltinOperator::NOT_EQUAL, "not_equal"},
      {BuiltinOperator::LESS, "less"},          {BuiltinOperator::LESS_EQUAL, "less_equal"},
      {BuiltinOperator::GREATER, "greater"},    {BuiltinOperator::GREATER_EQUAL, "greater_equal"},
      {BuiltinOperator::SELECT, "select"},      {BuiltinOperator::SELECT_V2, "select"},
      {BuiltinOperator::LOGICAL_AND, "logical_and"}, {BuiltinOperator::LOGICAL_OR, "logical_or"},
      {BuiltinOperator::LOGICAL_NOT, "logical_not"}};
  const std::string& opn = kOps.at(code);
  std::vector<std::string> inputs;
  size_t n = op.inputs() ? op.inputs()->size() : 0;
  for (size_t i = 0; i < n; ++i) inputs.push_back(value(input(op, i)));
  json attrs = json::object();
  if (kOps.at(code) != "select" && opn.rfind("logical", 0) != 0 && n == 2) {
    int a = input(op, 0), b = input(op, 1);
    const DataType dt = tensor_type(a).dtype;
    if (dt == DataType::Bool()) {  // TFLM's bool EQUAL / NOT_EQUAL: compared as 0 and 1
      for (std::string& in : inputs) in = emit(fresh(name + "_int8"), "cast", {in}, {{"dtype", "int8"}});
    } else if (dt == DataType::Int(8) || (dt == DataType::Int(16) && code == BuiltinOperator::GREATER)) {
      // int8, and int16 GREATER (the one int16 comparison TFLM has), after TFLM's rescaling.
      Quant qa = quant(a, true), qb = quant(b, true);
      if (!qa.per_tensor() || !qb.per_tensor()) unsupported("per-channel quantized activations");
      attrs = {{"a_scale", qa.scale[0]}, {"a_zero_point", qa.zero_point[0]},
               {"b_scale", qb.scale[0]}, {"b_zero_point", qb.zero_point[0]}};
    }
  }
  emit(name, opn, inputs, attrs);
}

}  // namespace tflite_import
}  // namespace mtir
