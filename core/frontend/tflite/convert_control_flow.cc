// IF and WHILE (TFLM's micro/kernels/if.cc, while.cc): the subgraphs they name become
// functions of the graph (Graph::functions), which the AOT executor compiles to
// PrimFuncs that main calls with call_tir (executor/control_flow.h).
//
// - IF: input 0 is the condition (bool, one element); the other inputs go to the
//   branch's inputs, in order; the branch's outputs are the operator's. Only the branch
//   the condition picks runs.
// - WHILE: the inputs are the loop-carried tensors and the outputs the same tensors
//   after the loop; the cond subgraph takes them and returns a bool (its first element
//   decides), the body takes them and returns their next values.
// - TFLM copies bytes between the operator's tensors and the subgraph's, so their types
//   must agree; here also their shapes (buffers are static), and a loop-carried tensor
//   keeps its shape across iterations. Anything else is refused by name.
// - A subgraph's constants become constants of the calling graph, passed to the
//   function as extra inputs; a subgraph output that is not computed there (an input or
//   constant returned as is, or one tensor returned twice) is copied.
// - Resource variables, CALL_ONCE and variable tensors inside a subgraph are refused.
#include "frontend/tflite/converter.h"

namespace mtir {
namespace tflite_import {

namespace {
constexpr int kMaxNesting = 8;  // subgraphs calling subgraphs, at most this deep

bool same_type(const TensorType& a, const TensorType& b) { return a.dtype == b.dtype && a.shape == b.shape; }
}  // namespace

Graph TfliteConverter::convert_function(size_t k) {
  sg_ = model_.subgraphs()->Get(static_cast<flatbuffers::uoffset_t>(k));
  subgraph_ = k;
  if (!sg_ || !sg_->inputs() || !sg_->outputs() || !sg_->operators()) fail("the subgraph lacks inputs, outputs or operators");
  for (flatbuffers::uoffset_t j = 0; j < sg_->inputs()->size(); ++j) {
    const int t = sg_->inputs()->Get(j);
    const TensorType ty = tensor_type(t);
    if (values_.count(t)) unsupported(tensor_label(t) + " is two of its inputs");
    const std::string n = tensor(t).name() ? short_name(tensor(t).name()->str()) : std::string();
    values_[t] = io_names_[t] = fresh(n.empty() ? "input_" + std::to_string(j) : n);
    types_[values_[t]] = ty;
    g_.inputs.push_back({values_[t], ty});
  }
  for (flatbuffers::uoffset_t j = 0; j < sg_->outputs()->size(); ++j)
    if (!io_names_.count(sg_->outputs()->Get(j))) io_names_[sg_->outputs()->Get(j)] = fresh("output_" + std::to_string(j));
  for (size_t i = 0; i < sg_->operators()->size(); ++i) {
    const tflite::Operator* op = nullptr;
    const BuiltinOperator code = operator_at(i, &op);
    convert(i, *op, code);
  }
  where_.clear();
  std::set<std::string> returned;
  for (flatbuffers::uoffset_t j = 0; j < sg_->outputs()->size(); ++j) {
    const int t = sg_->outputs()->Get(j);
    std::string v = produced_.count(t) ? values_.at(t) : std::string();
    if (v.empty() || !returned.insert(v).second) {
      const std::string from = value(t);
      v = emit(fresh("output_" + std::to_string(j)), "reshape", {from}, {{"newshape", types_.at(from).shape}});
      returned.insert(v);
    }
    g_.outputs.push_back(v);
  }
  if (!g_.state.empty()) unsupported("it has a variable tensor (state inside an IF/WHILE subgraph is not compiled)");
  return std::move(g_);
}

std::string TfliteConverter::subgraph_function(int64_t k, const std::string& role, std::vector<std::string>* extra) {
  const size_t n = model_.subgraphs()->size();
  if (k <= 0 || static_cast<size_t>(k) >= n)
    fail("its " + role + " subgraph " + std::to_string(k) + " is not one of the model's other subgraphs (it has " +
         std::to_string(n) + ")");
  if (depth_ >= kMaxNesting)
    unsupported("subgraphs call subgraphs more than " + std::to_string(kMaxNesting) + " deep (recursion is not compiled)");
  TfliteConverter child(model_, file_);
  child.depth_ = depth_ + 1;
  child.function_names_ = function_names_;
  child.scope_ = scope_ + "subgraph " + std::to_string(k) + " (the " + role + " of " +
                 where_.substr(0, where_.size() < 2 ? 0 : where_.size() - 2) + "), ";
  Graph f = child.convert_function(static_cast<size_t>(k));
  for (auto& [name, array] : f.constants) {
    f.inputs.push_back({name, TensorType{array.dtype, array.shape}});
    extra->push_back(add_constant(name, std::move(array)));
  }
  f.constants.clear();
  for (Graph& nested : f.functions) g_.functions.push_back(std::move(nested));
  f.functions.clear();
  std::string name = "subgraph" + std::to_string(k);
  for (int i = 1; !function_names_->insert(name).second; ++i) name = "subgraph" + std::to_string(k) + "_" + std::to_string(i);
  f.name = name;
  g_.functions.push_back(std::move(f));
  return name;
}

// Checks that function `f` takes `args` (tensors of this subgraph) as its first inputs.
void TfliteConverter::check_function_inputs(const Graph& f, const std::string& role, const std::vector<int>& args,
                                            size_t extra) {
  if (f.inputs.size() != args.size() + extra)
    unsupported("its " + role + " subgraph takes " + std::to_string(f.inputs.size() - extra) + " inputs, but it passes " +
                std::to_string(args.size()));
  for (size_t j = 0; j < args.size(); ++j)
    if (!same_type(f.inputs[j].second, tensor_type(args[j])))
      unsupported("it passes " + tensor_label(args[j]) + " (" + tensor_type(args[j]).str() + ") to its " + role +
                  " subgraph's input " + std::to_string(j) + ", which is " + f.inputs[j].second.str() +
                  " (the types and shapes must be the same: shapes are static)");
}

void TfliteConverter::check_function_outputs(const Graph& f, const std::string& role, const std::vector<int>& outs) {
  if (f.outputs.size() != outs.size())
    unsupported("its " + role + " subgraph returns " + std::to_string(f.outputs.size()) + " tensors, but it has " +
                std::to_string(outs.size()) + " outputs");
  for (size_t j = 0; j < outs.size(); ++j)
    if (!same_type(f.type_of(f.outputs[j]), tensor_type(outs[j])))
      unsupported("its " + role + " subgraph's output " + std::to_string(j) + " is " + f.type_of(f.outputs[j]).str() +
                  ", but its output " + tensor_label(outs[j]) + " is " + tensor_type(outs[j]).str() +
                  " (the types and shapes must be the same: shapes are static)");
}

// The graph names of `args`, then positions of `extra` appended to `inputs`.
static json positions(size_t first, size_t count, size_t extra_begin, size_t extra_count) {
  json p = json::array();
  for (size_t j = 0; j < count; ++j) p.push_back(first + j);
  for (size_t j = 0; j < extra_count; ++j) p.push_back(extra_begin + j);
  return p;
}

void TfliteConverter::if_op(const tflite::Operator& op) {
  const auto* o = op.builtin_options_as_IfOptions();
  if (!o) fail("it has no IfOptions (then_subgraph_index, else_subgraph_index)");
  const std::vector<int> ins = all_inputs(op);
  if (ins.empty()) fail("it has no inputs (input 0 is the condition)");
  if (tensor_type(ins[0]).dtype != DataType::Bool() || tensor_type(ins[0]).num_elements() != 1)
    unsupported("its condition " + tensor_label(ins[0]) + " is " + tensor_type(ins[0]).str() +
                " (TFLM's IF takes a bool tensor of one element)");
  const std::vector<int> args(ins.begin() + 1, ins.end());
  std::vector<std::string> then_extra, else_extra;
  const std::string then_fn = subgraph_function(o->then_subgraph_index(), "then branch", &then_extra);
  const std::string else_fn = subgraph_function(o->else_subgraph_index(), "else branch", &else_extra);
  const std::vector<int> outs = name_outputs(op);
  for (const auto& [fn, role, extra] : {std::make_tuple(then_fn, "then branch", then_extra.size()),
                                        std::make_tuple(else_fn, "else branch", else_extra.size())}) {
    check_function_inputs(*g_.function(fn), role, args, extra);
    check_function_outputs(*g_.function(fn), role, outs);
  }
  std::vector<std::string> inputs;
  for (int t : ins) inputs.push_back(value(t));
  inputs.insert(inputs.end(), then_extra.begin(), then_extra.end());
  inputs.insert(inputs.end(), else_extra.begin(), else_extra.end());
  json types = json::array();
  for (int t : outs) types.push_back({{"dtype", tensor_type(t).dtype.str()}, {"shape", tensor_type(t).shape}});
  emit(values_.at(outs[0]), "if", inputs,
       {{"then", then_fn}, {"else", else_fn}, {"outputs", types},
        {"then_args", positions(1, args.size(), ins.size(), then_extra.size())},
        {"else_args", positions(1, args.size(), ins.size() + then_extra.size(), else_extra.size())}});
  control_outputs(outs);
}

void TfliteConverter::while_op(const tflite::Operator& op) {
  const auto* o = op.builtin_options_as_WhileOptions();
  if (!o) fail("it has no WhileOptions (cond_subgraph_index, body_subgraph_index)");
  const std::vector<int> ins = all_inputs(op);
  if (ins.empty()) fail("it has no inputs (the loop-carried tensors)");
  const std::vector<int> outs = name_outputs(op);
  if (outs.size() != ins.size())
    fail("it has " + std::to_string(ins.size()) + " inputs but " + std::to_string(outs.size()) +
         " outputs (the loop-carried tensors are both)");
  for (size_t k = 0; k < ins.size(); ++k)
    if (!same_type(tensor_type(ins[k]), tensor_type(outs[k])))
      unsupported("loop-carried tensor " + std::to_string(k) + " enters as " + tensor_type(ins[k]).str() +
                  " and leaves as " + tensor_type(outs[k]).str() +
                  " (a shape that changes across iterations is not compiled: shapes are static, as TFLM requires)");
  std::vector<std::string> cond_extra, body_extra;
  const std::string cond_fn = subgraph_function(o->cond_subgraph_index(), "cond", &cond_extra);
  const std::string body_fn = subgraph_function(o->body_subgraph_index(), "body", &body_extra);
  const Graph& cond = *g_.function(cond_fn);
  check_function_inputs(cond, "cond", ins, cond_extra.size());
  if (cond.outputs.size() != 1 || cond.type_of(cond.outputs[0]).dtype != DataType::Bool())
    unsupported("its cond subgraph must return one bool tensor");
  check_function_inputs(*g_.function(body_fn), "body", ins, body_extra.size());
  check_function_outputs(*g_.function(body_fn), "body", outs);
  std::vector<std::string> inputs;
  for (int t : ins) inputs.push_back(value(t));
  inputs.insert(inputs.end(), cond_extra.begin(), cond_extra.end());
  inputs.insert(inputs.end(), body_extra.begin(), body_extra.end());
  emit(values_.at(outs[0]), "while", inputs,
       {{"cond", cond_fn}, {"body", body_fn}, {"carried", ins.size()},
        {"cond_args", positions(0, ins.size(), ins.size(), cond_extra.size())},
        {"body_args", positions(0, ins.size(), ins.size() + cond_extra.size(), body_extra.size())}});
  control_outputs(outs);
}

// Results 1 and up of the IF/WHILE node that computed outs[0].
void TfliteConverter::control_outputs(const std::vector<int>& outs) {
  for (size_t k = 1; k < outs.size(); ++k)
    emit(values_.at(outs[k]), "control_output", {values_.at(outs[0])},
         {{"index", k}, {"dtype", tensor_type(outs[k]).dtype.str()}, {"shape", tensor_type(outs[k]).shape}});
  record_outputs(outs);
}

std::vector<int> TfliteConverter::all_inputs(const tflite::Operator& op) const {
  std::vector<int> ins;
  for (size_t i = 0; op.inputs() && i < op.inputs()->size(); ++i) ins.push_back(input(op, i));
  return ins;
}

}  // namespace tflite_import
}  // namespace mtir
