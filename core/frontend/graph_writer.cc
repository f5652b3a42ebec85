// The JSON graph writer, the inverse of the loader (graph.h, docs/graph-format.md):
// what `microtir import` writes and what the browser's ONNX converter reproduces.
#include <cmath>

#include "frontend/graph.h"
#include "support/diagnostic.h"

namespace mtir {

namespace {

// Keys in the order docs/graph-format.md shows them, not sorted.
using ojson = nlohmann::ordered_json;

// JSON has no NaN or infinity (nlohmann would write null, which the loader refuses).
template <typename Json>
void check_finite(const Json& j, const std::string& what) {
  if (j.is_number_float() && !std::isfinite(j.template get<double>()))
    user_error({}, "unsupported: " + what + " holds NaN or infinity, which a JSON graph cannot hold");
  if (j.is_array() || j.is_object())
    for (const auto& v : j) check_finite(v, what);
}

ojson constant_json(const std::string& name, const NDArray& a, const char* kind = "constant") {
  if (!is_graph_dtype(a.dtype))
    user_error({}, "unsupported: " + std::string(kind) + " '" + name + "' has dtype " + a.dtype.str() +
                       ", which a JSON graph cannot hold");
  ojson values = ojson::array();
  for (int64_t i = 0; i < a.num_elements(); ++i) {
    if (a.dtype.is_float()) values.push_back(a.get_float(i));
    else values.push_back(a.get_int(i));
  }
  check_finite(values, std::string(kind) + " '" + name + "'");
  ojson c = ojson::object();
  c["name"] = name;
  c["shape"] = a.shape;
  c["dtype"] = a.dtype.str();
  c["values"] = std::move(values);
  return c;
}

ojson to_ordered_json(const Graph& g) {
  if (!g.functions.empty())
    user_error({}, "unsupported: the graph has subgraph functions (control flow: '" + g.functions[0].name +
                       "'), which a JSON graph cannot hold");
  ojson inputs = ojson::array();
  for (const auto& [name, t] : g.inputs) {
    if (!is_graph_dtype(t.dtype))
      user_error({}, "unsupported: input '" + name + "' has dtype " + t.dtype.str() +
                         ", which a JSON graph cannot hold");
    ojson in = ojson::object();
    in["name"] = name;
    in["shape"] = t.shape;
    in["dtype"] = t.dtype.str();
    inputs.push_back(std::move(in));
  }
  ojson constants = ojson::array();
  for (const auto& [name, a] : g.constants) constants.push_back(constant_json(name, a));
  ojson state = ojson::array();
  for (const auto& [name, a] : g.state) state.push_back(constant_json(name, a, "state"));
  ojson nodes = ojson::array();
  for (const auto& n : g.nodes) {
    ojson j = ojson::object();
    j["name"] = n.name;
    j["op"] = n.op;
    j["inputs"] = n.inputs;
    if (!n.attrs.empty()) {
      check_finite(n.attrs, "an attribute of node '" + n.name + "'");
      j["attrs"] = ojson::parse(n.attrs.dump());
    }
    if (!n.device.empty()) j["device"] = n.device;
    nodes.push_back(std::move(j));
  }
  ojson root = ojson::object();
  root["format"] = "microtir-graph";
  root["version"] = 1;
  root["name"] = g.name;
  root["inputs"] = std::move(inputs);
  root["constants"] = std::move(constants);
  if (!state.empty()) root["state"] = std::move(state);
  root["nodes"] = std::move(nodes);
  root["outputs"] = g.outputs;
  if (!g.quantization.empty()) {
    ojson q = ojson::object();
    for (const auto& [name, sz] : g.quantization) q[name] = {{"scale", sz.first}, {"zero_point", sz.second}};
    root["quantization"] = std::move(q);
  }
  return root;
}

}  // namespace

nlohmann::json graph_to_json(const Graph& g) { return nlohmann::json::parse(to_ordered_json(g).dump()); }

// One line per field, and per input, constant and node of the lists: diffable, and
// readable where a constant's values are long.
std::string write_graph_json(const Graph& g) {
  ojson j = to_ordered_json(g);
  std::string s = "{";
  for (auto it = j.begin(); it != j.end(); ++it) {
    s += (it == j.begin() ? "\n  " : ",\n  ") + ojson(it.key()).dump() + ": ";
    if (it->is_array() && !it->empty() && it.key() != "outputs") {
      s += "[";
      for (size_t i = 0; i < it->size(); ++i) s += (i ? ",\n    " : "\n    ") + (*it)[i].dump();
      s += "\n  ]";
    } else {
      s += it->dump();
    }
  }
  return s + "\n}\n";
}

}  // namespace mtir
