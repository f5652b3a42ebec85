// The JSON graph writer (write_graph_json, graph.h): load(write(g)) == g for the bundled
// model, for a graph with every dtype the format holds, and (when the ONNX frontend is
// built) for every ONNX node test the frontend converts; what the format cannot hold is
// refused.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <iostream>
#include <fstream>
#include <sstream>

#include "frontend/graph.h"
#include "support/diagnostic.h"
#ifdef MICROTIR_HAVE_ONNX
#include "frontend/onnx.h"
#include "support/source_dir.h"
#endif

namespace mtir {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) user_error(Span{}, "cannot open '" + path + "'");
  std::ostringstream os;
  os << f.rdbuf();
  return os.str();
}

// Every field of two graphs, with the first difference named.
void expect_same(const Graph& a, const Graph& b, const std::string& what) {
  SCOPED_TRACE(what);
  EXPECT_EQ(a.name, b.name);
  ASSERT_EQ(a.inputs.size(), b.inputs.size());
  for (size_t i = 0; i < a.inputs.size(); ++i) {
    EXPECT_EQ(a.inputs[i].first, b.inputs[i].first);
    EXPECT_EQ(a.inputs[i].second.str(), b.inputs[i].second.str());
  }
  ASSERT_EQ(a.constants.size(), b.constants.size());
  for (auto ia = a.constants.begin(), ib = b.constants.begin(); ia != a.constants.end(); ++ia, ++ib) {
    EXPECT_EQ(ia->first, ib->first);
    EXPECT_EQ(ia->second.dtype.str(), ib->second.dtype.str()) << ia->first;
    EXPECT_EQ(ia->second.shape, ib->second.shape) << ia->first;
    EXPECT_TRUE(ia->second.data == ib->second.data) << "the bytes of constant '" << ia->first << "' differ";
  }
  EXPECT_EQ(a.quantization, b.quantization);
  ASSERT_EQ(a.nodes.size(), b.nodes.size());
  for (size_t i = 0; i < a.nodes.size(); ++i) {
    const GraphNode &x = a.nodes[i], &y = b.nodes[i];
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.op, y.op) << x.name;
    EXPECT_EQ(x.inputs, y.inputs) << x.name;
    EXPECT_EQ(x.attrs, y.attrs) << x.name << ": " << x.attrs.dump() << " vs " << y.attrs.dump();
    EXPECT_EQ(x.type.str(), y.type.str()) << x.name;
    EXPECT_EQ(x.device, y.device) << x.name;
  }
  EXPECT_EQ(a.outputs, b.outputs);
}

Graph round_trip(const Graph& g) { return load_graph_json(write_graph_json(g), "written.json", nullptr); }

std::string error_of(const Graph& g) {
  try {
    write_graph_json(g);
  } catch (const DiagnosticError& e) {
    EXPECT_FALSE(e.internal());
    return e.diagnostics().empty() ? "" : e.diagnostics()[0].message;
  }
  ADD_FAILURE() << "expected a DiagnosticError";
  return "";
}

TEST(GraphWriter, DigitsModelRoundTrips) {
  std::string dir = std::string(mtir::source_dir()) + "/models/digits";
  Graph g = load_graph_json(slurp(dir + "/digits.json"), "digits.json",
                            [&](const std::string& rel) { return slurp(dir + "/" + rel); });
  std::string text = write_graph_json(g);
  expect_same(g, round_trip(g), "digits.json");
  // Weights are inline: the written graph needs no files, and writing is deterministic.
  EXPECT_EQ(text.find("\"file\""), std::string::npos);
  EXPECT_EQ(write_graph_json(round_trip(g)), text);
  // One line per node, in the graph's order.
  EXPECT_NE(text.find("\n    {\"name\":\"conv1\",\"op\":\"conv2d\""), std::string::npos) << text.substr(0, 2000);
}

// Every dtype the format holds, a scalar, extreme values, attributes of every JSON kind,
// a device, several outputs.
TEST(GraphWriter, EveryDtypeAndFieldRoundTrips) {
  const char* text = R"({
    "format": "microtir-graph", "version": 1, "name": "all_kinds",
    "inputs": [{"name": "x", "shape": [2, 3]}],
    "constants": [
      {"name": "f32", "shape": [3], "dtype": "float32", "values": [0.1, -3.4028234663852886e38, 1e-45]},
      {"name": "f16", "shape": [3], "dtype": "float16", "values": [0.1, 65504, 5.960464477539063e-08]},
      {"name": "i8", "shape": [2], "dtype": "int8", "values": [-128, 127]},
      {"name": "u8", "shape": [2], "dtype": "uint8", "values": [0, 255]},
      {"name": "i16", "shape": [2], "dtype": "int16", "values": [-32768, 32767]},
      {"name": "u16", "shape": [1], "dtype": "uint16", "values": [65535]},
      {"name": "i32", "shape": [2], "dtype": "int32", "values": [-2147483648, 2147483647]},
      {"name": "u32", "shape": [1], "dtype": "uint32", "values": [4294967295]},
      {"name": "i64", "shape": [2], "dtype": "int64", "values": [-9223372036854775808, 9223372036854775807]},
      {"name": "scalar", "shape": [], "dtype": "float32", "values": [-0.0]},
      {"name": "b", "shape": [3], "dtype": "float32", "values": [1, 2, 3]}
    ],
    "nodes": [
      {"name": "y", "op": "add", "inputs": ["x", "b"]},
      {"name": "z", "op": "clip", "inputs": ["y"], "attrs": {"min": -1.5, "max": 2}},
      {"name": "p", "op": "pad", "inputs": ["z"], "attrs": {"pad_width": [[0, 1], [2, 0]], "pad_value": 0.25, "mode": "constant"}},
      {"name": "r", "op": "reshape", "inputs": ["x"], "attrs": {"newshape": [3, 2]}}
    ],
    "outputs": ["p", "r"],
    "quantization": {"x": {"scale": 0.584702909, "zero_point": 83}, "r": {"scale": 0.00390625, "zero_point": -128}}
  })";
  Graph g = load_graph_json(text, "all_kinds.json", nullptr);
  EXPECT_EQ(g.quantization.at("x"), (std::pair<double, int64_t>{0.584702909, 83}));
  expect_same(g, round_trip(g), "all_kinds");
  // A placed node keeps its device (the loader checks it against the device when read).
  Graph placed = g;
  placed.nodes[0].device = "npu0";
  EXPECT_NE(write_graph_json(placed).find(R"("inputs":["x","b"],"device":"npu0"})"), std::string::npos);
  EXPECT_EQ(write_graph_json(g).find("device"), std::string::npos);
}

TEST(GraphWriter, RefusesWhatJsonCannotHold) {
  Graph g = load_graph_json(R"({"format": "microtir-graph", "version": 1, "name": "m",
    "inputs": [{"name": "x", "shape": [2]}], "nodes": [{"name": "y", "op": "relu", "inputs": ["x"]}],
    "outputs": ["y"]})", "m.json", nullptr);
  Graph f64 = g;
  f64.constants["c"] = NDArray::zeros(DataType::Float(64), {2});
  EXPECT_EQ(error_of(f64), "unsupported: constant 'c' has dtype float64, which a JSON graph cannot hold");
  Graph f64_input = g;
  f64_input.inputs[0].second.dtype = DataType::Float(64);
  EXPECT_EQ(error_of(f64_input), "unsupported: input 'x' has dtype float64, which a JSON graph cannot hold");
  Graph nan = g;
  nan.constants["c"] = NDArray::zeros(DataType::Float(32), {2});
  nan.constants["c"].set_float(1, std::nan(""));
  EXPECT_EQ(error_of(nan), "unsupported: constant 'c' holds NaN or infinity, which a JSON graph cannot hold");
  Graph inf = g;
  inf.nodes[0].attrs = {{"alpha", {1.0, HUGE_VAL}}};
  EXPECT_EQ(error_of(inf), "unsupported: an attribute of node 'y' holds NaN or infinity, which a JSON graph cannot hold");
}

#ifdef MICROTIR_HAVE_ONNX
// Every ONNX node test and frontend case the frontend converts: the JSON graph
// `microtir import` writes loads back into the same graph.
TEST(GraphWriter, OnnxNodeTestsRoundTrip) {
  const std::string dir = "/usr/share/libonnx-testdata/data/node";
  if (!std::filesystem::is_directory(dir)) GTEST_SKIP() << dir << " is missing (libonnx-testdata)";
  std::vector<std::string> models;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (std::filesystem::exists(e.path() / "model.onnx")) models.push_back((e.path() / "model.onnx").string());
  models.push_back(std::string(mtir::source_dir()) + "/models/digits/digits.onnx");
  // The frontend's own cases (tests/onnx/make_import_cases.py): every dtype, raw and typed.
  for (const auto& e : std::filesystem::directory_iterator(std::string(mtir::source_dir()) + "/tests/onnx/import"))
    if (e.path().extension() == ".onnx") models.push_back(e.path().string());
  int converted = 0, written = 0;
  for (const auto& path : models) {
    Graph g;
    try {
      g = load_onnx(slurp(path), path);
    } catch (const DiagnosticError& e) {
      if (e.internal()) ADD_FAILURE() << path << ": " << e.what();
      continue;  // refused by the frontend: not this test's business
    }
    ++converted;
    std::string text;
    try {
      text = write_graph_json(g);
    } catch (const DiagnosticError& e) {
      EXPECT_EQ(e.diagnostics().at(0).message.rfind("unsupported: ", 0), 0u) << path;
      continue;
    }
    ++written;
    expect_same(g, load_graph_json(text, path, nullptr), path);
  }
  EXPECT_GT(converted, 100);
  // The few with a NaN, an infinity or a dtype JSON has no name for (float64, bool, uint64:
  // Max and Min of float64 and uint64 among them).
  EXPECT_GE(written, converted - 8);
  std::cout << "[ info ] " << written << " of " << converted << " converted ONNX models round-trip\n";
}
#endif

}  // namespace
}  // namespace mtir
