#include "compile_request.h"

#include <chrono>
#include <map>
#include <new>

#include "analysis/well_formed.h"
#include "artifact/memory_plan.h"
#include "artifact/mlf.h"
#include "artifact/tar.h"
#include "base64.h"
#include "driver/build.h"
#include "embedded_crt.h"
#include "artifact/model_view.h"
#include "run_request.h"
#include "script/parser.h"
#include "script/printer.h"
#include "support/diagnostic.h"
#include "support/timing.h"

namespace mtir::wasm {
namespace {

using nlohmann::json;

json diagnostic_json(const Diagnostic& d) {
  json j = {{"severity", severity_name(d.severity)},
            {"message", d.message},
            {"line", d.span.line},
            {"col", d.span.col},
            {"notes", d.notes},
            {"rendered", d.render()}};
  j["file"] = d.span.file ? d.span.file->name : "";
  return j;
}

Diagnostic plain(Severity s, const std::string& message) {
  Diagnostic d;
  d.severity = s;
  d.message = message;
  return d;
}

// Milliseconds since construction, per phase.
class Stopwatch {
 public:
  void lap(const std::string& phase) {
    auto now = std::chrono::steady_clock::now();
    timings_[phase] = std::chrono::duration<double, std::milli>(now - last_).count();
    last_ = now;
  }
  json json_() const {
    json j = timings_;
    j["total"] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_).count();
    return j;
  }

 private:
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now(), last_ = start_;
  std::map<std::string, double> timings_;
};

// A .c/.h/.ll/.json/.tir file is text; anything else (.npy) travels as base64.
bool is_text_path(const std::string& path) {
  for (const char* ext : {".c", ".h", ".ll", ".wat", ".json", ".tir", ".ld", ".txt", ".md"}) {
    size_t n = std::char_traits<char>::length(ext);
    if (path.size() >= n && path.compare(path.size() - n, n, ext) == 0) return true;
  }
  return false;
}

json file_json(const SourceFileOut& f) {
  if (is_text_path(f.path)) return {{"path", f.path}, {"text", f.text}};
  return {{"path", f.path}, {"base64", base64_encode(f.text)}};
}

struct Options {
  bool ir = true;         // the printed module after every pass
  bool artifacts = true;  // the generated files
  bool memory = true;     // the memory plan
  bool tar = false;       // the whole artifact as one ustar archive (base64)
};

const json& field(const json& j, const char* key, json::value_t type, const char* where) {
  auto it = j.find(key);
  if (it == j.end()) user_error({}, std::string("request: missing '") + key + "' in " + where);
  if (it->type() != type) user_error({}, std::string("request: '") + key + "' in " + where + " has the wrong type");
  return *it;
}

std::string optional_string(const json& j, const char* key, const std::string& fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_string()) user_error({}, std::string("request: '") + key + "' must be a string");
  return it->get<std::string>();
}

Options read_options(const json& request) {
  Options o;
  auto it = request.find("return");
  if (it == request.end()) return o;
  if (!it->is_object()) user_error({}, "request: 'return' must be an object of booleans");
  for (const auto& [key, value] : it->items()) {
    if (!value.is_boolean()) user_error({}, "request: return." + key + " must be a boolean");
    bool v = value.get<bool>();
    if (key == "ir") o.ir = v;
    else if (key == "artifacts") o.artifacts = v;
    else if (key == "memory") o.memory = v;
    else if (key == "tar") o.tar = v;
    else user_error({}, "request: unknown return." + key + " (known: ir, artifacts, memory, tar)");
  }
  return o;
}

// The last compile's lowering and files, kept when its request deferred the pass IR
// texts or the archive (return.ir or return.tar false), for compile_details_request.
struct KeptCompile {
  bool valid = false;
  PipelineResult lowered;
  std::vector<SourceFileOut> files;
};

KeptCompile& kept_compile() {
  static KeptCompile k;
  return k;
}

void keep_compile(const Options& o, const PipelineResult& lowered, const std::vector<SourceFileOut>& files) {
  if (o.ir && o.tar) return;
  KeptCompile& k = kept_compile();
  k.lowered = lowered;
  k.files = files;
  k.valid = true;
}

std::string tar_base64(const std::vector<SourceFileOut>& files) {
  TimingScope timing("step", "archive");
  std::vector<std::pair<std::string, std::string>> entries;
  for (const auto& f : files) entries.emplace_back(f.path, f.text);
  return base64_encode(make_tar(entries));
}

// The input shown is the module the pipeline got, after the target's attributes were set
// (workspace_byte_alignment), so that the first pass's diff is its own.
void add_passes(json& out, const PipelineResult& lowered, const Options& o) {
  TimingScope timing("step", o.ir ? "print IR" : "pass list");
  if (o.ir) out["input_ir"] = print_module(lowered.input);
  json passes = json::array();
  for (const auto& rec : lowered.records) {
    json p = {{"name", rec.name}, {"changed", rec.changed}};
    if (o.ir) p["ir"] = print_module(rec.module);
    passes.push_back(std::move(p));
  }
  out["passes"] = std::move(passes);
}

// Every function PlanMemory placed tensors for, read from the module right after it.
json memory_json(const PipelineResult& lowered) {
  json plans = json::array();
  for (const auto& rec : lowered.records) {
    if (rec.name != "plan_memory") continue;
    for (const auto& [name, f] : rec.module.functions) {
      FunctionMemoryPlan p = memory_plan_of(f);
      if (!p.planned) continue;
      json tensors = json::array();
      for (const auto& t : p.tensors) {
        tensors.push_back({{"name", t.name}, {"pool", t.pool}, {"offset", t.offset}, {"size", t.size},
                           {"first_step", t.first_step}, {"last_step", t.last_step}});
      }
      json pools = json::array();
      for (const auto& [pool, bytes] : p.pools) pools.push_back({{"name", pool}, {"bytes", bytes}});
      plans.push_back({{"function", name}, {"pool_bytes", p.pool_bytes}, {"lower_bound", p.lower_bound},
                       {"shared_lower_bound", p.shared_lower_bound},
                       {"alignment", p.alignment}, {"planner", p.planner}, {"steps", p.steps},
                       {"step_callees", p.step_callees},
                       {"pools", pools}, {"tensors", tensors}});
    }
    break;
  }
  return plans;
}

// The Run button's part: its own diagnostics, so a failed run keeps the compile's results.
template <typename F>
void add_run(json& out, const json& request, F run) {
  auto it = request.find("run");
  if (it == request.end() || it->is_null()) return;
  try {
    out["run"] = run(*it);
    out["run"]["ok"] = true;
  } catch (const DiagnosticError& e) {
    json diags = json::array();
    for (const auto& d : e.diagnostics()) diags.push_back(diagnostic_json(d));
    out["run"] = {{"ok", false}, {"diagnostics", diags}};
  }
}

json compile_tir(const json& request, const json& source, const std::string& target_text, const Options& o, Stopwatch& clock) {
  const std::string filename = optional_string(source, "filename", "input.tir");
  ParseResult parsed = parse_module(field(source, "text", json::value_t::string, "source").get<std::string>(), filename);
  if (!parsed.ok()) throw DiagnosticError(parsed.diagnostics);
  auto diags = check_well_formed(*parsed.module);
  if (!diags.empty()) throw DiagnosticError(diags);
  clock.lap("parse");
  Target target = parse_target(target_text);
  BuildResult built = build_for_target(*parsed.module, target);
  clock.lap("build");
  json out = {{"target", target.str()}};
  add_passes(out, built.lowered, o);
  if (o.artifacts) {
    json files = json::array();
    for (const auto& f : built.sources) files.push_back(file_json(f));
    out["artifacts"] = files;
    // The C lines each TIR source line became (the page's source <-> output mapping).
    json maps = json::object();
    for (const auto& [path, lines] : built.line_maps) maps[path] = lines;
    out["source_map"] = maps;
  }
  if (o.memory) out["memory"] = memory_json(built.lowered);
  if (o.tar) out["tar"] = tar_base64(built.sources);
  keep_compile(o, built.lowered, built.sources);
  clock.lap("package");
  add_run(out, request, [&](const json& run) { return run_tir(*parsed.module, run); });
  if (out.contains("run")) clock.lap("run");
  return out;
}

json compile_graph(const json& request, const json& source, const std::string& target_text, const Options& o, Stopwatch& clock) {
  const std::string filename = optional_string(source, "filename", "model.json");
  const std::string text = field(source, "text", json::value_t::string, "source").get<std::string>();
  std::map<std::string, std::string> files;  // path as the graph names it -> bytes
  if (auto it = source.find("files"); it != source.end()) {
    if (!it->is_object()) user_error({}, "request: source.files must map file names to base64 contents");
    for (const auto& [path, b64] : it->items()) {
      if (!b64.is_string()) user_error({}, "request: source.files['" + path + "'] must be a base64 string");
      files[path] = base64_decode(b64.get<std::string>(), "source.files['" + path + "']");
    }
  }
  MlfInputs inputs;
  FileReader reader = [&](const std::string& relative) {
    auto it = files.find(relative);
    if (it == files.end()) user_error({}, "cannot read '" + relative + "': the request carries no such file (load it with the model)");
    inputs.graph_files.push_back({relative, it->second});
    return it->second;
  };
  // Device placement as the CLI's --device specs ("npu0=conv2d,dense").
  std::vector<std::string> devices;
  if (auto it = request.find("devices"); it != request.end()) {
    if (!it->is_array()) user_error({}, "request: devices must be a list of \"INSTANCE=OP[,OP...]\" strings");
    for (const auto& d : *it) {
      if (!d.is_string()) user_error({}, "request: devices must be a list of \"INSTANCE=OP[,OP...]\" strings");
      devices.push_back(d.get<std::string>());
    }
  }
  // The target's schedule switches shape the graph (kernel choice, weight packing), as
  // in `microtir compile`.
  const Target target = parse_target(target_text);
  LoadedModel model = load_model(text, filename, reader, devices, target.schedules);
  clock.lap("load");
  // The whole Model Library Format, exactly as `microtir compile` writes it, for either
  // interface (the packed one with its header and metadata too).
  inputs.graph_filename = filename;
  inputs.graph_text = text;
  inputs.runtime = embedded_crt_files();
  MlfArtifact mlf = build_mlf(model, target, inputs);
  json out;
  out["target"] = mlf.target.str();
  out["metadata"] = mlf.metadata;
  const std::vector<SourceFileOut>& artifact_files = mlf.files;
  const PipelineResult* lowered = &mlf.built.lowered;
  out["main"] = model.aot.main;
  out["model"] = model_view_json(model);
  clock.lap("build");
  add_passes(out, *lowered, o);
  if (o.artifacts) {
    json list = json::array();
    for (const auto& f : artifact_files) list.push_back(file_json(f));
    out["artifacts"] = list;
  }
  if (o.memory) out["memory"] = memory_json(*lowered);
  if (o.tar) out["tar"] = tar_base64(artifact_files);
  keep_compile(o, *lowered, artifact_files);
  clock.lap("package");
  add_run(out, request, [&](const json& run) { return run_model(model, run); });
  if (out.contains("run")) clock.lap("run");
  return out;
}

json compile_checked(const json& request, Stopwatch& clock) {
  if (!request.is_object()) user_error({}, "request: expected a JSON object");
  const json& source = field(request, "source", json::value_t::object, "the request");
  const std::string kind = field(source, "kind", json::value_t::string, "source").get<std::string>();
  // The CLI's defaults: build's packed functions for TIR, compile's "c" for a model.
  const std::string target = optional_string(request, "target", kind == "tir" ? "c -unpacked-api=0" : "c");
  Options o = read_options(request);
  kept_compile() = KeptCompile{};  // a failed compile must not leave an older one's texts
  if (kind == "tir") return compile_tir(request, source, target, o, clock);
  if (kind == "graph") return compile_graph(request, source, target, o, clock);
  user_error({}, "request: unknown source kind '" + kind + "' (known: tir, graph)");
}

// The texts compile_request deferred, from the compile it kept.
json details_checked(const json& request) {
  if (!request.is_object()) user_error({}, "request: expected a JSON object");
  const KeptCompile& k = kept_compile();
  if (!k.valid)
    user_error({}, "no compile is kept: the pass IR texts and the archive come from the last compile whose "
                   "request deferred them (return.ir or return.tar false); compile again");
  auto flag = [&](const char* key, bool fallback) {
    auto it = request.find(key);
    if (it == request.end()) return fallback;
    if (!it->is_boolean()) user_error({}, std::string("request: '") + key + "' must be a boolean");
    return it->get<bool>();
  };
  Options o;
  o.ir = flag("ir", true);
  json out;
  if (o.ir) add_passes(out, k.lowered, o);
  if (flag("tar", false)) out["tar"] = tar_base64(k.files);
  return out;
}

// Runs `compile` (a request handler that may throw) with the timer on, and returns its
// response with the diagnostics, the version and the timer's table.
template <typename F>
json respond_timed(F compile) {
  TimingTable table;
  TimingSession session(&table);
  json out;
  std::vector<Diagnostic> diags;
  try {
    out = compile();
  } catch (const DiagnosticError& e) {
    diags = e.diagnostics();
  } catch (const std::bad_alloc&) {
    diags.push_back(plain(Severity::kInternal, "out of memory while compiling"));
  } catch (const std::exception& e) {
    diags.push_back(plain(Severity::kInternal, std::string("unexpected failure: ") + e.what()));
  } catch (...) {
    diags.push_back(plain(Severity::kInternal, "unexpected failure"));
  }
  if (!out.is_object()) out = json::object();
  bool ok = true;
  json list = json::array();
  for (const auto& d : diags) {
    ok = ok && (d.severity == Severity::kWarning || d.severity == Severity::kNote);
    list.push_back(diagnostic_json(d));
  }
  out["ok"] = ok;
  out["diagnostics"] = list;
  out["version"] = MICROTIR_VERSION;
  out["timing"] = table.to_json();
  return out;
}

}  // namespace

json compile_request(const json& request) {
  Stopwatch clock;
  json out = respond_timed([&] { return compile_checked(request, clock); });
  out["timings_ms"] = clock.json_();
  return out;
}

json compile_details_request(const json& request) {
  return respond_timed([&] { return details_checked(request); });
}

namespace {

// `handle` on the parsed request, as JSON text; a malformed request is a diagnostic.
std::string respond_text(const std::string& request_json, json (*handle)(const json&)) {
  json response;
  try {
    json request = json::parse(request_json);
    response = handle(request);
  } catch (const json::exception& e) {  // parse_error, and out_of_range for numbers beyond a double
    response = {{"ok", false},
                {"diagnostics", json::array({diagnostic_json(plain(Severity::kError, std::string("request is not valid JSON: ") + e.what()))})}};
  }
  try {
    return response.dump(-1, ' ', false, json::error_handler_t::replace);
  } catch (...) {
    return R"({"ok":false,"diagnostics":[{"severity":"internal error","message":"cannot encode the response","line":0,"col":0}]})";
  }
}

}  // namespace

std::string compile_request_text(const std::string& request_json) { return respond_text(request_json, compile_request); }

std::string compile_details_text(const std::string& request_json) {
  return respond_text(request_json, compile_details_request);
}

}  // namespace mtir::wasm
