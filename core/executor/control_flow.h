// The AOT executor's control flow (ops "if" and "while" over Graph::functions, TFLite's
// IF and WHILE): each function of the graph becomes a PrimFunc of the module, built by
// the AOT executor like main itself (its kernels, its own planned intermediates), and
// main calls it with call_tir inside an IfThenElse or a While, so only the chosen branch
// runs and the loop runs as often as the data says.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "executor/aot.h"

namespace mtir {

// A function the AOT executor compiled from a graph function: main calls it with
// call_tir, and it calls its own kernels; its pools are allocated while main's are
// (artifact_workspace_bytes counts both).
inline constexpr const char* kSubgraphFunctionAttr = "aot.subgraph_function";

// Helpers of the AOT executor (aot.cc) that control_flow.cc shares.
std::vector<Expr> shape_exprs(const TensorType& t);
Expr whole(const Buffer& b);  // a whole-buffer argument of call_tir

struct ControlFlowContext {
  const Graph& g;
  const AotOptions& options;
  const std::string& prefix;  // "tvmgen_<model>_"
  AotModule& aot;             // the module the functions join
  std::map<std::string, std::string>& compiled;  // graph function -> its PrimFunc, once each
  std::function<Buffer(const std::string&)> buffer_of;  // a tensor's buffer in main
  std::function<Buffer(const std::string& what, const TensorType&)> scratch;  // a new intermediate of main
};

bool is_control_flow(const GraphNode& node);  // an "if" or "while" node
// The types of a control-flow node's results (result 0 is the node's own).
std::vector<TensorType> control_results(const Graph& g, const GraphNode& node);
// The statement of main that runs `node`, writing `results` (one buffer per result).
Stmt control_flow_stmt(ControlFlowContext& cx, const GraphNode& node, const std::vector<Buffer>& results);

}  // namespace mtir
