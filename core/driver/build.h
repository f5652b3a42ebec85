// Building an artifact from a module: lower for the target, then generate code.
#pragma once

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
  // The C symbol of each function of the input module, in order.
  std::vector<std::pair<std::string, std::string>> symbols;
};

// Lowers `m` for `target` (the C backend) and generates the C sources. Throws
// DiagnosticError naming the pass or construct that failed.
BuildResult build_c(const IRModule& m, const Target& target);

}  // namespace mtir
