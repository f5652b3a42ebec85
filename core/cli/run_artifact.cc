// `microtir run model.tar|MLF_DIR --target T`: the artifact built as a firmware author
// would build it, run on the target (sim/artifact_runner.h), checked against the
// reference interpreter on the artifact's own graph (src/), with the target report.
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <sstream>
#include <vector>
#include <nlohmann/json.hpp>

#include "artifact/mlf.h"
#include "cli/commands.h"
#include "cli/io.h"
#include "cli/onnx_model.h"
#include "interp/interpreter.h"
#include "sim/artifact_files.h"
#include "sim/artifact_runner.h"
#include "support/timing.h"
#include "support/compare.h"
#include "support/npy.h"

namespace mtir::cli {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Cross compilers may contract or reorder differently from the interpreter's order;
// 1e-5 relative is well above float32 rounding of these kernels and far below a bug.
constexpr double kTargetTolerance = 1e-5;

// The tolerance as a stream prints a double ("1e-05").
std::string format_tolerance() {
  std::ostringstream os;
  os << kTargetTolerance;
  return os.str();
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

using sim::with_commas;

json stack_bound_json(const sim::StackBound& b) {
  json j = {{"bounded", b.bounded}, {"path", b.path}, {"library_calls", b.library_calls}, {"dynamic_bounded", b.dynamic_bounded}};
  j["bytes"] = b.bounded ? json(b.bytes) : json(nullptr);
  j["unbounded"] = b.bounded ? json(nullptr) : json(b.reason);
  return j;
}

// The static bound of what main calls, and of every function of the generated code.
void add_stack_bounds(json& j, const sim::TargetReport& r) {
  const sim::ArtifactStackBounds& s = r.stack_bounds;
  if (s.entry.empty()) {
    j["stack_bound"] = nullptr;
    j["stack_bound_absent"] = r.stack_bound_absent;
    return;
  }
  j["stack_bound"] = stack_bound_json(s.run);
  j["stack_bound"]["function"] = s.entry;
  j["stack_bound"]["main_frame_bytes"] = s.main_frame_bytes;
  json functions = json::object();
  for (const auto& [name, b] : s.functions) functions[name] = stack_bound_json(b);
  j["function_stack_bounds"] = functions;
}

json report_json(const sim::TargetReport& r) {
  json j = {{"target", r.target},
            {"board", r.board},
            {"compiler", r.compiler},
            {"flash_bytes", r.flash_bytes},
            {"ram_bytes", r.ram_bytes},
            {"text_bytes", r.size.text},
            {"rodata_bytes", r.size.rodata},
            {"data_bytes", r.size.data},
            {"bss_bytes", r.size.bss},
            {"workspace_bytes", r.workspace_bytes},
            {"io_buffer_bytes", r.io_bytes},
            {"state_bytes", r.state_bytes},
            {"test_input_bytes", r.test_input_bytes},
            {"counter", r.counter_method}};
  j["stack_bytes"] = r.stack_bytes >= 0 ? json(r.stack_bytes) : json(nullptr);
  j["instructions"] = r.instructions.empty() ? json(nullptr) : json(r.instructions.front());
  add_stack_bounds(j, r);
  return j;
}

// The kernel of each graph node, inverted: the nodes a kernel computes, in graph order.
std::map<std::string, std::vector<std::string>> nodes_of_kernels(const AotModule& aot, const Graph& g) {
  std::map<std::string, std::vector<std::string>> nodes;
  for (const auto& n : g.nodes) {
    auto it = aot.kernel_of.find(n.name);
    if (it != aot.kernel_of.end()) nodes[symbol_of(it->second, aot.module.lookup(it->second))].push_back(n.name);
  }
  // The other band kernels of a node run in bands (the first is kernel_of's).
  for (const auto& [kernel, node] : aot.band_kernel_of) {
    std::vector<std::string>& of = nodes[symbol_of(kernel, aot.module.lookup(kernel))];
    if (of.empty()) of.push_back(node);
  }
  return nodes;
}

json layers_json(const sim::TargetReport& r, const std::map<std::string, std::vector<std::string>>& nodes) {
  json layers = json::array();
  for (size_t i = 0; i < r.layers.size(); ++i) {
    auto it = nodes.find(r.layers[i].kernel);
    layers.push_back({{"index", i},
                      {"kernel", r.layers[i].kernel},
                      {"nodes", it == nodes.end() ? std::vector<std::string>{} : it->second},
                      {"instructions", r.layers[i].instructions},
                      {"calls", r.layers[i].calls}});
  }
  return layers;
}

std::string layers_text(const sim::TargetReport& r, const std::map<std::string, std::vector<std::string>>& nodes) {
  std::ostringstream os;
  int64_t sum = 0;
  for (const auto& l : r.layers) sum += l.instructions;
  os << "  instructions per operator call (an empty hook pair, " << r.layer_probe_instructions
     << " instructions, subtracted from each):\n";
  for (size_t i = 0; i < r.layers.size(); ++i) {
    auto it = nodes.find(r.layers[i].kernel);
    std::string computes;
    if (it != nodes.end())
      for (const auto& n : it->second) computes += (computes.empty() ? "" : ", ") + n;
    char line[64];
    std::snprintf(line, sizeof line, "  %4zu %14s  ", i, with_commas(r.layers[i].instructions).c_str());
    os << line << r.layers[i].kernel << (computes.empty() ? "" : " (" + computes + ")")
       << (r.layers[i].calls > 1 ? ", " + std::to_string(r.layers[i].calls) + " calls in a loop" : "") << "\n";
  }
  os << "  sum of the operators: " << with_commas(sum) << " of " << with_commas(r.instructions.empty() ? 0 : r.instructions.front())
     << " (the rest: the AOT main's own calls and checks, and the hooks)\n";
  return os.str();
}

// The static bound beside the measurement, which starts inside main's frame.
std::string stack_bound_text(const sim::TargetReport& r) {
  const sim::ArtifactStackBounds& s = r.stack_bounds;
  if (s.entry.empty()) return "  stack bound: not computed (" + r.stack_bound_absent + ")\n";
  if (!s.run.bounded) return "  stack bound of " + s.entry + ": unbounded: " + s.run.reason + "\n";
  std::string line = "  stack bound: " + s.entry + " needs at most " + with_commas(s.run.bytes) + " bytes";
  if (s.main_frame_bytes >= 0 && r.stack_bytes >= 0)
    line += "; with main's frame (" + with_commas(s.main_frame_bytes) + "), where the high-water is counted from, " +
            with_commas(s.run.bytes + s.main_frame_bytes);
  std::string path;
  for (const auto& f : s.run.path) path += (path.empty() ? "" : " -> ") + f;
  line += "\n    deepest path: " + path;
  if (!s.run.library_calls.empty()) {
    std::string lib;
    for (const auto& f : s.run.library_calls) lib += (lib.empty() ? "" : ", ") + f;
    line += "\n    library calls, their frames not counted: " + lib;
  }
  return line + "\n";
}

std::string report_text(const sim::TargetReport& r) {
  std::ostringstream os;
  os << "target " << r.target << " (" << r.board << ", " << r.compiler << " -O2):\n";
  os << "  flash: " << with_commas(r.flash_bytes) << " bytes (text " << with_commas(r.size.text) << ", rodata "
     << with_commas(r.size.rodata) << ", data " << with_commas(r.size.data) << "; the test input is "
     << with_commas(r.test_input_bytes) << " of them)\n";
  os << "  RAM:   " << with_commas(r.ram_bytes) << " bytes static (workspace " << with_commas(r.workspace_bytes)
     << ", input/output buffers " << with_commas(r.io_bytes)
     << (r.state_bytes > 0 ? ", state " + with_commas(r.state_bytes) : std::string()) << ")";
  if (r.stack_bytes >= 0) os << " + stack high-water " << with_commas(r.stack_bytes);
  os << "\n" << stack_bound_text(r);
  os << "  instructions per inference: "
     << (r.instructions.empty() ? "n/a" : with_commas(r.instructions.front())) << " (" << r.counter_method << ")\n";
  return os.str();
}

}  // namespace

bool is_artifact_path(const std::string& path) {
  if (path.size() > 4 && path.compare(path.size() - 4, 4, ".tar") == 0) return true;
  std::error_code ec;
  return fs::is_directory(path, ec);
}

namespace {

// The artifact's folder: `c.file` itself, or the .tar unpacked under `work`.
std::string artifact_dir(const std::string& file, const TempDir& work) {
  if (fs::is_directory(file)) return file;
  if (!fs::exists(file)) user_error({}, "cannot read '" + file + "': no such file");
  std::string dir = (fs::path(work.path()) / "artifact").string();
  ensure_directory(dir);
  return sim::unpack_artifact(read_file(file), file, dir);
}

// The reference: the artifact's own graph and weights, prepared with the schedules of the
// target it was compiled for, so its main takes exactly the artifact's weights.
LoadedModel reference_model(const sim::ArtifactInfo& info, const std::string& file) {
  if (info.graph_file.empty()) user_error({}, file + " has no graph in src/: the reference run needs it (recompile with `microtir compile`)");
  ScheduleOptions schedules = info.compiled_for.schedules;
  // Per-layer choices: the artifact's own copy of the record, checked against its own graph.
  if (!info.schedule_record.empty()) schedules = apply_record_file(info.graph_file, info.schedule_record, schedules).schedules;
  if (is_onnx_file(info.graph_file) || is_tflite_file(info.graph_file))
    return prepare_model(load_foreign_model(info.graph_file), {}, schedules);
  return load_model(read_file(info.graph_file), info.graph_file, sim::artifact_graph_reader(info, file), {}, schedules);
}

// main's arguments bound to the --input files (outputs zeroed, weights from the graph,
// state at its initial value: one Invoke() from the start), with what the firmware
// needs to know of each (not the state, which the artifact keeps itself).
struct BoundArgs {
  std::vector<NDArray> arrays;
  std::vector<InterpArg> args;
  std::vector<sim::ArtifactTensor> in_specs, out_specs;
  std::vector<sim::ArtifactArg> main_args;
  std::vector<NDArray> sample;
  std::vector<size_t> outputs;  // indices into arrays
};

// `zero_inputs`: inputs not given are zeros (a measurement run) instead of an error.
BoundArgs bind_args(const LoadedModel& model, std::map<std::string, ArtifactInput> input_files, const std::string& model_name,
                    bool zero_inputs = false) {
  const AotModule& aot = model.aot;
  BoundArgs b;
  b.arrays.resize(aot.params.size());
  b.args.resize(aot.params.size());
  for (size_t i = 0; i < aot.params.size(); ++i) {
    const auto& p = aot.params[i];
    sim::ArtifactArg arg{p.name, sim::ArtifactArg::Role::kWeight, p.type.dtype, p.type.shape, p.c_name};
    if (p.role == AotModule::Role::kState) {
      b.arrays[i] = model.graph.state.at(p.name);
      b.args[i] = &b.arrays[i];
      continue;
    }
    if (p.role == AotModule::Role::kConstant) {
      b.arrays[i] = model.graph.constants.at(p.name);
    } else if (p.role == AotModule::Role::kInput) {
      auto it = input_files.find(p.name);
      if (it == input_files.end()) it = input_files.find(p.c_name);  // the model's name, or its C identifier
      if (it == input_files.end() && zero_inputs) {
        b.arrays[i] = NDArray::zeros(p.type.dtype, p.type.shape);
        b.in_specs.push_back({p.name, p.type.dtype, p.type.shape, p.c_name});
        b.sample.push_back(b.arrays[i]);
        arg.role = sim::ArtifactArg::Role::kInput;
        b.main_args.push_back(arg);
        b.args[i] = &b.arrays[i];
        continue;
      }
      if (it == input_files.end())
        user_error({}, "model input '" + p.name + "' (" + p.type.str() + ") needs a value (--input " + p.name + "=FILE.npy)");
      b.arrays[i] = std::move(it->second.array);
      if (b.arrays[i].dtype != p.type.dtype || b.arrays[i].shape != p.type.shape) {
        user_error({}, "input '" + p.name + "' must be " + p.type.dtype.str() + " " + shape_text(p.type.shape) + ", but " +
                           it->second.source + " holds " + b.arrays[i].dtype.str() + " " + shape_text(b.arrays[i].shape));
      }
      input_files.erase(it);
      b.in_specs.push_back({p.name, p.type.dtype, p.type.shape, p.c_name});
      b.sample.push_back(b.arrays[i]);
      arg.role = sim::ArtifactArg::Role::kInput;
    } else {
      b.arrays[i] = NDArray::zeros(p.type.dtype, p.type.shape);
      b.out_specs.push_back({p.name, p.type.dtype, p.type.shape, p.c_name});
      b.outputs.push_back(i);
      arg.role = sim::ArtifactArg::Role::kOutput;
    }
    b.main_args.push_back(arg);
    b.args[i] = &b.arrays[i];
  }
  if (!input_files.empty()) user_error({}, "model '" + model_name + "' has no input '" + input_files.begin()->first + "'");
  return b;
}

// The artifact's outputs against the interpreter's, as JSON and as text lines.
struct Comparison {
  bool all_match = true;
  json compare = json::array(), outputs = json::array();
  std::string text;
};

Comparison compare_outputs(const BoundArgs& b, const std::vector<NDArray>& got_all) {
  Comparison r;
  for (size_t k = 0; k < b.outputs.size(); ++k) {
    const NDArray& want = b.arrays[b.outputs[k]];
    const NDArray& got = got_all[k];
    Difference d = compare_arrays(got, want, kTargetTolerance);
    r.all_match = r.all_match && d.ok;
    const std::string& name = b.out_specs[k].name;
    r.compare.push_back({{"name", name}, {"max_abs_diff", d.max_abs}, {"max_rel_diff", d.max_rel}, {"ok", d.ok}});
    char line[128];  // the figures; the name apart, since a model's name can be long
    std::snprintf(line, sizeof line, ": max abs diff %.3g, max rel diff %.3g  %s\n", d.max_abs, d.max_rel,
                  d.ok ? "ok" : "MISMATCH");
    r.text += "  " + name + line;
    json values = json::array();
    for (int64_t e = 0; e < got.num_elements(); ++e) {
      if (got.dtype.is_float()) values.push_back(got.get_float(e));
      else values.push_back(got.get_int(e));
    }
    r.outputs.push_back({{"name", name}, {"identifier", b.out_specs[k].c_name}, {"dtype", got.dtype.str()},
                         {"shape", got.shape}, {"values", values}});
  }
  return r;
}

// The static bound lands in the artifact's metadata.json beside its other memory
// figures, per target (compile alone runs no C compiler, so only a run knows it).
void record_stack_bounds(const std::string& dir, const sim::TargetReport& r) {
  if (r.stack_bounds.entry.empty()) return;
  const std::string path = (fs::path(dir) / "metadata.json").string();
  json meta = json::parse(read_file(path));
  json entry = stack_bound_json(r.stack_bounds.run);
  entry["function"] = r.stack_bounds.entry;
  entry["compiler"] = r.compiler;
  json functions = json::object();
  for (const auto& [name, b] : r.stack_bounds.functions) functions[name] = b.bounded ? json(b.bytes) : json(nullptr);
  entry["functions"] = functions;
  meta["memory"]["stack_bounds"][r.target] = entry;
  OutputSet out;
  out.add(path, meta.dump(2) + "\n");
  out.commit();
}

// Kernels are chosen at compile time: an artifact built for no CPU has the generic C
// ones, which a DSP core runs several times slower than its SMLAD ones (KWS on
// Cortex-M4: 9.9 M instructions against 4.2 M). Said, not refused: it still runs.
void warn_generic_kernels(const sim::ArtifactInfo& info, const sim::CrossTarget& target) {
  if (info.compiled_for.kind == "wasm" || !info.compiled_for.mcpu.empty() || !cpu_has_dsp(target.llvm_cpu)) return;
  std::cerr << "microtir: warning: the artifact was compiled without -mcpu, so " << target.name
            << " runs its generic C kernels, not the DSP ones (SMLAD) its core has; compile with --target \"c -mcpu="
            << target.llvm_cpu << "\" for them\n";
}

}  // namespace

ArtifactRun run_artifact_inputs(const std::string& file, const std::string& target_name,
                                std::map<std::string, ArtifactInput> inputs, const ArtifactRunSettings& settings,
                                const LoadedModel* reference) {
  const sim::CrossTarget& target = sim::find_cross_target(target_name);
  TempDir work(settings.keep_build_dir);
  sim::ArtifactInfo info = sim::read_artifact_info(artifact_dir(file, work));
  LoadedModel read_back;
  if (!reference) read_back = reference_model(info, file);
  const LoadedModel& model = reference ? *reference : read_back;
  BoundArgs bound = bind_args(model, std::move(inputs), info.model_name);
  interpret(model.aot.module, model.aot.main, bound.args);

  sim::ArtifactRunOptions options;
  options.target = target.name;
  options.main_args = bound.main_args;
  options.work_dir = (fs::path(work.path()) / ("build-" + target.name)).string();
  options.progress = settings.progress;
  options.profile_layers = settings.profile_layers;
  sim::ArtifactRunResult result = sim::run_artifact(info, bound.in_specs, {bound.sample}, bound.out_specs, options);
  warn_generic_kernels(info, target);  // after the run: a failed one says only why it failed
  record_stack_bounds(info.dir, result.report);
  Comparison cmp = compare_outputs(bound, result.outputs[0]);

  ArtifactRun run;
  run.model_name = info.model_name;
  run.target = target.name;
  for (size_t k = 0; k < bound.outputs.size(); ++k)
    run.outputs.push_back({bound.out_specs[k].name, bound.out_specs[k].c_name, result.outputs[0][k]});
  run.all_match = cmp.all_match;
  run.compare = cmp.compare;
  run.outputs_json = cmp.outputs;
  run.compare_text = target.name + " vs interpreter (tolerance " + format_tolerance() + " relative):\n" + cmp.text;
  run.report = report_json(result.report);
  run.target_report = result.report;
  run.report_text = report_text(result.report);
  if (settings.profile_layers) {
    const auto nodes = nodes_of_kernels(model.aot, model.graph);
    run.report["layers"] = layers_json(result.report, nodes);
    run.report["layer_probe_instructions"] = result.report.layer_probe_instructions;
    run.report_text += layers_text(result.report, nodes);
  }
  run.devices = result.devices;
  for (const auto& d : result.devices) run.report_text += "device " + d + "\n";
  // Where the model's intermediate tensors live, as `run model.json` prints it.
  json peak;
  run.memory_plan = planned_memory_report(model.aot.module, model.aot.main, info.compiled_for.reuse_io_buffers, &peak);
  run.report["memory_peak"] = peak;
  // The band planner's choices: each stage's bands and recomputed MACs, the bounds.
  if (!model.aot.patch_plan.is_null()) run.report["patch_plan"] = model.aot.patch_plan;
  return run;
}

int run_artifact(const RunCommand& c, const LoadedModel* reference) {
  if (c.target.empty())
    user_error({}, "running a compiled artifact needs a target: --target host, cortex-m3, cortex-m4, cortex-m7, cortex-m33, cortex-m55, riscv32 or wasm32");
  if (!c.func.empty() || !c.scalars.empty()) user_error({}, "--func and --scalar apply to TIR files, not to a compiled model");
  const sim::Budget budget = budget_options(c.max_flash, c.max_ram);  // a bad value is refused before any build
  std::map<std::string, ArtifactInput> inputs;
  for (const auto& s : c.inputs) {
    size_t eq = s.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == s.size()) user_error({}, "bad --input '" + s + "': expected NAME=FILE.npy");
    const std::string path = s.substr(eq + 1);
    inputs[s.substr(0, eq)] = {read_npy(read_file(path), path), path};
  }
  ArtifactRunSettings settings;
  settings.profile_layers = c.profile_layers;
  settings.keep_build_dir = c.keep_build_dir;
  settings.progress = [](const std::string& line) { std::cerr << line << "\n"; };
  ArtifactRun run = run_artifact_inputs(c.file, c.target, std::move(inputs), settings, reference);

  if (!c.output_dir.empty()) {
    ensure_directory(c.output_dir);
    OutputSet files;
    for (const auto& o : run.outputs) files.add(c.output_dir + "/" + o.identifier + ".npy", write_npy(o.value));
    files.commit();
    for (size_t k = 0; k < run.outputs.size(); ++k)
      run.outputs_json[k]["file"] = c.output_dir + "/" + run.outputs[k].identifier + ".npy";
  }
  if (c.json) {
    json out = {{"ok", run.all_match}, {"model", run.model_name}, {"outputs", run.outputs_json}, {"compare", run.compare},
                {"tolerance", kTargetTolerance}, {"report", run.report}, {"devices", run.devices}};
    if (const TimingTable* t = active_timing_table()) out["timing"] = t->to_json();
    const int over = check_budget_gate(run.target_report, budget, true, &out);
    if (over) out["ok"] = false;
    std::cout << out.dump(2) << "\n";
    return run.all_match && !over ? 0 : 1;
  }
  for (const auto& o : run.outputs) std::cout << format_output(o.name, o.value, c.print_limit);
  std::cout << run.compare_text << run.report_text << run.memory_plan;
  const int over = check_budget_gate(run.target_report, budget, false, nullptr);
  if (!run.all_match) {
    std::cerr << "microtir: the artifact on " << run.target << " disagrees with the interpreter\n";
    return 1;
  }
  return over;
}

sim::Budget budget_options(const std::string& max_flash, const std::string& max_ram) {
  sim::Budget b;
  if (!max_flash.empty()) b.max_flash = sim::parse_byte_size(max_flash, "--max-flash");
  if (!max_ram.empty()) b.max_ram = sim::parse_byte_size(max_ram, "--max-ram");
  return b;
}

int check_budget_gate(const sim::TargetReport& report, const sim::Budget& budget, bool as_json, json* out) {
  if (!budget.any()) return 0;
  const sim::BudgetResult result = sim::check_budget(report, budget);
  if (as_json) (*out)["budget"] = sim::budget_json(result);
  else std::cout << sim::budget_text(result);
  if (result.ok()) return 0;
  std::string over;
  for (const auto& check : result.checks)
    if (check.exceeds()) over += (over.empty() ? "" : ", ") + check.resource + " by " + with_commas(check.used - check.limit) + " bytes";
  std::cerr << "microtir: error: over budget on " << report.target << ": " << over << "\n";
  return 1;
}

sim::TargetReport measure_artifact(const std::string& dir, const std::string& target_name, const std::string& keep_build_dir) {
  const sim::CrossTarget& target = sim::find_cross_target(target_name);
  TempDir work(keep_build_dir);
  sim::ArtifactInfo info = sim::read_artifact_info(artifact_dir(dir, work));
  LoadedModel model = reference_model(info, dir);
  BoundArgs bound = bind_args(model, {}, info.model_name, /*zero_inputs=*/true);
  sim::ArtifactRunOptions options;
  options.target = target.name;
  options.main_args = bound.main_args;
  options.work_dir = (fs::path(work.path()) / ("build-" + target.name)).string();
  options.progress = [](const std::string& line) { std::cerr << line << "\n"; };
  sim::ArtifactRunResult result = sim::run_artifact(info, bound.in_specs, {bound.sample}, bound.out_specs, options);
  warn_generic_kernels(info, target);
  record_stack_bounds(info.dir, result.report);
  return result.report;
}

std::string target_report_text(const sim::TargetReport& r) { return report_text(r); }
json target_report_json(const sim::TargetReport& r) { return report_json(r); }

}  // namespace mtir::cli
