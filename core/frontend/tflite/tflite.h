// The TFLite frontend: reads a .tflite flatbuffer (one subgraph, int8 or float32) into
// the Graph the JSON and ONNX frontends build (frontend/graph.h), mapping each TFLite
// builtin operator onto ops of the registry (docs/tflite.md lists them). Every file is
// checked by flatbuffers' Verifier before anything in it is read, so a truncated,
// corrupt or hostile file is a user error, never an out-of-bounds read. Header-only
// flatbuffers: this builds into the wasm core too.
#pragma once

#include <string>
#include <vector>

#include "frontend/graph.h"

namespace mtir {

struct TfliteImport {
  Graph graph;
  // The node computing each TFLite operator's output, in operator order (which is the
  // order TFLite runs them): what a per-layer comparison with TFLite looks at.
  std::vector<std::string> layers;
};

// Parses `bytes` (the contents of a .tflite file; `filename` names it in messages).
// Graph inputs and outputs keep their TFLite names, shapes and dtypes; for int8 ones
// the graph's `quantization` records their scale and zero point. An operator we do not
// map is the user error "unsupported TFLite operator NAME (node N)".
TfliteImport import_tflite(const std::string& bytes, const std::string& filename);
Graph load_tflite(const std::string& bytes, const std::string& filename);

}  // namespace mtir
