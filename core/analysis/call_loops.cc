#include "analysis/call_loops.h"

#include "analysis/int_bound.h"
#include "ir/op.h"
#include "ir/substitute.h"

namespace mtir {
namespace {

// The loop's calls (its body: one call_tir statement or a sequence of them), or empty.
std::vector<Stmt> loop_calls(const ForNode* loop) {
  std::vector<Stmt> body = {loop->body};
  if (const auto* seq = as<SeqStmtNode>(loop->body)) body = seq->seq;
  for (const Stmt& s : body) {
    const auto* eval = as<EvaluateNode>(s);
    const auto* call = eval ? as<CallNode>(eval->value) : nullptr;
    if (!call || !call->is(Builtin::CallTir)) return {};
  }
  return body;
}

// An integer expression without variables as its constant, any other as it is.
Expr folded(const Expr& e) {
  if (!e->dtype.is_integer() || e->dtype.lanes() != 1 || as<IntImmNode>(e)) return e;
  const IntBound b = IntBoundAnalyzer().bound(e);
  return b.min == b.max ? IntImm(e->dtype, b.min, e->span) : e;
}

// The call with its integer arguments and region starts folded.
Stmt fold_call(const EvaluateNode* eval) {
  const auto* call = as<CallNode>(eval->value);
  std::vector<Expr> args;
  for (const Expr& arg : call->args) {
    const auto* region = as<CallNode>(arg);
    const auto* load = region && region->is(Builtin::TirRegion) && !region->args.empty()
                           ? as<BufferLoadNode>(region->args[0])
                           : nullptr;
    if (!load) {
      args.push_back(folded(arg));
      continue;
    }
    std::vector<Expr> starts;
    for (const Expr& start : load->indices) starts.push_back(folded(start));
    std::vector<Expr> parts = region->args;
    parts[0] = BufferLoad(load->buffer, std::move(starts), load->span);
    args.push_back(Call(region->dtype, region->op, std::move(parts), region->attrs, region->span));
  }
  return Evaluate(Call(call->dtype, call->op, std::move(args), call->attrs, call->span), eval->span);
}

}  // namespace

std::vector<Stmt> expand_call_loops(const std::vector<Stmt>& steps) {
  std::vector<Stmt> out;
  int64_t budget = kMaxExpandedCalls;
  for (const Stmt& step : steps) {
    const auto* loop = as<ForNode>(step);
    const int64_t* min = loop ? as_const_int(loop->min) : nullptr;
    const int64_t* extent = loop ? as_const_int(loop->extent) : nullptr;
    const std::vector<Stmt> calls =
        min && extent && loop->for_kind == ForKind::kSerial ? loop_calls(loop) : std::vector<Stmt>{};
    if (calls.empty() || *extent < 0 || *extent * static_cast<int64_t>(calls.size()) > budget) {
      out.push_back(step);
      continue;
    }
    budget -= *extent * static_cast<int64_t>(calls.size());
    for (int64_t i = 0; i < *extent; ++i) {
      const Expr value = IntImm(loop->loop_var->dtype, *min + i);
      for (const Stmt& call : calls)
        out.push_back(fold_call(as<EvaluateNode>(substitute(call, loop->loop_var, value))));
    }
  }
  return out;
}

}  // namespace mtir
