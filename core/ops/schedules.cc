#include "ops/schedules.h"

#include "support/diagnostic.h"

namespace mtir {

const std::vector<std::string>& schedule_list() {
  static const std::vector<std::string> names = {"fold_zero_point", "block", "unroll", "hoist", "smlad", "sxtb16", "interleave",
                                                 "fold_output_zero_point", "few_channels", "depthwise_tile", "depthwise_border_tiles", "smlal_requant", "smmlar_requant", "merge_kernels", "patch",
                                                 "dense_chunks", "mve", "patch_overlap"};
  return names;
}

std::string schedule_names() {
  std::string s;
  for (const auto& n : schedule_list()) s += (s.empty() ? "" : ", ") + n;
  return s;
}

namespace {
bool* field(ScheduleOptions& s, const std::string& name) {
  if (name == "fold_zero_point") return &s.fold_zero_point;
  if (name == "block") return &s.block;
  if (name == "unroll") return &s.unroll;
  if (name == "hoist") return &s.hoist;
  if (name == "smlad") return &s.smlad;
  if (name == "sxtb16") return &s.sxtb16;
  if (name == "interleave") return &s.interleave;
  if (name == "fold_output_zero_point") return &s.fold_output_zero_point;
  if (name == "few_channels") return &s.few_channels;
  if (name == "depthwise_tile") return &s.depthwise_tile;
  if (name == "depthwise_border_tiles") return &s.depthwise_border_tiles;
  if (name == "smlal_requant") return &s.smlal_requant;
  if (name == "smmlar_requant") return &s.smmlar_requant;
  if (name == "merge_kernels") return &s.merge_kernels;
  if (name == "patch") return &s.patch;
  if (name == "dense_chunks") return &s.dense_chunks;
  if (name == "mve") return &s.mve;
  if (name == "patch_overlap") return &s.patch_overlap;
  return nullptr;
}
}  // namespace

bool ScheduleOptions::get(const std::string& name) const {
  return *field(const_cast<ScheduleOptions&>(*this), name);
}

void ScheduleOptions::set(const std::string& name, bool on) { *field(*this, name) = on; }

std::string ScheduleOptions::disabled() const {
  std::string s;
  for (const auto& n : schedule_list())
    if (!get(n)) s += (s.empty() ? "" : ",") + n;
  return s;
}

ScheduleOptions ScheduleOptions::for_node(const std::string& node) const {
  ScheduleOptions s = *this;
  s.per_node.clear();
  auto it = per_node.find(node);
  if (it != per_node.end())
    for (const auto& [name, on] : it->second) s.set(name, on);
  return s;
}

bool is_model_schedule(const std::string& name) {
  return name == "hoist" || name == "merge_kernels" || name == "patch" || name == "patch_overlap";
}

bool is_schedule(const std::string& name) {
  ScheduleOptions probe;
  return field(probe, name) != nullptr;
}

void disable_schedules(ScheduleOptions& s, const std::string& list, const std::string& where) {
  size_t start = 0;
  while (start <= list.size() && !list.empty()) {
    size_t comma = list.find(',', start);
    std::string name = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    bool* f = field(s, name);
    if (!f) user_error(Span{}, where + ": unknown schedule '" + name + "' (known: " + schedule_names() + ")");
    *f = false;
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
}

}  // namespace mtir
