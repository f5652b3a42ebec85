// Recursive-descent parser for the text format described in docs/text-format.md.
//
// Errors are thrown as DiagnosticError at the first problem and turned into a
// ParseResult by parse_module, so the grammar code can stay linear.
#include "script/parser.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "ir/op.h"
#include "ir/structural_equal.h"
#include "script/lexer.h"
#include "support/names.h"

namespace mtir {
namespace {

using script::Token;
using script::TokKind;

// Deeper nesting than this is rejected rather than risking a stack overflow (in the
// parser, and later in every recursive pass over the tree).
constexpr int kMaxExprDepth = 200;
// Statements nest once per scoped statement (a let owns the rest of its block), so
// long flat sequences of lets legitimately go deep; allow more.
constexpr int kMaxStmtDepth = 1000;
// Operator chains like `a + b + c + ...` are parsed in a loop but build a tree as
// deep as the chain is long.
constexpr int kMaxExprHeight = 1000;

// A parsed expression plus whether it is a bare (untyped) literal or a tree made only
// of bare literals, which takes the type of the operand next to it.
struct PExpr {
  Expr e;
  bool bare = false;
  int height = 1;  // of the operator tree, to bound the depth of long chains
};

// What a name in scope stands for.
struct Binding {
  Var var;        // scalar variable, or the handle parameter of a buffer parameter
  Buffer buffer;  // set for buffers
  bool is_param = false;
};

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
    std::vector<std::string> n = {"truncdiv", "truncmod", "floordiv", "floormod", "min",    "max",
                                  "And",      "Or",       "Not",      "Select",   "Cast",   "int8",
                                  "int16",    "int32",    "int64",    "uint8",    "uint16", "uint32",
                                  "uint64",   "float16",  "float32",  "float64",  "bool"};
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

// The one refusal of TVM's schedulable, block-based TIR.
const char* const kBlockRefusal =
    "block-based TIR (T.block, T.axis, T.reads, T.writes, T.init, T.where) is out of scope: microtir reads "
    "lowered, block-free TIR; lower the function in TVM first (tvm.tir.transform.LowerOpaqueBlock after "
    "ConvertBlocksToOpaque, as tvm.lower does)";

bool is_block_construct(const std::string& name) {
  static const char* const kNames[] = {"block", "sblock", "axis", "reads", "writes", "init", "where",
                                       "block_attr", "iter_var", "match_sparse_buffer"};
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

class Parser {
 public:
  Parser(std::shared_ptr<const SourceFile> file, std::vector<Token> toks)
      : file_(std::move(file)), toks_(std::move(toks)) {}

  IRModule parse_file() {
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

 private:
  // ---- token helpers ------------------------------------------------------------
  const Token& cur() const { return toks_[pos_]; }
  const Token& ahead(size_t n) const { return toks_[std::min(pos_ + n, toks_.size() - 1)]; }
  const Token& next() {
    const Token& t = toks_[pos_];
    if (pos_ + 1 < toks_.size()) ++pos_;
    return t;
  }
  bool is_op(const char* s) const { return cur().kind == TokKind::kOp && cur().text == s; }
  bool is_name(const char* s) const { return cur().kind == TokKind::kName && cur().text == s; }
  static bool tok_is_op(const Token& t, const char* s) { return t.kind == TokKind::kOp && t.text == s; }
  static bool tok_is_name(const Token& t, const char* s) { return t.kind == TokKind::kName && t.text == s; }
  // `T.<name>` at the cursor.
  bool at_t_attr(const char* name) const {
    return tok_is_name(cur(), "T") && tok_is_op(ahead(1), ".") && tok_is_name(ahead(2), name);
  }
  Span span(const Token& t) const { return Span{file_, t.line, t.col}; }

  [[noreturn]] void fail(const Token& t, const std::string& msg, std::vector<std::string> notes = {}) {
    user_error(span(t), msg, std::move(notes));
  }
  const Token& expect_op(const char* s, const std::string& context) {
    if (!is_op(s)) fail(cur(), std::string("expected '") + s + "' " + context + ", found " + describe(cur()));
    return next();
  }
  const Token& expect_name(const std::string& context) {
    if (cur().kind != TokKind::kName) fail(cur(), "expected a name " + context + ", found " + describe(cur()));
    return next();
  }
  void expect_keyword(const char* kw, const std::string& context) {
    if (!is_name(kw)) fail(cur(), std::string("expected '") + kw + "' " + context + ", found " + describe(cur()));
    next();
  }
  std::string expect_string(const std::string& context) {
    if (cur().kind != TokKind::kString) fail(cur(), "expected a string " + context + ", found " + describe(cur()));
    return next().text;
  }
  void expect_newline(const std::string& context) {
    if (cur().kind != TokKind::kNewline && cur().kind != TokKind::kEof)
      fail(cur(), "expected end of line " + context + ", found " + describe(cur()));
    if (cur().kind == TokKind::kNewline) next();
  }
  void skip_newlines() {
    while (cur().kind == TokKind::kNewline) next();
  }

  // Counts recursion into expressions (or statements) and stops at the limit.
  struct DepthGuard {
    int& depth;
    DepthGuard(Parser& p, const Token& t, bool stmt = false) : depth(stmt ? p.stmt_depth_ : p.depth_) {
      if (++depth > (stmt ? kMaxStmtDepth : kMaxExprDepth)) {
        --depth;
        p.fail(t, "nesting too deep");
      }
    }
    ~DepthGuard() { --depth; }
  };

  int combined_height(const PExpr& a, const PExpr& b, const Token& op) {
    int h = std::max(a.height, b.height) + 1;
    if (h > kMaxExprHeight)
      fail(op, "expression nesting too deep (more than " + std::to_string(kMaxExprHeight) + " operators in a chain)");
    return h;
  }

  // ---- scopes ---------------------------------------------------------------------
  const Binding* lookup(const std::string& name) const {
    for (auto it = bindings_.rbegin(); it != bindings_.rend(); ++it)
      if (it->first == name) return &it->second;
    return nullptr;
  }
  void bind(const std::string& name, Binding b) { bindings_.emplace_back(name, std::move(b)); }
  size_t scope_mark() const { return bindings_.size(); }
  void pop_scope(size_t mark) { bindings_.resize(mark); }

  // ---- module structure -------------------------------------------------------------
  // Skips blank lines and `from tvm.script import ...` / `import ...` lines.
  void skip_preamble() {
    while (true) {
      skip_newlines();
      if (is_name("from") || is_name("import")) {
        while (cur().kind != TokKind::kNewline && cur().kind != TokKind::kEof) next();
        continue;
      }
      return;
    }
  }

  // `@a.b.c` with optional arguments, which are ignored (e.g. `@T.prim_func(private=True)`).
  std::string parse_decorator() {
    expect_op("@", "to start a decorator");
    std::string name = expect_name("after '@'").text;
    while (is_op(".")) {
      next();
      name += "." + expect_name("in decorator").text;
    }
    if (is_op("(")) {
      int depth = 0;
      do {
        if (is_op("(")) ++depth;
        if (is_op(")")) --depth;
        if (cur().kind == TokKind::kEof) fail(cur(), "unterminated decorator arguments");
        next();
      } while (depth > 0);
    }
    expect_newline("after decorator");
    return name;
  }

  void parse_class(IRModule* mod) {
    skip_newlines();
    expect_keyword("class", "after '@I.ir_module'");
    mod->name = expect_name("after 'class'").text;
    expect_op(":", "after class name");
    expect_newline("after 'class ...:'");
    if (cur().kind != TokKind::kIndent) fail(cur(), "expected an indented class body");
    next();
    while (cur().kind != TokKind::kDedent && cur().kind != TokKind::kEof) {
      if (cur().kind == TokKind::kIndent) fail(cur(), "unexpected indent");
      if (is_name("pass")) {
        next();
        expect_newline("after 'pass'");
      } else if (tok_is_name(cur(), "I") && tok_is_op(ahead(1), ".") && tok_is_name(ahead(2), "module_attrs")) {
        next(), next(), next();
        expect_op("(", "after I.module_attrs");
        mod->attrs = parse_dict();
        expect_op(")", "after module attributes");
        expect_newline("after I.module_attrs(...)");
      } else if (is_op("@")) {
        const Token& at = cur();
        std::string deco = parse_decorator();
        if (deco != "T.prim_func") fail(at, "expected '@T.prim_func', found '@" + deco + "'");
        const Token& def_tok = cur();
        auto [name, f] = parse_function();
        if (mod->lookup(name)) fail(def_tok, "function '" + name + "' is defined twice");
        mod->functions.emplace_back(name, f);
      } else {
        fail(cur(), "expected '@T.prim_func' or 'I.module_attrs' in class body, found " + describe(cur()));
      }
    }
    if (cur().kind == TokKind::kDedent) next();
  }

  Attrs parse_dict() {
    Attrs attrs;
    expect_op("{", "to start a dictionary");
    while (!is_op("}")) {
      const Token& key_tok = cur();
      std::string key = expect_string("as dictionary key");
      expect_op(":", "after dictionary key");
      if (attrs.count(key)) fail(key_tok, "duplicate key \"" + key + "\"");
      attrs[key] = parse_attr_value();
      if (!is_op(",")) break;
      next();
    }
    expect_op("}", "to close the dictionary");
    return attrs;
  }

  // One value of a T.target({...}) dictionary, as the target string spells it: strings
  // and numbers as they are, booleans as true/false, lists joined with commas.
  std::string parse_target_value() {
    const Token& t = cur();
    if (is_op("[") || is_op("(")) {
      std::string close = is_op("[") ? "]" : ")";
      next();
      std::string out;
      while (!is_op(close.c_str())) {
        out += (out.empty() ? "" : ",") + parse_target_value();
        if (!is_op(",")) break;
        next();
      }
      expect_op(close.c_str(), "to close the list");
      return out;
    }
    if (t.kind == TokKind::kString || t.kind == TokKind::kInt || t.kind == TokKind::kFloat) return next().text;
    if (tok_is_name(t, "True") || tok_is_name(t, "False")) return next().text == "True" ? "true" : "false";
    fail(t, "expected a string, number, bool or list in the target dictionary, found " + describe(t));
  }

  // T.target("llvm -mcpu=cortex-m4") or T.target({"kind": "llvm", "mcpu": "cortex-m4"}),
  // after '(': kept as the target string.
  std::string parse_target_call() {
    std::string out;
    if (cur().kind == TokKind::kString) {
      out = next().text;
    } else {
      expect_op("{", "(T.target takes a string or a dictionary)");
      std::string kind, options;
      while (!is_op("}")) {
        std::string key = expect_string("as target dictionary key");
        expect_op(":", "after dictionary key");
        std::string value = parse_target_value();
        if (key == "kind") kind = value;
        else options += " -" + key + "=" + value;
        if (!is_op(",")) break;
        next();
      }
      expect_op("}", "to close the target dictionary");
      out = kind + options;
    }
    if (is_op(",")) fail(cur(), "T.target with a host target is not supported; give one target");
    expect_op(")", "to close T.target(...)");
    return out;
  }

  AttrValue parse_attr_value() {
    const Token& t = cur();
    if (at_t_attr("target")) {
      next(), next(), next();
      expect_op("(", "after T.target");
      return parse_target_call();
    }
    if (tok_is_name(t, "T") && tok_is_op(ahead(1), ".") && tok_is_op(ahead(3), "(")) {
      // A typed constant keeps its value: T.int64(4), T.float32(0.5), T.bool(True).
      auto type = DataType::parse(ahead(2).text);
      if (type && !type->is_void() && !type->is_handle()) {
        const Token& fn = ahead(2);
        next(), next(), next();
        PExpr c = parse_typed_constant(t, fn, *type);
        if (const auto* i = as<IntImmNode>(c.e)) {
          if (type->is_bool()) return i->value != 0;
          return i->value;
        }
        return as<FloatImmNode>(c.e)->value;
      }
    }
    bool neg = false;
    if (is_op("-")) {
      neg = true;
      next();
    }
    const Token& v = cur();
    if (v.kind == TokKind::kInt) {
      next();
      if (v.int_value > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) + (neg ? 1 : 0))
        fail(v, "integer literal '" + v.text + "' is too large");
      return neg ? static_cast<int64_t>(0 - v.int_value) : static_cast<int64_t>(v.int_value);
    }
    if (v.kind == TokKind::kFloat) {
      next();
      return neg ? -v.float_value : v.float_value;
    }
    if (!neg && v.kind == TokKind::kString) return next().text;
    if (!neg && (tok_is_name(v, "True") || tok_is_name(v, "False"))) return next().text == "True";
    fail(t, "attribute values must be a bool, integer, float or string, found " + describe(t));
  }

  // A type, and for a typed pointer what it points to.
  struct TypeAnn {
    DataType type;
    DataType pointee = DataType::Void();
    std::string scope;
    Var make_var(const std::string& name, const Span& s) const {
      return pointee.is_void() && scope.empty() ? MakeVar(name, type, s) : MakePointerVar(name, pointee, scope, s);
    }
  };

  // `T.int32`, `"int32"`, or a typed pointer: `T.handle("float32"[, "global"])`,
  // `T.Ptr(T.float32[, "global"])` (TVM's PointerType).
  TypeAnn parse_type_ann() {
    const Token& start = cur();
    std::string name;
    if (cur().kind == TokKind::kString) {
      name = next().text;
    } else {
      if (!is_name("T") || !tok_is_op(ahead(1), "."))
        fail(cur(), "expected a type like T.int32, found " + describe(cur()));
      next(), next();
      name = expect_name("after 'T.'").text;
    }
    TypeAnn ann;
    if ((name == "handle" || name == "Ptr") && is_op("(")) {
      next();
      ann.type = DataType::Handle();
      if (cur().kind == TokKind::kString && cur().text == "void") {
        next();  // an untyped pointer, perhaps with a scope
      } else if (!is_op(")")) {
        ann.pointee = parse_dtype_string("as the element type of a typed pointer");
      }
      if (!is_op(")")) {
        if (is_op(",")) {
          next();
          if (!is_op(")")) ann.scope = expect_string("as the storage scope of a typed pointer");
        }
      }
      expect_op(")", "to close the typed pointer");
      return ann;
    }
    if (name == "Ptr") fail(start, "T.Ptr needs the element type, e.g. T.Ptr(T.float32)");
    auto t = DataType::parse(name, /*allow_lanes=*/true);
    if (!t || t->is_void()) fail(start, "unknown type '" + name + "'");
    ann.type = *t;
    return ann;
  }
  DataType parse_type_annotation() { return parse_type_ann().type; }

  DataType parse_dtype_string(const std::string& context) {
    const Token& t = cur();
    if (t.kind == TokKind::kString) {
      next();
      auto d = DataType::parse(t.text, /*allow_lanes=*/true);
      if (!d || d->is_void()) fail(t, "unknown type '" + t.text + "'");
      return *d;
    }
    if (tok_is_name(t, "T")) return parse_type_annotation();
    fail(t, "expected a type string like \"float32\" " + context + ", found " + describe(t));
  }

  std::pair<std::string, PrimFunc> parse_function() {
    skip_newlines();
    const Token& def_tok = cur();
    expect_keyword("def", "after '@T.prim_func'");
    std::string fname = expect_name("after 'def'").text;
    auto f = std::make_shared<PrimFuncNode>();
    f->span = span(def_tok);
    size_t mark = scope_mark();
    expect_op("(", "after function name");

    // Parameters: scalars are bound first so buffer shapes may use any of them.
    struct ParamInfo {
      const Token* name;
      size_t annotation;
      bool is_buffer;
      Var var;
      Buffer buffer;
    };
    std::vector<ParamInfo> params;
    while (!is_op(")")) {
      const Token& name = expect_name("for parameter");
      for (const auto& p : params)
        if (p.name->text == name.text) fail(name, "duplicate parameter '" + name.text + "'");
      expect_op(":", "after parameter name (parameters need a type annotation)");
      ParamInfo info{&name, pos_, at_t_attr("Buffer"), nullptr, nullptr};
      if (info.is_buffer) {
        skip_balanced_until_comma();
      } else {
        const Token& type_tok = cur();
        info.var = parse_type_ann().make_var(name.text, span(name));
        if (info.var->dtype.is_vector())
          fail(type_tok, "parameters of vector type (" + info.var->dtype.str() +
                             ") are not supported; pass a buffer and load the vector from it");
      }
      params.push_back(info);
      if (!is_op(",")) break;
      next();
    }
    expect_op(")", "to close the parameter list");
    size_t after_params = pos_;
    for (const auto& p : params)
      if (!p.is_buffer) bind(p.name->text, Binding{p.var, nullptr, true});
    for (auto& p : params) {
      if (!p.is_buffer) continue;
      pos_ = p.annotation;
      const Token& t_tok = cur();
      next(), next(), next();  // T . Buffer
      expect_op("(", "after T.Buffer");
      p.buffer = make_buffer(p.name->text, span(*p.name), parse_buffer_args(false, t_tok));
      if (!is_op(",") && !is_op(")")) fail(cur(), "unexpected " + describe(cur()) + " after buffer declaration");
      p.var = MakeVar(p.name->text, DataType::Handle(), span(*p.name));
      bind(p.name->text, Binding{p.var, p.buffer, true});
    }
    pos_ = after_params;
    for (const auto& p : params) {
      f->params.push_back(p.var);
      f->param_buffers.push_back(p.buffer);
    }

    if (is_op("->")) {
      next();
      if (is_name("None")) next();  // TVM's way to say void
      else f->ret_type = parse_type_annotation();
    }
    ret_type_ = f->ret_type;
    expect_op(":", "after function signature");
    expect_newline("after function signature");
    if (cur().kind != TokKind::kIndent) fail(cur(), "expected an indented function body");
    next();
    parse_function_header(f.get(), params);
    std::vector<Stmt> body = parse_stmt_list();
    if (cur().kind == TokKind::kDedent) next();
    f->body = make_seq(std::move(body), span(def_tok));
    pop_scope(mark);
    return {fname, f};
  }

  // `T.int32()` at the cursor: a variable declared without a value (a shape variable).
  bool at_var_decl(size_t at) const {
    auto type = DataType::parse(ahead(at + 2).text);
    return tok_is_name(ahead(at), "T") && tok_is_op(ahead(at + 1), ".") && type && type->is_integer() &&
           tok_is_op(ahead(at + 3), "(") && tok_is_op(ahead(at + 4), ")");
  }

  // `m, n = T.int32(), T.int32()` (several on one line, as TVM prints them).
  bool at_multi_var_decl() const {
    size_t k = 0;
    int names = 0;
    while (ahead(k).kind == TokKind::kName && tok_is_op(ahead(k + 1), ",")) k += 2, ++names;
    if (names == 0 || ahead(k).kind != TokKind::kName || !tok_is_op(ahead(k + 1), "=")) return false;
    return at_var_decl(k + 2);
  }

  void parse_multi_var_decl() {
    std::vector<const Token*> names;
    do {
      if (!names.empty()) next();  // ','
      names.push_back(&expect_name("as a variable name"));
    } while (is_op(","));
    expect_op("=", "after the variable names");
    for (size_t i = 0; i < names.size(); ++i) {
      if (i) expect_op(",", "between the values of a multiple assignment");
      if (!at_var_decl(0)) fail(cur(), "expected T.int32() or another integer type for '" + names[i]->text + "'");
      next(), next();
      DataType t = *DataType::parse(next().text);
      next(), next();
      if (lookup(names[i]->text)) fail(*names[i], "'" + names[i]->text + "' is already defined");
      bind(names[i]->text, Binding{MakeVar(names[i]->text, t, span(*names[i])), nullptr, true});
    }
    if (is_op(",")) fail(cur(), "more values than names in the multiple assignment");
    expect_newline("after statement");
  }

  // The header of a function body, in any order: a docstring, T.func_attr({...}),
  // shape variables (`m = T.int32()`, `m, n = T.int32(), T.int32()`) and
  // T.match_buffer, TVMScript's way to give a handle parameter a buffer whose shape the
  // caller's tensor supplies at run time:
  //   A = T.match_buffer(a, (m,), "float32")     handle parameter `a` gets buffer `A`
  template <typename Params>
  void parse_function_header(PrimFuncNode* f, const Params& params) {
    bool have_attrs = false;
    while (true) {
      if (cur().kind == TokKind::kString &&
          (ahead(1).kind == TokKind::kNewline || ahead(1).kind == TokKind::kDedent)) {
        next();  // a docstring
        if (cur().kind == TokKind::kNewline) next();
        continue;
      }
      if (at_t_attr("func_attr")) {
        if (have_attrs) fail(cur(), "T.func_attr is given twice");
        have_attrs = true;
        next(), next(), next();
        expect_op("(", "after T.func_attr");
        f->attrs = parse_dict();
        expect_op(")", "after function attributes");
        expect_newline("after T.func_attr(...)");
        continue;
      }
      if (at_multi_var_decl()) {
        parse_multi_var_decl();
        continue;
      }
      if (!(cur().kind == TokKind::kName && tok_is_op(ahead(1), "=") && tok_is_name(ahead(2), "T") &&
            tok_is_op(ahead(3), ".")))
        return;
      const Token& name = cur();
      const Token& what = ahead(4);
      if (at_var_decl(2)) {
        if (lookup(name.text)) fail(name, "'" + name.text + "' is already defined");
        DataType type = *DataType::parse(what.text);
        for (int k = 0; k < 7; ++k) next();
        expect_newline("after statement");
        bind(name.text, Binding{MakeVar(name.text, type, span(name)), nullptr, true});
        continue;
      }
      if (what.text != "match_buffer") return;
      const Token& t_tok = ahead(2);
      for (int k = 0; k < 5; ++k) next();
      expect_op("(", "after T.match_buffer");
      const Token& param = expect_name("as the handle parameter of T.match_buffer");
      size_t index = params.size();
      for (size_t i = 0; i < params.size(); ++i)
        if (params[i].name->text == param.text) index = i;
      if (index == params.size()) fail(param, "'" + param.text + "' is not a parameter of this function");
      if (f->param_buffers[index] || !f->params[index]->dtype.is_handle())
        fail(param, "parameter '" + param.text + "' is not a T.handle, or already has a buffer");
      expect_op(",", "after the parameter of T.match_buffer");
      if (lookup(name.text) && name.text != param.text) fail(name, "'" + name.text + "' is already defined");
      Buffer buf = make_buffer(name.text, span(name), parse_buffer_args(false, t_tok));
      expect_newline("after statement");
      f->param_buffers[index] = buf;
      bind(name.text, Binding{f->params[index], buf, true});
    }
  }

  // Skips one parameter annotation (up to the next ',' or ')' outside brackets).
  void skip_balanced_until_comma() {
    int depth = 0;
    while (cur().kind != TokKind::kEof) {
      if (depth == 0 && (is_op(",") || is_op(")"))) return;
      if (is_op("(") || is_op("[") || is_op("{")) ++depth;
      if (is_op(")") || is_op("]") || is_op("}")) --depth;
      next();
    }
    fail(cur(), "unexpected end of file in parameter list");
  }

  std::vector<Expr> parse_shape() {
    std::vector<Expr> shape;
    if (is_op("(") || is_op("[")) {
      std::string close = is_op("(") ? ")" : "]";
      next();
      while (!is_op(close.c_str())) {
        shape.push_back(parse_index_expr());
        if (!is_op(",")) break;
        next();
      }
      expect_op(close.c_str(), "to close the shape");
    } else {
      shape.push_back(parse_index_expr());
    }
    return shape;
  }

  // An expression used as an index, extent or shape: bare literals stay int32.
  Expr parse_index_expr() { return parse_expr().e; }

  // What a buffer declaration says, before the buffer gets its name.
  struct BufferSpec {
    std::vector<Expr> shape;
    DataType dtype = DataType::Float(32);
    std::vector<Expr> strides;
    Expr elem_offset;
    int align = 0;
    std::string scope = "global";
    Var data;  // T.decl_buffer: the existing pointer it views
  };

  // The arguments of T.Buffer / T.alloc_buffer / T.allocate after '('; consumes ')'.
  BufferSpec parse_buffer_args(bool allow_scope, const Token& call_tok, bool allow_data = false,
                               bool data_required = true) {
    BufferSpec spec;
    bool have_shape = false;
    int positional = 0;
    while (!is_op(")")) {
      if (cur().kind == TokKind::kName && tok_is_op(ahead(1), "=")) {
        const Token& kw = next();
        next();
        if (kw.text == "shape")
          spec.shape = parse_shape(), have_shape = true;
        else if (kw.text == "dtype")
          spec.dtype = parse_dtype_string("for dtype=");
        else if (kw.text == "strides")
          spec.strides = parse_shape();
        else if (kw.text == "elem_offset")
          spec.elem_offset = parse_index_expr();
        else if (kw.text == "align")
          spec.align = static_cast<int>(parse_small_int("for align="));
        else if (kw.text == "scope" && allow_scope)
          spec.scope = expect_string("for scope=");
        else if (kw.text == "scope" || kw.text == "buffer_type") {
          // A parameter's or view's memory is wherever its owner put it; TVM prints these
          // with their defaults.
          const Token& at = cur();
          std::string v = expect_string("for " + kw.text + "=");
          if (v != "global" && v != "" && v != "default" && v != "auto")
            fail(at, kw.text + "=\"" + v + "\" is only supported on allocations");
        } else if (kw.text == "offset_factor") {
          parse_small_int("for offset_factor=");  // an alignment hint in elements; we keep align= only
        } else if (kw.text == "axis_separators") {
          const Token& at = cur();
          if (!parse_shape().empty()) fail(at, "axis_separators (multi-dimensional physical buffers) are not supported");
        }
        else if (kw.text == "data" && allow_data) {
          const Token& at = cur();
          PExpr d = parse_expr();
          const auto* v = as<VarNode>(d.e);
          if (!v || !v->dtype.is_handle()) fail(at, "data= must be a handle such as A.data or a T.handle parameter");
          spec.data = std::static_pointer_cast<const VarNode>(d.e);
        }
        else
          fail(kw, "unknown argument '" + kw.text + "'");
      } else {
        if (positional == 0)
          spec.shape = parse_shape(), have_shape = true;
        else if (positional == 1)
          spec.dtype = parse_dtype_string("as buffer element type");
        else if (positional == 2 && allow_scope)
          spec.scope = expect_string("as storage scope");
        else
          fail(cur(), "too many arguments to buffer declaration");
        ++positional;
      }
      if (!is_op(",")) break;
      next();
    }
    expect_op(")", "to close the buffer declaration");
    if (!have_shape) fail(call_tok, "buffer declaration needs a shape");
    if (allow_data && data_required && !spec.data) fail(call_tok, "T.decl_buffer needs data=, the pointer it views");
    if (!spec.elem_offset) spec.elem_offset = IntImm(DataType::Int(32), 0, span(call_tok));
    return spec;
  }

  Buffer make_buffer(const std::string& name, const Span& name_span, BufferSpec spec) {
    if (spec.dtype.is_vector())
      user_error(name_span, "buffer '" + name + "' of vector type " + spec.dtype.str() +
                             " is not supported; declare a " + spec.dtype.element_of().str() +
                             " buffer and load vectors with slices, e.g. " + name + "[i:i + " +
                             std::to_string(spec.dtype.lanes()) + "]");
    auto b = std::make_shared<BufferNode>();
    b->name = name;
    b->dtype = spec.dtype;
    b->shape = std::move(spec.shape);
    b->strides = std::move(spec.strides);
    b->elem_offset = std::move(spec.elem_offset);
    b->data = spec.data ? spec.data : MakeVar(name + "_data", DataType::Handle(), name_span);
    b->align = spec.align;
    b->span = name_span;
    return b;
  }

  int64_t parse_small_int(const std::string& context) {
    const Token& t = cur();
    if (t.kind != TokKind::kInt || t.int_value > 1u << 30) fail(t, "expected a small integer " + context);
    next();
    return static_cast<int64_t>(t.int_value);
  }

  // ---- statements -------------------------------------------------------------------
  // NoOp() leaves its constant without a location; every parsed node gets one.
  static Stmt spanned_no_op(const Span& s) { return Evaluate(IntImm(DataType::Int(32), 0, s), s); }
  static Stmt make_seq(std::vector<Stmt> stmts, const Span& s) {
    return stmts.empty() ? spanned_no_op(s) : SeqStmt(std::move(stmts), s);
  }

  // Statements up to the end of the current block (the DEDENT is not consumed).
  std::vector<Stmt> parse_stmt_list() {
    std::vector<Stmt> out;
    while (cur().kind != TokKind::kDedent && cur().kind != TokKind::kEof) {
      if (cur().kind == TokKind::kIndent) fail(cur(), "unexpected indent");
      if (cur().kind == TokKind::kNewline) {
        next();
        continue;
      }
      out.push_back(parse_stmt());
    }
    return out;
  }

  // ':' NEWLINE INDENT stmts DEDENT, in a new scope.
  Stmt parse_block(const Token& owner, const std::string& header) {
    expect_op(":", "after " + header);
    if (cur().kind != TokKind::kNewline)
      fail(cur(), "expected a new line after ':' (statements go in an indented block)");
    next();
    if (cur().kind != TokKind::kIndent) fail(cur(), "expected an indented block after " + header);
    next();
    size_t mark = scope_mark();
    std::vector<Stmt> body = parse_stmt_list();
    pop_scope(mark);
    if (cur().kind == TokKind::kDedent) next();
    return make_seq(std::move(body), span(owner));
  }

  // The rest of the current block, as the body of a scoped statement.
  Stmt parse_rest(const Token& owner) { return make_seq(parse_stmt_list(), span(owner)); }

  Stmt parse_stmt() {
    const Token& t = cur();
    DepthGuard guard(*this, t, true);
    if (t.kind == TokKind::kName) {
      if (t.text == "for") return parse_for();
      if (t.text == "if") return parse_if();
      if (t.text == "with") return parse_with();
      if (t.text == "assert") return parse_assert();
      if (t.text == "pass") {
        next();
        expect_newline("after 'pass'");
        return spanned_no_op(span(t));
      }
      if (t.text == "else" || t.text == "elif") fail(t, "'" + t.text + "' without a matching 'if'");
      if (t.text == "return") return parse_return();
      if (t.text == "while") {
        const Token& while_tok = next();
        PExpr c = parse_expr();
        if (!c.e->dtype.is_bool()) fail(while_tok, "the condition of 'while' must be bool, got " + c.e->dtype.str());
        Stmt body = parse_block(while_tok, "while condition");
        return While(c.e, body, span(while_tok));
      }
      if (t.text == "def" || t.text == "class") fail(t, "nested definitions are not supported");
      const Token& after = ahead(1);
      if (tok_is_op(after, ",")) return parse_multi_assign();
      if (tok_is_op(after, ":")) return parse_let();
      if (tok_is_op(after, "=")) return parse_assign();
      if (tok_is_op(after, "[")) {
        const Binding* b = lookup(t.text);
        if (b && b->buffer) return parse_store();
      }
      if (at_t_attr("func_attr")) fail(t, "T.func_attr must be the first statement of a function");
      if (at_t_attr("assume") && tok_is_op(ahead(3), "(")) {
        // A hint for TVM's analyses; nothing of ours uses it, so it is dropped.
        next(), next(), next(), next();
        PExpr c = parse_expr();
        if (!c.e->dtype.is_bool()) fail(t, "T.assume needs a bool condition, got " + c.e->dtype.str());
        expect_op(")", "to close T.assume(...)");
        expect_newline("after statement");
        return spanned_no_op(span(t));
      }
      if (at_t_attr("evaluate")) {
        next(), next(), next();
        expect_op("(", "after T.evaluate");
        PExpr v = parse_expr();
        expect_op(")", "to close T.evaluate(...)");
        expect_newline("after statement");
        return Evaluate(v.e, span(t));
      }
    }
    PExpr e = parse_expr();
    if (!as<CallNode>(e.e)) fail(t, "expected a statement, found an expression (use T.evaluate(...))");
    expect_newline("after statement");
    return Evaluate(e.e, span(t));
  }

  // The value of `return v` or `T.ret(v)` (after '('), as the tvm_return builtin: the
  // function must declare an integer return type.
  Expr return_value(const Token& tok) {
    if (ret_type_.is_void())
      fail(tok, "return with a value in a function without a return type; declare one, e.g. '-> T.int32'");
    const Token& at = cur();
    PExpr v = promote_to(parse_expr(), ret_type_);
    if (v.e->dtype != ret_type_)
      fail(at, "the function returns " + ret_type_.str() + ", but this value is " + v.e->dtype.str());
    if (!ret_type_.is_integer())
      fail(tok, "returning " + ret_type_.str() + " is not supported; microtir functions return integers");
    return Call(DataType::Int(32), "tvm_return", {v.e}, {}, span(tok));
  }

  // `return x` in a function with a return type (TVM's T.ret): the tvm_return builtin.
  Stmt parse_return() {
    const Token& tok = next();
    if (cur().kind == TokKind::kNewline || is_name("None")) {
      if (is_name("None")) next();
      expect_newline("after 'return'");
      fail(tok, "a bare 'return' is not supported; return a value from a function with a return type");
    }
    Expr v = return_value(tok);
    expect_newline("after statement");
    return Evaluate(v, span(tok));
  }

  // `a, b = x, y`: one let per name, bound in order (Python evaluates every value
  // first, so no value may use a name bound on the same line).
  Stmt parse_multi_assign() {
    const Token& first = cur();
    if (at_multi_var_decl()) fail(first, "shape variables (x = T.int32()) belong at the top of the function");
    std::vector<const Token*> names;
    do {
      if (!names.empty()) next();
      names.push_back(&expect_name("as a variable name"));
    } while (is_op(","));
    expect_op("=", "after the names of a multiple assignment");
    std::vector<PExpr> values;
    do {
      if (!values.empty()) next();
      values.push_back(parse_expr());
    } while (is_op(",") && values.size() < names.size());
    if (values.size() != names.size() || is_op(","))
      fail(first, "a multiple assignment needs as many values as names (" + std::to_string(names.size()) + ")");
    expect_newline("after statement");
    std::vector<Var> vars;
    size_t mark = scope_mark();
    for (size_t i = 0; i < names.size(); ++i) {
      if (lookup(names[i]->text)) fail(*names[i], "cannot assign to '" + names[i]->text + "': it is already defined");
      PExpr v = values[i].bare ? promote_to(values[i], values[i].e->dtype) : values[i];
      values[i] = v;
      vars.push_back(MakeVar(names[i]->text, v.e->dtype, span(*names[i])));
    }
    for (size_t i = 0; i < names.size(); ++i) bind(names[i]->text, Binding{vars[i], nullptr, false});
    Stmt body = parse_rest(first);
    pop_scope(mark);
    for (size_t i = names.size(); i-- > 0;) body = LetStmt(vars[i], values[i].e, body, span(*names[i]));
    return body;
  }

  Stmt parse_store() {
    const Token& name = next();
    Buffer buf = lookup(name.text)->buffer;
    std::vector<Expr> indices = parse_indices(name, buf);
    if (is_op("+=") || is_op("-=") || is_op("*=") || is_op("/="))
      fail(cur(), "augmented assignment is not supported; write A[i] = A[i] + v");
    expect_op("=", "after buffer index");
    PExpr v = parse_expr();
    int lanes = 1;
    for (const auto& i : indices) lanes = std::max(lanes, i->dtype.lanes());
    v = promote_to(v, buf->dtype.with_lanes(lanes));
    expect_newline("after statement");
    return BufferStore(buf, v.e, std::move(indices), span(name));
  }

  // `[i, j]` after a buffer name; checks the number of indices.
  std::vector<Expr> parse_indices(const Token& name, const Buffer& buf) {
    expect_op("[", "after buffer name");
    std::vector<Expr> indices;
    if (is_op("(") && tok_is_op(ahead(1), ")")) {  // A[()] for a 0-d buffer
      next(), next();
    } else {
      while (!is_op("]")) {
        indices.push_back(parse_index_or_slice());
        if (!is_op(",")) break;
        next();
      }
    }
    expect_op("]", "to close the buffer index");
    if (indices.size() != buf->ndim()) {
      size_t n = buf->ndim(), k = indices.size();
      fail(name, "buffer '" + name.text + "' has " + std::to_string(n) + (n == 1 ? " dimension" : " dimensions") +
                     " but is indexed with " + std::to_string(k) + (k == 1 ? " index" : " indices"));
    }
    return indices;
  }

  // One index of a load or store: an expression, or `lo:hi[:step]`, a vector of
  // (hi - lo) / step lanes (T.Ramp(lo, step, lanes)), which is how TVM prints them.
  Expr parse_index_or_slice() {
    const Token& at = cur();
    PExpr lo = parse_expr();
    if (!is_op(":")) return lo.e;
    const Token& colon = next();
    PExpr hi = parse_expr();
    unify(lo, hi, ":", colon, "slice bounds");
    lo = promote_to(lo, lo.e->dtype), hi = promote_to(hi, hi.e->dtype);
    int64_t step = 1;
    if (is_op(":")) {
      next();
      const Token& step_tok = cur();
      PExpr st = parse_expr();
      const int64_t* c = as_const_int(st.e);
      if (!c || *c <= 0) fail(step_tok, "the step of a vector slice must be a positive integer constant");
      step = *c;
    }
    if (!lo.e->dtype.is_integer() || lo.e->dtype.is_vector())
      fail(at, "slice bounds must be scalar integers, not " + lo.e->dtype.str());
    int64_t length = 0;
    const int64_t *l = as_const_int(lo.e), *h = as_const_int(hi.e);
    const auto* add = as<AddNode>(hi.e);
    if (l && h) length = *h - *l;
    else if (add && same_expr(add->a, lo.e) && as_const_int(add->b)) length = *as_const_int(add->b);
    else fail(at, "a vector slice needs a constant length, e.g. A[i:i + 4]");
    const int64_t lanes = (length + step - 1) / step;
    if (lanes < 2 || lanes > DataType::kMaxLanes)
      fail(at, "a vector slice needs 2 to " + std::to_string(DataType::kMaxLanes) + " lanes, not " +
                   std::to_string(lanes));
    return Ramp(lo.e, IntImm(lo.e->dtype, step, span(at)), static_cast<int>(lanes), span(at));
  }

  Stmt parse_let() {
    const Token& name = next();
    next();  // ':'
    TypeAnn ann = parse_type_ann();
    DataType t = ann.type;
    expect_op("=", "in let binding (write 'x: T.int32 = value')");
    PExpr v = promote_to(parse_expr(), t);
    expect_newline("after statement");
    Var var = ann.make_var(name.text, span(name));
    size_t mark = scope_mark();
    bind(name.text, Binding{var, nullptr, false});
    Stmt body = parse_rest(name);
    pop_scope(mark);
    return LetStmt(var, v.e, body, span(name));
  }

  Stmt parse_assign() {
    const Token& name = next();
    next();  // '='
    if (at_var_decl(0))
      fail(name, "'" + name.text + " = T." + ahead(2).text +
                     "()' declares a shape variable, which belongs at the top of the function, before its first "
                     "statement (with T.func_attr and T.match_buffer)");
    if (at_t_attr("decl_buffer") || at_t_attr("Buffer")) {
      // `T.decl_buffer(..., data=p)` and TVM's lowered `T.Buffer(..., data=p)` view
      // existing memory; `T.decl_buffer` without data= allocates, as in TVM.
      const Token& t_tok = cur();
      const bool is_decl = ahead(2).text == "decl_buffer";
      next(), next(), next();
      expect_op("(", "after T." + std::string(is_decl ? "decl_buffer" : "Buffer"));
      BufferSpec spec = parse_buffer_args(is_decl, t_tok, true, /*data_required=*/!is_decl);
      expect_newline("after statement");
      const bool allocates = !spec.data;
      std::string scope = spec.scope;
      Buffer buf = make_buffer(name.text, span(name), std::move(spec));
      size_t mark = scope_mark();
      bind(name.text, Binding{nullptr, buf, false});
      Stmt body = parse_rest(name);
      pop_scope(mark);
      return allocates ? Allocate(buf, scope, body, span(name)) : DeclBuffer(buf, body, span(name));
    }
    if (at_t_attr("alloc_buffer") || at_t_attr("allocate")) {
      // T.allocate gives a pointer (TVM's semantics), T.alloc_buffer a buffer; the name
      // stands for both here, so `p[i]` and `T.decl_buffer(..., data=p)` both work.
      const bool pointer = ahead(2).text == "allocate";
      std::string scope;
      Buffer buf = parse_alloc_call(name, &scope);
      expect_newline("after statement");
      size_t mark = scope_mark();
      bind(name.text, Binding{pointer ? buf->data : nullptr, buf, false});
      Stmt body = parse_rest(name);
      pop_scope(mark);
      return Allocate(buf, scope, body, span(name));
    }
    if (at_t_attr("env_thread") || at_t_attr("launch_thread")) return parse_thread(name);
    if (const Binding* b = lookup(name.text)) {
      if (b->buffer)
        fail(name,
             "cannot assign to buffer '" + name.text + "'; store to elements with " + name.text + "[...] = value");
      if (b->is_param) fail(name, "cannot assign to scalar parameter '" + name.text + "'");
      fail(name, "cannot assign to '" + name.text + "': variables are immutable; bind a new name instead");
    }
    // `x = value` binds a new variable with the value's type.
    PExpr v = parse_expr();
    if (v.bare) v = promote_to(v, v.e->dtype);
    expect_newline("after statement");
    Var var = MakeVar(name.text, v.e->dtype, span(name));
    size_t mark = scope_mark();
    bind(name.text, Binding{var, nullptr, false});
    Stmt body = parse_rest(name);
    pop_scope(mark);
    return LetStmt(var, v.e, body, span(name));
  }

  // GPU threads as TVM prints them: `x = T.env_thread("threadIdx.x")` declares the
  // variable for the rest of the block; `x = T.launch_thread("blockIdx.x", n)` also
  // launches it (an AttrStmt "thread_extent" over the rest of the block). They parse
  // and print; the backends and the interpreter refuse them.
  Stmt parse_thread(const Token& name) {
    const Token& t_tok = cur();
    const bool launch = ahead(2).text == "launch_thread";
    next(), next(), next();
    expect_op("(", std::string("after T.") + (launch ? "launch_thread" : "env_thread"));
    const std::string tag = expect_string("as the thread tag, e.g. \"threadIdx.x\"");
    Expr extent;
    if (launch) {
      expect_op(",", "after the thread tag of T.launch_thread");
      PExpr e = parse_expr();
      if (e.bare) e = promote_to(e, DataType::Int(32));
      if (!e.e->dtype.is_integer()) fail(t_tok, "the extent of T.launch_thread must be an integer, not " + e.e->dtype.str());
      extent = e.e;
    }
    expect_op(")", "to close the call");
    expect_newline("after statement");
    if (lookup(name.text)) fail(name, "cannot assign to '" + name.text + "': it is already defined");
    auto v = std::make_shared<VarNode>(name.text, extent ? extent->dtype : DataType::Int(32), span(name));
    v->thread_tag = tag;
    size_t mark = scope_mark();
    bind(name.text, Binding{v, nullptr, false});
    Stmt body = parse_rest(name);
    pop_scope(mark);
    return launch ? AttrStmt(v, "thread_extent", extent, body, span(name)) : body;
  }

  // `T.alloc_buffer(shape, dtype, scope=...)` or `T.allocate([extent], dtype, scope)`.
  Buffer parse_alloc_call(const Token& name, std::string* scope) {
    const Token& t_tok = cur();
    const std::string fn = ahead(2).text;
    next(), next(), next();
    expect_op("(", "after T." + fn);
    BufferSpec spec = parse_buffer_args(true, t_tok);
    *scope = spec.scope;
    return make_buffer(name.text, span(name), std::move(spec));
  }

  struct LoopHeader {
    ForKind kind = ForKind::kSerial;
    bool grid = false;
    std::vector<PExpr> args;
    Attrs annotations;
    std::string thread;
    PExpr step;
    const Token* step_tok = nullptr;
  };

  Stmt parse_for() {
    const Token& for_tok = next();
    std::vector<const Token*> targets;
    bool paren = is_op("(");
    if (paren) next();
    do {
      if (!targets.empty()) next();  // ','
      targets.push_back(&expect_name("as loop variable"));
    } while (is_op(","));
    if (paren) expect_op(")", "after loop variables");
    expect_keyword("in", "after loop variable");
    const Token& iter_tok = cur();
    LoopHeader h;
    if (is_name("range")) {
      next();
    } else if (is_name("T") && tok_is_op(ahead(1), ".")) {
      next(), next();
      const Token& kind = expect_name("after 'T.'");
      if (kind.text == "serial")
        h.kind = ForKind::kSerial;
      else if (kind.text == "unroll")
        h.kind = ForKind::kUnrolled;
      else if (kind.text == "parallel")
        h.kind = ForKind::kParallel;
      else if (kind.text == "vectorized")
        h.kind = ForKind::kVectorized;
      else if (kind.text == "grid")
        h.grid = true;
      else if (kind.text == "thread_binding")
        h.kind = ForKind::kThreadBinding;
      else
        fail(iter_tok, "unknown loop kind 'T." + kind.text + "'",
             did_you_mean(kind.text, {"serial", "unroll", "parallel", "vectorized", "grid", "thread_binding"}, "T."));
    } else {
      fail(iter_tok, "expected range(...) or T.serial/T.grid/... after 'in', found " + describe(iter_tok));
    }
    expect_op("(", "after loop kind");
    while (!is_op(")")) {
      if (cur().kind == TokKind::kName && tok_is_op(ahead(1), "=") && !h.grid) {
        const Token& kw = next();
        next();
        if (kw.text == "annotations") {
          h.annotations = parse_dict();
        } else if (kw.text == "thread" && h.kind == ForKind::kThreadBinding) {
          h.thread = expect_string("for thread=");
        } else if (kw.text == "step") {
          h.step_tok = &kw;
          h.step = parse_expr();
        } else {
          fail(kw, "unknown loop argument '" + kw.text + "' (expected annotations=, step= or thread=)");
        }
      } else {
        h.args.push_back(parse_expr());
      }
      if (!is_op(",")) break;
      next();
    }
    expect_op(")", "to close the loop range");
    if (h.kind == ForKind::kThreadBinding && h.thread.empty())
      fail(iter_tok, "T.thread_binding needs thread=\"threadIdx.x\" (or another thread tag)");
    if (!is_op(":")) fail(cur(), "expected ':' after for header, found " + describe(cur()));

    // (min, extent, loop variable type) per loop variable.
    struct Range {
      Expr min, extent;
      DataType type;
    };
    std::vector<Range> ranges;
    if (h.grid) {
      if (h.args.size() != targets.size())
        fail(iter_tok, "T.grid has " + std::to_string(h.args.size()) + (h.args.size() == 1 ? " extent" : " extents") +
                           " but the loop has " + std::to_string(targets.size()) +
                           (targets.size() == 1 ? " variable" : " variables"));
      for (auto& a : h.args) {
        Expr ext = loop_bound(a, iter_tok);
        ranges.push_back({IntImm(ext->dtype, 0, ext->span), ext, ext->dtype});
      }
    } else {
      if (targets.size() != 1) fail(*targets[1], "only T.grid binds several loop variables");
      if (h.args.empty() || h.args.size() > 2)
        fail(iter_tok, "a loop range takes 1 or 2 arguments (extent, or start and stop)");
      if (h.args.size() == 1) {
        Expr ext = loop_bound(h.args[0], iter_tok);
        ranges.push_back({IntImm(ext->dtype, 0, ext->span), ext, ext->dtype});
      } else {
        PExpr start = h.args[0], stop = h.args[1];
        unify(start, stop, "and", iter_tok, "loop bounds");
        Expr a = loop_bound(start, iter_tok), b = loop_bound(stop, iter_tok);
        ranges.push_back({a, range_extent(a, b, span(iter_tok)), a->dtype});
      }
    }
    // step=s: a loop over k in [0, ceil((stop - start) / s)) with i = start + k * s
    // bound inside, which is the loop every backend already runs.
    Expr step;
    if (h.step_tok) {
      step = loop_bound(h.step, *h.step_tok);
      const int64_t* c = as_const_int(step);
      if (!c || *c <= 0) fail(*h.step_tok, "step= must be a positive integer constant");
      if (step->dtype != ranges[0].type) step = IntImm(ranges[0].type, *c, step->span);
      if (*c == 1) step = nullptr;
    }
    size_t mark = scope_mark();
    std::vector<Var> vars;
    for (size_t i = 0; i < targets.size(); ++i) {
      Var v = MakeVar(targets[i]->text, ranges[i].type, span(*targets[i]));
      vars.push_back(v);
      bind(targets[i]->text, Binding{v, nullptr, false});
    }
    Stmt body = parse_block(for_tok, "for header");
    pop_scope(mark);
    if (step) {
      const Span at = span(*h.step_tok);
      Var k = MakeVar(targets[0]->text + "_step", ranges[0].type, at);
      Expr value = Binary(ExprKind::Add, ranges[0].min, Binary(ExprKind::Mul, k, step, at), at);
      body = LetStmt(vars[0], value, body, at);
      Expr one = IntImm(ranges[0].type, 1, at);
      Expr ext = Binary(ExprKind::FloorDiv,
                        Binary(ExprKind::Add, ranges[0].extent, Binary(ExprKind::Sub, step, one, at), at), step, at);
      if (const int64_t* e = as_const_int(ranges[0].extent)) ext = IntImm(ranges[0].type, (*e + *as_const_int(step) - 1) / *as_const_int(step), at);
      vars[0] = k;
      ranges[0].min = IntImm(ranges[0].type, 0, at);
      ranges[0].extent = ext;
    }
    for (size_t i = vars.size(); i-- > 0;) {
      auto loop = std::make_shared<ForNode>(vars[i], ranges[i].min, ranges[i].extent, h.kind, body,
                                            span(i == 0 ? for_tok : *targets[i]));
      loop->thread_tag = h.thread;
      if (i == 0) loop->annotations = h.annotations;
      body = loop;
    }
    return body;
  }

  Expr loop_bound(PExpr p, const Token& at) {
    if (p.bare) {
      if (contains_float_literal(p.e)) fail(at, "loop bounds must be integers");
      p.e = retype_literal(p.e, p.e->dtype);
    }
    if (!p.e->dtype.is_integer()) fail(at, "loop bounds must be integers, got " + p.e->dtype.str());
    return p.e;
  }

  // The extent of T.serial(start, stop). Constants fold; `stop` written as
  // `start + e` gives back `e` (this is how the printer writes a non-zero min); a
  // zero start gives `stop`; anything else is `stop - start`.
  static Expr range_extent(const Expr& start, const Expr& stop, const Span& s) {
    const int64_t* a = as_const_int(start);
    const int64_t* b = as_const_int(stop);
    if (a && b) return IntImm(start->dtype, *b - *a, stop->span);
    if (const auto* add = as<AddNode>(stop))
      if (structural_equal(add->a, start)) return add->b;
    if (a && *a == 0) return stop;
    return Binary(ExprKind::Sub, stop, start, s);
  }

  Stmt parse_if() {
    const Token& if_tok = next();
    PExpr c = parse_expr();
    Stmt then_case = parse_block(if_tok, "if condition");
    Stmt else_case;
    if (is_name("elif")) {
      DepthGuard guard(*this, cur(), true);
      else_case = parse_if();
    } else if (is_name("else")) {
      const Token& else_tok = next();
      else_case = parse_block(else_tok, "'else'");
    }
    return IfThenElse(c.e, then_case, else_case, span(if_tok));
  }

  Stmt parse_assert() {
    const Token& tok = next();
    PExpr c = parse_expr();
    std::string msg;
    if (is_op(",")) {
      next();
      msg = expect_string("as assert message");
    }
    expect_newline("after assert");
    Stmt body = parse_rest(tok);
    return AssertStmt(c.e, msg, body, span(tok));
  }

  // `with T.attr(node, "key", value):` and the nested forms of scoped statements the
  // printer uses when such a statement is followed by others in the same block.
  Stmt parse_with() {
    const Token& with_tok = next();
    const Token& t_tok = cur();
    if (!is_name("T") || !tok_is_op(ahead(1), ".")) fail(cur(), "expected T.attr(...) after 'with'");
    next(), next();
    const Token& what = expect_name("after 'T.'");
    if (is_block_construct(what.text)) fail(t_tok, kBlockRefusal);
    if (what.text == "launch_thread") {
      // `with T.launch_thread(x, n):` for a thread variable from T.env_thread.
      expect_op("(", "after T.launch_thread");
      const Token& v_tok = expect_name("as the thread variable of T.launch_thread (from T.env_thread)");
      const Binding* b = lookup(v_tok.text);
      if (!b || !b->var || b->var->thread_tag.empty())
        fail(v_tok, "'" + v_tok.text + "' is not a thread variable; declare it with " + v_tok.text +
                        " = T.env_thread(\"threadIdx.x\")");
      Var thread = b->var;
      expect_op(",", "after the thread variable of T.launch_thread");
      PExpr extent = parse_expr();
      expect_op(")", "to close T.launch_thread(...)");
      if (extent.bare) extent = promote_to(extent, thread->dtype);
      Stmt body = parse_block(with_tok, "with header");
      return AttrStmt(thread, "thread_extent", extent.e, body, span(with_tok));
    }
    if (what.text == "attr") {
      expect_op("(", "after T.attr");
      PExpr node = parse_expr();
      expect_op(",", "after attribute node");
      std::string key = expect_string("as attribute key");
      expect_op(",", "after attribute key");
      PExpr value = parse_expr();
      expect_op(")", "to close T.attr(...)");
      Stmt body = parse_block(with_tok, "with header");
      return AttrStmt(node.e, key, value.e, body, span(with_tok));
    }
    if (what.text == "Assert") {
      expect_op("(", "after T.Assert");
      PExpr c = parse_expr();
      expect_op(",", "after assert condition");
      std::string msg = expect_string("as assert message");
      expect_op(")", "to close T.Assert(...)");
      Stmt body = parse_block(with_tok, "with header");
      return AssertStmt(c.e, msg, body, span(with_tok));
    }
    if (what.text == "LetStmt") {
      expect_op("(", "after T.LetStmt");
      PExpr v = parse_expr();
      if (v.bare) v = promote_to(v, v.e->dtype);
      expect_op(")", "to close T.LetStmt(...)");
      expect_keyword("as", "after T.LetStmt(...)");
      const Token& name = expect_name("after 'as'");
      Var var = MakeVar(name.text, v.e->dtype, span(name));
      size_t mark = scope_mark();
      bind(name.text, Binding{var, nullptr, false});
      Stmt body = parse_block(with_tok, "with header");
      pop_scope(mark);
      return LetStmt(var, v.e, body, span(with_tok));
    }
    if (what.text == "decl_buffer") {
      expect_op("(", "after T.decl_buffer");
      BufferSpec spec = parse_buffer_args(false, t_tok, true);
      expect_keyword("as", "after T.decl_buffer(...)");
      const Token& name = expect_name("after 'as'");
      Buffer buf = make_buffer(name.text, span(name), std::move(spec));
      size_t mark = scope_mark();
      bind(name.text, Binding{nullptr, buf, false});
      Stmt body = parse_block(with_tok, "with header");
      pop_scope(mark);
      return DeclBuffer(buf, body, span(with_tok));
    }
    if (what.text == "alloc_buffer" || what.text == "allocate") {
      expect_op("(", "after T." + what.text);
      // The name comes after `as`: parse the declaration first, build the buffer after.
      BufferSpec spec = parse_buffer_args(true, t_tok);
      std::string scope = spec.scope;
      expect_keyword("as", "after T." + what.text + "(...)");
      const Token& name = expect_name("after 'as'");
      Buffer buf = make_buffer(name.text, span(name), std::move(spec));
      size_t mark = scope_mark();
      bind(name.text, Binding{nullptr, buf, false});
      Stmt body = parse_block(with_tok, "with header");
      pop_scope(mark);
      return Allocate(buf, scope, body, span(with_tok));
    }
    fail(t_tok, "unknown 'with' form 'T." + what.text + "'",
         did_you_mean(what.text, {"attr", "Assert", "LetStmt", "alloc_buffer", "allocate", "decl_buffer"}, "T."));
  }

  // ---- expressions --------------------------------------------------------------------
  // Makes `p` of type `t` if it is a bare literal that can take that type.
  static PExpr promote_to(PExpr p, DataType t) {
    if (t.is_vector() && p.e->dtype.is_scalar()) {
      // A scalar where a vector is wanted is repeated over its lanes (TVM broadcasts).
      PExpr s = promote_to(p, t.element_of());
      if (s.e->dtype != t.element_of()) return p;  // the caller reports the mismatch
      return {Broadcast(s.e, t.lanes(), s.e->span), false, s.height + 1};
    }
    if (!p.bare) return p;
    if (t.is_float() || (t.is_integer() && !contains_float_literal(p.e)))
      return {retype_literal(p.e, t), false, p.height};
    return p;
  }

  // Brings both operands to one type (bare literals adapt), or reports a mismatch.
  void unify(PExpr& a, PExpr& b, const std::string& sym, const Token& at, const char* what = nullptr) {
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

  PExpr arith(ExprKind k, PExpr a, PExpr b, const Token& op) {
    unify(a, b, binary_symbol(k), op);
    const DataType& t = a.e->dtype;
    if (!t.is_numeric()) fail(op, std::string("operator '") + binary_symbol(k) + "' needs numbers, got " + t.str());
    return {Binary(k, a.e, b.e, span(op)), a.bare && b.bare, combined_height(a, b, op)};
  }

  PExpr compare(ExprKind k, PExpr a, PExpr b, const Token& op) {
    unify(a, b, binary_symbol(k), op);
    return {Binary(k, a.e, b.e, span(op)), false, combined_height(a, b, op)};
  }

  PExpr logic(ExprKind k, PExpr a, PExpr b, const Token& op) {
    for (const PExpr* p : {&a, &b})
      if (!p->e->dtype.is_bool())
        fail(op, std::string("operands of '") + binary_symbol(k) + "' must be bool, got " + p->e->dtype.str());
    return {Binary(k, a.e, b.e, span(op)), false, combined_height(a, b, op)};
  }

  PExpr parse_expr() {
    DepthGuard guard(*this, cur());
    return parse_or();
  }

  PExpr parse_or() {
    PExpr l = parse_and();
    while (is_name("or")) {
      const Token& op = next();
      l = logic(ExprKind::Or, l, parse_and(), op);
    }
    return l;
  }

  PExpr parse_and() {
    PExpr l = parse_not();
    while (is_name("and")) {
      const Token& op = next();
      l = logic(ExprKind::And, l, parse_not(), op);
    }
    return l;
  }

  PExpr parse_not() {
    if (!is_name("not")) return parse_comparison();
    const Token& op = next();
    DepthGuard guard(*this, op);
    PExpr a = parse_not();
    if (!a.e->dtype.is_bool()) fail(op, "operand of 'not' must be bool, got " + a.e->dtype.str());
    return {Not(a.e, span(op)), false};
  }

  bool at_comparison(ExprKind* k) const {
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

  PExpr parse_comparison() {
    PExpr l = parse_arith();
    ExprKind kind;
    if (!at_comparison(&kind)) return l;
    const Token& op = next();
    PExpr r = parse_arith();
    ExprKind again;
    if (at_comparison(&again)) fail(cur(), "chained comparisons are not supported; combine them with 'and'");
    return compare(kind, l, r, op);
  }

  PExpr parse_arith() {
    PExpr l = parse_term();
    while (is_op("+") || is_op("-")) {
      const Token& op = next();
      PExpr r = parse_term();
      l = arith(op.text == "+" ? ExprKind::Add : ExprKind::Sub, l, r, op);
    }
    return l;
  }

  PExpr parse_term() {
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

  PExpr parse_unary() {
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
  Expr int_literal(const Token& lit, bool negative) {
    const uint64_t limit = static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) + (negative ? 1 : 0);
    if (lit.int_value > limit) fail(lit, "integer literal '" + lit.text + "' is too large");
    int64_t v = negative ? static_cast<int64_t>(0 - lit.int_value) : static_cast<int64_t>(lit.int_value);
    bool fits32 = v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max();
    return IntImm(fits32 ? DataType::Int(32) : DataType::Int(64), v, span(lit));
  }

  PExpr parse_power() {
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

  PExpr parse_atom() {
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
        if (!found) fail(t, "undefined name '" + t.text + "'");
        const Binding b = *found;  // a copy: bindings_ may grow while we parse indices
        if (b.buffer) {
          if (is_op("[")) {
            std::vector<Expr> idx = parse_indices(t, b.buffer);
            return {BufferLoad(b.buffer, std::move(idx), span(t)), false};
          }
          if (is_op(".")) {
            next();
            const Token& field = expect_name("after '.'");
            if (field.text != "data")
              fail(field, "buffer '" + t.text + "' has no field '" + field.text + "' (only .data)");
            return {b.buffer->data, false};
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

  // T.call_tir("callee", A, B[0:4, :], n) after '(': a buffer alone is all of it, an
  // indexed buffer a rectangle (`lo:hi`, `:`, `lo:`, `:hi`, or one index `i` for
  // extent 1), anything else a scalar.
  Expr parse_call_tir(const Token& t_tok, const Token& fn) {
    std::vector<Expr> args;
    const Token& callee = cur();
    if (callee.kind != TokKind::kString) fail(callee, "T.call_tir needs the callee's name as a string first");
    next();
    args.push_back(StringImm(callee.text, span(callee)));
    Attrs attrs;
    while (is_op(",")) {
      next();
      const Token& t = cur();
      if (is_name("attrs") && tok_is_op(ahead(1), "=")) {  // the call's attributes, last
        next();
        next();
        attrs = parse_dict();
        break;
      }
      const Binding* b = t.kind == TokKind::kName ? lookup(t.text) : nullptr;
      if (b && b->buffer && (tok_is_op(ahead(1), ",") || tok_is_op(ahead(1), ")") || tok_is_op(ahead(1), "["))) {
        Buffer buf = b->buffer;
        next();
        std::vector<Expr> mins, extents;
        if (is_op("[")) {
          next();
          for (size_t k = 0; !is_op("]"); ++k) {
            if (k >= buf->shape.size())
              fail(cur(), "buffer '" + buf->name + "' has " + std::to_string(buf->shape.size()) +
                              " dimensions but the region has more");
            auto [lo, ext] = parse_slice(buf->shape[k]);
            mins.push_back(lo);
            extents.push_back(ext);
            if (!is_op(",")) break;
            next();
          }
          expect_op("]", "to close the region");
          if (mins.size() != buf->shape.size())
            fail(t, "buffer '" + buf->name + "' has " + std::to_string(buf->shape.size()) +
                        " dimensions but the region has " + std::to_string(mins.size()));
        } else {
          for (const auto& d : buf->shape) {
            mins.push_back(IntImm(d->dtype, 0, span(t)));
            extents.push_back(d);
          }
        }
        std::vector<Expr> region = {BufferLoad(buf, mins, span(t))};
        region.insert(region.end(), extents.begin(), extents.end());
        args.push_back(Call(DataType::Handle(), "tir_region", std::move(region), {}, span(t)));
      } else {
        PExpr e = parse_expr();
        if (e.bare) e = promote_to(e, e.e->dtype);
        args.push_back(e.e);
      }
    }
    expect_op(")", "to close T.call_tir(...)");
    (void)fn;
    return Call(DataType::Int(32), "call_tir", std::move(args), std::move(attrs), span(t_tok));
  }

  // One dimension of a region: its start and extent.
  std::pair<Expr, Expr> parse_slice(const Expr& dim) {
    const Span at = span(cur());
    Expr lo, hi;
    if (!is_op(":")) lo = parse_index_expr();
    if (!is_op(":")) return {lo, IntImm(lo->dtype, 1, at)};  // a single index
    next();
    if (!is_op(",") && !is_op("]")) hi = parse_index_expr();
    if (!lo) lo = IntImm(dim->dtype, 0, at);
    if (!hi) hi = dim;
    const int64_t *l = as_const_int(lo), *h = as_const_int(hi);
    if (l && h) return {lo, IntImm(lo->dtype, *h - *l, at)};
    if (l && *l == 0) return {lo, hi};
    // `i:i + 4` has extent 4, as the printer writes it.
    if (const auto* add = as<AddNode>(hi); add && same_expr(add->a, lo)) return {lo, add->b};
    return {lo, Binary(ExprKind::Sub, hi, lo, at)};
  }

  // Arguments of a T.<fn>(...) call after '('; consumes ')'. `attrs=` is collected
  // into *attrs when allowed.
  std::vector<PExpr> parse_args(const Token& fn_tok, Attrs* attrs) {
    std::vector<PExpr> args;
    while (!is_op(")")) {
      if (is_name("attrs") && tok_is_op(ahead(1), "=")) {
        const Token& kw = next();
        next();
        if (!attrs) fail(kw, "attrs= is only allowed on intrinsic calls");
        *attrs = parse_dict();
      } else {
        args.push_back(parse_expr());
      }
      if (!is_op(",")) break;
      next();
    }
    expect_op(")", "to close the call to T." + fn_tok.text);
    return args;
  }

  void check_arity(const Token& at, const Token& fn, const std::vector<PExpr>& args, size_t n) {
    if (args.size() != n)
      fail(at, "T." + fn.text + " expects " + std::to_string(n) + (n == 1 ? " argument" : " arguments") + ", got " +
                   std::to_string(args.size()));
  }

  // A typed constant: T.int64(5), T.float32(0.5), T.float32("inf"), T.bool(True).
  PExpr parse_typed_constant(const Token& t_tok, const Token& fn, DataType type) {
    expect_op("(", "after T." + fn.text + " (a type used as a value must be called, e.g. T." + fn.text + "(0))");
    bool neg = false;
    if (is_op("-")) neg = true, next();
    const Token& v = cur();
    Expr out;
    if (v.kind == TokKind::kInt) {
      next();
      if (type.is_float()) {
        out = FloatImm(type, neg ? -static_cast<double>(v.int_value) : static_cast<double>(v.int_value), span(t_tok));
      } else {
        bool unsigned64 = type.is_uint() && type.bits() == 64 && !neg;
        uint64_t limit = unsigned64 ? std::numeric_limits<uint64_t>::max()
                                    : static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) + (neg ? 1 : 0);
        if (v.int_value > limit) fail(v, "integer literal '" + v.text + "' is too large");
        int64_t x = neg ? static_cast<int64_t>(0 - v.int_value) : static_cast<int64_t>(v.int_value);
        out = IntImm(type, x, span(t_tok));
      }
    } else if (v.kind == TokKind::kFloat && type.is_float()) {
      next();
      out = FloatImm(type, neg ? -v.float_value : v.float_value, span(t_tok));
    } else if (v.kind == TokKind::kString && type.is_float() && !neg) {
      next();
      double x;
      if (v.text == "inf")
        x = std::numeric_limits<double>::infinity();
      else if (v.text == "-inf")
        x = -std::numeric_limits<double>::infinity();
      else if (v.text == "nan")
        x = std::numeric_limits<double>::quiet_NaN();
      else
        fail(v, "expected \"inf\", \"-inf\" or \"nan\", found \"" + v.text + "\"");
      out = FloatImm(type, x, span(t_tok));
    } else if (!neg && (tok_is_name(v, "True") || tok_is_name(v, "False")) && type.is_bool()) {
      next();
      out = Bool(v.text == "True", span(t_tok));
    } else {
      fail(v, "expected a literal constant of type " + type.str() + " in T." + fn.text + "(...), found " + describe(v));
    }
    expect_op(")", "to close T." + fn.text + "(...)");
    return {out, false};
  }

  // TVMScript calls that are another spelling of something we have (after `T.name`,
  // before '('). False when `fn` is not one of them.
  bool parse_tvm_sugar(const Token& t_tok, const Token& fn, PExpr* out) {
    const std::string& name = fn.text;
    if (name == "cast") {  // T.cast(x, "float32") is T.Cast("float32", x)
      expect_op("(", "after T.cast");
      PExpr v = parse_expr();
      expect_op(",", "after the value in T.cast");
      DataType t = parse_dtype_string("as the target type of T.cast");
      expect_op(")", "to close T.cast(...)");
      if (v.bare) v = promote_to(v, v.e->dtype);
      *out = {Cast(t, v.e, span(t_tok)), false};
      return true;
    }
    if (name == "likely") {  // a branch hint: the condition itself
      expect_op("(", "after T.likely");
      PExpr c = parse_expr();
      expect_op(")", "to close T.likely(...)");
      if (!c.e->dtype.is_bool()) fail(t_tok, "T.likely needs a bool condition, got " + c.e->dtype.str());
      *out = c;
      return true;
    }
    if (name == "ret") {  // T.ret(x): return x
      expect_op("(", "after T.ret");
      Expr v = return_value(t_tok);
      expect_op(")", "to close T.ret(...)");
      *out = {v, false};
      return true;
    }
    if (name == "undef") {  // any value will do: zero of the type
      expect_op("(", "after T.undef");
      DataType t = DataType::Int(32);
      if (is_name("dtype") && tok_is_op(ahead(1), "=")) next(), next();
      if (!is_op(")")) t = parse_dtype_string("as the type of T.undef");
      expect_op(")", "to close T.undef(...)");
      *out = {t.is_float() ? FloatImm(t, 0.0, span(t_tok)) : IntImm(t, 0, span(t_tok)), false};
      return true;
    }
    if (name == "call_extern" || name == "call_pure_extern") {
      *out = {parse_call_extern(t_tok, fn), false};
      return true;
    }
    if (name == "reinterpret") {  // T.reinterpret("float32", x): the same bits as another type
      expect_op("(", "after T.reinterpret");
      DataType t = parse_dtype_string("as the result type of T.reinterpret");
      expect_op(",", "after the type in T.reinterpret");
      PExpr x = parse_expr();
      expect_op(")", "to close T.reinterpret(...)");
      if (x.bare) x = promote_to(x, x.e->dtype);
      DataType from = x.e->dtype;
      if (!from.is_numeric() || !t.is_numeric() || from.bits() != t.bits() || (t.bits() != 32 && t.bits() != 64))
        fail(t_tok, "T.reinterpret needs numbers of one width, 32 or 64 bits: " + from.str() + " to " + t.str());
      *out = {Call(t, "reinterpret", {x.e}, {}, span(t_tok)), false};
      return true;
    }
    if (name == "clz") {
      expect_op("(", "after T.clz");
      PExpr x = parse_expr();
      expect_op(")", "to close T.clz(...)");
      if (x.bare) x = promote_to(x, x.e->dtype);
      if (!x.e->dtype.is_integer() || (x.e->dtype.bits() != 32 && x.e->dtype.bits() != 64))
        fail(t_tok, "T.clz is defined on 32- and 64-bit integers, not " + x.e->dtype.str());
      *out = {Call(DataType::Int(32), "clz", {x.e}, {}, span(t_tok)), false};
      return true;
    }
    if (name == "tvm_access_ptr") {
      *out = {parse_access_ptr(t_tok), false};
      return true;
    }
    if (name == "env_thread" || name == "launch_thread")
      fail(t_tok, "T." + name + " declares a GPU thread variable: write it as a statement, x = T." + name + "(...)");
    return false;
  }

  // T.tvm_access_ptr(T.type_annotation("float32"), A.data, offset, extent, rw_mask): the
  // address of element `offset` of a flat buffer over that pointer, T.address_of(A[offset]).
  Expr parse_access_ptr(const Token& t_tok) {
    expect_op("(", "after T.tvm_access_ptr");
    if (!at_t_attr("type_annotation")) fail(cur(), "T.tvm_access_ptr takes T.type_annotation(\"dtype\") first");
    next(), next(), next();
    expect_op("(", "after T.type_annotation");
    DataType t = parse_dtype_string("in T.type_annotation");
    expect_op(")", "to close T.type_annotation(...)");
    expect_op(",", "after the type of T.tvm_access_ptr");
    const Token& data_tok = cur();
    PExpr data = parse_expr();
    const auto* v = as<VarNode>(data.e);
    if (!v || !v->dtype.is_handle()) fail(data_tok, "T.tvm_access_ptr needs a data pointer such as A.data");
    std::vector<PExpr> rest;
    while (is_op(",")) {
      next();
      rest.push_back(parse_expr());
    }
    expect_op(")", "to close T.tvm_access_ptr(...)");
    if (rest.size() != 3) fail(t_tok, "T.tvm_access_ptr takes a type, a pointer, an offset, an extent and an access mask");
    Buffer flat;
    for (auto it = bindings_.rbegin(); it != bindings_.rend() && !flat; ++it) {
      const Buffer& b = it->second.buffer;
      if (b && b->data.get() == v && b->ndim() == 1 && b->dtype == t) flat = b;
    }
    if (!flat)
      fail(data_tok, "T.tvm_access_ptr needs a one-dimensional " + t.str() + " buffer over '" + v->name +
                         "' in scope; declare one with T.Buffer((n,), \"" + t.str() + "\", data=...)");
    PExpr offset = rest[0].bare ? promote_to(rest[0], rest[0].e->dtype) : rest[0];
    Expr element = BufferLoad(flat, {offset.e}, span(t_tok));
    return Call(DataType::Handle(), "address_of", {element}, {}, span(t_tok));
  }

  // T.call_extern("float32", "name", args...) (TVM's order), or with the type as the
  // keyword dtype="float32" anywhere. T.call_pure_extern is the same call marked pure.
  Expr parse_call_extern(const Token& t_tok, const Token& fn) {
    expect_op("(", "after T." + fn.text);
    Attrs attrs;
    std::optional<DataType> type;
    std::vector<Expr> args;
    while (!is_op(")")) {
      if (is_name("dtype") && tok_is_op(ahead(1), "=")) {
        next(), next();
        type = cur().text == "void" ? (next(), DataType::Void()) : parse_dtype_string("for dtype=");
      } else if (is_name("attrs") && tok_is_op(ahead(1), "=")) {
        next(), next();
        attrs = parse_dict();
      } else if (!type && args.empty() && cur().kind == TokKind::kString && tok_is_op(ahead(1), ",") &&
                 ahead(2).kind == TokKind::kString) {
        type = cur().text == "void" ? (next(), DataType::Void())
                                    : parse_dtype_string("as the result type of T." + fn.text);
      } else {
        PExpr a = parse_expr();
        if (a.bare) a = promote_to(a, a.e->dtype);
        args.push_back(a.e);
      }
      if (!is_op(",")) break;
      next();
    }
    expect_op(")", "to close T." + fn.text + "(...)");
    if (args.empty() || !as<StringImmNode>(args[0]))
      fail(fn, "T." + fn.text + " needs a function name string after the type");
    if (!type) fail(fn, "T." + fn.text + " needs the result type, first or as dtype=\"...\"");
    if (fn.text == "call_pure_extern") attrs["pure"] = true;
    return Call(type->is_void() ? DataType::Void() : *type, "call_extern", std::move(args), std::move(attrs),
                span(t_tok));
  }

  // ---- vectors ------------------------------------------------------------------
  // The lanes argument of T.Ramp / T.Broadcast: an integer constant.
  int parse_lanes(const Token& fn) {
    const Token& at = cur();
    PExpr e = parse_expr();
    const int64_t* c = as_const_int(e.e);
    if (!c || *c < 2 || *c > DataType::kMaxLanes)
      fail(at, "T." + fn.text + " needs a constant number of lanes from 2 to " + std::to_string(DataType::kMaxLanes));
    return static_cast<int>(*c);
  }

  // T.float32x4(x): x converted to float32 and repeated over 4 lanes (TVM's cast).
  PExpr parse_vector_constant(const Token& t_tok, const Token& fn, DataType t) {
    expect_op("(", "after T." + fn.text);
    if (is_op(")"))
      fail(t_tok, "T." + fn.text + "() declares a vector variable, which is not supported; bind a value instead");
    PExpr v = parse_expr();
    expect_op(")", "to close T." + fn.text + "(...)");
    v = promote_to(v, t);
    if (v.e->dtype == t) return v;
    if (v.e->dtype.lanes() == t.lanes()) return {Cast(t, v.e, span(t_tok)), false};
    if (v.e->dtype.is_vector() || !v.e->dtype.is_numeric())
      fail(t_tok, "T." + fn.text + " cannot convert " + v.e->dtype.str());
    return {Broadcast(Cast(t.element_of(), v.e, span(t_tok)), t.lanes(), span(t_tok)), false};
  }

  PExpr parse_ramp(const Token& t_tok, const Token& fn) {
    expect_op("(", "after T." + fn.text);
    PExpr base = parse_expr();
    expect_op(",", "after the base of T." + fn.text);
    PExpr stride = parse_expr();
    expect_op(",", "after the stride of T." + fn.text);
    int lanes = parse_lanes(fn);
    expect_op(")", "to close T." + fn.text + "(...)");
    unify(base, stride, ",", t_tok, "the base and stride of T.Ramp");
    base = promote_to(base, base.e->dtype), stride = promote_to(stride, stride.e->dtype);
    if (!base.e->dtype.is_integer() || base.e->dtype.is_vector())
      fail(t_tok, "T." + fn.text + " needs a scalar integer base and stride, not " + base.e->dtype.str());
    return {Ramp(base.e, stride.e, lanes, span(t_tok)), false};
  }

  PExpr parse_broadcast(const Token& t_tok, const Token& fn) {
    expect_op("(", "after T." + fn.text);
    PExpr v = parse_expr();
    expect_op(",", "after the value of T." + fn.text);
    int lanes = parse_lanes(fn);
    expect_op(")", "to close T." + fn.text + "(...)");
    v = promote_to(v, v.e->dtype);
    if (v.e->dtype.is_vector() || !(v.e->dtype.is_numeric() || v.e->dtype.is_bool()))
      fail(t_tok, "T." + fn.text + " repeats a scalar number, not " + v.e->dtype.str());
    return {Broadcast(v.e, lanes, span(t_tok)), false};
  }

  // T.Shuffle([a, b], [0, 4, 1, 5]): lanes of the vectors laid end to end.
  PExpr parse_shuffle(const Token& t_tok, const Token& fn) {
    expect_op("(", "after T." + fn.text);
    expect_op("[", "for the list of vectors of T." + fn.text);
    std::vector<Expr> vectors;
    int total = 0;
    while (!is_op("]")) {
      const Token& at = cur();
      PExpr v = parse_expr();
      v = promote_to(v, v.e->dtype);
      if (!vectors.empty() && v.e->dtype.element_of() != vectors[0]->dtype.element_of())
        fail(at, "T." + fn.text + " mixes " + vectors[0]->dtype.str() + " and " + v.e->dtype.str());
      total += v.e->dtype.lanes();
      vectors.push_back(v.e);
      if (!is_op(",")) break;
      next();
    }
    expect_op("]", "to close the list of vectors");
    if (vectors.empty()) fail(t_tok, "T." + fn.text + " needs at least one vector");
    expect_op(",", "after the vectors of T." + fn.text);
    expect_op("[", "for the lane indices of T." + fn.text);
    std::vector<int> indices;
    while (!is_op("]")) {
      const Token& at = cur();
      PExpr i = parse_expr();
      const int64_t* c = as_const_int(i.e);
      if (!c || *c < 0 || *c >= total)
        fail(at, "a lane index of T." + fn.text + " must be a constant in [0, " + std::to_string(total) + ")");
      indices.push_back(static_cast<int>(*c));
      if (!is_op(",")) break;
      next();
    }
    expect_op("]", "to close the lane indices");
    expect_op(")", "to close T." + fn.text + "(...)");
    if (indices.empty() || indices.size() > static_cast<size_t>(DataType::kMaxLanes))
      fail(t_tok, "T." + fn.text + " needs 1 to " + std::to_string(DataType::kMaxLanes) + " lane indices");
    return {Shuffle(std::move(vectors), std::move(indices), span(t_tok)), false};
  }

  // T.Let(body, where={x: value, ...}): the values are read first (each may use the
  // names before it), then the body with the names bound.
  PExpr parse_let_expr(const Token& t_tok) {
    expect_op("(", "after T.Let");
    const size_t body_pos = pos_;
    skip_balanced_until_comma();
    if (!is_op(",") || !tok_is_name(ahead(1), "where"))
      fail(t_tok, "T.Let needs the bindings after the body: T.Let(body, where={x: value})");
    next(), next();
    expect_op("=", "after 'where'");
    expect_op("{", "to open the bindings of T.Let");
    size_t mark = scope_mark();
    std::vector<std::pair<Var, Expr>> lets;
    while (!is_op("}")) {
      const Token& name = expect_name("as a T.Let variable");
      expect_op(":", "after the variable of T.Let");
      PExpr v = parse_expr();
      if (v.bare) v = promote_to(v, v.e->dtype);
      Var var = MakeVar(name.text, v.e->dtype, span(name));
      bind(name.text, Binding{var, nullptr, false});
      lets.emplace_back(var, v.e);
      if (!is_op(",")) break;
      next();
    }
    expect_op("}", "to close the bindings of T.Let");
    expect_op(")", "to close T.Let(...)");
    if (lets.empty()) fail(t_tok, "T.Let needs at least one binding in where={...}");
    const size_t end_pos = pos_;
    pos_ = body_pos;
    PExpr body = parse_expr();
    if (body.bare) body = promote_to(body, body.e->dtype);
    if (!is_op(",")) fail(cur(), "expected ',' after the body of T.Let, found " + describe(cur()));
    pos_ = end_pos;
    pop_scope(mark);
    Expr e = body.e;
    for (size_t i = lets.size(); i-- > 0;) e = Let(lets[i].first, lets[i].second, e, span(t_tok));
    return {e, false};
  }

  PExpr parse_t_call() {
    const Token& t_tok = next();  // T
    next();                       // .
    const Token& fn = expect_name("after 'T.'");
    if (auto type = DataType::parse(fn.text); type && !type->is_void() && !type->is_handle())
      return parse_typed_constant(t_tok, fn, *type);
    const std::string& name = fn.text;
    static const std::pair<const char*, ExprKind> kBinaryFns[] = {
        {"truncdiv", ExprKind::Div},      {"truncmod", ExprKind::Mod}, {"floordiv", ExprKind::FloorDiv},
        {"floormod", ExprKind::FloorMod}, {"min", ExprKind::Min},      {"max", ExprKind::Max}};
    if (is_block_construct(name)) fail(t_tok, kBlockRefusal);
    if (auto vt = DataType::parse(name, /*allow_lanes=*/true); vt && vt->is_vector())
      return parse_vector_constant(t_tok, fn, *vt);
    if (name == "Ramp" || name == "ramp") return parse_ramp(t_tok, fn);
    if (name == "Broadcast" || name == "broadcast") return parse_broadcast(t_tok, fn);
    if (name == "Shuffle" || name == "shuffle") return parse_shuffle(t_tok, fn);
    if (name == "Let") return parse_let_expr(t_tok);
    if (PExpr out; parse_tvm_sugar(t_tok, fn, &out)) return out;
    const OpInfo* op = lookup_op(name);
    bool known = op != nullptr || name == "And" || name == "Or" || name == "Not" || name == "Select" || name == "Cast";
    for (const auto& [n, k] : kBinaryFns) known = known || name == n;
    if (!known) fail(t_tok, "unknown intrinsic 'T." + name + "'", did_you_mean(name, t_expr_names(), "T."));
    expect_op("(", "after T." + name);

    if (name == "Cast") {
      DataType t = parse_dtype_string("as the target type of T.Cast");
      expect_op(",", "after the type in T.Cast");
      PExpr v = parse_expr();
      expect_op(")", "to close T.Cast(...)");
      if (v.bare) v = promote_to(v, v.e->dtype);
      return {Cast(t, v.e, span(t_tok)), false};
    }
    if (name == "call_tir") return {parse_call_tir(t_tok, fn), false};

    Attrs attrs;
    std::vector<PExpr> args = parse_args(fn, op ? &attrs : nullptr);
    for (const auto& [n, k] : kBinaryFns) {
      if (name != n) continue;
      check_arity(t_tok, fn, args, 2);
      return arith(k, args[0], args[1], t_tok);
    }
    if (name == "And" || name == "Or") {
      check_arity(t_tok, fn, args, 2);
      return logic(name == "And" ? ExprKind::And : ExprKind::Or, args[0], args[1], t_tok);
    }
    if (name == "Not") {
      check_arity(t_tok, fn, args, 1);
      if (!args[0].e->dtype.is_bool()) fail(t_tok, "operand of T.Not must be bool, got " + args[0].e->dtype.str());
      return {Not(args[0].e, span(t_tok)), false};
    }
    if (name == "Select") {
      check_arity(t_tok, fn, args, 3);
      unify(args[1], args[2], "and", t_tok, "T.Select branches");
      return {Select(args[0].e, args[1].e, args[2].e, span(t_tok)), false};
    }
    switch (op->kind) {
      case OpInfo::Kind::kUnaryMath: {
        check_arity(t_tok, fn, args, op->arity);
        PExpr x = args[0];
        if (x.bare)
          x = promote_to(x, op->int_ok && !contains_float_literal(x.e) ? DataType::Int(32) : DataType::Float(32));
        return {Call(x.e->dtype, name, {x.e}, std::move(attrs), span(t_tok)), false};
      }
      case OpInfo::Kind::kBinaryMath: {
        check_arity(t_tok, fn, args, op->arity);
        unify(args[0], args[1], ",", t_tok, ("arguments of T." + name).c_str());
        PExpr x = promote_to(args[0], DataType::Float(32)), y = promote_to(args[1], DataType::Float(32));
        return {Call(x.e->dtype, name, {x.e, y.e}, std::move(attrs), span(t_tok)), false};
      }
      case OpInfo::Kind::kIntBinary: {
        check_arity(t_tok, fn, args, op->arity);
        unify(args[0], args[1], ",", t_tok, ("arguments of T." + name).c_str());
        PExpr x = promote_to(args[0], DataType::Int(32)), y = promote_to(args[1], DataType::Int(32));
        for (const PExpr* a : {&x, &y})
          if (!a->e->dtype.is_integer())
            fail(t_tok, "T." + name + " is only defined on integers, not " + a->e->dtype.str());
        const int64_t* amount = as_const_int(y.e);
        int bits = x.e->dtype.bits();
        if (is_shift_op(op->id) && amount && (*amount < 0 || *amount >= bits))
          fail(t_tok, "T." + name + " by " + std::to_string(*amount) + " is out of range [0, " + std::to_string(bits) +
                          ") for " + x.e->dtype.str());
        return {Call(x.e->dtype, name, {x.e, y.e}, std::move(attrs), span(t_tok)), false};
      }
      case OpInfo::Kind::kIfThenElse: {
        check_arity(t_tok, fn, args, op->arity);
        unify(args[1], args[2], "and", t_tok, "T.if_then_else branches");
        PExpr a = promote_to(args[1], args[1].e->dtype), b = promote_to(args[2], args[2].e->dtype);
        return {Call(a.e->dtype, name, {args[0].e, a.e, b.e}, std::move(attrs), span(t_tok)), false};
      }
      case OpInfo::Kind::kBuiltin: {
        std::vector<Expr> es;
        std::vector<DataType> types;
        for (auto& a : args) {
          PExpr x = a.bare ? promote_to(a, a.e->dtype) : a;
          es.push_back(x.e);
          types.push_back(x.e->dtype);
        }
        std::string why;
        if (!builtin_args_ok(*op, types, &why)) fail(t_tok, why);
        return {Call(op->result, name, std::move(es), std::move(attrs), span(t_tok)), false};
      }
      case OpInfo::Kind::kCallExtern:
        break;
    }
    fail(t_tok, "unsupported intrinsic 'T." + name + "'");
  }

  std::shared_ptr<const SourceFile> file_;
  std::vector<Token> toks_;
  size_t pos_ = 0;
  int depth_ = 0;
  int stmt_depth_ = 0;
  std::vector<std::pair<std::string, Binding>> bindings_;
  DataType ret_type_ = DataType::Void();  // of the function being parsed
};

}  // namespace

ParseResult parse_module(const std::string& text, const std::string& filename) {
  ParseResult result;
  auto file = std::make_shared<SourceFile>();
  file->name = filename;
  file->text = text;
  try {
    std::vector<script::Token> toks = script::tokenize(file);
    Parser parser(file, std::move(toks));
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
