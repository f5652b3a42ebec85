// Native LLVM helpers (built only with MICROTIR_LLVM=ON, linked by the CLI and the
// tests, never by microtir_core): parse the text the LLVM backend emits with libLLVM 14,
// verify it, optimize it with the new pass manager and emit an object file for one of
// the backend's triples.
#pragma once

#include <string>
#include <vector>

namespace mtir::llvm_native {

struct Options {
  std::string triple;   // "" means the default triple
  std::string cpu;      // "" means the triple's generic CPU
  std::string opt = "O2";  // O0, O1, O2, O3, Os or Oz
  int parts = 0;    // compile_to_objects: at most this many objects; 0 chooses by the module's size
  int threads = 0;  // compile_to_objects: at most this many threads; 0 is the machine's cores
  // false: no machine scheduling before register allocation (llvm_machine_scheduling in
  // driver/target.h: schedule dsp_no_early_scheduling on DSP cores without Helium).
  bool machine_scheduler = true;
};

// Parses and verifies `ir`. A parse error or a verifier failure is an internal error
// (the backend emitted bad IR) naming `name` and, for the verifier, the function.
void verify(const std::string& ir, const std::string& name);

// verify(), then the optimization pipeline: the optimized module as text.
std::string optimize(const std::string& ir, const std::string& name, const Options& options);

// optimize(), then the loop passes code generation starts with (strength reduction and,
// on Cortex-M without low-overhead loops, ExitOnPointerPass): what instruction selection sees.
std::string lower_loops(const std::string& ir, const std::string& name, const Options& options);

// verify(), optimize, and code generation: the bytes of an ELF (or wasm) object file.
std::string compile_to_object(const std::string& ir, const std::string& name, const Options& options);

// compile_to_object for a module split into parts (module_parts.h) that optimize and
// compile on threads of their own: one object per part, the first holding the module's
// first function. Every function's machine code is the same as in the whole module's
// object; how many parts depends on the IR only, never on the machine.
std::vector<std::string> compile_to_objects(const std::string& ir, const std::string& name, const Options& options);

}  // namespace mtir::llvm_native
