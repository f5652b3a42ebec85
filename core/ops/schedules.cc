#include "ops/schedules.h"

#include "support/diagnostic.h"

namespace mtir {

namespace {

// The one list of schedules: name, field and whether it works on the whole model (a
// schedule record cannot set it per layer). Its order is the order of every list the
// compiler prints (schedule_names(), the CLI's help, the canonical target string) and of
// docs/target-options.md, which is generated from it. A new schedule is a field of
// ScheduleOptions and a row here.
struct Schedule {
  const char* name;
  bool ScheduleOptions::*field;
  bool model_wide;
};

const Schedule kSchedules[] = {
    {"fold_zero_point", &ScheduleOptions::fold_zero_point, false},
    {"block", &ScheduleOptions::block, false},
    {"unroll", &ScheduleOptions::unroll, false},
    {"hoist", &ScheduleOptions::hoist, true},
    {"smlad", &ScheduleOptions::smlad, false},
    {"sxtb16", &ScheduleOptions::sxtb16, false},
    {"interleave", &ScheduleOptions::interleave, false},
    {"fold_output_zero_point", &ScheduleOptions::fold_output_zero_point, false},
    {"few_channels", &ScheduleOptions::few_channels, false},
    {"depthwise_tile", &ScheduleOptions::depthwise_tile, false},
    {"depthwise_border_tiles", &ScheduleOptions::depthwise_border_tiles, false},
    {"smlal_requant", &ScheduleOptions::smlal_requant, false},
    {"smmlar_requant", &ScheduleOptions::smmlar_requant, false},
    {"merge_kernels", &ScheduleOptions::merge_kernels, true},
    {"patch", &ScheduleOptions::patch, true},
    {"dense_chunks", &ScheduleOptions::dense_chunks, false},
    {"mve", &ScheduleOptions::mve, false},
    {"mve_depthwise", &ScheduleOptions::mve_depthwise, false},
    {"mve_short_requant", &ScheduleOptions::mve_short_requant, false},
    {"mve_pair_requant", &ScheduleOptions::mve_pair_requant, false},
    {"mve_signed_requant", &ScheduleOptions::mve_signed_requant, false},
    {"mve_direct", &ScheduleOptions::mve_direct, false},
    {"patch_overlap", &ScheduleOptions::patch_overlap, true},
    {"pixel_triples", &ScheduleOptions::pixel_triples, false},
    {"dsp_no_early_scheduling", &ScheduleOptions::dsp_no_early_scheduling, true},
    {"smmlar_add", &ScheduleOptions::smmlar_add, false},
    {"rolled_leftovers", &ScheduleOptions::rolled_leftovers, false},
    {"pixel_triples_stack", &ScheduleOptions::pixel_triples_stack, true},
    {"pixel_triples_code", &ScheduleOptions::pixel_triples_code, true},
    {"patch_residual", &ScheduleOptions::patch_residual, true},
    {"mve_depthwise_padded", &ScheduleOptions::mve_depthwise_padded, false},
    {"word_gather", &ScheduleOptions::word_gather, false},
    {"patch_edge_rows", &ScheduleOptions::patch_edge_rows, true},
    {"pair_loads", &ScheduleOptions::pair_loads, false},
    {"band_loops", &ScheduleOptions::band_loops, true},
    {"short_pairs", &ScheduleOptions::short_pairs, false},
    {"patch_carry", &ScheduleOptions::patch_carry, true},
    {"pair_records", &ScheduleOptions::pair_records, false},
    {"few_channel_pairs", &ScheduleOptions::few_channel_pairs, false},
};

const Schedule* find_schedule(const std::string& name) {
  for (const Schedule& s : kSchedules)
    if (name == s.name) return &s;
  return nullptr;
}

bool* field(ScheduleOptions& s, const std::string& name) {
  const Schedule* row = find_schedule(name);
  return row ? &(s.*(row->field)) : nullptr;
}

}  // namespace

const std::vector<std::string>& schedule_list() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const Schedule& s : kSchedules) out.push_back(s.name);
    return out;
  }();
  return names;
}

std::string schedule_names() {
  std::string s;
  for (const auto& n : schedule_list()) s += (s.empty() ? "" : ", ") + n;
  return s;
}

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
  const Schedule* row = find_schedule(name);
  return row && row->model_wide;
}

bool is_schedule(const std::string& name) { return find_schedule(name) != nullptr; }

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
