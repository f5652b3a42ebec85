// The CLI's door to the ONNX frontend: files ending in .onnx are ONNX models. In a
// build without the frontend (MICROTIR_ONNX=OFF) loading one is a clear user error.
#pragma once

#include <string>

#include "frontend/graph.h"

namespace mtir::cli {

bool is_onnx_file(const std::string& path);
Graph load_onnx_file(const std::string& path);

}  // namespace mtir::cli
