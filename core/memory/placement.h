// Internal to the memory planner: the validated problem (aligned sizes and the conflict
// graph) and first-fit placement of tensors in a given order. Every heuristic of
// planner.cc is an order handed to place_first_fit.
#pragma once

#include <cstdint>
#include <vector>

#include "memory/planner.h"

namespace mtir::memory {

// A member of a group of tensors placed together (overlaps): its offset in the group,
// aligned size and live steps.
struct Piece {
  int64_t rel = 0, size = 0;
  int first = 0, last = 0;
};

struct Problem {
  std::vector<int64_t> size;   // aligned up to the alignment
  std::vector<int> first;      // first live step
  std::vector<int> last;       // last live step (inclusive)
  std::vector<int> placeable;  // indices of the tensors with a non-zero size
  // conflicts[i]: the tensors whose live steps share a step with i's, both non-zero.
  std::vector<std::vector<int>> conflicts;
  // pieces[i]: when tensor i is a group (merge_linked), its members; then two tensors
  // that conflict keep apart only the bytes of members live at a common step.
  std::vector<std::vector<Piece>> pieces;
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

namespace mtir::memory {

// Tensors tied together by accepted sharings (same offset) and overlaps (at a shift),
// each group one tensor: from its lowest member's offset to its highest member's end,
// live from the first member's first step to the last member's last. rel[i] is tensor
// i's offset inside its group.
struct Groups {
  std::vector<TensorLifetime> merged;
  std::vector<int> group_of;
  std::vector<int64_t> rel;
  std::vector<std::vector<Piece>> pieces;  // per merged tensor, for groups of two or more
};
// The most bytes live at once when each group counts the span of its members live at
// each step.
int64_t grouped_lower_bound(const Groups& groups, int64_t alignment);
Groups merge_linked(const std::vector<TensorLifetime>& tensors, const std::vector<SharingCandidate>& shared,
                    const std::vector<OverlapCandidate>& overlapped);

}  // namespace mtir::memory
