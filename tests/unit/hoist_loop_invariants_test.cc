// hoist_loop_invariants: every program of the corpus computes bit-identical results
// before and after the pass (in the interpreter, the oracle), the pass really moves
// something out of the loops that have invariants, and what it must never move stays.
// The before/after text cases are in tests/transform/hoist_loop_invariants/.
#include <gtest/gtest.h>

#include "ir/structural_equal.h"
#include "ir/visitor.h"
#include "program_corpus.h"
#include "script/parser.h"
#include "transform/transform.h"

namespace mtir {
namespace {

using namespace testing_corpus;

// The loads, calls and integer divisions by a variable that sit inside some loop.
struct InLoopCounts : Visitor {
  int depth = 0;
  int loads = 0, calls = 0, var_divisions = 0, lets_outside_loops = 0;
  void visit_For(const ForNode* op) override {
    ++depth;
    Visitor::visit_For(op);
    --depth;
  }
  void visit_LetStmt(const LetStmtNode* op) override {
    if (depth == 0) ++lets_outside_loops;
    Visitor::visit_LetStmt(op);
  }
  void visit_BufferLoad(const BufferLoadNode* op) override {
    if (depth > 0) ++loads;
    Visitor::visit_BufferLoad(op);
  }
  void visit_Call(const CallNode* op) override {
    if (depth > 0) ++calls;
    Visitor::visit_Call(op);
  }
  void visit_FloorDiv(const FloorDivNode* op) override {
    if (depth > 0 && !as_const_int(op->b)) ++var_divisions;
    Visitor::visit_FloorDiv(op);
  }
};

InLoopCounts counts(const IRModule& m) {
  InLoopCounts c;
  for (const auto& [name, f] : m.functions) c.visit_func(f);
  return c;
}

class HoistCorpus : public ::testing::TestWithParam<fs::path> {};

TEST_P(HoistCorpus, ResultsAreBitIdenticalInTheInterpreter) {
  const fs::path path = GetParam();
  const std::string text = read(path);
  IRModule m = parse_module_or_throw(text, path.string());
  IRModule hoisted = HoistLoopInvariants().run(m);
  const auto scalars = scalar_args(text);
  for (const auto& [name, f] : m.functions) {
    SCOPED_TRACE(path.filename().string() + ": " + name);
    Inputs before = make_inputs(f, scalars, 1234), after = make_inputs(f, scalars, 1234);
    interpret(m, name, before.args);
    interpret(hoisted, name, after.args);
    for (size_t i = 0; i < f->params.size(); ++i) {
      if (f->param_buffers[i]) {
        EXPECT_EQ(after.arrays[i].data, before.arrays[i].data) << f->param_buffers[i]->name;
      }
    }
  }
  // Nothing that reads memory or calls out leaves a loop.
  InLoopCounts b = counts(m), a = counts(hoisted);
  EXPECT_EQ(a.loads, b.loads);
  EXPECT_EQ(a.calls, b.calls);
  EXPECT_EQ(a.var_divisions, b.var_divisions);
}

INSTANTIATE_TEST_SUITE_P(Programs, HoistCorpus, ::testing::ValuesIn(corpus()),
                         [](const ::testing::TestParamInfo<fs::path>& info) { return info.param.stem().string(); });

TEST(HoistLoopInvariants, MovesAddressArithmeticAndKeepsTheRest) {
  IRModule m = parse_module_or_throw(R"(
@T.prim_func
def f(A: T.Buffer((64,), "int32"), n: T.int32, d: T.int32):
    for i in range(8):
        A[i] = A[n * 4 + 1] + n // d + T.Cast("int32", T.float32(2) * T.Cast("float32", n))
)",
                                     "inline.tir");
  IRModule out = HoistLoopInvariants().run(m);
  InLoopCounts c = counts(out);
  EXPECT_EQ(c.lets_outside_loops, 1);  // n * 4 + 1, nothing else
  EXPECT_EQ(c.loads, 1);
  EXPECT_EQ(c.var_divisions, 1);  // n // d: d may be 0
  const auto* let = as<LetStmtNode>(out.functions[0].second->body);
  ASSERT_NE(let, nullptr);
  EXPECT_TRUE(same_expr(let->value, Binary(ExprKind::Add, Binary(ExprKind::Mul, m.functions[0].second->params[1],
                                                                  IntImm(DataType::Int(32), 4)),
                                           IntImm(DataType::Int(32), 1))));
}

TEST(HoistLoopInvariants, LoopWithoutInvariantsIsTheSameObject) {
  IRModule m = parse_module_or_throw(R"(
@T.prim_func
def f(A: T.Buffer((8,), "int32")):
    for i in range(8):
        A[i] = A[i] * 2 + i
)",
                                     "inline.tir");
  IRModule out = HoistLoopInvariants().run(m);
  EXPECT_EQ(out.functions[0].second, m.functions[0].second);
}

}  // namespace
}  // namespace mtir
