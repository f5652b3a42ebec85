// Every row of ir/builtins.def, walked one by one: the name lookup, the printer and the
// parser (a call prints and parses back to the same builtin with the same arguments),
// the verifier (accepts the call, refuses one argument too many or too few with a
// located "T.<name> takes ..." message), the interpreter (refuses the wrong arity by the
// same rule) and the three code generators (each emits the call or refuses it with a
// message that names the builtin and the backend).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "analysis/well_formed.h"
#include "codegen/c/codegen_c.h"
#include "codegen/llvm/codegen_llvm.h"
#include "codegen/wasm/codegen_wat.h"
#include "interp/interpreter.h"
#include "ir/op.h"
#include "ir/visitor.h"
#include "script/parser.h"
#include "script/printer.h"

namespace mtir {
namespace {

using ::testing::HasSubstr;

const DataType i32 = DataType::Int(32);
const DataType f32 = DataType::Float(32);

// A function f(A: float32[4], n: int32) whose body uses one builtin call, and the
// function g() that call_tir and tvm_call_packed name.
struct Fixture {
  Buffer a = MakeBuffer("A", f32, {IntImm(i32, 4)});
  Var a_data = a->data;
  Var n = MakeVar("n", i32);

  // An argument for signature letter `letter` at position `i` of builtin `info`.
  Expr argument(const OpInfo& info, char letter, size_t i) const {
    switch (letter) {
      case 'n': return FloatImm(f32, 1.5);
      case 'i': return i == 1 && info.id == Builtin::TvmStackAlloca ? IntImm(i32, 2) : Expr(n);
      case 'f': return FloatImm(DataType::Float(64), 0.5);
      case 'h': return a_data;
      case 'b': return Binary(ExprKind::LT, n, IntImm(i32, 3));
      case 's': return StringImm(string_argument(info.id));
      default: break;  // 'a': anything; what each builtin that takes it means
    }
    if (info.id == Builtin::Reinterpret) return FloatImm(f32, 1.5);
    if (info.id == Builtin::Vmladava) return Broadcast(IntImm(DataType::Int(8), 1), 16);  // 16 int8 lanes
    if (info.id == Builtin::AddressOf || info.id == Builtin::TirRegion) return BufferLoad(a, {IntImm(i32, 0)});
    return IntImm(i32, static_cast<int64_t>(i));  // if_then_else's branches
  }
  static std::string string_argument(Builtin b) {
    switch (b) {
      case Builtin::TvmStackAlloca: return "shape";
      case Builtin::TvmMakeTensor: return "float32";
      case Builtin::TvmThrowLastError: return "boom";
      case Builtin::CallExtern: return "ext";
      default: return "g";  // the function tvm_call_packed, call_tir and the lowered call name
    }
  }

  // The call with exactly `count` arguments, typed by the table's result rule.
  Expr call(const OpInfo& info, size_t count) const {
    std::vector<Expr> args;
    const std::string sig = info.signature;
    for (size_t i = 0; i < count; ++i) args.push_back(argument(info, i < info.arity ? sig[i] : 'i', i));
    DataType t = info.result;
    if (info.result_rule == OpInfo::Result::kFirstArg) t = args.empty() ? i32 : args[0]->dtype;
    if (info.result_rule == OpInfo::Result::kBranches) t = args.size() > 1 ? args[1]->dtype : i32;
    if (info.result_rule == OpInfo::Result::kCallType) t = i32;
    if (info.id == Builtin::CallGlobal) t = DataType::Void();  // g's type: it returns nothing
    return Call(t, info.name, std::move(args), {}, Span{file(), 7, 3});
  }

  // The module: the call stands where its row says it may.
  IRModule module(const OpInfo& info, const Expr& call) const {
    Stmt body = info.position == OpInfo::Position::kLetValue
                    ? LetStmt(MakeVar("stack", DataType::Handle()), call, Evaluate(IntImm(i32, 0)))
                    : Evaluate(call, Span{file(), 7, 1});
    auto f = std::make_shared<PrimFuncNode>();
    f->params = {MakeVar("A", DataType::Handle()), n};
    f->param_buffers = {a, nullptr};
    f->body = body;
    auto g = std::make_shared<PrimFuncNode>();
    g->body = Evaluate(IntImm(i32, 0));
    IRModule m;
    m.name = "builtins";
    m.functions.emplace_back("f", f);
    m.functions.emplace_back("g", g);
    return m;
  }

  static std::shared_ptr<const SourceFile> file() {
    static auto f = std::make_shared<SourceFile>(SourceFile{"builtins.tir", ""});
    return f;
  }
};

// The first call in `f` of a module.
const CallNode* first_call(const IRModule& m) {
  struct Finder : Visitor {
    const CallNode* found = nullptr;
    void visit_Call(const CallNode* op) override {
      if (!found) found = op;
    }
  } finder;
  finder.visit(m.lookup("f")->body);
  return finder.found;
}

std::string error_of(const std::function<void()>& run) {
  try {
    run();
  } catch (const DiagnosticError& e) {
    return render_all(e.diagnostics());
  }
  return "";
}

TEST(Builtins, EnumNamesAndTableAgree) {
  const auto& ops = all_ops();
  ASSERT_FALSE(ops.empty());
  for (size_t k = 0; k < ops.size(); ++k) {
    const OpInfo& info = ops[k];
    SCOPED_TRACE(info.name);
    EXPECT_EQ(static_cast<size_t>(info.id), k);
    EXPECT_EQ(&builtin_info(info.id), &info);
    ASSERT_TRUE(lookup_builtin(info.name).has_value());
    EXPECT_EQ(*lookup_builtin(info.name), info.id);
    // A call node resolves its name once, when it is built.
    EXPECT_EQ(as<CallNode>(Call(i32, info.name, {}))->builtin, info.id);
  }
  EXPECT_FALSE(lookup_builtin("no_such_builtin").has_value());
  EXPECT_FALSE(as<CallNode>(Call(i32, "no_such_builtin", {}))->builtin.has_value());
}

TEST(Builtins, PrinterAndParserRoundTripEveryBuiltin) {
  Fixture fx;
  for (const OpInfo& info : all_ops()) {
    SCOPED_TRACE(info.name);
    const IRModule m = fx.module(info, fx.call(info, info.arity));
    const std::string text = print_module(m);
    // A call to a function of the module prints as TVM prints it: Module.g(...).
    EXPECT_THAT(text, HasSubstr(info.id == Builtin::CallGlobal ? std::string("builtins.g(") : std::string("T.") + info.name + "("));
    ParseResult parsed = parse_module(text, "roundtrip.tir");
    ASSERT_TRUE(parsed.ok()) << text << render_all(parsed.diagnostics);
    const CallNode* call = first_call(*parsed.module);
    ASSERT_NE(call, nullptr) << text;
    EXPECT_EQ(call->builtin, info.id) << text;
    EXPECT_EQ(call->args.size(), info.arity) << text;
  }
}

TEST(Builtins, VerifierAcceptsTheArityAndLocatesAWrongOne) {
  Fixture fx;
  for (const OpInfo& info : all_ops()) {
    SCOPED_TRACE(info.name);
    const auto good = check_well_formed(fx.module(info, fx.call(info, info.arity)));
    EXPECT_TRUE(good.empty()) << render_all(good);
    // '?': no arguments at all is allowed too (T.tvm_throw_last_error(), TVM's form).
    if (info.none_ok) {
      EXPECT_TRUE(check_well_formed(fx.module(info, fx.call(info, 0))).empty());
    }
    // One too many, or for a variadic builtin one too few (when it has fixed arguments).
    if (info.variadic && (info.arity == 0 || (info.arity == 1 && info.none_ok))) continue;
    const size_t wrong = info.variadic ? info.arity - 1 : info.arity + 1;
    const auto bad = check_well_formed(fx.module(info, fx.call(info, wrong)));
    ASSERT_FALSE(bad.empty());
    EXPECT_THAT(bad[0].message, HasSubstr(std::string("T.") + info.name + " takes "));
    EXPECT_EQ(bad[0].span.line, 7);
    EXPECT_EQ(bad[0].span.col, 3);
  }
}

// Where a call may stand comes from the table too: a builtin that returns from the
// function only as a statement of its own, one that declares storage only as a let's value.
TEST(Builtins, VerifierLocatesACallOutOfPosition) {
  Fixture fx;
  const Span at{Fixture::file(), 9, 5};
  const Expr ret = Call(i32, "tvm_return", {IntImm(i32, 0)}, {}, at);
  // fx.module() puts an expression builtin's call (here T.exp's place) in an Evaluate.
  const OpInfo& in_evaluate = builtin_info(Builtin::Exp);
  auto inside = check_well_formed(fx.module(in_evaluate, Binary(ExprKind::Add, ret, IntImm(i32, 1))));
  ASSERT_EQ(inside.size(), 1u) << render_all(inside);
  EXPECT_EQ(inside[0].message, "T.tvm_return returns from the function, so it can only be a statement of its own (T.evaluate)");
  EXPECT_EQ(inside[0].span.line, 9);
  EXPECT_EQ(inside[0].span.col, 5);
  const Expr alloca = Call(DataType::Handle(), "tvm_stack_alloca", {StringImm("shape"), IntImm(i32, 2)}, {}, at);
  auto evaluated = check_well_formed(fx.module(in_evaluate, alloca));
  ASSERT_EQ(evaluated.size(), 1u) << render_all(evaluated);
  EXPECT_THAT(evaluated[0].message, HasSubstr("T.tvm_stack_alloca declares storage, so it can only be the value of a let"));
  EXPECT_EQ(evaluated[0].span.line, 9);
}

TEST(Builtins, InterpreterAppliesTheSameArity) {
  Fixture fx;
  for (const OpInfo& info : all_ops()) {
    if (info.variadic && (info.arity == 0 || (info.arity == 1 && info.none_ok))) continue;
    SCOPED_TRACE(info.name);
    const size_t wrong = info.variadic ? info.arity - 1 : info.arity + 1;
    const IRModule m = fx.module(info, fx.call(info, wrong));
    NDArray a = NDArray::zeros(f32, {4});
    const std::string error = error_of([&] { interpret(m, "f", {&a, int64_t{1}}); });
    EXPECT_THAT(error, HasSubstr(std::string("T.") + info.name + " takes "));
  }
}

// A backend emits each builtin or refuses it by name; it never fails some other way
// (an internal error, or a message that does not say which builtin it cannot emit).
TEST(Builtins, EveryBackendEmitsOrRefusesByName) {
  Fixture fx;
  struct Backend {
    const char* name;
    std::function<std::string(const IRModule&)> emit;
  };
  const Backend backends[] = {
      {"C", [](const IRModule& m) { return codegen_c(m); }},
      {"LLVM", [](const IRModule& m) { return codegen_llvm(m); }},
      {"wasm", [](const IRModule& m) { return codegen_wat(m, WatOptions{}); }},
  };
  for (const OpInfo& info : all_ops()) {
    const IRModule m = fx.module(info, fx.call(info, info.arity));
    for (const Backend& backend : backends) {
      SCOPED_TRACE(std::string(info.name) + " in " + backend.name);
      std::string error;
      try {
        backend.emit(m);
      } catch (const DiagnosticError& e) {
        EXPECT_FALSE(e.internal()) << render_all(e.diagnostics());
        error = e.diagnostics().at(0).message;
      }
      if (error.empty()) continue;
      EXPECT_THAT(error, HasSubstr(std::string("T.") + info.name));
      EXPECT_THAT(error, HasSubstr(std::string("the ") + backend.name + " backend"));
    }
  }
}

}  // namespace
}  // namespace mtir
