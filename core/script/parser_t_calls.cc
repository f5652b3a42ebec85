// The `T.*` vocabulary of the text format: T.call_tir, typed constants, TVM's sugar,
// T.access_ptr, T.call_extern, the vector constructors, T.Let and every builtin call.
#include <limits>
#include <optional>

#include "script/parser_internal.h"
#include "ir/reinterpret.h"
#include "ir/structural_equal.h"
#include "ir/visitor.h"

namespace mtir {
namespace script_parser {

// T.call_tir("callee", A, B[0:4, :], n) after '(': a buffer alone is all of it, an
// indexed buffer a rectangle (`lo:hi`, `:`, `lo:`, `:hi`, or one index `i` for
// extent 1), anything else a scalar.
Expr Parser::parse_call_tir(const Token& t_tok, const Token& fn) {
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
      args.push_back(parse_region(b->buffer));
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

// A region of `buf` (at its name): `A` (all of it) or `A[lo:hi, i, :]`, as the
// tir_region builtin (a load of its first element, then the extents).
Expr Parser::parse_region(const Buffer& buf) {
  const Token& t = next();
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
  return Call(DataType::Handle(), "tir_region", std::move(region), {}, span(t));
}

// One dimension of a region: its start and extent.
std::pair<Expr, Expr> Parser::parse_slice(const Expr& dim) {
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
std::vector<PExpr> Parser::parse_args(const Token& fn_tok, Attrs* attrs) {
  std::vector<PExpr> args;
  dtype_kw_.reset();
  while (!is_op(")")) {
    if (is_name("dtype") && tok_is_op(ahead(1), "=")) {
      next(), next();
      // dtype="void": a call made for its effect, T.call_packed("f", dtype="void")
      dtype_kw_ = cur().text == "void" ? (next(), DataType::Void()) : parse_dtype_string("for dtype=");
    } else if (is_name("attrs") && tok_is_op(ahead(1), "=")) {
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

void Parser::check_arity(const Token& at, const Token& fn, const std::vector<PExpr>& args, size_t n) {
  if (args.size() != n)
    fail(at, "T." + fn.text + " expects " + std::to_string(n) + (n == 1 ? " argument" : " arguments") + ", got " +
                 std::to_string(args.size()));
}

// A typed constant: T.int64(5), T.float32(0.5), T.float32("inf"), T.bool(True); of a
// value, a conversion: T.float32(i).
PExpr Parser::parse_typed_constant(const Token& t_tok, const Token& fn, DataType type) {
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
  } else if (!neg && (v.kind == TokKind::kName || tok_is_op(v, "("))) {
    // T.float32(i) of a value is TVM's conversion (x.astype("float32")): a Cast.
    PExpr x = parse_expr();
    if (x.bare) x = promote_to(x, x.e->dtype);
    out = x.e->dtype == type ? x.e : Cast(type, x.e, span(t_tok));
  } else {
    fail(v, "expected a literal constant of type " + type.str() + " in T." + fn.text + "(...), found " + describe(v));
  }
  expect_op(")", "to close T." + fn.text + "(...)");
  return {out, false};
}

// TVMScript calls that are another spelling of something we have (after `T.name`,
// before '('). False when `fn` is not one of them.
bool Parser::parse_tvm_sugar(const Token& t_tok, const Token& fn, PExpr* out) {
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
  if (name == "reinterpret") {
    *out = {parse_reinterpret(t_tok), false};
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
  return parse_tvm_ops(t_tok, fn, out);
}

// T.tvm_access_ptr(T.type_annotation("float32"), A.data, offset, extent, rw_mask): the
// address of element `offset` of a flat buffer over that pointer, T.address_of(A[offset]).
Expr Parser::parse_access_ptr(const Token& t_tok) {
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
  if (rest.size() != 3)
    fail(t_tok, "T.tvm_access_ptr takes a type, a pointer, an offset, an extent and an access mask");
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
Expr Parser::parse_call_extern(const Token& t_tok, const Token& fn) {
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
      type =
          cur().text == "void" ? (next(), DataType::Void()) : parse_dtype_string("as the result type of T." + fn.text);
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

// T.reinterpret("float32", x): the same bits as another type. TVM's builder also takes
// the type last as a keyword, T.reinterpret(T.uint64(0), dtype="handle") (its null
// pointer); both read to one call, printed type first as TVM prints it.
Expr Parser::parse_reinterpret(const Token& t_tok) {
  expect_op("(", "after T.reinterpret");
  const bool type_first = cur().kind == TokKind::kString || (tok_is_name(cur(), "T") && !tok_is_op(ahead(3), "("));
  std::optional<DataType> t;
  if (type_first) {
    t = parse_dtype_string("as the result type of T.reinterpret");
    expect_op(",", "after the type in T.reinterpret");
  }
  PExpr x = parse_expr();
  if (!type_first) {
    expect_op(",", "after the value in T.reinterpret(x, dtype=...)");
    if (!is_name("dtype") || !tok_is_op(ahead(1), "="))
      fail(cur(), "T.reinterpret needs its type, first or as dtype=\"...\", found " + describe(cur()));
    next(), next();
    t = parse_dtype_string("for dtype=");
  }
  expect_op(")", "to close T.reinterpret(...)");
  if (x.bare) x = promote_to(x, x.e->dtype);
  if (std::string why = reinterpret_refusal(x.e, *t); !why.empty()) fail(t_tok, why);
  return Call(*t, "reinterpret", {x.e}, {}, span(t_tok));
}

// `T.vscale() * k` or `k * T.vscale()`: k, else 0.
static int64_t vscale_multiple(const Expr& e) {
  const auto* mul = e->kind == ExprKind::Mul ? static_cast<const BinaryNode*>(e.get()) : nullptr;
  if (!mul) return 0;
  auto is_vscale = [](const Expr& x) {
    const auto* call = as<CallNode>(x);
    return call && !call->builtin && call->op == "vscale";
  };
  const int64_t* k = is_vscale(mul->a) ? as_const_int(mul->b) : is_vscale(mul->b) ? as_const_int(mul->a) : nullptr;
  return k ? *k : 0;
}

// The lanes argument of T.Ramp / T.Broadcast: an integer constant, or T.vscale() * k
// for TVM's scalable vectors (`*scalable` is set and k returned).
int Parser::parse_lanes(const Token& fn, bool* scalable) {
  const Token& at = cur();
  PExpr e = parse_expr();
  *scalable = false;
  if (int64_t k = vscale_multiple(e.e); k >= 1 && k <= DataType::kMaxLanes) {
    *scalable = true;
    return static_cast<int>(k);
  }
  const int64_t* c = as_const_int(e.e);
  struct FindsVscale : Visitor {
    bool found = false;
    void visit_Call(const CallNode* op) override {
      found = found || op->op == "vscale";
      Visitor::visit_Call(op);
    }
  } vscale;
  vscale.visit(e.e);
  if (vscale.found)  // TVM's scalable vectors have T.vscale() * k lanes
    fail(at, "T." + fn.text + " of a scalable vector needs T.vscale() * k lanes, with k a constant from 1 to " +
                 std::to_string(DataType::kMaxLanes));
  if (!c || *c < 2 || *c > DataType::kMaxLanes)
    fail(at, "T." + fn.text + " needs a constant number of lanes from 2 to " + std::to_string(DataType::kMaxLanes));
  return static_cast<int>(*c);
}

// T.float32x4(x): x converted to float32 and repeated over 4 lanes (TVM's cast).
PExpr Parser::parse_vector_constant(const Token& t_tok, const Token& fn, DataType t) {
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
  return {Broadcast(Cast(t.element_of(), v.e, span(t_tok)), t.lanes(), span(t_tok), t.is_scalable()), false};
}

PExpr Parser::parse_ramp(const Token& t_tok, const Token& fn) {
  expect_op("(", "after T." + fn.text);
  PExpr base = parse_expr();
  expect_op(",", "after the base of T." + fn.text);
  PExpr stride = parse_expr();
  expect_op(",", "after the stride of T." + fn.text);
  bool scalable = false;
  int lanes = parse_lanes(fn, &scalable);
  if (is_op(",")) next();  // a trailing comma, as TVM's tests wrap long calls
  expect_op(")", "to close T." + fn.text + "(...)");
  unify(base, stride, ",", t_tok, "the base and stride of T.Ramp");
  base = promote_to(base, base.e->dtype), stride = promote_to(stride, stride.e->dtype);
  if (!base.e->dtype.is_integer() || base.e->dtype.is_vector())
    fail(t_tok, "T." + fn.text + " needs a scalar integer base and stride, not " + base.e->dtype.str());
  return {Ramp(base.e, stride.e, lanes, span(t_tok), scalable), false};
}

PExpr Parser::parse_broadcast(const Token& t_tok, const Token& fn) {
  expect_op("(", "after T." + fn.text);
  PExpr v = parse_expr();
  expect_op(",", "after the value of T." + fn.text);
  bool scalable = false;
  int lanes = parse_lanes(fn, &scalable);
  if (is_op(",")) next();  // a trailing comma, as TVM's tests wrap long calls
  expect_op(")", "to close T." + fn.text + "(...)");
  v = promote_to(v, v.e->dtype);
  if (v.e->dtype.is_vector() || !(v.e->dtype.is_numeric() || v.e->dtype.is_bool()))
    fail(t_tok, "T." + fn.text + " repeats a scalar number, not " + v.e->dtype.str());
  return {Broadcast(v.e, lanes, span(t_tok), scalable), false};
}

// T.Shuffle([a, b], [0, 4, 1, 5]): lanes of the vectors laid end to end.
PExpr Parser::parse_shuffle(const Token& t_tok, const Token& fn) {
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
PExpr Parser::parse_let_expr(const Token& t_tok) {
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

// A call of the operator table's `op` (core/ir/op.h) with its arguments parsed: typed
// by the operator's kind (math, integer binary, if_then_else, builtin).
PExpr Parser::parse_op_call(const Token& t_tok, const Token& fn, const OpInfo& op_info, std::vector<PExpr>& args,
                            Attrs attrs) {
  const OpInfo* op = &op_info;
  const std::string& name = fn.text;
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
      // T.known_range has its first argument's type (builtins.def's Arg).
      const DataType result = op->result_rule == OpInfo::Result::kFirstArg && !es.empty() ? es[0]->dtype : op->result;
      return {Call(result, name, std::move(es), std::move(attrs), span(t_tok)), false};
    }
    case OpInfo::Kind::kCallExtern:
      break;
  }
  fail(t_tok, "unsupported intrinsic 'T." + name + "'");
}

PExpr Parser::parse_t_call() {
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
  if (name == "iter_var")
    fail(t_tok,
         "T.iter_var(...) stands only as the node of T.attr(..., \"thread_extent\", n), where it "
         "launches a thread (T.launch_thread)");
  if (auto vt = DataType::parse(name, /*allow_lanes=*/true); vt && vt->is_vector())
    return parse_vector_constant(t_tok, fn, *vt);
  if (name == "Ramp" || name == "ramp") return parse_ramp(t_tok, fn);
  if (name == "Broadcast" || name == "broadcast") return parse_broadcast(t_tok, fn);
  if (name == "Shuffle" || name == "shuffle") return parse_shuffle(t_tok, fn);
  if (name == "Let") return parse_let_expr(t_tok);
  if (name == "Call" || name == "call_intrin") return parse_generic_call(t_tok, name == "Call");
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
  return parse_op_call(t_tok, fn, *op, args, std::move(attrs));
}

}  // namespace script_parser
}  // namespace mtir
