// Persistent state (Graph::state, TFLite variable tensors) through the pipeline: the JSON
// graph carries it, the rules of its use are checked, AOT makes it main parameters of
// their own role that never fuse or get planned, and the C interface keeps it in the
// artifact between runs and resets it (a hand-written main, tests/codegen/state_main.c,
// runs the model twice and after a reset).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include "artifact/c_interface.h"
#include "artifact/wasm_model.h"
#include "driver/build.h"
#include "executor/aot.h"
#include "interp/interpreter.h"
#include "sim/host_sim.h"
#include "sim/process.h"
#include "support/compare.h"
#include "support/diagnostic.h"
#include "support/source_dir.h"

namespace mtir {
namespace {

namespace fs = std::filesystem;

// An SVDF (rank 2, 4 filters, memory 3) with a non-uniform initial state, then a relu.
std::string svdf_graph(const std::string& extra_nodes = "", const std::string& outputs = "[\"y\"]") {
  return R"({"format": "microtir-graph", "version": 1, "name": "model",
  "inputs": [{"name": "x", "shape": [1, 3], "dtype": "float32"}],
  "constants": [
    {"name": "wf", "shape": [4, 3], "dtype": "float32", "values": [0.5, -1, 0.25, 1, 0.5, -0.5, 0.75, 0.125, -0.25, -1, 1, 0.5]},
    {"name": "wt", "shape": [4, 3], "dtype": "float32", "values": [1, 0.5, 0.25, -1, 1, -1, 0.5, 0.5, 0.5, 2, -2, 1]},
    {"name": "b", "shape": [2], "dtype": "float32", "values": [0.125, -0.25]}],
  "state": [{"name": "memory", "shape": [1, 12], "dtype": "float32",
             "values": [0.5, 0, 0, 0, -0.5, 0, 0, 0, 1, 0, 0, 0]}],
  "nodes": [{"name": "s", "op": "svdf", "inputs": ["x", "wf", "wt", "b", "memory"], "attrs": {"rank": 2}},
            {"name": "y", "op": "relu", "inputs": ["s"]})" +
         extra_nodes + R"(],
  "outputs": )" + outputs + "}";
}

// `text` with the first `from` replaced by `to`.
std::string replaced(std::string text, const std::string& from, const std::string& to) {
  return text.replace(text.find(from), from.size(), to);
}

Graph load(const std::string& text) { return load_graph_json(text, "model.json", nullptr); }

std::string error_of(const std::string& text) {
  try {
    load(text);
  } catch (const DiagnosticError& e) {
    return e.diagnostics().at(0).message;
  }
  return "";
}

TEST(State, TheJsonGraphCarriesStateAndRoundTrips) {
  Graph g = load(svdf_graph());
  ASSERT_EQ(g.state.size(), 1u);
  EXPECT_EQ(g.type_of("memory").str(), "float32(1, 12)");
  Graph again = load(write_graph_json(g));
  ASSERT_EQ(again.state.size(), 1u);
  EXPECT_EQ(again.state.at("memory").data, g.state.at("memory").data);
  EXPECT_NE(write_graph_json(g).find("\"state\""), std::string::npos);
  // A graph without state writes no "state" field.
  g.state.clear();
  g.nodes.clear();
  g.outputs = {"x"};
  EXPECT_EQ(write_graph_json(g).find("\"state\""), std::string::npos);
}

TEST(State, TheRulesOfStateAreChecked) {
  // Several nodes may read a state (a resource variable's reads and assignments), each
  // through one input.
  EXPECT_EQ(error_of(svdf_graph(R"(, {"name": "z", "op": "relu", "inputs": ["memory"]})", R"(["y", "z"])")), "");
  EXPECT_NE(error_of(svdf_graph(R"(, {"name": "z", "op": "add", "inputs": ["memory", "memory"]})", R"(["y", "z"])"))
                .find("state 'memory' is read twice by node 'z'"),
            std::string::npos);
  // The input an op updates must be a state.
  std::string text = replaced(svdf_graph(), "\"b\", \"memory\"]", "\"b\", \"wf2\"]");
  text = replaced(text, "\"constants\": [",
                  R"("constants": [{"name": "wf2", "shape": [1, 12], "dtype": "float32", "values": [0,0,0,0,0,0,0,0,0,0,0,0]}, )");
  EXPECT_NE(error_of(text).find("updates its input 4 ('wf2') in place, which must be a state"), std::string::npos)
      << error_of(text);
  // A state is no model output (the loader says so first, as for an input or constant).
  EXPECT_NE(error_of(svdf_graph("", R"(["y", "memory"])")).find("output 'memory' is the state, not a node's result"),
            std::string::npos);
  // Names are unique across state and the rest.
  std::string dup = replaced(svdf_graph(), "\"name\": \"memory\"", "\"name\": \"wf\"");
  EXPECT_NE(error_of(dup).find("duplicate name 'wf'"), std::string::npos) << error_of(dup);
}

TEST(State, StateIsAMainParameterOfItsOwnThatNeverFusesOrIsPlanned) {
  Graph g = load(svdf_graph());
  AotModule aot = build_aot(g);
  std::vector<AotModule::Role> roles;
  size_t state_index = 0;
  for (size_t i = 0; i < aot.params.size(); ++i) {
    roles.push_back(aot.params[i].role);
    if (aot.params[i].role == AotModule::Role::kState) state_index = i;
  }
  using R = AotModule::Role;
  EXPECT_EQ(roles, (std::vector<R>{R::kInput, R::kConstant, R::kConstant, R::kConstant, R::kState, R::kOutput}));
  EXPECT_EQ(aot.params[state_index].name, "memory");
  // The svdf keeps its kernel: the relu after it does not fuse into it.
  EXPECT_NE(aot.kernel_of.at("s"), aot.kernel_of.at("y"));
  // Neither of the lists -reuse-io-buffers may reuse names the state.
  PrimFunc main = aot.module.lookup(aot.main);
  for (const char* attr : {kInputParamsAttr, kOutputParamsAttr}) {
    const std::string list = std::get<std::string>(main->attrs.at(attr));
    EXPECT_EQ(("," + list + ",").find("," + std::to_string(state_index) + ","), std::string::npos) << attr << ": " << list;
  }
  // Under -reuse-io-buffers=1 the lowered main still takes the state as its parameter.
  BuildResult built = build_c(aot.module, parse_target("c -unpacked-api=1 -reuse-io-buffers=1"));
  EXPECT_NE(built.sources.at(0).text.find("memory"), std::string::npos);
}

// Nodes that read or write a state run in node order: none fuses or is a view, so the
// read before an assignment sees the old value and the one after it the new one.
TEST(State, ReadsAndAssignmentsOfAVariableKeepTheirOrder) {
  Graph g = load(R"({"format": "microtir-graph", "version": 1, "name": "model",
  "inputs": [{"name": "x", "shape": [4], "dtype": "float32"}],
  "state": [{"name": "v", "shape": [4], "dtype": "float32", "values": [1, 2, 3, 4]}],
  "nodes": [{"name": "old", "op": "read_variable", "inputs": ["v"]},
            {"name": "old2", "op": "reshape", "inputs": ["v"], "attrs": {"newshape": [2, 2]}},
            {"name": "set", "op": "assign_variable", "inputs": ["v", "x"]},
            {"name": "new", "op": "read_variable", "inputs": ["v"]},
            {"name": "a", "op": "relu", "inputs": ["old"]},
            {"name": "b", "op": "add", "inputs": ["new", "a"]},
            {"name": "c", "op": "reshape", "inputs": ["old2"], "attrs": {"newshape": [4]}},
            {"name": "y", "op": "add", "inputs": ["b", "c"]}],
  "outputs": ["y"]})");
  AotModule aot = build_aot(g);
  EXPECT_NE(aot.kernel_of.at("old"), aot.kernel_of.at("a"));
  EXPECT_NE(aot.kernel_of.at("new"), aot.kernel_of.at("b"));
  EXPECT_TRUE(aot.kernel_of.count("old2")) << "a reshape of a state is a copy made where it is, not a view";
  // Interpreted: y = x + relu(old) + old, with old the value before the assignment; the
  // state ends as x.
  NDArray x = NDArray::zeros(DataType::Float(32), {4}), v = g.state.at("v"), y = NDArray::zeros(DataType::Float(32), {4});
  const double xs[] = {-1, 0.5, 2, -3};
  for (int i = 0; i < 4; ++i) x.set_float(i, xs[i]);
  ASSERT_EQ(aot.params.size(), 3u);
  std::vector<InterpArg> args = {&x, &v, &y};
  interpret(aot.module, aot.main, args);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(y.get_float(i), xs[i] + 2 * (i + 1)) << i;
    EXPECT_EQ(v.get_float(i), xs[i]) << i;
  }
}

TEST(State, PackedWithoutLinkedParamsIsRefusedAndPackedWithThemAddsTheState) {
  Graph g = load(svdf_graph());
  AotModule aot = build_aot(g);
  BuildResult packed = build_c(aot.module, parse_target("c -interface-api=packed"));
  try {
    c_interface(aot, g, packed.lowered.module, {"packed", false});
    ADD_FAILURE() << "packed -link-params=0 with state was accepted";
  } catch (const DiagnosticError& e) {
    EXPECT_NE(e.diagnostics().at(0).message.find("-interface-api=packed needs -link-params=1"), std::string::npos);
  }
  std::vector<SourceFileOut> files = c_interface(aot, g, packed.lowered.module, {"packed", true});
  ASSERT_EQ(files.size(), 2u);
  EXPECT_NE(files[0].text.find("int32_t tvmgen_model_reset(void);"), std::string::npos);
  EXPECT_NE(files[0].text.find("#define TVMGEN_MODEL_NUM_ARGS 2"), std::string::npos) << files[0].text;
  EXPECT_NE(files[1].text.find("= {(void*)tvmgen_model_state_memory, {kDLCPU, 0}"), std::string::npos) << files[1].text;
}

TEST(State, TheWasmModuleKeepsStateAndExportsReset) {
  Graph g = load(svdf_graph());
  AotModule aot = build_aot(g);
  Target target = parse_target("wasm");
  BuildResult built = build_for_target(aot.module, target);
  const std::string wat = wasm_model_module(aot, g, built.lowered.module, target);
  EXPECT_NE(wat.find("(export \"reset\")"), std::string::npos);
}

// Floats printed as hex bytes by state_main.c, one line per run.
NDArray floats_of(const std::string& hex, const std::vector<int64_t>& shape) {
  NDArray a = NDArray::zeros(DataType::Float(32), shape);
  for (size_t i = 0; i < a.data.size(); ++i) a.data[i] = static_cast<uint8_t>(std::stoi(hex.substr(2 * i, 2), nullptr, 16));
  return a;
}

TEST(State, TheCInterfaceCarriesStateOverRunsAndResetsIt) {
  Graph g = load(svdf_graph());
  AotModule aot = build_aot(g);
  // The reference: two interpreted runs on the same state arrays.
  const NDArray x1 = [] {
    NDArray a = NDArray::zeros(DataType::Float(32), {1, 3});
    a.set_float(0, 1.5), a.set_float(1, -0.5), a.set_float(2, 2);
    return a;
  }();
  NDArray x2 = x1;
  x2.set_float(0, -1), x2.set_float(2, 0.25);
  std::vector<NDArray> arrays;
  for (const auto& p : aot.params)
    arrays.push_back(p.role == AotModule::Role::kConstant ? g.constants.at(p.name)
                     : p.role == AotModule::Role::kState  ? g.state.at(p.name)
                                                           : NDArray::zeros(p.type.dtype, p.type.shape));
  std::vector<InterpArg> args;
  for (auto& a : arrays) args.push_back(&a);
  std::vector<NDArray> want;
  for (const NDArray* x : {&x1, static_cast<const NDArray*>(&x2)}) {
    arrays.front() = *x;
    interpret(aot.module, aot.main, args);
    want.push_back(arrays.back());
  }
  ASSERT_FALSE(compare_arrays(want[0], want[1]).ok) << "the second run must differ: the state carried over";

  {
    BuildResult built = build_c(aot.module, parse_target("c -interface-api=c -unpacked-api=1"));
    std::vector<SourceFileOut> files = built.sources;
    for (auto& f : c_interface(aot, g, built.lowered.module, {"c", true})) files.push_back(f);
    fs::path dir = fs::temp_directory_path() / ("microtir-state-" + std::to_string(getpid()));
    fs::create_directories(dir / "include");
    const std::string crt = sim::default_crt_dir();
    std::vector<std::string> cmd = {"cc", "-std=c99", "-O2", "-Wall", "-Wextra", "-Werror", "-pedantic",
                                    "-I" + crt + "/include", "-I" + (dir / "include").string()};
    for (const auto& f : files) {
      fs::path p = dir / fs::path(f.path).filename();
      if (p.extension() == ".h") p = dir / "include" / p.filename();
      std::ofstream(p) << f.text;
      if (p.extension() == ".c") cmd.push_back(p.string());
    }
    for (const auto& c : sim::crt_host_sources(crt)) cmd.push_back(c);
    cmd.insert(cmd.end(), {std::string(mtir::source_dir()) + "/tests/codegen/state_main.c", "-lm", "-o",
                           (dir / "firmware").string()});
    ASSERT_EQ(sim::run_process(cmd, dir / "build.log"), 0) << sim::read_text(dir / "build.log");
    for (int k = 0; k < 2; ++k) {
      const NDArray& x = k ? x2 : x1;
      std::ofstream(dir / ("x" + std::to_string(k) + ".bin"), std::ios::binary)
          .write(reinterpret_cast<const char*>(x.data.data()), static_cast<std::streamsize>(x.data.size()));
    }
    ASSERT_EQ(sim::run_process({(dir / "firmware").string(), (dir / "x0.bin").string(), (dir / "x1.bin").string()},
                               dir / "run.log"),
              0)
        << sim::read_text(dir / "run.log");
    std::istringstream lines(sim::read_text(dir / "run.log"));
    std::string run1, run2, reset, run3;
    std::getline(lines, run1), std::getline(lines, run2), std::getline(lines, reset), std::getline(lines, run3);
    EXPECT_TRUE(compare_arrays(floats_of(run1, {1, 2}), want[0]).ok) << run1;
    EXPECT_TRUE(compare_arrays(floats_of(run2, {1, 2}), want[1]).ok) << run2;
    EXPECT_EQ(reset, "reset 48 bytes of state");
    EXPECT_EQ(run3, run1);
    fs::remove_all(dir);
  }
  // -link-params=0: the weights come from the application, the state still from the artifact.
  BuildResult params = build_c(aot.module, parse_target("c -interface-api=c -unpacked-api=1 -link-params=0"));
  std::vector<SourceFileOut> files = c_interface(aot, g, params.lowered.module, {"c", false});
  EXPECT_EQ(files[0].text.find("void* memory;"), std::string::npos) << "the application never passes state";
  EXPECT_NE(files[1].text.find("tvmgen_model_state_memory_initial"), std::string::npos)
      << "a non-uniform initial state is restored from a copy";
}

}  // namespace
}  // namespace mtir
