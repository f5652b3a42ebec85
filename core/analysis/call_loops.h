// A loop of calls read as the calls it makes. The AOT main runs a patch stage's interior
// bands as a serial loop whose calls pass regions with starts affine in the loop variable
// (executor/band_loops.h). The analyses that reason about the main's calls one by one
// (plan_memory's live ranges, analysis/call_overlap.h's overlaps) read such a loop as
// its iterations in order, each with constant region starts: exactly what it runs.
#pragma once

#include <vector>

#include "ir/stmt.h"

namespace mtir {

// Iterations beyond this many in one main stay one step (read as touching every buffer
// it names, at that step): a hand-written loop of many calls would otherwise expand
// without bound.
constexpr int64_t kMaxExpandedCalls = 1 << 14;

// `steps` with every serial loop of constant bounds whose body is call_tir statements
// (one, or a sequence) replaced by its iterations' calls: the loop variable replaced by
// each value and every integer argument and region start folded to a constant.
std::vector<Stmt> expand_call_loops(const std::vector<Stmt>& steps);

}  // namespace mtir
