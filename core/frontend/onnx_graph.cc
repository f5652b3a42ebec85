// The ONNX graph walk: names, initializers, node order, model inputs and outputs.
// The per-op mapping is in onnx_ops.cc.
#include <algorithm>
#include <map>

#include "frontend/onnx_convert.h"
#include "support/diagnostic.h"
#include "support/names.h"

namespace mtir {

namespace {

std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? sep : "") + v[i];
  return s;
}

TensorType type_of_array(const NDArray& a) { return TensorType{a.dtype, a.shape}; }

}  // namespace

std::string OnnxConverter::where() const {
  if (!node_) return "the graph";
  std::string out = node_->output_size() > 0 ? node_->output(0) : node_->name();
  return "node '" + out + "' (" + node_->op_type() + ")";
}

void OnnxConverter::unsupported(const std::string& what) const {
  user_error({}, "unsupported: " + where() + ": " + what);
}

void OnnxConverter::invalid(const std::string& what) const { user_error({}, where() + ": " + what); }

std::string OnnxConverter::resolve(const std::string& name) const {
  auto it = aliases_.find(name);
  return it == aliases_.end() ? name : it->second;
}

std::string OnnxConverter::input(size_t i) const {
  if (i >= num_inputs()) return "";
  return resolve(node_->input(static_cast<int>(i)));
}

TensorType OnnxConverter::type_of(const std::string& name) const {
  auto it = types_.find(name);
  if (it != types_.end()) return it->second;
  auto p = pending_inputs_.find(name);
  if (p != pending_inputs_.end()) {
    // A run-time input whose shape or dtype we cannot use.
    const OnnxValueInfo& vi = *p->second;
    if (!vi.is_tensor_) user_error({}, "unsupported: model input '" + name + "' is not a tensor");
    for (size_t k = 0; k < vi.dims_.size(); ++k) {
      const auto& d = vi.dims_[k];
      if (!d.has_value || d.value <= 0)
        user_error({}, "unsupported: model input '" + name + "' has a dynamic shape (dimension " + std::to_string(k) +
                           " is " + (d.has_param ? "'" + d.param + "'" : std::string("unknown")) +
                           "); give it a fixed shape");
    }
    user_error({}, "unsupported: model input '" + name + "' has no shape; give it a fixed shape");
  }
  invalid("input '" + name + "' is not defined");
}

const NDArray& OnnxConverter::static_value(size_t i, const std::string& role) {
  std::string name = input(i);
  if (name.empty()) invalid("input " + std::to_string(i) + " (" + role + ") is missing");
  auto c = g_.constants.find(name);
  if (c != g_.constants.end()) return c->second;
  auto known = options_.known_inputs.find(name);
  bool is_input = std::any_of(g_.inputs.begin(), g_.inputs.end(), [&](const auto& in) { return in.first == name; }) ||
                  pending_inputs_.count(name);
  if (is_input && known != options_.known_inputs.end()) {
    frozen_inputs_.insert(name);
    g_.inputs.erase(std::remove_if(g_.inputs.begin(), g_.inputs.end(), [&](const auto& in) { return in.first == name; }),
                    g_.inputs.end());
    pending_inputs_.erase(name);
    add_constant(name, known->second);
    return g_.constants.at(name);
  }
  unsupported("input '" + role + "' must be a compile-time constant (an initializer or a Constant), but '" + name +
              "' is " + (is_input ? "a model input" : "computed at run time"));
}

std::vector<int64_t> OnnxConverter::static_ints(size_t i, const std::string& role) {
  const NDArray& a = static_value(i, role);
  if (!a.dtype.is_integer()) invalid("input '" + role + "' must hold integers, not " + a.dtype.str());
  std::vector<int64_t> v;
  for (int64_t k = 0; k < a.num_elements(); ++k) v.push_back(a.get_int(k));
  return v;
}

bool OnnxConverter::has_attr(const std::string& name) const {
  for (const auto& a : node_->attribute())
    if (a.name() == name) return true;
  return false;
}

const OnnxAttribute* OnnxConverter::attr(const std::string& name) {
  attrs_read_.insert(name);
  for (const auto& a : node_->attribute())
    if (a.name() == name) {
      if (!a.ref_attr_name().empty()) unsupported("attribute '" + name + "' refers to a function attribute");
      return &a;
    }
  return nullptr;
}

int64_t OnnxConverter::attr_int(const std::string& name, int64_t def) {
  const auto* a = attr(name);
  if (!a) return def;
  if (a->type() != OnnxAttribute::kInt) invalid("attribute '" + name + "' must be an integer");
  return a->i();
}

double OnnxConverter::attr_float(const std::string& name, double def) {
  const auto* a = attr(name);
  if (!a) return def;
  if (a->type() != OnnxAttribute::kFloat) invalid("attribute '" + name + "' must be a float");
  return a->f();
}

std::string OnnxConverter::attr_string(const std::string& name, const std::string& def) {
  const auto* a = attr(name);
  if (!a) return def;
  if (a->type() != OnnxAttribute::kString) invalid("attribute '" + name + "' must be a string");
  return a->s();
}

std::vector<int64_t> OnnxConverter::attr_ints(const std::string& name, const std::vector<int64_t>& def) {
  const auto* a = attr(name);
  if (!a) return def;
  if (a->type() != OnnxAttribute::kInts) invalid("attribute '" + name + "' must be a list of integers");
  return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

std::string OnnxConverter::temp(const std::string& hint) {
  std::string base = (node_ && node_->output_size() ? node_->output(0) : std::string("t")) + "__" + hint;
  std::string name = base;
  for (int k = 1; names_.count(name); ++k) name = base + std::to_string(k);
  names_.insert(name);
  return name;
}

const NDArray* OnnxConverter::constant(const std::string& name) const {
  auto it = g_.constants.find(resolve(name));
  return it == g_.constants.end() ? nullptr : &it->second;
}

void OnnxConverter::add_constant(const std::string& name, NDArray value) {
  types_[name] = type_of_array(value);
  g_.constants[name] = std::move(value);
}

std::string OnnxConverter::emit(const std::string& out, const std::string& op, const std::vector<std::string>& inputs,
                                const nlohmann::json& attrs) {
  std::vector<TensorType> in_types;
  for (const auto& in : inputs) in_types.push_back(type_of(in));
  GraphNode n;
  try {
    n = typed_node(out, op, inputs, in_types, attrs);
  } catch (const DiagnosticError& e) {
    if (e.internal()) throw;
    std::string m = e.diagnostics().empty() ? "invalid" : e.diagnostics()[0].message;
    std::vector<std::string> shapes;
    for (size_t k = 0; k < inputs.size(); ++k) shapes.push_back(inputs[k] + ": " + in_types[k].str());
    // Our ops refuse what they do not implement with these words; keep the class.
    bool refusal = m.find("not supported") != std::string::npos || m.find("only float32") != std::string::npos ||
                   m.find("unsupported") != std::string::npos;
    user_error({}, std::string(refusal ? "unsupported: " : "") + where() + ": " + m,
               {"the inputs are " + join(shapes, ", ")});
  }
  names_.insert(out);
  types_[out] = n.type;
  g_.nodes.push_back(std::move(n));
  return out;
}

void OnnxConverter::declare_inputs() {
  std::set<std::string> inits;
  for (const auto& t : graph_.initializer()) {
    if (t.name().empty()) user_error({}, "an initializer has no name");
    if (!names_.insert(t.name()).second) user_error({}, "initializer '" + t.name() + "' is defined twice");
    inits.insert(t.name());
    add_constant(t.name(), onnx_tensor_to_ndarray(t, "initializer '" + t.name() + "'"));
  }
  if (graph_.sparse_initializer_size() > 0) user_error({}, "unsupported: sparse initializers");
  for (const auto& in : graph_.input()) {
    const std::string& name = in.name();
    if (inits.count(name)) continue;  // IR < 4 lists initializers as inputs too
    if (!names_.insert(name).second) user_error({}, "model input '" + name + "' is defined twice");
    auto known = options_.known_inputs.find(name);
    if (known != options_.known_inputs.end()) {
      types_[name] = type_of_array(known->second);
      g_.inputs.emplace_back(name, types_[name]);
      continue;
    }
    // A fixed shape and a dtype we hold: an input of the graph; otherwise type_of
    // refuses it where it is used.
    if (!in.is_tensor_) user_error({}, "unsupported: model input '" + name + "' is not a tensor (a sequence, map or optional)");
    DataType dt;
    bool ok = in.has_shape_;
    std::vector<int64_t> shape;
    if (ok) {
      for (const auto& d : in.dims_) {
        if (!d.has_value || d.value <= 0) ok = false;
        shape.push_back(d.value);
      }
    }
    int code = in.elem_type_;
    if (ok && code != kOnnxFloat) {
      if (code != kOnnxUndefined && onnx_dtype_from_code(code, &dt)) {
        types_[name] = TensorType{dt, shape};
        g_.inputs.emplace_back(name, types_[name]);
        continue;
      }
      user_error({}, "unsupported: model input '" + name + "' has an element type we cannot hold (code " +
                         std::to_string(code) + ")");
    }
    if (ok) {
      types_[name] = TensorType{DataType::Float(32), shape};
      g_.inputs.emplace_back(name, types_[name]);
    } else {
      pending_inputs_[name] = &in;
    }
  }
}

std::vector<const OnnxNode*> OnnxConverter::sorted_nodes() const {
  // Which node produces each name; then every input must be known.
  std::map<std::string, size_t> producer;
  int count = graph_.node_size();
  for (int i = 0; i < count; ++i)
    for (const auto& o : graph_.node(i).output()) {
      if (o.empty()) continue;
      if (names_.count(o) || producer.count(o))
        user_error({}, "tensor '" + o + "' is defined twice (output of node " + std::to_string(i) + ", '" +
                           graph_.node(i).op_type() + "')");
      producer[o] = static_cast<size_t>(i);
    }
  std::vector<size_t> pending(count, 0);
  std::vector<std::vector<size_t>> consumers(count);
  for (int i = 0; i < count; ++i) {
    const auto& n = graph_.node(i);
    for (const auto& in : n.input()) {
      if (in.empty()) continue;
      auto p = producer.find(in);
      if (p != producer.end()) {
        ++pending[i];
        consumers[p->second].push_back(static_cast<size_t>(i));
      } else if (!names_.count(in) && !pending_inputs_.count(in)) {
        std::string out = n.output_size() ? n.output(0) : n.name();
        user_error({}, "node '" + out + "' (" + n.op_type() + "): input '" + in +
                           "' is not defined: not a model input, an initializer or the output of a node "
                           "(a missing initializer?)");
      }
    }
  }
  // Kahn's algorithm in file order: a graph in order keeps its order.
  std::set<size_t> ready;
  for (int i = 0; i < count; ++i)
    if (pending[i] == 0) ready.insert(static_cast<size_t>(i));
  std::vector<const OnnxNode*> order;
  while (!ready.empty()) {
    size_t i = *ready.begin();
    ready.erase(ready.begin());
    order.push_back(&graph_.node(static_cast<int>(i)));
    for (size_t c : consumers[i])
      if (--pending[c] == 0) ready.insert(c);
  }
  if (static_cast<int>(order.size()) != count) {
    std::vector<std::string> stuck;
    for (int i = 0; i < count; ++i)
      if (pending[i] > 0) {
        const auto& n = graph_.node(i);
        stuck.push_back("'" + (n.output_size() ? n.output(0) : n.name()) + "' (" + n.op_type() + ")");
      }
    user_error({}, "the graph has a cycle: nodes " + join(stuck, ", ") + " depend on each other's outputs");
  }
  return order;
}

void OnnxConverter::convert(const OnnxNode& n) {
  node_ = &n;
  attrs_read_.clear();
  if (!n.domain().empty() && n.domain() != "ai.onnx")
    unsupported("operator domain '" + n.domain() + "' (only the default ONNX domain is supported)");
  for (const auto& o : n.output()) names_.insert(o);
  if (qdq_.absorbed.count(&n)) {  // a DQ, Relu or Q that a QDQ group replaces
    node_ = nullptr;
    return;
  }
  auto group = qdq_.groups.find(&n);
  if (group != qdq_.groups.end()) convert_qdq_group(*this, group->second);
  else convert_onnx_node(*this);
  for (const auto& a : n.attribute())
    if (!attrs_read_.count(a.name()))
      unsupported("attribute '" + a.name() + "'" + (opset_ < 7 ? " (opset " + std::to_string(opset_) + ")" : ""));
  node_ = nullptr;
}

void OnnxConverter::finish_outputs() {
  for (const auto& o : graph_.output()) {
    std::string name = resolve(o.name());
    if (!types_.count(name) && !pending_inputs_.count(name))
      user_error({}, "graph output '" + o.name() + "' is not computed by any node");
    bool is_node = std::any_of(g_.nodes.begin(), g_.nodes.end(), [&](const GraphNode& n) { return n.name == name; });
    bool taken = std::find(g_.outputs.begin(), g_.outputs.end(), name) != g_.outputs.end();
    if (!is_node || taken || name != o.name()) {
      // An output that is an input, a constant, an alias or listed twice gets its own
      // copy, so each output is a distinct tensor named as in the model.
      std::string copy = o.name();
      if (names_.count(copy) && copy == name) copy = temp("out");
      TensorType t = type_of(name);
      nlohmann::json shape = t.shape;
      if (t.shape.empty()) user_error({}, "unsupported: graph output '" + o.name() + "' is a scalar copy of an input");
      emit(copy, "reshape", {name}, {{"newshape", shape}});
      name = copy;
    }
    g_.outputs.push_back(name);
  }
}

Graph OnnxConverter::run() {
  g_.name = graph_.name().empty() ? "model" : to_c_identifier(graph_.name());
  declare_inputs();
  std::vector<const OnnxNode*> order = sorted_nodes();
  qdq_ = plan_qdq(*this, graph_, order);
  for (const auto* n : order) convert(*n);
  finish_outputs();
  // Run-time inputs must be float32, float64 or integers (what the ops take; each op
  // refuses the types it does not compute on); unused ones stay in the signature.
  for (const auto& [name, vi] : pending_inputs_) type_of(name);  // refuses with the reason
  for (const auto& [name, t] : g_.inputs)
    if (t.dtype != DataType::Float(32) && t.dtype != DataType::Float(64) && !t.dtype.is_integer())
      user_error({}, "unsupported: model input '" + name + "' has dtype " + t.dtype.str() +
                         "; only float32, float64 and integer run-time inputs are supported");
  if (g_.nodes.empty()) user_error({}, "unsupported: the graph has no operator");
  return std::move(g_);
}

}  // namespace mtir
