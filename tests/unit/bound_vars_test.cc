// bound_inside: the variables a statement binds (loops, let statements, T.Let, allocations),
// which unroll_loops and hoist_loop_invariants ask of a loop body.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "analysis/bound_vars.h"
#include "script/parser.h"

namespace mtir {
namespace {

std::set<std::string> names(const std::unordered_set<const VarNode*>& vars) {
  std::set<std::string> out;
  for (const VarNode* v : vars) out.insert(v->name);
  return out;
}

TEST(BoundInside, LoopsLetsLetExpressionsAndAllocations) {
  IRModule m = parse_module_or_throw(R"(
@T.prim_func
def f(A: T.Buffer((4,), "int32"), n: T.int32):
    for i in range(4):
        x: T.int32 = A[i] + n
        Tmp = T.allocate([2], "int32", "global")
        for j in range(2):
            Tmp[j] = T.Let(y * 2, where={y: x + j})
        A[i] = Tmp[0] + Tmp[1]
)",
                                     "inline.tir");
  const Stmt& body = m.functions[0].second->body;
  EXPECT_EQ(names(bound_inside(body)), (std::set<std::string>{"i", "x", "Tmp_data", "j", "y"}));
  // The loop body alone binds everything but the loop's own variable; an allocation binds
  // its data pointer.
  const auto* loop = as<ForNode>(body);
  ASSERT_NE(loop, nullptr);
  EXPECT_EQ(names(bound_inside(loop->body)), (std::set<std::string>{"x", "Tmp_data", "j", "y"}));
}

TEST(BoundInside, StoresAloneBindNothing) {
  IRModule m = parse_module_or_throw(R"(
@T.prim_func
def f(A: T.Buffer((4,), "int32"), n: T.int32):
    A[0] = n
    A[1] = A[0] + n
)",
                                     "inline.tir");
  EXPECT_TRUE(bound_inside(m.functions[0].second->body).empty());
}

}  // namespace
}  // namespace mtir
