// Internal to the ONNX frontend: the converter from an ONNX graph (onnx_model.h, the
// protobuf-free form) to our Graph.
// onnx_graph.cc walks the graph (names, initializers, order, inputs and outputs);
// onnx_ops.cc maps each ONNX operator onto ops of the registry.
#pragma once

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "frontend/graph.h"
#include "frontend/onnx.h"
#include "frontend/onnx_model.h"

namespace mtir {

bool onnx_dtype_from_code(int code, DataType* out);
NDArray onnx_tensor_to_ndarray(const OnnxTensor& t, const std::string& what);

class OnnxConverter;

// QDQ folding (onnx_qdq.cc): DequantizeLinear -> op [-> Relu] -> QuantizeLinear groups
// that become one integer kernel (`kMatrix`: Conv, Gemm, MatMul as qlinear_conv /
// qlinear_matmul; `kAdd`: Add as qlinear_add) or run on the quantized tensor as they are (`kPassThrough`: MaxPool and
// the data movement ops, when input and output share scale and zero point).
struct QdqGroup {
  enum class Kind { kMatrix, kPassThrough, kAdd } kind = Kind::kMatrix;
  const OnnxNode* op = nullptr;
  const OnnxNode* relu = nullptr;            // a Relu between op and quant, or null
  const OnnxNode* quant = nullptr;
  std::vector<const OnnxNode*> dequant;      // the DequantizeLinear of each op input, or null
};
struct QdqPlan {
  std::map<const OnnxNode*, QdqGroup> groups;  // by op node
  std::set<const OnnxNode*> absorbed;          // the DQ, Relu and Q nodes the groups replace
};
QdqPlan plan_qdq(OnnxConverter& c, const OnnxGraph& graph, const std::vector<const OnnxNode*>& order);
// Converts the group of the converter's current node (its op).
void convert_qdq_group(OnnxConverter& c, const QdqGroup& group);

class OnnxConverter {
 public:
  OnnxConverter(const OnnxGraph& graph, int64_t opset, const OnnxOptions& options)
      : graph_(graph), opset_(opset), options_(options) {}
  Graph run();

  // ---- used by the op mappings (onnx_ops.cc)
  int64_t opset() const { return opset_; }
  const OnnxNode& node() const { return *node_; }
  // "node 'y' (Conv)" for messages.
  std::string where() const;
  [[noreturn]] void unsupported(const std::string& what) const;
  [[noreturn]] void invalid(const std::string& what) const;

  // Input `i` of the current node (resolved through aliases), or "" when absent/empty.
  std::string input(size_t i) const;
  size_t num_inputs() const { return static_cast<size_t>(node_->input_size()); }
  TensorType type_of(const std::string& name) const;
  // A compile-time value: an initializer, a Constant's output, or a known model input
  // (which then becomes a constant). Refuses a run-time value naming the input `role`.
  const NDArray& static_value(size_t i, const std::string& role);
  std::vector<int64_t> static_ints(size_t i, const std::string& role);

  // Attributes of the current node. Each one read is marked; an attribute never read
  // is refused as unsupported after the mapping ran.
  const OnnxAttribute* attr(const std::string& name);
  int64_t attr_int(const std::string& name, int64_t def);
  double attr_float(const std::string& name, double def);
  std::string attr_string(const std::string& name, const std::string& def);
  std::vector<int64_t> attr_ints(const std::string& name, const std::vector<int64_t>& def);
  bool has_attr(const std::string& name) const;

  // Adds one of our nodes computing `out` (a name of the ONNX graph, or a fresh one
  // from temp()), infers its type at once, and returns `out`.
  std::string emit(const std::string& out, const std::string& op, const std::vector<std::string>& inputs,
                   const nlohmann::json& attrs = nlohmann::json::object());
  std::string temp(const std::string& hint);
  // The current node's output `out` is the same tensor as `name` (Identity, a no-op).
  void alias(const std::string& out, const std::string& name) { aliases_[out] = resolve(name); }
  void add_constant(const std::string& name, NDArray value);
  // An initializer or constant made so far by name (through aliases), or null.
  const NDArray* constant(const std::string& name) const;
  std::string resolved(const std::string& name) const { return resolve(name); }
  void note(const std::string& text) { g_.notes.push_back(text); }

 private:
  std::string resolve(const std::string& name) const;
  void declare_inputs();
  std::vector<const OnnxNode*> sorted_nodes() const;
  void convert(const OnnxNode& n);
  void finish_outputs();

  const OnnxGraph& graph_;
  int64_t opset_;
  const OnnxOptions& options_;
  Graph g_;
  std::map<std::string, TensorType> types_;
  std::map<std::string, std::string> aliases_;
  std::set<std::string> names_;          // every name of the ONNX graph and ours
  std::set<std::string> frozen_inputs_;  // known inputs turned into constants
  std::map<std::string, const OnnxValueInfo*> pending_inputs_;  // run-time inputs not yet declared
  const OnnxNode* node_ = nullptr;
  std::set<std::string> attrs_read_;
  QdqPlan qdq_;
};

// Shared by the op mappings (onnx_ops.cc, onnx_quant_ops.cc).
// Every output after the first must be absent.
void single_output(OnnxConverter& c);
// The node has between lo and hi inputs (trailing empty names do not count).
void expect_inputs(OnnxConverter& c, size_t lo, size_t hi);
// The spatial window attributes shared by Conv and the pools, as explicit paddings.
struct Window {
  std::vector<int64_t> kernel, strides, dilations, pads;  // pads: [top, left, bottom, right]
};
// Reads kernel_shape, strides, dilations, pads and auto_pad (1-D windows as 2-D ones of
// height 1; 3-D ones only with `three_d`).
Window read_window(OnnxConverter& c, const std::string& data, std::vector<int64_t> kernel_from_weight,
                   bool three_d = false);
// ONNX's requantization multiplier x_scale * w_scale / y_scale in float32 as (M, s),
// m = M * 2^-s exactly (onnx_quant_ops.cc).
std::pair<int64_t, int64_t> onnx_multiplier(OnnxConverter& c, double xs, double ws, double ys);
// The int32 [T, 4] table of qlinear_conv / qlinear_matmul: (weight zero point, bias, M, s)
// for T = 1 or `channels` rows (a one-value list applies to every row).
std::string params_table(OnnxConverter& c, size_t channels, const std::vector<int64_t>& wzp,
                         const std::vector<int64_t>& bias, const std::vector<std::pair<int64_t, int64_t>>& mult);
// The quantized operators (onnx_quant_ops.cc): QuantizeLinear, DequantizeLinear,
// QLinearConv, QLinearMatMul, ConvInteger, MatMulInteger, DynamicQuantizeLinear.
const std::map<std::string, std::function<void(OnnxConverter&)>>& onnx_quant_mappings();

// Maps the converter's current node; throws for an unsupported op. (onnx_ops.cc)
void convert_onnx_node(OnnxConverter& c);

}  // namespace mtir
