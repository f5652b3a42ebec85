// Device kernels with resource handles: the digits model with its convolutions on one
// simulated NPU instance and its dense layer on another, run from a hand-written C
// main (tests/codegen/devices_main.c) against the all-host interpreter; the exact hook
// sequence; a failing hook; the refused placements and option combinations; the
// validation of the handle's position; and the devices struct's type safety.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "analysis/well_formed.h"
#include "artifact/c_interface.h"
#include "driver/build.h"
#include "executor/aot.h"
#include "interp/interpreter.h"
#include "ops/devices.h"
#include "script/parser.h"
#include "script/printer.h"
#include "sim/host_sim.h"
#include "sim/process.h"
#include "support/compare.h"
#include "support/npy.h"
#include "support/source_dir.h"

namespace mtir {
namespace {

namespace fs = std::filesystem;
const std::string kModelDir = std::string(mtir::source_dir()) + "/models/digits/";

Graph digits_graph() {
  FileReader reader = [](const std::string& rel) { return sim::read_text(kModelDir + rel); };
  return fold_batch_norm(load_graph_json(reader("digits.json"), "digits.json", reader));
}

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const DiagnosticError& e) {
    EXPECT_FALSE(e.internal()) << e.what();
    return e.diagnostics().at(0).message;
  }
  ADD_FAILURE() << "expected a user error";
  return "";
}

// Builds the placed model as a firmware author would and runs devices_main.c.
class DevicesFirmware {
 public:
  DevicesFirmware() : dir_(fs::temp_directory_path() / ("microtir-devices-" + std::to_string(getpid()))) {
    graph_ = digits_graph();
    place_on_devices(graph_, {"npu0=conv2d", "npu1=dense"});
    aot_ = build_aot(graph_);
    BuildResult built = build_c(aot_.module, parse_target("c -interface-api=c -unpacked-api=1"));
    files_ = built.sources;
    for (auto& f : c_interface(aot_, graph_, built.lowered.module)) files_.push_back(f);
    lowered_text_ = print_module(built.lowered.module);
    fs::create_directories(dir_ / "include");
    for (const auto& f : files_) {
      fs::path p = dir_ / f.path;
      fs::create_directories(p.parent_path());
      std::ofstream(p) << f.text;
      if (p.extension() == ".h") fs::copy_file(p, dir_ / "include" / p.filename(), fs::copy_options::overwrite_existing);
      if (p.extension() == ".c") sources_.push_back(p.string());
    }
  }
  ~DevicesFirmware() { fs::remove_all(dir_); }

  // Compiles `main_c` with the artifact and the simulated NPU; returns the exit code
  // and the compiler's messages.
  int compile(const std::string& main_c, std::string* log) {
    const std::string crt = sim::default_crt_dir();
    const std::string npu = std::string(mtir::source_dir()) + "/sim/npu";
    std::vector<std::string> cmd = {"cc", "-std=c99", "-O2", "-Wall", "-Wextra", "-Werror", "-pedantic",
                                    "-I" + crt + "/include", "-I" + (dir_ / "include").string(), "-I" + npu};
    cmd.insert(cmd.end(), sources_.begin(), sources_.end());
    for (const auto& c : sim::crt_host_sources(crt)) cmd.push_back(c);
    cmd.insert(cmd.end(), {npu + "/sim_npu.c", main_c, "-lm", "-o", (dir_ / "firmware").string()});
    int rc = sim::run_process(cmd, dir_ / "build.log");
    *log = sim::read_text(dir_ / "build.log");
    return rc;
  }

  std::string run(std::vector<std::string> extra) {
    std::vector<std::string> cmd = {(dir_ / "firmware").string(), (dir_ / "image.bin").string()};
    cmd.insert(cmd.end(), extra.begin(), extra.end());
    EXPECT_EQ(sim::run_process(cmd, dir_ / "run.log"), 0);
    return sim::read_text(dir_ / "run.log");
  }

  void write_image(const NDArray& x) {
    std::ofstream image(dir_ / "image.bin", std::ios::binary);
    image.write(reinterpret_cast<const char*>(x.data.data()), static_cast<std::streamsize>(x.data.size()));
  }

  const AotModule& aot() const { return aot_; }
  const std::vector<SourceFileOut>& files() const { return files_; }
  const std::string& lowered_text() const { return lowered_text_; }
  const fs::path& dir() const { return dir_; }

 private:
  fs::path dir_;
  Graph graph_;
  AotModule aot_;
  std::vector<SourceFileOut> files_;
  std::vector<std::string> sources_;
  std::string lowered_text_;
};

const std::string kMain = std::string(mtir::source_dir()) + "/tests/codegen/devices_main.c";

// npu0 runs both convolutions, npu1 the dense layer: Activate before the first use,
// Open/Close around each kernel, Deactivate after the last use.
const char* kExpectedLog =
    "npu0 Activate\nnpu0 Open\nnpu0 conv2d\nnpu0 Close\n"
    "npu0 Open\nnpu0 conv2d\nnpu0 Close\nnpu0 Deactivate\n"
    "npu1 Activate\nnpu1 Open\nnpu1 dense\nnpu1 Close\nnpu1 Deactivate\n";

TEST(Devices, PlacedModelMatchesTheAllHostInterpreterAndLogsTheDocumentedSequence) {
  DevicesFirmware fw;
  std::string log;
  ASSERT_EQ(fw.compile(kMain, &log), 0) << log;
  // The all-host reference.
  Graph host = digits_graph();
  AotModule ref = build_aot(host);
  NDArray images = read_npy(sim::read_text(kModelDir + "test_images.npy"), "test_images.npy");
  for (int64_t k : {0, 41, 99}) {
    SCOPED_TRACE(k);
    std::vector<NDArray> arrays;
    for (const auto& p : ref.params) {
      NDArray a = NDArray::zeros(p.type.dtype, p.type.shape);
      if (p.role == AotModule::Role::kConstant) a = host.constants.at(p.name);
      if (p.role == AotModule::Role::kInput)
        std::copy(images.data.begin() + static_cast<std::ptrdiff_t>(k * a.data.size()),
                  images.data.begin() + static_cast<std::ptrdiff_t>((k + 1) * a.data.size()), a.data.begin());
      arrays.push_back(std::move(a));
    }
    std::vector<InterpArg> args;
    for (auto& a : arrays) args.push_back(&a);
    interpret(ref.module, ref.main, args);
    fw.write_image(arrays.front());
    std::istringstream out(fw.run({}));
    std::string word;
    int rc = -1;
    out >> word >> rc;
    ASSERT_EQ(rc, 0);
    NDArray got = NDArray::zeros(DataType::Float(32), {1, 10});
    for (int64_t i = 0; i < 10; ++i) {
      double v;
      out >> v;
      got.set_float(i, v);
    }
    Difference diff = compare_arrays(got, arrays.back(), 1e-5);
    EXPECT_TRUE(diff.ok) << "max abs diff " << diff.max_abs;
    std::string rest((std::istreambuf_iterator<char>(out)), std::istreambuf_iterator<char>());
    // 8x1x3x3 on 8x8 and 16x8x3x3 on 4x4 on npu0; 10x64 on npu1.
    EXPECT_NE(rest.find("npu0 activations 1 kernels 2 macs 23040 cycles 5960"), std::string::npos) << rest;
    EXPECT_NE(rest.find("npu1 activations 1 kernels 1 macs 640 cycles 260"), std::string::npos) << rest;
    EXPECT_NE(rest.find(std::string("log\n") + kExpectedLog), std::string::npos) << rest;
  }
}

TEST(Devices, AFailingHookStopsTheRunWithItsCode) {
  DevicesFirmware fw;
  std::string log;
  ASSERT_EQ(fw.compile(kMain, &log), 0) << log;
  fw.write_image(NDArray::zeros(DataType::Float(32), {1, 1, 8, 8}));
  std::string out = fw.run({"npu0", "Close", "2", "7"});
  EXPECT_EQ(out.rfind("rc 7\n", 0), 0u) << out;
  // The second conv's Close failed: nothing after it ran, not even npu0's Deactivate.
  EXPECT_NE(out.find("log\nnpu0 Activate\nnpu0 Open\nnpu0 conv2d\nnpu0 Close\nnpu0 Open\nnpu0 conv2d\nnpu0 Close\n"),
            std::string::npos)
      << out;
  EXPECT_EQ(out.find("Deactivate"), std::string::npos) << out;
  EXPECT_EQ(out.substr(out.find("log\n")).find("npu1"), std::string::npos) << out;
  EXPECT_NE(out.find("npu1 activations 0 kernels 0"), std::string::npos) << out;
  // A failing kernel the same way.
  out = fw.run({"npu1", "dense", "1", "-3"});
  EXPECT_EQ(out.rfind("rc -3\n", 0), 0u) << out;
  EXPECT_EQ(out.find("npu1 Close"), std::string::npos) << out;
}

TEST(Devices, ArtifactsAreGroupedByDeviceAndTheHeaderDocumentsTheHooks) {
  DevicesFirmware fw;
  std::map<std::string, std::string> by_path;
  for (const auto& f : fw.files()) by_path[f.path] = f.text;
  ASSERT_TRUE(by_path.count("codegen/npu0/src/lib0.c"));
  ASSERT_TRUE(by_path.count("codegen/npu1/src/lib0.c"));
  const std::string& host = by_path.at("codegen/host/src/lib0.c");
  // The device functions are defined in their device's file only; the host declares them.
  EXPECT_NE(by_path.at("codegen/npu0/src/lib0.c").find("int32_t tvmgen_digits_npu0_conv2("), std::string::npos);
  EXPECT_EQ(by_path.at("codegen/npu0/src/lib0.c").find("npu_dense"), std::string::npos);
  EXPECT_NE(by_path.at("codegen/npu1/src/lib0.c").find("npu_dense("), std::string::npos);
  EXPECT_EQ(host.find("npu_conv2d("), std::string::npos);
  const std::string& header = by_path.at("codegen/host/include/tvmgen_digits.h");
  EXPECT_NE(header.find("struct tvmgen_digits_devices {\n  void* npu0;\n  void* npu1;\n};"), std::string::npos);
  EXPECT_NE(header.find("struct tvmgen_digits_devices* devices);"), std::string::npos);
  for (const char* hook : {"Activate", "Open", "Close", "Deactivate"})
    EXPECT_NE(header.find(std::string("int32_t TVMDeviceNpu") + hook + "(void* context);"), std::string::npos);
  EXPECT_NE(by_path.at("codegen/host/src/tvmgen_digits_interface.c").find("devices->npu0, devices->npu1)"),
            std::string::npos);
  // The call attribute survives every pass and shows in the printed IR.
  EXPECT_NE(fw.lowered_text().find("\"tir.resource_handle\": True"), std::string::npos);
}

TEST(Devices, AMissingDevicesMemberIsACompileError) {
  DevicesFirmware fw;
  fs::path bad = fw.dir() / "bad_main.c";
  std::string text = sim::read_text(kMain);
  size_t at = text.find("devices.npu1 = &npu1;");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, std::string("devices.npu1").size(), "devices.npu2");
  std::ofstream(bad) << text;
  std::string log;
  EXPECT_NE(fw.compile(bad.string(), &log), 0);
  EXPECT_NE(log.find("npu2"), std::string::npos) << log;
}

TEST(Devices, PlacementsAreCheckedAgainstWhatTheDeviceRuns) {
  Graph g = digits_graph();
  EXPECT_EQ(message_of([&] { place_on_devices(g, {"npu0=softmax"}); }),
            "node 'probs': op 'softmax' cannot run on device 'npu0' (npu runs conv2d, dense)");
  EXPECT_NE(message_of([&] { place_on_devices(g, {"gpu0=conv2d"}); }).find("unknown device kind 'gpu'"),
            std::string::npos);
  EXPECT_EQ(message_of([&] { place_on_devices(g, {"npu0=conv2d", "npu1=conv2d"}); }),
            "op 'conv2d' is placed on two devices, 'npu0' and 'npu1'");
  EXPECT_NE(message_of([&] { place_on_devices(g, {"npu0"}); }).find("expected INSTANCE=OP"), std::string::npos);
  EXPECT_NE(message_of([&] { place_on_devices(g, {"npu0=conv4d"}); }).find("unknown op 'conv4d'"), std::string::npos);
  // The graph's own "device" field goes through the same check, at load time.
  std::string text = sim::read_text(kModelDir + "digits.json");
  size_t at = text.find("\"op\": \"softmax\"");
  ASSERT_NE(at, std::string::npos);
  text.insert(at, "\"device\": \"npu0\", ");
  FileReader reader = [](const std::string& rel) { return sim::read_text(kModelDir + rel); };
  EXPECT_NE(message_of([&] { load_graph_json(text, "digits.json", reader); })
                .find("node 'probs': op 'softmax' cannot run on device 'npu0'"),
            std::string::npos);
}

TEST(Devices, EveryOtherOptionCombinationIsRefusedWithTheRule) {
  Graph g = digits_graph();
  place_on_devices(g, {"npu0=conv2d"});
  AotModule aot = build_aot(g);
  // The lean default ("c") is the one combination that works.
  EXPECT_NO_THROW(build_c(aot.module, parse_target("c")));
  for (const char* target : {"c -unpacked-api=0", "c -interface-api=packed", "c -interface-api=packed -unpacked-api=1"}) {
    SCOPED_TRACE(target);
    EXPECT_NE(message_of([&] { build_c(aot.module, parse_target(target)); })
                  .find("device kernels with resource handles need -runtime=c -executor=aot -interface-api=c "
                        "-unpacked-api=1"),
              std::string::npos);
  }
}

// The handle's position is checked wherever a device call appears, also in hand-written TIR.
TEST(Devices, ValidationRefusesAMissingOrMisplacedHandle) {
  auto diagnostics = [](const std::string& call) {
    std::string text =
        "@T.prim_func\n"
        "def f(A: T.Buffer((4,), \"float32\"), npu0: T.handle, npu1: T.handle):\n"
        "    T.evaluate(" + call + ")\n";
    ParseResult r = parse_module(text, "device.tir");
    EXPECT_TRUE(r.ok()) << (r.diagnostics.empty() ? "" : r.diagnostics[0].message);
    std::string all;
    for (const auto& d : check_well_formed(*r.module)) all += d.message + "\n";
    return all;
  };
  const std::string marked = ", attrs={\"tir.resource_handle\": True})";
  EXPECT_EQ(diagnostics("T.call_extern(\"int32\", \"npu_k\", T.address_of(A[0]), npu0" + marked), "");
  EXPECT_NE(diagnostics("T.call_extern(\"int32\", \"npu_k\", T.address_of(A[0])" + marked)
                .find("has no resource handle as its last argument"),
            std::string::npos);
  EXPECT_NE(diagnostics("T.call_extern(\"int32\", \"npu_k\", npu0" + marked +
                        " + T.call_extern(\"int32\", \"npu_k\", npu0, T.address_of(A[0]), npu1" + marked)
                .find("passes the device context 'npu0' as argument 0 of 3; the resource handle must be the last"),
            std::string::npos);
  EXPECT_NE(diagnostics("T.call_extern(\"int32\", \"npu_k\", npu0" + marked + " + T.call_extern(\"int32\", \"g\", npu0)")
                .find("not marked as a device call"),
            std::string::npos);
}

}  // namespace
}  // namespace mtir
