// The wasm emitter of one function: its definition, names and locals, conversions,
// memory accesses, the reuse of loaded values, SIMD128 (wat_function.h).
#include "codegen/wasm/wat_function.h"

namespace mtir {
namespace wat_codegen {

std::string FunctionEmitter::define(bool exported) {
  std::ostringstream head;
  head << "  (func " << ident(symbol_);
  if (exported) head << " (export \"" << symbol_ << "\")";
  for (size_t i = 0; i < func_->params.size(); ++i) {
    const Var& p = func_->params[i];
    const Buffer& b = func_->param_buffers[i];
    std::string ty = b ? "i32" : wasm_type(p->dtype, p->span);
    std::string name = fresh_name("p." + p->name);
    vars_[p.get()] = {ty, "(local.get " + name + ")"};
    if (b && b->data && b->data.get() != p.get()) vars_[b->data.get()] = {ty, "(local.get " + name + ")"};
    if (b && b->data) own_memory_.insert(b->data.get());
    if (b || p->dtype.is_handle()) own_memory_.insert(p.get());
    head << " (param " << name << " " << ty << ")";
  }
  head << " (result i32)";
  indent_ = 2;
  emit(func_->body);
  line("(i32.const 0)");
  std::ostringstream os;
  os << head.str() << "\n";
  for (const auto& [name, ty] : locals_)
    if (!unread_loads_.count(name)) os << "    (local " << name << " " << ty << ")\n";
  os << without_unread_tees(body_.str()) << "  )\n";
  return os.str();
}

std::string FunctionEmitter::fresh_name(const std::string& hint) {
  return unique_name(ident(hint), '.', &used_, &next_suffix_);
}

std::string FunctionEmitter::local(const std::string& hint, const std::string& ty) {
  std::string name = fresh_name(hint);
  locals_.emplace_back(name, ty);
  return name;
}

// An i32 holding a narrow integer, brought back into its type's range (wrap-around).
std::string FunctionEmitter::normalize(const std::string& code, DataType t) {
  if (!t.is_integer() || t.bits() >= 32) return code;
  if (t.is_int()) return "(i32.extend" + std::to_string(t.bits()) + "_s " + code + ")";
  return "(i32.and " + code + " (i32.const " + std::to_string((1 << t.bits()) - 1) + "))";
}

WVal FunctionEmitter::cast(const WVal& v, DataType from, DataType to, const Span& span) {
  std::string tt = wasm_type(to, span);
  if (to.is_bool()) {
    if (from.is_bool()) return v;
    return {"i32", "(" + v.ty + ".ne " + v.code + " (" + v.ty + ".const 0))"};
  }
  if (from.is_handle() || to.is_handle()) {
    if (from.is_handle() && to.is_handle()) return v;
    user_error(span, "the wasm backend cannot cast " + from.str() + " to " + to.str());
  }
  const bool from_signed = from.is_int();
  if (from.is_float() && to.is_float()) {
    if (v.ty == tt) return v;
    return {tt, "(" + tt + (to.bits() > from.bits() ? ".promote_f32 " : ".demote_f64 ") + v.code + ")"};
  }
  if (from.is_float()) {
    std::string r = "(" + tt + ".trunc_sat_" + v.ty + (to.is_uint() ? "_u " : "_s ") + v.code + ")";
    return {tt, normalize(r, to)};
  }
  if (to.is_float()) return {tt, "(" + tt + ".convert_" + v.ty + (from_signed ? "_s " : "_u ") + v.code + ")"};
  // Integer to integer.
  if (v.ty == "i64" && tt == "i32") return {tt, normalize("(i32.wrap_i64 " + v.code + ")", to)};
  if (v.ty == "i32" && tt == "i64") return {tt, "(i64.extend_i32" + std::string(from_signed ? "_s " : "_u ") + v.code + ")"};
  if (tt == "i64") return v;
  // Both in i32: a narrower or same-width target re-wraps; a wider one keeps the value.
  if (to.bits() < 32 && (to.bits() < from.bits() || from.is_int() != to.is_int() || from.is_bool())) {
    return {tt, normalize(v.code, to)};
  }
  return {tt, v.code};
}

WVal FunctionEmitter::base_of(const Buffer& b, const Span& span) {
  auto it = vars_.find(b->data.get());
  if (it == vars_.end()) user_error(span, "buffer '" + b->name + "' has no data pointer where wasm code uses it");
  return it->second;
}

std::string FunctionEmitter::address(const Buffer& b, const std::vector<Expr>& indices, const Span& span) {
  if (indices.size() != 1) {
    user_error(span, "buffer '" + b->name + "' is accessed with " + std::to_string(indices.size()) +
                         " indices; the wasm backend needs flat buffers (run the flatten_buffer pass)");
  }
  WVal base = base_of(b, span);
  WVal index = expr(indices[0]);
  if (index.ty == "i64") index = {"i32", "(i32.wrap_i64 " + index.code + ")"};
  int size = mem_bytes(b->dtype);
  if (const int64_t* k = as_const_int(indices[0])) {
    int64_t off = *k * size;
    return off == 0 ? base.code : "(i32.add " + base.code + " (i32.const " + int_text(off, 32) + "))";
  }
  std::string scaled = size == 1 ? index.code : "(i32.mul " + index.code + " (i32.const " + std::to_string(size) + "))";
  return "(i32.add " + base.code + " " + scaled + ")";
}

// The immediate and address operand of a load or store: `offset=N (address)`. An
// index `rest + k` (k a constant, or a variable that is one in unrolled code) with
// rest >= 0 by the bounds becomes offset=k*size on base + rest*size, as clang does
// with inbounds pointers: for every access inside the buffer base + rest*size is too,
// so nothing wraps and the address is the same; each access saves an add, and
// accesses that differ only in k share the rest of the address arithmetic.
std::string FunctionEmitter::memarg(const Buffer& b, const std::vector<Expr>& indices, const Span& span) {
  if (indices.size() != 1) return address(b, indices, span);
  const int64_t size = mem_bytes(b->dtype);
  Expr rest = indices[0];
  int64_t k = 0;
  constexpr int64_t kMaxOffset = int64_t{1} << 30;
  if (constant_term(rest, &k) && k > 0 && k <= kMaxOffset / size)
    return "offset=" + std::to_string(k * size) + " " + base_of(b, span).code;
  k = 0;
  while (const auto* add = as<AddNode>(rest)) {
    int64_t c;
    if (constant_term(add->b, &c)) rest = add->a;
    else if (constant_term(add->a, &c)) rest = add->b;
    else break;
    if (__builtin_add_overflow(k, c, &k)) return address(b, indices, span);
  }
  if (rest == indices[0] || k <= 0 || k > kMaxOffset / size) return address(b, indices, span);
  IntBound rb = bounds_.bound(rest);
  if (rb.min < 0 || rb.max > kMaxOffset / size) return address(b, indices, span);
  return "offset=" + std::to_string(k * size) + " " + address(b, {rest}, span);
}

// A term of an index that is a known constant: a literal, or a variable bound to one
// value (an unrolled loop's).
bool FunctionEmitter::constant_term(const Expr& e, int64_t* c) const {
  if (const int64_t* v = as_const_int(e)) return *c = *v, true;
  if (e->kind != ExprKind::Var || !e->dtype.is_integer()) return false;
  IntBound r = bounds_.bound(e);
  if (r.min != r.max) return false;
  *c = r.min;
  return true;
}

std::string FunctionEmitter::load_op(DataType t) {
  if (t.is_bool()) return "i32.load8_u";
  if (t.is_integer() && t.bits() == 8) return t.is_int() ? "i32.load8_s" : "i32.load8_u";
  if (t.is_integer() && t.bits() == 16) return t.is_int() ? "i32.load16_s" : "i32.load16_u";
  return wasm_type(t, {}) + ".load";
}

std::string FunctionEmitter::store_op(DataType t) {
  if (t.is_bool() || (t.is_integer() && t.bits() == 8)) return "i32.store8";
  if (t.is_integer() && t.bits() == 16) return "i32.store16";
  return wasm_type(t, {}) + ".store";
}

// The local an access was promoted to by emit_for, or "".
std::string FunctionEmitter::promoted(const Buffer& b, const std::vector<Expr>& indices) const {
  for (const auto& p : promoted_)
    if (p.data == b->data.get() && indices.size() == 1 && same_expr(p.index, indices[0])) return p.local;
  return "";
}

WVal FunctionEmitter::load(const BufferLoadNode* l) {
  DataType t = l->buffer->dtype;
  std::string ty = wasm_type(t, l->span);
  std::string local = register_element(l->buffer, l->indices, l->span);
  if (local.empty()) local = promoted(l->buffer, l->indices);
  WVal v{ty, ""};
  if (!local.empty()) {
    ++mutable_reads_;  // a local that stores assign again
    v.code = "(local.get " + local + ")";
  } else {
    const int64_t reads = mutable_reads_;
    v.code = "(" + load_op(t) + " " + memarg(l->buffer, l->indices, l->span) + ")";
    // An address that reads such a local is not the same address the next time.
    if (reads == mutable_reads_) v.code = reused_load(l->buffer, v.code, ty);
  }
  if (!local.empty() && t.is_bool()) v.code = "(i32.ne " + v.code + " (i32.const 0))";
  if (t.is_bool()) v.code = "(i32.ne " + v.code + " (i32.const 0))";
  if (l->dtype != t) return cast(v, t, l->dtype, l->span);
  return v;
}

void FunctionEmitter::store(const BufferStoreNode* s) {
  DataType t = s->buffer->dtype;
  if (s->value->dtype.is_vector()) {
    simd_store(s);
    return;
  }
  std::string local = register_element(s->buffer, s->indices, s->span);
  if (local.empty()) local = promoted(s->buffer, s->indices);
  if (!local.empty()) {
    WVal v = expr(s->value);
    if (s->value->dtype != t) v = cast(v, s->value->dtype, t, s->span);
    line("(local.set " + local + " " + v.code + ")");
    return;
  }
  // The address is evaluated before the value: emitted first, for the reused loads.
  std::string at = memarg(s->buffer, s->indices, s->span);
  WVal v = expr(s->value);
  if (s->value->dtype != t) v = cast(v, s->value->dtype, t, s->span);
  forget_loads_of(s->buffer);
  line("(" + store_op(t) + " " + at + " " + v.code + ")");
}

std::string FunctionEmitter::reused_load(const Buffer& b, const std::string& code, const std::string& ty) {
  auto it = loads_.find(code);
  if (it != loads_.end()) {
    unread_loads_.erase(it->second.local);
    return "(local.get " + it->second.local + ")";
  }
  std::string l = local("ld", ty);
  loads_.emplace(code, LoadedValue{b->data.get(), l});
  unread_loads_.insert(l);
  return "(local.tee " + l + " " + code + ")";
}

// The body without the local.tee of loads nothing read again (and so without those
// locals): one pass, dropping each such tee's opening and its matching parenthesis.
std::string FunctionEmitter::without_unread_tees(const std::string& body) const {
  if (unread_loads_.empty()) return body;
  static const std::string kTee = "(local.tee ";
  std::string out;
  out.reserve(body.size());
  std::vector<bool> dropped;  // per open parenthesis: whether its closing one goes
  for (size_t i = 0; i < body.size(); ++i) {
    const char c = body[i];
    if (c == '(' && body.compare(i, kTee.size(), kTee) == 0) {
      const size_t name_at = i + kTee.size(), end = body.find(' ', name_at);
      if (end != std::string::npos && unread_loads_.count(body.substr(name_at, end - name_at))) {
        dropped.push_back(true);
        i = end;  // past the name and its space
        continue;
      }
    }
    if (c == '(') dropped.push_back(false);
    if (c == ')' && !dropped.empty()) {
      const bool drop = dropped.back();
      dropped.pop_back();
      if (drop) continue;
    }
    out += c;
  }
  return out;
}

// A store to `b`: loads of it (and of memory that might be it) are stale.
void FunctionEmitter::forget_loads_of(const Buffer& b) {
  const VarNode* data = b->data.get();
  if (!noalias_ || !own_memory_.count(data)) {
    loads_.clear();
    return;
  }
  for (auto it = loads_.begin(); it != loads_.end();)
    it = it->second.data == data || !own_memory_.count(it->second.data) ? loads_.erase(it) : std::next(it);
}

void FunctionEmitter::forget_loads() {
  loads_.clear();
  ++forgotten_;
}

// An expression that runs only on one branch: what it loads is not known after it,
// and a call on the branch (which may write memory) makes what was loaded before stale.
WVal FunctionEmitter::conditional_expr(const Expr& e) {
  auto saved = loads_;
  const int64_t forgotten = forgotten_;
  WVal v = expr(e);
  if (forgotten == forgotten_) loads_ = std::move(saved);
  else forget_loads();
  return v;
}

// The stores scalarize_vectors_simd128 keeps (simd128_store): v128 loads and stores of
// contiguous slices, splats and lane-wise arithmetic. Anything else must have been
// scalarized.
std::string FunctionEmitter::simd_shape(DataType t) {
  return std::string(t.is_float() ? "f" : "i") + std::to_string(t.bits()) + "x" + std::to_string(t.lanes());
}

// The memory operand of a contiguous access: that of its first lane.
std::string FunctionEmitter::simd_memarg(const Buffer& b, const std::vector<Expr>& indices, DataType t, const Span& span) {
  if (indices.size() != 1 || !simd128_index(indices, t.lanes()) || b->dtype != t.element_of())
    user_error(span, "the wasm backend emits " + t.str() + " accesses of '" + b->name +
                         "' as SIMD128 only for a contiguous slice (a stride-1 Ramp) of a flat buffer of " +
                         t.element_of().str() + "; run the scalarize_vectors pass");
  return memarg(b, {as<RampNode>(indices[0])->base}, span);
}

void FunctionEmitter::simd_store(const BufferStoreNode* s) {
  const DataType t = s->value->dtype;
  std::string at = simd_memarg(s->buffer, s->indices, t, s->span);
  WVal v = expr(s->value);
  forget_loads_of(s->buffer);
  line("(v128.store " + at + " " + v.code + ")");
}

WVal FunctionEmitter::simd_expr(const Expr& e) {
  const DataType t = e->dtype;
  const std::string shape = simd_shape(t);
  auto refuse = [&]() -> WVal {
    user_error(e->span, std::string("the wasm backend cannot emit a vector ") + expr_kind_name(e->kind) + " of " +
                            t.str() + " as SIMD128: it must be scalarized first (run the scalarize_vectors pass)");
  };
  if (!simd128_lane_type(t)) refuse();
  switch (e->kind) {
    case ExprKind::BufferLoad: {
      const auto* l = static_cast<const BufferLoadNode*>(e.get());
      return {"v128", "(v128.load " + simd_memarg(l->buffer, l->indices, t, l->span) + ")"};
    }
    case ExprKind::Broadcast: {
      WVal v = expr(static_cast<const BroadcastNode*>(e.get())->value);
      return {"v128", "(" + shape + ".splat " + v.code + ")"};
    }
    case ExprKind::Add:
    case ExprKind::Sub:
    case ExprKind::Mul:
    case ExprKind::Div:
    case ExprKind::Min:
    case ExprKind::Max: {
      const auto* b = static_cast<const BinaryNode*>(e.get());
      if ((e->kind == ExprKind::Mul && t.bits() == 8) || (e->kind == ExprKind::Div && !t.is_float()) ||
          ((e->kind == ExprKind::Min || e->kind == ExprKind::Max) && t.is_integer() && t.bits() == 64))
        refuse();
      WVal x = expr(b->a), y = expr(b->b);
      if (x.ty != "v128" || y.ty != "v128") refuse();
      if (e->kind == ExprKind::Min || e->kind == ExprKind::Max) {
        const bool mn = e->kind == ExprKind::Min;
        if (t.is_integer())
          return {"v128", "(" + shape + (mn ? ".min" : ".max") + sign_suffix(t) + " " + x.code + " " + y.code + ")"};
        // a < b ? a : b lane by lane, exactly as the scalar code (NaN operands pick b).
        std::string tx = temp("v128"), tyv = temp("v128");
        return {"v128", "(v128.bitselect (local.tee " + tx + " " + x.code + ") (local.tee " + tyv + " " + y.code +
                            ") (" + shape + (mn ? ".lt" : ".gt") + " (local.get " + tx + ") (local.get " + tyv + ")))"};
      }
      static const std::map<ExprKind, const char*> names = {
          {ExprKind::Add, ".add "}, {ExprKind::Sub, ".sub "}, {ExprKind::Mul, ".mul "}, {ExprKind::Div, ".div "}};
      return {"v128", "(" + shape + names.at(e->kind) + x.code + " " + y.code + ")"};
    }
    default: return refuse();
  }
}

}  // namespace wat_codegen
}  // namespace mtir
