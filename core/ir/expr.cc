#include "ir/expr.h"

#include "ir/buffer.h"

namespace mtir {

const char* expr_kind_name(ExprKind k) {
  switch (k) {
#define MTIR_EXPR(Name) \
  case ExprKind::Name: return #Name;
#include "ir/nodes.def"
  }
  return "?";
}

bool is_binary(ExprKind k) {
  switch (k) {
#define MTIR_BINARY(Name) case ExprKind::Name:
#include "ir/nodes.def"
    return true;
    default: return false;
  }
}

bool is_comparison(ExprKind k) {
  switch (k) {
#define MTIR_CMP(Name) case ExprKind::Name:
#include "ir/nodes.def"
    return true;
    default: return false;
  }
}

bool is_logical(ExprKind k) { return k == ExprKind::And || k == ExprKind::Or; }

Expr IntImm(DataType t, int64_t v, Span s) { return std::make_shared<IntImmNode>(t, wrap_int(t, v), std::move(s)); }
Expr FloatImm(DataType t, double v, Span s) { return std::make_shared<FloatImmNode>(t, v, std::move(s)); }
Expr StringImm(std::string v, Span s) { return std::make_shared<StringImmNode>(std::move(v), std::move(s)); }
Expr Bool(bool v, Span s) { return IntImm(DataType::Bool(), v ? 1 : 0, std::move(s)); }
Var MakeVar(std::string name, DataType t, Span s) { return std::make_shared<VarNode>(std::move(name), t, std::move(s)); }
Var MakePointerVar(std::string name, DataType pointee, std::string scope, Span s) {
  auto v = std::make_shared<VarNode>(std::move(name), DataType::Handle(), std::move(s));
  v->pointee = pointee;
  v->pointer_scope = std::move(scope);
  return v;
}

Expr Binary(ExprKind k, Expr a, Expr b, Span s) {
  DataType t = (is_comparison(k) || is_logical(k)) ? DataType::Bool().with_lanes(a->dtype.lanes()) : a->dtype;
  switch (k) {
#define MTIR_BINARY(Name) \
  case ExprKind::Name: return std::make_shared<Name##Node>(t, std::move(a), std::move(b), std::move(s));
#include "ir/nodes.def"
    default: break;
  }
  MTIR_ICHECK(false, std::string("not a binary node kind: ") + expr_kind_name(k));
}

Expr Not(Expr a, Span s) { return std::make_shared<NotNode>(std::move(a), std::move(s)); }
Expr Select(Expr c, Expr t, Expr f, Span s) {
  return std::make_shared<SelectNode>(std::move(c), std::move(t), std::move(f), std::move(s));
}
Expr Cast(DataType t, Expr v, Span s) { return std::make_shared<CastNode>(t, std::move(v), std::move(s)); }
Expr BufferLoad(Buffer b, std::vector<Expr> indices, Span s) {
  // A vector index (a Ramp) loads that many lanes.
  int lanes = 1;
  bool scalable = false;
  for (const auto& i : indices)
    if (i && i->dtype.lanes() > lanes) lanes = i->dtype.lanes(), scalable = i->dtype.is_scalable();
  DataType t = access_dtype(b, lanes, scalable);
  return std::make_shared<BufferLoadNode>(t, std::move(b), std::move(indices), std::move(s));
}
Expr Call(DataType t, std::string op, std::vector<Expr> args, Attrs attrs, Span s) {
  return std::make_shared<CallNode>(t, std::move(op), std::move(args), std::move(attrs), std::move(s));
}

Expr Ramp(Expr base, Expr stride, int lanes, Span s, bool scalable) {
  return std::make_shared<RampNode>(std::move(base), std::move(stride), lanes, std::move(s), scalable);
}
Expr Broadcast(Expr value, int lanes, Span s, bool scalable) {
  return std::make_shared<BroadcastNode>(std::move(value), lanes, std::move(s), scalable);
}
Expr Shuffle(std::vector<Expr> vectors, std::vector<int> indices, Span s) {
  DataType t = vectors.at(0)->dtype.element_of().with_lanes(static_cast<int>(indices.size()));
  return std::make_shared<ShuffleNode>(t, std::move(vectors), std::move(indices), std::move(s));
}
Expr Let(Var var, Expr value, Expr body, Span s) {
  return std::make_shared<LetNode>(std::move(var), std::move(value), std::move(body), std::move(s));
}

const int64_t* as_const_int(const Expr& e) {
  const auto* imm = as<IntImmNode>(e);
  return imm ? &imm->value : nullptr;
}

bool shift_needs_mask(const Expr& amount, int bits) {
  if (as_const_int(amount)) return false;
  // A conversion between integer types keeps a value in [0, bits) (bits <= 64).
  const auto* cast = as<CastNode>(amount);
  if (cast && cast->dtype.is_integer() && cast->dtype.bits() >= 8 && cast->value->dtype.is_integer())
    return shift_needs_mask(cast->value, bits);
  const auto* call = as<CallNode>(amount);
  if (!call || !call->is(Builtin::KnownRange) || call->args.size() != 3) return true;
  const int64_t *lo = as_const_int(call->args[1]), *hi = as_const_int(call->args[2]);
  return !(lo && hi && *lo >= 0 && *hi < bits);
}

DataType access_dtype(const Buffer& b, int lanes, bool scalable) {
  if (lanes == 1 && !scalable && b->dtype.is_vector()) return b->dtype;
  return scalable ? b->dtype.with_scalable_lanes(lanes) : b->dtype.with_lanes(lanes);
}

Buffer MakeBuffer(std::string name, DataType dtype, std::vector<Expr> shape, Span span) {
  auto b = std::make_shared<BufferNode>();
  b->data = MakeVar(name + "_data", DataType::Handle(), span);
  b->name = std::move(name);
  b->dtype = dtype;
  b->shape = std::move(shape);
  b->elem_offset = IntImm(DataType::Int(32), 0);
  b->span = std::move(span);
  return b;
}

bool const_num_elements(const Buffer& b, int64_t* out) {
  int64_t n = 1;
  for (const auto& e : b->shape) {
    const int64_t* v = as_const_int(e);
    if (!v) return false;
    n *= *v;
  }
  *out = n;
  return true;
}

}  // namespace mtir
