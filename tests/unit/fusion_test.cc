// Elementwise fusion in the AOT executor: which chains fuse, which must not, and that a
// fused model computes bit for bit what the unfused one computes (same arithmetic in the
// same order), in the interpreter and as host C.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "analysis/well_formed.h"
#include "driver/build.h"
#include "executor/aot.h"
#include "executor/fuse_elementwise.h"
#include "interp/interpreter.h"
#include "sim/host_sim.h"
#include "sim/process.h"
#include "support/compare.h"
#include "support/npy.h"

namespace mtir {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

NDArray random_array(std::vector<int64_t> shape, uint32_t seed) {
  NDArray a = NDArray::zeros(DataType::Float(32), std::move(shape));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (int64_t i = 0; i < a.num_elements(); ++i) a.set_float(i, dist(rng));
  return a;
}

// A graph from its JSON, with its constants given as arrays.
Graph make_graph(json g, const std::map<std::string, NDArray>& constants) {
  std::map<std::string, std::string> files;
  g["format"] = "microtir-graph";
  g["version"] = 1;
  g["constants"] = json::array();
  for (const auto& [name, a] : constants) {
    files[name + ".npy"] = write_npy(a);
    g["constants"].push_back({{"name", name}, {"file", name + ".npy"}});
  }
  FileReader reader = [files](const std::string& rel) { return files.at(rel); };
  return load_graph_json(g.dump(), "test.json", reader);
}

std::vector<NDArray> arguments(const AotModule& aot, const Graph& g) {
  std::vector<NDArray> arrays;
  uint32_t seed = 7;
  for (const auto& p : aot.params) {
    if (p.role == AotModule::Role::kConstant) arrays.push_back(g.constants.at(p.name));
    else if (p.role == AotModule::Role::kInput) arrays.push_back(random_array(p.type.shape, seed++));
    else arrays.push_back(NDArray::zeros(p.type.dtype, p.type.shape));
  }
  return arrays;
}

std::vector<InterpArg> as_args(std::vector<NDArray>& arrays) {
  std::vector<InterpArg> args;
  for (auto& a : arrays) args.push_back(&a);
  return args;
}

std::vector<std::string> kernels(const AotModule& aot) {
  std::vector<std::string> names;
  for (const auto& [name, f] : aot.module.functions)
    if (name != aot.main) names.push_back(name);
  return names;
}

// Runs the model fused and unfused in the interpreter; the outputs must be identical.
// Returns the fused module.
AotModule check_same_outputs(const Graph& g) {
  AotModule fused = build_aot(g);
  AotModule plain = build_aot(g, AotOptions{false});
  for (const auto& d : check_well_formed(fused.module)) ADD_FAILURE() << d.message;
  std::vector<NDArray> a = arguments(fused, g), b = arguments(plain, g);
  interpret(fused.module, fused.main, as_args(a));
  interpret(plain.module, plain.main, as_args(b));
  for (size_t i = 0; i < a.size(); ++i) {
    if (fused.params[i].role != AotModule::Role::kOutput) continue;
    EXPECT_EQ(a[i].data, b[i].data) << fused.params[i].name;
  }
  return fused;
}

const json kConvBiasRelu = {
    {"name", "cbr"},
    {"inputs", {{{"name", "x"}, {"shape", {1, 3, 6, 6}}, {"dtype", "float32"}}}},
    {"nodes",
     {{{"name", "conv"}, {"op", "conv2d"}, {"inputs", {"x", "w"}}, {"attrs", {{"padding", {1, 1, 1, 1}}}}},
      {{"name", "biased"}, {"op", "add"}, {"inputs", {"conv", "b"}}},
      {{"name", "act"}, {"op", "relu"}, {"inputs", {"biased"}}},
      {{"name", "scaled"}, {"op", "mul"}, {"inputs", {"s", "act"}}}}},
    {"outputs", {"scaled"}}};

std::map<std::string, NDArray> conv_constants() {
  return {{"w", random_array({4, 3, 3, 3}, 1)}, {"b", random_array({4, 1, 1}, 2)}, {"s", random_array({4, 1, 1}, 3)}};
}

TEST(Fusion, ConvBiasReluFoldsIntoTheConvLoopNest) {
  Graph g = make_graph(kConvBiasRelu, conv_constants());
  AotModule aot = check_same_outputs(g);
  ASSERT_EQ(kernels(aot), std::vector<std::string>{"tvmgen_cbr_fused_conv_biased_act_scaled"});
  PrimFunc f = aot.module.lookup("tvmgen_cbr_fused_conv_biased_act_scaled");
  // data, weight, then the bias and the scale, then the output; both constants
  // were called "rhs"/"lhs" in their own functions and keep distinct names here.
  ASSERT_EQ(f->params.size(), 5u);
  EXPECT_EQ(f->params[0]->name, "data");
  EXPECT_EQ(f->params[1]->name, "weight");
  EXPECT_NE(f->params[2]->name, f->params[3]->name);
  // No intermediate tensor is left for main to allocate.
  PrimFunc main = aot.module.lookup(aot.main);
  EXPECT_EQ(as<AllocateNode>(main->body), nullptr);
}

TEST(Fusion, FusedModelRunsAsHostCLikeTheInterpreter) {
  Graph g = make_graph(kConvBiasRelu, conv_constants());
  AotModule aot = build_aot(g);
  std::vector<NDArray> want = arguments(aot, g), got = arguments(aot, g);
  interpret(aot.module, aot.main, as_args(want));
  BuildResult built = build_c(aot.module, parse_target("c -unpacked-api=1"));
  sim::HostSimOptions options;
  options.work_dir = (fs::temp_directory_path() / ("microtir-fusion-" + std::to_string(getpid()))).string();
  sim::run_on_host({&built, aot.main, aot.module.lookup(aot.main)}, as_args(got), options);
  fs::remove_all(options.work_dir);
  EXPECT_TRUE(compare_arrays(got.back(), want.back()).ok);
}

TEST(Fusion, DenseAndElementwiseProducersFuse) {
  json g = {{"name", "mlp"},
            {"inputs", {{{"name", "x"}, {"shape", {2, 5}}, {"dtype", "float32"}}}},
            {"nodes",
             {{{"name", "fc"}, {"op", "dense"}, {"inputs", {"x", "w"}}},
              {{"name", "clipped"}, {"op", "clip"}, {"inputs", {"fc"}}, {"attrs", {{"min", 0.0}, {"max", 6.0}}}},
              {{"name", "sum"}, {"op", "add"}, {"inputs", {"x2", "x2"}}},
              {{"name", "squashed"}, {"op", "sigmoid"}, {"inputs", {"sum"}}},
              {{"name", "out"}, {"op", "mul"}, {"inputs", {"clipped", "squashed"}}}}},
            {"outputs", {"out"}}};
  g["inputs"].push_back({{"name", "x2"}, {"shape", {2, 3}}, {"dtype", "float32"}});
  Graph graph = make_graph(g, {{"w", random_array({3, 5}, 4)}});
  AotModule aot = check_same_outputs(graph);
  // dense+clip+mul is one kernel (the mul's other input is computed first), add+sigmoid
  // another; the mul, taken by the first group, is not fused twice.
  EXPECT_EQ(kernels(aot), (std::vector<std::string>{"tvmgen_mlp_fused_sum_squashed", "tvmgen_mlp_fused_fc_clipped_out"}));
}

TEST(Fusion, StopsAtOutputsSharedResultsAndNonElementwiseOps) {
  json g = {{"name", "keep"},
            {"inputs", {{{"name", "x"}, {"shape", {1, 2, 4, 4}}, {"dtype", "float32"}}}},
            {"nodes",
             {{{"name", "a"}, {"op", "relu"}, {"inputs", {"x"}}},        // a model output: stays
              {{"name", "b"}, {"op", "sigmoid"}, {"inputs", {"a"}}},     // read twice: stays
              {{"name", "c"}, {"op", "tanh"}, {"inputs", {"b"}}},
              {{"name", "d"}, {"op", "add"}, {"inputs", {"b", "c"}}},
              {{"name", "p"}, {"op", "max_pool2d"}, {"inputs", {"d"}}, {"attrs", {{"pool_size", {2, 2}}}}},
              {{"name", "s"}, {"op", "softmax"}, {"inputs", {"p"}}, {"attrs", {{"axis", 1}}}},
              {{"name", "r"}, {"op", "relu"}, {"inputs", {"s"}}}}},  // softmax writes its output twice
            {"outputs", {"a", "r"}}};
  Graph graph = make_graph(g, {});
  AotModule aot = check_same_outputs(graph);
  EXPECT_EQ(kernels(aot), (std::vector<std::string>{"tvmgen_keep_a", "tvmgen_keep_b", "tvmgen_keep_fused_c_d",
                                                    "tvmgen_keep_p", "tvmgen_keep_s", "tvmgen_keep_r"}))
      << "pooling is no elementwise consumer, and softmax writes its output twice";
}

TEST(Fusion, TheBundledModelLosesTwoKernels) {
  std::string dir = std::string(MICROTIR_SOURCE_DIR) + "/models/digits/";
  FileReader reader = [dir](const std::string& rel) { return sim::read_text(dir + rel); };
  Graph g = fold_batch_norm(load_graph_json(reader("digits.json"), "digits.json", reader));
  AotModule aot = check_same_outputs(g);
  EXPECT_EQ(kernels(aot).size(), g.nodes.size() - 2 - 1);  // conv+relu twice; the flatten is a view
  EXPECT_NE(aot.module.lookup("tvmgen_digits_fused_conv2_relu2"), nullptr);
}

}  // namespace
}  // namespace mtir
