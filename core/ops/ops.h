// The operator library: every graph operator as shape inference plus a builder that
// emits a PrimFunc in our TIR. One registry; the JSON graph and ONNX frontends, the
// AOT executor and the playground all look operators up here.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ir/function.h"

namespace mtir {

struct TensorType {
  DataType dtype = DataType::Float(32);
  std::vector<int64_t> shape;
  int64_t num_elements() const;
  std::string str() const;  // "float32(1, 8, 8, 8)"
};

// Whether an op's output may share memory with an input. The AOT executor and the
// memory planner (transform/plan_memory.cc) read it; the planner also checks the
// kernel before it lets an output overwrite an input.
enum class OutputSharing {
  kNone,         // the output needs bytes of its own (conv2d reads a window of its input)
  kView,         // the output is input 0's bytes under another shape (reshape, flatten):
                 // no kernel runs, the output is a view of the input
  kElementwise,  // the kernel reads each input element only in the statement that writes
                 // the same output element: the output may be written over an input of
                 // the same shape and dtype that is read by nothing later
};

struct OpDef {
  std::string name;  // "conv2d", "dense", "add", ...
  // Checks the input types and the attributes and returns the output type. Throws a
  // user error (DiagnosticError) whose message names the problem ("conv2d: weight has
  // 3 input channels but the data has 4"); callers add the node name.
  std::function<TensorType(const std::vector<TensorType>& inputs, const nlohmann::json& attrs)> infer;
  // Emits the PrimFunc `func_name` computing the op: one buffer parameter per input, in
  // order, then one for the output (destination passing). Called only after `infer`
  // succeeded on the same inputs and attributes.
  std::function<PrimFunc(const std::string& func_name, const std::vector<TensorType>& inputs,
                         const TensorType& output, const nlohmann::json& attrs)>
      build;
  OutputSharing sharing = OutputSharing::kNone;
  // The inputs the kernel updates in place (positions, from the attributes and the
  // number of inputs): persistent state (Graph::state, a TFLite variable tensor) that
  // the op reads and writes back, as SVDF and LSTM do. Such an input must be a state of
  // the graph; the node never fuses and its state buffer is never shared or planned.
  // Empty (or unset): the kernel writes only its output.
  std::function<std::vector<size_t>(const nlohmann::json& attrs, size_t num_inputs)> writes_inputs = nullptr;
};

// The positions of node inputs `op` writes in place (OpDef::writes_inputs), sorted.
std::vector<size_t> written_inputs(const OpDef& op, const nlohmann::json& attrs, size_t num_inputs);

// nullptr for an unknown op.
const OpDef* find_op(const std::string& name);
// Every op, sorted by name (for docs, "did you mean" and the playground).
const std::vector<OpDef>& all_op_defs();

}  // namespace mtir
