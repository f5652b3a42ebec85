// Statements of the compiled interpreter, each as Interpreter::exec runs it
// (interpreter.cc): every statement and every loop iteration counts one step, and is
// the statement expressions without a span of their own report errors at. Loop and
// let variables live in frame slots, saved and restored around their scope.
#include "interp/compiled.h"

namespace mtir {
namespace interp {

namespace {

// A missing statement (an if without else, an empty body): nothing, not even a step.
struct NopStmt final : CStmt {
  void exec(Frame&) const override {}
};

// The common start of every statement.
struct Stmt0 : CStmt {
  explicit Stmt0(const Span& s) : span(s) {}
  void enter(Frame& f) const {
    f.step(span);
    f.stmt_span = &span;
  }
  const Span& span;
};

struct ErrorStmt final : Stmt0 {
  ErrorStmt(const Span& s, std::string m) : Stmt0(s), message(std::move(m)) {}
  void exec(Frame& f) const override {
    enter(f);
    user_error(span, message);
  }
  std::string message;
};

// A loop takes the exit its body raised: true for `break`.
bool take_exit(Frame& f) {
  const bool stop = f.exit == LoopExit::kBreak;
  f.exit = LoopExit::kNone;
  return stop;
}

// `break` or `continue`: raised here, taken by the innermost loop.
struct LoopExitStmt final : Stmt0 {
  LoopExitStmt(const Span& s, LoopExit e) : Stmt0(s), exit(e) {}
  void exec(Frame& f) const override {
    enter(f);
    f.exit = exit;
  }
  LoopExit exit;
};

// Every loop kind runs serially: parallel and vectorized loops must not depend on the
// order anyway, and serial order is the one a reader expects.
struct ForStmt final : Stmt0 {
  ForStmt(const Span& s, DataType t, int slot, CExprPtr min, CExprPtr extent, CStmtPtr body)
      : Stmt0(s), type(t), slot(slot), min(std::move(min)), extent(std::move(extent)), body(std::move(body)) {}
  void exec(Frame& f) const override {
    enter(f);
    const int64_t lo = min->eval_int(f), n = extent->eval_int(f);
    const Scalar saved = f.vars[static_cast<size_t>(slot)];
    for (int64_t k = 0; k < n; ++k) {
      f.step(span);
      f.vars[static_cast<size_t>(slot)] =
          make_int(type, static_cast<int64_t>(static_cast<uint64_t>(lo) + static_cast<uint64_t>(k)));
      body->exec(f);
      if (f.exit != LoopExit::kNone && take_exit(f)) break;
    }
    f.vars[static_cast<size_t>(slot)] = saved;
  }
  DataType type;
  int slot;
  CExprPtr min, extent;
  CStmtPtr body;
};

struct IfStmt final : Stmt0 {
  IfStmt(const Span& s, CExprPtr c, CStmtPtr t, CStmtPtr e)
      : Stmt0(s), condition(std::move(c)), then_case(std::move(t)), else_case(std::move(e)) {}
  void exec(Frame& f) const override {
    enter(f);
    if (condition->eval(f).truthy()) then_case->exec(f);
    else else_case->exec(f);
  }
  CExprPtr condition;
  CStmtPtr then_case, else_case;
};

struct LetStmt final : Stmt0 {
  LetStmt(const Span& s, int slot, CExprPtr v, CStmtPtr b) : Stmt0(s), slot(slot), value(std::move(v)), body(std::move(b)) {}
  void exec(Frame& f) const override {
    enter(f);
    const Scalar v = value->eval(f);
    const Scalar saved = f.vars[static_cast<size_t>(slot)];
    f.vars[static_cast<size_t>(slot)] = v;
    body->exec(f);
    f.vars[static_cast<size_t>(slot)] = saved;
  }
  int slot;
  CExprPtr value;
  CStmtPtr body;
};

struct SeqStmt final : Stmt0 {
  SeqStmt(const Span& s, std::vector<CStmtPtr> c) : Stmt0(s), children(std::move(c)) {}
  void exec(Frame& f) const override {
    enter(f);
    for (const CStmtPtr& c : children) {
      c->exec(f);
      if (f.exit != LoopExit::kNone) return;
    }
  }
  std::vector<CStmtPtr> children;
};

struct WhileStmt final : Stmt0 {
  WhileStmt(const Span& s, CExprPtr c, CStmtPtr b) : Stmt0(s), condition(std::move(c)), body(std::move(b)) {}
  void exec(Frame& f) const override {
    enter(f);
    while (condition->eval(f).truthy()) {
      body->exec(f);
      if (f.exit != LoopExit::kNone && take_exit(f)) break;
    }
  }
  CExprPtr condition;
  CStmtPtr body;
};

struct EvaluateStmt final : Stmt0 {
  EvaluateStmt(const Span& s, CExprPtr v) : Stmt0(s), value(std::move(v)) {}
  void exec(Frame& f) const override {
    enter(f);
    value->eval(f);
  }
  CExprPtr value;
};

// An attribute (a pragma, a storage hint): its body alone.
struct AttrStmt final : Stmt0 {
  AttrStmt(const Span& s, CStmtPtr b) : Stmt0(s), body(std::move(b)) {}
  void exec(Frame& f) const override {
    enter(f);
    body->exec(f);
  }
  CStmtPtr body;
};

struct AssertStmt final : Stmt0 {
  AssertStmt(const Span& s, CExprPtr c, std::string m, CStmtPtr b)
      : Stmt0(s), condition(std::move(c)), message("assertion failed: " + m), body(std::move(b)) {}
  void exec(Frame& f) const override {
    enter(f);
    if (!condition->eval(f).truthy()) user_error(span, message);
    body->exec(f);
  }
  CExprPtr condition;
  std::string message;
  CStmtPtr body;
};

}  // namespace

CStmtPtr Compiler::loop(const ForNode* op) {
  if (op->for_kind == ForKind::kThreadBinding)
    return std::make_unique<ErrorStmt>(
        op->span, "loop '" + op->loop_var->name + "' is bound to the GPU thread '" + op->thread_tag +
                      "': microtir targets CPUs and microcontrollers and does not run GPU thread bindings");
  CExprPtr min = expr(op->min), extent = expr(op->extent);
  Scope scope(this, op->loop_var.get());
  const int slot = var_slot(op->loop_var.get());
  return std::make_unique<ForStmt>(op->span, op->loop_var->dtype, slot, std::move(min), std::move(extent),
                                   stmt(op->body));
}

CStmtPtr Compiler::let_stmt(const LetStmtNode* op) {
  if (op->var->dtype.is_vector()) throw Unsupported{"vector variables"};
  // A pointer bound to another buffer's data (`T.LetStmt(A.data) as p`): views declared
  // over p share A's storage slot. Variables are bound once, so the alias is lexical.
  if (const auto* pointee = as<VarNode>(op->value); pointee && op->var->dtype.is_handle())
    storage_slots_.emplace(op->var.get(), storage_slot(pointee));
  CExprPtr value = expr(op->value);
  Scope scope(this, op->var.get());
  const int slot = var_slot(op->var.get());
  return std::make_unique<LetStmt>(op->span, slot, std::move(value), stmt(op->body));
}

CStmtPtr Compiler::stmt(const Stmt& s) {
  if (!s) return std::make_unique<NopStmt>();
  switch (s->kind) {
    case StmtKind::BufferStore: return store(static_cast<const BufferStoreNode*>(s.get()));
    case StmtKind::For: return loop(static_cast<const ForNode*>(s.get()));
    case StmtKind::IfThenElse: {
      const auto* op = static_cast<const IfThenElseNode*>(s.get());
      CExprPtr c = expr(op->condition);
      CStmtPtr t = stmt(op->then_case);
      return std::make_unique<IfStmt>(op->span, std::move(c), std::move(t), stmt(op->else_case));
    }
    case StmtKind::LetStmt: return let_stmt(static_cast<const LetStmtNode*>(s.get()));
    case StmtKind::SeqStmt: {
      std::vector<CStmtPtr> children;
      for (const Stmt& c : static_cast<const SeqStmtNode*>(s.get())->seq) children.push_back(stmt(c));
      return std::make_unique<SeqStmt>(s->span, std::move(children));
    }
    case StmtKind::While: {
      const auto* op = static_cast<const WhileNode*>(s.get());
      CExprPtr c = expr(op->condition);
      return std::make_unique<WhileStmt>(op->span, std::move(c), stmt(op->body));
    }
    case StmtKind::Evaluate:
      if (LoopExit e = loop_exit(s); e != LoopExit::kNone) return std::make_unique<LoopExitStmt>(s->span, e);
      return std::make_unique<EvaluateStmt>(s->span, expr(static_cast<const EvaluateNode*>(s.get())->value));
    case StmtKind::Allocate: return allocate(static_cast<const AllocateNode*>(s.get()));
    case StmtKind::AllocateConst:
      return allocate_const(static_cast<const AllocateConstNode*>(s.get()));
    case StmtKind::BufferRealize:
      internal_error(__FILE__, __LINE__, "T.realize is refused before interpretation (refuse_carried_types)");
    case StmtKind::DeclBuffer: return decl_buffer(static_cast<const DeclBufferNode*>(s.get()));
    case StmtKind::AttrStmt: {
      const auto* op = static_cast<const AttrStmtNode*>(s.get());
      if (op->key == "thread_extent")
        return std::make_unique<ErrorStmt>(op->span, "T.launch_thread starts GPU threads: microtir targets CPUs and "
                                                     "microcontrollers and does not run them");
      return std::make_unique<AttrStmt>(op->span, stmt(op->body));
    }
    case StmtKind::AssertStmt: {
      const auto* op = static_cast<const AssertStmtNode*>(s.get());
      CExprPtr c = expr(op->condition);
      return std::make_unique<AssertStmt>(op->span, std::move(c), op->message, stmt(op->body));
    }
  }
  MTIR_ICHECK(false, "unhandled statement kind");
}

}  // namespace interp
}  // namespace mtir
