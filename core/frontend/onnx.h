// The ONNX frontend: reads an ONNX model (protobuf ModelProto, opsets 7..17 of the
// default domain) into the same Graph the JSON frontend builds (graph.h), mapping each
// ONNX operator onto ops of the registry (docs/onnx.md lists them). Shape inference is
// ours (each op's infer). Anything we do not map is a user error starting with
// "unsupported: " and naming the op, attribute or dtype; a malformed file is a user
// error naming what is wrong.
//
// Two halves: the converter works on a protobuf-free model (onnx_model.h) and is part
// of the core, wasm build included (the page decodes the protobuf with protobufjs and
// hands the model over as JSON, wasm/onnx_import.h); reading the protobuf file
// (read_onnx_model, load_onnx, load_onnx_tensor) needs libonnx's generated classes and
// lives in its own native library (microtir_onnx, onnx_proto.cc).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "frontend/graph.h"
#include "frontend/onnx_model.h"
#include "support/ndarray.h"

namespace mtir {

struct OnnxOptions {
  // Values of model inputs known at compile time. Where an op needs a compile-time value
  // (Reshape's shape, Clip's bounds, Pad's pads, ...) and it comes from a model input,
  // the input's value is taken from here and the input becomes a constant; other inputs
  // stay run-time inputs. Without a value such an input is refused as dynamic.
  std::map<std::string, NDArray> known_inputs;
};

// Converts a model (`filename` names it in messages). Checks what every exporter writes
// (an ir_version and a graph) and the opset first.
Graph convert_onnx(const OnnxModel& model, const std::string& filename, const OnnxOptions& options = {});

// ---- native only (microtir_onnx)

// The contents of an .onnx file as a model; a user error when they are not protobuf.
OnnxModel read_onnx_model(const std::string& bytes, const std::string& filename);

// read_onnx_model, then convert_onnx.
Graph load_onnx(const std::string& bytes, const std::string& filename, const OnnxOptions& options = {});

// A serialized TensorProto (the ONNX test data's input_N.pb / output_N.pb) as an
// NDArray; `name` receives the tensor's name when not null.
NDArray load_onnx_tensor(const std::string& bytes, const std::string& filename, std::string* name = nullptr);

// ---- both

// The ONNX op types the frontend maps, sorted: the table of docs/onnx.md (the
// conformance runner's "supported-op" subset is the tests using only these).
const std::vector<std::string>& supported_onnx_ops();

}  // namespace mtir
