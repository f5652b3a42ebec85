// The operator kernels one by one on Cortex-M4 and RV32 (QEMU): conv2d, depthwise
// conv2d, dense, max and average pooling, softmax. Each is a one-node model with
// inline pseudo-random weights, compiled by the CLI, run on the target on two inputs and
// compared with the interpreter (1e-5 relative).
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "support/compare.h"
#include "tests/qemu/qemu_helpers.h"

namespace mtir {
namespace {

using namespace qemu_test;
using nlohmann::json;

// Deterministic values in [-1, 1): a 32-bit LCG, the same on every machine.
struct Lcg {
  uint32_t state;
  double next() {
    state = state * 1664525u + 1013904223u;
    return static_cast<double>(state >> 8) / static_cast<double>(1u << 23) - 1.0;
  }
};

json constant(const std::string& name, const std::vector<int64_t>& shape, uint32_t seed) {
  Lcg lcg{seed};
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  json values = json::array();
  for (int64_t i = 0; i < n; ++i) values.push_back(static_cast<float>(lcg.next()));
  return {{"name", name}, {"shape", shape}, {"dtype", "float32"}, {"values", values}};
}

struct KernelCase {
  std::string name;
  std::vector<int64_t> input;  // the one input "x"
  json constants = json::array();
  json nodes = json::array();
  std::vector<std::string> outputs;
};

std::vector<KernelCase> kernel_cases() {
  std::vector<KernelCase> cases;
  cases.push_back({"conv2d", {1, 3, 10, 10},
                   json::array({constant("w", {8, 3, 3, 3}, 1), constant("b", {8}, 2)}),
                   json::array({{{"name", "y"}, {"op", "conv2d"}, {"inputs", {"x", "w", "b"}},
                                 {"attrs", {{"padding", {1, 1, 1, 1}}}}}}),
                   {"y"}});
  cases.push_back({"depthwise", {1, 8, 9, 9}, json::array({constant("w", {8, 1, 3, 3}, 3)}),
                   json::array({{{"name", "y"}, {"op", "conv2d"}, {"inputs", {"x", "w"}},
                                 {"attrs", {{"groups", 8}, {"strides", {2, 2}}, {"padding", {1, 1, 1, 1}}}}}}),
                   {"y"}});
  cases.push_back({"dense", {2, 64}, json::array({constant("w", {16, 64}, 4), constant("b", {16}, 5)}),
                   json::array({{{"name", "y"}, {"op", "dense"}, {"inputs", {"x", "w", "b"}}}}), {"y"}});
  cases.push_back({"pooling", {1, 4, 9, 9}, json::array(),
                   json::array({{{"name", "mx"}, {"op", "max_pool2d"}, {"inputs", {"x"}},
                                 {"attrs", {{"pool_size", {2, 2}}, {"strides", {2, 2}}}}},
                                {{"name", "avg"}, {"op", "avg_pool2d"}, {"inputs", {"x"}},
                                 {"attrs", {{"pool_size", {3, 3}}, {"strides", {2, 2}}, {"padding", {1, 1, 1, 1}}}}}}),
                   {"mx", "avg"}});
  cases.push_back({"softmax", {3, 10}, json::array(),
                   json::array({{{"name", "y"}, {"op", "softmax"}, {"inputs", {"x"}}}}), {"y"}});
  return cases;
}

class KernelOnTarget : public ::testing::TestWithParam<std::string> {};

TEST_P(KernelOnTarget, MatchesTheInterpreter) {
  const std::string param = GetParam();
  const std::string target = param.substr(0, param.find('/'));
  const std::string kernel = param.substr(param.find('/') + 1);
  KernelCase kc;
  for (const auto& c : kernel_cases())
    if (c.name == kernel) kc = c;
  ASSERT_EQ(kc.name, kernel);
  ScratchDir dir;
  json model = {{"format", "microtir-graph"},
                {"version", 1},
                {"name", kc.name},
                {"inputs", json::array({{{"name", "x"}, {"shape", kc.input}, {"dtype", "float32"}}})},
                {"constants", kc.constants},
                {"nodes", kc.nodes},
                {"outputs", kc.outputs}};
  const fs::path json_path = dir.path() / (kc.name + ".json");
  std::ofstream(json_path) << model.dump(1);
  CompiledModel m = compile_model(json_path, dir.path(), 2, [](const sim::ArtifactTensor& in, int s) {
    NDArray a = NDArray::zeros(in.dtype, in.shape);
    Lcg lcg{100u + static_cast<uint32_t>(s)};
    for (int64_t i = 0; i < a.num_elements(); ++i) a.set_float(i, 4.0 * lcg.next());
    return a;
  });
  sim::ArtifactRunOptions options;
  options.target = target;
  options.work_dir = (dir.path() / "run").string();
  sim::ArtifactRunResult r = sim::run_artifact(m.info, m.inputs, m.samples, m.outputs, options);
  ASSERT_EQ(r.outputs.size(), 2u);
  for (size_t s = 0; s < 2; ++s) {
    for (size_t o = 0; o < m.outputs.size(); ++o) {
      Difference d = compare_arrays(r.outputs[s][o], m.want[s][o], 1e-5);
      EXPECT_TRUE(d.ok) << param << " run " << s << " output " << m.outputs[o].name << ": max rel diff " << d.max_rel;
    }
  }
  ASSERT_EQ(r.report.instructions.size(), 2u);
  EXPECT_GT(r.report.instructions[0], 0);
  expect_stack_bound_holds(r.report, param);
}

std::vector<std::string> matrix() {
  std::vector<std::string> out;
  for (const char* t : {"cortex-m4", "riscv32"})
    for (const auto& c : kernel_cases()) out.push_back(std::string(t) + "/" + c.name);
  return out;
}

INSTANTIATE_TEST_SUITE_P(Kernels, KernelOnTarget, ::testing::ValuesIn(matrix()), param_name);

}  // namespace
}  // namespace mtir
