// The JSON graph frontend: loading valid graphs, the malformed graphs under
// tests/graphs/malformed/ (each with its expected message), batch-norm folding, and the
// bundled digits model run node by node through the operator PrimFuncs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "frontend/graph.h"
#include "interp/interpreter.h"
#include "support/diagnostic.h"
#include "support/npy.h"
#include "support/source_dir.h"

namespace mtir {
namespace {

using nlohmann::json;

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) user_error(Span{}, "cannot open '" + path + "'");
  std::ostringstream os;
  os << f.rdbuf();
  return os.str();
}

// Reads files relative to `dir`, like the CLI does.
FileReader dir_reader(const std::string& dir) {
  return [dir](const std::string& rel) { return slurp(dir + "/" + rel); };
}

// Reads files from memory.
FileReader map_reader(std::map<std::string, std::string> files) {
  return [files](const std::string& rel) {
    auto it = files.find(rel);
    if (it == files.end()) user_error(Span{}, "no such file");
    return it->second;
  };
}

Graph load_file(const std::string& path) {
  std::filesystem::path p(path);
  return load_graph_json(slurp(path), p.filename().string(), dir_reader(p.parent_path().string()));
}

// The first diagnostic `f` throws (and a test failure if it throws none).
template <typename F>
Diagnostic error_of(F f) {
  try {
    f();
  } catch (const DiagnosticError& e) {
    EXPECT_FALSE(e.internal()) << e.what();
    if (!e.diagnostics().empty()) return e.diagnostics()[0];
  }
  ADD_FAILURE() << "expected a DiagnosticError";
  return {};
}

NDArray random_f32(std::vector<int64_t> shape, uint32_t seed, double lo = -1, double hi = 1) {
  NDArray a = NDArray::zeros(DataType::Float(32), std::move(shape));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> d(lo, hi);
  for (int64_t i = 0; i < a.num_elements(); ++i) a.set_float(i, static_cast<float>(d(rng)));
  return a;
}

json values_of(const NDArray& a) {
  json v = json::array();
  for (int64_t i = 0; i < a.num_elements(); ++i) v.push_back(a.get_float(i));
  return v;
}

json constant_json(const std::string& name, const NDArray& a) {
  return {{"name", name}, {"shape", a.shape}, {"dtype", "float32"}, {"values", values_of(a)}};
}

// Runs every node through its op's PrimFunc in the interpreter, in topological order.
std::map<std::string, NDArray> run_graph(const Graph& g, const std::map<std::string, NDArray>& feeds) {
  std::map<std::string, NDArray> values = g.constants;
  for (const auto& kv : feeds) values[kv.first] = kv.second;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const GraphNode& n = g.nodes[i];
    std::vector<TensorType> in_types;
    for (const auto& in : n.inputs) in_types.push_back(g.type_of(in));
    std::string fname = "op" + std::to_string(i) + "_" + n.op;
    IRModule mod;
    mod.set(fname, find_op(n.op)->build(fname, in_types, n.type, n.attrs));
    std::vector<NDArray> args;
    for (const auto& in : n.inputs) args.push_back(values.at(in));
    args.push_back(NDArray::zeros(n.type.dtype, n.type.shape));
    std::vector<InterpArg> iargs;
    for (auto& a : args) iargs.push_back(&a);
    interpret(mod, fname, iargs);
    values[n.name] = std::move(args.back());
  }
  return values;
}

void expect_close(const NDArray& a, const NDArray& b, double tol, const std::string& what) {
  ASSERT_EQ(a.shape, b.shape) << what;
  double worst = 0;
  for (int64_t i = 0; i < a.num_elements(); ++i)
    worst = std::max(worst, std::fabs(a.get_float(i) - b.get_float(i)));
  EXPECT_LE(worst, tol) << what;
}

std::vector<std::string> node_names(const Graph& g) {
  std::vector<std::string> v;
  for (const auto& n : g.nodes) v.push_back(n.name);
  return v;
}

json header(const std::string& name = "net") {
  return {{"format", "microtir-graph"}, {"version", 1}, {"name", name}};
}

// ------------------------------------------------------------------ valid graphs

TEST(GraphLoad, SortsTopologicallyAndInfersTypes) {
  json g = header();
  g["inputs"] = {{{"name", "x"}, {"shape", {1, 2, 4, 4}}, {"dtype", "float32"}}};
  g["constants"] = {constant_json("w", random_f32({3, 2, 3, 3}, 1)), constant_json("b", random_f32({3}, 2))};
  // Listed consumers first: the loader must reorder.
  g["nodes"] = {
      {{"name", "probs"}, {"op", "softmax"}, {"inputs", {"fc"}}},
      {{"name", "fc"}, {"op", "dense"}, {"inputs", {"flat", "fcw"}}},
      {{"name", "flat"}, {"op", "flatten"}, {"inputs", {"relu"}}},
      {{"name", "relu"}, {"op", "relu"}, {"inputs", {"conv"}}},
      {{"name", "conv"},
       {"op", "conv2d"},
       {"inputs", {"x", "w", "b"}},
       {"attrs", {{"padding", {1, 1, 1, 1}}, {"layout", "NCHW"}}}},
  };
  g["constants"].push_back(constant_json("fcw", random_f32({5, 48}, 3)));
  g["outputs"] = {"probs", "relu"};
  Graph graph = load_graph_json(g.dump(2), "net.json", FileReader{});
  EXPECT_EQ(graph.name, "net");
  EXPECT_EQ(node_names(graph), (std::vector<std::string>{"conv", "relu", "flat", "fc", "probs"}));
  EXPECT_EQ(graph.type_of("conv").shape, (std::vector<int64_t>{1, 3, 4, 4}));
  EXPECT_EQ(graph.type_of("flat").shape, (std::vector<int64_t>{1, 48}));
  EXPECT_EQ(graph.type_of("probs").shape, (std::vector<int64_t>{1, 5}));
  EXPECT_EQ(graph.type_of("probs").dtype, DataType::Float(32));
  EXPECT_EQ(graph.type_of("x").shape, (std::vector<int64_t>{1, 2, 4, 4}));
  EXPECT_EQ(graph.type_of("w").shape, (std::vector<int64_t>{3, 2, 3, 3}));
  EXPECT_EQ(graph.outputs, (std::vector<std::string>{"probs", "relu"}));
  EXPECT_EQ(graph.constants.size(), 3u);
  ASSERT_EQ(graph.inputs.size(), 1u);
  EXPECT_EQ(graph.inputs[0].first, "x");
  // Every node comes after its node inputs.
  for (size_t i = 0; i < graph.nodes.size(); ++i)
    for (const auto& in : graph.nodes[i].inputs)
      for (size_t j = i; j < graph.nodes.size(); ++j) EXPECT_NE(graph.nodes[j].name, in);
  EXPECT_THROW(graph.type_of("nope"), DiagnosticError);
}

TEST(GraphLoad, KeepsFileOrderWhenAlreadySorted) {
  json g = header();
  g["inputs"] = {{{"name", "a"}, {"shape", {2, 3}}}, {{"name", "b"}, {"shape", {3}}}};
  g["nodes"] = {{{"name", "s"}, {"op", "add"}, {"inputs", {"a", "b"}}},
                {{"name", "t"}, {"op", "relu"}, {"inputs", {"a"}}},
                {{"name", "u"}, {"op", "mul"}, {"inputs", {"t", "s"}}}};
  g["outputs"] = {"u"};
  g["_comment"] = "keys starting with '_' are ignored";
  Graph graph = load_graph_json(g.dump(), "g.json", FileReader{});
  EXPECT_EQ(node_names(graph), (std::vector<std::string>{"s", "t", "u"}));
  EXPECT_EQ(graph.type_of("s").shape, (std::vector<int64_t>{2, 3}));  // broadcast
  EXPECT_EQ(graph.type_of("a").dtype, DataType::Float(32));           // dtype defaults to float32
  EXPECT_TRUE(graph.constants.empty());
}

// find_node indexes the nodes; appending, erasing and renaming nodes in place (as
// passes do) must never give a stale answer.
TEST(GraphFindNode, FollowsEditsOfTheNodeList) {
  Graph g;
  for (const char* n : {"a", "b", "c"}) g.nodes.push_back(GraphNode{n, "relu", {}, json::object(), {}, ""});
  ASSERT_NE(g.find_node("b"), nullptr);
  EXPECT_EQ(g.find_node("b")->name, "b");
  g.nodes.push_back(GraphNode{"d", "relu", {}, json::object(), {}, ""});
  ASSERT_NE(g.find_node("d"), nullptr);
  EXPECT_EQ(g.find_node("d"), &g.nodes[3]);
  g.nodes.erase(g.nodes.begin());  // every position shifts
  EXPECT_EQ(g.find_node("a"), nullptr);
  EXPECT_EQ(g.find_node("c"), &g.nodes[1]);
  g.nodes[0].name = "b2";  // renamed in place
  EXPECT_EQ(g.find_node("b"), nullptr);
  EXPECT_EQ(g.find_node("b2"), &g.nodes[0]);
  Graph copy = g;  // a copy answers for its own nodes
  EXPECT_EQ(copy.find_node("d"), &copy.nodes[2]);
  EXPECT_EQ(g.find_node("nope"), nullptr);
}

TEST(GraphLoad, ConstantsFromNpyBlobAndValues) {
  NDArray w = random_f32({4, 3}, 7);
  NDArray b = random_f32({4}, 8);
  std::string blob(16, '\0');  // 16 bytes of padding, then b
  blob += std::string(b.data.begin(), b.data.end());
  json g = header();
  g["inputs"] = {{{"name", "x"}, {"shape", {2, 3}}, {"dtype", "float32"}}};
  g["constants"] = {{{"name", "w"}, {"file", "w.npy"}, {"shape", {4, 3}}, {"dtype", "float32"}},
                    {{"name", "b"}, {"blob", "blob.bin"}, {"offset", 16}, {"shape", {4}}, {"dtype", "float32"}},
                    {{"name", "k"}, {"values", {1, 2, 3, 4}}, {"shape", {4}}, {"dtype", "int32"}}};
  g["nodes"] = {{{"name", "y"}, {"op", "dense"}, {"inputs", {"x", "w", "b"}}}};
  g["outputs"] = {"y"};
  Graph graph = load_graph_json(g.dump(), "g.json", map_reader({{"w.npy", write_npy(w)}, {"blob.bin", blob}}));
  EXPECT_EQ(graph.constants.at("w").data, w.data);
  EXPECT_EQ(graph.constants.at("b").data, b.data);
  EXPECT_EQ(graph.constants.at("k").dtype, DataType::Int(32));
  EXPECT_EQ(graph.constants.at("k").get_int(3), 4);
  EXPECT_EQ(graph.type_of("y").shape, (std::vector<int64_t>{2, 4}));
}

TEST(GraphLoad, DigitsModel) {
  Graph g = load_file(std::string(mtir::source_dir()) + "/models/digits/digits.json");
  EXPECT_EQ(g.name, "digits");
  EXPECT_EQ(node_names(g), (std::vector<std::string>{"conv1", "bn1", "relu1", "pool1", "conv2", "relu2", "pool2",
                                                     "flat", "fc", "probs"}));
  EXPECT_EQ(g.type_of("pool1").shape, (std::vector<int64_t>{1, 8, 4, 4}));
  EXPECT_EQ(g.type_of("pool2").shape, (std::vector<int64_t>{1, 16, 2, 2}));
  EXPECT_EQ(g.type_of("flat").shape, (std::vector<int64_t>{1, 64}));
  EXPECT_EQ(g.type_of("probs").shape, (std::vector<int64_t>{1, 10}));
  EXPECT_EQ(g.outputs, (std::vector<std::string>{"probs"}));
}

// ------------------------------------------------------------------ malformed graphs

std::string malformed_dir() { return std::string(mtir::source_dir()) + "/tests/graphs/malformed"; }

std::vector<std::string> malformed_cases() {
  std::vector<std::string> v;
  for (const auto& e : std::filesystem::directory_iterator(malformed_dir()))
    if (e.path().extension() == ".json") v.push_back(e.path().stem().string());
  std::sort(v.begin(), v.end());
  return v;
}

class Malformed : public testing::TestWithParam<std::string> {};

TEST_P(Malformed, ReportsTheProblem) {
  std::string path = malformed_dir() + "/" + GetParam() + ".json";
  std::istringstream expect(slurp(malformed_dir() + "/" + GetParam() + ".expect"));
  Diagnostic d = error_of([&] { load_file(path); });
  std::string rendered = d.render();
  // Every diagnostic names the file and a location in it.
  EXPECT_TRUE(d.span.defined()) << rendered;
  ASSERT_TRUE(d.span.file) << rendered;
  EXPECT_EQ(d.span.file->name, GetParam() + ".json");
  std::string line;
  int checks = 0;
  while (std::getline(expect, line)) {
    if (line.empty()) continue;
    ++checks;
    if (line.rfind("@line ", 0) == 0) {
      EXPECT_EQ(d.span.line, std::stoi(line.substr(6))) << rendered;
    } else {
      EXPECT_NE(d.message.find(line), std::string::npos) << "expected '" << line << "' in:\n" << rendered;
    }
  }
  EXPECT_GT(checks, 0);
}

INSTANTIATE_TEST_SUITE_P(Graphs, Malformed, testing::ValuesIn(malformed_cases()),
                         [](const testing::TestParamInfo<std::string>& info) { return info.param; });

TEST(GraphLoad, AtLeastFifteenMalformedKinds) { EXPECT_GE(malformed_cases().size(), 15u); }

TEST(GraphLoad, PointsAtTheNode) {
  std::string text = R"({
  "format": "microtir-graph", "version": 1, "name": "m",
  "inputs": [{"name": "x", "shape": [4]}],
  "nodes": [
    {"name": "a", "op": "relu", "inputs": ["x"]},
    {"name": "b", "op": "reluu", "inputs": ["a"]}
  ],
  "outputs": ["b"]
})";
  Diagnostic d = error_of([&] { load_graph_json(text, "m.json", FileReader{}); });
  EXPECT_EQ(d.span.line, 6);
  EXPECT_EQ(d.span.col, 6);
  EXPECT_NE(d.message.find("node 'b': unknown op 'reluu' (did you mean 'relu'?)"), std::string::npos) << d.message;
  EXPECT_NE(d.render().find("m.json:6:6"), std::string::npos) << d.render();
}

// A graph on one line (as `import` tools write it): the excerpt is a window of the line
// around the column, with the caret under the offending node.
TEST(GraphLoad, OneLineGraphShowsAWindowAroundTheColumn) {
  std::string padding(2000, ' ');
  std::string text = R"({"format": "microtir-graph", "version": 1, "name": "m", "inputs": [{"name": "x", "shape": [4]}],)" +
                     padding + R"("nodes": [{"name": "b", "op": "reluu", "inputs": ["x"]}],)" + padding + R"("outputs": ["b"]})";
  Diagnostic d = error_of([&] { load_graph_json(text, "m.json", FileReader{}); });
  ASSERT_EQ(d.span.line, 1);
  const std::string rendered = d.render();
  std::istringstream lines(rendered);
  std::string head, excerpt, caret;
  std::getline(lines, head), std::getline(lines, excerpt), std::getline(lines, caret);
  EXPECT_LT(excerpt.size(), 140u) << rendered;
  EXPECT_EQ(excerpt.substr(0, 5), "  ...") << rendered;
  EXPECT_EQ(excerpt.substr(excerpt.size() - 3), "...") << rendered;
  ASSERT_EQ(caret.back(), '^') << rendered;
  // The caret stands under the character the span names.
  EXPECT_EQ(excerpt[caret.size() - 1], text[d.span.col - 1]) << rendered;
}

TEST(GraphLoad, InvalidJsonLocation) {
  Diagnostic d = error_of([] { load_graph_json("{\n  \"format\": \"microtir-graph\",\n  \"version\": 1 1\n}", "bad.json",
                                               FileReader{}); });
  EXPECT_NE(d.message.find("invalid JSON"), std::string::npos) << d.message;
  EXPECT_EQ(d.span.line, 3);
}

TEST(GraphLoad, RefusesHugeShapesAndMissingReader) {
  json g = header();
  g["inputs"] = {{{"name", "x"}, {"shape", {4}}}};
  g["constants"] = {{{"name", "big"}, {"values", json::array()}, {"shape", {65536, 65536}}, {"dtype", "float32"}}};
  g["nodes"] = {{{"name", "r"}, {"op", "relu"}, {"inputs", {"x"}}}};
  g["outputs"] = {"r"};
  Diagnostic d = error_of([&] { load_graph_json(g.dump(), "g.json", FileReader{}); });
  EXPECT_NE(d.message.find("constant 'big': the shape has more than 2^31 - 1 elements"), std::string::npos)
      << d.message;
  g["constants"] = {{{"name", "w"}, {"file", "w.npy"}}};
  d = error_of([&] { load_graph_json(g.dump(), "g.json", FileReader{}); });
  EXPECT_NE(d.message.find("constant 'w': cannot read 'w.npy': no file reader was given"), std::string::npos)
      << d.message;
}

// ------------------------------------------------------------------ batch-norm folding

json bn_json(const std::string& name, const std::string& data, int64_t axis, int64_t c, uint32_t seed, json& consts) {
  NDArray gamma = random_f32({c}, seed, 0.5, 1.5), beta = random_f32({c}, seed + 1);
  NDArray mean = random_f32({c}, seed + 2), var = random_f32({c}, seed + 3, 0.1, 2.0);
  consts.push_back(constant_json(name + "_g", gamma));
  consts.push_back(constant_json(name + "_b", beta));
  consts.push_back(constant_json(name + "_m", mean));
  consts.push_back(constant_json(name + "_v", var));
  return {{"name", name},
          {"op", "batch_norm"},
          {"inputs", {data, name + "_g", name + "_b", name + "_m", name + "_v"}},
          {"attrs", {{"epsilon", 1e-3}, {"axis", axis}}}};
}

void check_fold(const json& g, const std::map<std::string, NDArray>& feeds, size_t expected_folds) {
  Graph graph = load_graph_json(g.dump(), "g.json", FileReader{});
  Graph folded = fold_batch_norm(graph);
  EXPECT_EQ(folded.nodes.size() + expected_folds, graph.nodes.size());
  size_t bns = 0, bns_before = 0;
  for (const auto& n : folded.nodes) bns += n.op == "batch_norm";
  for (const auto& n : graph.nodes) bns_before += n.op == "batch_norm";
  EXPECT_EQ(bns + expected_folds, bns_before);
  EXPECT_EQ(folded.outputs, graph.outputs);
  auto a = run_graph(graph, feeds), b = run_graph(folded, feeds);
  for (const auto& o : graph.outputs) expect_close(a.at(o), b.at(o), 1e-4, "output " + o);
}

TEST(FoldBatchNorm, Conv2dNCHWWithoutBias) {
  json consts = json::array();
  consts.push_back(constant_json("w", random_f32({4, 3, 3, 3}, 11)));
  json g = header();
  g["inputs"] = {{{"name", "x"}, {"shape", {1, 3, 5, 5}}}};
  g["nodes"] = {{{"name", "conv"}, {"op", "conv2d"}, {"inputs", {"x", "w"}}, {"attrs", {{"padding", {1, 1, 1, 1}}}}},
                bn_json("bn", "conv", 1, 4, 20, consts),
                {{"name", "out"}, {"op", "relu"}, {"inputs", {"bn"}}}};
  g["constants"] = consts;
  g["outputs"] = {"out"};
  check_fold(g, {{"x", random_f32({1, 3, 5, 5}, 5)}}, 1);
  Graph folded = fold_batch_norm(load_graph_json(g.dump(), "g.json", FileReader{}));
  ASSERT_EQ(node_names(folded), (std::vector<std::string>{"bn", "out"}));
  EXPECT_EQ(folded.nodes[0].op, "conv2d");
  ASSERT_EQ(folded.nodes[0].inputs.size(), 3u);  // a bias was created
  EXPECT_EQ(folded.type_of(folded.nodes[0].inputs[2]).shape, (std::vector<int64_t>{4}));
  // The batch_norm parameters and the old weight are gone.
  EXPECT_EQ(folded.constants.size(), 2u);
  EXPECT_FALSE(folded.constants.count("bn_g"));
  EXPECT_FALSE(folded.constants.count("w"));
}

TEST(FoldBatchNorm, Conv2dNHWCWithBias) {
  json consts = json::array();
  consts.push_back(constant_json("w", random_f32({3, 3, 2, 5}, 12)));  // HWIO
  consts.push_back(constant_json("b", random_f32({5}, 13)));
  json g = header();
  g["inputs"] = {{{"name", "x"}, {"shape", {1, 6, 6, 2}}}};
  g["nodes"] = {{{"name", "conv"},
                 {"op", "conv2d"},
                 {"inputs", {"x", "w", "b"}},
                 {"attrs", {{"layout", "NHWC"}, {"strides", {2, 2}}}}},
                bn_json("bn", "conv", -1, 5, 30, consts)};
  g["constants"] = consts;
  g["outputs"] = {"bn"};
  check_fold(g, {{"x", random_f32({1, 6, 6, 2}, 6)}}, 1);
}

TEST(FoldBatchNorm, Dense) {
  json consts = json::array();
  consts.push_back(constant_json("w", random_f32({6, 4}, 14)));
  consts.push_back(constant_json("b", random_f32({6}, 15)));
  json g = header();
  g["inputs"] = {{{"name", "x"}, {"shape", {3, 4}}}};
  g["nodes"] = {{{"name", "fc"}, {"op", "dense"}, {"inputs", {"x", "w", "b"}}}, bn_json("bn", "fc", 1, 6, 40, consts),
                {{"name", "sm"}, {"op", "softmax"}, {"inputs", {"bn"}}}};
  g["constants"] = consts;
  g["outputs"] = {"sm"};
  check_fold(g, {{"x", random_f32({3, 4}, 7)}}, 1);
}

TEST(FoldBatchNorm, LeavesWhatCannotBeFolded) {
  json consts = json::array();
  consts.push_back(constant_json("w", random_f32({4, 3, 1, 1}, 16)));
  json g = header();
  g["inputs"] = {{{"name", "x"}, {"shape", {1, 3, 4, 4}}}, {{"name", "wx"}, {"shape", {4, 3, 1, 1}}}};
  g["nodes"] = {
      // The conv output has a second consumer.
      {{"name", "conv"}, {"op", "conv2d"}, {"inputs", {"x", "w"}}},
      bn_json("bn", "conv", 1, 4, 50, consts),
      {{"name", "also"}, {"op", "relu"}, {"inputs", {"conv"}}},
      // The weight is not a constant.
      {{"name", "conv2"}, {"op", "conv2d"}, {"inputs", {"x", "wx"}}},
      bn_json("bn2", "conv2", 1, 4, 60, consts),
      // The producer is not a conv2d or dense.
      {{"name", "r"}, {"op", "relu"}, {"inputs", {"x"}}},
      bn_json("bn3", "r", 1, 3, 70, consts),
  };
  g["constants"] = consts;
  g["outputs"] = {"bn", "also", "bn2", "bn3"};
  Graph graph = load_graph_json(g.dump(), "g.json", FileReader{});
  Graph folded = fold_batch_norm(graph);
  EXPECT_EQ(node_names(folded), node_names(graph));
  EXPECT_EQ(folded.constants.size(), graph.constants.size());
  check_fold(g, {{"x", random_f32({1, 3, 4, 4}, 8)}, {"wx", random_f32({4, 3, 1, 1}, 9)}}, 0);
}

TEST(FoldBatchNorm, SharedWeightStaysAndWrongAxisIsLeft) {
  json consts = json::array();
  consts.push_back(constant_json("w", random_f32({4, 4, 1, 1}, 17)));
  json g = header();
  g["inputs"] = {{{"name", "x"}, {"shape", {1, 4, 3, 3}}}};
  g["nodes"] = {
      // Folded: the weight is shared with c2, so a new weight is made and "w" stays.
      {{"name", "c1"}, {"op", "conv2d"}, {"inputs", {"x", "w"}}},
      bn_json("bn", "c1", 1, 4, 80, consts),
      {{"name", "c2"}, {"op", "conv2d"}, {"inputs", {"bn", "w"}}},
      // Not folded: the axis is not the channel axis (axis 2 has extent 3 here).
      bn_json("bn2", "c2", 2, 3, 90, consts),
  };
  g["constants"] = consts;
  g["outputs"] = {"bn2"};
  check_fold(g, {{"x", random_f32({1, 4, 3, 3}, 10)}}, 1);
  Graph folded = fold_batch_norm(load_graph_json(g.dump(), "g.json", FileReader{}));
  EXPECT_EQ(node_names(folded), (std::vector<std::string>{"bn", "c2", "bn2"}));
  EXPECT_TRUE(folded.constants.count("w"));
  EXPECT_TRUE(folded.constants.count("bn2_g"));
  EXPECT_FALSE(folded.constants.count("bn_g"));
}

// ------------------------------------------------------------------ the bundled model

TEST(DigitsModel, MatchesTheNumpyReference) {
  std::string dir = std::string(mtir::source_dir()) + "/models/digits";
  Graph g = load_file(dir + "/digits.json");
  Graph folded = fold_batch_norm(g);
  EXPECT_EQ(folded.nodes.size(), g.nodes.size() - 1);  // bn1 folded into conv1
  NDArray images = read_npy(slurp(dir + "/test_images.npy"), "test_images.npy");
  NDArray ref = read_npy(slurp(dir + "/reference_probs.npy"), "reference_probs.npy");
  NDArray labels = read_npy(slurp(dir + "/test_labels.npy"), "test_labels.npy");
  ASSERT_EQ(images.shape, (std::vector<int64_t>{100, 1, 8, 8}));
  ASSERT_EQ(ref.shape, (std::vector<int64_t>{100, 10}));
  ASSERT_EQ(labels.shape, (std::vector<int64_t>{100}));
  int correct = 0;
  for (int64_t i = 0; i < 10; ++i) {
    NDArray x = NDArray::zeros(DataType::Float(32), {1, 1, 8, 8});
    for (int64_t k = 0; k < 64; ++k) x.set_float(k, images.get_float(i * 64 + k));
    for (const Graph* graph : {&g, &folded}) {
      NDArray probs = run_graph(*graph, {{"x", x}}).at("probs");
      ASSERT_EQ(probs.shape, (std::vector<int64_t>{1, 10}));
      int64_t best = 0, ref_best = 0;
      for (int64_t c = 0; c < 10; ++c) {
        EXPECT_NEAR(probs.get_float(c), ref.get_float(i * 10 + c), 1e-4) << "image " << i << " class " << c;
        if (probs.get_float(c) > probs.get_float(best)) best = c;
        if (ref.get_float(i * 10 + c) > ref.get_float(i * 10 + ref_best)) ref_best = c;
      }
      EXPECT_EQ(best, ref_best) << "image " << i;
      if (graph == &g) correct += best == labels.get_int(i);
    }
  }
  EXPECT_GE(correct, 9);
}

}  // namespace
}  // namespace mtir
