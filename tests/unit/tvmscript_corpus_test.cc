// TVMScript as TVM v0.23 prints and TVM's tests write it (tests/script/tvm/*.tir): every
// file parses, prints and re-parses to an equal module whose printing is a fixed point;
// files marked "# run" also run through the interpreter and host C (packed API, built
// with -Werror), and the two must agree on every buffer.
#include <gtest/gtest.h>

#include "analysis/callees.h"
#include "analysis/well_formed.h"
#include "driver/build.h"
#include "interp/interpreter.h"
#include "ir/carried_types.h"
#include "ir/structural_equal.h"
#include "script/parser.h"
#include "script/printer.h"
#include "support/compare.h"
#include "sim/wasm_module_runner.h"
#include "program_corpus.h"
#include "carried_refusal.h"
#ifdef MICROTIR_HAVE_BINARYEN
#include "codegen/wasm/native/binaryen_native.h"
#include "support/source_dir.h"
#endif

namespace mtir {
namespace {

using namespace testing_corpus;  // read, scalar_args, make_inputs, run_built_on_host

std::vector<fs::path> tvm_corpus() {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(fs::path(mtir::source_dir()) / "tests" / "script" / "tvm"))
    if (e.path().extension() == ".tir") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

bool runnable(const std::string& text) { return text.rfind("# run\n", 0) == 0; }

// The files marked "# run": their signatures have tensors to compare.
std::vector<fs::path> runnable_corpus() {
  std::vector<fs::path> files;
  for (const auto& p : tvm_corpus())
    if (runnable(read(p))) files.push_back(p);
  return files;
}

class TvmScript : public ::testing::TestWithParam<fs::path> {};
class TvmScriptRun : public ::testing::TestWithParam<fs::path> {};

TEST_P(TvmScript, ParsesPrintsAndReparsesIdentically) {
  const std::string text = read(GetParam());
  ParseResult r1 = parse_module(text, GetParam().string());
  ASSERT_TRUE(r1.ok()) << render_all(r1.diagnostics);
  EXPECT_TRUE(check_well_formed(*r1.module).empty()) << render_all(check_well_formed(*r1.module));
  const std::string printed = print_module(*r1.module);
  ParseResult r2 = parse_module(printed, "printed.tir");
  ASSERT_TRUE(r2.ok()) << render_all(r2.diagnostics) << "\n--- printed ---\n" << printed;
  EXPECT_TRUE(structural_equal(*r1.module, *r2.module)) << structural_diff(*r1.module, *r2.module) << "\n"
                                                       << printed;
  EXPECT_EQ(print_module(*r2.module), printed);
}

// The functions another function of the module calls (Module.sub(...)) are not entry
// points: they take pointers and run through their callers.
bool called_by_name(const IRModule& m, const std::string& name) {
  for (const auto& [caller, f] : m.functions)
    if (callees(f->body, Builtin::CallGlobal).count(name)) return true;
  return false;
}

TEST_P(TvmScriptRun, InterpreterAndHostCAgree) {
  const std::string text = read(GetParam());
  IRModule m = parse_module_or_throw(text, GetParam().string());
  auto scalars = scalar_args(text);
  BuildResult built = build_c(m, parse_target("c -unpacked-api=0"));
  for (const auto& [name, f] : m.functions) {
    if (called_by_name(m, name)) continue;
    SCOPED_TRACE(name);
    Inputs reference = make_inputs(f, scalars, 1234);
    interpret(m, name, reference.args);
    Inputs host = run_built_on_host(built, name, f, scalars, "tvmscript-" + GetParam().stem().string());
    for (size_t i = 0; i < f->params.size(); ++i) {
      if (!f->param_buffers[i]) continue;
      Difference d = compare_arrays(host.arrays[i], reference.arrays[i]);
      EXPECT_TRUE(d.ok) << "buffer " << f->param_buffers[i]->name << ": max abs diff " << d.max_abs;
    }
  }
}

// The intrinsics TVM's TIR brought (clz, reinterpret, log2) and the vector programs
// through the LLVM backend on the host and the wasm backend under node, against the
// interpreter.
class TvmIntrinsics : public ::testing::TestWithParam<std::string> {};

TEST_P(TvmIntrinsics, LlvmAndWasmMatchTheInterpreter) {
  const fs::path path = fs::path(mtir::source_dir()) / "tests" / "script" / "tvm" / (GetParam() + ".tir");
  IRModule m = parse_module_or_throw(read(path), path.string());
  const auto& [name, f] = m.functions.at(0);
  Inputs reference = make_inputs(f, {}, 1234);
  interpret(m, name, reference.args);
  auto expect_same = [&](const Inputs& got, const char* backend) {
    for (size_t i = 0; i < f->params.size(); ++i) {
      Difference d = compare_arrays(got.arrays[i], reference.arrays[i]);
      EXPECT_TRUE(d.ok) << backend << ": buffer " << f->param_buffers[i]->name << ": max abs diff " << d.max_abs;
    }
  };
  BuildResult llvm = build_llvm(m, parse_target("llvm -unpacked-api=0"));
  expect_same(run_built_on_host(llvm, name, f, {}, "tvmscript-llvm-" + GetParam()), "LLVM");
  BuildResult wasm = build_wasm(m, parse_target("wasm"));
#ifdef MICROTIR_HAVE_BINARYEN
  Inputs got = make_inputs(f, {}, 1234);
  const fs::path work = fs::temp_directory_path() / ("microtir-tvmscript-wasm-" + std::to_string(::getpid()));
  fs::create_directories(work);
  const std::string module = (work / "m.wasm").string();
  const std::string symbol = symbol_of(name, f);
  std::ofstream(module, std::ios::binary) << binaryen_native::assemble(wasm.sources.at(0).text, "O2", symbol).binary;
  sim::WasmCall call{symbol, {}};
  for (auto& a : got.arrays) call.buffers.push_back(&a);
  sim::run_wasm_calls(module, {call}, (work / "run").string());
  expect_same(got, "wasm");
  fs::remove_all(work);
#endif
}

INSTANTIATE_TEST_SUITE_P(Intrinsics, TvmIntrinsics,
                         ::testing::Values("clz", "reinterpret", "log2", "bitwise_xor", "while_loop",
                                           "tvm_intrinsics_run", "loop_exits", "module_calls", "null_handle",
                                           "allocate_const", "return_void", "return_bool"));

// The vector programs (vector_*.tir) and T.Let: LLVM emits IR vectors, C and wasm
// scalarize them; all three must agree with the interpreter.
std::vector<std::string> vector_corpus() {
  std::vector<std::string> names;
  for (const auto& p : tvm_corpus()) {
    const std::string stem = p.stem().string();
    if (stem.rfind("vector_", 0) == 0 || stem == "let_expr") names.push_back(stem);
  }
  return names;
}
INSTANTIATE_TEST_SUITE_P(Vectors, TvmIntrinsics, ::testing::ValuesIn(vector_corpus()));

INSTANTIATE_TEST_SUITE_P(Corpus, TvmScript, ::testing::ValuesIn(tvm_corpus()),
                         [](const ::testing::TestParamInfo<fs::path>& info) { return info.param.stem().string(); });
INSTANTIATE_TEST_SUITE_P(Corpus, TvmScriptRun, ::testing::ValuesIn(runnable_corpus()),
                         [](const ::testing::TestParamInfo<fs::path>& info) { return info.param.stem().string(); });

// Functions that return a value (-> T.int32 with `return x` or T.ret(x)): the
// interpreter gives it back, and the host C (packed and unpacked) and LLVM builds agree.
TEST(TvmScriptReturn, InterpreterAndHostAgreeOnTheReturnedValue) {
  IRModule m = parse_module_or_throw(read(fs::path(mtir::source_dir()) / "tests/script/tvm/return_ret.tir"),
                                     "return_ret.tir");
  const PrimFunc f = m.functions.at(0).second;
  const std::pair<int64_t, int64_t> cases[] = {{4, 7}, {9, 7}};
  for (const char* target : {"c -unpacked-api=0", "c -unpacked-api=1", "llvm -unpacked-api=0"}) {
    SCOPED_TRACE(target);
    BuildResult built = target[0] == 'l' ? build_llvm(m, parse_target(target)) : build_c(m, parse_target(target));
    for (const auto& [x, lo] : cases) {
      std::vector<InterpArg> args = {x, lo};
      std::optional<int64_t> expected = interpret(m, "clamp", args);
      ASSERT_TRUE(expected.has_value());
      EXPECT_EQ(*expected, std::max(x, lo));
      sim::HostSimOptions options;
      options.work_dir = (fs::temp_directory_path() / ("microtir-return-" + std::to_string(getpid()))).string();
      EXPECT_EQ(sim::run_on_host({&built, "clamp", f}, args, options), expected);
      fs::remove_all(options.work_dir);
    }
  }
  // A function without a return type gives nothing back.
  IRModule plain = parse_module_or_throw("@T.prim_func\ndef f(A: T.Buffer((1,), \"int32\")):\n    A[0] = 1\n", "f.tir");
  NDArray a = NDArray::zeros(DataType::Int(32), {1});
  EXPECT_FALSE(interpret(plain, "f", {&a}).has_value());
}

// ---- the bugs of issue 25 ------------------------------------------------------------------

TEST(TvmScriptBugs, DuplicateGlobalSymbolIsALocatedError) {
  const char* src = R"(@I.ir_module
class Module:
    @T.prim_func
    def f(A: T.Buffer((4,), "int32")):
        T.func_attr({"global_symbol": "kernel"})
        A[0] = 1

    @T.prim_func
    def g(A: T.Buffer((4,), "int32")):
        T.func_attr({"global_symbol": "kernel"})
        A[0] = 2
)";
  ParseResult r = parse_module(src, "dup.tir");
  ASSERT_TRUE(r.ok());
  std::vector<Diagnostic> diags = check_well_formed(*r.module);
  ASSERT_EQ(diags.size(), 1u);
  EXPECT_EQ(diags[0].span.line, 9);
  EXPECT_NE(diags[0].message.find("function 'g' has the symbol 'kernel', which function 'f' already has"),
            std::string::npos)
      << diags[0].message;
  EXPECT_THROW(build_c(*r.module, parse_target("c -unpacked-api=0")), DiagnosticError);
}

TEST(TvmScriptBugs, SymbolEqualToAnotherFunctionsNameIsRefused) {
  const char* src = R"(@I.ir_module
class Module:
    @T.prim_func
    def g(A: T.Buffer((4,), "int32")):
        A[0] = 1

    @T.prim_func
    def f(A: T.Buffer((4,), "int32")):
        T.func_attr({"global_symbol": "g"})
        A[0] = 2
)";
  ParseResult r = parse_module(src, "dup.tir");
  ASSERT_TRUE(r.ok());
  std::vector<Diagnostic> diags = check_well_formed(*r.module);
  ASSERT_EQ(diags.size(), 1u);
  EXPECT_EQ(diags[0].span.line, 8);
}

TEST(TvmScriptBugs, GpuThreadsAreRefusedByCodegenAndInterpreter) {
  IRModule m = parse_module_or_throw(read(fs::path(mtir::source_dir()) / "tests/script/tvm/thread_binding.tir"),
                                     "thread_binding.tir");
  try {
    build_c(m, parse_target("c -unpacked-api=0"));
    ADD_FAILURE() << "a GPU thread loop was compiled";
  } catch (const DiagnosticError& e) {
    EXPECT_NE(e.diagnostics().at(0).message.find("binds loop 'bx' to the GPU thread 'blockIdx.x'"), std::string::npos)
        << e.diagnostics().at(0).message;
    EXPECT_EQ(e.diagnostics().at(0).span.line, 5);
  }
  Inputs in = make_inputs(m.functions[0].second, {}, 1);
  EXPECT_THROW(interpret(m, "gpu_add", in.args), DiagnosticError);

  IRModule launched = parse_module_or_throw(
      read(fs::path(mtir::source_dir()) / "tests/script/tvm/launch_thread.tir"), "launch_thread.tir");
  for (const char* target : {"c -unpacked-api=0", "llvm -unpacked-api=0", "wasm"}) {
    SCOPED_TRACE(target);
    try {
      build_for_target(launched, parse_target(target));
      ADD_FAILURE() << "a launched GPU thread was compiled";
    } catch (const DiagnosticError& e) {
      EXPECT_NE(e.diagnostics().at(0).message.find("launches the GPU thread 'blockIdx.x' (T.launch_thread)"),
                std::string::npos)
          << e.diagnostics().at(0).message;
      EXPECT_EQ(e.diagnostics().at(0).span.line, 9);
    }
  }
  Inputs in2 = make_inputs(launched.functions[0].second, {}, 1);
  EXPECT_THROW(interpret(launched, "gpu_scale", in2.args), DiagnosticError);
}

// TVM's fixed-point multiply as TVM legalizes it (src/target/intrin_rule.cc), written
// out here independently: the interpreter's values of T.q_multiply_shift must match.
int32_t tvm_q_multiply_shift(int32_t x, int32_t y, int32_t q, int32_t s) {
  if (y == (1 << 30) && q == 31) {
    if (s - 1 > 0) return static_cast<int32_t>(static_cast<uint32_t>(x) << (s - 1));
    if (s == 1) return x;  // x * 0.5 * 2
    const int32_t right = 1 - s;
    // In int32, as TVM writes it: the rounding add wraps.
    return static_cast<int32_t>(static_cast<uint32_t>(x) + (uint32_t{1} << (right - 1))) >> right;
  }
  const int64_t left = s > 0 ? s : 0, total = (s > 0 ? 0 : -s) + q;
  const int64_t wide = static_cast<int64_t>(static_cast<uint64_t>(x) << left) * y + (int64_t{1} << (total - 1));
  return static_cast<int32_t>(wide >> total);
}

TEST(TvmIntrinsicTable, QMultiplyShiftHasTvmsRounding) {
  IRModule m = parse_module_or_throw(R"(@T.prim_func
def qms(X: T.Buffer((6,), "int32"), Y: T.Buffer((6, 6), "int32")):
    for i in range(6):
        Y[i, 0] = T.q_multiply_shift(X[i], 1395864371, 31, -3)
        Y[i, 1] = T.q_multiply_shift(X[i] // 16, 1518500250, 31, 3)
        Y[i, 2] = T.q_multiply_shift(X[i], 1073741824, 31, -2)
        Y[i, 3] = T.q_multiply_shift(X[i] // 1024, 1073741824, 31, 4)
        Y[i, 4] = T.q_multiply_shift(X[i], 1073741824, 31, 1)
        Y[i, 5] = T.q_multiply_shift(X[i] // 4, 1073741824, 30, 1)
)", "qms.tir");
  const int32_t xs[] = {100, -100, 2147483647, -2147483647, 12345, -7};
  NDArray x = NDArray::zeros(DataType::Int(32), {6}), y = NDArray::zeros(DataType::Int(32), {6, 6});
  for (int i = 0; i < 6; ++i) x.set_int(i, xs[i]);
  interpret(m, "qms", {&x, &y});
  for (int i = 0; i < 6; ++i) {
    SCOPED_TRACE(xs[i]);
    EXPECT_EQ(y.get_int(i * 6 + 0), tvm_q_multiply_shift(xs[i], 1395864371, 31, -3));
    auto floordiv = [](int32_t a, int32_t b) { return a / b - (a % b < 0); };
    EXPECT_EQ(y.get_int(i * 6 + 1), tvm_q_multiply_shift(floordiv(xs[i], 16), 1518500250, 31, 3));
    EXPECT_EQ(y.get_int(i * 6 + 2), tvm_q_multiply_shift(xs[i], 1 << 30, 31, -2));
    EXPECT_EQ(y.get_int(i * 6 + 3), tvm_q_multiply_shift(floordiv(xs[i], 1024), 1 << 30, 31, 4));
    EXPECT_EQ(y.get_int(i * 6 + 4), xs[i]);  // 0.5 * 2^1: x itself, no rounding shift by -1
    EXPECT_EQ(y.get_int(i * 6 + 5), tvm_q_multiply_shift(floordiv(xs[i], 4), 1 << 30, 30, 1));
  }
  EXPECT_EQ(y.get_int(0), 8);  // 100 * 0.65 / 8, rounded
  EXPECT_EQ(y.get_int(4 * 6 + 2), 1543);  // 12345 / 8, rounded half up
  EXPECT_EQ(y.get_int(4 * 6 + 5), 6172);  // (12345 // 4) * 2^30 * 2 / 2^30: q = 30 takes the general path
}

// The carried intrinsics parse and print; every backend and the interpreter refuse the
// first one they meet, at its line, saying what it is.
TEST(TvmIntrinsicTable, CarriedIntrinsicsAreRefusedWhereTheyStand) {
  IRModule m = parse_module_or_throw(
      read(fs::path(mtir::source_dir()) / "tests/script/tvm/tvm_intrinsics_carried.tir"), "carried.tir");
  for (const char* target : {"c -unpacked-api=0", "llvm -unpacked-api=0", "wasm"}) {
    SCOPED_TRACE(target);
    try {
      build_for_target(m, parse_target(target));
      ADD_FAILURE() << "a carried intrinsic was compiled";
    } catch (const DiagnosticError& e) {
      EXPECT_NE(e.diagnostics().at(0).message.find("T.call_llvm_pure_intrin is an LLVM intrinsic"), std::string::npos)
          << e.diagnostics().at(0).message;
      EXPECT_EQ(e.diagnostics().at(0).span.line, 8);
    }
  }
  NDArray a = NDArray::zeros(DataType::Int(32), {8}), b = NDArray::zeros(DataType::Float(16), {8});
  try {
    interpret(m, "carried", {&a, &b, &a});
    ADD_FAILURE() << "a carried intrinsic was interpreted";
  } catch (const DiagnosticError& e) {
    EXPECT_NE(e.diagnostics().at(0).message.find("the interpreter cannot run it"), std::string::npos)
        << e.diagnostics().at(0).message;
  }
}

// break and continue compute what Python's loops do (the backends are compared with the
// interpreter above), in the compiled interpreter and the tree walk alike.
TEST(TvmLoopExits, InterpreterComputesPythonsLoops) {
  IRModule m = parse_module_or_throw(read(fs::path(mtir::source_dir()) / "tests/script/tvm/loop_exits.tir"), "e.tir");
  for (bool tree_walk : {false, true}) {
    SCOPED_TRACE(tree_walk ? "tree walk" : "compiled");
    NDArray a = NDArray::zeros(DataType::Int(32), {8}), b = NDArray::zeros(DataType::Int(32), {4}),
            c = NDArray::zeros(DataType::Int(32), {4});
    const int64_t in[8] = {1, 3, 4, 6, 5, 14, 2, 8};  // 3 and 6 continue; 14 breaks
    for (int i = 0; i < 8; ++i) a.set_int(i, in[i]);
    InterpOptions options;
    options.tree_walk = tree_walk;
    interpret(m, "f", {&a, &b, &c}, options);
    const int64_t want_a[8] = {2, 3, 8, 6, 10, 14, 2, 8};
    for (int i = 0; i < 8; ++i) EXPECT_EQ(a.get_int(i), want_a[i]) << "A[" << i << "]";
    const int64_t want_b[4] = {0, 20, 60, 120};  // 10 x the even j up to 2i
    for (int i = 0; i < 4; ++i) EXPECT_EQ(b.get_int(i), want_b[i]) << "B[" << i << "]";
    const int64_t want_c[4] = {11, 2, 5, 3};
    for (int i = 0; i < 4; ++i) EXPECT_EQ(c.get_int(i), want_c[i]) << "C[" << i << "]";
  }
}

// Generated code frees an allocation where its scope ends: an exit out of it is refused.
TEST(TvmLoopExits, AnExitOutOfAnAllocationIsRefused) {
  IRModule m = parse_module_or_throw(
      "@T.prim_func\ndef g(A: T.Buffer((4,), \"int32\")):\n    for i in range(4):\n"
      "        t = T.allocate([4], \"int32\", \"global\")\n        T_1 = T.Buffer((4,), \"int32\", data=t)\n"
      "        T_1[0] = A[i]\n        if T_1[0] > 2:\n            break\n        A[i] = T_1[0] + 1\n",
      "g.tir");
  const auto errors = check_well_formed(m);
  ASSERT_FALSE(errors.empty());
  EXPECT_NE(errors[0].message.find("leaves the allocation of 't'"), std::string::npos) << errors[0].message;
  EXPECT_EQ(errors[0].span.line, 4);
}

// Module.sub(...) calls (module_calls.tir) compute exactly what the program says, in the
// compiled interpreter and the tree walk, and in host C and LLVM.
TEST(TvmModuleCalls, ExactValues) {
  IRModule m = parse_module_or_throw(read(fs::path(mtir::source_dir()) / "tests/script/tvm/module_calls.tir"), "c.tir");
  auto check = [](const NDArray& a, const NDArray& b, const NDArray& c, const char* who) {
    float rows[8];
    for (int i = 0; i < 8; ++i) {
      float sum = 0;
      for (int j = 0; j < 4; ++j) sum += static_cast<float>(a.get_float(i * 4 + j));
      rows[i] = sum;
    }
    rows[0] = rows[0] + (rows[1] * 12.0f + 0.5f);
    for (int i = 0; i < 8; ++i) EXPECT_EQ(static_cast<float>(b.get_float(i)), rows[i]) << who << ": B[" << i << "]";
    const int64_t want_c[8] = {-1, -1, 2, 5, 8, 11, 12, 12};
    for (int i = 0; i < 8; ++i) EXPECT_EQ(c.get_int(i), want_c[i]) << who << ": C[" << i << "]";
  };
  for (bool tree_walk : {false, true}) {
    Inputs in = make_inputs(m.functions[0].second, {}, 7);
    InterpOptions options;
    options.tree_walk = tree_walk;
    interpret(m, "main", in.args, options);
    check(in.arrays[0], in.arrays[1], in.arrays[2], tree_walk ? "tree walk" : "compiled");
  }
  for (const char* target : {"c", "c -unpacked-api=1", "llvm"}) {
    BuildResult built = target[0] == 'l' ? build_llvm(m, parse_target(target)) : build_c(m, parse_target(target));
    Inputs got = run_built_on_host(built, "main", m.functions[0].second, {}, "module-calls");
    Inputs in = make_inputs(m.functions[0].second, {}, 1234);
    EXPECT_EQ(got.arrays[0].data, in.arrays[0].data);
    check(got.arrays[0], got.arrays[1], got.arrays[2], target);
  }
}

// A recursion through Module.sub(...) runs in the interpreter (TVM's own test of it:
// test_tir_transform_inline_private_functions.py); compiling it is refused where it
// recurses. Calls with a wrong arity or argument type are located errors.
TEST(TvmModuleCalls, RecursionAndBadCalls) {
  const std::string recursive = R"(@I.ir_module
class Mod:
    @T.prim_func
    def main(A: T.Buffer(6, "int32")):
        Mod.prefix(T.address_of(A[0]), 6)

    @T.prim_func(private=True)
    def prefix(A_data: T.handle("int32"), n: T.int32):
        A = T.decl_buffer(n, "int32", data=A_data)
        if n > 1:
            A[1] = A[0] + A[1]
            Mod.prefix(T.address_of(A[1]), n - 1)
)";
  IRModule m = parse_module_or_throw(recursive, "r.tir");
  EXPECT_TRUE(check_well_formed(m).empty());
  for (bool tree_walk : {false, true}) {
    NDArray a = NDArray::zeros(DataType::Int(32), {6});
    for (int i = 0; i < 6; ++i) a.set_int(i, i + 1);
    InterpOptions options;
    options.tree_walk = tree_walk;
    interpret(m, "main", {&a}, options);
    const int64_t want[6] = {1, 3, 6, 10, 15, 21};
    for (int i = 0; i < 6; ++i) EXPECT_EQ(a.get_int(i), want[i]) << "A[" << i << "]";
  }
  try {
    build_c(m, parse_target("c"));
    ADD_FAILURE() << "a recursion was compiled";
  } catch (const DiagnosticError& e) {
    EXPECT_NE(e.diagnostics().at(0).message.find("is recursive (prefix"), std::string::npos)
        << e.diagnostics().at(0).message;
    EXPECT_EQ(e.diagnostics().at(0).span.line, 12);
  }
  const std::pair<const char*, const char*> bad[] = {
      {"Mod.prefix(T.address_of(A[0]))", "'prefix' takes 2 arguments, got 1"},
      {"Mod.prefix(6, 6)", "parameter 'A_data' is a pointer (T.handle), but the argument is int32"},
      {"Mod.prefix(A.data, T.float32(6))", "parameter 'n' is int32, but the argument is float32"},
  };
  for (const auto& [call, message] : bad) {
    std::string text = recursive;
    const std::string good = "Mod.prefix(T.address_of(A[0]), 6)";
    text.replace(text.find(good), good.size(), call);
    ParseResult r = parse_module(text, "bad.tir");
    ASSERT_TRUE(r.ok()) << render_all(r.diagnostics);
    std::vector<Diagnostic> diags = check_well_formed(*r.module);
    ASSERT_FALSE(diags.empty()) << call;
    EXPECT_NE(diags[0].message.find(message), std::string::npos) << diags[0].message;
    EXPECT_EQ(diags[0].span.line, 5);
    EXPECT_EQ(diags[0].span.col, 9);
  }
}

TEST(TvmScriptBugs, MainGetsALegalCSymbol) {
  IRModule m = parse_module_or_throw("@T.prim_func\ndef main(A: T.Buffer((4,), \"int32\")):\n    A[0] = 1\n", "m.tir");
  EXPECT_EQ(symbol_of("main", m.functions[0].second), "tvm_main");
  BuildResult built = build_c(m, parse_target("c -unpacked-api=1"));
  EXPECT_NE(built.sources[0].text.find("int32_t tvm_main("), std::string::npos) << built.sources[0].text;
}

// T.match_buffer(b, ..., data=A.data): B is A's memory seen as 2 x 2; the interpreter
// runs the alias, and every backend refuses it at B's declaration.
TEST(TvmScriptForms, MatchBufferDataAliasRunsInTheInterpreterOnly) {
  IRModule m = parse_module_or_throw(read(fs::path(mtir::source_dir()) / "tests/script/tvm/match_buffer_data.tir"),
                                     "alias.tir");
  NDArray a = NDArray::zeros(DataType::Int(32), {4}), b = NDArray::zeros(DataType::Int(32), {2, 2});
  interpret(m, "alias", {&a, &b});
  EXPECT_EQ(a.get_int(3), 11);  // B[1, 1] = B[0, 1] + 10 is A[3] = A[1] + 10
  for (const char* target : {"c -unpacked-api=0", "llvm -unpacked-api=1", "wasm"}) {
    SCOPED_TRACE(target);
    try {
      build_for_target(m, parse_target(target));
      ADD_FAILURE() << "a buffer alias was compiled";
    } catch (const DiagnosticError& e) {
      EXPECT_NE(e.diagnostics().at(0).message.find("buffer 'B' views the memory of buffer 'A'"), std::string::npos)
          << e.diagnostics().at(0).message;
      EXPECT_EQ(e.diagnostics().at(0).span.line, 9);
    }
  }
}

// T.Call(dtype, "tir.name", [args]) is the call of that name; the type written must be
// the call's. T.tvm_throw_last_error() (TVM's form, no message) compiles everywhere and
// stops the interpreter.
TEST(TvmScriptForms, GenericCallIsTheNamedCall) {
  const std::string path = std::string(mtir::source_dir()) + "/tests/script/tvm/generic_call.tir";
  IRModule m = parse_module_or_throw(read(path), "generic_call.tir");
  const std::string printed = print_module(m);
  EXPECT_NE(printed.find("T.tvm_throw_last_error()"), std::string::npos) << printed;
  EXPECT_NE(printed.find("T.exp(A[i])"), std::string::npos) << printed;
  EXPECT_NE(printed.find("A[i] + T.sqrt(A[i] * A[i])"), std::string::npos) << printed;
  for (const char* target : {"c -unpacked-api=1", "llvm -unpacked-api=0", "wasm"}) {
    SCOPED_TRACE(target);
    EXPECT_NO_THROW(build_for_target(m, parse_target(target)));
  }
  NDArray a = NDArray::zeros(DataType::Float(32), {4}), b = NDArray::zeros(DataType::Int(32), {4});
  try {
    interpret(m, "generic_call", {&a, &b, int64_t{-1}});
    ADD_FAILURE() << "T.tvm_throw_last_error() did not stop the interpreter";
  } catch (const DiagnosticError& e) {
    EXPECT_NE(e.diagnostics().at(0).message.find("the function failed"), std::string::npos)
        << e.diagnostics().at(0).message;
    EXPECT_EQ(e.diagnostics().at(0).span.line, 12);
  }
  const std::pair<const char*, const char*> bad[] = {
      {"T.Call(\"float32\", \"tir.shift_left\", [1, 2])", "T.Call says float32, but T.shift_left here is int32"},
      {"T.Call(\"int32\", \"tir.tvm_call_trace_packed\", [])", "unknown intrinsic 'T.tvm_call_trace_packed'"},
      {"T.Call(\"int32\", \"tir.shift_left\", 1, 2)", "to open the arguments of T.Call (a list)"},
      {"T.call_intrin(\"float32\", \"tir.shift_left\", 1, 2)",
       "T.call_intrin says float32, but T.shift_left here is int32"},
  };
  for (const auto& [call, message] : bad) {
    ParseResult r = parse_module(std::string("@T.prim_func\ndef f(A: T.Buffer((1,), \"int32\")):\n    A[0] = ") + call + "\n",
                                 "bad.tir");
    ASSERT_FALSE(r.ok()) << call;
    EXPECT_NE(r.diagnostics.at(0).message.find(message), std::string::npos) << r.diagnostics.at(0).message;
  }
}

// Scalable vectors parse and print (scalable_vectors.tir round-trips in the corpus);
// the interpreter and every backend refuse the first one at its line.
TEST(TvmScriptForms, ScalableVectorsAreRefusedWhereTheyStand) {
  NDArray a = NDArray::zeros(DataType::Float(32), {64}), b = NDArray::zeros(DataType::Float(32), {64});
  expect_refused_everywhere(parse_corpus_file("scalable_vectors"), "scalable", {&a, &b, int64_t{0}},
                            "function 'scalable' uses the scalable vector type int32xvscalex8", 8, 16);
  EXPECT_EQ(DataType::parse("float32xvscalex4", true)->str(), "float32xvscalex4");
  EXPECT_TRUE(DataType::parse("float32xvscalex4", true)->is_scalable());
  EXPECT_NE(*DataType::parse("float32xvscalex4", true), *DataType::parse("float32x4", true));
}

// int4 and uint4 are carried (int4_carried.tir round-trips in the corpus): refused at the
// first use, a parameter's buffer, an allocation, a local or a constant, wherever it is.
TEST(TvmScriptForms, Int4IsRefusedWhereItStands) {
  NDArray a = NDArray::zeros(DataType::Int(8), {8}), b = NDArray::zeros(DataType::Int(32), {8});
  const std::string refusal = "uses the sub-byte type int4 (TVM packs two int4 values to a byte)";
  expect_refused_everywhere(parse_corpus_file("int4_carried"), "unpack_int4", {&a, &a, &b},
                            "function 'unpack_int4' " + refusal, 8, 17);
  const std::string in_body =
      "@T.prim_func\n"
      "def f(B: T.Buffer((4,), \"int32\")):\n"
      "    B[0] = 1\n"
      "    B[1] = T.Cast(\"int32\", T.int4(7))\n";
  expect_refused_everywhere(parse_module_or_throw(in_body, "body.tir"), "f", {&b}, "function 'f' " + refusal, 4, 28);
  const std::string allocated =
      "@T.prim_func\n"
      "def f(B: T.Buffer((4,), \"int32\")):\n"
      "    T_1 = T.allocate([4], \"uint4\", \"global\")\n"
      "    B[0] = 1\n";
  expect_refused_everywhere(parse_module_or_throw(allocated, "alloc.tir"), "f", {&b},
                            "function 'f' uses the sub-byte type uint4", 3, 5);
  EXPECT_EQ(DataType::parse("int4")->bits(), 4);
  EXPECT_TRUE(is_sub_byte(*DataType::parse("uint4x8", true)));
  EXPECT_FALSE(DataType::parse("float4"));
  EXPECT_FALSE(is_sub_byte(DataType::Int(8)));
}

// T.allocate_const holds its values (both interpreter forms; the corpus runs compare
// C, LLVM and wasm with it) and prints as TVM prints it; a list that does not fill the
// extents, or a value that is not a literal of the type, is a located error.
TEST(TvmScriptForms, AllocateConstHoldsItsValues) {
  IRModule m = parse_corpus_file("allocate_const");
  for (bool tree_walk : {false, true}) {
    SCOPED_TRACE(tree_walk ? "tree walk" : "compiled");
    NDArray a = NDArray::zeros(DataType::Int(32), {10}), b = NDArray::zeros(DataType::Int(32), {10}),
            c = NDArray::zeros(DataType::Float(32), {2, 3});
    for (int i = 0; i < 10; ++i) a.set_int(i, i * 10);
    InterpOptions options;
    options.tree_walk = tree_walk;
    interpret(m, "add_constants", {&a, &b, &c}, options);
    const int64_t k[10] = {1, 2, 3, -4, 5, 6, 7, 8, 9, 10};
    for (int i = 0; i < 10; ++i) EXPECT_EQ(b.get_int(i), i * 10 + k[i] + (i == 0 ? 1 : 0)) << "B[" << i << "]";
    const double w[6] = {0.5, -1.25, 2, 3, 4.75, 0};
    for (int i = 0; i < 6; ++i) EXPECT_EQ(c.get_float(i), 2 * w[i]) << "C[" << i << "]";
  }
  const std::string printed = print_module(m);
  EXPECT_NE(printed.find("K_data = T.allocate_const([1, 2, 3, -4, 5, 6, 7, 8, 9, 10], \"int32\", [10])"),
            std::string::npos)
      << printed;
  EXPECT_NE(printed.find("with T.allocate_const([0.5, -1.25, 2, 3, 4.75, 0], \"float32\", [2, 3]) as W:"),
            std::string::npos)
      << printed;
  const std::tuple<const char*, const char*, int> bad[] = {
      {"T.allocate_const([1, 2, 3], \"int32\", [4])", "T.allocate_const has 3 values for 4 elements", 9},
      {"T.allocate_const([1, 2.5], \"int32\", [2])", "a value of T.allocate_const must be an integer", 30},
      {"T.allocate_const([1, 2], \"handle\", [2])", "T.allocate_const holds numbers, not handle", 9},
  };
  for (const auto& [call, message, col] : bad) {
    ParseResult r = parse_module(
        std::string("@T.prim_func\ndef f(A: T.Buffer((1,), \"int32\")):\n    K = ") + call + "\n    A[0] = K[0]\n",
        "bad.tir");
    ASSERT_FALSE(r.ok()) << call;
    EXPECT_NE(r.diagnostics.at(0).message.find(message), std::string::npos) << r.diagnostics.at(0).message;
    EXPECT_EQ(r.diagnostics.at(0).span.line, 3);
    EXPECT_EQ(r.diagnostics.at(0).span.col, col) << call;
  }
}

// T.realize (realize.tir round-trips in the corpus) prints its region in slices and is
// refused by the interpreter and every backend at the first one.
TEST(TvmScriptForms, RealizeIsRefusedWhereItStands) {
  IRModule m = parse_corpus_file("realize");
  const std::string printed = print_module(m);
  EXPECT_NE(printed.find("with T.realize(A[0:4, 0:16], \"global\", condition=n > 0):"), std::string::npos) << printed;
  EXPECT_NE(printed.find("    T.realize(A[4:8, n:n + 4], \"\")\n"), std::string::npos) << printed;
  NDArray a = NDArray::zeros(DataType::Float(32), {16, 16});
  expect_refused_everywhere(m, "realize_regions", {&a, int64_t{1}},
                            "function 'realize_regions' uses T.realize (TVM's BufferRealize, a statement of TIR before "
                            "storage flattening)",
                            9, 10);
}

// A thread launched through its IterVar, or bound with `as`, is T.launch_thread; an
// IterVar that is not a launched thread is refused for what it is, where it stands.
TEST(TvmScriptForms, IterVarThreadIsALaunchedThread) {
  IRModule m = parse_corpus_file("thread_iter_var");
  const std::string printed = print_module(m);
  EXPECT_NE(printed.find("bx = T.launch_thread(\"blockIdx.x\", 2)\n"), std::string::npos) << printed;
  EXPECT_NE(printed.find("tx = T.launch_thread(\"threadIdx.x\", 128)\n"), std::string::npos) << printed;
  try {
    build_c(m, parse_target("c -unpacked-api=0"));
    ADD_FAILURE() << "a launched GPU thread was compiled";
  } catch (const DiagnosticError& e) {
    EXPECT_NE(e.diagnostics().at(0).message.find("launches the GPU thread 'blockIdx.x'"), std::string::npos)
        << e.diagnostics().at(0).message;
    EXPECT_EQ(e.diagnostics().at(0).span.line, 9);
  }
  const std::pair<const char*, const char*> bad[] = {
      {"    with T.attr(T.iter_var(T.int32(), (0, 1), \"DataPar\", \"cop\"), \"coproc_uop_scope\", \"RunOnce\"):\n",
       "T.iter_var(..., \"DataPar\", ...) as the node of T.attr(..., \"coproc_uop_scope\", ...) is an iteration "
       "variable of TVM's schedule"},
      {"    with T.attr(T.iter_var(i, None, \"ThreadIndex\", \"vta\"), \"coproc_scope\", 2):\n",
       "T.iter_var(..., \"ThreadIndex\", ...) as the node of T.attr(..., \"coproc_scope\", ...)"},
  };
  for (const auto& [with, message] : bad) {
    ParseResult r = parse_module(std::string("@T.prim_func\ndef f(A: T.Buffer((4,), \"int64\")):\n") + with +
                                     "        A[0] = A[0] + T.int64(1)\n",
                                 "bad.tir");
    ASSERT_FALSE(r.ok()) << with;
    EXPECT_NE(r.diagnostics.at(0).message.find(message), std::string::npos) << r.diagnostics.at(0).message;
    EXPECT_EQ(r.diagnostics.at(0).span.line, 3);
    EXPECT_EQ(r.diagnostics.at(0).span.col, 17);
  }
  ParseResult value = parse_module(
      "@T.prim_func\ndef f(A: T.Buffer((4,), \"int32\")):\n"
      "    A[0] = T.iter_var(x, None, \"DataPar\", \"\")\n",
      "value.tir");
  ASSERT_FALSE(value.ok());
  EXPECT_NE(value.diagnostics.at(0).message.find("T.iter_var(...) stands only as the node of T.attr"),
            std::string::npos)
      << value.diagnostics.at(0).message;
}

// A bare `return` leaves a function without a return type (the interpreter's values here;
// the corpus runs compare C, LLVM and wasm with it), printed back as `return`; a bool
// comes back from the interpreter, host C (packed and unpacked) and LLVM alike.
TEST(TvmScriptReturn, BareReturnAndBoolReturn) {
  IRModule v = parse_corpus_file("return_void");
  EXPECT_NE(print_module(v).find("            return\n"), std::string::npos) << print_module(v);
  const std::pair<std::vector<int64_t>, std::pair<int64_t, int64_t>> runs[] = {{{3, 5, -2, 7, -1, 0, 0, 0}, {2, 3}},
                                                                               {{1, 2, 3, 4, 5, 6, 7, 8}, {-1, 100}}};
  for (const auto& [in, want] : runs) {
    for (bool tree_walk : {false, true}) {
      NDArray a = NDArray::zeros(DataType::Int(32), {8}), b = NDArray::zeros(DataType::Int(32), {2});
      for (int i = 0; i < 8; ++i) a.set_int(i, in[i]);
      InterpOptions options;
      options.tree_walk = tree_walk;
      interpret(v, "first_negative", {&a, &b}, options);
      EXPECT_EQ(b.get_int(0), want.first);
      EXPECT_EQ(b.get_int(1), want.second);
    }
  }
  IRModule m = parse_module_or_throw(R"(@T.prim_func
def in_range(x: T.int32, lo: T.int32, hi: T.int32) -> T.bool:
    if x < lo:
        T.ret(T.bool(False))
    return x < hi
)",
                                     "in_range.tir");
  const PrimFunc f = m.functions.at(0).second;
  const int64_t cases[][3] = {{-60, -50, 50}, {0, -50, 50}, {50, -50, 50}};
  for (const char* target : {"c -unpacked-api=0", "c -unpacked-api=1", "llvm -unpacked-api=0"}) {
    SCOPED_TRACE(target);
    BuildResult built = target[0] == 'l' ? build_llvm(m, parse_target(target)) : build_c(m, parse_target(target));
    for (const auto& c : cases) {
      std::vector<InterpArg> args = {c[0], c[1], c[2]};
      std::optional<int64_t> expected = interpret(m, "in_range", args);
      ASSERT_TRUE(expected.has_value());
      EXPECT_EQ(*expected, c[0] >= c[1] && c[0] < c[2] ? 1 : 0);
      sim::HostSimOptions options;
      options.work_dir = (fs::temp_directory_path() / ("microtir-bool-" + std::to_string(getpid()))).string();
      EXPECT_EQ(sim::run_on_host({&built, "in_range", f}, args, options), expected);
      fs::remove_all(options.work_dir);
    }
  }
  ParseResult bare = parse_module("@T.prim_func\ndef f(x: T.int32) -> T.int32:\n    return\n", "bare.tir");
  ASSERT_FALSE(bare.ok());
  EXPECT_NE(bare.diagnostics.at(0).message.find("a bare 'return' in a function that returns int32; return a value"),
            std::string::npos)
      << bare.diagnostics.at(0).message;
  EXPECT_EQ(bare.diagnostics.at(0).span.line, 3);
  EXPECT_EQ(bare.diagnostics.at(0).span.col, 5);
}

// TVM's null pointer reads in both argument orders to one call, printed type first; a
// reinterpret to a handle of anything but 0 is refused where it stands.
TEST(TvmScriptForms, NullHandleIsTvmsReinterpretOfZero) {
  auto printed = [](const std::string& value) {
    return print_module(parse_module_or_throw("@T.prim_func\ndef f(A: T.Buffer((1,), \"int32\")):\n"
                                              "    A[0] = T.Cast(\"int32\", T.isnullptr(" + value + "))\n",
                                              "null.tir"));
  };
  const std::string tvm_form = printed("T.reinterpret(\"handle\", T.uint64(0))");
  EXPECT_NE(tvm_form.find("T.isnullptr(T.reinterpret(\"handle\", T.uint64(0)))"), std::string::npos) << tvm_form;
  EXPECT_EQ(printed("T.reinterpret(T.uint64(0), dtype=\"handle\")"), tvm_form);
  for (const char* bad : {"T.reinterpret(T.uint64(4096), dtype=\"handle\")", "T.reinterpret(\"handle\", 0)"}) {
    SCOPED_TRACE(bad);
    ParseResult r = parse_module("@T.prim_func\ndef f(A: T.Buffer((1,), \"int32\")):\n    T.evaluate(" +
                                     std::string(bad) + ")\n",
                                 "bad.tir");
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.diagnostics.at(0).message.find("T.reinterpret to handle makes only the null pointer"), std::string::npos)
        << r.diagnostics.at(0).message;
    EXPECT_EQ(r.diagnostics.at(0).span.line, 3);
    EXPECT_EQ(r.diagnostics.at(0).span.col, 16);
  }
}

}  // namespace
}  // namespace mtir
