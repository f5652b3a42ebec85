// The reference interpreter. Programs are built with the IR factories (not parsed),
// so these tests depend only on core/ir. Each test states the C behaviour it pins.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>

#include "interp/interpreter.h"
#include "ir/function.h"
#include "support/diagnostic.h"

namespace mtir {
namespace {

const DataType kI8 = DataType::Int(8);
const DataType kI32 = DataType::Int(32);
const DataType kI64 = DataType::Int(64);
const DataType kU8 = DataType::UInt(8);
const DataType kU64 = DataType::UInt(64);
const DataType kF16 = DataType::Float(16);
const DataType kF32 = DataType::Float(32);
const DataType kF64 = DataType::Float(64);
const DataType kBool = DataType::Bool();

// A span on line `line` of a fake source file, so tests can check error locations.
Span at(int line, int col = 5) {
  static const auto file = std::make_shared<SourceFile>(SourceFile{"prog.tir", ""});
  return Span{file, line, col};
}

Expr i32(int64_t v) { return IntImm(kI32, v); }
Expr f32(double v) { return FloatImm(kF32, v); }
Expr bin(ExprKind k, Expr a, Expr b, Span s = {}) { return Binary(k, std::move(a), std::move(b), std::move(s)); }
Expr add(Expr a, Expr b) { return bin(ExprKind::Add, a, b); }
Expr mul(Expr a, Expr b) { return bin(ExprKind::Mul, a, b); }
Expr lt(Expr a, Expr b) { return bin(ExprKind::LT, a, b); }
Stmt loop(const Var& v, int64_t extent, Stmt body) { return For(v, i32(0), i32(extent), ForKind::kSerial, std::move(body)); }
Stmt seq(std::vector<Stmt> s) { return SeqStmt(std::move(s)); }

// Builds one PrimFunc parameter by parameter, then wraps it in a module.
struct FuncBuilder {
  std::shared_ptr<PrimFuncNode> f = std::make_shared<PrimFuncNode>();

  Buffer buffer(const std::string& name, DataType t, std::vector<Expr> shape) {
    Buffer b = MakeBuffer(name, t, std::move(shape));
    add_buffer_param(name, b);
    return b;
  }
  Buffer buffer(const std::string& name, DataType t, std::vector<int64_t> dims) {
    std::vector<Expr> shape;
    for (int64_t d : dims) shape.push_back(i32(d));
    return buffer(name, t, std::move(shape));
  }
  void add_buffer_param(const std::string& name, const Buffer& b) {
    f->params.push_back(MakeVar(name, DataType::Handle()));
    f->param_buffers.push_back(b);
  }
  Var scalar(const std::string& name, DataType t) {
    Var v = MakeVar(name, t);
    f->params.push_back(v);
    f->param_buffers.push_back(nullptr);
    return v;
  }
  IRModule module(Stmt body, const std::string& name = "f") {
    f->body = std::move(body);
    f->span = at(1, 1);
    IRModule m;
    m.functions.push_back({name, f});
    return m;
  }
};

struct Failure {
  std::string message;
  int line = 0;
};

// The first diagnostic `f` throws; a test failure if it throws none.
Failure failure_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const DiagnosticError& e) {
    EXPECT_FALSE(e.internal()) << e.what();
    if (e.diagnostics().empty()) return {};
    return {e.diagnostics()[0].message, e.diagnostics()[0].span.line};
  }
  ADD_FAILURE() << "expected a DiagnosticError";
  return {};
}

// Evaluates `value` (which may use the scalar parameters x and y) by storing it into
// a one-element buffer of its type.
struct ScalarProbe {
  NDArray run(const Expr& value, InterpOptions options = {}) {
    FuncBuilder fb;
    for (auto& [v, arg] : scalars) fb.f->params.push_back(v), fb.f->param_buffers.push_back(nullptr);
    Buffer r = fb.buffer("R", value->dtype, std::vector<int64_t>{1});
    IRModule m = fb.module(BufferStore(r, value, {i32(0)}, at(3)));
    NDArray out = NDArray::zeros(value->dtype, {1});
    std::vector<InterpArg> args;
    for (auto& [v, arg] : scalars) args.push_back(arg);
    args.push_back(&out);
    interpret(m, "f", args, options);
    return out;
  }
  int64_t int_value(const Expr& e) { return run(e).get_int(0); }
  double float_value(const Expr& e) { return run(e).get_float(0); }
  std::vector<std::pair<Var, InterpArg>> scalars;
};

int64_t eval_int(const Expr& e) { return ScalarProbe().int_value(e); }
double eval_float(const Expr& e) { return ScalarProbe().float_value(e); }

// ---- whole programs --------------------------------------------------------------------

TEST(Interp, Matmul) {
  FuncBuilder fb;
  Buffer a = fb.buffer("A", kF32, std::vector<int64_t>{4, 8});
  Buffer b = fb.buffer("B", kF32, std::vector<int64_t>{8, 3});
  Buffer c = fb.buffer("C", kF32, std::vector<int64_t>{4, 3});
  Var i = MakeVar("i", kI32), j = MakeVar("j", kI32), k = MakeVar("k", kI32);
  Stmt body = loop(i, 4, loop(j, 3, seq({
      BufferStore(c, f32(0), {i, j}),
      loop(k, 8, BufferStore(c, add(BufferLoad(c, {i, j}), mul(BufferLoad(a, {i, k}), BufferLoad(b, {k, j}))), {i, j})),
  })));
  IRModule m = fb.module(body, "matmul");
  NDArray A = NDArray::zeros(kF32, {4, 8}), B = NDArray::zeros(kF32, {8, 3}), C = NDArray::zeros(kF32, {4, 3});
  // Small multiples of 1/4, so every product and sum is exact in float32.
  for (int64_t x = 0; x < 32; ++x) A.set_float(x, 0.25 * static_cast<double>(x % 7) - 0.5);
  for (int64_t x = 0; x < 24; ++x) B.set_float(x, static_cast<double>(x % 5) - 2.0);
  interpret(m, "matmul", {&A, &B, &C});
  for (int r = 0; r < 4; ++r)
    for (int col = 0; col < 3; ++col) {
      double expected = 0;
      for (int kk = 0; kk < 8; ++kk) expected += A.get_float(r * 8 + kk) * B.get_float(kk * 3 + col);
      EXPECT_EQ(C.get_float(r * 3 + col), expected) << r << "," << col;
    }
}

TEST(Interp, Conv1d) {
  // out[i] = sum_k in[i + k] * w[k], valid padding, int32.
  FuncBuilder fb;
  Buffer in = fb.buffer("In", kI32, std::vector<int64_t>{10});
  Buffer w = fb.buffer("W", kI32, std::vector<int64_t>{3});
  Buffer out = fb.buffer("Out", kI32, std::vector<int64_t>{8});
  Var i = MakeVar("i", kI32), k = MakeVar("k", kI32);
  Stmt body = loop(i, 8, seq({BufferStore(out, i32(0), {i}),
                              loop(k, 3, BufferStore(out, add(BufferLoad(out, {i}), mul(BufferLoad(in, {add(i, k)}),
                                                                                         BufferLoad(w, {k}))),
                                                     {i}))}));
  IRModule m = fb.module(body);
  NDArray In = NDArray::zeros(kI32, {10}), W = NDArray::zeros(kI32, {3}), Out = NDArray::zeros(kI32, {8});
  for (int x = 0; x < 10; ++x) In.set_int(x, x * x - 20);
  W.set_int(0, 1), W.set_int(1, -2), W.set_int(2, 3);
  interpret(m, "f", {&In, &W, &Out});
  for (int x = 0; x < 8; ++x) {
    int64_t expected = 0;
    for (int kk = 0; kk < 3; ++kk) expected += In.get_int(x + kk) * W.get_int(kk);
    EXPECT_EQ(Out.get_int(x), expected) << x;
  }
}

TEST(Interp, SumAndMaxReductionThroughAllocatedAccumulator) {
  FuncBuilder fb;
  Buffer a = fb.buffer("A", kF32, std::vector<int64_t>{10});
  Buffer out = fb.buffer("Out", kF32, std::vector<int64_t>{2});
  Buffer acc = MakeBuffer("acc", kF32, {i32(2)});
  Var i = MakeVar("i", kI32);
  Stmt body = Allocate(acc, "local", seq({
      BufferStore(acc, f32(0), {i32(0)}),
      BufferStore(acc, f32(-INFINITY), {i32(1)}),
      loop(i, 10, seq({BufferStore(acc, add(BufferLoad(acc, {i32(0)}), BufferLoad(a, {i})), {i32(0)}),
                       BufferStore(acc, bin(ExprKind::Max, BufferLoad(acc, {i32(1)}), BufferLoad(a, {i})), {i32(1)})})),
      BufferStore(out, BufferLoad(acc, {i32(0)}), {i32(0)}),
      BufferStore(out, BufferLoad(acc, {i32(1)}), {i32(1)}),
  }));
  IRModule m = fb.module(body);
  NDArray A = NDArray::zeros(kF32, {10}), Out = NDArray::zeros(kF32, {2});
  const double values[] = {3, -1, 4, 1, -5, 9, 2, -6, 5, 3};
  for (int x = 0; x < 10; ++x) A.set_float(x, values[x]);
  interpret(m, "f", {&A, &Out});
  EXPECT_EQ(Out.get_float(0), 15.0);
  EXPECT_EQ(Out.get_float(1), 9.0);
}

// ---- integer semantics ------------------------------------------------------------------

TEST(Interp, IntegerOverflowWraps) {
  EXPECT_EQ(eval_int(add(IntImm(kI8, 127), IntImm(kI8, 1))), -128);
  EXPECT_EQ(eval_int(mul(IntImm(kI8, 16), IntImm(kI8, 16))), 0);
  EXPECT_EQ(eval_int(bin(ExprKind::Sub, IntImm(kI8, -128), IntImm(kI8, 1))), 127);
  EXPECT_EQ(eval_int(add(i32(INT32_MAX), i32(1))), INT32_MIN);
  EXPECT_EQ(eval_int(mul(i32(65536), i32(65536))), 0);
  EXPECT_EQ(eval_int(mul(i32(46341), i32(46341))), -2147479015);  // 2147488281 - 2^32
  EXPECT_EQ(eval_int(add(IntImm(kI64, INT64_MAX), IntImm(kI64, 1))), INT64_MIN);
  EXPECT_EQ(eval_int(bin(ExprKind::Sub, IntImm(kU8, 0), IntImm(kU8, 1))), 255);
  EXPECT_EQ(static_cast<uint64_t>(eval_int(bin(ExprKind::Sub, IntImm(kU64, 0), IntImm(kU64, 1)))), UINT64_MAX);
  // INT_MIN / -1 overflows in C (UB); we define it as the wrapped result INT_MIN,
  // and INT_MIN % -1 as 0.
  EXPECT_EQ(eval_int(bin(ExprKind::Div, i32(INT32_MIN), i32(-1))), INT32_MIN);
  EXPECT_EQ(eval_int(bin(ExprKind::Mod, i32(INT32_MIN), i32(-1))), 0);
  EXPECT_EQ(eval_int(bin(ExprKind::Div, IntImm(kI64, INT64_MIN), IntImm(kI64, -1))), INT64_MIN);
  EXPECT_EQ(eval_int(bin(ExprKind::FloorDiv, IntImm(kI64, INT64_MIN), IntImm(kI64, -1))), INT64_MIN);
  EXPECT_EQ(eval_int(bin(ExprKind::FloorMod, IntImm(kI64, INT64_MIN), IntImm(kI64, -1))), 0);
}

TEST(Interp, UnsignedComparisonsAndDivision) {
  Expr big = IntImm(kU64, static_cast<int64_t>(UINT64_MAX - 1));
  EXPECT_EQ(eval_int(lt(IntImm(kU64, 1), big)), 1);  // as int64 the big value is negative
  EXPECT_EQ(static_cast<uint64_t>(eval_int(bin(ExprKind::Div, big, IntImm(kU64, 2)))), (UINT64_MAX - 1) / 2);
  EXPECT_EQ(eval_int(bin(ExprKind::Max, IntImm(kU8, 200), IntImm(kU8, 100))), 200);
  EXPECT_EQ(eval_int(bin(ExprKind::Min, IntImm(kI8, -100), IntImm(kI8, 100))), -100);
}

TEST(Interp, TruncatingAndFlooringDivisionTable) {
  struct Case {
    int64_t a, b, div, mod, floordiv, floormod;
  };
  const Case cases[] = {
      {7, 2, 3, 1, 3, 1},      {-7, 2, -3, -1, -4, 1},  {7, -2, -3, 1, -4, -1}, {-7, -2, 3, -1, 3, -1},
      {6, 3, 2, 0, 2, 0},      {-6, 3, -2, 0, -2, 0},   {0, 5, 0, 0, 0, 0},     {-1, 5, 0, -1, -1, 4},
      {1, -5, 0, 1, -1, -4},   {-5, 5, -1, 0, -1, 0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::to_string(c.a) + " op " + std::to_string(c.b));
    EXPECT_EQ(eval_int(bin(ExprKind::Div, i32(c.a), i32(c.b))), c.div);
    EXPECT_EQ(eval_int(bin(ExprKind::Mod, i32(c.a), i32(c.b))), c.mod);
    EXPECT_EQ(eval_int(bin(ExprKind::FloorDiv, i32(c.a), i32(c.b))), c.floordiv);
    EXPECT_EQ(eval_int(bin(ExprKind::FloorMod, i32(c.a), i32(c.b))), c.floormod);
    // The identities the two pairs satisfy.
    EXPECT_EQ(c.div * c.b + c.mod, c.a);
    EXPECT_EQ(c.floordiv * c.b + c.floormod, c.a);
  }
}

TEST(Interp, DivisionByZeroIsAnErrorAtTheExpression) {
  for (ExprKind k : {ExprKind::Div, ExprKind::Mod, ExprKind::FloorDiv, ExprKind::FloorMod}) {
    ScalarProbe probe;
    Var y = MakeVar("y", kI32);
    probe.scalars.push_back({y, int64_t{0}});
    Failure f = failure_of([&] { probe.run(bin(k, i32(7), y, at(12))); });
    EXPECT_NE(f.message.find("division by zero"), std::string::npos) << f.message;
    EXPECT_EQ(f.line, 12);
  }
  // Float division by zero is IEEE, not an error.
  EXPECT_TRUE(std::isinf(eval_float(bin(ExprKind::Div, f32(1), f32(0)))));
}

Expr intrin(const char* op, Expr a, Expr b, Span span = {}) {
  DataType t = a->dtype;
  return Call(t, op, {std::move(a), std::move(b)}, {}, span);
}

TEST(Interp, ShiftsAndBitwiseOperators) {
  EXPECT_EQ(eval_int(intrin("shift_right", i32(-7), i32(1))), -4);  // arithmetic: rounds toward -inf
  EXPECT_EQ(eval_int(intrin("shift_right", IntImm(kU8, 200), IntImm(kU8, 3))), 25);
  EXPECT_EQ(eval_int(intrin("shift_right", IntImm(kI8, -128), IntImm(kI8, 7))), -1);
  EXPECT_EQ(eval_int(intrin("shift_left", i32(3), i32(30))), INT32_MIN + (1 << 30));  // wraps
  EXPECT_EQ(eval_int(intrin("shift_left", IntImm(kI8, 3), IntImm(kI8, 6))), -64);
  EXPECT_EQ(eval_int(intrin("shift_left", i32(-1), i32(31))), INT32_MIN);
  EXPECT_EQ(static_cast<uint64_t>(eval_int(intrin("shift_right", IntImm(kU64, -1), IntImm(kU64, 63)))), 1u);
  EXPECT_EQ(eval_int(intrin("shift_right", IntImm(kI64, INT64_MIN), IntImm(kI64, 62))), -2);
  EXPECT_EQ(eval_int(intrin("bitwise_and", i32(-8), i32(13))), 8);
  EXPECT_EQ(eval_int(intrin("bitwise_or", IntImm(kI8, 64), IntImm(kI8, -128))), -64);
  EXPECT_EQ(eval_int(intrin("bitwise_or", IntImm(kU8, 15), IntImm(kU8, 240))), 255);
}

// The DSP builtins on words whose bytes are known: 0x80FF7F01 holds bytes 0x01, 0x7F,
// 0xFF, 0x80 from the lowest up.
TEST(Interp, DspWideningAndDualMultiply) {
  auto one = [](const char* op, int64_t x) { return eval_int(Call(kI32, op, {i32(x)})); };
  const int64_t word = static_cast<int32_t>(0x80FF7F01u);
  EXPECT_EQ(one("sxtb16", word), static_cast<int32_t>(0xFFFF0001u));       // (1, -1)
  EXPECT_EQ(one("sxtb16_ror8", word), static_cast<int32_t>(0xFF80007Fu));  // (127, -128)
  // pack_bytes puts the low bytes of its four arguments in order, from the lowest up.
  EXPECT_EQ(eval_int(Call(kI32, "pack_bytes", {i32(1), i32(127), i32(-1), i32(-128)})), word);
  EXPECT_EQ(eval_int(Call(kI32, "pack_bytes", {IntImm(DataType::Int(8), -128), i32(0x1FF), i32(0), i32(2)})), 0x0200FF80);
  // (1 * 127 + -1 * -128) + 5 and a wrap past INT32_MAX: 2 * (-32768 * -32768) = 2^31.
  EXPECT_EQ(eval_int(Call(kI32, "smlad", {i32(static_cast<int32_t>(0xFFFF0001u)), i32(static_cast<int32_t>(0xFF80007Fu)), i32(5)})), 260);
  EXPECT_EQ(eval_int(Call(kI32, "smlad", {i32(static_cast<int32_t>(0x80008000u)), i32(static_cast<int32_t>(0x80008000u)), i32(0)})), INT32_MIN);
  // smlabb reads the low halves only (1 * 127 + 5; the high halves are ignored) and wraps
  // (INT32_MAX + 1 * 1).
  EXPECT_EQ(eval_int(Call(kI32, "smlabb", {i32(static_cast<int32_t>(0xFFFF0001u)), i32(static_cast<int32_t>(0xFF80007Fu)), i32(5)})), 132);
  EXPECT_EQ(eval_int(Call(kI32, "smlabb", {i32(static_cast<int32_t>(0x7FFF0001u)), i32(1), i32(INT32_MAX)})), INT32_MIN);
  EXPECT_EQ(eval_int(Call(kI32, "smlabb", {i32(-128), i32(-127), i32(-7)})), 16249);
  // smmlar: hi32(acc * 2^32 + a * b + 2^31). 3 * 2^30 + 2^31 carries one into the high
  // word; -1 * 1 + 2^31 does not borrow, -3 * 2^30 + 2^31 does; the high word wraps past
  // INT32_MAX.
  auto smmlar = [&](int64_t a, int64_t b, int64_t acc) { return eval_int(Call(kI32, "smmlar", {i32(a), i32(b), i32(acc)})); };
  EXPECT_EQ(smmlar(3, 1 << 30, 5), 6);
  EXPECT_EQ(smmlar(-1, 1, 5), 5);
  EXPECT_EQ(smmlar(-3, 1 << 30, 0), -1);
  EXPECT_EQ(smmlar(INT32_MIN, INT32_MIN, INT32_MAX), INT32_MIN + (1 << 30) - 1);
}

TEST(Interp, ShiftAmountOutOfRangeIsAnErrorAtTheExpression) {
  for (const char* op : {"shift_right", "shift_left"}) {
    for (int64_t amount : {-1, 32, 40}) {
      ScalarProbe probe;
      Var y = MakeVar("y", kI32);
      probe.scalars.push_back({y, amount});
      Failure f = failure_of([&] { probe.run(intrin(op, i32(7), y, at(9))); });
      EXPECT_NE(f.message.find(std::string(op) + " by " + std::to_string(amount) + " is out of range [0, 32) for int32"),
                std::string::npos)
          << f.message;
      EXPECT_EQ(f.line, 9);
    }
  }
  ScalarProbe probe;
  Var y = MakeVar("y", kI8);
  probe.scalars.push_back({y, int64_t{8}});
  Failure f = failure_of([&] { probe.run(intrin("shift_left", IntImm(kI8, 1), y, at(4))); });
  EXPECT_NE(f.message.find("shift_left by 8 is out of range [0, 8) for int8"), std::string::npos) << f.message;
}

// T.known_range(x, lo, hi) is x, and a value outside the range it promises is an error at
// the call (the code generators shift by it without a mask), in both interpreter forms.
TEST(Interp, KnownRangeIsItsValueAndRefusesOneOutside) {
  for (bool walk : {false, true}) {
    InterpOptions options;
    options.tree_walk = walk;
    for (int64_t v : {0, 17, 31}) {
      ScalarProbe probe;
      Var y = MakeVar("y", kI32);
      probe.scalars.push_back({y, v});
      EXPECT_EQ(probe.run(Call(kI32, "known_range", {y, i32(0), i32(31)}), options).get_int(0), v);
    }
    for (int64_t v : {-1, 32}) {
      ScalarProbe probe;
      Var y = MakeVar("y", kI32);
      probe.scalars.push_back({y, v});
      Failure f = failure_of([&] { probe.run(Call(kI32, "known_range", {y, i32(0), i32(31)}, {}, at(6)), options); });
      EXPECT_NE(f.message.find("T.known_range: " + std::to_string(v) + " is outside the range [0, 31] it promises"),
                std::string::npos)
          << f.message;
      EXPECT_EQ(f.line, 6);
    }
  }
}

// ---- float semantics --------------------------------------------------------------------

TEST(Interp, FloatSpecials) {
  EXPECT_EQ(eval_float(bin(ExprKind::Div, f32(1), f32(0))), INFINITY);
  EXPECT_EQ(eval_float(bin(ExprKind::Div, f32(-1), f32(0))), -INFINITY);
  EXPECT_TRUE(std::isnan(eval_float(bin(ExprKind::Div, f32(0), f32(0)))));
  EXPECT_TRUE(std::isnan(eval_float(bin(ExprKind::Sub, f32(INFINITY), f32(INFINITY)))));
  Expr nan = f32(NAN);
  EXPECT_EQ(eval_int(bin(ExprKind::EQ, nan, nan)), 0);
  EXPECT_EQ(eval_int(bin(ExprKind::NE, nan, nan)), 1);
  EXPECT_EQ(eval_int(lt(nan, f32(1))), 0);
  EXPECT_EQ(eval_int(bin(ExprKind::GE, nan, f32(1))), 0);
  double neg_zero = eval_float(mul(f32(0), f32(-1)));
  EXPECT_EQ(neg_zero, 0.0);
  EXPECT_TRUE(std::signbit(neg_zero));
  EXPECT_EQ(eval_int(bin(ExprKind::EQ, f32(0.0), f32(-0.0))), 1);
  EXPECT_EQ(eval_float(bin(ExprKind::Div, f32(1), f32(-0.0))), -INFINITY);
  // Min/Max are the C ternaries `a < b ? a : b` / `a > b ? a : b`.
  EXPECT_EQ(eval_float(bin(ExprKind::Min, nan, f32(1))), 1.0);
  EXPECT_TRUE(std::isnan(eval_float(bin(ExprKind::Min, f32(1), nan))));
  EXPECT_TRUE(std::signbit(eval_float(bin(ExprKind::Min, f32(0.0), f32(-0.0)))));
}

TEST(Interp, Float32ArithmeticRoundsEveryOperation) {
  EXPECT_EQ(eval_float(add(f32(16777216), f32(1))), 16777216.0);
  EXPECT_EQ(eval_float(add(FloatImm(kF64, 16777216), FloatImm(kF64, 1))), 16777217.0);
  // ((1e8 + 1) - 1e8) is 0 in float32 and 1 in float64.
  EXPECT_EQ(eval_float(bin(ExprKind::Sub, add(f32(1e8), f32(1)), f32(1e8))), 0.0);
  EXPECT_EQ(eval_float(bin(ExprKind::Sub, add(FloatImm(kF64, 1e8), FloatImm(kF64, 1)), FloatImm(kF64, 1e8))), 1.0);
  float expected = 0.1f + 0.2f;
  EXPECT_EQ(eval_float(add(f32(0.1), f32(0.2))), static_cast<double>(expected));
  EXPECT_EQ(eval_float(bin(ExprKind::Div, f32(1), f32(3))), static_cast<double>(1.0f / 3.0f));
}

TEST(Interp, Float16ArithmeticAndStorage) {
  Expr h2048 = FloatImm(kF16, 2048), h1 = FloatImm(kF16, 1);
  EXPECT_EQ(eval_float(add(h2048, h1)), 2048.0);                           // tie to even
  EXPECT_EQ(eval_float(add(add(h2048, h1), FloatImm(kF16, 2))), 2050.0);
  EXPECT_EQ(eval_float(mul(FloatImm(kF16, 300), FloatImm(kF16, 300))), INFINITY);  // 90000 > 65504
  const double tiny = std::ldexp(1.0, -24);                                 // smallest subnormal
  EXPECT_EQ(eval_float(FloatImm(kF16, tiny)), tiny);
  EXPECT_EQ(eval_float(mul(FloatImm(kF16, tiny), FloatImm(kF16, 0.5))), 0.0);  // tie to even: 0
  EXPECT_EQ(eval_float(mul(FloatImm(kF16, 3 * tiny), FloatImm(kF16, 0.5))), 2 * tiny);
  EXPECT_EQ(eval_float(FloatImm(kF16, 0.1)), half_to_float(0x2e66));
}

TEST(Interp, Intrinsics) {
  auto call = [](const char* op, std::vector<Expr> args) { return Call(args[0]->dtype, op, args); };
  EXPECT_EQ(eval_float(call("exp", {f32(1.5)})), static_cast<double>(std::exp(1.5f)));
  EXPECT_EQ(eval_float(call("exp", {FloatImm(kF64, 1.5)})), std::exp(1.5));
  EXPECT_EQ(eval_float(call("log", {f32(10)})), static_cast<double>(std::log(10.0f)));
  EXPECT_EQ(eval_float(call("sqrt", {f32(2)})), static_cast<double>(std::sqrt(2.0f)));
  EXPECT_EQ(eval_float(call("tanh", {f32(0.5)})), static_cast<double>(std::tanh(0.5f)));
  EXPECT_EQ(eval_float(call("sigmoid", {f32(0.5)})), static_cast<double>(1.0f / (1.0f + std::exp(-0.5f))));
  EXPECT_EQ(eval_float(call("erf", {f32(0.5)})), static_cast<double>(std::erf(0.5f)));
  EXPECT_EQ(eval_float(call("pow", {f32(2), f32(10)})), 1024.0);
  EXPECT_EQ(eval_float(call("round", {f32(2.5)})), 3.0);   // half away from zero, like roundf
  EXPECT_EQ(eval_float(call("round", {f32(-2.5)})), -3.0);
  EXPECT_EQ(eval_float(call("floor", {f32(-2.5)})), -3.0);
  EXPECT_EQ(eval_float(call("ceil", {f32(-2.5)})), -2.0);
  EXPECT_EQ(eval_float(call("abs", {f32(-2.5)})), 2.5);
  EXPECT_EQ(eval_int(call("abs", {i32(-7)})), 7);
  EXPECT_EQ(eval_int(call("abs", {IntImm(kI8, -128)})), -128);  // wraps like two's complement
  EXPECT_TRUE(std::isnan(eval_float(call("log", {f32(-1)}))));
  EXPECT_EQ(eval_float(call("exp", {FloatImm(kF16, 1)})), half_to_float(float_to_half(std::exp(1.0f))));
}

// ---- casts --------------------------------------------------------------------------------

TEST(Interp, Casts) {
  EXPECT_EQ(eval_int(Cast(kI32, f32(-2.7))), -2);                       // truncates toward zero
  EXPECT_EQ(eval_int(Cast(kI32, f32(2.7))), 2);
  EXPECT_EQ(eval_int(Cast(kI8, i32(300))), 44);                         // int -> int wraps
  EXPECT_EQ(eval_int(Cast(kI8, i32(-129))), 127);
  EXPECT_EQ(eval_int(Cast(kU8, i32(-1))), 255);
  EXPECT_EQ(eval_int(Cast(kI64, IntImm(kU64, -1))), -1);
  EXPECT_EQ(eval_int(Cast(kU8, f32(-0.5))), 0);                         // truncates to 0: in range
  EXPECT_EQ(eval_int(Cast(kI8, f32(127.9))), 127);
  EXPECT_EQ(eval_int(Cast(kBool, i32(-3))), 1);
  EXPECT_EQ(eval_int(Cast(kBool, f32(0.0))), 0);
  EXPECT_EQ(eval_int(Cast(kBool, f32(NAN))), 1);                        // nonzero, as in C
  EXPECT_EQ(eval_int(Cast(kI32, Bool(true))), 1);
  EXPECT_EQ(eval_float(Cast(kF32, i32(16777217))), 16777216.0);         // nearest float
  EXPECT_EQ(eval_float(Cast(kF32, IntImm(kI64, (int64_t{1} << 53) + 1))), std::ldexp(1.0, 53));
  EXPECT_EQ(eval_float(Cast(kF32, IntImm(kU64, -1))), 18446744073709551616.0);
  EXPECT_EQ(eval_float(Cast(kF32, FloatImm(kF64, 0.1))), static_cast<double>(0.1f));
  EXPECT_EQ(eval_float(Cast(kF16, f32(65519))), 65504.0);
  EXPECT_EQ(eval_float(Cast(kF64, FloatImm(kF16, 0.1))), half_to_float(0x2e66));
  EXPECT_EQ(static_cast<uint64_t>(eval_int(Cast(kU64, FloatImm(kF64, 18446744073709549568.0)))),
            18446744073709549568ull);
}

TEST(Interp, OutOfRangeFloatToIntCastIsAnError) {
  struct Case {
    Expr value;
    DataType to;
    const char* message;
  };
  const Case cases[] = {
      {f32(300), kI8, "cast of out-of-range value 300 to int8"},
      {f32(128), kI8, "cast of out-of-range value 128 to int8"},
      {f32(-129), kI8, "cast of out-of-range value -129 to int8"},
      {f32(-1), kU8, "cast of out-of-range value -1 to uint8"},
      {f32(NAN), kI32, "cast of out-of-range value nan to int32"},
      {f32(INFINITY), kI64, "cast of out-of-range value inf to int64"},
      {f32(2147483648.0), kI32, "cast of out-of-range value 2147483648 to int32"},
      {FloatImm(kF64, 1.5e19), kI64, "cast of out-of-range value 1.5e+19 to int64"},
  };
  for (const Case& c : cases) {
    Failure f = failure_of([&] { eval_int(Cast(c.to, c.value, at(9))); });
    EXPECT_EQ(f.message, c.message);
    EXPECT_EQ(f.line, 9);
  }
  EXPECT_EQ(eval_int(Cast(kI32, FloatImm(kF64, -2147483648.9))), INT32_MIN);  // truncates into range
}

// ---- buffers -------------------------------------------------------------------------------

TEST(Interp, OutOfBoundsLoadAndStore) {
  FuncBuilder fb;
  Buffer a = fb.buffer("A", kF32, std::vector<int64_t>{4});
  Buffer b = fb.buffer("B", kF32, std::vector<int64_t>{2, 3});
  Var i = MakeVar("i", kI32);
  IRModule load_oob = fb.module(loop(i, 5, BufferStore(b, BufferLoad(a, {i}, at(7)), {i32(0), i32(0)}, at(7, 2))));
  NDArray A = NDArray::zeros(kF32, {4}), B = NDArray::zeros(kF32, {2, 3});
  Failure f = failure_of([&] { interpret(load_oob, "f", {&A, &B}); });
  EXPECT_EQ(f.message, "out-of-bounds access to buffer 'A': index [4] outside shape (4)");
  EXPECT_EQ(f.line, 7);

  FuncBuilder fb2;
  Buffer a2 = fb2.buffer("A", kF32, std::vector<int64_t>{4});
  Buffer b2 = fb2.buffer("B", kF32, std::vector<int64_t>{2, 3});
  IRModule store_oob = fb2.module(BufferStore(b2, f32(1), {i32(1), i32(-1)}, at(8)));
  f = failure_of([&] { interpret(store_oob, "f", {&A, &B}); });
  EXPECT_EQ(f.message, "out-of-bounds access to buffer 'B': index [1, -1] outside shape (2, 3)");
  EXPECT_EQ(f.line, 8);

  // A load without a span of its own is reported at the enclosing statement.
  FuncBuilder fb3;
  Buffer a3 = fb3.buffer("A", kF32, std::vector<int64_t>{4});
  IRModule spanless = fb3.module(BufferStore(a3, BufferLoad(a3, {i32(9)}), {i32(0)}, at(11)));
  f = failure_of([&] { interpret(spanless, "f", {&A}); });
  EXPECT_EQ(f.message, "out-of-bounds access to buffer 'A': index [9] outside shape (4)");
  EXPECT_EQ(f.line, 11);
}

TEST(Interp, UninitializedReadOfAllocatedBuffer) {
  FuncBuilder fb;
  Buffer out = fb.buffer("Out", kI32, std::vector<int64_t>{4});
  Buffer tmp = MakeBuffer("tmp", kI32, {i32(4)});
  Var i = MakeVar("i", kI32);
  // Writes tmp[0..2] but reads tmp[0..3].
  IRModule m = fb.module(Allocate(tmp, "global", seq({
      loop(i, 3, BufferStore(tmp, i, {i})),
      loop(i, 4, BufferStore(out, BufferLoad(tmp, {i}, at(6)), {i})),
  })));
  NDArray Out = NDArray::zeros(kI32, {4});
  Failure f = failure_of([&] { interpret(m, "f", {&Out}); });
  EXPECT_EQ(f.message, "read of uninitialized element 3 of buffer 'tmp'");
  EXPECT_EQ(f.line, 6);
  EXPECT_EQ(Out.get_int(2), 2);  // the earlier iterations ran
}

TEST(Interp, AllocationIsFreshOnEveryEntry) {
  // tmp is allocated inside the loop: a value written in iteration 0 must not count
  // as initialized in iteration 1.
  FuncBuilder fb;
  Buffer out = fb.buffer("Out", kI32, std::vector<int64_t>{2});
  Buffer tmp = MakeBuffer("tmp", kI32, {i32(1)});
  Var i = MakeVar("i", kI32);
  IRModule m = fb.module(loop(i, 2, Allocate(tmp, "local", IfThenElse(bin(ExprKind::EQ, i, i32(0)),
                                                                       BufferStore(tmp, i32(5), {i32(0)}),
                                                                       BufferStore(out, BufferLoad(tmp, {i32(0)}), {i})))));
  NDArray Out = NDArray::zeros(kI32, {2});
  EXPECT_EQ(failure_of([&] { interpret(m, "f", {&Out}); }).message, "read of uninitialized element 0 of buffer 'tmp'");
}

TEST(Interp, AllocationLimit) {
  FuncBuilder fb;
  Buffer huge = MakeBuffer("huge", kF32, {i32(1 << 20), i32(1 << 20)});
  IRModule m = fb.module(Allocate(huge, "global", NoOp(), at(3)));
  Failure f = failure_of([&] { interpret(m, "f", {}); });
  EXPECT_EQ(f.message, "allocation of buffer 'huge' is larger than the interpreter's limit of 1073741824 bytes");
  EXPECT_EQ(f.line, 3);
}

TEST(Interp, StridesAndElemOffset) {
  // A column-major parameter: A[r, c] lives at r + 3 * c.
  FuncBuilder fb;
  auto col_major = std::make_shared<BufferNode>(*MakeBuffer("A", kI32, {i32(3), i32(3)}));
  col_major->strides = {i32(1), i32(3)};
  fb.add_buffer_param("A", col_major);
  Buffer out = fb.buffer("Out", kI32, std::vector<int64_t>{2, 3});
  // A view of A's memory shaped (2, 3) with row stride 4, starting at element 1.
  auto view = std::make_shared<BufferNode>(*MakeBuffer("V", kI32, {i32(2), i32(3)}));
  view->data = col_major->data;
  view->strides = {i32(4), i32(1)};
  view->elem_offset = i32(1);
  Var r = MakeVar("r", kI32), c = MakeVar("c", kI32);
  IRModule m = fb.module(seq({
      BufferStore(col_major, i32(100), {i32(2), i32(1)}),  // element 2 + 3 * 1 = 5
      loop(r, 2, loop(c, 3, BufferStore(out, BufferLoad(Buffer(view), {r, c}), {r, c}))),
  }));
  NDArray A = NDArray::zeros(kI32, {3, 3}), Out = NDArray::zeros(kI32, {2, 3});
  for (int x = 0; x < 9; ++x) A.set_int(x, x * 10);
  interpret(m, "f", {&A, &Out});
  EXPECT_EQ(A.get_int(5), 100);
  for (int rr = 0; rr < 2; ++rr)
    for (int cc = 0; cc < 3; ++cc) EXPECT_EQ(Out.get_int(rr * 3 + cc), A.get_int(1 + 4 * rr + cc)) << rr << cc;

  // The same view one element further reaches past the 9 elements of A.
  auto far = std::make_shared<BufferNode>(*view);
  far->elem_offset = i32(4);
  FuncBuilder fb2;
  fb2.add_buffer_param("A", col_major);
  IRModule m2 = fb2.module(Evaluate(BufferLoad(Buffer(far), {i32(1), i32(2)}, at(4))));
  Failure f = failure_of([&] { interpret(m2, "f", {&A}); });
  EXPECT_EQ(f.message, "out-of-bounds access to buffer 'V': index [1, 2] is element 10, outside its storage of 9 elements");
  EXPECT_EQ(f.line, 4);
}

TEST(Interp, SymbolicShape) {
  FuncBuilder fb;
  Var n = fb.scalar("n", kI32);
  Buffer a = fb.buffer("A", kF32, std::vector<Expr>{n});
  Buffer b = fb.buffer("B", kF32, std::vector<Expr>{n});
  Var i = MakeVar("i", kI32);
  IRModule m = fb.module(For(i, i32(0), n, ForKind::kParallel, BufferStore(b, mul(BufferLoad(a, {i}), f32(2)), {i})));
  NDArray A = NDArray::zeros(kF32, {5}), B = NDArray::zeros(kF32, {5});
  for (int x = 0; x < 5; ++x) A.set_float(x, x + 0.5);
  interpret(m, "f", {int64_t{5}, &A, &B});
  for (int x = 0; x < 5; ++x) EXPECT_EQ(B.get_float(x), 2 * x + 1.0);
  EXPECT_EQ(failure_of([&] { interpret(m, "f", {int64_t{4}, &A, &B}); }).message,
            "argument 'A': expected shape (4) but got (5)");
}

TEST(Interp, ShapeVariableBoundFromTheTensor) {
  // m is no parameter: it takes its value from the first tensor that uses it.
  FuncBuilder fb;
  Var m_var = MakeVar("m", kI32);
  Buffer a = fb.buffer("A", kI32, std::vector<Expr>{m_var});
  Buffer b = fb.buffer("B", kI32, std::vector<Expr>{m_var});
  Var i = MakeVar("i", kI32);
  IRModule mod = fb.module(loop(i, 3, BufferStore(b, add(BufferLoad(a, {i}), m_var), {i})));
  NDArray A = NDArray::zeros(kI32, {3}), B = NDArray::zeros(kI32, {3}), B4 = NDArray::zeros(kI32, {4});
  interpret(mod, "f", {&A, &B});
  EXPECT_EQ(B.get_int(2), 3);
  EXPECT_EQ(failure_of([&] { interpret(mod, "f", {&A, &B4}); }).message,
            "argument 'B': expected shape (3) but got (4)");
}

TEST(Interp, WrongArguments) {
  FuncBuilder fb;
  fb.buffer("A", kF32, std::vector<int64_t>{4, 8});
  fb.scalar("alpha", kF32);
  IRModule m = fb.module(NoOp(), "scale");
  NDArray good = NDArray::zeros(kF32, {4, 8}), wrong_shape = NDArray::zeros(kF32, {8, 3});
  NDArray wrong_type = NDArray::zeros(kI32, {4, 8}), wrong_rank = NDArray::zeros(kF32, {32});
  EXPECT_EQ(failure_of([&] { interpret(m, "scale", {&wrong_shape, 1.0}); }).message,
            "argument 'A': expected shape (4, 8) but got (8, 3)");
  EXPECT_EQ(failure_of([&] { interpret(m, "scale", {&wrong_rank, 1.0}); }).message,
            "argument 'A': expected shape (4, 8) but got (32)");
  EXPECT_EQ(failure_of([&] { interpret(m, "scale", {&wrong_type, 1.0}); }).message,
            "argument 'A': expected float32 but got int32");
  EXPECT_EQ(failure_of([&] { interpret(m, "scale", {&good}); }).message, "'scale' takes 2 arguments but got 1");
  EXPECT_EQ(failure_of([&] { interpret(m, "scale", {1.0, &good}); }).message,
            "argument 'A': expected a float32 tensor but got a scalar");
  EXPECT_EQ(failure_of([&] { interpret(m, "scale", {&good, &good}); }).message,
            "argument 'alpha': expected a float32 scalar but got a tensor");
  EXPECT_EQ(failure_of([&] { interpret(m, "nope", {}); }).message, "no function 'nope' in module");
  interpret(m, "scale", {&good, int64_t{2}});  // an integer for a float scalar converts

  FuncBuilder fb2;
  fb2.scalar("k", kI8);
  IRModule m2 = fb2.module(NoOp());
  EXPECT_EQ(failure_of([&] { interpret(m2, "f", {int64_t{300}}); }).message,
            "argument 'k': value 300 does not fit in int8");
  EXPECT_EQ(failure_of([&] { interpret(m2, "f", {1.5}); }).message,
            "argument 'k': expected an integer for int8 but got a float");
}

TEST(Interp, MalformedTensorAndUnsignedScalar) {
  FuncBuilder fb;
  Buffer b = fb.buffer("B", kU64, std::vector<int64_t>{1});
  Var big = fb.scalar("big", kU64);
  IRModule m = fb.module(BufferStore(b, bin(ExprKind::Div, big, IntImm(kU64, 2)), {i32(0)}));
  NDArray B = NDArray::zeros(kU64, {1});
  interpret(m, "f", {&B, static_cast<int64_t>(UINT64_MAX)});  // uint64 passes its bit pattern
  EXPECT_EQ(static_cast<uint64_t>(B.get_int(0)), UINT64_MAX / 2);
  B.data.resize(4);  // bytes no longer match the shape
  EXPECT_EQ(failure_of([&] { interpret(m, "f", {&B, int64_t{1}}); }).message,
            "argument 'B': tensor holds 4 bytes but its shape (1) of uint64 needs 8");
}

TEST(Interp, ErrorsRenderWithLocation) {
  FuncBuilder fb;
  Buffer a = fb.buffer("A", kI32, std::vector<int64_t>{2});
  IRModule m = fb.module(BufferStore(a, i32(1), {i32(2)}, at(7, 3)));
  NDArray A = NDArray::zeros(kI32, {2});
  try {
    interpret(m, "f", {&A});
    ADD_FAILURE() << "no error";
  } catch (const DiagnosticError& e) {
    std::string text = render_all(e.diagnostics());
    EXPECT_NE(text.find("prog.tir:7:3: error: out-of-bounds access to buffer 'A'"), std::string::npos) << text;
  }
}

TEST(Interp, FloatDivisionFamily) {
  // Mod is C's fmod (truncating); FloorDiv is floor(a / b); FloorMod is a - floor(a / b) * b.
  EXPECT_EQ(eval_float(bin(ExprKind::Mod, f32(-7), f32(2))), -1.0);
  EXPECT_EQ(eval_float(bin(ExprKind::FloorDiv, f32(-7), f32(2))), -4.0);
  EXPECT_EQ(eval_float(bin(ExprKind::FloorMod, f32(-7), f32(2))), 1.0);
  EXPECT_EQ(eval_float(bin(ExprKind::FloorMod, f32(7.5), f32(-2))), -0.5);
  EXPECT_TRUE(std::isnan(eval_float(bin(ExprKind::Mod, f32(1), f32(0)))));
}

// ---- control flow ---------------------------------------------------------------------------

TEST(Interp, IfThenElseIsLazyButSelectIsNot) {
  auto program = [](bool lazy) {
    FuncBuilder fb;
    Buffer a = fb.buffer("A", kF32, std::vector<int64_t>{4});
    Buffer b = fb.buffer("B", kF32, std::vector<int64_t>{6});
    Var i = MakeVar("i", kI32);
    Expr in_range = lt(i, i32(4));
    Expr load = BufferLoad(a, {i}, at(5));
    Expr v = lazy ? Call(kF32, "if_then_else", {in_range, load, f32(-1)}) : Select(in_range, load, f32(-1));
    return fb.module(loop(i, 6, BufferStore(b, v, {i})));
  };
  NDArray A = NDArray::zeros(kF32, {4}), B = NDArray::zeros(kF32, {6});
  for (int x = 0; x < 4; ++x) A.set_float(x, x + 1);
  interpret(program(true), "f", {&A, &B});
  EXPECT_EQ(B.get_float(3), 4.0);
  EXPECT_EQ(B.get_float(4), -1.0);
  EXPECT_EQ(B.get_float(5), -1.0);
  Failure f = failure_of([&] { interpret(program(false), "f", {&A, &B}); });
  EXPECT_EQ(f.message, "out-of-bounds access to buffer 'A': index [4] outside shape (4)");
  EXPECT_EQ(f.line, 5);
}

TEST(Interp, AndOrShortCircuit) {
  FuncBuilder fb;
  Buffer a = fb.buffer("A", kI32, std::vector<int64_t>{2});
  Buffer b = fb.buffer("B", kBool, std::vector<int64_t>{4});
  Var i = MakeVar("i", kI32);
  Expr guarded_and = bin(ExprKind::And, lt(i, i32(2)), bin(ExprKind::GT, BufferLoad(a, {i}), i32(0)));
  Expr guarded_or = bin(ExprKind::Or, bin(ExprKind::GE, i, i32(2)), bin(ExprKind::GT, BufferLoad(a, {i}), i32(0)));
  IRModule m = fb.module(loop(i, 4, seq({BufferStore(b, guarded_and, {i}),
                                          IfThenElse(guarded_or, NoOp(), BufferStore(b, Not(guarded_and), {i}))})));
  NDArray A = NDArray::zeros(kI32, {2}), B = NDArray::zeros(kBool, {4});
  A.set_int(0, 5), A.set_int(1, -5);
  interpret(m, "f", {&A, &B});
  EXPECT_EQ(B.get_int(0), 1);
  EXPECT_EQ(B.get_int(1), 1);  // overwritten by not(false)
  EXPECT_EQ(B.get_int(2), 0);
  EXPECT_EQ(B.get_int(3), 0);
}

TEST(Interp, LetStmtAndLoopBounds) {
  FuncBuilder fb;
  Buffer b = fb.buffer("B", kI32, std::vector<int64_t>{10});
  Var i = MakeVar("i", kI32), base = MakeVar("base", kI32);
  // for i in T.serial(3, 7): B[i] = base + i, with base bound by a let; the let's
  // binding ends with its body.
  IRModule m = fb.module(LetStmt(base, i32(100), For(i, i32(3), i32(4), ForKind::kUnrolled,
                                                        AttrStmt(StringImm("x"), "pragma", i32(1),
                                                                 BufferStore(b, add(base, i), {i})))));
  NDArray B = NDArray::zeros(kI32, {10});
  interpret(m, "f", {&B});
  for (int x = 0; x < 10; ++x) EXPECT_EQ(B.get_int(x), (x >= 3 && x < 7) ? 100 + x : 0) << x;
}

TEST(Interp, AssertFailure) {
  FuncBuilder fb;
  Var n = fb.scalar("n", kI32);
  IRModule m = fb.module(AssertStmt(bin(ExprKind::GT, n, i32(0)), "n must be positive", NoOp(), at(2)));
  interpret(m, "f", {int64_t{1}});
  Failure f = failure_of([&] { interpret(m, "f", {int64_t{0}}); });
  EXPECT_EQ(f.message, "assertion failed: n must be positive");
  EXPECT_EQ(f.line, 2);
}

TEST(Interp, StepLimit) {
  FuncBuilder fb;
  Buffer b = fb.buffer("B", kI32, std::vector<int64_t>{1});
  Var i = MakeVar("i", kI32), j = MakeVar("j", kI32);
  IRModule m = fb.module(loop(i, 1000, loop(j, 1000, BufferStore(b, j, {i32(0)}))));
  NDArray B = NDArray::zeros(kI32, {1});
  InterpOptions options;
  options.max_steps = 10000;
  Failure f = failure_of([&] { interpret(m, "f", {&B}, options); });
  EXPECT_EQ(f.message, "step limit of 10000 exceeded (infinite or very long loop?)");
  options.max_steps = 3'000'000;
  interpret(m, "f", {&B}, options);
  EXPECT_EQ(B.get_int(0), 999);
}

TEST(Interp, CallExtern) {
  FuncBuilder fb;
  Buffer b = fb.buffer("B", kF32, std::vector<int64_t>{1});
  IRModule m = fb.module(BufferStore(
      b, Call(kF32, "call_extern", {StringImm("float32"), StringImm("my_fn"), f32(2), i32(3)}, {}, at(4)), {i32(0)}));
  NDArray B = NDArray::zeros(kF32, {1});
  Failure f = failure_of([&] { interpret(m, "f", {&B}); });
  EXPECT_EQ(f.message, "cannot interpret call_extern 'my_fn': external functions are not available to the interpreter");
  EXPECT_EQ(f.line, 4);
  InterpOptions options;
  options.extern_functions["my_fn"] = [](const std::vector<double>& args) { return args[0] * 10 + args[1]; };
  interpret(m, "f", {&B}, options);
  EXPECT_EQ(B.get_float(0), 23.0);
}

// ---- the compiled form and the tree walk -------------------------------------------------

// Runs `m` on copies of `inputs` once compiled and once walked as a tree: the same bytes
// out, or the same first diagnostic (message and line), which it returns.
std::string expect_forms_agree(const IRModule& m, const std::vector<NDArray>& inputs, InterpOptions options = {}) {
  std::vector<NDArray> results[2];
  std::string errors[2];
  for (int walk = 0; walk < 2; ++walk) {
    options.tree_walk = walk == 1;
    results[walk] = inputs;
    std::vector<InterpArg> args;
    for (NDArray& a : results[walk]) args.push_back(&a);
    try {
      interpret(m, "f", args, options);
    } catch (const DiagnosticError& e) {
      errors[walk] = e.diagnostics().empty() ? "?" : e.diagnostics()[0].message + " @" +
                                                         std::to_string(e.diagnostics()[0].span.line);
    }
  }
  EXPECT_EQ(errors[0], errors[1]);
  for (size_t k = 0; k < inputs.size(); ++k) EXPECT_EQ(results[0][k].data, results[1][k].data) << "argument " << k;
  return errors[0];
}

// An int8 convolution row as the TFLite kernels lower it: int32 accumulation through an
// allocated accumulator, requantization by multiply, rounding shift and clamp, a strided
// view and a guarded (if_then_else) padding read; then the same with faults planted.
TEST(Interp, CompiledFormAgreesWithTreeWalk) {
  FuncBuilder fb;
  Buffer in = fb.buffer("In", kI8, std::vector<int64_t>{2, 9});
  Buffer w = fb.buffer("W", kI8, std::vector<int64_t>{3});
  Buffer out = fb.buffer("Out", kI8, std::vector<int64_t>{2, 8});
  Buffer acc = MakeBuffer("acc", kI32, {i32(1)});
  Var r = MakeVar("r", kI32), i = MakeVar("i", kI32), k = MakeVar("k", kI32), s = MakeVar("s", kI32);
  auto i32_of = [](Expr e) { return Cast(kI32, std::move(e)); };
  Expr x = add(i, k);
  Expr padded = Call(kI8, "if_then_else", {lt(x, i32(9)), BufferLoad(in, {r, x}), IntImm(kI8, 0)});
  Expr scaled = intrin("shift_right", add(mul(BufferLoad(acc, {i32(0)}), s), i32(64)), i32(7));
  Expr clamped = bin(ExprKind::Min, bin(ExprKind::Max, scaled, i32(-128)), i32(127));
  auto body = [&](int extent) {
    return loop(r, 2, loop(i, extent, Allocate(acc, "local", seq({
        BufferStore(acc, i32(0), {i32(0)}),
        loop(k, 3, BufferStore(acc, add(BufferLoad(acc, {i32(0)}), mul(i32_of(padded), i32_of(BufferLoad(w, {k})))),
                               {i32(0)}, at(5))),
        LetStmt(s, i32(93), BufferStore(out, Cast(kI8, clamped), {r, i}, at(6))),
    }))));
  };
  NDArray In = NDArray::zeros(kI8, {2, 9}), W = NDArray::zeros(kI8, {3}), Out = NDArray::zeros(kI8, {2, 8});
  for (int64_t v = 0; v < 18; ++v) In.set_int(v, (v * 37) % 256 - 128);
  W.set_int(0, 127), W.set_int(1, -128), W.set_int(2, 45);
  EXPECT_EQ(expect_forms_agree(fb.module(body(8)), {In, W, Out}), "");
  EXPECT_EQ(expect_forms_agree(fb.module(body(9)), {In, W, Out}),  // writes Out[r, 8]
            "out-of-bounds access to buffer 'Out': index [0, 8] outside shape (2, 8) @6");
  InterpOptions few_steps;
  few_steps.max_steps = 150;  // runs out inside the second row
  EXPECT_EQ(expect_forms_agree(fb.module(body(8)), {In, W, Out}, few_steps),
            "step limit of 150 exceeded (infinite or very long loop?) @0");
  // Reading the accumulator before it is written.
  EXPECT_EQ(expect_forms_agree(fb.module(loop(r, 2, loop(i, 8, Allocate(acc, "local", BufferStore(
                out, Cast(kI8, BufferLoad(acc, {i32(0)}, at(9))), {r, i}))))), {In, W, Out}),
            "read of uninitialized element 0 of buffer 'acc' @9");
}

// The compiled form's shortcuts (interp/linear.h, compile_buffer.cc): index arithmetic of
// Add, Sub and Mul by constants folded into one linear form and inlined into flat
// accesses, widening casts folded into loads, int32 stores without a Scalar, and the DSP
// intrinsics on integer values. Each must give the tree walk's bytes, wrap-around and
// errors: int32 and int8 forms that overflow, a form mixing a load (a term of its own), a
// Mul of two variables, casts that widen (folded) and that do not (int8 -> uint32).
TEST(Interp, CompiledShortcutsAgreeWithTreeWalk) {
  FuncBuilder fb;
  Buffer in = fb.buffer("In", kI8, std::vector<int64_t>{4, 6});
  Buffer u = fb.buffer("U", kU8, std::vector<int64_t>{6});
  Buffer out = fb.buffer("Out", kI32, std::vector<int64_t>{4, 6, 6});
  auto flat_view = std::make_shared<BufferNode>(*MakeBuffer("Flat", kI32, {i32(144)}));
  flat_view->data = out->data;  // a flat view of Out, as kernels declare them
  Buffer flat = flat_view;
  Buffer wide = fb.buffer("Wide", DataType::UInt(32), std::vector<int64_t>{24});
  Buffer longs = fb.buffer("Long", kI64, std::vector<int64_t>{24, 2});
  Buffer floats = fb.buffer("Float", DataType::Float(32), std::vector<int64_t>{4, 6, 2});
  Var i = MakeVar("i", kI32), j = MakeVar("j", kI32), b = MakeVar("b", kI8);
  auto sub = [](Expr a, Expr b) { return bin(ExprKind::Sub, std::move(a), std::move(b)); };
  auto i8 = [](Expr e) { return Cast(kI8, std::move(e)); };
  auto to32 = [](Expr e) { return Cast(kI32, std::move(e)); };
  Expr x = to32(BufferLoad(in, {i, j})), w = to32(BufferLoad(u, {j}));
  auto body = [&](Expr flat_index) {
    return loop(i, 4, loop(j, 6, seq({
        BufferStore(out, sub(mul(i32(3), i), add(j, i32(INT32_MAX))), {i, j, i32(0)}),          // wraps
        BufferStore(out, to32(add(mul(i8(i), IntImm(kI8, 100)), sub(i8(j), IntImm(kI8, 7)))), {i, j, i32(1)}),
        BufferStore(out, add(mul(i, j), add(mul(x, i32(2)), sub(j, i))), {i, j, i32(2)}),       // i*j, a load term
        BufferStore(out, add(x, mul(x, w)), {i, j, i32(3)}),                                  // no variable
        BufferStore(out, Call(kI32, "smlabb", {x, w, BufferLoad(out, {i, j, i32(3)})}), {i, j, i32(4)}),
        // Accumulations (one address for the load and the store), one wrapping past INT32_MAX.
        BufferStore(out, add(BufferLoad(out, {i, j, i32(5)}), mul(x, w)), {i, j, i32(5)}),
        BufferStore(out, add(BufferLoad(out, {i, j, i32(0)}), i32(INT32_MAX)), {i, j, i32(0)}),
        BufferStore(wide, Cast(DataType::UInt(32), BufferLoad(in, {i, j})), {add(mul(i, i32(6)), j)}),
        // Forms whose wrap no store hides: int32 widened to int64, int8 over an int8
        // variable, and an index with a term i * 2^32 that wraps away.
        LetStmt(b, i8(add(i, j)), BufferStore(longs, Cast(kI64, sub(mul(i32(3), i), add(j, i32(INT32_MAX)))),
                                              {add(mul(mul(i, i32(65536)), i32(65536)), add(mul(i, i32(6)), j)), i32(0)})),
        LetStmt(b, i8(add(i, j)), BufferStore(longs, Cast(kI64, add(mul(b, IntImm(kI8, 100)), IntImm(kI8, -7))),
                                              {add(mul(i, i32(6)), j), i32(1)})),
        // Integer nodes read whole (eval, not eval_int) by a float cast: the value's type
        // must be the node's own (uint64 of a negative, int8 arithmetic that wraps).
        BufferStore(floats, Cast(DataType::Float(32), Cast(DataType::UInt(64), sub(i, add(j, i32(3))))), {i, j, i32(0)}),
        BufferStore(floats, Cast(DataType::Float(32), add(mul(i8(i), IntImm(kI8, 60)), i8(j))), {i, j, i32(1)}),
        BufferStore(flat, add(BufferLoad(flat, {flat_index}), i32(1)), {flat_index}, at(7)),
    })));
  };
  NDArray In = NDArray::zeros(kI8, {4, 6}), U = NDArray::zeros(kU8, {6}), Out = NDArray::zeros(kI32, {4, 6, 6});
  NDArray Wide = NDArray::zeros(DataType::UInt(32), {24}), Long = NDArray::zeros(kI64, {24, 2});
  NDArray Float = NDArray::zeros(DataType::Float(32), {4, 6, 2});
  for (int64_t v = 0; v < 24; ++v) In.set_int(v, (v * 53) % 256 - 128);
  for (int64_t v = 0; v < 6; ++v) U.set_int(v, 255 - v * 40);
  const std::vector<NDArray> args = {In, U, Out, Wide, Long, Float};
  EXPECT_EQ(expect_forms_agree(fb.module(body(add(mul(i, i32(36)), add(mul(j, i32(6)), i32(5))))), args), "");
  // Out of the flat view's bounds through a linear index: below 0, then past the end.
  EXPECT_EQ(expect_forms_agree(fb.module(body(sub(add(mul(i, i32(36)), j), i32(1)))), args),
            "out-of-bounds access to buffer 'Flat': index [-1] outside shape (144) @7");
  EXPECT_EQ(expect_forms_agree(fb.module(body(add(mul(i, i32(50)), j))), args),
            "out-of-bounds access to buffer 'Flat': index [150] outside shape (144) @7");
  // An accumulation into an allocation before its first write, and past its end: the
  // load's errors, at the load.
  Buffer acc = MakeBuffer("acc", kI32, {i32(2)});
  auto accumulate = [&](Expr index) {
    return loop(i, 4, Allocate(acc, "local", seq({BufferStore(acc, i32(0), {i32(0)}),
        BufferStore(acc, add(BufferLoad(acc, {index}, at(9)), i32(3)), {index}, at(8))})));
  };
  EXPECT_EQ(expect_forms_agree(fb.module(accumulate(i32(1))), args), "read of uninitialized element 1 of buffer 'acc' @9");
  EXPECT_EQ(expect_forms_agree(fb.module(accumulate(add(i, i32(-1)))), args),
            "out-of-bounds access to buffer 'acc': index [-1] outside shape (2) @9");
}

}  // namespace
}  // namespace mtir
