#include "cli/onnx_test_cmd.h"

#include "support/diagnostic.h"

#ifndef MICROTIR_HAVE_ONNX
namespace mtir::cli {
int run_onnx_test(const OnnxTestCommand&) {
  user_error({}, "this microtir was built without the ONNX frontend (MICROTIR_ONNX=OFF): onnx-test is not available");
}
}  // namespace mtir::cli
#else

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "cli/io.h"
#include "driver/build.h"
#include "executor/aot.h"
#include "frontend/onnx.h"
#include "interp/interpreter.h"
#include "sim/host_sim.h"
#include "support/compare.h"

namespace mtir::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const double kRtol = 1e-3, kAtol = 1e-7;

struct Outcome {
  std::string status;  // pass, fail, unsupported, error
  std::string reason;
};

// A refusal of something we do not implement, as opposed to a bug.
bool is_refusal(const std::string& m) {
  return m.rfind("unsupported: ", 0) == 0 || m.find("not supported") != std::string::npos ||
         m.find("only float32") != std::string::npos;
}

std::string first_message(const DiagnosticError& e) {
  return e.diagnostics().empty() ? "error" : e.diagnostics()[0].message;
}

std::vector<fs::path> sorted_matching(const fs::path& dir, const std::string& prefix, const std::string& suffix) {
  std::vector<fs::path> v;
  if (!fs::is_directory(dir)) return v;
  for (const auto& e : fs::directory_iterator(dir)) {
    std::string n = e.path().filename().string();
    if (n.rfind(prefix, 0) == 0 && n.size() >= suffix.size() && n.compare(n.size() - suffix.size(), suffix.size(), suffix) == 0)
      v.push_back(e.path());
  }
  // input_10 after input_9: by the number after the prefix.
  std::sort(v.begin(), v.end(), [&](const fs::path& a, const fs::path& b) {
    return std::atoi(a.filename().string().c_str() + prefix.size()) <
           std::atoi(b.filename().string().c_str() + prefix.size());
  });
  return v;
}

std::string make_temp_dir() {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/microtir-onnx-XXXXXX";
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  if (!mkdtemp(buf.data())) user_error({}, "cannot create a temporary folder under " + pattern);
  return buf.data();
}

// Compares with the ONNX backend's rule |got - want| <= atol + rtol * |want|.
std::string compare(const NDArray& got, const NDArray& want, const std::string& name) {
  if (got.shape != want.shape) {
    json g = got.shape, w = want.shape;
    return "output '" + name + "' has shape " + g.dump() + ", expected " + w.dump();
  }
  for (int64_t i = 0; i < want.num_elements(); ++i) {
    double a = got.get_float(i), b = want.get_float(i);
    if (std::isnan(a) && std::isnan(b)) continue;
    if (a == b) continue;  // infinities
    if (!(std::fabs(a - b) <= kAtol + kRtol * std::fabs(b))) {
      char buf[200];
      std::snprintf(buf, sizeof buf, "output '%s' element %lld is %.9g, expected %.9g", name.c_str(),
                    static_cast<long long>(i), a, b);
      return buf;
    }
  }
  return "";
}

// One data set: import with the set's inputs known (for inputs that must be
// compile-time values), compile, run on the host, compare.
Outcome run_data_set(const OnnxModel& model, const std::string& model_path, const fs::path& set_dir) {
  std::vector<std::string> input_names, output_names;
  std::set<std::string> inits;
  for (const auto& t : model.graph.initializer()) inits.insert(t.name());
  for (const auto& in : model.graph.input()) {
    if (inits.count(in.name())) continue;
    // The data of sequence and optional inputs are not TensorProtos.
    if (!in.is_tensor_)
      return {"unsupported", "unsupported: model input '" + in.name() + "' is not a tensor (a sequence, map or optional)"};
    input_names.push_back(in.name());
  }
  for (const auto& o : model.graph.output()) output_names.push_back(o.name());
  auto in_files = sorted_matching(set_dir, "input_", ".pb");
  auto out_files = sorted_matching(set_dir, "output_", ".pb");
  if (in_files.size() > input_names.size() || out_files.size() != output_names.size())
    return {"error", set_dir.filename().string() + ": the data set does not match the model's inputs/outputs"};
  OnnxOptions options;
  for (size_t k = 0; k < in_files.size(); ++k)
    options.known_inputs[input_names[k]] = load_onnx_tensor(read_file(in_files[k].string()), in_files[k].string());
  Graph g = fold_batch_norm(convert_onnx(model, model_path, options));
  std::vector<NDArray> expected;
  for (const auto& f : out_files) {
    expected.push_back(load_onnx_tensor(read_file(f.string()), f.string()));
    DataType dt = expected.back().dtype;
    if (dt != DataType::Float(32) && dt != DataType::Float(64) && !dt.is_integer() && !dt.is_bool())
      return {"unsupported", "unsupported: expected output of dtype " + expected.back().dtype.str()};
  }
  AotModule aot = build_aot(g);
  BuildResult built = build_c(aot.module, parse_target("c -unpacked-api=0"));  // the host harness calls main packed
  PrimFunc main = aot.module.lookup(aot.main);
  std::vector<NDArray> arrays(aot.params.size());
  std::vector<InterpArg> args(main->params.size());
  for (size_t i = 0; i < aot.params.size(); ++i) {
    const auto& p = aot.params[i];
    if (p.role == AotModule::Role::kInput) arrays[i] = options.known_inputs.at(p.name);
    else if (p.role == AotModule::Role::kConstant) arrays[i] = g.constants.at(p.name);
    else arrays[i] = NDArray::zeros(p.type.dtype, p.type.shape);
    args[i] = &arrays[i];
  }
  MTIR_ICHECK(aot.devices.empty(), "an ONNX model placed on a device");
  // The reference interpreter runs the same module on copies: the artifact must agree.
  std::vector<NDArray> reference = arrays;
  std::vector<InterpArg> ref_args(main->params.size());
  for (size_t i = 0; i < reference.size(); ++i) ref_args[i] = &reference[i];
  interpret(aot.module, aot.main, ref_args);
  std::string work = make_temp_dir();
  sim::HostSimOptions sim_options;
  sim_options.work_dir = work;
  sim_options.extra_cflags = {"-O0"};  // many small programs: compile time dominates
  try {
    sim::run_on_host({&built, aot.main, main}, args, sim_options);
  } catch (...) {
    std::error_code ec;
    fs::remove_all(work, ec);
    throw;
  }
  std::error_code ec;
  fs::remove_all(work, ec);
  for (size_t k = 0; k < g.outputs.size(); ++k) {
    for (size_t i = 0; i < aot.params.size(); ++i) {
      if (aot.params[i].role != AotModule::Role::kOutput || aot.params[i].name != g.outputs[k]) continue;
      std::string diff = compare(arrays[i], expected[k], output_names[k]);
      if (!diff.empty()) return {"fail", diff};
      if (!compare_arrays(arrays[i], reference[i], 1e-5).ok)
        return {"fail", "output '" + output_names[k] + "': the host C artifact and the interpreter disagree"};
    }
  }
  return {"pass", ""};
}

json run_test(const fs::path& dir) {
  json r = {{"name", dir.filename().string()}};
  auto start = std::chrono::steady_clock::now();
  Outcome out;
  std::vector<std::string> ops;
  try {
    std::string model_path = (dir / "model.onnx").string();
    std::string bytes = read_file(model_path);
    OnnxModel model = read_onnx_model(bytes, model_path);
    for (const auto& n : model.graph.node())
      if (std::find(ops.begin(), ops.end(), n.op_type()) == ops.end()) ops.push_back(n.op_type());
    auto sets = sorted_matching(dir, "test_data_set_", "");
    if (sets.empty()) user_error({}, "no test_data_set_* folder");
    out = {"pass", ""};
    for (const auto& s : sets) {
      out = run_data_set(model, model_path, s);
      if (out.status != "pass") break;
    }
  } catch (const DiagnosticError& e) {
    std::string m = first_message(e);
    out = {!e.internal() && is_refusal(m) ? "unsupported" : "error", m};
  } catch (const std::exception& e) {
    out = {"error", std::string("exception: ") + e.what()};
  }
  std::string key;
  for (size_t k = 0; k < ops.size() && k < 3; ++k) key += (k ? "+" : "") + ops[k];
  if (ops.size() > 3) key += "+...";
  r["op"] = key.empty() ? "(none)" : key;
  r["status"] = out.status;
  if (!out.reason.empty()) r["reason"] = out.reason;
  r["seconds"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

// In the supported-op subset: every op of the model is one the frontend maps. Decided
// here, not by the worker, so a test whose worker crashed still counts.
bool uses_only_supported_ops(const fs::path& dir) {
  OnnxModel model;
  try {
    model = read_onnx_model(read_file((dir / "model.onnx").string()), "model.onnx");
  } catch (const DiagnosticError&) {
    return false;
  }
  if (model.graph.node_size() == 0) return false;
  const auto& listed = supported_onnx_ops();
  return std::all_of(model.graph.node().begin(), model.graph.node().end(), [&](const OnnxNode& n) {
    return std::binary_search(listed.begin(), listed.end(), n.op_type());
  });
}

std::vector<fs::path> find_tests(const std::string& dir, const std::string& filter) {
  std::vector<fs::path> tests;
  if (fs::exists(fs::path(dir) / "model.onnx")) return {fs::path(dir)};
  if (!fs::is_directory(dir)) user_error({}, "'" + dir + "' is not a folder of ONNX node tests");
  for (const auto& e : fs::directory_iterator(dir)) {
    if (!fs::exists(e.path() / "model.onnx")) continue;
    if (!filter.empty() && e.path().filename().string().find(filter) == std::string::npos) continue;
    tests.push_back(e.path());
  }
  std::sort(tests.begin(), tests.end());
  if (tests.empty()) user_error({}, "no test folders (with model.onnx) in '" + dir + "'");
  return tests;
}

// Runs the tests in `jobs` forked workers (round robin); each writes one JSON line per
// test to its own file.
std::vector<json> run_parallel(const std::vector<fs::path>& tests, int jobs) {
  std::string tmp = make_temp_dir();
  std::vector<pid_t> pids;
  std::cout.flush();
  std::cerr.flush();
  for (int w = 0; w < jobs; ++w) {
    pid_t pid = fork();
    if (pid < 0) user_error({}, "cannot start a worker process");
    if (pid == 0) {
      std::ofstream out(tmp + "/" + std::to_string(w) + ".jsonl");
      for (size_t i = static_cast<size_t>(w); i < tests.size(); i += static_cast<size_t>(jobs)) {
        json r = run_test(tests[i]);
        out << r.dump() << "\n" << std::flush;
        std::cerr << "[" << (i + 1) << "/" << tests.size() << "] " << r["name"].get<std::string>() << ": "
                  << r["status"].get<std::string>() << "\n";
      }
      out.close();
      std::_Exit(0);
    }
    pids.push_back(pid);
  }
  for (pid_t p : pids) {
    int st = 0;
    waitpid(p, &st, 0);
  }
  std::map<std::string, json> by_name;
  for (int w = 0; w < jobs; ++w) {
    std::ifstream in(tmp + "/" + std::to_string(w) + ".jsonl");
    std::string line;
    while (std::getline(in, line))
      if (!line.empty()) {
        json r = json::parse(line);
        by_name[r["name"].get<std::string>()] = r;
      }
  }
  std::error_code ec;
  fs::remove_all(tmp, ec);
  std::vector<json> results;
  for (const auto& t : tests) {
    std::string n = t.filename().string();
    auto it = by_name.find(n);
    // A worker that died (a crash in the compiler) leaves its tests unreported: errors.
    results.push_back(it != by_name.end() ? it->second
                                          : json{{"name", n}, {"op", "?"}, {"status", "error"},
                                                 {"reason", "the worker process died (a crash)"}});
  }
  return results;
}


// --floor FILE: the pass counts a run may not drop below.
struct PassFloor {
  int pass = -1, supported_pass = -1;
  double supported_percent = -1;
};

PassFloor read_floor(const std::string& file) {
  PassFloor floor;
  if (file.empty()) return floor;
  try {
    const json f = json::parse(read_file(file));
    floor.pass = f.at("pass").get<int>();
    floor.supported_pass = f.value("supported_pass", -1);
    floor.supported_percent = f.value("supported_percent", -1.0);
  } catch (const json::exception& e) {
    user_error({}, "'" + file + "' must be a JSON object with an integer \"pass\": " + e.what());
  }
  return floor;
}

// The results counted by status, per operator, in all and over the tests that use only
// supported operators.
struct Tally {
  std::map<std::string, std::map<std::string, int>> per_op;
  std::map<std::string, int> totals, subset;
  int subset_total = 0;
  double subset_percent = 0;
};

Tally tally(const std::vector<json>& results) {
  Tally t;
  for (const auto& r : results) {
    t.per_op[r["op"].get<std::string>()][r["status"].get<std::string>()]++;
    t.totals[r["status"].get<std::string>()]++;
    if (r["supported_ops"].get<bool>()) t.subset[r["status"].get<std::string>()]++;
  }
  t.subset_total = t.subset["pass"] + t.subset["fail"] + t.subset["unsupported"] + t.subset["error"];
  t.subset_percent = t.subset_total ? 100.0 * t.subset["pass"] / t.subset_total : 0.0;
  return t;
}

// The floor: the pass count may only rise; no error, no fail.
std::vector<std::string> floor_problems(const PassFloor& floor, Tally& t) {
  std::vector<std::string> problems;
  if (floor.pass < 0) return problems;
  if (t.totals["pass"] < floor.pass)
    problems.push_back("the pass count dropped to " + std::to_string(t.totals["pass"]) + " (floor " +
                       std::to_string(floor.pass) + ")");
  if (t.subset["pass"] < floor.supported_pass)
    problems.push_back("the supported-op subset's pass count dropped to " + std::to_string(t.subset["pass"]) +
                       " (floor " + std::to_string(floor.supported_pass) + ")");
  if (t.subset_percent + 1e-9 < floor.supported_percent)
    problems.push_back("the supported-op subset passes " + std::to_string(t.subset_percent) + " % (floor " +
                       std::to_string(floor.supported_percent) + " %)");
  if (t.totals["error"] > 0) problems.push_back(std::to_string(t.totals["error"]) + " test(s) classified error");
  if (t.totals["fail"] > 0) problems.push_back(std::to_string(t.totals["fail"]) + " test(s) failed");
  return problems;
}

const std::vector<std::string> kStatuses = {"pass", "fail", "unsupported", "error"};

void print_json(const std::vector<json>& results, Tally& t, double seconds, const std::vector<std::string>& problems) {
  json ops = json::object();
  for (const auto& [op, counts] : t.per_op) ops[op] = counts;
  json tot = json::object();
  for (const auto& k : kStatuses) tot[k] = t.totals[k];
  tot["total"] = results.size();
  json sub = json::object();
  for (const auto& k : kStatuses) sub[k] = t.subset[k];
  sub["total"] = t.subset_total;
  sub["percent"] = t.subset_percent;
  std::cout << json{{"ok", problems.empty()}, {"totals", tot}, {"supported_ops", sub}, {"ops", ops}, {"tests", results},
                    {"seconds", seconds}, {"floor_problems", problems}}
                   .dump(1)
            << "\n";
}

void print_table(const OnnxTestCommand& c, const std::vector<json>& results, Tally& t, double seconds, int jobs) {
  if (c.list_tests)
    for (const auto& r : results)
      std::cout << r["name"].get<std::string>() << "  " << r["status"].get<std::string>()
                << (r.contains("reason") ? "  " + r["reason"].get<std::string>() : "") << "\n";
  std::printf("%-40s %6s %6s %12s %6s\n", "op", "pass", "fail", "unsupported", "error");
  for (const auto& entry : t.per_op) {
    const auto& op = entry.first;
    const auto& counts = entry.second;  // a lambda cannot capture a structured binding before C++20 (clang)
    auto get = [&](const std::string& k) {
      auto it = counts.find(k);
      return it == counts.end() ? 0 : it->second;
    };
    std::printf("%-40s %6d %6d %12d %6d\n", op.c_str(), get("pass"), get("fail"), get("unsupported"), get("error"));
  }
  std::printf("%-40s %6d %6d %12d %6d\n", "total", t.totals["pass"], t.totals["fail"], t.totals["unsupported"],
              t.totals["error"]);
  std::printf("%-40s %6d %6d %12d %6d\n", "supported-op subset", t.subset["pass"], t.subset["fail"],
              t.subset["unsupported"], t.subset["error"]);
  std::printf("supported-op subset: %d/%d pass (%.1f %%)\n", t.subset["pass"], t.subset_total, t.subset_percent);
  std::printf("%zu tests in %.1f s on %d worker(s)\n", results.size(), seconds, jobs);
  for (const auto& r : results)
    if (r["status"] == "fail" || r["status"] == "error")
      std::printf("%s %s: %s\n", r["status"].get<std::string>().c_str(), r["name"].get<std::string>().c_str(),
                  r.value("reason", "").c_str());
}

}  // namespace

int run_onnx_test(const OnnxTestCommand& c) {
  auto tests = find_tests(c.dir, c.filter);
  const PassFloor floor = read_floor(c.floor_file);
  int jobs = std::max(1, std::min<int>(c.jobs, static_cast<int>(tests.size())));
  auto start = std::chrono::steady_clock::now();
  std::vector<json> results = run_parallel(tests, jobs);
  for (size_t i = 0; i < tests.size(); ++i) results[i]["supported_ops"] = uses_only_supported_ops(tests[i]);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  Tally t = tally(results);
  const std::vector<std::string> problems = floor_problems(floor, t);
  if (c.json)
    print_json(results, t, seconds, problems);
  else
    print_table(c, results, t, seconds, jobs);
  std::cout.flush();
  for (const auto& p : problems) std::cerr << "microtir onnx-test: " << p << "\n";
  if (floor.pass >= 0 && problems.empty() && t.totals["pass"] > floor.pass)
    std::cerr << "microtir onnx-test: " << t.totals["pass"] << " pass, above the floor " << floor.pass
              << "; raise it in " << c.floor_file << "\n";
  return problems.empty() ? 0 : 1;
}

}  // namespace mtir::cli

#endif  // MICROTIR_HAVE_ONNX
