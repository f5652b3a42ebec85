// The digits model compiled by the CLI and run on every target (host, Cortex-M3/M4/M7/M33/M55
// under QEMU, RV32 under QEMU, wasm32 under node): outputs equal the interpreter on the
// artifact's own graph, the predicted classes are identical, the firmware built unit by
// unit is the one a single command builds, and the whole report (instructions, flash,
// RAM, stack) is the same on a second build and run. Then the
// counting method itself: a two-instruction loop gives exactly 2n + b.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "tests/qemu/qemu_helpers.h"
#include "interp/interpreter.h"
#include "sim/artifact_runner.h"
#include "sim/host_sim.h"
#include "sim/process.h"
#include "support/compare.h"
#include "support/diagnostic.h"
#include "support/npy.h"
#include "support/source_dir.h"

namespace mtir {
namespace {

using namespace qemu_test;
const fs::path kModel = fs::path(mtir::source_dir()) / "models" / "digits";
constexpr int kImages = 4;  // test images run per target, in one firmware

int64_t argmax(const NDArray& a) {
  int64_t best = 0;
  for (int64_t i = 1; i < a.num_elements(); ++i)
    if (a.get_float(i) > a.get_float(best)) best = i;
  return best;
}

// The first kImages bundled test images, one per run.
CompiledModel compile_digits(const fs::path& dir) {
  const NDArray images = read_npy(sim::read_text(kModel / "test_images.npy"), "test_images.npy");
  return compile_model(kModel / "digits.json", dir, kImages, [&](const sim::ArtifactTensor& in, int k) {
    NDArray a = NDArray::zeros(in.dtype, in.shape);
    const size_t bytes = a.data.size();
    std::copy(images.data.begin() + static_cast<std::ptrdiff_t>(k * bytes),
              images.data.begin() + static_cast<std::ptrdiff_t>((k + 1) * bytes), a.data.begin());
    return a;
  });
}

class DigitsOnTarget : public ::testing::TestWithParam<std::string> {};

TEST_P(DigitsOnTarget, MatchesTheInterpreterWithAReproducibleReport) {
  ScratchDir dir;
  CompiledModel ref = compile_digits(dir.path());
  sim::ArtifactRunOptions options;
  options.target = GetParam();
  options.work_dir = (dir.path() / "run1").string();
  sim::ArtifactRunResult first = sim::run_artifact(ref.info, ref.inputs, ref.samples, ref.outputs, options);
  ASSERT_EQ(first.outputs.size(), static_cast<size_t>(kImages));
  for (int k = 0; k < kImages; ++k) {
    ASSERT_EQ(first.outputs[k].size(), ref.want[k].size());
    for (size_t o = 0; o < ref.want[k].size(); ++o) {
      Difference d = compare_arrays(first.outputs[k][o], ref.want[k][o], 1e-5);
      EXPECT_TRUE(d.ok) << GetParam() << " image " << k << ": max rel diff " << d.max_rel;
      EXPECT_EQ(argmax(first.outputs[k][o]), argmax(ref.want[k][o])) << GetParam() << " image " << k;
    }
  }
  const sim::TargetReport& r = first.report;
  EXPECT_GT(r.size.text, 0);
  EXPECT_GE(r.ram_bytes, r.workspace_bytes + r.io_bytes);
  EXPECT_GE(r.flash_bytes, r.test_input_bytes);
  EXPECT_EQ(r.test_input_bytes, kImages * 64 * 4);
  const bool counted = GetParam() != "host" && GetParam() != "wasm32";
  if (counted) {
    ASSERT_EQ(r.instructions.size(), static_cast<size_t>(kImages));
    // A CNN with 10k+ multiply-adds cannot take fewer instructions than that.
    for (int64_t n : r.instructions) EXPECT_GT(n, 10000);
  } else {
    EXPECT_TRUE(r.instructions.empty());
  }
  if (GetParam() != "host") {
    EXPECT_GT(r.stack_bytes, 0);
  }
  if (sim::find_cross_target(GetParam()).port == "cortex-m") {
    // The harness prints through its own formatter over semihosting: a firmware that
    // does not use the C library's stdio carries none of it (nor its start-up or exit),
    // the runtime's last-error copy needs no strlen, and the start-up's and the harness's
    // byte copies no memcpy or memset (digits' kernels call neither).
    for (const auto& s : r.symbols) {
      EXPECT_EQ(s.name.find("printf"), std::string::npos) << GetParam() << ": " << s.name;
      for (const char* libc :
           {"__sinit", "_fflush_r", "initialise_monitor_handles", "exit", "_malloc_r", "strlen", "memcpy", "memset"})
        EXPECT_NE(s.name, libc) << GetParam();
    }
  }
  expect_stack_bound_holds(r, GetParam());
  EXPECT_EQ(r.stack_bounds.entry.empty(), GetParam() == "wasm32") << r.stack_bound_absent;
  const std::string cc = sim::find_cross_target(GetParam()).cc;
  if (cc.size() > 4 && cc.compare(cc.size() - 4, 4, "-gcc") == 0) {
    // The section sizes read from the ELF agree with binutils' size (Berkeley format:
    // text = code + read-only data).
    const std::string size_tool = cc.substr(0, cc.size() - 3) + "size";
    ASSERT_EQ(sim::run_process({size_tool, "-B", r.firmware}, dir.path() / "size.log"), 0);
    std::istringstream table(sim::read_text(dir.path() / "size.log"));
    std::string header;
    std::getline(table, header);
    int64_t text = 0, data = 0, bss = 0;
    table >> text >> data >> bss;
    EXPECT_EQ(text, r.size.text + r.size.rodata);
    EXPECT_EQ(data, r.size.data);
    // picolibc's script adds a 2 KiB .stack reserve, which the report leaves out.
    EXPECT_EQ(bss, r.size.bss + (GetParam() == "riscv32" ? 2048 : 0));
  }

  // The firmware is built unit by unit through the build cache: the Makefile's single
  // compile-and-link command beside it builds the same bytes.
  const std::string units = sim::read_text(r.firmware);
  ASSERT_EQ(sim::run_process({"make", "-B", "-C", fs::path(r.firmware).parent_path().string(), r.firmware},
                             dir.path() / "make.log"), 0)
      << sim::read_text(dir.path() / "make.log");
  EXPECT_TRUE(sim::read_text(r.firmware) == units) << GetParam() << ": the one command builds another program";

  // A second, independent build and run: the same numbers.
  options.work_dir = (dir.path() / "run2").string();
  sim::ArtifactRunResult second = sim::run_artifact(ref.info, ref.inputs, ref.samples, ref.outputs, options);
  EXPECT_EQ(second.report.instructions, r.instructions);
  EXPECT_EQ(second.report.flash_bytes, r.flash_bytes);
  EXPECT_EQ(second.report.ram_bytes, r.ram_bytes);
  EXPECT_EQ(second.report.stack_bytes, r.stack_bytes);
  for (int k = 0; k < kImages; ++k) {
    for (size_t o = 0; o < ref.want[k].size(); ++o) {
      EXPECT_EQ(second.outputs[k][o].data, first.outputs[k][o].data);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Targets, DigitsOnTarget,
                         ::testing::Values("host", "cortex-m3", "cortex-m4", "cortex-m7", "cortex-m33", "cortex-m55", "riscv32",
                                           "wasm32"),
                         param_name);

// The board table: every Arm target names a linker script its port has, and its counter
// ticks at the rate its board's FPGAIO runs (40 ns MPS2, 50 ns on the mps2-tz boards,
// whose block the port is told where to find).
TEST(BoardPort, EveryArmBoardHasItsScriptAndCounter) {
  int arm = 0;
  for (const auto& t : sim::cross_targets()) {
    if (t.port != "cortex-m") continue;
    ++arm;
    int scripts = 0;
    for (const auto& f : t.link_flags)
      if (f.rfind("-T{port}/", 0) == 0)
        scripts += fs::exists(fs::path(sim::default_crt_dir()) / "ports/cortex-m" / f.substr(9)) ? 1 : 100;
    EXPECT_EQ(scripts, 1) << t.name;
    const bool tz = t.runner[2] == "mps2-an505" || t.runner[2] == "mps3-an547";
    EXPECT_EQ(t.counter_tick_ns, tz ? 50 : 40) << t.name;
    EXPECT_EQ(t.port_defines.size(), tz ? 2u : 0u) << t.name;
  }
  EXPECT_EQ(arm, 5);
}

// An artifact whose runtime predates a board (no an547.ld in its Cortex-M port) builds
// with the installed runtime's port instead.
TEST(BoardPort, AnArtifactWithoutTheBoardScriptUsesTheInstalledPort) {
  ScratchDir dir;
  CompiledModel ref = compile_digits(dir.path());
  fs::remove(fs::path(ref.info.dir) / "runtime/ports/cortex-m/an547.ld");
  sim::ArtifactRunOptions options;
  options.target = "cortex-m55";
  options.work_dir = (dir.path() / "run").string();
  sim::ArtifactRunResult r = sim::run_artifact(ref.info, ref.inputs, ref.samples, ref.outputs, options);
  ASSERT_EQ(r.outputs.size(), static_cast<size_t>(kImages));
  EXPECT_TRUE(compare_arrays(r.outputs[0][0], ref.want[0][0], 1e-5).ok);
  EXPECT_EQ(r.report.instructions.size(), static_cast<size_t>(kImages));
}

class CountingMethod : public ::testing::TestWithParam<std::string> {};

// MEASURING.md's check: trips n of a 2-instruction loop give exactly 2n + b.
TEST_P(CountingMethod, ATwoInstructionLoopCountsExactly) {
  ScratchDir dir;
  const sim::CrossTarget& t = sim::find_cross_target(GetParam());
  sim::ProgramSpec spec;
  spec.sources = {(fs::path(mtir::source_dir()) / "tests" / "qemu" / "count_loop.c").string()};
  spec.crt_dir = sim::default_crt_dir();
  spec.work_dir = dir.path().string();
  spec.name = "count_loop";
  const std::string program = sim::build_program(t, spec);
  sim::ProgramOutput out = sim::run_program(t, program, dir.path().string(), 30);
  ASSERT_EQ(out.exit_code, 0) << out.output;
  std::istringstream lines(out.output);
  std::string line;
  uint64_t probe = 0;
  std::vector<std::pair<int64_t, int64_t>> points;  // trips, instructions
  while (std::getline(lines, line)) {
    std::istringstream in(line);
    std::string tag, what, hex;
    long n;
    if (!(in >> tag >> what >> n >> hex) || tag != "@mtir") continue;
    const uint64_t raw = std::stoull(hex, nullptr, 16);
    if (what == "probe") probe = raw;
    if (what == "loop") points.emplace_back(n, static_cast<int64_t>(raw));
  }
  ASSERT_EQ(points.size(), 7u) << out.output;
  std::vector<int64_t> counts;
  for (auto& [n, raw] : points) counts.push_back(sim::instructions_from_counter(t, static_cast<uint64_t>(raw), probe));
  const int64_t b = counts[0] - 2 * points[0].first;
  for (size_t i = 0; i < points.size(); ++i)
    EXPECT_EQ(counts[i], 2 * points[i].first + b) << GetParam() << ": " << points[i].first << " trips";
  EXPECT_GE(b, 0);
  EXPECT_LT(b, 16);  // the call, the return and the loop's set-up
}

INSTANTIATE_TEST_SUITE_P(Targets, CountingMethod,
                         ::testing::Values("cortex-m3", "cortex-m4", "cortex-m7", "cortex-m33", "cortex-m55", "riscv32"),
                         param_name);

// Each way a firmware can go wrong ends with a one-line message, never a hang.
std::string failure_of(const std::string& target, const char* define, int timeout_seconds, const fs::path& dir) {
  const sim::CrossTarget& t = sim::find_cross_target(target);
  sim::ProgramSpec spec;
  spec.sources = {(fs::path(mtir::source_dir()) / "tests" / "qemu" / "faults.c").string()};
  spec.defines = {define};
  spec.crt_dir = sim::default_crt_dir();
  spec.work_dir = (dir / define).string();
  try {
    const std::string program = sim::build_program(t, spec);
    sim::check_program_exit(t, sim::run_program(t, program, spec.work_dir, timeout_seconds), timeout_seconds);
  } catch (const DiagnosticError& e) {
    return e.diagnostics().at(0).message;
  }
  return "";
}

class Failures : public ::testing::TestWithParam<std::string> {};

TEST_P(Failures, AreOneLineMessages) {
  ScratchDir dir;
  const std::string crash = failure_of(GetParam(), "FAULT", 20, dir.path());
  EXPECT_NE(crash.find("the firmware crashed on QEMU"), std::string::npos) << crash;
  EXPECT_NE(crash.find(GetParam() == "riscv32" ? "RISC-V trap, mcause:   0x00000005" : "microtir: hard fault"),
            std::string::npos)
      << crash;
  EXPECT_NE(crash.find("run log: "), std::string::npos) << crash;
  const std::string hang = failure_of(GetParam(), "HANG", 1, dir.path());
  EXPECT_NE(hang.find("the firmware did not finish within 1 s on QEMU"), std::string::npos) << hang;
  EXPECT_NE(hang.find("(a hang?)"), std::string::npos) << hang;
  const std::string big = failure_of(GetParam(), "TOO_BIG", 20, dir.path());
  EXPECT_NE(big.find("the firmware does not fit QEMU"), std::string::npos) << big;
  EXPECT_NE(big.find("build log: "), std::string::npos) << big;
  // What an MPS2 board holds runs: 3 MiB of constants and 2 MiB of bss (the riscv32
  // board has less flash).
  if (GetParam() != "riscv32") {
    EXPECT_EQ(failure_of(GetParam(), "FULL_BOARD", 20, dir.path()), "");
  }
  // main's status is the program's exit status, whether or not it linked stdio.
  const std::string printed = failure_of(GetParam(), "EXIT_PRINTF", 20, dir.path());
  EXPECT_NE(printed.find("(exit 5): returning 5"), std::string::npos) << printed;
  const std::string quiet = failure_of(GetParam(), "EXIT_QUIET", 20, dir.path());
  EXPECT_NE(quiet.find("(exit 6)"), std::string::npos) << quiet;
  for (const auto* m : {&crash, &hang, &big}) {
    EXPECT_EQ(m->find('\n'), std::string::npos) << *m;
    std::cout << GetParam() << ": " << *m << "\n";
  }
}

INSTANTIATE_TEST_SUITE_P(Targets, Failures, ::testing::Values("cortex-m4", "riscv32"), param_name);

}  // namespace
}  // namespace mtir
