// The C interface of an AOT model (-interface-api=c): `tvmgen_<model>.h` with the
// inputs and outputs structs, a size macro for every tensor and for the workspace, and
// `tvmgen_<model>_run`; plus its source, which holds the weights as const arrays.
#pragma once

#include <vector>

#include "driver/build.h"
#include "executor/aot.h"

namespace mtir {

// The workspace bytes an application must give TVMCrtWorkspaceInit for this artifact.
int64_t artifact_workspace_bytes(const IRModule& lowered, const std::string& main_kernel);

// `lowered` is the module build_c produced for `aot` (unpacked API).
std::vector<SourceFileOut> c_interface(const AotModule& aot, const Graph& g, const IRModule& lowered);

}  // namespace mtir
