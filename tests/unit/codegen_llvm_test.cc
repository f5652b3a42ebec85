// The LLVM backend against the reference interpreter and the C backend: every program of
// the shared corpus runs on the host (clang compiles the .ll, the CRT links it) with the
// packed and the unpacked API; the emitted IR of every program passes LLVM's verifier
// and code generation for all five triples; golden checks look at the pieces of the
// text that matter (packed wrapper, checks, call_tir, workspace, registry).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "artifact/mlf.h"
#include "codegen/llvm/codegen_llvm.h"
#include "codegen/llvm/llvm_target.h"
#include "driver/build.h"
#include "interp/interpreter.h"
#include "llvm_check.h"
#include "ops/op_util.h"
#include "program_corpus.h"
#include "script/parser.h"
#include "sim/host_sim.h"
#include "sim/process.h"
#include "support/compare.h"
#include "support/source_dir.h"

namespace mtir {
namespace {

using namespace testing_corpus;  // read, scalar_args, packed_only, make_inputs, corpus

class CodegenLlvm : public ::testing::TestWithParam<fs::path> {};

TEST_P(CodegenLlvm, HostPackedAndUnpackedMatchTheInterpreterAndC) {
  const fs::path path = GetParam();
  std::string text = read(path);
  IRModule m = parse_module_or_throw(text, path.string());
  auto scalars = scalar_args(text);
  for (bool unpacked : {false, true}) {
    if (unpacked && packed_only(text)) {
      EXPECT_THROW(build_llvm(m, parse_target("llvm -unpacked-api=1")), DiagnosticError);
      continue;
    }
    BuildResult llvm = build_llvm(m, parse_target(unpacked ? "llvm -unpacked-api=1" : "llvm -unpacked-api=0"));
    BuildResult c = build_c(m, parse_target(unpacked ? "c -unpacked-api=1" : "c -unpacked-api=0"));
    for (const auto& [name, f] : m.functions) {
      SCOPED_TRACE(path.filename().string() + ": " + name + (unpacked ? " (unpacked)" : " (packed)"));
      Inputs reference = make_inputs(f, scalars, 1234);
      interpret(m, name, reference.args);
      const std::string tag = "llvm-" + path.stem().string() + (unpacked ? "-u" : "-p");
      Inputs on_llvm = run_built_on_host(llvm, name, f, scalars, tag);
      Inputs on_c = run_built_on_host(c, name, f, scalars, tag);
      for (size_t i = 0; i < f->params.size(); ++i) {
        if (!f->param_buffers[i]) continue;
        Difference d = compare_arrays(on_llvm.arrays[i], reference.arrays[i]);
        EXPECT_TRUE(d.ok) << "buffer " << f->param_buffers[i]->name << ": max abs diff " << d.max_abs
                          << ", max rel diff " << d.max_rel;
        // Both backends compile the same lowered module: they agree bit for bit.
        EXPECT_EQ(on_llvm.arrays[i].data, on_c.arrays[i].data) << "buffer " << f->param_buffers[i]->name;
      }
    }
  }
}

TEST_P(CodegenLlvm, VerifiesAndCompilesForEveryTriple) {
  const fs::path path = GetParam();
  std::string text = read(path);
  IRModule m = parse_module_or_throw(text, path.string());
  MICROTIR_REQUIRE_LLVM_CHECKER();
  for (bool unpacked : {false, true}) {
    if (unpacked && packed_only(text)) continue;
    for (const auto& t : llvm_targets()) {
      SCOPED_TRACE(t.triple + (unpacked ? " (unpacked)" : " (packed)"));
      BuildResult built = build_llvm(m, parse_target("llvm -mtriple=" + t.triple + (unpacked ? " -unpacked-api=1" : " -unpacked-api=0")));
      for (const auto& src : built.sources) llvm_check::expect_compiles(src.text, t.triple, src.path);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Programs, CodegenLlvm, ::testing::ValuesIn(corpus()),
                         [](const ::testing::TestParamInfo<fs::path>& info) { return info.param.stem().string(); });

// The bundled digits model through the AOT executor: its IR verifies and compiles for
// every triple with both conventions (the host run is in aot_test).
TEST(CodegenLlvm, DigitsModelVerifiesAndCompilesForEveryTriple) {
  MICROTIR_REQUIRE_LLVM_CHECKER();
  const fs::path model = fs::path(mtir::source_dir()) / "models" / "digits";
  LoadedModel lm = load_model(read(model / "digits.json"), "digits.json",
                              [&](const std::string& rel) { return read(model / rel); });
  for (const char* api : {" -unpacked-api=0", " -unpacked-api=1"}) {
    for (const auto& t : llvm_targets()) {
      SCOPED_TRACE(t.triple + api);
      BuildResult built = build_llvm(lm.aot.module, parse_target("llvm -mtriple=" + t.triple + api));
      for (const auto& src : built.sources) llvm_check::expect_compiles(src.text, t.triple, src.path);
    }
  }
}

// Every argument check of MakePackedAPI, from C (packed_checks_main.c) against the
// LLVM-built artifact: the same messages and return codes as the C backend's.
TEST(CodegenLlvm, PackedArgumentChecksFailWithNamedErrors) {
  const fs::path src = fs::path(mtir::source_dir()) / "tests" / "codegen";
  IRModule m = parse_module_or_throw(read(src / "packed_checks.tir"), "packed_checks.tir");
  BuildResult built = build_llvm(m, parse_target("llvm -unpacked-api=0"));
  fs::path dir = fs::temp_directory_path() / ("microtir-llvm-checks-" + std::to_string(getpid()));
  fs::create_directories(dir);
  const std::string crt = sim::default_crt_dir();
  std::vector<std::string> cmd = {"cc", "-std=c99", "-O2", "-Wall", "-Wextra", "-Werror", "-pedantic", "-I" + crt + "/include"};
  sim::HostSimOptions options;
  for (const auto& s : built.sources) {
    fs::path file = dir / fs::path(s.path).filename();
    std::ofstream(file) << s.text;
    cmd.push_back(sim::compile_llvm_ir(file, file.string() + ".o", options));
  }
  for (const auto& c : sim::crt_host_sources(crt)) cmd.push_back(c);
  cmd.insert(cmd.end(), {(src / "packed_checks_main.c").string(), "-o", (dir / "checks").string()});
  ASSERT_EQ(sim::run_process(cmd, dir / "build.log"), 0) << sim::read_text(dir / "build.log");
  int rc = sim::run_process({(dir / "checks").string()}, dir / "run.log");
  std::string log = sim::read_text(dir / "run.log");
  EXPECT_EQ(rc, 0) << log;
  EXPECT_NE(log.find("packed_checks: 27 checks, 0 failures"), std::string::npos) << log;
  fs::remove_all(dir);
}

// The packed API's kernels unless the target says otherwise (these programs read shapes at run time).
std::string kernels_of(const std::string& tir, const std::string& target) {
  const std::string t = target.find("unpacked-api") == std::string::npos ? target + " -unpacked-api=0" : target;
  return build_llvm(parse_module_or_throw(tir, "golden.tir"), parse_target(t)).sources.at(0).text;
}

bool has(const std::string& text, const std::string& piece) { return text.find(piece) != std::string::npos; }

size_t count(const std::string& text, const std::string& piece) {
  size_t n = 0;
  for (size_t at = text.find(piece); at != std::string::npos; at = text.find(piece, at + 1)) ++n;
  return n;
}

const char* kScale =
    "@T.prim_func\n"
    "def f(a: T.handle, x: T.float32):\n"
    "    T.func_attr({\"tir.noalias\": True})\n"
    "    m = T.int32()\n"
    "    A = T.match_buffer(a, (m,), \"float32\", align=8)\n"
    "    for i in range(m):\n"
    "        A[i] = A[i] * x + T.float32(0.1)\n";

// The sign of a 64-bit product's high word (the requantization's rounding correction)
// is frozen on Cortex-M, so LLVM keeps it one ASR instead of a 64-bit compare of the
// product; elsewhere the IR is plain.
TEST(CodegenLlvmGolden, SignOfHighWordIsFrozenOnCortexM) {
  const char* tir =
      "@T.prim_func\n"
      "def f(A: T.Buffer((4,), \"int32\"), M: T.Buffer((4,), \"int32\"), B: T.Buffer((4,), \"int32\")):\n"
      "    for i in range(4):\n"
      "        B[i] = T.shift_right(T.Cast(\"int32\", T.shift_right(T.Cast(\"int64\", A[i]) * T.Cast(\"int64\", M[i]) + "
      "T.int64(1073741824), T.int64(32))), 31)\n";
  std::string thumb = kernels_of(tir, "llvm -mtriple=thumbv7em-none-eabihf -mcpu=cortex-m4");
  EXPECT_TRUE(has(thumb, "= freeze i32 %")) << thumb;
  EXPECT_FALSE(has(kernels_of(tir, "llvm"), "freeze")) << kernels_of(tir, "llvm");
}

// A shift by T.known_range within [0, 32) (a requantization table's shift) is one ashr of
// the loaded amount; a run-time amount without one is masked first.
TEST(CodegenLlvmGolden, ShiftByAKnownRangeHasNoMask) {
  auto tir = [](const std::string& amount) {
    return "@T.prim_func\ndef f(A: T.Buffer((4,), \"int32\"), S: T.Buffer((4,), \"int32\"), B: T.Buffer((4,), "
           "\"int32\")):\n    for i in range(4):\n        B[i] = T.shift_right(A[i], " +
           amount + ")\n";
  };
  EXPECT_TRUE(has(kernels_of(tir("S[i]"), "llvm"), ", 31\n")) << kernels_of(tir("S[i]"), "llvm");
  const std::string known = kernels_of(tir("T.known_range(S[i], 0, 31)"), "llvm");
  EXPECT_FALSE(has(known, "and i32")) << known;
  EXPECT_TRUE(has(known, "ashr i32")) << known;
}

TEST(CodegenLlvmGolden, TargetTripleAndDataLayout) {
  for (const auto& t : llvm_targets()) {
    std::string ll = kernels_of(kScale, "llvm -mtriple=" + t.triple);
    EXPECT_TRUE(has(ll, "target triple = \"" + t.triple + "\"")) << ll;
    EXPECT_TRUE(has(ll, "target datalayout = \"" + t.datalayout + "\"")) << ll;
  }
  // The default triple, -mcpu as the target-cpu attribute, and unknown triples refused.
  EXPECT_TRUE(has(kernels_of(kScale, "llvm"), "target triple = \"x86_64-pc-linux-gnu\""));
  EXPECT_TRUE(has(kernels_of(kScale, "llvm -mtriple=thumbv7em-none-eabihf -mcpu=cortex-m4"),
                  "attributes #0 = { nounwind \"target-cpu\"=\"cortex-m4\" }"));
  try {
    kernels_of(kScale, "llvm -mtriple=mips-unknown-linux");
    FAIL() << "an unknown triple was accepted";
  } catch (const DiagnosticError& e) {
    EXPECT_TRUE(has(e.diagnostics().at(0).message, "-mtriple=mips-unknown-linux is not supported by the LLVM backend"))
        << e.diagnostics().at(0).message;
  }
}

TEST(CodegenLlvmGolden, PackedWrapperChecksAndKernel) {
  std::string ll = kernels_of(kScale, "llvm");
  // The exported entry point forwards to the checked body, which calls the internal kernel.
  EXPECT_TRUE(has(ll, "define i32 @f(i8* %args, i8* %type_codes, i32 %num_args, i8* %out_ret_value, i8* "
                      "%out_ret_tcode, i8* %resource_handle) #0 {"))
      << ll;
  EXPECT_TRUE(has(ll, "define internal i32 @f_checked(")) << ll;
  EXPECT_TRUE(has(ll, "define internal i32 @f_compute(i8* noalias align 8 %p.A_data, float %p.x, i32 %p.m) #0 {")) << ll;
  // A failed check formats its message once, out of line, and returns -1.
  EXPECT_TRUE(has(ll, "c\"f: expected 2 arguments, got %lld\\00\"")) << ll;
  EXPECT_TRUE(has(ll, "define internal void @mtir_set_error(")) << ll;
  EXPECT_TRUE(has(ll, "ret i32 -1")) << ll;
  // DLTensor fields through the struct type, so 32-bit targets get their own offsets.
  EXPECT_TRUE(has(ll, "%DLTensor = type { i8*, %DLDevice, i32, %DLDataType, i64*, i64*, i64 }")) << ll;
  EXPECT_TRUE(has(ll, "getelementptr inbounds %DLTensor, %DLTensor* ")) << ll;
  // 0.1f exactly, as the double with the float's value.
  EXPECT_TRUE(has(ll, "fadd float %.t")) << ll;
  EXPECT_TRUE(has(ll, ", 0x3FB99999A0000000")) << ll;
}

TEST(CodegenLlvmGolden, DivisionIsGuardedOnlyWhereNeeded) {
  const char* tir =
      "@T.prim_func\n"
      "def d(A: T.Buffer((4,), \"int32\"), B: T.Buffer((4,), \"int32\")):\n"
      "    for i in range(4):\n"
      "        B[i] = T.floordiv(A[i], B[i]) + T.truncdiv(A[i], 4)\n";
  std::string ll = kernels_of(tir, "llvm -unpacked-api=1");
  // A divisor that may be 0 or -1 is replaced by 1, and MIN / -1 becomes 0 - MIN.
  EXPECT_TRUE(has(ll, "icmp eq i32 ")) << ll;
  EXPECT_TRUE(has(ll, "select i1 ")) << ll;
  EXPECT_TRUE(has(ll, "sub i32 0, ")) << ll;
  // Division by the constant 4 needs no guard.
  EXPECT_TRUE(has(ll, ", 4\n")) << ll;
}

TEST(CodegenLlvmGolden, WrapsUnlessBoundsProveOtherwise) {
  const char* tir =
      "@T.prim_func\n"
      "def w(A: T.Buffer((16,), \"int32\"), B: T.Buffer((4,), \"int32\")):\n"
      "    for i in range(4):\n"
      "        B[i] = A[i * 3 + 1] + A[i]\n";
  std::string ll = kernels_of(tir, "llvm -unpacked-api=1");
  // The index is bounded by the loop: no signed wrap, which LLVM may exploit.
  EXPECT_TRUE(has(ll, "mul nsw i32 %i, 3")) << ll;
  EXPECT_TRUE(has(ll, "add nsw i32 ")) << ll;
  // The sum of two loaded values may wrap: plain add, defined in LLVM as in TIR.
  EXPECT_TRUE(has(ll, "= add i32 %")) << ll;
}

TEST(CodegenLlvmGolden, UnrollAndVectorizeHints) {
  const char* tir =
      "@T.prim_func\n"
      "def u(A: T.Buffer((128,), \"float32\")):\n"
      "    for i in T.unroll(100):\n"
      "        A[i] = T.float32(1)\n"
      "    for j in T.vectorized(8):\n"
      "        A[j + 100] = T.float32(2)\n";
  // unroll_loops expands T.unroll loops of up to 64 iterations before any backend; a
  // longer one stays a loop and carries the hint to LLVM.
  std::string ll = kernels_of(tir, "llvm -unpacked-api=1");
  EXPECT_TRUE(has(ll, "br label %for.head.0, !llvm.loop !0")) << ll;
  EXPECT_TRUE(has(ll, "!0 = distinct !{!0, !1}\n!1 = !{!\"llvm.loop.unroll.full\"}")) << ll;
  EXPECT_TRUE(has(ll, "!3 = !{!\"llvm.loop.vectorize.enable\", i1 true}")) << ll;
  std::string why;
  if (llvm_check::available(&why)) llvm_check::expect_compiles(ll, "x86_64-pc-linux-gnu", "u.ll");
}

TEST(CodegenLlvmGolden, CallTirAndWorkspace) {
  const char* tir =
      "@I.ir_module\n"
      "class Module:\n"
      "    @T.prim_func\n"
      "    def add1(A: T.Buffer((8,), \"float32\"), B: T.Buffer((8,), \"float32\")):\n"
      "        for i in range(8):\n"
      "            B[i] = A[i] + T.float32(1)\n"
      "    @T.prim_func\n"
      "    def main(X: T.Buffer((8,), \"float32\"), Y: T.Buffer((8,), \"float32\")):\n"
      "        T_mid = T.alloc_buffer((8,), \"float32\", scope=\"global\")\n"
      "        T.evaluate(T.call_tir(\"add1\", T.tir_region(X[0], 8), T.tir_region(T_mid[0], 8)))\n"
      "        T.evaluate(T.call_tir(\"add1\", T.tir_region(T_mid[0], 8), T.tir_region(Y[0], 8)))\n";
  std::string unpacked = kernels_of(tir, "llvm -unpacked-api=1");
  // call_tir with the unpacked API: a direct call of the callee.
  EXPECT_TRUE(has(unpacked, "call i32 @add1(i8* ")) << unpacked;
  std::string packed = kernels_of(tir, "llvm -unpacked-api=0");
  EXPECT_TRUE(has(packed, "declare i8* @TVMBackendAllocWorkspace(i32, i32, i64, i32, i32)")) << packed;
  EXPECT_TRUE(has(packed, "call i32 @TVMBackendFreeWorkspace(i32 1, i32 0, i8* ")) << packed;
}

// -profile-hooks=1 brackets each operator call of the AOT main with the harness's
// counter functions (run --profile-layers); without it the IR has no trace of them.
TEST(CodegenLlvm, ProfileHooksBracketEachOperatorCallOnlyWhenAsked) {
  const fs::path model = fs::path(mtir::source_dir()) / "models" / "digits";
  LoadedModel lm = load_model(read(model / "digits.json"), "digits.json",
                              [&](const std::string& rel) { return read(model / rel); });
  const std::string target = "llvm -mtriple=thumbv7em-none-eabihf -mcpu=cortex-m4";
  const std::string plain = build_llvm(lm.aot.module, parse_target(target)).sources.at(0).text;
  EXPECT_EQ(plain.find("mtir_profile"), std::string::npos);
  const std::string hooked = build_llvm(lm.aot.module, parse_target(target + " -profile-hooks=1")).sources.at(0).text;
  EXPECT_TRUE(has(hooked, "declare void @mtir_profile_begin(i32, i8*)")) << hooked;
  EXPECT_TRUE(has(hooked, "declare void @mtir_profile_end(i32)")) << hooked;
  // Hook k opens right before the k-th kernel call and closes right after it.
  std::istringstream lines(hooked);
  std::vector<std::string> body;
  for (std::string line; std::getline(lines, line);) body.push_back(line);
  int calls = 0;
  for (size_t i = 0; i + 2 < body.size(); ++i) {
    const std::string begin = "call void @mtir_profile_begin(i32 " + std::to_string(calls) + ", i8* ";
    if (body[i].find("mtir_profile_begin(i32") == std::string::npos || body[i].find("call") == std::string::npos) continue;
    EXPECT_TRUE(has(body[i], begin)) << body[i];
    EXPECT_TRUE(has(body[i + 1], "call i32 @tvmgen_digits_")) << body[i + 1];
    EXPECT_TRUE(has(body[i + 2], "call void @mtir_profile_end(i32 " + std::to_string(calls) + ")")) << body[i + 2];
    ++calls;
  }
  size_t kernel_calls = 0;
  for (const auto& line : body)
    if (has(line, "call i32 @tvmgen_digits_")) ++kernel_calls;
  EXPECT_GT(calls, 3);
  EXPECT_EQ(static_cast<size_t>(calls), kernel_calls);
  // The hooks name the kernel each call runs.
  EXPECT_TRUE(has(hooked, "c\"tvmgen_digits_")) << hooked;
  std::string why;
  if (llvm_check::available(&why)) llvm_check::expect_compiles(hooked, "thumbv7em-none-eabihf", "digits with hooks");
  // Only the LLVM backend takes the option: C always has its TVMGEN_PROFILE macros.
  try {
    parse_target("c -profile-hooks=1");
    ADD_FAILURE() << "c -profile-hooks=1 was accepted";
  } catch (const DiagnosticError& e) {
    EXPECT_TRUE(has(e.diagnostics().at(0).message, "TVMGEN_PROFILE")) << e.diagnostics().at(0).message;
  }
  EXPECT_TRUE(has(parse_target(target + " -profile-hooks=1").str(), " -profile-hooks=1"));
  EXPECT_FALSE(has(parse_target(target).str(), "profile-hooks"));
}

// On Arm DSP cores adjacent int32 loads of an SMLAD tile's body become one LDRD (a volatile
// i64 load: LLVM 14 pairs no others there), a clamp to int8 one SSAT and a product by a
// requantization constant one SMULL; loads that do not change with the loop, and other
// targets, keep plain loads, selects and constants.
TEST(CodegenLlvmGolden, DspTilesPairWordLoadsAndSaturate) {
  const char* tir =
      "@T.prim_func\n"
      "def tile(W: T.Buffer((64,), \"int32\"), C: T.Buffer((64,), \"int32\"), Out: T.Buffer((2,), \"int32\")):\n"
      "    acc = T.alloc_buffer((2,), \"int32\", scope=\"local\")\n"
      "    acc[0] = 0\n"
      "    acc[1] = 0\n"
      "    for k in range(16):\n"
      "        acc[0] = T.smlad(C[k * 4 + 1], T.sxtb16_ror8(W[k * 4]), T.smlad(C[k * 4], T.sxtb16(W[k * 4]), acc[0])) + W[62]\n"
      "        acc[1] = T.smlad(C[k * 4 + 1], T.sxtb16_ror8(W[k * 4 + 1]), T.smlad(C[k * 4], T.sxtb16(W[k * 4 + 1]), acc[1])) + W[63]\n"
      "    Out[0] = T.max(T.min(acc[0], 127), -128)\n"
      "    Out[1] = T.Cast(\"int32\", T.shift_right(T.Cast(\"int64\", acc[1]) * T.int64(1462485049), T.int64(31)))\n";
  const std::string m4 = kernels_of(tir, "llvm -mtriple=thumbv7em-none-eabihf -mcpu=cortex-m4");
  // W[4k], W[4k+1] and C[4k], C[4k+1]; not W[62], W[63], the same in every iteration.
  EXPECT_EQ(count(m4, "= load volatile i64, i64* "), 2u) << m4;
  EXPECT_EQ(count(m4, "call i32 @llvm.arm.ssat(i32 "), 1u) << m4;
  // The requantization multiplier reaches the product as a register value: one SMULL.
  EXPECT_TRUE(has(m4, "call i32 asm \"\", \"=r,0\"(i32 1462485049) nounwind readnone")) << m4;
  for (const char* other : {"llvm", "llvm -mtriple=thumbv7m-none-eabi -mcpu=cortex-m3"}) {
    const std::string ll = kernels_of(tir, other);
    EXPECT_FALSE(has(ll, "volatile")) << other;
    EXPECT_FALSE(has(ll, "llvm.arm.ssat")) << other;
    EXPECT_FALSE(has(ll, "asm")) << other;
  }
  std::string why;
  if (llvm_check::available(&why)) llvm_check::expect_compiles(m4, "thumbv7em-none-eabihf", "the paired tile");
}

// smmlar with a constant operand (IC's residual adds) is one SMMLAR through inline
// assembly on Arm DSP cores, its constants register values: in 64-bit steps InstCombine
// folds the constant and no SMMLAR forms. With register operands the ARM backend forms it
// from the 64-bit steps itself, and other targets keep the steps.
TEST(CodegenLlvmGolden, SmmlarWithAConstantIsTheInstructionOnDspCores) {
  const char* tir =
      "@T.prim_func\n"
      "def requant(X: T.Buffer((2,), \"int32\"), Out: T.Buffer((2,), \"int32\")):\n"
      "    Out[0] = T.smmlar(X[0] * 2097152, 1623821475, 2)\n"
      "    Out[1] = T.smmlar(X[0], X[1], X[0] + X[1])\n";
  const std::string m4 = kernels_of(tir, "llvm -mtriple=thumbv7em-none-eabihf -mcpu=cortex-m4");
  EXPECT_EQ(count(m4, "call i32 asm \"smmlar $0, $1, $2, $3\", \"=r,r,r,r\"("), 1u) << m4;
  // Its constants as register values (hoisted out of loops, not rebuilt at each use).
  EXPECT_TRUE(has(m4, "call i32 asm \"\", \"=r,0\"(i32 1623821475) nounwind readnone")) << m4;
  EXPECT_TRUE(has(m4, "call i32 asm \"\", \"=r,0\"(i32 2) nounwind readnone")) << m4;
  EXPECT_EQ(count(m4, "lshr i64 "), 1u) << m4;  // Out[1] in 64-bit steps
  for (const char* other : {"llvm", "llvm -mtriple=thumbv7m-none-eabi -mcpu=cortex-m3"}) {
    const std::string ll = kernels_of(tir, other);
    EXPECT_FALSE(has(ll, "asm")) << other;
    EXPECT_EQ(count(ll, "lshr i64 "), 2u) << other;
  }
  std::string why;
  if (llvm_check::available(&why)) llvm_check::expect_compiles(m4, "thumbv7em-none-eabihf", "smmlar");
#ifdef MICROTIR_HAVE_LLVM_NATIVE
  // libLLVM assembles the inline assembly (the ARM assembly parser is initialized).
  llvm_native::Options o;
  o.triple = "thumbv7em-none-eabihf";
  o.cpu = "cortex-m4";
  EXPECT_GT(llvm_native::compile_to_object(m4, "requant.ll", o).size(), 0u);
#endif
}

// The tiles bind each loaded word to a name (`w = W[...]`, let statements around the
// stores): those loads pair too, as do a second pixel's (`C[n + k * 4]`, `C[k * 4 + n + 1]`). A tile loop of two steps is unrolled (O2 would make its
// index a phi of two constants, which loop strength reduction cannot step); longer ones
// and loops that are not tiles keep their loop.
TEST(CodegenLlvmGolden, DspTilesPairLetBoundLoadsAndUnrollTwoSteps) {
  // `second`: where the second pixel's column starts in C.
  auto tile = [](int steps, int second) {
    const std::string n = std::to_string(steps), words = std::to_string(steps * 4), at = std::to_string(second);
    return "@T.prim_func\n"
           "def tile(W: T.Buffer((" + words + ",), \"int32\"), C: T.Buffer((" + at + " + " + words + ",), \"int32\"), "
           "Out: T.Buffer((2,), \"int32\")):\n"
           "    acc = T.alloc_buffer((2,), \"int32\", scope=\"local\")\n"
           "    acc[0] = 0\n"
           "    acc[1] = 0\n"
           "    for k in range(" + n + "):\n"
           "        w: T.int32 = W[k * 4]\n"
           "        w_1: T.int32 = W[k * 4 + 1]\n"
           "        x: T.int32 = C[k * 4]\n"
           "        x_1: T.int32 = C[k * 4 + 1]\n"
           "        z: T.int32 = C[" + at + " + k * 4]\n"  // the second pixel's column: constant first
           "        z_1: T.int32 = C[k * 4 + " + std::to_string(second + 1) + "]\n"
           "        acc[0] = T.smlad(z_1, T.sxtb16_ror8(w), T.smlad(z, T.sxtb16(w), acc[0]))\n"
           "        acc[0] = T.smlad(x_1, T.sxtb16_ror8(w), T.smlad(x, T.sxtb16(w), acc[0]))\n"
           "        acc[1] = T.smlad(x_1, T.sxtb16_ror8(w_1), T.smlad(x, T.sxtb16(w_1), acc[1]))\n"
           "    for i in range(2):\n"
           "        Out[i] = acc[i]\n";
  };
  const std::string target = "llvm -mtriple=thumbv7em-none-eabihf -mcpu=cortex-m4";
  const std::string two = kernels_of(tile(2, 8), target), sixteen = kernels_of(tile(16, 64), target);
  EXPECT_EQ(count(two, "= load volatile i64, i64* "), 3u) << two;
  EXPECT_EQ(count(sixteen, "= load volatile i64, i64* "), 3u) << sixteen;
  // A pair 256 words or more past the buffer's lowest word is out of LDRD's reach (1020
  // bytes) from a shared base: its words stay single loads.
  const std::string far = kernels_of(tile(16, 256), target), near = kernels_of(tile(16, 255), target);
  EXPECT_EQ(count(far, "= load volatile i64, i64* "), 2u) << far;
  EXPECT_EQ(count(near, "= load volatile i64, i64* "), 3u) << near;
  EXPECT_EQ(count(two, "llvm.loop.unroll.full"), 1u) << two;  // the tile's loop, not the copy-out loop
  EXPECT_FALSE(has(sixteen, "llvm.loop.unroll.full")) << sixteen;
  const std::string m3 = kernels_of(tile(2, 8), "llvm -mtriple=thumbv7m-none-eabi -mcpu=cortex-m3");
  EXPECT_FALSE(has(m3, "volatile")) << m3;
  EXPECT_FALSE(has(m3, "llvm.loop.unroll.full")) << m3;
  std::string why;
  if (llvm_check::available(&why)) llvm_check::expect_compiles(two, "thumbv7em-none-eabihf", "the two-step tile");
}

// A tile loop of at least 32 SMLADs run four times or more is unrolled twice on DSP cores
// without Helium (half the pointer steps, end compares and branches; an odd count, IC's
// nine-step tiles, with one step after the loop); fewer steps, a shorter body, Helium's
// low-overhead loops and cores without SMLAD tiles keep the loop as it is.
TEST(CodegenLlvmGolden, LongDspTilesAreUnrolledTwice) {
  auto tile = [](int steps, int words) {  // `words` column words a step: words / 2 * 4 SMLADs
    std::string tir =
        "@T.prim_func\n"
        "def tile(W: T.Buffer((256,), \"int32\"), C: T.Buffer((256,), \"int32\"), Out: T.Buffer((2,), \"int32\")):\n"
        "    acc = T.alloc_buffer((2,), \"int32\", scope=\"local\")\n"
        "    acc[0] = 0\n"
        "    acc[1] = 0\n"
        "    for k in range(" + std::to_string(steps) + "):\n";
    for (int j = 0; j < words; j += 2) {
      const std::string n = std::to_string(j), at = "k * 16 + " + n, next = "k * 16 + " + std::to_string(j + 1);
      tir += "        w" + n + ": T.int32 = W[" + at + "]\n        v" + n + ": T.int32 = W[" + next + "]\n" +
             "        x" + n + ": T.int32 = C[" + at + "]\n        y" + n + ": T.int32 = C[" + next + "]\n" +
             "        acc[0] = T.smlad(y" + n + ", T.sxtb16_ror8(w" + n + "), T.smlad(x" + n + ", T.sxtb16(w" + n + "), acc[0]))\n" +
             "        acc[1] = T.smlad(y" + n + ", T.sxtb16_ror8(v" + n + "), T.smlad(x" + n + ", T.sxtb16(v" + n + "), acc[1]))\n" +
             "        acc[0] = T.smlad(x" + n + ", T.sxtb16_ror8(v" + n + "), T.smlad(y" + n + ", T.sxtb16(v" + n + "), acc[0]))\n" +
             "        acc[1] = T.smlad(x" + n + ", T.sxtb16_ror8(w" + n + "), T.smlad(y" + n + ", T.sxtb16(w" + n + "), acc[1]))\n";
    }
    return tir + "    Out[0] = acc[0]\n    Out[1] = acc[1]\n";
  };
  const std::string m4 = "llvm -mtriple=thumbv7em-none-eabihf -mcpu=cortex-m4";
  const std::string twice = "!\"llvm.loop.unroll.count\", i32 2}";
  EXPECT_TRUE(has(kernels_of(tile(6, 8), m4), twice)) << kernels_of(tile(6, 8), m4);  // 32 SMLADs
  EXPECT_TRUE(has(kernels_of(tile(4, 16), "llvm -mtriple=thumbv8m.main-none-eabihf -mcpu=cortex-m33"), twice));
  EXPECT_TRUE(has(kernels_of(tile(9, 8), m4), twice));  // odd
  EXPECT_FALSE(has(kernels_of(tile(3, 8), m4), twice));
  EXPECT_FALSE(has(kernels_of(tile(6, 6), m4), twice));  // 24 SMLADs
  EXPECT_FALSE(has(kernels_of(tile(6, 8), "llvm -mtriple=thumbv8.1m.main-none-eabihf -mcpu=cortex-m55"), twice));
  EXPECT_FALSE(has(kernels_of(tile(6, 8), "llvm -mtriple=thumbv7m-none-eabi -mcpu=cortex-m3"), "llvm.loop.unroll"));
  std::string why;
  if (llvm_check::available(&why)) llvm_check::expect_compiles(kernels_of(tile(6, 8), m4), "thumbv7em-none-eabihf", "tile");
}

// An im2col gather over one pixel's window (loops of at most three steps over the taps,
// each tap copied or, past the border, filled with the padding value, into the function's
// own column) is fully unrolled on Arm DSP cores, up to nine taps: O2 unrolls a three-step
// loop by two with an exit in the middle. A gather whose border path loads (the first
// layer's staged taps), one without a border test (a pointwise layer's pixels), longer
// loops, the loop over three pixels' windows (27 taps) and cores without SMLAD keep theirs.
TEST(CodegenLlvmGolden, PaddedWindowGathersAreUnrolledOnDspCores) {
  // `pixels` windows of taps x taps, two words a tap.
  auto gather = [](int taps, const std::string& padding, int pixels = 1) {
    const std::string n = std::to_string(taps), words = std::to_string(pixels * taps * taps * 2);
    const std::string in = pixels > 1 ? "    " : "", at = pixels > 1 ? "(pg * " + n + " + rh) * " + n + " + rw" : "rh * " + n + " + rw";
    return "@T.prim_func\n"
           "def gather(D: T.Buffer((64,), \"int32\"), Out: T.Buffer((" + words + ",), \"int32\"), x: T.int32):\n"
           "    col = T.alloc_buffer((" + words + ",), \"int32\", scope=\"local\")\n" +
           (pixels > 1 ? "    for pg in range(" + std::to_string(pixels) + "):\n" : "") +
           in + "    for rh in range(" + n + "):\n" +
           in + "        for rw in range(" + n + "):\n" +
           in + "            if x + rw >= 1:\n" +
           in + "                col[(" + at + ") * 2] = T.sxtb16(D[rh * 8 + rw])\n" +
           in + "                col[(" + at + ") * 2 + 1] = T.sxtb16_ror8(D[rh * 8 + rw])\n" +
           in + "            else:\n" +
           in + "                for pe in range(2):\n" +
           in + "                    col[(" + at + ") * 2 + pe] = " + padding + "\n" +
           "    for i in range(" + words + "):\n"
           "        Out[i] = col[i]\n";
  };
  const std::string m4 = "llvm -mtriple=thumbv7em-none-eabihf -mcpu=cortex-m4", full = "!{!\"llvm.loop.unroll.full\"}";
  const std::string padded = kernels_of(gather(3, "-8323200"), m4);
  EXPECT_EQ(count(padded, full), 2u) << padded;  // rh and rw; not the fill or the copy-out loop
  EXPECT_EQ(count(kernels_of(gather(3, "-8323200"), "llvm -mtriple=thumbv8m.main-none-eabihf -mcpu=cortex-m33"), full), 2u);
  const std::string three = kernels_of(gather(3, "-8323200", 3), m4);
  EXPECT_EQ(count(three, full), 2u) << three;  // each window's rh and rw, not pg (27 taps)
  EXPECT_FALSE(has(kernels_of(gather(3, "D[pe]"), m4), "llvm.loop.unroll"));  // the border path loads
  EXPECT_FALSE(has(kernels_of(gather(4, "-8323200"), m4), "llvm.loop.unroll"));
  EXPECT_FALSE(has(kernels_of(gather(3, "-8323200"), "llvm -mtriple=thumbv7m-none-eabi -mcpu=cortex-m3"), "llvm.loop.unroll"));
  const std::string straight =
      "@T.prim_func\n"
      "def pixels(D: T.Buffer((8,), \"int32\"), Out: T.Buffer((6,), \"int32\")):\n"
      "    col = T.alloc_buffer((6,), \"int32\", scope=\"local\")\n"
      "    for pg in range(3):\n"
      "        col[pg * 2] = T.sxtb16(D[pg])\n"
      "        col[pg * 2 + 1] = T.sxtb16_ror8(D[pg])\n"
      "    for i in range(6):\n"
      "        Out[i] = col[i]\n";
  EXPECT_FALSE(has(kernels_of(straight, m4), "llvm.loop.unroll"));
  std::string why;
  if (llvm_check::available(&why)) llvm_check::expect_compiles(padded, "thumbv7em-none-eabihf", "the padded gather");
}

// word_pair(A[i], A[i + 1]) is one `load volatile i64` (LDRD) on Arm DSP cores, as the C
// backend loads it: as two plain loads, LICM hoisted short1x1's column words out of the
// channel loop and the allocator spilled them (VWW's K=32 1x1 layers: 48 LDRs from stack
// slots a channel pair against 24 LDRDs). Other operands and other cores keep two loads.
TEST(CodegenLlvmGolden, AdjacentWordPairsAreOneLoadOnDspCores) {
  auto pair = [](const std::string& second) {
    return "@T.prim_func\n"
           "def pairs(C: T.Buffer((8,), \"int32\"), W: T.Buffer((8,), \"int32\"), Out: T.Buffer((4,), \"int32\")):\n"
           "    for ob in range(4):\n"
           "        p: T.int64 = T.word_pair(C[2], C[" + second + "])\n"
           "        Out[ob] = T.smlad(T.Cast(\"int32\", p), W[ob], T.Cast(\"int32\", T.shift_right(p, T.int64(32))))\n";
  };
  const std::string m4 = "llvm -mtriple=thumbv7em-none-eabihf -mcpu=cortex-m4";
  const std::string adjacent = kernels_of(pair("3"), m4);
  EXPECT_EQ(count(adjacent, "= load volatile i64, i64* "), 1u) << adjacent;
  EXPECT_FALSE(has(kernels_of(pair("4"), m4), "volatile"));
  EXPECT_FALSE(has(kernels_of(pair("3"), "llvm -mtriple=thumbv7m-none-eabi -mcpu=cortex-m3"), "volatile"));
  std::string why;
  if (llvm_check::available(&why)) llvm_check::expect_compiles(adjacent, "thumbv7em-none-eabihf", "the word pair");
}

// Helium through its intrinsics: T.vmladava on 16 int8 lanes is one VMLADAVA.S8 (as widened
// lanes, LLVM hoisted each column's sign extension out of the channel loop: four spilled
// q registers a column, four VMLADAVA.U32 a step); T.multiply_by_quantized_multiplier on
// int32x4 is VQRDMULH, alone with shift 0 (mve_pair_requant's form), else between a left
// shift and a rounding right shift (VRSHL); vector shifts stay vectors. Other triples keep
// the portable forms.
TEST(CodegenLlvmGolden, HeliumDotProductAndRequantizationIntrinsics) {
  const DataType i32 = DataType::Int(32), i8 = DataType::Int(8);
  ops::FuncBuilder fb;
  Buffer a = fb.param("A", {16}, i8), b = fb.param("B", {16}, i8), s = fb.param("S", {12}, i32), c = fb.param("C", {1}, i32);
  auto lanes = [](int64_t start, int n) { return Ramp(ops::ci(start), ops::ci(1), n); };
  Expr dot = Call(i32, "vmladava", {ops::load(c, {ops::ci(0)}), ops::load(a, {lanes(0, 16)}), ops::load(b, {lanes(0, 16)})});
  Expr h = Call(i32.with_lanes(4), "multiply_by_quantized_multiplier",
                {ops::load(s, {lanes(0, 4)}), ops::load(s, {lanes(4, 4)}), Broadcast(ops::ci(0), 4)});
  // TFLite's general form, a shift per lane: VQRDMULH between a left shift and VRSHL.
  Expr general = Call(i32.with_lanes(4), "multiply_by_quantized_multiplier",
                      {ops::load(s, {lanes(0, 4)}), ops::load(s, {lanes(4, 4)}), ops::load(s, {lanes(8, 4)})});
  Stmt body = SeqStmt({ops::store(c, dot, {ops::ci(0)}),
                       ops::store(s, ops::call("shift_right", {h, ops::load(s, {lanes(8, 4)})}), {lanes(8, 4)}),
                       ops::store(s, general, {lanes(0, 4)})});
  IRModule m;
  m.set("helium", fb.finish("helium", body));
  LlvmCodegenOptions m55;
  m55.triple = "thumbv8.1m.main-none-eabihf";
  m55.cpu = "cortex-m55";
  m55.arm_dsp = true;
  const std::string ll = codegen_llvm(m, m55);
  EXPECT_TRUE(has(ll, "call i32 @llvm.arm.mve.vmldava.v16i8(i32 0, i32 0, i32 0, i32 ")) << ll;
  EXPECT_TRUE(has(ll, "call <4 x i32> @llvm.arm.mve.vqrdmulh.v4i32(<4 x i32> ")) << ll;
  EXPECT_TRUE(has(ll, "= ashr <4 x i32> ")) << ll;
  EXPECT_EQ(count(ll, "call <4 x i32> @llvm.arm.mve.vqrdmulh.v4i32("), 2u) << ll;
  EXPECT_TRUE(has(ll, "call <4 x i32> @llvm.sadd.sat.v4i32(")) << ll;
  EXPECT_TRUE(has(ll, "call <4 x i32> @llvm.arm.mve.vshl.vector.v4i32.v4i32(<4 x i32> ")) << ll;
  LlvmCodegenOptions m4;
  m4.triple = "thumbv7em-none-eabihf";
  m4.arm_dsp = true;
  const std::string portable = codegen_llvm(m, m4);
  EXPECT_FALSE(has(portable, "llvm.arm.mve")) << portable;
  EXPECT_TRUE(has(portable, "llvm.vector.reduce.add.v16i32")) << portable;
  std::string why;
  if (llvm_check::available(&why)) {
    llvm_check::expect_compiles(ll, m55.triple, "the Helium intrinsics");
    llvm_check::expect_compiles(portable, m4.triple, "the portable forms");
  }
}

// A view through a pointer derived from an allocation may alias what a store of the list
// writes (here V[2k + 1] is acc[2k + 1], written between the two reads): no pair.
TEST(CodegenLlvmGolden, NoPairedLoadsThroughDerivedPointers) {
  const char* tir =
      "@T.prim_func\n"
      "def alias(W: T.Buffer((32,), \"int32\"), Out: T.Buffer((32,), \"int32\")):\n"
      "    acc = T.alloc_buffer((32,), \"int32\", scope=\"local\")\n"
      "    p: T.handle = T.address_of(acc[0])\n"
      "    V = T.decl_buffer((32,), \"int32\", data=p)\n"
      "    for k in range(16):\n"
      "        acc[k * 2] = V[k * 2] + W[k]\n"
      "        acc[k * 2 + 1] = W[k + 16]\n"
      "        acc[k * 2] = acc[k * 2] + V[k * 2 + 1]\n"
      "    for i in range(32):\n"
      "        Out[i] = acc[i]\n";
  const std::string m4 = kernels_of(tir, "llvm -mtriple=thumbv7em-none-eabihf -mcpu=cortex-m4");
  EXPECT_FALSE(has(m4, "load volatile")) << m4;
}

TEST(CodegenLlvmGolden, RegistryIsConstantData) {
  IRModule m = parse_module_or_throw(read(fs::path(mtir::source_dir()) / "examples" / "matmul.tir"), "matmul.tir");
  for (const auto& t : llvm_targets()) {
    BuildResult built = build_llvm(m, parse_target("llvm -mtriple=" + t.triple + " -unpacked-api=0"));
    ASSERT_EQ(built.sources.size(), 2u);
    EXPECT_EQ(built.sources[0].path, "codegen/host/src/lib0.ll");
    EXPECT_EQ(built.sources[1].path, "codegen/host/src/lib1.ll");
    const std::string& reg = built.sources[1].text;
    EXPECT_TRUE(has(reg, "@kFuncNames = internal constant [9 x i8] c\"\\01\\00matmul\\00\", align 1")) << reg;
    EXPECT_TRUE(has(reg, "@kFuncs = internal constant [1 x i32 (i8*, i8*, i32, i8*, i8*, i8*)*] [i32 (i8*, i8*, i32, "
                         "i8*, i8*, i8*)* @matmul], align " +
                             std::to_string(t.pointer_bits / 8)))
        << reg;
    EXPECT_TRUE(has(reg, "define %TVMFuncRegistry* @TVMSystemLibEntryPoint() #0 {")) << reg;
  }
}

TEST(CodegenLlvmGolden, RefusesWhatLlvmHasNoTypeFor) {
  try {
    kernels_of("@T.prim_func\ndef h(A: T.Buffer((4,), \"float16\")):\n    A[0] = T.float16(1)\n", "llvm");
    FAIL() << "float16 was accepted";
  } catch (const DiagnosticError& e) {
    EXPECT_TRUE(has(e.diagnostics().at(0).message, "does not support float16")) << e.diagnostics().at(0).message;
  }
}

// Device kernels: each device's functions in its own module codegen/<device>/src/lib0.ll,
// which the host module declares and calls with the resource handle as the last argument.
TEST(CodegenLlvmGolden, DeviceKernelsLiveInTheirDevicesModule) {
  const fs::path model = fs::path(mtir::source_dir()) / "models" / "digits";
  LoadedModel lm = load_model(read(model / "digits.json"), "digits.json",
                              [&](const std::string& rel) { return read(model / rel); }, {"npu0=conv2d", "npu1=dense"});
  const std::string triple = "thumbv7em-none-eabihf";
  BuildResult built =
      build_llvm(lm.aot.module, parse_target("llvm -mtriple=" + triple + " -interface-api=c -unpacked-api=1"));
  std::map<std::string, std::string> by_path;
  for (const auto& src : built.sources) by_path[src.path] = src.text;
  ASSERT_EQ(by_path.size(), 4u);
  const std::string& host = by_path.at("codegen/host/src/lib0.ll");
  int device_functions = 0;
  for (const auto& [name, f] : built.lowered.module.functions) {
    const std::string device = device_of(f);
    if (device.empty()) continue;
    ++device_functions;
    const std::string symbol = symbol_of(name, f);
    const std::string& own = by_path.at("codegen/" + device + "/src/lib0.ll");
    const std::string& other = by_path.at("codegen/" + std::string(device == "npu0" ? "npu1" : "npu0") + "/src/lib0.ll");
    EXPECT_TRUE(has(own, "define i32 @" + symbol + "(")) << own;
    EXPECT_FALSE(has(other, "@" + symbol + "(")) << other;
    EXPECT_FALSE(has(host, "define i32 @" + symbol + "(")) << host;
    EXPECT_TRUE(has(host, "\ndeclare i32 @" + symbol + "(")) << host;
    // The call passes the main's handle for this device last.
    const size_t call = host.find("call i32 @" + symbol + "(");
    ASSERT_NE(call, std::string::npos) << host;
    auto ends_with_handle = [&](const std::string& text, size_t at) {
      const std::string line = text.substr(at, text.find('\n', at) - at);
      const std::string last = ", i8* %p." + device + ")";
      return line.size() > last.size() && line.compare(line.size() - last.size(), last.size(), last) == 0;
    };
    EXPECT_TRUE(ends_with_handle(host, call)) << host.substr(call, 200);
    // The device function takes its handle last and hands it to the device library last.
    const size_t def = own.find("define i32 @" + symbol + "(");
    EXPECT_NE(own.find("%p." + device + ") #0 {\n", def), std::string::npos) << own;
    EXPECT_EQ(own.find(" %p." + device, def), own.find("%p." + device + ") #0 {\n", def) - 1) << own;
    const std::string kernel = device == "npu0" ? "npu_conv2d" : "npu_dense";
    EXPECT_TRUE(has(own, "declare i32 @" + kernel + "(")) << own;
    const size_t kernel_call = own.find("call i32 @" + kernel + "(");
    ASSERT_NE(kernel_call, std::string::npos) << own;
    EXPECT_TRUE(ends_with_handle(own, kernel_call)) << own.substr(kernel_call, 200);
    EXPECT_FALSE(has(host, "@" + kernel + "(")) << host;
  }
  EXPECT_EQ(device_functions, 3);  // two convolutions on npu0, the dense layer on npu1
  MICROTIR_REQUIRE_LLVM_CHECKER();
  for (const auto& [path, text] : by_path) llvm_check::expect_compiles(text, triple, path);
}

#ifdef MICROTIR_HAVE_LLVM_NATIVE
// Objects for a Cortex-M4 (Thumb-2 with the DSP extension, hard float).
llvm_native::Options cortex_m4_options() {
  llvm_native::Options o;
  o.triple = "thumbv7em-none-eabihf";
  o.cpu = "cortex-m4";
  return o;
}

// A function @dot(params) whose block %loop counts %ko from 0 and sums into %acc: `body`
// computes %acc's next value `next` and %ko.next and branches back or to %exit, which
// returns `next`.
std::string dot_loop(const std::string& params, const std::string& next, const std::string& body) {
  return "define i32 @dot(" + params + ") {\nentry:\n  br label %loop\n"
         "loop:\n  %ko = phi i32 [ 0, %entry ], [ %ko.next, %loop ]\n  %acc = phi i32 [ 0, %entry ], [ " + next +
         ", %loop ]\n" + body + "exit:\n  ret i32 " + next + "\n}\n";
}

// IR the verifier rejects is a microtir internal error that names the function.
TEST(LlvmNative, VerifierFailureIsAnInternalErrorNamingTheFunction) {
  const std::string bad = llvm_module_header(llvm_target("")) +
                          "define i32 @broken(i1 %c) {\n"
                          "entry:\n  br i1 %c, label %a, label %b\n"
                          "a:\n  %x = add i32 1, 2\n  br label %b\n"
                          "b:\n  ret i32 %x\n}\n";
  try {
    llvm_native::verify(bad, "bad.ll");
    FAIL() << "the verifier accepted a use that its definition does not dominate";
  } catch (const DiagnosticError& e) {
    EXPECT_TRUE(e.internal());
    EXPECT_TRUE(has(e.diagnostics().at(0).message, "the LLVM verifier rejects function 'broken' of bad.ll"))
        << e.diagnostics().at(0).message;
  }
  try {
    llvm_native::verify("define i32 @f( {", "syntax.ll");
    FAIL() << "a parse error was accepted";
  } catch (const DiagnosticError& e) {
    EXPECT_TRUE(e.internal());
    EXPECT_TRUE(has(e.diagnostics().at(0).message, "cannot parse (syntax.ll:1:")) << e.diagnostics().at(0).message;
  }
}

// The optimizer runs the new pass manager's pipelines: at -O2 the wrapper's checked
// body is inlined into the exported entry point; -Os objects are no larger than -O2's.
TEST(LlvmNative, OptimizesWithTheNewPassManager) {
  std::string ll = kernels_of(kScale, "llvm");
  llvm_native::Options o2;
  std::string optimized = llvm_native::optimize(ll, "scale.ll", o2);
  EXPECT_FALSE(has(optimized, "@f_checked(")) << optimized;  // inlined into @f
  EXPECT_TRUE(has(optimized, "define i32 @f(")) << optimized;
  llvm_native::Options os;
  os.opt = "Os";
  for (const auto& t : llvm_targets()) {
    o2.triple = os.triple = t.triple;
    std::string a = llvm_native::compile_to_object(kernels_of(kScale, "llvm -mtriple=" + t.triple), "scale.ll", o2);
    std::string b = llvm_native::compile_to_object(kernels_of(kScale, "llvm -mtriple=" + t.triple), "scale.ll", os);
    EXPECT_GT(a.size(), 0u);
    EXPECT_LE(b.size(), a.size()) << t.triple;
  }
  os.opt = "O9";
  EXPECT_THROW(llvm_native::optimize(ll, "scale.ll", os), DiagnosticError);
}

// On Cortex-M the pipeline splits the constant part out of an index (`base + (ko*16 | k)`,
// the unrolled reductions of the int8 kernels): each load then addresses one shared base
// with an immediate offset instead of an ORR and a register-offset load per access.
TEST(LlvmNative, CortexMLoadsUseTheSharedBaseWithConstantOffsets) {
  const std::string loop =
      "  %b = mul nsw i32 %ko, 16\n"
      "  %p0 = getelementptr inbounds i32, i32* %w, i32 %b\n  %x0 = load i32, i32* %p0, align 4\n"
      "  %i3 = add nsw i32 %b, 3\n"
      "  %p3 = getelementptr inbounds i32, i32* %w, i32 %i3\n  %x3 = load i32, i32* %p3, align 4\n"
      "  %i7 = add nsw i32 %b, 7\n"
      "  %p7 = getelementptr inbounds i32, i32* %w, i32 %i7\n  %x7 = load i32, i32* %p7, align 4\n"
      "  %a1 = add i32 %acc, %x0\n  %a2 = add i32 %a1, %x3\n  %a3 = add i32 %a2, %x7\n"
      "  %ko.next = add nsw i32 %ko, 1\n  %c = icmp slt i32 %ko.next, 5\n"
      "  br i1 %c, label %loop, label %exit\n";
  const std::string body = dot_loop("i32* noalias %w", "%a3", loop);
  const llvm_native::Options thumb = cortex_m4_options();
  std::string m = llvm_native::optimize(llvm_module_header(llvm_target(thumb.triple)) + body, "dot.ll", thumb);
  EXPECT_TRUE(has(m, "i32 3\n")) << m;  // gep (gep %w, base), 3
  EXPECT_TRUE(has(m, "i32 7\n")) << m;
  llvm_native::Options x86;  // elsewhere the default pipeline alone
  std::string h = llvm_native::optimize(llvm_module_header(llvm_target("")) + body, "dot.ll", x86);
  EXPECT_FALSE(has(h, "i32 7\n")) << h;
}

// Schedule dsp_no_early_scheduling reaches the LLVM backend too: on DSP cores without
// Helium its objects are compiled without the machine scheduler (LLVM's process-wide
// enable-misched, set by each compile for its own target and restored for the next).
TEST(LlvmNative, DspCoresWithoutHeliumSkipTheMachineScheduler) {
  const std::string m4 = "llvm -mtriple=thumbv7em-none-eabihf -mcpu=cortex-m4";
  EXPECT_FALSE(llvm_machine_scheduling(parse_target(m4)));
  EXPECT_FALSE(llvm_machine_scheduling(parse_target("llvm -mtriple=thumbv8m.main-none-eabihf -mcpu=cortex-m33")));
  EXPECT_TRUE(llvm_machine_scheduling(parse_target(m4 + " -disabled-schedules=dsp_no_early_scheduling")));
  EXPECT_TRUE(llvm_machine_scheduling(parse_target("llvm -mtriple=thumbv8.1m.main-none-eabihf -mcpu=cortex-m55")));
  EXPECT_TRUE(llvm_machine_scheduling(parse_target("llvm -mtriple=thumbv7m-none-eabi -mcpu=cortex-m3")));
  EXPECT_TRUE(llvm_machine_scheduling(parse_target("llvm")));
  EXPECT_TRUE(llvm_machine_scheduling(parse_target("c -mcpu=cortex-m4")));
  const char* tile =
      "@T.prim_func\n"
      "def tile(W: T.Buffer((64,), \"int32\"), C: T.Buffer((64,), \"int32\"), Out: T.Buffer((4,), \"int32\")):\n"
      "    acc = T.alloc_buffer((4,), \"int32\", scope=\"local\")\n"
      "    for i in range(4):\n"
      "        acc[i] = 0\n"
      "    for k in range(8):\n"
      "        for i in range(4):\n"
      "            acc[i] = T.smlad(C[k * 8 + i % 2 + 1], T.sxtb16_ror8(W[k * 8 + i]), "
      "T.smlad(C[k * 8 + i % 2], T.sxtb16(W[k * 8 + i]), acc[i]))\n"
      "    for i in range(4):\n"
      "        Out[i] = acc[i]\n";
  const std::string ll = kernels_of(tile, m4 + " -unpacked-api=1");
  const llvm_native::Options on = cortex_m4_options();
  llvm_native::Options off = on;
  off.machine_scheduler = false;
  const std::string scheduled = llvm_native::compile_to_object(ll, "tile.ll", on);
  EXPECT_NE(llvm_native::compile_to_object(ll, "tile.ll", off), scheduled);
  EXPECT_EQ(llvm_native::compile_to_object(ll, "tile.ll", on), scheduled);
}

// After loop strength reduction on Cortex-M without low-overhead loops, a loop whose
// counter only counts exits when a pointer it steps reaches its end (ExitOnPointerPass):
// one register fewer in the SMLAD tiles, which need all 14. Elsewhere the counter stays.
TEST(LlvmNative, CortexMLoopsExitOnAPointerTheyStep) {
  const std::string loop =
      "  %iw = mul nsw i32 %ko, 12\n  %ic = mul nsw i32 %ko, 8\n"
      "  %pw = getelementptr inbounds i32, i32* %w, i32 %iw\n  %xw = load i32, i32* %pw, align 4\n"
      "  %pc = getelementptr inbounds i32, i32* %c, i32 %ic\n  %xc = load i32, i32* %pc, align 4\n"
      "  %a1 = mul i32 %xw, %xc\n  %a2 = add i32 %acc, %a1\n"
      "  %ko.next = add nuw nsw i32 %ko, 1\n  %done = icmp eq i32 %ko.next, 100\n"
      "  br i1 %done, label %exit, label %loop, !llvm.loop !0\n";
  const std::string body = dot_loop("i32* noalias %w, i32* noalias %c", "%a2", loop) +
                           "!0 = distinct !{!0, !1, !2}\n!1 = !{!\"llvm.loop.unroll.disable\"}\n"
                           "!2 = !{!\"llvm.loop.vectorize.width\", i32 1}\n";
  auto lowered = [&](const std::string& triple, const std::string& cpu) {
    llvm_native::Options o;
    o.triple = triple;
    o.cpu = cpu;
    return llvm_native::lower_loops(llvm_module_header(llvm_target(triple)) + body, "dot.ll", o);
  };
  const std::string m4 = lowered("thumbv7em-none-eabihf", "cortex-m4");
  EXPECT_TRUE(has(m4, "%mtir.reached = icmp eq i32* ")) << m4;
  EXPECT_EQ(count(m4, " = phi i32* "), 2u) << m4;  // the two pointers
  EXPECT_EQ(count(m4, " = phi i32 [ "), 2u) << m4;  // the accumulator and its exit value, no counter
  EXPECT_TRUE(has(lowered("thumbv7m-none-eabi", "cortex-m3"), "mtir.reached"));
  for (const auto& [triple, cpu] : std::vector<std::pair<std::string, std::string>>{
           {"thumbv8.1m.main-none-eabihf", "cortex-m55"}, {"x86_64-pc-linux-gnu", ""}}) {
    const std::string ll = lowered(triple, cpu);
    EXPECT_FALSE(has(ll, "mtir.reached")) << ll;
    EXPECT_TRUE(has(ll, "lsr.iv")) << ll;  // strength reduction ran there too
  }
  const llvm_native::Options thumb = cortex_m4_options();
  EXPECT_GT(llvm_native::compile_to_object(llvm_module_header(llvm_target(thumb.triple)) + body, "dot.ll", thumb).size(), 0u);
}
#endif

}  // namespace
}  // namespace mtir
