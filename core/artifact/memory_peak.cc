#include "artifact/memory_peak.h"

#include <algorithm>
#include <map>

namespace mtir {

namespace {

// The bytes the tensors span in their pools: overlapping ranges count once.
int64_t spanned(std::vector<PlannedTensor> live) {
  std::sort(live.begin(), live.end(), [](const PlannedTensor& a, const PlannedTensor& b) {
    return std::tie(a.pool, a.offset) < std::tie(b.pool, b.offset);
  });
  int64_t total = 0, end = 0;
  std::string pool;
  for (const PlannedTensor& t : live) {
    if (t.pool != pool) pool = t.pool, end = 0;
    const int64_t begin = std::max(t.offset, end), stop = t.offset + t.size;
    if (stop > begin) total += stop - begin;
    end = std::max(end, stop);
  }
  return total;
}

std::string callee_at(const FunctionMemoryPlan& plan, int step) {
  return step < static_cast<int>(plan.step_callees.size()) ? plan.step_callees[step] : "";
}

}  // namespace

MemoryPeak memory_peak(const FunctionMemoryPlan& plan) {
  MemoryPeak peak;
  if (!plan.planned) return peak;
  for (int s = 0; s < plan.steps; ++s) {
    std::vector<PlannedTensor> live;
    for (const PlannedTensor& t : plan.tensors)
      if (t.first_step >= 0 && t.first_step <= s && s <= t.last_step && t.size > 0) live.push_back(t);
    const int64_t bytes = spanned(live);
    if (bytes == peak.bytes && peak.step >= 0) peak.tied_steps.push_back(s);
    if (bytes <= peak.bytes) continue;
    std::sort(live.begin(), live.end(), [](const PlannedTensor& a, const PlannedTensor& b) {
      return std::tie(a.pool, a.offset, a.name) < std::tie(b.pool, b.offset, b.name);
    });
    peak = {bytes, s, callee_at(plan, s), live, {}};
  }
  return peak;
}

std::string peak_text(const MemoryPeak& peak) {
  if (peak.step < 0) return "";
  std::string out = "  peak " + std::to_string(peak.bytes) + " bytes at step " + std::to_string(peak.step) +
                    (peak.callee.empty() ? "" : " (" + peak.callee + ")") + ", live there:\n";
  for (const PlannedTensor& t : peak.live)
    out += "    " + t.name + " bytes [" + std::to_string(t.offset) + ", " + std::to_string(t.offset + t.size) +
           ") steps " + std::to_string(t.first_step) + "-" + std::to_string(t.last_step) + "\n";
  if (!peak.tied_steps.empty()) {
    out += peak.tied_steps.size() > 1 ? "  as many bytes at steps" : "  as many bytes at step";
    for (size_t k = 0; k < peak.tied_steps.size(); ++k) out += (k ? ", " : " ") + std::to_string(peak.tied_steps[k]);
    out += ": lowering one step alone leaves the peak\n";
  }
  return out;
}

nlohmann::json peak_json(const MemoryPeak& peak) {
  nlohmann::json live = nlohmann::json::array();
  for (const PlannedTensor& t : peak.live)
    live.push_back({{"name", t.name}, {"pool", t.pool}, {"offset", t.offset}, {"bytes", t.size},
                    {"first_step", t.first_step}, {"last_step", t.last_step}});
  return {{"bytes", peak.bytes}, {"step", peak.step},  {"callee", peak.callee},
          {"live", live},         {"tied_steps", peak.tied_steps}};
}

}  // namespace mtir
