// The patch planner's choices in words and as JSON (patch_report.h).
#include "executor/patch_report.h"

#include <algorithm>

namespace mtir {
namespace {

// A stage of the lowest bound's plan and its choice in the plan built (null: whole).
struct StageChoice {
  const PatchStage* lowest = nullptr;
  const PatchStage* chosen = nullptr;
};

// The lowest bound's stages in node order, each with the built plan's stage of the same
// chain (the planner changes a stage's bands or runs it whole, never its chain).
std::vector<StageChoice> stage_choices(const PatchPlan& plan) {
  std::vector<StageChoice> choices;
  for (const PatchStage& lowest : plan.lowest_stages) {
    StageChoice c{&lowest, nullptr};
    for (const PatchStage& s : plan.stages)
      if (s.nodes == lowest.nodes) c.chosen = &s;
    choices.push_back(c);
  }
  std::sort(choices.begin(), choices.end(),
            [](const StageChoice& a, const StageChoice& b) { return a.lowest->nodes.front() < b.lowest->nodes.front(); });
  return choices;
}

std::string stage_name(const Graph& g, const PatchStage& s) {
  return g.nodes[s.nodes.front()].name + ".." + g.nodes[s.nodes.back()].name;
}

std::string bands_text(const PatchStage& s) { return std::to_string(s.bands.size()) + " bands"; }

}  // namespace

std::string describe_patch_stages(const Graph& g, const PatchPlan& plan) {
  std::string text;
  for (const StageChoice& c : stage_choices(plan)) {
    text += (text.empty() ? "" : "; ") + stage_name(g, *c.lowest);
    if (c.chosen)
      text += " in " + bands_text(*c.chosen) + (c.chosen->bottom_up ? " bottom up, " : ", ") +
              std::to_string(c.chosen->recomputed_macs) + " MACs recomputed";
    else
      text += " whole";
    const bool same = c.chosen && c.chosen->bands.size() == c.lowest->bands.size();
    if (!same)
      text += " (at the lowest bound: " + bands_text(*c.lowest) + ", " + std::to_string(c.lowest->recomputed_macs) +
              " MACs)";
  }
  return text;
}

nlohmann::json patch_plan_json(const Graph& g, const PatchPlan& plan) {
  nlohmann::json stages = nlohmann::json::array();
  for (const StageChoice& c : stage_choices(plan)) {
    nlohmann::json layers = nlohmann::json::array();
    for (size_t n : c.lowest->nodes) layers.push_back(g.nodes[n].name);
    stages.push_back({{"layers", layers},
                      {"bands", c.chosen ? c.chosen->bands.size() : 0},
                      {"recomputed_macs", c.chosen ? c.chosen->recomputed_macs : 0},
                      {"bottom_up", c.chosen && c.chosen->bottom_up},
                      {"at_lowest_bound", {{"bands", c.lowest->bands.size()}, {"recomputed_macs", c.lowest->recomputed_macs}}}});
  }
  return {{"whole_tensor_bound", plan.whole_tensor_bound},
          {"bound", plan.patched_bound},
          {"lowest_bound", plan.lowest_bound},
          {"budget", plan.budget > 0 ? nlohmann::json(plan.budget) : nlohmann::json(nullptr)},
          {"model_macs", plan.model_macs},
          {"recomputed_macs", plan.recomputed_macs},
          {"stages", stages}};
}

}  // namespace mtir
