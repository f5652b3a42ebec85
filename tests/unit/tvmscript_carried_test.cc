// The last forms of TVM's printing (issue 38): buffers of vector type, axis_separators,
// storage scopes on parameters, T.Buffer in a body without data= with variables declared
// in the body, T.LetStmt(v, var=x), and masked A.vload/A.vstore. The corpus files
// (tests/script/tvm) round-trip and, where they run, agree across the interpreter, C, LLVM
// and wasm (tvmscript_corpus_test); these tests pin exact values, the layout a vector
// buffer runs with, and where each carried form is refused.
#include <gtest/gtest.h>

#include "analysis/well_formed.h"
#include "carried_refusal.h"
#include "ir/structural_equal.h"
#include "ir/vector_buffers.h"
#include "script/printer.h"

namespace mtir {
namespace {

using namespace testing_corpus;

// An element of an int32x2 buffer is its two lanes side by side: the function runs with
// an int32 array of shape (3, 2).
TEST(TvmVectorBuffers, AnElementIsAWholeVector) {
  IRModule m = parse_corpus_file("vector_buffer_elements");
  const PrimFunc f = m.functions.at(0).second;
  const PrimFunc run = expand_vector_buffers(f);
  ASSERT_EQ(run->param_buffers[1]->dtype, DataType::Int(32));
  ASSERT_EQ(run->param_buffers[1]->shape.size(), 2u);
  EXPECT_EQ(*as_const_int(run->param_buffers[1]->shape[1]), 2);
  EXPECT_EQ(print_module(m).find("\"int32\", \"int32x2\""), std::string::npos);
  EXPECT_NE(print_module(m).find("P: T.Buffer((3,), \"int32x2\")"), std::string::npos) << print_module(m);
  NDArray x = NDArray::zeros(DataType::Int(32), {2}), p = NDArray::zeros(DataType::Int(32), {3, 2});
  NDArray a = NDArray::zeros(DataType::Float(32), {2, 2, 4}), b = NDArray::zeros(DataType::Float(32), {2, 4});
  NDArray s = NDArray::zeros(DataType::Float(32), {8});
  x.set_int(0, 5), x.set_int(1, -7), p.set_int(2, 1), p.set_int(3, 2);
  for (int k = 0; k < 16; ++k) a.set_float(k, k);
  interpret(m, "vector_elements", {&x, &p, &a, &b, &s});
  EXPECT_EQ(p.get_int(0), 5);
  EXPECT_EQ(p.get_int(1), -7);
  EXPECT_EQ(p.get_int(4), 1 * 3 + 5);
  EXPECT_EQ(p.get_int(5), 2 * 3 - 7);
  EXPECT_EQ(b.get_float(0), 0 + 2 * 4);   // A[0, 0] + 2 A[0, 1], lane 0
  EXPECT_EQ(b.get_float(7), 11 + 2 * 15);  // A[1, 0] + 2 A[1, 1], lane 3
  EXPECT_EQ(s.get_float(0), b.get_float(0) - b.get_float(4));
  EXPECT_EQ(s.get_float(4), 15);  // A[1, 1] reversed
  EXPECT_EQ(s.get_float(7), 12);
}

TEST(TvmVectorBuffers, AVectorIndexIntoAVectorBufferIsALocatedError) {
  IRModule m = parse_module_or_throw(
      "@T.prim_func\ndef f(A: T.Buffer((4,), \"float32x4\"), B: T.Buffer((16,), \"float32\")):\n"
      "    B[0:4] = A[0]\n    A[0:2] = T.Broadcast(T.float32(0), 8)\n",
      "v.tir");
  const auto errors = check_well_formed(m);
  ASSERT_FALSE(errors.empty());
  EXPECT_NE(errors[0].message.find("a vector index into a buffer of vector type"), std::string::npos)
      << errors[0].message;
  EXPECT_EQ(errors[0].span.line, 4);
}

TEST(TvmAxisSeparators, KeptComparedAndChecked) {
  const std::string with = "@T.prim_func\ndef f(A: T.Buffer((4, 8), \"float32\", axis_separators=[1])):\n    A[0, 0] = 1.0\n";
  IRModule a = parse_module_or_throw(with, "a.tir");
  IRModule b = parse_module_or_throw(
      "@T.prim_func\ndef f(A: T.Buffer((4, 8), \"float32\")):\n    A[0, 0] = 1.0\n", "b.tir");
  EXPECT_FALSE(structural_equal(a, b));
  EXPECT_EQ(a.functions.at(0).second->param_buffers[0]->axis_separators, std::vector<int64_t>{1});
  ParseResult bad = parse_module("@T.prim_func\ndef f(A: T.Buffer((4, 8), \"float32\", axis_separators=[3])):\n"
                                 "    A[0, 0] = 1.0\n",
                                 "bad.tir");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.diagnostics.at(0).message.find("axis_separators must increase and lie in [0, 2]"), std::string::npos)
      << bad.diagnostics.at(0).message;
  EXPECT_EQ(bad.diagnostics.at(0).span.line, 2);
  EXPECT_EQ(bad.diagnostics.at(0).span.col, 54);
}

TEST(TvmParamScopes, GpuScopesAreRefusedAtTheParameter) {
  NDArray a = NDArray::zeros(DataType::Float(32), {16}), b = NDArray::zeros(DataType::Float(32), {16});
  expect_refused_everywhere(parse_corpus_file("param_scope_gpu"), "shared_copy", {&a, &a, &b},
                            "function 'shared_copy': parameter 'A' is in storage scope \"shared\" (GPU memory)", 7, 17);
  const std::string handle = "@T.prim_func\ndef f(B: T.Buffer((4,), \"float32\"), p: T.handle(\"float32\", \"local\")):\n"
                             "    B[0] = 1.0\n";
  expect_refused_everywhere(parse_module_or_throw(handle, "h.tir"), "f", {&b, &a},
                            "parameter 'p' is in storage scope \"local\"", 2, 37);
}

// B has no memory until buffer_bind_scope binds it; elem_offset is bound by B's declaration.
TEST(TvmUnboundBuffers, BufferBindScopeIsRefusedAtTheBuffer) {
  IRModule m = parse_corpus_file("buffer_bind_scope");
  EXPECT_NE(print_module(m).find("            elem_offset = T.int32()\n            B = T.Buffer((16, 16), \"int32\", "
                                 "elem_offset=elem_offset)\n            with T.attr([B, A], \"buffer_bind_scope\""),
            std::string::npos)
      << print_module(m);
  NDArray a = NDArray::zeros(DataType::Int(32), {256, 256});
  expect_refused_everywhere(m, "tiles", {&a}, "function 'tiles': buffer 'B' has no memory (T.Buffer in a function body",
                            12, 9);
  // A variable declared in a body is used before the buffer declaration that binds it:
  // the verifier reports the use (tests/script/malformed has one that nothing binds).
  IRModule early = parse_module_or_throw(
      "@T.prim_func\ndef f(A: T.Buffer((4,), \"int32\")):\n    n = T.int32()\n    A[1] = n\n"
      "    B = T.Buffer((4,), \"int32\", elem_offset=n)\n    B[0] = 1\n",
      "n.tir");
  const auto errors = check_well_formed(early);
  ASSERT_FALSE(errors.empty());
  EXPECT_NE(errors[0].message.find("variable 'n' is used outside the scope that defines it"), std::string::npos)
      << errors[0].message;
}

TEST(TvmLetStmt, VarKeywordBindsTheDeclaredVariable) {
  IRModule m = parse_corpus_file("let_stmt_var");
  NDArray b = NDArray::zeros(DataType::Int(32), {4}), c = NDArray::zeros(DataType::Int(32), {1});
  interpret(m, "lets", {&b, &c});
  for (int i = 0; i < 4; ++i) EXPECT_EQ(b.get_int(i), 3 * i);
  EXPECT_EQ(c.get_int(0), 10);
  const IRModule pointer_let = parse_corpus_file("let_stmt_pointer");
  const std::string pointer = print_module(pointer_let);
  EXPECT_NE(pointer.find("with T.LetStmt(A.data, T.handle(\"float32\", \"global\")) as p:"), std::string::npos)
      << pointer;
  // A view declared over the pointer writes A's memory, in both interpreters.
  for (bool tree_walk : {false, true}) {
    SCOPED_TRACE(tree_walk ? "tree walk" : "compiled");
    NDArray a = NDArray::zeros(DataType::Float(32), {4}), out = NDArray::zeros(DataType::Float(32), {4});
    InterpOptions options;
    options.tree_walk = tree_walk;
    interpret(pointer_let, "pointer_let", {&a, &out}, options);
    EXPECT_EQ(a.get_float(0), 1.0);
    EXPECT_EQ(out.get_float(0), 1.0);
  }
  ParseResult bad = parse_module(
      "@T.prim_func\ndef f(A: T.Buffer((4,), \"int32\")):\n    with T.LetStmt(3, var=m):\n        A[0] = m\n", "bad.tir");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.diagnostics.at(0).message.find("var= of T.LetStmt names a variable declared before it"),
            std::string::npos)
      << bad.diagnostics.at(0).message;
  EXPECT_EQ(bad.diagnostics.at(0).span.col, 27);
}

TEST(TvmVectorPredicates, MaskedAccessesAreRefusedWhereTheyStand) {
  IRModule m = parse_corpus_file("masked_vector_access");
  const std::string printed = print_module(m);
  EXPECT_NE(printed.find("A.vload([T.Ramp(0, 1, 4)], predicate=T.Broadcast(True, 4))"), std::string::npos) << printed;
  EXPECT_NE(printed.find("A.vstore([T.Ramp(4, 1, 4)], T.Broadcast(T.float32(0), 4), predicate="), std::string::npos)
      << printed;
  NDArray a = NDArray::zeros(DataType::Float(32), {8}), b = NDArray::zeros(DataType::Float(32), {8});
  // The load's mask holds every lane, a plain load; the store's is refused.
  expect_refused_everywhere(m, "masked", {&a, &b, int64_t{6}}, "function 'masked' uses a vector access with a predicate",
                            10, 5);
  IRModule all_lanes = parse_module_or_throw(
      "@T.prim_func\ndef f(A: T.Buffer((4,), \"float32\"), B: T.Buffer((4,), \"float32\")):\n"
      "    B[0:4] = A.vload([T.Ramp(0, 1, 4)], predicate=T.Broadcast(T.bool(True), 4))\n"
      "    A.vstore([T.Ramp(0, 1, 4)], B[0:4] + B[0:4], predicate=T.Broadcast(T.bool(True), 4))\n",
      "all.tir");
  NDArray a4 = NDArray::zeros(DataType::Float(32), {4}), b4 = NDArray::zeros(DataType::Float(32), {4});
  for (int k = 0; k < 4; ++k) a4.set_float(k, k + 1);
  interpret(all_lanes, "f", {&a4, &b4});
  EXPECT_EQ(b4.get_float(3), 4);
  EXPECT_EQ(a4.get_float(3), 8);
  build_c(all_lanes, parse_target("c"));  // compiles as plain accesses
  ParseResult bad = parse_module(
      "@T.prim_func\ndef f(A: T.Buffer((8,), \"float32\")):\n    A.vstore([T.Ramp(0, 1, 4)], T.Broadcast(T.float32(0), 4), "
      "predicate=T.Broadcast(True, 2))\n",
      "bad.tir");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.diagnostics.at(0).message.find("the predicate of this access must be boolx4, not boolx2"),
            std::string::npos)
      << bad.diagnostics.at(0).message;
}

// A `return` inside workspace allocations cannot leak them (as a `break` out of one is
// refused): C, LLVM and wasm free every live one, newest first, before returning; the
// corpus run (return_in_allocation.tir) checks the values.
TEST(TvmReturn, AReturnFreesTheLiveAllocationsFirst) {
  IRModule m = parse_corpus_file("return_in_allocation");
  const std::string c = build_c(m, parse_target("c -unpacked-api=1")).sources.at(0).text;
  const size_t ret = c.find("return 0;\n", c.find("B[0] = i;"));
  ASSERT_NE(ret, std::string::npos) << c;
  const size_t free_u = c.rfind("(void)TVMBackendFreeWorkspace(1, 0, u);", ret);
  const size_t free_t = c.rfind("(void)TVMBackendFreeWorkspace(1, 0, t);", ret);
  ASSERT_NE(free_u, std::string::npos) << c;
  ASSERT_NE(free_t, std::string::npos) << c;
  EXPECT_LT(free_u, free_t) << "the newest allocation is freed first";
  EXPECT_GT(free_u, c.find("B[0] = i;")) << c;
  const std::string ll = build_llvm(m, parse_target("llvm -unpacked-api=1")).sources.at(0).text;
  size_t frees = 0;
  for (size_t at = ll.find("@TVMBackendFreeWorkspace(i32 1"); at != std::string::npos;
       at = ll.find("@TVMBackendFreeWorkspace(i32 1", at + 1))
    ++frees;
  EXPECT_GE(frees, 4u) << "two at the allocations' end, two before the return\n" << ll;
  const std::string wat = build_wasm(m, parse_target("wasm")).sources.at(0).text;
  EXPECT_NE(wat.find("(drop (call $mtir.free"), std::string::npos) << wat;
}

}  // namespace
}  // namespace mtir
