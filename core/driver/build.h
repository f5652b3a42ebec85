// Building an artifact from a module: lower for the target, then generate code.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "driver/pipeline.h"
#include "driver/target.h"

namespace mtir {

struct SourceFileOut {
  std::string path;  // relative to the artifact root
  std::string text;
};

struct BuildResult {
  Target target;
  PipelineResult lowered;              // the module after each lowering pass
  std::vector<SourceFileOut> sources;  // kernels (lib0.c) and the metadata module (lib1.c)
  std::vector<std::string> packed_symbols;  // the functions the registry (lib1) holds, in order
  // The C symbol of each function of the input module, in order.
  std::vector<std::pair<std::string, std::string>> symbols;
  // Per generated kernel source (by path: C, LLVM IR, WebAssembly text): for each of its
  // lines, the source line of the TIR statement it came from, or 0 (codegen/line_marks.h).
  std::map<std::string, std::vector<int>> line_maps;
};

// Lowers `m` for `target` (the C backend) and generates the C sources. Throws
// DiagnosticError naming the pass or construct that failed.
BuildResult build_c(const IRModule& m, const Target& target);

// The same for the LLVM backend (target kind "llvm", -mtriple selects the triple):
// sources codegen/host/src/lib0.ll (kernels) and lib1.ll (the registry).
BuildResult build_llvm(const IRModule& m, const Target& target);

// The same for the wasm backend (target kind "wasm"): codegen/host/src/lib0.wat, every
// non-internal function exported. Models get their module from wasm_model_module.
BuildResult build_wasm(const IRModule& m, const Target& target);

// build_c, build_llvm or build_wasm, after the target's kind.
BuildResult build_for_target(const IRModule& m, const Target& target);

// The device instance a function runs on (its "device" attribute), or "".
std::string device_of(const PrimFunc& f);

// Which lowering steps `target` runs (its calling convention, schedules and backend).
LoweringOptions lowering_options(const Target& target);

// The part both backends share: lowering for `target`, the symbols, and (appended to
// `packed_symbols`) the packed functions the registry holds. No sources yet.
BuildResult lower_for_target(const IRModule& m, const Target& target, std::vector<std::string>* packed_symbols);

}  // namespace mtir
