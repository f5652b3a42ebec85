// The memory planner's heuristics and the improvement search.
//
// Each greedy heuristic is only an order of the tensors; placement is always first-fit
// (placement.cc). That is enough in principle: placing the tensors of an optimal plan
// in increasing offset order with first-fit gives each one an offset no higher than its
// optimal one, so some order reaches the optimum. The greedy orders (by size, by
// conflicts, by size * lifetime, by first step; ideas from TFLite's greedy-by-size and
// TVM USMP's greedy-by-conflicts) give good starts, and a bounded hill-climb over the
// order then looks for the rest: it moves a tensor that touches the top of the pool
// earlier, or swaps or moves random tensors, keeps moves that do not grow the pool
// (so it can walk across plateaus), and returns to the best order when it stalls. It
// stops early once the pool meets the lower bound, which is then provably optimal.
//
// Randomness comes from std::mt19937_64, whose output the standard fixes, reduced with
// `%` rather than a std::*_distribution (whose output differs between standard
// libraries), so native and wasm builds agree.
#include <algorithm>
#include <functional>
#include <map>
#include <random>

#include "memory/placement.h"
#include "memory/planner.h"
#include "support/diagnostic.h"

namespace mtir {

using memory::Placement;
using memory::PlaceScratch;
using memory::Problem;

const char* heuristic_name(PlannerHeuristic h) {
  switch (h) {
    case PlannerHeuristic::kGreedyBySize: return "greedy_by_size";
    case PlannerHeuristic::kGreedyByConflicts: return "greedy_by_conflicts";
    case PlannerHeuristic::kGreedyByArea: return "greedy_by_area";
    case PlannerHeuristic::kGreedyByStart: return "greedy_by_start";
    case PlannerHeuristic::kHillClimb: return "hill_climb";
  }
  return "unknown";
}

std::vector<PlannerHeuristic> all_heuristics() {
  return {PlannerHeuristic::kGreedyBySize, PlannerHeuristic::kGreedyByConflicts,
          PlannerHeuristic::kGreedyByArea, PlannerHeuristic::kGreedyByStart,
          PlannerHeuristic::kHillClimb};
}

int64_t memory_lower_bound(const std::vector<TensorLifetime>& tensors, int64_t alignment) {
  memory::validate_tensors(tensors, alignment);
  // Net change of the live bytes at each step; a tensor stops being live after its last
  // step. std::map keeps the steps sorted, so the running sum visits them in order.
  std::map<int64_t, int64_t> delta;
  for (const TensorLifetime& t : tensors) {
    const int64_t size = memory::align_up(t.size_bytes, alignment);
    if (size == 0) continue;
    delta[t.first_step] += size;
    delta[int64_t{t.last_step} + 1] -= size;
  }
  int64_t live = 0, best = 0;
  for (const auto& [step, change] : delta) {
    live += change;
    best = std::max(best, live);
  }
  return best;
}

std::vector<SharingCandidate> accept_sharing(const std::vector<TensorLifetime>& tensors,
                                             const std::vector<SharingCandidate>& candidates) {
  const int n = static_cast<int>(tensors.size());
  std::vector<char> input_taken(n, 0), output_served(n, 0);
  std::vector<SharingCandidate> accepted;
  for (const SharingCandidate& c : candidates) {
    if (c.output < 0 || c.output >= n || c.input < 0 || c.input >= n || c.output == c.input) {
      user_error(Span{}, "memory planner: sharing candidate (output " + std::to_string(c.output) + ", input " +
                             std::to_string(c.input) + ") does not name two of the " + std::to_string(n) +
                             " tensors");
    }
    const TensorLifetime& out = tensors[c.output];
    const TensorLifetime& in = tensors[c.input];
    // The input must be read for the last time by the step that writes the output: a
    // later reader would see the output's bytes.
    if (in.size_bytes != out.size_bytes || in.size_bytes == 0 || in.last_step != out.first_step) continue;
    if (input_taken[c.input] || output_served[c.output]) continue;
    input_taken[c.input] = output_served[c.output] = 1;
    accepted.push_back(c);
  }
  return accepted;
}

int64_t memory_lower_bound(const std::vector<TensorLifetime>& tensors, int64_t alignment,
                           const std::vector<SharingCandidate>& shared) {
  return memory_lower_bound(memory::merge_linked(tensors, accept_sharing(tensors, shared), {}).merged, alignment);
}

namespace {

int64_t lifetime(const Problem& p, int i) { return int64_t{p.last[i]} - p.first[i] + 1; }

// The order of one greedy heuristic; ties keep the tensors' own order.
std::vector<int> greedy_order(const Problem& p, PlannerHeuristic h) {
  std::vector<int> order = p.placeable;
  std::vector<int64_t> conflict_bytes(p.size.size(), 0);
  for (int i : order) {
    for (int j : p.conflicts[i]) conflict_bytes[i] += p.size[j];
  }
  auto by = [&](auto key) {
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return key(a) > key(b); });
  };
  switch (h) {
    case PlannerHeuristic::kGreedyBySize:
      by([&](int i) { return std::make_pair(p.size[i], lifetime(p, i)); });
      break;
    case PlannerHeuristic::kGreedyByConflicts:
      by([&](int i) { return std::make_tuple(p.conflicts[i].size(), conflict_bytes[i], p.size[i]); });
      break;
    case PlannerHeuristic::kGreedyByArea:
      // double products are exact up to 2^53 and correctly rounded beyond, so the same
      // on every platform; they cannot overflow.
      by([&](int i) {
        return std::make_pair(static_cast<double>(p.size[i]) * static_cast<double>(lifetime(p, i)),
                              p.size[i]);
      });
      break;
    case PlannerHeuristic::kGreedyByStart:
      by([&](int i) { return std::make_tuple(-int64_t{p.first[i]}, p.size[i], lifetime(p, i)); });
      break;
    case PlannerHeuristic::kHillClimb:
      MTIR_ICHECK(false, "hill_climb has no greedy order");
  }
  return order;
}

struct Candidate {
  std::vector<int> order;
  Placement placement;
  PlannerHeuristic heuristic;
};

// The greedy heuristic with the smallest pool (the earliest one on ties).
Candidate best_greedy(const Problem& p, PlaceScratch& scratch) {
  Candidate best;
  bool have = false;
  for (PlannerHeuristic h : all_heuristics()) {
    if (h == PlannerHeuristic::kHillClimb) continue;
    std::vector<int> order = greedy_order(p, h);
    Placement placement = memory::place_first_fit(p, order, scratch);
    if (!have || placement.pool < best.placement.pool) {
      best = Candidate{std::move(order), std::move(placement), h};
      have = true;
    }
  }
  return best;
}

// One random change of `order`; `top` is the current placement, used to find the
// tensors that reach the top of the pool. Returns the first position that changed.
size_t mutate(std::vector<int>& order, const Problem& p, const Placement& top, std::mt19937_64& rng) {
  const size_t n = order.size();
  auto pick = [&](size_t bound) { return static_cast<size_t>(rng() % bound); };
  const uint64_t kind = rng() % 8;
  if (kind == 0) {  // move a tensor that touches the top of the pool earlier
    std::vector<size_t> at_top;
    for (size_t k = 0; k < n; ++k) {
      const int t = order[k];
      if (k > 0 && top.offsets[t] + p.size[t] == top.pool) at_top.push_back(k);
    }
    if (!at_top.empty()) {
      const size_t from = at_top[pick(at_top.size())];
      const size_t to = pick(from);
      std::rotate(order.begin() + to, order.begin() + from, order.begin() + from + 1);
      return to;
    }
  }
  const size_t a = pick(n), b = pick(n);
  if (kind <= 3) {
    std::swap(order[a], order[b]);
  } else if (a < b) {
    std::rotate(order.begin() + a, order.begin() + a + 1, order.begin() + b + 1);
  } else {
    std::rotate(order.begin() + b, order.begin() + a, order.begin() + a + 1);
  }
  return a == b ? n : std::min(a, b);
}

Candidate hill_climb(const Problem& p, Candidate start, int64_t lower_bound,
                     const PlannerOptions& options, PlaceScratch& scratch) {
  const size_t n = start.order.size();
  if (n < 2) return start;
  std::mt19937_64 rng(options.seed);
  Candidate best = start;
  Candidate current = std::move(start);
  const int restart_after = 64 + static_cast<int>(std::min<size_t>(n, 1000)) * 2;
  int stale = 0;
  for (int it = 0; it < options.improvement_iterations && best.placement.pool > lower_bound; ++it) {
    std::vector<int> order = current.order;
    const size_t changed = mutate(order, p, current.placement, rng);
    Placement placement = memory::place_first_fit(p, order, scratch, changed, current.placement);
    const bool better = placement.pool < best.placement.pool;
    if (placement.pool <= current.placement.pool) {
      current.order = std::move(order);
      current.placement = std::move(placement);
    }
    if (better) {
      best.order = current.order;
      best.placement = current.placement;
      best.heuristic = PlannerHeuristic::kHillClimb;
      stale = 0;
    } else if (++stale >= restart_after) {
      current = best;
      stale = 0;
    }
  }
  return best;
}

void check_options(const PlannerOptions& options) {
  if (options.improvement_iterations < 0) {
    user_error(Span{}, "memory planner: improvement_iterations is negative (" +
                           std::to_string(options.improvement_iterations) + ")");
  }
}

MemoryPlan to_plan(const std::vector<TensorLifetime>& tensors, const Placement& placement,
                   PlannerHeuristic h, int64_t alignment) {
  MemoryPlan plan;
  plan.offsets = placement.offsets;
  plan.pool_size = placement.pool;
  plan.lower_bound = memory_lower_bound(tensors, alignment);
  plan.shared_lower_bound = plan.lower_bound;
  plan.algorithm = heuristic_name(h);
  return plan;
}

}  // namespace

MemoryPlan plan_memory_with(const std::vector<TensorLifetime>& tensors, PlannerHeuristic heuristic,
                            const PlannerOptions& options) {
  check_options(options);
  const Problem p = memory::make_problem(tensors, options.alignment);
  PlaceScratch scratch;
  if (heuristic != PlannerHeuristic::kHillClimb) {
    const Placement placement = memory::place_first_fit(p, greedy_order(p, heuristic), scratch);
    return to_plan(tensors, placement, heuristic, options.alignment);
  }
  const int64_t bound = memory_lower_bound(tensors, options.alignment);
  Candidate best = hill_climb(p, best_greedy(p, scratch), bound, options, scratch);
  // Name the heuristic asked for, even when the search found nothing better.
  return to_plan(tensors, best.placement, PlannerHeuristic::kHillClimb, options.alignment);
}

MemoryPlan plan_memory(const std::vector<TensorLifetime>& tensors, const PlannerOptions& options,
                       const std::vector<SharingCandidate>& candidates,
                       const std::vector<OverlapCandidate>& overlaps) {
  check_options(options);
  memory::validate_tensors(tensors, options.alignment);
  // A shared pair is one slot, an overlapping group one slot of its extent: plan the
  // merged tensors, then give every member its group's offset plus its own in the group.
  std::vector<SharingCandidate> shared = accept_sharing(tensors, candidates);
  std::vector<OverlapCandidate> overlapped = accept_overlaps(tensors, options.alignment, shared, overlaps);
  const memory::Groups groups = memory::merge_linked(tensors, shared, overlapped);
  const std::vector<TensorLifetime>& merged = groups.merged;
  const bool any_group = std::any_of(groups.pieces.begin(), groups.pieces.end(),
                                     [](const std::vector<memory::Piece>& ps) { return !ps.empty(); });
  Problem p = memory::make_problem(merged, options.alignment);
  if (any_group) {
    p.pieces = groups.pieces;
    for (auto& ps : p.pieces)
      for (memory::Piece& piece : ps) piece.size = memory::align_up(piece.size, options.alignment);
  }
  const int64_t bound = any_group ? memory::grouped_lower_bound(groups, options.alignment)
                                  : memory_lower_bound(merged, options.alignment);
  PlaceScratch scratch;
  Candidate best = hill_climb(p, best_greedy(p, scratch), bound, options, scratch);
  MemoryPlan plan = to_plan(tensors, best.placement, best.heuristic, options.alignment);
  plan.offsets.assign(tensors.size(), 0);
  for (size_t i = 0; i < tensors.size(); ++i)
    plan.offsets[i] = best.placement.offsets[groups.group_of[i]] + groups.rel[i];
  plan.shared_lower_bound = bound;
  plan.shared = std::move(shared);
  plan.overlapped = std::move(overlapped);
  return plan;
}

}  // namespace mtir
