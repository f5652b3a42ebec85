#include "executor/fuse_elementwise.h"

#include <algorithm>
#include <functional>
#include <set>
#include <unordered_map>

#include "ir/flat_view.h"
#include "ir/mutator.h"
#include "ir/structural_equal.h"
#include "ir/substitute.h"
#include "ir/visitor.h"
#include "ops/quant_util.h"

namespace mtir {
namespace {

// Every load and store of one buffer, with its indices.
class AccessCollector : public Visitor {
 public:
  explicit AccessCollector(const Buffer& b) : buffer_(b) {}
  std::vector<const std::vector<Expr>*> accesses;
  int loads = 0;

 protected:
  void visit_BufferLoad(const BufferLoadNode* op) override {
    if (op->buffer == buffer_) accesses.push_back(&op->indices), ++loads;
    Visitor::visit_BufferLoad(op);
  }
  void visit_BufferStore(const BufferStoreNode* op) override {
    if (op->buffer == buffer_) accesses.push_back(&op->indices);
    Visitor::visit_BufferStore(op);
  }

 private:
  Buffer buffer_;
};

AccessCollector accesses_of(const Buffer& b, const Stmt& s) {
  AccessCollector c(b);
  c.visit(s);
  return c;
}
AccessCollector accesses_of(const Buffer& b, const Expr& e) {
  AccessCollector c(b);
  c.visit(e);
  return c;
}

bool same_indices(const std::vector<Expr>& a, const std::vector<Expr>& b) {
  if (a.size() != b.size()) return false;
  for (size_t k = 0; k < a.size(); ++k)
    if (!same_expr(a[k], b[k])) return false;
  return true;
}

bool is_zero(const Expr& e) {
  auto* imm = as<IntImmNode>(e);
  return imm && imm->value == 0;
}

// Whether `idx` names one element per iteration of exactly the loops `loops`: each index
// is one of the loop variables or the constant 0, and every loop variable appears once.
bool indexes_by_loops(const std::vector<Expr>& idx, const std::vector<const VarNode*>& loops) {
  std::set<const VarNode*> used;
  for (const Expr& e : idx) {
    if (is_zero(e)) continue;
    auto* v = as<VarNode>(e);
    if (!v || std::find(loops.begin(), loops.end(), v) == loops.end() || !used.insert(v).second) return false;
  }
  return used.size() == loops.size();
}

// The consumer: a perfect nest of loops from 0 around one store to its output, which
// reads `data` only at the element it writes.
struct ElementwiseBody {
  const BufferStoreNode* store = nullptr;
  int data_loads = 0;
};

bool match_consumer(const PrimFunc& f, size_t input, ElementwiseBody* out) {
  if (input + 1 >= f->param_buffers.size()) return false;
  const Buffer& data = f->param_buffers[input];
  const Buffer& result = f->param_buffers.back();
  if (!data || !result || data->dtype != result->dtype || data->shape.size() != result->shape.size()) return false;
  for (size_t k = 0; k < data->shape.size(); ++k)
    if (!same_expr(data->shape[k], result->shape[k]) && !structural_equal(data->shape[k], result->shape[k]))
      return false;
  std::vector<const VarNode*> loops;
  Stmt s = f->body;
  while (auto* loop = as<ForNode>(s)) {
    if (!is_zero(loop->min)) return false;
    loops.push_back(loop->loop_var.get());
    s = loop->body;
  }
  auto* store = as<BufferStoreNode>(s);
  if (!store || store->buffer != result || !indexes_by_loops(store->indices, loops)) return false;
  AccessCollector reads = accesses_of(data, store->value);
  for (const auto* idx : reads.accesses)
    if (!same_indices(*idx, store->indices)) return false;
  if (accesses_of(result, store->value).loads) return false;
  out->store = store;
  out->data_loads = reads.loads;
  return true;
}

// The producer's site: the statement holding every access to its output, all at one
// index made of exactly the loop variables around it.
struct Site {
  const StmtNode* stmt = nullptr;
  std::vector<Expr> indices;
};

bool find_site(const Stmt& s, const Buffer& out, std::vector<const VarNode*> loops, Site* site) {
  AccessCollector all = accesses_of(out, s);
  if (all.accesses.empty()) return false;
  const auto& first = *all.accesses.front();
  bool uniform = std::all_of(all.accesses.begin(), all.accesses.end(),
                             [&](const std::vector<Expr>* idx) { return same_indices(*idx, first); });
  if (uniform && indexes_by_loops(first, loops)) {
    site->stmt = s.get();
    site->indices = first;
    return true;
  }
  if (auto* loop = as<ForNode>(s)) {
    loops.push_back(loop->loop_var.get());
    return find_site(loop->body, out, loops, site);
  }
  if (auto* seq = as<SeqStmtNode>(s)) {
    const Stmt* holder = nullptr;
    for (const Stmt& child : seq->seq) {
      if (accesses_of(out, child).accesses.empty()) continue;
      if (holder) return false;  // the output is written in two places
      holder = &child;
    }
    return holder && find_site(*holder, out, loops, site);
  }
  if (auto* alloc = as<AllocateNode>(s)) return find_site(alloc->body, out, loops, site);
  if (auto* decl = as<DeclBufferNode>(s)) return find_site(decl->body, out, loops, site);
  return false;
}

// Rewrites the consumer's stored expression for the producer's site: its loop
// variables become the site's indices, its reads of `data` become `current` (the
// producer's value of the element), and its other buffers are renamed where needed.
class Epilogue : public Mutator {
 public:
  Epilogue(Buffer data, Expr current, VarMap vars, std::unordered_map<const BufferNode*, Buffer> renamed)
      : data_(std::move(data)), current_(std::move(current)), vars_(std::move(vars)), renamed_(std::move(renamed)) {}

 protected:
  Expr mutate_BufferLoad(const BufferLoadNode* op, const Expr& self) override {
    if (op->buffer == data_) return current_;
    return Mutator::mutate_BufferLoad(op, self);
  }
  Expr mutate_Var(const VarNode* op, const Expr& self) override {
    auto it = vars_.find(op);
    return it == vars_.end() ? self : it->second;
  }
  Buffer mutate_buffer(const Buffer& b) override {
    auto it = renamed_.find(b.get());
    return it == renamed_.end() ? b : it->second;
  }

 private:
  Buffer data_;
  Expr current_;
  VarMap vars_;
  std::unordered_map<const BufferNode*, Buffer> renamed_;
};

// The producer with its output replaced by the consumer's and the epilogue applied at
// the site.
class ApplyAtSite : public Mutator {
 public:
  ApplyAtSite(const Site& site, Buffer from, Buffer to, std::function<Expr(Expr)> epilogue, bool inline_value)
      : site_(site), from_(std::move(from)), to_(std::move(to)), epilogue_(std::move(epilogue)),
        inline_value_(inline_value) {}

  Stmt mutate(const Stmt& s) override {
    if (s.get() != site_.stmt) return Mutator::mutate(s);
    Stmt moved = Mutator::mutate(s);
    auto* store = as<BufferStoreNode>(moved);
    if (store && inline_value_ && accesses_of(to_, store->value).loads == 0)
      return BufferStore(to_, epilogue_(store->value), store->indices, store->span);
    Stmt finish = BufferStore(to_, epilogue_(BufferLoad(to_, site_.indices)), site_.indices);
    return SeqStmt({moved, finish});
  }

 protected:
  Buffer mutate_buffer(const Buffer& b) override { return b == from_ ? to_ : b; }

 private:
  const Site& site_;
  Buffer from_, to_;
  std::function<Expr(Expr)> epilogue_;
  bool inline_value_;
};

// A producer that only stores its output, from any number of statements, and reads its
// memory through no other buffer; it may store through flat views (`views`): each store's
// value is final unless a later store to the same element replaces it, so the epilogue
// can be applied at every store.
bool stores_only(const PrimFunc& producer, const Buffer& out, std::vector<Buffer>* views) {
  struct Check : Visitor {
    Buffer out;
    std::vector<Buffer>* views;
    bool ok = true, stored = false;
    bool aliases(const Buffer& b) const { return b && b != out && b->data && b->data == out->data; }
    void visit_BufferLoad(const BufferLoadNode* op) override {
      ok = ok && op->buffer != out && !aliases(op->buffer);
      Visitor::visit_BufferLoad(op);
    }
    void visit_BufferStore(const BufferStoreNode* op) override {
      stored = stored || op->buffer == out || aliases(op->buffer);
      if (aliases(op->buffer)) {
        ok = ok && has_flat_view_shape(op->buffer, out);
        if (std::find(views->begin(), views->end(), op->buffer) == views->end()) views->push_back(op->buffer);
      }
      Visitor::visit_BufferStore(op);
    }
  } c;
  c.out = out;
  c.views = views;
  c.visit(producer->body);
  return c.ok && c.stored;
}

// The consumer's expression at a producer's vector store: the leaves it replaced are
// `lanes`-lane vectors, so scalars beside them are broadcast and casts and calls take the
// lanes. Arithmetic, casts and calls only (what an elementwise integer op stores); `ok`
// turns false at anything else that holds a vector.
Expr widen_lanes(const Expr& e, int lanes, bool* ok) {
  auto broadcast = [&](const Expr& x) { return x->dtype.lanes() == lanes ? x : Broadcast(x, lanes); };
  if (e->dtype.lanes() == lanes) return e;  // a vector already: the producer's value, a load
  // An integer op's requantization, expanded into int64 arithmetic for scalars, is one
  // T.multiply_by_quantized_multiplier in vectors (VQRDMULH and VRSHL on Helium).
  Expr x;
  ops::QuantMultiplier q;
  if (ops::match_multiply_by_quantized_multiplier(e, &x, &q)) {
    Expr v = widen_lanes(x, lanes, ok);
    if (v->dtype.lanes() != lanes) return e;
    const DataType i32 = DataType::Int(32);
    return Call(i32.with_lanes(lanes), "multiply_by_quantized_multiplier",
                {v, Broadcast(IntImm(i32, q.multiplier), lanes), Broadcast(IntImm(i32, q.shift), lanes)});
  }
  if (auto* cast = as<CastNode>(e)) {
    Expr v = widen_lanes(cast->value, lanes, ok);
    return v->dtype.lanes() == lanes ? Cast(e->dtype.with_lanes(lanes), v, e->span) : Cast(e->dtype, v, e->span);
  }
  if (auto* call = as<CallNode>(e)) {
    std::vector<Expr> args;
    bool vector = false;
    for (const Expr& a : call->args) args.push_back(widen_lanes(a, lanes, ok)), vector = vector || args.back()->dtype.lanes() == lanes;
    if (!vector) return e;
    for (Expr& a : args) a = broadcast(a);
    return Call(e->dtype.with_lanes(lanes), call->op, args, call->attrs, e->span);
  }
  switch (e->kind) {
    case ExprKind::Add:
    case ExprKind::Sub:
    case ExprKind::Mul:
    case ExprKind::Min:
    case ExprKind::Max: {
      auto* op = static_cast<const BinaryNode*>(e.get());
      Expr a = widen_lanes(op->a, lanes, ok), b = widen_lanes(op->b, lanes, ok);
      if (a->dtype.lanes() != lanes && b->dtype.lanes() != lanes) return e;
      return Binary(e->kind, broadcast(a), broadcast(b), e->span);
    }
    case ExprKind::IntImm:
    case ExprKind::Var:
    case ExprKind::BufferLoad: return e;
    default: *ok = false; return e;
  }
}

// Every store to `from` becomes a store to `to` of the epilogue of its value, at its
// own indices; a store to one of `from`'s flat views, a store to `to`'s (in `views`) of
// `flat(value, index)`. A value the epilogue reads more than once is bound to a variable
// first.
class ApplyAtEveryStore : public Mutator {
 public:
  using Epilogue = std::function<Expr(Expr, const std::vector<Expr>&)>;
  ApplyAtEveryStore(Buffer from, Buffer to, Epilogue epilogue, bool inline_value,
                    std::unordered_map<const BufferNode*, Buffer> views = {},
                    std::function<Expr(Expr, const Expr&)> flat = nullptr)
      : from_(std::move(from)), to_(std::move(to)), epilogue_(std::move(epilogue)), inline_value_(inline_value),
        views_(std::move(views)), flat_(std::move(flat)) {}

 protected:
  Stmt mutate_BufferStore(const BufferStoreNode* op, const Stmt& self) override {
    auto view = views_.find(op->buffer.get());
    if (op->buffer != from_ && view == views_.end()) return Mutator::mutate_BufferStore(op, self);
    Expr value = mutate(op->value);
    std::vector<Expr> indices;
    for (const Expr& i : op->indices) indices.push_back(mutate(i));
    const Buffer to = view == views_.end() ? to_ : view->second;
    auto finish = [&](Expr current) {
      return view == views_.end() ? epilogue_(std::move(current), indices) : flat_(std::move(current), indices[0]);
    };
    // At a view the epilogue is widened, where the scalar requantizations' int64 forms,
    // which read the value more than once, become one call each: inlined.
    if (inline_value_ || view != views_.end()) return BufferStore(to, finish(value), indices, op->span);
    Var v = MakeVar("produced", value->dtype);
    return LetStmt(v, value, BufferStore(to, finish(v), indices, op->span), op->span);
  }
  Buffer mutate_buffer(const Buffer& b) override {
    auto view = views_.find(b.get());
    return view == views_.end() ? b : view->second;
  }

 private:
  Buffer from_, to_;
  Epilogue epilogue_;
  bool inline_value_;
  std::unordered_map<const BufferNode*, Buffer> views_;
  std::function<Expr(Expr, const Expr&)> flat_;
};

// The consumer's expression for one flat index of a producer's view: its reads of `data`
// become `current`, those of its other inputs (each the output's shape, read at the
// stored element: `inputs`) loads of their flat views at `index`, and the lanes widen to
// the index's. Null where the expression has a form widen_lanes cannot take.
Expr flat_epilogue(const Expr& value, const Buffer& data, const std::unordered_map<const BufferNode*, Buffer>& inputs,
                   Expr current, const Expr& index) {
  struct Replace : Mutator {
    const Buffer& data;
    const std::unordered_map<const BufferNode*, Buffer>& inputs;
    Expr current, index;
    Replace(const Buffer& d, const std::unordered_map<const BufferNode*, Buffer>& in, Expr c, Expr i)
        : data(d), inputs(in), current(std::move(c)), index(std::move(i)) {}
    Expr mutate_BufferLoad(const BufferLoadNode* op, const Expr& self) override {
      if (op->buffer == data) return current;
      auto it = inputs.find(op->buffer.get());
      return it == inputs.end() ? Mutator::mutate_BufferLoad(op, self) : BufferLoad(it->second, {index}, op->span);
    }
  } replace(data, inputs, std::move(current), index);
  Expr e = replace.mutate(value);
  bool ok = true;
  if (index->dtype.lanes() > 1) e = widen_lanes(e, index->dtype.lanes(), &ok);
  return ok ? e : nullptr;
}

// A flat view of `b` shaped as `like` (a view of the producer's output, of as many
// elements).
Buffer view_of(const Buffer& b, const Buffer& like) {
  auto v = std::make_shared<BufferNode>(*b);
  v->shape = like->shape;
  v->name = b->name + "_flat";
  return v;
}

// The consumer's other inputs as flat views, for an epilogue at a producer's flat view:
// each must have the output's shape and be read only at the stored element, and the
// expression must widen to four lanes (checked on a stand-in vector).
struct FlatViews {
  std::unordered_map<const BufferNode*, Buffer> inputs;  // the consumer's buffer -> its view
  std::vector<Buffer> declared;
};

bool flat_views(const PrimFunc& consumer, size_t input, const ElementwiseBody& body, const Buffer& view,
                const std::unordered_map<const BufferNode*, Buffer>& renamed, FlatViews* out) {
  const Buffer& result = consumer->param_buffers.back();
  for (size_t i = 0; i + 1 < consumer->params.size(); ++i) {
    const Buffer& buf = consumer->param_buffers[i];
    if (i == input || !buf) continue;
    AccessCollector reads = accesses_of(buf, body.store->value);
    if (!reads.loads) continue;
    if (buf->dtype != result->dtype || buf->shape.size() != result->shape.size()) return false;
    for (size_t k = 0; k < buf->shape.size(); ++k)
      if (!structural_equal(buf->shape[k], result->shape[k])) return false;
    for (const auto* idx : reads.accesses)
      if (!same_indices(*idx, body.store->indices)) return false;
    auto it = renamed.find(buf.get());
    Buffer flat = view_of(it == renamed.end() ? buf : it->second, view);
    out->inputs[buf.get()] = flat;
    out->declared.push_back(flat);
  }
  // A stand-in: four lanes of the produced value at a four-lane index; no loop variable
  // of the consumer may be left outside its loads.
  Var lanes = MakeVar("lanes", consumer->param_buffers[input]->dtype.with_lanes(4));
  Expr e = flat_epilogue(body.store->value, consumer->param_buffers[input], out->inputs, lanes,
                         Ramp(IntImm(DataType::Int(32), 0), IntImm(DataType::Int(32), 1), 4));
  if (!e) return false;
  struct Loops : Visitor {
    std::set<const VarNode*> vars;
    bool used = false;
    void visit_Var(const VarNode* op) override { used = used || vars.count(op); }
  } loops;
  for (const Expr& i : body.store->indices)
    if (auto* v = as<VarNode>(i)) loops.vars.insert(v);
  loops.visit(e);
  return !loops.used;
}

}  // namespace

PrimFunc fuse_elementwise(const std::string& name, const PrimFunc& producer, const PrimFunc& consumer,
                          size_t consumer_input) {
  ElementwiseBody body;
  if (producer->param_buffers.empty() || !match_consumer(consumer, consumer_input, &body)) return nullptr;
  const Buffer& produced = producer->param_buffers.back();
  const Buffer& data = consumer->param_buffers[consumer_input];
  const Buffer& result = consumer->param_buffers.back();
  if (!produced || produced->dtype != data->dtype || produced->shape.size() != data->shape.size()) return nullptr;
  Site site;
  std::vector<Buffer> views;
  const bool only_stores = stores_only(producer, produced, &views);
  const bool one_site = views.empty() && find_site(producer->body, produced, {}, &site);
  if (!one_site && !only_stores) return nullptr;

  auto fused = std::make_shared<PrimFuncNode>();
  std::set<std::string> names;
  for (size_t i = 0; i + 1 < producer->params.size(); ++i) {
    fused->params.push_back(producer->params[i]);
    fused->param_buffers.push_back(producer->param_buffers[i]);
    names.insert(producer->params[i]->name);
  }
  // The consumer's other inputs keep their names unless the producer uses them.
  std::unordered_map<const BufferNode*, Buffer> renamed;
  for (size_t i = 0; i + 1 < consumer->params.size(); ++i) {
    if (i == consumer_input) continue;
    Var param = consumer->params[i];
    Buffer buf = consumer->param_buffers[i];
    if (names.count(param->name)) {
      std::string fresh = param->name;
      for (int n = 1; names.count(fresh); ++n) fresh = param->name + "_" + std::to_string(n);
      param = MakeVar(fresh, param->dtype);
      if (buf) {
        Buffer copy = MakeBuffer(fresh, buf->dtype, buf->shape);
        renamed[buf.get()] = copy;
        buf = copy;
      }
    }
    names.insert(param->name);
    fused->params.push_back(param);
    fused->param_buffers.push_back(buf);
  }
  fused->params.push_back(consumer->params.back());
  fused->param_buffers.push_back(result);

  // The consumer's loop variables become the producer's indices of the element.
  auto epilogue_at = [&](Expr current, const std::vector<Expr>& indices) {
    VarMap vars;
    for (size_t k = 0; k < body.store->indices.size(); ++k)
      if (auto* v = as<VarNode>(body.store->indices[k])) vars[v] = indices[k];
    return Epilogue(data, std::move(current), vars, renamed).mutate(body.store->value);
  };
  bool inline_value = body.data_loads <= 1;
  if (!views.empty()) {
    FlatViews flat;
    if (!flat_views(consumer, consumer_input, body, views[0], renamed, &flat)) return nullptr;
    std::unordered_map<const BufferNode*, Buffer> to_views;
    for (const Buffer& v : views) to_views[v.get()] = view_of(result, v);
    auto at_index = [&](Expr current, const Expr& index) {
      Expr e = flat_epilogue(body.store->value, data, flat.inputs, std::move(current), index);
      MTIR_ICHECK(e, "fuse_elementwise: the consumer's epilogue does not widen to the store's lanes");
      return e;
    };
    fused->body = ApplyAtEveryStore(produced, result, epilogue_at, inline_value, to_views, at_index).mutate(producer->body);
    for (const Buffer& v : flat.declared) fused->body = DeclBuffer(v, fused->body);
  } else if (one_site) {
    auto epilogue = [&](Expr current) { return epilogue_at(std::move(current), site.indices); };
    fused->body = ApplyAtSite(site, produced, result, epilogue, inline_value).mutate(producer->body);
  } else {
    fused->body = ApplyAtEveryStore(produced, result, epilogue_at, inline_value).mutate(producer->body);
  }
  fused->attrs = producer->attrs;
  for (const auto& [key, value] : consumer->attrs)  // the consumer's own marks ("mtir.*")
    if (key.rfind("mtir.", 0) == 0) fused->attrs[key] = value;
  fused->attrs["global_symbol"] = name;
  return fused;
}

}  // namespace mtir
