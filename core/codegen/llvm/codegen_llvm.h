// LLVM backend: textual LLVM IR (LLVM 14, typed pointers) from lowered TIR, the same
// input codegen_c gets. No libLLVM: the core writes the text, so it also runs in the
// wasm build; the native helpers in codegen/llvm/native verify and compile it.
//
// Semantics match the C backend and the interpreter: integer + - * wrap (LLVM's plain
// add/sub/mul), division guards its divisor so x / 0 and INT_MIN / -1 are never
// undefined, && || and if_then_else short-circuit, float32 constants are the exact
// float value. Handles are i8*; DLTensor and TVMValue are LLVM struct types whose
// layout follows the target's data layout.
#pragma once

#include <functional>
#include <string>

#include <vector>

#include "codegen/llvm/llvm_target.h"
#include "ir/function.h"

namespace mtir {

struct LlvmCodegenOptions {
  std::string triple;  // "" means kDefaultLlvmTriple
  std::string cpu;     // the "target-cpu" function attribute, when set
  // The CPU has Arm's DSP extension (SMLAD, SXTB16 as instructions rather than their
  // portable expansion); the target description decides (driver/target.h).
  bool arm_dsp = false;
  // Operator calls (calls of another function of the module) are bracketed with calls of
  // `void mtir_profile_begin(i32 index, i8* kernel)` and `void mtir_profile_end(i32 index)`,
  // which the application defines: the C backend's TVMGEN_PROFILE hooks (-profile-hooks=1).
  bool profile_hooks = false;
  // One line for the header comment, e.g. the target string the artifact was built with.
  std::string description;
  // Which functions this module defines (all when empty); the others are declared
  // where called, e.g. a host module calling a device's kernels in another module.
  std::function<bool(const std::string& name, const PrimFunc& f)> defines;
  // When set, receives the source line of each output line (0 for none).
  std::vector<int>* line_map = nullptr;
};

// LLVM IR for every PrimFunc of `m`. Throws DiagnosticError on IR the backend cannot
// express (float16, multi-dimensional accesses, unlowered builtins) and on unknown triples.
std::string codegen_llvm(const IRModule& m, const LlvmCodegenOptions& options = {});

}  // namespace mtir
