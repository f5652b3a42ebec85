// The AOT executor on the bundled digits model: one main that calls every operator
// with call_tir, checked against the numpy reference the model was exported with, in
// the interpreter and as host C with both calling conventions.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <map>
#include <fstream>
#include <set>
#include <sstream>
#include <unistd.h>

#include "analysis/well_formed.h"
#include "artifact/memory_plan.h"
#include "artifact/c_interface.h"
#include "sim/process.h"
#include "driver/build.h"
#include "executor/aot.h"
#include "interp/interpreter.h"
#include "sim/host_sim.h"
#include "support/compare.h"
#include "support/npy.h"
#include "support/source_dir.h"

namespace mtir {
namespace {

namespace fs = std::filesystem;
const fs::path kModel = fs::path(mtir::source_dir()) / "models" / "digits";

std::string read(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

struct Digits {
  Graph graph;
  AotModule aot;
  NDArray images, labels, reference;
};

const Digits& digits() {
  static const Digits d = [] {
    Digits d;
    FileReader reader = [](const std::string& rel) { return read(kModel / rel); };
    d.graph = fold_batch_norm(load_graph_json(read(kModel / "digits.json"), "digits.json", reader));
    d.aot = build_aot(d.graph);
    d.images = read_npy(read(kModel / "test_images.npy"), "test_images.npy");
    d.labels = read_npy(read(kModel / "test_labels.npy"), "test_labels.npy");
    d.reference = read_npy(read(kModel / "reference_probs.npy"), "reference_probs.npy");
    return d;
  }();
  return d;
}

// Arguments of main for image `k`: the image, the weights, a zeroed output.
std::vector<NDArray> main_arguments(const Digits& d, int64_t k) {
  std::vector<NDArray> arrays;
  for (const auto& p : d.aot.params) {
    NDArray a = NDArray::zeros(p.type.dtype, p.type.shape);
    if (p.role == AotModule::Role::kConstant) a = d.graph.constants.at(p.name);
    if (p.role == AotModule::Role::kInput) {
      const size_t bytes = a.data.size();
      std::copy(d.images.data.begin() + static_cast<std::ptrdiff_t>(k * bytes),
                d.images.data.begin() + static_cast<std::ptrdiff_t>((k + 1) * bytes), a.data.begin());
    }
    arrays.push_back(std::move(a));
  }
  return arrays;
}

std::vector<InterpArg> as_args(std::vector<NDArray>& arrays) {
  std::vector<InterpArg> args;
  for (auto& a : arrays) args.push_back(&a);
  return args;
}

int64_t argmax(const NDArray& probs) {
  int64_t best = 0;
  for (int64_t i = 1; i < probs.num_elements(); ++i)
    if (probs.get_float(i) > probs.get_float(best)) best = i;
  return best;
}

TEST(Aot, MainCallsEveryOperatorWithCallTir) {
  const Digits& d = digits();
  EXPECT_TRUE(check_well_formed(d.aot.module).empty());
  EXPECT_EQ(d.aot.main, "tvmgen_digits___tvm_main__");
  // One function per node (after batch-norm folding; conv+relu fused twice; the flatten
  // is a view, no kernel) plus main.
  EXPECT_EQ(d.aot.module.functions.size(), d.graph.nodes.size() - 2 - 1 + 1);
}

TEST(Aot, FlattenIsAViewOfItsInput) {
  const Digits& d = digits();
  PrimFunc main = d.aot.module.lookup(d.aot.main);
  ASSERT_NE(main, nullptr);
  // Allocations first, then the view declared on pool2's memory under flat's shape.
  Stmt s = main->body;
  std::map<std::string, const VarNode*> data_of;
  while (const auto* a = as<AllocateNode>(s)) {
    data_of[a->buffer->name] = a->buffer->data.get();
    s = a->body;
  }
  const auto* view = as<DeclBufferNode>(s);
  ASSERT_NE(view, nullptr);
  EXPECT_EQ(view->buffer->name, "flat");
  EXPECT_EQ(view->buffer->data.get(), data_of.at("pool2"));
  EXPECT_FALSE(data_of.count("flat"));
}

TEST(Aot, KernelOfNamesTheFunctionComputingEachNode) {
  const Digits& d = digits();
  // Every node but the flatten, a view that runs no kernel.
  ASSERT_EQ(d.aot.kernel_of.size(), d.graph.nodes.size() - 1);
  EXPECT_FALSE(d.aot.kernel_of.count("flat"));
  for (const GraphNode& n : d.graph.nodes) {
    if (n.name != "flat") {
      EXPECT_NE(d.aot.module.lookup(d.aot.kernel_of.at(n.name)), nullptr) << n.name;
    }
  }
  // relu1 fused into the convolution before it (bn1 after folding): one kernel for both.
  EXPECT_EQ(d.aot.kernel_of.at("relu1"), "tvmgen_digits_fused_bn1_relu1");
  EXPECT_EQ(d.aot.kernel_of.at("bn1"), d.aot.kernel_of.at("relu1"));
  EXPECT_EQ(d.aot.kernel_of.at("pool1"), "tvmgen_digits_pool1");
}

TEST(Aot, MemoryPlanNamesTheKernelEachStepCalls) {
  const Digits& d = digits();
  BuildResult built = build_c(d.aot.module, parse_target("c -interface-api=c -unpacked-api=1"));
  FunctionMemoryPlan plan;
  for (const auto& rec : built.lowered.records)
    if (rec.name == "plan_memory") plan = memory_plan_of(rec.module.lookup(d.aot.main));
  ASSERT_TRUE(plan.planned);
  ASSERT_EQ(plan.step_callees.size(), static_cast<size_t>(plan.steps));
  EXPECT_EQ(plan.step_callees.front(), "tvmgen_digits_fused_bn1_relu1");
  EXPECT_EQ(plan.step_callees.back(), "tvmgen_digits_probs");
  // The tensor a step writes first is that kernel's output.
  for (const auto& t : plan.tensors) {
    if (t.name == "pool1") {
      EXPECT_EQ(plan.step_callees.at(t.first_step), "tvmgen_digits_pool1");
    }
  }
}

TEST(Aot, InterpreterMatchesTheNumpyReferenceOnAllTestImages) {
  const Digits& d = digits();
  const int64_t n = d.labels.num_elements();
  ASSERT_EQ(n, 100);
  int correct = 0, reference_correct = 0;
  for (int64_t k = 0; k < n; ++k) {
    std::vector<NDArray> arrays = main_arguments(d, k);
    interpret(d.aot.module, d.aot.main, as_args(arrays));
    const NDArray& probs = arrays.back();
    NDArray want = NDArray::zeros(DataType::Float(32), {1, 10});
    for (int64_t i = 0; i < 10; ++i) want.set_float(i, d.reference.get_float(k * 10 + i));
    Difference diff = compare_arrays(probs, want, 1e-5);
    EXPECT_TRUE(diff.ok) << "image " << k << ": max abs diff " << diff.max_abs;
    correct += argmax(probs) == d.labels.get_int(k);
    reference_correct += argmax(want) == d.labels.get_int(k);
  }
  // The compiled model is exactly as accurate as the model it came from.
  EXPECT_EQ(correct, reference_correct);
  EXPECT_GE(correct, 95);
}

TEST(Aot, IntermediatesShareOnePlannedPool) {
  const Digits& d = digits();
  BuildResult built = build_c(d.aot.module, parse_target("c -unpacked-api=0"));
  PrimFunc main = built.lowered.module.lookup(d.aot.main + "_compute");
  ASSERT_NE(main, nullptr);
  int64_t pool = std::get<int64_t>(main->attrs.at("workspace.pool_bytes"));
  int64_t bound = std::get<int64_t>(main->attrs.at("workspace.lower_bound_bytes"));
  EXPECT_GE(pool, bound);
  EXPECT_GT(bound, 0);
  // One workspace allocation for all of them in main's generated C.
  const std::string& c = built.sources[0].text;
  const std::string head = "int32_t " + d.aot.main + "_compute(";
  size_t begin = c.find(head, c.find(head) + 1);  // the definition, after the prototype
  ASSERT_NE(begin, std::string::npos);
  size_t end = c.find("\n}\n", begin);
  size_t allocations = 0;
  for (size_t p = begin; (p = c.find("TVMBackendAllocWorkspace(", p)) < end; ++p) ++allocations;
  EXPECT_EQ(allocations, 1u);
}

TEST(Aot, PoolOffsetsFollowTheTargetsAlignment) {
  const Digits& d = digits();
  for (int alignment : {16, 64, 256}) {
    SCOPED_TRACE(alignment);
    BuildResult built =
        build_c(d.aot.module, parse_target("c -unpacked-api=1 -workspace-byte-alignment=" + std::to_string(alignment)));
    PrimFunc main = built.lowered.module.lookup(d.aot.main);
    int views = 0;
    for (Stmt s = main->body; s;) {
      if (const auto* a = as<AllocateNode>(s)) {
        s = a->body;
      } else if (const auto* v = as<DeclBufferNode>(s)) {
        const int64_t* offset = as_const_int(v->buffer->elem_offset);
        if (offset && v->buffer->data != main->params[0]) {
          EXPECT_EQ(*offset * v->buffer->dtype.bytes() % alignment, 0) << v->buffer->name;
          ++views;
        }
        s = v->body;
      } else {
        break;
      }
    }
    EXPECT_GE(views, 5);
    EXPECT_EQ(std::get<int64_t>(main->attrs.at("workspace.alignment")), alignment);
  }
}

TEST(Aot, HostCAndLlvmMatchTheInterpreterWithBothConventions) {
  const Digits& d = digits();
  // The LLVM backend too: its artifact runs the same way and must agree.
  for (const char* target : {"c", "c -unpacked-api=1", "llvm", "llvm -unpacked-api=1"}) {
    SCOPED_TRACE(target);
    BuildResult built = build_for_target(d.aot.module, parse_target(target));
    for (int64_t k : {0, 37, 99}) {
      std::vector<NDArray> want = main_arguments(d, k), got = main_arguments(d, k);
      interpret(d.aot.module, d.aot.main, as_args(want));
      sim::HostSimOptions options;
      options.work_dir = (fs::temp_directory_path() / ("microtir-aot-" + std::to_string(getpid()))).string();
      sim::run_on_host({&built, d.aot.main, d.aot.module.lookup(d.aot.main)}, as_args(got), options);
      fs::remove_all(options.work_dir);
      Difference diff = compare_arrays(got.back(), want.back());
      EXPECT_TRUE(diff.ok) << "image " << k << ": max abs diff " << diff.max_abs;
    }
  }
}

// Every operator call of the AOT main sits between TVMGEN_PROFILE_BEGIN(i, "kernel") and
// TVMGEN_PROFILE_END(i), numbered in call order; the file defines both as nothing unless
// the application did first. It compiles either way under gcc and clang at -Werror.
TEST(Aot, ProfilingHooksBracketEveryOperatorCall) {
  const Digits& d = digits();
  BuildResult built = build_c(d.aot.module, parse_target("c -interface-api=c -unpacked-api=1 -link-params=1"));
  std::string main_file;
  for (const auto& f : built.sources)
    if (f.text.find("___tvm_main__(") != std::string::npos && f.text.find("TVMGEN_PROFILE_BEGIN(0,") != std::string::npos)
      main_file = f.text;
  ASSERT_FALSE(main_file.empty()) << "no source holds the AOT main with profiling hooks";
  // The calls, in order: one BEGIN/END pair per kernel the main calls.
  std::vector<std::string> kernels;
  for (size_t at = main_file.find("TVMGEN_PROFILE_BEGIN(0,"); at != std::string::npos;
       at = main_file.find("TVMGEN_PROFILE_BEGIN(", at + 1)) {
    const std::string index = std::to_string(kernels.size());
    ASSERT_EQ(main_file.compare(at, 22 + index.size(), "TVMGEN_PROFILE_BEGIN(" + index + ","), 0) << main_file.substr(at, 80);
    size_t q = main_file.find('"', at), e = main_file.find('"', q + 1);
    kernels.push_back(main_file.substr(q + 1, e - q - 1));
    // The hooked kernel's call, or (merge_kernels) the call of the kernel sharing its code;
    // with its return code checked or not (a kernel that cannot fail, lower_call_tir).
    size_t call = main_file.find("tvmgen_digits_", e);
    size_t end = main_file.find("TVMGEN_PROFILE_END(" + index + ");", e);
    ASSERT_NE(call, std::string::npos);
    ASSERT_NE(end, std::string::npos);
    EXPECT_LT(call, end) << "the call of " << kernels.back() << " is not inside its hooks";
    // The callee is the hooked kernel itself, unless merge_kernels dropped that one.
    const std::string callee = main_file.substr(call, main_file.find('(', call) - call);
    EXPECT_NE(built.lowered.module.lookup(callee), nullptr) << callee;
    if (callee != kernels.back()) {
      EXPECT_EQ(built.lowered.module.lookup(kernels.back()), nullptr) << kernels.back() << " is hooked but " << callee << " is called";
    }
  }
  std::set<std::string> want;
  for (const auto& [node, kernel] : d.aot.kernel_of) want.insert(kernel);
  EXPECT_EQ(std::set<std::string>(kernels.begin(), kernels.end()), want);
  EXPECT_EQ(kernels.size(), want.size());
  EXPECT_NE(main_file.find("#ifndef TVMGEN_PROFILE_BEGIN\n#define TVMGEN_PROFILE_BEGIN(index, name) ((void)0)"),
            std::string::npos);

  fs::path dir = fs::temp_directory_path() / ("microtir-profile-hooks-" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::vector<std::string> sources;
  for (const auto& f : built.sources) {
    fs::path p = dir / fs::path(f.path).filename();
    std::ofstream(p) << f.text;
    if (p.extension() == ".c") sources.push_back(p.string());
  }
  // Hooks an application would define: functions it implements elsewhere.
  std::ofstream(dir / "hooks.h") << "void app_begin(int index, const char* name);\nvoid app_end(int index);\n"
                                    "#define TVMGEN_PROFILE_BEGIN(index, name) app_begin((index), (name))\n"
                                    "#define TVMGEN_PROFILE_END(index) app_end(index)\n";
  for (const char* cc : {"cc", "clang"}) {
    for (bool hooks : {false, true}) {
      SCOPED_TRACE(std::string(cc) + (hooks ? " with hooks" : " without hooks"));
      std::vector<std::string> cmd = {cc, "-std=c99", "-O2", "-Wall", "-Wextra", "-Werror", "-pedantic",
                                      "-I" + sim::default_crt_dir() + "/include", "-c"};
      if (hooks) cmd.insert(cmd.end(), {"-include", (dir / "hooks.h").string()});
      for (const auto& src : sources) {
        std::vector<std::string> one = cmd;
        one.insert(one.end(), {src, "-o", (dir / (fs::path(src).stem().string() + ".o")).string()});
        ASSERT_EQ(sim::run_process(one, dir / "build.log"), 0) << sim::read_text(dir / "build.log");
      }
      // With the hooks the object calls them; without, nothing of them is left.
      std::string syms;
      for (const auto& src : sources) {
        sim::run_process({"nm", (dir / (fs::path(src).stem().string() + ".o")).string()}, dir / "nm.log");
        syms += sim::read_text(dir / "nm.log");
      }
      EXPECT_EQ(syms.find("app_begin") != std::string::npos, hooks);
      EXPECT_EQ(syms.find("app_end") != std::string::npos, hooks);
    }
  }
  fs::remove_all(dir);
}

// What a firmware author does: include tvmgen_digits.h, declare the workspace with its
// size macro, fill the structs (or DLTensors), call the model, built with gcc and clang
// at -Werror -pedantic. One hand-written main per interface mode (tests/codegen/).
// Builds the artifact for `target` with `main_c` (gcc and clang) and checks the printed
// probabilities; `faults`, when given, instead runs the firmware once per fault and
// hands each output to it. `app_c`, when given, is one more source of the application's.
void run_firmware(const std::string& target, const InterfaceOptions& interface, const std::string& main_c,
                  const std::function<void(const std::string& fault, const std::string& out,
                                           const NDArray& want)>& faults = nullptr,
                  const std::string& app_c = "") {
  const Digits& d = digits();
  const Target t = parse_target(target);
  BuildResult built = build_c(main_reading_linked_weights(d.aot.module, d.aot, d.graph, t), t);
  std::vector<SourceFileOut> files = built.sources;
  for (auto& f : c_interface(d.aot, d.graph, built.lowered.module, interface)) files.push_back(f);
  if (!app_c.empty()) files.push_back({"app.c", app_c});
  fs::path dir = fs::temp_directory_path() / ("microtir-cinterface-" + std::to_string(getpid()));
  fs::create_directories(dir / "include");
  const std::string crt = sim::default_crt_dir();
  std::vector<std::string> sources;
  for (const auto& f : files) {
    fs::path p = dir / fs::path(f.path).filename();
    if (p.extension() == ".h") p = dir / "include" / p.filename();
    std::ofstream(p) << f.text;
    if (p.extension() == ".c") sources.push_back(p.string());
  }
  const int64_t k = 42;
  std::vector<NDArray> want = main_arguments(d, k);
  interpret(d.aot.module, d.aot.main, as_args(want));
  {
    std::ofstream image(dir / "image.bin", std::ios::binary), weights(dir / "weights.bin", std::ios::binary);
    const NDArray& x = want.front();
    image.write(reinterpret_cast<const char*>(x.data.data()), static_cast<std::streamsize>(x.data.size()));
    // The weights in main's parameter order, for the modes that pass them in.
    for (size_t i = 0; i < d.aot.params.size(); ++i)
      if (d.aot.params[i].role == AotModule::Role::kConstant)
        weights.write(reinterpret_cast<const char*>(want[i].data.data()), static_cast<std::streamsize>(want[i].data.size()));
  }
  for (const char* cc : {"cc", "clang"}) {
    SCOPED_TRACE(cc);
    std::vector<std::string> cmd = {cc, "-std=c99", "-O2", "-Wall", "-Wextra", "-Werror", "-pedantic",
                                    "-I" + crt + "/include", "-I" + (dir / "include").string()};
    cmd.insert(cmd.end(), sources.begin(), sources.end());
    for (const auto& c : sim::crt_host_sources(crt)) cmd.push_back(c);
    cmd.insert(cmd.end(), {std::string(mtir::source_dir()) + "/tests/codegen/" + main_c, "-lm", "-o",
                           (dir / "firmware").string()});
    ASSERT_EQ(sim::run_process(cmd, dir / "build.log"), 0) << sim::read_text(dir / "build.log");
    std::vector<std::string> run = {(dir / "firmware").string(), (dir / "image.bin").string()};
    if (faults) {
      for (const char* fault : {"ok", "small", "misaligned", "null-inputs", "null-input", "null-output",
                                "null-outputs"}) {
        std::vector<std::string> cmd_fault = run;
        cmd_fault.push_back(fault);
        ASSERT_EQ(sim::run_process(cmd_fault, dir / "run.log"), 0) << sim::read_text(dir / "run.log");
        faults(fault, sim::read_text(dir / "run.log"), want.back());
      }
      continue;
    }
    if (interface.interface_api == "packed" || !interface.link_params) run.push_back((dir / "weights.bin").string());
    ASSERT_EQ(sim::run_process(run, dir / "run.log"), 0) << sim::read_text(dir / "run.log");
    std::istringstream printed(sim::read_text(dir / "run.log"));
    NDArray got = NDArray::zeros(DataType::Float(32), {1, 10});
    for (int64_t i = 0; i < 10; ++i) {
      double v = 0;
      printed >> v;
      got.set_float(i, v);
    }
    EXPECT_TRUE(compare_arrays(got, want.back()).ok);
  }
  fs::remove_all(dir);
}

// The linked weights are static in main's source: an application may define the same
// names (here one weight's array and one with the weights file's stem) and still links.
TEST(Aot, CInterfaceWithLinkedWeightsRunsFromAHandWrittenMain) {
  run_firmware("c -interface-api=c -unpacked-api=1 -link-params=1", {"c", true}, "digits_main.c", nullptr,
               "const float tvmgen_digits_fc_w[1] = {0.0f};\nconst int tvmgen_digits_weights = 1;\n");
}

TEST(Aot, CInterfaceWithWeightsPassedInRunsFromAHandWrittenMain) {
  run_firmware("c -interface-api=c -unpacked-api=1 -link-params=0", {"c", false}, "params_digits_main.c");
}

TEST(Aot, PackedInterfaceRunsThroughTheRegistryFromAHandWrittenMain) {
  run_firmware("c -interface-api=packed", {"packed", false}, "packed_digits_main.c");
}

// Faults a caller can make give an error code and a message, and nothing outside the
// buffers the application handed over is written.
TEST(Aot, RuntimeFaultsGiveAnErrorAndNeverWriteOutsideTheBuffers) {
  auto check = [](const std::string& fault, const std::string& out, const NDArray& want) {
    SCOPED_TRACE(fault);
    std::istringstream lines(out);
    std::string rc_line, message, guards;
    std::getline(lines, rc_line);
    std::getline(lines, message);
    std::getline(lines, guards);
    EXPECT_EQ(guards, "guards intact") << out;
    if (fault == "ok" || fault == "misaligned") {
      EXPECT_EQ(rc_line, "rc 0") << out;
      NDArray got = NDArray::zeros(DataType::Float(32), {1, 10});
      for (int64_t i = 0; i < 10; ++i) {
        double v = 0;
        lines >> v;
        got.set_float(i, v);
      }
      EXPECT_TRUE(compare_arrays(got, want).ok) << out;
      return;
    }
    EXPECT_NE(rc_line, "rc 0") << out;
    const std::map<std::string, std::string> expected = {
        {"small", "TVMBackendAllocWorkspace"},
        {"null-inputs", "tvmgen_digits_run: inputs is NULL"},
        {"null-input", "tvmgen_digits_run: input 'x' is NULL"},
        {"null-output", "tvmgen_digits_run: output 'probs' is NULL"},
        {"null-outputs", "tvmgen_digits_run: outputs is NULL"}};
    EXPECT_NE(message.find(expected.at(fault)), std::string::npos) << out;
  };
  run_firmware("c -interface-api=c -unpacked-api=1 -link-params=1", {"c", true}, "faults_main.c", check);
}

// mul(x, x): one tensor reaches the kernel through two parameters, so the kernel must
// not promise distinct buffers (restrict), or the host C compiler rejects the call
// (-Werror=restrict) and an optimizer may assume what is false.
TEST(Aot, ATensorPassedTwiceDropsTheNoAliasPromise) {
  Graph g;
  g.name = "square";
  TensorType t{DataType::Float(32), {2, 3}};
  g.inputs = {{"x", t}};
  g.nodes = {GraphNode{"sq", "mul", {"x", "x"}, nlohmann::json::object(), t, ""},
             GraphNode{"y", "relu", {"x"}, nlohmann::json::object(), t, ""}};
  g.outputs = {"sq", "y"};
  AotModule aot = build_aot(g);
  int kernels = 0;
  for (const auto& [name, f] : aot.module.functions) {
    if (name == aot.main) continue;
    ++kernels;
    bool twice = name.size() > 3 && name.compare(name.size() - 3, 3, "_sq") == 0;
    EXPECT_EQ(std::get<bool>(f->attrs.at("tir.noalias")), !twice) << name;
  }
  EXPECT_EQ(kernels, 2);
  BuildResult built = build_c(aot.module, parse_target("c -unpacked-api=0"));
  std::vector<NDArray> want, got;
  for (const auto& p : aot.params) want.push_back(NDArray::zeros(p.type.dtype, p.type.shape));
  ASSERT_EQ(aot.params[0].name, "x");
  for (int64_t i = 0; i < 6; ++i) want[0].set_float(i, static_cast<double>(i) - 2.5);
  got = want;
  interpret(aot.module, aot.main, as_args(want));
  sim::HostSimOptions options;
  options.work_dir = (fs::temp_directory_path() / ("microtir-aot-twice-" + std::to_string(getpid()))).string();
  sim::run_on_host({&built, aot.main, aot.module.lookup(aot.main)}, as_args(got), options);
  fs::remove_all(options.work_dir);
  size_t sq = 0;
  while (sq < aot.params.size() && aot.params[sq].name != "sq") ++sq;
  ASSERT_LT(sq, aot.params.size());
  for (int64_t i = 0; i < 6; ++i) EXPECT_FLOAT_EQ(got[sq].get_float(i), (i - 2.5) * (i - 2.5));
  EXPECT_TRUE(compare_arrays(got[sq], want[sq]).ok);
}

// Two layers with the same shapes (their weights differ, but weights are arguments) get
// one kernel under merge_kernels: both calls name it, the other is not emitted, and the
// outputs still equal the interpreter's. With -disabled-schedules=merge_kernels both stay.
TEST(Aot, IdenticalLayersShareOneKernel) {
  Graph g;
  g.name = "twice";
  TensorType t{DataType::Float(32), {1, 4}}, w{DataType::Float(32), {4, 4}};
  g.inputs = {{"x", t}};
  for (const char* name : {"w1", "w2"}) {
    NDArray a = NDArray::zeros(DataType::Float(32), {4, 4});
    for (int64_t i = 0; i < 16; ++i) a.set_float(i, (name[1] == '1' ? 0.25 : -0.5) * static_cast<double>(i % 5) + 0.125);
    g.constants[name] = a;
  }
  g.nodes = {GraphNode{"d1", "dense", {"x", "w1"}, nlohmann::json::object(), t, ""},
             GraphNode{"d2", "dense", {"d1", "w2"}, nlohmann::json::object(), t, ""}};
  g.outputs = {"d2"};
  AotModule aot = build_aot(g);
  for (bool merge : {true, false}) {
    SCOPED_TRACE(merge ? "merge_kernels" : "without merge_kernels");
    BuildResult built =
        build_c(aot.module, parse_target(std::string("c -unpacked-api=1") + (merge ? "" : " -disabled-schedules=merge_kernels")));
    std::string all;
    for (const auto& f : built.sources) all += f.text;
    const std::string k1 = symbol_of(aot.kernel_of.at("d1"), aot.module.lookup(aot.kernel_of.at("d1")));
    const std::string k2 = symbol_of(aot.kernel_of.at("d2"), aot.module.lookup(aot.kernel_of.at("d2")));
    ASSERT_NE(k1, k2);
    EXPECT_NE(all.find("int32_t " + k1 + "("), std::string::npos);
    EXPECT_EQ(all.find("int32_t " + k2 + "(") != std::string::npos, !merge) << all;
    std::vector<NDArray> want;
    for (const auto& p : aot.params)
      want.push_back(p.role == AotModule::Role::kConstant ? g.constants.at(p.name) : NDArray::zeros(p.type.dtype, p.type.shape));
    for (int64_t i = 0; i < 4; ++i) want[0].set_float(i, static_cast<double>(i) - 1.5);
    std::vector<NDArray> got = want;
    interpret(aot.module, aot.main, as_args(want));
    sim::HostSimOptions options;
    options.work_dir = (fs::temp_directory_path() / ("microtir-aot-merge-" + std::to_string(getpid()))).string();
    sim::run_on_host({&built, aot.main, aot.module.lookup(aot.main)}, as_args(got), options);
    fs::remove_all(options.work_dir);
    EXPECT_TRUE(compare_arrays(got.back(), want.back()).ok);
  }
}

// -link-params=1 with the packed interface (TVM's `--target c`): the registry's entry
// takes the inputs and outputs only and puts the linked weights in their places.
TEST(Aot, PackedInterfaceWithLinkedWeightsHasAnEntryForInputsAndOutputs) {
  const Digits& d = digits();
  BuildResult built = build_c(d.aot.module, parse_target("c -interface-api=packed"));
  std::vector<SourceFileOut> files = c_interface(d.aot, d.graph, built.lowered.module, {"packed", true});
  ASSERT_EQ(files.size(), 2u);
  EXPECT_NE(files[0].text.find("#define TVMGEN_DIGITS_MAIN \"tvmgen_digits_run\""), std::string::npos) << files[0].text;
  EXPECT_NE(files[0].text.find("#define TVMGEN_DIGITS_NUM_ARGS 2"), std::string::npos) << files[0].text;
  EXPECT_EQ(files[0].text.find("TVMGEN_DIGITS_FC_W_SIZE"), std::string::npos) << "a linked weight is no argument";
  const std::string& c = files[1].text;
  // The DLTensor over a weight is named by its position (a name-derived one could be
  // another weight's symbol: weights "w" and "w_shape").
  EXPECT_NE(c.find("static DLTensor mtir_tensor_"), std::string::npos) << c;
  EXPECT_NE(c.find(" = {(void*)tvmgen_digits_fc_w, {kDLCPU, 0}, 2,"), std::string::npos) << c;
  EXPECT_NE(c.find("if (num_args != 2)"), std::string::npos) << c;
  EXPECT_NE(c.find("return tvmgen_digits___tvm_main__(all, codes, 8,"), std::string::npos) << c;
}

// -link-params=1 with the unpacked C interface: main reads the linked arrays itself, so
// run() passes only the inputs and outputs; the arrays are static, in a file only main's
// source includes. With -link-params=0 main takes every weight, and build_c alone (no
// artifact to define the arrays, as `microtir build` writes) keeps them parameters.
TEST(Aot, MainReadsLinkedWeightsItselfAndRunPassesOnlyInputsAndOutputs) {
  const Digits& d = digits();
  const Target t = parse_target("c -interface-api=c -unpacked-api=1 -link-params=1");
  BuildResult linked = build_c(main_reading_linked_weights(d.aot.module, d.aot, d.graph, t), t);
  const std::string& lib = linked.sources.at(0).text;
  EXPECT_NE(lib.find("int32_t tvmgen_digits___tvm_main__(float* restrict x, float* restrict probs) {"), std::string::npos) << lib;
  EXPECT_NE(lib.find("\n#include \"tvmgen_digits_weights.inc\"\n"), std::string::npos) << lib;
  EXPECT_EQ(lib.find("extern const"), std::string::npos) << lib;
  EXPECT_NE(lib.find("float* fc_w = (float*)tvmgen_digits_fc_w;"), std::string::npos) << lib;
  std::vector<SourceFileOut> files = c_interface(d.aot, d.graph, linked.lowered.module, {"c", true});
  ASSERT_EQ(files.size(), 3u);
  const std::string& c = files.at(1).text;
  EXPECT_EQ(c.find("tvmgen_digits_fc_w"), std::string::npos) << "the weights are main's file's: " << c;
  EXPECT_NE(c.find("return tvmgen_digits___tvm_main__(inputs->x, outputs->probs);"), std::string::npos) << c;
  EXPECT_EQ(files.at(2).path, "codegen/host/src/tvmgen_digits_weights.inc");
  EXPECT_NE(files.at(2).text.find("\nstatic const float tvmgen_digits_fc_w[640] = {"), std::string::npos) << files.at(2).text;
  EXPECT_EQ(build_c(d.aot.module, t).sources.at(0).text.find("#include \"tvmgen_digits_weights.inc\""), std::string::npos);

  BuildResult passed = build_c(d.aot.module, parse_target("c -interface-api=c -unpacked-api=1 -link-params=0"));
  EXPECT_NE(passed.sources.at(0).text.find("int32_t tvmgen_digits___tvm_main__(float* restrict x, float* restrict bn1_bias,"),
            std::string::npos);
  EXPECT_EQ(passed.sources.at(0).text.find("tvmgen_digits_weights.inc"), std::string::npos);
  const std::string unlinked = c_interface(d.aot, d.graph, passed.lowered.module, {"c", false}).at(1).text;
  EXPECT_NE(unlinked.find("(inputs->x, (void*)params->bn1_bias,"), std::string::npos) << unlinked;
}

// The initialiser of a linked weight or state, for every linked type: the extremes of
// each integer width (the sign of int8/int16/int32 taken from their bytes), six a line.
TEST(Aot, LinkedLiteralsSpellEveryTypeExactly) {
  auto list = [](DataType t, const std::vector<double>& values) {
    NDArray a = NDArray::zeros(t, {int64_t(values.size())});
    for (size_t i = 0; i < values.size(); ++i) {
      if (t.is_float()) a.set_float(int64_t(i), values[i]);
      else a.set_int(int64_t(i), int64_t(values[i]));
    }
    return c_literal_list(a);
  };
  EXPECT_EQ(list(DataType::Int(8), {-128, 127, 0, -1, 5, 6, 7}), "\n    -128, 127, 0, -1, 5, 6,\n    7");
  EXPECT_EQ(list(DataType::Int(16), {-32768, 32767, -2}), "\n    -32768, 32767, -2");
  EXPECT_EQ(list(DataType::Int(32), {-2147483648.0, 2147483647.0, -300}), "\n    -2147483648, 2147483647, -300");
  EXPECT_EQ(list(DataType::Int(64), {-5, 6}), "\n    INT64_C(-5), INT64_C(6)");
  EXPECT_EQ(list(DataType::UInt(8), {255, 0}), "\n    UINT32_C(255), UINT32_C(0)");
  EXPECT_EQ(list(DataType::Float(32), {1, -0.5}), "\n    1.0f, -0.5f");
  EXPECT_EQ(list(DataType::Int(8), {}), "");
}

// The packed API splits main into a wrapper and its kernel, both carrying the pool only
// the kernel allocates: the workspace bound counts it once, as for the C interface.
TEST(Aot, PackedInterfaceNeedsTheWorkspaceOfTheCInterface) {
  const Digits& d = digits();
  BuildResult packed = build_c(d.aot.module, parse_target("c -interface-api=packed -unpacked-api=0"));
  BuildResult plain = build_c(d.aot.module, parse_target("c -interface-api=c -unpacked-api=1"));
  ASSERT_TRUE(packed.lowered.module.lookup(d.aot.main + "_compute"));
  const int64_t plain_bytes = artifact_workspace_bytes(plain.lowered.module, d.aot.main);
  EXPECT_GT(plain_bytes, 15);
  EXPECT_EQ(artifact_workspace_bytes(packed.lowered.module, d.aot.main), plain_bytes);
}

}  // namespace
}  // namespace mtir
