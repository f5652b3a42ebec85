// The page's .onnx import: the browser decodes the protobuf (web/src/onnx_import.js,
// protobufjs) into the protobuf-free model of core/frontend/onnx_model.h, serialized as
// JSON, and the wasm core converts it with the converter `microtir import` runs.
//
// The JSON mirrors onnx.proto's field names:
//   {"ir_version", "opset_import": [{"domain", "version"}],
//    "graph": {"name", "node": [NODE], "initializer": [TENSOR], "sparse_initializer_count",
//              "input": [VALUE_INFO], "output": [VALUE_INFO]}}        ("graph" absent: none)
//   NODE: {"op_type", "domain", "name", "input": [..], "output": [..], "attribute": [ATTR]}
//   ATTR: {"name", "ref_attr_name", "type" (AttributeType code), "i", "f", "s", "ints",
//          "floats", "strings", "t": TENSOR}      (graphs and sparse tensors: the type only)
//   TENSOR: {"name", "data_type", "dims", "bytes" (base64, little-endian values),
//            "typed_values" (-1: the bytes were raw_data; else the typed field's count),
//            "external", "segmented"}
//   VALUE_INFO: {"name", "tensor" (a tensor type), "elem_type", "has_shape",
//                "dims": [{"value"} | {"param"} | {}]}
// Every field may be absent (protobuf's default). An int64 is a number or, beyond 2^53,
// a decimal string; a float is a number or "NaN", "Infinity", "-Infinity", "-0" (what
// JSON numbers cannot say).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace mtir::wasm {

// The model JSON (above) -> {"ok": true, "graph": TEXT, "notes": [..]}, TEXT being the
// JSON graph exactly as `microtir import model.onnx` writes it and the notes what it
// prints to stderr, or {"ok": false, "message", "internal"}. `filename` names the model
// in messages. Never throws.
nlohmann::json import_onnx_request(const std::string& model_json, const std::string& filename);

}  // namespace mtir::wasm
