// Every case a test process ran through the interpreter, replayed at its end through the
// generated code: all cases in one host C build (a driver function calls each in turn,
// since one build per case would take minutes) and, with Binaryen, in one wasm module
// (each case called from node: a wasm function takes at most 1000 parameters in V8).
// Each output must equal the interpreter's. ctest runs each test in its own process, so
// each test checks its own cases.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cctype>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "analysis/well_formed.h"
#include "driver/build.h"
#include "ir/structural_equal.h"
#include "ops/ops.h"
#include "script/parser.h"
#include "script/printer.h"
#include "sim/host_sim.h"
#include "sim/wasm_module_runner.h"
#include "support/compare.h"
#include "support/diagnostic.h"
#include "replay_mode.h"
#ifdef MICROTIR_HAVE_BINARYEN
#include "codegen/wasm/native/binaryen_native.h"
#endif

namespace mtir {
namespace backend_cases {

struct Case {
  std::string what;             // for messages
  IRModule module;              // the functions the case needs
  std::string entry;            // called with the arrays' buffers, in order
  std::vector<NDArray> arrays;  // inputs, then the interpreter's output
};

inline std::vector<Case>& all() {
  static std::vector<Case> cases;
  return cases;
}

// One kernel, renamed so that cases of the same op do not collide. A kernel already
// recorded with the same arrays is not recorded again: schedule sweeps produce many
// identical kernels (a switch that does not apply to the case), and the C compiler's time
// on the one file of every case is most of such a test's time.
inline void record_kernel(const std::string& what, const PrimFunc& kernel, const std::vector<NDArray>& arrays) {
  static std::set<std::string> seen;
  IRModule alone;
  alone.set("kernel", kernel);
  std::string key = print_module(alone);
  for (const auto& a : arrays) key += "\n" + a.dtype.str() + std::string(a.data.begin(), a.data.end());
  if (!seen.insert(std::move(key)).second) return;
  const std::string name = "case" + std::to_string(all().size());
  auto renamed = std::make_shared<PrimFuncNode>(*kernel);
  renamed->attrs["global_symbol"] = name;
  IRModule m;
  m.set(name, renamed);
  all().push_back({what, m, name, arrays});
}

// `text` with every whole-word `name` (not inside a longer identifier: q1 in tvmgen_q1_y,
// not in q10) replaced by "@".
inline std::string replace_word(const std::string& text, const std::string& name) {
  auto part_of_name = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  std::string out;
  size_t at = 0;
  for (size_t hit = text.find(name); hit != std::string::npos; hit = text.find(name, hit + 1)) {
    const size_t end = hit + name.size();
    if ((hit > 0 && part_of_name(text[hit - 1])) || (end < text.size() && part_of_name(text[end]))) continue;
    out += text.substr(at, hit - at) + "@";
    at = end;
  }
  return out + text.substr(at);
}

// A module whose function names are unique across the process (an AOT module per case).
// An AOT module (entry tvmgen_<graph>___tvm_main__) equal to one already recorded but for
// its graph's name, with the same arrays, is not recorded again: schedule sweeps give
// many (a switch that does not apply to the case: 253 of QConv.DepthwiseAndGrouped's 340),
// and compiling their C and wasm was most of such a test's replay.
inline void record_module(const std::string& what, const IRModule& m, const std::string& entry,
                          const std::vector<NDArray>& arrays) {
  static std::set<std::string> seen;
  std::string key = print_module(m);
  const std::string prefix = "tvmgen_", suffix = "___tvm_main__";
  const size_t end = entry.rfind(suffix);
  if (entry.compare(0, prefix.size(), prefix) == 0 && end != std::string::npos && end > prefix.size())
    key = replace_word(key, entry.substr(prefix.size(), end - prefix.size()));
  for (const auto& a : arrays) key += "\n" + a.dtype.str() + std::string(a.data.begin(), a.data.end());
  if (!seen.insert(std::move(key)).second) return;
  all().push_back({what, m, entry, arrays});
}

// Builds `op` for these input types as "<op>_kernel", checks that the PrimFunc is well
// formed and survives a print/parse round trip, and returns it with its output type.
inline PrimFunc build_checked_kernel(const OpDef& def, const std::vector<TensorType>& types, const nlohmann::json& attrs,
                                     TensorType* out) {
  *out = def.infer(types, attrs);
  PrimFunc f = def.build(def.name + "_kernel", types, *out, attrs);
  IRModule m;
  m.set(def.name + "_kernel", f);
  auto diags = check_well_formed(m);
  EXPECT_TRUE(diags.empty()) << render_all(diags) << "\n" << print_module(m);
  std::string text = print_module(m);
  ParseResult back = parse_module(text, "printed.tir");
  EXPECT_TRUE(back.ok()) << render_all(back.diagnostics) << "\n" << text;
  if (back.ok()) {
    EXPECT_TRUE(structural_equal(m, *back.module)) << structural_diff(m, *back.module) << "\n" << text;
  }
  return f;
}

// In the sanitizer build (artifacts not sanitized) the replay generates every case's C
// and wasm, which is the compiler's code the sanitizers are there to check, but neither
// compiles nor runs them: those are the same bytes the normal build compiles and runs
// (generate_only(), replay_mode.h).

struct Options {
  std::string tag;                                           // names the temporary folders
  std::vector<std::string> c_targets = {"c -unpacked-api=1"};  // each builds and runs every case
  bool wasm = true;
  double tolerance = 0;  // 0: bit for bit
};

inline bool same(const NDArray& got, const NDArray& want, double tolerance) {
  if (tolerance == 0) return got.dtype == want.dtype && got.shape == want.shape && got.data == want.data;
  return compare_arrays(got, want, tolerance).ok;
}

class Environment : public ::testing::Environment {
 public:
  explicit Environment(Options options) : options_(std::move(options)) {}

  void TearDown() override {
    auto& cases = all();
    if (cases.empty()) return;
    IRModule m;
    auto driver = std::make_shared<PrimFuncNode>();
    std::vector<Stmt> calls;
    std::vector<NDArray> arrays;  // the driver's arguments: inputs as recorded, outputs zeroed
    const DataType i32 = DataType::Int(32);
    for (const auto& c : cases) {
      for (const auto& [name, f] : c.module.functions) m.set(name, f);
      std::vector<Expr> args = {StringImm(c.entry)};
      for (size_t j = 0; j < c.arrays.size(); ++j) {
        const NDArray& a = c.arrays[j];
        std::vector<Expr> shape, zeros;
        for (int64_t d : a.shape) shape.push_back(IntImm(i32, d)), zeros.push_back(IntImm(i32, 0));
        Buffer b = MakeBuffer(c.entry + "_" + std::to_string(j), a.dtype, shape);
        driver->params.push_back(MakeVar(b->name, DataType::Handle()));
        driver->param_buffers.push_back(b);
        std::vector<Expr> region = {BufferLoad(b, zeros)};
        region.insert(region.end(), shape.begin(), shape.end());
        args.push_back(Call(DataType::Handle(), "tir_region", region));
        arrays.push_back(j + 1 == c.arrays.size() ? NDArray::zeros(a.dtype, a.shape) : a);
      }
      calls.push_back(Evaluate(Call(i32, "call_tir", std::move(args))));
    }
    IRModule without_driver = m;
    driver->body = SeqStmt(calls);
    driver->attrs["global_symbol"] = std::string("all_cases");
    m.set("all_cases", driver);
    const std::string work =
        (std::filesystem::temp_directory_path() / ("microtir-" + options_.tag + "-" + std::to_string(getpid()))).string();
    for (const auto& target : options_.c_targets) {
      std::vector<NDArray> host = arrays;
      std::vector<InterpArg> args;
      for (auto& a : host) args.push_back(&a);
      sim::HostSimOptions sim_options;
      sim_options.work_dir = work;
      // -O1: optimized, so code that relies on undefined behaviour still shows, at about half
      // of -O2's compile time on a file of a hundred kernels (the e2e builds use -O2).
      sim_options.extra_cflags = {"-O1"};
      try {
        BuildResult built = build_c(m, parse_target(target));
        if (generate_only()) continue;
        sim::run_on_host({&built, "all_cases", driver}, args, sim_options);
      } catch (const DiagnosticError& e) {
        ADD_FAILURE() << target << ": " << render_all(e.diagnostics());
      }
      std::filesystem::remove_all(work);
      check(host, "host C (" + target + ")");
    }
#ifdef MICROTIR_HAVE_BINARYEN
    if (options_.wasm) {
      std::vector<NDArray> wasm_arrays = arrays;
      std::vector<sim::WasmCall> wasm_calls;
      size_t at = 0;
      for (const auto& c : cases) {
        sim::WasmCall call{c.entry, {}};
        for (size_t j = 0; j < c.arrays.size(); ++j) call.buffers.push_back(&wasm_arrays[at++]);
        wasm_calls.push_back(std::move(call));
      }
      const std::string wasm_dir = work + "-wasm";
      try {
        BuildResult built = build_wasm(without_driver, parse_target("wasm"));
        std::filesystem::create_directories(wasm_dir);
        const std::string module = wasm_dir + "/cases.wasm";
        std::ofstream(module, std::ios::binary)
            << binaryen_native::assemble(built.sources.at(0).text, "O2", "the " + options_.tag + " cases").binary;
        if (!generate_only()) sim::run_wasm_calls(module, wasm_calls, wasm_dir);
      } catch (const DiagnosticError& e) {
        ADD_FAILURE() << "wasm: " << render_all(e.diagnostics());
      }
      std::filesystem::remove_all(wasm_dir);
      if (!generate_only()) check(wasm_arrays, "wasm");
    }
#endif
    cases.clear();
  }

 private:
  // `got` holds every case's arrays in order; each case's output is its last.
  void check(const std::vector<NDArray>& got, const std::string& backend) const {
    size_t k = 0;
    for (const auto& c : all()) {
      k += c.arrays.size();
      EXPECT_TRUE(same(got[k - 1], c.arrays.back(), options_.tolerance))
          << backend << " differs from the interpreter for " << c.what;
    }
  }

  Options options_;
};

}  // namespace backend_cases
}  // namespace mtir
