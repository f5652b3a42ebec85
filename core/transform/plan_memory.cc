// PlanMemory: the global allocations at the top of a function (the intermediate
// tensors of an AOT main) become views into one workspace pool per element type,
// placed by the static memory planner (memory/planner.h) from their live ranges over
// the function's statements. The function records the pool size and the lower bound
// (the most bytes live at once) as attributes, so every report can show both.
//
// Two kinds of sharing go below that whole-tensor bound. A plain view declared on an
// allocation (the AOT executor's reshape and flatten, which run no kernel) moves into
// the pool with its allocation. A call_tir whose kMayOverwriteAttr names inputs offers
// the planner to write the call's output over one of them; PlanMemory offers it only
// when the callee reads that input elementwise (analysis/elementwise_overwrite.h), the
// planner accepts it only when the input dies at that call and has the output's size,
// and check_plan verifies the result. A tensor the call passes at several positions
// must be read elementwise at each. A callee that got one records the parameters that
// now share bytes (tir.aliased_params): only those lose tir.noalias's promise. The
// attributes record both bounds: without sharing and with the accepted sharings.
// Intermediates may also lie in a model output buffer before its first write, and an
// input of that first write too when the callee reads it wholly before it writes
// (analysis/read_before_write.h) and it dies there; that callee's two parameters are
// recorded the same way.
#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "analysis/buffer_accesses.h"
#include "analysis/call_loops.h"
#include "analysis/call_overlap.h"
#include "analysis/callees.h"
#include "analysis/elementwise_overwrite.h"
#include "analysis/read_before_write.h"
#include "ir/mutator.h"
#include "ir/op.h"
#include "ir/visitor.h"
#include "memory/planner.h"
#include "support/diagnostic.h"
#include "transform/plan_memory.h"
#include "transform/transform.h"

namespace mtir {
namespace {

// The default of -workspace-byte-alignment; a module may ask for more with the
// "workspace_byte_alignment" attribute (build_c sets it from the target).
constexpr int64_t kDefaultAlignment = 16;

// Replaces the buffers placed in a pool by their views, and drops the sharing
// candidates of the calls (kMayOverwriteAttr): they are decided here.
class Rebind : public Mutator {
 public:
  std::map<const BufferNode*, Buffer> views;
  Buffer mutate_buffer(const Buffer& b) override {
    auto it = views.find(b.get());
    return it == views.end() ? b : it->second;
  }
  Expr mutate_Call(const CallNode* op, const Expr& self) override {
    Expr e = Mutator::mutate_Call(op, self);
    const auto* call = as<CallNode>(e);
    if (!call || !call->attrs.count(kMayOverwriteAttr)) return e;
    Attrs attrs = call->attrs;
    attrs.erase(kMayOverwriteAttr);
    return Call(call->dtype, call->op, call->args, std::move(attrs), call->span);
  }
};

// A top-level T.decl_buffer on an allocation's memory that the pool can hold as is: the
// same element type, no strides, offset 0 and no more bytes than the allocation (the
// AOT executor's views for reshape and flatten).
bool plain_view(const Buffer& view, const Buffer& alloc) {
  int64_t n = 0, m = 0;
  return view->dtype == alloc->dtype && view->strides.empty() &&
         (!view->elem_offset || (as_const_int(view->elem_offset) && *as_const_int(view->elem_offset) == 0)) &&
         const_num_elements(view, &n) && const_num_elements(alloc, &m) && n <= m;
}

// The buffer a whole-buffer call argument (tir_region(B[0, ...], extents...)) names.
Buffer region_buffer(const Expr& arg) {
  const auto* region = as<CallNode>(arg);
  if (!region || region->op != "tir_region" || region->args.empty()) return nullptr;
  const auto* load = as<BufferLoadNode>(region->args[0]);
  return load ? load->buffer : nullptr;
}

// Whether a call argument is a whole buffer (a band call passes rows of one).
bool whole_region(const Expr& arg) {
  const Buffer b = region_buffer(arg);
  const auto* region = as<CallNode>(arg);
  const auto* load = region ? as<BufferLoadNode>(region->args[0]) : nullptr;
  if (!b || !load || region->args.size() != b->shape.size() + 1) return false;
  for (size_t d = 0; d < b->shape.size(); ++d) {
    const int64_t *start = as_const_int(load->indices[d]), *extent = as_const_int(region->args[d + 1]),
                  *dim = as_const_int(b->shape[d]);
    if (!start || *start != 0) return false;
    // The AOT executor's whole() passes the buffer's own shape expressions.
    if (region->args[d + 1].get() != b->shape[d].get() && (!extent || !dim || *extent != *dim)) return false;
  }
  return true;
}

// An input whose bytes a call's output may take: the call's kMayOverwriteAttr names it
// and the callee reads it elementwise (analysis/elementwise_overwrite.h).
struct CallSharing {
  const VarNode* output;  // data pointers of the call's output and input buffers
  const VarNode* input;
  std::string callee;
  std::set<size_t> params;  // the callee's parameters that then share bytes
};

std::vector<CallSharing> call_sharings(const Stmt& step, const IRModule& m) {
  std::vector<CallSharing> out;
  const auto* eval = as<EvaluateNode>(step);
  const auto* call = eval ? as<CallNode>(eval->value) : nullptr;
  if (!call || call->op != "call_tir" || call->args.size() < 3) return out;
  auto mask = call->attrs.find(kMayOverwriteAttr);
  const auto* name = as<StringImmNode>(call->args[0]);
  if (mask == call->attrs.end() || !name || !std::holds_alternative<int64_t>(mask->second)) return out;
  const PrimFunc callee = m.lookup(name->value);
  const Buffer result = region_buffer(call->args.back());
  if (!callee || !result || callee->param_buffers.size() + 1 != call->args.size()) return out;
  // The tensor may be passed at other positions too (a convolution fused with the add
  // of its own input reads it as a window there): every position must read it elementwise.
  auto read_elementwise_everywhere = [&](const Buffer& in) {
    for (size_t j = 0; j + 2 < call->args.size(); ++j) {
      const Buffer other = region_buffer(call->args[j + 1]);
      if ((!other || other->data == in->data) && !writes_elementwise_over(callee, j)) return false;
    }
    return true;
  };
  for (size_t k = 0; k + 2 < call->args.size() && k < 62; ++k) {
    if (!(std::get<int64_t>(mask->second) >> k & 1)) continue;
    const Buffer in = region_buffer(call->args[k + 1]);
    // Rows of a tensor (a residual stage's band call) overlap through call_overlaps instead.
    if (!whole_region(call->args[k + 1]) || !whole_region(call->args.back())) continue;
    if (!in || in->data == result->data || !read_elementwise_everywhere(in)) continue;
    std::set<size_t> params = {call->args.size() - 2};
    for (size_t j = 0; j + 2 < call->args.size(); ++j) {
      const Buffer other = region_buffer(call->args[j + 1]);
      if (other && other->data == in->data) params.insert(j);
    }
    out.push_back({result->data.get(), in->data.get(), name->value, params});
  }
  return out;
}

// An input that a call reads wholly before it writes its output (analysis/
// read_before_write.h), passed at no other position: when it dies at that call and the
// call is the output's first write, it may lie in the output's bytes.
struct ReadFirst {
  const VarNode* input;  // data pointers of the call's input and output buffers
  const VarNode* output;
  int step;
  std::string callee;
  std::set<size_t> params;  // the callee's parameters that then share bytes
};

std::vector<ReadFirst> read_firsts(const Stmt& step, int index, const IRModule& m) {
  std::vector<ReadFirst> out;
  const auto* eval = as<EvaluateNode>(step);
  const auto* call = eval ? as<CallNode>(eval->value) : nullptr;
  if (!call || call->op != "call_tir" || call->args.size() < 3) return out;
  const auto* name = as<StringImmNode>(call->args[0]);
  const PrimFunc callee = name ? m.lookup(name->value) : nullptr;
  const Buffer result = region_buffer(call->args.back());
  if (!callee || !result || callee->param_buffers.size() + 1 != call->args.size()) return out;
  for (size_t k = 0; k + 2 < call->args.size(); ++k) {
    const Buffer in = region_buffer(call->args[k + 1]);
    if (!in || in->data == result->data) continue;
    int positions = 0;
    for (size_t j = 1; j < call->args.size(); ++j) {
      const Buffer other = region_buffer(call->args[j]);
      positions += other && other->data == in->data;
    }
    if (positions == 1 && reads_before_writing(callee, k))
      out.push_back({in->data.get(), result->data.get(), index, name->value, {k, call->args.size() - 2}});
  }
  return out;
}

// A model output buffer (always) or input buffer (-reuse-io-buffers=1) as a place for
// intermediates. An input holds the caller's data from the start to its last read, an
// output the result from its first write to the end; outside that, its bytes are free.
// An output's bytes before its write are the model's to use (the caller reads them only
// after run() returns); an input's after its last read are the caller's data, hence the
// option.
struct IoBuffer {
  Buffer param;
  int64_t capacity = 0;
  TensorLifetime own;     // the buffer's own contents, at offset 0
  bool holds_own = true;  // false: an input the body never reads
  std::vector<int> placed;
  std::vector<int64_t> offsets;
};

std::vector<int> param_list(const PrimFunc& f, const char* key) {
  std::vector<int> out;
  auto it = f->attrs.find(key);
  if (it == f->attrs.end() || !std::holds_alternative<std::string>(it->second)) return out;
  std::string s = std::get<std::string>(it->second);
  for (size_t pos = 0; pos < s.size();) {
    size_t comma = s.find(',', pos);
    if (comma == std::string::npos) comma = s.size();
    out.push_back(std::stoi(s.substr(pos, comma - pos)));
    pos = comma + 1;
  }
  return out;
}

// The model's output buffers (and with `inputs` its input buffers) of element type
// `dtype`, with what they hold.
std::vector<IoBuffer> io_buffers(const PrimFunc& f, const std::string& dtype,
                                 const std::map<const VarNode*, std::pair<int, int>>& live, int steps, bool inputs) {
  std::vector<IoBuffer> out;
  for (const char* key : {kInputParamsAttr, kOutputParamsAttr}) {
    const bool input = key == kInputParamsAttr;
    if (input && !inputs) continue;
    for (int i : param_list(f, key)) {
      if (i < 0 || static_cast<size_t>(i) >= f->param_buffers.size()) continue;
      const Buffer& b = f->param_buffers[i];
      int64_t n = 0;
      if (!b || b->dtype.str() != dtype || !b->strides.empty() || !const_num_elements(b, &n)) continue;
      IoBuffer io;
      io.param = b;
      io.capacity = n * b->dtype.bytes();
      auto range = live.find(b->data.get());
      if (range == live.end() && !input) continue;  // an output nothing writes: leave it alone
      io.holds_own = range != live.end();
      io.own = TensorLifetime{b->name, io.capacity, input ? 0 : range->second.first,
                              input ? (io.holds_own ? range->second.second : 0) : steps - 1};
      out.push_back(std::move(io));
    }
  }
  return out;
}

// Per tensor, the output buffers whose first write reads it wholly first (ReadFirst).
using ReadFirstInto = std::vector<std::map<const VarNode*, const ReadFirst*>>;

// The call through which tensor `t` may share bytes with the output buffer's own contents:
// the output's first write, which reads `t` wholly before it writes and where `t` dies.
const ReadFirst* read_first_into(const IoBuffer& io, const TensorLifetime& t,
                                 const std::map<const VarNode*, const ReadFirst*>& into) {
  auto it = into.find(io.param->data.get());
  if (it == into.end() || io.own.first_step != t.last_step || it->second->step != t.last_step) return nullptr;
  return it->second;
}

// The read-first calls of each tensor that die there, by output buffer.
ReadFirstInto read_first_into_of(const std::vector<ReadFirst>& calls, const std::map<const VarNode*, int>& index_of,
                                 const std::vector<TensorLifetime>& tensors) {
  ReadFirstInto into(tensors.size());
  for (const ReadFirst& r : calls) {
    auto t = index_of.find(r.input);
    if (t != index_of.end() && tensors[t->second].last_step == r.step) into[t->second][r.output] = &r;
  }
  return into;
}

// Places tensors in the I/O buffers, largest first, each at the lowest aligned offset of
// the first buffer where it overlaps nothing live at a common step (but the buffer's own
// contents when its first write reads the tensor first: `into`); `keep` marks the
// tensors that stay in the pool. Returns the tensors placed.
std::vector<bool> place_in_io(std::vector<IoBuffer>& ios, const std::vector<TensorLifetime>& tensors,
                              const std::vector<bool>& keep, const ReadFirstInto& into, int64_t alignment) {
  std::vector<bool> placed(tensors.size(), false);
  std::vector<int> order;
  for (size_t i = 0; i < tensors.size(); ++i)
    if (!keep[i] && tensors[i].size_bytes > 0) order.push_back(static_cast<int>(i));
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return tensors[a].size_bytes > tensors[b].size_bytes; });
  auto overlap = [](const TensorLifetime& a, const TensorLifetime& b) {
    return a.first_step <= b.last_step && b.first_step <= a.last_step;
  };
  for (int t : order) {
    const int64_t size = (tensors[t].size_bytes + alignment - 1) / alignment * alignment;
    for (IoBuffer& io : ios) {
      if (io.holds_own && overlap(io.own, tensors[t]) && !read_first_into(io, tensors[t], into[t])) continue;
      std::vector<std::pair<int64_t, int64_t>> busy;
      for (size_t k = 0; k < io.placed.size(); ++k) {
        const TensorLifetime& u = tensors[io.placed[k]];
        if (overlap(u, tensors[t]))
          busy.emplace_back(io.offsets[k], io.offsets[k] + (u.size_bytes + alignment - 1) / alignment * alignment);
      }
      std::sort(busy.begin(), busy.end());
      int64_t at = 0;
      for (const auto& [begin, end] : busy) {
        if (begin - at >= size) break;
        at = std::max(at, end);
      }
      if (at + size > io.capacity) continue;
      io.placed.push_back(t);
      io.offsets.push_back(at);
      placed[t] = true;
      break;
    }
  }
  return placed;
}

// check_plan on one I/O buffer: the tensors placed in it, and each against the buffer's
// own contents (a tensor its first write reads first counts as dead at that write).
void check_io(const IoBuffer& io, const std::vector<TensorLifetime>& tensors, const ReadFirstInto& into,
              int64_t alignment) {
  auto check = [&](const std::vector<TensorLifetime>& in_it, const std::vector<int64_t>& offsets) {
    MemoryPlan plan;
    // The tensors placed fit in the capacity with their aligned slots (place_in_io); the
    // buffer's own contents may end inside the last slot.
    plan.pool_size = (io.capacity + alignment - 1) / alignment * alignment;
    plan.offsets = offsets;
    std::vector<std::string> problems = check_plan(in_it, plan, alignment);
    MTIR_ICHECK(problems.empty(), "invalid placement in I/O buffer '" + io.param->name + "': " +
                                      (problems.empty() ? std::string() : problems[0]));
  };
  std::vector<TensorLifetime> in_it;
  for (size_t k = 0; k < io.placed.size(); ++k) {
    TensorLifetime t = tensors[io.placed[k]];
    in_it.push_back(t);
    MTIR_ICHECK(io.offsets[k] + t.size_bytes <= io.capacity,
                "tensor '" + t.name + "' placed beyond I/O buffer '" + io.param->name + "'");
    if (!io.holds_own) continue;
    if (read_first_into(io, t, into[io.placed[k]])) t.last_step -= 1;
    if (t.last_step >= t.first_step) check({io.own, t}, {0, io.offsets[k]});
  }
  check(in_it, io.offsets);
}

struct Planned {
  PrimFunc func;
  std::map<std::string, std::set<size_t>> overwriting;  // callees that now write over an input: those parameters
};

// A few scalars of a leaf kernel (an accumulator, a row's maximum): at most this many
// bytes of a global allocation live on the C stack instead of in a workspace block.
constexpr int64_t kStackScalarBytes = 64;

// In an operator kernel (a function of the module that call_tir calls, and that calls
// nothing itself), a small constant-size global allocation becomes a "local" one (a C
// array): no workspace block (16-byte header, the allocate and free calls, the NULL
// check and the error return that makes its caller check the return code) for the
// bytes of a few scalars, which the compiler then keeps in registers.
std::set<std::string> call_tir_callees(const IRModule& m) {
  std::set<std::string> names;
  for (const auto& [name, f] : m.functions) names.merge(callees(f->body, Builtin::CallTir));
  return names;
}

PrimFunc small_allocations_on_stack(const PrimFunc& f) {
  struct Calls : Visitor {
    bool any = false;
    void visit_Call(const CallNode* op) override {
      if (op->is(Builtin::CallTir) || op->is(Builtin::CallExtern) || op->is(Builtin::TvmCallPacked) ||
          op->is(Builtin::TvmCallPackedLowered))
        any = true;
      Visitor::visit_Call(op);
    }
  } calls;
  calls.visit(f->body);
  if (calls.any) return f;
  struct ToStack : Mutator {
    Stmt mutate_Allocate(const AllocateNode* op, const Stmt& self) override {
      Stmt body = mutate(op->body);
      int64_t n = 0;
      if (op->scope == "global" && const_num_elements(op->buffer, &n) && op->buffer->strides.empty() &&
          n * op->buffer->dtype.bytes() <= kStackScalarBytes)
        return Allocate(op->buffer, "local", body, op->span);
      return body == op->body ? self : Allocate(op->buffer, op->scope, body, op->span);
    }
  } to_stack;
  Stmt body = to_stack.mutate(f->body);
  if (body == f->body) return f;
  auto g = std::make_shared<PrimFuncNode>(*f);
  g->body = body;
  return g;
}

// The allocations at the top of a function and what they wrap. An allocation whose
// pointer the body uses directly (T.tvm_make_tensor(B.data, ...), or a view declared on
// it in the body as TVM's T.allocate + T.decl_buffer do) keeps its own memory: a view
// into the pool has no pointer variable of its own. A plain view declared right after
// the allocations (plain_view) is the allocation's memory under another shape: it moves
// into the pool with it.
struct TopAllocations {
  Stmt body;                                 // under the allocations
  std::vector<const DeclBufferNode*> views;  // declared right after them
  std::vector<Buffer> plannable;             // go into the pools
  std::vector<const AllocateNode*> kept;     // stay as they are, around the planned pools
  std::vector<Stmt> steps;                   // the statements under the views, loops of calls expanded
};

TopAllocations top_allocations(const PrimFunc& f) {
  TopAllocations top;
  std::vector<const AllocateNode*> chain;
  top.body = f->body;
  while (const auto* a = as<AllocateNode>(top.body)) {
    chain.push_back(a);
    top.body = a->body;
  }
  std::map<const VarNode*, Buffer> alloc_of_data;
  for (const AllocateNode* a : chain) alloc_of_data[a->buffer->data.get()] = a->buffer;
  Stmt inner = top.body;
  while (const auto* d = as<DeclBufferNode>(inner)) {
    top.views.push_back(d);
    inner = d->body;
  }
  struct PointerUses : Visitor {
    std::set<const VarNode*> vars;
    void visit_Var(const VarNode* v) override { vars.insert(v); }
    void visit_DeclBuffer(const DeclBufferNode* op) override {
      if (op->buffer && op->buffer->data) vars.insert(op->buffer->data.get());
      Visitor::visit_DeclBuffer(op);
    }
  } pointer_uses;
  pointer_uses.visit(inner);
  for (const DeclBufferNode* d : top.views) {
    auto a = alloc_of_data.find(d->buffer->data.get());
    if (a != alloc_of_data.end() && !plain_view(d->buffer, a->second)) pointer_uses.vars.insert(a->first);
  }
  for (const AllocateNode* a : chain) {
    int64_t n;
    bool plannable = a->scope == "global" && const_num_elements(a->buffer, &n) && a->buffer->strides.empty() &&
                     !pointer_uses.vars.count(a->buffer->data.get());
    if (plannable) top.plannable.push_back(a->buffer);
    else top.kept.push_back(a);
  }
  if (const auto* seq = as<SeqStmtNode>(inner)) top.steps = seq->seq;
  else top.steps = {inner};
  // A loop of band calls: its calls, one step each (analysis/call_loops.h).
  top.steps = expand_call_loops(top.steps);
  return top;
}

// The first and last step that touches each pointer, and the calls that may share an
// output with an input, in one walk over the steps (a view shares its allocation's
// pointer, so its uses count for the allocation).
struct StepUses {
  std::map<const VarNode*, std::pair<int, int>> live;
  std::vector<CallSharing> sharings;
  std::vector<CallOverlap> overlaps;  // outputs that may overlap a live input (analysis/call_overlap.h)
  std::vector<ReadFirst> read_firsts;
};

StepUses step_uses(const std::vector<Stmt>& steps, const IRModule& m) {
  StepUses uses;
  for (size_t i = 0; i < steps.size(); ++i) {
    for (const VarNode* data : pointers_used(steps[i])) {
      auto [it, inserted] = uses.live.emplace(data, std::make_pair(static_cast<int>(i), static_cast<int>(i)));
      if (!inserted) it->second.second = static_cast<int>(i);
    }
    for (CallSharing& c : call_sharings(steps[i], m)) uses.sharings.push_back(std::move(c));
    for (ReadFirst& r : read_firsts(steps[i], static_cast<int>(i), m)) uses.read_firsts.push_back(std::move(r));
  }
  return uses;
}

// Per step, the arguments (call positions) that a band call reads in place where it
// writes (analysis/call_overlap.h): rows of a tensor that its kMayOverwriteAttr names and
// its callee reads elementwise, passed at no other position. Whole buffers share through
// call_sharings.
std::vector<std::set<size_t>> in_place_args(const std::vector<Stmt>& steps, const IRModule& m) {
  std::vector<std::set<size_t>> out(steps.size());
  for (size_t i = 0; i < steps.size(); ++i) {
    const auto* eval = as<EvaluateNode>(steps[i]);
    const auto* call = eval ? as<CallNode>(eval->value) : nullptr;
    if (!call || call->op != "call_tir" || call->args.size() < 3) continue;
    auto mask = call->attrs.find(kMayOverwriteAttr);
    const auto* name = as<StringImmNode>(call->args[0]);
    if (mask == call->attrs.end() || !name || !std::holds_alternative<int64_t>(mask->second)) continue;
    const PrimFunc callee = m.lookup(name->value);
    if (!callee || callee->param_buffers.size() + 1 != call->args.size()) continue;
    for (size_t k = 0; k + 2 < call->args.size() && k < 62; ++k) {
      const Buffer in = region_buffer(call->args[k + 1]);
      if (!(std::get<int64_t>(mask->second) >> k & 1) || !in || whole_region(call->args[k + 1])) continue;
      int positions = 0;
      for (size_t j = 1; j < call->args.size(); ++j) {
        const Buffer other = region_buffer(call->args[j]);
        positions += other && other->data == in->data;
      }
      if (positions == 1 && writes_elementwise_over(callee, k)) out[i].insert(k + 1);
    }
  }
  return out;
}

// The callees whose in-place reads an accepted overlap relies on: those parameters now
// share bytes with the output.
void mark_in_place(const MemoryPlan& p, const std::vector<CallOverlap>& calls, const std::map<const VarNode*, int>& index_of,
                   const std::vector<int>& pool_index, const std::vector<Stmt>& steps, Planned& planned) {
  for (const CallOverlap& c : calls) {
    if (c.in_place.empty()) continue;
    auto o = index_of.find(c.output), in = index_of.find(c.input);
    if (o == index_of.end() || in == index_of.end()) continue;
    const bool accepted = std::any_of(p.overlapped.begin(), p.overlapped.end(), [&](const OverlapCandidate& a) {
      return a.output == pool_index[o->second] && a.input == pool_index[in->second] && a.output >= 0;
    });
    if (!accepted) continue;
    for (const auto& [step, arg] : c.in_place) {
      const auto* call = as<CallNode>(as<EvaluateNode>(steps[step])->value);
      planned.overwriting[as<StringImmNode>(call->args[0])->value].insert({arg - 1, call->args.size() - 2});
    }
  }
}

// What the planned pools add up to, for the function's workspace attributes.
struct PoolTotals {
  int64_t pool = 0, bound = 0, shared_bound = 0;
  int64_t io = 0;  // bytes of tensors placed in the model's I/O buffers
  // What the stack allocator takes for the pools: each is its own allocation, with a
  // 16-byte header and rounded up to 16 bytes.
  int64_t blocks = 0;
  std::string algorithms;
};

// Each planned buffer (and each plain view declared on one) as a view at its place:
// the pool or an I/O buffer, at an element offset. Records them in `rebind`; returns the
// buffers' views, in order.
std::vector<Buffer> place_views(const std::vector<Buffer>& buffers, const std::vector<const DeclBufferNode*>& top_views,
                                const std::map<const VarNode*, std::pair<Var, int64_t>>& place_of, Rebind& rebind) {
  std::vector<Buffer> views;
  for (size_t i = 0; i < buffers.size(); ++i) {
    auto v = std::make_shared<BufferNode>(*buffers[i]);
    const auto& [data, offset] = place_of.at(buffers[i]->data.get());
    v->data = data;
    v->elem_offset = IntImm(DataType::Int(32), offset);
    rebind.views[buffers[i].get()] = v;
    views.push_back(v);
  }
  for (const DeclBufferNode* d : top_views) {
    auto place = place_of.find(d->buffer->data.get());
    if (place == place_of.end()) continue;
    auto v = std::make_shared<BufferNode>(*d->buffer);
    v->data = place->second.first;
    v->elem_offset = IntImm(DataType::Int(32), place->second.second);
    rebind.views[d->buffer.get()] = v;
  }
  return views;
}

// The pooled tensors planned with the sharing candidates, and with the overlaps (call
// data pointers mapped to pool indices) when that gives a smaller pool.
MemoryPlan plan_with_overlaps(const std::vector<TensorLifetime>& pooled, const std::vector<SharingCandidate>& candidates,
                              const std::vector<CallOverlap>& calls, const std::map<const VarNode*, int>& index_of,
                              const std::vector<int>& pool_index, int64_t alignment) {
  std::vector<OverlapCandidate> overlaps;
  for (const CallOverlap& c : calls) {
    auto o = index_of.find(c.output), in = index_of.find(c.input);
    if (o != index_of.end() && in != index_of.end() && pool_index[o->second] >= 0 && pool_index[in->second] >= 0)
      overlaps.push_back({pool_index[o->second], pool_index[in->second], c.shift});
  }
  PlannerOptions options;
  options.alignment = alignment;
  MemoryPlan p = plan_memory(pooled, options, candidates);
  if (!overlaps.empty()) {  // groups constrain the placement: keep them only where they help
    MemoryPlan q = plan_memory(pooled, options, candidates, overlaps);
    if (q.pool_size < p.pool_size) p = std::move(q);
  }
  return p;
}

// One element type's tensors, planned: each in the pool or in a model output buffer
// (or, -reuse-io-buffers=1, input buffer). Returns the pool (null when every tensor went to the I/O buffers)
// and its views; records each buffer's view in `rebind` and the sharings the plan takes
// in `planned`.
std::pair<Buffer, std::vector<Buffer>> plan_pool(const PrimFunc& f, const std::string& dtype,
                                                 const std::vector<Buffer>& buffers, const TopAllocations& top,
                                                 const StepUses& uses, int64_t alignment, bool reuse_io,
                                                 Rebind& rebind, Planned& planned, PoolTotals& totals) {
  std::vector<TensorLifetime> tensors;
  std::map<const VarNode*, int> index_of;
  for (const auto& b : buffers) {
    int64_t n = 0;
    const_num_elements(b, &n);
    TensorLifetime t{b->name, n * b->dtype.bytes(), 0, 0};
    auto range = uses.live.find(b->data.get());
    t.first_step = range == uses.live.end() ? 0 : range->second.first;
    t.last_step = range == uses.live.end() ? 0 : range->second.second;
    index_of[b->data.get()] = static_cast<int>(tensors.size());
    tensors.push_back(t);
  }
  std::vector<SharingCandidate> candidates;
  std::vector<const CallSharing*> sharing_of;
  std::vector<bool> keep(tensors.size(), false);  // stays in the pool
  for (const CallSharing& c : uses.sharings) {
    auto o = index_of.find(c.output), in = index_of.find(c.input);
    if (o == index_of.end() || in == index_of.end()) continue;
    candidates.push_back({o->second, in->second});
    sharing_of.push_back(&c);
    keep[o->second] = keep[in->second] = true;  // a sharing is decided in the pool
  }
  // First the tensors that fit in the model's output buffers before their results (and
  // with -reuse-io-buffers=1 in its inputs after their last reads).
  std::vector<IoBuffer> ios = io_buffers(f, dtype, uses.live, static_cast<int>(top.steps.size()), reuse_io);
  const ReadFirstInto into = read_first_into_of(uses.read_firsts, index_of, tensors);
  const std::vector<bool> in_io = place_in_io(ios, tensors, keep, into, alignment);
  for (const IoBuffer& io : ios) check_io(io, tensors, into, alignment);
  std::vector<TensorLifetime> pooled;
  std::vector<int> pool_index(tensors.size(), -1);
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (in_io[i]) continue;
    pool_index[i] = static_cast<int>(pooled.size());
    pooled.push_back(tensors[i]);
  }
  for (SharingCandidate& c : candidates) c = {pool_index[c.output], pool_index[c.input]};
  MemoryPlan p = plan_with_overlaps(pooled, candidates, uses.overlaps, index_of, pool_index, alignment);
  // The planner's own checker: two live tensors never share bytes, but for a sound
  // sharing.
  std::vector<std::string> problems = check_plan(pooled, p, alignment);
  MTIR_ICHECK(problems.empty(), "invalid memory plan: " + (problems.empty() ? std::string() : problems[0]));
  for (const SharingCandidate& s : p.shared)
    for (size_t k = 0; k < candidates.size(); ++k)
      if (candidates[k].output == s.output && candidates[k].input == s.input)
        planned.overwriting[sharing_of[k]->callee].insert(sharing_of[k]->params.begin(), sharing_of[k]->params.end());
  mark_in_place(p, uses.overlaps, index_of, pool_index, top.steps, planned);
  const DataType t = buffers[0]->dtype;
  Buffer pool = MakeBuffer("workspace_" + dtype, t, {IntImm(DataType::Int(32), std::max<int64_t>(p.pool_size / t.bytes(), 1))});
  std::map<const VarNode*, std::pair<Var, int64_t>> place_of;  // allocation -> memory, element offset
  for (size_t i = 0; i < buffers.size(); ++i)
    if (pool_index[i] >= 0) place_of[buffers[i]->data.get()] = {pool->data, p.offsets[pool_index[i]] / t.bytes()};
  for (const IoBuffer& io : ios) {
    for (size_t k = 0; k < io.placed.size(); ++k) {
      const int i = io.placed[k];
      place_of[buffers[i]->data.get()] = {io.param->data, io.offsets[k] / t.bytes()};
      totals.io += tensors[i].size_bytes;
      // Its last reader now gets it inside its output: those parameters may alias.
      const ReadFirst* r = io.holds_own ? read_first_into(io, tensors[i], into[i]) : nullptr;
      if (r) planned.overwriting[r->callee].insert(r->params.begin(), r->params.end());
    }
  }
  std::vector<Buffer> views = place_views(buffers, top.views, place_of, rebind);
  // Every tensor of this type in the I/O buffers: no pool to allocate.
  const bool pool_used = std::any_of(pool_index.begin(), pool_index.end(), [](int k) { return k >= 0; });
  totals.pool += p.pool_size;
  if (pool_used) totals.blocks += 16 + (std::max<int64_t>(p.pool_size, t.bytes()) + 15) / 16 * 16;
  totals.bound += p.lower_bound;
  totals.shared_bound += p.shared_lower_bound;
  totals.algorithms += (totals.algorithms.empty() ? "" : ",") + p.algorithm;
  return {pool_used ? pool : nullptr, views};
}

Planned plan(const PrimFunc& f, const IRModule& m, int64_t alignment, bool reuse_io) {
  const TopAllocations top = top_allocations(f);
  if (top.plannable.empty()) return {f, {}};
  StepUses uses = step_uses(top.steps, m);
  std::vector<std::pair<const VarNode*, int64_t>> sizes;
  for (const Buffer& b : top.plannable) {
    int64_t n = 0;
    const_num_elements(b, &n);
    sizes.emplace_back(b->data.get(), n * b->dtype.bytes());
  }
  uses.overlaps = call_overlaps(top.steps, sizes, uses.live, alignment, in_place_args(top.steps, m));
  // One pool per element type.
  std::map<std::string, std::vector<Buffer>> groups;
  for (const auto& b : top.plannable) groups[b->dtype.str()].push_back(b);
  Rebind rebind;
  std::vector<std::pair<Buffer, std::vector<Buffer>>> pools;  // pool, its views
  PoolTotals totals;
  Planned planned;
  for (const auto& [dtype, buffers] : groups)
    pools.push_back(plan_pool(f, dtype, buffers, top, uses, alignment, reuse_io, rebind, planned, totals));
  Stmt out = rebind.mutate(top.body);
  for (auto it = pools.rbegin(); it != pools.rend(); ++it) {
    for (auto v = it->second.rbegin(); v != it->second.rend(); ++v) out = DeclBuffer(*v, out, (*v)->span);
    if (it->first) out = Allocate(it->first, "global", out);
  }
  for (auto it = top.kept.rbegin(); it != top.kept.rend(); ++it)
    out = Allocate((*it)->buffer, (*it)->scope, out, (*it)->span);
  auto g = std::make_shared<PrimFuncNode>(*f);
  g->body = out;
  g->attrs["workspace.pool_bytes"] = totals.pool;
  g->attrs["workspace.block_bytes"] = totals.blocks;
  g->attrs["workspace.lower_bound_bytes"] = totals.bound;
  g->attrs["workspace.shared_lower_bound_bytes"] = totals.shared_bound;
  // Intermediates in the I/O buffers: always in outputs (before their results), in
  // inputs too with -reuse-io-buffers=1.
  if (reuse_io || totals.io > 0) g->attrs["workspace.io_reused_bytes"] = totals.io;
  if (reuse_io) g->attrs["workspace.io_reused_inputs"] = true;
  g->attrs["workspace.planner"] = totals.algorithms;
  g->attrs["workspace.alignment"] = alignment;
  planned.func = g;
  return planned;
}

int64_t int_attr(const PrimFunc& f, const char* key) {
  auto it = f->attrs.find(key);
  return it != f->attrs.end() && std::holds_alternative<int64_t>(it->second) ? std::get<int64_t>(it->second) : -1;
}

// -workspace-budget: a planned pool over it is refused, naming what the planners reached.
void check_workspace_budget(const PrimFunc& planned) {
  const int64_t budget = int_attr(planned, kWorkspaceBudgetAttr), pool = int_attr(planned, "workspace.pool_bytes");
  if (budget <= 0 || pool <= budget) return;
  const int64_t lowest = int_attr(planned, kPatchLowestBoundAttr);
  user_error(Span{}, "-workspace-budget=" + std::to_string(budget) + ": plan_memory's workspace pool is " +
                         std::to_string(pool) + " bytes" +
                         (lowest >= 0 ? " (the band planner's bound " + std::to_string(int_attr(planned, kPatchBoundAttr)) +
                                            " bytes, the lowest it reaches " + std::to_string(lowest) + " bytes)"
                                      : " (no band stages: -disabled-schedules=patch)"));
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
    auto reuse = m.attrs.find("reuse_io_buffers");
    const bool reuse_io = reuse != m.attrs.end() && std::holds_alternative<bool>(reuse->second) &&
                          std::get<bool>(reuse->second);
    IRModule out = m;
    std::map<std::string, std::set<size_t>> overwriting;
    const std::set<std::string> kernels = call_tir_callees(m);
    for (auto& [name, f] : out.functions) {
      if (kernels.count(name)) f = small_allocations_on_stack(f);
      Planned p = plan(f, m, alignment, reuse_io);
      check_workspace_budget(p.func);
      f = p.func;
      for (const auto& [callee, params] : p.overwriting) overwriting[callee].insert(params.begin(), params.end());
    }
    // A kernel that writes over its input gets the same pointer twice: those parameters
    // must not promise distinct buffers (restrict in C, noalias in LLVM); the others
    // still do (kAliasedParamsAttr).
    for (auto& [name, f] : out.functions) {
      auto it = overwriting.find(name);
      if (it == overwriting.end()) continue;
      auto shared = std::make_shared<PrimFuncNode>(*f);
      std::string list;
      for (size_t k : it->second) list += (list.empty() ? "" : ",") + std::to_string(k);
      shared->attrs[kAliasedParamsAttr] = list;
      f = shared;
    }
    return out;
  };
  return p;
}

namespace {

// The AOT executor's patch stages (executor/patch_stages.h), when it chose any or had a
// budget: what runs band by band, the graph-level whole-tensor bound without and with
// them, and the target each stage's cheapest choice keeps.
std::string patch_report(const PrimFunc& f) {
  auto it = f->attrs.find(kPatchStagesAttr);
  const int64_t whole = int_attr(f, kPatchWholeTensorBoundAttr), patched = int_attr(f, kPatchBoundAttr);
  const int64_t lowest = int_attr(f, kPatchLowestBoundAttr), budget = int_attr(f, kWorkspaceBudgetAttr);
  if (it == f->attrs.end() || !std::holds_alternative<std::string>(it->second) || whole < 0 || patched < 0)
    return "";
  const std::string& stages = std::get<std::string>(it->second);
  std::string out = "  run band by band (-disabled-schedules=patch turns it off): " + (stages.empty() ? "none" : stages) +
                    "\n  whole-tensor bound without bands " + std::to_string(whole) + " bytes, with them " +
                    std::to_string(patched) + " bytes\n";
  if (lowest < 0) return out;
  out += "  lowest bound the band planner reaches " + std::to_string(lowest) + " bytes; each stage takes the fewest " +
         "recomputed MACs, then bands, that keep ";
  return out + (budget > 0 ? "-workspace-budget=" + std::to_string(budget) : "that bound") + "\n";
}

}  // namespace

std::string memory_report(const PrimFunc& f) {
  auto num = [&](const char* key) {
    auto it = f->attrs.find(key);
    return it != f->attrs.end() && std::holds_alternative<int64_t>(it->second) ? std::get<int64_t>(it->second) : -1;
  };
  const int64_t pool = num("workspace.pool_bytes"), bound = num("workspace.lower_bound_bytes");
  const int64_t shared_bound = num("workspace.shared_lower_bound_bytes");
  if (pool < 0) return "memory: no workspace planned\n";
  std::string out = "memory plan (workspace pool, alignment " + std::to_string(std::max<int64_t>(num("workspace.alignment"), 1)) +
                    " bytes):\n";
  char line[256];
  std::snprintf(line, sizeof line, "  %-24s %10s %10s\n", "tensor", "offset", "bytes");
  out += line;
  std::set<const VarNode*> pools;
  std::map<const VarNode*, std::string> params;  // a parameter's data pointer -> its buffer's name
  for (const Buffer& b : f->param_buffers)
    if (b && b->data) params[b->data.get()] = b->name;
  for (Stmt s = f->body; s;) {
    if (const auto* a = as<AllocateNode>(s)) {
      pools.insert(a->buffer->data.get());
      s = a->body;
    } else if (const auto* d = as<DeclBufferNode>(s)) {
      int64_t n = 0;
      const_num_elements(d->buffer, &n);
      const int64_t* off = as_const_int(d->buffer->elem_offset);
      // A tensor in a model output (or, -reuse-io-buffers=1, input) buffer names it.
      auto param = params.find(d->buffer->data.get());
      const std::string where = pools.count(d->buffer->data.get()) ? ""
                                : param != params.end()            ? " in " + param->second
                                                                   : " in " + d->buffer->data->name;
      std::snprintf(line, sizeof line, "  %-24s %10lld %10lld%s\n", d->buffer->name.c_str(),
                    static_cast<long long>((off ? *off : 0) * d->buffer->dtype.bytes()),
                    static_cast<long long>(n * d->buffer->dtype.bytes()), where.c_str());
      out += line;
      s = d->body;
    } else {
      break;
    }
  }
  std::snprintf(line, sizeof line, "  pool %lld bytes, lower bound %lld bytes, ratio %.2f\n",
                static_cast<long long>(pool), static_cast<long long>(bound),
                bound > 0 ? static_cast<double>(pool) / static_cast<double>(bound) : 1.0);
  out += line;
  const int64_t io_reused = num("workspace.io_reused_bytes");
  if (io_reused >= 0) {
    const bool inputs = f->attrs.count("workspace.io_reused_inputs") > 0;
    std::snprintf(line, sizeof line, "  %lld bytes of intermediates in the model's %s\n",
                  static_cast<long long>(io_reused),
                  inputs ? "input/output buffers (-reuse-io-buffers=1)" : "output buffers before their results");
    out += line;
  }
  // The bound an output written over a dead input (counted once) allows.
  if (shared_bound >= 0) {
    std::snprintf(line, sizeof line, "  lower bound with in-place sharing %lld bytes, ratio %.2f\n",
                  static_cast<long long>(shared_bound),
                  shared_bound > 0 ? static_cast<double>(pool) / static_cast<double>(shared_bound) : 1.0);
    out += line;
  }
  return out + patch_report(f);
}

}  // namespace mtir
