// Scalar expressions of the compiled interpreter: constants, variables by slot, the
// arithmetic with the integer cases kernels spend their time in specialized, casts,
// selects and the builtins. Each node computes what Interpreter::eval computes for the
// same IR node (interpreter.cc), with the same errors.
#include <cmath>

#include "interp/compiled.h"
#include "ir/op.h"

namespace mtir {
namespace interp {

namespace {

struct ConstExpr final : CExpr {
  explicit ConstExpr(Scalar v) : value(v) {
    int_result = !v.dtype.is_float();
    known_type = v.dtype;
  }
  Scalar eval(Frame&) const override { return value; }
  int64_t eval_int(Frame&) const override { return value.i; }
  Scalar value;
};

// An error only when evaluated (as the tree walk finds it), at the statement's span
// when the expression has none.
struct ErrorExpr final : CExpr {
  ErrorExpr(const Span& s, std::string m) : span(s), message(std::move(m)) {}
  Scalar eval(Frame& f) const override { user_error(f.where(span), message); }
  const Span& span;
  std::string message;
};

struct VarExpr final : CExpr {
  explicit VarExpr(int s) : slot(s) {}
  Scalar eval(Frame& f) const override { return f.vars[static_cast<size_t>(slot)]; }
  int64_t eval_int(Frame& f) const override { return f.vars[static_cast<size_t>(slot)].i; }
  int slot;
};

struct Arith final : CExpr {
  Arith(const BinaryNode* op, CExprPtr a, CExprPtr b)
      : kind(op->kind), type(op->dtype.element_of()), span(op->span), a(std::move(a)), b(std::move(b)) {}
  Scalar eval(Frame& f) const override {
    const Scalar x = a->eval(f), y = b->eval(f);
    return arith(kind, type, x, y, f.where(span));
  }
  ExprKind kind;
  DataType type;
  const Span& span;
  CExprPtr a, b;
};

struct Compare final : CExpr {
  Compare(ExprKind k, CExprPtr a, CExprPtr b) : kind(k), a(std::move(a)), b(std::move(b)) { int_result = true; }
  Scalar eval(Frame& f) const override {
    const Scalar x = a->eval(f), y = b->eval(f);
    bool r;
    // The signed integer case inline; the others as interp::compare decides them.
    if (x.dtype.is_int()) {
      switch (kind) {
        case ExprKind::EQ: r = x.i == y.i; break;
        case ExprKind::NE: r = x.i != y.i; break;
        case ExprKind::LT: r = x.i < y.i; break;
        case ExprKind::LE: r = x.i <= y.i; break;
        case ExprKind::GT: r = x.i > y.i; break;
        default: r = x.i >= y.i; break;
      }
    } else {
      r = compare(kind, x, y);
    }
    return make_int(DataType::Bool(), r);
  }
  ExprKind kind;
  CExprPtr a, b;
};

// Short-circuit, as C's && and ||.
struct Logic final : CExpr {
  Logic(bool is_and, CExprPtr a, CExprPtr b) : is_and(is_and), a(std::move(a)), b(std::move(b)) { int_result = true; }
  Scalar eval(Frame& f) const override {
    const bool x = a->eval(f).truthy();
    const bool r = is_and ? (x && b->eval(f).truthy()) : (x || b->eval(f).truthy());
    return make_int(DataType::Bool(), r);
  }
  bool is_and;
  CExprPtr a, b;
};

struct NotExpr final : CExpr {
  explicit NotExpr(CExprPtr a) : a(std::move(a)) { int_result = true; }
  Scalar eval(Frame& f) const override { return make_int(DataType::Bool(), !a->eval(f).truthy()); }
  CExprPtr a;
};

// Both sides are evaluated (errors in either are reported), as TIR's Select says.
struct SelectExpr final : CExpr {
  SelectExpr(CExprPtr c, CExprPtr t, CExprPtr e) : c(std::move(c)), t(std::move(t)), e(std::move(e)) {}
  Scalar eval(Frame& f) const override {
    const bool cond = c->eval(f).truthy();
    const Scalar x = t->eval(f), y = e->eval(f);
    return cond ? x : y;
  }
  CExprPtr c, t, e;
};

struct CastExpr final : CExpr {
  CastExpr(DataType t, const Span& s, CExprPtr v) : type(t), span(s), value(std::move(v)) {
    int_result = !t.is_float();
  }
  Scalar eval(Frame& f) const override {
    const Scalar v = value->eval(f);
    // Integer to integer (requantization's widening and narrowing) inline.
    if (type.is_integer() && !v.dtype.is_float()) return make_int(type, v.i);
    return interp::cast(type, v, f.where(span));
  }
  DataType type;
  const Span& span;
  CExprPtr value;
};

// Integer to integer (requantization's widening and narrowing), the value known to be
// no float: what CastExpr does then.
struct IntCast final : IntCExpr {
  IntCast(DataType t, CExprPtr v) : IntCExpr(t), value(std::move(v)) {}
  int64_t eval_int(Frame& f) const override { return wrap_int(type, value->eval_int(f)); }
  CExprPtr value;
};

struct LetExpr final : CExpr {
  LetExpr(int s, CExprPtr v, CExprPtr b) : slot(s), value(std::move(v)), body(std::move(b)) {}
  Scalar eval(Frame& f) const override {
    Scalar& var = f.vars[static_cast<size_t>(slot)];
    const Scalar saved = var;
    var = value->eval(f);
    const Scalar r = body->eval(f);
    var = saved;
    return r;
  }
  int slot;
  CExprPtr value, body;
};

}  // namespace

bool Compiler::constant(const Expr& e, int64_t* value) {
  const auto* imm = as<IntImmNode>(e);
  if (imm) *value = imm->value;
  return imm != nullptr;
}

std::vector<CExprPtr> Compiler::exprs(const std::vector<Expr>& es) {
  std::vector<CExprPtr> out;
  for (const Expr& e : es) out.push_back(expr(e));
  return out;
}

CExprPtr Compiler::expr(const Expr& e) {
  MTIR_ICHECK(e != nullptr, "null expression");
  if (e->dtype.is_vector()) throw Unsupported{"vector expressions"};
  switch (e->kind) {
    case ExprKind::IntImm: return std::make_unique<ConstExpr>(make_int(e->dtype, static_cast<const IntImmNode*>(e.get())->value));
    case ExprKind::FloatImm:
      return std::make_unique<ConstExpr>(make_float(e->dtype, static_cast<const FloatImmNode*>(e.get())->value));
    case ExprKind::StringImm: return std::make_unique<ErrorExpr>(e->span, "a string has no value outside call_extern");
    case ExprKind::Var: return var(static_cast<const VarNode*>(e.get()));
#define MTIR_BINARY(Name) case ExprKind::Name:
#include "ir/nodes.def"
      return binary(e);
    case ExprKind::Not: return std::make_unique<NotExpr>(expr(static_cast<const NotNode*>(e.get())->a));
    case ExprKind::Select: {
      const auto* op = static_cast<const SelectNode*>(e.get());
      return std::make_unique<SelectExpr>(expr(op->condition), expr(op->true_value), expr(op->false_value));
    }
    case ExprKind::Cast: return cast(static_cast<const CastNode*>(e.get()));
    case ExprKind::BufferLoad: return load(static_cast<const BufferLoadNode*>(e.get()));
    case ExprKind::Call: return call(static_cast<const CallNode*>(e.get()));
    case ExprKind::Let: return let(static_cast<const LetNode*>(e.get()));
    case ExprKind::Ramp:
    case ExprKind::Broadcast:
    case ExprKind::Shuffle: throw Unsupported{"vector expressions"};
  }
  MTIR_ICHECK(false, "unhandled expression kind");
}

CExprPtr Compiler::var(const VarNode* v) {
  if (in_scope_.count(v)) return std::make_unique<VarExpr>(var_slot(v));
  // A handle (a buffer's data pointer) has no numeric value; it may appear as an
  // attribute node or extern argument, which we never compute with.
  if (v->dtype.is_handle()) return std::make_unique<ConstExpr>(make_int(DataType::Int(64), 0));
  return std::make_unique<ErrorExpr>(v->span, "variable '" + v->name + "' has no value here (used outside its scope)");
}

CExprPtr Compiler::binary(const Expr& e) {
  const auto* op = static_cast<const BinaryNode*>(e.get());
  const bool add_sub_mul = op->kind == ExprKind::Add || op->kind == ExprKind::Sub || op->kind == ExprKind::Mul;
  if (add_sub_mul && op->dtype.element_of().is_integer()) return int_arith(e);
  CExprPtr a = expr(op->a), b = expr(op->b);
  if (op->kind == ExprKind::And || op->kind == ExprKind::Or)
    return std::make_unique<Logic>(op->kind == ExprKind::And, std::move(a), std::move(b));
  if (is_comparison(op->kind)) return std::make_unique<Compare>(op->kind, std::move(a), std::move(b));
  return std::make_unique<Arith>(op, std::move(a), std::move(b));
}

CExprPtr Compiler::cast(const CastNode* op) {
  const DataType t = op->dtype.element_of();
  CExprPtr value = expr(op->value);
  // An integer to an integer type: the modular conversion alone, or nothing when it
  // cannot change the value (the load then gives its values the cast's type).
  if (t.is_integer() && value->int_result) {
    if (value->widen_to(t)) return value;
    return std::make_unique<IntCast>(t, std::move(value));
  }
  return std::make_unique<CastExpr>(t, op->span, std::move(value));
}

CExprPtr Compiler::let(const LetNode* op) {
  if (op->var->dtype.is_vector()) throw Unsupported{"vector variables"};
  CExprPtr value = expr(op->value);
  Scope scope(this, op->var.get());
  return std::make_unique<LetExpr>(var_slot(op->var.get()), std::move(value), expr(op->body));
}

int Compiler::var_slot(const VarNode* v) {
  auto it = var_slots_.find(v);
  if (it != var_slots_.end()) return it->second;
  const int slot = static_cast<int>(var_slots_.size());
  var_slots_[v] = slot;
  return slot;
}

int Compiler::storage_slot(const void* key) {
  auto it = storage_slots_.find(key);
  if (it != storage_slots_.end()) return it->second;
  const int slot = static_cast<int>(storage_slots_.size());
  storage_slots_[key] = slot;
  return slot;
}

}  // namespace interp
}  // namespace mtir
