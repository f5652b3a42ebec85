#include "ir/structural_equal.h"

#include <functional>
#include <unordered_map>

namespace mtir {
namespace {

// Compares two trees, recording the first mismatch.
class Comparator {
 public:
  std::string diff;
  // Free variables and buffers must be the very same objects (same_expr), instead of
  // corresponding one to one (structural equality of two separately built trees).
  bool identity = false;

  bool fail(const std::string& what) {
    if (diff.empty()) diff = what;
    return false;
  }

  bool var(const Var& a, const Var& b) {
    if (!a || !b) return a == b || fail("missing variable");
    if (identity) return a == b || fail("variables '" + a->name + "' and '" + b->name + "' differ");
    if (a->dtype != b->dtype) return fail("variable '" + a->name + "' has type " + a->dtype.str() + " vs " + b->dtype.str());
    if (a->pointee != b->pointee || a->pointer_scope != b->pointer_scope)
      return fail("pointer variable '" + a->name + "' points to another type or scope");
    if (a->thread_tag != b->thread_tag) return fail("thread variable '" + a->name + "' names another thread");
    auto ia = lhs_vars_.find(a.get());
    auto ib = rhs_vars_.find(b.get());
    if (ia == lhs_vars_.end() && ib == rhs_vars_.end()) {
      lhs_vars_[a.get()] = b.get();
      rhs_vars_[b.get()] = a.get();
      return true;
    }
    if (ia != lhs_vars_.end() && ia->second == b.get()) return true;
    return fail("variable '" + a->name + "' does not correspond to '" + b->name + "'");
  }

  bool buffer(const Buffer& a, const Buffer& b) {
    if (!a || !b) return a == b || fail("missing buffer");
    if (identity) return a == b || fail("buffers '" + a->name + "' and '" + b->name + "' differ");
    auto ia = lhs_bufs_.find(a.get());
    auto ib = rhs_bufs_.find(b.get());
    if (ia != lhs_bufs_.end() || ib != rhs_bufs_.end()) {
      if (ia != lhs_bufs_.end() && ia->second == b.get()) return true;
      return fail("buffer '" + a->name + "' does not correspond to '" + b->name + "'");
    }
    lhs_bufs_[a.get()] = b.get();
    rhs_bufs_[b.get()] = a.get();
    if (a->dtype != b->dtype) return fail("buffer '" + a->name + "' dtype differs");
    if (a->align != b->align) return fail("buffer '" + a->name + "' alignment differs");
    if (a->axis_separators != b->axis_separators) return fail("buffer '" + a->name + "' axis separators differ");
    return exprs(a->shape, b->shape) && exprs(a->strides, b->strides) && expr(a->elem_offset, b->elem_offset) &&
           var(a->data, b->data);
  }

  bool exprs(const std::vector<Expr>& a, const std::vector<Expr>& b) {
    if (a.size() != b.size()) return fail("different number of operands");
    for (size_t i = 0; i < a.size(); ++i)
      if (!expr(a[i], b[i])) return false;
    return true;
  }

  bool predicate(const Expr& a, const Expr& b) {
    if (!a || !b) return (!a && !b) || fail("one access has a predicate, the other none");
    return expr(a, b);
  }
  bool expr(const Expr& a, const Expr& b) {
    if (!a || !b) return (!a && !b) || fail("missing expression");
    if (a->kind != b->kind) return fail(std::string(expr_kind_name(a->kind)) + " vs " + expr_kind_name(b->kind));
    if (a->dtype != b->dtype) return fail(std::string(expr_kind_name(a->kind)) + " of type " + a->dtype.str() + " vs " + b->dtype.str());
    switch (a->kind) {
      case ExprKind::IntImm:
        return as<IntImmNode>(a)->value == as<IntImmNode>(b)->value || fail("integer constants differ");
      case ExprKind::FloatImm: {
        double x = as<FloatImmNode>(a)->value, y = as<FloatImmNode>(b)->value;
        return x == y || (x != x && y != y) || fail("float constants differ");
      }
      case ExprKind::StringImm:
        return as<StringImmNode>(a)->value == as<StringImmNode>(b)->value || fail("strings differ");
      case ExprKind::Var: return var(std::static_pointer_cast<const VarNode>(a), std::static_pointer_cast<const VarNode>(b));
#define MTIR_BINARY(Name) case ExprKind::Name:
#include "ir/nodes.def"
      {
        const auto* x = static_cast<const BinaryNode*>(a.get());
        const auto* y = static_cast<const BinaryNode*>(b.get());
        return expr(x->a, y->a) && expr(x->b, y->b);
      }
      case ExprKind::Not: return expr(as<NotNode>(a)->a, as<NotNode>(b)->a);
      case ExprKind::Select: {
        const auto *x = as<SelectNode>(a), *y = as<SelectNode>(b);
        return expr(x->condition, y->condition) && expr(x->true_value, y->true_value) &&
               expr(x->false_value, y->false_value);
      }
      case ExprKind::Cast: return expr(as<CastNode>(a)->value, as<CastNode>(b)->value);
      case ExprKind::BufferLoad: {
        const auto *x = as<BufferLoadNode>(a), *y = as<BufferLoadNode>(b);
        return buffer(x->buffer, y->buffer) && exprs(x->indices, y->indices) && predicate(x->predicate, y->predicate);
      }
      case ExprKind::Call: {
        const auto *x = as<CallNode>(a), *y = as<CallNode>(b);
        if (x->op != y->op) return fail("call to " + x->op + " vs " + y->op);
        if (x->attrs != y->attrs) return fail("call attributes of " + x->op + " differ");
        return exprs(x->args, y->args);
      }
      case ExprKind::Ramp: {
        const auto *x = as<RampNode>(a), *y = as<RampNode>(b);
        return expr(x->base, y->base) && expr(x->stride, y->stride);  // lanes: in the dtype
      }
      case ExprKind::Broadcast: return expr(as<BroadcastNode>(a)->value, as<BroadcastNode>(b)->value);
      case ExprKind::Shuffle: {
        const auto *x = as<ShuffleNode>(a), *y = as<ShuffleNode>(b);
        if (x->indices != y->indices) return fail("shuffle lane indices differ");
        return exprs(x->vectors, y->vectors);
      }
      case ExprKind::Let: {
        const auto *x = as<LetNode>(a), *y = as<LetNode>(b);
        return var(x->var, y->var) && expr(x->value, y->value) && expr(x->body, y->body);
      }
    }
    return fail("unknown expression");
  }

  bool stmt(const Stmt& a, const Stmt& b) {
    if (!a || !b) return (!a && !b) || fail("missing statement");
    if (a->kind != b->kind) return fail(std::string(stmt_kind_name(a->kind)) + " vs " + stmt_kind_name(b->kind));
    switch (a->kind) {
      case StmtKind::BufferStore: {
        const auto *x = as<BufferStoreNode>(a), *y = as<BufferStoreNode>(b);
        return buffer(x->buffer, y->buffer) && expr(x->value, y->value) && exprs(x->indices, y->indices) &&
               predicate(x->predicate, y->predicate);
      }
      case StmtKind::For: {
        const auto *x = as<ForNode>(a), *y = as<ForNode>(b);
        if (x->for_kind != y->for_kind) return fail("loop kinds differ");
        if (x->thread_tag != y->thread_tag) return fail("loop thread tags differ");
        if (x->annotations != y->annotations) return fail("loop annotations differ");
        return var(x->loop_var, y->loop_var) && expr(x->min, y->min) && expr(x->extent, y->extent) &&
               stmt(x->body, y->body);
      }
      case StmtKind::IfThenElse: {
        const auto *x = as<IfThenElseNode>(a), *y = as<IfThenElseNode>(b);
        return expr(x->condition, y->condition) && stmt(x->then_case, y->then_case) &&
               stmt(x->else_case, y->else_case);
      }
      case StmtKind::While: {
        const auto *x = as<WhileNode>(a), *y = as<WhileNode>(b);
        return expr(x->condition, y->condition) && stmt(x->body, y->body);
      }
      case StmtKind::LetStmt: {
        const auto *x = as<LetStmtNode>(a), *y = as<LetStmtNode>(b);
        return var(x->var, y->var) && expr(x->value, y->value) && stmt(x->body, y->body);
      }
      case StmtKind::SeqStmt: {
        const auto *x = as<SeqStmtNode>(a), *y = as<SeqStmtNode>(b);
        if (x->seq.size() != y->seq.size()) return fail("sequences of different length");
        for (size_t i = 0; i < x->seq.size(); ++i)
          if (!stmt(x->seq[i], y->seq[i])) return false;
        return true;
      }
      case StmtKind::Evaluate: return expr(as<EvaluateNode>(a)->value, as<EvaluateNode>(b)->value);
      case StmtKind::Allocate: {
        const auto *x = as<AllocateNode>(a), *y = as<AllocateNode>(b);
        if (x->scope != y->scope) return fail("allocation scopes differ");
        return buffer(x->buffer, y->buffer) && stmt(x->body, y->body);
      }
      case StmtKind::DeclBuffer: {
        const auto *x = as<DeclBufferNode>(a), *y = as<DeclBufferNode>(b);
        return buffer(x->buffer, y->buffer) && stmt(x->body, y->body);
      }
      case StmtKind::AttrStmt: {
        const auto *x = as<AttrStmtNode>(a), *y = as<AttrStmtNode>(b);
        if (x->key != y->key) return fail("attribute keys differ");
        return expr(x->node, y->node) && expr(x->value, y->value) && stmt(x->body, y->body);
      }
      case StmtKind::AssertStmt: {
        const auto *x = as<AssertStmtNode>(a), *y = as<AssertStmtNode>(b);
        if (x->message != y->message) return fail("assert messages differ");
        return expr(x->condition, y->condition) && stmt(x->body, y->body);
      }
      case StmtKind::AllocateConst: {
        const auto *x = as<AllocateConstNode>(a), *y = as<AllocateConstNode>(b);
        if (x->ints != y->ints || x->floats != y->floats) return fail("constant data differs");
        return buffer(x->buffer, y->buffer) && stmt(x->body, y->body);
      }
      case StmtKind::BufferRealize: {
        const auto *x = as<BufferRealizeNode>(a), *y = as<BufferRealizeNode>(b);
        if (x->scope != y->scope) return fail("realize scopes differ");
        if (x->bounds.size() != y->bounds.size()) return fail("realize bounds differ");
        for (size_t i = 0; i < x->bounds.size(); ++i)
          if (!expr(x->bounds[i].first, y->bounds[i].first) || !expr(x->bounds[i].second, y->bounds[i].second))
            return false;
        return buffer(x->buffer, y->buffer) && expr(x->condition, y->condition) && stmt(x->body, y->body);
      }
    }
    return fail("unknown statement");
  }

  bool func(const PrimFunc& a, const PrimFunc& b) {
    if (!a || !b) return a == b || fail("missing function");
    if (a->params.size() != b->params.size()) return fail("different number of parameters");
    if (a->ret_type != b->ret_type) return fail("return types differ");
    if (a->attrs != b->attrs) return fail("function attributes differ");
    for (size_t i = 0; i < a->params.size(); ++i) {
      if (!var(a->params[i], b->params[i])) return false;
      const Buffer &x = a->param_buffers[i], &y = b->param_buffers[i];
      if ((x == nullptr) != (y == nullptr)) return fail("parameter " + a->params[i]->name + ": buffer vs scalar");
      if (x && !buffer(x, y)) return false;
    }
    return stmt(a->body, b->body);
  }

 private:
  std::unordered_map<const VarNode*, const VarNode*> lhs_vars_, rhs_vars_;
  std::unordered_map<const BufferNode*, const BufferNode*> lhs_bufs_, rhs_bufs_;
};

std::string module_diff(const IRModule& a, const IRModule& b) {
  if (a.attrs != b.attrs) return "module attributes differ";
  if (a.functions.size() != b.functions.size()) return "different number of functions";
  for (size_t i = 0; i < a.functions.size(); ++i) {
    if (a.functions[i].first != b.functions[i].first)
      return "function '" + a.functions[i].first + "' vs '" + b.functions[i].first + "'";
    Comparator c;
    if (!c.func(a.functions[i].second, b.functions[i].second))
      return "in function '" + a.functions[i].first + "': " + c.diff;
  }
  return "";
}

// Hashes a tree; a variable or buffer hashes as the order in which it was first seen.
class Hasher {
 public:
  // The golden-ratio constant at the width of size_t (32 bits in wasm32).
  static constexpr size_t kGolden = static_cast<size_t>(0x9e3779b97f4a7c15ull);
  size_t h = kGolden;

  void mix(size_t v) { h ^= v + kGolden + (h << 6) + (h >> 2); }
  void mix_str(const std::string& s) { mix(std::hash<std::string>()(s)); }
  void mix_type(DataType t) { mix(static_cast<size_t>(t.code()) * 1000003u + t.bits() * 131u + t.lanes()); }

  void var(const VarNode* v) {
    auto it = vars_.find(v);
    if (it == vars_.end()) it = vars_.emplace(v, vars_.size()).first;
    mix(0x51ed27u + it->second);
    mix_type(v->dtype);
  }
  void buffer(const Buffer& b) {
    auto it = bufs_.find(b.get());
    if (it != bufs_.end()) return mix(0xb0f + it->second);
    bufs_.emplace(b.get(), bufs_.size());
    mix_type(b->dtype);
    mix(b->align);
    for (int64_t s : b->axis_separators) mix(static_cast<size_t>(s));
    for (const auto& e : b->shape) expr(e);
    mix(b->strides.size());
    for (const auto& e : b->strides) expr(e);
    expr(b->elem_offset);
    var(b->data.get());
  }
  void attrs(const Attrs& a) {
    for (const auto& [k, v] : a) {
      mix_str(k);
      mix(v.index());
      if (const auto* s = std::get_if<std::string>(&v)) mix_str(*s);
      else if (const auto* i = std::get_if<int64_t>(&v)) mix(static_cast<size_t>(*i));
      else if (const auto* bo = std::get_if<bool>(&v)) mix(*bo);
      else mix(std::hash<double>()(std::get<double>(v)));
    }
  }
  void expr(const Expr& e) {
    if (!e) return mix(0);
    mix(static_cast<size_t>(e->kind) + 17);
    mix_type(e->dtype);
    switch (e->kind) {
      case ExprKind::IntImm: return mix(static_cast<size_t>(as<IntImmNode>(e)->value));
      case ExprKind::FloatImm: return mix(std::hash<double>()(as<FloatImmNode>(e)->value));
      case ExprKind::StringImm: return mix_str(as<StringImmNode>(e)->value);
      case ExprKind::Var: return var(as<VarNode>(e));
#define MTIR_BINARY(Name) case ExprKind::Name:
#include "ir/nodes.def"
      {
        const auto* x = static_cast<const BinaryNode*>(e.get());
        expr(x->a);
        return expr(x->b);
      }
      case ExprKind::Not: return expr(as<NotNode>(e)->a);
      case ExprKind::Select: {
        const auto* x = as<SelectNode>(e);
        expr(x->condition);
        expr(x->true_value);
        return expr(x->false_value);
      }
      case ExprKind::Cast: return expr(as<CastNode>(e)->value);
      case ExprKind::BufferLoad: {
        const auto* x = as<BufferLoadNode>(e);
        buffer(x->buffer);
        for (const auto& i : x->indices) expr(i);
        return expr(x->predicate);
      }
      case ExprKind::Call: {
        const auto* x = as<CallNode>(e);
        mix_str(x->op);
        attrs(x->attrs);
        for (const auto& a : x->args) expr(a);
        return;
      }
      case ExprKind::Ramp:
        expr(as<RampNode>(e)->base);
        return expr(as<RampNode>(e)->stride);
      case ExprKind::Broadcast: return expr(as<BroadcastNode>(e)->value);
      case ExprKind::Shuffle:
        for (int i : as<ShuffleNode>(e)->indices) mix(static_cast<size_t>(i));
        for (const auto& v : as<ShuffleNode>(e)->vectors) expr(v);
        return;
      case ExprKind::Let:
        var(as<LetNode>(e)->var.get());
        expr(as<LetNode>(e)->value);
        return expr(as<LetNode>(e)->body);
    }
  }
  void stmt(const Stmt& s) {
    if (!s) return mix(1);
    mix(static_cast<size_t>(s->kind) + 1001);
    switch (s->kind) {
      case StmtKind::BufferStore: {
        const auto* x = as<BufferStoreNode>(s);
        buffer(x->buffer);
        expr(x->value);
        for (const auto& i : x->indices) expr(i);
        return expr(x->predicate);
      }
      case StmtKind::For: {
        const auto* x = as<ForNode>(s);
        mix(static_cast<size_t>(x->for_kind));
        var(x->loop_var.get());
        expr(x->min);
        expr(x->extent);
        return stmt(x->body);
      }
      case StmtKind::IfThenElse: {
        const auto* x = as<IfThenElseNode>(s);
        expr(x->condition);
        stmt(x->then_case);
        return stmt(x->else_case);
      }
      case StmtKind::LetStmt: {
        const auto* x = as<LetStmtNode>(s);
        var(x->var.get());
        expr(x->value);
        return stmt(x->body);
      }
      case StmtKind::SeqStmt:
        for (const auto& c : as<SeqStmtNode>(s)->seq) stmt(c);
        return;
      case StmtKind::While:
        expr(as<WhileNode>(s)->condition);
        return stmt(as<WhileNode>(s)->body);
      case StmtKind::Evaluate: return expr(as<EvaluateNode>(s)->value);
      case StmtKind::Allocate: {
        const auto* x = as<AllocateNode>(s);
        mix_str(x->scope);
        buffer(x->buffer);
        return stmt(x->body);
      }
      case StmtKind::DeclBuffer: {
        const auto* x = as<DeclBufferNode>(s);
        buffer(x->buffer);
        return stmt(x->body);
      }
      case StmtKind::AttrStmt: {
        const auto* x = as<AttrStmtNode>(s);
        mix_str(x->key);
        expr(x->node);
        expr(x->value);
        return stmt(x->body);
      }
      case StmtKind::AssertStmt: {
        const auto* x = as<AssertStmtNode>(s);
        mix_str(x->message);
        expr(x->condition);
        return stmt(x->body);
      }
      case StmtKind::AllocateConst: {
        const auto* x = as<AllocateConstNode>(s);
        for (int64_t v : x->ints) mix(static_cast<size_t>(v));
        for (double v : x->floats) mix(std::hash<double>()(v));
        buffer(x->buffer);
        return stmt(x->body);
      }
      case StmtKind::BufferRealize: {
        const auto* x = as<BufferRealizeNode>(s);
        mix_str(x->scope);
        buffer(x->buffer);
        for (const auto& [min, extent] : x->bounds) expr(min), expr(extent);
        expr(x->condition);
        return stmt(x->body);
      }
    }
  }
  void func(const PrimFunc& f) {
    mix_type(f->ret_type);
    attrs(f->attrs);
    for (size_t i = 0; i < f->params.size(); ++i) {
      var(f->params[i].get());
      if (f->param_buffers[i]) buffer(f->param_buffers[i]);
    }
    stmt(f->body);
  }

 private:
  std::unordered_map<const VarNode*, size_t> vars_;
  std::unordered_map<const BufferNode*, size_t> bufs_;
};

}  // namespace

bool structural_equal(const Expr& a, const Expr& b) { return Comparator().expr(a, b); }
bool structural_equal(const Stmt& a, const Stmt& b) { return Comparator().stmt(a, b); }
bool same_expr(const Expr& a, const Expr& b) {
  Comparator c;
  c.identity = true;
  return c.expr(a, b);
}
bool structural_equal(const PrimFunc& a, const PrimFunc& b) { return Comparator().func(a, b); }
bool structural_equal(const IRModule& a, const IRModule& b) { return module_diff(a, b).empty(); }
std::string structural_diff(const IRModule& a, const IRModule& b) { return module_diff(a, b); }

size_t structural_hash(const Expr& e) {
  Hasher h;
  h.expr(e);
  return h.h;
}
size_t structural_hash(const Stmt& s) {
  Hasher h;
  h.stmt(s);
  return h.h;
}
size_t structural_hash(const PrimFunc& f) {
  Hasher h;
  h.func(f);
  return h.h;
}
size_t structural_hash(const IRModule& m) {
  Hasher h;
  h.attrs(m.attrs);
  for (const auto& [name, f] : m.functions) {
    h.mix_str(name);
    Hasher inner;  // each function has its own variable numbering
    inner.func(f);
    h.mix(inner.h);
  }
  return h.h;
}

}  // namespace mtir
