// Printer for the TVMScript-style text format. Output is stable (same IR, same text)
// and parse_module(print_module(m)) is structurally equal to m.
#pragma once

#include <string>

#include "ir/function.h"

namespace mtir {

std::string print_module(const IRModule& m);
std::string print_func(const std::string& name, const PrimFunc& f);
std::string print_stmt(const Stmt& s);
std::string print_expr(const Expr& e);

}  // namespace mtir
