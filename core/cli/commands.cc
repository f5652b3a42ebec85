#include "cli/commands.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <nlohmann/json.hpp>
#include <sstream>

#include "analysis/well_formed.h"
#include "artifact/mlf.h"
#include "artifact/tar.h"
#include "cli/io.h"
#include "cli/onnx_model.h"
#include "driver/build.h"
#include "artifact/c_interface.h"
#include "artifact/memory_peak.h"
#include "artifact/wasm_model.h"
#include "executor/aot.h"
#include "transform/plan_memory.h"
#include "frontend/graph.h"
#include "driver/pipeline.h"
#include "interp/interpreter.h"
#include "ir/vector_buffers.h"
#include "script/parser.h"
#include "script/printer.h"
#include "sim/cross_targets.h"
#include "sim/host_sim.h"
#ifdef MICROTIR_HAVE_BINARYEN
#include "codegen/wasm/native/binaryen_native.h"
#endif
#ifdef MICROTIR_HAVE_LLVM_NATIVE
#include "codegen/llvm/native/llvm_native.h"
#endif
#include "support/compare.h"
#include "support/npy.h"
#include "support/timing.h"

namespace mtir::cli {
namespace {

using nlohmann::json;

// `out` with the timer's table ("timing") when --time-passes (or compile -v) asked for it.
json with_timing(json out) {
  if (const TimingTable* t = active_timing_table()) out["timing"] = t->to_json();
  return out;
}

IRModule load_module(const std::string& file, bool verify) {
  std::string text = read_file(file);
  ParseResult r = parse_module(text, file == "-" ? "<stdin>" : file);
  if (!r.ok()) throw DiagnosticError(r.diagnostics);
  if (verify) {
    auto diags = check_well_formed(*r.module);
    if (!diags.empty()) throw DiagnosticError(diags);
  }
  return *r.module;
}


// Splits "NAME=VALUE"; a user error naming the option otherwise.
std::pair<std::string, std::string> split_assignment(const std::string& s, const char* option) {
  size_t eq = s.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == s.size())
    user_error({}, std::string("bad ") + option + " '" + s + "': expected NAME=VALUE");
  return {s.substr(0, eq), s.substr(eq + 1)};
}

}  // namespace

bool is_graph_file(const std::string& path) {
  return (path.size() > 5 && path.compare(path.size() - 5, 5, ".json") == 0) || is_onnx_file(path) ||
         is_tflite_file(path);
}

LoadedModel load_model_file(const std::string& file, std::vector<SourceFileOut>* read_files,
                            const std::vector<std::string>& devices, const ScheduleOptions& schedules) {
  if (is_onnx_file(file) || is_tflite_file(file)) return prepare_model(load_foreign_model(file), devices, schedules);
  std::string dir = std::filesystem::path(file).parent_path().string();
  FileReader reader = [&](const std::string& relative) {
    std::string text = read_file(dir.empty() ? relative : dir + "/" + relative);
    if (read_files) read_files->push_back({relative, text});
    return text;
  };
  return mtir::load_model(read_file(file), file, reader, devices, schedules);
}

std::string pick_function(const IRModule& m, const std::string& requested) {
  std::string names;
  for (const auto& [n, f] : m.functions) names += (names.empty() ? "" : ", ") + n;
  if (!requested.empty()) {
    if (!m.lookup(requested)) user_error({}, "no function '" + requested + "' in the module (it has: " + names + ")");
    return requested;
  }
  if (m.functions.size() != 1) user_error({}, "the module has several functions (" + names + "): choose one with --func");
  return m.functions[0].first;
}

namespace {

int64_t parse_int(const std::string& text, const std::string& what) {
  try {
    size_t used = 0;
    long long v = std::stoll(text, &used, 0);
    if (used == text.size()) return v;
  } catch (const std::exception&) {
  }
  user_error({}, "bad value '" + text + "' for " + what + ": expected an integer");
}

double parse_double(const std::string& text, const std::string& what) {
  try {
    size_t used = 0;
    double v = std::stod(text, &used);
    if (used == text.size()) return v;
  } catch (const std::exception&) {
  }
  user_error({}, "bad value '" + text + "' for " + what + ": expected a number");
}

// The extent of a buffer dimension when it is a constant or a scalar parameter.
int64_t dim_value(const Expr& e, const std::map<const VarNode*, int64_t>& scalars, const std::string& buffer) {
  if (const int64_t* v = as_const_int(e)) return *v;
  if (const auto* var = as<VarNode>(e)) {
    auto it = scalars.find(var);
    if (it != scalars.end()) return it->second;
  }
  user_error({}, "cannot size output buffer '" + buffer + "': its shape is not constant; pass it with --input");
}

std::string format_value(const NDArray& a, int64_t i) {
  char buf[64];
  if (a.dtype.is_float()) {
    std::snprintf(buf, sizeof buf, "%.6g", a.get_float(i));
  } else if (a.dtype.is_bool()) {
    return a.get_int(i) ? "True" : "False";
  } else if (a.dtype.is_uint() && a.dtype.bits() == 64) {
    std::snprintf(buf, sizeof buf, "%llu", static_cast<unsigned long long>(a.get_int(i)));
  } else {
    std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(a.get_int(i)));
  }
  return buf;
}

// numpy-like nested brackets, eliding after `limit` elements.
void format_array(std::ostream& os, const NDArray& a, size_t dim, int64_t* index, int64_t limit) {
  if (a.shape.empty()) {
    os << format_value(a, 0);
    return;
  }
  os << "[";
  for (int64_t k = 0; k < a.shape[dim]; ++k) {
    if (k) os << (dim + 1 == a.shape.size() ? ", " : ",\n ");
    if (*index >= limit) {
      os << "...";
      break;
    }
    if (dim + 1 == a.shape.size()) {
      os << format_value(a, (*index)++);
    } else {
      format_array(os, a, dim + 1, index, limit);
    }
  }
  os << "]";
}

std::string shape_str(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

json array_json(const std::string& name, const NDArray& a) {
  json values = json::array();
  for (int64_t i = 0; i < a.num_elements(); ++i) {
    if (a.dtype.is_float()) values.push_back(a.get_float(i));
    else values.push_back(a.get_int(i));
  }
  return {{"name", name}, {"dtype", a.dtype.str()}, {"shape", a.shape}, {"values", values}};
}

}  // namespace

std::string format_output(const std::string& name, const NDArray& a, int limit) {
  std::ostringstream os;
  os << name << ": " << a.dtype.str() << " " << shape_str(a.shape) << "\n";
  int64_t index = 0;
  format_array(os, a, 0, &index, limit);
  os << "\n";
  return os.str();
}

int run_parse(const ParseCommand& c) {
  IRModule m = load_module(c.file, !c.no_verify);
  std::string text = print_module(m);
  if (c.json) {
    json out = {{"ok", true}, {"text", text}};
    std::cout << out.dump(2) << "\n";
  } else {
    std::cout << text;
  }
  return 0;
}


// The scalar parameters of `f` from --scalar NAME=VALUE into `args`; returns the integer
// ones by variable (output shapes may depend on them).
static std::map<const VarNode*, int64_t> bind_scalars(const PrimFunc& f, const std::string& fname,
                                                      std::map<std::string, std::string> scalar_texts,
                                                      std::vector<InterpArg>* args) {
  std::map<const VarNode*, int64_t> scalar_values;
  for (size_t i = 0; i < f->params.size(); ++i) {
    const Var& p = f->params[i];
    if (f->param_buffers[i]) continue;
    auto it = scalar_texts.find(p->name);
    if (it == scalar_texts.end()) user_error({}, "scalar parameter '" + p->name + "' of '" + fname + "' needs --scalar " + p->name + "=VALUE");
    if (p->dtype.is_float()) {
      (*args)[i] = parse_double(it->second, p->name);
    } else {
      int64_t v = parse_int(it->second, p->name);
      (*args)[i] = v;
      scalar_values[p.get()] = v;
    }
    scalar_texts.erase(it);
  }
  if (!scalar_texts.empty()) user_error({}, "'" + fname + "' has no scalar parameter '" + scalar_texts.begin()->first + "'");
  return scalar_values;
}

// The outputs as text and, with --target host, the comparison with the interpreter.
// Returns false when the host build disagrees.
static bool print_run_text(const RunCommand& c, const PrimFunc& f, const std::vector<NDArray>& arrays,
                           const std::vector<size_t>& outputs, const std::vector<std::string>& labels,
                           const json& comparisons, bool all_match, std::optional<int64_t> returned,
                           std::optional<int64_t> host_returned) {
  // The function's returned value (-> T.int32), as the interpreter computed it.
  if (returned) std::cout << "return: " << f->ret_type.str() << " " << *returned << "\n";
  for (size_t i : outputs) {
    const NDArray& a = arrays[i];
    std::cout << labels[i] << ": " << a.dtype.str() << " " << shape_str(a.shape) << "\n";
    int64_t index = 0;
    format_array(std::cout, a, 0, &index, c.print_limit);
    std::cout << "\n";
  }
  if (!c.target.empty()) {
    const char* backend = c.backend == "llvm" ? "LLVM" : "C";
    std::cout << "host " << backend << " (" << (c.unpacked_api ? "unpacked" : "packed") << " API) vs interpreter:\n";
    for (const auto& cmp : comparisons) {
      if (cmp["name"] == "return") {
        std::cout << "  return: " << (host_returned ? std::to_string(*host_returned) : std::string("none"))
                  << " (interpreter " << *returned << ")  " << (cmp["ok"].get<bool>() ? "ok" : "MISMATCH") << "\n";
        continue;
      }
      char line[128];  // the figures; the name apart, since a model's name can be long
      std::snprintf(line, sizeof line, ": max abs diff %.3g, max rel diff %.3g  %s\n", cmp["max_abs_diff"].get<double>(),
                    cmp["max_rel_diff"].get<double>(), cmp["ok"].get<bool>() ? "ok" : "MISMATCH");
      std::cout << "  " << cmp["name"].get<std::string>() << line;
    }
    if (!all_match) {
      std::cerr << "microtir: the host " << backend << " artifact disagrees with the interpreter\n";
      return false;
    }
  }
  return true;
}

// What `run` interprets: a model's AOT main with its weights preset by buffer name, or
// the TIR file's function asked for.
struct RunSubject {
  IRModule module;
  std::string func;
  std::map<std::string, NDArray> preset;  // buffer name -> value (a model's weights)
  int64_t state_bytes = 0;                 // a model's state (kept between runs, not planned)
  // A model's inputs and outputs: main's buffers are their C identifiers; --input takes
  // the model's own names too, and the outputs are reported under them.
  std::optional<AotModule> aot;
};

static RunSubject load_run_subject(const RunCommand& c) {
  RunSubject r;
  if (is_graph_file(c.file)) {
    ScheduleOptions schedules;
    disable_schedules(schedules, c.disabled_schedules, "--disable-schedules");
    schedules.workspace_budget = c.workspace_budget;
    if (!c.schedule_record.empty()) schedules = apply_record_file(c.file, c.schedule_record, schedules).schedules;
    LoadedModel lm = load_model_file(c.file, nullptr, {}, schedules);
    r.module = lm.aot.module;
    r.func = lm.aot.main;
    PrimFunc main = r.module.lookup(r.func);
    for (size_t i = 0; i < lm.aot.params.size(); ++i) {
      if (lm.aot.params[i].role == AotModule::Role::kConstant)
        r.preset[main->param_buffers[i]->name] = lm.graph.constants.at(lm.aot.params[i].name);
      if (lm.aot.params[i].role == AotModule::Role::kState) {  // one run from the initial state
        r.preset[main->param_buffers[i]->name] = lm.graph.state.at(lm.aot.params[i].name);
        r.state_bytes += lm.aot.params[i].type.num_elements() * lm.aot.params[i].type.dtype.bytes();
      }
    }
    r.aot = lm.aot;
  } else {
    r.module = load_module(c.file, true);
    r.func = pick_function(r.module, c.func);
  }
  return r;
}

std::string compile_target_for_run(const std::string& run_target, const std::string& backend) {
  if (backend != "c" && backend != "llvm") user_error({}, "--backend takes c or llvm, not '" + backend + "'");
  // --backend llvm builds the target's triple and CPU (sim/cross_targets.h).
  if (run_target == "wasm-binaryen" && backend != "c")
    user_error({}, "--target wasm-binaryen runs the wasm backend's own module; --backend " + backend + " does not apply");
  std::string target = run_target == "wasm-binaryen" ? std::string("wasm")
                       : backend == "llvm"           ? sim::find_cross_target(run_target).llvm_target()
                                                     : std::string(kDefaultCompileTarget);
  // The C build knows its CPU too: it picks the int8 schedules (smlad on Cortex-M4/M7/M33/M55).
  if (backend == "c" && run_target != "wasm-binaryen" && run_target != "host") {
    const std::string& cpu = sim::find_cross_target(run_target).llvm_cpu;
    if (!cpu.empty()) target += " -mcpu=" + cpu;
  }
  return target;
}

// A model on a cross target, or with device kernels (which the simulated NPU runs
// behind the C interface): compiled as `compile` would, then run as an artifact.
static int run_model_as_artifact(const RunCommand& c) {
  if (c.target.empty())
    user_error({}, "--device places layers on a simulated device, which only the built artifact has: add --target host");
  TempDir work(c.keep_build_dir);
  const std::string dir = work.path() + "/artifact";
  OutputSet files;
  std::string target = compile_target_for_run(c.target, c.backend);
  if (!c.disabled_schedules.empty()) target += " -disabled-schedules=" + c.disabled_schedules;
  if (c.reuse_io_buffers) target += " -reuse-io-buffers=1";
  if (c.workspace_budget > 0) target += " -workspace-budget=" + std::to_string(c.workspace_budget);
  // The LLVM objects are fixed at compile time: the operator hooks go in only when counted.
  if (c.profile_layers && c.backend == "llvm") target += " -profile-hooks=1";
  LoadedModel loaded;
  for (const auto& f : compile_artifact(c.file, parse_target(target), c.devices, &loaded, c.schedule_record).files) {
    std::filesystem::create_directories(std::filesystem::path(dir + "/" + f.path).parent_path());
    files.add(dir + "/" + f.path, f.text);
  }
  files.commit();
  RunCommand on_target = c;
  on_target.file = dir;
  // The model just converted is the reference, unless devices took layers: the reference
  // runs every layer on the CPU, so it is then read back from the artifact without them.
  return run_artifact(on_target, c.devices.empty() ? &loaded : nullptr);
}

// The arguments of one run: arrays for every buffer parameter (presets, --input and
// --inout files, zeros for the rest) and which of them are outputs.
struct RunArguments {
  std::vector<InterpArg> args;
  std::vector<NDArray> arrays;
  std::vector<size_t> outputs;
};

static RunArguments bind_arrays(const PrimFunc& f, const std::string& fname, const std::map<std::string, NDArray>& preset,
                                std::map<std::string, NDArray> inputs, std::map<std::string, NDArray> inouts,
                                const std::map<std::string, std::string>& scalar_texts);

static RunArguments bind_run_arguments(const RunCommand& c, const PrimFunc& f, const std::string& fname,
                                       const RunSubject& subject) {
  const std::map<std::string, NDArray>& preset = subject.preset;
  // A model's tensor is named by the model's name or its C identifier (main's buffer).
  auto buffer_named = [&](std::pair<std::string, std::string> kv, const char* flag) {
    if (!subject.aot) return kv;
    const AotModule::Param* p = find_io_param(*subject.aot, kv.first);
    if (!p) {
      std::string names;
      for (const auto& q : subject.aot->params)
        if (q.role == AotModule::Role::kInput) names += (names.empty() ? "'" : ", '") + q.name + "'";
      user_error({}, std::string(flag) + " " + kv.first + ": the model has no input or output '" + kv.first +
                         "' (its inputs: " + (names.empty() ? "none" : names) + ")");
    }
    kv.first = p->c_name;
    return kv;
  };
  std::map<std::string, std::string> input_files, scalar_texts;
  std::map<std::string, std::string> inout_files;
  for (const auto& s : c.inputs) input_files.insert(buffer_named(split_assignment(s, "--input"), "--input"));
  for (const auto& s : c.inouts) {
    auto kv = buffer_named(split_assignment(s, "--inout"), "--inout");
    if (input_files.count(kv.first)) user_error({}, "buffer '" + kv.first + "' is given with both --input and --inout");
    inout_files.insert(kv);
  }
  for (const auto& s : c.scalars) scalar_texts.insert(split_assignment(s, "--scalar"));
  std::map<std::string, NDArray> inputs, inouts;
  for (const auto& [name, file] : input_files) inputs[name] = read_npy(read_file(file), file);
  for (const auto& [name, file] : inout_files) inouts[name] = read_npy(read_file(file), file);
  return bind_arrays(f, fname, preset, std::move(inputs), std::move(inouts), scalar_texts);
}

// main's (or the function's) arguments: the presets, the given inputs and in-place
// buffers, zeroed outputs sized from the scalars.
static RunArguments bind_arrays(const PrimFunc& f, const std::string& fname, const std::map<std::string, NDArray>& preset,
                                std::map<std::string, NDArray> inputs, std::map<std::string, NDArray> inouts,
                                const std::map<std::string, std::string>& scalar_texts) {
  RunArguments r;
  // Scalars first: output shapes may depend on them.
  r.args.resize(f->params.size());
  std::map<const VarNode*, int64_t> scalar_values = bind_scalars(f, fname, scalar_texts, &r.args);
  r.arrays.resize(f->params.size());
  for (size_t i = 0; i < f->params.size(); ++i) {
    const Buffer& b = f->param_buffers[i];
    if (!b) continue;
    auto it = inputs.find(b->name);
    if (auto pre = preset.find(b->name); pre != preset.end()) {
      r.arrays[i] = pre->second;
    } else if (it != inputs.end()) {
      r.arrays[i] = std::move(it->second);
      inputs.erase(it);
    } else if (auto io = inouts.find(b->name); io != inouts.end()) {
      r.arrays[i] = std::move(io->second);
      inouts.erase(io);
      r.outputs.push_back(i);
    } else {
      std::vector<int64_t> shape;
      for (const auto& e : b->shape) shape.push_back(dim_value(e, scalar_values, b->name));
      r.arrays[i] = NDArray::zeros(b->dtype, shape);
      r.outputs.push_back(i);
    }
    r.args[i] = &r.arrays[i];
  }
  if (!inputs.empty()) user_error({}, "'" + fname + "' has no buffer parameter '" + inputs.begin()->first + "'");
  if (!inouts.empty()) user_error({}, "'" + fname + "' has no buffer parameter '" + inouts.begin()->first + "'");
  return r;
}

TirRun interpret_function(const IRModule& m, const std::string& func, std::map<std::string, NDArray> inputs,
                          std::map<std::string, NDArray> inouts, const std::map<std::string, std::string>& scalars) {
  TirRun result;
  result.func = pick_function(m, func);
  PrimFunc f = expand_vector_buffers(m.lookup(result.func));
  RunArguments run = bind_arrays(f, result.func, {}, std::move(inputs), std::move(inouts), scalars);
  result.returned = interpret(m, result.func, run.args);
  for (size_t i : run.outputs) result.outputs.emplace_back(f->param_buffers[i]->name, std::move(run.arrays[i]));
  return result;
}

// The host build of a TIR function, run on `inputs` (copies made before the interpreter
// ran) and compared with what the interpreter computed; afterwards `run` holds the host
// build's outputs and `inputs` the interpreter's.
struct HostComparison {
  json comparisons = json::array();
  bool all_match = true;
  std::optional<int64_t> returned;
};

static HostComparison compare_with_host_build(const RunCommand& c, const IRModule& m, const std::string& fname,
                                              const PrimFunc& f, RunArguments& run, std::vector<NDArray>& inputs,
                                              const std::optional<int64_t>& interpreted_return,
                                              const std::vector<std::string>& labels) {
  HostComparison h;
  std::vector<InterpArg> host_args = run.args;
  for (size_t i = 0; i < f->params.size(); ++i)
    if (f->param_buffers[i]) host_args[i] = &inputs[i];
  if (c.backend != "c" && c.backend != "llvm") user_error({}, "--backend takes c or llvm, not '" + c.backend + "'");
  Target target = parse_target(c.backend + (c.unpacked_api ? " -unpacked-api=1" : " -unpacked-api=0") +
                               (c.reuse_io_buffers ? " -reuse-io-buffers=1" : ""));
  BuildResult built = build_for_target(m, target);
  TempDir work(c.keep_build_dir);
  sim::HostSimOptions options;
  options.work_dir = work.path();
  // The arena the artifact's header asks for, when it is more than the default (MobileNetV2
  // at 224x224 plans 2.4 MB).
  options.workspace_bytes = std::max<size_t>(options.workspace_bytes,
                                             static_cast<size_t>(artifact_workspace_bytes(built.lowered.module, fname)));
  h.returned = sim::run_on_host({&built, fname, f}, host_args, options);
  auto add = [&h](const std::string& name, double max_abs, double max_rel, bool ok) {
    h.all_match = h.all_match && ok;
    h.comparisons.push_back({{"name", name}, {"max_abs_diff", max_abs}, {"max_rel_diff", max_rel}, {"ok", ok}});
  };
  if (interpreted_return) {
    const bool same = h.returned == interpreted_return;
    add("return", same ? 0.0 : 1.0, same ? 0.0 : 1.0, same);
  }
  for (size_t i : run.outputs) {
    Difference d = compare_arrays(inputs[i], run.arrays[i]);  // the artifact against the interpreter
    add(labels[i], d.max_abs, d.max_rel, d.ok);
  }
  // Report what the artifact computed.
  for (size_t i : run.outputs) std::swap(run.arrays[i], inputs[i]);
  return h;
}

// A compiled model runs with the schedule record it was compiled with, if any.
static int run_compiled_artifact(const RunCommand& c) {
  if (!c.schedule_record.empty())
    user_error({}, "--schedules applies when a model is compiled; the artifact '" + c.file +
                       "' runs with the record it was compiled with (its metadata.json names it)");
  return run_artifact(c);
}

int run_run(const RunCommand& c) {
  // A model (JSON graph) runs through its AOT main with its weights; a TIR file runs
  // the function asked for.
  if (c.profile_layers && (c.target.empty() || c.target == "host" || c.target == "wasm32" || c.target == "wasm-binaryen"))
    user_error({}, "--profile-layers counts instructions per operator on a target with an instruction counter: "
                   "add --target cortex-m3, cortex-m4, cortex-m7, cortex-m33, cortex-m55 or riscv32");
  const bool budgeted = budget_options(c.max_flash, c.max_ram).any();  // a bad value is refused before any build
  if (budgeted && (c.target.empty() || (!is_artifact_path(c.file) && !is_graph_file(c.file))))
    user_error({}, "--max-flash and --max-ram check a model's build on a target: give a model (.tflite, .onnx, model.json "
                   "or a compiled model.tar) and --target");
  if (is_artifact_path(c.file)) return run_compiled_artifact(c);  // model.tar or an MLF folder
  // A budget needs the artifact's target report, which the host build of a model has too.
  if (is_graph_file(c.file) && ((!c.target.empty() && c.target != "host") || !c.devices.empty() || budgeted))
    return run_model_as_artifact(c);
  if (!c.target.empty() && c.target != "host") {
    user_error({}, "--target " + c.target + " runs models (model.json, or model.tar from `microtir compile`); "
                   "a TIR file runs on --target host");
  }
  RunSubject subject = load_run_subject(c);
  const IRModule& m = subject.module;
  const std::string& fname = subject.func;
  // Arrays for the signature that runs: a buffer of vector type has a dimension of lanes.
  PrimFunc f = expand_vector_buffers(m.lookup(fname));
  RunArguments run = bind_run_arguments(c, f, fname, subject);
  std::vector<NDArray>& arrays = run.arrays;
  const std::vector<size_t>& outputs = run.outputs;
  // Each buffer's name for the user: a model's own name for its inputs and outputs (the
  // buffer, and the file --output-dir writes, are its C identifier).
  std::vector<std::string> labels(f->params.size());
  for (size_t i = 0; i < f->params.size(); ++i) {
    if (!f->param_buffers[i]) continue;
    labels[i] = subject.aot && i < subject.aot->params.size() ? subject.aot->params[i].name : f->param_buffers[i]->name;
  }

  // The host build runs on copies of the inputs; the interpreter is the reference.
  std::vector<NDArray> reference;
  if (!c.target.empty()) reference = arrays;
  std::optional<int64_t> returned;
  {
    TimingScope timing("step", "interpret");
    returned = interpret(m, fname, run.args);
  }
  HostComparison host;
  if (!c.target.empty()) {
    TimingScope timing("step", "host build and run");
    host = compare_with_host_build(c, m, fname, f, run, reference, returned, labels);
  }

  OutputSet files;
  if (!c.output_dir.empty()) {
    ensure_directory(c.output_dir);
    for (size_t i : outputs)
      files.add(c.output_dir + "/" + f->param_buffers[i]->name + ".npy", write_npy(arrays[i]));
    files.commit();
  }
  if (c.json) {
    json outs = json::array();
    for (size_t i : outputs) {
      json o = array_json(labels[i], arrays[i]);
      o["identifier"] = f->param_buffers[i]->name;
      if (!c.output_dir.empty()) o["file"] = c.output_dir + "/" + f->param_buffers[i]->name + ".npy";
      outs.push_back(std::move(o));
    }
    json out = {{"ok", host.all_match}, {"function", fname}, {"outputs", outs}};
    if (returned) out["return"] = *returned;
    if (!c.target.empty()) out["compare"] = host.comparisons;
    std::cout << with_timing(out).dump(2) << "\n";
    return host.all_match ? 0 : 1;
  }
  if (!print_run_text(c, f, arrays, outputs, labels, host.comparisons, host.all_match, returned, host.returned)) return 1;
  // Where the model's intermediate tensors live: the plan the artifact uses.
  if (is_graph_file(c.file)) std::cout << planned_memory_report(m, fname, c.reuse_io_buffers);
  if (subject.state_bytes > 0)
    std::cout << "state: " << subject.state_bytes << " bytes, kept by the artifact between runs (not in the workspace); "
              << "this run started from the initial state\n";
  return 0;
}

// The object files of an LLVM build (codegen/host/lib/<name>*.o, optimized at -O2), when
// the native LLVM helpers are built in (MICROTIR_LLVM); none otherwise.
static std::vector<SourceFileOut> llvm_objects(const BuildResult& built) {
  std::vector<SourceFileOut> objects;
#ifdef MICROTIR_HAVE_LLVM_NATIVE
  if (built.target.kind != "llvm") return objects;
  llvm_native::Options options;
  options.triple = built.target.mtriple;
  options.cpu = built.target.mcpu;
  options.machine_scheduler = llvm_machine_scheduling(built.target);
  TimingScope timing("step", "objects");
  for (const auto& src : built.sources) {
    std::filesystem::path p(src.path);
    if (p.extension() != ".ll") continue;
    TimingScope object("backend", "llvm: object " + p.stem().string() + ".o (native, " + built.target.mtriple + ")");
    // codegen/<host or device>/src/libN.ll -> codegen/<host or device>/lib/libN.o, and
    // libN_part1.o ... when the module is large enough to compile in parts on threads.
    const std::filesystem::path lib = p.parent_path().parent_path() / "lib";
    std::vector<std::string> parts = llvm_native::compile_to_objects(src.text, p.filename().string(), options);
    for (size_t k = 0; k < parts.size(); ++k) {
      const std::string suffix = k == 0 ? "" : "_part" + std::to_string(k);
      objects.push_back({(lib / (p.stem().string() + suffix + ".o")).string(), std::move(parts[k])});
    }
  }
#else
  (void)built;
#endif
  return objects;
}

// An LLVM-built model artifact gets its objects next to the .ll files, listed in
// metadata.json like every other file.
static void add_llvm_objects(MlfArtifact* artifact) {
  std::vector<SourceFileOut> objects = llvm_objects(artifact->built);
  if (objects.empty()) return;
  for (const auto& o : objects) artifact->metadata["files"].push_back(o.path);
  for (auto& f : artifact->files)
    if (f.path == "metadata.json") f.text = artifact->metadata.dump(2) + "\n";
  artifact->files.insert(artifact->files.begin() + static_cast<std::ptrdiff_t>(artifact->built.sources.size()),
                         objects.begin(), objects.end());
}

// A wasm-target artifact gets its module assembled and optimized by Binaryen
// (codegen/host/lib/<model>.wasm and Binaryen's .wat of it) when the native helpers are
// built in (MICROTIR_BINARYEN); otherwise it holds the core's text only.
static void add_wasm_binary(MlfArtifact* artifact, const Graph& g) {
#ifdef MICROTIR_HAVE_BINARYEN
  if (artifact->target.kind != "wasm") return;
  const std::string source = wasm_model_source_path(g);
  auto it = std::find_if(artifact->files.begin(), artifact->files.end(), [&](const SourceFileOut& f) { return f.path == source; });
  if (it == artifact->files.end()) internal_error(__FILE__, __LINE__, "the wasm artifact has no " + source);
  TimingScope timing("step", "assemble");
  binaryen_native::Assembled a;
  {
    TimingScope backend("backend", "binaryen: assemble and optimize (-" + artifact->target.opt + ")");
    a = binaryen_native::assemble(it->text, artifact->target.opt, "model '" + g.name + "'");
  }
  std::vector<SourceFileOut> lib = {{wasm_model_binary_path(g), a.binary}, {wasm_model_text_path(g), a.text}};
  for (const auto& f : lib) artifact->metadata["files"].push_back(f.path);
  for (auto& f : artifact->files)
    if (f.path == "metadata.json") f.text = artifact->metadata.dump(2) + "\n";
  artifact->files.insert(it + 1, lib.begin(), lib.end());
#else
  (void)artifact, (void)g;
#endif
}

// The Model Library Format artifact of a JSON graph model, with the C runtime and the
// graph's own files, as `compile` writes it.
// The record an artifact was compiled with: the file beside metadata.json, and
// metadata.json's "schedule_record" naming it.
static void add_schedule_record(MlfArtifact* artifact, const AppliedRecord& r) {
  artifact->metadata["schedule_record"] = {{"path", r.path}, {"hash", r.record.hash}, {"file", kArtifactRecordFile},
                                           {"model", r.record.model}, {"layers", r.record.layers.size()}};
  artifact->metadata["files"].push_back(kArtifactRecordFile);
  for (auto& f : artifact->files)
    if (f.path == "metadata.json") f.text = artifact->metadata.dump(2) + "\n";
  artifact->files.insert(artifact->files.end() - 1, SourceFileOut{kArtifactRecordFile, r.text});
}

MlfArtifact compile_artifact(const std::string& file, const Target& target_in, const std::vector<std::string>& devices,
                             LoadedModel* loaded, const std::string& schedule_record) {
  if (!is_graph_file(file))
    user_error({}, "'" + file + "' is not a model: compile takes a JSON graph (.json), an ONNX model (.onnx) or a TFLite model (.tflite)");
  MlfInputs inputs;
  Target target = target_in;
  std::optional<AppliedRecord> record;
  if (!schedule_record.empty()) {
    record = apply_record_file(file, schedule_record, target.schedules);
    target.schedules = record->schedules;
  }
  // The target first: it decides the int8 kernels' schedules, which shape the graph.
  LoadedModel lm = load_model_file(file, &inputs.graph_files, devices, target.schedules);
  // The C runtime the artifact builds against, so the folder is complete on its own.
  inputs.graph_filename = std::filesystem::path(file).filename().string();
  inputs.graph_text = read_file(file);
  const std::filesystem::path crt = sim::default_crt_dir();
  for (const char* part : {"include", "src", "ports"}) {
    for (const auto& e : std::filesystem::recursive_directory_iterator(crt / part)) {
      if (!e.is_regular_file()) continue;
      inputs.runtime.push_back({std::filesystem::relative(e.path(), crt).string(), read_file(e.path().string())});
    }
  }
  // DLTensor's header too: cross toolchains do not see the host's /usr/include.
  inputs.runtime.push_back({"include/dlpack/dlpack.h", read_file(sim::dlpack_include_dir() + "/dlpack/dlpack.h")});
  MlfArtifact artifact = build_mlf(lm, target, inputs);
  add_llvm_objects(&artifact);
  add_wasm_binary(&artifact, lm.graph);
  if (record) add_schedule_record(&artifact, *record);
  if (loaded) *loaded = std::move(lm);
  return artifact;
}

// The keys the target text left out, one line: "  defaulted: -mcpu=(none: ...) ...".
static std::string target_defaults_text(const Target& t) {
  if (t.defaulted.empty()) return "";
  std::string line = "  defaulted:";
  for (const auto& [key, value] : t.defaulted)
    line += " -" + key + "=" + (value.empty() ? std::string("(none: the generic kernels)") : value);
  return line + "\n";
}

void write_artifact(const std::vector<SourceFileOut>& files, const std::string& output) {
  TimingScope timing("step", "write");
  OutputSet out;
  const std::string& o = output;
  if (o.size() > 4 && o.compare(o.size() - 4, 4, ".tar") == 0) {
    std::vector<std::pair<std::string, std::string>> entries;
    for (const auto& f : files) entries.emplace_back(f.path, f.text);
    out.add(o, make_tar(entries));
  } else {
    ensure_directory(o);
    for (const auto& f : files) {
      std::filesystem::create_directories(std::filesystem::path(o + "/" + f.path).parent_path());
      out.add(o + "/" + f.path, f.text);
    }
  }
  out.commit();
}

int run_compile(const CompileCommand& c) {
  const sim::Budget budget = budget_options(c.max_flash, c.max_ram);
  if (budget.any() && c.board.empty())
    user_error({}, "--max-flash and --max-ram are checked on a measured build: add --board (e.g. --board cortex-m4)");
  // The target's text is read here, once; everything below takes the Target.
  MlfArtifact artifact = compile_artifact(c.file, parse_target(c.target), c.devices, nullptr, c.schedule_record);
  write_artifact(artifact.files, c.output_dir);
  if (c.json) {
    json result = with_timing(json{{"ok", true}, {"metadata", artifact.metadata}});
    if (c.board.empty()) {
      std::cout << result.dump(2) << "\n";
      return 0;
    }
    const sim::TargetReport report = measure_artifact(c.output_dir, c.board, "");
    result["report"] = target_report_json(report);
    const int over = check_budget_gate(report, budget, true, &result);
    result["ok"] = over == 0;
    std::cout << result.dump(2) << "\n";
    return over;
  }
  if (c.verbose) {
    std::cout << "target " << artifact.target.str() << "\n" << target_defaults_text(artifact.target);
    for (const auto& f : artifact.files) std::cout << "wrote " << c.output_dir << ":" << f.path << "\n";
  }
  if (c.board.empty()) return 0;
  const sim::TargetReport report = measure_artifact(c.output_dir, c.board, "");
  std::cout << target_report_text(report);
  return check_budget_gate(report, budget, false, nullptr);
}

int run_build(const BuildCommand& c) {
  IRModule m = is_graph_file(c.file) ? load_model_file(c.file, nullptr, c.devices).aot.module : load_module(c.file, true);
  Target target = parse_target(c.target);
  if (c.unpacked_api >= 0) {
    target.unpacked_api = c.unpacked_api != 0;
    // An interface the text left open follows the convention, as -unpacked-api=0 written would.
    for (auto& [key, value] : target.defaulted)
      if (key == "interface-api") target.interface_api = value = target.unpacked_api ? "c" : "packed";
  }
  BuildResult built = build_for_target(m, target);
  for (auto& object : llvm_objects(built)) built.sources.push_back(std::move(object));
#ifdef MICROTIR_HAVE_BINARYEN
  // The module assembled too: codegen/host/lib/lib0.wasm beside the text.
  if (target.kind == "wasm")
    built.sources.push_back({"codegen/host/lib/lib0.wasm",
                             binaryen_native::assemble(built.sources.at(0).text, target.opt, "'" + c.file + "'").binary});
#endif
  ensure_directory(c.output_dir);
  OutputSet files;
  for (const auto& src : built.sources) {
    std::filesystem::create_directories(std::filesystem::path(c.output_dir + "/" + src.path).parent_path());
    files.add(c.output_dir + "/" + src.path, src.text);
  }
  files.commit();
  if (c.json) {
    json list = json::array();
    for (const auto& src : built.sources) list.push_back(c.output_dir + "/" + src.path);
    json fns = json::array();
    for (const auto& [name, symbol] : built.symbols) fns.push_back({{"name", name}, {"symbol", symbol}});
    std::cout << with_timing(json{{"ok", true}, {"target", target.str()}, {"files", list}, {"functions", fns}}).dump(2)
              << "\n";
    return 0;
  }
  for (const auto& src : built.sources) std::cout << "wrote " << c.output_dir << "/" << src.path << "\n";
  return 0;
}

std::string planned_memory_report(const IRModule& m, const std::string& main, bool reuse_io_buffers,
                                  nlohmann::json* peak) {
  IRModule input = m;
  if (reuse_io_buffers) input.attrs["reuse_io_buffers"] = true;
  PipelineResult planned = run_pipeline(input, {*find_pass("simplify"), *find_pass("plan_memory")});
  const PrimFunc f = planned.module.lookup(main);
  const MemoryPeak at = memory_peak(memory_plan_of(f));
  if (peak) *peak = peak_json(at);
  return memory_report(f) + peak_text(at);
}

std::string pass_list() {
  std::string s;
  for (const auto& p : all_passes()) s += p.name + "\n";
  return s;
}

int run_passes(const PassesCommand& c) {
  IRModule m = is_graph_file(c.file) ? load_model_file(c.file, nullptr, c.devices).aot.module : load_module(c.file, false);
  std::vector<Pass> passes;
  if (c.passes.empty()) {
    passes = lowering_pipeline(lowering_options(parse_target(c.target)));
  } else {
    for (const auto& name : c.passes) {
      const Pass* p = find_pass(name);
      if (!p) user_error({}, "unknown pass '" + name + "'; `microtir passes --list` shows them");
      passes.push_back(*p);
    }
  }
  PipelineResult r = run_pipeline(m, passes);

  if (!c.dump_ir_dir.empty()) {
    ensure_directory(c.dump_ir_dir);
    OutputSet files;
    auto numbered = [&](size_t n, const std::string& name) {
      std::string num = std::to_string(n);
      if (num.size() < 2) num = "0" + num;
      return c.dump_ir_dir + "/" + num + "-" + name + ".tir";
    };
    files.add(numbered(0, "input"), print_module(m));
    for (size_t i = 0; i < r.records.size(); ++i)
      files.add(numbered(i + 1, r.records[i].name), print_module(r.records[i].module));
    files.commit();
  }
  if (c.json) {
    json list = json::array();
    for (const auto& rec : r.records) list.push_back({{"name", rec.name}, {"changed", rec.changed}});
    std::cout << json{{"ok", true}, {"passes", list}, {"text", print_module(r.module)}}.dump(2) << "\n";
    return 0;
  }
  for (size_t i = 0; i < r.records.size(); ++i)
    std::cerr << "[" << (i + 1) << "/" << r.records.size() << "] " << r.records[i].name
              << (r.records[i].changed ? "" : " (unchanged)") << "\n";
  std::cout << print_module(r.module);
  return 0;
}

}  // namespace mtir::cli
