// The memory plan of a function after PlanMemory, as data for tools (the playground's
// chart, JSON reports): each planned tensor's pool, byte offset, size and the steps of
// the function body during which it is live.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/function.h"

namespace mtir {

struct PlannedTensor {
  std::string name;
  std::string pool;  // the pool buffer's name, e.g. "workspace_float32"
  int64_t offset = 0;
  int64_t size = 0;
  int first_step = 0;  // inclusive; -1 when the body never touches the tensor
  int last_step = 0;
};

struct FunctionMemoryPlan {
  bool planned = false;  // false: PlanMemory placed nothing in this function
  std::vector<PlannedTensor> tensors;
  std::vector<std::pair<std::string, int64_t>> pools;  // name, bytes
  int64_t pool_bytes = 0;    // all pools together
  int64_t lower_bound = 0;   // the most bytes live at once, summed over pools
  int64_t shared_lower_bound = 0;  // the same with the accepted in-place sharings
  int64_t alignment = 0;
  std::string planner;       // the heuristic(s) that won
  int steps = 0;             // statements of the body after the declarations
  // Per step, the function it calls (call_tir, call_extern, a packed call), or "".
  std::vector<std::string> step_callees;
};

// Reads the plan back from `planned`, a function that went through PlanMemory.
FunctionMemoryPlan memory_plan_of(const PrimFunc& planned);

}  // namespace mtir
