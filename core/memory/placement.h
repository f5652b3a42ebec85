// Internal to the memory planner: the validated problem (aligned sizes and the conflict
// graph) and first-fit placement of tensors in a given order. Every heuristic of
// planner.cc is an order handed to place_first_fit.
#pragma once

#include <cstdint>
#include <vector>

#include "memory/planner.h"

namespace mtir::memory {

struct Problem {
  std::vector<int64_t> size;   // aligned up to the alignment
  std::vector<int> first;      // first live step
  std::vector<int> last;       // last live step (inclusive)
  std::vector<int> placeable;  // indices of the tensors with a non-zero size
  // conflicts[i]: the tensors whose live steps share a step with i's, both non-zero.
  std::vector<std::vector<int>> conflicts;
};

// Validates (user errors on bad input) and builds the conflict graph.
Problem make_problem(const std::vector<TensorLifetime>& tensors, int64_t alignment);

// Validates the tensors and the alignment alone.
void validate_tensors(const std::vector<TensorLifetime>& tensors, int64_t alignment);

int64_t align_up(int64_t size, int64_t alignment);

struct Placement {
  std::vector<int64_t> offsets;  // parallel to the tensors; 0 for zero-size ones
  int64_t pool = 0;
};

// Places the tensors of `order` (a permutation of problem.placeable) one by one, each
// at the lowest offset where it overlaps no conflicting tensor placed before it.
// `scratch` is reused between calls to avoid allocations in the search loop.
struct PlaceScratch {
  std::vector<char> placed;
  std::vector<std::pair<int64_t, int64_t>> busy;
};
Placement place_first_fit(const Problem& problem, const std::vector<int>& order,
                          PlaceScratch& scratch);
// The same, reusing `previous`, the placement of an order whose first `from` tensors are
// those of `order`: a tensor's offset depends only on the tensors before it.
Placement place_first_fit(const Problem& problem, const std::vector<int>& order,
                          PlaceScratch& scratch, size_t from, const Placement& previous);

}  // namespace mtir::memory
