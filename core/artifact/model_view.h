// The model view's data, shown by the playground's model view and the Python package's
// Model.layers: the graph as the compiler builds it (after batch-norm folding and
// quantization), each node with its output type, the kernel that computes it and its cost
// (multiply-accumulates as ops/macs.h counts them, persistent state bytes, weight bytes,
// activation bytes).
#pragma once

#include <nlohmann/json.hpp>

#include "artifact/mlf.h"

namespace mtir {

nlohmann::json model_view_json(const LoadedModel& model);

}  // namespace mtir
