// Simplify: folding tables (with C's wrap-around and division rules), identities,
// what must NOT fold, and the statement-level dead-code rules.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "analysis/int_bound.h"
#include "interp/interpreter.h"
#include "ir/structural_equal.h"
#include "ir/substitute.h"
#include "transform/transform.h"

namespace mtir {
namespace {

const DataType i8 = DataType::Int(8);
const DataType i32 = DataType::Int(32);
const DataType i64 = DataType::Int(64);
const DataType u8 = DataType::UInt(8);
const DataType u32 = DataType::UInt(32);
const DataType f32 = DataType::Float(32);
const DataType f64 = DataType::Float(64);

Expr i(int64_t v) { return IntImm(i32, v); }
Expr f(double v) { return FloatImm(f32, v); }
Expr add(Expr a, Expr b) { return Binary(ExprKind::Add, a, b); }
Expr sub(Expr a, Expr b) { return Binary(ExprKind::Sub, a, b); }
Expr mul(Expr a, Expr b) { return Binary(ExprKind::Mul, a, b); }

PrimFunc func_of(Stmt body, std::vector<Buffer> buffers = {}) {
  auto fn = std::make_shared<PrimFuncNode>();
  for (const auto& b : buffers) {
    fn->params.push_back(MakeVar(b->name, DataType::Handle()));
    fn->param_buffers.push_back(b);
  }
  fn->body = std::move(body);
  return fn;
}

IRModule module_of(PrimFunc fn) {
  IRModule m;
  m.functions.emplace_back("f", std::move(fn));
  return m;
}

Stmt simplify_stmt(const Stmt& s) { return Simplify().run(module_of(func_of(s))).functions[0].second->body; }

// Simplifies `e` as the value stored into a one-element buffer of its type.
Expr simplify_expr(const Expr& e) {
  Buffer out = MakeBuffer("out", e->dtype, {i(1)});
  Stmt body = simplify_stmt(BufferStore(out, e, {i(0)}));
  const auto* store = as<BufferStoreNode>(body);
  EXPECT_NE(store, nullptr);
  return store ? store->value : nullptr;
}

// ---- folding tables ------------------------------------------------------------

struct IntCase {
  ExprKind kind;
  DataType type;
  int64_t a, b;
  int64_t expected;
};

TEST(SimplifyFold, IntegerArithmeticFollowsC) {
  const int64_t kMin32 = std::numeric_limits<int32_t>::min();
  const int64_t kMax32 = std::numeric_limits<int32_t>::max();
  const IntCase cases[] = {
      {ExprKind::Add, i32, 3, 4, 7},
      {ExprKind::Add, i32, kMax32, 1, kMin32},  // wraps
      {ExprKind::Sub, i32, kMin32, 1, kMax32},
      {ExprKind::Mul, i32, 65536, 65536, 0},
      {ExprKind::Mul, i8, 16, 16, 0},
      {ExprKind::Add, i8, 127, 1, -128},
      {ExprKind::Add, u8, 200, 100, 44},
      {ExprKind::Sub, u8, 0, 1, 255},
      {ExprKind::Div, i32, 7, 2, 3},
      {ExprKind::Div, i32, -7, 2, -3},  // truncates toward zero
      {ExprKind::Mod, i32, -7, 2, -1},  // sign of the dividend
      {ExprKind::Mod, i32, 7, -2, 1},
      {ExprKind::FloorDiv, i32, -7, 2, -4},  // rounds toward -inf
      {ExprKind::FloorDiv, i32, 7, -2, -4},
      {ExprKind::FloorDiv, i32, -8, 2, -4},
      {ExprKind::FloorMod, i32, -7, 2, 1},  // sign of the divisor
      {ExprKind::FloorMod, i32, 7, -2, -1},
      {ExprKind::FloorMod, i32, -8, 2, 0},
      {ExprKind::Div, i8, -128, -1, -128},  // overflow wraps back to int8
      {ExprKind::Div, u32, 0xFFFFFFFF, 2, 0x7FFFFFFF},  // unsigned division
      {ExprKind::Min, i32, -3, 2, -3},
      {ExprKind::Max, i32, -3, 2, 2},
      {ExprKind::Max, u32, 0xFFFFFFFF, 1, 0xFFFFFFFF},  // unsigned order
      {ExprKind::Add, i64, std::numeric_limits<int64_t>::max(), 1, std::numeric_limits<int64_t>::min()},
  };
  for (const auto& c : cases) {
    Expr r = simplify_expr(Binary(c.kind, IntImm(c.type, c.a), IntImm(c.type, c.b)));
    const int64_t* v = as_const_int(r);
    ASSERT_NE(v, nullptr) << expr_kind_name(c.kind) << " " << c.a << ", " << c.b;
    EXPECT_EQ(*v, wrap_int(c.type, c.expected)) << expr_kind_name(c.kind) << " " << c.type.str() << " " << c.a << ", " << c.b;
    EXPECT_EQ(r->dtype, c.type);
  }
}

TEST(SimplifyFold, ComparisonsGiveBool) {
  struct Case {
    ExprKind kind;
    DataType type;
    int64_t a, b;
    bool expected;
  } cases[] = {
      {ExprKind::LT, i32, -1, 1, true},  {ExprKind::LT, u32, 0xFFFFFFFF, 1, false},
      {ExprKind::LE, i32, 2, 2, true},   {ExprKind::GT, i32, 2, 2, false},
      {ExprKind::GE, i32, 3, 2, true},   {ExprKind::EQ, i32, 3, 3, true},
      {ExprKind::NE, i32, 3, 3, false},
  };
  for (const auto& c : cases) {
    Expr r = simplify_expr(Binary(c.kind, IntImm(c.type, c.a), IntImm(c.type, c.b)));
    ASSERT_NE(as_const_int(r), nullptr);
    EXPECT_TRUE(r->dtype.is_bool());
    EXPECT_EQ(*as_const_int(r), c.expected ? 1 : 0) << expr_kind_name(c.kind) << " " << c.a << " " << c.b;
  }
}

TEST(SimplifyFold, DivisionByZeroIsLeftForTheRuntime) {
  for (ExprKind k : {ExprKind::Div, ExprKind::Mod, ExprKind::FloorDiv, ExprKind::FloorMod}) {
    Expr e = Binary(k, i(7), i(0));
    EXPECT_EQ(simplify_expr(e), e) << expr_kind_name(k);
  }
  Expr fe = Binary(ExprKind::Div, f(1), f(0));
  EXPECT_EQ(simplify_expr(fe), fe);
  // INT64_MIN / -1 overflows the arithmetic itself: not folded either.
  Expr big = Binary(ExprKind::Div, IntImm(i64, std::numeric_limits<int64_t>::min()), IntImm(i64, -1));
  EXPECT_EQ(simplify_expr(big), big);
}

TEST(SimplifyFold, Float32IsRoundedToFloat) {
  double a = static_cast<double>(0.1f), b = static_cast<double>(0.2f);
  Expr r = simplify_expr(add(f(a), f(b)));
  const auto* imm = as<FloatImmNode>(r);
  ASSERT_NE(imm, nullptr);
  EXPECT_EQ(imm->value, static_cast<double>(0.1f + 0.2f));
  EXPECT_NE(imm->value, a + b);  // the double sum differs: proves rounding happened
  Expr r64 = simplify_expr(add(FloatImm(f64, 0.1), FloatImm(f64, 0.2)));
  EXPECT_EQ(as<FloatImmNode>(r64)->value, 0.1 + 0.2);
  EXPECT_EQ(as<FloatImmNode>(simplify_expr(Binary(ExprKind::Div, f(1), f(4))))->value, 0.25);
}

TEST(SimplifyFold, NaNSensitiveFloatsAreNotFoldedWrongly) {
  double nan = std::numeric_limits<double>::quiet_NaN();
  Expr mn = Binary(ExprKind::Min, f(nan), f(1));
  EXPECT_EQ(simplify_expr(mn), mn);
  // Comparisons with NaN are exact in IEEE: all ordered comparisons are false.
  EXPECT_EQ(*as_const_int(simplify_expr(Binary(ExprKind::LT, f(nan), f(1)))), 0);
  EXPECT_EQ(*as_const_int(simplify_expr(Binary(ExprKind::NE, f(nan), f(nan)))), 1);
  EXPECT_EQ(as<FloatImmNode>(simplify_expr(Binary(ExprKind::Max, f(-1), f(2))))->value, 2.0);
}

TEST(SimplifyFold, Casts) {
  EXPECT_EQ(*as_const_int(simplify_expr(Cast(u8, i(300)))), 44);
  EXPECT_EQ(*as_const_int(simplify_expr(Cast(i8, i(200)))), -56);
  EXPECT_EQ(*as_const_int(simplify_expr(Cast(i32, f(3.75)))), 3);
  EXPECT_EQ(*as_const_int(simplify_expr(Cast(i32, f(-3.75)))), -3);  // truncation
  EXPECT_EQ(*as_const_int(simplify_expr(Cast(DataType::Bool(), i(5)))), 1);
  EXPECT_EQ(as<FloatImmNode>(simplify_expr(Cast(f32, i(16777217))))->value, 16777216.0);  // rounded to float
  EXPECT_EQ(as<FloatImmNode>(simplify_expr(Cast(f32, IntImm(u32, 0xFFFFFFFF))))->value, 4294967296.0);
  const DataType u64 = DataType::UInt(64);
  EXPECT_EQ(static_cast<uint64_t>(*as_const_int(simplify_expr(Cast(u64, FloatImm(f64, 1.8446744073709550e19))))),
            18446744073709549568ull);  // above INT64_MAX, still exact
  EXPECT_EQ(*as_const_int(simplify_expr(Cast(u8, f(255.5)))), 255);
  // Out-of-range and NaN conversions are undefined in C: left alone.
  Expr too_big = Cast(i32, f(1e10));
  EXPECT_EQ(simplify_expr(too_big), too_big);
  Expr negative_to_unsigned = Cast(u8, f(-1));
  EXPECT_EQ(simplify_expr(negative_to_unsigned), negative_to_unsigned);
  Expr past_u8 = Cast(u8, f(256));
  EXPECT_EQ(simplify_expr(past_u8), past_u8);
  Expr nan = Cast(i32, f(std::numeric_limits<double>::quiet_NaN()));
  EXPECT_EQ(simplify_expr(nan), nan);
  Var x = MakeVar("x", i32);
  EXPECT_EQ(simplify_expr(Cast(i32, x)), x);  // a cast to its own type is no cast
}

TEST(SimplifyFold, LogicAndNot) {
  Var c = MakeVar("c", DataType::Bool());
  auto logic = [](ExprKind k, Expr a, Expr b) { return Binary(k, a, b); };
  EXPECT_EQ(simplify_expr(logic(ExprKind::And, Bool(true), c)), c);
  EXPECT_EQ(simplify_expr(logic(ExprKind::And, c, Bool(true))), c);
  EXPECT_EQ(*as_const_int(simplify_expr(logic(ExprKind::And, Bool(false), c))), 0);
  EXPECT_EQ(*as_const_int(simplify_expr(logic(ExprKind::Or, c, Bool(true)))), 1);
  EXPECT_EQ(simplify_expr(logic(ExprKind::Or, Bool(false), c)), c);
  EXPECT_EQ(*as_const_int(simplify_expr(logic(ExprKind::Or, Bool(false), Bool(false)))), 0);
  EXPECT_EQ(*as_const_int(simplify_expr(Not(Bool(true)))), 0);
  EXPECT_EQ(simplify_expr(Not(Not(c))), c);
  // 1 < 2 and c  ->  c: folding below enables folding above.
  EXPECT_EQ(simplify_expr(logic(ExprKind::And, Binary(ExprKind::LT, i(1), i(2)), c)), c);
}

TEST(SimplifyFold, SelectAndIfThenElseWithConstantCondition) {
  Var x = MakeVar("x", i32), y = MakeVar("y", i32);
  EXPECT_EQ(simplify_expr(Select(Bool(true), x, y)), x);
  EXPECT_EQ(simplify_expr(Select(Bool(false), x, y)), y);
  EXPECT_EQ(simplify_expr(Call(i32, "if_then_else", {Bool(false), x, y})), y);
  // if_then_else is lazy, so even a side with a possible division by zero may go.
  EXPECT_EQ(simplify_expr(Call(i32, "if_then_else", {Bool(true), x, Binary(ExprKind::Div, i(1), y)})), x);
  // Select evaluates both sides: the division must stay.
  Expr keep = Select(Bool(true), x, Binary(ExprKind::Div, i(1), y));
  EXPECT_EQ(simplify_expr(keep), keep);
}

TEST(SimplifyFold, FoldedConstantKeepsTheSpanOfTheExpression) {
  auto file = std::make_shared<SourceFile>(SourceFile{"t.tir", ""});
  Span s{file, 3, 14};
  Expr r = simplify_expr(Binary(ExprKind::Add, i(3), i(4), s));
  EXPECT_EQ(r->span.line, 3);
  EXPECT_EQ(r->span.col, 14);
}

// ---- identities ------------------------------------------------------------------

TEST(SimplifyIdentity, IntegerIdentities) {
  Var x = MakeVar("x", i32);
  EXPECT_EQ(simplify_expr(add(x, i(0))), x);
  EXPECT_EQ(simplify_expr(add(i(0), x)), x);
  EXPECT_EQ(simplify_expr(sub(x, i(0))), x);
  EXPECT_EQ(simplify_expr(mul(x, i(1))), x);
  EXPECT_EQ(simplify_expr(mul(i(1), x)), x);
  EXPECT_EQ(*as_const_int(simplify_expr(mul(x, i(0)))), 0);
  EXPECT_EQ(*as_const_int(simplify_expr(mul(i(0), x))), 0);
  EXPECT_EQ(*as_const_int(simplify_expr(sub(x, x))), 0);
  EXPECT_EQ(simplify_expr(Binary(ExprKind::Div, x, i(1))), x);
  EXPECT_EQ(simplify_expr(Binary(ExprKind::FloorDiv, x, i(1))), x);
  EXPECT_EQ(*as_const_int(simplify_expr(Binary(ExprKind::FloorMod, x, i(1)))), 0);
  EXPECT_EQ(*as_const_int(simplify_expr(Binary(ExprKind::Mod, x, i(1)))), 0);
  EXPECT_EQ(simplify_expr(Binary(ExprKind::Min, x, x)), x);
  EXPECT_EQ(simplify_expr(Binary(ExprKind::Max, x, x)), x);
  // x - x also for equal but distinct trees.
  EXPECT_EQ(*as_const_int(simplify_expr(sub(add(x, i(2)), add(x, i(2))))), 0);
}

TEST(SimplifyIdentity, FloatOnlyExactIdentities) {
  Var x = MakeVar("x", f32);
  EXPECT_EQ(simplify_expr(mul(x, f(1))), x);
  EXPECT_EQ(simplify_expr(mul(f(1), x)), x);
  EXPECT_EQ(simplify_expr(Binary(ExprKind::Div, x, f(1))), x);
  // x * 0.0 is NaN for x = inf or NaN, x + 0.0 is +0.0 for x = -0.0, x - x is NaN for inf.
  for (Expr e : {mul(x, f(0)), add(x, f(0)), sub(x, x), Binary(ExprKind::Div, x, f(0))})
    EXPECT_EQ(simplify_expr(e), e) << expr_kind_name(e->kind);
}

TEST(SimplifyIdentity, DoesNotDropSideEffectsOrRuntimeErrors) {
  Var x = MakeVar("x", i32), y = MakeVar("y", i32);
  Expr ext = Call(i32, "call_extern", {StringImm("int32"), StringImm("tick")});
  Expr by_zero = Binary(ExprKind::Div, x, i(0));
  Expr maybe_zero = Binary(ExprKind::FloorDiv, x, y);
  for (Expr e : {mul(ext, i(0)), sub(ext, ext), mul(by_zero, i(0)), mul(i(0), maybe_zero)})
    EXPECT_EQ(simplify_expr(e), e);
  // A known non-zero divisor is fine.
  EXPECT_EQ(*as_const_int(simplify_expr(mul(Binary(ExprKind::FloorDiv, x, i(4)), i(0)))), 0);
}

TEST(SimplifyIdentity, QuotientAndRemainderRecombine) {
  Var x = MakeVar("x", i32), y = MakeVar("y", i32);
  Expr p = mul(x, i(2));
  auto fdiv = [](Expr a, Expr b) { return Binary(ExprKind::FloorDiv, a, b); };
  auto fmod = [](Expr a, Expr b) { return Binary(ExprKind::FloorMod, a, b); };
  // (p // 24) * 768 + (p % 24) * 32 is p * 32: a contiguous tensor's row and column;
  // with p = x * 2 the constants then combine, x * 64, as they do where p % 24 folds to p.
  EXPECT_TRUE(structural_equal(simplify_expr(add(mul(fdiv(p, i(24)), i(768)), mul(fmod(p, i(24)), i(32)))), mul(x, i(64))));
  // Either order, multiplier on either side, a bare remainder, truncating division.
  EXPECT_TRUE(structural_equal(simplify_expr(add(mul(i(8), fmod(x, i(48))), mul(fdiv(x, i(48)), i(384)))), mul(x, i(8))));
  EXPECT_EQ(simplify_expr(add(mul(fdiv(x, i(6)), i(6)), fmod(x, i(6)))), x);
  EXPECT_TRUE(structural_equal(simplify_expr(add(mul(Binary(ExprKind::Div, x, i(5)), i(15)), mul(Binary(ExprKind::Mod, x, i(5)), i(3)))), mul(x, i(3))));
  // Not the identity: another multiplier, other operands, mixed rounding, a divisor
  // that is not a positive constant.
  for (Expr e : {add(mul(fdiv(x, i(24)), i(700)), mul(fmod(x, i(24)), i(32))),
                 add(mul(fdiv(x, i(24)), i(768)), mul(fmod(y, i(24)), i(32))),
                 add(mul(fdiv(x, i(24)), i(768)), mul(fmod(x, i(12)), i(64))),
                 add(mul(Binary(ExprKind::Div, x, i(24)), i(768)), mul(fmod(x, i(24)), i(32))),
                 add(mul(fdiv(x, i(-4)), i(-4)), fmod(x, i(-4))), add(mul(fdiv(x, y), y), fmod(x, y))})
    EXPECT_TRUE(structural_equal(simplify_expr(e), e));
  // The operand is evaluated once afterwards: a call with side effects keeps both.
  Expr ext = Call(i32, "call_extern", {StringImm("int32"), StringImm("tick")});
  Expr twice = add(mul(fdiv(ext, i(4)), i(4)), fmod(ext, i(4)));
  EXPECT_TRUE(structural_equal(simplify_expr(twice), twice));
  // Exact in every int32: checked against the C semantics on edge values.
  for (int64_t v : {int64_t{0}, int64_t{1}, int64_t{-1}, int64_t{47}, int64_t{-49}, int64_t{INT32_MAX}, int64_t{INT32_MIN}}) {
    Expr folded = simplify_expr(add(mul(fdiv(i(v), i(48)), i(384)), mul(fmod(i(v), i(48)), i(8))));
    EXPECT_EQ(*as_const_int(folded), wrap_int(i32, v * 8)) << v;
  }
}

// ---- digits of a flattened index ----------------------------------------------------

Expr fdiv(Expr a, int64_t c) { return Binary(ExprKind::FloorDiv, a, i(c)); }
Expr fmod(Expr a, int64_t c) { return Binary(ExprKind::FloorMod, a, i(c)); }
Expr tdiv(Expr a, int64_t c) { return Binary(ExprKind::Div, a, i(c)); }
Expr tmod(Expr a, int64_t c) { return Binary(ExprKind::Mod, a, i(c)); }

// Simplifies `e` stored inside `for x in range(lo, lo + n)` and gives back the value.
Expr simplify_in_loop(const Var& x, int64_t lo, int64_t n, const Expr& e) {
  Buffer out = MakeBuffer("out", e->dtype, {i(1)});
  Stmt s = simplify_stmt(For(x, i(lo), i(n), ForKind::kSerial, BufferStore(out, e, {i(0)})));
  const auto* loop = as<ForNode>(s);
  const auto* store = loop ? as<BufferStoreNode>(loop->body) : nullptr;
  EXPECT_NE(store, nullptr);
  return store ? store->value : nullptr;
}

TEST(SimplifyDigits, AdjacentDigitsMergeIntoOneRemainder) {
  Var x = MakeVar("x", i32);
  // x / 16 % 32 * 16 + x % 16 is x % 512, in floor and in truncating rounding.
  EXPECT_TRUE(structural_equal(simplify_expr(add(mul(fmod(fdiv(x, 16), 32), i(16)), fmod(x, 16))), fmod(x, 512)));
  EXPECT_TRUE(structural_equal(simplify_expr(add(tmod(x, 16), mul(i(16), tmod(tdiv(x, 16), 32)))), tmod(x, 512)));
  // With a common multiplier (a channel stride of 3).
  EXPECT_TRUE(structural_equal(simplify_expr(add(mul(fmod(fdiv(x, 4), 5), i(12)), mul(fmod(x, 4), i(3)))),
                               mul(fmod(x, 20), i(3))));
  // A chain, in any order of its terms: the reshape's flat index without a known range.
  Expr top = mul(fmod(fdiv(x, 512), 2), i(512)), mid = mul(fmod(fdiv(x, 16), 32), i(16)), low = fmod(x, 16);
  for (Expr e : {add(add(top, mid), low), add(add(low, mid), top), add(add(top, low), mid), add(add(mid, top), low)})
    EXPECT_TRUE(structural_equal(simplify_expr(e), fmod(x, 1024)));
  // The other terms of the sum stay, in their order, with the merged digits last.
  Var y = MakeVar("y", i32);
  EXPECT_TRUE(structural_equal(simplify_expr(add(add(add(y, mid), i(7)), low)), add(add(y, i(7)), fmod(x, 512))));
}

TEST(SimplifyDigits, TheLoopRangeDropsTheLastRemainder) {
  Var x = MakeVar("x", i32);
  Expr top = mul(fmod(fdiv(x, 512), 2), i(512)), mid = mul(fmod(fdiv(x, 16), 32), i(16)), low = fmod(x, 16);
  Expr index = add(add(top, mid), low);
  // for x in [0, 1024): the index is x; so in [100, 1024).
  EXPECT_EQ(simplify_in_loop(x, 0, 1024, index), x);
  EXPECT_EQ(simplify_in_loop(x, 100, 924, index), x);
  // A digit above the range is 0; a remainder by more than the range is the value.
  EXPECT_EQ(*as_const_int(simplify_in_loop(x, 0, 16, fdiv(x, 16))), 0);
  EXPECT_EQ(simplify_in_loop(x, 0, 16, tmod(x, 16)), x);
  // One more element, or one below zero, and x % 1024 stays.
  EXPECT_TRUE(structural_equal(simplify_in_loop(x, 0, 1025, index), fmod(x, 1024)));
  EXPECT_TRUE(structural_equal(simplify_in_loop(x, -1, 1024, index), fmod(x, 1024)));
  EXPECT_TRUE(structural_equal(simplify_in_loop(x, -1, 2, tdiv(x, 16)), tdiv(x, 16)));
  // A let's value carries its range: j = x * 2 is in [0, 30), so j % 32 is j.
  Var j = MakeVar("j", i32);
  Buffer out = MakeBuffer("out", i32, {i(1)});
  Stmt body = LetStmt(j, mul(x, i(2)), BufferStore(out, fmod(j, 32), {i(0)}));
  const auto* loop = as<ForNode>(simplify_stmt(For(x, i(0), i(15), ForKind::kSerial, body)));
  const auto* let = loop ? as<LetStmtNode>(loop->body) : nullptr;
  ASSERT_NE(let, nullptr);
  EXPECT_EQ(as<BufferStoreNode>(let->body)->value, j);
}

TEST(SimplifyDigits, NotWhenTheDigitsDoNotFit) {
  Var x = MakeVar("x", i32), y = MakeVar("y", i32);
  for (Expr e : {
           add(mul(fmod(fdiv(x, 16), 32), i(15)), fmod(x, 16)),        // multiplier is not the base
           add(mul(fmod(fdiv(x, 16), 32), i(16)), fmod(x, 8)),         // another base
           add(mul(fmod(fdiv(x, 16), 32), i(16)), fmod(y, 16)),        // another operand
           add(mul(tmod(fdiv(x, 16), 32), i(16)), fmod(x, 16)),        // mixed rounding
           add(mul(fmod(tdiv(x, 16), 32), i(16)), fmod(x, 16)),
           add(mul(fmod(fdiv(x, 16), 32), i(16)), tmod(x, 16)),
           add(mul(fmod(fdiv(x, -16), 32), i(-16)), fmod(x, -16)),     // negative constants
           add(mul(fmod(fdiv(x, 16), -32), i(16)), fmod(x, 16)),
       })
    EXPECT_TRUE(structural_equal(simplify_expr(e), e));
  // The operand is evaluated once afterwards: a call keeps both.
  Expr ext = Call(i32, "call_extern", {StringImm("int32"), StringImm("tick")});
  Expr calls = add(mul(fmod(fdiv(ext, 4), 2), i(4)), fmod(ext, 4));
  EXPECT_TRUE(structural_equal(simplify_expr(calls), calls));
  // int8: x % 256 has no int8 constant, so x / 16 % 16 * 16 + x % 16 stays.
  Var b = MakeVar("b", i8);
  auto c8 = [](int64_t v) { return IntImm(i8, v); };
  Expr narrow = add(mul(Binary(ExprKind::FloorMod, Binary(ExprKind::FloorDiv, b, c8(16)), c8(16)), c8(16)),
                    Binary(ExprKind::FloorMod, b, c8(16)));
  EXPECT_TRUE(structural_equal(simplify_expr(narrow), narrow));
}

// The range the simplifier and the code generators give a loop variable.
TEST(SimplifyDigits, LoopRangeOfALoopVariable) {
  IntBoundAnalyzer bounds;
  Var n = MakeVar("n", i32), lo = MakeVar("lo", i32);
  IntBound r;
  ASSERT_TRUE(bounds.loop_range(i(3), i(5), &r));
  EXPECT_EQ(r.min, 3);
  EXPECT_EQ(r.max, 7);
  // Bounded start and extent: every value either can take.
  bounds.bind(n.get(), {0, 16});
  bounds.bind(lo.get(), {-2, 4});
  ASSERT_TRUE(bounds.loop_range(lo, n, &r));
  EXPECT_EQ(r.min, -2);
  EXPECT_EQ(r.max, 19);
  // No trip for sure, or an end past int64: no range.
  EXPECT_FALSE(bounds.loop_range(i(0), i(0), &r));
  EXPECT_FALSE(bounds.loop_range(IntImm(i64, std::numeric_limits<int64_t>::max()), IntImm(i64, 2), &r));
}

// Random digit chains over random ranges, negative ones included, some with a wrong
// base or multiplier: the interpreter gives the same values before and after, and
// every well-formed chain folds to x * m % (its span), or x * m when the range fits.
TEST(SimplifyDigits, RandomChainsKeepTheirValues) {
  std::mt19937 rng(20261130);
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  int folded_to_x = 0;
  for (int round = 0; round < 300; ++round) {
    const bool floor = pick(0, 1) == 1, broken = pick(0, 4) == 0, top_unbounded = pick(0, 1) == 1;
    auto div = [&](Expr a, int64_t c) { return floor ? fdiv(a, c) : tdiv(a, c); };
    auto mod = [&](Expr a, int64_t c) { return floor ? fmod(a, c) : tmod(a, c); };
    Var x = MakeVar("x", i32);
    const int64_t m = pick(1, 3);
    std::vector<Expr> terms;
    int64_t base = pick(1, 8);
    terms.push_back(mul(mod(x, base), i(m)));
    const int digits = static_cast<int>(pick(1, 3));
    for (int d = 0; d < digits; ++d) {
      const int64_t b = pick(1, 6);
      const int64_t stride = broken && d == 0 ? base + 1 : base;
      Expr digit = d + 1 == digits && top_unbounded ? div(x, stride) : mod(div(x, stride), b);
      terms.push_back(mul(digit, i(stride * m)));
      base *= b;
    }
    std::shuffle(terms.begin(), terms.end(), rng);
    Expr e = terms[0];
    for (size_t k = 1; k < terms.size(); ++k) e = add(e, terms[k]);
    const int64_t lo = pick(-3, 1) < 0 ? pick(-200, 0) : 0, n = pick(2, 300);  // two trips keep the loop

    Buffer out = MakeBuffer("out", i32, {i(n)});
    PrimFunc before = func_of(For(x, i(lo), i(n), ForKind::kSerial, BufferStore(out, e, {sub(x, i(lo))})), {out});
    IRModule simplified = Simplify().run(module_of(before));
    NDArray want = NDArray::zeros(i32, {n}), got = NDArray::zeros(i32, {n});
    interpret(module_of(before), "f", {&want});
    interpret(simplified, "f", {&got});
    ASSERT_EQ(want.data, got.data) << "round " << round;
    const auto* loop = as<ForNode>(simplified.functions[0].second->body);
    const Expr value = as<BufferStoreNode>(loop->body)->value;
    Expr want_x = m == 1 ? Expr(x) : mul(x, i(m));
    if (!broken && (top_unbounded || (lo >= 0 && lo + n <= base))) {
      EXPECT_TRUE(structural_equal(value, want_x)) << "round " << round;
      ++folded_to_x;
    } else if (!broken && base == 1) {
      EXPECT_TRUE(as_const_int(value) && *as_const_int(value) == 0) << "round " << round;  // every digit was x % 1
    } else if (!broken) {
      EXPECT_TRUE(structural_equal(value, m == 1 ? mod(x, base) : mul(mod(x, base), i(m)))) << "round " << round;
    }
  }
  EXPECT_GT(folded_to_x, 50);
}

TEST(SimplifyIdentity, ReassociatesIntegerConstants) {
  Var x = MakeVar("i", i32);
  EXPECT_TRUE(structural_equal(simplify_expr(add(mul(x, i(1)), add(i(3), i(4)))), add(x, i(7))));
  EXPECT_TRUE(structural_equal(simplify_expr(add(add(x, i(3)), i(4))), add(x, i(7))));
  EXPECT_TRUE(structural_equal(simplify_expr(add(i(4), add(i(3), x))), add(x, i(7))));
  EXPECT_TRUE(structural_equal(simplify_expr(add(sub(x, i(3)), i(1))), sub(x, i(2))));
  EXPECT_TRUE(structural_equal(simplify_expr(sub(add(x, i(3)), i(1))), add(x, i(2))));
  EXPECT_EQ(simplify_expr(sub(add(x, i(3)), i(3))), x);
  EXPECT_TRUE(structural_equal(simplify_expr(mul(mul(x, i(3)), i(4))), mul(x, i(12))));
  // Floats are not associative: (x + 3) + 4 stays.
  Var y = MakeVar("y", f32);
  Expr fe = add(add(y, f(3)), f(4));
  EXPECT_EQ(simplify_expr(fe), fe);
}

// ---- statements ------------------------------------------------------------------

TEST(SimplifyStmt, DeadBranches) {
  Buffer B = MakeBuffer("B", i32, {i(4)});
  Stmt then_s = BufferStore(B, i(1), {i(0)}), else_s = BufferStore(B, i(2), {i(0)});
  EXPECT_EQ(simplify_stmt(IfThenElse(Binary(ExprKind::LT, i(1), i(2)), then_s, else_s)), then_s);
  EXPECT_EQ(simplify_stmt(IfThenElse(Bool(false), then_s, else_s)), else_s);
  EXPECT_TRUE(is_no_op(simplify_stmt(IfThenElse(Bool(false), then_s))));
  Var c = MakeVar("c", DataType::Bool());
  Stmt live = IfThenElse(c, then_s, else_s);
  EXPECT_EQ(simplify_stmt(live), live);
}

TEST(SimplifyStmt, ZeroAndOneTripLoops) {
  Buffer B = MakeBuffer("B", i32, {i(4)});
  Var x = MakeVar("i", i32);
  Stmt body = BufferStore(B, add(x, i(1)), {x});
  EXPECT_TRUE(is_no_op(simplify_stmt(For(x, i(0), i(0), ForKind::kSerial, body))));
  EXPECT_TRUE(is_no_op(simplify_stmt(For(x, i(0), i(-3), ForKind::kSerial, body))));
  EXPECT_TRUE(is_no_op(simplify_stmt(For(x, i(0), sub(i(2), i(2)), ForKind::kSerial, body))));
  // One trip: the body with i = 2, then folded.
  Stmt once = simplify_stmt(For(x, i(2), i(1), ForKind::kSerial, body));
  EXPECT_TRUE(structural_equal(once, BufferStore(B, i(3), {i(2)})));
  Stmt loop = For(x, i(0), i(4), ForKind::kSerial, body);
  EXPECT_EQ(simplify_stmt(loop), loop);
}

TEST(SimplifyStmt, VariableInAnAllocatedShapeIsNotSubstitutedAway) {
  // The buffer's shape refers to the loop/let variable; removing the binding would
  // leave that use unbound, so the loop and the let stay (their bodies still fold).
  Var x = MakeVar("i", i32), n = MakeVar("n", i32);
  Buffer tmp = MakeBuffer("tmp", i32, {add(x, i(1))});
  Stmt body = Allocate(tmp, "local", BufferStore(tmp, add(i(1), i(1)), {i(0)}));
  Stmt simplified = simplify_stmt(For(x, i(0), i(1), ForKind::kSerial, body));
  const auto* loop = as<ForNode>(simplified);
  ASSERT_NE(loop, nullptr);
  EXPECT_EQ(loop->loop_var, x);
  Buffer tmp2 = MakeBuffer("tmp2", i32, {n});
  Stmt let = simplify_stmt(LetStmt(n, i(4), Allocate(tmp2, "local", BufferStore(tmp2, i(0), {i(0)}))));
  EXPECT_EQ(let->kind, StmtKind::LetStmt);
}

TEST(SimplifyStmt, LetWithConstantValueIsSubstituted) {
  Buffer B = MakeBuffer("B", i32, {i(4)});
  Var x = MakeVar("x", i32), y = MakeVar("y", i32);
  Stmt s = LetStmt(x, add(i(1), i(2)), BufferStore(B, mul(x, i(2)), {x}));
  EXPECT_TRUE(structural_equal(simplify_stmt(s), BufferStore(B, i(6), {i(3)})));
  Stmt kept = LetStmt(x, add(y, i(1)), BufferStore(B, x, {i(0)}));
  EXPECT_EQ(simplify_stmt(kept), kept);
}

TEST(SimplifyStmt, NoOpsAndConstantEvaluatesDisappear) {
  Buffer B = MakeBuffer("B", i32, {i(4)});
  Stmt store = BufferStore(B, i(1), {i(0)});
  Stmt seq = SeqStmt({Evaluate(f(1.5)), store, IfThenElse(Bool(false), store), Evaluate(add(i(1), i(2)))});
  EXPECT_EQ(simplify_stmt(seq), store);
  EXPECT_TRUE(is_no_op(simplify_stmt(SeqStmt({Evaluate(i(3)), Evaluate(f(2))}))));
  // An evaluated call is kept: it may do something.
  Stmt call = Evaluate(Call(i32, "call_extern", {StringImm("int32"), StringImm("tick")}));
  EXPECT_EQ(simplify_stmt(call), call);
}

TEST(SimplifyStmt, AssertWithTrueCondition) {
  Buffer B = MakeBuffer("B", i32, {i(4)});
  Stmt store = BufferStore(B, i(1), {i(0)});
  EXPECT_EQ(simplify_stmt(AssertStmt(Binary(ExprKind::EQ, i(1), i(1)), "ok", store)), store);
  // A false assertion is the program's runtime error: it stays.
  Stmt failing = simplify_stmt(AssertStmt(Binary(ExprKind::EQ, i(1), i(2)), "boom", store));
  const auto* a = as<AssertStmtNode>(failing);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(*as_const_int(a->condition), 0);
}

TEST(SimplifyPass, UnchangedFunctionIsTheSameObject) {
  Buffer B = MakeBuffer("B", i32, {i(4)});
  Var x = MakeVar("i", i32);
  PrimFunc fn = func_of(For(x, i(0), i(4), ForKind::kSerial, BufferStore(B, add(x, i(1)), {x})), {B});
  IRModule m = module_of(fn);
  IRModule out = Simplify().run(m);
  EXPECT_EQ(out.functions[0].second, fn);
  EXPECT_EQ(Simplify().name, "simplify");
}

TEST(SimplifyPass, ChangedFunctionKeepsParameters) {
  Buffer B = MakeBuffer("B", i32, {i(4)});
  PrimFunc fn = func_of(BufferStore(B, add(i(1), i(1)), {i(0)}), {B});
  PrimFunc out = Simplify().run(module_of(fn)).functions[0].second;
  EXPECT_NE(out, fn);
  EXPECT_EQ(out->params, fn->params);
  EXPECT_EQ(out->param_buffers, fn->param_buffers);
}

TEST(Substitute, ReplacesOnlyMappedVariablesAndSharesTheRest) {
  Var x = MakeVar("x", i32), y = MakeVar("y", i32);
  Expr untouched = mul(y, i(2));
  Expr e = add(x, untouched);
  Expr r = substitute(e, x, i(5));
  EXPECT_TRUE(structural_equal(r, add(i(5), mul(y, i(2)))));
  EXPECT_EQ(as<AddNode>(r)->b, untouched);  // shared, not copied
  EXPECT_EQ(substitute(untouched, x, i(5)), untouched);
  Buffer B = MakeBuffer("B", i32, {i(4)});
  Stmt s = BufferStore(B, x, {y});
  EXPECT_TRUE(structural_equal(substitute(s, VarMap{{x.get(), i(1)}, {y.get(), i(2)}}), BufferStore(B, i(1), {i(2)})));
}

}  // namespace
}  // namespace mtir
