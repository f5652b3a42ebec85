// The text format's expressions: operator precedence, type unification of operands and
// bare literals, atoms.
#include <limits>

#include "script/parser_internal.h"

namespace mtir {
namespace script_parser {

// Makes `p` of type `t` if it is a bare literal that can take that type.
PExpr Parser::promote_to(PExpr p, DataType t) {
  if (t.is_vector() && p.e->dtype.is_scalar()) {
    // A scalar where a vector is wanted is repeated over its lanes (TVM broadcasts).
    PExpr s = promote_to(p, t.element_of());
    if (s.e->dtype != t.element_of()) return p;  // the caller reports the mismatch
    return {Broadcast(s.e, t.lanes(), s.e->span, t.is_scalable()), false, s.height + 1};
  }
  if (!p.bare) return p;
  if (t.is_float() || (t.is_integer() && !contains_float_literal(p.e)))
    return {retype_literal(p.e, t), false, p.height};
  return p;
}

// Brings both operands to one type (bare literals adapt), or reports a mismatch.
void Parser::unify(PExpr& a, PExpr& b, const std::string& sym, const Token& at, const char* what) {
  if (a.e->dtype.is_scalar() && b.e->dtype.is_vector()) {
    a = promote_to(a, b.e->dtype);
  } else if (b.e->dtype.is_scalar() && a.e->dtype.is_vector()) {
    b = promote_to(b, a.e->dtype);
  } else if (a.bare && !b.bare) {
    a = promote_to(a, b.e->dtype);
  } else if (b.bare && !a.bare) {
    b = promote_to(b, a.e->dtype);
  } else if (a.bare && b.bare && a.e->dtype != b.e->dtype) {
    // Mixed bare literals: float beats int, int64 beats int32.
    DataType t = a.e->dtype.is_float()   ? a.e->dtype
                 : b.e->dtype.is_float() ? b.e->dtype
                                         : (a.e->dtype.bits() >= b.e->dtype.bits() ? a.e->dtype : b.e->dtype);
    a.e = retype_literal(a.e, t);
    b.e = retype_literal(b.e, t);
  }
  if (a.e->dtype != b.e->dtype) {
    std::string msg = "type mismatch: " + a.e->dtype.str() + " " + sym + " " + b.e->dtype.str();
    if (what)
      msg = std::string("type mismatch between ") + what + ": " + a.e->dtype.str() + " and " + b.e->dtype.str();
    fail(at, msg);
  }
}

PExpr Parser::arith(ExprKind k, PExpr a, PExpr b, const Token& op) {
  unify(a, b, binary_symbol(k), op);
  const DataType& t = a.e->dtype;
  if (!t.is_numeric()) fail(op, std::string("operator '") + binary_symbol(k) + "' needs numbers, got " + t.str());
  return {Binary(k, a.e, b.e, span(op)), a.bare && b.bare, combined_height(a, b, op)};
}

PExpr Parser::compare(ExprKind k, PExpr a, PExpr b, const Token& op) {
  unify(a, b, binary_symbol(k), op);
  return {Binary(k, a.e, b.e, span(op)), false, combined_height(a, b, op)};
}

PExpr Parser::logic(ExprKind k, PExpr a, PExpr b, const Token& op) {
  for (const PExpr* p : {&a, &b})
    if (!p->e->dtype.is_bool())
      fail(op, std::string("operands of '") + binary_symbol(k) + "' must be bool, got " + p->e->dtype.str());
  return {Binary(k, a.e, b.e, span(op)), false, combined_height(a, b, op)};
}

PExpr Parser::parse_expr() {
  DepthGuard guard(*this, cur());
  return parse_or();
}

PExpr Parser::parse_or() {
  PExpr l = parse_and();
  while (is_name("or")) {
    const Token& op = next();
    l = logic(ExprKind::Or, l, parse_and(), op);
  }
  return l;
}

PExpr Parser::parse_and() {
  PExpr l = parse_not();
  while (is_name("and")) {
    const Token& op = next();
    l = logic(ExprKind::And, l, parse_not(), op);
  }
  return l;
}

PExpr Parser::parse_not() {
  if (!is_name("not")) return parse_comparison();
  const Token& op = next();
  DepthGuard guard(*this, op);
  PExpr a = parse_not();
  if (!a.e->dtype.is_bool()) fail(op, "operand of 'not' must be bool, got " + a.e->dtype.str());
  return {Not(a.e, span(op)), false};
}

bool Parser::at_comparison(ExprKind* k) const {
  if (cur().kind != TokKind::kOp) return false;
  const std::string& s = cur().text;
  if (s == "==")
    *k = ExprKind::EQ;
  else if (s == "!=")
    *k = ExprKind::NE;
  else if (s == "<")
    *k = ExprKind::LT;
  else if (s == "<=")
    *k = ExprKind::LE;
  else if (s == ">")
    *k = ExprKind::GT;
  else if (s == ">=")
    *k = ExprKind::GE;
  else
    return false;
  return true;
}

PExpr Parser::parse_comparison() {
  PExpr l = parse_arith();
  ExprKind kind;
  if (!at_comparison(&kind)) return l;
  const Token& op = next();
  PExpr r = parse_arith();
  ExprKind again;
  if (at_comparison(&again)) fail(cur(), "chained comparisons are not supported; combine them with 'and'");
  return compare(kind, l, r, op);
}

PExpr Parser::parse_arith() {
  PExpr l = parse_term();
  while (is_op("+") || is_op("-")) {
    const Token& op = next();
    PExpr r = parse_term();
    l = arith(op.text == "+" ? ExprKind::Add : ExprKind::Sub, l, r, op);
  }
  return l;
}

PExpr Parser::parse_term() {
  PExpr l = parse_unary();
  while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
    const Token& op = next();
    PExpr r = parse_unary();
    ExprKind k = op.text == "*"    ? ExprKind::Mul
                 : op.text == "/"  ? ExprKind::Div
                 : op.text == "//" ? ExprKind::FloorDiv
                                   : ExprKind::FloorMod;
    l = arith(k, l, r, op);
  }
  return l;
}

PExpr Parser::parse_unary() {
  if (is_op("+")) {
    const Token& op = next();
    DepthGuard guard(*this, op);
    return parse_unary();
  }
  if (!is_op("-")) return parse_power();
  const Token& op = next();
  DepthGuard guard(*this, op);
  // A negative literal is a constant, not `0 - literal`.
  if (cur().kind == TokKind::kInt && !tok_is_op(ahead(1), "**")) {
    const Token& lit = next();
    return {int_literal(lit, true), true};
  }
  if (cur().kind == TokKind::kFloat && !tok_is_op(ahead(1), "**")) {
    const Token& lit = next();
    return {FloatImm(DataType::Float(32), -lit.float_value, span(op)), true};
  }
  PExpr a = parse_unary();
  DataType t = a.e->dtype;
  if (!t.is_numeric()) fail(op, "cannot negate a value of type " + t.str());
  Expr zero = t.is_float() ? FloatImm(t, 0.0, span(op)) : IntImm(t, 0, span(op));
  return {Binary(ExprKind::Sub, zero, a.e, span(op)), a.bare, a.height + 1};
}

// A bare integer literal: int32 if it fits, int64 otherwise.
Expr Parser::int_literal(const Token& lit, bool negative) {
  const uint64_t limit = static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) + (negative ? 1 : 0);
  if (lit.int_value > limit) fail(lit, "integer literal '" + lit.text + "' is too large");
  int64_t v = negative ? static_cast<int64_t>(0 - lit.int_value) : static_cast<int64_t>(lit.int_value);
  bool fits32 = v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max();
  return IntImm(fits32 ? DataType::Int(32) : DataType::Int(64), v, span(lit));
}

PExpr Parser::parse_power() {
  PExpr base = parse_atom();
  if (!is_op("**")) return base;
  const Token& op = next();
  DepthGuard guard(*this, op);
  PExpr exp = parse_unary();
  unify(base, exp, "**", op);
  if (!base.e->dtype.is_float())
    base = promote_to(base, DataType::Float(32)), exp = promote_to(exp, DataType::Float(32));
  return {Call(base.e->dtype, "pow", {base.e, exp.e}, {}, span(op)), false};
}

PExpr Parser::parse_atom() {
  const Token& t = cur();
  switch (t.kind) {
    case TokKind::kInt:
      next();
      return {int_literal(t, false), true};
    case TokKind::kFloat:
      next();
      return {FloatImm(DataType::Float(32), t.float_value, span(t)), true};
    case TokKind::kString:
      next();
      return {StringImm(t.text, span(t)), false};
    case TokKind::kOp:
      if (t.text == "(") {
        next();
        PExpr e = parse_expr();
        expect_op(")", "to close the parenthesis");
        return e;
      }
      break;
    case TokKind::kName: {
      if (t.text == "True" || t.text == "False") {
        next();
        return {Bool(t.text == "True", span(t)), false};
      }
      if (t.text == "T" && tok_is_op(ahead(1), ".")) return parse_t_call();
      static const char* const kKeywords[] = {"for",    "in",   "if",     "else",   "elif", "and",    "or",
                                              "not",    "def",  "class",  "with",   "as",   "assert", "pass",
                                              "return", "None", "lambda", "import", "from", "is",     "while"};
      for (const char* kw : kKeywords)
        if (t.text == kw) fail(t, "expected an expression, found keyword '" + t.text + "'");
      next();
      const Binding* found = lookup(t.text);
      if (!found && at_global_call(t)) return parse_global_call(t);
      if (!found) fail_undefined(t);
      const Binding b = *found;  // a copy: bindings_ may grow while we parse indices
      if (b.buffer) {
        if (is_op("[")) {
          std::vector<Expr> idx = parse_indices(t, b.buffer);
          return {BufferLoad(b.buffer, std::move(idx), span(t)), false};
        }
        if (is_op(".")) {
          next();
          return {parse_buffer_field(t, b.buffer), false};
        }
        if (b.var) return {b.var, false};
        fail(t, "buffer '" + t.text + "' cannot be used as a value; index it or use " + t.text + ".data");
      }
      if (is_op("[")) fail(t, "'" + t.text + "' is not a buffer and cannot be indexed");
      return {b.var, false};
    }
    default:
      break;
  }
  fail(t, "expected an expression, found " + describe(t));
}

}  // namespace script_parser
}  // namespace mtir
