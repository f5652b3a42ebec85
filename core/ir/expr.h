// TIR expressions. Nodes are immutable and shared (std::shared_ptr<const ...>), so a
// pass that changes nothing can hand back the very same node, and identity of a VarNode
// or BufferNode is what binds a use to its definition.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ir/attrs.h"
#include "ir/dtype.h"
#include "ir/op.h"
#include "support/diagnostic.h"

namespace mtir {

enum class ExprKind : uint8_t {
#define MTIR_EXPR(Name) Name,
#include "ir/nodes.def"
};

const char* expr_kind_name(ExprKind k);

struct ExprNode {
  ExprNode(ExprKind kind, DataType dtype, Span span) : kind(kind), dtype(dtype), span(std::move(span)) {}
  virtual ~ExprNode() = default;
  const ExprKind kind;
  DataType dtype;
  Span span;
};
using Expr = std::shared_ptr<const ExprNode>;

struct BufferNode;
using Buffer = std::shared_ptr<const BufferNode>;

// Checked downcast: nullptr when `e` is not a T.
template <typename T, typename P>
const T* as(const P& e) {
  return e && e->kind == T::kKind ? static_cast<const T*>(e.get()) : nullptr;
}

struct IntImmNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::IntImm;
  IntImmNode(DataType t, int64_t v, Span s) : ExprNode(kKind, t, std::move(s)), value(v) {}
  int64_t value;  // already wrapped to dtype's width
};

struct FloatImmNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::FloatImm;
  FloatImmNode(DataType t, double v, Span s) : ExprNode(kKind, t, std::move(s)), value(v) {}
  double value;
};

struct StringImmNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::StringImm;
  StringImmNode(std::string v, Span s) : ExprNode(kKind, DataType::Handle(), std::move(s)), value(std::move(v)) {}
  std::string value;
};

struct VarNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Var;
  VarNode(std::string n, DataType t, Span s) : ExprNode(kKind, t, std::move(s)), name(std::move(n)) {}
  std::string name;
  // A handle may say what it points to (TVM's PointerType): T.handle("float32", "global").
  // Void when it does not; only the text format and comparisons look at it.
  DataType pointee = DataType::Void();
  std::string pointer_scope;
  // A GPU thread index (TVM's T.env_thread / T.launch_thread): the thread it names,
  // "threadIdx.x"; empty for every other variable.
  std::string thread_tag;
};
using Var = std::shared_ptr<const VarNode>;

struct BinaryNode : ExprNode {
  BinaryNode(ExprKind k, DataType t, Expr a, Expr b, Span s)
      : ExprNode(k, t, std::move(s)), a(std::move(a)), b(std::move(b)) {}
  Expr a, b;
};

#define MTIR_BINARY(Name)                                                    \
  struct Name##Node : BinaryNode {                                           \
    static constexpr ExprKind kKind = ExprKind::Name;                        \
    Name##Node(DataType t, Expr a, Expr b, Span s)                           \
        : BinaryNode(kKind, t, std::move(a), std::move(b), std::move(s)) {}  \
  };
#include "ir/nodes.def"

bool is_binary(ExprKind k);
bool is_comparison(ExprKind k);
bool is_logical(ExprKind k);

struct NotNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Not;
  NotNode(Expr a, Span s)
      : ExprNode(kKind, DataType::Bool().with_lanes(a->dtype.lanes()), std::move(s)), a(std::move(a)) {}
  Expr a;
};

// Both branches are evaluated; see the if_then_else call for the lazy form.
struct SelectNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Select;
  SelectNode(Expr c, Expr t, Expr f, Span s)
      : ExprNode(kKind, t->dtype, std::move(s)), condition(std::move(c)), true_value(std::move(t)),
        false_value(std::move(f)) {}
  Expr condition, true_value, false_value;
};

struct CastNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Cast;
  CastNode(DataType t, Expr v, Span s) : ExprNode(kKind, t, std::move(s)), value(std::move(v)) {}
  Expr value;
};

struct BufferLoadNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::BufferLoad;
  BufferLoadNode(DataType t, Buffer b, std::vector<Expr> idx, Span s)
      : ExprNode(kKind, t, std::move(s)), buffer(std::move(b)), indices(std::move(idx)) {}
  Buffer buffer;
  std::vector<Expr> indices;
  // TVM's mask of a vector load, `A.vload([i], predicate=p)`: lanes where p is False are
  // not read. Null for a plain load. Carried: the interpreter and backends refuse it.
  Expr predicate;
};

// A call to a builtin (exp, sqrt, if_then_else, call_extern, ...); see ir/builtins.def.
// The name is resolved once, when the node is built, so that passes, the interpreter
// and the backends switch over `builtin` instead of comparing strings at every visit;
// the name stays for printing and for messages. nullopt for a name that is no builtin,
// which only the verifier (and the parser before it) sees and reports.
struct CallNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Call;
  CallNode(DataType t, std::string op, std::vector<Expr> args, Attrs attrs, Span s)
      : ExprNode(kKind, t, std::move(s)), op(std::move(op)), builtin(lookup_builtin(this->op)), args(std::move(args)),
        attrs(std::move(attrs)) {}
  const std::string op;
  const std::optional<Builtin> builtin;
  std::vector<Expr> args;
  Attrs attrs;

  bool is(Builtin b) const { return builtin == b; }
};

// base + k * stride for k in [0, lanes): the index of a vector load or store.
struct RampNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Ramp;
  // `scalable`: T.vscale() * lanes lanes (a scalable vector, see dtype.h).
  RampNode(Expr base, Expr stride, int lanes, Span s, bool scalable = false)
      : ExprNode(kKind, scalable ? base->dtype.with_scalable_lanes(lanes) : base->dtype.with_lanes(lanes), std::move(s)),
        base(std::move(base)),
        stride(std::move(stride)), lanes(lanes) {}
  Expr base, stride;
  int lanes;
};

struct BroadcastNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Broadcast;
  BroadcastNode(Expr value, int lanes, Span s, bool scalable = false)
      : ExprNode(kKind, scalable ? value->dtype.with_scalable_lanes(lanes) : value->dtype.with_lanes(lanes), std::move(s)),
        value(std::move(value)), lanes(lanes) {}
  Expr value;
  int lanes;
};

// Lane k of the result is lane indices[k] of the vectors laid end to end.
struct ShuffleNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Shuffle;
  ShuffleNode(DataType t, std::vector<Expr> vectors, std::vector<int> indices, Span s)
      : ExprNode(kKind, t, std::move(s)), vectors(std::move(vectors)), indices(std::move(indices)) {}
  std::vector<Expr> vectors;
  std::vector<int> indices;
};

// `body` with `var` bound to `value` (TVM's T.Let).
struct LetNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Let;
  LetNode(Var var, Expr value, Expr body, Span s)
      : ExprNode(kKind, body->dtype, std::move(s)), var(std::move(var)), value(std::move(value)),
        body(std::move(body)) {}
  Var var;
  Expr value, body;
};

// ---- constructors -------------------------------------------------------------
// Plain factories with no type checking: the verifier reports type errors with spans.

Expr IntImm(DataType t, int64_t v, Span s = {});
Expr FloatImm(DataType t, double v, Span s = {});
Expr StringImm(std::string v, Span s = {});
Expr Bool(bool v, Span s = {});
Var MakeVar(std::string name, DataType t, Span s = {});
// A handle variable that points to `pointee` elements in storage `scope` ("" for none).
Var MakePointerVar(std::string name, DataType pointee, std::string scope, Span s = {});
// Binary nodes: the result type is a's type for arithmetic, bool for the others.
Expr Binary(ExprKind k, Expr a, Expr b, Span s = {});
Expr Not(Expr a, Span s = {});
Expr Select(Expr c, Expr t, Expr f, Span s = {});
Expr Cast(DataType t, Expr v, Span s = {});
Expr BufferLoad(Buffer b, std::vector<Expr> indices, Span s = {});
Expr Call(DataType t, std::string op, std::vector<Expr> args, Attrs attrs = {}, Span s = {});
Expr Ramp(Expr base, Expr stride, int lanes, Span s = {}, bool scalable = false);
Expr Broadcast(Expr value, int lanes, Span s = {}, bool scalable = false);
// The result type is the element type of vectors[0] with indices.size() lanes.
Expr Shuffle(std::vector<Expr> vectors, std::vector<int> indices, Span s = {});
Expr Let(Var var, Expr value, Expr body, Span s = {});

// The constant value of an IntImm, if `e` is one.
const int64_t* as_const_int(const Expr& e);
// Whether the code generators mask a shift amount into [0, bits): not a constant (the
// verifier checks those) nor T.known_range with constant bounds within [0, bits) (the
// interpreter refuses a value outside them).
bool shift_needs_mask(const Expr& amount, int bits);

}  // namespace mtir
