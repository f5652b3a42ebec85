// Schedule records (docs/schedule-records.md): per-layer choices of the int8 kernels'
// schedules, in a versioned JSON file that `microtir tune` writes and `compile` / `run`
// --schedules apply on top of the target's global ScheduleOptions. A record names the
// model it was made for (a fingerprint of the model's files) and, for each layer, the
// frontend's operator index, the graph node (whose kernel is tvmgen_<model>_<node>) and
// its op, so a record for another model is refused by name.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "frontend/graph.h"

namespace mtir {

constexpr int kScheduleRecordVersion = 1;
constexpr const char* kScheduleRecordFormat = "microtir-schedule-record";

struct LayerSchedules {
  int64_t op_index = 0;               // the frontend's operator index (TFLite: its operator order)
  std::string node, op;               // the graph node the operator's output is, and its op
  std::map<std::string, bool> schedules;
};

struct ScheduleRecord {
  std::string model, fingerprint;  // the model's file name and model_fingerprint
  std::string target;              // what it was tuned for (informational)
  std::vector<LayerSchedules> layers;
  std::string hash;                // digest of the record's text
};

// A model as records name it: its fingerprint (the digest of its files) and, per
// operator index, the node computing that operator's output.
struct ModelOperators {
  std::string name, fingerprint;
  std::vector<std::string> nodes;
};

// Parses a record; every problem is a user error at `filename`:line:col (a JSON syntax
// error at its position, a bad field at its key's first occurrence after the layer).
ScheduleRecord parse_schedule_record(const std::string& text, const std::string& filename);
// The record's JSON (what parse_schedule_record reads back).
nlohmann::json schedule_record_json(const ScheduleRecord& r);

// The schedules whose switch changes the kernel of `node` (unprepared, of graph `g`),
// among those `target` has on: what a tuner may switch off for that layer. The whole-
// model schedules (is_model_schedule) are not listed.
std::vector<std::string> applicable_schedules(const Graph& g, const GraphNode& node, const ScheduleOptions& target);

// `target` with the record's per-layer choices (ScheduleOptions::per_node), after checking
// the record against the model (fingerprint, each layer's node and op, each schedule
// applicable to its layer); user errors name the record `filename` and the layer.
ScheduleOptions apply_schedule_record(const ScheduleRecord& r, const std::string& filename, const Graph& g,
                                      const ModelOperators& model, const ScheduleOptions& target);

}  // namespace mtir
