// Native Binaryen helpers (libbinaryen, Debian's binaryen package) behind
// MICROTIR_BINARYEN: parse the wasm text the core emits, validate it, optimize it and
// write the binary. Linked by the CLI and the tests, never by microtir_core, which the
// browser build also compiles (there the page does the same with Binaryen from npm).
#pragma once

#include <string>

namespace mtir::binaryen_native {

struct Assembled {
  std::string binary;  // the .wasm
  std::string text;    // Binaryen's printing of the optimized module
};

// Functions with one caller that Binaryen may inline: up to this size (its expression
// count), not every one (its default). The page sets the same (web/src/wasm_backend.mjs);
// web/test/wasm_backend.test.mjs checks both give the same bytes.
constexpr unsigned kOneCallerInlineMaxSize = 100;

// `opt` is the wasm target's -opt level (O0 O1 O2 O3 Os Oz). An invalid module is an
// internal error naming the function Binaryen's validator complains about.
Assembled assemble(const std::string& wat, const std::string& opt, const std::string& what);

}  // namespace mtir::binaryen_native
