// LLVM-built artifacts on the targets: the digits model compiled by the CLI with
// `--target "llvm -mtriple=<the target's triple> ..."` (objects from the native LLVM
// helpers, or the .ll compiled by clang), linked with the C interface and the CRT, run
// on QEMU / node and compared with the interpreter; a second build and run gives the
// same instruction counts; objects for another triple are refused. Then device kernels: the
// digits layers on two simulated NPUs through LLVM equal the C path on the host; and
// vector TIR for the Cortex-M55 becomes Helium instructions.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iostream>

#include "tests/qemu/qemu_helpers.h"
#include "sim/artifact_runner.h"
#include "sim/cross_targets.h"
#include "support/compare.h"
#include "support/diagnostic.h"
#include "support/npy.h"
#include "support/source_dir.h"

namespace mtir {
namespace {

using namespace qemu_test;
const fs::path kModel = fs::path(mtir::source_dir()) / "models" / "digits";
// The bundled test images run per firmware.
const std::vector<int> kImages = {0, 1};

CompiledModel compile_digits(const fs::path& dir, const std::vector<std::string>& extra) {
  const NDArray images = read_npy(sim::read_text(kModel / "test_images.npy"), "test_images.npy");
  return compile_model(
      kModel / "digits.json", dir, static_cast<int>(kImages.size()),
      [&](const sim::ArtifactTensor& in, int s) {
        NDArray a = NDArray::zeros(in.dtype, in.shape);
        const auto bytes = static_cast<std::ptrdiff_t>(a.data.size());
        std::copy(images.data.begin() + kImages[s] * bytes, images.data.begin() + (kImages[s] + 1) * bytes,
                  a.data.begin());
        return a;
      },
      extra);
}

// The message of the user error `f` throws, or "".
template <typename F>
std::string refusal(F f) {
  try {
    f();
  } catch (const DiagnosticError& e) {
    return e.diagnostics().at(0).message;
  }
  return "";
}

class LlvmDigitsOnTarget : public ::testing::TestWithParam<std::string> {};

TEST_P(LlvmDigitsOnTarget, MatchesTheInterpreterWithRepeatableCounts) {
  ScratchDir dir;
  const sim::CrossTarget& t = sim::find_cross_target(GetParam());
  CompiledModel ref = compile_digits(dir.path(), {"--target", t.llvm_target()});
  ASSERT_EQ(ref.info.llvm_triple, t.llvm_triple);
  sim::ArtifactRunOptions options;
  options.target = GetParam();
  options.work_dir = (dir.path() / "run").string();
  sim::ArtifactRunResult r = sim::run_artifact(ref.info, ref.inputs, ref.samples, ref.outputs, options);
  ASSERT_EQ(r.outputs.size(), kImages.size());
  for (size_t k = 0; k < kImages.size(); ++k) {
    ASSERT_EQ(r.outputs[k].size(), ref.want[k].size());
    for (size_t o = 0; o < ref.want[k].size(); ++o) {
      Difference d = compare_arrays(r.outputs[k][o], ref.want[k][o], 1e-5);  // as the C path
      EXPECT_TRUE(d.ok) << GetParam() << " image " << kImages[k] << ": max rel diff " << d.max_rel;
    }
  }
  if (!r.report.stack_bounds.entry.empty()) {
    // LLVM's objects carry no GCC call graph: no bound is claimed through them.
    EXPECT_FALSE(r.report.stack_bounds.run.bounded);
    EXPECT_NE(r.report.stack_bounds.run.reason.find("___tvm_main__ has no stack data"), std::string::npos)
        << r.report.stack_bounds.run.reason;
  }
  if (sim::find_cross_target(GetParam()).counter != sim::CounterKind::kNone) {
    ASSERT_EQ(r.report.instructions.size(), kImages.size());
    EXPECT_GT(r.report.instructions[0], 10000);  // 10k+ multiply-adds
    // A second, independent build and run: the same counts and outputs.
    options.work_dir = (dir.path() / "run2").string();
    sim::ArtifactRunResult again = sim::run_artifact(ref.info, ref.inputs, ref.samples, ref.outputs, options);
    EXPECT_EQ(again.report.instructions, r.report.instructions);
    for (size_t k = 0; k < kImages.size(); ++k) EXPECT_EQ(again.outputs[k][0].data, r.outputs[k][0].data);
    std::cout << GetParam() << ": " << r.report.instructions[0] << " instructions per image, flash "
              << r.report.flash_bytes << " B, RAM " << r.report.ram_bytes << " B\n";
  }
  // Objects for one triple never run on another target.
  const std::string other = GetParam() == "riscv32" ? "cortex-m4" : "riscv32";
  options.target = other;
  options.work_dir = (dir.path() / "other").string();
  const std::string refused = refusal([&] { sim::run_artifact(ref.info, ref.inputs, ref.samples, ref.outputs, options); });
  EXPECT_NE(refused.find("holds LLVM objects for " + t.llvm_triple + ", which do not run on " + other), std::string::npos)
      << refused;
  EXPECT_NE(refused.find(sim::find_cross_target(other).llvm_target()), std::string::npos) << refused;
}

INSTANTIATE_TEST_SUITE_P(Targets, LlvmDigitsOnTarget, ::testing::Values("cortex-m3", "cortex-m4", "riscv32", "wasm32"),
                         param_name);

// Vector TIR through LLVM on the Cortex-M55: the backend's IR vectors become Helium
// (MVE) loads, adds and stores, since the triple's features include +mve.
TEST(LlvmArtifact, VectorTirBecomesHeliumOnCortexM55) {
  ScratchDir dir;
  std::ofstream(dir.path() / "vadd.tir")
      << "@T.prim_func\n"
         "def vadd(A: T.Buffer((64,), \"int8\"), B: T.Buffer((64,), \"int8\"), C: T.Buffer((64,), \"int8\")):\n"
         "    for i in range(4):\n"
         "        C[i * 16:i * 16 + 16] = A[i * 16:i * 16 + 16] + B[i * 16:i * 16 + 16]\n";
  const std::string target = "llvm -mtriple=thumbv8.1m.main-none-eabihf -mcpu=cortex-m55";
  ASSERT_EQ(sim::run_process({MICROTIR_CLI, "build", (dir.path() / "vadd.tir").string(), "--target", target, "-o",
                              (dir.path() / "out").string()},
                             dir.path() / "build.log"),
            0)
      << sim::read_text(dir.path() / "build.log");
  std::string code;
  for (const auto& e : fs::directory_iterator(dir.path() / "out/codegen/host/lib")) {
    ASSERT_EQ(sim::run_process({"arm-none-eabi-objdump", "-d", "-m", "armv8.1-m.main", e.path().string()},
                               dir.path() / "objdump.log"),
              0);
    code += sim::read_text(dir.path() / "objdump.log");
  }
  for (const char* insn : {"vldrb.u8\tq", "vadd.i8\tq", "vstrb.8\tq"})
    EXPECT_NE(code.find(insn), std::string::npos) << insn << " not in the M55 objects";
}

// A Cortex-M7 build is not a Cortex-M4 one even though the triple is the same.
TEST(LlvmArtifact, ObjectsForAnotherCpuAreRefused) {
  ScratchDir dir;
  CompiledModel ref = compile_digits(dir.path(), {"--target", sim::find_cross_target("cortex-m7").llvm_target()});
  sim::ArtifactRunOptions options;
  options.target = "cortex-m4";
  options.work_dir = (dir.path() / "run").string();
  const std::string refused = refusal([&] { sim::run_artifact(ref.info, ref.inputs, ref.samples, ref.outputs, options); });
  EXPECT_NE(refused.find("holds LLVM objects for -mcpu=cortex-m7, not for cortex-m4"), std::string::npos) << refused;
}

// An artifact without objects (a microtir built without MICROTIR_LLVM writes only the
// .ll files): clang-14 compiles the IR for the artifact's triple, with the same results.
TEST(LlvmArtifact, WithoutObjectsClangCompilesTheIr) {
  ScratchDir dir;
  CompiledModel ref = compile_digits(dir.path(), {"--target", sim::find_cross_target("riscv32").llvm_target()});
  sim::ArtifactRunOptions options;
  options.target = "riscv32";
  options.work_dir = (dir.path() / "with").string();
  sim::ArtifactRunResult with = sim::run_artifact(ref.info, ref.inputs, ref.samples, ref.outputs, options);
  fs::remove_all(fs::path(ref.info.dir) / "codegen/host/lib");
  options.work_dir = (dir.path() / "without").string();
  sim::ArtifactRunResult without = sim::run_artifact(ref.info, ref.inputs, ref.samples, ref.outputs, options);
  EXPECT_TRUE(fs::exists(dir.path() / "without/llvm/host/lib0.o"));
  for (size_t k = 0; k < kImages.size(); ++k)
    EXPECT_TRUE(compare_arrays(without.outputs[k][0], ref.want[k][0], 1e-5).ok) << "image " << kImages[k];
  EXPECT_EQ(without.report.instructions.size(), kImages.size());
  std::cout << "riscv32, objects from the native helpers: " << with.report.instructions[0]
            << " instructions; from clang-14: " << without.report.instructions[0] << "\n";
}

// Device kernels through LLVM: each NPU's functions in codegen/<npu>/ (objects and
// IR), called by the host module; the results equal the C build's bit for bit.
TEST(LlvmArtifact, DigitsOnTwoNpusEqualsTheCPath) {
  const std::vector<std::string> devices = {"--device", "npu0=conv2d", "--device", "npu1=dense"};
  ScratchDir c_dir, llvm_dir;
  CompiledModel c = compile_digits(c_dir.path(), devices);
  std::vector<std::string> llvm_args = devices;
  llvm_args.insert(llvm_args.end(), {"--target", sim::find_cross_target("host").llvm_target()});
  CompiledModel l = compile_digits(llvm_dir.path(), llvm_args);
  ASSERT_EQ(l.info.devices, (std::vector<std::string>{"npu0", "npu1"}));
  for (const char* npu : {"npu0", "npu1"}) {
    EXPECT_TRUE(fs::exists(fs::path(l.info.dir) / "codegen" / npu / "src/lib0.ll")) << npu;
    EXPECT_FALSE(fs::exists(fs::path(l.info.dir) / "codegen" / npu / "src/lib0.c")) << npu;
  }
  sim::ArtifactRunOptions options;
  options.target = "host";
  options.work_dir = (c_dir.path() / "run").string();
  sim::ArtifactRunResult from_c = sim::run_artifact(c.info, c.inputs, c.samples, c.outputs, options);
  // codegen/npu*/src/lib0.c beside the host's: one call-graph file for both, so no bound.
  EXPECT_EQ(from_c.report.stack_bound_absent, "two sources are named lib0.c, and GCC writes one call-graph file per name");
  options.work_dir = (llvm_dir.path() / "run").string();
  sim::ArtifactRunResult from_llvm = sim::run_artifact(l.info, l.inputs, l.samples, l.outputs, options);
  ASSERT_EQ(from_llvm.outputs.size(), kImages.size());
  for (size_t k = 0; k < kImages.size(); ++k) {
    for (size_t o = 0; o < l.want[k].size(); ++o) {
      EXPECT_EQ(from_llvm.outputs[k][o].data, from_c.outputs[k][o].data) << "image " << kImages[k];
      EXPECT_TRUE(compare_arrays(from_llvm.outputs[k][o], l.want[k][o], 1e-5).ok) << "image " << kImages[k];
    }
  }
  // The simulated NPUs report the work each did: the same on both paths.
  EXPECT_EQ(from_llvm.devices, from_c.devices);
  EXPECT_EQ(from_llvm.devices.size(), 2u);
}

}  // namespace
}  // namespace mtir
