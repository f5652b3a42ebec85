// call_tir: the refused programs, the text round trip, failure propagation through
// calls on every backend, and moving a call into a new function (outlining).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "analysis/well_formed.h"
#include "driver/build.h"
#include "interp/interpreter.h"
#include "ir/structural_equal.h"
#include "ir/visitor.h"
#include "script/parser.h"
#include "script/printer.h"
#include "sim/host_sim.h"
#include "support/compare.h"
#include "support/source_dir.h"

namespace mtir {
namespace {

namespace fs = std::filesystem;

std::string read(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

const fs::path kSource = mtir::source_dir();

// Builds `m` for `target` and runs `func` as host C on `args` (written back in place).
// Returns "" on success, or the failure's message.
std::string run_host(const IRModule& m, const std::string& target, const std::string& func,
                     const std::vector<InterpArg>& args) {
  BuildResult built = build_c(m, parse_target(target));
  sim::HostSimOptions options;
  options.work_dir = (fs::temp_directory_path() / ("microtir-calltir-" + std::to_string(getpid()))).string();
  std::string error;
  try {
    sim::run_on_host({&built, func, m.lookup(func)}, args, options);
  } catch (const DiagnosticError& e) {
    error = e.diagnostics().at(0).message;
  }
  fs::remove_all(options.work_dir);
  return error;
}

std::vector<fs::path> invalid_programs() {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(kSource / "tests" / "call_tir" / "invalid"))
    if (e.path().extension() == ".tir") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

class InvalidCallTIR : public ::testing::TestWithParam<fs::path> {};

// Each file says where the first error is and what it says: "# expect-error: L:C: msg".
TEST_P(InvalidCallTIR, IsRefusedWithALocatedMessage) {
  std::string text = read(GetParam());
  std::string head = text.substr(0, text.find('\n'));
  ASSERT_EQ(head.rfind("# expect-error: ", 0), 0u) << head;
  std::string rest = head.substr(16);
  std::string location = rest.substr(0, rest.find(": ")), message = rest.substr(rest.find(": ") + 2);
  IRModule m = parse_module_or_throw(text, GetParam().filename().string());
  std::vector<Diagnostic> diags = check_well_formed(m);
  ASSERT_FALSE(diags.empty()) << "accepted: " << GetParam();
  EXPECT_EQ(std::to_string(diags[0].span.line) + ":" + std::to_string(diags[0].span.col), location) << diags[0].message;
  EXPECT_NE(diags[0].message.find(message), std::string::npos) << diags[0].message;
  // The lowering pipeline refuses it too, before any code exists.
  EXPECT_THROW(build_c(m, parse_target("c -unpacked-api=0")), DiagnosticError);
}

INSTANTIATE_TEST_SUITE_P(Files, InvalidCallTIR, ::testing::ValuesIn(invalid_programs()),
                         [](const ::testing::TestParamInfo<fs::path>& info) { return info.param.stem().string(); });

TEST(CallTIR, AtLeastTenRefusedPrograms) { EXPECT_GE(invalid_programs().size(), 10u); }

// The verifier remembers functions it found well-formed; a callee remembered as clean
// must still have every call to it checked, in any module it is put into.
TEST(CallTIR, CallsToACalleeAlreadyFoundCleanAreStillChecked) {
  const std::string callee = R"(
    @T.prim_func
    def rev(X: T.Buffer((4,), "float32"), Y: T.Buffer((4,), "float32")):
        for i in range(4):
            Y[i] = X[3 - i]
)";
  auto module_with = [&](const std::string& call) {
    ParseResult r = parse_module("@I.ir_module\nclass Module:" + callee + R"(
    @T.prim_func
    def top(A: T.Buffer((4,), "float32"), Out: T.Buffer((4,), "float32")):
        )" + call + "\n", "calls.tir");
    EXPECT_TRUE(r.ok()) << render_all(r.diagnostics);
    return *r.module;
  };
  IRModule good = module_with("T.evaluate(T.call_tir(\"rev\", A, Out))");
  ASSERT_TRUE(check_well_formed(good).empty());
  ASSERT_TRUE(check_well_formed(good).empty());
  IRModule bad = module_with("T.evaluate(T.call_tir(\"rev\", Out, Out))");
  bad.functions[0].second = good.functions[0].second;  // the callee object found clean above
  std::vector<Diagnostic> diags = check_well_formed(bad);
  ASSERT_EQ(diags.size(), 1u) << render_all(diags);
  EXPECT_NE(diags[0].message.find("overlap"), std::string::npos) << diags[0].message;
  EXPECT_EQ(check_well_formed(bad).size(), 1u);  // and again: a caller with an error is never remembered
}

// A loop of band calls (executor/band_loops.h) passes regions whose starts move with the
// loop: two regions of one buffer, one written, that move alike are disjoint when their
// constant parts are (tests/call_tir/invalid/band_loop_overlap.tir: when they are not).
TEST(CallTIR, RegionsThatMoveAlikeInALoopAreDisjointByTheirConstants) {
  IRModule m = parse_module_or_throw(R"(
@I.ir_module
class Module:
    @T.prim_func
    def copy(X: T.Buffer((4,), "float32"), Y: T.Buffer((4,), "float32")):
        for i in range(4):
            Y[i] = X[i]

    @T.prim_func
    def top(Out: T.Buffer((32,), "float32")):
        for band in range(6):
            T.evaluate(T.call_tir("copy", Out[band * 4:band * 4 + 4], Out[band * 4 + 4:band * 4 + 4 + 4]))
)",
                                     "band_loop.tir");
  EXPECT_TRUE(check_well_formed(m).empty()) << render_all(check_well_formed(m));
}

TEST(CallTIR, TextRoundTrips) {
  std::string text = read(kSource / "tests" / "programs" / "call_tir_tree.tir");
  IRModule m = parse_module_or_throw(text, "call_tir_tree.tir");
  std::string printed = print_module(m);
  EXPECT_NE(printed.find("T.call_tir(\"rows\", M[0:2, :], Tmp, bias)"), std::string::npos) << printed;
  EXPECT_NE(printed.find("T.call_tir(\"axpb\", M[4, :], Out[0, :], bias)"), std::string::npos) << printed;
  IRModule again = parse_module_or_throw(printed, "printed.tir");
  EXPECT_TRUE(structural_equal(m, again)) << structural_diff(m, again);
  EXPECT_EQ(print_module(again), printed);
}

// A callee that fails (its assert) makes every caller up the chain fail with the
// callee's message: in the interpreter and in host C, with both conventions.
TEST(CallTIR, FailurePropagatesWithTheCalleesMessage) {
  const char* text = R"(
@I.ir_module
class Module:
    @T.prim_func
    def leaf(A: T.Buffer((4,), "int32")):
        assert A[0] < 100, "leaf: A[0] must stay below 100"
        A[1] = A[0]

    @T.prim_func
    def mid(A: T.Buffer((2, 4), "int32")):
        T.evaluate(T.call_tir("leaf", A[1, :]))
        A[0, 0] = 5

    @T.prim_func
    def top(A: T.Buffer((2, 4), "int32")):
        T.evaluate(T.call_tir("mid", A))
)";
  IRModule m = parse_module_or_throw(text, "fail.tir");
  NDArray a = NDArray::zeros(DataType::Int(32), {2, 4});
  a.set_int(4, 1000);  // A[1, 0]: the leaf's A[0]
  try {
    interpret(m, "top", {&a});
    ADD_FAILURE() << "the interpreter did not fail";
  } catch (const DiagnosticError& e) {
    EXPECT_NE(e.diagnostics().at(0).message.find("leaf: A[0] must stay below 100"), std::string::npos);
  }
  for (const char* target : {"c", "c -unpacked-api=1"}) {
    NDArray host = a;
    std::string error = run_host(m, target, "top", {&host});
    EXPECT_NE(error.find("top returned -1: leaf: assertion failed: leaf: A[0] must stay below 100"), std::string::npos)
        << target << ": " << error;
  }
}

// When the arguments are only known at run time, the call goes through the callee's
// packed wrapper, whose failed check makes the caller fail with the callee's message.
TEST(CallTIR, FailedPackedArgumentCheckPropagatesToTheCaller) {
  const char* text = R"(
@I.ir_module
class Module:
    @T.prim_func
    def rows(a: T.handle):
        m = T.int32()
        A = T.match_buffer(a, (m, 4), "float32")
        for i, j in T.grid(m, 4):
            A[i, j] = T.float32(1)

    @T.prim_func
    def caller(n: T.int32, X: T.Buffer((8,), "float32")):
        T.evaluate(T.tvm_call_packed("rows", T.tvm_make_tensor(X.data, "float32", n)))
)";
  IRModule m = parse_module_or_throw(text, "packed_fail.tir");
  NDArray x = NDArray::zeros(DataType::Float(32), {8});
  std::string error = run_host(m, "c -unpacked-api=0", "caller", {int64_t{8}, &x});
  EXPECT_NE(error.find("caller returned -1: rows: argument 'A' must have ndim 2, got 1"), std::string::npos) << error;
}

// Found in review: the unpacked build must call g itself, not a user function named
// g_compute; and a bool scalar passes through a packed call checked at compile time.
TEST(CallTIR, CallsTheCalleeItselfAndPassesBools) {
  const char* text = R"(
@I.ir_module
class Module:
    @T.prim_func
    def g(X: T.Buffer((4,), "float32"), flag: T.bool):
        for i in range(4):
            X[i] = T.Select(flag, T.float32(1), T.float32(2))

    @T.prim_func
    def g_compute(X: T.Buffer((4,), "float32")):
        for i in range(4):
            X[i] = T.float32(3)

    @T.prim_func
    def top(Out: T.Buffer((4,), "float32")):
        T.evaluate(T.call_tir("g", Out, True))
)";
  IRModule m = parse_module_or_throw(text, "names.tir");
  NDArray want = NDArray::zeros(DataType::Float(32), {4});
  interpret(m, "top", {&want});
  EXPECT_EQ(want.get_float(0), 1.0);
  NDArray got = NDArray::zeros(DataType::Float(32), {4});
  EXPECT_EQ(run_host(m, "c -unpacked-api=1", "top", {&got}), "");
  EXPECT_TRUE(compare_arrays(got, want).ok);
  // The packed build refuses the clash of names instead of guessing.
  EXPECT_THROW(build_c(m, parse_target("c -unpacked-api=0")), DiagnosticError);

  IRModule packed_call = parse_module_or_throw(R"(
@I.ir_module
class Module:
    @T.prim_func
    def g(X: T.Buffer((4,), "float32"), flag: T.bool):
        for i in range(4):
            X[i] = T.Select(flag, T.float32(1), T.float32(2))

    @T.prim_func
    def top(Out: T.Buffer((4,), "float32")):
        T.evaluate(T.tvm_call_packed("g", T.tvm_make_tensor(Out.data, "float32", 4), T.bool(False)))
)",
                                               "bool.tir");
  EXPECT_NO_THROW(build_c(packed_call, parse_target("c -unpacked-api=0")));
}

// The buffers a statement touches, in first-use order.
std::vector<Buffer> buffers_used(const Stmt& s) {
  struct Collect : Visitor {
    std::vector<Buffer> found;
    void add(const Buffer& b) {
      for (const auto& f : found)
        if (f == b) return;
      found.push_back(b);
    }
    void visit_BufferLoad(const BufferLoadNode* op) override {
      add(op->buffer);
      Visitor::visit_BufferLoad(op);
    }
    void visit_BufferStore(const BufferStoreNode* op) override {
      add(op->buffer);
      Visitor::visit_BufferStore(op);
    }
  } c;
  c.visit(s);
  return c.found;
}

// Outlining: statement `index` of `caller`'s body moves into a new function that takes
// the buffers it uses, and is replaced by a call_tir of it. A call inside the moved
// statement keeps working because call sites share nothing.
IRModule outline(const IRModule& m, const std::string& caller, size_t index, const std::string& new_name) {
  PrimFunc f = m.lookup(caller);
  const auto* seq = as<SeqStmtNode>(f->body);
  Stmt moved = seq->seq.at(index);
  auto outlined = std::make_shared<PrimFuncNode>();
  std::vector<Expr> call_args = {StringImm(new_name)};
  for (const Buffer& b : buffers_used(moved)) {
    outlined->params.push_back(MakeVar(b->name, DataType::Handle()));
    outlined->param_buffers.push_back(b);
    std::vector<Expr> region = {BufferLoad(b, std::vector<Expr>(b->shape.size(), IntImm(DataType::Int(32), 0)))};
    region.insert(region.end(), b->shape.begin(), b->shape.end());
    call_args.push_back(Call(DataType::Handle(), "tir_region", region));
  }
  outlined->body = moved;
  std::vector<Stmt> stmts = seq->seq;
  stmts[index] = Evaluate(Call(DataType::Int(32), "call_tir", call_args));
  IRModule out = m;
  out.set(caller, WithBody(f, SeqStmt(stmts)));
  out.functions.insert(out.functions.begin(), {new_name, outlined});
  return out;
}

TEST(CallTIR, OutliningACallIntoANewFunctionKeepsTheAnswer) {
  const char* text = R"(
@I.ir_module
class Module:
    @T.prim_func
    def inc(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
        for i in range(4):
            B[i] = A[i] + T.float32(1)

    @T.prim_func
    def run(X: T.Buffer((2, 4), "float32"), Y: T.Buffer((2, 4), "float32")):
        T.evaluate(T.call_tir("inc", X[0, :], Y[1, :]))
        for j in range(4):
            Y[0, j] = Y[1, j] * X[1, j]
)";
  IRModule m = parse_module_or_throw(text, "outline.tir");
  // Both statements of main move out in turn: the call itself, and the loop.
  for (size_t index : {0u, 1u}) {
    SCOPED_TRACE("statement " + std::to_string(index));
    IRModule moved = outline(m, "run", index, "part");
    ASSERT_TRUE(check_well_formed(moved).empty()) << render_all(check_well_formed(moved));
    NDArray x = NDArray::zeros(DataType::Float(32), {2, 4});
    for (int64_t i = 0; i < 8; ++i) x.set_float(i, 0.5 * static_cast<double>(i) - 1);
    NDArray want_y = NDArray::zeros(DataType::Float(32), {2, 4});
    NDArray want_x = x;
    interpret(m, "run", {&want_x, &want_y});
    NDArray got_x = x, got_y = NDArray::zeros(DataType::Float(32), {2, 4});
    interpret(moved, "run", {&got_x, &got_y});
    EXPECT_TRUE(compare_arrays(got_y, want_y).ok);
    for (const char* target : {"c", "c -unpacked-api=1"}) {
      NDArray hx = x, hy = NDArray::zeros(DataType::Float(32), {2, 4});
      EXPECT_EQ(run_host(moved, target, "run", {&hx, &hy}), "");
      EXPECT_TRUE(compare_arrays(hy, want_y).ok) << target;
    }
  }
}

}  // namespace
}  // namespace mtir
