// The well-formedness verifier: one test per kind of problem, each checking the
// message and that the diagnostic points at the offending node.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "analysis/well_formed.h"
#include "transform/transform.h"

namespace mtir {
namespace {

using ::testing::HasSubstr;

const DataType i32 = DataType::Int(32);
const DataType i64 = DataType::Int(64);
const DataType f32 = DataType::Float(32);

// Distinct, recognisable spans so a test can tell which node a diagnostic names.
Span at(int line, int col = 1) {
  static auto file = std::make_shared<SourceFile>(SourceFile{"test.tir", ""});
  return Span{file, line, col};
}

struct FuncBuilder {
  std::vector<Var> params;
  std::vector<Buffer> buffers;

  Buffer buffer_param(const std::string& name, DataType t, std::vector<Expr> shape) {
    Buffer b = MakeBuffer(name, t, std::move(shape));
    params.push_back(MakeVar(name, DataType::Handle()));
    buffers.push_back(b);
    return b;
  }
  Var scalar_param(const std::string& name, DataType t) {
    Var v = MakeVar(name, t);
    params.push_back(v);
    buffers.push_back(nullptr);
    return v;
  }
  PrimFunc build(Stmt body, Span span = {}) const {
    auto f = std::make_shared<PrimFuncNode>();
    f->params = params;
    f->param_buffers = buffers;
    f->body = std::move(body);
    f->span = std::move(span);
    return f;
  }
};

IRModule module_of(PrimFunc f, const std::string& name = "f") {
  IRModule m;
  m.functions.emplace_back(name, std::move(f));
  return m;
}

Expr i(int64_t v) { return IntImm(i32, v); }

// Runs the verifier and expects exactly one diagnostic.
Diagnostic only_diag(const IRModule& m) {
  auto diags = check_well_formed(m);
  EXPECT_EQ(diags.size(), 1u) << render_all(diags);
  return diags.empty() ? Diagnostic{} : diags[0];
}

void expect_at(const Diagnostic& d, const Span& s) {
  EXPECT_EQ(d.span.line, s.line) << d.render();
  EXPECT_EQ(d.span.col, s.col) << d.render();
}

TEST(WellFormed, ValidFunctionHasNoDiagnostics) {
  FuncBuilder fb;
  Buffer A = fb.buffer_param("A", f32, {i(4), i(8)});
  Var n = fb.scalar_param("n", i32);
  Var x = MakeVar("i", i32), y = MakeVar("j", i32), t = MakeVar("t", f32);
  Buffer tmp = MakeBuffer("tmp", f32, {i(1)});
  Stmt inner = LetStmt(t, BufferLoad(A, {x, y}), BufferStore(A, Binary(ExprKind::Mul, t, FloatImm(f32, 2.0)), {x, y}));
  Stmt body = For(x, i(0), n, ForKind::kSerial,
                  For(y, i(0), i(8), ForKind::kSerial,
                      IfThenElse(Binary(ExprKind::LT, y, x), inner,
                                 Allocate(tmp, "local", BufferStore(tmp, Call(f32, "exp", {BufferLoad(A, {x, y})}), {i(0)})))));
  EXPECT_TRUE(check_well_formed(module_of(fb.build(body))).empty()) << render_all(check_well_formed(module_of(fb.build(body))));
}

// A function found well-formed is not walked again (the lowering re-checks what
// prepare_model checked); one with a problem is walked, and reported, every time.
TEST(WellFormed, CleanFunctionsAreWalkedOnceBadOnesEveryTime) {
  FuncBuilder fb;
  Buffer B = fb.buffer_param("B", i32, {i(4)});
  Var k = MakeVar("k", i32);
  PrimFunc good = fb.build(For(k, i(0), i(4), ForKind::kSerial, BufferStore(B, k, {k})));
  PrimFunc bad = fb.build(BufferStore(B, i(0), {k}));
  const size_t start = well_formed_functions_walked();
  EXPECT_TRUE(check_well_formed(module_of(good)).empty());
  EXPECT_TRUE(check_well_formed(module_of(good, "g")).empty());
  EXPECT_EQ(well_formed_functions_walked(), start + 1);
  for (int round = 0; round < 2; ++round) EXPECT_EQ(check_well_formed(module_of(bad)).size(), 1u);
  EXPECT_EQ(well_formed_functions_walked(), start + 3);
  // An equal but new function object is walked: only the object checked is known clean.
  EXPECT_TRUE(check_well_formed(module_of(fb.build(good->body))).empty());
  EXPECT_EQ(well_formed_functions_walked(), start + 4);
}

TEST(WellFormed, VariableUsedOutsideItsLoop) {
  FuncBuilder fb;
  Buffer B = fb.buffer_param("B", i32, {i(4)});
  Var k = MakeVar("k", i32, at(2, 9));
  Stmt loop = For(k, i(0), i(4), ForKind::kSerial, BufferStore(B, k, {k}, at(3, 5)), at(2, 5));
  Stmt after = BufferStore(B, i(0), {k}, at(4, 5));
  Diagnostic d = only_diag(module_of(fb.build(SeqStmt({loop, after}))));
  EXPECT_EQ(d.message, "variable 'k' is used outside the scope that defines it");
  expect_at(d, at(4, 5));  // the use, not the definition
}

TEST(WellFormed, LetVariableUsedAfterItsBodyAndUndefinedVariable) {
  FuncBuilder fb;
  Buffer B = fb.buffer_param("B", i32, {i(4)});
  Var x = MakeVar("x", i32);
  Var ghost = MakeVar("ghost", i32);
  Stmt let = LetStmt(x, i(1), BufferStore(B, x, {i(0)}));
  Stmt after = BufferStore(B, Binary(ExprKind::Add, x, ghost, at(7, 12)), {i(1)}, at(7, 5));
  auto diags = check_well_formed(module_of(fb.build(SeqStmt({let, after}))));
  ASSERT_EQ(diags.size(), 2u) << render_all(diags);
  EXPECT_THAT(diags[0].message, HasSubstr("variable 'x' is used outside"));
  EXPECT_THAT(diags[1].message, HasSubstr("variable 'ghost' is used outside"));
  expect_at(diags[0], at(7, 12));  // the enclosing expression
}

TEST(WellFormed, ShapeVariablesAreBoundByTheBufferDeclaration) {
  FuncBuilder fb;
  Var n = MakeVar("n", i32);
  Buffer A = fb.buffer_param("A", f32, {n});
  Var x = MakeVar("i", i32);
  Stmt body = For(x, i(0), n, ForKind::kSerial, BufferStore(A, FloatImm(f32, 0), {x}));
  EXPECT_TRUE(check_well_formed(module_of(fb.build(body))).empty());
}

TEST(WellFormed, VariableBoundTwice) {
  FuncBuilder fb;
  Buffer B = fb.buffer_param("B", i32, {i(4)});
  Var k = MakeVar("k", i32);
  Stmt first = For(k, i(0), i(4), ForKind::kSerial, BufferStore(B, k, {k}), at(2, 5));
  Stmt second = For(k, i(0), i(4), ForKind::kSerial, BufferStore(B, k, {k}), at(4, 5));
  Diagnostic d = only_diag(module_of(fb.build(SeqStmt({first, second}))));
  EXPECT_EQ(d.message, "variable 'k' is defined more than once");
  expect_at(d, at(4, 5));
}

TEST(WellFormed, LetRebindingAParameter) {
  FuncBuilder fb;
  Buffer B = fb.buffer_param("B", i32, {i(4)});
  Var n = fb.scalar_param("n", i32);
  Diagnostic d = only_diag(module_of(fb.build(LetStmt(n, i(3), BufferStore(B, n, {i(0)}), at(3, 5)))));
  EXPECT_THAT(d.message, HasSubstr("'n' is defined more than once"));
  expect_at(d, at(3, 5));
}

TEST(WellFormed, BufferNeitherParameterNorAllocated) {
  FuncBuilder fb;
  fb.buffer_param("A", i32, {i(4)});
  Buffer stray = MakeBuffer("C", i32, {i(4)});
  Diagnostic d = only_diag(module_of(fb.build(BufferStore(stray, i(1), {i(0)}, at(5, 5)))));
  EXPECT_EQ(d.message, "buffer 'C' is neither a parameter nor allocated in an enclosing scope");
  expect_at(d, at(5, 5));
}

TEST(WellFormed, AllocatedBufferUsedAfterItsScope) {
  FuncBuilder fb;
  Buffer A = fb.buffer_param("A", i32, {i(4)});
  Buffer tmp = MakeBuffer("tmp", i32, {i(4)});
  Stmt alloc = Allocate(tmp, "global", BufferStore(tmp, i(1), {i(0)}));
  Stmt after = BufferStore(A, BufferLoad(tmp, {i(0)}, at(6, 12)), {i(0)}, at(6, 5));
  Diagnostic d = only_diag(module_of(fb.build(SeqStmt({alloc, after}))));
  EXPECT_THAT(d.message, HasSubstr("buffer 'tmp' is neither a parameter nor allocated"));
  expect_at(d, at(6, 12));
}

// A break or continue that leaves an allocation is refused at the allocation, and at each
// allocation around it up to the loop it exits; not one in a loop inside the allocation.
// Found in one walk (analysis/well_formed.cc): an AOT main nests thousands of them.
TEST(WellFormed, AllocationsLeftByBreakOrContinue) {
  FuncBuilder fb;
  Buffer A = fb.buffer_param("A", i32, {i(4)});
  Buffer outer = MakeBuffer("outer", i32, {i(1)}), inner = MakeBuffer("inner", i32, {i(1)});
  Buffer in_loop = MakeBuffer("in_loop", i32, {i(1)}), around = MakeBuffer("around", i32, {i(1)});
  Var k = MakeVar("k", i32), n = MakeVar("n", i32);
  auto exit = [](const char* op) { return Evaluate(Call(i32, op, {})); };
  // for k: outer { inner { continue } }      both left by the continue
  // around { for n: in_loop { break } }     in_loop left; around is not (the loop is inside)
  Stmt body = SeqStmt({
      For(k, i(0), i(4), ForKind::kSerial,
          Allocate(outer, "global", Allocate(inner, "global", exit("continue_loop"), at(3)), at(2))),
      Allocate(around, "global",
               For(n, i(0), i(4), ForKind::kSerial, Allocate(in_loop, "global", exit("break_loop"), at(5))), at(4)),
      BufferStore(A, i(1), {i(0)}),
  });
  auto diags = check_well_formed(module_of(fb.build(body)));
  ASSERT_EQ(diags.size(), 3u) << render_all(diags);
  const char* names[] = {"outer", "inner", "in_loop"};
  const int lines[] = {2, 3, 5};
  for (int d = 0; d < 3; ++d) {
    EXPECT_THAT(diags[d].message, HasSubstr(std::string("leaves the allocation of '") + names[d] + "'"));
    EXPECT_EQ(diags[d].span.line, lines[d]);
  }
}

TEST(WellFormed, BinaryOperandTypesDiffer) {
  FuncBuilder fb;
  Buffer B = fb.buffer_param("B", i32, {i(4)});
  Var x = MakeVar("x", i32);
  Expr bad = Binary(ExprKind::Add, x, FloatImm(f32, 1.5, at(3, 16)), at(3, 14));
  Diagnostic d = only_diag(module_of(fb.build(LetStmt(x, i(0), BufferStore(B, bad, {i(0)})))));
  EXPECT_EQ(d.message, "operands of + have different types: int32 and float32");
  expect_at(d, at(3, 14));
}

TEST(WellFormed, ComparisonOperandTypesDiffer) {
  FuncBuilder fb;
  Buffer B = fb.buffer_param("B", i32, {i(4)});
  Expr cond = Binary(ExprKind::LT, i(1), IntImm(i64, 2), at(2, 8));
  Diagnostic d = only_diag(module_of(fb.build(IfThenElse(cond, BufferStore(B, i(1), {i(0)})))));
  EXPECT_EQ(d.message, "operands of < have different types: int32 and int64");
  expect_at(d, at(2, 8));
}

TEST(WellFormed, ArithmeticOnBool) {
  FuncBuilder fb;
  Buffer B = fb.buffer_param("B", i32, {i(4)});
  Expr bad = Binary(ExprKind::Add, Bool(true), Bool(false), at(2, 3));
  Diagnostic d = only_diag(module_of(fb.build(Evaluate(bad))));
  EXPECT_EQ(d.message, "operands of + must be numbers, not bool and bool");
  (void)B;
}

TEST(WellFormed, LogicNeedsBool) {
  FuncBuilder fb;
  Buffer B = fb.buffer_param("B", i32, {i(4)});
  Expr bad_and = Binary(ExprKind::And, i(1), Bool(true), at(2, 4));
  Expr bad_not = Not(i(0), at(3, 4));
  auto diags = check_well_formed(module_of(fb.build(SeqStmt({
      IfThenElse(bad_and, BufferStore(B, i(1), {i(0)})),
      IfThenElse(bad_not, BufferStore(B, i(1), {i(0)})),
  }))));
  ASSERT_EQ(diags.size(), 2u) << render_all(diags);
  EXPECT_EQ(diags[0].message, "operands of 'and' must be bool, not int32 and bool");
  expect_at(diags[0], at(2, 4));
  EXPECT_EQ(diags[1].message, "operand of 'not' must be bool, not int32");
  expect_at(diags[1], at(3, 4));
}

TEST(WellFormed, ConditionsMustBeBool) {
  FuncBuilder fb;
  Buffer B = fb.buffer_param("B", i32, {i(4)});
  Stmt store = BufferStore(B, Select(IntImm(i32, 1, at(4, 20)), i(1), i(2), at(4, 10)), {i(0)});
  Stmt body = SeqStmt({
      IfThenElse(IntImm(i32, 1, at(2, 8)), BufferStore(B, i(1), {i(0)})),
      AssertStmt(IntImm(i32, 1, at(3, 12)), "msg", store),
  });
  auto diags = check_well_formed(module_of(fb.build(body)));
  ASSERT_EQ(diags.size(), 3u) << render_all(diags);
  EXPECT_EQ(diags[0].message, "condition of 'if' must be bool, not int32");
  expect_at(diags[0], at(2, 8));
  EXPECT_EQ(diags[1].message, "condition of 'assert' must be bool, not int32");
  expect_at(diags[1], at(3, 12));
  EXPECT_EQ(diags[2].message, "condition of T.Select must be bool, not int32");
  expect_at(diags[2], at(4, 20));
}

TEST(WellFormed, SelectBranchesDiffer) {
  FuncBuilder fb;
  Buffer B = fb.buffer_param("B", i32, {i(4)});
  Expr sel = Select(Bool(true), i(1), FloatImm(f32, 2), at(2, 9));
  Diagnostic d = only_diag(module_of(fb.build(Evaluate(sel))));
  EXPECT_EQ(d.message, "branches of T.Select have different types: int32 and float32");
  (void)B;
}

TEST(WellFormed, StoredValueTypeDiffersFromBuffer) {
  FuncBuilder fb;
  Buffer B = fb.buffer_param("B", i32, {i(4)});
  Diagnostic d = only_diag(module_of(fb.build(BufferStore(B, FloatImm(f32, 1), {i(0)}, at(3, 5)))));
  EXPECT_EQ(d.message, "value stored into 'B' has type float32, but the buffer holds int32");
  expect_at(d, at(3, 5));
}

TEST(WellFormed, IndexCountDiffersFromRank) {
  FuncBuilder fb;
  Buffer B = fb.buffer_param("B", i32, {i(4), i(4)});
  Diagnostic d = only_diag(module_of(fb.build(BufferStore(B, i(1), {i(0)}, at(3, 5)))));
  EXPECT_EQ(d.message, "buffer 'B' has 2 dimension(s) but is accessed with 1 index(es)");
  expect_at(d, at(3, 5));
}

TEST(WellFormed, IndexNotInteger) {
  FuncBuilder fb;
  Buffer B = fb.buffer_param("B", i32, {i(4)});
  Diagnostic d = only_diag(module_of(fb.build(BufferStore(B, i(1), {FloatImm(f32, 0, at(3, 7))}, at(3, 5)))));
  EXPECT_EQ(d.message, "index 0 of buffer 'B' must be an integer, not float32");
  expect_at(d, at(3, 7));
}

TEST(WellFormed, LoopBoundsMustHaveTheLoopVariableType) {
  FuncBuilder fb;
  Buffer B = fb.buffer_param("B", i32, {i(4)});
  Var x = MakeVar("i", i32), y = MakeVar("j", i32), z = MakeVar("z", f32);
  Stmt body = SeqStmt({
      For(x, i(0), IntImm(i64, 4, at(2, 20)), ForKind::kSerial, BufferStore(B, x, {x}), at(2, 5)),
      For(y, FloatImm(f32, 0, at(3, 20)), i(4), ForKind::kSerial, BufferStore(B, y, {y}), at(3, 5)),
      For(z, FloatImm(f32, 0), FloatImm(f32, 4), ForKind::kSerial, NoOp(), at(4, 5)),
  });
  auto diags = check_well_formed(module_of(fb.build(body)));
  ASSERT_EQ(diags.size(), 3u) << render_all(diags);
  EXPECT_EQ(diags[0].message, "loop extent of 'i' has type int64, but the loop variable is int32");
  expect_at(diags[0], at(2, 20));
  EXPECT_EQ(diags[1].message, "loop start of 'j' has type float32, but the loop variable is int32");
  expect_at(diags[1], at(3, 20));
  EXPECT_EQ(diags[2].message, "loop variable 'z' must be an integer, not float32");
  expect_at(diags[2], at(4, 5));
}

TEST(WellFormed, LetValueTypeDiffers) {
  FuncBuilder fb;
  Buffer B = fb.buffer_param("B", i32, {i(4)});
  Var x = MakeVar("x", i32);
  Diagnostic d = only_diag(module_of(fb.build(LetStmt(x, FloatImm(f32, 1), BufferStore(B, x, {i(0)}), at(2, 5)))));
  EXPECT_EQ(d.message, "value of 'x' has type float32, but the variable is int32");
  expect_at(d, at(2, 5));
}

TEST(WellFormed, CallChecks) {
  FuncBuilder fb;
  Buffer A = fb.buffer_param("A", f32, {i(4)});
  Buffer B = fb.buffer_param("B", i32, {i(4)});
  Stmt body = SeqStmt({
      Evaluate(Call(f32, "frobnicate", {FloatImm(f32, 1)}, {}, at(2, 5))),
      BufferStore(A, Call(f32, "exp", {FloatImm(f32, 1), FloatImm(f32, 2)}, {}, at(3, 12)), {i(0)}),
      BufferStore(B, Call(i32, "sqrt", {IntImm(i32, 4, at(4, 19))}, {}, at(4, 12)), {i(0)}),
      BufferStore(B, Call(i32, "abs", {i(-4)}), {i(1)}),  // abs is defined on integers
      BufferStore(A, Call(f32, "pow", {FloatImm(f32, 2), FloatImm(DataType::Float(64), 3)}, {}, at(6, 12)), {i(0)}),
      BufferStore(B, Call(i32, "if_then_else", {i(1), i(2), i(3)}, {}, at(7, 12)), {i(0)}),
  });
  auto diags = check_well_formed(module_of(fb.build(body)));
  ASSERT_EQ(diags.size(), 5u) << render_all(diags);
  EXPECT_EQ(diags[0].message, "unknown intrinsic 'frobnicate'");
  expect_at(diags[0], at(2, 5));
  EXPECT_EQ(diags[1].message, "T.exp takes 1 argument(s), got 2");
  expect_at(diags[1], at(3, 12));
  EXPECT_EQ(diags[2].message, "T.sqrt is only defined on floats, not int32");
  expect_at(diags[2], at(4, 19));
  EXPECT_EQ(diags[3].message, "arguments of T.pow have different types: float32 and float64");
  EXPECT_EQ(diags[4].message, "condition of T.if_then_else must be bool, not int32");
}

TEST(WellFormed, CastToOrFromHandle) {
  FuncBuilder fb;
  Buffer B = fb.buffer_param("B", i32, {i(4)});
  Stmt body = SeqStmt({
      Evaluate(Cast(DataType::Handle(), i(1), at(2, 5))),
      BufferStore(B, Cast(i32, B->data, at(3, 12)), {i(0)}),
      Evaluate(Cast(DataType::Void(), i(1), at(4, 5))),
  });
  auto diags = check_well_formed(module_of(fb.build(body)));
  ASSERT_EQ(diags.size(), 3u) << render_all(diags);
  EXPECT_EQ(diags[0].message, "cannot cast int32 to handle");
  expect_at(diags[0], at(2, 5));
  EXPECT_EQ(diags[1].message, "cannot cast handle to int32");
  expect_at(diags[1], at(3, 12));
  EXPECT_EQ(diags[2].message, "cannot cast int32 to void");
}

TEST(WellFormed, DuplicateFunctionNames) {
  FuncBuilder fb;
  Buffer B = fb.buffer_param("B", i32, {i(4)});
  IRModule m;
  m.functions.emplace_back("f", fb.build(BufferStore(B, i(1), {i(0)}), at(1, 1)));
  FuncBuilder fb2;
  Buffer B2 = fb2.buffer_param("B", i32, {i(4)});
  m.functions.emplace_back("f", fb2.build(BufferStore(B2, i(1), {i(0)}), at(9, 1)));
  Diagnostic d = only_diag(m);
  EXPECT_EQ(d.message, "function 'f' is defined more than once in the module");
  expect_at(d, at(9, 1));
}

TEST(WellFormed, ReportsEveryProblemNotJustTheFirst) {
  FuncBuilder fb;
  Buffer B = fb.buffer_param("B", i32, {i(4)});
  Var ghost = MakeVar("ghost", i32);
  Stmt body = SeqStmt({
      BufferStore(B, FloatImm(f32, 1), {i(0)}),
      BufferStore(B, ghost, {i(0)}),
      BufferStore(B, i(1), {i(0), i(1)}),
  });
  EXPECT_EQ(check_well_formed(module_of(fb.build(body))).size(), 3u);
}

TEST(VerifyWellFormedPass, ReturnsModuleUnchangedWhenValid) {
  FuncBuilder fb;
  Buffer B = fb.buffer_param("B", i32, {i(4)});
  IRModule m = module_of(fb.build(BufferStore(B, i(1), {i(0)})));
  IRModule out = VerifyWellFormed().run(m);
  ASSERT_EQ(out.functions.size(), 1u);
  EXPECT_EQ(out.functions[0].second, m.functions[0].second);
  EXPECT_EQ(VerifyWellFormed().name, "verify_well_formed");
}

TEST(VerifyWellFormedPass, ThrowsAllDiagnostics) {
  FuncBuilder fb;
  Buffer B = fb.buffer_param("B", i32, {i(4)});
  Var ghost = MakeVar("ghost", i32);
  IRModule m = module_of(fb.build(SeqStmt({BufferStore(B, FloatImm(f32, 1), {i(0)}), BufferStore(B, ghost, {i(0)})})));
  try {
    VerifyWellFormed().run(m);
    FAIL() << "expected a DiagnosticError";
  } catch (const DiagnosticError& e) {
    ASSERT_EQ(e.diagnostics().size(), 2u);
    EXPECT_THAT(e.diagnostics()[0].message, HasSubstr("value stored into 'B'"));
    EXPECT_THAT(e.diagnostics()[1].message, HasSubstr("variable 'ghost'"));
  }
}

}  // namespace
}  // namespace mtir
