#include "codegen/wasm/codegen_wat.h"

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>

#include "analysis/int_bound.h"
#include "codegen/emit_common.h"
#include "codegen/line_marks.h"
#include "ir/op.h"
#include "ir/structural_equal.h"
#include "ir/visitor.h"
#include "support/diagnostic.h"
#include "analysis/simd128.h"

namespace mtir {

const char* const kWasmLastErrorExport = "last_error";
const char* const kWasmLastErrorValueExport = "last_error_value";
const char* const kWasmMathImportModule = "env";

namespace {

constexpr int64_t kNullArgument = 0x0400;  // kTvmErrorNullArgument of the CRT
constexpr int64_t kBlockHeader = 16;       // the allocator's header, as the CRT stack allocator's
constexpr int64_t kWasmPage = 65536;

int64_t round16(int64_t n) { return (n + 15) / 16 * 16; }
int64_t block_bytes(int64_t n) { return n > 0 ? kBlockHeader + round16(n) : 0; }

// A value on the wasm stack: its value type and the folded expression computing it.
struct WVal {
  std::string ty;  // i32 | i64 | f32 | f64 | v128
  std::string code;
};

std::string wasm_type(DataType t, const Span& span) {
  if (t.is_bool() || t.is_handle()) return "i32";
  if (t.is_integer() && t.bits() <= 32) return "i32";
  if (t.is_integer() && t.bits() == 64) return "i64";
  if (t.is_float() && t.bits() == 32) return "f32";
  if (t.is_float() && t.bits() == 64) return "f64";
  user_error(span, "the wasm backend does not support " + t.str() + " values");
}

// Bytes of a value of `t` in linear memory (bool is one byte, handles are wasm32 pointers).
int mem_bytes(DataType t) { return t.is_handle() ? 4 : t.is_bool() ? 1 : t.bytes(); }

std::string int_text(int64_t v, int bits) {
  int64_t s = bits >= 64 ? v : static_cast<int64_t>(static_cast<uint64_t>(v) << (64 - bits)) >> (64 - bits);
  return std::to_string(s);
}

std::string float_text(double v, bool f32) {
  if (f32) v = static_cast<double>(static_cast<float>(v));
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", v);
  return buf;
}

// A wasm text identifier from a TIR name.
std::string ident(const std::string& hint) { return "$" + sanitized_name(hint, /*keep_dots=*/true); }

// A string of bytes as a wasm text string literal.
std::string data_literal(const std::string& bytes) {
  static const char* hex = "0123456789abcdef";
  std::string out = "\"";
  for (unsigned char c : bytes) {
    if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
      out += static_cast<char>(c);
    } else {
      out += '\\';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out + "\"";
}

// What all functions of the module share: the callees, the imports, the strings.
struct ModuleState {
  std::map<std::string, PrimFunc> functions;       // symbol -> function
  std::map<std::string, std::string> imports;      // wasm name -> import line
  std::map<std::string, int64_t> strings;          // text -> address
  std::vector<std::pair<int64_t, std::string>> data;  // address -> bytes
  int64_t next_string = 0;                          // where the next string goes
  std::set<std::string> helpers;                    // helper functions used
  bool mark_lines = false;                          // end lines with their source line

  int64_t string_address(const std::string& s) {
    auto it = strings.find(s);
    if (it != strings.end()) return it->second;
    int64_t a = next_string;
    strings[s] = a;
    data.emplace_back(a, s + std::string(1, '\0'));
    next_string += static_cast<int64_t>(s.size()) + 1;
    return a;
  }
  // A math function of the C library, imported from the host ("env" "expf").
  std::string math_import(const std::string& name, const std::string& ty, int arity) {
    std::string id = "$env." + name;
    std::string params;
    for (int i = 0; i < arity; ++i) params += " " + ty;
    imports.emplace(id, "(import \"" + std::string(kWasmMathImportModule) + "\" \"" + name + "\" (func " + id +
                            " (param" + params + ") (result " + ty + ")))");
    return id;
  }
};

// The memory accesses of a loop body, for promoting an accumulator to a local: which
// buffers (by data variable) are read and written at which indices, the variables bound
// inside, and whether anything else could touch memory (a call).
struct LoopAccesses : Visitor {
  struct Access {
    const VarNode* data;
    Buffer buffer;
    std::vector<Expr> indices;
    bool store;
  };
  std::vector<Access> accesses;
  std::set<const VarNode*> bound;  // loop variables, lets and allocations inside the loop
  bool has_call = false;

  void visit_BufferLoad(const BufferLoadNode* op) override {
    accesses.push_back({op->buffer->data.get(), op->buffer, op->indices, false});
    Visitor::visit_BufferLoad(op);
  }
  void visit_BufferStore(const BufferStoreNode* op) override {
    accesses.push_back({op->buffer->data.get(), op->buffer, op->indices, true});
    Visitor::visit_BufferStore(op);
  }
  void visit_Call(const CallNode* op) override {
    // Calls out and the fixed-signature builtins may touch memory; math does not.
    const OpInfo::Kind kind = op->builtin ? builtin_info(*op->builtin).kind : OpInfo::Kind::kCallExtern;
    if (kind == OpInfo::Kind::kCallExtern || kind == OpInfo::Kind::kBuiltin) has_call = true;
    Visitor::visit_Call(op);
  }
  void visit_For(const ForNode* op) override {
    bound.insert(op->loop_var.get());
    Visitor::visit_For(op);
  }
  void visit_LetStmt(const LetStmtNode* op) override {
    bound.insert(op->var.get());
    Visitor::visit_LetStmt(op);
  }
  void visit_Allocate(const AllocateNode* op) override {
    bound.insert(op->buffer->data.get());
    Visitor::visit_Allocate(op);
  }
};

// Whether `e` reads any of `vars`.
bool uses_any(const Expr& e, const std::set<const VarNode*>& vars) {
  struct Finder : Visitor {
    const std::set<const VarNode*>* vars;
    bool found = false;
    void visit_Var(const VarNode* op) override { found = found || vars->count(op); }
  } f;
  f.vars = &vars;
  f.visit(e);
  return f.found;
}

// How the body of an allocation uses it, for keeping a small one in locals: whether every
// use is a scalar load or store of one element, and the loop variables its indices read.
struct RegisterArrayUses : Visitor {
  const VarNode* data = nullptr;
  DataType dtype;
  bool escapes = false;  // the pointer itself is used (a call, address_of, a vector access, a view)
  std::set<const VarNode*> index_vars;

  bool element_access(const Buffer& b, const std::vector<Expr>& indices) {
    if (b->data.get() != data) return false;
    if (indices.size() != 1 || indices[0]->dtype.is_vector() || b->dtype != dtype) escapes = true;
    for (const auto& i : indices) {
      struct Vars : Visitor {
        std::set<const VarNode*>* out;
        void visit_Var(const VarNode* op) override { out->insert(op); }
      } vars;
      vars.out = &index_vars;
      vars.visit(i);
      visit(i);
    }
    return true;
  }
  void visit_BufferLoad(const BufferLoadNode* op) override {
    if (!element_access(op->buffer, op->indices)) Visitor::visit_BufferLoad(op);
  }
  void visit_BufferStore(const BufferStoreNode* op) override {
    if (op->buffer->data.get() != data) {
      Visitor::visit_BufferStore(op);
      return;
    }
    if (op->value->dtype.is_vector()) escapes = true;
    visit(op->value);
    element_access(op->buffer, op->indices);
  }
  void visit_Var(const VarNode* op) override { escapes = escapes || op == data; }
  void visit_Call(const CallNode* op) override {
    const auto* l = op->is(Builtin::AddressOf) && op->args.size() == 1 ? as<BufferLoadNode>(op->args[0]) : nullptr;
    if (l && l->buffer->data.get() == data) escapes = true;
    Visitor::visit_Call(op);
  }
};

class FunctionEmitter {
 public:
  FunctionEmitter(ModuleState* ms, std::string symbol, PrimFunc f)
      : ms_(ms), symbol_(std::move(symbol)), func_(std::move(f)) {}

  std::string define(bool exported) {
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

 private:
  // ---- names, locals, lines ---------------------------------------------------------
  std::string fresh_name(const std::string& hint) {
    return unique_name(ident(hint), '.', &used_);
  }
  std::string local(const std::string& hint, const std::string& ty) {
    std::string name = fresh_name(hint);
    locals_.emplace_back(name, ty);
    return name;
  }
  void line(const std::string& s) { body_ << std::string(2 * indent_, ' ') << s << line_mark(ms_->mark_lines, source_line_) << "\n"; }
  std::string label(const std::string& hint) { return "$" + hint + "." + std::to_string(next_label_++); }

  // ---- conversions ----------------------------------------------------------------
  // An i32 holding a narrow integer, brought back into its type's range (wrap-around).
  static std::string normalize(const std::string& code, DataType t) {
    if (!t.is_integer() || t.bits() >= 32) return code;
    if (t.is_int()) return "(i32.extend" + std::to_string(t.bits()) + "_s " + code + ")";
    return "(i32.and " + code + " (i32.const " + std::to_string((1 << t.bits()) - 1) + "))";
  }
  WVal cast(const WVal& v, DataType from, DataType to, const Span& span) {
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

  // ---- memory -----------------------------------------------------------------------
  WVal base_of(const Buffer& b, const Span& span) {
    auto it = vars_.find(b->data.get());
    if (it == vars_.end()) user_error(span, "buffer '" + b->name + "' has no data pointer where wasm code uses it");
    return it->second;
  }
  std::string address(const Buffer& b, const std::vector<Expr>& indices, const Span& span) {
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
  std::string memarg(const Buffer& b, const std::vector<Expr>& indices, const Span& span) {
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
  bool constant_term(const Expr& e, int64_t* c) const {
    if (const int64_t* v = as_const_int(e)) return *c = *v, true;
    if (e->kind != ExprKind::Var || !e->dtype.is_integer()) return false;
    IntBound r = bounds_.bound(e);
    if (r.min != r.max) return false;
    *c = r.min;
    return true;
  }
  static std::string load_op(DataType t) {
    if (t.is_bool()) return "i32.load8_u";
    if (t.is_integer() && t.bits() == 8) return t.is_int() ? "i32.load8_s" : "i32.load8_u";
    if (t.is_integer() && t.bits() == 16) return t.is_int() ? "i32.load16_s" : "i32.load16_u";
    return wasm_type(t, {}) + ".load";
  }
  static std::string store_op(DataType t) {
    if (t.is_bool() || (t.is_integer() && t.bits() == 8)) return "i32.store8";
    if (t.is_integer() && t.bits() == 16) return "i32.store16";
    return wasm_type(t, {}) + ".store";
  }
  // The local an access was promoted to by emit_for, or "".
  std::string promoted(const Buffer& b, const std::vector<Expr>& indices) const {
    for (const auto& p : promoted_)
      if (p.data == b->data.get() && indices.size() == 1 && same_expr(p.index, indices[0])) return p.local;
    return "";
  }
  WVal load(const BufferLoadNode* l) {
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
  void store(const BufferStoreNode* s) {
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

  // ---- reused loads -------------------------------------------------------------------
  // A load of the same address as one before it in straight-line code, with no store to
  // that buffer between, reads the value the first left in a local: what clang's GVN does
  // with the C backend's output. V8 does not (wasm loads stay on its effect chain), and a
  // register tile reads each input element once per output it feeds: the duplicates
  // doubled the loads of a 1x1 convolution's tile loop and made V8 spill. The key is the
  // load's text, so unrolled copies (their loop variable a different constant in each)
  // never match. Forgotten at every branch, loop, call and allocation, so a local.get
  // never runs without its local.tee having run before it.
  struct LoadedValue {
    const VarNode* data;  // the buffer's
    std::string local;
  };
  std::string reused_load(const Buffer& b, const std::string& code, const std::string& ty) {
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
  std::string without_unread_tees(const std::string& body) const {
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
  void forget_loads_of(const Buffer& b) {
    const VarNode* data = b->data.get();
    if (!noalias_ || !own_memory_.count(data)) {
      loads_.clear();
      return;
    }
    for (auto it = loads_.begin(); it != loads_.end();)
      it = it->second.data == data || !own_memory_.count(it->second.data) ? loads_.erase(it) : std::next(it);
  }
  void forget_loads() {
    loads_.clear();
    ++forgotten_;
  }
  // An expression that runs only on one branch: what it loads is not known after it,
  // and a call on the branch (which may write memory) makes what was loaded before stale.
  WVal conditional_expr(const Expr& e) {
    auto saved = loads_;
    const int64_t forgotten = forgotten_;
    WVal v = expr(e);
    if (forgotten == forgotten_) loads_ = std::move(saved);
    else forget_loads();
    return v;
  }

  // ---- SIMD128 ------------------------------------------------------------------------
  // The stores scalarize_vectors_simd128 keeps (simd128_store): v128 loads and stores of
  // contiguous slices, splats and lane-wise arithmetic. Anything else must have been
  // scalarized.
  static std::string simd_shape(DataType t) {
    return std::string(t.is_float() ? "f" : "i") + std::to_string(t.bits()) + "x" + std::to_string(t.lanes());
  }
  // The memory operand of a contiguous access: that of its first lane.
  std::string simd_memarg(const Buffer& b, const std::vector<Expr>& indices, DataType t, const Span& span) {
    if (indices.size() != 1 || !simd128_index(indices, t.lanes()) || b->dtype != t.element_of())
      user_error(span, "the wasm backend emits " + t.str() + " accesses of '" + b->name +
                           "' as SIMD128 only for a contiguous slice (a stride-1 Ramp) of a flat buffer of " +
                           t.element_of().str() + "; run the scalarize_vectors pass");
    return memarg(b, {as<RampNode>(indices[0])->base}, span);
  }
  void simd_store(const BufferStoreNode* s) {
    const DataType t = s->value->dtype;
    std::string at = simd_memarg(s->buffer, s->indices, t, s->span);
    WVal v = expr(s->value);
    forget_loads_of(s->buffer);
    line("(v128.store " + at + " " + v.code + ")");
  }
  WVal simd_expr(const Expr& e) {
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

  // ---- expressions ------------------------------------------------------------------
  WVal int_const(DataType t, int64_t v) {
    std::string ty = wasm_type(t, {});
    int bits = t.is_bool() ? 32 : t.bits();
    return {ty, "(" + ty + ".const " + int_text(v, bits) + ")"};
  }
  WVal float_const(DataType t, double v, const Span& span) {
    std::string ty = wasm_type(t, span);
    return {ty, "(" + ty + ".const " + float_text(v, ty == "f32") + ")"};
  }

  static const char* sign_suffix(DataType t) { return t.is_uint() || t.is_bool() ? "_u" : "_s"; }

  // + - * in the value type, re-wrapped into narrow integer types.
  WVal arith(const char* name, const BinaryNode* e) {
    WVal a = expr(e->a), b = expr(e->b);
    return {a.ty, normalize("(" + a.ty + "." + name + " " + a.code + " " + b.code + ")", e->dtype)};
  }

  WVal compare(ExprKind k, const BinaryNode* e) {
    WVal a = expr(e->a), b = expr(e->b);
    DataType t = e->a->dtype;
    static const std::map<ExprKind, const char*> names = {{ExprKind::EQ, "eq"}, {ExprKind::NE, "ne"},
                                                          {ExprKind::LT, "lt"}, {ExprKind::LE, "le"},
                                                          {ExprKind::GT, "gt"}, {ExprKind::GE, "ge"}};
    std::string n = names.at(k);
    if (!t.is_float() && k != ExprKind::EQ && k != ExprKind::NE) n += sign_suffix(t);
    return {"i32", "(" + a.ty + "." + n + " " + a.code + " " + b.code + ")"};
  }

  // Integer / % floordiv floormod with no trap: as the C and LLVM backends, a zero
  // divisor divides by 1 and MIN / -1 wraps. The checks live in one helper per
  // operation and type; where the bounds prove them unnecessary the instruction is used
  // directly.
  WVal int_division(ExprKind k, const BinaryNode* e) {
    DataType t = e->dtype;
    const bool is_signed = t.is_int();
    const bool floor = k == ExprKind::FloorDiv || k == ExprKind::FloorMod;
    const bool div = k == ExprKind::Div || k == ExprKind::FloorDiv;
    IntBound ba = bounds_.bound(e->a), bb = bounds_.bound(e->b);
    WVal a = expr(e->a), b = expr(e->b);
    const std::string& ty = a.ty;
    const bool narrow_min = t.bits() < 32;  // MIN / -1 of int8 or int16 does not trap in i32
    const bool safe = !bb.contains(0) && (!is_signed || !bb.contains(-1) || narrow_min || ba.min > type_range(t).min) &&
                      (!floor || !is_signed || (ba.non_negative() && bb.min > 0));
    std::string code;
    if (safe) {
      code = "(" + ty + (div ? ".div" : ".rem") + sign_suffix(t) + " " + a.code + " " + b.code + ")";
    } else {
      std::string helper = std::string("$mtir.") + (floor ? "floor" : "") + (div ? "div" : "mod") + (is_signed ? "_s_" : "_u_") + ty;
      ms_->helpers.insert(helper);
      code = "(call " + helper + " " + a.code + " " + b.code + ")";
    }
    return {ty, normalize(code, t)};
  }

  std::string temp(const std::string& ty) { return local("t", ty); }

  WVal math_call(const CallNode* c) {
    DataType t = c->dtype;
    if (c->is(Builtin::Abs) && t.is_integer()) {
      WVal a = expr(c->args.at(0));
      if (t.is_uint()) return a;
      // Operands are evaluated in order: the first one sets the temporary.
      std::string x = temp(a.ty);
      std::string neg = normalize("(" + a.ty + ".sub (" + a.ty + ".const 0) (local.tee " + x + " " + a.code + "))", t);
      return {a.ty, "(select " + neg + " (local.get " + x + ") (" + a.ty + ".lt_s (local.get " + x + ") (" + a.ty +
                        ".const 0)))"};
    }
    if (!t.is_float()) user_error(c->span, "intrinsic '" + c->op + "' needs a float argument, not " + t.str());
    std::string ty = wasm_type(t, c->span);
    std::vector<WVal> args;
    for (const auto& a : c->args) args.push_back(expr(a));
    // wasm has sqrt, floor, ceil and abs as instructions: the others come from libm.
    if (c->is(Builtin::Sqrt) || c->is(Builtin::Floor) || c->is(Builtin::Ceil) || c->is(Builtin::Abs))
      return {ty, "(" + ty + "." + c->op + " " + args[0].code + ")"};
    const std::string libm_suffix = ty == "f32" ? "f" : "";
    if (c->is(Builtin::Sigmoid)) {
      std::string e = ms_->math_import("exp" + libm_suffix, ty, 1);
      return {ty, "(" + ty + ".div (" + ty + ".const 1) (" + ty + ".add (" + ty + ".const 1) (call " + e + " (" + ty +
                      ".neg " + args[0].code + "))))"};
    }
    if (c->is(Builtin::Round)) {
      // Half away from zero, as C's round: x - trunc(x) is exact.
      std::string x = temp(ty), r = temp(ty);
      return {ty, "(select (" + ty + ".add (local.tee " + r + " (" + ty + ".trunc (local.tee " + x + " " + args[0].code +
                      "))) (" + ty + ".copysign (" + ty + ".const 1) (local.get " + x + "))) (local.get " + r + ") (" + ty +
                      ".ge (" + ty + ".abs (" + ty + ".sub (local.get " + x + ") (local.get " + r + "))) (" + ty +
                      ".const 0.5)))"};
    }
    std::string f = ms_->math_import(c->op + libm_suffix, ty, static_cast<int>(args.size()));
    std::string call = "(call " + f;
    for (const auto& a : args) call += " " + a.code;
    return {ty, call + ")"};
  }

  // Shifts and bitwise operators. Narrow integers live sign- or zero-extended in an
  // i32, so and, or and right shifts keep them extended; a left shift is re-wrapped.
  // wasm takes shift amounts modulo 32 or 64; narrow types mask theirs into [0, bits)
  // as the C and LLVM backends do (the interpreter refuses an amount outside).
  WVal int_binary(const CallNode* c) {
    DataType t = c->dtype;
    if (!t.is_integer()) user_error(c->span, "intrinsic '" + c->op + "' needs integer operands, not " + t.str());
    WVal a = expr(c->args.at(0)), b = expr(c->args.at(1));
    if (!is_shift_op(*c->builtin)) {
      // Operands are sign- or zero-extended alike, so the result is extended the same way.
      const char* inst = c->is(Builtin::BitwiseAnd) ? ".and " : c->is(Builtin::BitwiseOr) ? ".or " : ".xor ";
      return {a.ty, "(" + a.ty + inst + a.code + " " + b.code + ")"};
    }
    std::string amount = b.code;
    if (t.bits() < 32 && !as_const_int(c->args[1]))
      amount = "(i32.and " + amount + " (i32.const " + std::to_string(t.bits() - 1) + "))";
    if (c->is(Builtin::ShiftLeft)) return {a.ty, normalize("(" + a.ty + ".shl " + a.code + " " + amount + ")", t)};
    return {a.ty, "(" + a.ty + ".shr" + sign_suffix(t) + " " + a.code + " " + amount + ")"};
  }

  WVal extern_call(const CallNode* c) {
    const auto* sym = c->args.empty() ? nullptr : as<StringImmNode>(c->args[0]);
    if (!sym) user_error(c->span, "call_extern needs a symbol name");
    auto callee = ms_->functions.find(sym->value);
    if (callee == ms_->functions.end()) return imported_call(c, sym->value);
    const PrimFunc& f = callee->second;
    if (f->params.size() + 1 != c->args.size())
      user_error(c->span, "'" + sym->value + "' takes " + std::to_string(f->params.size()) + " arguments");
    std::string call = "(call " + ident(sym->value);
    for (size_t i = 1; i < c->args.size(); ++i) {
      WVal v = expr(c->args[i]);
      const Var& p = f->params[i - 1];
      if (!f->param_buffers[i - 1] && p->dtype != c->args[i]->dtype) v = cast(v, c->args[i]->dtype, p->dtype, c->span);
      call += " " + v.code;
    }
    forget_loads();  // the callee may write memory
    return {"i32", call + ")"};
  }

  // A function outside the module (a device library's kernel or hook) is imported from
  // the host ("env" "<symbol>"), typed by its arguments; handles are i32 addresses.
  WVal imported_call(const CallNode* c, const std::string& symbol) {
    if (!c->dtype.is_void() && !(c->dtype.is_int() && c->dtype.bits() == 32))
      user_error(c->span, "external function '" + symbol + "' returns " + c->dtype.str() +
                              "; the wasm backend imports functions returning int32 or nothing");
    std::string params, call = "(call $env." + symbol;
    for (size_t i = 1; i < c->args.size(); ++i) {
      WVal v = expr(c->args[i]);
      params += " " + v.ty;
      call += " " + v.code;
    }
    forget_loads();  // the callee may write memory
    std::string decl = "(import \"" + std::string(kWasmMathImportModule) + "\" \"" + symbol + "\" (func $env." + symbol +
                       (params.empty() ? "" : " (param" + params + ")") + (c->dtype.is_void() ? "" : " (result i32)") + "))";
    auto [it, inserted] = ms_->imports.emplace("$env." + symbol, decl);
    if (!inserted && it->second != decl) {
      user_error(c->span, "external function '" + symbol + "' is called with two different signatures",
                 {"first: " + it->second, "here: " + decl});
    }
    return {c->dtype.is_void() ? "" : "i32", call + ")"};
  }

  // Every builtin of ir/builtins.def, by a switch without a default: a new row does not
  // compile until it has its case here.
  WVal call_expr(const CallNode* c) {
    if (!c->builtin) user_error(c->span, "unknown intrinsic '" + c->op + "'");
    const Builtin b = *c->builtin;
    switch (b) {
      case Builtin::Exp:
      case Builtin::Log:
      case Builtin::Log2:
      case Builtin::Sqrt:
      case Builtin::Tanh:
      case Builtin::Sigmoid:
      case Builtin::Sin:
      case Builtin::Cos:
      case Builtin::Floor:
      case Builtin::Ceil:
      case Builtin::Round:
      case Builtin::Erf:
      case Builtin::Abs:
      case Builtin::Pow: return math_call(c);
      case Builtin::ShiftRight:
      case Builtin::ShiftLeft:
      case Builtin::BitwiseAnd:
      case Builtin::BitwiseOr:
      case Builtin::BitwiseXor: return int_binary(c);
      case Builtin::IfThenElse: {
        WVal cond = expr(c->args.at(0));
        WVal t = conditional_expr(c->args.at(1)), f = conditional_expr(c->args.at(2));
        return {t.ty, "(if (result " + t.ty + ") " + cond.code + " (then " + t.code + ") (else " + f.code + "))"};
      }
      case Builtin::CallExtern: return extern_call(c);
      case Builtin::TvmHandleIsNull: return {"i32", "(i32.eqz " + expr(c->args.at(0)).code + ")"};
      // The packed calling convention: wasm modules are built unpacked.
      case Builtin::TvmArgTypeCode:
      case Builtin::TvmArgHandle:
      case Builtin::TvmArgInt:
      case Builtin::TvmArgFloat:
      case Builtin::TvmTensorData:
      case Builtin::TvmTensorNdim:
      case Builtin::TvmTensorShape:
      case Builtin::TvmTensorStridesIsNull:
      case Builtin::TvmTensorStride:
      case Builtin::TvmTensorDtypeCode:
      case Builtin::TvmTensorDtypeBits:
      case Builtin::TvmTensorDtypeLanes:
      case Builtin::TvmTensorByteOffset:
      case Builtin::TvmTensorDeviceType:
      case Builtin::TvmHandleIsAligned:
      case Builtin::TvmStackAlloca:
      case Builtin::TvmSetArgHandle:
      case Builtin::TvmSetArgInt:
      case Builtin::TvmSetArgFloat:
      case Builtin::TvmSetTypeCode:
      case Builtin::TvmSetShape:
      case Builtin::TvmTensorInit:
      case Builtin::TvmCallPackedLowered:
        refuse_builtin(c, "wasm", "it belongs to the packed calling convention, and wasm modules are built with "
                                  "-unpacked-api=1");
      case Builtin::TvmThrowLastError:
      case Builtin::TvmReturn: refuse_statement_builtin(c, "wasm");
      case Builtin::TvmCallPacked:
      case Builtin::TvmMakeTensor:
      case Builtin::CallTir:
      case Builtin::TirRegion: refuse_builtin(c, "wasm", "");
      case Builtin::AddressOf: {
        const auto* l = c->args.size() == 1 ? as<BufferLoadNode>(c->args[0]) : nullptr;
        if (!l) user_error(c->span, "T.address_of takes one buffer element, such as A[i]");
        return {"i32", address(l->buffer, l->indices, l->span)};
      }
      case Builtin::Smlad: {
        // Emitted in the order the text evaluates them (the accumulator first), for reused loads.
        WVal acc = expr(c->args.at(2));
        WVal a = expr(c->args.at(0)), bv = expr(c->args.at(1));
        auto lo = [](const WVal& v) { return "(i32.shr_s (i32.shl " + v.code + " (i32.const 16)) (i32.const 16))"; };
        auto hi = [](const WVal& v) { return "(i32.shr_s " + v.code + " (i32.const 16))"; };
        return {"i32", "(i32.add (i32.add " + acc.code + " (i32.mul " + lo(a) + " " + lo(bv) + ")) (i32.mul " + hi(a) + " " + hi(bv) + "))"};
      }
      case Builtin::Smlabb: {
        WVal acc = expr(c->args.at(2));
        WVal a = expr(c->args.at(0)), bv = expr(c->args.at(1));
        auto lo = [](const WVal& v) { return "(i32.extend16_s " + v.code + ")"; };
        return {"i32", "(i32.add " + acc.code + " (i32.mul " + lo(a) + " " + lo(bv) + "))"};
      }
      case Builtin::Smmlar: {
        WVal acc = expr(c->args.at(2));
        WVal a = expr(c->args.at(0)), bv = expr(c->args.at(1));
        std::string p = "(i64.mul (i64.extend_i32_s " + a.code + ") (i64.extend_i32_s " + bv.code + "))";
        std::string hi = "(i64.shl (i64.extend_i32_u " + acc.code + ") (i64.const 32))";
        return {"i32", "(i32.wrap_i64 (i64.shr_u (i64.add (i64.add " + hi + " " + p + ") (i64.const 2147483648)) (i64.const 32)))"};
      }
      case Builtin::Sxtb16:
      case Builtin::Sxtb16Ror8: {
        WVal x = expr(c->args.at(0));
        std::string v = b == Builtin::Sxtb16 ? x.code : "(i32.shr_u " + x.code + " (i32.const 8))";
        // Byte 0 sign-extended and masked to the low half; byte 2 sign-extended into the high half.
        std::string lo = "(i32.and (i32.extend8_s " + v + ") (i32.const 65535))";
        std::string hi = "(i32.shl (i32.extend8_s (i32.shr_u " + v + " (i32.const 16))) (i32.const 16))";
        return {"i32", "(i32.or " + lo + " " + hi + ")"};
      }
      case Builtin::Clz: {
        WVal x = expr(c->args.at(0));
        if (x.ty == "i64") return {"i32", "(i32.wrap_i64 (i64.clz " + x.code + "))"};
        return {"i32", "(i32.clz " + x.code + ")"};
      }
      case Builtin::Reinterpret: {
        WVal x = expr(c->args.at(0));
        std::string to = wasm_type(c->dtype, c->span);
        if (x.ty == to) return {to, x.code};
        return {to, "(" + to + ".reinterpret_" + x.ty + " " + x.code + ")"};
      }
    }
    internal_error(__FILE__, __LINE__, "unhandled builtin");
  }

  WVal expr(const Expr& e) {
    if (e->dtype.is_vector() && e->kind != ExprKind::Var) return simd_expr(e);
    switch (e->kind) {
      case ExprKind::IntImm: return int_const(e->dtype, static_cast<const IntImmNode*>(e.get())->value);
      case ExprKind::FloatImm: return float_const(e->dtype, static_cast<const FloatImmNode*>(e.get())->value, e->span);
      case ExprKind::StringImm:
        return {"i32", "(i32.const " + int_text(ms_->string_address(static_cast<const StringImmNode*>(e.get())->value), 32) + ")"};
      case ExprKind::Var: {
        const auto* v = static_cast<const VarNode*>(e.get());
        auto it = vars_.find(v);
        if (it == vars_.end()) user_error(v->span, "variable '" + v->name + "' is not defined where wasm code uses it");
        return it->second;
      }
      case ExprKind::Add: return arith("add", static_cast<const BinaryNode*>(e.get()));
      case ExprKind::Sub: return arith("sub", static_cast<const BinaryNode*>(e.get()));
      case ExprKind::Mul: return arith("mul", static_cast<const BinaryNode*>(e.get()));
      case ExprKind::Div:
      case ExprKind::Mod:
      case ExprKind::FloorDiv:
      case ExprKind::FloorMod: {
        const auto* b = static_cast<const BinaryNode*>(e.get());
        if (!e->dtype.is_float()) return int_division(e->kind, b);
        WVal x = expr(b->a), y = expr(b->b);
        const std::string& ty = x.ty;
        if (e->kind == ExprKind::Div) return {ty, "(" + ty + ".div " + x.code + " " + y.code + ")"};
        if (e->kind == ExprKind::Mod) {
          std::string f = ms_->math_import(ty == "f32" ? "fmodf" : "fmod", ty, 2);
          return {ty, "(call " + f + " " + x.code + " " + y.code + ")"};
        }
        if (e->kind == ExprKind::FloorDiv) return {ty, "(" + ty + ".floor (" + ty + ".div " + x.code + " " + y.code + "))"};
        std::string tx = temp(ty), ty_ = temp(ty);
        return {ty, "(" + ty + ".sub (local.tee " + tx + " " + x.code + ") (" + ty + ".mul (" + ty + ".floor (" + ty +
                        ".div (local.get " + tx + ") (local.tee " + ty_ + " " + y.code + "))) (local.get " + ty_ + ")))"};
      }
      case ExprKind::Min:
      case ExprKind::Max: {
        // a < b ? a : b, exactly as the C helpers (NaN operands pick b).
        const auto* b = static_cast<const BinaryNode*>(e.get());
        WVal x = expr(b->a), y = expr(b->b);
        const bool mn = e->kind == ExprKind::Min;
        DataType t = e->dtype;
        std::string tx = temp(x.ty), tyv = temp(y.ty);
        std::string cmp = std::string(mn ? "lt" : "gt") + (t.is_float() ? "" : sign_suffix(t));
        // Operands are evaluated in order: the values first, then the comparison of them.
        return {x.ty, "(select (local.tee " + tx + " " + x.code + ") (local.tee " + tyv + " " + y.code + ") (" + x.ty + "." +
                          cmp + " (local.get " + tx + ") (local.get " + tyv + ")))"};
      }
      case ExprKind::EQ:
      case ExprKind::NE:
      case ExprKind::LT:
      case ExprKind::LE:
      case ExprKind::GT:
      case ExprKind::GE: return compare(e->kind, static_cast<const BinaryNode*>(e.get()));
      case ExprKind::And:
      case ExprKind::Or: {
        const auto* b = static_cast<const BinaryNode*>(e.get());
        WVal x = expr(b->a);
        WVal y = conditional_expr(b->b);
        if (e->kind == ExprKind::And) return {"i32", "(if (result i32) " + x.code + " (then " + y.code + ") (else (i32.const 0)))"};
        return {"i32", "(if (result i32) " + x.code + " (then (i32.const 1)) (else " + y.code + "))"};
      }
      case ExprKind::Not: return {"i32", "(i32.eqz " + expr(static_cast<const NotNode*>(e.get())->a).code + ")"};
      case ExprKind::Select: {
        const auto* s = static_cast<const SelectNode*>(e.get());
        // select evaluates both values, then the condition.
        WVal t = expr(s->true_value), f = expr(s->false_value);
        WVal c = expr(s->condition);
        return {t.ty, "(select " + t.code + " " + f.code + " " + c.code + ")"};
      }
      case ExprKind::Cast: {
        const auto* c = static_cast<const CastNode*>(e.get());
        return cast(expr(c->value), c->value->dtype, c->dtype, c->span);
      }
      case ExprKind::BufferLoad: return load(static_cast<const BufferLoadNode*>(e.get()));
      case ExprKind::Call: return call_expr(static_cast<const CallNode*>(e.get()));
      case ExprKind::Ramp:
      case ExprKind::Broadcast:
      case ExprKind::Shuffle:
      case ExprKind::Let:
        // The lowering pipeline scalarizes these for wasm (scalarize_vectors_simd128).
        user_error(e->span, std::string("the wasm backend emits scalar code: a ") + expr_kind_name(e->kind) +
                                " must be scalarized first (run the scalarize_vectors pass)");
    }
    internal_error(__FILE__, __LINE__, "unhandled expression kind");
  }

  // ---- statements -------------------------------------------------------------------
  void emit(const Stmt& s) {
    const SourceLineScope at(&source_line_, s);
    switch (s->kind) {
      case StmtKind::BufferStore: store(static_cast<const BufferStoreNode*>(s.get())); return;
      case StmtKind::For: emit_for(static_cast<const ForNode*>(s.get())); return;
      case StmtKind::IfThenElse: {
        const auto* op = static_cast<const IfThenElseNode*>(s.get());
        line("(if " + expr(op->condition).code);
        auto before = loads_;
        ++indent_;
        line("(then");
        ++indent_;
        emit(op->then_case);
        loads_ = before;
        --indent_;
        line(")");
        if (op->else_case && !is_no_op(op->else_case)) {
          line("(else");
          ++indent_;
          emit(op->else_case);
          --indent_;
          line(")");
        }
        forget_loads();
        --indent_;
        line(")");
        return;
      }
      case StmtKind::LetStmt: {
        const auto* op = static_cast<const LetStmtNode*>(s.get());
        WVal v = expr(op->value);
        std::string l = local(op->var->name, v.ty);
        line("(local.set " + l + " " + v.code + ")");
        vars_[op->var.get()] = {v.ty, "(local.get " + l + ")"};
        if (op->var->dtype.is_integer() && op->var->dtype.is_scalar()) bounds_.bind(op->var.get(), bounds_.bound(op->value));
        emit(op->body);
        return;
      }
      case StmtKind::SeqStmt:
        for (const auto& child : static_cast<const SeqStmtNode*>(s.get())->seq) emit(child);
        return;
      case StmtKind::While: {
        const auto* op = static_cast<const WhileNode*>(s.get());
        std::string exit = label("while.end"), head = label("while.head");
        line("(block " + exit);
        ++indent_;
        line("(loop " + head);
        ++indent_;
        forget_loads();
        line("(br_if " + exit + " (i32.eqz " + expr(op->condition).code + "))");
        emit(op->body);
        forget_loads();
        line("(br " + head + ")");
        --indent_;
        line(")");
        --indent_;
        line(")");
        return;
      }
      case StmtKind::Evaluate: {
        const auto* op = static_cast<const EvaluateNode*>(s.get());
        if (evaluates_constant(op)) return;
        if (const CallNode* call = statement_builtin(op)) {
          if (call->is(Builtin::TvmReturn))
            emit_return(cast(expr(call->args.at(0)), call->args[0]->dtype, DataType::Int(32), call->span).code);
          else
            throw_last_error(call);
          return;
        }
        WVal v = expr(op->value);
        line(v.ty.empty() ? v.code : "(drop " + v.code + ")");
        return;
      }
      case StmtKind::Allocate: emit_allocate(static_cast<const AllocateNode*>(s.get())); return;
      case StmtKind::DeclBuffer: {
        const auto* op = static_cast<const DeclBufferNode*>(s.get());
        // A view of memory that already has a pointer (or of a register array's locals).
        if (!register_arrays_.count(op->buffer->data.get())) base_of(op->buffer, op->span);
        emit(op->body);
        return;
      }
      case StmtKind::AttrStmt: emit(static_cast<const AttrStmtNode*>(s.get())->body); return;
      case StmtKind::AssertStmt: {
        const auto* op = static_cast<const AssertStmtNode*>(s.get());
        line("(if (i32.eqz " + expr(op->condition).code + ")");
        ++indent_;
        line("(then");
        ++indent_;
        set_error(user_name() + ": assertion failed: " + op->message, {});
        emit_return("(i32.const -1)");
        --indent_;
        line(")");
        --indent_;
        line(")");
        emit(op->body);
        return;
      }
    }
  }

  std::string user_name() const { return user_function_name(func_, symbol_); }

  // A buffer element a loop reads and writes at one index that does not change inside
  // it (a reduction's accumulator) lives in a local for the loop's duration: loaded
  // before, stored after. What a C compiler does with `restrict`; V8 does not, and the
  // memory traffic would dominate the kernels. Only with distinct buffers (tir.noalias),
  // no calls in the loop, and a loop that certainly runs (constant extent > 0).
  void emit_for(const ForNode* node) {
    const int64_t* extent = as_const_int(node->extent);
    std::vector<Promoted> added;
    if (noalias_ && extent && *extent > 0) {
      LoopAccesses acc;
      acc.bound.insert(node->loop_var.get());
      acc.visit(node->body);
      // Every pointer the loop goes through must be a parameter's or an allocation's
      // (distinct memory); a derived pointer could alias the promoted element.
      bool distinct = true;
      for (const auto& a : acc.accesses)
        distinct = distinct && (own_memory_.count(a.data) || acc.bound.count(a.data) || register_arrays_.count(a.data));
      std::set<const VarNode*> rejected;
      for (const auto& a : acc.accesses) {
        if (!distinct) break;
        if (!own_memory_.count(a.data)) continue;  // register arrays are locals already
        if (!a.store || acc.has_call || rejected.count(a.data) || a.indices.size() != 1 || acc.bound.count(a.data)) continue;
        if (a.indices[0]->dtype.is_vector()) {  // a SIMD128 store stays in memory
          rejected.insert(a.data);
          continue;
        }
        bool ok = !uses_any(a.indices[0], acc.bound) && promoted(a.buffer, a.indices).empty();
        for (const auto& other : acc.accesses)
          if (other.data == a.data && (other.indices.size() != 1 || !same_expr(other.indices[0], a.indices[0]) ||
                                       other.buffer->dtype != a.buffer->dtype))
            ok = false;
        for (const auto& p : added) ok = ok && p.data != a.data;
        if (!ok) {
          rejected.insert(a.data);
          continue;
        }
        DataType t = a.buffer->dtype;
        std::string local = this->local(a.buffer->name + ".acc", wasm_type(t, a.buffer->span));
        line("(local.set " + local + " (" + load_op(t) + " " + address(a.buffer, a.indices, a.buffer->span) + "))");
        added.push_back({a.data, a.buffer, a.indices[0], local});
      }
    }
    promoted_.insert(promoted_.end(), added.begin(), added.end());
    emit_loop(node, unrolled(node) ? loads_ : loads_through_loop(node));
    promoted_.resize(promoted_.size() - added.size());
    for (const auto& p : added) {
      line("(" + store_op(p.buffer->dtype) + " " + address(p.buffer, {p.index}, p.buffer->span) + " (local.get " + p.local + "))");
      forget_loads_of(p.buffer);
    }
  }

  // The loads a rolled loop's body may reuse (reused_load), in every iteration and after
  // it: those before it of buffers the loop does not store to, and the loads of such
  // buffers at an index that does not change inside the loop and that every iteration
  // reads, now read once before it (what clang's LICM does with `restrict` pointers: a
  // depthwise kernel's weights, reloaded for every pixel otherwise). Hoisting needs a
  // loop that certainly runs (constant extent > 0) and a load outside any branch of the
  // body, so it reads nothing the loop would not. Nothing with calls in the loop or
  // possibly aliased pointers (no tir.noalias, derived pointers).
  std::map<std::string, LoadedValue> loads_through_loop(const ForNode* node) {
    if (!noalias_) return {};
    LoopAccesses acc;
    acc.bound.insert(node->loop_var.get());
    acc.visit(node->body);
    if (acc.has_call) return {};
    std::set<const VarNode*> stored;
    for (const auto& a : acc.accesses) {
      if (!own_memory_.count(a.data) && !acc.bound.count(a.data) && !register_arrays_.count(a.data)) return {};
      if (a.store) stored.insert(a.data);
    }
    std::map<std::string, LoadedValue> kept;
    for (const auto& [code, v] : loads_)
      if (own_memory_.count(v.data) && !stored.count(v.data)) kept.emplace(code, v);
    const int64_t* extent = as_const_int(node->extent);
    if (!extent || *extent <= 0) return kept;
    // The loads every iteration runs, before anything that could leave the body early.
    struct EveryIteration : Visitor {
      std::vector<const BufferLoadNode*> loads;
      bool early_exit = false;
      void visit_BufferLoad(const BufferLoadNode* op) override {
        loads.push_back(op);
        Visitor::visit_BufferLoad(op);
      }
      void visit_IfThenElse(const IfThenElseNode* op) override { visit(op->condition); }
      void visit_While(const WhileNode* op) override { visit(op->condition); }
      void visit_For(const ForNode* op) override {
        const int64_t* n = as_const_int(op->extent);
        if (n && *n > 0) Visitor::visit_For(op);
      }
      void visit_Call(const CallNode* op) override {
        if (op->is(Builtin::IfThenElse) && !op->args.empty()) visit(op->args[0]);
        else Visitor::visit_Call(op);
      }
      void visit_And(const AndNode* op) override { visit(op->a); }
      void visit_Or(const OrNode* op) override { visit(op->a); }
      void visit_AssertStmt(const AssertStmtNode*) override { early_exit = true; }
      void visit_Evaluate(const EvaluateNode* op) override {
        early_exit = early_exit || statement_builtin(op);
        Visitor::visit_Evaluate(op);
      }
    } every;
    every.visit(node->body);
    if (every.early_exit) return kept;
    struct HasLoad : Visitor {
      bool found = false;
      void visit_BufferLoad(const BufferLoadNode*) override { found = true; }
    };
    for (const BufferLoadNode* l : every.loads) {
      const VarNode* data = l->buffer->data.get();
      if (!own_memory_.count(data) || stored.count(data) || register_arrays_.count(data) || l->indices.size() != 1 ||
          l->dtype.is_vector() || l->indices[0]->dtype.is_vector() || uses_any(l->indices[0], acc.bound) ||
          !promoted(l->buffer, l->indices).empty())
        continue;
      HasLoad inner;
      inner.visit(l->indices[0]);
      if (inner.found) continue;
      const DataType t = l->buffer->dtype;
      const int64_t reads = mutable_reads_;
      const std::string code = "(" + load_op(t) + " " + memarg(l->buffer, l->indices, l->span) + ")";
      if (kept.count(code) || reads != mutable_reads_) continue;
      std::string local = this->local("ld", wasm_type(t, l->span));
      line("(local.set " + local + " " + code + ")");
      kept.emplace(code, LoadedValue{data, local});
    }
    loads_ = kept;
    return kept;
  }

  // Iterations of `s` when every loop in it has a constant extent, with at most
  // kUnrollLimit in all; -1 otherwise (then it is not unrolled).
  static constexpr int64_t kUnrollLimit = 16;
  static int64_t unrolled_iterations(const Stmt& s) {
    struct Counter : Visitor {
      int64_t product = 1;
      bool ok = true;
      void visit_For(const ForNode* op) override {
        const int64_t* n = as_const_int(op->extent);
        if (!n || *n < 0 || !as_const_int(op->min)) {
          ok = false;
          return;
        }
        int64_t inner = unrolled_iterations(op->body);
        if (inner < 0 || *n * inner > kUnrollLimit) ok = false;
        else product = std::max(product, *n * inner);
      }
    } c;
    c.visit(s);
    return c.ok ? c.product : -1;
  }
  // Whether emit_loop unrolls `node`: a small constant nest of a small body. A long
  // straight line (a register tile's loop, already unrolled by its schedule) stays a loop:
  // V8 schedules the loads of a long line early and spills them.
  static constexpr int64_t kUnrollStoreLimit = 32;
  static bool unrolled(const ForNode* node) {
    const int64_t* min = as_const_int(node->min);
    const int64_t* extent = as_const_int(node->extent);
    const int64_t inner = unrolled_iterations(node->body);
    struct Stores : Visitor {
      int64_t count = 0;
      void visit_BufferStore(const BufferStoreNode* op) override {
        ++count;
        Visitor::visit_BufferStore(op);
      }
    } stores;
    stores.visit(node->body);
    return min && extent && inner > 0 && *extent * inner <= kUnrollLimit && *extent * stores.count <= kUnrollStoreLimit;
  }

  void emit_loop(const ForNode* node, const std::map<std::string, LoadedValue>& kept) {
    DataType t = node->loop_var->dtype;
    std::string ty = wasm_type(t, node->span);
    const int64_t* min = as_const_int(node->min);
    const int64_t* extent = as_const_int(node->extent);
    // Small constant nests are unrolled: the loop variable becomes a constant in each
    // copy, so Binaryen folds the index arithmetic and the bound checks (clang's -O2
    // does the same to the C backend's output).
    if (unrolled(node)) {
      for (int64_t k = *min; k < *min + *extent; ++k) {
        vars_[node->loop_var.get()] = {ty, "(" + ty + ".const " + std::to_string(k) + ")"};
        bounds_.bind(node->loop_var.get(), {k, k});
        emit(node->body);
      }
      bounds_.unbind(node->loop_var.get());
      return;
    }
    std::string i = local(node->loop_var->name, ty);
    // The end is set before the begin (when it needs a local): emitted first, for reused loads.
    WVal end = min && *min == 0 ? expr(node->extent) : expr(Binary(ExprKind::Add, node->min, node->extent));
    WVal begin = expr(node->min);
    std::string end_code = end.code;
    if (!extent || !min) {  // evaluated once, as the C loop's bound is loop-invariant
      std::string e = local(node->loop_var->name + ".end", ty);
      line("(local.set " + e + " " + end.code + ")");
      end_code = "(local.get " + e + ")";
    }
    line("(local.set " + i + " " + begin.code + ")");
    std::string exit = label("for.end"), head = label("for.head");
    // A loop that certainly runs is a do-while: one branch per iteration.
    const bool runs = extent && *extent > 0;
    line("(block " + exit);
    ++indent_;
    line("(loop " + head);
    ++indent_;
    if (!runs) line("(br_if " + exit + " (" + ty + ".ge" + sign_suffix(t) + " (local.get " + i + ") " + end_code + "))");
    vars_[node->loop_var.get()] = {ty, "(local.get " + i + ")"};
    IntBound lo = bounds_.bound(node->min), ext = bounds_.bound(node->extent);
    int64_t hi;
    if (ext.max >= 1 && !__builtin_add_overflow(lo.max, ext.max - 1, &hi)) bounds_.bind(node->loop_var.get(), {lo.min, hi});
    loads_ = kept;
    emit(node->body);
    loads_ = kept;
    bounds_.unbind(node->loop_var.get());
    line("(local.set " + i + " (" + ty + ".add (local.get " + i + ") (" + ty + ".const 1)))");
    if (runs) line("(br_if " + head + " (" + ty + ".lt" + sign_suffix(t) + " (local.get " + i + ") " + end_code + "))");
    else line("(br " + head + ")");
    --indent_;
    line(")");
    --indent_;
    line(")");
  }

  // A small array whose elements are only read and written one at a time, at indices that
  // are constants once the small loops are unrolled (a register tile's accumulators),
  // lives in locals: what clang's SROA does to the C backend's `int32_t acc[4]`. In
  // linear memory every multiply-add would be a load and a store V8 cannot remove.
  static constexpr int64_t kRegisterArrayLimit = 16;
  bool emit_register_array(const AllocateNode* node) {
    const Buffer& b = node->buffer;
    int64_t n = 0;
    if (!const_num_elements(b, &n) || n <= 0 || n > kRegisterArrayLimit || b->dtype.is_vector() || b->dtype.is_handle())
      return false;
    RegisterArrayUses uses;
    uses.data = b->data.get();
    uses.dtype = b->dtype;
    uses.visit(node->body);
    if (uses.escapes) return false;
    struct UnrolledLoops : Visitor {
      std::set<const VarNode*> vars;
      void visit_For(const ForNode* op) override {
        if (unrolled(op)) vars.insert(op->loop_var.get());
        Visitor::visit_For(op);
      }
    } inner;
    inner.visit(node->body);
    for (const VarNode* v : uses.index_vars) {
      const IntBound* r = bounds_.lookup(v);
      if (!inner.vars.count(v) && !(r && r->min == r->max)) return false;
    }
    std::vector<std::string> elements;
    const std::string ty = wasm_type(b->dtype, b->span);
    for (int64_t k = 0; k < n; ++k) elements.push_back(local(b->name + "." + std::to_string(k), ty));
    register_arrays_[b->data.get()] = elements;
    emit(node->body);
    register_arrays_.erase(b->data.get());
    return true;
  }
  // The local of a register array's element, or "" when the buffer is not one. An index
  // that is not a constant here is an internal error: emit_register_array checked that
  // every index is.
  std::string register_element(const Buffer& b, const std::vector<Expr>& indices, const Span& span) {
    auto it = register_arrays_.find(b->data.get());
    if (it == register_arrays_.end()) return "";
    IntBound k = bounds_.bound(indices.at(0));
    MTIR_ICHECK(k.min == k.max && k.min >= 0 && k.min < static_cast<int64_t>(it->second.size()),
                "the index of register array '" + b->name + "' is a constant in range (line " +
                    std::to_string(span.line) + ")");
    return it->second[static_cast<size_t>(k.min)];
  }

  // Every allocation comes from the module's LIFO allocator over the pool; freed in
  // order, also on every early return.
  void emit_allocate(const AllocateNode* node) {
    if (emit_register_array(node)) return;
    const Buffer& b = node->buffer;
    std::string bytes;
    int64_t n = 0;
    if (const_num_elements(b, &n)) {
      bytes = "(i64.const " + std::to_string(n * mem_bytes(b->dtype)) + ")";
    } else {
      bytes = "(i64.const " + std::to_string(mem_bytes(b->dtype)) + ")";
      for (const auto& d : b->shape) {
        WVal dv = cast(expr(d), d->dtype, DataType::Int(64), d->span);
        bytes = "(i64.mul " + bytes + " " + dv.code + ")";
      }
    }
    ms_->helpers.insert("$mtir.alloc");
    forget_loads();
    std::string p = local(b->name, "i32");
    line("(local.set " + p + " (call $mtir.alloc " + bytes + "))");
    line("(if (i32.eqz (local.get " + p + "))");
    ++indent_;
    line("(then");
    ++indent_;
    set_error(user_name() + ": the workspace pool has no room for '" + b->name + "'", {});
    emit_return("(i32.const -1)");
    --indent_;
    line(")");
    --indent_;
    line(")");
    vars_[b->data.get()] = {"i32", "(local.get " + p + ")"};
    own_memory_.insert(b->data.get());
    live_workspace_.push_back(p);
    emit(node->body);
    live_workspace_.pop_back();
    forget_loads();
    line("(if (call $mtir.free (local.get " + p + "))");
    ++indent_;
    line("(then");
    ++indent_;
    emit_return("(i32.const -1)");
    --indent_;
    line(")");
    --indent_;
    line(")");
  }

  void emit_return(const std::string& value) {
    if (live_workspace_.empty()) {
      line("(return " + value + ")");
      return;
    }
    std::string rc = local("rc", "i32");
    line("(local.set " + rc + " " + value + ")");
    for (size_t i = live_workspace_.size(); i-- > 0;) line("(drop (call $mtir.free (local.get " + live_workspace_[i] + ")))");
    line("(return (local.get " + rc + "))");
  }

  // The message's address and up to three values go to globals the host reads through
  // the last_error exports ("{}" in the message are the values).
  void set_error(const std::string& message, const std::vector<WVal>& values) {
    line("(global.set $mtir.err (i32.const " + int_text(ms_->string_address(message), 32) + "))");
    for (size_t k = 0; k < values.size(); ++k) line("(global.set $mtir.err" + std::to_string(k) + " " + values[k].code + ")");
  }
  void throw_last_error(const CallNode* c) {
    const auto* fmt = c->args.empty() ? nullptr : as<StringImmNode>(c->args[0]);
    if (!fmt) user_error(c->span, "T.tvm_throw_last_error needs a message string");
    if (c->args.size() > 4) user_error(c->span, "T.tvm_throw_last_error takes at most 3 values");
    std::vector<WVal> values;
    for (size_t i = 1; i < c->args.size(); ++i) values.push_back(cast(expr(c->args[i]), c->args[i]->dtype, DataType::Int(64), c->span));
    set_error(fmt->value, values);
    emit_return("(i32.const -1)");
  }

  ModuleState* ms_;
  std::string symbol_;
  PrimFunc func_;
  std::ostringstream body_;
  int indent_ = 2;
  int source_line_ = 0;  // of the statement being emitted
  int next_label_ = 0;
  std::set<std::string> used_;
  std::vector<std::pair<std::string, std::string>> locals_;
  std::unordered_map<const VarNode*, WVal> vars_;  // how each variable is read: a local, or a constant in unrolled code
  std::vector<std::string> live_workspace_;
  IntBoundAnalyzer bounds_;
  struct Promoted {
    const VarNode* data;
    Buffer buffer;
    Expr index;
    std::string local;
  };
  std::vector<Promoted> promoted_;
  std::map<std::string, LoadedValue> loads_;  // load text -> its value's local (reused_load)
  std::set<std::string> unread_loads_;        // locals of reused_load no local.get reads
  int64_t forgotten_ = 0;      // forget_loads calls so far
  int64_t mutable_reads_ = 0;  // reads of register array elements and promoted accumulators so far
  std::unordered_map<const VarNode*, std::vector<std::string>> register_arrays_;  // data -> a local per element
  bool noalias_ = noalias_param(func_, -1);  // the vectorizer's promise covers every buffer
  std::set<const VarNode*> own_memory_;  // data of parameters and allocations
};

// The trap-free integer division helpers, (a, b) -> result.
std::string division_helper(const std::string& name) {
  // name: $mtir.[floor]div|mod_s|u_i32|i64
  const std::string ty = name.substr(name.size() - 3);
  const bool is_signed = name.find("_s_") != std::string::npos;
  const bool floor = name.find("floor") != std::string::npos;
  const bool div = name.find("div") != std::string::npos;
  const std::string s = is_signed ? "_s" : "_u";
  auto c = [&](int v) { return "(" + ty + ".const " + std::to_string(v) + ")"; };
  std::ostringstream os;
  os << "  (func " << name << " (param $a " << ty << ") (param $b " << ty << ") (result " << ty << ")";
  if (is_signed) os << " (local $q " << ty << ") (local $r " << ty << ")";
  os << "\n";
  // A zero divisor divides by one.
  os << "    (if (" << ty << ".eqz (local.get $b)) (then (local.set $b " << c(1) << ")))\n";
  if (!is_signed) {
    os << "    (" << ty << (div ? ".div_u" : ".rem_u") << " (local.get $a) (local.get $b))\n  )\n";
    return os.str();
  }
  // MIN / -1 wraps to MIN (= 0 - a); its remainder is 0.
  os << "    (if (" << ty << ".eq (local.get $b) " << c(-1) << ") (then (return "
     << (div ? "(" + ty + ".sub " + c(0) + " (local.get $a))" : c(0)) << ")))\n";
  os << "    (local.set $q (" << ty << ".div" << s << " (local.get $a) (local.get $b)))\n";
  os << "    (local.set $r (" << ty << ".rem" << s << " (local.get $a) (local.get $b)))\n";
  if (!floor) {
    os << "    (local.get " << (div ? "$q" : "$r") << ")\n  )\n";
    return os.str();
  }
  // Truncation rounds toward zero; step down when the remainder's sign differs from b's.
  std::string adjust = "(i32.and (" + ty + ".ne (local.get $r) " + c(0) + ") (i32.ne (" + ty + ".lt_s (local.get $r) " +
                       c(0) + ") (" + ty + ".lt_s (local.get $b) " + c(0) + ")))";
  if (div) {
    os << "    (select (" << ty << ".sub (local.get $q) " << c(1) << ") (local.get $q) " << adjust << ")\n  )\n";
  } else {
    os << "    (select (" << ty << ".add (local.get $r) (local.get $b)) (local.get $r) " << adjust << ")\n  )\n";
  }
  return os.str();
}

// Bytes of the "local" scratch allocations of a function (each a block of the allocator).
int64_t local_scratch_bytes(const Stmt& s) {
  int64_t total = 0;
  struct Walker {
    int64_t* total;
    void walk(const Stmt& s) {
      if (!s) return;
      switch (s->kind) {
        case StmtKind::Allocate: {
          const auto* a = static_cast<const AllocateNode*>(s.get());
          int64_t n = 0;
          if (a->scope == "local" && const_num_elements(a->buffer, &n)) *total += block_bytes(n * mem_bytes(a->buffer->dtype));
          walk(a->body);
          return;
        }
        case StmtKind::For: walk(static_cast<const ForNode*>(s.get())->body); return;
        case StmtKind::While: walk(static_cast<const WhileNode*>(s.get())->body); return;
        case StmtKind::IfThenElse: {
          const auto* op = static_cast<const IfThenElseNode*>(s.get());
          walk(op->then_case);
          walk(op->else_case);
          return;
        }
        case StmtKind::LetStmt: walk(static_cast<const LetStmtNode*>(s.get())->body); return;
        case StmtKind::SeqStmt:
          for (const auto& c : static_cast<const SeqStmtNode*>(s.get())->seq) walk(c);
          return;
        case StmtKind::DeclBuffer: walk(static_cast<const DeclBufferNode*>(s.get())->body); return;
        case StmtKind::AttrStmt: walk(static_cast<const AttrStmtNode*>(s.get())->body); return;
        case StmtKind::AssertStmt: walk(static_cast<const AssertStmtNode*>(s.get())->body); return;
        case StmtKind::BufferStore:
        case StmtKind::Evaluate: return;  // no statement inside
      }
    }
  } w{&total};
  w.walk(s);
  return total;
}

// Where the module's memory goes: NULL page guard, constants and I/O buffers, the
// workspace pool, then the strings (placed while the functions are emitted).
struct MemoryLayout {
  std::vector<int64_t> param_address;  // of each parameter of the run export
  std::string io_exports;              // the "input:" and "output:" address globals
  std::vector<int64_t> initial_address;  // of each state's initial bytes (else -1)
  int64_t pool_base = 0, pool_bytes = 0, pool_end = 0;
};

MemoryLayout lay_out_memory(const WatOptions& options, int64_t local_scratch, ModuleState* ms) {
  MemoryLayout layout;
  int64_t at = 16;
  std::ostringstream exports;
  if (options.has_run) {
    for (const auto& p : options.run.params) {
      layout.param_address.push_back(at);
      layout.initial_address.push_back(-1);
      if (p.kind == WasmRunExport::Param::Kind::kState) {
        // The live state, then a copy of its initial bytes for reset.
        ms->data.emplace_back(at, p.data);
        at += round16(std::max<int64_t>(p.bytes, 1));
        layout.initial_address.back() = at;
        ms->data.emplace_back(at, p.data);
      } else if (p.kind == WasmRunExport::Param::Kind::kConstant) {
        ms->data.emplace_back(at, p.data);
      } else {
        const char* prefix = p.kind == WasmRunExport::Param::Kind::kInput ? "input:" : "output:";
        exports << "  (global (export \"" << prefix << p.name << "\") i32 (i32.const " << at << "))\n";
      }
      at += round16(std::max<int64_t>(p.bytes, 1));
    }
  }
  layout.io_exports = exports.str();
  layout.pool_base = at;
  layout.pool_bytes = round16(options.workspace_bytes) + local_scratch;
  layout.pool_end = at + layout.pool_bytes;
  ms->next_string = layout.pool_end;
  return layout;
}

// The run export: resets the pool and the error, refuses NULL buffers, calls main with
// the constants' addresses, the buffers and each device instance's context (an opaque
// i32 the host's device library knows).
std::string run_function(const WatOptions& options, const MemoryLayout& layout, ModuleState* ms) {
  if (!ms->functions.count(options.run.main_symbol))
    user_error(Span{}, "the wasm module has no main function '" + options.run.main_symbol + "'");
  std::ostringstream run, checks, call;
  run << "  (func $run (export \"run\")";
  for (size_t i = 0; i < options.run.params.size(); ++i) {
    const auto& p = options.run.params[i];
    if (p.kind == WasmRunExport::Param::Kind::kConstant || p.kind == WasmRunExport::Param::Kind::kState) {
      call << " (i32.const " << layout.param_address[i] << ")";
      continue;
    }
    std::string id = "$p" + std::to_string(i);
    run << " (param " << id << " i32)";
    const char* what = p.kind == WasmRunExport::Param::Kind::kInput ? "input" : "output";
    int64_t msg = ms->string_address("run: " + std::string(what) + " '" + p.name + "' is NULL");
    checks << "    (if (i32.eqz (local.get " << id << ")) (then (global.set $mtir.err (i32.const " << msg
           << ")) (return (i32.const " << kNullArgument << "))))\n";
    call << " (local.get " << id << ")";
  }
  for (size_t k = 0; k < options.run.devices.size(); ++k) {
    run << " (param $dev" << k << " i32)";
    call << " (local.get $dev" << k << ")";
  }
  run << " (result i32)\n"
      << "    (global.set $mtir.top (i32.const " << layout.pool_base << "))\n"
      << "    (global.set $mtir.err (i32.const 0))\n"
      << checks.str() << "    (call " << ident(options.run.main_symbol) << call.str() << ")\n  )\n";
  return run.str();
}

// The "reset" export when the model has state: each state's initial bytes copied back
// over it; returns 0.
std::string reset_function(const WatOptions& options, const MemoryLayout& layout) {
  std::ostringstream os;
  bool any = false;
  for (size_t i = 0; i < options.run.params.size(); ++i) {
    const auto& p = options.run.params[i];
    if (p.kind != WasmRunExport::Param::Kind::kState) continue;
    any = true;
    os << "    (local.set $i (i32.const 0))\n"
       << "    (block $done" << i << " (loop $next" << i << "\n"
       << "      (br_if $done" << i << " (i32.ge_u (local.get $i) (i32.const " << p.bytes << ")))\n"
       << "      (i32.store8 (i32.add (local.get $i) (i32.const " << layout.param_address[i] << "))"
       << " (i32.load8_u (i32.add (local.get $i) (i32.const " << layout.initial_address[i] << "))))\n"
       << "      (local.set $i (i32.add (local.get $i) (i32.const 1)))\n"
       << "      (br $next" << i << ")))\n";
  }
  if (!any) return "";
  return "  (func $mtir.reset (export \"reset\") (result i32) (local $i i32)\n" + os.str() + "    (i32.const 0)\n  )\n";
}

// The error globals and their exports: the message's address and up to three values.
std::string error_state() {
  std::ostringstream os;
  os << "  (global $mtir.err (mut i32) (i32.const 0))\n";
  for (int k = 0; k < 3; ++k) os << "  (global $mtir.err" << k << " (mut i64) (i64.const 0))\n";
  return os.str();
}
std::string error_exports() {
  std::ostringstream os;
  os << "  (func $last_error (export \"" << kWasmLastErrorExport << "\") (result i32) (global.get $mtir.err))\n";
  os << "  (func $last_error_value (export \"" << kWasmLastErrorValueExport << "\") (param $k i32) (result i64)\n"
     << "    (if (result i64) (i32.eqz (local.get $k)) (then (global.get $mtir.err0))\n"
     << "      (else (if (result i64) (i32.eq (local.get $k) (i32.const 1)) (then (global.get $mtir.err1))"
        " (else (global.get $mtir.err2))))))\n";
  return os.str();
}

// The workspace allocator: LIFO blocks, each with a 16-byte header holding its own
// address and the block's end, so a free checks that it frees the newest block.
std::string allocator_functions(const MemoryLayout& layout) {
  std::ostringstream os;
  os << "  (func $mtir.alloc (param $size i64) (result i32) (local $p i32) (local $end i32)\n"
     << "    (if (i64.gt_u (local.get $size) (i64.const " << layout.pool_bytes << ")) (then (return (i32.const 0))))\n"
     << "    (local.set $p (i32.add (global.get $mtir.top) (i32.const " << kBlockHeader << ")))\n"
     << "    (local.set $end (i32.add (local.get $p) (i32.and (i32.add (i32.wrap_i64 (local.get $size)) (i32.const 15)) "
        "(i32.const -16))))\n"
     << "    (if (i32.gt_u (local.get $end) (i32.const " << layout.pool_end << ")) (then (return (i32.const 0))))\n"
     << "    (i32.store (global.get $mtir.top) (global.get $mtir.top))\n"
     << "    (i32.store offset=4 (global.get $mtir.top) (local.get $end))\n"
     << "    (global.set $mtir.top (local.get $end))\n"
     << "    (local.get $p)\n  )\n";
  os << "  (func $mtir.free (param $p i32) (result i32) (local $h i32)\n"
     << "    (if (i32.or (i32.lt_u (local.get $p) (i32.const " << layout.pool_base + kBlockHeader
     << ")) (i32.gt_u (local.get $p) (i32.const " << layout.pool_end << "))) (then (return (i32.const -1))))\n"
     << "    (local.set $h (i32.sub (local.get $p) (i32.const " << kBlockHeader << ")))\n"
     << "    (if (i32.or (i32.ne (i32.load (local.get $h)) (local.get $h)) (i32.ne (i32.load offset=4 (local.get $h)) "
        "(global.get $mtir.top))) (then (return (i32.const -1))))\n"
     << "    (global.set $mtir.top (local.get $h))\n"
     << "    (i32.const 0)\n  )\n";
  return os.str();
}

}  // namespace

std::string codegen_wat(const IRModule& m, const WatOptions& options) {
  ModuleState ms;
  ms.mark_lines = options.line_map != nullptr;
  int64_t local_scratch = 0;
  for (const auto& [name, f] : m.functions) {
    const std::string symbol = symbol_of(name, f);
    if (is_packed(f)) {
      user_error(f->span, "function '" + name + "' uses the packed calling convention; the wasm backend builds "
                          "with -unpacked-api=1 -interface-api=c");
    }
    ms.functions[symbol] = f;
    local_scratch += local_scratch_bytes(f->body);
  }
  const MemoryLayout layout = lay_out_memory(options, local_scratch, &ms);

  std::ostringstream defs;
  for (const auto& [name, f] : m.functions) {
    FunctionEmitter emitter(&ms, symbol_of(name, f), f);
    defs << emitter.define(!options.has_run && !attr_flag(f, "tir.internal"));
  }
  const std::string run = options.has_run ? run_function(options, layout, &ms) + reset_function(options, layout) : "";

  const int64_t end = ms.next_string;
  const int64_t pages = std::max<int64_t>(1, (end + kWasmPage - 1) / kWasmPage);
  std::ostringstream os;
  os << ";; Generated by microtir " << MICROTIR_VERSION << " from module \"" << m.name << "\"";
  if (!options.description.empty()) os << " (" << options.description << ")";
  os << ". Do not edit.\n";
  os << ";; memory: constants and I/O from 16, workspace pool [" << layout.pool_base << ", " << layout.pool_end
     << "), strings to " << end << "\n(module\n";
  for (const auto& [id, line] : ms.imports) os << "  " << line << "\n";
  os << "  (memory (export \"memory\") " << pages << ")\n";
  os << "  (global $mtir.top (mut i32) (i32.const " << layout.pool_base << "))\n";
  os << error_state() << layout.io_exports << error_exports();
  if (ms.helpers.count("$mtir.alloc")) os << allocator_functions(layout);
  for (const auto& h : ms.helpers)
    if (h != "$mtir.alloc") os << division_helper(h);
  os << run << defs.str();
  for (const auto& [addr, bytes] : ms.data) os << "  (data (i32.const " << addr << ") " << data_literal(bytes) << ")\n";
  os << ")\n";
  return options.line_map ? strip_line_marks(os.str(), options.line_map) : os.str();
}

}  // namespace mtir
