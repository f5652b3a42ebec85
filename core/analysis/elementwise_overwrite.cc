#include "analysis/elementwise_overwrite.h"

#include <algorithm>
#include <set>
#include <vector>

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

}  // namespace

bool writes_elementwise_over(const PrimFunc& kernel, size_t input) {
  if (!kernel || input + 1 >= kernel->param_buffers.size()) return false;
  const Buffer& in = kernel->param_buffers[input];
  const Buffer& out = kernel->param_buffers.back();
  if (!in || !out || in == out || in->dtype != out->dtype || !in->strides.empty() || !out->strides.empty() ||
      !same_shape(in, out))
    return false;
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

}  // namespace mtir
