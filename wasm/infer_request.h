// The operator library's type inference for the page's ONNX converter (web/src/onnx_import.js):
// the converter needs each node's output type as it goes (to emit reshapes around 1-D
// windows, to check Gemm's bias, ...) and asks the core, so the browser and native
// frontends infer with the same code.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace mtir::wasm {

// {"op": "conv2d", "inputs": [{"dtype": "float32", "shape": [1, 3, 8, 8]}, ...], "attrs": {...}}
// -> {"ok": true, "type": {"dtype", "shape"}} or {"ok": false, "message", "internal"}, the
// message as the op's infer threw it. Never throws.
nlohmann::json infer_request(const nlohmann::json& request);
std::string infer_request_text(const std::string& request_json);

}  // namespace mtir::wasm
