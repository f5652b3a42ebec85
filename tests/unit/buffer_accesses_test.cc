// analysis/buffer_accesses.h: pointers_used, the question the memory planner and
// call_overlap both ask of a statement (may it reach this memory?).
#include "analysis/buffer_accesses.h"

#include <gtest/gtest.h>

#include <string>

#include "script/parser.h"

namespace mtir {
namespace {

std::set<std::string> names(const std::set<const VarNode*>& vars) {
  std::set<std::string> out;
  for (const VarNode* v : vars) out.insert(v->name);
  return out;
}

TEST(PointersUsed, BuffersDataAndVariablesOfTheStatementOnly) {
  const ParseResult parsed = parse_module(R"(@T.prim_func
def f(a: T.handle, b: T.handle, c: T.handle, n: T.int32):
    A = T.match_buffer(a, (8,), "int8")
    B = T.match_buffer(b, (8,), "int8")
    C = T.match_buffer(c, (8,), "int8")
    for i in range(n):
        A[i] = B[i]
    C[0] = T.int8(1)
)");
  ASSERT_TRUE(parsed.ok());
  const PrimFunc f = parsed.module->functions.at(0).second;
  const auto* seq = as<SeqStmtNode>(f->body);
  ASSERT_NE(seq, nullptr);
  const std::set<std::string> loop = names(pointers_used(seq->seq.at(0)));
  EXPECT_TRUE(loop.count("n") && loop.count("i"));
  EXPECT_EQ(loop.count("C") + loop.count("c"), 0u);
  EXPECT_EQ(names(pointers_used(seq->seq.at(1))).size(), 1u);  // C's data pointer alone
}

}  // namespace
}  // namespace mtir
