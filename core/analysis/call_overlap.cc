#include "analysis/call_overlap.h"

#include <algorithm>
#include <limits>
#include <set>

#include "analysis/buffer_accesses.h"
#include "ir/op.h"
#include "ir/visitor.h"

namespace mtir {
namespace {

// The bytes [begin, end) of its buffer's memory that a tir_region argument spans.
struct Span1 {
  const VarNode* data = nullptr;
  int64_t begin = 0, end = 0;
  bool written = false;
  bool in_place = false;  // read element by element where the call writes (call_overlap.h)
  size_t arg = 0;         // the call argument's position
};

bool region_bytes(const Expr& arg, Span1* out) {
  const auto* region = as<CallNode>(arg);
  if (!region || region->op != "tir_region" || region->args.empty()) return false;
  const auto* load = as<BufferLoadNode>(region->args[0]);
  if (!load || !load->buffer || !load->buffer->strides.empty()) return false;
  const Buffer& b = load->buffer;
  const size_t n = b->shape.size();
  if (load->indices.size() != n || region->args.size() != n + 1) return false;
  const int64_t* offset = b->elem_offset ? as_const_int(b->elem_offset) : nullptr;
  int64_t first = offset ? *offset : (b->elem_offset ? -1 : 0), last = first;
  if (first < 0) return false;
  int64_t stride = 1;
  for (size_t d = n; d-- > 0;) {
    const int64_t *dim = as_const_int(b->shape[d]), *start = as_const_int(load->indices[d]);
    const int64_t* extent = as_const_int(region->args[d + 1]);
    if (!dim || !start || !extent || *extent < 1 || *start < 0 || *start + *extent > *dim) return false;
    first += *start * stride;
    last += (*start + *extent - 1) * stride;
    stride *= *dim;
  }
  out->data = b->data.get();
  out->begin = first * b->dtype.bytes();
  out->end = (last + 1) * b->dtype.bytes();
  return true;
}

// One step's regions, or false when the step touches a pointer in some other way.
bool step_regions(const Stmt& step, const std::set<size_t>& in_place, std::vector<Span1>* regions) {
  const auto* eval = as<EvaluateNode>(step);
  const auto* call = eval ? as<CallNode>(eval->value) : nullptr;
  if (!call || call->op != "call_tir" || call->args.size() < 2) return false;
  for (size_t k = 1; k < call->args.size(); ++k) {
    Span1 r;
    if (region_bytes(call->args[k], &r)) {
      r.written = k + 1 == call->args.size();
      r.in_place = in_place.count(k) > 0;
      r.arg = k;
      regions->push_back(r);
    } else if (!pointers_used(Evaluate(call->args[k])).empty()) {
      return false;
    }
  }
  return true;
}

int64_t align_up(int64_t x, int64_t a) { return (x + a - 1) / a * a; }

// Whether `r`, a read of the input, is the call's in-place read of the bytes `write`
// writes of the output.
bool reads_in_place(const Span1& r, const std::vector<Span1>& step, const VarNode* out) {
  if (!r.in_place) return false;
  for (const Span1& w : step)
    if (w.data == out && w.written && w.begin == r.begin && w.end == r.end) return true;
  return false;
}

// Whether `r`, a read of the output, spans exactly bytes that the same call writes:
// the input is never written while both live, so those bytes hold what an earlier call
// wrote to the output wherever the two are placed.
bool rewrites_own_read(const Span1& r, const std::vector<Span1>& step) {
  for (const Span1& w : step)
    if (w.data == r.data && w.written && w.begin == r.begin && w.end == r.end) return true;
  return false;
}

// The shift of `out` against `in` over steps [from, to], or false; `in_place` gets the
// calls whose in-place reads it relies on (then only shift 0 holds: *below == 0).
bool pair_shift(const std::vector<std::vector<Span1>>& regions, const std::vector<bool>& parsed, const VarNode* out,
                const VarNode* in, int from, int to, int64_t* below, int64_t* above,
                std::vector<std::pair<int, size_t>>* in_place) {
  // Walking back from the last step: the lowest and highest input byte read from here on.
  int64_t lo = std::numeric_limits<int64_t>::max(), hi = std::numeric_limits<int64_t>::min();
  *below = 0, *above = 0;
  for (int k = to; k >= from; --k) {
    bool touches = false;
    for (const Span1& r : regions[k]) touches = touches || r.data == out || r.data == in;
    if (!touches) continue;
    if (!parsed[k]) return false;
    for (const Span1& r : regions[k]) {
      if (r.data == in && r.written) return false;
      if (r.data == in && !reads_in_place(r, regions[k], out)) lo = std::min(lo, r.begin), hi = std::max(hi, r.end);
    }
    for (const Span1& r : regions[k]) {
      if (r.data != out) continue;
      // The output read while the input lives: keep them apart, unless the call writes
      // exactly the bytes it reads (a fused add over its operand's rows in the output).
      if (!r.written && !rewrites_own_read(r, regions[k])) return false;
      if (!r.written) continue;
      if (lo > hi) continue;         // no read of the input from here on
      *below = std::max(*below, r.end - lo);
      *above = std::max(*above, hi - r.begin);
    }
    // An in-place read comes after the writes of the calls before this one.
    for (const Span1& r : regions[k]) {
      if (r.data != in || !reads_in_place(r, regions[k], out)) continue;
      lo = std::min(lo, r.begin), hi = std::max(hi, r.end);
      in_place->push_back({k, r.arg});
    }
  }
  return in_place->empty() || *below == 0;
}

}  // namespace

std::vector<CallOverlap> call_overlaps(const std::vector<Stmt>& steps,
                                       const std::vector<std::pair<const VarNode*, int64_t>>& sizes,
                                       const std::map<const VarNode*, std::pair<int, int>>& live, int64_t alignment,
                                       const std::vector<std::set<size_t>>& in_place) {
  std::vector<std::vector<Span1>> regions(steps.size());
  std::vector<bool> parsed(steps.size());
  for (size_t i = 0; i < steps.size(); ++i) {
    parsed[i] = step_regions(steps[i], i < in_place.size() ? in_place[i] : std::set<size_t>{}, &regions[i]);
    // An unparsed step still shows which pointers it touches.
    if (!parsed[i]) {
      regions[i].clear();
      for (const VarNode* p : pointers_used(steps[i])) regions[i].push_back({p, 0, 0, true});
    }
  }
  // Each tensor's live steps beside its size, looked up once: the pairs below are
  // quadratic in the tensors (a 100,000-node chain has 6,250), so their test must be cheap.
  const std::pair<int, int> dead{std::numeric_limits<int>::max(), std::numeric_limits<int>::min()};
  std::vector<std::pair<int, int>> steps_of;
  for (const auto& [p, size] : sizes) {
    auto l = live.find(p);
    steps_of.push_back(l == live.end() ? dead : l->second);
  }
  std::vector<CallOverlap> out;
  for (size_t oi = 0; oi < sizes.size(); ++oi) {
    const auto& [o, osize] = sizes[oi];
    if (steps_of[oi] == dead) continue;
    const int first = steps_of[oi].first;
    for (size_t ii = 0; ii < sizes.size(); ++ii) {
      const auto& [i, isize] = sizes[ii];
      const auto& [i_first, i_last] = steps_of[ii];
      if (i == o || i_first >= first || i_last < first) continue;
      int64_t below = 0, above = 0;
      std::vector<std::pair<int, size_t>> reads_in_place;
      if (!pair_shift(regions, parsed, o, i, first, i_last, &below, &above, &reads_in_place)) continue;
      const int64_t in = align_up(isize, alignment), outb = align_up(osize, alignment);
      below = align_up(below, alignment), above = align_up(above, alignment);
      const int64_t down = std::max(below + in, outb), up = std::max(in, above + outb);
      if (std::min(down, up) >= in + outb) continue;
      // With in-place reads below == 0, so down <= up: the output over the input.
      out.push_back({o, i, down <= up ? -below : above, in + outb - std::min(down, up), std::move(reads_in_place)});
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const CallOverlap& a, const CallOverlap& b) { return a.saved > b.saved; });
  return out;
}

}  // namespace mtir
