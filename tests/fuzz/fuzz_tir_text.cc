// libFuzzer target: the TIR text parser, then the verifier, then the whole lowering
// pipeline and the C code generator on whatever parses and verifies. Any input must
// end in a result or a DiagnosticError that is not internal; anything else (a crash,
// a sanitizer report, an internal error) is a bug.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "analysis/well_formed.h"
#include "driver/build.h"
#include "script/parser.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  mtir::ParseResult r = mtir::parse_module(text, "fuzz.tir");
  if (!r.ok() || !mtir::check_well_formed(*r.module).empty()) return 0;
  for (const char* target : {"c -unpacked-api=0", "c -unpacked-api=1"}) {
    try {
      mtir::build_c(*r.module, mtir::parse_target(target));
    } catch (const mtir::DiagnosticError& e) {
      if (e.internal()) std::abort();  // an internal error on valid input is a bug
    }
  }
  return 0;
}
