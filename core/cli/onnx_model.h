// The CLI's door to the ONNX frontend: files ending in .onnx are ONNX models. In a
// build without the frontend (MICROTIR_ONNX=OFF) loading one is a clear user error.
#pragma once

#include <string>

#include "frontend/graph.h"

namespace mtir::cli {

bool is_onnx_file(const std::string& path);
Graph load_onnx_file(const std::string& path);

// `microtir import model.onnx [-o graph.json]`: the graph the ONNX frontend reads, as a
// JSON graph with its constants inline (write_graph_json), to `output` or stdout.
struct ImportCommand {
  std::string file;
  std::string output;  // "" or "-": standard output
};
int run_import(const ImportCommand& c);

}  // namespace mtir::cli
