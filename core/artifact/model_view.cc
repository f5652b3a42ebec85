#include "artifact/model_view.h"

#include "ops/macs.h"

namespace mtir {
namespace {

using nlohmann::json;

int64_t bytes_of(const TensorType& t) { return t.num_elements() * t.dtype.bytes(); }

json type_json(const TensorType& t) { return {{"dtype", t.dtype.str()}, {"shape", t.shape}}; }

}  // namespace

json model_view_json(const LoadedModel& model) {
  const Graph& g = model.graph;
  const auto types = g.all_types();
  json inputs = json::array(), constants = json::array(), nodes = json::array();
  for (const auto& [name, t] : g.inputs) {
    json j = type_json(t);
    j["name"] = name;
    inputs.push_back(std::move(j));
  }
  for (const auto& [name, a] : g.constants) {
    json j = type_json(TensorType{a.dtype, a.shape});
    j["name"] = name;
    j["bytes"] = a.data.size();
    constants.push_back(std::move(j));
  }
  // A node run band by band (patch stages) has one kernel per band shape.
  std::map<std::string, json> band_kernels;
  for (const auto& [kernel, node] : model.aot.band_kernel_of) band_kernels[node].push_back(kernel);
  int64_t total_macs = 0, total_weights = 0;
  for (const GraphNode& n : g.nodes) {
    std::vector<TensorType> in_types;
    int64_t weight_bytes = 0, state_bytes = 0;
    for (const auto& in : n.inputs) {
      in_types.push_back(types.at(in));
      if (auto c = g.constants.find(in); c != g.constants.end()) weight_bytes += static_cast<int64_t>(c->second.data.size());
      // Persistent state (an LSTM's hidden and cell state, an SVDF's memory): bytes the
      // artifact keeps from one run to the next.
      if (auto st = g.state.find(in); st != g.state.end()) state_bytes += static_cast<int64_t>(st->second.data.size());
    }
    const int64_t macs = nominal_macs(n.op, in_types, n.type, n.attrs);
    total_macs += macs;
    total_weights += weight_bytes;
    auto kernel = model.aot.kernel_of.find(n.name);
    json j = type_json(n.type);
    j["name"] = n.name;
    j["op"] = n.op;
    j["inputs"] = n.inputs;
    j["attrs"] = n.attrs;
    j["device"] = n.device;
    j["kernel"] = kernel == model.aot.kernel_of.end() ? "" : kernel->second;
    if (auto b = band_kernels.find(n.name); b != band_kernels.end()) j["band_kernels"] = b->second;
    j["macs"] = macs;
    j["weight_bytes"] = weight_bytes;
    j["state_bytes"] = state_bytes;
    j["activation_bytes"] = bytes_of(n.type);
    nodes.push_back(std::move(j));
  }
  return {{"name", g.name},       {"inputs", inputs},         {"constants", constants},
          {"nodes", nodes},       {"outputs", g.outputs},     {"macs", total_macs},
          {"weight_bytes", total_weights}};
}

}  // namespace mtir
