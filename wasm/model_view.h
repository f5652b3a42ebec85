// The model view's data: the graph as the compiler builds it (after batch-norm folding and
// quantization), each node with its output type, the kernel that computes it and its cost
// (multiply-accumulates as ops/macs.h counts them, persistent state bytes, weight bytes,
// activation bytes).
#pragma once

#include <nlohmann/json.hpp>

#include "artifact/mlf.h"

namespace mtir::wasm {

nlohmann::json model_view_json(const LoadedModel& model);

}  // namespace mtir::wasm
