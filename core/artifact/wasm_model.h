// The WebAssembly module of an AOT model (the wasm target's artifact): its kernels and
// main, the weights in data segments, and an exported `run(inputs..., outputs...)`
// over the model's inputs and outputs in graph order, with static buffers for each
// exported as "input:<c_name>" / "output:<c_name>" (their addresses, i32 globals; c_name
// is the C identifier of AotModule::Param).
#pragma once

#include <string>

#include "driver/build.h"
#include "executor/aot.h"

namespace mtir {

// Where the artifact keeps the module: the core's text in codegen/host/src/<model>.wat;
// the assembled, optimized module (when Binaryen is at hand) in codegen/host/lib/.
std::string wasm_model_source_path(const Graph& g);
std::string wasm_model_binary_path(const Graph& g);   // .../lib/<model>.wasm
std::string wasm_model_text_path(const Graph& g);     // .../lib/<model>.wat (Binaryen's printing)

// `lowered` is the module build_wasm produced for `aot` (unpacked API).
std::string wasm_model_module(const AotModule& aot, const Graph& g, const IRModule& lowered, const Target& target);

}  // namespace mtir
