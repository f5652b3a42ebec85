// Elementwise fusion in the AOT executor: which chains fuse, which must not, and that a
// fused model computes bit for bit what the unfused one computes (same arithmetic in the
// same order), in the interpreter and as host C.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "analysis/elementwise_overwrite.h"
#include "analysis/well_formed.h"
#include "driver/build.h"
#include "executor/aot.h"
#include "executor/fuse_elementwise.h"
#include "interp/interpreter.h"
#include "ir/flat_view.h"
#include "ops/op_util.h"
#include "ops/schedules.h"
#include "sim/host_sim.h"
#include "sim/process.h"
#include "support/compare.h"
#include "support/npy.h"
#include "support/source_dir.h"

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

// A flat view (ir/flat_view.h), through which Helium kernels store their output and fused
// consumers read it: one dimension, the dtype of the buffer it views, no strides, offset 0;
// and, to be a view of a buffer, that buffer's memory and not the buffer itself.
TEST(Fusion, FlatViewsHaveOneDimensionTheDtypeAndNoOffset) {
  const Buffer out = MakeBuffer("Out", DataType::Int(8), {IntImm(DataType::Int(32), 4), IntImm(DataType::Int(32), 6)});
  auto view_of = [&](DataType dtype, std::vector<Expr> shape, int64_t offset) {
    auto v = std::make_shared<BufferNode>(*MakeBuffer("V", dtype, std::move(shape)));
    v->data = out->data;
    v->elem_offset = IntImm(DataType::Int(32), offset);
    return Buffer(v);
  };
  const Expr n24 = IntImm(DataType::Int(32), 24);
  EXPECT_TRUE(is_flat_view_of(view_of(DataType::Int(8), {n24}, 0), out));
  EXPECT_FALSE(is_flat_view_of(out, out));                                        // the buffer itself
  EXPECT_FALSE(is_flat_view_of(view_of(DataType::Int(8), {n24}, 4), out));        // an offset
  EXPECT_FALSE(is_flat_view_of(view_of(DataType::Int(32), {n24}, 0), out));       // another dtype
  EXPECT_FALSE(is_flat_view_of(view_of(DataType::Int(8), {n24, n24}, 0), out));   // two dimensions
  const Buffer elsewhere = MakeBuffer("W", DataType::Int(8), {n24});             // other memory
  EXPECT_FALSE(is_flat_view_of(elsewhere, out));
  EXPECT_TRUE(has_flat_view_shape(elsewhere, out));
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
  std::string dir = std::string(mtir::source_dir()) + "/models/digits/";
  FileReader reader = [dir](const std::string& rel) { return sim::read_text(dir + rel); };
  Graph g = fold_batch_norm(load_graph_json(reader("digits.json"), "digits.json", reader));
  AotModule aot = check_same_outputs(g);
  EXPECT_EQ(kernels(aot).size(), g.nodes.size() - 2 - 1);  // conv+relu twice; the flatten is a view
  EXPECT_NE(aot.module.lookup("tvmgen_digits_fused_conv2_relu2"), nullptr);
}

// A residual block in int8 as the TFLite frontend gives it: r = conv1x1(x) with relu,
// h = conv1x1(r), c = conv3x3(h), s = qadd(r, c) with relu, y = conv1x1(s). The blocked
// 3x3 convolution writes its 2x2 tiles from four stores; the add fuses into its kernel
// at every store, and that kernel writes s over r, which dies there. With
// `add_own_input` the convolution reads r itself (c = conv3x3(r)): its kernel reads r
// as a window too, so s must not take r's bytes.
NDArray int_array(DataType t, std::vector<int64_t> shape, uint32_t seed, int lo, int hi) {
  NDArray a = NDArray::zeros(t, std::move(shape));
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(lo, hi);
  for (int64_t i = 0; i < a.num_elements(); ++i) a.set_int(i, dist(rng));
  return a;
}

Graph int8_residual_block(bool add_own_input, const ScheduleOptions& schedules = {}) {
  const DataType i8 = DataType::Int(8), i32 = DataType::Int(32);
  Graph g;
  g.name = "res8";
  g.inputs = {{"x", TensorType{i8, {1, 5, 4, 8}}}};
  g.constants["w1"] = int_array(i8, {8, 1, 1, 8}, 1, -60, 60);
  g.constants["wh"] = int_array(i8, {8, 1, 1, 8}, 5, -60, 60);
  g.constants["w2"] = int_array(i8, {8, 3, 3, 8}, 2, -60, 60);
  g.constants["w3"] = int_array(i8, {3, 1, 1, 8}, 3, -60, 60);
  g.constants["b2"] = int_array(i32, {8}, 4, -2000, 2000);
  auto conv = [](double si, int zi, double so, int zo, json more) {
    json a = {{"input_scale", si}, {"input_zero_point", zi}, {"weight_scale", 0.01}, {"output_scale", so},
              {"output_zero_point", zo}};
    if (more.is_object()) a.update(more);
    return a;
  };
  auto node = [&](const std::string& name, const std::string& op, std::vector<std::string> in, json attrs) {
    GraphNode n{};
    n.name = name, n.op = op, n.inputs = std::move(in), n.attrs = std::move(attrs);
    std::vector<TensorType> types;
    for (const auto& i : n.inputs) types.push_back(g.type_of(i));
    n.type = find_op(op)->infer(types, n.attrs);
    g.nodes.push_back(n);
  };
  node("r", "qconv2d", {"x", "w1"}, conv(0.05, 3, 0.04, -5, {{"activation", "relu"}}));
  if (!add_own_input) node("h", "qconv2d", {"r", "wh"}, conv(0.04, -5, 0.04, -5, json::object()));
  node("c", "qconv2d", {add_own_input ? "r" : "h", "w2", "b2"}, conv(0.04, -5, 0.06, 2, {{"padding", {1, 1, 1, 1}}}));
  node("s", "qadd", {"r", "c"},
       {{"a_scale", 0.04}, {"a_zero_point", -5}, {"b_scale", 0.06}, {"b_zero_point", 2}, {"output_scale", 0.07},
        {"output_zero_point", -9}, {"activation", "relu"}});
  node("y", "qconv2d", {"s", "w3"}, conv(0.07, -9, 0.05, 1, json::object()));
  g.outputs = {"y"};
  return prepare_quantized(g, schedules);
}

// Builds the block fused and unfused; both must give the same bits in the interpreter
// and as host C with the planned memory. Returns the planned main of the fused build.
// The fused kernel on whole tensors: patch_residual would run the block in bands.
AotOptions whole_block() {
  AotOptions o;
  o.patch_residual = false;
  return o;
}

PrimFunc check_int8_residual_block(const Graph& g, const std::string& fused_kernel, size_t residual) {
  AotModule fused = build_aot(g, whole_block()), plain = build_aot(g, AotOptions{false});
  PrimFunc kernel = fused.module.lookup(fused_kernel);
  EXPECT_NE(kernel, nullptr) << "kernels: " << ::testing::PrintToString(kernels(fused));
  if (!kernel) return nullptr;
  // The tile writes four outputs from four stores: no single-store nest, and still it
  // reads the residual only where it writes the same element.
  EXPECT_EQ(kernel->params[residual]->name, "a");
  EXPECT_TRUE(writes_elementwise_over(kernel, residual));
  EXPECT_FALSE(writes_elementwise_over(kernel, 0)) << "the convolution reads a window of its data";
  auto args_of = [&](const AotModule& aot) {
    std::vector<NDArray> arrays;
    for (const auto& p : aot.params) {
      if (p.role == AotModule::Role::kConstant) arrays.push_back(g.constants.at(p.name));
      else if (p.role == AotModule::Role::kInput) arrays.push_back(int_array(p.type.dtype, p.type.shape, 9, -128, 127));
      else arrays.push_back(NDArray::zeros(p.type.dtype, p.type.shape));
    }
    return arrays;
  };
  std::vector<NDArray> want = args_of(plain), got = args_of(fused), host = args_of(fused);
  interpret(plain.module, plain.main, as_args(want));
  interpret(fused.module, fused.main, as_args(got));
  EXPECT_EQ(got.back().data, want.back().data);
  BuildResult built = build_c(fused.module, parse_target("c -unpacked-api=1"));
  sim::HostSimOptions options;
  options.work_dir = (fs::temp_directory_path() / ("microtir-fusion-q-" + std::to_string(getpid()))).string();
  sim::run_on_host({&built, fused.main, fused.module.lookup(fused.main)}, as_args(host), options);
  fs::remove_all(options.work_dir);
  EXPECT_EQ(host.back().data, want.back().data);
  return built.lowered.module.lookup(fused.main);
}

int64_t attr(const PrimFunc& f, const char* key) { return std::get<int64_t>(f->attrs.at(key)); }

TEST(Fusion, Int8AddFusesIntoTheBlockedConvolutionAndWritesOverTheResidual) {
  PrimFunc main = check_int8_residual_block(int8_residual_block(false), "tvmgen_res8_fused_c_s", 3);
  ASSERT_NE(main, nullptr);
  // r, h and s (160 bytes each) live at the fused call; s takes r's bytes.
  EXPECT_EQ(attr(main, "workspace.lower_bound_bytes"), 480);
  EXPECT_EQ(attr(main, "workspace.shared_lower_bound_bytes"), 320);
  EXPECT_EQ(attr(main, "workspace.pool_bytes"), 320);
}

// Schedule smmlar_add: the add's SMMLAR form fuses the same way, the same bits as the
// unfused block, and the fused kernel keeps the add's mark for the C backend.
TEST(Fusion, SmmlarAddFusesAndKeepsItsMark) {
  ScheduleOptions schedules;
  schedules.smmlar_add = true;
  const Graph g = int8_residual_block(false, schedules);
  ASSERT_NE(check_int8_residual_block(g, "tvmgen_res8_fused_c_s", 3), nullptr);
  AotModule fused = build_aot(g, whole_block());
  PrimFunc kernel = fused.module.lookup("tvmgen_res8_fused_c_s");
  ASSERT_NE(kernel, nullptr);
  EXPECT_EQ(kernel->attrs.count("mtir.smmlar_add"), 1u);
  const AotModule plain_add = build_aot(int8_residual_block(false), whole_block());
  EXPECT_EQ(plain_add.module.lookup("tvmgen_res8_fused_c_s")->attrs.count("mtir.smmlar_add"), 0u);
}

TEST(Fusion, ConvolutionFusedWithTheAddOfItsOwnInputKeepsItsOutputApart) {
  PrimFunc main = check_int8_residual_block(int8_residual_block(true), "tvmgen_res8_fused_c_s", 3);
  ASSERT_NE(main, nullptr);
  EXPECT_EQ(attr(main, "workspace.lower_bound_bytes"), 320);
  EXPECT_EQ(attr(main, "workspace.shared_lower_bound_bytes"), 320);
}

TEST(Fusion, ElementwiseOverwriteCountsEveryStore) {
  // Two stores per iteration: each element once (accepted), or one element twice
  // (refused: the second store would read an input element the first overwrote).
  auto kernel = [](int64_t second_offset) {
    ops::FuncBuilder fb;
    Buffer a = fb.param("a", {8}, DataType::Int(32)), out = fb.param("out", {8}, DataType::Int(32));
    Var i = MakeVar("i", DataType::Int(32));
    auto at = [&](int64_t k) {
      Expr idx = Binary(ExprKind::Add, Binary(ExprKind::Mul, i, IntImm(DataType::Int(32), 2)), IntImm(DataType::Int(32), k));
      return BufferStore(out, Binary(ExprKind::Add, BufferLoad(a, {idx}), IntImm(DataType::Int(32), 1)), {idx});
    };
    return fb.finish("k", For(i, IntImm(DataType::Int(32), 0), IntImm(DataType::Int(32), 4), ForKind::kSerial,
                              SeqStmt({at(0), at(second_offset)})));
  };
  EXPECT_TRUE(writes_elementwise_over(kernel(1), 0));
  EXPECT_FALSE(writes_elementwise_over(kernel(0), 0));
  EXPECT_FALSE(writes_elementwise_over(kernel(2), 0)) << "element 2i + 2 is written again at i + 1";
}

}  // namespace
}  // namespace mtir
