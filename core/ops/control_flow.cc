// Control flow over subgraph functions (Graph::functions; TFLite's IF and WHILE):
//
//   if(cond, args...)   attrs then, else: function names; then_args, else_args: the
//                       positions of the node inputs each function takes, in its input
//                       order; outputs: the branch results' types [{dtype, shape}]
//   while(args...)      attrs cond, body: function names; carried: the first `carried`
//                       inputs are the loop-carried tensors (the outputs, same types);
//                       cond_args, body_args: as for if
//   control_output(n)   attrs index, dtype, shape: result `index` (1 and up) of the
//                       if/while node n (result 0 is n itself)
//
// The AOT executor compiles each function to a PrimFunc and calls it with call_tir
// inside an IfThenElse or a While of main (executor/control_flow.cc): these ops have no
// kernel of their own.
#include "ops/op_util.h"

namespace mtir {
namespace ops {
namespace {

using json = nlohmann::json;

void check_args(const std::string& op, const AttrReader& r, const std::string& key, size_t num_inputs) {
  for (int64_t k : r.get_ints(key, 0, 0, "input positions", std::vector<int64_t>{}))
    if (static_cast<size_t>(k) >= num_inputs)
      r.bad(key, "input positions below " + std::to_string(num_inputs) + " (the node has that many inputs)");
  if (!r.has(key)) fail(op, "the attribute '" + key + "' is required");
}

void check_function_name(const std::string& op, const json& attrs, const std::string& key) {
  if (!attrs.contains(key) || !attrs[key].is_string() || attrs[key].get<std::string>().empty())
    fail(op, "the attribute '" + key + "' must name a function of the graph");
}

TensorType if_infer(const std::vector<TensorType>& in, const json& attrs) {
  AttrReader r("if", attrs, {"then", "else", "then_args", "else_args", "outputs"});
  if (in.empty() || in[0].dtype != DataType::Bool() || in[0].num_elements() != 1)
    fail("if", "the first input must be the condition, a bool tensor of one element (TFLM's IF requires it)");
  for (const char* key : {"then", "else"}) check_function_name("if", attrs, key);
  check_args("if", r, "then_args", in.size());
  check_args("if", r, "else_args", in.size());
  const json* outs = r.raw("outputs");
  if (!outs || !outs->is_array() || outs->empty()) fail("if", "the attribute 'outputs' must list the result types");
  auto dtype = DataType::parse(outs->at(0).value("dtype", std::string()));
  if (!dtype) fail("if", "outputs[0] has no valid dtype");
  return TensorType{*dtype, outs->at(0).at("shape").get<std::vector<int64_t>>()};
}

TensorType while_infer(const std::vector<TensorType>& in, const json& attrs) {
  AttrReader r("while", attrs, {"cond", "body", "carried", "cond_args", "body_args"});
  for (const char* key : {"cond", "body"}) check_function_name("while", attrs, key);
  const int64_t carried = r.get_int("carried", 0);
  if (carried < 1 || static_cast<size_t>(carried) > in.size())
    r.bad("carried", "the number of loop-carried inputs, 1 to " + std::to_string(in.size()));
  check_args("while", r, "cond_args", in.size());
  check_args("while", r, "body_args", in.size());
  return in[0];
}

TensorType output_infer(const std::vector<TensorType>& in, const json& attrs) {
  AttrReader r("control_output", attrs, {"index", "dtype", "shape"});
  if (in.size() != 1) fail("control_output", "takes one input (an if or while node)");
  r.get_int("index", 1);
  auto dtype = DataType::parse(attrs.value("dtype", std::string()));
  if (!dtype) r.bad("dtype", "a dtype");
  return TensorType{*dtype, r.get_ints("shape", 0, 1, "positive integers", std::nullopt)};
}

// The ops' build: they have no kernel of their own.
std::function<PrimFunc(const std::string&, const std::vector<TensorType>&, const TensorType&, const json&)> no_kernel(
    const std::string& op) {
  return [op](const std::string&, const std::vector<TensorType>&, const TensorType&, const json&) -> PrimFunc {
    fail(op, "has no kernel of its own: the AOT executor calls its subgraph functions (a graph's functions)");
  };
}

}  // namespace

void register_control_flow_ops(std::vector<OpDef>& ops) {
  ops.push_back(OpDef{"if", if_infer, no_kernel("if")});
  ops.push_back(OpDef{"while", while_infer, no_kernel("while")});
  ops.push_back(OpDef{"control_output", output_infer, no_kernel("control_output")});
}

}  // namespace ops
}  // namespace mtir
