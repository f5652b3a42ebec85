// Shared by the qemu tests: a scratch folder per test, and a model compiled by the CLI
// with its reference outputs from the interpreter on the artifact's own graph (what
// `microtir run model.tar` compares against).
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "artifact/mlf.h"
#include "interp/interpreter.h"
#include "sim/artifact_runner.h"
#include "sim/process.h"

namespace mtir::qemu_test {

namespace fs = std::filesystem;

// The static stack bound of a C-interface run holds: what main calls, plus main's frame
// (the painted high-water is counted from inside it), is never below the measurement.
inline void expect_stack_bound_holds(const sim::TargetReport& r, const std::string& what) {
  if (r.stack_bounds.entry.empty()) return;  // no GCC call graph (wasm32)
  ASSERT_TRUE(r.stack_bounds.run.bounded) << what << ": " << r.stack_bounds.run.reason;
  ASSERT_GE(r.stack_bounds.main_frame_bytes, 0) << what;
  EXPECT_FALSE(r.stack_bounds.functions.empty()) << what << ": no bounds for the generated functions";
  if (r.stack_bytes >= 0) {
    EXPECT_GE(r.stack_bounds.run.bytes + r.stack_bounds.main_frame_bytes, r.stack_bytes)
        << what << ": the static bound of " << r.stack_bounds.entry << " is below the measured high-water";
  }
}

// A fresh folder per test (ctest runs them in parallel); kept when the test failed.
class ScratchDir {
 public:
  ScratchDir() {
    std::string pattern = (fs::temp_directory_path() / "microtir-qemu-XXXXXX").string();
    std::vector<char> buf(pattern.begin(), pattern.end());
    buf.push_back('\0');
    if (!mkdtemp(buf.data())) throw std::runtime_error("mkdtemp failed");
    path_ = buf.data();
  }
  ~ScratchDir() {
    std::error_code ec;
    if (!::testing::Test::HasFailure()) fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

struct CompiledModel {
  sim::ArtifactInfo info;
  std::vector<sim::ArtifactTensor> inputs, outputs;
  std::vector<std::vector<NDArray>> samples;  // [run][input]
  std::vector<std::vector<NDArray>> want;     // [run][output], from the interpreter
};

// Input `i` of run `s`.
using InputMaker = std::function<NDArray(const sim::ArtifactTensor& input, int s)>;

// `microtir compile model_json -o dir/mlf`, then the interpreter on the artifact's graph
// for `runs` input sets.
// `extra` are more compile arguments, e.g. {"--target", "llvm -mtriple=..."}.
inline CompiledModel compile_model(const fs::path& model_json, const fs::path& dir, int runs, const InputMaker& make,
                                   const std::vector<std::string>& extra = {}) {
  const fs::path out = dir / "mlf";
  std::vector<std::string> cmd = {MICROTIR_CLI, "compile", model_json.string(), "-o", out.string()};
  cmd.insert(cmd.end(), extra.begin(), extra.end());
  int rc = sim::run_process(cmd, dir / "compile.log");
  if (rc != 0) throw std::runtime_error("microtir compile failed: " + sim::read_text(dir / "compile.log"));
  CompiledModel r;
  r.info = sim::read_artifact_info(out.string());
  const fs::path src = fs::path(r.info.graph_file).parent_path();
  FileReader reader = [&](const std::string& rel) { return sim::read_text(src / rel); };
  LoadedModel model = load_model(sim::read_text(r.info.graph_file), r.info.graph_file, reader);
  for (const auto& p : model.aot.params) {
    if (p.role == AotModule::Role::kInput) r.inputs.push_back({p.name, p.type.dtype, p.type.shape, p.c_name});
    if (p.role == AotModule::Role::kOutput) r.outputs.push_back({p.name, p.type.dtype, p.type.shape, p.c_name});
  }
  for (int s = 0; s < runs; ++s) {
    std::vector<NDArray> arrays, sample, want;
    size_t next_input = 0;
    for (const auto& p : model.aot.params) {
      NDArray a = NDArray::zeros(p.type.dtype, p.type.shape);
      if (p.role == AotModule::Role::kConstant) a = model.graph.constants.at(p.name);
      if (p.role == AotModule::Role::kInput) {
        a = make(r.inputs[next_input++], s);
        sample.push_back(a);
      }
      arrays.push_back(std::move(a));
    }
    std::vector<InterpArg> args;
    for (auto& a : arrays) args.push_back(&a);
    interpret(model.aot.module, model.aot.main, args);
    for (size_t i = 0; i < model.aot.params.size(); ++i)
      if (model.aot.params[i].role == AotModule::Role::kOutput) want.push_back(arrays[i]);
    r.samples.push_back(sample);
    r.want.push_back(want);
  }
  return r;
}

// gtest parameter names cannot hold '-'.
inline std::string param_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string n = info.param;
  for (char& c : n)
    if (c == '-' || c == '/') c = '_';
  return n;
}

}  // namespace mtir::qemu_test
