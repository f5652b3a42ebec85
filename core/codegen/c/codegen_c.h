// C backend: deterministic, readable C99 from lowered TIR (every buffer access 1-D).
// The output compiles with -std=c99 -Wall -Wextra -Werror -pedantic, and it is free of
// undefined behaviour wherever the interpreter defines a result: integer arithmetic
// that might wrap is done in unsigned types, floor division has exact helpers.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ir/function.h"

namespace mtir {

struct CCodegenOptions {
  // One line for the header comment, e.g. the target string the artifact was built with.
  std::string description;
  // Which functions this file defines (all when empty); with `declare_others`, the
  // rest get prototypes so calls into another file of the artifact type-check.
  std::function<bool(const std::string& name, const PrimFunc& f)> defines;
  bool declare_others = false;
  // When set, gets one entry per line of the output: the source line (Span::line) of the
  // statement that line was emitted for, 0 for none (the playground maps TIR to C with it).
  std::vector<int>* line_map = nullptr;
  // A file with SMLAD kernels asks GCC compiling for a DSP core without MVE not to
  // schedule before register allocation (the schedule dsp_no_early_scheduling).
  bool dsp_no_early_scheduling = false;
};

// C source for every PrimFunc of `m`. Throws DiagnosticError on IR the C backend cannot
// express (float16, multi-dimensional accesses left by a missing flatten pass).
std::string codegen_c(const IRModule& m, const CCodegenOptions& options = {});

// The C prototype of `f` as codegen_c emits it (without the semicolon), for callers
// in other translation units.
std::string c_signature(const std::string& symbol, const PrimFunc& f);

}  // namespace mtir
