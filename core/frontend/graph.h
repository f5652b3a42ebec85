// The JSON graph frontend: reads a model in the microtir graph format
// (docs/graph-format.md) into a Graph of operator nodes, checking everything on the way,
// and graph-level rewrites on it (batch-norm folding).
//
// No OS calls: constant files are read through a FileReader callback, so the same code
// runs in the CLI and in the browser build.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <nlohmann/json.hpp>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ops/ops.h"
#include "ops/schedules.h"
#include "support/ndarray.h"

namespace mtir {

struct GraphNode {
  std::string name;                 // also the name of the node's one output
  std::string op;                   // an op of the registry (ops/ops.h)
  std::vector<std::string> inputs;  // model inputs, constants or other nodes
  nlohmann::json attrs = nlohmann::json::object();
  TensorType type;                  // the output type, from the op's infer
  std::string device;               // the device instance it runs on ("npu0"), or "" for the host
};

struct Graph {
  std::string name;  // a C identifier
  std::vector<std::pair<std::string, TensorType>> inputs;
  std::map<std::string, NDArray> constants;
  // Persistent state (TFLite variable tensors): name -> initial value, as TFLM's
  // AllocateTensors() leaves it (int8 state at its zero point, any other 0). A node
  // reads a state like any tensor, and the one node that reads it may update it in
  // place (OpDef::writes_inputs). The artifact keeps each state in memory of its own,
  // carried over from one run to the next, and can reset it to this value.
  std::map<std::string, NDArray> state;
  std::vector<GraphNode> nodes;  // topological order
  // Subgraphs that control-flow nodes call (ops "if", "while": TFLite's IF and WHILE),
  // each a graph of its own by its name (a C identifier) with no constants or state of
  // its own: its inputs are what the node passes, its outputs what it returns. The AOT
  // executor compiles each to a PrimFunc that main calls with call_tir.
  std::vector<Graph> functions;
  const Graph* function(const std::string& name) const;
  std::vector<std::string> outputs;
  // Scale and zero point of int8 model inputs and outputs, by name, where the model says
  // them (a TFLite model): the C header documents them.
  std::map<std::string, std::pair<double, int64_t>> quantization;
  // What a frontend wants the user to know about how it read the model (the ONNX
  // frontend: which QDQ groups became int8 kernels and which stayed float, and why).
  std::vector<std::string> notes;

  // The type of a model input, constant or node; throws DiagnosticError for an unknown name.
  TensorType type_of(const std::string& name) const;
  // Every name's type at once, for passes over all nodes (type_of scans the nodes).
  std::map<std::string, TensorType> all_types() const;
  // The node called `name`, or null. Amortized constant time for graphs that only grow
  // (frontends append nodes); a graph edited in place is rescanned when the index is stale.
  const GraphNode* find_node(const std::string& name) const;

  // find_node's index: node name -> position, over nodes[0, indexed_nodes_). Each hit is
  // verified against `nodes`, so an edit that the index missed costs a rescan, not a
  // wrong answer.
  mutable std::unordered_map<std::string, size_t> node_index_;
  mutable size_t indexed_nodes_ = 0;
};

// Reads a file named relative to the JSON file; throws DiagnosticError if unreadable.
using FileReader = std::function<std::string(const std::string& relative_path)>;

// Parses and checks a graph. `filename` names the JSON text in diagnostics. Every
// problem is a DiagnosticError whose message names the input, constant or node and
// what is wrong, with a location in the JSON text where one can be found.
Graph load_graph_json(const std::string& json_text, const std::string& filename,
                      const FileReader& read);

// The inverse of load_graph_json: the graph in the JSON format, constants inline
// ("values", with "shape" and "dtype"), constants sorted by name, "attrs" and "device"
// only when set. load_graph_json(write_graph_json(g)) gives `g` back. A graph the
// format cannot hold is a user error starting with "unsupported: " (a constant of a
// dtype the loader refuses, a NaN or infinity in a constant or an attribute).
nlohmann::json graph_to_json(const Graph& g);
std::string write_graph_json(const Graph& g);  // graph_to_json, indented, ending in a newline

// The rules of state (Graph::state), a user error naming the node or state otherwise:
// a node reads a state through one input (several nodes may read it, in node order);
// every input a node writes in place (OpDef::writes_inputs) is a state; a state is not a
// model output; a node that writes state runs on the host.
void check_state_use(const Graph& g);

// The dtypes a graph tensor may have ("float32", "int8", ...: docs/graph-format.md).
bool is_graph_dtype(DataType dtype);

// `base`, or `base_1`, `base_2`, ... : the first name no input, constant or node has.
std::string fresh_name(const Graph& g, const std::string& base);
// The node `name` = `op`(inputs) with the type the op infers from `input_types`, for a
// frontend converting a model; the op's refusal propagates as its DiagnosticError, for
// the frontend to restate where in the model it happened.
GraphNode typed_node(const std::string& name, const std::string& op, const std::vector<std::string>& inputs,
                     const std::vector<TensorType>& input_types, const nlohmann::json& attrs);
// Erases each constant of `candidates` that no node reads and no output names.
void drop_unused_constants(Graph& g, const std::set<std::string>& candidates);

// Folds each batch_norm (inference form) whose data input is a conv2d (NCHW or NHWC)
// or dense node with constant weight (and optional constant bias) into that node's
// weight and bias, when the batch_norm's parameters are constants, its axis is the
// channel axis and the producer has no other consumer (and is not a model output). The
// folded node takes the batch_norm's name, so consumers and outputs stay unchanged; a
// bias is created if there was none. Other batch_norms are left as they are.
Graph fold_batch_norm(const Graph& g);

// The compile-time half of the int8 kernels (frontend/prepare_quantized.cc): for each
// qconv2d/qdense, a per-channel requantization table, the input zero point folded into
// the bias and the weights packed for SMLAD, as `opts` allow and the constants permit,
// recorded in the node's attrs["schedule"]; for each qsoftmax, its exponential table.
// Other nodes are left as they are. The functions IF/WHILE nodes call are prepared per
// call site, the inputs bound to the caller's constants taken as constants; what it adds
// becomes new inputs of the function, passed from new constants of the caller.
Graph prepare_quantized(const Graph& g, const ScheduleOptions& opts);

// Places operators on device instances: each spec is "INSTANCE=OP[,OP...]" (the CLI's
// --device), and every node of those ops runs on that instance. Then checks every
// placed node, from a spec or from the graph's own "device" fields, against what the
// device runs (ops/devices.h). User errors name the spec or the node.
void place_on_devices(Graph& g, const std::vector<std::string>& specs);

}  // namespace mtir
