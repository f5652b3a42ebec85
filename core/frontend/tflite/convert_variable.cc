// Resource variables and CALL_ONCE (TFLM's micro_resource_variable.cc, var_handle.cc,
// read_variable.cc, assign_variable.cc, call_once.cc):
//
// - VAR_HANDLE names a variable by (container, shared_name); a null container matches
//   the variable of that shared_name in any container, as TFLM's FindId. It makes no node.
// - A variable is allocated when TFLM prepares its first ASSIGN_VARIABLE (every subgraph,
//   in subgraph order): it takes that value tensor's size, and its bytes are set to the
//   tensor's zero point cast to int8 (a memset: 0 without quantization). Here it becomes
//   a state of the graph (Graph::state) of that dtype and shape, the same bytes.
// - CALL_ONCE runs its init subgraph on the first Invoke. That subgraph has no inputs,
//   so what it assigns is known when compiling: its ASSIGN_VARIABLEs of constants become
//   the state's initial value, which the artifact starts from and its reset restores.
//   Any other operator in an init subgraph is refused by name.
// - READ_VARIABLE copies the variable (read_variable), or reads the value of the last
//   ASSIGN_VARIABLE of this run, which is the same bytes; ASSIGN_VARIABLE writes it in
//   place (assign_variable). Those nodes run in the model's order (executor/aot.cc).
// - IF and WHILE are dispatched from here to convert_control_flow.cc.
#include "frontend/tflite/converter.h"

namespace mtir {
namespace tflite_import {

std::string TfliteConverter::variable_of(int handle) {
  auto it = handles_.find({subgraph_, handle});
  if (it == handles_.end())
    fail(tensor_label(handle) + " is not a VAR_HANDLE's output (a resource variable is named by a VAR_HANDLE in the "
                                "same subgraph)");
  return it->second;
}

std::string TfliteConverter::variable_state(const std::string& key) {
  Variable& v = variables_.at(key);
  if (v.state.empty()) {
    v.state = fresh(short_name(v.label).empty() ? "variable" : short_name(v.label));
    g_.state[v.state] = v.initial;
    types_[v.state] = v.type;
  }
  return v.state;
}

void TfliteConverter::collect_variables() {
  const tflite::SubGraph* main = sg_;
  for (size_t s = 0; s < model_.subgraphs()->size(); ++s) {
    sg_ = model_.subgraphs()->Get(static_cast<flatbuffers::uoffset_t>(s));
    subgraph_ = s;
    if (!sg_ || !sg_->operators()) fail("subgraph " + std::to_string(s) + " lacks operators");
    for (size_t i = 0; i < sg_->operators()->size(); ++i) {
      const tflite::Operator* op = nullptr;
      const BuiltinOperator code = operator_at(i, &op);
      if (s != 0) where_ = "subgraph " + std::to_string(s) + ", " + where_;
      if (code == BuiltinOperator::VAR_HANDLE) {
        const auto* o = op->builtin_options_as_VarHandleOptions();
        if (!o || !o->shared_name()) fail("it has no shared_name (the variable's name)");
        const std::string name = o->shared_name()->str();
        std::string key = (o->container() ? o->container()->str() : std::string()) + '\n' + name;
        if (!o->container())
          for (const auto& [k, v] : variables_)
            if (v.label == name) key = k;
        const std::vector<int> outs = outputs(*op);
        if (outs.size() != 1) fail("it has " + std::to_string(outs.size()) + " outputs (VAR_HANDLE has one)");
        handles_[{s, outs[0]}] = key;
        variables_[key].label = name;
      } else if (code == BuiltinOperator::ASSIGN_VARIABLE) {
        Variable& v = variables_.at(variable_of(input(*op, 0)));
        if (!v.initial.data.empty()) continue;
        const int value = input(*op, 1);
        v.type = tensor_type(value);
        if (v.type.shape.empty())
          unsupported("variable '" + v.label + "' is a scalar (graph tensors have rank 1 or more)");
        v.initial = NDArray::zeros(v.type.dtype, v.type.shape);
        const Quant q = quant(value, false);
        const int64_t fill = q.zero_point.empty() ? 0 : static_cast<uint8_t>(static_cast<int8_t>(q.zero_point[0]));
        std::fill(v.initial.data.begin(), v.initial.data.end(), static_cast<uint8_t>(fill));
      }
    }
  }
  sg_ = main;
  subgraph_ = 0;
  where_.clear();
}

// The variable `handle` names, checked to take `value` (same dtype and shape).
static void check_assignment(const std::string& label, const TensorType& variable, const TensorType& value,
                             const std::function<void(const std::string&)>& refuse) {
  if (value.dtype != variable.dtype || value.shape != variable.shape)
    refuse("it assigns " + value.str() + " to variable '" + label + "', which is " + variable.str() +
           " (the type of its first assignment: TFLM copies bytes of one size)");
}

void TfliteConverter::call_once(const tflite::Operator& op) {
  const auto* o = op.builtin_options_as_CallOnceOptions();
  const int64_t k = o ? o->init_subgraph_index() : 0;
  const size_t n = model_.subgraphs()->size();
  if (k <= 0 || static_cast<size_t>(k) >= n)
    fail("its init subgraph " + std::to_string(k) + " is not one of the model's other subgraphs (it has " +
         std::to_string(n) + ")");
  for (const auto& [key, v] : variables_)
    if (!v.state.empty())
      unsupported("it comes after an operator that uses variable '" + v.label +
                  "': on the first run that operator would see the variable before CALL_ONCE sets it "
                  "(CALL_ONCE must come first)");
  const tflite::SubGraph* main = sg_;
  const std::string outer = where_;
  sg_ = model_.subgraphs()->Get(static_cast<flatbuffers::uoffset_t>(k));
  subgraph_ = static_cast<size_t>(k);
  for (size_t i = 0; i < sg_->operators()->size(); ++i) {
    const tflite::Operator* iop = nullptr;
    const BuiltinOperator code = operator_at(i, &iop);
    where_ = outer + "init subgraph " + std::to_string(k) + ", " + where_;
    if (code == BuiltinOperator::VAR_HANDLE) continue;
    if (code != BuiltinOperator::ASSIGN_VARIABLE)
      unsupported("an init subgraph runs at compile time, and there only VAR_HANDLE and ASSIGN_VARIABLE of a "
                  "constant are supported");
    Variable& v = variables_.at(variable_of(input(*iop, 0)));
    const int value = input(*iop, 1);
    if (!has_data(value))
      unsupported(tensor_label(value) + " is computed: an init subgraph's assignments must be constants");
    check_assignment(v.label, v.type, tensor_type(value), [&](const std::string& m) { unsupported(m); });
    v.initial = constant_value(value);
  }
  sg_ = main;
  subgraph_ = 0;
  where_ = outer;
}

bool TfliteConverter::convert_control_op(const tflite::Operator& op, BuiltinOperator code) {
  const bool stateful = code == BuiltinOperator::VAR_HANDLE || code == BuiltinOperator::READ_VARIABLE ||
                        code == BuiltinOperator::ASSIGN_VARIABLE || code == BuiltinOperator::CALL_ONCE;
  if (depth_ > 0 && stateful)
    unsupported("resource variables and CALL_ONCE inside an IF/WHILE subgraph are not compiled (only in the model's "
                "main subgraph)");
  switch (code) {
    case BuiltinOperator::VAR_HANDLE:
      produced_.insert(outputs(op)[0]);  // names a variable; no node
      return true;
    case BuiltinOperator::READ_VARIABLE: {
      const std::string key = variable_of(input(op, 0));
      Variable& v = variables_.at(key);
      if (v.initial.data.empty())
        unsupported("variable '" + v.label + "' is read, but no ASSIGN_VARIABLE gives it a value (TFLM allocates a "
                    "variable when it prepares its first ASSIGN_VARIABLE)");
      if (outputs(op).size() != 1) fail("it has " + std::to_string(outputs(op).size()) + " outputs (READ_VARIABLE has one)");
      const std::vector<int> outs = name_outputs(op);
      if (!v.current.empty())
        emit(values_.at(outs[0]), "reshape", {v.current}, {{"newshape", v.type.shape}});
      else
        emit(values_.at(outs[0]), "read_variable", {variable_state(key)});
      record_outputs(outs);
      return true;
    }
    case BuiltinOperator::ASSIGN_VARIABLE: {
      const std::string key = variable_of(input(op, 0));
      Variable& v = variables_.at(key);
      const int value = input(op, 1);
      if (op.outputs() && op.outputs()->size() != 0) fail("it has outputs (ASSIGN_VARIABLE has none)");
      check_assignment(v.label, v.type, tensor_type(value), [&](const std::string& m) { unsupported(m); });
      const std::string state = variable_state(key);
      v.current = emit(fresh(state + "_assigned"), "assign_variable", {state, this->value(value)});
      return true;
    }
    case BuiltinOperator::CALL_ONCE:
      call_once(op);
      return true;
    case BuiltinOperator::IF:
      if_op(op);
      return true;
    case BuiltinOperator::WHILE:
      while_op(op);
      return true;
    default:
      return false;
  }
}

}  // namespace tflite_import
}  // namespace mtir
