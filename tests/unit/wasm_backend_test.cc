// The WebAssembly backend (codegen/wasm): the text module's pieces that matter, the
// refusals, and — with Binaryen built in — the digits model assembled, validated and run
// under node on all test images, bit for bit equal to the interpreter; an invalid module
// is an internal error naming the function. (Every operator case runs through this
// backend in ops_test too.)
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "artifact/mlf.h"
#include "codegen/wasm/codegen_wat.h"
#include "artifact/wasm_model.h"
#include "driver/build.h"
#include "interp/interpreter.h"
#include "script/parser.h"
#include "sim/wasm_module_runner.h"
#include "support/compare.h"
#include "support/npy.h"
#include "program_corpus.h"
#ifdef MICROTIR_HAVE_BINARYEN
#include "codegen/wasm/native/binaryen_native.h"
#include "support/source_dir.h"
#endif

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

const LoadedModel& digits() {
  static const LoadedModel m = load_model(read(kModel / "digits.json"), "digits.json",
                                          [](const std::string& rel) { return read(kModel / rel); });
  return m;
}

std::string digits_wat() {
  MlfArtifact a = build_mlf(digits(), parse_target("wasm"), MlfInputs{"digits.json", "{}", {}, {}});
  for (const auto& f : a.files)
    if (f.path == wasm_model_source_path(digits().graph)) return f.text;
  ADD_FAILURE() << "no " << wasm_model_source_path(digits().graph) << " in the artifact";
  return "";
}

TEST(WasmBackend, ModelModuleExportsRunBuffersAndHoldsTheWeights) {
  const std::string wat = digits_wat();
  EXPECT_NE(wat.find("(memory (export \"memory\")"), std::string::npos);
  EXPECT_NE(wat.find("(func $run (export \"run\") (param $p0 i32) (param $p7 i32) (result i32)"), std::string::npos) << wat.substr(0, 2000);
  EXPECT_NE(wat.find("(global (export \"input:x\") i32"), std::string::npos);
  EXPECT_NE(wat.find("(global (export \"output:probs\") i32"), std::string::npos);
  // Six weight tensors as data segments; main gets their addresses as constants.
  const std::regex data_segment("\\(data \\(i32\\.const");
  EXPECT_EQ(std::distance(std::sregex_iterator(wat.begin(), wat.end(), data_segment), std::sregex_iterator()),
            6 + 2 + 3);  // + the two NULL-argument messages of run and three workspace-overflow messages
                         // (main's pool, each conv's padded input; the softmax's ten-element
                         // scratch lives in locals)
  // NULL pointers are refused with the CRT's kTvmErrorNullArgument (0x400).
  EXPECT_NE(wat.find("(return (i32.const 1024))"), std::string::npos);
  // Workspaces come from the module's allocator and are freed.
  EXPECT_NE(wat.find("(call $mtir.alloc (i64.const 2560))"), std::string::npos);
  EXPECT_NE(wat.find("(call $mtir.free"), std::string::npos);
  // expf is the only import: the host's math library.
  EXPECT_NE(wat.find("(import \"env\" \"expf\" (func $env.expf (param f32) (result f32)))"), std::string::npos);
  EXPECT_EQ(wat.find("(import \"env\" \"tanhf\""), std::string::npos);
}

TEST(WasmBackend, IntegerDivisionNeverTraps) {
  IRModule m = parse_module_or_throw(R"(
@T.prim_func
def divs(a: T.Buffer((4,), "int32"), b: T.Buffer((4,), "int32"), q: T.Buffer((4,), "int32"), r: T.Buffer((4,), "int32")):
    for i in range(4):
        q[i] = T.floordiv(a[i], b[i])
        r[i] = T.floormod(a[i], b[i])
)",
                            "divs.tir");
  BuildResult built = build_wasm(m, parse_target("wasm"));
  const std::string& wat = built.sources.at(0).text;
  EXPECT_NE(wat.find("(func $mtir.floordiv_s_i32"), std::string::npos);
  EXPECT_NE(wat.find("(func $mtir.floormod_s_i32"), std::string::npos);
  EXPECT_NE(wat.find("(func $divs (export \"divs\")"), std::string::npos);
#ifdef MICROTIR_HAVE_BINARYEN
  // MIN / -1 and every sign combination against the interpreter; then a zero divisor,
  // which the interpreter refuses and the C and LLVM backends turn into division by 1.
  NDArray a = NDArray::zeros(DataType::Int(32), {4}), b = a, q = a, r = a;
  const int64_t av[] = {7, -7, INT32_MIN, 5}, bv[] = {-2, 2, -1, 3};
  for (int i = 0; i < 4; ++i) a.set_int(i, av[i]), b.set_int(i, bv[i]);
  NDArray qi = q, ri = r, a2 = a, b2 = b;
  interpret(m, "divs", {&a2, &b2, &qi, &ri});
  const fs::path work = fs::temp_directory_path() / ("microtir-wasm-div-" + std::to_string(::getpid()));
  fs::create_directories(work);
  const std::string module = (work / "divs.wasm").string();
  std::ofstream(module, std::ios::binary) << binaryen_native::assemble(wat, "O2", "divs").binary;
  sim::run_wasm_calls(module, {{"divs", {&a, &b, &q, &r}}}, (work / "run").string());
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(q.get_int(i), qi.get_int(i)) << av[i] << " // " << bv[i];
    EXPECT_EQ(r.get_int(i), ri.get_int(i)) << av[i] << " % " << bv[i];
  }
  b.set_int(3, 0);
  sim::run_wasm_calls(module, {{"divs", {&a, &b, &q, &r}}}, (work / "run0").string());
  EXPECT_EQ(q.get_int(3), 5);
  EXPECT_EQ(r.get_int(3), 0);
  fs::remove_all(work);
#endif
}

// Shifts and bitwise operators (narrow, unsigned, 64-bit, run-time amounts) bit for bit
// equal to the interpreter; the C and LLVM backends run the same file in their corpus.
TEST(WasmBackend, ShiftsAndBitwiseMatchTheInterpreter) {
  const fs::path path = fs::path(mtir::source_dir()) / "tests" / "script" / "valid" / "int_bitwise.tir";
  IRModule m = parse_module_or_throw(read(path), path.string());
  BuildResult built = build_wasm(m, parse_target("wasm"));
  const std::string& wat = built.sources.at(0).text;
  EXPECT_NE(wat.find("i64.shr_s"), std::string::npos);
  EXPECT_NE(wat.find("i32.shr_u"), std::string::npos);
#ifdef MICROTIR_HAVE_BINARYEN
  const PrimFunc& f = m.lookup("int_bitwise");
  testing_corpus::Inputs expected = testing_corpus::make_inputs(f, {}, 77);
  testing_corpus::Inputs got = testing_corpus::make_inputs(f, {}, 77);
  interpret(m, "int_bitwise", expected.args);
  const fs::path work = fs::temp_directory_path() / ("microtir-wasm-bits-" + std::to_string(::getpid()));
  fs::create_directories(work);
  const std::string module = (work / "bits.wasm").string();
  std::ofstream(module, std::ios::binary) << binaryen_native::assemble(wat, "O2", "int_bitwise").binary;
  sim::WasmCall call{"int_bitwise", {}};
  for (auto& a : got.arrays) call.buffers.push_back(&a);
  sim::run_wasm_calls(module, {call}, (work / "run").string());
  for (size_t k = 0; k < got.arrays.size(); ++k)
    for (int64_t i = 0; i < got.arrays[k].num_elements(); ++i)
      ASSERT_EQ(got.arrays[k].get_int(i), expected.arrays[k].get_int(i)) << "parameter " << k << " element " << i;
  fs::remove_all(work);
#endif
}

// A constant term of an index goes into the load's offset= only where the rest of the
// index is provably non-negative (then no in-bounds access can wrap); elsewhere the
// address is computed in full. The results match the interpreter either way.
TEST(WasmBackend, ConstantIndexTermsBecomeOffsetsOnlyOverNonNegativeRests) {
  IRModule m = parse_module_or_throw(R"(
@T.prim_func
def offs(A: T.Buffer((16,), "float32"), B: T.Buffer((8,), "float32"), N: T.Buffer((1,), "int32")):
    for i in range(4):
        B[i] = A[i * 2 + 3] + A[N[0] + 5]
    for j in range(4):
        B[j + 4] = A[j + 12]
)",
                                     "offs.tir");
  BuildResult built = build_wasm(m, parse_target("wasm -disabled-schedules=hoist"));
  const std::string& wat = built.sources.at(0).text;
  EXPECT_NE(wat.find("(f32.load offset=12 "), std::string::npos) << wat;  // i * 2 >= 0
  EXPECT_NE(wat.find("(f32.load offset=48 "), std::string::npos) << wat;  // j >= 0
  EXPECT_NE(wat.find("(f32.store offset=16 "), std::string::npos) << wat;
  EXPECT_EQ(wat.find("offset=20"), std::string::npos) << wat;  // N[0] may be negative: N[0] + 5 stays whole
#ifdef MICROTIR_HAVE_BINARYEN
  NDArray a = NDArray::zeros(DataType::Float(32), {16}), b = NDArray::zeros(DataType::Float(32), {8});
  for (int i = 0; i < 16; ++i) a.set_float(i, 0.25 * i - 1);
  NDArray n = NDArray::zeros(DataType::Int(32), {1});
  n.set_int(0, -3);  // A[2]
  NDArray a2 = a, bi = b, n2 = n;
  interpret(m, "offs", {&a2, &bi, &n2});
  const fs::path work = fs::temp_directory_path() / ("microtir-wasm-offs-" + std::to_string(::getpid()));
  fs::create_directories(work);
  const std::string module = (work / "offs.wasm").string();
  std::ofstream(module, std::ios::binary) << binaryen_native::assemble(wat, "O2", "offs").binary;
  sim::run_wasm_calls(module, {{"offs", {&a, &b, &n}}}, (work / "run").string());
  EXPECT_EQ(b.data, bi.data);
  fs::remove_all(work);
#endif
}

// Vector stores that fit 128 bits are SIMD128 (v128 loads and stores, splats, lane-wise
// arithmetic); wider vectors, strided slices and ops wasm lacks for the lane shape (i8x16
// has no mul) are scalarized. Both run under node bit for bit equal to the interpreter.
// A vector accumulator in a loop stays in memory (no scalar local promotion).
void expect_wasm_equals_interpreter(const IRModule& m, const std::string& wat, const std::string& tag) {
#ifdef MICROTIR_HAVE_BINARYEN
  const fs::path work = fs::temp_directory_path() / ("microtir-wasm-" + tag + "-" + std::to_string(::getpid()));
  fs::create_directories(work);
  const std::string module = (work / "m.wasm").string();
  std::ofstream(module, std::ios::binary) << binaryen_native::assemble(wat, "O2", tag).binary;
  uint32_t seed = 5;
  for (const auto& [name, f] : m.functions) {
    testing_corpus::Inputs expected = testing_corpus::make_inputs(f, {}, seed);
    testing_corpus::Inputs got = testing_corpus::make_inputs(f, {}, seed++);
    interpret(m, name, expected.args);
    sim::WasmCall call{name, {}};
    for (auto& a : got.arrays) call.buffers.push_back(&a);
    sim::run_wasm_calls(module, {call}, (work / name).string());
    for (size_t k = 0; k < got.arrays.size(); ++k) EXPECT_EQ(got.arrays[k].data, expected.arrays[k].data) << name << " parameter " << k;
  }
  fs::remove_all(work);
#else
  (void)m, (void)wat, (void)tag;
#endif
}

// pack_bytes of four consecutive int8 elements is one (unaligned) i32 load, word_pair of
// two consecutive int32 elements one i64 load, as in the C and LLVM backends
// (consecutive_elements); other arguments are combined. Both match the interpreter.
TEST(WasmBackend, ConsecutiveElementsAreOneWordLoad) {
  IRModule m = parse_module_or_throw(R"(
@T.prim_func
def words(A: T.Buffer((16,), "int8"), W: T.Buffer((8,), "int32"), C: T.Buffer((5,), "int32"), D: T.Buffer((5,), "int64")):
    for i in range(3):
        C[i] = T.pack_bytes(A[i * 4], A[i * 4 + 1], A[i * 4 + 2], A[i * 4 + 3])
    C[3] = T.pack_bytes(A[5], A[6], A[7], A[8])
    C[4] = T.pack_bytes(A[0], A[2], A[1], A[3])
    for j in range(3):
        D[j] = T.word_pair(W[j * 2], W[j * 2 + 1])
    D[3] = T.word_pair(W[3], W[4])
    D[4] = T.word_pair(W[1], W[0])
)",
                                     "words.tir");
  BuildResult built = build_wasm(m, parse_target("wasm"));
  const std::string& wat = built.sources.at(0).text;
  EXPECT_NE(wat.find("(i32.load align=1 (i32.add "), std::string::npos) << wat;
  EXPECT_NE(wat.find("(i32.load offset=5 align=1 "), std::string::npos) << wat;
  EXPECT_NE(wat.find("(i64.load align=4 (i32.add "), std::string::npos) << wat;
  EXPECT_NE(wat.find("(i64.load offset=12 align=4 "), std::string::npos) << wat;
  EXPECT_NE(wat.find("(i32.shl (i32.and "), std::string::npos) << wat;  // A[0], A[2], A[1], A[3]
  EXPECT_NE(wat.find("(i64.shl (i64.extend_i32_u "), std::string::npos) << wat;  // W[1], W[0]
  expect_wasm_equals_interpreter(m, wat, "words");
}

TEST(WasmBackend, VectorsThatFit128BitsAreSimd128) {
  IRModule m = parse_module_or_throw(R"(
@T.prim_func
def simd_f32(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32"), C: T.Buffer((16,), "float32")):
    T.func_attr({"tir.noalias": True})
    for i in range(4):
        C[i * 4:i * 4 + 4] = T.max(A[i * 4:i * 4 + 4] + B[i * 4:i * 4 + 4], T.Broadcast(T.float32(0.5), 4)) / B[i * 4:i * 4 + 4]

@T.prim_func
def simd_i32(I: T.Buffer((8,), "int32"), J: T.Buffer((8,), "int32"), K: T.Buffer((8,), "int32")):
    for j in range(2):
        K[j * 4:j * 4 + 4] = I[j * 4:j * 4 + 4] * T.Broadcast(T.int32(3), 4) - T.min(I[j * 4:j * 4 + 4], J[j * 4:j * 4 + 4])

@T.prim_func
def simd_i8(A: T.Buffer((32,), "int8"), B: T.Buffer((32,), "int8")):
    for i in range(2):
        B[i * 16:i * 16 + 16] = A[i * 16:i * 16 + 16] + B[i * 16:i * 16 + 16]

@T.prim_func
def hoisted_broadcast(A: T.Buffer((32,), "float32"), S: T.Buffer((2,), "float32"), B: T.Buffer((32,), "float32")):
    T.func_attr({"tir.noalias": True})
    for i in range(8):
        B[i * 4:i * 4 + 4] = A[i * 4:i * 4 + 4] * T.Broadcast(S[0] * S[1], 4)

@T.prim_func
def accumulate(A: T.Buffer((128,), "int32"), C: T.Buffer((4,), "int32")):
    T.func_attr({"tir.noalias": True})
    for k in range(32):
        C[0:4] = C[0:4] + A[k * 4:k * 4 + 4]

@T.prim_func
def rows_i16(A: T.Buffer((4, 8), "int16"), B: T.Buffer((4, 8), "int16")):
    for i in range(4):
        B[i, 0:8] = T.max(A[i, 0:8], B[i, 0:8]) * T.Broadcast(T.int16(-3), 8)
)",
                                     "simd.tir");
  const std::string wat = build_wasm(m, parse_target("wasm")).sources.at(0).text;
  for (const char* inst : {"v128.load", "v128.store", "f32x4.add", "f32x4.splat", "f32x4.gt", "v128.bitselect",
                           "f32x4.div", "i32x4.mul", "i32x4.sub", "i32x4.min_s", "i32x4.splat", "i8x16.add",
                           "f32x4.mul", "i32x4.add", "i16x8.max_s", "i16x8.mul"})
    EXPECT_NE(wat.find(inst), std::string::npos) << inst << " in\n" << wat;
  EXPECT_EQ(wat.find("(f32.store"), std::string::npos) << wat;
  expect_wasm_equals_interpreter(m, wat, "simd");
}

// A load of an address read before in straight-line code, with no store to its buffer
// between, reuses the value; one the same in every iteration of a loop that certainly
// runs is read once before it. A store, a branch or the next iteration reads again.
TEST(WasmBackend, RepeatedAndLoopInvariantLoadsAreReadOnce) {
  IRModule tile = parse_module_or_throw(R"(
@T.prim_func
def tile(A: T.Buffer((160,), "int32"), W: T.Buffer((4,), "int32"), B: T.Buffer((80,), "int32")):
    T.func_attr({"tir.noalias": True})
    for i in range(40):
        B[i * 2] = A[i * 4] * W[0] + A[i * 4 + 1] * W[1]
        B[i * 2 + 1] = A[i * 4] * W[2] + A[i * 4 + 1] * W[3]
)",
                                        "tile.tir");
  const std::string wat = build_wasm(tile, parse_target("wasm")).sources.at(0).text;
  size_t loads = 0;
  for (size_t at = wat.find("(i32.load"); at != std::string::npos; at = wat.find("(i32.load", at + 1)) ++loads;
  EXPECT_EQ(loads, 6u) << wat;  // A[i * 4], A[i * 4 + 1] in the loop, W[0..3] before it
  EXPECT_LT(wat.find("(i32.load offset=12"), wat.find("(loop")) << wat;
  expect_wasm_equals_interpreter(tile, wat, "reuse-tile");

  IRModule m = parse_module_or_throw(R"(
@T.prim_func
def stores_between(A: T.Buffer((8,), "int32"), B: T.Buffer((8,), "int32")):
    T.func_attr({"tir.noalias": True})
    for i in range(40):
        B[i % 8] = A[i % 8] + B[(i + 3) % 8]
        A[i % 8] = B[i % 8] * 2 + A[(i + 1) % 8]
        B[(i + 1) % 8] = A[i % 8] + B[i % 8] + A[(i + 1) % 8]

@T.prim_func
def branches(A: T.Buffer((8,), "int32"), B: T.Buffer((8,), "int32")):
    T.func_attr({"tir.noalias": True})
    for i in range(40):
        if i % 3 == 1:
            B[0] = B[0] + A[i % 8]
        B[1] = B[1] + T.if_then_else(i < 20, A[(i + 2) % 8], 1) + A[i % 8] + A[(i + 2) % 8]
        B[2] = B[2] + A[3]
        A[3] = A[3] + 1

@T.prim_func
def aliased(A: T.Buffer((8,), "int32"), B: T.Buffer((8,), "int32")):
    for i in range(40):
        B[i % 8] = A[2] + A[(i + 1) % 8]
        A[(i + 1) % 8] = B[i % 8] + A[2]
)",
                                     "reuse.tir");
  expect_wasm_equals_interpreter(m, build_wasm(m, parse_target("wasm")).sources.at(0).text, "reuse");

  // A[2] is read on both sides of the store to B: without tir.noalias that store may
  // write A (the interpreter run above passes distinct arrays, so only the text shows
  // it), and A[2] is read again; with it, once.
  auto loads_of_a2 = [&](bool noalias) {
    auto f = std::make_shared<PrimFuncNode>(*m.lookup("aliased"));
    if (noalias) f->attrs["tir.noalias"] = true;
    IRModule one;
    one.set("aliased", f);
    const std::string text = build_wasm(one, parse_target("wasm")).sources.at(0).text;
    size_t n = 0;
    for (size_t at = text.find("(i32.load offset=8 (local.get $p.A_data))"); at != std::string::npos;
         at = text.find("(i32.load offset=8 (local.get $p.A_data))", at + 1))
      ++n;
    return n;
  };
  EXPECT_EQ(loads_of_a2(false), 2u);
  EXPECT_EQ(loads_of_a2(true), 1u);

  // A call on one side of a branch may write A through the pointer it gets: A[1] is
  // read again after the if_then_else, as after a call in straight-line code.
  IRModule call = parse_module_or_throw(R"(
@T.prim_func
def call_on_a_branch(A: T.Buffer((8,), "int32"), B: T.Buffer((8,), "int32")):
    T.func_attr({"tir.noalias": True})
    B[0] = A[1] + T.if_then_else(A[0] > 0, T.call_extern("int32", "poke", A.data), 0) + A[1]
)",
                                        "call.tir");
  const std::string call_wat = build_wasm(call, parse_target("wasm")).sources.at(0).text;
  size_t a1 = 0;
  for (size_t at = call_wat.find("(i32.load offset=4 "); at != std::string::npos; at = call_wat.find("(i32.load offset=4 ", at + 1))
    ++a1;
  EXPECT_EQ(a1, 2u) << call_wat;
}

// A rolled loop that only adds products of two int8/uint8/int16 loads into int32
// accumulators in locals (a register tile's reduction) is a SIMD128 dot product: eight
// elements a step, i32x4.dot_i16x8_s per accumulator, the lanes summed after the loop and
// the last length % 8 products scalar. Full-range int16 operands included (the pair sum
// of two (-32768)^2 wraps as the scalar sum does), bit for bit the interpreter's.
// Other shapes (strides that differ, wide operands, too few products) stay scalar.
TEST(WasmBackend, ReductionsOfNarrowProductsAreSimd128DotProducts) {
  IRModule m = parse_module_or_throw(R"(
@T.prim_func
def tile(X: T.Buffer((80,), "int16"), W: T.Buffer((80,), "int8"), B: T.Buffer((2,), "int32"), C: T.Buffer((4,), "int32")):
    T.func_attr({"tir.noalias": True})
    acc_data = T.allocate([4], "int32", "local")
    acc = T.Buffer((4,), "int32", data=acc_data)
    for j in range(4):
        acc[j] = B[j % 2]
    for ko in range(20):
        acc[0] = acc[0] + T.Cast("int32", X[ko * 2]) * T.Cast("int32", W[ko * 2])
        acc[1] = acc[1] + T.Cast("int32", X[ko * 2]) * T.Cast("int32", W[ko * 2 + 40])
        acc[2] = acc[2] + T.Cast("int32", X[ko * 2 + 40]) * T.Cast("int32", W[ko * 2])
        acc[3] = acc[3] + T.Cast("int32", X[ko * 2 + 40]) * T.Cast("int32", W[ko * 2 + 40])
        acc[0] = acc[0] + T.Cast("int32", X[ko * 2 + 1]) * T.Cast("int32", W[ko * 2 + 1])
        acc[1] = acc[1] + T.Cast("int32", X[ko * 2 + 1]) * T.Cast("int32", W[ko * 2 + 41])
        acc[2] = acc[2] + T.Cast("int32", X[ko * 2 + 41]) * T.Cast("int32", W[ko * 2 + 1])
        acc[3] = acc[3] + T.Cast("int32", X[ko * 2 + 41]) * T.Cast("int32", W[ko * 2 + 41])
    for j in range(4):
        C[j] = acc[j]

@T.prim_func
def dense(X: T.Buffer((37,), "int8"), W: T.Buffer((74,), "int8"), C: T.Buffer((1,), "int32"), D: T.Buffer((1,), "int32")):
    T.func_attr({"tir.noalias": True})
    for k in range(37):
        C[0] = C[0] + T.Cast("int32", X[k]) * T.Cast("int32", W[k])
        D[0] = T.Cast("int32", W[k + 37]) * T.Cast("int32", X[k]) + D[0]

@T.prim_func
def offsets(X: T.Buffer((64,), "uint8"), Y: T.Buffer((64,), "int16"), N: T.Buffer((1,), "int32"), C: T.Buffer((1,), "int32")):
    T.func_attr({"tir.noalias": True})
    n: T.int32 = N[0] % 8 + 8
    for k in range(2, 13):
        C[0] = C[0] + T.Cast("int32", X[n + k * 4 - 8]) * T.Cast("int32", Y[k * 4 - 5 + n])
        C[0] = C[0] + T.Cast("int32", X[n + k * 4 - 7]) * T.Cast("int32", Y[k * 4 - 4 + n])
        C[0] = C[0] + T.Cast("int32", X[n + k * 4 - 6]) * T.Cast("int32", Y[k * 4 - 3 + n])
        C[0] = C[0] + T.Cast("int32", X[n + k * 4 - 5]) * T.Cast("int32", Y[k * 4 - 2 + n])

@T.prim_func
def scalar_shapes(X: T.Buffer((64,), "int8"), Y: T.Buffer((64,), "int32"), U: T.Buffer((64,), "uint16"), C: T.Buffer((3,), "int32")):
    T.func_attr({"tir.noalias": True})
    for k in range(32):
        C[0] = C[0] + T.Cast("int32", X[k * 2]) * T.Cast("int32", X[k])
    for k in range(64):
        C[1] = C[1] + T.Cast("int32", X[k]) * Y[k]
    for k in range(64):
        C[2] = C[2] + T.Cast("int32", X[k]) * T.Cast("int32", U[k])
)",
                                     "dot.tir");
  const std::string wat = build_wasm(m, parse_target("wasm")).sources.at(0).text;
  auto function = [&](const std::string& name) {
    const size_t at = wat.find("(func $" + name + " ");
    return at == std::string::npos ? std::string() : wat.substr(at, wat.find("\n  (func ", at + 1) - at);
  };
  auto count = [](const std::string& text, const std::string& what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
  };
  const std::string tile = function("tile"), dense = function("dense"), offsets = function("offsets");
  // The tile: 5 steps of 8 (odd: one a loop iteration), four loads shared by four sums.
  EXPECT_EQ(count(tile, "i32x4.dot_i16x8_s"), 4u) << tile;
  EXPECT_EQ(count(tile, "(v128.load (local.get"), 2u) << tile;        // X, int16
  EXPECT_EQ(count(tile, "(v128.load8x8_s (local.get"), 2u) << tile;   // W, int8 widened
  EXPECT_EQ(count(tile, "(i32.const 5)"), 1u) << tile;
  EXPECT_EQ(count(tile, "(i32.mul (i32.load"), 0u) << tile;  // no scalar product
  // 37 products into accumulators in memory (a local during the loop): two steps an
  // iteration (4 steps), 5 scalar products per sum after.
  EXPECT_EQ(count(dense, "i32x4.dot_i16x8_s"), 4u) << dense;
  EXPECT_EQ(count(dense, "v128.load8x8_s offset=8 "), 3u) << dense;  // X shared, W twice
  EXPECT_EQ(count(dense, "(i32.mul (i32.load8_s offset="), 10u) << dense;
  // From k = 2 with the rest of the index a variable: uint8 zero-extended, 44 = 5 * 8 + 4.
  EXPECT_EQ(count(offsets, "i32x4.dot_i16x8_s"), 1u) << offsets;
  EXPECT_EQ(count(offsets, "v128.load8x8_u"), 1u) << offsets;
  EXPECT_EQ(count(offsets, "i32.load8_u offset=3 "), 1u) << offsets;
  EXPECT_EQ(count(function("scalar_shapes"), "v128"), 0u) << function("scalar_shapes");
  expect_wasm_equals_interpreter(m, wat, "dot");
}

// A loop that only stores int8 values widened to int16 (an im2col gather), or an int16
// constant (its padding), into memory of its own is eight elements a step: up to four
// steps straight-line, more in a loop, the last length % 8 one by one. A copy within one
// buffer, or into int32, stays scalar.
TEST(WasmBackend, WideningCopiesAreSimd128) {
  IRModule m = parse_module_or_throw(R"(
@T.prim_func
def gather(X: T.Buffer((64,), "int8"), U: T.Buffer((64,), "uint8"), N: T.Buffer((1,), "int32"), Y: T.Buffer((200,), "int16")):
    T.func_attr({"tir.noalias": True})
    n: T.int32 = N[0] % 4 + 4
    for e in range(16):
        Y[e] = T.Cast("int16", T.Cast("int32", X[e + n]))
    for e in range(2, 58):
        Y[e + 16] = T.Cast("int16", X[e - 2])
    for e in range(21):
        Y[e + n + 100] = T.Cast("int16", T.Cast("int32", U[e * 1 + 3]))
    for e in range(44):
        Y[150 + e] = T.int16(-128)

@T.prim_func
def scalar_copies(X: T.Buffer((64,), "int16"), Z: T.Buffer((64,), "int32")):
    T.func_attr({"tir.noalias": True})
    for e in range(32):
        X[e + 1] = T.Cast("int16", T.Cast("int8", X[e]))
    for e in range(32):
        Z[e] = T.Cast("int32", X[e])
)",
                                     "copy.tir");
  const std::string wat = build_wasm(m, parse_target("wasm")).sources.at(0).text;
  const size_t scalar_at = wat.find("(func $scalar_copies ");
  const std::string gather = wat.substr(0, scalar_at), scalar = wat.substr(scalar_at);
  auto count = [](const std::string& text, const std::string& what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count(gather, "v128.load8x8_s"), 3u) << gather;  // 2 straight-line, 1 in the loop of 7
  EXPECT_EQ(count(gather, "v128.load8x8_u"), 2u) << gather;  // 21 = 2 * 8 + 5
  EXPECT_EQ(count(gather, "(i32.store16 offset="), 5u + 4u) << gather;
  EXPECT_EQ(count(gather, "(i16x8.splat (i32.const -128))"), 1u) << gather;  // 44 = a loop of 5 steps + 4
  EXPECT_EQ(count(scalar, "v128"), 0u) << scalar;
  expect_wasm_equals_interpreter(m, wat, "copy");
}

TEST(WasmBackend, VectorsThatDoNotFitSimd128AreScalarized) {
  IRModule m = parse_module_or_throw(R"(
@T.prim_func
def wide(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
    for i in range(2):
        B[i * 8:i * 8 + 8] = A[i * 8:i * 8 + 8] + T.Broadcast(T.float32(1), 8)

@T.prim_func
def strided(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
    B[0:8] = A[0:16:2]
    B[8:16] = A[1:16:2]

@T.prim_func
def column_major(A: T.Buffer((4, 4), "float32", strides=(1, 4)), B: T.Buffer((16,), "float32")):
    for i in range(4):
        B[i * 4:i * 4 + 4] = A[i, 0:4] + T.Broadcast(T.float32(1), 4)

@T.prim_func
def mul_i8(A: T.Buffer((32,), "int8"), B: T.Buffer((32,), "int8")):
    for i in range(2):
        B[i * 16:i * 16 + 16] = A[i * 16:i * 16 + 16] * T.Broadcast(T.int8(3), 16)
)",
                                     "scalar.tir");
  const std::string wat = build_wasm(m, parse_target("wasm")).sources.at(0).text;
  EXPECT_EQ(wat.find("v128"), std::string::npos) << wat;
  EXPECT_EQ(wat.find("x4."), std::string::npos) << wat;
  EXPECT_EQ(wat.find("x16."), std::string::npos) << wat;
  EXPECT_NE(wat.find("(f32.store"), std::string::npos) << wat;
  expect_wasm_equals_interpreter(m, wat, "scalarized");
}

TEST(WasmBackend, RefusesWhatItCannotBuild) {
  // Options that contradict the module's plain-pointer run export.
  for (const char* bad : {"wasm -interface-api=packed", "wasm -unpacked-api=0", "wasm -link-params=0"}) {
    try {
      parse_target(bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const DiagnosticError& e) {
      EXPECT_NE(render_all(e.diagnostics()).find("the wasm target needs -interface-api=c -unpacked-api=1 -link-params=1"),
                std::string::npos);
    }
  }
  EXPECT_THROW(parse_target("wasm -opt=O9"), DiagnosticError);
  EXPECT_THROW(parse_target("c -opt=O2"), DiagnosticError);
  EXPECT_EQ(parse_target("wasm -opt=Oz").str(),
            "wasm -opt=Oz -runtime=c -executor=aot -interface-api=c -unpacked-api=1 -link-params=1 "
            "-workspace-byte-alignment=16");
}

// Layers placed on devices call imported kernels and hooks with the context last.
TEST(WasmBackend, DeviceKernelsAreImportsTakingTheContextLast) {
  LoadedModel placed = load_model(read(kModel / "digits.json"), "digits.json",
                                  [](const std::string& rel) { return read(kModel / rel); }, {"npu0=conv2d", "npu1=dense"});
  MlfArtifact a = build_mlf(placed, parse_target("wasm"), MlfInputs{"digits.json", "{}", {}, {}});
  const std::string& wat = a.files.at(0).text;
  EXPECT_NE(wat.find("(import \"env\" \"npu_dense\" (func $env.npu_dense (param i32 i32 i32 i32 i32 i32 i32 i32 i32) (result i32)))"),
            std::string::npos);
  EXPECT_NE(wat.find("(import \"env\" \"TVMDeviceNpuActivate\" (func $env.TVMDeviceNpuActivate (param i32) (result i32)))"),
            std::string::npos);
  // run takes the two contexts after the output.
  EXPECT_NE(wat.find("(param $p7 i32) (param $dev0 i32) (param $dev1 i32) (result i32)"), std::string::npos);
#ifdef MICROTIR_HAVE_BINARYEN
  const fs::path work = fs::temp_directory_path() / ("microtir-wasm-npu-" + std::to_string(::getpid()));
  fs::create_directories(work);
  sim::ArtifactInfo info;
  info.dir = work.string();
  info.devices = placed.aot.devices;
  info.wasm_module = (work / "digits.wasm").string();
  std::ofstream(info.wasm_module, std::ios::binary) << binaryen_native::assemble(wat, "O2", "digits on npus").binary;
  NDArray x = read_npy(read(kModel / "sample_x.npy"), "sample_x.npy");
  std::vector<NDArray> args;
  for (const auto& p : digits().aot.params)
    args.push_back(p.role == AotModule::Role::kConstant ? digits().graph.constants.at(p.name)
                   : p.role == AotModule::Role::kInput  ? x
                                                        : NDArray::zeros(p.type.dtype, p.type.shape));
  std::vector<InterpArg> iargs;
  for (auto& v : args) iargs.push_back(&v);
  interpret(digits().aot.module, digits().aot.main, iargs);  // all on the host
  sim::ArtifactRunOptions options;
  options.target = "wasm-binaryen";
  options.work_dir = (work / "run").string();
  sim::ArtifactRunResult r = sim::run_artifact(info, {{"x", DataType::Float(32), {1, 1, 8, 8}, "x"}}, {{x}},
                                               {{"probs", DataType::Float(32), {1, 10}, "probs"}}, options);
  Difference d = compare_arrays(r.outputs.at(0).at(0), args.back(), 1e-5);
  EXPECT_TRUE(d.ok) << d.max_abs;
  // The same counters as the C artifact with sim/npu (devices_test, docs/devices.md).
  ASSERT_EQ(r.devices.size(), 2u);
  EXPECT_EQ(r.devices[0], "npu0: 1 activations, 2 kernels, 23040 MACs, 5960 cycles");
  EXPECT_EQ(r.devices[1], "npu1: 1 activations, 1 kernels, 640 MACs, 260 cycles");
  fs::remove_all(work);
#endif
}

#ifdef MICROTIR_HAVE_BINARYEN
TEST(WasmBackend, DigitsRunUnderNodeEqualsTheInterpreterOnAllImages) {
  const LoadedModel& d = digits();
  const fs::path work = fs::temp_directory_path() / ("microtir-wasm-digits-" + std::to_string(::getpid()));
  fs::create_directories(work / "artifact/codegen/host/lib");
  binaryen_native::Assembled a = binaryen_native::assemble(digits_wat(), "O2", "digits");
  EXPECT_NE(a.text.find("(export \"run\""), std::string::npos);
  sim::ArtifactInfo info;
  info.dir = (work / "artifact").string();
  info.wasm_module = (work / "artifact/codegen/host/lib/digits.wasm").string();
  std::ofstream(info.wasm_module, std::ios::binary) << a.binary;
  NDArray images = read_npy(read(kModel / "test_images.npy"), "test_images.npy");
  const int64_t n = 100, image_bytes = 64 * 4;
  ASSERT_EQ(static_cast<int64_t>(images.data.size()), n * image_bytes);
  std::vector<std::vector<NDArray>> samples;
  std::vector<NDArray> want;
  for (int64_t k = 0; k < n; ++k) {
    std::vector<NDArray> args;
    for (const auto& p : d.aot.params) {
      NDArray v = p.role == AotModule::Role::kConstant ? d.graph.constants.at(p.name) : NDArray::zeros(p.type.dtype, p.type.shape);
      if (p.role == AotModule::Role::kInput)
        std::copy(images.data.begin() + k * image_bytes, images.data.begin() + (k + 1) * image_bytes, v.data.begin());
      args.push_back(std::move(v));
    }
    std::vector<InterpArg> iargs;
    for (auto& v : args) iargs.push_back(&v);
    interpret(d.aot.module, d.aot.main, iargs);
    samples.push_back({args.front()});
    want.push_back(args.back());
  }
  sim::ArtifactRunOptions options;
  options.target = "wasm-binaryen";
  options.work_dir = (work / "run").string();
  sim::ArtifactRunResult r = sim::run_artifact(info, {{"x", DataType::Float(32), {1, 1, 8, 8}, "x"}}, samples,
                                               {{"probs", DataType::Float(32), {1, 10}, "probs"}}, options);
  ASSERT_EQ(r.outputs.size(), static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) {
    // The same float operations in the same order as the interpreter: bit for bit.
    EXPECT_EQ(r.outputs[k][0].data, want[k].data) << "image " << k;
  }
  EXPECT_EQ(r.report.flash_bytes, static_cast<int64_t>(a.binary.size()));
  fs::remove_all(work);
}

TEST(WasmBackend, AnInvalidModuleIsAnInternalErrorNamingTheFunction) {
  const std::string bad = "(module (func $broken (result i32) (f32.const 1)))";
  try {
    binaryen_native::assemble(bad, "O2", "a test module");
    ADD_FAILURE() << "Binaryen accepted an invalid module";
  } catch (const DiagnosticError& e) {
    std::string text = render_all(e.diagnostics());
    EXPECT_NE(text.find("internal"), std::string::npos) << text;
    EXPECT_NE(text.find("in function broken"), std::string::npos) << text;
  }
}
#endif

}  // namespace
}  // namespace mtir
