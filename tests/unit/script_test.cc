// Tests of the text-format parser and printer: round trips for every node kind and
// data type, exact printer output, literal promotion, error messages and locations,
// and robustness against truncated or mutated input.
#include <dirent.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <random>
#include <set>
#include <sstream>

#include "ir/structural_equal.h"
#include "ir/visitor.h"
#include "script/lexer.h"
#include "script/parser.h"
#include "script/printer.h"
#include "support/source_dir.h"

namespace mtir {
namespace {

IRModule parse_ok(const std::string& text) {
  ParseResult r = parse_module(text, "test.tir");
  EXPECT_TRUE(r.ok()) << render_all(r.diagnostics) << "\n--- input ---\n" << text;
  return r.ok() ? *r.module : IRModule{};
}

// parse -> print -> parse gives an equal module, and printing is a fixed point.
void expect_round_trip_module(const IRModule& m1) {
  std::string p1 = print_module(m1);
  ParseResult r2 = parse_module(p1, "printed.tir");
  ASSERT_TRUE(r2.ok()) << render_all(r2.diagnostics) << "\n--- printed ---\n" << p1;
  EXPECT_TRUE(structural_equal(m1, *r2.module)) << structural_diff(m1, *r2.module) << "\n--- printed ---\n" << p1;
  EXPECT_EQ(print_module(*r2.module), p1);
}

void expect_round_trip(const std::string& text) {
  ParseResult r = parse_module(text, "test.tir");
  ASSERT_TRUE(r.ok()) << render_all(r.diagnostics) << "\n--- input ---\n" << text;
  expect_round_trip_module(*r.module);
}

// The first diagnostic of a failing parse.
Diagnostic parse_error(const std::string& text) {
  ParseResult r = parse_module(text, "bad.tir");
  EXPECT_FALSE(r.ok()) << "expected a parse error for:\n" << text;
  if (r.diagnostics.empty()) return {};
  return r.diagnostics.front();
}

std::string func_src(const std::string& params, const std::string& body) {
  std::string out = "@T.prim_func\ndef f(" + params + "):\n";
  std::istringstream in(body);
  std::string line;
  while (std::getline(in, line)) out += "    " + line + "\n";
  return out;
}

std::vector<std::string> list_dir(const std::string& dir, const std::string& suffix) {
  std::vector<std::string> out;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (n.size() > suffix.size() && n.compare(n.size() - suffix.size(), suffix.size(), suffix) == 0)
        out.push_back(dir + "/" + n);
    }
    closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

const char* kMatmul = R"(# from tvm.script import ir as I
# from tvm.script import tir as T

@I.ir_module
class Module:
    I.module_attrs({"model": "demo"})

    @T.prim_func
    def matmul(A: T.Buffer((4, 8), "float32"), B: T.Buffer((8, 3), "float32"), C: T.Buffer((4, 3), "float32")):
        T.func_attr({"global_symbol": "matmul", "tir.noalias": True})
        for i, j in T.grid(4, 3):
            C[i, j] = T.float32(0)
            for k in range(8):
                C[i, j] = C[i, j] + A[i, k] * B[k, j]
)";

// ---- the documented example ------------------------------------------------------

TEST(Script, MatmulFromDocParses) {
  IRModule m = parse_ok(kMatmul);
  ASSERT_EQ(m.functions.size(), 1u);
  EXPECT_EQ(m.name, "Module");
  EXPECT_EQ(std::get<std::string>(m.attrs.at("model")), "demo");
  PrimFunc f = m.lookup("matmul");
  ASSERT_TRUE(f);
  ASSERT_EQ(f->params.size(), 3u);
  ASSERT_TRUE(f->param_buffers[0]);
  EXPECT_EQ(f->param_buffers[0]->ndim(), 2u);
  EXPECT_EQ(f->param_buffers[0]->dtype, DataType::Float(32));
  EXPECT_EQ(std::get<bool>(f->attrs.at("tir.noalias")), true);
  const auto* fi = as<ForNode>(f->body);
  ASSERT_TRUE(fi);
  const auto* fj = as<ForNode>(fi->body);
  ASSERT_TRUE(fj);
  EXPECT_EQ(*as_const_int(fi->extent), 4);
  EXPECT_EQ(*as_const_int(fj->extent), 3);
  const auto* seq = as<SeqStmtNode>(fj->body);
  ASSERT_TRUE(seq);
  ASSERT_EQ(seq->seq.size(), 2u);
  const auto* init = as<BufferStoreNode>(seq->seq[0]);
  ASSERT_TRUE(init);
  EXPECT_TRUE(as<FloatImmNode>(init->value));
  // Spans point into the source.
  EXPECT_EQ(fi->span.line, 11);
  EXPECT_EQ(fi->span.col, 9);
  ASSERT_TRUE(fi->span.file);
  EXPECT_EQ(fi->span.file->name, "test.tir");
  EXPECT_EQ(init->span.line, 12);
}

TEST(Script, MatmulPrintsExactlyAsDocumented) {
  IRModule m = parse_ok(kMatmul);
  EXPECT_EQ(print_module(m), kMatmul);
  expect_round_trip(kMatmul);
}

TEST(Script, BundledExampleRoundTrips) {
  std::ifstream in(std::string(mtir::source_dir()) + "/examples/matmul.tir");
  if (!in) GTEST_SKIP() << "examples/matmul.tir not present";
  std::stringstream ss;
  ss << in.rdbuf();
  expect_round_trip(ss.str());
}

TEST(Script, SingleFunctionWithoutModule) {
  IRModule m = parse_ok("from tvm.script import tir as T\n\n" +
                        func_src("A: T.Buffer((4,), \"int32\")", "for i in range(4):\n    A[i] = i"));
  EXPECT_EQ(m.name, "Module");
  ASSERT_EQ(m.functions.size(), 1u);
  EXPECT_EQ(m.functions[0].first, "f");
}

TEST(Script, SeveralFunctionsWithoutModuleAndBlankTabLines) {
  IRModule m = parse_ok(func_src("n: T.int32", "T.evaluate(n)") + "\t\n  # comment\n\n" +
                        "@T.prim_func\ndef g(m: T.int32):\n    T.evaluate(m)\n");
  ASSERT_EQ(m.functions.size(), 2u);
  EXPECT_EQ(m.functions[1].first, "g");
  expect_round_trip_module(m);
}

// ---- exact printer output -----------------------------------------------------------

TEST(Script, PrintsGridLetAllocAssertAttrIfElse) {
  const char* text = R"(# from tvm.script import ir as I
# from tvm.script import tir as T

@I.ir_module
class Module:
    @T.prim_func
    def f(A: T.Buffer((4, 3), "float32"), n: T.int32) -> T.int32:
        for i, j in T.grid(4, 3):
            A[i, j] = T.float32(0.5)
        x: T.int32 = n * 2 + 1
        B = T.alloc_buffer((16,), "float32", scope="global")
        assert x > 0, "x must be positive"
        with T.attr(B.data, "pragma", 1):
            if x < 4 and n != 3:
                B[x] = A[0, 1] / T.float32(2)
            elif not x == 5:
                B[0] = T.float32(-1.25)
            else:
                T.evaluate(0)
        T.evaluate(T.truncdiv(x, 2) - T.truncmod(n, 3) + x // 2 % 3)
)";
  IRModule m = parse_ok(text);
  EXPECT_EQ(print_module(m), text);
  expect_round_trip(text);
}

TEST(Script, PrintsTypedConstantsAndSerialRanges) {
  const char* text = R"(# from tvm.script import ir as I
# from tvm.script import tir as T

@I.ir_module
class Module:
    @T.prim_func
    def f(A: T.Buffer((T.int64(8),), "int64"), n: T.int32):
        for i in range(T.int64(8)):
            A[i] = i * T.int64(3) + T.int64(-7)
        for j in T.serial(2, 6):
            T.evaluate(j)
        for k in T.serial(n, n + 4):
            T.evaluate(k)
        for k_1 in T.parallel(n, n * 2):
            T.evaluate(k_1)
        for u in T.unroll(4):
            for v in T.vectorized(1, 3):
                T.evaluate(u + v)
)";
  IRModule m = parse_ok(text);
  EXPECT_EQ(print_module(m), text);
  expect_round_trip(text);
}

TEST(Script, SerialFromZeroAndReusedLoopVariable) {
  IRModule m = parse_ok(func_src("n: T.int64", "for i in T.serial(0, n):\n    T.evaluate(i)"));
  const auto* f = as<ForNode>(m.functions[0].second->body);
  ASSERT_TRUE(f);
  EXPECT_TRUE(as<VarNode>(f->extent));
  EXPECT_EQ(f->loop_var->dtype, DataType::Int(64));
  expect_round_trip_module(m);
  // The same Var bound by two sibling loops prints with one name.
  DataType i32 = DataType::Int(32);
  Var i = MakeVar("i", i32);
  Stmt loop = For(i, IntImm(i32, 0), IntImm(i32, 2), ForKind::kSerial, Evaluate(i));
  auto fn = std::make_shared<PrimFuncNode>();
  fn->body = SeqStmt({loop, loop});
  std::string p = print_func("f", fn);
  EXPECT_EQ(p.find("i_1"), std::string::npos) << p;
}

TEST(Script, SerialStartStopConvention) {
  IRModule m = parse_ok(func_src("n: T.int32, m: T.int32",
                                 "for i in T.serial(2, 10):\n    T.evaluate(i)\n"
                                 "for j in T.serial(n, m):\n    T.evaluate(j)"));
  const auto* seq = as<SeqStmtNode>(m.functions[0].second->body);
  ASSERT_TRUE(seq);
  const auto* f1 = as<ForNode>(seq->seq[0]);
  EXPECT_EQ(*as_const_int(f1->min), 2);
  EXPECT_EQ(*as_const_int(f1->extent), 8);
  const auto* f2 = as<ForNode>(seq->seq[1]);
  EXPECT_TRUE(as<SubNode>(f2->extent));
  EXPECT_NE(print_module(m).find("for j in T.serial(n, m):"), std::string::npos) << print_module(m);
  expect_round_trip_module(m);
}

TEST(Script, MinimalParentheses) {
  IRModule m = parse_ok(func_src("a: T.int32, b: T.int32, c: T.int32",
                                 "T.evaluate((a + b) * c)\nT.evaluate(a + b * c)\nT.evaluate(a - (b - c))\n"
                                 "T.evaluate((a - b) - c)\nT.evaluate(-a * b)\nT.evaluate((a < b) == (b < c))\n"
                                 "T.evaluate(not (a < b or b < c) and a == b)"));
  std::string p = print_module(m);
  EXPECT_NE(p.find("T.evaluate((a + b) * c)"), std::string::npos) << p;
  EXPECT_NE(p.find("T.evaluate(a + b * c)"), std::string::npos) << p;
  EXPECT_NE(p.find("T.evaluate(a - (b - c))"), std::string::npos) << p;
  EXPECT_NE(p.find("T.evaluate(a - b - c)"), std::string::npos) << p;
  EXPECT_NE(p.find("T.evaluate(-a * b)"), std::string::npos) << p;
  EXPECT_NE(p.find("T.evaluate((a < b) == (b < c))"), std::string::npos) << p;
  EXPECT_NE(p.find("T.evaluate(not (a < b or b < c) and a == b)"), std::string::npos) << p;
  expect_round_trip_module(m);
}

// ---- round trips over every node kind and data type ------------------------------------

std::string every_expr_source() {
  return func_src(
      "A: T.Buffer((8,), \"float32\"), B: T.Buffer((8,), \"int32\"), n: T.int32, s: T.float32",
      "T.evaluate(1)\n"
      "T.evaluate(T.float32(1.5))\n"
      "T.evaluate(T.call_extern(\"int32\", \"puts\", \"hello \\\"world\\\"\\n\"))\n"
      "T.evaluate(n)\n"
      "T.evaluate(n + 1)\nT.evaluate(n - 1)\nT.evaluate(n * 2)\nT.evaluate(n / 2)\nT.evaluate(s / s)\n"
      "T.evaluate(T.truncmod(n, 3))\nT.evaluate(T.truncmod(s, s))\nT.evaluate(T.truncdiv(n, 3))\n"
      "T.evaluate(n // 2)\nT.evaluate(n % 2)\n"
      "T.evaluate(T.floordiv(n, 2))\nT.evaluate(T.floormod(n, 2))\nT.evaluate(T.min(n, 2))\nT.evaluate(T.max(s, 2))\n"
      "T.evaluate(n == 1)\nT.evaluate(n != 1)\nT.evaluate(n < 1)\nT.evaluate(n <= 1)\nT.evaluate(n > 1)\n"
      "T.evaluate(n >= 1)\n"
      "T.evaluate(n > 1 and n < 5)\nT.evaluate(n > 1 or n < 5)\nT.evaluate(not n > 1)\n"
      "T.evaluate(T.And(True, False))\nT.evaluate(T.Or(True, False))\nT.evaluate(T.Not(True))\n"
      "T.evaluate(T.Select(n > 0, s, 1.5))\n"
      "T.evaluate(T.Cast(\"float32\", n))\nT.evaluate(T.Cast(T.int64, n))\n"
      "T.evaluate(A[n] + T.Cast(\"float32\", B[0]))\n"
      "T.evaluate(T.exp(s) + T.log(s) + T.sqrt(s) + T.tanh(s) + T.sigmoid(s) + T.sin(s) + T.cos(s))\n"
      "T.evaluate(T.floor(s) + T.ceil(s) + T.round(s) + T.erf(s) + T.abs(s) + T.pow(s, 2))\n"
      "T.evaluate(T.abs(n))\nT.evaluate(s ** 2)\n"
      "T.evaluate(T.if_then_else(n > 0, A[n], 0))\n"
      "T.evaluate(T.call_extern(\"float32\", \"my_fn\", s, n, attrs={\"pure\": True, \"cost\": 3}))\n"
      "T.evaluate(T.exp(s, attrs={\"fast\": 1.5, \"name\": \"x\", \"neg\": -2}))\n"
      "T.evaluate(-s)\nT.evaluate(-n)\nT.evaluate(-5)\nT.evaluate(T.float32(-0.0))\n"
      "A[0:4] = A[4:8] + T.Broadcast(s, 4)\n"
      "A[T.Ramp(0, 2, 4)] = A[1:8:2]\n"
      "T.evaluate(T.Shuffle([A[0:4], A[4:8]], [0, 4, 1, 5]))\n"
      "T.evaluate(T.Let(x * x + n, where={x: n + 1}))\n"
      "T.evaluate(T.float32x4(1.5) * A[0:4])");
}

std::string every_stmt_source() {
  return func_src("A: T.Buffer((8,), \"float32\"), n: T.int32",
                  "A[0] = T.float32(1)\n"
                  "for i in range(8):\n    A[i] = A[i] * 2\n"
                  "for i in T.unroll(2, 6):\n    A[i] = 0\n"
                  "for i in T.parallel(n):\n    A[i] = 0\n"
                  "for i in T.vectorized(4):\n    A[i] = 0\n"
                  "if n > 0:\n    A[0] = 1\n"
                  "if n > 0:\n    A[0] = 1\nelse:\n    A[1] = 1\n"
                  "while A[0] > T.float32(1):\n    A[0] = A[0] / 2\n"
                  "with T.attr(A.data, \"storage_alignment\", 64):\n    A[2] = 2\n"
                  "with T.attr(\"x\", \"note\", n):\n    pass\n"
                  "T.evaluate(0)\n"
                  "x: T.int32 = n + 1\n"
                  "A[x] = 3\n"
                  "B = T.allocate([16], \"float32\", \"local\")\n"
                  "B[0] = A[0]\n"
                  "C = T.alloc_buffer((2, 2), \"int8\", scope=\"global\", strides=(2, 1), elem_offset=0, align=64)\n"
                  "C[1, 1] = T.int8(7)\n"
                  "with T.decl_buffer((2, 8), \"float32\", data=A.data) as A2:\n    A2[1, 0] = T.float32(5)\n"
                  "assert n > 0, \"n must be positive\"\n"
                  "K = T.allocate_const([1, 2], \"int32\", [2])\n"
                  "A[K[1]] = T.float32(6)\n"
                  "T.realize(A[0:4], \"global\")\n"
                  "A[n] = T.float32(4)");
}

TEST(Script, RoundTripEveryExpressionKind) { expect_round_trip(every_expr_source()); }
TEST(Script, RoundTripEveryStatementKind) { expect_round_trip(every_stmt_source()); }

// The two programs above really contain every node kind of ir/nodes.def.
class KindCollector : public Visitor {
 public:
  std::set<ExprKind> exprs;
  std::set<StmtKind> stmts;
  void visit(const Expr& e) override {
    if (e) exprs.insert(e->kind);
    Visitor::visit(e);
  }
  void visit(const Stmt& s) override {
    if (s) stmts.insert(s->kind);
    Visitor::visit(s);
  }
};

TEST(Script, RoundTripCorpusCoversEveryNodeKind) {
  KindCollector c;
  for (const std::string& src : {every_expr_source(), every_stmt_source()}) {
    IRModule m = parse_ok(src);
    for (const auto& [name, f] : m.functions) c.visit_func(f);
  }
#define MTIR_EXPR(Name) EXPECT_TRUE(c.exprs.count(ExprKind::Name)) << "no " #Name " in the round-trip corpus";
#define MTIR_STMT(Name) EXPECT_TRUE(c.stmts.count(StmtKind::Name)) << "no " #Name " in the round-trip corpus";
#include "ir/nodes.def"
}

TEST(Script, RoundTripEveryDataType) {
  const char* types[] = {"bool",   "int8",   "int16",  "int32",   "int64",   "uint8",
                         "uint16", "uint32", "uint64", "float16", "float32", "float64"};
  for (const char* t : types) {
    SCOPED_TRACE(t);
    std::string ty = t;
    std::string value = ty == "bool" ? "T.bool(True)" : "T." + ty + "(1)";
    std::string body = "x: T." + ty + " = " + value + "\nA[0] = x\n";
    if (ty != "bool") body += "A[1] = A[0] + " + value + "\nA[2] = A[1] - x\n";
    IRModule m = parse_ok(func_src("A: T.Buffer((4,), \"" + ty + "\"), s: T." + ty + ", h: T.handle", body));
    ASSERT_EQ(m.functions.size(), 1u);
    EXPECT_EQ(m.functions[0].second->params[1]->dtype, *DataType::parse(ty));
    EXPECT_EQ(m.functions[0].second->params[2]->dtype, DataType::Handle());
    expect_round_trip_module(m);
  }
}

TEST(Script, RoundTripExtremeConstants) {
  expect_round_trip(func_src(
      "",
      "T.evaluate(T.int64(-9223372036854775808))\nT.evaluate(T.int64(9223372036854775807))\n"
      "T.evaluate(T.uint64(18446744073709551615))\nT.evaluate(T.uint8(255))\nT.evaluate(T.int8(-128))\n"
      "T.evaluate(-2147483648)\nT.evaluate(2147483647)\nT.evaluate(3000000000)\n"
      "T.evaluate(T.float32(\"inf\"))\nT.evaluate(T.float64(\"-inf\"))\nT.evaluate(T.float32(\"nan\"))\n"
      "T.evaluate(T.float64(0.1))\nT.evaluate(T.float64(1e-300))\nT.evaluate(T.float64(1.7976931348623157e308))\n"
      "T.evaluate(T.float32(1e-3))\nT.evaluate(T.float16(65504))\nT.evaluate(T.float64(123456789.125))"));
}

TEST(Script, FloatsRoundTripExactly) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> dist(-1e6, 1e6);
  for (int i = 0; i < 200; ++i) {
    double v = i % 2 ? dist(rng) : static_cast<double>(static_cast<float>(dist(rng)) / 1024.0f);
    Expr e = FloatImm(DataType::Float(64), v);
    Stmt s = Evaluate(e);
    auto f = std::make_shared<PrimFuncNode>();
    f->body = s;
    IRModule m;
    m.functions.emplace_back("f", f);
    IRModule back = parse_module_or_throw(print_module(m));
    const auto* ev = as<EvaluateNode>(back.functions[0].second->body);
    ASSERT_TRUE(ev);
    EXPECT_EQ(as<FloatImmNode>(ev->value)->value, v) << print_module(m);
  }
}

TEST(Script, RoundTripSymbolicShapesAndBufferOptions) {
  expect_round_trip(func_src("A: T.Buffer((n, 4), \"float32\", strides=(8, 1), elem_offset=2, align=32), n: T.int32",
                             "for i in range(n):\n    A[i, 0] = A[i, 1]"));
}

TEST(Script, RoundTripMultipleFunctionsAndReturnType) {
  expect_round_trip(R"(@I.ir_module
class Mod:
    @T.prim_func
    def a(n: T.int32) -> T.int32:
        T.func_attr({"global_symbol": "a", "level": 2, "scale": 0.5, "alpha": 1.0})
        T.evaluate(n)

    @T.prim_func
    def b(X: T.Buffer((), "float32")):
        X[()] = T.float32(1)
)");
}

// ---- IR built in C++: shapes the parser never produces directly ----------------------

PrimFunc make_func(std::vector<Var> params, std::vector<Buffer> bufs, Stmt body) {
  auto f = std::make_shared<PrimFuncNode>();
  f->params = std::move(params);
  f->param_buffers = std::move(bufs);
  f->body = std::move(body);
  return f;
}

IRModule module_of(PrimFunc f) {
  IRModule m;
  m.functions.emplace_back("f", std::move(f));
  return m;
}

TEST(Script, RenamesClashingNames) {
  DataType i32 = DataType::Int(32);
  Buffer a = MakeBuffer("A", DataType::Int(32), {IntImm(i32, 4), IntImm(i32, 4)});
  Var pa = MakeVar("A", DataType::Handle());
  Var i1 = MakeVar("i", i32), i2 = MakeVar("i", i32), i3 = MakeVar("i", i32);
  // Two distinct variables named i in scope at once, then a third reusing the name.
  Stmt inner = For(i2, IntImm(i32, 0), IntImm(i32, 4), ForKind::kSerial,
                   BufferStore(a, Binary(ExprKind::Add, i1, i2), {i1, i2}));
  Stmt outer = For(i1, IntImm(i32, 0), IntImm(i32, 4), ForKind::kSerial, inner);
  Stmt third = For(i3, IntImm(i32, 0), IntImm(i32, 2), ForKind::kSerial, BufferStore(a, i3, {i3, i3}));
  // Names that are not identifiers or are keywords.
  Var weird = MakeVar("for", i32), digits = MakeVar("1x", i32), t = MakeVar("T", i32);
  Stmt lets =
      LetStmt(weird, IntImm(i32, 1),
              LetStmt(digits, IntImm(i32, 2), LetStmt(t, IntImm(i32, 3), Evaluate(Binary(ExprKind::Add, weird, t)))));
  IRModule m = module_of(make_func({pa}, {a}, SeqStmt({outer, third, lets})));
  std::string p = print_module(m);
  EXPECT_NE(p.find("for i, i_1 in T.grid(4, 4):"), std::string::npos) << p;
  EXPECT_NE(p.find("A[i, i_1] = i + i_1"), std::string::npos) << p;
  EXPECT_NE(p.find("for i_2 in range(2):"), std::string::npos) << p;
  expect_round_trip_module(m);
}

TEST(Script, ScopedStatementsFollowedByOthers) {
  DataType i32 = DataType::Int(32);
  Buffer a = MakeBuffer("A", i32, {IntImm(i32, 4)});
  Var pa = MakeVar("A", DataType::Handle());
  Var x = MakeVar("x", i32);
  Buffer tmp = MakeBuffer("tmp", i32, {IntImm(i32, 2)});
  Stmt let = LetStmt(x, IntImm(i32, 1), BufferStore(a, x, {IntImm(i32, 0)}));
  Stmt alloc = Allocate(tmp, "local", BufferStore(tmp, IntImm(i32, 5), {IntImm(i32, 1)}));
  Stmt assert_ = AssertStmt(Bool(true), "always", NoOp());
  Stmt tail = BufferStore(a, IntImm(i32, 9), {IntImm(i32, 3)});
  IRModule m = module_of(make_func({pa}, {a}, SeqStmt({let, alloc, assert_, tail})));
  std::string p = print_module(m);
  EXPECT_NE(p.find("with T.LetStmt(1) as x:"), std::string::npos) << p;
  EXPECT_NE(p.find("with T.alloc_buffer((2,), \"int32\", scope=\"local\") as tmp:"), std::string::npos) << p;
  EXPECT_NE(p.find("with T.Assert(True, \"always\"):"), std::string::npos) << p;
  expect_round_trip_module(m);
}

TEST(Script, LoopsWithNonZeroMinAndSymbolicExtent) {
  DataType i32 = DataType::Int(32), i64 = DataType::Int(64);
  Var n = MakeVar("n", i32), m_ = MakeVar("m", i32);
  Var i = MakeVar("i", i32), j = MakeVar("j", i32), k = MakeVar("k", i32), k2 = MakeVar("k", i32);
  Var l = MakeVar("l", i64);
  Var g0 = MakeVar("g", i32), g1 = MakeVar("h", i32);
  Stmt body = SeqStmt({
      For(i, n, IntImm(i32, 4), ForKind::kSerial, Evaluate(i)),                  // n + 4
      For(j, IntImm(i32, 3), m_, ForKind::kUnrolled, Evaluate(j)),               // 3 + m
      For(k, n, Binary(ExprKind::Sub, m_, n), ForKind::kParallel, Evaluate(k)),  // stop m
      For(k2, n, Binary(ExprKind::Sub, Binary(ExprKind::Add, n, m_), n), ForKind::kSerial, Evaluate(k2)),
      For(l, IntImm(i64, 0), IntImm(i64, 5), ForKind::kVectorized, Evaluate(l)),
      // Inner extent depends on the outer variable: not a T.grid.
      For(g0, IntImm(i32, 0), n, ForKind::kSerial, For(g1, IntImm(i32, 0), g0, ForKind::kSerial, Evaluate(g1))),
  });
  IRModule m = module_of(make_func({n, m_}, {nullptr, nullptr}, body));
  std::string p = print_module(m);
  EXPECT_NE(p.find("for g in range(n):"), std::string::npos) << p;
  expect_round_trip_module(m);
}

TEST(Script, FloatModAndIntDivAndUnsignedConstants) {
  DataType f32 = DataType::Float(32), u32 = DataType::UInt(32), i32 = DataType::Int(32);
  Var s = MakeVar("s", f32), u = MakeVar("u", u32), n = MakeVar("n", i32);
  Stmt body = SeqStmt({
      Evaluate(Binary(ExprKind::Mod, s, FloatImm(f32, 2.5))),
      Evaluate(Binary(ExprKind::Div, n, IntImm(i32, 2))),
      Evaluate(Binary(ExprKind::Add, u, IntImm(u32, 4294967295LL))),
      Evaluate(Call(i32, "call_extern", {StringImm("f")})),
  });
  IRModule m = module_of(make_func({s, u, n}, {nullptr, nullptr, nullptr}, body));
  std::string p = print_module(m);
  EXPECT_NE(p.find("T.truncdiv(n, 2)"), std::string::npos) << p;
  EXPECT_NE(p.find("T.uint32(4294967295)"), std::string::npos) << p;
  expect_round_trip_module(m);
}

TEST(Script, PrintExprAndStmtHelpers) {
  DataType i32 = DataType::Int(32);
  Var x = MakeVar("x", i32);
  EXPECT_EQ(print_expr(Binary(ExprKind::Mul, Binary(ExprKind::Add, x, IntImm(i32, 1)), x)), "(x + 1) * x");
  EXPECT_EQ(print_expr(FloatImm(DataType::Float(32), 0.5)), "T.float32(0.5)");
  EXPECT_EQ(print_expr(IntImm(DataType::Int(64), 5)), "T.int64(5)");
  EXPECT_EQ(print_expr(Bool(false)), "False");
  EXPECT_EQ(print_stmt(NoOp()), "T.evaluate(0)\n");
  auto f = make_func({x}, {nullptr}, Evaluate(x));
  IRModule m = parse_module_or_throw(print_func("g", f));
  ASSERT_EQ(m.functions.size(), 1u);
  EXPECT_EQ(m.functions[0].first, "g");
}

// ---- literal promotion ---------------------------------------------------------------------

Expr first_evaluated(const IRModule& m) {
  Stmt s = m.functions[0].second->body;
  if (const auto* seq = as<SeqStmtNode>(s)) s = seq->seq[0];
  if (const auto* st = as<BufferStoreNode>(s)) return st->value;
  const auto* ev = as<EvaluateNode>(s);
  return ev ? ev->value : nullptr;
}

TEST(Script, LiteralPromotion) {
  {
    IRModule m = parse_ok(func_src("A: T.Buffer((4,), \"float32\")", "A[0] = A[1] + 1"));
    const auto* add = as<AddNode>(first_evaluated(m));
    ASSERT_TRUE(add);
    const auto* c = as<FloatImmNode>(add->b);
    ASSERT_TRUE(c);
    EXPECT_EQ(c->dtype, DataType::Float(32));
    EXPECT_EQ(c->value, 1.0);
  }
  {
    IRModule m = parse_ok(func_src("x: T.int64", "T.evaluate(2 * x)"));
    const auto* mul = as<MulNode>(first_evaluated(m));
    ASSERT_TRUE(mul);
    EXPECT_EQ(mul->a->dtype, DataType::Int(64));
    EXPECT_TRUE(as<IntImmNode>(mul->a));
    EXPECT_EQ(mul->dtype, DataType::Int(64));
  }
  {
    IRModule m = parse_ok(func_src("x: T.float64", "T.evaluate(x * 1.5 + (2 - 1))"));
    const auto* add = as<AddNode>(first_evaluated(m));
    ASSERT_TRUE(add);
    const auto* sub = as<SubNode>(add->b);
    ASSERT_TRUE(sub);
    EXPECT_EQ(sub->dtype, DataType::Float(64));
    EXPECT_TRUE(as<FloatImmNode>(sub->a));
  }
  {
    IRModule m = parse_ok(func_src("", "T.evaluate(1.5)\nT.evaluate(1 + 2.5)"));
    Expr e = first_evaluated(m);
    EXPECT_EQ(e->dtype, DataType::Float(32));
  }
  {
    IRModule m = parse_ok(func_src("A: T.Buffer((4,), \"float32\")", "A[0] = 0"));
    EXPECT_TRUE(as<FloatImmNode>(first_evaluated(m)));
  }
  {
    IRModule m = parse_ok(func_src("", "T.evaluate(-3)"));
    const auto* c = as<IntImmNode>(first_evaluated(m));
    ASSERT_TRUE(c);
    EXPECT_EQ(c->value, -3);
  }
  {
    IRModule m = parse_ok(func_src("n: T.int64", "for i in range(n):\n    T.evaluate(i)"));
    const auto* f = as<ForNode>(m.functions[0].second->body);
    ASSERT_TRUE(f);
    EXPECT_EQ(f->loop_var->dtype, DataType::Int(64));
    EXPECT_EQ(f->min->dtype, DataType::Int(64));
  }
  {
    IRModule m = parse_ok(func_src("x: T.float32", "T.evaluate(-x)"));
    const auto* sub = as<SubNode>(first_evaluated(m));
    ASSERT_TRUE(sub);
    EXPECT_TRUE(as<FloatImmNode>(sub->a));
  }
}

// ---- errors ----------------------------------------------------------------------------------

struct ErrorCase {
  std::string text;
  int line, col;
  std::string message;
};

TEST(Script, ErrorMessagesAndLocations) {
  const std::string head = "@T.prim_func\ndef f(A: T.Buffer((4, 4), \"float32\"), n: T.int32):\n";
  std::vector<ErrorCase> cases = {
      {head + "    A[0, 0] = x\n", 3, 15, "undefined name 'x'"},
      {head + "    A[0] = 1.0\n", 3, 5, "buffer 'A' has 2 dimensions but is indexed with 1 index"},
      {head + "    n = 3\n", 3, 5, "cannot assign to scalar parameter 'n'"},
      {head + "    for i in range(4)\n        pass\n", 3, 22, "expected ':' after for header"},
      {head + "    x: T.float31 = 1\n", 3, 8, "unknown type 'float31'"},
      {head + "\tpass\n", 3, 1, "tabs are not allowed in indentation"},
      {head + "    A[0, 0] = T.expp(1.0)\n", 3, 15, "unknown intrinsic 'T.expp'"},
      {head + "    T.evaluate(0 < n < 4)\n", 3, 22, "chained comparisons are not supported"},
      {head + "    assert n > 0, \"oops\n", 3, 19, "unterminated string"},
      {head + "    pass\n        pass\n", 4, 9, "unexpected indent"},
      {head + "    A[0, 0] = A[0, 0] + n\n", 3, 23, "type mismatch: float32 + int32"},
      // A view takes data= and the scope of its pointer; an allocation takes a scope, no data=.
      {head + "    with T.decl_buffer((16,), \"float32\", data=A.data, scope=\"local\") as B:\n        pass\n", 3, 61,
       "scope=\"local\" is only supported on allocations and on views of a pointer of that scope"},
      {head + "    with T.allocate((16,), \"float32\", data=A.data) as B:\n        pass\n", 3, 39,
       "unknown argument 'data'"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.text);
    Diagnostic d = parse_error(c.text);
    EXPECT_EQ(d.span.line, c.line) << d.render();
    EXPECT_EQ(d.span.col, c.col) << d.render();
    EXPECT_NE(d.message.find(c.message), std::string::npos) << d.render();
    ASSERT_TRUE(d.span.file);
    EXPECT_EQ(d.span.file->name, "bad.tir");
    EXPECT_NE(d.render().find("bad.tir:" + std::to_string(c.line) + ":" + std::to_string(c.col) + ": error: "),
              std::string::npos);
  }
}

TEST(Script, DidYouMeanNote) {
  Diagnostic d = parse_error(func_src("x: T.float32", "T.evaluate(T.expp(x))"));
  ASSERT_EQ(d.notes.size(), 1u);
  EXPECT_NE(d.notes[0].find("T.exp"), std::string::npos);
}

TEST(Script, NestingTooDeep) {
  std::string e(500, '(');
  e += "1" + std::string(500, ')');
  Diagnostic d = parse_error(func_src("", "T.evaluate(" + e + ")"));
  EXPECT_NE(d.message.find("nesting too deep"), std::string::npos) << d.render();
  std::string negs(5000, '-');
  d = parse_error(func_src("", "T.evaluate(" + negs + "1)"));
  EXPECT_NE(d.message.find("nesting too deep"), std::string::npos) << d.render();
}

TEST(Script, LongChainsAreBoundedButLongSequencesAreFine) {
  // A 5000-operator chain would make every recursive pass overflow; it is an error.
  std::string chain = "n";
  for (int i = 0; i < 5000; ++i) chain += " + 1";
  Diagnostic d = parse_error(func_src("n: T.int32", "T.evaluate(" + chain + ")"));
  EXPECT_NE(d.message.find("nesting too deep"), std::string::npos) << d.message;
  // 500 lets in a row nest 500 deep (each owns the rest) and are fine.
  std::string body;
  for (int i = 0; i < 500; ++i) body += "x" + std::to_string(i) + ": T.int32 = " + std::to_string(i) + "\n";
  body += "T.evaluate(x499)";
  IRModule m = parse_ok(func_src("", body));
  expect_round_trip_module(m);
}

// Every parsed node carries a location in the parsed file.
class SpanChecker : public Visitor {
 public:
  int missing = 0, seen = 0;
  std::string first;
  void visit(const Expr& e) override {
    if (e) note(e->span, expr_kind_name(e->kind));
    Visitor::visit(e);
  }
  void visit(const Stmt& s) override {
    if (s) note(s->span, stmt_kind_name(s->kind));
    Visitor::visit(s);
  }
  void visit_buffer(const Buffer& b) override {
    note(b->span, "Buffer");
    Visitor::visit_buffer(b);
  }

 private:
  void note(const Span& sp, const char* what) {
    ++seen;
    if (!sp.defined() || !sp.file || sp.file->name != "test.tir") {
      if (!missing) first = what;
      ++missing;
    }
  }
};

TEST(Script, EveryNodeHasASpan) {
  std::vector<std::string> sources = {kMatmul};
  for (const auto& path : list_dir(std::string(mtir::source_dir()) + "/tests/script/valid", ".tir"))
    sources.push_back(read_file(path));
  for (const auto& src : sources) {
    IRModule m = parse_ok(src);
    for (const auto& [name, f] : m.functions) {
      SpanChecker c;
      c.visit_func(f);
      for (const auto& p : f->params) c.visit(p);
      EXPECT_GT(c.seen, 0);
      EXPECT_EQ(c.missing, 0) << "in " << name << ", first without span: " << c.first;
      EXPECT_TRUE(f->span.defined());
    }
  }
}

TEST(Script, ParseModuleOrThrowThrows) { EXPECT_THROW(parse_module_or_throw("garbage", "g.tir"), DiagnosticError); }

// ---- malformed files: each names the location and message it must produce -------------------

TEST(Script, MalformedFiles) {
  std::vector<std::string> files = list_dir(std::string(mtir::source_dir()) + "/tests/script/malformed", ".tir");
  EXPECT_GE(files.size(), 30u);
  std::set<std::string> messages;
  for (const auto& path : files) {
    SCOPED_TRACE(path);
    std::string text = read_file(path);
    const std::string marker = "# expect-error: ";
    size_t at = text.find(marker);
    ASSERT_NE(at, std::string::npos) << "missing '# expect-error: L:C: message' line";
    size_t eol = text.find('\n', at);
    std::string spec = text.substr(at + marker.size(), eol - at - marker.size());
    int line = 0, col = 0;
    int consumed = 0;
    ASSERT_EQ(std::sscanf(spec.c_str(), "%d:%d: %n", &line, &col, &consumed), 2) << spec;
    std::string message = spec.substr(consumed);
    EXPECT_TRUE(messages.insert(message).second) << "two files test the same message: " << message;
    ParseResult r = parse_module(text, path);
    ASSERT_FALSE(r.ok());
    ASSERT_FALSE(r.diagnostics.empty());
    const Diagnostic& d = r.diagnostics.front();
    EXPECT_EQ(d.span.line, line) << d.render();
    EXPECT_EQ(d.span.col, col) << d.render();
    EXPECT_NE(d.message.find(message), std::string::npos) << d.render();
    ASSERT_TRUE(d.span.file);
    EXPECT_EQ(d.span.file->name, path);
    EXPECT_NE(d.render().find(path + ":" + std::to_string(line) + ":" + std::to_string(col) + ": error: "),
              std::string::npos)
        << d.render();
    // The CLI's users see the source line with a caret under the column.
    EXPECT_NE(d.render().find("^\n"), std::string::npos) << d.render();
  }
}

TEST(Script, ValidFilesRoundTrip) {
  std::vector<std::string> files = list_dir(std::string(mtir::source_dir()) + "/tests/script/valid", ".tir");
  for (const auto& path : files) {
    SCOPED_TRACE(path);
    expect_round_trip(read_file(path));
  }
}

// ---- robustness: truncations and mutations never crash or throw ------------------------------

void expect_graceful(const std::string& text) {
  ParseResult r;
  ASSERT_NO_THROW(r = parse_module(text, "fuzz.tir"));
  if (r.ok()) {
    // Whatever parses must also print and re-parse.
    std::string p;
    ASSERT_NO_THROW(p = print_module(*r.module));
    ParseResult r2 = parse_module(p, "fuzz-printed.tir");
    ASSERT_TRUE(r2.ok()) << render_all(r2.diagnostics) << "\n--- input ---\n" << text << "\n--- printed ---\n" << p;
    EXPECT_TRUE(structural_equal(*r.module, *r2.module)) << structural_diff(*r.module, *r2.module);
    EXPECT_EQ(print_module(*r2.module), p);
  } else {
    ASSERT_FALSE(r.diagnostics.empty());
    EXPECT_TRUE(r.diagnostics.front().span.defined()) << r.diagnostics.front().render();
    EXPECT_NO_THROW(render_all(r.diagnostics));
  }
}

const char* kRich = R"(# from tvm.script import ir as I
# from tvm.script import tir as T

@I.ir_module
class Module:
    I.module_attrs({"model": "demo", "v": 2})

    @T.prim_func
    def f(A: T.Buffer((4, 8), "float32"), B: T.Buffer((8,), "int32"), n: T.int32) -> T.int32:
        T.func_attr({"global_symbol": "f"})
        for i, j in T.grid(4, 8):
            A[i, j] = T.float32(0.5) * T.exp(A[i, j]) / 2.0
        x: T.int32 = T.max(n, 1) // 2 % 3
        T.evaluate(x)  # trailing comment
        B2 = T.alloc_buffer((16,), "float32", scope="global")
        assert x >= 0 and not x == 3, "bad \"x\""
        with T.attr(B2.data, "pragma", T.int64(1)):
            for k in T.serial(1, n):
                if k < 4 or k > 6:
                    B2[k] = T.Select(k > 2, T.Cast("float32", k), -1.5)
                else:
                    B[k] = T.if_then_else(k == 5, T.truncdiv(k, 2), T.truncmod(k, 3))
        T.evaluate(T.call_extern("int32", "ext", x, attrs={"pure": True}))
)";

TEST(Script, EveryPrefixIsHandled) {
  std::string text = kRich;
  for (size_t n = 0; n <= text.size(); ++n) expect_graceful(text.substr(0, n));
}

TEST(Script, RandomMutationsAreHandled) {
  std::string text = kRich;
  std::mt19937 rng(12345);
  const std::string alphabet = "abcxyzAT0123456789_.,:;()[]{}+-*/%<>=!\"'#@ \t\n\\\x01\xff";
  for (int iter = 0; iter < 600; ++iter) {
    std::string m = text;
    size_t pos = rng() % m.size();
    char c = alphabet[rng() % alphabet.size()];
    switch (rng() % 3) {
      case 0:
        m[pos] = c;
        break;
      case 1:
        m.insert(m.begin() + pos, c);
        break;
      default:
        m.erase(m.begin() + pos);
        break;
    }
    SCOPED_TRACE(iter);
    expect_graceful(m);
  }
}

TEST(Script, MutationsOfValidFilesAreHandled) {
  std::mt19937 rng(2024);
  for (const auto& path : list_dir(std::string(mtir::source_dir()) + "/tests/script/valid", ".tir")) {
    SCOPED_TRACE(path);
    std::string text = read_file(path);
    for (int iter = 0; iter < 300; ++iter) {
      std::string m = text;
      // Swap two random characters or duplicate a random slice: bigger edits than one char.
      size_t a = rng() % m.size(), b = rng() % m.size();
      if (iter % 2)
        std::swap(m[a], m[b]);
      else
        m.insert(std::min(a, b), m.substr(std::min(a, b), std::min<size_t>(rng() % 16, m.size() - std::max(a, b))));
      expect_graceful(m);
    }
  }
}

TEST(Script, CrLfAndStringEscapes) {
  std::string crlf;
  for (char c : std::string(kMatmul)) {
    if (c == '\n') crlf += '\r';
    crlf += c;
  }
  IRModule a = parse_ok(kMatmul), b = parse_ok(crlf);
  EXPECT_TRUE(structural_equal(a, b)) << structural_diff(a, b);
  // Non-ASCII and control bytes survive print -> parse.
  IRModule m = parse_ok(func_src("n: T.int32",
                                 "assert n > 0, \"caf\xc3\xa9 \\x01 tab\\t quote\\\" back\\\\ 'single'\"\n"
                                 "T.evaluate(T.call_extern(\"int32\", 'single \"quoted\"'))"));
  const auto* as_stmt = as<AssertStmtNode>(m.functions[0].second->body);
  ASSERT_TRUE(as_stmt);
  EXPECT_EQ(as_stmt->message, "caf\xc3\xa9 \x01 tab\t quote\" back\\ 'single'");
  expect_round_trip_module(m);
}

TEST(Script, LexerTokens) {
  auto file = std::make_shared<SourceFile>();
  file->name = "lex";
  file->text = "a = (1 +\n  2.5e-3) // b ** 2 -> 'q\\x41'\n";
  std::vector<script::Token> toks = script::tokenize(file);
  std::vector<std::string> texts;
  for (const auto& t : toks) texts.push_back(t.text);
  std::vector<std::string> want = {"a", "=", "(", "1", "+", "2.5e-3", ")", "//", "b", "**", "2", "->", "qA", "", ""};
  EXPECT_EQ(texts, want);
  EXPECT_EQ(toks[5].kind, script::TokKind::kFloat);
  EXPECT_DOUBLE_EQ(toks[5].float_value, 2.5e-3);
  EXPECT_EQ(toks[5].line, 2);
  EXPECT_EQ(toks[5].col, 3);
}

}  // namespace
}  // namespace mtir
