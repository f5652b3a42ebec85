// Runs a wasm-target artifact (codegen/host/lib/<model>.wasm, built by the wasm backend
// and Binaryen) under node: the inputs are copied into the module's exported input
// buffers, `run` is called once per input set (then timed over repeated calls), and the
// outputs are read back bit-exactly from its output buffers.
#pragma once

#include "sim/artifact_runner.h"

namespace mtir::sim {

// The node script the runner uses (it imports ./module_env.mjs), and that module:
// core/codegen/wasm/module_env.mjs, what a JavaScript user of a module needs (the math
// imports, the error message from the last_error exports).
extern const char* const kWasmModuleRunner;
extern const char* const kWasmModuleEnv;

// Calls exported functions of the wasm module at `module` (build_wasm's module), each
// with its buffers copied into the module's memory, then copies every buffer back: the
// wasm counterpart of run_on_host for tests. A user error quoting node on failure.
struct WasmCall {
  std::string function;
  std::vector<NDArray*> buffers;
};
void run_wasm_calls(const std::string& module, const std::vector<WasmCall>& calls, const std::string& work_dir,
                    int timeout_seconds = 60);

ArtifactRunResult run_wasm_module(const ArtifactInfo& info, const std::vector<ArtifactTensor>& inputs,
                                  const std::vector<std::vector<NDArray>>& samples,
                                  const std::vector<ArtifactTensor>& outputs, const ArtifactRunOptions& options);

}  // namespace mtir::sim
