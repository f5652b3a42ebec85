// Runs a wasm-target artifact (codegen/host/lib/<model>.wasm, built by the wasm backend
// and Binaryen) under node: the inputs are copied into the module's exported input
// buffers, `run` is called once per input set (then timed over repeated calls), and the
// outputs are read back bit-exactly from its output buffers.
#pragma once

#include "sim/artifact_runner.h"

namespace mtir::sim {

// The node script the runner uses; also what a JavaScript user of the module needs
// (the math imports, the error message from the last_error exports).
extern const char* const kWasmModuleRunner;

ArtifactRunResult run_wasm_module(const ArtifactInfo& info, const std::vector<ArtifactTensor>& inputs,
                                  const std::vector<std::vector<NDArray>>& samples,
                                  const std::vector<ArtifactTensor>& outputs, const ArtifactRunOptions& options);

}  // namespace mtir::sim
