// Replacing variables by expressions: the building block of loop unrolling, let
// inlining and any pass that specialises a body for a known value of a variable.
#pragma once

#include <unordered_map>

#include "ir/stmt.h"

namespace mtir {

// Keyed by node identity, because identity is what binds a use to its definition.
using VarMap = std::unordered_map<const VarNode*, Expr>;

// A copy of `e` / `s` with every use of a variable in `vmap` replaced by its expression.
// Subtrees without such a use are returned as the same node (nothing is copied when
// nothing is replaced). Definitions (loop and let variables) are not renamed, and
// buffer shapes are left alone: buffers are shared by identity between their
// declaration and every access, so rebuilding one here would break that link.
Expr substitute(const Expr& e, const VarMap& vmap);
Stmt substitute(const Stmt& s, const VarMap& vmap);

// Convenience for the common single-variable case.
Expr substitute(const Expr& e, const Var& v, const Expr& value);
Stmt substitute(const Stmt& s, const Var& v, const Expr& value);

}  // namespace mtir
