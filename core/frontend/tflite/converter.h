// The TFLite converter's private header: the class that turns one subgraph of a
// verified .tflite flatbuffer into a Graph. The reading of tensors, quantization and
// names is in tflite.cc; each family of operators converts in its own file
// (convert_<family>.cc), declared here and dispatched from TfliteConverter::convert.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

// Some C libraries (Emscripten's) define ARG_MAX in <limits.h>, which is also a TFLite
// operator's name: everything that may include it first, then the schema.
#include <climits>

#include "flatbuffers/flatbuffers.h"
#undef ARG_MAX
#include "frontend/tflite/tflite.h"
#include "frontend/tflite/tflite_schema_generated.h"
#include "ops/ops.h"

namespace mtir {
namespace tflite_import {

using nlohmann::json;
using tflite::ActivationFunctionType;
using tflite::BuiltinOperator;

// Tensors larger than this (elements) are refused: a hostile file may claim any shape.
constexpr int64_t kMaxElements = int64_t{1} << 31;

std::string op_name(BuiltinOperator op);
// `name` up to its first ';' (TFLite joins the names of fused TF ops with ';'), every run
// of characters other than letters, digits and '_' turned into one '_': a short node name
// that is also a file and C name.
std::string short_name(const std::string& name);
std::string activation_text(ActivationFunctionType act);

struct Quant {
  std::vector<double> scale;  // float32 values, exactly
  std::vector<int64_t> zero_point;
  int axis = 0;
  bool per_tensor() const { return scale.size() == 1; }
};

class TfliteConverter {
 public:
  TfliteConverter(const tflite::Model& model, const std::string& filename) : model_(model), file_(filename) {}
  TfliteImport run();

 private:
  [[noreturn]] void fail(const std::string& what) const { user_error({}, file_ + ": " + where_ + what); }
  [[noreturn]] void unsupported(const std::string& what) const {
    user_error({}, file_ + ": unsupported: " + where_ + what);
  }

  const tflite::Tensor& tensor(int index) const;
  std::string tensor_label(int index) const;
  TensorType tensor_type(int index) const;
  bool has_data(int index) const;
  NDArray constant_value(int index) const;
  Quant quant(int index, bool required) const;
  std::string value(int index);  // the graph name of a tensor an operator reads
  // A variable tensor (is_variable) becomes a state of the graph, at its value after
  // TFLM's AllocateTensors(): the zero point for int8, else 0 (its buffer is ignored).
  bool is_variable(int index) const;
  std::string state_value(int index);
  std::string fresh(const std::string& base);
  std::string emit(const std::string& name, const std::string& op, const std::vector<std::string>& inputs,
                   const json& attrs = json::object());
  std::string add_constant(const std::string& base, NDArray a);

  void convert(size_t index, const tflite::Operator& op, BuiltinOperator code);
  // op_support.cc: refuses a dtype the operator x dtype table does not list.
  void check_op_dtype(const tflite::Operator& op, BuiltinOperator code) const;
  // The operator's output `out`, computed by `op` and then its fused activation.
  void finish(int out, const std::string& op, const std::vector<std::string>& inputs, json attrs,
              ActivationFunctionType act, bool act_in_op);
  std::string activation_node(const std::string& name, const std::string& x, int out, ActivationFunctionType act);
  void conv(const tflite::Operator& op, bool depthwise);
  json conv_quant_attrs(int x, int w, int out, int64_t o, int64_t axis) const;
  void fully_connected(const tflite::Operator& op);
  void transpose_conv(const tflite::Operator& op);  // convert_transpose_conv.cc
  void pool(const tflite::Operator& op, bool average);
  void elementwise(const tflite::Operator& op, BuiltinOperator code);
  void softmax(const tflite::Operator& op);
  void concatenation(const tflite::Operator& op);
  void pad(const tflite::Operator& op);
  void mean(const tflite::Operator& op, bool sum);  // MEAN or SUM
  // convert_quantize.cc: QUANTIZE (float32 to int8/int16, integer to integer) and DEQUANTIZE.
  void quantize(const tflite::Operator& op);
  void dequantize(const tflite::Operator& op);
  void cast(const tflite::Operator& op);
  // convert_strided_slice.cc
  void strided_slice(const tflite::Operator& op);
  // convert_leaky_relu.cc
  void leaky_relu(const tflite::Operator& op);
  void svdf(const tflite::Operator& op);  // convert_svdf.cc
  // convert_lstm.cc: UNIDIRECTIONAL_SEQUENCE_LSTM; the four gates' constants stacked.
  void lstm(const tflite::Operator& op);
  void check_lstm_variant(const tflite::Operator& op, const tflite::UnidirectionalSequenceLSTMOptions& opt) const;
  std::pair<int64_t, int64_t> lstm_quant_attrs(int x, int h, int c, const std::vector<int>& wx,
                                               const std::vector<int>& wh, json& attrs) const;
  NDArray lstm_folded_bias(const NDArray& input_weights, const NDArray& recurrent_weights, const NDArray& biases,
                           int64_t zx, int64_t zh) const;
  NDArray stack_constants(const std::vector<int>& ids, DataType dtype) const;
  void transpose(const tflite::Operator& op);  // convert_transpose.cc
  // The data-movement and shape operators (SPLIT, GATHER, RESIZE_*, ...): false for any
  // other operator. Dispatched here, converted in their families' files:
  bool convert_shape_op(const tflite::Operator& op, BuiltinOperator code);
  std::vector<int> name_outputs(const tflite::Operator& op);  // names every output (tflite.cc)
  void record_outputs(const std::vector<int>& outs);  // checks their types, records them as layers
  void slice(const tflite::Operator& op);                      // convert_split.cc
  void split(const tflite::Operator& op, bool sizes);          // SPLIT, SPLIT_V
  void pack(const tflite::Operator& op);
  void unpack(const tflite::Operator& op);
  void squeeze_or_expand(const tflite::Operator& op, BuiltinOperator code);  // convert_shape.cc
  void fill(const tflite::Operator& op, BuiltinOperator code);  // FILL, ZEROS_LIKE
  void shape(const tflite::Operator& op);
  void broadcast_to(const tflite::Operator& op);
  void broadcast_args(const tflite::Operator& op);
  void fold(int out, NDArray a);  // tensor `out` is the constant `a`
  void space_batch(const tflite::Operator& op, BuiltinOperator code);  // convert_space.cc
  void mirror_pad(const tflite::Operator& op);
  void reverse(const tflite::Operator& op);
  void gather(const tflite::Operator& op, bool nd);            // convert_gather.cc
  void embedding_lookup(const tflite::Operator& op);           // convert_gather.cc
  void resize(const tflite::Operator& op, bool bilinear);      // convert_resize.cc
  // A constant int32/int64 tensor `t` as integers (a shape, axes, sizes): refused by
  // name when only a run would know it.
  std::vector<int64_t> constant_ints(int t, const std::string& what);
  // The activation, unary, binary, comparison, reduction and composite float operators
  // (the families below): false for any other operator.
  bool convert_math_op(const tflite::Operator& op, BuiltinOperator code);
  // convert_activation.cc: RELU, RELU6, LOGISTIC, TANH, HARD_SWISH, ELU; ABS, NEG, SQRT, ...
  void activation(const tflite::Operator& op, BuiltinOperator code);
  void unary_math(const tflite::Operator& op, BuiltinOperator code);
  // convert_binary.cc: MAXIMUM, MINIMUM, DIV, SQUARED_DIFFERENCE, FLOOR_DIV, FLOOR_MOD, ADD_N, PRELU
  void binary(const tflite::Operator& op, BuiltinOperator code);
  // convert_compare.cc: EQUAL ... GREATER_EQUAL, SELECT(_V2), LOGICAL_AND/OR/NOT
  void compare(const tflite::Operator& op, BuiltinOperator code);
  // convert_reduce.cc: REDUCE_MAX/MIN, float SUM/MEAN, ARG_MAX/MIN, CUMSUM
  void reduce(const tflite::Operator& op, BuiltinOperator code);
  std::vector<int64_t> constant_axes(int t, int64_t rank);
  // convert_scaled_sum.cc: TFLM's int8 ADD_N and CUMSUM sums (inputs scaled by 2^19).
  Quant scaled_sum_quant(const tflite::Operator& op, size_t inputs) const;
  std::string scaled_input(int t, const Quant& q, const std::string& base);
  void scaled_sum_output(int out, const Quant& q, const std::string& sum);
  // convert_l2.cc: float32 L2_POOL_2D, L2_NORMALIZATION, LOG_SOFTMAX, BATCH_MATMUL
  void float_composite(const tflite::Operator& op, BuiltinOperator code);

  // convert_control_flow.cc: IF and WHILE; the subgraphs they call become functions of
  // the graph, converted by a child converter (convert_function).
  void if_op(const tflite::Operator& op);
  void while_op(const tflite::Operator& op);
  Graph convert_function(size_t k);
  // Converts subgraph k (the operator's `role`: "body", ...) into a function of g_; its
  // constants become constants of g_, appended to `extra`. Returns the function's name.
  std::string subgraph_function(int64_t k, const std::string& role, std::vector<std::string>* extra);
  void check_function_inputs(const Graph& f, const std::string& role, const std::vector<int>& args, size_t extra);
  void check_function_outputs(const Graph& f, const std::string& role, const std::vector<int>& outs);
  void control_outputs(const std::vector<int>& outs);
  std::vector<int> all_inputs(const tflite::Operator& op) const;

  // convert_variable.cc: resource variables (VAR_HANDLE, READ_VARIABLE, ASSIGN_VARIABLE)
  // as graph state, CALL_ONCE's init subgraph run at compile time into their initial
  // values. False for any other operator.
  bool convert_control_op(const tflite::Operator& op, BuiltinOperator code);
  // Every variable of the model, its type from its first ASSIGN_VARIABLE in subgraph
  // order (as TFLM allocates it when preparing that operator).
  void collect_variables();
  void call_once(const tflite::Operator& op);
  std::string variable_of(int handle);  // the variable a handle tensor of sg_ names
  std::string variable_state(const std::string& key);

  BuiltinOperator operator_at(size_t i, const tflite::Operator** op);  // operator i of sg_, checked
  int input(const tflite::Operator& op, size_t i, bool optional = false) const;
  int output(const tflite::Operator& op) const;  // the one output of a single-output operator
  std::vector<int> outputs(const tflite::Operator& op) const;  // every output, at least one
  json int8_attrs(int in, int out) const;
  void same_quant(int in, int out, const std::string& why) const;
  // Checks that tensor `b` is a bias [channels] of a dtype named in `allowed` ("int64 or
  // int32"); returns b.
  int quantized_bias(int b, int64_t channels, const std::string& allowed) const;
  std::vector<int64_t> padding(tflite::Padding pad, int64_t h, int64_t w, int64_t kh, int64_t kw, int64_t sh,
                               int64_t sw, int64_t dh, int64_t dw) const;

  const tflite::Model& model_;
  std::string file_;
  const tflite::SubGraph* sg_ = nullptr;
  std::string where_;  // "operator 3 (CONV_2D): " while converting one
  std::string tmp_;    // the temporary node name base of the operator being converted
  Graph g_;
  std::map<int, std::string> values_;  // tensor index -> graph name
  std::map<int, std::string> io_names_;  // model input/output tensor -> its name (input_<k> when it has none)
  std::map<std::string, TensorType> types_;
  std::set<std::string> used_;
  std::vector<std::string> layers_;
  std::set<int> produced_;  // tensors an operator computes
  // Tensors an operator computes whose value the compiler knows (SHAPE's output): read
  // as constants by the operators after it, so shapes they carry stay static.
  std::map<int, NDArray> folded_;
  // Resource variables by key (container and shared_name): the type and initial value
  // (TFLM's default, then what CALL_ONCE's init subgraph assigns), the graph state once
  // subgraph 0 uses it, and the node holding its latest assignment in this run.
  struct Variable {
    std::string label;  // its shared_name
    TensorType type;
    NDArray initial;
    std::string state, current;
  };
  std::map<std::string, Variable> variables_;
  std::map<std::pair<size_t, int>, std::string> handles_;  // (subgraph, VAR_HANDLE output) -> key
  size_t subgraph_ = 0;  // the index of sg_
  // Control flow: how deep this converter's subgraph is called (0: the model's main
  // subgraph), what locates it in messages ("subgraph 2 (the body of operator 1
  // (WHILE)), "), and the function names taken in the whole model.
  int depth_ = 0;
  std::string scope_;
  std::set<std::string> own_function_names_;
  std::set<std::string>* function_names_ = &own_function_names_;
  std::string sigmoid_table_;  // the int16 sigmoid/tanh table constant, once per model (convert_lstm.cc)
};

}  // namespace tflite_import
}  // namespace mtir
