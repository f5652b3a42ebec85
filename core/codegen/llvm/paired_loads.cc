// Paired word loads on Arm cores with the DSP extension: two int32 loads of adjacent
// elements in one straight-line list of stores become one LDRD, as GCC emits them for
// the int8 SMLAD tiles (the dense tile reads its weights and its packed column two
// words at a time: 84 instructions per reduction step with pairs, 100 without).
//
// LLVM 14 does not pair them itself in these loops: its ARM backend selects LDRD for an
// i64 load only when the load is volatile (ARMTargetLowering::LowerLOAD), and before
// register allocation it pairs two word loads only when the first is 8-byte aligned,
// though Thumb-2's LDRD needs only word alignment; the scheduler interleaves the rest
// with the multiplies, so few pairs form after allocation. An 8-byte alignment promise
// did not change the AD kernels' code; a volatile i64 load (align 4) gives an LDRD at
// each pair. Volatile keeps the load where it is and as it is, so only loads that
// change with the innermost loop are paired (loop-invariant ones stay hoistable), and
// only where nothing in the list can write the buffer.
//
// A tile's column on the stack (the short tiles' `col`, filled once per pixel group and
// read by word_pair in the channel loop) needs two more things for its LDRDs to address it
// from sp, as GCC's do. Its fill loop stays rolled: unrolled, SROA splits the column at
// the pairs into 8-byte frame objects, and LLVM 14's LDRD selection folds a frame object
// into the instruction only as base + nonzero offset (at offset 0 the address is an ADD
// from sp, in the loop once registers run short). For the same reason the words start one
// word into the alloca. VWW's short-tile channel-pair loops: 91 -> 75 instructions (layer
// 2; GCC 78), 125 -> 115 (layer 4), 196 -> 192 (layers 6 and 8); the model 9,809,029 ->
// 9,669,923 (C: 9,804,922).
#include "analysis/buffer_accesses.h"
#include "codegen/llvm/codegen_llvm_internal.h"
#include "ir/structural_equal.h"

namespace mtir::llvm_backend {
namespace {

// `index` as base + offset with a constant offset: `b + c`, `c + b`, `b - c`, `(b + c) * k`
// (as b*k + c*k) and the wrapping uint32 form `(int32)((uint32)b + c)` the kernels write,
// all equal modulo 2^32. A null base is a constant index.
std::pair<Expr, int64_t> split_offset(const Expr& index) {
  if (const int64_t* c = as_const_int(index)) return {Expr(), *c};
  if (index->kind == ExprKind::Add || index->kind == ExprKind::Sub || index->kind == ExprKind::Mul) {
    const auto* bin = static_cast<const BinaryNode*>(index.get());
    // A pixel's column in a multi-pixel tile: `32 + ko * 16`.
    if (const int64_t* c = as_const_int(bin->a); c && index->kind == ExprKind::Add) {
      auto [base, offset] = split_offset(bin->b);
      return {base, offset + *c};
    }
    if (const int64_t* c = as_const_int(bin->b)) {
      auto [base, offset] = split_offset(bin->a);
      if (index->kind == ExprKind::Mul)
        return {base ? Binary(ExprKind::Mul, base, bin->b) : Expr(), offset * *c};
      return {base, index->kind == ExprKind::Add ? offset + *c : offset - *c};
    }
  }
  const auto* narrow = as<CastNode>(index);
  if (narrow && index->dtype.is_int() && index->dtype.bits() == 32) {
    const auto* add = as<AddNode>(narrow->value);
    const auto* widen = add ? as<CastNode>(add->a) : nullptr;
    const int64_t* c = add ? as_const_int(add->b) : nullptr;
    if (widen && c && narrow->value->dtype.is_uint() && narrow->value->dtype.bits() == 32 &&
        widen->value->dtype == index->dtype) {
      auto [base, offset] = split_offset(widen->value);
      return {base, offset + *c};
    }
  }
  return {index, 0};
}

bool same_base(const Expr& a, const Expr& b) { return (!a && !b) || (a && b && same_expr(a, b)); }

}  // namespace

// The scalar 32-bit integer loads of a list of stores, in order; `ok` turns false at
// anything that is not straight-line, side-effect-free code (a branch inside an
// expression, a call that may write memory).
struct WordLoads : Visitor {
  std::vector<const BufferLoadNode*> loads;
  std::set<const VarNode*> stored;
  bool ok = true;
  void visit_BufferLoad(const BufferLoadNode* op) override {
    const DataType t = op->buffer->dtype;
    if (!op->dtype.is_vector() && t.is_integer() && t.bits() == 32 && op->dtype == t && op->indices.size() == 1)
      loads.push_back(op);
    Visitor::visit_BufferLoad(op);
  }
  void visit_Call(const CallNode* op) override {
    if (!is_pure(op->builtin) || op->is(Builtin::IfThenElse)) ok = false;
    Visitor::visit_Call(op);
  }
  // && and || short-circuit: their right side runs in a block of its own.
  void visit_And(const AndNode* op) override { ok = false, Visitor::visit_And(op); }
  void visit_Or(const OrNode* op) override { ok = false, Visitor::visit_Or(op); }
};

// Walks straight-line code: stores, lists of them and `let`s (the tiles bind each loaded
// word to a name: `w = weight[...]`). False at anything else, or at a store to memory
// other than the function's own allocations (a parameter or a pointer derived from one).
bool FunctionEmitter::straight_line_words(const Stmt& s, WordLoads& found) const {
  if (const auto* seq = as<SeqStmtNode>(s)) {
    for (const Stmt& child : seq->seq)
      if (!straight_line_words(child, found)) return false;
    return true;
  }
  if (const auto* let = as<LetStmtNode>(s)) {
    found.visit(let->value);
    return found.ok && straight_line_words(let->body, found);
  }
  const auto* store = as<BufferStoreNode>(s);
  if (!store || !local_allocations_.count(store->buffer->data.get())) return false;
  found.stored.insert(store->buffer->data.get());
  found.visit(s);
  return found.ok;
}

int smlad_count(const Stmt& body) {
  struct Count : Visitor {
    int n = 0;
    void visit_Call(const CallNode* op) override {
      n += op->is(Builtin::Smlad);
      Visitor::visit_Call(op);
    }
  } count;
  count.visit(body);
  return count.n;
}

bool FunctionEmitter::plan_paired_loads(const Stmt& region) {
  paired_loads_.clear();
  if (!ms_->arm_dsp || loop_vars_.empty()) return false;
  WordLoads found;
  if (!straight_line_words(region, found)) return false;
  // A parameter's buffer or an allocation of this function: memory a store to another of
  // the function's allocations cannot reach (a pointer derived from one could).
  auto own_memory = [&](const VarNode* data) {
    if (local_allocations_.count(data)) return true;
    for (size_t i = 0; i < func_->params.size(); ++i)
      if (func_->params[i].get() == data || (func_->param_buffers[i] && func_->param_buffers[i]->data.get() == data))
        return true;
    return false;
  };
  // Elements (buffer, base, offset), each with every load that reads it.
  struct Element {
    const VarNode* data;
    Expr base;
    int64_t offset;
    std::vector<const BufferLoadNode*> loads;
  };
  std::vector<Element> elements;
  for (const BufferLoadNode* l : found.loads) {
    const VarNode* data = l->buffer->data.get();
    if (found.stored.count(data) || !own_memory(data) || !uses_any(l->indices[0], {loop_vars_.back()})) continue;
    // Named, not a structured binding: clang before 16 (Emscripten's) cannot capture those.
    const auto split = split_offset(l->indices[0]);
    const Expr& base = split.first;
    const int64_t offset = split.second;
    auto same = std::find_if(elements.begin(), elements.end(), [&](const Element& e) {
      return e.data == data && e.offset == offset && same_base(e.base, base);
    });
    if (same != elements.end()) same->loads.push_back(l);
    else elements.push_back({data, base, offset, {l}});
  }
  // Lowest offsets first, so a run 0, 1, 2, 3 pairs as (0, 1), (2, 3).
  std::stable_sort(elements.begin(), elements.end(), [](const Element& a, const Element& b) { return a.offset < b.offset; });
  // Thumb-2's LDRD reaches 1020 bytes from its base register: a pair farther from the
  // buffer's lowest word in the list (a third pixel's column, 576 words on in IC's 3x3
  // layers) would need a base register of its own, and with six accumulators LLVM spills
  // them (IC 17,156,565 -> 16,986,263 instructions without those pairs); single loads
  // reach 4095 bytes, as GCC reads those words.
  constexpr int64_t kLdrdReachWords = 255;
  auto lowest = [&](const Element& e) {
    return std::find_if(elements.begin(), elements.end(), [&](const Element& f) {
             return f.data == e.data && same_base(f.base, e.base);
           })->offset;
  };
  std::vector<bool> used(elements.size(), false);
  for (size_t i = 0; i < elements.size(); ++i) {
    if (elements[i].offset - lowest(elements[i]) > kLdrdReachWords) continue;
    for (size_t j = i + 1; j < elements.size() && !used[i]; ++j) {
      const Element &lo = elements[i], &hi = elements[j];
      if (used[j] || lo.data != hi.data || hi.offset != lo.offset + 1 || !same_base(lo.base, hi.base)) continue;
      used[i] = used[j] = true;
      // The address as base + constant, so LLVM shares one base register among the pairs.
      const DataType t = lo.loads.front()->indices[0]->dtype;
      Expr index = lo.base ? (lo.offset ? Binary(ExprKind::Add, lo.base, IntImm(t, lo.offset)) : lo.base) : IntImm(t, lo.offset);
      paired_loads_.push_back({lo.loads, hi.loads, index, {}, {}});
    }
  }
  return !paired_loads_.empty();
}

namespace {

// The buffer whose adjacent int32 words word_pair `c` reads (A[i], A[i + 1]), else null.
const VarNode* adjacent_words(const CallNode* c) {
  const auto* lo = as<BufferLoadNode>(c->args.at(0));
  const auto* hi = as<BufferLoadNode>(c->args.at(1));
  auto word = [](const BufferLoadNode* l) {
    const DataType t = l->buffer->dtype;
    return !l->dtype.is_vector() && t.is_integer() && t.bits() == 32 && l->dtype == t && l->indices.size() == 1;
  };
  if (!lo || !hi || lo->buffer->data.get() != hi->buffer->data.get() || !word(lo) || !word(hi)) return nullptr;
  auto [lo_base, lo_offset] = split_offset(lo->indices[0]);
  auto [hi_base, hi_offset] = split_offset(hi->indices[0]);
  return same_base(lo_base, hi_base) && hi_offset == lo_offset + 1 ? lo->buffer->data.get() : nullptr;
}

}  // namespace

bool FunctionEmitter::read_by_word_pairs(const Stmt& body, const VarNode* data) const {
  struct Find : Visitor {
    const VarNode* data;
    bool found = false;
    void visit_Call(const CallNode* op) override {
      found = found || (op->is(Builtin::WordPair) && adjacent_words(op) == data);
      Visitor::visit_Call(op);
    }
  } find;
  find.data = data;
  if (ms_->arm_dsp) find.visit(body);
  return find.found;
}

std::string FunctionEmitter::word_pair_alloca(const Buffer& b, int64_t count, int align) {
  word_pair_buffers_.insert(b->data.get());
  std::string whole = entry_alloca("i32", count + 1, align, b->name + ".lead");
  std::string words = local_name(b->name);
  entry_ << "  " << words << " = getelementptr inbounds i32, i32* " << whole << ", i32 1\n";
  return words;
}

bool FunctionEmitter::fills_word_pair_buffer(const ForNode* loop) const {
  struct Find : Visitor {
    const std::set<const VarNode*>* buffers;
    const VarNode* var;
    bool stores = false, branches = false;
    void visit_BufferStore(const BufferStoreNode* op) override {
      stores = stores || (buffers->count(op->buffer->data.get()) && uses_any(op->indices.at(0), {var}));
      Visitor::visit_BufferStore(op);
    }
    void visit_For(const ForNode* op) override { branches = true, Visitor::visit_For(op); }
    void visit_IfThenElse(const IfThenElseNode* op) override { branches = true, Visitor::visit_IfThenElse(op); }
  } find;
  find.buffers = &word_pair_buffers_;
  find.var = loop->loop_var.get();
  if (!word_pair_buffers_.empty()) find.visit(loop->body);
  return find.stores && !find.branches;
}

std::optional<Val> FunctionEmitter::adjacent_word_pair(const CallNode* c) {
  if (!ms_->arm_dsp || !adjacent_words(c)) return std::nullopt;
  const auto* lo = as<BufferLoadNode>(c->args.at(0));
  Val at = elem_ptr(lo->buffer, {lo->indices[0]}, lo->span);
  Val wide = op("i64*", "bitcast " + at.typed() + " to i64*");
  return op("i64", "load volatile i64, " + wide.typed() + ", align 4");
}

std::optional<Val> FunctionEmitter::paired_load(const BufferLoadNode* l) {
  for (PairedLoad& p : paired_loads_) {
    const bool is_lo = std::count(p.lo_loads.begin(), p.lo_loads.end(), l) > 0;
    if (!is_lo && !std::count(p.hi_loads.begin(), p.hi_loads.end(), l)) continue;
    if (p.lo.v.empty()) {
      const BufferLoadNode* first = p.lo_loads.front();
      Val word = elem_ptr(first->buffer, {p.index}, first->span);
      Val wide = op("i64*", "bitcast " + word.typed() + " to i64*");
      Val both = op("i64", "load volatile i64, " + wide.typed() + ", align 4");
      p.lo = op("i32", "trunc " + both.typed() + " to i32");
      p.hi = op("i32", "trunc " + op("i64", "lshr " + both.typed() + ", 32").typed() + " to i32");
    }
    return is_lo ? p.lo : p.hi;
  }
  return std::nullopt;
}

}  // namespace mtir::llvm_backend
