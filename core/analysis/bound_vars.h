// The variables a statement binds inside itself: loop variables, let variables (LetStmt
// and T.Let) and allocations' data variables. A loop body that binds none can be copied
// (unroll_loops); an expression that uses none can move out of the loop
// (hoist_loop_invariants).
#pragma once

#include <unordered_set>

#include "ir/stmt.h"

namespace mtir {

std::unordered_set<const VarNode*> bound_inside(const Stmt& s);

}  // namespace mtir
