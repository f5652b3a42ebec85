// What the patch planner chose and why (executor/patch_stages.h), for the memory report
// (`run`, attribute patch.stages of the AOT main) and `run --json` (report.patch_plan):
// each stage of the lowest bound the planner reached, with the band count and the MACs
// it recomputes there and in the plan built, where it took its cheapest choice that
// keeps the target (the lowest bound, or the workspace budget).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "executor/patch_stages.h"
#include "frontend/graph.h"

namespace mtir {

// "c1..c2 in 5 bands, 0 MACs recomputed (at the lowest bound: 8 bands, 0 MACs); c4..c4
// whole (at the lowest bound: 24 bands, 0 MACs)", in node order.
std::string describe_patch_stages(const Graph& g, const PatchPlan& plan);

// {"whole_tensor_bound", "bound", "lowest_bound", "budget" (null: none), "model_macs",
//  "recomputed_macs", "stages": [{"layers", "bands" (0: whole), "recomputed_macs",
//  "bottom_up", "at_lowest_bound": {"bands", "recomputed_macs"}}]}
nlohmann::json patch_plan_json(const Graph& g, const PatchPlan& plan);

}  // namespace mtir
