// libFuzzer target: the target/options string parser (TVM's "-key=value" options).
#include <cstdint>
#include <cstdlib>
#include <string>

#include "driver/target.h"
#include "support/diagnostic.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    mtir::Target t = mtir::parse_target(text);
    // What parses must print to a string that parses to the same target.
    if (mtir::parse_target(t.str()).str() != t.str()) std::abort();
  } catch (const mtir::DiagnosticError& e) {
    if (e.internal()) std::abort();
  }
  return 0;
}
