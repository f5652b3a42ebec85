// The ONNX frontend: reads an ONNX model (protobuf ModelProto, opsets 7..17 of the
// default domain) into the same Graph the JSON frontend builds (graph.h), mapping each
// ONNX operator onto ops of the registry (docs/onnx.md lists them). Shape inference is
// ours (each op's infer). Anything we do not map is a user error starting with
// "unsupported: " and naming the op, attribute or dtype; a malformed file is a user
// error naming what is wrong. Native only: it needs libonnx's generated protobuf
// classes, so it lives in its own library (microtir_onnx), never in the wasm build.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "frontend/graph.h"
#include "support/ndarray.h"

namespace mtir {

struct OnnxOptions {
  // Values of model inputs known at compile time. Where an op needs a compile-time value
  // (Reshape's shape, Clip's bounds, Pad's pads, ...) and it comes from a model input,
  // the input's value is taken from here and the input becomes a constant; other inputs
  // stay run-time inputs. Without a value such an input is refused as dynamic.
  std::map<std::string, NDArray> known_inputs;
};

// Parses `bytes` (the contents of an .onnx file; `filename` names it in messages).
Graph load_onnx(const std::string& bytes, const std::string& filename, const OnnxOptions& options = {});

// A serialized TensorProto (the ONNX test data's input_N.pb / output_N.pb) as an
// NDArray; `name` receives the tensor's name when not null.
NDArray load_onnx_tensor(const std::string& bytes, const std::string& filename, std::string* name = nullptr);

// The ONNX op types the frontend maps, sorted: the table of docs/onnx.md (the
// conformance runner's "supported-op" subset is the tests using only these).
const std::vector<std::string>& supported_onnx_ops();

}  // namespace mtir
