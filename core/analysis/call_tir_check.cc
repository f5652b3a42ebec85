#include "analysis/call_tir_check.h"

#include <functional>
#include <map>
#include <set>

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

class CallCollector : public Visitor {
 public:
  std::vector<const CallNode*> calls;

 protected:
  void visit_Call(const CallNode* op) override {
    if (op->op == "call_tir") calls.push_back(op);
    Visitor::visit_Call(op);
  }
};

class Checker {
 public:
  explicit Checker(const IRModule& m) : m_(m) {}
  std::vector<Diagnostic> diags;

  void run() {
    for (const auto& [name, f] : m_.functions) {
      if (!f) continue;
      CallCollector c;
      c.visit(f->body);
      for (const CallNode* call : c.calls) check_call(name, call);
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

  void check_call(const std::string& caller, const CallNode* call) {
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
    for (size_t i = 0; i < n; ++i) {
      const Expr& arg = call->args[i + 1];
      const Buffer& b = callee->param_buffers[i];
      const std::string param = "parameter '" + callee->params[i]->name + "'";
      const auto* region = as<CallNode>(arg);
      const bool is_region = region && region->op == "tir_region";
      if (!b) {
        if (is_region) {
          error(arg->span.defined() ? arg->span : at,
                who + ": " + param + " is a " + callee->params[i]->dtype.str() + " scalar, but a buffer was passed");
        } else if (callee->params[i]->dtype.is_float() != arg->dtype.is_float() || arg->dtype.is_handle()) {
          error(at, who + ": " + param + " is " + callee->params[i]->dtype.str() + ", but the argument is " +
                        arg->dtype.str());
        }
        continue;
      }
      if (!is_region) {
        error(at, who + ": " + param + " is a buffer " + b->dtype.str() + shape_text(b->shape) +
                      ", but the argument is a " + arg->dtype.str() + " value");
        continue;
      }
      check_region(who, param, b, region, at);
    }
  }

  void check_region(const std::string& who, const std::string& param, const Buffer& want, const CallNode* region,
                    const Span& at) {
    const auto* load = region->args.empty() ? nullptr : as<BufferLoadNode>(region->args[0]);
    if (!load) return error(at, who + ": " + param + ": malformed region");
    const Buffer& have = load->buffer;
    std::vector<Expr> extents(region->args.begin() + 1, region->args.end());
    const Span& where = region->span.defined() ? region->span : at;
    if (have->dtype != want.get()->dtype) {
      return error(where, who + ": " + param + " holds " + want->dtype.str() + ", but '" + have->name + "' holds " +
                              have->dtype.str());
    }
    if (!want->strides.empty() || (want->elem_offset && !(as_const_int(want->elem_offset) &&
                                                          *as_const_int(want->elem_offset) == 0))) {
      return error(where, who + ": " + param + " declares strides or an offset; call_tir passes compact regions");
    }
    bool constant = true;
    std::vector<int64_t> got = significant(extents, &constant), need = significant(want->shape, &constant);
    if (!constant) {
      return error(where, who + ": " + param + " and the region of '" + have->name +
                              "' need constant shapes to be checked");
    }
    if (got != need) {
      return error(where, who + ": " + param + " has shape " + shape_text(want->shape) + ", but the region of '" +
                              have->name + "' has shape " + shape_text(extents) + " (unit dimensions aside)");
    }
    // In bounds, where the start is known.
    if (load->indices.size() == have->shape.size() && extents.size() == have->shape.size()) {
      for (size_t k = 0; k < extents.size(); ++k) {
        const int64_t *lo = as_const_int(load->indices[k]), *ext = as_const_int(extents[k]),
                      *dim = as_const_int(have->shape[k]);
        if (lo && ext && dim && (*lo < 0 || *lo + *ext > *dim)) {
          return error(where, who + ": the region of '" + have->name + "' covers [" + std::to_string(*lo) + ", " +
                                  std::to_string(*lo + *ext) + ") in dimension " + std::to_string(k) +
                                  ", outside its extent " + std::to_string(*dim));
        }
      }
      // Contiguous: after the first dimension with extent above 1, every dimension is whole.
      if (have->strides.empty()) {
        bool inner = false;
        for (size_t k = 0; k < extents.size(); ++k) {
          const int64_t *ext = as_const_int(extents[k]), *lo = as_const_int(load->indices[k]);
          bool whole = lo && *lo == 0 && ext && as_const_int(have->shape[k]) && *ext == *as_const_int(have->shape[k]);
          if (inner && !whole) {
            return error(where, who + ": the region of '" + have->name +
                                    "' is not contiguous in memory (dimension " + std::to_string(k) +
                                    " is cut after a larger outer extent); pass whole inner dimensions");
          }
          if (ext && *ext > 1) inner = true;
        }
      } else {
        return error(where, who + ": '" + have->name + "' has declared strides; call_tir passes compact buffers");
      }
    }
  }

  // Recursion, direct or through other functions, is refused at the call that closes
  // the cycle.
  void check_recursion() {
    std::map<std::string, int> state;  // 0 new, 1 on the stack, 2 done
    std::vector<std::string> stack;
    std::set<std::pair<std::string, std::string>> reported;
    std::function<void(const std::string&)> visit = [&](const std::string& f) {
      state[f] = 1;
      stack.push_back(f);
      for (const auto& [callee, call] : edges_[f]) {
        if (state[callee] == 1 && reported.insert({f, callee}).second) {
          std::string path;
          bool on = false;
          for (const auto& s : stack) {
            if (s == callee) on = true;
            if (on) path += s + " -> ";
          }
          error(call->span, "call_tir from '" + f + "' to '" + callee + "' is recursive (" + path + callee +
                                "); functions that call themselves, directly or not, cannot be compiled");
        } else if (state.count(callee) == 0 || state[callee] == 0) {
          visit(callee);
        }
      }
      stack.pop_back();
      state[f] = 2;
    };
    for (const auto& [name, f] : m_.functions)
      if (state[name] == 0) visit(name);
  }

  const IRModule& m_;
  std::map<std::string, std::vector<std::pair<std::string, const CallNode*>>> edges_;
};

}  // namespace

std::vector<Diagnostic> check_call_tir(const IRModule& m) {
  Checker c(m);
  c.run();
  return std::move(c.diags);
}

}  // namespace mtir
