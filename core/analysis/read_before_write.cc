#include "analysis/read_before_write.h"

#include <set>
#include <vector>

#include "analysis/buffer_accesses.h"

namespace mtir {
namespace {

// The statements of `s` in the order they run, looking through the nodes that only
// declare something around their body; a let's value runs first, as a statement of its own.
void flatten(const Stmt& s, std::vector<Stmt>* out) {
  if (const auto* d = as<DeclBufferNode>(s)) return flatten(d->body, out);
  if (const auto* a = as<AllocateNode>(s)) return flatten(a->body, out);
  if (as<LetStmtNode>(s)) {
    out->push_back(s);  // its value, its variable and its body: reads_before_writing
    return;
  }
  if (const auto* seq = as<SeqStmtNode>(s)) {
    for (const Stmt& part : seq->seq) flatten(part, out);
    return;
  }
  out->push_back(s);
}

bool touches(const std::set<const VarNode*>& used, const std::set<const VarNode*>& pointers) {
  for (const VarNode* p : pointers)
    if (used.count(p)) return true;
  return false;
}

}  // namespace

bool reads_before_writing(const PrimFunc& kernel, size_t input) {
  if (!kernel || kernel->param_buffers.empty() || input + 1 >= kernel->param_buffers.size()) return false;
  const Buffer& in = kernel->param_buffers[input];
  const Buffer& out = kernel->param_buffers.back();
  if (!in || !out || !in->data || !out->data || in->data == out->data) return false;
  std::set<const VarNode*> in_ptrs = {in->data.get()}, out_ptrs = {out->data.get()};
  std::vector<Stmt> steps;
  flatten(kernel->body, &steps);
  bool writing = false;
  for (size_t i = 0; i < steps.size(); ++i) {
    if (const auto* l = as<LetStmtNode>(steps[i])) {
      // The let's value is a step; its variable names whatever pointer that value reads.
      std::set<const VarNode*> used = pointers_used(Evaluate(l->value));
      const bool reads_in = touches(used, in_ptrs), reads_out = touches(used, out_ptrs);
      if (reads_in) in_ptrs.insert(l->var.get());
      if (reads_out) out_ptrs.insert(l->var.get());
      writing = writing || reads_out;
      if (writing && reads_in) return false;
      std::vector<Stmt> rest;
      flatten(l->body, &rest);
      steps.insert(steps.begin() + static_cast<std::ptrdiff_t>(i) + 1, rest.begin(), rest.end());
      continue;
    }
    std::set<const VarNode*> used = pointers_used(steps[i]);
    writing = writing || touches(used, out_ptrs);
    if (writing && touches(used, in_ptrs)) return false;
  }
  return true;
}

}  // namespace mtir
