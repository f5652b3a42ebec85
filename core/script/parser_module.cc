// The text format's module structure: the preamble, decorators, the module class, a
// function's signature and attributes, types and buffer declarations.
#include <limits>

#include "script/parser_internal.h"

namespace mtir {
namespace script_parser {

// Skips blank lines and `from tvm.script import ...` / `import ...` lines.
void Parser::skip_preamble() {
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
std::string Parser::parse_decorator() {
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

void Parser::parse_class(IRModule* mod) {
  skip_newlines();
  expect_keyword("class", "after '@I.ir_module'");
  mod->name = expect_name("after 'class'").text;
  expect_op(":", "after class name");
  expect_newline("after 'class ...:'");
  if (cur().kind != TokKind::kIndent) fail(cur(), "expected an indented class body");
  next();
  module_name_ = mod->name;
  scan_function_signatures();
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

Attrs Parser::parse_dict() {
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
std::string Parser::parse_target_value() {
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
// after '(': kept as the target string. A host target (`host="llvm"` after the target,
// or a "host" key of the dictionary) follows as " -host=<host target>".
std::string Parser::parse_target_call() {
  std::string out = parse_target_spec();
  if (is_op(",")) {
    next();
    if (!is_name("host") || !tok_is_op(ahead(1), "=")) fail(cur(), "expected host=\"...\" after the target of T.target");
    next(), next();
    out += kTargetHostSeparator + parse_target_spec();
  }
  expect_op(")", "to close T.target(...)");
  return out;
}

// A target string, or a dictionary of its kind, options and host.
std::string Parser::parse_target_spec() {
  if (cur().kind == TokKind::kString) return next().text;
  expect_op("{", "(T.target takes a string or a dictionary)");
  std::string kind, options, host;
  while (!is_op("}")) {
    std::string key = expect_string("as target dictionary key");
    expect_op(":", "after dictionary key");
    if (key == "host") host = kTargetHostSeparator + parse_target_spec();
    else if (key == "kind") kind = parse_target_value();
    else options += " -" + key + "=" + parse_target_value();
    if (!is_op(",")) break;
    next();
  }
  expect_op("}", "to close the target dictionary");
  return kind + options + host;
}

AttrValue Parser::parse_attr_value() {
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

// `T.int32`, `"int32"`, or a typed pointer: `T.handle("float32"[, "global"])`,
// `T.Ptr(T.float32[, "global"])` (TVM's PointerType).
Parser::TypeAnn Parser::parse_type_ann() {
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

// Why a type string is refused: sub-byte and scalable types are named.
static std::string unknown_type_message(const std::string& name) {
  if (name == "int1" || name == "int2" || name == "uint2" ||
      name.rfind("float8", 0) == 0 || name.rfind("float4", 0) == 0)
    return "type '" + name + "' is not supported: microtir's types are bool and 8- to 64-bit integers and floats "
           "(sub-byte types other than int4 and uint4, and 8-bit float types, are not)";
  return "unknown type '" + name + "'";
}

DataType Parser::parse_dtype_string(const std::string& context) {
  const Token& t = cur();
  if (t.kind == TokKind::kString) {
    next();
    auto d = t.text == "boolean" ? DataType::Bool() : DataType::parse(t.text, /*allow_lanes=*/true);
    if (!d || d->is_void()) fail(t, unknown_type_message(t.text));
    return *d;
  }
  if (tok_is_name(t, "T")) return parse_type_annotation();
  fail(t, "expected a type string like \"float32\" " + context + ", found " + describe(t));
}

std::pair<std::string, PrimFunc> Parser::parse_function() {
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
bool Parser::at_var_decl(size_t at) const {
  auto type = DataType::parse(ahead(at + 2).text);
  return tok_is_name(ahead(at), "T") && tok_is_op(ahead(at + 1), ".") && type && type->is_integer() &&
         tok_is_op(ahead(at + 3), "(") && tok_is_op(ahead(at + 4), ")");
}

// `m, n = T.int32(), T.int32()` (several on one line, as TVM prints them).
bool Parser::at_multi_var_decl() const {
  size_t k = 0;
  int names = 0;
  while (ahead(k).kind == TokKind::kName && tok_is_op(ahead(k + 1), ",")) k += 2, ++names;
  if (names == 0 || ahead(k).kind != TokKind::kName || !tok_is_op(ahead(k + 1), "=")) return false;
  return at_var_decl(k + 2);
}

void Parser::parse_multi_var_decl() {
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
void Parser::parse_function_header(PrimFuncNode* f, const Params& params) {
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
    // data=A.data: the tensor's memory is another buffer's, as TVM binds it.
    Buffer buf = make_buffer(name.text, span(name), parse_buffer_args(false, t_tok, true, false));
    expect_newline("after statement");
    f->param_buffers[index] = buf;
    bind(name.text, Binding{f->params[index], buf, true});
  }
}

// Skips one parameter annotation (up to the next ',' or ')' outside brackets).
void Parser::skip_balanced_until_comma() {
  int depth = 0;
  while (cur().kind != TokKind::kEof) {
    if (depth == 0 && (is_op(",") || is_op(")"))) return;
    if (is_op("(") || is_op("[") || is_op("{")) ++depth;
    if (is_op(")") || is_op("]") || is_op("}")) --depth;
    next();
  }
  fail(cur(), "unexpected end of file in parameter list");
}

std::vector<Expr> Parser::parse_shape() {
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

// TVM's axis_separators: constants, increasing, each at most the number of dimensions.
static bool valid_axis_separators(const std::vector<int64_t>& separators, size_t ndim) {
  for (size_t i = 0; i < separators.size(); ++i)
    if (separators[i] < (i ? separators[i - 1] + 1 : 0) || separators[i] > static_cast<int64_t>(ndim)) return false;
  return true;
}

// The arguments of T.Buffer / T.alloc_buffer / T.allocate after '('; consumes ')'.
Parser::BufferSpec Parser::parse_buffer_args(bool allow_scope, const Token& call_tok, bool allow_data, bool data_required) {
  BufferSpec spec;
  bool have_shape = false;
  int positional = 0;
  const Token* view_scope = nullptr;  // scope= on a view or parameter
  const Token* axis_tok = nullptr;
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
        if (v != "global" && v != "" && v != "default" && v != "auto") view_scope = &at;
      } else if (kw.text == "offset_factor") {
        parse_small_int("for offset_factor=");  // an alignment hint in elements; we keep align= only
      } else if (kw.text == "axis_separators") {
        axis_tok = &cur();
        for (const Expr& e : parse_shape()) spec.axis_separators.push_back(as_const_int(e) ? *as_const_int(e) : -1);
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
  // A view's scope is its pointer's (TVM prints T.Buffer(..., data=p, scope="shared") for
  // a p of T.handle("float32", "shared")): kept there, so only a matching one is accepted.
  // A parameter's buffer in another scope (GPU memory) is carried on its pointer and
  // refused at use (ir/carried_types.h).
  if (view_scope && !allow_data) spec.param_scope = view_scope->text;
  else if (view_scope && (!spec.data || spec.data->pointer_scope != view_scope->text))
    fail(*view_scope, "scope=\"" + view_scope->text + "\" is only supported on allocations and on views of a "
                      "pointer of that scope (data=p with p: T.handle(\"float32\", \"" + view_scope->text + "\"))");
  if (!have_shape) fail(call_tok, "buffer declaration needs a shape");
  if (axis_tok && !valid_axis_separators(spec.axis_separators, spec.shape.size()))
    fail(*axis_tok, "axis_separators must increase and lie in [0, " + std::to_string(spec.shape.size()) +
                        "], the buffer's dimensions");
  if (allow_data && data_required && !spec.data)
    fail(call_tok,
         "T.Buffer in a function body needs data=, the pointer it views (T.decl_buffer without data= allocates)");
  if (!spec.elem_offset) spec.elem_offset = IntImm(DataType::Int(32), 0, span(call_tok));
  return spec;
}

Buffer Parser::make_buffer(const std::string& name, const Span& name_span, BufferSpec spec) {
  auto b = std::make_shared<BufferNode>();
  b->name = name;
  b->dtype = spec.dtype;
  b->shape = std::move(spec.shape);
  b->strides = std::move(spec.strides);
  b->elem_offset = std::move(spec.elem_offset);
  b->data = spec.data                   ? spec.data
            : spec.param_scope.empty() ? MakeVar(name + "_data", DataType::Handle(), name_span)
                                       : MakePointerVar(name + "_data", spec.dtype, spec.param_scope, name_span);
  b->align = spec.align;
  b->axis_separators = std::move(spec.axis_separators);
  b->span = name_span;
  return b;
}

int64_t Parser::parse_small_int(const std::string& context) {
  const Token& t = cur();
  if (t.kind != TokKind::kInt || t.int_value > 1u << 30) fail(t, "expected a small integer " + context);
  next();
  return static_cast<int64_t>(t.int_value);
}

}  // namespace script_parser
}  // namespace mtir
