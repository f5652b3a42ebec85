// WebAssembly backend: a WebAssembly text module (folded s-expressions, MVP plus the
// non-trapping float-to-int and sign-extension features) from lowered TIR with the
// unpacked calling convention. No libbinaryen here, so the wasm core emits the same
// text in the browser; codegen/wasm/native (libbinaryen) and the page (Binaryen from
// npm) parse, validate, optimize and assemble it.
//
// Memory is one linear memory laid out at compile time: address 0 is never used
// (NULL), then the constants (data segments), the model's input and output buffers,
// the workspace pool, then error strings. Workspaces (TIR Allocate) come from a LIFO
// allocator over the pool inside the module, with the CRT stack allocator's block
// sizes, so the pool is exactly TVMGEN_<MODEL>_WORKSPACE_SIZE plus local scratch.
// Semantics match the C backend and the interpreter (wrapping integer arithmetic,
// guarded division, short-circuit && || and if_then_else, saturating float-to-int).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/function.h"

namespace mtir {

// The exported `run` of an AOT model: run(input pointers..., output pointers...,
// device contexts...) -> i32
// calls main with the inputs, the constants (in data segments) and the outputs.
struct WasmRunExport {
  std::string main_symbol;
  struct Param {
    // kState: the model's state, in memory of its own that keeps its value between runs
    // (initialised to `data`); the module exports "reset", which restores `data`.
    enum class Kind { kInput, kConstant, kOutput, kState } kind;
    std::string name;  // its C identifier (AotModule::Param::c_name); exported as "input:<name>", "output:<name>"
    int64_t bytes = 0;
    std::string data;  // a constant's bytes, or a state's initial bytes, little-endian
  };
  std::vector<Param> params;
  // Device instances: run takes one context (i32) for each after the outputs, and main
  // passes them to the device kernels and hooks, which the host provides as imports.
  std::vector<std::string> devices;
};

struct WatOptions {
  std::string description;     // one line for the header comment
  int64_t workspace_bytes = 0;  // the pool for main's and the kernels' workspaces
  // With a run export, only `run` and the buffers are exported; without one, every
  // non-internal function is exported under its symbol.
  bool has_run = false;
  WasmRunExport run;
  // When set, receives the source line of each output line (0 for none).
  std::vector<int>* line_map = nullptr;
};

// Throws DiagnosticError for what the backend cannot express (packed functions, float16).
// Calls to functions outside the module (device kernels and hooks) become imports from
// "env", typed by their arguments.
std::string codegen_wat(const IRModule& m, const WatOptions& options);

// Names of the module's exports besides `run` and the buffers, for runners and docs.
extern const char* const kWasmLastErrorExport;        // () -> i32: address of the message, 0 if none
extern const char* const kWasmLastErrorValueExport;   // (i32 k) -> i64: the k-th "{}" value of it
extern const char* const kWasmMathImportModule;       // "env": expf, logf, tanhf, ... imported from the host

}  // namespace mtir
