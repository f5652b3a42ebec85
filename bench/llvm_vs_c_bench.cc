// Host inference time of the bundled digits model, C backend vs LLVM backend, both at
// -O2, side by side in one run. Each artifact is the model's kernels and registry (lib0,
// lib1: C, or LLVM IR compiled by clang) plus the same C interface, linked with the CRT
// and a timing main; the runs alternate, and the best of several rounds counts.
// Usage: llvm_vs_c_bench [WORK_DIR]   (prints microseconds per inference and the ratio)
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "artifact/mlf.h"
#include "artifact/c_interface.h"
#include "driver/build.h"
#include "sim/host_sim.h"
#include "sim/process.h"
#include "support/source_dir.h"

namespace fs = std::filesystem;
using namespace mtir;

namespace {

const char* kTimingMain = R"(#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <time.h>
#include <tvm/runtime/c_runtime_api.h>
#include <tvm/runtime/crt/stack_allocator.h>
#include "tvmgen_digits.h"

static uint8_t workspace[TVMGEN_DIGITS_WORKSPACE_SIZE];
static float image[TVMGEN_DIGITS_X_SIZE / sizeof(float)];
static float probs[TVMGEN_DIGITS_PROBS_SIZE / sizeof(float)];

int main(void) {
  struct tvmgen_digits_inputs inputs;
  struct tvmgen_digits_outputs outputs;
  struct timespec t0, t1;
  size_t i;
  int k, n = 2000;
  float checksum = 0;
  for (i = 0; i < sizeof image / sizeof image[0]; ++i) image[i] = (float)(i % 17) / 16.0f;
  if (TVMCrtWorkspaceInit(workspace, sizeof workspace) != 0) return 3;
  inputs.x = image;
  outputs.probs = probs;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (k = 0; k < n; ++k) {
    if (tvmgen_digits_run(&inputs, &outputs) != 0) return 1;
    checksum += probs[k % 10];
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  printf("%.3f %.6g\n", ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / 1e3 / n, checksum);
  return 0;
}
)";

std::string read(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

// Builds the timing program for `target` in `dir`; returns its path.
fs::path build(const LoadedModel& lm, const std::string& target, const std::string& cc, const fs::path& dir) {
  Target t = parse_target(target);
  t.link_params = true;
  BuildResult built = build_for_target(lm.aot.module, t);
  std::vector<SourceFileOut> files = built.sources;
  for (auto& f : c_interface(lm.aot, lm.graph, built.lowered.module)) files.push_back(std::move(f));
  const std::string crt = sim::default_crt_dir();
  std::vector<std::string> cmd = {cc, "-std=c99", "-O2", "-I" + crt + "/include", "-I" + (dir / "include").string()};
  sim::HostSimOptions options;
  for (const auto& f : files) {
    fs::path p = dir / fs::path(f.path).filename();
    if (p.extension() == ".h") p = dir / "include" / p.filename();
    write(p, f.text);
    if (p.extension() == ".c") cmd.push_back(p.string());
    if (p.extension() == ".ll") cmd.push_back(sim::compile_llvm_ir(p, p.string() + ".o", options));
  }
  write(dir / "bench_main.c", kTimingMain);
  cmd.push_back((dir / "bench_main.c").string());
  for (const auto& s : sim::crt_host_sources(crt)) cmd.push_back(s);
  cmd.insert(cmd.end(), {"-lm", "-o", (dir / "bench").string()});
  if (sim::run_process(cmd, dir / "build.log") != 0) throw std::runtime_error("build failed: " + read(dir / "build.log"));
  return dir / "bench";
}

double run_once(const fs::path& exe, std::string* checksum) {
  fs::path log = exe.string() + ".log";
  if (sim::run_process({exe.string()}, log) != 0) throw std::runtime_error("run failed: " + read(log));
  std::istringstream in(read(log));
  double us = 0;
  in >> us >> *checksum;
  return us;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    fs::path work = argc > 1 ? fs::path(argv[1]) : fs::temp_directory_path() / ("microtir-llvm-bench-" + std::to_string(getpid()));
    const fs::path model = fs::path(mtir::source_dir()) / "models" / "digits";
    LoadedModel lm = load_model(read(model / "digits.json"), "digits.json",
                                [&](const std::string& rel) { return read(model / rel); });
    // The C artifact with the host's cc (gcc) and with clang, whose code generator the
    // LLVM artifact shares: the second ratio compares the IR, not the compilers.
    fs::path c = build(lm, "c -interface-api=c -unpacked-api=1", "cc", work / "c");
    fs::path c_clang = build(lm, "c -interface-api=c -unpacked-api=1", "clang", work / "c-clang");
    fs::path ll = build(lm, "llvm -interface-api=c -unpacked-api=1", "cc", work / "llvm");
    double best_c = 1e30, best_cc = 1e30, best_ll = 1e30;
    std::string sum_c, sum_cc, sum_ll;
    for (int round = 0; round < 7; ++round) {
      best_c = std::min(best_c, run_once(c, &sum_c));
      best_cc = std::min(best_cc, run_once(c_clang, &sum_cc));
      best_ll = std::min(best_ll, run_once(ll, &sum_ll));
    }
    std::cout << "digits inference on the host, -O2, best of 7 rounds of 2000 runs\n"
              << "  C backend, cc:       " << best_c << " us\n"
              << "  C backend, clang:    " << best_cc << " us\n"
              << "  LLVM backend:        " << best_ll << " us\n"
              << "  LLVM / C (cc):       " << best_ll / best_c << "\n"
              << "  LLVM / C (clang):    " << best_ll / best_cc << "\n"
              << "  outputs " << (sum_c == sum_ll && sum_cc == sum_ll ? "agree" : "DIFFER") << " (checksums " << sum_c
              << ", " << sum_cc << ", " << sum_ll << ")\n";
    if (argc <= 1) fs::remove_all(work);
    return sum_c == sum_ll ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << "llvm_vs_c_bench: " << e.what() << "\n";
    return 2;
  }
}
