// The statement constructors' normal forms: SeqStmt of an empty list, one statement,
// several, nested sequences and null entries (the builders in core/ops rely on them).
#include <gtest/gtest.h>

#include "ir/stmt.h"
#include "ir/structural_equal.h"

namespace mtir {
namespace {

Stmt eval(int64_t v) { return Evaluate(IntImm(DataType::Int(32), v)); }

TEST(SeqStmt, EmptyListIsNoOpWithTheSpan) {
  Span at;
  at.line = 7;
  Stmt s = SeqStmt({}, at);
  EXPECT_TRUE(is_no_op(s));
  EXPECT_EQ(s->span.line, 7);
}

TEST(SeqStmt, OneStatementIsReturnedAsIs) {
  Stmt one = eval(1);
  EXPECT_EQ(SeqStmt({one}).get(), one.get());
  Stmt loop = For(MakeVar("i", DataType::Int(32)), IntImm(DataType::Int(32), 0), IntImm(DataType::Int(32), 4),
                  ForKind::kSerial, one);
  EXPECT_EQ(SeqStmt({loop}).get(), loop.get());
}

TEST(SeqStmt, SeveralStatementsKeepTheirOrder) {
  Stmt a = eval(1), b = eval(2), c = eval(3);
  Stmt s = SeqStmt({a, b, c});
  const auto* seq = as<SeqStmtNode>(s);
  ASSERT_NE(seq, nullptr);
  ASSERT_EQ(seq->seq.size(), 3u);
  EXPECT_EQ(seq->seq[0].get(), a.get());
  EXPECT_EQ(seq->seq[1].get(), b.get());
  EXPECT_EQ(seq->seq[2].get(), c.get());
}

TEST(SeqStmt, NestedSequencesFlattenAndNullsDrop) {
  Stmt a = eval(1), b = eval(2), c = eval(3);
  Stmt s = SeqStmt({a, SeqStmt({b, nullptr, c}), nullptr});
  const auto* seq = as<SeqStmtNode>(s);
  ASSERT_NE(seq, nullptr);
  ASSERT_EQ(seq->seq.size(), 3u);
  EXPECT_TRUE(structural_equal(s, SeqStmt({a, b, c})));
  // Only nulls around one statement: that statement.
  EXPECT_EQ(SeqStmt({nullptr, b, nullptr}).get(), b.get());
}

}  // namespace
}  // namespace mtir
