// The playground's Run button: executes a module with the reference interpreter on
// given or seeded random inputs and returns the buffers afterwards.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "artifact/mlf.h"
#include "ir/function.h"

namespace mtir::wasm {

// `run` is the request's "run" object: {"function": name (TIR only; default: the only
// or first function), "inputs": {buffer: [flat values]}, "scalars": {name: number},
// "seed": n}. Buffers not given are filled with seeded random values (a model's
// outputs start at zero; its weights are its own). Returns {"function", "buffers":
// [{name, role, dtype, shape, values, truncated}]}. Throws DiagnosticError.
nlohmann::json run_tir(const IRModule& m, const nlohmann::json& run);
nlohmann::json run_model(const LoadedModel& model, const nlohmann::json& run);

}  // namespace mtir::wasm
