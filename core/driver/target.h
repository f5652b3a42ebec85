// The target string, as TVM users write it: a kind ("c", "llvm" or "wasm") followed by
// -key=value options, e.g. "c -unpacked-api=1 -interface-api=c" or
// "llvm -mtriple=thumbv7em-none-eabihf -mcpu=cortex-m4". Combinations that cannot work
// are refused here, at option-parse time, with a message naming the rule.
#pragma once

#include <string>

namespace mtir {

struct Target {
  std::string kind = "c";              // c | llvm | wasm (WebAssembly through Binaryen)
  std::string runtime = "c";           // only the C runtime is supported
  std::string executor = "aot";        // only AOT is supported
  std::string interface_api = "packed";  // c | packed
  bool unpacked_api = false;
  bool link_params = false;
  int workspace_byte_alignment = 16;
  std::string mtriple;  // llvm only
  std::string mcpu;     // llvm only
  std::string opt = "O2";  // wasm only: Binaryen's optimization level (O0 O1 O2 O3 Os Oz)
  bool hoist = true;       // run the hoist_loop_invariants pass (-hoist=0 measures without it)

  // The canonical spelling: every option, in a fixed order (-hoist only when it is
  // off, so the spelling of every existing target stays what it was).
  std::string str() const;
};

// Throws DiagnosticError (a user error) for unknown kinds, unknown options, bad values
// and unsupported combinations.
Target parse_target(const std::string& text);

}  // namespace mtir
