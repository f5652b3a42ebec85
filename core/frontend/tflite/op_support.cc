// The operator x dtype table of the TFLite converter (op_support.h) and the check that
// refuses a pair outside it, before any operator family's code runs.
#include "frontend/tflite/op_support.h"

#include "frontend/tflite/converter.h"

namespace mtir {

namespace {

using Dtypes = std::vector<std::string>;
const Dtypes kFloat = {"float32"};
const Dtypes kQuantized = {"float32", "int8", "int16"};
const Dtypes kAny = {"float32", "int8", "int16", "int32", "int64", "bool"};
const Dtypes kNumeric = {"float32", "int8", "int16", "int32", "int64"};
// Byte copies whose TFLM kernel takes any type (memcpy or TfLiteTypeGetSize), uint8 too.
const Dtypes kAnyUint8 = {"float32", "int8", "int16", "int32", "int64", "uint8", "bool"};

std::vector<TfliteOpSupport> make_table() {
  auto ops = [](std::initializer_list<const char*> names, Dtypes dtypes, std::string key = "input 0") {
    std::vector<TfliteOpSupport> v;
    for (const char* n : names) v.push_back(TfliteOpSupport{n, key, dtypes, {}, ""});
    return v;
  };
  std::vector<std::vector<TfliteOpSupport>> groups = {
      ops({"CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED"}, kQuantized),
      ops({"TRANSPOSE_CONV"}, kQuantized, "input 2"),  // after the output shape and the filter
      ops({"AVERAGE_POOL_2D", "MAX_POOL_2D"}, kQuantized),
      ops({"ADD"}, {"float32", "int8", "int16", "int32"}),
      ops({"SUB", "MUL"}, {"float32", "int8", "int16", "int32"}),
      ops({"SOFTMAX"}, kQuantized),
      ops({"QUANTIZE"}, {"int8", "int16", "int32", "uint8"}, "output 0"),
      ops({"DEQUANTIZE"}, {"int8", "int16", "uint8"}),
      ops({"CAST"}, {"float32", "int8", "int16", "int32", "bool"}),
      ops({"RESHAPE"}, kAnyUint8),
      ops({"TRANSPOSE", "STRIDED_SLICE", "SLICE", "SPLIT_V", "PACK", "UNPACK"}, kAny),
      ops({"SQUEEZE"}, kAnyUint8),
      ops({"EXPAND_DIMS"}, kAny),
      ops({"BROADCAST_TO"}, kAnyUint8),
      ops({"REVERSE_V2"}, kAnyUint8),
      ops({"SPACE_TO_DEPTH", "DEPTH_TO_SPACE", "SPACE_TO_BATCH_ND", "BATCH_TO_SPACE_ND",
           "MIRROR_PAD", "GATHER", "GATHER_ND", "ZEROS_LIKE"},
          kAny),
      ops({"SHAPE"}, kAnyUint8),
      ops({"BROADCAST_ARGS"}, {"int32", "int64"}),
      ops({"EMBEDDING_LOOKUP"}, {"float32", "int8"}, "input 1"),  // the table
      ops({"PAD", "PADV2"}, kAny),
      ops({"SPLIT", "FILL"}, kAny, "input 1"),
      ops({"CONCATENATION"}, kAny),
      ops({"MEAN"}, kQuantized),
      ops({"SUM", "REDUCE_MAX", "REDUCE_MIN"}, {"float32", "int8", "int16", "int32"}),
      ops({"ARG_MAX", "ARG_MIN"}, kNumeric),
      ops({"CUMSUM", "ADD_N"}, {"float32", "int8", "int32"}),
      ops({"FLOOR_DIV", "FLOOR_MOD"}, {"float32", "int32"}),
      ops({"LOGISTIC", "TANH", "RELU", "RELU6", "LEAKY_RELU", "ABS", "PRELU"}, kQuantized),
      ops({"HARD_SWISH", "ELU", "RSQRT"}, {"float32", "int8"}),
      ops({"NEG", "SQUARE", "SQRT", "EXP", "LOG", "SIN", "COS", "FLOOR", "CEIL", "ROUND", "L2_POOL_2D"}, kFloat),
      ops({"DIV"}, {"float32", "int8", "int32"}),
      ops({"MAXIMUM", "MINIMUM"}, kNumeric),
      ops({"SQUARED_DIFFERENCE"}, {"float32", "int8", "int16", "int32"}),
      ops({"EQUAL", "NOT_EQUAL"}, kAny),
      ops({"LESS", "LESS_EQUAL", "GREATER", "GREATER_EQUAL"}, kNumeric),
      ops({"SELECT", "SELECT_V2"}, kNumeric, "input 1"),
      ops({"LOGICAL_AND", "LOGICAL_OR", "LOGICAL_NOT"}, {"bool"}),
      ops({"L2_NORMALIZATION", "LOG_SOFTMAX"}, {"float32", "int8"}),
      ops({"BATCH_MATMUL"}, kQuantized),
      ops({"RESIZE_NEAREST_NEIGHBOR", "RESIZE_BILINEAR"}, kQuantized),
      ops({"SVDF"}, {"float32", "int8"}),
      ops({"UNIDIRECTIONAL_SEQUENCE_LSTM"}, kQuantized),
      ops({"VAR_HANDLE", "READ_VARIABLE", "ASSIGN_VARIABLE", "CALL_ONCE"}, {}, "none"),
      ops({"IF", "WHILE"}, {}, "none"),
  };
  std::vector<TfliteOpSupport> table;
  for (auto& g : groups) table.insert(table.end(), g.begin(), g.end());
  // A pair TFLM's kernels implement that is not converted would be listed in e.refused with
  // its reason (tests/tflite/tflm_kernel_dtypes.json); none is left.
  for (auto& e : table)
    if (e.key == "none" && e.refused.empty()) e.note = "any dtype (no data of its own)";
  return table;
}

std::string supported_list(const Dtypes& d) {
  std::string s;
  for (size_t i = 0; i < d.size(); ++i) s += (i == 0 ? "" : i + 1 == d.size() ? " and " : ", ") + d[i];
  return s + (d.size() == 1 ? " is supported" : " are supported");
}

}  // namespace

const std::vector<std::string>& tflite_dtypes() {
  static const std::vector<std::string> d = {"float32", "int8", "int16", "int32", "int64", "uint8", "bool"};
  return d;
}

const std::vector<TfliteOpSupport>& tflite_op_support() {
  static const std::vector<TfliteOpSupport> table = make_table();
  return table;
}

const TfliteOpSupport* find_tflite_op(const std::string& op) {
  for (const auto& e : tflite_op_support())
    if (e.op == op) return &e;
  return nullptr;
}

namespace tflite_import {

// Refuses an operator whose key tensor's dtype the table does not list, with the table's
// reason; an operator the table lacks is left to convert()'s "unsupported TFLite operator".
void TfliteConverter::check_op_dtype(const tflite::Operator& op, BuiltinOperator code) const {
  const TfliteOpSupport* e = find_tflite_op(op_name(code));
  if (!e || e->key == "none") return;
  const bool is_output = e->key.rfind("output", 0) == 0;
  const size_t index = static_cast<size_t>(std::stoi(e->key.substr(e->key.find(' ') + 1)));
  const size_t count = is_output ? (op.outputs() ? op.outputs()->size() : 0) : (op.inputs() ? op.inputs()->size() : 0);
  if (index >= count) return;  // the operator's own code names the missing tensor
  const int t = is_output ? output(op) : input(op, index);
  const std::string dtype = tensor_type(t).dtype.str();
  for (const auto& d : e->dtypes)
    if (d == dtype) return;
  for (const auto& [d, why] : e->refused)
    if (d == dtype) unsupported(dtype + " " + e->op + ": " + why + " (" + supported_list(e->dtypes) + ")");
  unsupported(dtype + " " + e->op + " (" + supported_list(e->dtypes) + ")");
}

}  // namespace tflite_import
}  // namespace mtir
