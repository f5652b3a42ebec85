// The model view's data: the graph as the compiler builds it (after batch-norm folding and
// quantization), each node with its output type, the kernel that computes it and its cost
// (multiply-accumulates, weight bytes, activation bytes).
#pragma once

#include <nlohmann/json.hpp>

#include "artifact/mlf.h"

namespace mtir::wasm {

nlohmann::json model_view_json(const LoadedModel& model);

// Multiply-accumulates of one node: convolutions, dense layers and matrix products; 0 for
// the others (their work is one operation per element at most).
int64_t node_macs(const GraphNode& node, const std::vector<TensorType>& inputs);

}  // namespace mtir::wasm
