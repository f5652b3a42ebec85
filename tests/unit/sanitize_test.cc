// The sanitized host build (MICROTIR_HOST_SANITIZE, on by default in the ASan stage)
// catches what silently corrupts a chip: a seeded off-by-one in a generated loop bound,
// writing past an output buffer or past a kernel's workspace, fails the run with an
// AddressSanitizer report, while the unchanged kernel passes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <algorithm>
#include <cstdlib>
#include <regex>

#include "driver/build.h"
#include "script/parser.h"
#include "sim/host_sim.h"

namespace mtir {
namespace {

namespace fs = std::filesystem;

// tmp is a workspace block of exactly 256 bytes (TVMBackendAllocWorkspace), Y an output.
const char* kProgram = R"(@T.prim_func
def twice(X: T.Buffer((64,), "float32"), Y: T.Buffer((64,), "float32")):
    tmp = T.alloc_buffer((64,), "float32")
    for i in range(64):
        tmp[i] = T.Cast("float32", i) * T.float32(2.0)
    for j in range(64):
        Y[j] = tmp[j] + X[j]
)";

// The generated C with the bound of loop `var` one larger ("i < 64" -> "i < 65").
BuildResult off_by_one(BuildResult built, const std::string& var) {
  const std::regex bound("(for \\(int32_t " + var + " = 0; " + var + " < )([0-9]+);");
  int changed = 0;
  for (auto& src : built.sources) {
    std::smatch m;
    if (!std::regex_search(src.text, m, bound)) continue;
    src.text = m.prefix().str() + m[1].str() + std::to_string(std::stoll(m[2].str()) + 1) + ";" + m.suffix().str();
    ++changed;
  }
  EXPECT_EQ(changed, 1) << "no loop over '" << var << "' in the generated C";
  return built;
}

// "" when the sanitized run succeeds (Y checked), else the failure's message.
std::string run_sanitized(const BuildResult& built, const IRModule& m, const std::string& tag) {
  NDArray x = NDArray::zeros(DataType::Float(32), {64}), y = NDArray::zeros(DataType::Float(32), {64});
  for (int64_t i = 0; i < 64; ++i) x.set_float(i, static_cast<double>(i));
  sim::HostSimOptions options;
  options.sanitize = "address,undefined";
  options.work_dir = (fs::temp_directory_path() / ("microtir-sanitize-" + tag + "-" + std::to_string(getpid()))).string();
  std::string error;
  try {
    sim::run_on_host({&built, "twice", m.lookup("twice")}, {&x, &y}, options);
    for (int64_t i = 0; i < 64; ++i) EXPECT_EQ(y.get_float(i), 3.0 * i) << "Y[" << i << "]";
  } catch (const DiagnosticError& e) {
    error = e.diagnostics().at(0).message;
  }
  fs::remove_all(options.work_dir);
  return error;
}

TEST(Sanitize, SeededOffByOneInAGeneratedLoopBoundIsReported) {
  const IRModule m = parse_module_or_throw(kProgram, "twice.tir");
  const BuildResult built = build_c(m, parse_target("c -unpacked-api=1"));
  EXPECT_EQ(run_sanitized(built, m, "clean"), "");
  // Past the input, the workspace and the output (heap blocks of exactly 256 bytes).
  const std::string output = run_sanitized(off_by_one(built, "j"), m, "output");
  EXPECT_NE(output.find("AddressSanitizer: heap-buffer-overflow"), std::string::npos) << output;
  // Past the kernel's workspace: in one arena this write lands in the next block unseen;
  // as a separate allocation (TVM_CRT_SEPARATE_ALLOCATIONS) it is reported.
  const std::string workspace = run_sanitized(off_by_one(built, "i"), m, "workspace");
  EXPECT_NE(workspace.find("AddressSanitizer: heap-buffer-overflow"), std::string::npos) << workspace;
  EXPECT_NE(workspace.find("TVMBackendAllocWorkspace"), std::string::npos) << "allocated where: " << workspace;
}

// A function of scalars alone has no buffer to allocate: its sanitized harness still
// builds with -Werror (the allocation helper is referenced, not left unused).
TEST(Sanitize, AFunctionOfScalarsAloneRunsSanitized) {
  const IRModule m = parse_module_or_throw(
      "@T.prim_func\ndef clamp(x: T.int32, lo: T.int32) -> T.int32:\n    return T.max(x, lo)\n", "clamp.tir");
  for (const char* target : {"c -unpacked-api=0", "c -unpacked-api=1"}) {
    const BuildResult built = build_c(m, parse_target(target));
    sim::HostSimOptions options;
    options.sanitize = "address,undefined";
    options.work_dir = (fs::temp_directory_path() / ("microtir-sanitize-scalars-" + std::to_string(getpid()))).string();
    EXPECT_EQ(sim::run_on_host({&built, "clamp", m.lookup("clamp")}, {int64_t{4}, int64_t{7}}, options), 7) << target;
    fs::remove_all(options.work_dir);
  }
}

TEST(Sanitize, TheSwitchIsOneListOfSanitizers) {
  EXPECT_TRUE(sim::sanitizer_cflags("").empty());
  const std::vector<std::string> flags = sim::sanitizer_cflags("address,undefined");
  EXPECT_EQ(flags.at(0), "-fsanitize=address,undefined");
  EXPECT_NE(std::find(flags.begin(), flags.end(), "-DTVM_CRT_SEPARATE_ALLOCATIONS"), flags.end());
  EXPECT_NE(std::find(flags.begin(), flags.end(), "-O0"), flags.end());  // after the build's -O2: it wins
  EXPECT_THROW(sim::sanitizer_cflags("address; rm -rf /"), DiagnosticError);
  // $MICROTIR_HOST_SANITIZE overrides the build's default; "none" turns it off.
  const char* saved = std::getenv("MICROTIR_HOST_SANITIZE");
  const std::string before = saved ? saved : "";
  setenv("MICROTIR_HOST_SANITIZE", "none", 1);
  EXPECT_EQ(sim::host_sanitizers(), "");
  setenv("MICROTIR_HOST_SANITIZE", "undefined", 1);
  EXPECT_EQ(sim::host_sanitizers(), "undefined");
  if (saved) setenv("MICROTIR_HOST_SANITIZE", before.c_str(), 1);
  else unsetenv("MICROTIR_HOST_SANITIZE");
}

}  // namespace
}  // namespace mtir
