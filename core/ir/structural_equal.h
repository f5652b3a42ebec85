// Structural equality and hashing: two IRs are equal when they have the same shape
// up to a consistent renaming of variables and buffers (a bijection built on first
// encounter). Spans are ignored. Used by the round-trip and pass tests.
#pragma once

#include <cstddef>
#include <string>

#include "ir/function.h"

namespace mtir {

bool structural_equal(const Expr& a, const Expr& b);
bool structural_equal(const Stmt& a, const Stmt& b);
bool structural_equal(const PrimFunc& a, const PrimFunc& b);
bool structural_equal(const IRModule& a, const IRModule& b);

// Whether `a` and `b` compute the same value in the same scope: equal trees over the
// very same variables and buffers. (structural_equal(A[i], B[i]) holds, because A
// and B correspond; same_expr does not.) What rewrites like x - x -> 0 need.
bool same_expr(const Expr& a, const Expr& b);

// When not equal, a short description of the first difference ("" when equal).
std::string structural_diff(const IRModule& a, const IRModule& b);

size_t structural_hash(const Expr& e);
size_t structural_hash(const Stmt& s);
size_t structural_hash(const PrimFunc& f);
size_t structural_hash(const IRModule& m);

}  // namespace mtir
