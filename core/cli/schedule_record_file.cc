// Schedule records on files (frontend/schedule_records.h): the model's operators and
// fingerprint read from its file, a record file checked against them, and the
// search space `microtir tune --space` prints for the tuner (tools/microtir_tune.py).
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "artifact/mlf.h"
#include "cli/commands.h"
#include "cli/io.h"
#include "cli/onnx_model.h"
#include "driver/target.h"
#include "frontend/tflite/tflite.h"
#include "support/digest.h"
#include "support/source_dir.h"

namespace mtir::cli {
namespace fs = std::filesystem;
using nlohmann::json;

ModelOperators model_operators(const std::string& file, Graph* graph) {
  if (!is_graph_file(file))
    user_error({}, "'" + file + "' is not a model: schedule records are for .tflite, .onnx and JSON graph models");
  ModelOperators m;
  m.name = fs::path(file).filename().string();
  Digest d;
  const std::string bytes = read_file(file);
  d.add(bytes);
  Graph g;
  if (is_tflite_file(file)) {
    TfliteImport imported = import_tflite(bytes, file);
    g = std::move(imported.graph);
    m.nodes = imported.layers;
  } else if (is_onnx_file(file)) {
    g = load_onnx_file(file);
  } else {
    // A JSON graph's weight files are part of the model.
    const std::string dir = fs::path(file).parent_path().string();
    g = load_graph_json(bytes, file, [&](const std::string& relative) {
      std::string text = read_file(dir.empty() ? relative : dir + "/" + relative);
      d.add(relative);
      d.add(text);
      return text;
    });
  }
  if (m.nodes.empty())
    for (const auto& n : g.nodes) m.nodes.push_back(n.name);
  m.fingerprint = d.hex();
  if (graph) *graph = fold_batch_norm(g);
  return m;
}

AppliedRecord apply_record_file(const std::string& model_file, const std::string& record_path,
                                const ScheduleOptions& target) {
  AppliedRecord a;
  a.path = record_path;
  a.text = read_file(record_path);
  a.record = parse_schedule_record(a.text, record_path);
  Graph g;
  ModelOperators ops = model_operators(model_file, &g);
  a.schedules = apply_schedule_record(a.record, record_path, g, ops, target);
  return a;
}

json schedule_space_json(const std::string& model_file, const Target& target, const std::string& target_name) {
  Graph g;
  ModelOperators ops = model_operators(model_file, &g);
  json layers = json::array();
  for (size_t i = 0; i < ops.nodes.size(); ++i) {
    const GraphNode* node = g.find_node(ops.nodes[i]);
    if (!node || !node->device.empty()) continue;
    std::vector<std::string> knobs = applicable_schedules(g, *node, target.schedules);
    if (knobs.empty()) continue;
    layers.push_back({{"operator", i}, {"node", node->name}, {"op", node->op}, {"schedules", knobs}});
  }
  json inputs = json::array();
  for (const auto& [name, type] : g.inputs)
    inputs.push_back({{"name", name}, {"dtype", type.dtype.str()}, {"shape", type.shape}});
  return {{"model", {{"name", ops.name}, {"fingerprint", ops.fingerprint}}},
          {"target", target_name},
          // What `compile` and `run` build (linked weights), so the tuner measures the firmware deployed.
          {"compile_target", artifact_target(target).str()},
          {"inputs", inputs},
          {"layers", layers}};
}

}  // namespace mtir::cli

namespace mtir::cli {
namespace {

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

// The tuner's arguments: the command's options as given.
std::vector<std::string> tuner_args(const TuneCommand& c) {
  std::vector<std::string> a = {c.model, "--target", c.target, "-o", c.output};
  auto add = [&](const char* flag, int64_t v) {
    if (v > 0) a.insert(a.end(), {flag, std::to_string(v)});
  };
  if (!c.max_flash.empty()) a.insert(a.end(), {"--max-flash", c.max_flash});
  if (!c.max_ram.empty()) a.insert(a.end(), {"--max-ram", c.max_ram});
  add("--trials", c.trials);
  add("--workers", c.workers);
  if (!c.scheduler.empty()) a.insert(a.end(), {"--scheduler", c.scheduler});
  if (!c.cache.empty()) a.insert(a.end(), {"--cache", c.cache});
  for (const auto& i : c.inputs) a.insert(a.end(), {"--input", i});
  return a;
}

}  // namespace

int run_tune(const TuneCommand& c, const std::string& self) {
  if (c.space) {
    std::cout << schedule_space_json(c.model, parse_target(compile_target_for_run(c.target)), c.target).dump(1) << "\n";
    return 0;
  }
  if (c.output.empty()) user_error({}, "tune needs -o records.json (the schedule record to write)");
  budget_options(c.max_flash, c.max_ram);  // a bad size is refused here, before any cluster starts
  // The tuner is Python (dask.distributed); it calls this binary for every measurement.
  const std::string python = env_or("MICROTIR_PYTHON", fs::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3");
  const std::string tuner = env_or("MICROTIR_TUNER", (fs::path(source_dir()) / "tools" / "microtir_tune.py").string());
  if (!fs::exists(tuner)) user_error({}, "the tuner '" + tuner + "' is missing (set MICROTIR_TUNER to tools/microtir_tune.py)");
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  std::vector<std::string> argv = {python, tuner, "--microtir", ec ? self : exe.string()};
  for (auto& a : tuner_args(c)) argv.push_back(a);
  std::vector<char*> raw;
  for (auto& a : argv) raw.push_back(a.data());
  raw.push_back(nullptr);
  std::cout.flush();
  execvp(raw[0], raw.data());
  user_error({}, "cannot run the tuner with '" + python + "' (set MICROTIR_PYTHON to a Python 3 with dask.distributed)");
}

}  // namespace mtir::cli
