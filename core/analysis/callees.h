// The functions a body names through one calling builtin (call_tir, call_extern): each
// such call's first argument, a string.
#pragma once

#include <set>
#include <string>

#include "ir/op.h"
#include "ir/stmt.h"

namespace mtir {

std::set<std::string> callees(const Stmt& body, Builtin call);

}  // namespace mtir
