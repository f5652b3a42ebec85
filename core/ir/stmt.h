// TIR statements. Scoped statements (let, allocate, assert, attr) own the statements
// that follow them as their body, as in TVM; the text format prints them flat.
#pragma once

#include <vector>

#include "ir/buffer.h"
#include "ir/expr.h"

namespace mtir {

enum class StmtKind : uint8_t {
#define MTIR_STMT(Name) Name,
#include "ir/nodes.def"
};

const char* stmt_kind_name(StmtKind k);

struct StmtNode {
  StmtNode(StmtKind kind, Span span) : kind(kind), span(std::move(span)) {}
  virtual ~StmtNode() = default;
  const StmtKind kind;
  Span span;
};
using Stmt = std::shared_ptr<const StmtNode>;

struct BufferStoreNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::BufferStore;
  BufferStoreNode(Buffer b, Expr v, std::vector<Expr> idx, Span s)
      : StmtNode(kKind, std::move(s)), buffer(std::move(b)), value(std::move(v)), indices(std::move(idx)) {}
  Buffer buffer;
  Expr value;
  std::vector<Expr> indices;
  Expr predicate;  // TVM's mask of a vector store, `A.vstore([i], v, predicate=p)`; see BufferLoadNode
};

// kThreadBinding: a GPU thread loop (T.thread_binding); parsed and printed, refused by
// the interpreter and every code generator.
enum class ForKind : uint8_t { kSerial, kUnrolled, kParallel, kVectorized, kThreadBinding };
// "serial", "unroll", "parallel", "vectorized", "thread_binding"
const char* for_kind_name(ForKind k);

struct ForNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::For;
  ForNode(Var v, Expr min, Expr extent, ForKind k, Stmt body, Span s)
      : StmtNode(kKind, std::move(s)), loop_var(std::move(v)), min(std::move(min)),
        extent(std::move(extent)), for_kind(k), body(std::move(body)) {}
  Var loop_var;
  Expr min, extent;
  ForKind for_kind;
  Stmt body;
  std::string thread_tag;  // kThreadBinding: "threadIdx.x", ...
  Attrs annotations;       // T.serial(..., annotations={...}): hints passes may ignore
};

struct IfThenElseNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::IfThenElse;
  IfThenElseNode(Expr c, Stmt t, Stmt e, Span s)
      : StmtNode(kKind, std::move(s)), condition(std::move(c)), then_case(std::move(t)), else_case(std::move(e)) {}
  Expr condition;
  Stmt then_case;
  Stmt else_case;  // may be null
};

struct LetStmtNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::LetStmt;
  LetStmtNode(Var v, Expr value, Stmt body, Span s)
      : StmtNode(kKind, std::move(s)), var(std::move(v)), value(std::move(value)), body(std::move(body)) {}
  Var var;
  Expr value;
  Stmt body;
};

struct SeqStmtNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::SeqStmt;
  SeqStmtNode(std::vector<Stmt> seq, Span s) : StmtNode(kKind, std::move(s)), seq(std::move(seq)) {}
  std::vector<Stmt> seq;
};

struct EvaluateNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Evaluate;
  EvaluateNode(Expr v, Span s) : StmtNode(kKind, std::move(s)), value(std::move(v)) {}
  Expr value;
};

// Allocates `buffer` (its data variable is bound here) for the duration of `body`.
struct AllocateNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Allocate;
  AllocateNode(Buffer b, std::string scope, Stmt body, Span s)
      : StmtNode(kKind, std::move(s)), buffer(std::move(b)), scope(std::move(scope)), body(std::move(body)) {}
  Buffer buffer;
  std::string scope;  // "global", "local", ...
  Stmt body;
};

// Declares `buffer` as a view of memory whose data variable is already bound (a
// parameter's or an allocation's), for the duration of `body`. Lowering uses it for
// flattened views and for the buffers behind unpacked pointer parameters.
struct DeclBufferNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::DeclBuffer;
  DeclBufferNode(Buffer b, Stmt body, Span s) : StmtNode(kKind, std::move(s)), buffer(std::move(b)), body(std::move(body)) {}
  Buffer buffer;
  Stmt body;
};

// An annotation on the statements in `body`: `node` says what it is about (a variable,
// a string), `key` what it means and `value` its argument.
struct AttrStmtNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::AttrStmt;
  AttrStmtNode(Expr node, std::string key, Expr value, Stmt body, Span s)
      : StmtNode(kKind, std::move(s)), node(std::move(node)), key(std::move(key)), value(std::move(value)),
        body(std::move(body)) {}
  Expr node;
  std::string key;
  Expr value;
  Stmt body;
};

struct AssertStmtNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::AssertStmt;
  AssertStmtNode(Expr c, std::string msg, Stmt body, Span s)
      : StmtNode(kKind, std::move(s)), condition(std::move(c)), message(std::move(msg)), body(std::move(body)) {}
  Expr condition;
  std::string message;
  Stmt body;
};

// `while condition: body` (TVM's While): the condition is evaluated before every pass.
struct WhileNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::While;
  WhileNode(Expr c, Stmt body, Span s) : StmtNode(kKind, std::move(s)), condition(std::move(c)), body(std::move(body)) {}
  Expr condition;
  Stmt body;
};

// `p = T.allocate_const([v0, v1, ...], dtype, extents)`: `buffer` (its data variable is
// bound here) holds these constant values, row-major, for the duration of `body`.
// Integer types keep their values in `ints`, float types in `floats`.
struct AllocateConstNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::AllocateConst;
  AllocateConstNode(Buffer b, std::vector<int64_t> ints, std::vector<double> floats, Stmt body, Span s)
      : StmtNode(kKind, std::move(s)),
        buffer(std::move(b)),
        ints(std::move(ints)),
        floats(std::move(floats)),
        body(std::move(body)) {}
  Buffer buffer;
  std::vector<int64_t> ints;
  std::vector<double> floats;
  Stmt body;
  size_t size() const { return buffer->dtype.is_float() ? floats.size() : ints.size(); }
};

// `T.realize(A[min:min + extent, ...], scope, condition=c)` over `body`: TVM's
// BufferRealize, a statement of TIR before StorageFlatten. microtir reads and prints it;
// the interpreter and the backends refuse it (ir/carried_types.h).
struct BufferRealizeNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::BufferRealize;
  BufferRealizeNode(Buffer b, std::vector<std::pair<Expr, Expr>> bounds, std::string scope, Expr condition, Stmt body,
                    Span s)
      : StmtNode(kKind, std::move(s)),
        buffer(std::move(b)),
        bounds(std::move(bounds)),
        scope(std::move(scope)),
        condition(std::move(condition)),
        body(std::move(body)) {}
  Buffer buffer;
  std::vector<std::pair<Expr, Expr>> bounds;  // (min, extent) per dimension
  std::string scope;
  Expr condition;
  Stmt body;
};

// ---- constructors -------------------------------------------------------------
Stmt BufferStore(Buffer b, Expr value, std::vector<Expr> indices, Span s = {});
Stmt For(Var v, Expr min, Expr extent, ForKind k, Stmt body, Span s = {});
// A copy of loop `op` with other bounds and body, keeping its thread tag and annotations.
Stmt ForLike(const ForNode* op, Expr min, Expr extent, Stmt body);
Stmt IfThenElse(Expr c, Stmt then_case, Stmt else_case = nullptr, Span s = {});
Stmt LetStmt(Var v, Expr value, Stmt body, Span s = {});
// Flattens nested sequences and drops null entries; a single statement is returned as is
// and an empty list gives NoOp(s), so builders pass any list without testing its size.
Stmt SeqStmt(std::vector<Stmt> seq, Span s = {});
Stmt Evaluate(Expr v, Span s = {});
Stmt Allocate(Buffer b, std::string scope, Stmt body, Span s = {});
Stmt DeclBuffer(Buffer b, Stmt body, Span s = {});
Stmt AttrStmt(Expr node, std::string key, Expr value, Stmt body, Span s = {});
Stmt AssertStmt(Expr c, std::string message, Stmt body, Span s = {});
Stmt While(Expr c, Stmt body, Span s = {});
Stmt AllocateConst(Buffer b, std::vector<int64_t> ints, std::vector<double> floats, Stmt body, Span s = {});
Stmt BufferRealize(Buffer b, std::vector<std::pair<Expr, Expr>> bounds, std::string scope, Expr condition, Stmt body,
                   Span s = {});
// A statement that does nothing: Evaluate(0).
Stmt NoOp(Span s = {});
bool is_no_op(const Stmt& s);

}  // namespace mtir
