#include "cli/commands.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "analysis/well_formed.h"
#include "cli/io.h"
#include "cli/onnx_model.h"
#include "cli/tar.h"
#include "driver/build.h"
#include "codegen/c/interface.h"
#include "executor/aot.h"
#include "transform/plan_memory.h"
#include "frontend/graph.h"
#include "driver/pipeline.h"
#include "interp/interpreter.h"
#include "script/parser.h"
#include "script/printer.h"
#include "sim/host_sim.h"
#include "support/compare.h"
#include "support/npy.h"

namespace mtir::cli {
namespace {

using nlohmann::json;

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

bool is_graph_file(const std::string& path) {
  return (path.size() > 5 && path.compare(path.size() - 5, 5, ".json") == 0) || is_onnx_file(path);
}

struct LoadedModel {
  Graph graph;  // batch norm folded; holds the weights
  AotModule aot;
};

// A JSON graph with its weights (paths relative to the JSON file) or an ONNX model,
// batch norm folded, as an AOT module.
LoadedModel load_model(const std::string& file) {
  std::string dir = std::filesystem::path(file).parent_path().string();
  FileReader reader = [&](const std::string& relative) {
    return read_file(dir.empty() ? relative : dir + "/" + relative);
  };
  LoadedModel lm;
  lm.graph = fold_batch_norm(is_onnx_file(file) ? load_onnx_file(file)
                                                : load_graph_json(read_file(file), file, reader));
  lm.aot = build_aot(lm.graph);
  auto diags = check_well_formed(lm.aot.module);
  if (!diags.empty()) throw DiagnosticError(diags);
  return lm;
}

// Splits "NAME=VALUE"; a user error naming the option otherwise.
std::pair<std::string, std::string> split_assignment(const std::string& s, const char* option) {
  size_t eq = s.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == s.size())
    user_error({}, std::string("bad ") + option + " '" + s + "': expected NAME=VALUE");
  return {s.substr(0, eq), s.substr(eq + 1)};
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

// A work folder: the one the user named (kept), or a fresh temporary one (removed).
class TempDir {
 public:
  explicit TempDir(const std::string& keep) {
    if (!keep.empty()) {
      path_ = keep;
      return;
    }
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/microtir-XXXXXX";
    std::vector<char> buf(pattern.begin(), pattern.end());
    buf.push_back('\0');
    if (!mkdtemp(buf.data())) user_error({}, "cannot create a temporary folder under " + pattern);
    path_ = buf.data();
    owned_ = true;
  }
  ~TempDir() {
    std::error_code ec;
    if (owned_) std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  bool owned_ = false;
};

json array_json(const std::string& name, const NDArray& a) {
  json values = json::array();
  for (int64_t i = 0; i < a.num_elements(); ++i) {
    if (a.dtype.is_float()) values.push_back(a.get_float(i));
    else values.push_back(a.get_int(i));
  }
  return {{"name", name}, {"dtype", a.dtype.str()}, {"shape", a.shape}, {"values", values}};
}

}  // namespace

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

int run_run(const RunCommand& c) {
  // A model (JSON graph) runs through its AOT main with its weights; a TIR file runs
  // the function asked for.
  std::map<std::string, NDArray> preset;  // buffer name -> value (a model's weights)
  IRModule m;
  std::string fname;
  if (is_graph_file(c.file)) {
    LoadedModel lm = load_model(c.file);
    m = lm.aot.module;
    fname = lm.aot.main;
    PrimFunc main = m.lookup(fname);
    for (size_t i = 0; i < lm.aot.params.size(); ++i) {
      if (lm.aot.params[i].role == AotModule::Role::kConstant)
        preset[main->param_buffers[i]->name] = lm.graph.constants.at(lm.aot.params[i].name);
    }
  } else {
    m = load_module(c.file, true);
    fname = pick_function(m, c.func);
  }
  PrimFunc f = m.lookup(fname);

  std::map<std::string, std::string> input_files, scalar_texts;
  for (const auto& s : c.inputs) input_files.insert(split_assignment(s, "--input"));
  for (const auto& s : c.scalars) scalar_texts.insert(split_assignment(s, "--scalar"));

  // Scalars first: output shapes may depend on them.
  std::map<const VarNode*, int64_t> scalar_values;
  std::vector<InterpArg> args(f->params.size());
  for (size_t i = 0; i < f->params.size(); ++i) {
    const Var& p = f->params[i];
    if (f->param_buffers[i]) continue;
    auto it = scalar_texts.find(p->name);
    if (it == scalar_texts.end()) user_error({}, "scalar parameter '" + p->name + "' of '" + fname + "' needs --scalar " + p->name + "=VALUE");
    if (p->dtype.is_float()) {
      args[i] = parse_double(it->second, p->name);
    } else {
      int64_t v = parse_int(it->second, p->name);
      args[i] = v;
      scalar_values[p.get()] = v;
    }
    scalar_texts.erase(it);
  }
  if (!scalar_texts.empty()) user_error({}, "'" + fname + "' has no scalar parameter '" + scalar_texts.begin()->first + "'");

  std::vector<NDArray> arrays(f->params.size());
  std::vector<size_t> outputs;
  for (size_t i = 0; i < f->params.size(); ++i) {
    const Buffer& b = f->param_buffers[i];
    if (!b) continue;
    auto it = input_files.find(b->name);
    if (auto pre = preset.find(b->name); pre != preset.end()) {
      arrays[i] = pre->second;
    } else if (it != input_files.end()) {
      arrays[i] = read_npy(read_file(it->second), it->second);
      input_files.erase(it);
    } else {
      std::vector<int64_t> shape;
      for (const auto& e : b->shape) shape.push_back(dim_value(e, scalar_values, b->name));
      arrays[i] = NDArray::zeros(b->dtype, shape);
      outputs.push_back(i);
    }
    args[i] = &arrays[i];
  }
  if (!input_files.empty()) user_error({}, "'" + fname + "' has no buffer parameter '" + input_files.begin()->first + "'");

  // The host build runs on copies of the inputs; the interpreter is the reference.
  std::vector<NDArray> reference;
  if (!c.target.empty()) {
    if (c.target != "host") user_error({}, "unknown --target '" + c.target + "' for run; use --target host");
    reference = arrays;
  }
  interpret(m, fname, args);
  json comparisons = json::array();
  bool all_match = true;
  if (!c.target.empty()) {
    std::vector<InterpArg> host_args = args;
    for (size_t i = 0; i < f->params.size(); ++i)
      if (f->param_buffers[i]) host_args[i] = &reference[i];
    Target target = parse_target(c.unpacked_api ? "c -unpacked-api=1" : "c");
    BuildResult built = build_c(m, target);
    TempDir work(c.keep_build_dir);
    sim::HostSimOptions options;
    options.work_dir = work.path();
    sim::run_on_host({&built, fname, f}, host_args, options);
    for (size_t i : outputs) {
      Difference d = compare_arrays(reference[i], arrays[i]);  // the artifact against the interpreter
      all_match = all_match && d.ok;
      comparisons.push_back({{"name", f->param_buffers[i]->name}, {"max_abs_diff", d.max_abs}, {"max_rel_diff", d.max_rel},
                             {"ok", d.ok}});
    }
    // Report what the artifact computed.
    for (size_t i : outputs) std::swap(arrays[i], reference[i]);
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
    for (size_t i : outputs) outs.push_back(array_json(f->param_buffers[i]->name, arrays[i]));
    json out = {{"ok", all_match}, {"function", fname}, {"outputs", outs}};
    if (!c.target.empty()) out["compare"] = comparisons;
    std::cout << out.dump(2) << "\n";
    return all_match ? 0 : 1;
  }
  for (size_t i : outputs) {
    const NDArray& a = arrays[i];
    std::cout << f->param_buffers[i]->name << ": " << a.dtype.str() << " " << shape_str(a.shape) << "\n";
    int64_t index = 0;
    format_array(std::cout, a, 0, &index, c.print_limit);
    std::cout << "\n";
  }
  if (!c.target.empty()) {
    std::cout << "host C (" << (c.unpacked_api ? "unpacked" : "packed") << " API) vs interpreter:\n";
    for (const auto& cmp : comparisons) {
      char line[256];
      std::snprintf(line, sizeof line, "  %s: max abs diff %.3g, max rel diff %.3g  %s\n",
                    cmp["name"].get<std::string>().c_str(), cmp["max_abs_diff"].get<double>(),
                    cmp["max_rel_diff"].get<double>(), cmp["ok"].get<bool>() ? "ok" : "MISMATCH");
      std::cout << line;
    }
    if (!all_match) {
      std::cerr << "microtir: the host C artifact disagrees with the interpreter\n";
      return 1;
    }
  }
  if (is_graph_file(c.file)) {
    // Where the model's intermediate tensors live: the plan the artifact uses.
    PipelineResult planned = run_pipeline(m, {*find_pass("simplify"), *find_pass("plan_memory")});
    std::cout << memory_report(planned.module.lookup(fname));
  }
  return 0;
}

int run_compile(const CompileCommand& c) {
  if (!is_graph_file(c.file)) user_error({}, "'" + c.file + "' is not a model: compile takes a JSON graph (.json) or an ONNX model (.onnx)");
  LoadedModel lm = load_model(c.file);
  Target target = parse_target(c.target);
  if (target.interface_api != "c") {
    user_error({}, "compile writes the C interface: use --target \"c -interface-api=c -unpacked-api=1\" (the packed "
                   "interface of a whole model is not available yet)");
  }
  target.link_params = true;  // the C interface links the weights into the artifact (flash)
  BuildResult built = build_c(lm.aot.module, target);
  std::vector<SourceFileOut> files = built.sources;
  for (auto& f : c_interface(lm.aot, lm.graph, built.lowered.module)) files.push_back(std::move(f));
  json meta = {{"version", 1},
               {"model_name", lm.graph.name},
               {"target", target.str()},
               {"executor", "aot"},
               {"main", lm.aot.main},
               {"memory", {{"workspace_bytes", artifact_workspace_bytes(built.lowered.module, lm.aot.main)}}},
               {"files", json::array()}};
  for (const auto& f : files) meta["files"].push_back(f.path);
  files.push_back({"src/" + std::filesystem::path(c.file).filename().string(), read_file(c.file)});
  // The weights as .npy (they are also linked into the C sources), and the C runtime the
  // artifact builds against, so the folder is complete on its own.
  for (const auto& [name, array] : lm.graph.constants) files.push_back({"parameters/" + name + ".npy", write_npy(array)});
  const std::filesystem::path crt = sim::default_crt_dir();
  for (const char* part : {"include", "src", "ports"}) {
    for (const auto& e : std::filesystem::recursive_directory_iterator(crt / part)) {
      if (!e.is_regular_file()) continue;
      files.push_back({"runtime/" + std::filesystem::relative(e.path(), crt).string(), read_file(e.path().string())});
    }
  }
  files.push_back({"metadata.json", meta.dump(2) + "\n"});
  OutputSet out;
  const std::string& o = c.output_dir;
  if (o.size() > 4 && o.compare(o.size() - 4, 4, ".tar") == 0) {
    // One archive, written atomically like any other output.
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
  if (c.json) {
    std::cout << json{{"ok", true}, {"metadata", meta}}.dump(2) << "\n";
    return 0;
  }
  for (const auto& f : files) std::cout << "wrote " << c.output_dir << ":" << f.path << "\n";
  return 0;
}

int run_build(const BuildCommand& c) {
  IRModule m = is_graph_file(c.file) ? load_model(c.file).aot.module : load_module(c.file, true);
  Target target = parse_target(c.target);
  if (c.unpacked_api >= 0) target.unpacked_api = c.unpacked_api != 0;
  BuildResult built = build_c(m, target);
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
    std::cout << json{{"ok", true}, {"target", target.str()}, {"files", list}, {"functions", fns}}.dump(2) << "\n";
    return 0;
  }
  for (const auto& src : built.sources) std::cout << "wrote " << c.output_dir << "/" << src.path << "\n";
  return 0;
}

std::string pass_list() {
  std::string s;
  for (const auto& p : all_passes()) s += p.name + "\n";
  return s;
}

int run_passes(const PassesCommand& c) {
  IRModule m = is_graph_file(c.file) ? load_model(c.file).aot.module : load_module(c.file, false);
  std::vector<Pass> passes;
  if (c.passes.empty()) {
    passes = lowering_pipeline(parse_target(c.target).unpacked_api);
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
