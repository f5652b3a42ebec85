// Groups of tensors placed at fixed distances from each other: the sharings (an output
// over its dead input, the same offset) and the overlaps (an output a proved shift away
// from an input it overlaps while both are live). The planner places each group as one
// tensor (placement.h: merge_linked).
#include <algorithm>
#include <functional>
#include <set>

#include "memory/placement.h"
#include "memory/planner.h"
#include "support/diagnostic.h"

namespace mtir::memory {

namespace {

struct Link {
  int a = 0, b = 0;       // offset(a) = offset(b) + shift
  int64_t shift = 0;
};

std::vector<Link> links_of(const std::vector<SharingCandidate>& shared, const std::vector<OverlapCandidate>& overlapped) {
  std::vector<Link> links;
  for (const SharingCandidate& s : shared) links.push_back({s.output, s.input, 0});
  for (const OverlapCandidate& o : overlapped) links.push_back({o.output, o.input, o.shift});
  return links;
}

// Each tensor's group (a root) and offset from the root, walking the links as a forest.
void relative_offsets(size_t n, const std::vector<Link>& links, std::vector<int>& root, std::vector<int64_t>& rel) {
  std::vector<std::vector<std::pair<int, int64_t>>> next(n);  // neighbour, its offset - mine
  for (const Link& l : links) {
    next[l.b].push_back({l.a, l.shift});
    next[l.a].push_back({l.b, -l.shift});
  }
  root.assign(n, -1);
  rel.assign(n, 0);
  for (size_t s = 0; s < n; ++s) {
    if (root[s] >= 0) continue;
    std::vector<int> stack = {static_cast<int>(s)};
    root[s] = static_cast<int>(s);
    while (!stack.empty()) {
      const int i = stack.back();
      stack.pop_back();
      for (const auto& [j, d] : next[i]) {
        if (root[j] >= 0) continue;
        root[j] = static_cast<int>(s), rel[j] = rel[i] + d;
        stack.push_back(j);
      }
    }
  }
}

}  // namespace

Groups merge_linked(const std::vector<TensorLifetime>& tensors, const std::vector<SharingCandidate>& shared,
                    const std::vector<OverlapCandidate>& overlapped) {
  std::vector<int> root;
  Groups g;
  relative_offsets(tensors.size(), links_of(shared, overlapped), root, g.rel);
  // Offsets inside a group start at its lowest member.
  std::vector<int64_t> low(tensors.size(), 0);
  for (size_t i = 0; i < tensors.size(); ++i) low[root[i]] = std::min(low[root[i]], g.rel[i]);
  std::vector<int> index_of_root(tensors.size(), -1);
  g.group_of.assign(tensors.size(), -1);
  for (size_t i = 0; i < tensors.size(); ++i) {
    const int r = root[i];
    g.rel[i] -= low[r];
    const int64_t end = g.rel[i] + tensors[i].size_bytes;
    if (index_of_root[r] < 0) {
      index_of_root[r] = static_cast<int>(g.merged.size());
      g.merged.push_back(tensors[i]);
      g.merged.back().size_bytes = end;
    } else {
      TensorLifetime& m = g.merged[index_of_root[r]];
      m.size_bytes = std::max(m.size_bytes, end);
      m.first_step = std::min(m.first_step, tensors[i].first_step);
      m.last_step = std::max(m.last_step, tensors[i].last_step);
    }
    g.group_of[i] = index_of_root[r];
  }
  std::vector<int> members(g.merged.size(), 0);
  for (size_t i = 0; i < tensors.size(); ++i) ++members[g.group_of[i]];
  g.pieces.resize(g.merged.size());
  for (size_t i = 0; i < tensors.size(); ++i)
    if (members[g.group_of[i]] > 1)
      g.pieces[g.group_of[i]].push_back({g.rel[i], tensors[i].size_bytes, tensors[i].first_step, tensors[i].last_step});
  return g;
}

int64_t grouped_lower_bound(const Groups& groups, int64_t alignment) {
  std::set<int> starts;
  for (const TensorLifetime& t : groups.merged) starts.insert(t.first_step);
  for (const auto& ps : groups.pieces)
    for (const Piece& p : ps) starts.insert(p.first);
  int64_t best = 0;
  for (int s : starts) {
    int64_t live = 0;
    for (size_t k = 0; k < groups.merged.size(); ++k) {
      const TensorLifetime& t = groups.merged[k];
      if (groups.pieces[k].empty()) {
        if (t.first_step <= s && s <= t.last_step) live += align_up(t.size_bytes, alignment);
        continue;
      }
      std::vector<std::pair<int64_t, int64_t>> spans;
      for (const Piece& p : groups.pieces[k])
        if (p.first <= s && s <= p.last) spans.emplace_back(p.rel, p.rel + align_up(p.size, alignment));
      std::sort(spans.begin(), spans.end());
      int64_t end = 0;
      for (const auto& [b, e] : spans) {
        live += std::max<int64_t>(0, e - std::max(b, end));
        end = std::max(end, e);
      }
    }
    best = std::max(best, live);
  }
  return best;
}

}  // namespace mtir::memory

namespace mtir {

std::vector<OverlapCandidate> accept_overlaps(const std::vector<TensorLifetime>& tensors, int64_t alignment,
                                              const std::vector<SharingCandidate>& shared,
                                              const std::vector<OverlapCandidate>& overlaps) {
  const int n = static_cast<int>(tensors.size());
  std::vector<OverlapCandidate> accepted;
  for (const OverlapCandidate& c : overlaps) {
    if (c.output < 0 || c.output >= n || c.input < 0 || c.input >= n || c.output == c.input || c.shift % alignment)
      user_error(Span{}, "memory planner: overlap candidate (output " + std::to_string(c.output) + ", input " +
                             std::to_string(c.input) + ", shift " + std::to_string(c.shift) +
                             ") does not name two tensors at a multiple of the alignment");
    std::vector<OverlapCandidate> trial = accepted;
    trial.push_back(c);
    const memory::Groups g = memory::merge_linked(tensors, shared, trial);
    // Two members of one group that no link ties may not share a byte while both live;
    // a link that closes a cycle shows as such a pair or as a wrong distance.
    std::set<std::pair<int, int>> tied;
    for (const SharingCandidate& s : shared) tied.insert({std::min(s.output, s.input), std::max(s.output, s.input)});
    for (const OverlapCandidate& o : trial) tied.insert({std::min(o.output, o.input), std::max(o.output, o.input)});
    bool sound = g.rel[c.output] - g.rel[c.input] == c.shift;
    for (int i = 0; i < n && sound; ++i) {
      for (int j = i + 1; j < n && sound; ++j) {
        if (g.group_of[i] != g.group_of[j] || tied.count({i, j})) continue;
        const TensorLifetime &a = tensors[i], &b = tensors[j];
        const int64_t sa = memory::align_up(a.size_bytes, alignment), sb = memory::align_up(b.size_bytes, alignment);
        if (sa == 0 || sb == 0 || a.last_step < b.first_step || b.last_step < a.first_step) continue;
        sound = g.rel[i] + sa <= g.rel[j] || g.rel[j] + sb <= g.rel[i];
      }
    }
    if (sound) accepted.push_back(c);
  }
  return accepted;
}

int64_t memory_lower_bound(const std::vector<TensorLifetime>& tensors, int64_t alignment,
                           const std::vector<SharingCandidate>& shared,
                           const std::vector<OverlapCandidate>& overlapped) {
  memory::validate_tensors(tensors, alignment);
  return memory::grouped_lower_bound(memory::merge_linked(tensors, accept_sharing(tensors, shared), overlapped),
                                     alignment);
}

}  // namespace mtir
