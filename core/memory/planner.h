// The static memory planner: every intermediate tensor of a model lives in one
// workspace pool, and the planner gives each tensor a byte offset in that pool.
//
// Input: each tensor's size and the inclusive steps of the schedule during which it is
// live (from the step that produces it to the last step that reads it). Two tensors
// whose step ranges share a step must not share a byte. The planner minimises the pool
// size. This is the offline dynamic-storage-allocation problem (NP-hard), so it runs
// several greedy orders, each placed first-fit (lowest offset that fits among the
// already-placed tensors it conflicts with), then a bounded, seeded hill-climb over the
// placement order, and returns the best plan.
//
// Sizes are rounded up to `alignment`, so every offset is a multiple of it. Zero-size
// tensors get offset 0 and conflict with nothing. The result depends only on the input
// and the options (no clocks, no threads, no library-defined random distributions), so
// native and wasm builds give the same plan.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mtir {

struct TensorLifetime {
  std::string name;
  int64_t size_bytes = 0;
  int first_step = 0;  // inclusive steps of the schedule
  int last_step = 0;
};

// An output that may take the bytes of an input of the operator that produces it (an
// in-place elementwise kernel: add into a dead input). The caller has checked the kernel;
// the planner accepts a candidate only when the input's last step is the output's first
// step and both have the same size, and gives each input to at most one output.
struct SharingCandidate {
  int output = 0;  // indices into the tensors
  int input = 0;
};

// An output the caller has proved may overlap an input while both are live when it sits
// `shift` bytes from it (offset(output) = offset(input) + shift; a multiple of the
// alignment, negative below it): the calls that write the output never write a byte of
// the input that a later call (or the same one) still reads (analysis/call_overlap.h).
// The planner keeps the two at that distance; it accepts a candidate only when no other
// two tensors of the merged group would then share a byte while both are live.
struct OverlapCandidate {
  int output = 0;  // indices into the tensors
  int input = 0;
  int64_t shift = 0;
};

struct PlannerOptions {
  int64_t alignment = 16;            // a power of two, in bytes
  int improvement_iterations = 2000; // bound of the improvement search; 0 turns it off
  uint64_t seed = 1;                 // seed of the improvement search
};

struct MemoryPlan {
  std::vector<int64_t> offsets;  // parallel to the tensors
  int64_t pool_size = 0;
  int64_t lower_bound = 0;       // memory_lower_bound of the tensors: whole tensors, none shared
  // The bound with the accepted sharings: an output and the input it overwrites count once.
  int64_t shared_lower_bound = 0;
  std::vector<SharingCandidate> shared;  // the accepted candidates: same offset
  std::vector<OverlapCandidate> overlapped;  // the accepted overlaps: at their shift
  std::string algorithm;                 // which heuristic produced the plan
};

// The heuristics plan_memory tries, in the order it tries them (earlier wins ties).
enum class PlannerHeuristic {
  kGreedyBySize,       // largest first
  kGreedyByConflicts,  // most conflicting bytes first
  kGreedyByArea,       // largest size * lifetime first
  kGreedyByStart,      // earliest first step first (classic first-fit)
  kHillClimb,          // improvement search from the best greedy order
};
const char* heuristic_name(PlannerHeuristic h);
std::vector<PlannerHeuristic> all_heuristics();

// The best plan over all heuristics. Throws a user error (support/diagnostic.h) on a
// negative size, first_step > last_step, an alignment that is not a power of two, or a
// negative iteration count.
MemoryPlan plan_memory(const std::vector<TensorLifetime>& tensors, const PlannerOptions& options,
                       const std::vector<SharingCandidate>& candidates = {},
                       const std::vector<OverlapCandidate>& overlaps = {});

// The overlaps the planner accepts (see OverlapCandidate) next to the accepted sharings,
// in their order. Throws a user error on an index out of range, an output that is its
// own input or a shift that is not a multiple of the alignment.
std::vector<OverlapCandidate> accept_overlaps(const std::vector<TensorLifetime>& tensors, int64_t alignment,
                                              const std::vector<SharingCandidate>& shared,
                                              const std::vector<OverlapCandidate>& overlaps);

// The candidates the planner accepts (see SharingCandidate), in their order. Throws a
// user error on an index out of range or an output that is its own input.
std::vector<SharingCandidate> accept_sharing(const std::vector<TensorLifetime>& tensors,
                                             const std::vector<SharingCandidate>& candidates);

// The plan of one heuristic alone (kHillClimb starts from the best greedy order and
// never returns a worse plan than it).
MemoryPlan plan_memory_with(const std::vector<TensorLifetime>& tensors, PlannerHeuristic heuristic,
                            const PlannerOptions& options);

// Max over steps of the sum of the aligned sizes of the tensors live at that step. No
// plan can have a smaller pool.
int64_t memory_lower_bound(const std::vector<TensorLifetime>& tensors, int64_t alignment);
// The same bound when each pair of `shared` holds one slot (accepted candidates only).
int64_t memory_lower_bound(const std::vector<TensorLifetime>& tensors, int64_t alignment,
                           const std::vector<SharingCandidate>& shared);
// ... and each group of accepted overlaps as one slot of its extent over its members' steps.
int64_t memory_lower_bound(const std::vector<TensorLifetime>& tensors, int64_t alignment,
                           const std::vector<SharingCandidate>& shared,
                           const std::vector<OverlapCandidate>& overlapped);

// Every problem of `plan`: two tensors live at a common step whose byte ranges overlap
// (naming both, their byte ranges and common steps) unless they are a sharing of
// plan.shared that is sound (same offset and size, the input's last step the output's
// first); a sharing that is not; a misaligned or negative offset, a tensor beyond the
// pool, a pool below the lower bound with sharing, a wrong number of offsets. Empty
// when the plan is valid.
std::vector<std::string> check_plan(const std::vector<TensorLifetime>& tensors,
                                    const MemoryPlan& plan, int64_t alignment);

// A table for humans: tensor, size, offset, live steps; then pool, lower bound, ratio
// and algorithm.
std::string plan_report(const std::vector<TensorLifetime>& tensors, const MemoryPlan& plan);

}  // namespace mtir
