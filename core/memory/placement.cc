// Validation, the conflict graph and first-fit placement for the memory planner.
//
// The conflict graph is built with one sweep over the tensors sorted by first step:
// a tensor conflicts with the later-starting tensors that start no later than its last
// step. First-fit then only looks at a tensor's neighbours, so a whole placement costs
// O(sum of degrees * log degree), which keeps the improvement search cheap.
#include "memory/placement.h"

#include <algorithm>
#include <string>

#include "support/diagnostic.h"

namespace mtir::memory {

void validate_tensors(const std::vector<TensorLifetime>& tensors, int64_t alignment) {
  if (alignment <= 0 || (alignment & (alignment - 1)) != 0) {
    user_error(Span{}, "memory planner: alignment " + std::to_string(alignment) +
                           " is not a power of two");
  }
  int64_t total = 0;
  for (const TensorLifetime& t : tensors) {
    if (t.size_bytes < 0) {
      user_error(Span{}, "memory planner: tensor '" + t.name + "' has negative size " +
                             std::to_string(t.size_bytes));
    }
    // Keeps every offset and pool size far from overflow, whatever the order.
    constexpr int64_t kMaxTotal = int64_t{1} << 56;
    if (t.size_bytes > kMaxTotal || total + t.size_bytes + alignment > kMaxTotal) {
      user_error(Span{}, "memory planner: tensor '" + t.name + "' (" +
                             std::to_string(t.size_bytes) +
                             " bytes) makes the total size of the tensors exceed 2^56 bytes");
    }
    total += align_up(t.size_bytes, alignment);
    if (t.first_step > t.last_step) {
      user_error(Span{}, "memory planner: tensor '" + t.name + "' has first_step " +
                             std::to_string(t.first_step) + " after last_step " +
                             std::to_string(t.last_step));
    }
  }
}

int64_t align_up(int64_t size, int64_t alignment) {
  return (size + alignment - 1) / alignment * alignment;
}

Problem make_problem(const std::vector<TensorLifetime>& tensors, int64_t alignment) {
  validate_tensors(tensors, alignment);
  Problem p;
  const int n = static_cast<int>(tensors.size());
  p.size.resize(n);
  p.first.resize(n);
  p.last.resize(n);
  p.conflicts.resize(n);
  for (int i = 0; i < n; ++i) {
    p.size[i] = align_up(tensors[i].size_bytes, alignment);
    p.first[i] = tensors[i].first_step;
    p.last[i] = tensors[i].last_step;
    if (p.size[i] > 0) p.placeable.push_back(i);
  }
  std::vector<int> by_start = p.placeable;
  std::stable_sort(by_start.begin(), by_start.end(),
                   [&](int a, int b) { return p.first[a] < p.first[b]; });
  for (size_t a = 0; a < by_start.size(); ++a) {
    const int i = by_start[a];
    for (size_t b = a + 1; b < by_start.size() && p.first[by_start[b]] <= p.last[i]; ++b) {
      p.conflicts[i].push_back(by_start[b]);
      p.conflicts[by_start[b]].push_back(i);
    }
  }
  return p;
}

namespace {

// The lowest offset for t where no member of t overlaps a member of a placed conflicting
// tensor live at a common step (either may be a group; a plain tensor is one member).
int64_t place_pieces(const Problem& problem, int t, const Placement& out, const PlaceScratch& scratch) {
  auto pieces_of = [&](int i) {
    if (i < static_cast<int>(problem.pieces.size()) && !problem.pieces[i].empty()) return problem.pieces[i];
    return std::vector<Piece>{{0, problem.size[i], problem.first[i], problem.last[i]}};
  };
  // t at offset o is refused when lo < o < hi for some pair of members.
  std::vector<std::pair<int64_t, int64_t>> refused;
  const std::vector<Piece> mine = pieces_of(t);
  for (int u : problem.conflicts[t]) {
    if (!scratch.placed[u]) continue;
    for (const Piece& pu : pieces_of(u))
      for (const Piece& pt : mine)
        if (pu.first <= pt.last && pt.first <= pu.last && pu.size > 0 && pt.size > 0)
          refused.emplace_back(out.offsets[u] + pu.rel - pt.rel - pt.size, out.offsets[u] + pu.rel + pu.size - pt.rel);
  }
  std::sort(refused.begin(), refused.end());
  int64_t candidate = 0;
  for (const auto& [lo, hi] : refused) {
    if (candidate <= lo) break;
    candidate = std::max(candidate, hi);
  }
  return candidate;
}

}  // namespace

Placement place_first_fit(const Problem& problem, const std::vector<int>& order,
                          PlaceScratch& scratch, size_t from, const Placement& previous) {
  Placement out;
  out.offsets = previous.offsets;
  scratch.placed.assign(problem.size.size(), 0);
  for (size_t k = 0; k < from; ++k) {
    const int t = order[k];
    scratch.placed[t] = 1;
    out.pool = std::max(out.pool, out.offsets[t] + problem.size[t]);
  }
  for (size_t k = from; k < order.size(); ++k) {
    const int t = order[k];
    if (!problem.pieces.empty()) {
      out.offsets[t] = place_pieces(problem, t, out, scratch);
      out.pool = std::max(out.pool, out.offsets[t] + problem.size[t]);
      scratch.placed[t] = 1;
      continue;
    }
    scratch.busy.clear();
    for (int u : problem.conflicts[t]) {
      if (scratch.placed[u]) scratch.busy.emplace_back(out.offsets[u], out.offsets[u] + problem.size[u]);
    }
    std::sort(scratch.busy.begin(), scratch.busy.end());
    int64_t candidate = 0;
    for (const auto& [begin, end] : scratch.busy) {
      if (begin - candidate >= problem.size[t]) break;
      candidate = std::max(candidate, end);
    }
    out.offsets[t] = candidate;
    out.pool = std::max(out.pool, candidate + problem.size[t]);
    scratch.placed[t] = 1;
  }
  return out;
}

Placement place_first_fit(const Problem& problem, const std::vector<int>& order,
                          PlaceScratch& scratch) {
  Placement none;
  none.offsets.assign(problem.size.size(), 0);
  return place_first_fit(problem, order, scratch, 0, none);
}

}  // namespace mtir::memory
