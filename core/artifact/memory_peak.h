// Where a planned function's memory peaks: the step at which the most pool bytes are
// live (an output written beside or over an input counts the bytes the two span
// together), the call at that step, and the tensors live there. It is the bound the
// planner reached; nothing lower is possible without changing what is live at that step
// (its inputs and outputs, and what later steps still read), which `run` reports with it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "artifact/memory_plan.h"

namespace mtir {

struct MemoryPeak {
  int64_t bytes = 0;  // pool bytes spanned by the live tensors, summed over pools
  int step = -1;      // the first step with that many bytes; -1: nothing planned
  std::string callee;
  std::vector<PlannedTensor> live;  // by offset
  // The later steps with as many bytes live (IC: two steps at 32,768): lowering the
  // first alone leaves the peak where it is.
  std::vector<int> tied_steps;
};

MemoryPeak memory_peak(const FunctionMemoryPlan& plan);

// "  peak: ... bytes at step S (callee): tensor [begin, end) steps a-b, ...\n", and the
// tied steps with their callees.
std::string peak_text(const MemoryPeak& peak);
nlohmann::json peak_json(const MemoryPeak& peak);

}  // namespace mtir
