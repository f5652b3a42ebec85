// The page's .tflite import: the native TFLite frontend (core/frontend/tflite) in the
// wasm core, so the browser reads a .tflite file with the same C++ as `microtir import`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace mtir::wasm {

// The .tflite bytes -> {"ok": true, "graph": TEXT}, TEXT being the JSON graph exactly as
// `microtir import model.tflite` writes it (what the page's ONNX import gives for an
// .onnx file), or {"ok": false, "message", "internal"}. Never throws.
nlohmann::json import_tflite_request(const uint8_t* bytes, size_t size, const std::string& filename);

}  // namespace mtir::wasm
