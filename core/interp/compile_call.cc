// Builtin calls of the compiled interpreter, each as Interpreter::eval_call computes it
// (interpreter.cc): math functions, shifts and bitwise operators (the requantization's
// hot path, inline when the shift is in range), the lazy if_then_else, call_extern,
// DSP intrinsics, return, tvm_throw_last_error and Module.sub(...) calls (made by the
// interpreter through the frame). call_tir and tvm_call_packed are left to the tree walk.
#include "interp/compiled.h"
#include "ir/op.h"
#include "ir/tvm_intrinsics.h"

namespace mtir {
namespace interp {

namespace {

struct ErrorCall final : CExpr {
  ErrorCall(const Span& s, std::string m) : span(s), message(std::move(m)) {}
  Scalar eval(Frame& f) const override { user_error(f.where(span), message); }
  const Span& span;
  std::string message;
};

struct UnaryMath final : CExpr {
  UnaryMath(const CallNode* op, UnaryFunction fn, CExprPtr x)
      : builtin(*op->builtin), type(op->dtype.element_of()), span(op->span), fn(fn), x(std::move(x)) {}
  Scalar eval(Frame& f) const override { return unary_math(builtin, type, x->eval(f), f.where(span), fn); }
  Builtin builtin;
  DataType type;
  const Span& span;
  UnaryFunction fn;
  CExprPtr x;
};

// pow, and the shifts and bitwise operators (int_binary).
struct BinaryCall final : CExpr {
  BinaryCall(const CallNode* op, CExprPtr x, CExprPtr y)
      : builtin(*op->builtin), type(op->dtype.element_of()), span(op->span), x(std::move(x)), y(std::move(y)) {}
  Scalar eval(Frame& f) const override {
    const Scalar a = x->eval(f), b = y->eval(f);
    if (builtin == Builtin::Pow) return binary_math(builtin, type, a, b, f.where(span));
    // In range on an integer type: int_binary's result without its checks.
    if (type.is_integer() && b.i >= 0 && b.i < type.bits()) {
      const uint64_t u = static_cast<uint64_t>(a.i), v = static_cast<uint64_t>(b.i);
      switch (builtin) {
        case Builtin::ShiftLeft: return make_int(type, static_cast<int64_t>(u << v));
        case Builtin::ShiftRight:
          return make_int(type, type.is_int() ? a.i >> b.i : static_cast<int64_t>(u >> v));
        default: break;
      }
    }
    return int_binary(builtin, type, a, b, f.where(span));
  }
  Builtin builtin;
  DataType type;
  const Span& span;
  CExprPtr x, y;
};

struct KnownRangeCall final : CExpr {
  KnownRangeCall(const CallNode* op, CExprPtr x, CExprPtr lo, CExprPtr hi)
      : span(op->span), x(std::move(x)), lo(std::move(lo)), hi(std::move(hi)) {}
  Scalar eval(Frame& f) const override { return known_range(x->eval(f), lo->eval(f), hi->eval(f), f.where(span)); }
  const Span& span;
  CExprPtr x, lo, hi;
};

// Lazy: only the taken side runs, so it may guard an access that would be out of bounds.
struct IfThenElseCall final : CExpr {
  IfThenElseCall(CExprPtr c, CExprPtr t, CExprPtr e) : c(std::move(c)), t(std::move(t)), e(std::move(e)) {}
  Scalar eval(Frame& f) const override { return c->eval(f).truthy() ? t->eval(f) : e->eval(f); }
  CExprPtr c, t, e;
};

struct PureCall final : CExpr {
  PureCall(const CallNode* op, std::vector<CExprPtr> a)
      : builtin(*op->builtin), from(op->args[0]->dtype), to(op->dtype), args(std::move(a)) {
    int_result = builtin != Builtin::Reinterpret;
    if (int_result) known_type = DataType::Int(32);
  }
  Scalar eval(Frame& f) const override {
    Scalar values[kMaxPureArgs];
    for (size_t k = 0; k < args.size() && k < kMaxPureArgs; ++k) values[k] = args[k]->eval(f);
    return pure_intrinsic(builtin, from, to, values);
  }
  // All but reinterpret read their arguments' integer values alone and give an int32.
  int64_t eval_int(Frame& f) const override {
    if (!int_result) return eval(f).i;
    Scalar values[kMaxPureArgs];
    for (size_t k = 0; k < args.size() && k < kMaxPureArgs; ++k) values[k].i = args[k]->eval_int(f);
    return pure_intrinsic(builtin, from, to, values).i;
  }
  Builtin builtin;
  DataType from, to;
  std::vector<CExprPtr> args;
};

// call_extern("result type", "symbol", args...) through InterpOptions::extern_functions.
struct ExternCall final : CExpr {
  ExternCall(const CallNode* op, std::string s, std::vector<CExprPtr> a)
      : type(op->dtype), span(op->span), symbol(std::move(s)), args(std::move(a)) {}
  Scalar eval(Frame& f) const override {
    auto fn = f.options->extern_functions.find(symbol);
    if (fn == f.options->extern_functions.end())
      user_error(f.where(span), "cannot interpret call_extern '" + symbol +
                                    "': external functions are not available to the interpreter");
    std::vector<double> values;
    for (const CExprPtr& a : args) {
      Scalar v = a->eval(f);
      values.push_back(v.dtype.is_float() ? v.f
                       : v.dtype.is_uint() ? static_cast<double>(static_cast<uint64_t>(v.i))
                                           : static_cast<double>(v.i));
    }
    double r = fn->second(values);
    if (type.is_void() || type.is_handle()) return make_int(DataType::Int(32), 0);
    return interp::cast(type, make_float(DataType::Float(64), r), f.where(span));
  }
  DataType type;
  const Span& span;
  std::string symbol;
  std::vector<CExprPtr> args;
};

// `return x` / T.ret(x): unwinds to the function's run().
struct ReturnCall final : CExpr {
  explicit ReturnCall(CExprPtr v) : value(std::move(v)) {}
  Scalar eval(Frame& f) const override { throw Returned{value ? value->eval(f) : Scalar{}}; }  // null: a bare `return`
  CExprPtr value;
};

struct ThrowLastError final : CExpr {
  ThrowLastError(const Span& s, std::string fmt, std::vector<CExprPtr> a)
      : span(s), format(std::move(fmt)), args(std::move(a)) {}
  Scalar eval(Frame& f) const override {
    std::vector<int64_t> values;
    for (const CExprPtr& a : args) values.push_back(a->eval(f).i);
    user_error(f.where(span), format_error_message(format, values));
  }
  const Span& span;
  std::string format;
  std::vector<CExprPtr> args;
};

// Module.sub(args...): the arguments here, the call by the interpreter (Frame::call_global).
struct GlobalCall final : CExpr {
  explicit GlobalCall(const CallNode* op) : call(op) {}
  Scalar eval(Frame& f) const override {
    std::vector<CallArg> values(args.size());
    for (size_t k = 0; k < args.size(); ++k) {
      if (pointers[k]) values[k] = pointers[k]->eval(f);
      else values[k].value = args[k]->eval(f);
    }
    return (*f.call_global)(call, values, f);
  }
  const CallNode* call;
  std::vector<CExprPtr> args;         // scalars
  std::vector<CPointerPtr> pointers;  // pointers, where args has null
};

CExprPtr global_call(Compiler* c, const CallNode* op) {
  auto out = std::make_unique<GlobalCall>(op);
  for (size_t k = 1; k < op->args.size(); ++k) {
    const bool pointer = op->args[k]->dtype.is_handle();
    out->args.push_back(pointer ? nullptr : c->expr(op->args[k]));
    out->pointers.push_back(pointer ? c->pointer(op->args[k]) : nullptr);
  }
  return out;
}

CExprPtr extern_call(Compiler* c, const CallNode* op) {
  // Skip the leading strings: the result type and the symbol, or the symbol alone.
  size_t first_arg = 0;
  std::string symbol;
  const auto* s0 = op->args.empty() ? nullptr : as<StringImmNode>(op->args[0]);
  const auto* s1 = op->args.size() < 2 ? nullptr : as<StringImmNode>(op->args[1]);
  if (s0 && s1) symbol = s1->value, first_arg = 2;
  else if (s0) symbol = s0->value, first_arg = 1;
  std::vector<CExprPtr> args;
  for (size_t k = first_arg; k < op->args.size(); ++k) args.push_back(c->expr(op->args[k]));
  return std::make_unique<ExternCall>(op, symbol, std::move(args));
}

CExprPtr throw_last_error(Compiler* c, const CallNode* op) {
  if (op->args.empty()) return std::make_unique<ErrorCall>(op->span, kNoMessageError);
  const auto* format = as<StringImmNode>(op->args[0]);
  if (!format) return std::make_unique<ErrorCall>(op->span, "T.tvm_throw_last_error needs a message string");
  std::vector<CExprPtr> args;
  for (size_t k = 1; k < op->args.size(); ++k) args.push_back(c->expr(op->args[k]));
  return std::make_unique<ThrowLastError>(op->span, format->value, std::move(args));
}

}  // namespace

CExprPtr Compiler::call(const CallNode* op) {
  if (!op->builtin) {
    // TVM's own intrinsics (ir/tvm_intrinsics.def), expanded as the tree walk does; one
    // the interpreter cannot run is refused when it is reached, not when it is compiled.
    try {
      expansions_.push_back(expand_tvm_intrinsic(op, "the interpreter"));
    } catch (const DiagnosticError& e) {
      if (e.internal() || e.diagnostics().empty()) throw;
      return std::make_unique<ErrorCall>(op->span, e.diagnostics()[0].message);
    }
    return expr(expansions_.back());
  }
  const Builtin b = *op->builtin;
  // The verifier checks arity; an unverified call is refused when it runs, as the tree
  // walk does, before any argument is read.
  if (std::string why; !builtin_arity_ok(builtin_info(b), op->args.size(), &why))
    return std::make_unique<ErrorCall>(op->span, why);
  if (std::string why = builtin_refusal(op); !why.empty()) return std::make_unique<ErrorCall>(op->span, why);
  if (UnaryFunction fn; unary_function(b, &fn)) return std::make_unique<UnaryMath>(op, fn, expr(op->args[0]));
  if (is_pure_intrinsic(b)) return std::make_unique<PureCall>(op, exprs(op->args));
  switch (b) {
    case Builtin::Pow:
    case Builtin::ShiftRight:
    case Builtin::ShiftLeft:
    case Builtin::BitwiseAnd:
    case Builtin::BitwiseOr:
    case Builtin::BitwiseXor: {
      CExprPtr x = expr(op->args[0]);
      return std::make_unique<BinaryCall>(op, std::move(x), expr(op->args[1]));
    }
    case Builtin::KnownRange: {
      CExprPtr x = expr(op->args[0]), lo = expr(op->args[1]);
      return std::make_unique<KnownRangeCall>(op, std::move(x), std::move(lo), expr(op->args[2]));
    }
    case Builtin::IfThenElse: {
      CExprPtr c = expr(op->args[0]), t = expr(op->args[1]);
      return std::make_unique<IfThenElseCall>(std::move(c), std::move(t), expr(op->args[2]));
    }
    case Builtin::CallExtern: return extern_call(this, op);
    case Builtin::CallGlobal: return global_call(this, op);
    case Builtin::TvmReturn: return std::make_unique<ReturnCall>(op->args.empty() ? nullptr : expr(op->args[0]));
    case Builtin::TvmThrowLastError: return throw_last_error(this, op);
    default: throw Unsupported{"T." + op->op};
  }
}

}  // namespace interp
}  // namespace mtir
