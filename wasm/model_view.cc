#include "model_view.h"

namespace mtir::wasm {
namespace {

using nlohmann::json;

int64_t bytes_of(const TensorType& t) { return t.num_elements() * t.dtype.bytes(); }

json type_json(const TensorType& t) { return {{"dtype", t.dtype.str()}, {"shape", t.shape}}; }

bool contains(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

}  // namespace

int64_t node_macs(const GraphNode& node, const std::vector<TensorType>& inputs) {
  const int64_t out = node.type.num_elements();
  if (inputs.size() < 2 || out == 0) return 0;
  const TensorType& w = inputs[1];
  if (contains(node.op, "conv") && w.shape.size() == 4 && node.type.shape.size() == 4) {
    // Each output element sums over one filter: the weight's elements per output channel.
    const bool nhwc = node.attrs.is_object() && node.attrs.value("layout", std::string("NCHW")) == "NHWC";
    const int64_t channels = node.type.shape[nhwc ? 3 : 1];
    return channels > 0 ? out * (w.num_elements() / channels) : 0;
  }
  if ((contains(node.op, "dense") || contains(node.op, "gemm") || contains(node.op, "matmul")) && w.shape.size() >= 2 &&
      !node.type.shape.empty()) {
    // Each output element sums over the reduction axis K: the weight is [N, K] or [K, N]
    // (2-d, N the output's last axis) or [..., K, N].
    const int64_t n = node.type.shape.back();
    const int64_t k = w.shape.size() == 2 ? (n > 0 ? w.num_elements() / n : 0) : w.shape[w.shape.size() - 2];
    return out * k;
  }
  return 0;
}

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
    int64_t weight_bytes = 0;
    for (const auto& in : n.inputs) {
      in_types.push_back(types.at(in));
      if (auto c = g.constants.find(in); c != g.constants.end()) weight_bytes += static_cast<int64_t>(c->second.data.size());
    }
    const int64_t macs = node_macs(n, in_types);
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
    j["activation_bytes"] = bytes_of(n.type);
    nodes.push_back(std::move(j));
  }
  return {{"name", g.name},       {"inputs", inputs},         {"constants", constants},
          {"nodes", nodes},       {"outputs", g.outputs},     {"macs", total_macs},
          {"weight_bytes", total_weights}};
}

}  // namespace mtir::wasm
