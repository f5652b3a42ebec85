// Recursive-descent parser for the text format described in docs/text-format.md: the
// entry points, the token helpers and the scopes. The grammar is spread by area over
// parser_module.cc, parser_stmt.cc, parser_expr.cc and parser_t_calls.cc, behind
// parser_internal.h.
#include "script/parser.h"

#include "script/parser_internal.h"
#include "support/names.h"

namespace mtir {
namespace script_parser {

bool contains_float_literal(const Expr& e) {
  if (as<FloatImmNode>(e)) return true;
  if (is_binary(e->kind)) {
    const auto* b = static_cast<const BinaryNode*>(e.get());
    return contains_float_literal(b->a) || contains_float_literal(b->b);
  }
  return false;
}

// Rebuilds a bare-literal tree with type `t`.
Expr retype_literal(const Expr& e, DataType t) {
  if (const auto* i = as<IntImmNode>(e)) {
    if (t.is_float()) return FloatImm(t, static_cast<double>(i->value), e->span);
    return IntImm(t, i->value, e->span);
  }
  if (const auto* f = as<FloatImmNode>(e)) return FloatImm(t, f->value, e->span);
  if (is_binary(e->kind)) {
    const auto* b = static_cast<const BinaryNode*>(e.get());
    return Binary(e->kind, retype_literal(b->a, t), retype_literal(b->b, t), e->span);
  }
  return e;
}

// Every name the parser accepts after `T.` in an expression, for "did you mean".
const std::vector<std::string>& t_expr_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n = {"truncdiv", "truncmod", "floordiv", "floormod",   "min",    "max",     "And",
                                  "Or",       "Not",      "Select",   "Cast",       "int8",   "int16",   "int32",
                                  "int64",    "uint8",    "uint16",   "uint32",     "uint64", "float16", "float32",
                                  "float64",  "bool",     "Call",     "call_intrin"};
    for (const auto& op : all_ops()) n.push_back(op.name);
    return n;
  }();
  return names;
}

// The note "did you mean 'T.x'?" for the closest candidate, or no note.
std::vector<std::string> did_you_mean(const std::string& name, const std::vector<std::string>& candidates,
                                      const std::string& prefix) {
  std::string best = closest_match(name, candidates);
  if (best.empty()) return {};
  return {"did you mean '" + prefix + best + "'?"};
}

bool is_block_construct(const std::string& name) {
  static const char* const kNames[] = {
      "block", "sblock", "axis", "reads", "writes", "init", "where", "block_attr", "match_sparse_buffer"};
  for (const char* n : kNames)
    if (name == n) return true;
  return false;
}

const char* binary_symbol(ExprKind k) {
  switch (k) {
    case ExprKind::Add:
      return "+";
    case ExprKind::Sub:
      return "-";
    case ExprKind::Mul:
      return "*";
    case ExprKind::Div:
      return "/";
    case ExprKind::Mod:
      return "%";
    case ExprKind::FloorDiv:
      return "//";
    case ExprKind::FloorMod:
      return "%";
    case ExprKind::Min:
      return "T.min";
    case ExprKind::Max:
      return "T.max";
    case ExprKind::EQ:
      return "==";
    case ExprKind::NE:
      return "!=";
    case ExprKind::LT:
      return "<";
    case ExprKind::LE:
      return "<=";
    case ExprKind::GT:
      return ">";
    case ExprKind::GE:
      return ">=";
    case ExprKind::And:
      return "and";
    case ExprKind::Or:
      return "or";
    default:
      return "?";
  }
}

IRModule Parser::parse_file() {
  IRModule mod;
  skip_preamble();
  if (!is_op("@")) fail(cur(), "expected '@I.ir_module' or '@T.prim_func', found " + describe(cur()));
  const Token& at = cur();
  std::string deco = parse_decorator();
  if (deco == "I.ir_module" || deco == "tvm.script.ir_module") {
    parse_class(&mod);
  } else if (deco == "T.prim_func") {
    // One or more functions without a module around them.
    while (true) {
      const Token& def_tok = cur();
      auto [name, f] = parse_function();
      if (mod.lookup(name)) fail(def_tok, "function '" + name + "' is defined twice");
      mod.functions.emplace_back(name, f);
      skip_newlines();
      if (!is_op("@")) break;
      const Token& next_at = cur();
      std::string d = parse_decorator();
      if (d != "T.prim_func") fail(next_at, "expected '@T.prim_func', found '@" + d + "'");
    }
  } else {
    fail(at, "unknown decorator '@" + deco + "'; expected '@I.ir_module' or '@T.prim_func'");
  }
  skip_newlines();
  if (cur().kind != TokKind::kEof) fail(cur(), "unexpected " + describe(cur()) + " after the module");
  return mod;
}

const Token& Parser::next() {
  const Token& t = toks_[pos_];
  if (pos_ + 1 < toks_.size()) ++pos_;
  return t;
}

// `T.<name>` at the cursor.
bool Parser::at_t_attr(const char* name) const {
  return tok_is_name(cur(), "T") && tok_is_op(ahead(1), ".") && tok_is_name(ahead(2), name);
}

[[noreturn]] void Parser::fail(const Token& t, const std::string& msg, std::vector<std::string> notes) {
  user_error(span(t), msg, std::move(notes));
}

const Token& Parser::expect_op(const char* s, const std::string& context) {
  if (!is_op(s)) fail(cur(), std::string("expected '") + s + "' " + context + ", found " + describe(cur()));
  return next();
}

const Token& Parser::expect_name(const std::string& context) {
  if (cur().kind != TokKind::kName) fail(cur(), "expected a name " + context + ", found " + describe(cur()));
  return next();
}

void Parser::expect_keyword(const char* kw, const std::string& context) {
  if (!is_name(kw)) fail(cur(), std::string("expected '") + kw + "' " + context + ", found " + describe(cur()));
  next();
}

std::string Parser::expect_string(const std::string& context) {
  if (cur().kind != TokKind::kString) fail(cur(), "expected a string " + context + ", found " + describe(cur()));
  return next().text;
}

void Parser::expect_newline(const std::string& context) {
  if (cur().kind != TokKind::kNewline && cur().kind != TokKind::kEof)
    fail(cur(), "expected end of line " + context + ", found " + describe(cur()));
  if (cur().kind == TokKind::kNewline) next();
}

void Parser::skip_newlines() {
  while (cur().kind == TokKind::kNewline) next();
}

int Parser::combined_height(const PExpr& a, const PExpr& b, const Token& op) {
  int h = std::max(a.height, b.height) + 1;
  if (h > kMaxExprHeight)
    fail(op, "expression nesting too deep (more than " + std::to_string(kMaxExprHeight) + " operators in a chain)");
  return h;
}

const Binding* Parser::lookup(const std::string& name) const {
  for (auto it = bindings_.rbegin(); it != bindings_.rend(); ++it)
    if (it->first == name) return &it->second;
  return nullptr;
}

}  // namespace script_parser

ParseResult parse_module(const std::string& text, const std::string& filename) {
  ParseResult result;
  auto file = std::make_shared<SourceFile>();
  file->name = filename;
  file->text = text;
  try {
    std::vector<script::Token> toks = script::tokenize(file);
    script_parser::Parser parser(file, std::move(toks));
    result.module = parser.parse_file();
  } catch (const DiagnosticError& e) {
    result.diagnostics = e.diagnostics();
    result.module.reset();
  } catch (const std::exception& e) {
    Diagnostic d;
    d.severity = Severity::kInternal;
    d.span = Span{file, 1, 1};
    d.message = std::string("internal error while parsing: ") + e.what();
    result.diagnostics.push_back(d);
    result.module.reset();
  }
  if (!result.module && result.diagnostics.empty()) {
    Diagnostic d;
    d.span = Span{file, 1, 1};
    d.message = "parse failed";
    result.diagnostics.push_back(d);
  }
  return result;
}

IRModule parse_module_or_throw(const std::string& text, const std::string& filename) {
  ParseResult r = parse_module(text, filename);
  if (!r.ok()) throw DiagnosticError(r.diagnostics);
  return std::move(*r.module);
}

}  // namespace mtir
