#include "artifact/memory_plan.h"

#include <map>
#include <variant>

#include "analysis/call_loops.h"
#include "ir/visitor.h"

namespace mtir {
namespace {

int64_t int_attr(const PrimFunc& f, const char* key) {
  auto it = f->attrs.find(key);
  return it != f->attrs.end() && std::holds_alternative<int64_t>(it->second) ? std::get<int64_t>(it->second) : -1;
}

// Which of `views` statement `s` touches (the pool views are distinct buffer objects).
std::vector<bool> touched(const Stmt& s, const std::map<const BufferNode*, size_t>& views, size_t n) {
  struct Finder : Visitor {
    const std::map<const BufferNode*, size_t>* views;
    std::vector<bool> hit;
    void visit_buffer(const Buffer& b) override {
      if (b) {
        auto it = views->find(b.get());
        if (it != views->end()) hit[it->second] = true;
      }
      Visitor::visit_buffer(b);
    }
  } f;
  f.views = &views;
  f.hit.assign(n, false);
  f.visit(s);
  return f.hit;
}

}  // namespace

namespace {

// The function named by the first call in `step` whose first argument is a string (how
// call_tir, call_extern and packed calls name their callee).
std::string first_callee(const Stmt& step) {
  struct Finder : Visitor {
    std::string name;
    void visit_Call(const CallNode* op) override {
      if (!name.empty()) return;
      if (!op->args.empty())
        if (const auto* s = as<StringImmNode>(op->args[0])) {
          name = s->value;
          return;
        }
      Visitor::visit_Call(op);
    }
  } finder;
  finder.visit(step);
  return finder.name;
}

}  // namespace

FunctionMemoryPlan memory_plan_of(const PrimFunc& f) {
  FunctionMemoryPlan plan;
  const int64_t pool_bytes = int_attr(f, "workspace.pool_bytes");
  if (pool_bytes < 0) return plan;
  plan.planned = true;
  plan.pool_bytes = pool_bytes;
  plan.lower_bound = int_attr(f, "workspace.lower_bound_bytes");
  plan.shared_lower_bound = int_attr(f, "workspace.shared_lower_bound_bytes");
  if (plan.shared_lower_bound < 0) plan.shared_lower_bound = plan.lower_bound;
  plan.alignment = int_attr(f, "workspace.alignment");
  if (auto it = f->attrs.find("workspace.planner"); it != f->attrs.end() && std::holds_alternative<std::string>(it->second))
    plan.planner = std::get<std::string>(it->second);

  // PlanMemory's shape: Allocate(pool) DeclBuffer(view)... per pool, then the steps.
  std::map<const VarNode*, std::string> pool_of_data;
  std::map<const BufferNode*, size_t> views;
  Stmt body = f->body;
  while (body) {
    if (const auto* a = as<AllocateNode>(body)) {
      int64_t n = 0;
      if (const_num_elements(a->buffer, &n)) {
        pool_of_data[a->buffer->data.get()] = a->buffer->name;
        plan.pools.emplace_back(a->buffer->name, n * a->buffer->dtype.bytes());
      }
      body = a->body;
    } else if (const auto* d = as<DeclBufferNode>(body)) {
      auto pool = pool_of_data.find(d->buffer->data.get());
      const int64_t* off = as_const_int(d->buffer->elem_offset);
      int64_t n = 0;
      if (pool != pool_of_data.end() && off && const_num_elements(d->buffer, &n)) {
        PlannedTensor t;
        t.name = d->buffer->name;
        t.pool = pool->second;
        t.offset = *off * d->buffer->dtype.bytes();
        t.size = n * d->buffer->dtype.bytes();
        t.first_step = -1;
        t.last_step = -1;
        views[d->buffer.get()] = plan.tensors.size();
        plan.tensors.push_back(std::move(t));
      }
      body = d->body;
    } else {
      break;
    }
  }
  std::vector<Stmt> steps;
  if (const auto* seq = as<SeqStmtNode>(body)) steps = seq->seq;
  else if (body) steps = {body};
  steps = expand_call_loops(steps);  // plan_memory's steps: a loop of band calls is its calls
  plan.steps = static_cast<int>(steps.size());
  for (const auto& step : steps) plan.step_callees.push_back(first_callee(step));
  for (size_t i = 0; i < steps.size(); ++i) {
    std::vector<bool> hit = touched(steps[i], views, plan.tensors.size());
    for (size_t k = 0; k < hit.size(); ++k) {
      if (!hit[k]) continue;
      PlannedTensor& t = plan.tensors[k];
      if (t.first_step < 0) t.first_step = static_cast<int>(i);
      t.last_step = static_cast<int>(i);
    }
  }
  return plan;
}

}  // namespace mtir
