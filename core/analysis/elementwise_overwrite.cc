#include "analysis/elementwise_overwrite.h"

#include <algorithm>
#include <set>
#include <unordered_map>
#include <vector>

#include "ir/flat_view.h"
#include "ir/structural_equal.h"
#include "ir/visitor.h"

namespace mtir {
namespace {

// Every load of one buffer, with its indices.
struct Loads : Visitor {
  explicit Loads(const Buffer& b) : buffer(b) {}
  Buffer buffer;
  std::vector<const std::vector<Expr>*> indices;
  void visit_BufferLoad(const BufferLoadNode* op) override {
    if (op->buffer == buffer) indices.push_back(&op->indices);
    Visitor::visit_BufferLoad(op);
  }
};

bool same_shape(const Buffer& a, const Buffer& b) {
  if (a->shape.size() != b->shape.size()) return false;
  for (size_t k = 0; k < a->shape.size(); ++k)
    if (!same_expr(a->shape[k], b->shape[k]) && !structural_equal(a->shape[k], b->shape[k])) return false;
  return true;
}

bool is_zero(const Expr& e) {
  const int64_t* v = as_const_int(e);
  return v && *v == 0;
}

// Each index is a loop variable of `loops` or 0, and every loop variable is used once.
bool one_element_per_iteration(const std::vector<Expr>& idx, const std::vector<const VarNode*>& loops) {
  std::set<const VarNode*> used;
  for (const Expr& e : idx) {
    if (is_zero(e)) continue;
    const auto* v = as<VarNode>(e);
    if (!v || std::find(loops.begin(), loops.end(), v) == loops.end() || !used.insert(v).second) return false;
  }
  return used.size() == loops.size();
}

bool same_indices(const std::vector<Expr>& a, const std::vector<Expr>& b) {
  if (a.size() != b.size()) return false;
  for (size_t k = 0; k < a.size(); ++k)
    if (!same_expr(a[k], b[k])) return false;
  return true;
}

// ---- several stores, each element written once -----------------------------------

// Every read of `in` (or a flat view of it) lies in the value of a store to `out` (or a
// flat view of it) at that store's own index, nothing reads `out`, and no other buffer
// names the memory of either (a view would hide accesses).
class ReadsAtStores : public Visitor {
 public:
  ReadsAtStores(const Buffer& in, const Buffer& out) : in_(in), out_(out) {}
  bool ok = true;

 protected:
  void visit_BufferStore(const BufferStoreNode* op) override {
    const bool view = is_flat_view_of(op->buffer, out_);
    if (op->buffer != out_ && !view) return Visitor::visit_BufferStore(op);
    for (const Expr& i : op->indices) visit(i);
    const std::vector<Expr>* outer = at_;
    const bool outer_view = at_view_;
    at_ = &op->indices, at_view_ = view;
    visit(op->value);
    at_ = outer, at_view_ = outer_view;
  }
  void visit_BufferLoad(const BufferLoadNode* op) override {
    const bool in_view = is_flat_view_of(op->buffer, in_);
    if (op->buffer == out_ || is_flat_view_of(op->buffer, out_)) ok = false;
    if ((op->buffer == in_ || in_view) && (!at_ || in_view != at_view_ || !same_indices(op->indices, *at_))) ok = false;
    Visitor::visit_BufferLoad(op);
  }
  void visit_buffer(const Buffer& b) override {
    if (b && b != in_ && b != out_ && b->data && (b->data == in_->data || b->data == out_->data) &&
        !is_flat_view_of(b, in_) && !is_flat_view_of(b, out_))
      ok = false;
    Visitor::visit_buffer(b);
  }

 private:
  Buffer in_, out_;
  const std::vector<Expr>* at_ = nullptr;
  bool at_view_ = false;
};

// Runs the control flow around the stores to `out` with every loop variable bound to
// its value and marks the element each store execution writes: false as soon as an
// element is written twice, an index is not a function of the loop and let variables,
// or a loop bound is not constant. Loops without a store to `out` are not entered, so
// the work is one step per element written (the reductions of a convolution cost nothing).
class WriteOnceCheck {
 public:
  WriteOnceCheck(const Buffer& out, int64_t elements) : out_(out), written_(static_cast<size_t>(elements), false) {}

  bool run(const Stmt& s) {
    if (!s) return true;
    if (!stores_out(s)) return true;
    if (const auto* store = as<BufferStoreNode>(s))
      return store->buffer == out_ ? mark(store->indices) : mark_flat(store->indices.at(0));
    if (const auto* seq = as<SeqStmtNode>(s)) {
      for (const Stmt& c : seq->seq)
        if (!run(c)) return false;
      return true;
    }
    if (const auto* loop = as<ForNode>(s)) {
      int64_t min = 0, extent = 0;
      if (!eval(loop->min, &min) || !eval(loop->extent, &extent)) return false;
      for (int64_t i = 0; i < extent; ++i) {
        env_[loop->loop_var.get()] = min + i;
        if (!run(loop->body)) return false;
      }
      env_.erase(loop->loop_var.get());
      return true;
    }
    if (const auto* branch = as<IfThenElseNode>(s)) {
      int64_t c = 0;
      if (eval(branch->condition, &c)) return run(c ? branch->then_case : branch->else_case);
      return run(branch->then_case) && run(branch->else_case);  // either may run: count both
    }
    if (const auto* let = as<LetStmtNode>(s)) {
      int64_t v = 0;
      if (eval(let->value, &v)) env_[let->var.get()] = v;
      bool ok = run(let->body);
      env_.erase(let->var.get());
      return ok;
    }
    if (const auto* a = as<AllocateNode>(s)) return run(a->body);
    if (const auto* d = as<DeclBufferNode>(s)) return run(d->body);
    if (const auto* a = as<AttrStmtNode>(s)) return run(a->body);
    if (const auto* a = as<AssertStmtNode>(s)) return run(a->body);
    return false;  // a while loop (or an evaluate that stores): not counted
  }

 private:
  bool stores_out(const Stmt& s) {
    auto it = stores_.find(s.get());
    if (it != stores_.end()) return it->second;
    struct Finder : Visitor {
      Buffer out;
      bool found = false;
      void visit_BufferStore(const BufferStoreNode* op) override {
        found = found || op->buffer == out || is_flat_view_of(op->buffer, out);
        Visitor::visit_BufferStore(op);
      }
    } f;
    f.out = out_;
    f.visit(s);
    return stores_[s.get()] = f.found;
  }

  bool mark(const std::vector<Expr>& indices) {
    if (indices.size() != out_->shape.size()) return false;
    int64_t flat = 0;
    for (size_t k = 0; k < indices.size(); ++k) {
      int64_t i = 0;
      const int64_t* extent = as_const_int(out_->shape[k]);
      if (!extent || !eval(indices[k], &i) || i < 0 || i >= *extent) return false;
      flat = flat * *extent + i;
    }
    if (written_[static_cast<size_t>(flat)]) return false;
    written_[static_cast<size_t>(flat)] = true;
    return true;
  }

  // A store through a flat view: each lane of its index (a Ramp, a Shuffle of them, a
  // Broadcast or a scalar) marks one element.
  bool mark_flat(const Expr& index) {
    for (int k = 0; k < index->dtype.lanes(); ++k) {
      int64_t i = 0;
      if (!eval_lane(index, k, &i) || i < 0 || i >= static_cast<int64_t>(written_.size()) || written_[static_cast<size_t>(i)])
        return false;
      written_[static_cast<size_t>(i)] = true;
    }
    return true;
  }
  bool eval_lane(const Expr& e, int k, int64_t* out) const {
    if (!e->dtype.is_vector()) return eval(e, out);
    if (const auto* ramp = as<RampNode>(e)) {
      int64_t base = 0, stride = 0;
      if (!eval(ramp->base, &base) || !eval(ramp->stride, &stride)) return false;
      return *out = base + stride * k, true;
    }
    if (const auto* b = as<BroadcastNode>(e)) return eval(b->value, out);
    if (const auto* shuffle = as<ShuffleNode>(e)) {
      int lane = shuffle->indices.at(static_cast<size_t>(k));
      for (const Expr& v : shuffle->vectors) {
        if (lane < v->dtype.lanes()) return eval_lane(v, lane, out);
        lane -= v->dtype.lanes();
      }
    }
    return false;
  }
  bool eval(const Expr& e, int64_t* out) const {
    if (const int64_t* c = as_const_int(e)) return *out = *c, true;
    if (const auto* v = as<VarNode>(e)) {
      auto it = env_.find(v);
      return it != env_.end() && (*out = it->second, true);
    }
    if (const auto* c = as<CastNode>(e)) return c->dtype.is_integer() && c->dtype.bits() >= 32 && eval(c->value, out);
    const auto* bin = dynamic_cast<const BinaryNode*>(e.get());
    int64_t a = 0, b = 0;
    if (!bin || !eval(bin->a, &a) || !eval(bin->b, &b)) return false;
    // Loop indices are small: none of these overflows int64.
    switch (e->kind) {
      case ExprKind::Add: *out = a + b; return true;
      case ExprKind::Sub: *out = a - b; return true;
      case ExprKind::Mul: *out = a * b; return true;
      case ExprKind::Min: *out = std::min(a, b); return true;
      case ExprKind::Max: *out = std::max(a, b); return true;
      case ExprKind::FloorDiv:
      case ExprKind::FloorMod: {
        if (b == 0) return false;
        int64_t q = a / b - ((a % b != 0) && ((a < 0) != (b < 0)));
        *out = e->kind == ExprKind::FloorDiv ? q : a - q * b;
        return true;
      }
      case ExprKind::LT: *out = a < b; return true;
      case ExprKind::LE: *out = a <= b; return true;
      case ExprKind::GT: *out = a > b; return true;
      case ExprKind::GE: *out = a >= b; return true;
      case ExprKind::EQ: *out = a == b; return true;
      case ExprKind::NE: *out = a != b; return true;
      case ExprKind::And: *out = a && b; return true;
      case ExprKind::Or: *out = a || b; return true;
      default: return false;
    }
  }

  Buffer out_;
  std::vector<bool> written_;
  std::unordered_map<const VarNode*, int64_t> env_;
  std::unordered_map<const StmtNode*, bool> stores_;
};

// Outputs larger than this are not counted element by element (the check then fails
// and the output keeps bytes of its own).
constexpr int64_t kMaxCountedElements = int64_t{1} << 22;

bool writes_each_element_once_over(const PrimFunc& kernel, const Buffer& in, const Buffer& out) {
  int64_t elements = 0;
  if (!const_num_elements(out, &elements) || elements > kMaxCountedElements) return false;
  ReadsAtStores reads(in, out);
  reads.visit(kernel->body);
  return reads.ok && WriteOnceCheck(out, elements).run(kernel->body);
}

// The perfect loop nest around one store.
bool one_store_nest(const PrimFunc& kernel, const Buffer& in, const Buffer& out) {
  std::vector<const VarNode*> loops;
  Stmt s = kernel->body;
  while (const auto* loop = as<ForNode>(s)) {
    if (!is_zero(loop->min)) return false;
    loops.push_back(loop->loop_var.get());
    s = loop->body;
  }
  while (const auto* let = as<LetStmtNode>(s)) s = let->body;
  const auto* store = as<BufferStoreNode>(s);
  if (!store || store->buffer != out || !one_element_per_iteration(store->indices, loops)) return false;
  // The whole body is the nest, the lets and the store: every read is one of these.
  Loads of_in(in), of_out(out);
  of_in.visit(kernel->body);
  of_out.visit(kernel->body);
  if (!of_out.indices.empty()) return false;
  return std::all_of(of_in.indices.begin(), of_in.indices.end(),
                     [&](const std::vector<Expr>* idx) { return same_indices(*idx, store->indices); });
}

}  // namespace

bool writes_elementwise_over(const PrimFunc& kernel, size_t input) {
  if (!kernel || input + 1 >= kernel->param_buffers.size()) return false;
  const Buffer& in = kernel->param_buffers[input];
  const Buffer& out = kernel->param_buffers.back();
  if (!in || !out || in == out || in->dtype != out->dtype || !in->strides.empty() || !out->strides.empty() ||
      !same_shape(in, out))
    return false;
  return one_store_nest(kernel, in, out) || writes_each_element_once_over(kernel, in, out);
}

}  // namespace mtir
