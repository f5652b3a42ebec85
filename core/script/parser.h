// Parser for microtir's TVMScript-style text format (see docs/text-format.md).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/function.h"

namespace mtir {

struct ParseResult {
  std::optional<IRModule> module;
  std::vector<Diagnostic> diagnostics;
  bool ok() const { return module.has_value(); }
};

// Parses a whole module (`@I.ir_module class ...`) or a single `@T.prim_func`. Never
// throws: errors come back as diagnostics with file:line:col.
ParseResult parse_module(const std::string& text, const std::string& filename = "<input>");

// The same, but throws DiagnosticError; for use inside the library and tests.
IRModule parse_module_or_throw(const std::string& text, const std::string& filename = "<input>");

}  // namespace mtir
