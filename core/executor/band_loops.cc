// The interior bands of a patch stage as one loop (band_loops.h).
#include "executor/band_loops.h"

#include <algorithm>

#include "ir/op.h"
#include "ir/structural_equal.h"

namespace mtir {
namespace {

const DataType kI32 = DataType::Int(32);

const CallNode* call_tir_of(const Stmt& s) {
  const auto* eval = as<EvaluateNode>(s);
  const auto* call = eval ? as<CallNode>(eval->value) : nullptr;
  return call && call->is(Builtin::CallTir) ? call : nullptr;
}

const BufferLoadNode* region_load(const Expr& arg) {
  const auto* region = as<CallNode>(arg);
  if (!region || !region->is(Builtin::TirRegion) || region->args.empty()) return nullptr;
  return as<BufferLoadNode>(region->args[0]);
}

// Whether buffer `b` of a later band stands where `a` of the first band does: the same
// buffer, or each band's own at the same position, of the same shape and type.
bool same_buffer(const Buffer& a, const Buffer& b, const BandCalls& first, const BandCalls& later) {
  if (a == b) return true;
  auto ia = std::find(first.own.begin(), first.own.end(), a);
  auto ib = std::find(later.own.begin(), later.own.end(), b);
  if (ia == first.own.end() || ib == later.own.end() || ia - first.own.begin() != ib - later.own.begin()) return false;
  if (a->dtype != b->dtype || a->shape.size() != b->shape.size()) return false;
  for (size_t d = 0; d < a->shape.size(); ++d) {
    const int64_t *x = as_const_int(a->shape[d]), *y = as_const_int(b->shape[d]);
    if (!x || !y || *x != *y) return false;
  }
  return true;
}

// Region argument `b` of a later band against `a` of the first: the same buffer and
// extents, constant starts; appends how far each start of `b` is beyond `a`'s.
bool region_steps(const Expr& a, const Expr& b, const BandCalls& first, const BandCalls& later,
                  std::vector<int64_t>* steps) {
  const BufferLoadNode *la = region_load(a), *lb = region_load(b);
  if (!la || !lb || !same_buffer(la->buffer, lb->buffer, first, later) || la->indices.size() != lb->indices.size())
    return false;
  const auto &ra = *as<CallNode>(a), &rb = *as<CallNode>(b);
  if (ra.args.size() != rb.args.size()) return false;
  for (size_t k = 1; k < ra.args.size(); ++k) {
    const int64_t *x = as_const_int(ra.args[k]), *y = as_const_int(rb.args[k]);
    if (!x || !y || *x != *y) return false;
  }
  for (size_t d = 0; d < la->indices.size(); ++d) {
    const int64_t *x = as_const_int(la->indices[d]), *y = as_const_int(lb->indices[d]);
    if (!x || !y) return false;
    steps->push_back(*y - *x);
  }
  return true;
}

// How far each region start of band `b` is beyond band `a`'s, in call and argument
// order, or false when the two bands differ in anything else.
bool band_steps(const BandCalls& a, const BandCalls& b, std::vector<int64_t>* steps) {
  if (a.calls.size() != b.calls.size() || a.calls.empty()) return false;
  for (size_t c = 0; c < a.calls.size(); ++c) {
    const CallNode *ca = call_tir_of(a.calls[c]), *cb = call_tir_of(b.calls[c]);
    if (!ca || !cb || ca->args.size() != cb->args.size() || ca->attrs != cb->attrs ||
        !structural_equal(ca->args[0], cb->args[0]))
      return false;
    for (size_t k = 1; k < ca->args.size(); ++k) {
      if (region_load(ca->args[k])) {
        if (!region_steps(ca->args[k], cb->args[k], a, b, steps)) return false;
      } else if (region_load(cb->args[k]) || !structural_equal(ca->args[k], cb->args[k])) {
        return false;
      }
    }
  }
  return true;
}

// Band `first`'s calls with each region start that moves (steps, in band_steps' order)
// as start + band * step.
Stmt loop_body(const BandCalls& first, const std::vector<int64_t>& steps, const Var& band) {
  std::vector<Stmt> body;
  size_t p = 0;
  for (const Stmt& s : first.calls) {
    const CallNode* call = call_tir_of(s);
    std::vector<Expr> args = {call->args[0]};
    for (size_t k = 1; k < call->args.size(); ++k) {
      const BufferLoadNode* load = region_load(call->args[k]);
      if (!load) {
        args.push_back(call->args[k]);
        continue;
      }
      std::vector<Expr> starts;
      for (const Expr& start : load->indices) {
        const int64_t step = steps[p++];
        starts.push_back(step == 0 ? start
                                   : Binary(ExprKind::Add, start, Binary(ExprKind::Mul, band, IntImm(kI32, step))));
      }
      std::vector<Expr> region = as<CallNode>(call->args[k])->args;
      region[0] = BufferLoad(load->buffer, std::move(starts));
      args.push_back(Call(DataType::Handle(), "tir_region", std::move(region)));
    }
    body.push_back(Evaluate(Call(call->dtype, call->op, std::move(args), call->attrs, call->span), s->span));
  }
  return SeqStmt(std::move(body));
}

// The last band of the run from `k` on whose steps from band to band are the first's.
size_t run_end(const std::vector<BandCalls>& bands, size_t k, std::vector<int64_t>* steps) {
  if (k + 1 >= bands.size() || !band_steps(bands[k], bands[k + 1], steps)) return k;
  size_t j = k + 1;
  for (std::vector<int64_t> next; j + 1 < bands.size(); ++j, next.clear()) {
    if (!band_steps(bands[k], bands[j + 1], &next)) break;
    // Affine in the band: band j + 1 is (j + 1 - k) steps beyond band k.
    bool affine = next.size() == steps->size();
    for (size_t p = 0; affine && p < next.size(); ++p) affine = next[p] == (*steps)[p] * int64_t(j + 1 - k);
    if (!affine) break;
  }
  return j;
}

}  // namespace

std::vector<Stmt> roll_band_calls(const std::vector<BandCalls>& bands, std::vector<Buffer>& intermediates) {
  std::vector<Stmt> out;
  for (size_t k = 0; k < bands.size();) {
    std::vector<int64_t> steps;
    const size_t last = run_end(bands, k, &steps);
    intermediates.insert(intermediates.end(), bands[k].own.begin(), bands[k].own.end());
    if (last + 1 - k < kMinLoopBands) {
      out.insert(out.end(), bands[k].calls.begin(), bands[k].calls.end());
      ++k;
      continue;
    }
    Var band = MakeVar("band", kI32);
    out.push_back(For(band, IntImm(kI32, 0), IntImm(kI32, int64_t(last + 1 - k)), ForKind::kSerial,
                      loop_body(bands[k], steps, band)));
    k = last + 1;
  }
  return out;
}

}  // namespace mtir
