// The text format's statements: blocks, stores, lets, loops, conditionals, asserts and
// the `with` forms.
#include "script/parser_internal.h"
#include "ir/structural_equal.h"
#include "ir/visitor.h"

namespace mtir {
namespace script_parser {

Stmt Parser::make_seq(std::vector<Stmt> stmts, const Span& s) {
  return stmts.empty() ? spanned_no_op(s) : SeqStmt(std::move(stmts), s);
}

// Statements up to the end of the current block (the DEDENT is not consumed).
std::vector<Stmt> Parser::parse_stmt_list() {
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
Stmt Parser::parse_block(const Token& owner, const std::string& header) {
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

// A loop's block, where `break` and `continue` may stand.
Stmt Parser::parse_loop_body(const Token& owner, const std::string& header) {
  ++loop_depth_;
  Stmt body = parse_block(owner, header);
  --loop_depth_;
  return body;
}

Stmt Parser::parse_stmt() {
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
    if (t.text == "break" || t.text == "continue") {  // TVM's loop exits (ir/tvm_intrinsics.def)
      if (loop_depth_ == 0) fail(t, "'" + t.text + "' outside a loop");
      next();
      expect_newline("after '" + t.text + "'");
      return Evaluate(Call(DataType::Int(32), t.text + "_loop", {}, {}, span(t)), span(t));
    }
    if (t.text == "else" || t.text == "elif") fail(t, "'" + t.text + "' without a matching 'if'");
    if (t.text == "return") return parse_return();
    if (t.text == "while") {
      const Token& while_tok = next();
      PExpr c = parse_expr();
      if (!c.e->dtype.is_bool()) fail(while_tok, "the condition of 'while' must be bool, got " + c.e->dtype.str());
      Stmt body = parse_loop_body(while_tok, "while condition");
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
    if (tok_is_op(after, ".") && tok_is_name(ahead(2), "vstore")) {
      const Binding* b = lookup(t.text);
      if (b && b->buffer) {
        next(), next(), next();
        VectorAccess a = parse_vector_access(t, b->buffer, true);
        expect_newline("after statement");
        auto store = std::make_shared<BufferStoreNode>(b->buffer, a.value, a.indices, span(t));
        store->predicate = a.predicate;
        return store;
      }
    }
    if (at_t_attr("func_attr")) fail(t, "T.func_attr must be the first statement of a function");
    if ((at_t_attr("attr") || at_t_attr("launch_thread")) && tok_is_op(ahead(3), "(")) return parse_concise_scope();
    if (at_t_attr("realize") && tok_is_op(ahead(3), "(")) {  // concise: the rest of the block is its body
      next(), next(), next();
      return parse_realize(t, [&] {
        expect_newline("after statement");
        return parse_rest(t);
      });
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
Expr Parser::return_value(const Token& tok) {
  if (ret_type_.is_void())
    fail(tok, "return with a value in a function without a return type; declare one, e.g. '-> T.int32'");
  const Token& at = cur();
  PExpr v = promote_to(parse_expr(), ret_type_);
  if (v.e->dtype != ret_type_)
    fail(at, "the function returns " + ret_type_.str() + ", but this value is " + v.e->dtype.str());
  if (!ret_type_.is_integer() && !ret_type_.is_float() && !ret_type_.is_bool())
    fail(tok, "returning " + ret_type_.str() + " is not supported; microtir functions return numbers or bool");
  return Call(DataType::Int(32), "tvm_return", {v.e}, {}, span(tok));
}

// `return x` in a function with a return type (TVM's T.ret): the tvm_return builtin. A
// bare `return` (or `return None`) leaves a function without one early: tvm_return
// without a value.
Stmt Parser::parse_return() {
  const Token& tok = next();
  if (cur().kind == TokKind::kNewline || is_name("None")) {
    if (is_name("None")) next();
    expect_newline("after 'return'");
    if (!ret_type_.is_void())
      fail(tok, "a bare 'return' in a function that returns " + ret_type_.str() + "; return a value");
    return Evaluate(Call(DataType::Int(32), "tvm_return", {}, {}, span(tok)), span(tok));
  }
  Expr v = return_value(tok);
  expect_newline("after statement");
  return Evaluate(v, span(tok));
}

// A variable declared in a body (`n = T.int32()`) has its value from a buffer declaration
// after it that uses it bare (T.Buffer(..., elem_offset=n)) or a T.LetStmt(v, var=n), as
// in TVM; without one it would have none.
void Parser::check_bound_by_buffer(const Token& name, const Var& var, const Stmt& body) {
  struct Finder : Visitor {
    const VarNode* var;
    bool found = false;
    void visit_DeclBuffer(const DeclBufferNode* op) override {
      const Buffer& b = op->buffer;
      auto is_var = [&](const Expr& e) { return e.get() == var; };
      found = found || std::any_of(b->shape.begin(), b->shape.end(), is_var) ||
              std::any_of(b->strides.begin(), b->strides.end(), is_var) || is_var(b->elem_offset);
      Visitor::visit_DeclBuffer(op);
    }
    void visit_LetStmt(const LetStmtNode* op) override {  // with T.LetStmt(v, var=n):
      found = found || op->var.get() == var;
      Visitor::visit_LetStmt(op);
    }
  } finder;
  finder.var = var.get();
  finder.visit(body);
  if (!finder.found)
    fail(name, "'" + name.text + " = T." + var->dtype.str() + "()' declares a variable that nothing after it binds "
               "(TVM's T.Buffer(..., elem_offset=" + name.text + ") in a body, or T.LetStmt(v, var=" + name.text + ")); give it a value instead, " +
               name.text + ": T." + var->dtype.str() + " = ...");
}

// `a, b = x, y`: one let per name, bound in order (Python evaluates every value
// first, so no value may use a name bound on the same line).
Stmt Parser::parse_multi_assign() {
  const Token& first = cur();
  if (at_multi_var_decl()) {  // variables the buffer declarations after them bind, as one
    size_t mark = scope_mark();
    parse_multi_var_decl();
    Stmt body = parse_rest(first);
    pop_scope(mark);
    return body;
  }
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

Stmt Parser::parse_store() {
  const Token& name = next();
  Buffer buf = lookup(name.text)->buffer;
  std::vector<Expr> indices = parse_indices(name, buf);
  // A[i] += v is A[i] = A[i] + v, as TVM's parser reads it.
  static const std::pair<const char*, ExprKind> kAugmented[] = {
      {"+=", ExprKind::Add}, {"-=", ExprKind::Sub}, {"*=", ExprKind::Mul}, {"/=", ExprKind::Div}};
  const std::pair<const char*, ExprKind>* augmented = nullptr;
  for (const auto& a : kAugmented)
    if (is_op(a.first)) augmented = &a;
  const Token& op = augmented ? next() : expect_op("=", "after buffer index");
  PExpr v = parse_expr();
  Expr old = BufferLoad(buf, indices, span(name));  // of the index's lanes, scalable or not
  if (augmented) v = arith(augmented->second, {old, false}, v, op);
  v = promote_to(v, old->dtype);
  expect_newline("after statement");
  return BufferStore(buf, v.e, std::move(indices), span(name));
}

// `[i, j]` after a buffer name; checks the number of indices.
std::vector<Expr> Parser::parse_indices(const Token& name, const Buffer& buf) {
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
Expr Parser::parse_index_or_slice() {
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
  if (l && h)
    length = *h - *l;
  else if (add && same_expr(add->a, lo.e) && as_const_int(add->b))
    length = *as_const_int(add->b);
  else
    fail(at, "a vector slice needs a constant length, e.g. A[i:i + 4]");
  const int64_t lanes = (length + step - 1) / step;
  if (lanes < 2 || lanes > DataType::kMaxLanes)
    fail(at,
         "a vector slice needs 2 to " + std::to_string(DataType::kMaxLanes) + " lanes, not " + std::to_string(lanes));
  return Ramp(lo.e, IntImm(lo.e->dtype, step, span(at)), static_cast<int>(lanes), span(at));
}

Stmt Parser::parse_let() {
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

Stmt Parser::parse_assign() {
  const Token& name = next();
  next();  // '='
  if (at_var_decl(0)) {
    // TVM's variable declared in a body: the buffer declaration that uses it binds it.
    DataType t = *DataType::parse(ahead(2).text);
    for (int k = 0; k < 5; ++k) next();
    expect_newline("after statement");
    size_t mark = scope_mark();
    Var var = MakeVar(name.text, t, span(name));
    bind(name.text, Binding{var, nullptr, false});
    Stmt body = parse_rest(name);
    pop_scope(mark);
    check_bound_by_buffer(name, var, body);
    return body;
  }
  if (at_t_attr("decl_buffer") || at_t_attr("Buffer")) {
    // `T.decl_buffer(..., data=p)` and TVM's lowered `T.Buffer(..., data=p)` view
    // existing memory; `T.decl_buffer` without data= allocates, as in TVM.
    const Token& t_tok = cur();
    const bool is_decl = ahead(2).text == "decl_buffer";
    next(), next(), next();
    expect_op("(", "after T." + std::string(is_decl ? "decl_buffer" : "Buffer"));
    BufferSpec spec = parse_buffer_args(is_decl, t_tok, true, /*data_required=*/false);
    expect_newline("after statement");
    // T.Buffer without data= declares a buffer whose memory TVM binds later
    // (buffer_bind_scope, T.realize): a view of a pointer bound nowhere.
    const bool allocates = !spec.data && is_decl;
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
  if (at_t_attr("allocate_const")) return parse_allocate_const(&name, nullptr);
  if (const Binding* b = lookup(name.text)) {
    if (b->buffer)
      fail(name, "cannot assign to buffer '" + name.text + "'; store to elements with " + name.text + "[...] = value");
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
Stmt Parser::parse_thread(const Token& name) {
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
    if (!e.e->dtype.is_integer())
      fail(t_tok, "the extent of T.launch_thread must be an integer, not " + e.e->dtype.str());
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

// After `T.realize`: `(A[lo:hi, ...], "scope", condition=c)`, TVM's BufferRealize of
// unflattened TIR (the scope and the condition may be left out).
Stmt Parser::parse_realize(const Token& at, const std::function<Stmt()>& body) {
  expect_op("(", "after T.realize");
  const Binding* b = cur().kind == TokKind::kName ? lookup(cur().text) : nullptr;
  if (!b || !b->buffer) fail(cur(), "T.realize needs a buffer region first, e.g. A[0:16]");
  const Buffer buf = b->buffer;
  const Expr region_expr = parse_region(buf);
  const auto* region = as<CallNode>(region_expr);
  std::string scope;
  Expr condition = IntImm(DataType::Bool(), 1, span(at));
  for (int positional = 1; is_op(",");) {  // the scope, then the condition
    next();
    const Token& arg = cur();
    const bool keyword = is_name("condition") && tok_is_op(ahead(1), "=");
    if (keyword) next(), next();
    if (!keyword && positional == 1) {
      scope = expect_string("as the storage scope of T.realize");
      positional = 2;
      continue;
    }
    if (!keyword && positional != 2) fail(arg, "too many arguments to T.realize (a region, a scope and a condition)");
    condition = parse_expr().e;
    positional = 3;
    if (!condition->dtype.is_bool())
      fail(arg, "the condition of T.realize must be bool, got " + condition->dtype.str());
  }
  expect_op(")", "to close T.realize(...)");
  std::vector<std::pair<Expr, Expr>> bounds;
  const auto* first = as<BufferLoadNode>(region->args[0]);
  for (size_t k = 0; k < first->indices.size(); ++k) bounds.emplace_back(first->indices[k], region->args[k + 1]);
  return BufferRealize(buf, std::move(bounds), scope, condition, body(), span(at));
}

// `(values, "dtype", [extents])` of T.allocate_const (at the T of its call): the values
// row-major, as constant numbers.
Parser::ConstValues Parser::parse_const_values() {
  const Token& t_tok = cur();
  next(), next(), next();
  expect_op("(", "after T.allocate_const");
  expect_op("[", "for the values of T.allocate_const (a list)");
  std::vector<std::pair<const Token*, Expr>> values;
  while (!is_op("]")) {
    const Token& at = cur();
    values.emplace_back(&at, parse_expr().e);
    if (!is_op(",")) break;
    next();
  }
  expect_op("]", "to close the values of T.allocate_const");
  expect_op(",", "after the values of T.allocate_const");
  ConstValues c;
  c.spec.dtype = parse_dtype_string("as the element type of T.allocate_const");
  expect_op(",", "after the element type of T.allocate_const");
  c.spec.shape = parse_shape();
  expect_op(")", "to close T.allocate_const(...)");
  if (!c.spec.dtype.is_integer() && !c.spec.dtype.is_float())
    fail(t_tok, "T.allocate_const holds numbers, not " + c.spec.dtype.str());
  int64_t count = 1;
  for (const Expr& d : c.spec.shape) {
    const int64_t* n = as_const_int(d);
    if (!n) fail(t_tok, "the extents of T.allocate_const must be constants");
    count *= *n;
  }
  if (static_cast<int64_t>(values.size()) != count)
    fail(t_tok, "T.allocate_const has " + std::to_string(values.size()) + " values for " + std::to_string(count) +
                    " elements");
  const bool is_float = c.spec.dtype.is_float();
  for (const auto& [at, v] : values) {
    const int64_t* i = as_const_int(v);
    const auto* f = as<FloatImmNode>(v);
    if (i && !v->dtype.is_bool())
      is_float ? c.floats.push_back(static_cast<double>(*i)) : c.ints.push_back(*i);
    else if (f && is_float)
      c.floats.push_back(f->value);
    else
      fail(*at, std::string("a value of T.allocate_const must be ") + (is_float ? "a number" : "an integer"));
  }
  c.spec.elem_offset = IntImm(DataType::Int(32), 0, span(t_tok));
  return c;
}

// `name = T.allocate_const(...)` for the rest of the block, or `with T.allocate_const(...)
// as name:` (at T) for `with_tok`'s block: the name stands for the constant buffer's
// pointer and its buffer, as for T.allocate.
Stmt Parser::parse_allocate_const(const Token* name, const Token* with_tok) {
  ConstValues c = parse_const_values();
  if (with_tok) {
    expect_keyword("as", "after T.allocate_const(...)");
    name = &expect_name("after 'as'");
  } else {
    expect_newline("after statement");
  }
  Buffer buf = make_buffer(name->text, span(*name), std::move(c.spec));
  size_t mark = scope_mark();
  bind(name->text, Binding{buf->data, buf, false});
  Stmt body = with_tok ? parse_block(*with_tok, "with header") : parse_rest(*name);
  pop_scope(mark);
  return AllocateConst(buf, std::move(c.ints), std::move(c.floats), body, span(with_tok ? *with_tok : *name));
}

// `T.alloc_buffer(shape, dtype, scope=...)` or `T.allocate([extent], dtype, scope)`.
Buffer Parser::parse_alloc_call(const Token& name, std::string* scope) {
  const Token& t_tok = cur();
  const std::string fn = ahead(2).text;
  next(), next(), next();
  expect_op("(", "after T." + fn);
  BufferSpec spec = parse_buffer_args(true, t_tok);
  *scope = spec.scope;
  return make_buffer(name.text, span(name), std::move(spec));
}

// The parenthesized part of a loop header: bounds, annotations=, step= and thread=.
void Parser::parse_loop_args(LoopHeader* h, const Token& iter_tok) {
  expect_op("(", "after loop kind");
  while (!is_op(")")) {
    if (cur().kind == TokKind::kName && tok_is_op(ahead(1), "=") && !h->grid) {
      const Token& kw = next();
      next();
      if (kw.text == "annotations") {
        h->annotations = parse_dict();
      } else if (kw.text == "thread" && h->kind == ForKind::kThreadBinding) {
        h->thread = expect_string("for thread=");
      } else if (kw.text == "step") {
        h->step_tok = &kw;
        h->step = parse_expr();
      } else {
        fail(kw, "unknown loop argument '" + kw.text + "' (expected annotations=, step= or thread=)");
      }
    } else if (h->kind == ForKind::kThreadBinding && cur().kind == TokKind::kString) {
      h->thread = next().text;  // T.thread_binding(0, 32, "threadIdx.x"): the tag positionally
    } else {
      h->args.push_back(parse_expr());
    }
    if (!is_op(",")) break;
    next();
  }
  expect_op(")", "to close the loop range");
  if (h->kind == ForKind::kThreadBinding && h->thread.empty())
    fail(iter_tok, "T.thread_binding needs thread=\"threadIdx.x\" (or another thread tag)");
}

// `range` or `T.<kind>` after `in`: the loop kind (or T.grid) into `h`.
void Parser::parse_loop_kind(LoopHeader* h, const Token& iter_tok) {
  if (is_name("range")) {
    next();
    return;
  }
  if (!is_name("T") || !tok_is_op(ahead(1), "."))
    fail(iter_tok, "expected range(...) or T.serial/T.grid/... after 'in', found " + describe(iter_tok));
  next(), next();
  const Token& kind = expect_name("after 'T.'");
  if (kind.text == "serial")
    h->kind = ForKind::kSerial;
  else if (kind.text == "unroll")
    h->kind = ForKind::kUnrolled;
  else if (kind.text == "parallel")
    h->kind = ForKind::kParallel;
  else if (kind.text == "vectorized")
    h->kind = ForKind::kVectorized;
  else if (kind.text == "grid")
    h->grid = true;
  else if (kind.text == "thread_binding")
    h->kind = ForKind::kThreadBinding;
  else
    fail(iter_tok, "unknown loop kind 'T." + kind.text + "'",
         did_you_mean(kind.text, {"serial", "unroll", "parallel", "vectorized", "grid", "thread_binding"}, "T."));
}

// The (min, extent, type) of each loop variable from the header's arguments.
std::vector<Parser::LoopRange> Parser::loop_ranges(const LoopHeader& h, const std::vector<const Token*>& targets,
                                                   const Token& iter_tok) {
  std::vector<LoopRange> ranges;
  if (h.grid) {
    if (h.args.size() != targets.size())
      fail(iter_tok, "T.grid has " + std::to_string(h.args.size()) + (h.args.size() == 1 ? " extent" : " extents") +
                         " but the loop has " + std::to_string(targets.size()) +
                         (targets.size() == 1 ? " variable" : " variables"));
    for (auto& a : h.args) {
      Expr ext = loop_bound(a, iter_tok);
      ranges.push_back({IntImm(ext->dtype, 0, ext->span), ext, ext->dtype});
    }
    return ranges;
  }
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
  return ranges;
}

// step=s: a loop over k in [0, ceil((stop - start) / s)) with i = start + k * s
// bound inside, which is the loop every backend already runs. The step's constant, or
// nullptr for none or 1.
Expr Parser::loop_step(const LoopHeader& h, DataType type) {
  if (!h.step_tok) return nullptr;
  Expr step = loop_bound(h.step, *h.step_tok);
  const int64_t* c = as_const_int(step);
  if (!c || *c <= 0) fail(*h.step_tok, "step= must be a positive integer constant");
  if (step->dtype != type) step = IntImm(type, *c, step->span);
  return *c == 1 ? nullptr : step;
}

// Rewrites the loop over `*var` with `step` into one over a unit-step counter.
void Parser::apply_loop_step(const Expr& step, const Token& step_tok, Var* var, LoopRange* range, Stmt* body) {
  const Span at = span(step_tok);
  Var k = MakeVar((*var)->name + "_step", range->type, at);
  Expr value = Binary(ExprKind::Add, range->min, Binary(ExprKind::Mul, k, step, at), at);
  *body = LetStmt(*var, value, *body, at);
  Expr one = IntImm(range->type, 1, at);
  Expr ext = Binary(ExprKind::FloorDiv, Binary(ExprKind::Add, range->extent, Binary(ExprKind::Sub, step, one, at), at),
                    step, at);
  if (const int64_t* e = as_const_int(range->extent))
    ext = IntImm(range->type, (*e + *as_const_int(step) - 1) / *as_const_int(step), at);
  *var = k;
  range->min = IntImm(range->type, 0, at);
  range->extent = ext;
}

Stmt Parser::parse_for() {
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
  parse_loop_kind(&h, iter_tok);
  parse_loop_args(&h, iter_tok);
  if (!is_op(":")) fail(cur(), "expected ':' after for header, found " + describe(cur()));
  std::vector<LoopRange> ranges = loop_ranges(h, targets, iter_tok);
  Expr step = loop_step(h, ranges[0].type);
  size_t mark = scope_mark();
  std::vector<Var> vars;
  for (size_t i = 0; i < targets.size(); ++i) {
    Var v = MakeVar(targets[i]->text, ranges[i].type, span(*targets[i]));
    vars.push_back(v);
    bind(targets[i]->text, Binding{v, nullptr, false});
  }
  Stmt body = parse_loop_body(for_tok, "for header");
  pop_scope(mark);
  if (step) apply_loop_step(step, *h.step_tok, &vars[0], &ranges[0], &body);
  for (size_t i = vars.size(); i-- > 0;) {
    auto loop = std::make_shared<ForNode>(vars[i], ranges[i].min, ranges[i].extent, h.kind, body,
                                          span(i == 0 ? for_tok : *targets[i]));
    loop->thread_tag = h.thread;
    if (i == 0) loop->annotations = h.annotations;
    body = loop;
  }
  return body;
}

Expr Parser::loop_bound(PExpr p, const Token& at) {
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
Expr Parser::range_extent(const Expr& start, const Expr& stop, const Span& s) {
  const int64_t* a = as_const_int(start);
  const int64_t* b = as_const_int(stop);
  if (a && b) return IntImm(start->dtype, *b - *a, stop->span);
  if (const auto* add = as<AddNode>(stop))
    if (structural_equal(add->a, start)) return add->b;
  if (a && *a == 0) return stop;
  return Binary(ExprKind::Sub, stop, start, s);
}

Stmt Parser::parse_if() {
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

Stmt Parser::parse_assert() {
  const Token& tok = next();
  PExpr c = parse_expr();
  std::string msg;
  if (is_op(",")) {
    next();
    msg = is_op("(") ? parse_assert_tuple() : expect_string("as assert message");
  }
  expect_newline("after assert");
  Stmt body = parse_rest(tok);
  return AssertStmt(c.e, msg, body, span(tok));
}

// TVM's newer message form `("RuntimeError", ["part", ...])`: the parts joined, after
// "Kind: " for a kind other than RuntimeError.
std::string Parser::parse_assert_tuple() {
  expect_op("(", "for the assert message");
  std::string kind = expect_string("as the error kind of the assert message");
  expect_op(",", "after the error kind");
  expect_op("[", "for the parts of the assert message");
  std::string msg = kind == "RuntimeError" ? "" : kind + ": ";
  while (!is_op("]")) {
    msg += expect_string("as a part of the assert message");
    if (!is_op(",")) break;
    next();
  }
  expect_op("]", "to close the parts of the assert message");
  expect_op(")", "to close the assert message");
  return msg;
}

// After `T.launch_thread`: `(x, n)` for a thread variable x from T.env_thread.
Parser::ScopeHeader Parser::parse_launch_header() {
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
  return {thread, "thread_extent", extent.e};
}

// `with T.launch_thread("threadIdx.x", n) as x:` (after T.launch_thread): a new thread
// variable x for the block.
Stmt Parser::parse_launch_as(const Token& with_tok) {
  expect_op("(", "after T.launch_thread");
  const std::string tag = expect_string("as the thread tag, e.g. \"threadIdx.x\"");
  expect_op(",", "after the thread tag of T.launch_thread");
  PExpr extent = parse_expr();
  expect_op(")", "to close T.launch_thread(...)");
  if (extent.bare) extent = promote_to(extent, DataType::Int(32));
  expect_keyword("as", "after T.launch_thread(...)");
  const Token& name = expect_name("after 'as'");
  size_t mark = scope_mark();
  if (lookup(name.text)) fail(name, "cannot bind '" + name.text + "': it is already defined");
  Var v = thread_var(name, tag);
  Stmt body = parse_block(with_tok, "with header");
  pop_scope(mark);
  return AttrStmt(v, "thread_extent", extent.e, body, span(with_tok));
}

// After `T.attr`: `(node, "key", value)`. TVM's tests also launch a thread with its
// IterVar as the node, `T.attr(T.iter_var(x, T.Range(0, n), "ThreadIndex", "tag"),
// "thread_extent", n)`: that is T.launch_thread(x, n), x a thread variable of the tag
// (the one T.env_thread declared, or a new one).
Parser::ScopeHeader Parser::parse_attr_header() {
  expect_op("(", "after T.attr");
  const Token& node_tok = cur();
  std::optional<IterVarNode> iter;
  PExpr node;
  if (at_t_attr("iter_var") && tok_is_op(ahead(3), "("))
    iter = parse_iter_var();
  else if (is_op("["))
    node.e = parse_buffer_list();
  else
    node = parse_expr();
  expect_op(",", "after attribute node");
  std::string key = expect_string("as attribute key");
  expect_op(",", "after attribute key");
  PExpr value = parse_expr();
  if (is_op(",") && tok_is_op(ahead(1), ")")) next();  // a call wrapped over lines
  expect_op(")", "to close T.attr(...)");
  if (iter) {
    if (iter->kind != "ThreadIndex" || key != "thread_extent")
      fail(node_tok, "T.iter_var(..., \"" + iter->kind + "\", ...) as the node of T.attr(..., \"" + key +
                         "\", ...) is an iteration variable of TVM's schedule (a TE IterVar): microtir reads "
                         "only launched threads, T.iter_var(x, dom, \"ThreadIndex\", \"threadIdx.x\") under "
                         "\"thread_extent\" (T.launch_thread(x, n))");
    if (!iter->name)
      fail(node_tok, "the thread variable of T.iter_var needs a name, e.g. T.iter_var(threadIdx_x, ...)");
    node.e = thread_var(*iter->name, iter->tag);
    if (value.bare) value = promote_to(value, node.e->dtype);
  }
  return {node.e, key, value.e};
}

// `[B, A]`, TVM's array of buffers as the node of buffer_bind_scope: kept as
// T.tvm_tuple(B.data, A.data), a carried intrinsic, and printed back as the list.
Expr Parser::parse_buffer_list() {
  const Token& open = next();
  std::vector<Expr> data;
  while (!is_op("]")) {
    const Token& name = expect_name("as a buffer in the list");
    const Binding* b = lookup(name.text);
    if (!b || !b->buffer) fail(name, "'" + name.text + "' is not a buffer; the list of T.attr's node holds buffers");
    data.push_back(b->buffer->data);
    if (!is_op(",")) break;
    next();
  }
  expect_op("]", "to close the list of buffers");
  if (data.empty()) fail(open, "the list of buffers is empty");
  return Call(DataType::Handle(), "tvm_tuple", std::move(data), {}, span(open));
}

// `T.iter_var(x, dom, "Kind", "tag")` (after the node's first token): x names the
// variable (T.int32() for an anonymous one); the domain is not kept, T.launch_thread
// prints only the extent, as TVM does.
Parser::IterVarNode Parser::parse_iter_var() {
  next(), next(), next();
  expect_op("(", "after T.iter_var");
  IterVarNode iter;
  if (cur().kind == TokKind::kName && tok_is_op(ahead(1), ","))
    iter.name = &next();
  else
    skip_balanced_until_comma();  // T.int32(): an anonymous variable
  expect_op(",", "after the variable of T.iter_var");
  skip_balanced_until_comma();  // the domain: T.Range(0, n), (0, n) or None
  expect_op(",", "after the domain of T.iter_var");
  iter.kind = expect_string("as the iteration kind of T.iter_var (\"ThreadIndex\", \"DataPar\", ...)");
  expect_op(",", "after the iteration kind of T.iter_var");
  iter.tag = expect_string("as the thread tag of T.iter_var");
  expect_op(")", "to close T.iter_var(...)");
  return iter;
}

// The thread variable `name` of `tag`: the one in scope (from T.env_thread), or a new
// one bound for the rest of the function's block.
Var Parser::thread_var(const Token& name, const std::string& tag) {
  if (const Binding* b = lookup(name.text)) {
    if (!b->var || b->var->thread_tag != tag)
      fail(name, "'" + name.text + "' is not a thread variable of '" + tag + "'");
    return b->var;
  }
  auto v = std::make_shared<VarNode>(name.text, DataType::Int(32), span(name));
  v->thread_tag = tag;
  bind(name.text, Binding{v, nullptr, false});
  return v;
}

// `T.attr(node, "key", value)` or `T.launch_thread(x, n)` as a statement of its own:
// TVM's concise form, whose body is the rest of the block.
Stmt Parser::parse_concise_scope() {
  const Token& t_tok = cur();
  next(), next();
  const bool attr = next().text == "attr";
  ScopeHeader h = attr ? parse_attr_header() : parse_launch_header();
  expect_newline("after statement");
  return AttrStmt(h.node, h.key, h.value, parse_rest(t_tok), span(t_tok));
}

// `with T.LetStmt(v) as x:`, `with T.LetStmt(v, T.handle("float32")) as x:` (the type TVM
// prints for a pointer) and `with T.LetStmt(v, var=x):`, TVM's let of a variable declared
// before it (`x = T.int32()`), which binds that variable for the body.
Stmt Parser::parse_let_scope(const Token& with_tok) {
  expect_op("(", "after T.LetStmt");
  const Token& value_tok = cur();
  PExpr v = parse_expr();
  std::optional<TypeAnn> ann;
  Var declared;
  while (is_op(",")) {
    next();
    if (is_op(")")) break;
    if (!is_name("var") || !tok_is_op(ahead(1), "=")) {
      ann = parse_type_ann();
      continue;
    }
    next(), next();
    const Token& var_tok = expect_name("for var=");
    const Binding* b = lookup(var_tok.text);
    if (!b || !b->var || b->buffer)
      fail(var_tok, "var= of T.LetStmt names a variable declared before it, e.g. " + var_tok.text + " = T.int32()");
    declared = b->var;
  }
  expect_op(")", "to close T.LetStmt(...)");
  const DataType t = declared ? declared->dtype : ann ? ann->type : v.e->dtype;
  v = promote_to(v, t);
  if (v.e->dtype != t) fail(value_tok, "the value of T.LetStmt is " + v.e->dtype.str() + ", but the variable is " + t.str());
  size_t mark = scope_mark();
  Var var = declared;
  if (!var) {
    expect_keyword("as", "after T.LetStmt(...)");
    const Token& name = expect_name("after 'as'");
    var = ann ? ann->make_var(name.text, span(name)) : MakeVar(name.text, t, span(name));
    bind(name.text, Binding{var, nullptr, false});
  }
  Stmt body = parse_block(with_tok, "with header");
  pop_scope(mark);
  return LetStmt(var, v.e, body, span(with_tok));
}

// `with T.attr(node, "key", value):` and the nested forms of scoped statements the
// printer uses when such a statement is followed by others in the same block.
Stmt Parser::parse_with() {
  const Token& with_tok = next();
  const Token& t_tok = cur();
  if (!is_name("T") || !tok_is_op(ahead(1), ".")) fail(cur(), "expected T.attr(...) after 'with'");
  next(), next();
  const Token& what = expect_name("after 'T.'");
  if (is_block_construct(what.text)) fail(t_tok, kBlockRefusal);
  if (what.text == "launch_thread" && cur().kind == TokKind::kOp && ahead(1).kind == TokKind::kString)
    return parse_launch_as(with_tok);
  if (what.text == "launch_thread" || what.text == "attr") {
    ScopeHeader h = what.text == "attr" ? parse_attr_header() : parse_launch_header();
    Stmt body = parse_block(with_tok, "with header");
    return AttrStmt(h.node, h.key, h.value, body, span(with_tok));
  }
  if (what.text == "allocate_const") {
    pos_ -= 3;  // back to T: parse_const_values reads the whole call
    return parse_allocate_const(nullptr, &with_tok);
  }
  if (what.text == "realize") return parse_realize(t_tok, [&] { return parse_block(with_tok, "with header"); });
  if (what.text == "Assert") {
    expect_op("(", "after T.Assert");
    PExpr c = parse_expr();
    expect_op(",", "after assert condition");
    std::string msg = expect_string("as assert message");
    expect_op(")", "to close T.Assert(...)");
    Stmt body = parse_block(with_tok, "with header");
    return AssertStmt(c.e, msg, body, span(with_tok));
  }
  if (what.text == "LetStmt") return parse_let_scope(with_tok);
  if (what.text == "decl_buffer" || what.text == "alloc_buffer" || what.text == "allocate") {
    // A view of existing data (decl_buffer, which may name it) or new memory in a scope.
    const bool view = what.text == "decl_buffer";
    expect_op("(", "after T." + what.text);
    // The name comes after `as`: parse the declaration first, build the buffer after.
    BufferSpec spec = parse_buffer_args(/*allow_scope=*/!view, t_tok, /*allow_data=*/view);
    const std::string scope = spec.scope;
    expect_keyword("as", "after T." + what.text + "(...)");
    const Token& name = expect_name("after 'as'");
    Buffer buf = make_buffer(name.text, span(name), std::move(spec));
    size_t mark = scope_mark();
    bind(name.text, Binding{nullptr, buf, false});
    Stmt body = parse_block(with_tok, "with header");
    pop_scope(mark);
    return view ? DeclBuffer(buf, body, span(with_tok)) : Allocate(buf, scope, body, span(with_tok));
  }
  fail(t_tok, "unknown 'with' form 'T." + what.text + "'",
       did_you_mean(what.text, {"attr", "Assert", "LetStmt", "alloc_buffer", "allocate", "decl_buffer"}, "T."));
}

}  // namespace script_parser
}  // namespace mtir
