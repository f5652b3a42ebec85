// Checking a memory plan, and printing it for humans.
//
// check_plan trusts nothing in the plan: it recomputes the lower bound and compares
// every pair of tensors that are live at a common step. A tensor occupies its slot,
// [offset, offset + size rounded up to the alignment), the same slot the planner
// reserves; with aligned offsets, two slots overlap exactly when the tensors' bytes do.
#include <algorithm>
#include <cstdio>
#include <set>
#include <sstream>

#include "memory/placement.h"
#include "memory/planner.h"

namespace mtir {

namespace {

std::string bytes(int64_t begin, int64_t end) {
  return "[" + std::to_string(begin) + ", " + std::to_string(end) + ")";
}

std::string steps(int64_t first, int64_t last) {
  return std::to_string(first) + ".." + std::to_string(last);
}

// The sharings of the plan that are sound: both tensors exist, the same size at the
// same offset, and the input's last step is the output's first. Reports the others.
std::set<std::pair<size_t, size_t>> sound_sharings(const std::vector<TensorLifetime>& tensors,
                                                   const MemoryPlan& plan, std::vector<std::string>& problems) {
  std::set<std::pair<size_t, size_t>> sound;
  const int n = static_cast<int>(tensors.size());
  std::set<int> inputs, outputs;
  for (const SharingCandidate& c : plan.shared) {
    if (c.output < 0 || c.output >= n || c.input < 0 || c.input >= n || c.output == c.input) {
      problems.push_back("sharing (output " + std::to_string(c.output) + ", input " + std::to_string(c.input) +
                         ") does not name two tensors");
      continue;
    }
    const TensorLifetime& out = tensors[c.output];
    const TensorLifetime& in = tensors[c.input];
    std::string why;
    if (plan.offsets[c.output] != plan.offsets[c.input]) why = "they have different offsets";
    else if (out.size_bytes != in.size_bytes) why = "they have different sizes";
    else if (in.last_step != out.first_step)
      why = "the input's last step " + std::to_string(in.last_step) + " is not the output's first step " +
            std::to_string(out.first_step);
    else if (!inputs.insert(c.input).second) why = "the input is shared by another output too";
    else if (!outputs.insert(c.output).second) why = "the output shares another input too";
    if (!why.empty()) {
      problems.push_back("output '" + out.name + "' may not share the bytes of input '" + in.name + "': " + why);
      continue;
    }
    sound.insert({std::min<size_t>(c.output, c.input), std::max<size_t>(c.output, c.input)});
  }
  // An overlap is sound at its shift (the caller proved the calls safe at that distance).
  for (const OverlapCandidate& c : plan.overlapped) {
    if (c.output < 0 || c.output >= n || c.input < 0 || c.input >= n || c.output == c.input ||
        plan.offsets[c.output] - plan.offsets[c.input] != c.shift) {
      problems.push_back("overlap (output " + std::to_string(c.output) + ", input " + std::to_string(c.input) +
                         ") is not placed at its shift " + std::to_string(c.shift));
      continue;
    }
    sound.insert({std::min<size_t>(c.output, c.input), std::max<size_t>(c.output, c.input)});
  }
  return sound;
}

void check_overlaps(const std::vector<TensorLifetime>& tensors, const std::vector<int64_t>& size,
                    const MemoryPlan& plan, const std::set<std::pair<size_t, size_t>>& sound,
                    std::vector<std::string>& problems) {
  const size_t n = tensors.size();
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = i + 1; j < n; ++j) {
      if (size[i] == 0 || size[j] == 0 || sound.count({i, j})) continue;
      const TensorLifetime& a = tensors[i];
      const TensorLifetime& b = tensors[j];
      const int first = std::max(a.first_step, b.first_step);
      const int last = std::min(a.last_step, b.last_step);
      const int64_t a_end = plan.offsets[i] + size[i], b_end = plan.offsets[j] + size[j];
      const int64_t lo = std::max(plan.offsets[i], plan.offsets[j]);
      const int64_t hi = std::min(a_end, b_end);
      if (first > last || lo >= hi) continue;
      problems.push_back("tensors '" + a.name + "' (bytes " + bytes(plan.offsets[i], a_end) +
                         ", steps " + steps(a.first_step, a.last_step) + ") and '" + b.name +
                         "' (bytes " + bytes(plan.offsets[j], b_end) + ", steps " +
                         steps(b.first_step, b.last_step) + ") overlap at bytes " + bytes(lo, hi) +
                         " while both are live at steps " + steps(first, last));
    }
  }
}

std::string pad_left(const std::string& s, size_t width) {
  return std::string(width > s.size() ? width - s.size() : 0, ' ') + s;
}

std::string pad_right(const std::string& s, size_t width) {
  return s + std::string(width > s.size() ? width - s.size() : 0, ' ');
}

std::string ratio_text(int64_t pool, int64_t bound) {
  if (bound == 0) return pool == 0 ? "1.000" : "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", static_cast<double>(pool) / static_cast<double>(bound));
  return buf;
}

}  // namespace

std::vector<std::string> check_plan(const std::vector<TensorLifetime>& tensors,
                                    const MemoryPlan& plan, int64_t alignment) {
  memory::validate_tensors(tensors, alignment);
  std::vector<std::string> problems;
  if (plan.offsets.size() != tensors.size()) {
    problems.push_back("plan has " + std::to_string(plan.offsets.size()) + " offsets for " +
                       std::to_string(tensors.size()) + " tensors");
    return problems;
  }
  std::vector<int64_t> size(tensors.size());
  bool offsets_ok = true;
  for (size_t i = 0; i < tensors.size(); ++i) {
    size[i] = memory::align_up(tensors[i].size_bytes, alignment);
    const std::string& name = tensors[i].name;
    const int64_t offset = plan.offsets[i];
    if (offset < 0) {
      problems.push_back("tensor '" + name + "' has negative offset " + std::to_string(offset));
      offsets_ok = false;
      continue;
    }
    if (offset % alignment != 0) {
      problems.push_back("tensor '" + name + "' has offset " + std::to_string(offset) +
                         ", not a multiple of the alignment " + std::to_string(alignment));
    }
    if (size[i] > 0 && offset > plan.pool_size - size[i]) {
      problems.push_back("tensor '" + name + "' (bytes " + bytes(offset, offset + size[i]) +
                         ") extends beyond the pool of " + std::to_string(plan.pool_size) +
                         " bytes");
    }
  }
  std::set<std::pair<size_t, size_t>> sound;
  if (offsets_ok) {
    sound = sound_sharings(tensors, plan, problems);
    check_overlaps(tensors, size, plan, sound, problems);
  }
  std::vector<SharingCandidate> shared;
  std::set<std::pair<size_t, size_t>> overlap_pairs;
  for (const OverlapCandidate& c : plan.overlapped)
    overlap_pairs.insert({std::min<size_t>(c.output, c.input), std::max<size_t>(c.output, c.input)});
  for (const auto& [a, b] : sound) {
    if (overlap_pairs.count({a, b})) continue;
    // Back to (output, input): the output is the one that starts later.
    const bool a_out = tensors[a].first_step > tensors[b].first_step;
    shared.push_back({static_cast<int>(a_out ? a : b), static_cast<int>(a_out ? b : a)});
  }
  std::vector<OverlapCandidate> overlapped;
  for (const OverlapCandidate& c : plan.overlapped)
    if (sound.count({std::min<size_t>(c.output, c.input), std::max<size_t>(c.output, c.input)})) overlapped.push_back(c);
  const int64_t bound = memory_lower_bound(tensors, alignment, shared, overlapped);
  if (plan.pool_size < bound) {
    problems.push_back("pool of " + std::to_string(plan.pool_size) + " bytes is below the lower bound of " +
                       std::to_string(bound) + " bytes" + (shared.empty() ? "" : " (with its sharings)"));
  }
  return problems;
}

std::string plan_report(const std::vector<TensorLifetime>& tensors, const MemoryPlan& plan) {
  std::vector<std::vector<std::string>> rows = {{"tensor", "size", "offset", "steps"}};
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorLifetime& t = tensors[i];
    rows.push_back({t.name, std::to_string(t.size_bytes),
                    i < plan.offsets.size() ? std::to_string(plan.offsets[i]) : "?",
                    steps(t.first_step, t.last_step)});
  }
  std::vector<size_t> width(4, 0);
  for (const auto& row : rows) {
    for (size_t c = 0; c < 4; ++c) width[c] = std::max(width[c], row[c].size());
  }
  std::ostringstream os;
  for (const auto& row : rows) {
    os << pad_right(row[0], width[0]) << "  " << pad_left(row[1], width[1]) << "  "
       << pad_left(row[2], width[2]) << "  " << row[3] << "\n";
  }
  for (const SharingCandidate& c : plan.shared) {
    if (c.output < 0 || c.input < 0 || static_cast<size_t>(std::max(c.output, c.input)) >= tensors.size()) continue;
    os << tensors[c.output].name << " is written over " << tensors[c.input].name << "\n";
  }
  os << "pool " << plan.pool_size << " bytes, lower bound " << plan.lower_bound
     << " bytes, ratio " << ratio_text(plan.pool_size, plan.lower_bound);
  if (!plan.shared.empty())
    os << ", lower bound with sharing " << plan.shared_lower_bound << " bytes, ratio "
       << ratio_text(plan.pool_size, plan.shared_lower_bound);
  os << ", algorithm " << (plan.algorithm.empty() ? "-" : plan.algorithm) << "\n";
  return os.str();
}

}  // namespace mtir
