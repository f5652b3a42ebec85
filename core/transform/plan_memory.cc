// PlanMemory: the global allocations at the top of a function (the intermediate
// tensors of an AOT main) become views into one workspace pool per element type,
// placed by the static memory planner (memory/planner.h) from their live ranges over
// the function's statements. The function records the pool size and the lower bound
// (the most bytes live at once) as attributes, so every report can show both.
#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "ir/mutator.h"
#include "ir/visitor.h"
#include "memory/planner.h"
#include "transform/plan_memory.h"
#include "transform/transform.h"

namespace mtir {
namespace {

// The default of -workspace-byte-alignment; a module may ask for more with the
// "workspace_byte_alignment" attribute (build_c sets it from the target).
constexpr int64_t kDefaultAlignment = 16;

// The pointers statement `s` touches: variables it uses and buffers' data pointers.
std::set<const VarNode*> pointers_used(const Stmt& s) {
  struct Finder : Visitor {
    std::set<const VarNode*> found;
    void visit_Var(const VarNode* v) override { found.insert(v); }
    void visit_buffer(const Buffer& b) override {
      if (b && b->data) found.insert(b->data.get());
      Visitor::visit_buffer(b);
    }
  } f;
  f.visit(s);
  return f.found;
}

class Rebind : public Mutator {
 public:
  std::map<const BufferNode*, Buffer> views;
  Buffer mutate_buffer(const Buffer& b) override {
    auto it = views.find(b.get());
    return it == views.end() ? b : it->second;
  }
};

PrimFunc plan(const PrimFunc& f, int64_t alignment) {
  // The allocations at the top, and what they wrap. An allocation whose pointer the
  // body uses directly (T.tvm_make_tensor(B.data, ...), or a view declared on it as
  // TVM's T.allocate + T.decl_buffer do) keeps its own memory: a view into the pool has
  // no pointer variable of its own.
  struct PointerUses : Visitor {
    std::set<const VarNode*> vars;
    void visit_Var(const VarNode* v) override { vars.insert(v); }
    void visit_DeclBuffer(const DeclBufferNode* op) override {
      if (op->buffer && op->buffer->data) vars.insert(op->buffer->data.get());
      Visitor::visit_DeclBuffer(op);
    }
  } pointer_uses;
  pointer_uses.visit(f->body);
  std::vector<const AllocateNode*> chain;
  Stmt body = f->body;
  while (const auto* a = as<AllocateNode>(body)) {
    chain.push_back(a);
    body = a->body;
  }
  std::vector<Buffer> allocs;
  std::vector<const AllocateNode*> kept;  // stay as they are, around the planned pools
  for (const AllocateNode* a : chain) {
    int64_t n;
    bool plannable = a->scope == "global" && const_num_elements(a->buffer, &n) && a->buffer->strides.empty() &&
                     !pointer_uses.vars.count(a->buffer->data.get());
    if (plannable) allocs.push_back(a->buffer);
    else kept.push_back(a);
  }
  if (allocs.empty()) return f;
  std::vector<Stmt> steps;
  if (const auto* seq = as<SeqStmtNode>(body)) steps = seq->seq;
  else steps = {body};

  // The first and last step that touches each pointer, in one walk over the steps.
  std::map<const VarNode*, std::pair<int, int>> live;
  for (size_t i = 0; i < steps.size(); ++i) {
    for (const VarNode* data : pointers_used(steps[i])) {
      auto [it, inserted] = live.emplace(data, std::make_pair(static_cast<int>(i), static_cast<int>(i)));
      if (!inserted) it->second.second = static_cast<int>(i);
    }
  }

  // One pool per element type.
  std::map<std::string, std::vector<Buffer>> groups;
  for (const auto& b : allocs) groups[b->dtype.str()].push_back(b);
  Rebind rebind;
  std::vector<std::pair<Buffer, std::vector<Buffer>>> pools;  // pool, its views
  int64_t total_pool = 0, total_bound = 0;
  // What the stack allocator takes for the pools: each is its own allocation, with a
  // 16-byte header and rounded up to 16 bytes.
  int64_t total_blocks = 0;
  std::string algorithms;
  for (const auto& [dtype, buffers] : groups) {
    std::vector<TensorLifetime> tensors;
    for (const auto& b : buffers) {
      int64_t n = 0;
      const_num_elements(b, &n);
      TensorLifetime t{b->name, n * b->dtype.bytes(), 0, 0};
      auto range = live.find(b->data.get());
      t.first_step = range == live.end() ? 0 : range->second.first;
      t.last_step = range == live.end() ? 0 : range->second.second;
      tensors.push_back(t);
    }
    PlannerOptions options;
    options.alignment = alignment;
    MemoryPlan p = plan_memory(tensors, options);
    // The planner's own checker: two live tensors never share bytes.
    std::vector<std::string> problems = check_plan(tensors, p, alignment);
    MTIR_ICHECK(problems.empty(), "invalid memory plan: " + (problems.empty() ? std::string() : problems[0]));
    const DataType t = buffers[0]->dtype;
    Buffer pool = MakeBuffer("workspace_" + dtype, t, {IntImm(DataType::Int(32), std::max<int64_t>(p.pool_size / t.bytes(), 1))});
    std::vector<Buffer> views;
    for (size_t i = 0; i < buffers.size(); ++i) {
      auto v = std::make_shared<BufferNode>(*buffers[i]);
      v->data = pool->data;
      v->elem_offset = IntImm(DataType::Int(32), p.offsets[i] / t.bytes());
      rebind.views[buffers[i].get()] = v;
      views.push_back(v);
    }
    pools.push_back({pool, views});
    total_pool += p.pool_size;
    total_blocks += 16 + (std::max<int64_t>(p.pool_size, t.bytes()) + 15) / 16 * 16;
    total_bound += p.lower_bound;
    algorithms += (algorithms.empty() ? "" : ",") + p.algorithm;
  }
  Stmt out = rebind.mutate(body);
  for (auto it = pools.rbegin(); it != pools.rend(); ++it) {
    for (auto v = it->second.rbegin(); v != it->second.rend(); ++v) out = DeclBuffer(*v, out, (*v)->span);
    out = Allocate(it->first, "global", out);
  }
  for (auto it = kept.rbegin(); it != kept.rend(); ++it) out = Allocate((*it)->buffer, (*it)->scope, out, (*it)->span);
  auto g = std::make_shared<PrimFuncNode>(*f);
  g->body = out;
  g->attrs["workspace.pool_bytes"] = total_pool;
  g->attrs["workspace.block_bytes"] = total_blocks;
  g->attrs["workspace.lower_bound_bytes"] = total_bound;
  g->attrs["workspace.planner"] = algorithms;
  g->attrs["workspace.alignment"] = alignment;
  return g;
}

}  // namespace

Pass PlanMemory() {
  Pass p;
  p.name = "plan_memory";
  p.run = [](const IRModule& m) {
    int64_t alignment = kDefaultAlignment;
    auto it = m.attrs.find("workspace_byte_alignment");
    if (it != m.attrs.end() && std::holds_alternative<int64_t>(it->second))
      alignment = std::max(std::get<int64_t>(it->second), kDefaultAlignment);
    IRModule out = m;
    for (auto& [name, f] : out.functions) f = plan(f, alignment);
    return out;
  };
  return p;
}

std::string memory_report(const PrimFunc& f) {
  auto num = [&](const char* key) {
    auto it = f->attrs.find(key);
    return it != f->attrs.end() && std::holds_alternative<int64_t>(it->second) ? std::get<int64_t>(it->second) : -1;
  };
  const int64_t pool = num("workspace.pool_bytes"), bound = num("workspace.lower_bound_bytes");
  if (pool < 0) return "memory: no workspace planned\n";
  std::string out = "memory plan (workspace pool, alignment " + std::to_string(std::max<int64_t>(num("workspace.alignment"), 1)) +
                    " bytes):\n";
  char line[256];
  std::snprintf(line, sizeof line, "  %-24s %10s %10s\n", "tensor", "offset", "bytes");
  out += line;
  for (Stmt s = f->body; s;) {
    if (const auto* a = as<AllocateNode>(s)) {
      s = a->body;
    } else if (const auto* d = as<DeclBufferNode>(s)) {
      int64_t n = 0;
      const_num_elements(d->buffer, &n);
      const int64_t* off = as_const_int(d->buffer->elem_offset);
      std::snprintf(line, sizeof line, "  %-24s %10lld %10lld\n", d->buffer->name.c_str(),
                    static_cast<long long>((off ? *off : 0) * d->buffer->dtype.bytes()),
                    static_cast<long long>(n * d->buffer->dtype.bytes()));
      out += line;
      s = d->body;
    } else {
      break;
    }
  }
  std::snprintf(line, sizeof line, "  pool %lld bytes, lower bound %lld bytes, ratio %.2f\n",
                static_cast<long long>(pool), static_cast<long long>(bound),
                bound > 0 ? static_cast<double>(pool) / static_cast<double>(bound) : 1.0);
  return out + line;
}

}  // namespace mtir
