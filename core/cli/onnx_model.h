// The CLI's door to the ONNX and TFLite frontends: files ending in .onnx are ONNX
// models, files ending in .tflite TFLite models. In a build without the ONNX frontend
// (MICROTIR_ONNX=OFF) loading an .onnx file is a clear user error.
#pragma once

#include <string>

#include "frontend/graph.h"

namespace mtir::cli {

bool is_onnx_file(const std::string& path);
Graph load_onnx_file(const std::string& path);
bool is_tflite_file(const std::string& path);
Graph load_tflite_file(const std::string& path);
// Either frontend, by extension (the caller checked it is one of the two).
Graph load_foreign_model(const std::string& path);

// `microtir import model.onnx|model.tflite [-o graph.json]`: the graph the frontend reads, as a
// JSON graph with its constants inline (write_graph_json), to `output` or stdout.
struct ImportCommand {
  std::string file;
  std::string output;  // "" or "-": standard output
  // TFLite only: every operator's output is a graph output, in operator order, so a run
  // can be compared layer by layer with TFLite's (tests/tflite).
  bool layer_outputs = false;
  // `import --list-ops [--json]`: the TFLite operators and dtypes the converter reads
  // (frontend/tflite/op_support.h), instead of a model.
  bool list_ops = false;
  bool json = false;
};
int run_import(const ImportCommand& c);

}  // namespace mtir::cli
