// The wasm emitter's SIMD128 loops (wat_function.h), for what the int8 kernels spend
// their time on. Dot products: a rolled loop whose body only adds products of two narrow
// integer loads into int32 accumulators held in locals (the int8 convolutions' and dense
// layers' reduction over a register tile) becomes a loop over eight elements at a time:
// each operand run widened to i16x8 (v128.load8x8_s/_u, or v128.load for int16),
// i32x4.dot_i16x8_s per accumulator (x86's PMADDWD), the four lanes summed after the
// loop, the last L % 8 products scalar. Bit for bit the scalar result: every product
// fits in int32 and the sums wrap modulo 2^32, in any order. Widening copies: a loop
// that only stores int8 values widened to int16, or one int16 constant, into another
// buffer (the im2col gather of those kernels), eight elements a step.
#include <algorithm>

#include "codegen/wasm/wat_function.h"

namespace mtir {
namespace wat_codegen {
namespace {

bool has_load(const Expr& e) {
  struct Finder : Visitor {
    bool found = false;
    void visit_BufferLoad(const BufferLoadNode*) override { found = true; }
    void visit_Call(const CallNode*) override { found = true; }
  } f;
  f.visit(e);
  return f.found;
}

// The index of `out` as loop_var * coef + constant + rest (no loop variable, no load).
bool split_index(const Expr& e, const VarNode* v, int64_t sign, DotOperand* out) {
  int64_t t;
  if (const int64_t* k = as_const_int(e))
    return !__builtin_mul_overflow(*k, sign, &t) && !__builtin_add_overflow(out->constant, t, &out->constant);
  if (e.get() == v) return out->coef += sign, true;
  if (const auto* a = as<AddNode>(e)) return split_index(a->a, v, sign, out) && split_index(a->b, v, sign, out);
  if (const auto* s = as<SubNode>(e); s && as_const_int(s->b))
    return split_index(s->a, v, sign, out) && split_index(s->b, v, -sign, out);
  if (const auto* m = as<MulNode>(e)) {
    const int64_t* k = as_const_int(m->b);
    const Expr& other = k ? m->a : m->b;
    if (!k) k = as_const_int(m->a);
    if (k && other.get() == v) return !__builtin_mul_overflow(*k, sign, &t) && !__builtin_add_overflow(out->coef, t, &out->coef);
  }
  if (sign != 1 || uses_any(e, {v}) || has_load(e)) return false;
  out->rest.push_back(e);
  return true;
}

// A product operand: a load of int8, uint8 or int16 (values that fit an i16 lane) widened
// to int32, at an index linear in the loop variable.
bool operand(const Expr& e, const VarNode* v, DotOperand* out) {
  const auto* c = as<CastNode>(e);
  const auto* l = c && c->dtype == DataType::Int(32) ? as<BufferLoadNode>(c->value) : nullptr;
  if (!l || l->predicate || l->indices.size() != 1 || l->dtype != l->buffer->dtype || l->indices[0]->dtype.is_vector())
    return false;
  const DataType t = l->dtype;
  if (!(t.is_int() && (t.bits() == 8 || t.bits() == 16)) && !(t.is_uint() && t.bits() == 8)) return false;
  out->load = l;
  return split_index(l->indices[0], v, 1, out);
}

bool same_rest(const DotOperand& a, const DotOperand& b) {
  if (a.rest.size() != b.rest.size()) return false;
  for (size_t i = 0; i < a.rest.size(); ++i)
    if (!same_expr(a.rest[i], b.rest[i])) return false;
  return true;
}

// Whether two operands read the same buffer at the same rest of the index.
bool same_run(const DotOperand& a, const DotOperand& b) {
  return a.load->buffer->data == b.load->buffer->data && a.load->dtype == b.load->dtype && same_rest(a, b);
}

// The index of an operand's first element, the loop variable's term at `start`.
Expr first_index(const DotOperand& o, int64_t start) {
  Expr index = IntImm(DataType::Int(32), start + o.constant);
  for (const Expr& e : o.rest) index = Binary(ExprKind::Add, e, index);
  return index;
}

// The eight-lane i16 load of an operand run at `at`, and the scalar load of one element.
std::string wide_load(DataType t, const std::string& at, int64_t offset) {
  const std::string op = t.bits() == 16 ? "v128.load" : t.is_int() ? "v128.load8x8_s" : "v128.load8x8_u";
  return "(" + op + (offset ? " offset=" + std::to_string(offset) : "") + " " + at + ")";
}

// The sum of the four i32 lanes of the v128 in local `v` (two shuffles, two adds).
std::string lane_sum(const std::string& v, const std::string& tmp) {
  const std::string swap_halves = "8 9 10 11 12 13 14 15 0 1 2 3 4 5 6 7";
  const std::string swap_pairs = "4 5 6 7 0 1 2 3 12 13 14 15 8 9 10 11";
  const std::string get = "(local.get " + v + ")", got = "(local.get " + tmp + ")";
  return "(i32x4.extract_lane 0 (i32x4.add (local.tee " + tmp + " (i32x4.add " + get + " (i8x16.shuffle " +
         swap_halves + " " + get + " " + get + "))) (i8x16.shuffle " + swap_pairs + " " + got + " " + got + ")))";
}

// The accumulators of a dot loop's terms, each summing x[bx + t] * y[by + t] for t in
// [0, U) once (U the same for all, and each index's loop coefficient): the first term of
// each, reordered to its smallest offsets. Empty when the terms do not have that shape.
std::vector<DotTerm> dot_accumulators(std::vector<DotTerm> terms, int64_t* unroll) {
  std::vector<std::vector<DotTerm>> groups;
  for (DotTerm& t : terms) {
    auto g = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g[0].acc == t.acc; });
    if (g == groups.end()) groups.push_back({t});
    else g->push_back(t);
  }
  std::vector<DotTerm> accs;
  const int64_t u = static_cast<int64_t>(groups.at(0).size());
  for (auto& g : groups) {
    if (static_cast<int64_t>(g.size()) != u) return {};
    for (DotTerm& t : g)
      if (!same_run(t.x, g[0].x)) std::swap(t.x, t.y);  // y * x
    std::sort(g.begin(), g.end(), [](const DotTerm& a, const DotTerm& b) { return a.x.constant < b.x.constant; });
    for (int64_t k = 0; k < u; ++k) {
      const DotTerm& t = g[k];
      if (!same_run(t.x, g[0].x) || !same_run(t.y, g[0].y) || t.x.coef != u || t.y.coef != u ||
          t.x.constant != g[0].x.constant + k || t.y.constant != g[0].y.constant + k)
        return {};
    }
    accs.push_back(g[0]);
  }
  *unroll = u;
  return accs;
}

}  // namespace

// One statement of a dot loop: `acc = acc + x * y` into a local accumulator whose index
// does not change in the loop.
bool FunctionEmitter::dot_term(const Stmt& s, const VarNode* v, DotTerm* out) {
  const auto* st = as<BufferStoreNode>(s);
  if (!st || st->predicate || st->indices.size() != 1 || st->buffer->dtype != DataType::Int(32) ||
      st->value->dtype != DataType::Int(32) || uses_any(st->indices[0], {v}) || has_load(st->indices[0]))
    return false;
  const auto* add = as<AddNode>(st->value);
  if (!add) return false;
  auto is_acc = [&](const Expr& e) {
    const auto* l = as<BufferLoadNode>(e);
    return l && !l->predicate && l->buffer->data == st->buffer->data && l->indices.size() == 1 &&
           l->dtype == st->buffer->dtype && same_expr(l->indices[0], st->indices[0]);
  };
  const Expr& product = is_acc(add->a) ? add->b : add->a;
  const auto* mul = as<MulNode>(product);
  if (!mul || !is_acc(product.get() == add->b.get() ? add->a : add->b)) return false;
  out->acc = register_element(st->buffer, st->indices, st->span);
  if (out->acc.empty()) out->acc = promoted(st->buffer, st->indices);
  if (out->acc.empty() || !operand(mul->a, v, &out->x) || !operand(mul->b, v, &out->y)) return false;
  // The operands are memory, not locals.
  for (const DotOperand* o : {&out->x, &out->y})
    if (register_arrays_.count(o->load->buffer->data.get()) || !promoted(o->load->buffer, o->load->indices).empty())
      return false;
  return true;
}


// A rolled loop of dot-product statements as SIMD128 (see the top of this file); false,
// with nothing emitted, when the loop has another shape or sums fewer than 8 products.
bool FunctionEmitter::emit_dot_loop(const ForNode* node) {
  const int64_t* min = as_const_int(node->min);
  const int64_t* extent = as_const_int(node->extent);
  if (!min || !extent || *extent <= 0 || exits_loop(node->body)) return false;
  const auto* seq = as<SeqStmtNode>(node->body);
  const std::vector<Stmt> body = seq ? seq->seq : std::vector<Stmt>{node->body};
  std::vector<DotTerm> terms(body.size());
  for (size_t i = 0; i < body.size(); ++i)
    if (!dot_term(body[i], node->loop_var.get(), &terms[i])) return false;
  int64_t unroll = 0, length = 0, start = 0;
  std::vector<DotTerm> accs = dot_accumulators(std::move(terms), &unroll);
  constexpr int64_t kMaxLength = int64_t{1} << 28;
  if (accs.empty() || __builtin_mul_overflow(*extent, unroll, &length) || length < 8 || length > kMaxLength ||
      __builtin_mul_overflow(*min, unroll, &start) || std::abs(start) > kMaxLength)
    return false;
  emit_dot_runs(accs, start, length);
  return true;
}

// The accumulators' sums over `length` elements from index `start` + each operand's
// constant and rest: a pointer per operand run (shared by the accumulators that read it),
// a v128 sum per accumulator, eight elements a step (two steps an iteration when even).
void FunctionEmitter::emit_dot_runs(const std::vector<DotTerm>& accs, int64_t start, int64_t length) {
  struct Run {
    const DotOperand* operand;
    std::string pointer, value;
  };
  std::vector<Run> runs;
  auto run_of = [&](const DotOperand& o) -> size_t {
    for (size_t r = 0; r < runs.size(); ++r)
      if (same_run(*runs[r].operand, o) && runs[r].operand->constant == o.constant) return r;
    const std::string at = address(o.load->buffer, {first_index(o, start)}, o.load->span);
    runs.push_back({&o, local("dot.p", "i32"), local("dot.x", "v128")});
    line("(local.set " + runs.back().pointer + " " + at + ")");
    return runs.size() - 1;
  };
  std::vector<std::pair<size_t, size_t>> operands;  // per accumulator: its x and y runs
  std::vector<std::string> sums;
  for (const DotTerm& a : accs) {
    const size_t x = run_of(a.x);
    operands.emplace_back(x, run_of(a.y));
    sums.push_back(local("dot.sum", "v128"));
    line("(local.set " + sums.back() + " (v128.const i32x4 0 0 0 0))");
  }
  auto bytes = [](const Run& r) { return int64_t{r.operand->load->dtype.bytes()}; };
  const int64_t steps = length / 8, per = steps % 2 == 0 ? 2 : 1;
  const std::string i = local("dot.i", "i32"), head = label("dot.head");
  line("(local.set " + i + " (i32.const 0))");
  line("(loop " + head);
  ++indent_;
  for (int64_t s = 0; s < per; ++s) {
    for (const Run& r : runs)
      line("(local.set " + r.value + " " + wide_load(r.operand->load->dtype, "(local.get " + r.pointer + ")", s * 8 * bytes(r)) + ")");
    for (size_t a = 0; a < accs.size(); ++a)
      line("(local.set " + sums[a] + " (i32x4.add (local.get " + sums[a] + ") (i32x4.dot_i16x8_s (local.get " +
           runs[operands[a].first].value + ") (local.get " + runs[operands[a].second].value + "))))");
  }
  for (const Run& r : runs)
    line("(local.set " + r.pointer + " (i32.add (local.get " + r.pointer + ") (i32.const " + std::to_string(per * 8 * bytes(r)) + ")))");
  line("(br_if " + head + " (i32.lt_u (local.tee " + i + " (i32.add (local.get " + i + ") (i32.const 1))) (i32.const " +
       std::to_string(steps / per) + ")))");
  --indent_;
  line(")");
  const std::string tmp = local("dot.t", "v128");
  for (size_t a = 0; a < accs.size(); ++a) {
    std::string sum = "(i32.add (local.get " + accs[a].acc + ") " + lane_sum(sums[a], tmp) + ")";
    // The last length % 8 products, scalar, after the pointers' last step.
    for (int64_t k = 0; k < length % 8; ++k) {
      const Run &x = runs[operands[a].first], &y = runs[operands[a].second];
      auto scalar = [&](const Run& r) {
        return "(" + load_op(r.operand->load->dtype) + " offset=" + std::to_string(k * bytes(r)) + " (local.get " + r.pointer + "))";
      };
      sum = "(i32.add " + sum + " (i32.mul " + scalar(x) + " " + scalar(y) + "))";
    }
    line("(local.set " + accs[a].acc + " " + sum + ")");
  }
}

// A rolled loop whose body is one store Y[v + rest] = int16(X[v + rest']) (X int8 or
// uint8) or Y[v + rest] = an int16 constant, into memory of its own that X is not (so
// reading eight elements before writing eight changes nothing): eight elements a step.
bool FunctionEmitter::emit_copy_loop(const ForNode* node) {
  const int64_t* min = as_const_int(node->min);
  const int64_t* extent = as_const_int(node->extent);
  const auto* st = as<BufferStoreNode>(node->body);
  const VarNode* v = node->loop_var.get();
  if (!min || !extent || *extent < 8 || *extent > (int64_t{1} << 28) || std::abs(*min) > (int64_t{1} << 28) || !st ||
      st->predicate || st->indices.size() != 1 || st->buffer->dtype != DataType::Int(16) || !noalias_ ||
      !own_memory_.count(st->buffer->data.get()) || register_arrays_.count(st->buffer->data.get()) ||
      !promoted(st->buffer, st->indices).empty())
    return false;
  DotOperand to, from;
  if (!split_index(st->indices[0], v, 1, &to) || to.coef != 1) return false;
  const auto* widen = as<CastNode>(st->value);
  const auto* inner = widen ? as<CastNode>(widen->value) : nullptr;
  const Expr& source = inner && inner->dtype == DataType::Int(32) ? inner->value : widen ? widen->value : st->value;
  const int64_t* constant = as_const_int(st->value);
  if (!constant) {
    const auto* l = as<BufferLoadNode>(source);
    if (!widen || !l || l->buffer->data == st->buffer->data || !own_memory_.count(l->buffer->data.get()) ||
        register_arrays_.count(l->buffer->data.get()) || !operand(Cast(DataType::Int(32), source), v, &from) ||
        from.coef != 1 || l->dtype.bits() != 8)
      return false;
  }
  auto pointer = [&](const Buffer& b, const DotOperand& o) {
    const std::string p = local("copy.p", "i32");
    line("(local.set " + p + " " + address(b, {first_index(o, *min)}, st->span) + ")");
    return "(local.get " + p + ")";
  };
  const std::string y = pointer(st->buffer, to), x = constant ? "" : pointer(from.load->buffer, from);
  emit_copy_steps(y, x, constant ? "(i32.const " + int_text(*constant, 16) + ")" : "",
                  from.load ? from.load->dtype : DataType::Int(16), *extent);
  forget_loads_of(st->buffer);
  return true;
}

// The steps of emit_copy_loop from pointers y and x (or the constant when x is ""):
// straight-line up to four steps, else a loop; then the last length % 8 elements one by one.
void FunctionEmitter::emit_copy_steps(const std::string& y, const std::string& x, const std::string& constant,
                                      DataType from, int64_t length) {
  const int64_t steps = length / 8;
  auto step = [&](int64_t k, const std::string& at_y, const std::string& at_x) {
    const std::string value = x.empty() ? "(i16x8.splat " + constant + ")" : wide_load(from, at_x, k * 8);
    line("(v128.store" + (k ? " offset=" + std::to_string(k * 16) : std::string()) + " " + at_y + " " + value + ")");
  };
  std::string at_y = y, at_x = x;
  int64_t done = steps;
  if (steps <= 4) {
    for (int64_t k = 0; k < steps; ++k) step(k, y, x);
  } else {
    const std::string py = local("copy.y", "i32"), px = x.empty() ? "" : local("copy.x", "i32");
    const std::string end = local("copy.end", "i32"), head = label("copy.head");
    line("(local.set " + py + " " + y + ")");
    if (!x.empty()) line("(local.set " + px + " " + x + ")");
    line("(local.set " + end + " (i32.add (local.get " + py + ") (i32.const " + std::to_string(steps * 16) + ")))");
    line("(loop " + head);
    ++indent_;
    step(0, "(local.get " + py + ")", "(local.get " + px + ")");
    if (!x.empty()) line("(local.set " + px + " (i32.add (local.get " + px + ") (i32.const 8)))");
    line("(br_if " + head + " (i32.ne (local.tee " + py + " (i32.add (local.get " + py + ") (i32.const 16))) (local.get " +
         end + ")))");
    --indent_;
    line(")");
    at_y = "(local.get " + py + ")", at_x = "(local.get " + px + ")", done = 0;
  }
  for (int64_t k = 0; k < length % 8; ++k) {
    const std::string value = x.empty() ? constant : "(" + load_op(from) + " offset=" + std::to_string(done * 8 + k) + " " + at_x + ")";
    line("(i32.store16 offset=" + std::to_string(done * 16 + 2 * k) + " " + at_y + " " + value + ")");
  }
}

}  // namespace wat_codegen
}  // namespace mtir
