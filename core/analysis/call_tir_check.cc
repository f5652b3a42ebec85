#include "analysis/call_tir_check.h"

#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "analysis/elementwise_overwrite.h"
#include "analysis/int_bound.h"
#include "ir/attrs.h"
#include "ir/structural_equal.h"
#include "ir/visitor.h"

namespace mtir {
namespace {

std::string shape_text(const std::vector<Expr>& dims) {
  std::string s = "(";
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t* c = as_const_int(dims[i]);
    s += (i ? ", " : "") + (c ? std::to_string(*c) : std::string("?"));
  }
  return s + (dims.size() == 1 ? ",)" : ")");
}

// The extents other than 1: a contiguous region has the memory layout of a compact
// buffer of those extents, whatever unit dimensions surround them.
std::vector<int64_t> significant(const std::vector<Expr>& dims, bool* all_constant) {
  std::vector<int64_t> out;
  for (const auto& d : dims) {
    const int64_t* c = as_const_int(d);
    if (!c) {
      *all_constant = false;
      continue;
    }
    if (*c != 1) out.push_back(*c);
  }
  return out;
}

struct CallSite {
  std::string caller;
  const CallNode* call;
};

// Walks a function with the ranges of its loop and let variables known, and hands
// every call_tir to `check` together with those ranges.
class CallCollector : public Visitor {
 public:
  std::function<void(const CallNode*, const IntBoundAnalyzer&)> check;
  std::function<void(const CallNode*)> check_global;

 protected:
  void visit_Call(const CallNode* op) override {
    if (op->is(Builtin::CallTir)) check(op, bounds_);
    if (op->is(Builtin::CallGlobal)) check_global(op);
    Visitor::visit_Call(op);
  }
  void visit_For(const ForNode* op) override {
    if (IntBound range; bounds_.loop_range(op->min, op->extent, &range)) bounds_.bind(op->loop_var.get(), range);
    Visitor::visit_For(op);
    bounds_.unbind(op->loop_var.get());
  }
  void visit_LetStmt(const LetStmtNode* op) override {
    if (op->var->dtype.is_integer()) bounds_.bind(op->var.get(), bounds_.bound(op->value));
    Visitor::visit_LetStmt(op);
    bounds_.unbind(op->var.get());
  }

 private:
  IntBoundAnalyzer bounds_;
};

// A buffer argument of one call_tir.
struct Region {
  const BufferLoadNode* load;  // the buffer and the region's first element
  std::vector<Expr> extents;
  size_t arg;    // position among the call's arguments
  bool written;  // whether the callee may write the parameter
};

// The buffers `f` may write: stored to, or handed to another call (conservatively).
std::set<const BufferNode*> collect_written_buffers(const PrimFunc& f) {
  struct Collector : Visitor {
    std::set<const BufferNode*> written;
    bool in_call = false;
    void visit_BufferStore(const BufferStoreNode* op) override {
      written.insert(op->buffer.get());
      Visitor::visit_BufferStore(op);
    }
    void visit_BufferLoad(const BufferLoadNode* op) override {
      if (in_call) written.insert(op->buffer.get());
      Visitor::visit_BufferLoad(op);
    }
    void visit_Var(const VarNode* op) override {
      if (in_call)  // a data pointer passed on
        for (const Buffer& b : buffers)
          if (b->data.get() == op) written.insert(b.get());
    }
    void visit_Call(const CallNode* op) override {
      bool passes = op->is(Builtin::CallTir) || op->is(Builtin::CallExtern) || op->is(Builtin::AddressOf) ||
                    op->is(Builtin::TirRegion) || op->is(Builtin::TvmCallPacked);
      bool saved = in_call;
      in_call = in_call || passes;
      Visitor::visit_Call(op);
      in_call = saved;
    }
    std::vector<Buffer> buffers;
  } c;
  for (const Buffer& b : f->param_buffers)
    if (b) c.buffers.push_back(b);
  c.visit(f->body);
  return c.written;
}

// Remembered per callee: the lowering checks the same calls several times.
std::set<const BufferNode*> written_buffers(const PrimFunc& f) {
  static auto* known = new FunctionFacts<std::set<const BufferNode*>>;  // never destroyed: checks may run at exit
  if (auto written = known->find(f)) return *written;
  std::set<const BufferNode*> written = collect_written_buffers(f);
  known->record(f, written);
  return written;
}

class Checker {
 public:
  Checker(const IRModule& m, const FunctionSet& no_calls) : m_(m), no_calls_(no_calls) {}
  std::vector<Diagnostic> diags;

  void run() {
    for (const auto& entry : m_.functions) {
      const std::string& name = entry.first;  // a plain reference: C++17 lambdas cannot capture bindings
      const auto& f = entry.second;
      if (!f || no_calls_.contains(f)) continue;
      CallCollector c;
      c.check = [&](const CallNode* call, const IntBoundAnalyzer& bounds) { check_call(name, call, bounds); };
      c.check_global = [&](const CallNode* call) { check_global_call(name, call); };
      c.visit(f->body);
    }
    check_recursion();
  }

 private:
  void error(const Span& at, std::string message) {
    Diagnostic d;
    d.span = at;
    d.message = std::move(message);
    diags.push_back(std::move(d));
  }

  void check_call(const std::string& caller, const CallNode* call, const IntBoundAnalyzer& bounds) {
    const Span& at = call->span;
    const auto* name = call->args.empty() ? nullptr : as<StringImmNode>(call->args[0]);
    if (!name) return error(at, "T.call_tir in '" + caller + "' needs the callee's name as a string first");
    const std::string who = "call_tir from '" + caller + "' to '" + name->value + "'";
    PrimFunc callee = m_.lookup(name->value);
    if (!callee) {
      return error(at, who + ": there is no function '" + name->value +
                           "' in this module (call_tir calls functions of the same module, not external code)");
    }
    edges_[caller].push_back({name->value, call});
    const size_t n = call->args.size() - 1;
    if (n != callee->params.size()) {
      return error(at, who + ": '" + name->value + "' takes " + std::to_string(callee->params.size()) +
                           " arguments, got " + std::to_string(n));
    }
    std::vector<Region> regions;  // for the aliasing check
    const std::set<const BufferNode*> written = written_buffers(callee);
    for (size_t i = 0; i < n; ++i) {
      const Expr& arg = call->args[i + 1];
      const Buffer& b = callee->param_buffers[i];
      const std::string param = "parameter '" + callee->params[i]->name + "'";
      const auto* region = as<CallNode>(arg);
      const bool is_region = region && region->is(Builtin::TirRegion);
      if (!b) {
        const DataType want = callee->params[i]->dtype;
        const int64_t* c = as_const_int(arg);
        if (want.is_handle()) {
          error(at, who + ": " + param + " is a T.handle, which call_tir cannot pass; give it a buffer");
        } else if (is_region) {
          error(arg->span.defined() ? arg->span : at,
                who + ": " + param + " is a " + want.str() + " scalar, but a buffer was passed");
        } else if (arg->dtype != want && !(c && want.is_integer() && wrap_int(want, *c) == *c)) {
          // Only constants that fit are converted: anything else would be narrowed silently.
          error(at, who + ": " + param + " is " + want.str() + ", but the argument is " + arg->dtype.str());
        }
        continue;
      }
      if (!is_region) {
        error(at, who + ": " + param + " is a buffer " + b->dtype.str() + shape_text(b->shape) +
                      ", but the argument is a " + arg->dtype.str() + " value");
        continue;
      }
      if (check_region(who, param, b, region, at, bounds)) {
        regions.push_back({as<BufferLoadNode>(region->args[0]),
                           std::vector<Expr>(region->args.begin() + 1, region->args.end()), i,
                           written.count(b.get()) > 0});
      }
    }
    check_aliasing(who, regions, at, callee);
  }

  // Module.sub(args...): scalars of the parameters' types (constants that fit convert),
  // pointers for pointer parameters; buffer parameters are call_tir's.
  void check_global_call(const std::string& caller, const CallNode* call) {
    const Span& at = call->span;
    const auto* name = call->args.empty() ? nullptr : as<StringImmNode>(call->args[0]);
    if (!name) return error(at, "a call between functions in '" + caller + "' needs the callee's name first");
    const std::string who = "the call from '" + caller + "' to '" + name->value + "'";
    PrimFunc callee = m_.lookup(name->value);
    if (!callee) return error(at, who + ": there is no function '" + name->value + "' in this module");
    const size_t n = call->args.size() - 1;
    if (n != callee->params.size())
      return error(at, who + ": '" + name->value + "' takes " + std::to_string(callee->params.size()) +
                           " arguments, got " + std::to_string(n));
    if (call->dtype != callee->ret_type && !(call->dtype.is_void() && callee->ret_type.is_void()))
      return error(at, who + " is typed " + call->dtype.str() + ", but '" + name->value + "' returns " +
                           callee->ret_type.str());
    for (size_t i = 0; i < n; ++i) {
      const Expr& arg = call->args[i + 1];
      const Var& p = callee->params[i];
      const std::string param = "parameter '" + p->name + "'";
      const int64_t* c = as_const_int(arg);
      const auto* tensor = as<CallNode>(arg);
      if (callee->param_buffers[i] && tensor && tensor->op == "tvm_stack_make_array") {
        // TVM's form before MakePackedAPI: a DLTensor built on the stack for a buffer
        // parameter. Carried: it parses and prints, and running it is refused at the call.
      } else if (callee->param_buffers[i]) {
        error(at, who + ": " + param + " is a buffer (T.Buffer); " + name->value + "(...) passes pointers and "
                      "scalars: declare it T.handle(\"" + callee->param_buffers[i]->dtype.str() + "\") with "
                      "T.decl_buffer in '" + name->value + "', or pass buffers with T.call_tir");
      } else if (p->dtype.is_handle() != arg->dtype.is_handle()) {
        error(at, who + ": " + param + " is " + (p->dtype.is_handle() ? "a pointer (T.handle)" : p->dtype.str()) +
                      ", but the argument is " + (arg->dtype.is_handle() ? "a pointer" : arg->dtype.str()));
      } else if (!p->dtype.is_handle() && arg->dtype != p->dtype &&
                 !(c && p->dtype.is_integer() && wrap_int(p->dtype, *c) == *c)) {
        error(at, who + ": " + param + " is " + p->dtype.str() + ", but the argument is " + arg->dtype.str());
      }
    }
  }

  // Two arguments in the same memory, one of them written, would alias restrict
  // pointers in C (and the callee would see different data than a copy-in/copy-out
  // reading of the call). Such regions of one buffer must be provably disjoint:
  // constant starts, no overlap. Reading one region through two parameters is fine.
  // The one exception: the same region at two parameters that the callee declares
  // aliased (kAliasedParamsAttr) when it reads the one only where it writes the other
  // (analysis/elementwise_overwrite.h), as a two-branch patch stage's fused add does.
  void check_aliasing(const std::string& who, const std::vector<Region>& regions, const Span& at,
                      const PrimFunc& callee) {
    for (size_t i = 0; i < regions.size(); ++i) {
      for (size_t j = i + 1; j < regions.size(); ++j) {
        if (regions[i].load->buffer != regions[j].load->buffer) continue;
        if (!regions[i].written && !regions[j].written) continue;
        int64_t a0, a1, b0, b1;
        bool known = same_moving_parts(regions[i].load, regions[j].load) &&
                     flat_range(regions[i].load, regions[i].extents, &a0, &a1) &&
                     flat_range(regions[j].load, regions[j].extents, &b0, &b1);
        if (known && a0 == b0 && a1 == b1 && declared_in_place(callee, regions[i], regions[j])) continue;
        if (!known || !(a1 < b0 || b1 < a0)) {
          return error(at, who + ": arguments " + std::to_string(regions[i].arg) + " and " +
                               std::to_string(regions[j].arg) + " are regions of the same buffer '" +
                               regions[i].load->buffer->name + "' that " +
                               (known ? "overlap" : "may overlap") + "; pass disjoint regions or separate buffers");
        }
      }
    }
  }

  // A region start as a part that moves (a loop of band calls: `start + band * step`,
  // executor/band_loops.h), null for none, and a constant.
  static std::pair<Expr, int64_t> split_start(const Expr& e) {
    if (const int64_t* c = as_const_int(e)) return {nullptr, *c};
    if (const auto* add = as<AddNode>(e)) {
      if (const int64_t* c = as_const_int(add->b)) return {add->a, *c};
      if (const int64_t* c = as_const_int(add->a)) return {add->b, *c};
    }
    return {e, 0};
  }

  // Whether two regions' starts move alike (the same expressions beside their constants):
  // their flat ranges then compare by the constants alone.
  static bool same_moving_parts(const BufferLoadNode* a, const BufferLoadNode* b) {
    if (a->indices.size() != b->indices.size()) return false;
    for (size_t k = 0; k < a->indices.size(); ++k) {
      const Expr x = split_start(a->indices[k]).first, y = split_start(b->indices[k]).first;
      if ((x == nullptr) != (y == nullptr) || (x && !structural_equal(x, y))) return false;
    }
    return true;
  }

  // The elements [lo, hi] a region spans, its starts' moving parts taken as 0.
  static bool flat_range(const BufferLoadNode* load, const std::vector<Expr>& extents, int64_t* lo, int64_t* hi) {
    const Buffer& b = load->buffer;
    int64_t start = 0, last = 0, stride = 1;
    for (size_t k = b->shape.size(); k-- > 0;) {
      const int64_t min = split_start(load->indices[k]).second;
      const int64_t *ext = as_const_int(extents[k]), *dim = as_const_int(b->shape[k]);
      if (!ext || !dim) return false;
      start += min * stride;
      last += (min + *ext - 1) * stride;
      stride *= *dim;
    }
    *lo = start, *hi = last;
    return true;
  }

  // Whether `callee` declares parameters a and b aliased, one read only where the other,
  // its output, is written.
  static bool declared_in_place(const PrimFunc& callee, const Region& a, const Region& b) {
    auto it = callee->attrs.find(kAliasedParamsAttr);
    if (it == callee->attrs.end() || !std::holds_alternative<std::string>(it->second)) return false;
    std::set<size_t> listed;
    std::stringstream list(std::get<std::string>(it->second));
    for (std::string item; std::getline(list, item, ',');)
      if (!item.empty() && item.find_first_not_of("0123456789") == std::string::npos) listed.insert(std::stoul(item));
    if (!listed.count(a.arg) || !listed.count(b.arg) || a.written == b.written) return false;
    const Region& read = a.written ? b : a;
    const Region& write = a.written ? a : b;
    return write.arg + 1 == callee->param_buffers.size() && writes_elementwise_over(callee, read.arg);
  }

  // Returns whether the region is well formed (so later checks can use it).
  bool check_region(const std::string& who, const std::string& param, const Buffer& want, const CallNode* region,
                    const Span& at, const IntBoundAnalyzer& bounds) {
    const auto* load = region->args.empty() ? nullptr : as<BufferLoadNode>(region->args[0]);
    if (!load) {
      error(at, who + ": " + param + ": malformed region");
      return false;
    }
    const Buffer& have = load->buffer;
    std::vector<Expr> extents(region->args.begin() + 1, region->args.end());
    const Span& where = region->span.defined() ? region->span : at;
    auto fail = [&](const std::string& m) {
      error(where, m);
      return false;
    };
    if (have->dtype != want.get()->dtype) {
      return fail(who + ": " + param + " holds " + want->dtype.str() + ", but '" + have->name + "' holds " +
                              have->dtype.str());
    }
    if (!want->strides.empty() || (want->elem_offset && !(as_const_int(want->elem_offset) &&
                                                          *as_const_int(want->elem_offset) == 0))) {
      return fail(who + ": " + param + " declares strides or an offset; call_tir passes compact regions");
    }
    bool constant = true;
    std::vector<int64_t> got = significant(extents, &constant), need = significant(want->shape, &constant);
    if (!constant) {
      return fail(who + ": " + param + " and the region of '" + have->name +
                              "' need constant shapes to be checked");
    }
    if (got != need) {
      return fail(who + ": " + param + " has shape " + shape_text(want->shape) + ", but the region of '" +
                              have->name + "' has shape " + shape_text(extents) + " (unit dimensions aside)");
    }
    // In bounds: the callee's accesses are not checked at run time, so every start must
    // be provably in range (from constants and the ranges of enclosing loops).
    if (load->indices.size() == have->shape.size() && extents.size() == have->shape.size()) {
      for (size_t k = 0; k < extents.size(); ++k) {
        const int64_t *ext = as_const_int(extents[k]), *dim = as_const_int(have->shape[k]);
        if (!ext || !dim) return fail(who + ": the region of '" + have->name + "' needs a constant shape");
        IntBound lo = bounds.bound(load->indices[k]);
        if (lo.min < 0 || lo.max > *dim - *ext) {
          if (lo.min == lo.max) {
            return fail(who + ": the region of '" + have->name + "' covers [" + std::to_string(lo.min) + ", " +
                        std::to_string(lo.min + *ext) + ") in dimension " + std::to_string(k) +
                        ", outside its extent " + std::to_string(*dim));
          }
          return fail(who + ": the region of '" + have->name + "' may leave dimension " + std::to_string(k) +
                      " (extent " + std::to_string(*dim) + "): its start can be anywhere in [" +
                      std::to_string(lo.min) + ", " + std::to_string(lo.max) + "] for " + std::to_string(*ext) +
                      " elements");
        }
      }
      // Contiguous: after the first dimension with extent above 1, every dimension is whole.
      if (have->strides.empty()) {
        bool inner = false;
        for (size_t k = 0; k < extents.size(); ++k) {
          const int64_t *ext = as_const_int(extents[k]), *lo = as_const_int(load->indices[k]);
          bool whole = lo && *lo == 0 && ext && as_const_int(have->shape[k]) && *ext == *as_const_int(have->shape[k]);
          if (inner && !whole) {
            return fail(who + ": the region of '" + have->name +
                                    "' is not contiguous in memory (dimension " + std::to_string(k) +
                                    " is cut after a larger outer extent); pass whole inner dimensions");
          }
          if (ext && *ext > 1) inner = true;
        }
      } else {
        return fail(who + ": '" + have->name + "' has declared strides; call_tir passes compact buffers");
      }
    }
    return true;
  }

  // Recursion, direct or through other functions, is refused at the call that closes
  // the cycle.
  void check_recursion() {
    for (const CallCycle& c : call_cycles(edges_, m_)) {
      error(c.call->span, "call_tir from '" + c.caller + "' to '" + c.callee + "' is recursive (" + c.path +
                              "); functions that call themselves, directly or not, cannot be compiled");
    }
  }

  const IRModule& m_;
  const FunctionSet& no_calls_;
  CallEdges edges_;
};

}  // namespace

std::vector<CallCycle> call_cycles(const CallEdges& edges, const IRModule& m) {
  std::vector<CallCycle> out;
  std::map<std::string, int> state;  // 0 new, 1 on the stack, 2 done
  std::vector<std::string> stack;
  std::set<std::pair<std::string, std::string>> reported;
  std::function<void(const std::string&)> visit = [&](const std::string& f) {
    state[f] = 1;
    stack.push_back(f);
    auto it = edges.find(f);
    for (const auto& [callee, call] : it == edges.end() ? CallEdges::mapped_type{} : it->second) {
      if (state[callee] == 1 && reported.insert({f, callee}).second) {
        std::string path;
        bool on = false;
        for (const auto& s : stack) {
          if (s == callee) on = true;
          if (on) path += s + " -> ";
        }
        out.push_back({call, f, callee, path + callee});
      } else if (state[callee] == 0) {
        visit(callee);
      }
    }
    stack.pop_back();
    state[f] = 2;
  };
  for (const auto& [name, f] : m.functions)
    if (state[name] == 0) visit(name);
  return out;
}

std::vector<Diagnostic> check_call_tir(const IRModule& m, const FunctionSet& no_calls) {
  Checker c(m, no_calls);
  c.run();
  return std::move(c.diags);
}

}  // namespace mtir
