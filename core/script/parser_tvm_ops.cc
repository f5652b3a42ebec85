// The rest of TVM's `T.*` vocabulary: TVM's node constructors (T.Div, T.FloorMod,
// T.EQ, ...), T.ceildiv as TVM builds it, buffer fields (A.shape[0], A.elem_offset,
// A.strides[1]), and the intrinsics of ir/tvm_intrinsics.def, typed from that table.
#include "ir/tvm_intrinsics.h"
#include "script/parser_internal.h"

namespace mtir {
namespace script_parser {

namespace {

// TVM's expression node constructors, as TVM's tests write them: T.Div(a, b) is a / b.
struct NodeConstructor {
  const char* name;
  ExprKind kind;
  bool comparison;
};
constexpr NodeConstructor kNodeConstructors[] = {
    {"Add", ExprKind::Add, false},  {"Sub", ExprKind::Sub, false},           {"Mul", ExprKind::Mul, false},
    {"Div", ExprKind::Div, false},  {"Mod", ExprKind::Mod, false},           {"FloorDiv", ExprKind::FloorDiv, false},
    {"FloorMod", ExprKind::FloorMod, false}, {"Min", ExprKind::Min, false},  {"Max", ExprKind::Max, false},
    {"EQ", ExprKind::EQ, true},     {"NE", ExprKind::NE, true},              {"LT", ExprKind::LT, true},
    {"LE", ExprKind::LE, true},     {"GT", ExprKind::GT, true},              {"GE", ExprKind::GE, true},
};

// The strides of a compact row-major buffer: the product of the later extents.
std::vector<Expr> compact_strides(const Buffer& b, const Span& at) {
  std::vector<Expr> strides(b->shape.size());
  Expr product;
  for (size_t k = b->shape.size(); k-- > 0;) {
    strides[k] = product ? product : IntImm(b->shape[k]->dtype, 1, at);
    const int64_t *p = product ? as_const_int(product) : nullptr, *d = as_const_int(b->shape[k]);
    if (!product) product = b->shape[k];
    else if (p && d) product = IntImm(product->dtype, *p * *d, at);
    else product = Binary(ExprKind::Mul, product, b->shape[k], at);
  }
  return strides;
}

}  // namespace

bool Parser::parse_tvm_ops(const Token& t_tok, const Token& fn, PExpr* out) {
  for (const auto& c : kNodeConstructors) {
    if (fn.text != c.name) continue;
    expect_op("(", "after T." + fn.text);
    std::vector<PExpr> args = parse_args(fn, nullptr);
    check_arity(t_tok, fn, args, 2);
    *out = c.comparison ? compare(c.kind, args[0], args[1], t_tok) : arith(c.kind, args[0], args[1], t_tok);
    return true;
  }
  if (fn.text == "ceildiv") {
    *out = parse_ceildiv(t_tok, fn);
    return true;
  }
  if (const TvmIntrinsic* in = lookup_tvm_intrinsic(fn.text)) {
    *out = parse_tvm_intrinsic(t_tok, fn, *in);
    return true;
  }
  return false;
}

// T.ceildiv(a, b) as TVM constructs it: (a + b - 1) // b on integers, ceil(a / b) on
// floats; nothing of the call remains.
PExpr Parser::parse_ceildiv(const Token& t_tok, const Token& fn) {
  expect_op("(", "after T.ceildiv");
  std::vector<PExpr> args = parse_args(fn, nullptr);
  check_arity(t_tok, fn, args, 2);
  unify(args[0], args[1], ",", t_tok, "arguments of T.ceildiv");
  PExpr a = promote_to(args[0], args[0].e->dtype), b = promote_to(args[1], args[1].e->dtype);
  const DataType t = a.e->dtype;
  if (t.is_float()) {
    PExpr q = arith(ExprKind::Div, a, b, t_tok);
    return {Call(t, "ceil", {q.e}, {}, span(t_tok)), false};
  }
  if (!t.is_integer()) fail(t_tok, "T.ceildiv needs numbers, got " + t.str());
  PExpr one{IntImm(t, 1, span(t_tok)), false};
  PExpr top = arith(ExprKind::Sub, arith(ExprKind::Add, a, b, t_tok), one, t_tok);
  return arith(ExprKind::FloorDiv, top, b, t_tok);
}

// A call of ir/tvm_intrinsics.def after `T.name`: its arguments as written (strings
// included), its type from the table's Result column.
PExpr Parser::parse_tvm_intrinsic(const Token& t_tok, const Token& fn, const TvmIntrinsic& in) {
  expect_op("(", "after T." + fn.text);
  Attrs attrs;
  std::vector<PExpr> args = parse_args(fn, &attrs);
  // dtype="handle" (TVM's keyword form) rides in the call's attributes, so it prints back.
  if (dtype_kw_) attrs["dtype"] = dtype_kw_->str();
  return make_tvm_intrinsic(t_tok, fn, in, args, std::move(attrs));
}

PExpr Parser::make_tvm_intrinsic(const Token& t_tok, const Token& fn, const TvmIntrinsic& in,
                                 std::vector<PExpr>& args, Attrs attrs) {
  std::vector<Expr> es;
  for (auto& a : args) es.push_back(a.bare ? promote_to(a, a.e->dtype).e : a.e);
  if (std::string why; !tvm_intrinsic_arity_ok(in, es.size(), &why)) fail(t_tok, why);
  using R = TvmIntrinsic::Result;
  DataType t = DataType::Int(32);
  if (in.result == R::kBool) t = DataType::Bool();
  if (in.result == R::kHandle) t = DataType::Handle();
  if (in.result == R::kArg) t = es[0]->dtype;
  if (in.result == R::kFirst || in.result == R::kLast) {
    const auto* s = as<StringImmNode>(in.result == R::kFirst ? es.front() : es.back());
    auto parsed = s ? DataType::parse(s->value, /*allow_lanes=*/true) : std::nullopt;
    if (!parsed)
      fail(t_tok, "T." + fn.text + " needs its result type as a string " +
                      (in.result == R::kFirst ? "first" : "last") + " (e.g. \"int32\")");
    t = *parsed;
  }
  if (auto kw = attrs.find("dtype"); kw != attrs.end() && std::holds_alternative<std::string>(kw->second)) {
    auto parsed = DataType::parse(std::get<std::string>(kw->second), /*allow_lanes=*/true);
    if (!parsed) fail(t_tok, "unknown type '" + std::get<std::string>(kw->second) + "' in dtype=");
    t = *parsed;
  }
  if (fn.text == "assume" && !es[0]->dtype.is_bool())
    fail(t_tok, "T.assume needs a bool condition, got " + es[0]->dtype.str());
  return {Call(t, fn.text, std::move(es), std::move(attrs), span(t_tok)), false};
}

// TVM's generic call of an op by its registered name, T.Call("int32",
// "tir.tvm_throw_last_error", [args]): the call T.name(args) of our builtin or TVM
// intrinsic tables, which the printer writes by name as TVM does; the type written
// must be the call's.
PExpr Parser::parse_generic_call(const Token& t_tok, bool listed) {
  const std::string what = listed ? "T.Call" : "T.call_intrin";
  expect_op("(", "after " + what);
  const Token& type_tok = cur();
  const DataType declared = parse_dtype_string("as the result type of " + what);
  expect_op(",", "after the type in " + what);
  Token fn = cur();
  fn.text = expect_string("as the op name of " + what + " (e.g. \"tir.exp\")");
  if (fn.text.rfind("tir.", 0) == 0) fn.text = fn.text.substr(4);
  std::vector<PExpr> args;
  if (listed) {  // T.Call(dtype, "tir.name", [args])
    expect_op(",", "after the op name in T.Call");
    expect_op("[", "to open the arguments of T.Call (a list)");
    while (!is_op("]")) {
      args.push_back(parse_expr());
      if (!is_op(",")) break;
      next();
    }
    expect_op("]", "to close the arguments of T.Call");
  } else {  // T.call_intrin(dtype, "tir.name", *args)
    while (is_op(",") && !tok_is_op(ahead(1), ")")) next(), args.push_back(parse_expr());
    if (is_op(",")) next();
  }
  expect_op(")", "to close " + what + "(...)");
  const OpInfo* op = lookup_op(fn.text);
  const TvmIntrinsic* in = lookup_tvm_intrinsic(fn.text);
  PExpr out;
  if (op && op->kind == OpInfo::Kind::kCallExtern) {
    std::vector<Expr> es;
    for (auto& a : args) es.push_back(a.bare ? promote_to(a, a.e->dtype).e : a.e);
    out = {Call(declared, "call_extern", std::move(es), {}, span(t_tok)), false};
  } else if (op) {
    out = parse_op_call(t_tok, fn, *op, args, {});
  } else if (in) {
    out = make_tvm_intrinsic(t_tok, fn, *in, args, {});
  } else {
    fail(fn, what + " of 'tir." + fn.text + "': unknown intrinsic 'T." + fn.text + "'",
         did_you_mean(fn.text, t_expr_names(), "T."));
  }
  if (out.e->dtype != declared)
    fail(type_tok, what + " says " + declared.str() + ", but T." + fn.text + " here is " + out.e->dtype.str());
  return out;
}

// `A.data`, `A.elem_offset`, `A.shape[k]`, `A.strides[k]` after `A.`: the buffer's
// pointer, or the expression it was declared with.
Expr Parser::parse_buffer_field(const Token& name, const Buffer& b) {
  const Token& field = expect_name("after '.'");
  if (field.text == "data") return b->data;
  if (field.text == "elem_offset") {
    if (!b->elem_offset) return IntImm(DataType::Int(32), 0, span(field));
    return b->elem_offset;
  }
  if (field.text == "vload") {
    VectorAccess a = parse_vector_access(name, b, false);
    auto load = std::make_shared<BufferLoadNode>(BufferLoad(b, a.indices)->dtype, b, a.indices, span(name));
    load->predicate = a.predicate;
    return load;
  }
  if (field.text == "vstore") fail(field, "A.vstore(...) is a statement, not a value");
  if (field.text != "shape" && field.text != "strides")
    fail(field, "buffer '" + name.text + "' has no field '" + field.text +
                    "' (.data, .shape, .strides, .elem_offset, .vload and .vstore are known)");
  std::vector<Expr> dims = field.text == "shape" ? b->shape : b->strides;
  if (field.text == "strides" && dims.empty()) dims = compact_strides(b, span(field));
  expect_op("[", "after ." + field.text + " (index it: ." + field.text + "[0])");
  const Token& at = cur();
  const Expr index = parse_index_expr();  // kept: as_const_int points into it
  const int64_t* k = as_const_int(index);
  expect_op("]", "to close ." + field.text + "[...]");
  if (!k || *k < 0 || static_cast<size_t>(*k) >= dims.size())
    fail(at, "buffer '" + name.text + "' has " + std::to_string(dims.size()) + " dimensions; index ." + field.text +
                 " with a constant below that");
  return dims[*k];
}

// `A.vload([indices], predicate=p)` / `A.vstore([indices], value, predicate=p)` after the
// method's name: TVM's vector access, its predicate a mask of the lanes (bool, as many
// lanes as the access). An optional dtype string, as TVM's Buffer.vload takes it, must be
// the access's own.
Parser::VectorAccess Parser::parse_vector_access(const Token& name, const Buffer& b, bool store) {
  VectorAccess a;
  expect_op("(", "after ." + std::string(store ? "vstore" : "vload"));
  expect_op("[", "for the list of indices");
  while (!is_op("]")) {
    a.indices.push_back(parse_index_or_slice());
    if (!is_op(",")) break;
    next();
  }
  expect_op("]", "to close the list of indices");
  if (a.indices.size() != b->ndim())
    fail(name, "buffer '" + name.text + "' has " + std::to_string(b->ndim()) + " dimension(s) but is indexed with " +
                   std::to_string(a.indices.size()));
  const DataType t = BufferLoad(b, a.indices)->dtype;
  if (store) {
    expect_op(",", "after the indices of .vstore (the value comes next)");
    const Token& at = cur();
    PExpr v = promote_to(parse_expr(), t);
    if (v.e->dtype != t) fail(at, "the value stored is " + v.e->dtype.str() + ", but the access is " + t.str());
    a.value = v.e;
  }
  while (is_op(",")) {
    next();
    if (is_op(")")) break;
    const Token& at = cur();
    if (cur().kind == TokKind::kString) {
      if (DataType::parse(cur().text) != t) fail(at, "the access is " + t.str() + ", not " + cur().text);
      next();
      continue;
    }
    if (!is_name("predicate") || !tok_is_op(ahead(1), "=")) fail(at, "expected predicate=... or a dtype string");
    next(), next();
    const Token& p_at = cur();
    a.predicate = parse_expr().e;
    if (a.predicate->dtype != DataType::Bool().with_lanes(t.lanes()))
      fail(p_at, "the predicate of this access must be " + DataType::Bool().with_lanes(t.lanes()).str() + ", not " +
                     a.predicate->dtype.str());
  }
  expect_op(")", "to close the vector access");
  return a;
}

// An unknown name; `Other.sub(...)` outside the class `Other` is named as what it is.
void Parser::fail_undefined(const Token& name) {
  if (tok_is_op(cur(), ".") && ahead(1).kind == TokKind::kName && tok_is_op(ahead(2), "(")) {
    if (name.text == module_name_) fail(name, "module '" + module_name_ + "' has no function '" + ahead(1).text + "'");
    if (module_name_.empty())
      fail(name, "'" + name.text + "." + ahead(1).text + "(...)' calls a function of a module, but this file has "
                 "no module; put the functions in an @I.ir_module class named '" + name.text + "'");
    fail(name, "undefined name '" + name.text + "' (the functions of this module are called as " + module_name_ +
                   "." + ahead(1).text + "(...))");
  }
  fail(name, "undefined name '" + name.text + "'");
}

// Every `def name(...) -> type:` directly in the class body, from the cursor (the first
// token of the body) to the class's end; the cursor is left where it was.
void Parser::scan_function_signatures() {
  const size_t start = pos_;
  int depth = 0;
  module_functions_.clear();
  for (; pos_ < toks_.size() && cur().kind != TokKind::kEof; ++pos_) {
    if (cur().kind == TokKind::kIndent) ++depth;
    if (cur().kind == TokKind::kDedent && --depth < 0) break;
    if (depth != 0 || !is_name("def") || ahead(1).kind != TokKind::kName) continue;
    const std::string name = ahead(1).text;
    pos_ += 2;
    int parens = 0;
    for (; cur().kind != TokKind::kEof; ++pos_) {
      if (is_op("(")) ++parens;
      if (is_op(")") && --parens == 0) break;
    }
    DataType ret = DataType::Void();
    if (tok_is_op(ahead(1), "->") && !tok_is_name(ahead(2), "None")) {
      pos_ += 2;
      ret = parse_type_annotation();
      --pos_;
    }
    module_functions_.emplace_back(name, ret);
  }
  pos_ = start;
}

// `Module.sub(` where Module is the class being parsed and sub one of its functions
// (the cursor is on the '.').
bool Parser::at_global_call(const Token& name) const {
  if (module_name_.empty() || name.text != module_name_ || !tok_is_op(cur(), ".") || !tok_is_op(ahead(2), "("))
    return false;
  for (const auto& f : module_functions_)
    if (f.first == ahead(1).text) return true;
  return false;
}

// `Module.sub(args...)`, after `Module`: the call_global builtin, typed by sub's return
// type; the arguments are checked against sub's parameters when the module is verified.
PExpr Parser::parse_global_call(const Token& name) {
  next();  // .
  const Token& fn = next();
  expect_op("(", "after " + name.text + "." + fn.text);
  std::vector<Expr> args = {StringImm(fn.text, span(fn))};
  for (PExpr& a : parse_args(fn, nullptr)) args.push_back(a.bare ? promote_to(a, a.e->dtype).e : a.e);
  DataType ret = DataType::Void();
  for (const auto& f : module_functions_)
    if (f.first == fn.text) ret = f.second;
  return {Call(ret, "call_global", std::move(args), {}, span(name)), false};
}

}  // namespace script_parser
}  // namespace mtir
