// The C backend against the reference interpreter: every program of tests/programs/
// and the bundled example, on deterministic random inputs, through the interpreter,
// host C with the packed API and host C with the unpacked API. Integers must agree
// bit for bit, floats within 1e-6 relative. The generated sources must also compile
// under clang with -Werror -pedantic (gcc builds them in the simulator).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "codegen/c/codegen_c.h"
#include "codegen/wasm/codegen_wat.h"
#include "codegen/emit_common.h"
#include "ir/visitor.h"
#include "driver/build.h"
#include "interp/interpreter.h"
#include "ops/ops.h"
#include "script/parser.h"
#include "sim/host_sim.h"
#include "sim/process.h"
#include "support/compare.h"
#include "program_corpus.h"
#include "support/source_dir.h"

namespace mtir {
namespace {

using namespace testing_corpus;  // read, scalar_args, packed_only, make_inputs, corpus

class CodegenC : public ::testing::TestWithParam<fs::path> {};

TEST_P(CodegenC, HostPackedAndUnpackedMatchTheInterpreter) {
  const fs::path path = GetParam();
  std::string text = read(path);
  IRModule m = parse_module_or_throw(text, path.string());
  auto scalars = scalar_args(text);
  for (bool unpacked : {false, true}) {
    if (unpacked && packed_only(text)) {
      // Refused with the reason, not miscompiled.
      try {
        build_c(m, parse_target("c -unpacked-api=1"));
        ADD_FAILURE() << "a packed-only program built with the unpacked API";
      } catch (const DiagnosticError& e) {
        EXPECT_NE(e.diagnostics().at(0).message.find("needs -unpacked-api=0"), std::string::npos)
            << e.diagnostics().at(0).message;
      }
      continue;
    }
    BuildResult built = build_c(m, parse_target(unpacked ? "c -unpacked-api=1" : "c -unpacked-api=0"));
    for (const auto& [name, f] : m.functions) {
      SCOPED_TRACE(path.filename().string() + ": " + name + (unpacked ? " (unpacked)" : " (packed)"));
      Inputs reference = make_inputs(f, scalars, 1234);
      interpret(m, name, reference.args);
      Inputs host = run_built_on_host(built, name, f, scalars, "codegen-" + path.stem().string() + (unpacked ? "-u" : "-p"));
      for (size_t i = 0; i < f->params.size(); ++i) {
        if (!f->param_buffers[i]) continue;
        Difference d = compare_arrays(host.arrays[i], reference.arrays[i]);
        EXPECT_TRUE(d.ok) << "buffer " << f->param_buffers[i]->name << ": max abs diff " << d.max_abs
                          << ", max rel diff " << d.max_rel;
      }
    }
  }
}

TEST_P(CodegenC, SourcesCompileUnderClangWithWerror) {
  const fs::path path = GetParam();
  IRModule m = parse_module_or_throw(read(path), path.string());
  fs::path dir = fs::temp_directory_path() / ("microtir-clang-" + path.stem().string() + "-" + std::to_string(getpid()));
  for (bool unpacked : {false, true}) {
    if (unpacked && packed_only(read(path))) continue;  // refused: checked above
    BuildResult built = build_c(m, parse_target(unpacked ? "c -unpacked-api=1" : "c -unpacked-api=0"));
    for (const auto& src : built.sources) {
      fs::path file = dir / src.path;
      fs::create_directories(file.parent_path());
      std::ofstream(file) << src.text;
      int rc = sim::run_process({"clang", "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-O2",
                                 "-I" + sim::default_crt_dir() + "/include", "-c", file.string(), "-o",
                                 (dir / "out.o").string()},
                                dir / "clang.log");
      EXPECT_EQ(rc, 0) << src.path << ":\n" << sim::read_text(dir / "clang.log");
    }
  }
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Programs, CodegenC, ::testing::ValuesIn(corpus()),
                         [](const ::testing::TestParamInfo<fs::path>& info) { return info.param.stem().string(); });

// The line map (the playground's source <-> output): the same C text, and each line of a
// statement's C points at that statement's source line.
// unique_name with a per-hint search start (the wasm and LLVM emitters' temporaries) gives
// the names of the plain search, in order, also when another hint took a suffixed name.
TEST(CodegenC, UniqueNameSearchStartGivesThePlainSearchsNames) {
  std::set<std::string> plain_used, fast_used;
  std::map<std::string, int> next;
  const std::vector<std::string> hints = {"t", "t", "t.2", "t", "t", "x", "t.4", "t", "x", "t"};
  std::vector<std::string> names;
  for (const auto& h : hints) {
    const std::string plain = unique_name(h, '.', &plain_used);
    EXPECT_EQ(unique_name(h, '.', &fast_used, &next), plain) << h;
    names.push_back(plain);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"t", "t.1", "t.2", "t.3", "t.4", "x", "t.4.1", "t.5", "x.1", "t.6"}));
}

TEST(CodegenC, LineMapPointsEachLineAtItsSourceStatement) {
  const fs::path path = fs::path(mtir::source_dir()) / "examples" / "matmul.tir";
  std::string text = read(path);
  IRModule m = parse_module_or_throw(text, path.string());
  BuildResult built = build_c(m, parse_target("c -unpacked-api=0"));
  std::vector<int> map;
  CCodegenOptions options;
  options.description = "target \"" + built.target.str() + "\"";
  options.line_map = &map;
  const std::string mapped = codegen_c(built.lowered.module, options);
  options.line_map = nullptr;
  EXPECT_EQ(mapped, codegen_c(built.lowered.module, options));
  EXPECT_EQ(mapped, built.sources[0].text);
  EXPECT_EQ(built.line_maps.at("codegen/host/src/lib0.c"), map);
  auto split = [](const std::string& t) {
    std::vector<std::string> lines;
    std::istringstream in(t);
    for (std::string l; std::getline(in, l);) lines.push_back(l);
    return lines;
  };
  const std::vector<std::string> c_lines = split(mapped), src_lines = split(text);
  ASSERT_EQ(map.size(), c_lines.size());
  EXPECT_EQ(map[0], 0);
  int mapped_lines = 0;
  for (size_t i = 0; i < c_lines.size(); ++i) {
    if (c_lines[i].find("C[k_inv0] = (C[k_inv0] +") == std::string::npos) continue;
    ASSERT_GT(map[i], 0);
    EXPECT_NE(src_lines.at(map[i] - 1).find("C[i, j] = C[i, j] + A[i, k] * B[k, j]"), std::string::npos);
    ++mapped_lines;
  }
  EXPECT_EQ(mapped_lines, 1);
}

TEST(CodegenC, MetadataModuleLaysOutTheRegistryAtCompileTime) {
  IRModule m = parse_module_or_throw(read(fs::path(mtir::source_dir()) / "examples" / "matmul.tir"), "matmul.tir");
  BuildResult built = build_c(m, parse_target("c -unpacked-api=0"));
  ASSERT_EQ(built.sources.size(), 2u);
  const std::string& registry = built.sources[1].text;
  // A names blob with the count in front, a function table, and the entry point; no
  // code that builds or parses anything at start-up.
  EXPECT_NE(registry.find("static const char kFuncNames[] =\n    \"\\001\\000\"\n    \"matmul\\0\";"), std::string::npos)
      << registry;
  EXPECT_NE(registry.find("static const TVMBackendPackedCFunc kFuncs[] = {matmul};"), std::string::npos);
  EXPECT_NE(registry.find("const TVMFuncRegistry* TVMSystemLibEntryPoint(void) { return &kSystemLibRegistry; }"),
            std::string::npos);
}

// Every argument check of MakePackedAPI, exercised from C (packed_checks_main.c) with
// gcc and clang: wrong count, type codes, NULL tensor, ndim, dtype, shape, strides,
// device, byte offset, NULL data, misalignment; plus registry lookups.
TEST(CodegenC, PackedArgumentChecksFailWithNamedErrors) {
  const fs::path src = fs::path(mtir::source_dir()) / "tests" / "codegen";
  IRModule m = parse_module_or_throw(read(src / "packed_checks.tir"), "packed_checks.tir");
  BuildResult built = build_c(m, parse_target("c -unpacked-api=0"));
  fs::path dir = fs::temp_directory_path() / ("microtir-packed-checks-" + std::to_string(getpid()));
  fs::create_directories(dir);
  const std::string crt = sim::default_crt_dir();
  for (const char* cc : {"cc", "clang"}) {
    SCOPED_TRACE(cc);
    std::vector<std::string> cmd = {cc, "-std=c99", "-O2", "-Wall", "-Wextra", "-Werror", "-pedantic", "-I" + crt + "/include"};
    for (const auto& s : built.sources) {
      fs::path file = dir / fs::path(s.path).filename();
      std::ofstream(file) << s.text;
      cmd.push_back(file.string());
    }
    for (const auto& c : sim::crt_host_sources(crt)) cmd.push_back(c);
    cmd.insert(cmd.end(), {(src / "packed_checks_main.c").string(), "-o", (dir / "checks").string()});
    ASSERT_EQ(sim::run_process(cmd, dir / "build.log"), 0) << sim::read_text(dir / "build.log");
    int rc = sim::run_process({(dir / "checks").string()}, dir / "run.log");
    std::string log = sim::read_text(dir / "run.log");
    EXPECT_EQ(rc, 0) << log;
    EXPECT_NE(log.find("packed_checks: 27 checks, 0 failures"), std::string::npos) << log;
  }
  fs::remove_all(dir);
}

TEST(CodegenC, UnpackedApiRefusesRuntimeShapes) {
  IRModule m = parse_module_or_throw(
      "@T.prim_func\n"
      "def f(a: T.handle, b: T.handle):\n"
      "    m = T.int32()\n"
      "    A = T.match_buffer(a, (m,), \"float32\")\n"
      "    B = T.match_buffer(b, (m,), \"float32\")\n"
      "    for i in range(m):\n"
      "        B[i] = A[i]\n",
      "runtime_shape.tir");
  try {
    build_c(m, parse_target("c -unpacked-api=1"));
    FAIL() << "the unpacked API accepted a runtime shape";
  } catch (const DiagnosticError& e) {
    const Diagnostic& d = e.diagnostics().at(0);
    EXPECT_EQ(d.message,
              "make_unpacked_api: function 'f' reads 'm' from the shape of buffer 'A' at run time, which a plain "
              "pointer argument cannot carry");
    EXPECT_EQ(d.span.str(), "runtime_shape.tir:4:5");
  }
  // The packed API binds m from the tensor instead.
  EXPECT_NO_THROW(build_c(m, parse_target("c -unpacked-api=0")));
}

TEST(CodegenC, RejectsWhatCHasNoTypeFor) {
  IRModule m = parse_module_or_throw(
      "@T.prim_func\ndef h(A: T.Buffer((4,), \"float16\")):\n    A[0] = T.float16(1)\n", "half.tir");
  try {
    build_c(m, parse_target("c -unpacked-api=0"));
    FAIL() << "float16 was accepted";
  } catch (const DiagnosticError& e) {
    EXPECT_NE(e.diagnostics().at(0).message.find("does not support float16"), std::string::npos);
  }
}

// A let expression left in a module (no scalarize_vectors) is refused by the two
// backends that emit scalar code, at the expression, naming the pass.
TEST(CodegenC, ScalarBackendsRefuseLetExpressions) {
  IRModule m = parse_module_or_throw(
      "@T.prim_func\ndef v(A: T.Buffer((8,), \"int8\"), B: T.Buffer((4,), \"int8\")):\n"
      "    B[2] = T.Let(y * y, where={y: A[3] + T.int8(1)})\n",
      "vector.tir");
  const std::pair<const char*, std::function<void()>> backends[] = {
      {"the C backend emits scalar C99: a Let must be scalarized first", [&] { codegen_c(m); }},
      {"the wasm backend emits scalar code: a Let must be scalarized first", [&] { codegen_wat(m, WatOptions{}); }}};
  for (const auto& [message, emit] : backends) {
    try {
      emit();
      ADD_FAILURE() << "accepted: " << message;
    } catch (const DiagnosticError& e) {
      EXPECT_FALSE(e.internal());
      EXPECT_NE(e.diagnostics().at(0).message.find(message), std::string::npos) << render_all(e.diagnostics());
      EXPECT_NE(e.diagnostics().at(0).message.find("(run the scalarize_vectors pass)"), std::string::npos);
      EXPECT_EQ(e.diagnostics().at(0).span.line, 3);
    }
  }
}

// A file with Helium kernels switches off GCC's scheduling before register allocation
// (it spills the MVE kernels' Q registers), for GCC compiling for MVE only; a file without
// them is as before, so no other CPU's artifact changes.
TEST(CodegenC, HeliumKernelsTurnOffGccsEarlyScheduling) {
  const std::string pragma = "#pragma GCC optimize(\"no-schedule-insns\", \"no-tree-ter\")";
  IRModule helium = parse_module_or_throw(
      "@T.prim_func\ndef dot(A: T.Buffer((16,), \"int8\"), B: T.Buffer((16,), \"int8\"), C: T.Buffer((1,), \"int32\")):\n"
      "    C[0] = T.vmladava(C[0], A[T.Ramp(0, 1, 16)], B[T.Ramp(0, 1, 16)])\n",
      "dot.tir");
  const std::string c = codegen_c(helium);
  const size_t at = c.find(pragma), guard = c.rfind("#if", at);
  ASSERT_NE(at, std::string::npos) << c;
  EXPECT_EQ(c.substr(guard, c.find('\n', guard) - guard),
            "#if defined(__ARM_FEATURE_MVE) && defined(__GNUC__) && !defined(__clang__)");
  EXPECT_LT(at, c.find("mtir_vmladava_s8(")) << "the helpers and kernels after it take it";
  IRModule scalar = parse_module_or_throw(
      "@T.prim_func\ndef add(A: T.Buffer((4,), \"int32\")):\n    A[0] = A[1] + A[2]\n", "add.tir");
  EXPECT_EQ(codegen_c(scalar).find("schedule-insns"), std::string::npos);
}

// pack_bytes of four consecutive int8 elements of one buffer is one word read (memcpy:
// one LDR on Cortex-M, any alignment); any other four arguments are or-ed into place.
TEST(CodegenC, PackBytesOfConsecutiveElementsReadsOneWord) {
  IRModule m = parse_module_or_throw(
      "@T.prim_func\ndef f(A: T.Buffer((8,), \"int8\"), C: T.Buffer((3,), \"int32\")):\n"
      "    for i in range(2):\n"
      "        C[i] = T.pack_bytes(A[i * 4], A[i * 4 + 1], A[i * 4 + 2], A[i * 4 + 3])\n"
      "    C[2] = T.pack_bytes(A[0], A[2], A[1], A[3])\n",
      "pack.tir");
  const std::string c = codegen_c(m);
  EXPECT_NE(c.find("mtir_read_word(&"), std::string::npos) << c;
  EXPECT_NE(c.find("memcpy(&w, p, 4)"), std::string::npos) << c;
  EXPECT_NE(c.find("C[i] = mtir_read_word(&A[i * 4]);"), std::string::npos) << c;
  EXPECT_NE(c.find("C[2] = mtir_pack_bytes(A[0], A[2], A[1], A[3]);"), std::string::npos) << c;
}

// A shift by T.known_range with bounds inside [0, bits) (a requantization table's shift)
// is emitted without the mask a run-time amount gets, also through a conversion; bounds
// that reach past the type's bits keep it. wasm masks only narrow types' amounts.
TEST(CodegenC, ShiftByAKnownRangeHasNoMask) {
  auto kernel = [](const std::string& amount, const char* type) {
    return parse_module_or_throw(std::string("@T.prim_func\ndef f(A: T.Buffer((4,), \"") + type +
                                     "\"), S: T.Buffer((4,), \"int32\"), B: T.Buffer((4,), \"" + type +
                                     "\")):\n    for i in range(4):\n        B[i] = T.shift_right(A[i], " + amount + ")\n",
                                 "shift.tir");
  };
  EXPECT_NE(codegen_c(kernel("S[i]", "int32")).find("(A[i] >> (S[i] & 31))"), std::string::npos);
  EXPECT_NE(codegen_c(kernel("T.known_range(S[i], 0, 31)", "int32")).find("(A[i] >> S[i])"), std::string::npos)
      << codegen_c(kernel("T.known_range(S[i], 0, 31)", "int32"));
  EXPECT_NE(codegen_c(kernel("T.known_range(S[i], 0, 32)", "int32")).find("(A[i] >> (S[i] & 31))"), std::string::npos);
  EXPECT_NE(codegen_c(kernel("T.known_range(S[i], -1, 31)", "int32")).find("& 31"), std::string::npos);
  EXPECT_EQ(codegen_c(kernel("T.Cast(\"int8\", T.known_range(S[i], 0, 7))", "int8")).find("& 7"), std::string::npos);
  const std::string wat_masked = codegen_wat(kernel("T.Cast(\"int8\", S[i])", "int8"), WatOptions{});
  const std::string wat_known = codegen_wat(kernel("T.Cast(\"int8\", T.known_range(S[i], 0, 7))", "int8"), WatOptions{});
  EXPECT_NE(wat_masked.find("(i32.const 7))"), std::string::npos) << wat_masked;
  EXPECT_EQ(wat_known.find("(i32.const 7))"), std::string::npos) << wat_known;
}

// A file with SMLAD kernels switches off GCC's scheduling before register allocation for
// GCC on a DSP core without MVE (it spills the 3x2 tile's accumulators), unless the
// schedule dsp_no_early_scheduling is off; a file without SMLAD is as before.
TEST(CodegenC, SmladKernelsTurnOffGccsEarlySchedulingOnDspCores) {
  IRModule dsp = parse_module_or_throw(
      "@T.prim_func\ndef dot(A: T.Buffer((2,), \"int32\"), C: T.Buffer((1,), \"int32\")):\n"
      "    C[0] = T.smlad(A[0], A[1], C[0])\n",
      "dot.tir");
  CCodegenOptions on;
  on.dsp_no_early_scheduling = true;
  const std::string c = codegen_c(dsp, on);
  const size_t at = c.find("#pragma GCC optimize(\"no-schedule-insns\")\n"), guard = c.rfind("#if", at);
  ASSERT_NE(at, std::string::npos) << c;
  EXPECT_EQ(c.substr(guard, c.find('\n', guard) - guard),
            "#if defined(__ARM_FEATURE_DSP) && !defined(__ARM_FEATURE_MVE) && defined(__GNUC__) && !defined(__clang__)");
  EXPECT_LT(at, c.find("mtir_smlad(int32_t")) << "the helpers and kernels after it take it";
  EXPECT_EQ(codegen_c(dsp).find("schedule-insns"), std::string::npos) << "off unless asked for";
  IRModule scalar = parse_module_or_throw(
      "@T.prim_func\ndef add(A: T.Buffer((4,), \"int32\")):\n    A[0] = A[1] + A[2]\n", "add.tir");
  EXPECT_EQ(codegen_c(scalar, on).find("schedule-insns"), std::string::npos);
  // The driver sets it from the target's schedules.
  EXPECT_TRUE(parse_target("c -mcpu=cortex-m4").schedules.dsp_no_early_scheduling);
  EXPECT_FALSE(parse_target("c -mcpu=cortex-m4 -disabled-schedules=dsp_no_early_scheduling")
                   .schedules.dsp_no_early_scheduling);
}

// A kernel in schedule smmlar_add's form (marked "mtir.smmlar_add" by the op library, the
// mark kept by fusion) in a file with SMLAD kernels adds GCC's one-region register
// allocation after the scheduling pragma; an unmarked file does not, nor one without the
// scheduling pragma.
TEST(CodegenC, SmmlarAddKernelsAskGccForOneAllocationRegion) {
  const std::string text =
      "@T.prim_func\ndef dot(A: T.Buffer((2,), \"int32\"), C: T.Buffer((1,), \"int32\")):\n"
      "    C[0] = T.smlad(A[0], A[1], C[0])\n";
  IRModule dsp = parse_module_or_throw(text, "dot.tir");
  IRModule marked = dsp;
  auto f = std::make_shared<PrimFuncNode>(*marked.functions[0].second);
  f->attrs["mtir.smmlar_add"] = true;
  marked.functions[0].second = f;
  CCodegenOptions on;
  on.dsp_no_early_scheduling = true;
  const std::string c = codegen_c(marked, on);
  const size_t at = c.find("#pragma GCC optimize(\"ira-region=one\")\n");
  ASSERT_NE(at, std::string::npos) << c;
  EXPECT_LT(c.find("no-schedule-insns"), at);
  EXPECT_LT(at, c.find("mtir_smlad(int32_t")) << "the helpers and kernels after it take it";
  EXPECT_EQ(codegen_c(dsp, on).find("ira-region"), std::string::npos) << "no marked kernel";
  EXPECT_EQ(codegen_c(marked).find("ira-region"), std::string::npos) << "dsp_no_early_scheduling off";
  // The op library marks a qadd built with the schedule, and only then.
  const std::vector<TensorType> t = {{DataType::Int(8), {4}}, {DataType::Int(8), {4}}};
  nlohmann::json attrs = {{"a_scale", 0.1}, {"b_scale", 0.2}, {"output_scale", 0.3}};
  const OpDef* qadd = find_op("qadd");
  EXPECT_EQ(qadd->build("k", t, qadd->infer(t, attrs), attrs)->attrs.count("mtir.smmlar_add"), 0u);
  attrs["schedule"] = {{"smmlar_add", true}};
  EXPECT_EQ(qadd->build("k", t, qadd->infer(t, attrs), attrs)->attrs.count("mtir.smmlar_add"), 1u);
  EXPECT_TRUE(parse_target("c -mcpu=cortex-m4").schedules.smmlar_add);
  EXPECT_FALSE(parse_target("c").schedules.smmlar_add);
  EXPECT_FALSE(parse_target("c -mcpu=cortex-m4 -disabled-schedules=smmlar_add").schedules.smmlar_add);
}

// An int32x4 let that scalarize_vectors kept for Helium is one mtir_v4 variable (a Q
// register under arm_mve.h), read by the vector stores after it.
TEST(CodegenC, HeliumInt32x4LetIsOneVectorVariable) {
  IRModule m = parse_module_or_throw(
      "@T.prim_func\ndef f(A: T.Buffer((4,), \"int8\"), B: T.Buffer((4,), \"int32\")):\n"
      "    x: T.int32x4 = T.Cast(\"int32x4\", A[0:4])\n"
      "    B[0:4] = x + x\n",
      "let.tir");
  const std::string c = codegen_c(m);
  EXPECT_NE(c.find("mtir_v4 x = mtir_v4_load_s8((&A[0]));"), std::string::npos) << c;
  EXPECT_NE(c.find("mtir_v4_store((&B[0]), mtir_v4_add(x, x));"), std::string::npos) << c;
}

// consecutive_elements (emit_common.h), the check behind pack_bytes' word read (C, LLVM)
// and word_pair's paired load (C): the arguments load elements i, i + 1, ... of one
// buffer, in order, for any count of them.
TEST(CodegenC, ConsecutiveElementsAreOneBufferInOrder) {
  IRModule m = parse_module_or_throw(
      "@T.prim_func\ndef f(A: T.Buffer((16,), \"int8\"), B: T.Buffer((16,), \"int8\"), "
      "W: T.Buffer((16,), \"int32\"), n: T.int32, k: T.int32):\n"
      "    T.evaluate(T.pack_bytes(A[n], A[n + 1], A[n + 2], A[n + 3]))\n"
      "    T.evaluate(T.word_pair(W[4], W[5]))\n"
      "    T.evaluate(T.word_pair(W[n + 2], W[n + 3]))\n"
      "    T.evaluate(T.call_extern(\"int32\", \"g\", A[n - 1], A[n], A[n + 1]))\n"
      "    T.evaluate(T.word_pair(W[n + 1], W[n]))\n"
      "    T.evaluate(T.pack_bytes(A[n], B[n + 1], A[n + 2], A[n + 3]))\n"
      "    T.evaluate(T.pack_bytes(A[n], A[n + 1], A[n + 3], A[n + 2]))\n"
      "    T.evaluate(T.word_pair(W[n], W[k + 1]))\n"
      "    T.evaluate(T.word_pair(W[n], n))\n"
      "    T.evaluate(T.call_extern(\"int32\", \"g\", A[n]))\n",
      "consecutive.tir");
  struct Calls : Visitor {
    std::vector<std::vector<Expr>> args;  // each call's arguments, call_extern's without its symbol
    void visit_Evaluate(const EvaluateNode* op) override {
      const auto* call = as<CallNode>(op->value);
      args.emplace_back(call->args.begin() + (call->is(Builtin::CallExtern) ? 1 : 0), call->args.end());
    }
  } calls;
  calls.visit(m.lookup("f")->body);
  ASSERT_EQ(calls.args.size(), 10u);
  for (size_t i = 0; i < 4; ++i) {
    const BufferLoadNode* first = consecutive_elements(calls.args[i]);
    ASSERT_NE(first, nullptr) << "call " << i;
    EXPECT_EQ(first, calls.args[i][0].get()) << "call " << i;
  }
  for (size_t i = 4; i < calls.args.size(); ++i) EXPECT_EQ(consecutive_elements(calls.args[i]), nullptr) << "call " << i;
}

// word_pair of two adjacent int32 elements of one buffer is one paired load (LDRD for GCC
// on a DSP core: GCC itself loads each single-use word with its own LDR); any other pair
// of words is both values combined.
TEST(CodegenC, WordPairOfAdjacentWordsIsOneLoad) {
  IRModule m = parse_module_or_throw(
      "@T.prim_func\ndef pairs(A: T.Buffer((8,), \"int32\"), O: T.Buffer((4,), \"int64\"), n: T.int32):\n"
      "    O[0] = T.word_pair(A[n], A[n + 1])\n"
      "    O[1] = T.word_pair(A[n + 2], A[n + 3])\n"
      "    O[2] = T.word_pair(A[n + 1], A[n])\n"
      "    O[3] = T.word_pair(A[4], A[5])\n",
      "pairs.tir");
  const std::string c = codegen_c(m);
  size_t count = 0;
  for (size_t at = c.find("mtir_word_pair(&"); at != std::string::npos; at = c.find("mtir_word_pair(&", at + 1)) ++count;
  EXPECT_EQ(count, 3u) << c;
  // Two 32-bit outputs: any two registers, not an even/odd pair.
  EXPECT_NE(c.find("__asm__(\"ldrd %0, %1, %2\" : \"=r\"(lo), \"=r\"(hi)"), std::string::npos) << c;
  EXPECT_NE(c.find("<< 32)))"), std::string::npos) << "the reversed pair is two loads\n" << c;
}

// (lo & 0xffff) | (hi << 16) in uint32 (an im2col column's int16 pair) is one PKHBT for GCC
// on a DSP core (GCC itself emits UXTH and ORR); a constant high half, another mask or
// another shift stays the plain operations.
TEST(CodegenC, PackHalvesIsOnePkhbt) {
  IRModule m = parse_module_or_throw(
      "@T.prim_func\ndef halves(A: T.Buffer((8,), \"int32\"), O: T.Buffer((4,), \"uint32\")):\n"
      "    O[0] = T.bitwise_or(T.bitwise_and(T.Cast(\"uint32\", A[0]), T.uint32(65535)), T.shift_left(T.Cast(\"uint32\", A[1]), T.uint32(16)))\n"
      "    O[1] = T.bitwise_or(T.bitwise_and(T.Cast(\"uint32\", A[2]), T.uint32(65535)), T.shift_left(T.Cast(\"uint32\", T.int32(0)), T.uint32(16)))\n"
      "    O[2] = T.bitwise_or(T.bitwise_and(T.Cast(\"uint32\", A[3]), T.uint32(255)), T.shift_left(T.Cast(\"uint32\", A[4]), T.uint32(16)))\n"
      "    O[3] = T.bitwise_or(T.bitwise_and(T.Cast(\"uint32\", A[5]), T.uint32(65535)), T.shift_left(T.Cast(\"uint32\", A[6]), T.uint32(8)))\n",
      "halves.tir");
  const std::string c = codegen_c(m);
  size_t count = 0;
  for (size_t at = c.find("= mtir_pack_halves("); at != std::string::npos; at = c.find("= mtir_pack_halves(", at + 1)) ++count;
  EXPECT_EQ(count, 1u) << c;
  EXPECT_NE(c.find("O[0] = mtir_pack_halves(((uint32_t)A[0]), ((uint32_t)A[1]));"), std::string::npos) << c;
  EXPECT_NE(c.find("__asm__(\"pkhbt %0, %1, %2, lsl #16\""), std::string::npos) << c;
}

}  // namespace
}  // namespace mtir
