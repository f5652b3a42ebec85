// Printer for the text format. Output is canonical: the same IR always prints the
// same text, and parse_module(print_module(m)) is structurally equal to m.
//
// Names: every variable and buffer defined in a function gets a name unique within
// that function (i, i_1, i_2, ...), so shadowing never changes what a name means.
// Scoped statements (let, allocate, assert) are printed flat, Python style, when they
// end their block; otherwise a `with` form keeps the statements that follow outside.
#include "script/printer.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <sstream>
#include <unordered_map>

#include "ir/op.h"
#include "ir/structural_equal.h"
#include "ir/visitor.h"
#include "support/names.h"

namespace mtir {
namespace {

// Precedence levels, loosest first (Python's order).
enum Prec : int { kOr = 1, kAnd, kNot, kCmp, kAdd, kMul, kUnary, kAtom };

std::string quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default: {
        unsigned char u = static_cast<unsigned char>(c);
        if (u < 32 || u >= 127) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\x%02x", u);
          out += buf;
        } else {
          out += c;
        }
      }
    }
  }
  return out + "\"";
}

// The shortest decimal spelling that reads back as exactly `v`.
std::string shortest_double(double v) {
  if (v == 0) return std::signbit(v) ? "-0.0" : "0";
  char buf[64];
  for (int prec = 1; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*g", prec, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

std::string float_literal(double v) {
  if (std::isnan(v)) return "\"nan\"";
  if (std::isinf(v)) return v > 0 ? "\"inf\"" : "\"-inf\"";
  return shortest_double(v);
}

std::string attr_value(const AttrValue& v) {
  if (const auto* b = std::get_if<bool>(&v)) return *b ? "True" : "False";
  if (const auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (const auto* s = std::get_if<std::string>(&v)) return quote(*s);
  double d = std::get<double>(v);
  if (std::isinf(d)) return d > 0 ? "1e999" : "-1e999";
  std::string s = shortest_double(d);
  if (s.find_first_of(".en") == std::string::npos) s += ".0";  // keep it a float
  return s;
}

// T.target's arguments: the target, and its host as the parser keeps it after " -host=".
std::string target_args(const std::string& target) {
  const size_t host = target.find(" -host=");
  if (host == std::string::npos) return quote(target);
  return quote(target.substr(0, host)) + ", host=" + quote(target.substr(host + 7));
}

// `target_key`: a function's attributes, whose "target" is a TVM Target.
std::string dict(const Attrs& attrs, bool target_key = false) {
  std::string out = "{";
  bool first = true;
  for (const auto& [k, v] : attrs) {
    if (!first) out += ", ";
    first = false;
    if (target_key && k == "target" && std::holds_alternative<std::string>(v))
      out += quote(k) + ": T.target(" + target_args(std::get<std::string>(v)) + ")";
    else
      out += quote(k) + ": " + attr_value(v);
  }
  return out + "}";
}

// How a variable's type is written: T.int32, or T.handle("float32", "global") for a
// typed pointer.
std::string type_of(const VarNode* v) {
  if (!v->dtype.is_handle() || (v->pointee.is_void() && v->pointer_scope.empty())) return "T." + v->dtype.str();
  std::string out = "T.handle(" + quote(v->pointee.is_void() ? std::string("void") : v->pointee.str());
  if (!v->pointer_scope.empty()) out += ", " + quote(v->pointer_scope);
  return out + ")";
}

bool is_reserved(const std::string& s) {
  static const std::set<std::string> reserved = {
      "T",      "I",      "range",   "True",   "False",  "None",     "and",    "or",       "not",  "in",
      "is",     "if",     "else",    "elif",   "for",    "while",    "def",    "class",    "with", "as",
      "assert", "pass",   "return",  "lambda", "import", "from",     "global", "nonlocal", "del",  "yield",
      "try",    "except", "finally", "raise",  "break",  "continue", "async",  "await"};
  return reserved.count(s) > 0;
}

// Whether `e` mentions any of `vars`.
class UsesVar : public Visitor {
 public:
  explicit UsesVar(const std::set<const VarNode*>& vars) : vars_(vars) {}
  bool found = false;

 protected:
  void visit_Var(const VarNode* v) override { found = found || vars_.count(v) > 0; }

 private:
  const std::set<const VarNode*>& vars_;
};

bool uses_any(const Expr& e, const std::set<const VarNode*>& vars) {
  UsesVar u(vars);
  u.visit(e);
  return u.found;
}

bool is_zero_of(const Expr& e, DataType t) {
  const auto* imm = as<IntImmNode>(e);
  return imm && imm->value == 0 && imm->dtype == t;
}

// `0 - x` that reads back from `-x`: the parser turns `-x` into a zero of x's type
// minus x, except that `-5` is the constant -5.
bool is_negation(const SubNode* op) {
  if (op->b->dtype != op->a->dtype || as<IntImmNode>(op->b) || as<FloatImmNode>(op->b)) return false;
  if (const auto* i = as<IntImmNode>(op->a)) return i->value == 0 && !i->dtype.is_bool();
  if (const auto* f = as<FloatImmNode>(op->a)) return f->value == 0 && !std::signbit(f->value);
  return false;
}

// A serial loop that T.grid / range can express: starts at a typed zero.
bool gridable(const ForNode* f) {
  return f->for_kind == ForKind::kSerial && f->annotations.empty() && f->extent &&
         is_zero_of(f->min, f->extent->dtype) && f->loop_var->dtype == f->extent->dtype;
}

class Printer {
 public:
  std::string str() const { return os_.str(); }

  void module(const IRModule& m) {
    os_ << "# from tvm.script import ir as I\n# from tvm.script import tir as T\n\n";
    module_name_ = is_c_identifier(m.name) ? m.name : std::string("Module");
    os_ << "@I.ir_module\nclass " << module_name_ << ":\n";
    indent_ = 1;
    bool need_blank = false;
    if (!m.attrs.empty()) {
      line("I.module_attrs(" + dict(m.attrs) + ")");
      need_blank = true;
    }
    if (m.functions.empty() && m.attrs.empty()) line("pass");
    for (const auto& [name, f] : m.functions) {
      if (need_blank) os_ << "\n";
      need_blank = true;
      func(name, f);
    }
    indent_ = 0;
  }

  // Whether parameter i's buffer views the memory of an earlier parameter (TVM's
  // T.match_buffer(b, ..., data=A.data)).
  static bool shares_data(const PrimFunc& f, size_t i) {
    const Buffer& b = f->param_buffers[i];
    for (size_t j = 0; b && j < i; ++j)
      if (f->params[j] == b->data || (f->param_buffers[j] && f->param_buffers[j]->data == b->data)) return true;
    return false;
  }

  void func(const std::string& name, const PrimFunc& f) {
    reset_names();
    if (!f) return line("# function '" + name + "' is missing");
    line("@T.prim_func");
    // A buffer whose declaration uses variables that are not parameters gets them from
    // the caller's tensor: it prints as a T.handle parameter plus T.match_buffer.
    std::set<const VarNode*> param_vars;
    for (const auto& p : f->params) param_vars.insert(p.get());
    std::vector<bool> matched(f->params.size(), false);
    std::vector<const VarNode*> shape_vars;
    for (size_t i = 0; i < f->params.size() && i < f->param_buffers.size(); ++i) {
      const Buffer& b = f->param_buffers[i];
      if (!b) continue;
      struct Free : Visitor {
        const std::set<const VarNode*>* params;
        std::vector<const VarNode*> found;
        void visit_Var(const VarNode* v) override {
          if (!params->count(v) && std::find(found.begin(), found.end(), v) == found.end()) found.push_back(v);
        }
      } free;
      free.params = &param_vars;
      for (const auto& e : b->shape) free.visit(e);
      for (const auto& e : b->strides) free.visit(e);
      free.visit(b->elem_offset);
      // A typed handle (b: T.handle("float32", "global")) keeps its type through T.match_buffer.
      const Var& p = f->params[i];
      if (shares_data(f, i) || !p->pointee.is_void() || !p->pointer_scope.empty()) matched[i] = true;
      if (free.found.empty()) continue;
      matched[i] = true;
      for (const VarNode* v : free.found)
        if (std::find(shape_vars.begin(), shape_vars.end(), v) == shape_vars.end()) shape_vars.push_back(v);
    }
    // Name every parameter first: buffer shapes may refer to later scalar parameters.
    for (size_t i = 0; i < f->params.size(); ++i) {
      const Buffer b = i < f->param_buffers.size() ? f->param_buffers[i] : nullptr;
      std::string n = define(f->params[i].get(), f->params[i]->name);
      if (b && !matched[i]) name_buffer(b, n);
    }
    std::string sig = "def " + name + "(";
    for (size_t i = 0; i < f->params.size(); ++i) {
      if (i) sig += ", ";
      const Buffer b = i < f->param_buffers.size() ? f->param_buffers[i] : nullptr;
      sig += names_[f->params[i].get()] + ": ";
      // A buffer in another scope than global (GPU memory) says so, as TVM prints it.
      const std::string scope = b && !b->data->pointer_scope.empty() && b->data->pointer_scope != "global"
                                    ? "scope=" + quote(b->data->pointer_scope)
                                    : "";
      sig += b && !matched[i] ? buffer_decl("T.Buffer(", b, scope) : type_of(f->params[i].get());
    }
    sig += ")";
    if (!f->ret_type.is_void()) sig += " -> T." + f->ret_type.str();
    line(sig + ":");
    ++indent_;
    if (!f->attrs.empty()) line("T.func_attr(" + dict(f->attrs, true) + ")");
    for (const VarNode* v : shape_vars) line(define(v, v->name) + " = T." + v->dtype.str() + "()");
    for (size_t i = 0; i < f->params.size(); ++i) {
      if (!matched[i]) continue;
      const Buffer& b = f->param_buffers[i];
      std::string handle = names_[f->params[i].get()];
      std::string decl = buffer_decl("T.match_buffer(" + handle + ", ", b, shares_data(f, i) ? "data=" + expr(b->data) : "");
      line(bind_buffer(b, b->name) + " = " + decl);
    }
    stmt(f->body, true);
    --indent_;
  }

  // `last`: nothing follows `s` in its block, so scoped statements may print flat.
  void stmt(const Stmt& s, bool last) {
    if (!s) {
      line("T.evaluate(0)");
      return;
    }
    switch (s->kind) {
      case StmtKind::BufferStore: {
        const auto* op = as<BufferStoreNode>(s);
        if (op->predicate)  // TVM's masked store
          return line(buffer_ref(op->buffer) + ".vstore(" + index_list(op->indices) + ", " + expr(op->value) +
                      ", predicate=" + expr(op->predicate) + ")");
        line(buffer_ref(op->buffer) + indices(op->indices) + " = " + expr(op->value));
        return;
      }
      case StmtKind::For:
        return for_loop(as<ForNode>(s));
      case StmtKind::IfThenElse:
        return if_chain(as<IfThenElseNode>(s));
      case StmtKind::LetStmt: {
        const auto* op = as<LetStmtNode>(s);
        std::string value = expr(op->value);
        if (last) {
          line(define(op->var.get(), op->var->name) + ": " + type_of(op->var.get()) + " = " + value);
          return stmt(op->body, true);
        }
        // A pointer's type rides along, as TVM prints it: T.LetStmt(v, T.handle("float32")).
        const bool typed = !op->var->pointee.is_void() || !op->var->pointer_scope.empty();
        line("with T.LetStmt(" + value + (typed ? ", " + type_of(op->var.get()) : "") + ") as " +
             define(op->var.get(), op->var->name) + ":");
        return block(op->body);
      }
      case StmtKind::While: {
        const auto* op = as<WhileNode>(s);
        line("while " + expr(op->condition) + ":");
        return block(op->body);
      }
      case StmtKind::SeqStmt: {
        const auto* op = as<SeqStmtNode>(s);
        if (op->seq.empty()) return line("T.evaluate(0)");
        for (size_t i = 0; i < op->seq.size(); ++i) stmt(op->seq[i], last && i + 1 == op->seq.size());
        return;
      }
      case StmtKind::Evaluate:
        return line(evaluate_text(as<EvaluateNode>(s)));
      case StmtKind::Allocate: {
        const auto* op = as<AllocateNode>(s);
        return buffer_scope(op->buffer, buffer_decl("T.alloc_buffer(", op->buffer, "scope=" + quote(op->scope)),
                            op->body, last);
      }
      case StmtKind::AllocateConst:
        return allocate_const(as<AllocateConstNode>(s), last);
      case StmtKind::BufferRealize:
        return realize(as<BufferRealizeNode>(s), last);
      case StmtKind::DeclBuffer: {
        const auto* op = as<DeclBufferNode>(s);
        if (op->buffer && op->buffer->data && !names_.count(op->buffer->data.get()))
          return unbound_buffer(op, last);
        // The data pointer is named before the buffer, so it keeps its owner's name.
        std::string data = "data=" + (op->buffer && op->buffer->data ? var_ref(op->buffer->data.get()) : "None");
        return buffer_scope(op->buffer, buffer_decl("T.decl_buffer(", op->buffer, data), op->body, last);
      }
      case StmtKind::AttrStmt:
        return attr_stmt(as<AttrStmtNode>(s), last);
      case StmtKind::AssertStmt: {
        const auto* op = as<AssertStmtNode>(s);
        if (last) {
          line("assert " + expr(op->condition) + ", " + quote(op->message));
          return stmt(op->body, true);
        }
        line("with T.Assert(" + expr(op->condition) + ", " + quote(op->message) + "):");
        return block(op->body);
      }
    }
  }

  std::string expr(const Expr& e) {
    int prec;
    return expr(e, &prec);
  }

 private:
  // A statement of one expression; TVM's loop exits print as Python's `break`/`continue`.
  std::string evaluate_text(const EvaluateNode* op) {
    const auto* call = as<CallNode>(op->value);
    if (call && !call->builtin && call->args.empty() && (call->op == "break_loop" || call->op == "continue_loop"))
      return call->op == "break_loop" ? "break" : "continue";
    if (call && call->is(Builtin::CallGlobal)) return expr(op->value);  // as TVM prints it
    if (call && call->is(Builtin::TvmReturn) && call->args.empty()) return "return";
    return "T.evaluate(" + expr(op->value) + ")";
  }
  // `if` with its `elif` chain and final `else`.
  void if_chain(const IfThenElseNode* op) {
    line("if " + expr(op->condition) + ":");
    block(op->then_case);
    const IfThenElseNode* chain = op;
    while (chain->else_case) {
      if (const auto* elif = as<IfThenElseNode>(chain->else_case)) {
        line("elif " + expr(elif->condition) + ":");
        block(elif->then_case);
        chain = elif;
      } else {
        line("else:");
        block(chain->else_case);
        break;
      }
    }
  }

  // An allocation or buffer declaration `decl` of `buffer` scoping `body`: flat when last.
  void buffer_scope(const Buffer& buffer, const std::string& decl, const Stmt& body, bool last) {
    if (last) {
      line(bind_buffer(buffer, buffer ? buffer->name : "") + " = " + decl);
      return stmt(body, true);
    }
    line("with " + decl + " as " + bind_buffer(buffer, buffer ? buffer->name : "") + ":");
    block(body);
  }

  // TVM's `B = T.Buffer(shape, "dtype")` in a body: a buffer over a pointer bound nowhere
  // (its memory comes from buffer_bind_scope or T.realize). The bare variables of its
  // shape it binds are declared before it, `n = T.int32()`, as TVM prints them.
  void unbound_buffer(const DeclBufferNode* op, bool last) {
    const Buffer& b = op->buffer;
    std::vector<const Expr*> slots;
    for (const auto& e : b->shape) slots.push_back(&e);
    for (const auto& e : b->strides) slots.push_back(&e);
    slots.push_back(&b->elem_offset);
    for (const Expr* e : slots)
      if (const auto* v = as<VarNode>(*e); v && !names_.count(v)) line(define(v, v->name) + " = T." + v->dtype.str() + "()");
    const std::string decl = buffer_decl("T.Buffer(", b, "");
    line(bind_buffer(b, b->name) + " = " + decl);
    stmt(op->body, last);
  }

  // The node of buffer_bind_scope, `[B, A]` (TVM's array of the two buffers), which the
  // parser keeps as T.tvm_tuple(B.data, A.data); empty for any other node.
  std::string buffer_list(const AttrStmtNode* op) {
    const auto* call = as<CallNode>(op->node);
    if (op->key != "buffer_bind_scope" || !call || call->op != "tvm_tuple" || call->args.empty()) return "";
    std::string out;
    for (const Expr& a : call->args) {
      const auto* v = as<VarNode>(a);
      auto it = v ? names_.find(v) : names_.end();
      const std::string suffix = ".data";
      if (it == names_.end() || it->second.size() <= suffix.size() ||
          it->second.compare(it->second.size() - suffix.size(), suffix.size(), suffix) != 0)
        return "";
      out += (out.empty() ? "" : ", ") + it->second.substr(0, it->second.size() - suffix.size());
    }
    return "[" + out + "]";
  }

  // `p = T.allocate_const([values], "dtype", [extents])`: p names the pointer and the buffer.
  void allocate_const(const AllocateConstNode* op, bool last) {
    const Buffer& b = op->buffer;
    std::string values, extents;
    for (size_t i = 0; i < op->size(); ++i)
      values += (i ? ", " : "") + (b->dtype.is_float() ? float_literal(op->floats[i]) : std::to_string(op->ints[i]));
    for (size_t i = 0; i < b->shape.size(); ++i) extents += (i ? ", " : "") + expr(b->shape[i]);
    const std::string decl = "T.allocate_const([" + values + "], " + quote(b->dtype.str()) + ", [" + extents + "])";
    const std::string name = fresh(b->name);
    names_[b.get()] = name;
    names_[b->data.get()] = name;
    if (last) {
      line(name + " = " + decl);
      return stmt(op->body, true);
    }
    line("with " + decl + " as " + name + ":");
    block(op->body);
  }

  // `T.realize(A[0:16], "global")`, TVM's BufferRealize: the region always in slices.
  void realize(const BufferRealizeNode* op, bool last) {
    std::vector<Expr> mins, region;
    for (const auto& [min, extent] : op->bounds) mins.push_back(min);
    region.push_back(BufferLoad(op->buffer, mins));
    for (const auto& [min, extent] : op->bounds) region.push_back(extent);
    std::string call =
        "T.realize(" + call_tir_arg(Call(DataType::Handle(), "tir_region", region), true) + ", " + quote(op->scope);
    const int64_t* always = as_const_int(op->condition);
    if (!always || *always != 1) call += ", condition=" + expr(op->condition);
    call += ")";
    if (last) {
      line(call);
      return stmt(op->body, true);
    }
    line("with " + call + ":");
    block(op->body);
  }

  void attr_stmt(const AttrStmtNode* op, bool last) {
    const auto* thread = as<VarNode>(op->node);
    if (op->key == "thread_extent" && thread && !thread->thread_tag.empty()) {
      // TVM's forms: `x = T.launch_thread("tag", n)` for the rest of the block, or
      // `x = T.env_thread("tag")` then `with T.launch_thread(x, n):`.
      const bool fresh = !names_.count(thread);
      const std::string name = define(thread, thread->name);
      if (last && fresh) {
        line(name + " = T.launch_thread(" + quote(thread->thread_tag) + ", " + expr(op->value) + ")");
        return stmt(op->body, true);
      }
      if (fresh) line(name + " = T.env_thread(" + quote(thread->thread_tag) + ")");
      line("with T.launch_thread(" + name + ", " + expr(op->value) + "):");
      return block(op->body);
    }
    const std::string buffers = buffer_list(op);
    line("with T.attr(" + (buffers.empty() ? expr(op->node) : buffers) + ", " + quote(op->key) + ", " +
         expr(op->value) + "):");
    block(op->body);
  }

  void line(const std::string& text) { os_ << std::string(4 * indent_, ' ') << text << "\n"; }

  void block(const Stmt& body) {
    ++indent_;
    stmt(body, true);
    --indent_;
  }

  void reset_names() {
    names_.clear();
    used_.clear();
  }

  // A fresh, valid, unused name based on `hint`.
  std::string fresh(std::string hint) {
    if (!is_c_identifier(hint)) {
      std::string clean;
      for (char c : hint) clean += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
      if (clean.empty() || std::isdigit(static_cast<unsigned char>(clean[0]))) clean = "v_" + clean;
      hint = clean;
    }
    if (is_reserved(hint)) hint += "_";
    std::string name = hint;
    for (int k = 1; used_.count(name); ++k) name = hint + "_" + std::to_string(k);
    used_.insert(name);
    return name;
  }

  // Names a definition. A node defined again (the same Var bound by two loops) keeps
  // its name: both scopes mean the same variable.
  std::string define(const void* node, const std::string& hint) {
    auto it = names_.find(node);
    if (it != names_.end()) return it->second;
    std::string n = fresh(hint);
    names_[node] = n;
    return n;
  }

  // Gives buffer `b` the already reserved name `n`; its data pointer prints as `n.data`.
  std::string name_buffer(const Buffer& b, const std::string& n) {
    names_[b.get()] = n;
    if (b->data && !names_.count(b->data.get())) names_[b->data.get()] = n + ".data";
    return n;
  }
  std::string bind_buffer(const Buffer& b, const std::string& hint) { return b ? name_buffer(b, fresh(hint)) : "None"; }

  std::string buffer_ref(const Buffer& b) {
    if (!b) return "None";
    auto it = names_.find(b.get());
    if (it != names_.end()) return it->second;
    return bind_buffer(b, b->name);  // not declared anywhere: print it by name
  }

  std::string var_ref(const VarNode* v) {
    auto it = names_.find(v);
    if (it != names_.end()) return it->second;
    return define(v, v->name);  // free variable
  }

  std::string tuple(const std::vector<Expr>& es) {
    std::string out = "(";
    for (size_t i = 0; i < es.size(); ++i) out += (i ? ", " : "") + expr(es[i]);
    if (es.size() == 1) out += ",";
    return out + ")";
  }

  // `[T.Ramp(0, 1, 4)]`: the indices of .vload/.vstore, written as expressions, as TVM does.
  std::string index_list(const std::vector<Expr>& idx) {
    std::string out = "[";
    for (size_t i = 0; i < idx.size(); ++i) out += (i ? ", " : "") + expr(idx[i]);
    return out + "]";
  }

  std::string indices(const std::vector<Expr>& idx) {
    if (idx.empty()) return "[()]";
    std::string out = "[";
    for (size_t i = 0; i < idx.size(); ++i) out += (i ? ", " : "") + index(idx[i]);
    return out + "]";
  }

  // An index; a Ramp with a constant positive stride is a slice `lo:hi[:step]`, as TVM
  // prints vector loads and stores (the parser reads it back as the same Ramp).
  std::string index(const Expr& e) {
    const auto* ramp = as<RampNode>(e);
    const int64_t* stride = ramp ? as_const_int(ramp->stride) : nullptr;
    if (!stride || *stride <= 0 || ramp->stride->dtype != ramp->base->dtype || ramp->dtype.is_scalable())
      return expr(e);
    const DataType t = ramp->base->dtype;
    const int64_t length = *stride * ramp->lanes;
    std::string hi = as_const_int(ramp->base) ? expr(IntImm(t, *as_const_int(ramp->base) + length))
                                              : expr(Binary(ExprKind::Add, ramp->base, IntImm(t, length)));
    return expr(ramp->base) + ":" + hi + (*stride == 1 ? "" : ":" + std::to_string(*stride));
  }

  // `<head>shape, "dtype"[, strides=...][, elem_offset=...][, align=...][, extra])`.
  std::string buffer_decl(const std::string& head, const Buffer& b, const std::string& extra) {
    if (!b) return head + "None)";
    std::string out = head + tuple(b->shape) + ", " + quote(b->dtype.str());
    if (!b->strides.empty()) out += ", strides=" + tuple(b->strides);
    if (b->elem_offset && !is_zero_of(b->elem_offset, DataType::Int(32)))
      out += ", elem_offset=" + expr(b->elem_offset);
    if (b->align != 0) out += ", align=" + std::to_string(b->align);
    if (!b->axis_separators.empty()) {
      std::string seps;
      for (int64_t s : b->axis_separators) seps += (seps.empty() ? "" : ", ") + std::to_string(s);
      out += ", axis_separators=[" + seps + "]";
    }
    if (!extra.empty()) out += ", " + extra;
    return out + ")";
  }

  void for_loop(const ForNode* op) {
    if (gridable(op) && as<ForNode>(op->body) && gridable(as<ForNode>(op->body))) {
      // Collect the nest for T.grid: inner extents must not use outer loop variables
      // (the parser evaluates all extents before binding any of them).
      std::vector<const ForNode*> nest = {op};
      std::set<const VarNode*> vars = {op->loop_var.get()};
      while (true) {
        const auto* inner = as<ForNode>(nest.back()->body);
        if (!inner || !gridable(inner) || uses_any(inner->extent, vars)) break;
        nest.push_back(inner);
        vars.insert(inner->loop_var.get());
      }
      if (nest.size() > 1) {
        std::string extents, names;
        for (size_t i = 0; i < nest.size(); ++i) extents += (i ? ", " : "") + expr(nest[i]->extent);
        for (size_t i = 0; i < nest.size(); ++i)
          names += (i ? ", " : "") + define(nest[i]->loop_var.get(), nest[i]->loop_var->name);
        line("for " + names + " in T.grid(" + extents + "):");
        return block(nest.back()->body);
      }
    }
    std::string kind = op->for_kind == ForKind::kSerial ? "T.serial" : std::string("T.") + for_kind_name(op->for_kind);
    std::string extra;
    if (op->for_kind == ForKind::kThreadBinding) extra += ", thread=" + quote(op->thread_tag);
    if (!op->annotations.empty()) extra += ", annotations=" + dict(op->annotations);
    std::string range;
    if (op->extent && is_zero_of(op->min, op->extent->dtype)) {
      bool plain = op->for_kind == ForKind::kSerial && extra.empty();
      range = (plain ? std::string("range") : kind) + "(" + expr(op->extent) + extra + ")";
    } else {
      range = kind + "(" + expr(op->min) + ", " + loop_stop(op->min, op->extent) + extra + ")";
    }
    std::string name = define(op->loop_var.get(), op->loop_var->name);
    line("for " + name + " in " + range + ":");
    block(op->body);
  }

  // The `stop` of T.serial(min, stop) that the parser turns back into `extent`
  // (see range_extent in parser_stmt.cc): folded constants, `x` for extent `x - min`
  // when the parser would not read `x` another way, else `min + extent`.
  std::string loop_stop(const Expr& min, const Expr& extent) {
    const int64_t* a = as_const_int(min);
    const int64_t* b = as_const_int(extent);
    if (a && b && min->dtype == extent->dtype) return expr(IntImm(min->dtype, *a + *b));
    if (const auto* sub = as<SubNode>(extent)) {
      bool folds = as_const_int(sub->a) && a;
      bool zero_min = a && *a == 0;
      if (!folds && !zero_min && !as<AddNode>(sub->a) && structural_equal(sub->b, min)) return expr(sub->a);
    }
    int p;
    std::string out = expr(min, &p) + " + ";
    std::string rhs = expr(extent, &p);
    return out + (p <= kAdd ? "(" + rhs + ")" : rhs);
  }

  std::string wrap(const Expr& e, int min_prec) {
    int p;
    std::string s = expr(e, &p);
    return p < min_prec ? "(" + s + ")" : s;
  }

  std::string infix(const BinaryNode* op, const char* sym, int prec, bool non_assoc, int* out_prec) {
    *out_prec = prec;
    return wrap(op->a, non_assoc ? prec + 1 : prec) + " " + sym + " " + wrap(op->b, prec + 1);
  }

  std::string call(const std::string& fn, const std::vector<Expr>& args, const Attrs& attrs = {}) {
    std::string out = fn + "(";
    for (size_t i = 0; i < args.size(); ++i) out += (i ? ", " : "") + expr(args[i]);
    if (!attrs.empty()) out += std::string(args.empty() ? "" : ", ") + "attrs=" + dict(attrs);
    return out + ")";
  }

  std::string expr(const Expr& e, int* prec) {
    *prec = kAtom;
    if (!e) return "None";
    switch (e->kind) {
      case ExprKind::IntImm:
        return int_literal(as<IntImmNode>(e), prec);
      case ExprKind::FloatImm: {
        const auto* op = as<FloatImmNode>(e);
        return "T." + op->dtype.str() + "(" + float_literal(op->value) + ")";
      }
      case ExprKind::StringImm:
        return quote(as<StringImmNode>(e)->value);
      case ExprKind::Var:
        return var_ref(as<VarNode>(e));
      case ExprKind::Add:
      case ExprKind::Sub:
      case ExprKind::Mul:
      case ExprKind::Div:
      case ExprKind::Mod:
      case ExprKind::FloorDiv:
      case ExprKind::FloorMod:
      case ExprKind::Min:
      case ExprKind::Max:
        return arith_text(e, prec);
      case ExprKind::EQ:
      case ExprKind::NE:
      case ExprKind::LT:
      case ExprKind::LE:
      case ExprKind::GT:
      case ExprKind::GE:
      case ExprKind::And:
      case ExprKind::Or:
      case ExprKind::Not:
        return logic_text(e, prec);
      case ExprKind::Select: {
        const auto* op = as<SelectNode>(e);
        return call("T.Select", {op->condition, op->true_value, op->false_value});
      }
      case ExprKind::Cast: {
        const auto* op = as<CastNode>(e);
        return "T.Cast(" + quote(op->dtype.str()) + ", " + expr(op->value) + ")";
      }
      case ExprKind::BufferLoad: {
        const auto* op = as<BufferLoadNode>(e);
        if (op->predicate)  // TVM's masked load
          return buffer_ref(op->buffer) + ".vload(" + index_list(op->indices) + ", predicate=" + expr(op->predicate) + ")";
        return buffer_ref(op->buffer) + indices(op->indices);
      }
      case ExprKind::Call:
        return call_text(as<CallNode>(e));
      case ExprKind::Ramp:
      case ExprKind::Broadcast:
      case ExprKind::Shuffle:
        return vector_text(e);
      case ExprKind::Let:
        return let_text(e);
    }
    return "None";
  }

  std::string int_literal(const IntImmNode* op, int* prec) {
    if (op->dtype.is_bool()) return op->value ? "True" : "False";
    std::string digits =
        op->dtype.is_uint() ? std::to_string(static_cast<uint64_t>(op->value)) : std::to_string(op->value);
    if (op->dtype == DataType::Int(32)) {
      if (op->value < 0) *prec = kUnary;
      return digits;
    }
    return "T." + op->dtype.str() + "(" + digits + ")";
  }

  // Arithmetic: infix where Python's operator means the same, else TVM's T.* call.
  std::string arith_text(const Expr& e, int* prec) {
    switch (e->kind) {
      case ExprKind::Add:
        return infix(as<AddNode>(e), "+", kAdd, false, prec);
      case ExprKind::Sub: {
        const auto* op = as<SubNode>(e);
        if (is_negation(op)) {
          *prec = kUnary;
          return "-" + wrap(op->b, kUnary);
        }
        return infix(op, "-", kAdd, false, prec);
      }
      case ExprKind::Mul:
        return infix(as<MulNode>(e), "*", kMul, false, prec);
      case ExprKind::Div: {
        const auto* op = as<DivNode>(e);
        if (e->dtype.is_float()) return infix(op, "/", kMul, false, prec);
        return call("T.truncdiv", {op->a, op->b});
      }
      case ExprKind::Mod: {
        const auto* op = as<ModNode>(e);
        return call("T.truncmod", {op->a, op->b});
      }
      case ExprKind::FloorDiv:
        return infix(as<FloorDivNode>(e), "//", kMul, false, prec);
      case ExprKind::FloorMod:
        return infix(as<FloorModNode>(e), "%", kMul, false, prec);
      case ExprKind::Min:
        return call("T.min", {as<MinNode>(e)->a, as<MinNode>(e)->b});
      case ExprKind::Max:
        return call("T.max", {as<MaxNode>(e)->a, as<MaxNode>(e)->b});
      default:
        return "None";  // not arithmetic: expr() dispatches only the kinds above here
    }
  }

  // Comparisons and boolean connectives.
  std::string logic_text(const Expr& e, int* prec) {
    switch (e->kind) {
      case ExprKind::EQ:
        return infix(as<EQNode>(e), "==", kCmp, true, prec);
      case ExprKind::NE:
        return infix(as<NENode>(e), "!=", kCmp, true, prec);
      case ExprKind::LT:
        return infix(as<LTNode>(e), "<", kCmp, true, prec);
      case ExprKind::LE:
        return infix(as<LENode>(e), "<=", kCmp, true, prec);
      case ExprKind::GT:
        return infix(as<GTNode>(e), ">", kCmp, true, prec);
      case ExprKind::GE:
        return infix(as<GENode>(e), ">=", kCmp, true, prec);
      case ExprKind::And:
        return infix(as<AndNode>(e), "and", kAnd, false, prec);
      case ExprKind::Or:
        return infix(as<OrNode>(e), "or", kOr, false, prec);
      case ExprKind::Not:
        *prec = kNot;
        return "not " + wrap(as<NotNode>(e)->a, kNot);
      default:
        return "None";  // not logic: expr() dispatches only the kinds above here
    }
  }

  std::string vector_text(const Expr& e) {
    // A scalable vector's lanes as TVM prints them: T.vscale() * 4.
    const std::string lanes = (e->dtype.is_scalable() ? "T.vscale() * " : "") + std::to_string(e->dtype.lanes());
    if (const auto* op = as<RampNode>(e)) return "T.Ramp(" + expr(op->base) + ", " + expr(op->stride) + ", " + lanes + ")";
    if (const auto* op = as<BroadcastNode>(e)) return "T.Broadcast(" + expr(op->value) + ", " + lanes + ")";
    const auto* op = as<ShuffleNode>(e);
    std::string out = "T.Shuffle([";
    for (size_t i = 0; i < op->vectors.size(); ++i) out += (i ? ", " : "") + expr(op->vectors[i]);
    out += "], [";
    for (size_t i = 0; i < op->indices.size(); ++i) out += (i ? ", " : "") + std::to_string(op->indices[i]);
    return out + "])";
  }

  // Nested lets print as one where={...}, in binding order.
  std::string let_text(const Expr& e) {
    std::string where;
    Expr body = e;
    while (const auto* let = as<LetNode>(body)) {
      std::string value = expr(let->value);
      where += (where.empty() ? "" : ", ") + define(let->var.get(), let->var->name) + ": " + value;
      body = let->body;
    }
    return "T.Let(" + expr(body) + ", where={" + where + "})";
  }

  // A call: TVM's spellings for call_extern, reinterpret, call_tir and Module.sub(...).
  std::string call_text(const CallNode* op) {
    if (op->is(Builtin::CallExtern)) {
      std::vector<Expr> args = op->args;
      std::string out = "T.call_extern(" + quote(op->dtype.str());
      for (const auto& a : args) out += ", " + expr(a);
      if (!op->attrs.empty()) out += ", attrs=" + dict(op->attrs);
      return out + ")";
    }
    if (op->is(Builtin::Reinterpret) && op->args.size() == 1 && op->attrs.empty())
      return "T.reinterpret(" + quote(op->dtype.str()) + ", " + expr(op->args[0]) + ")";
    if (op->is(Builtin::CallGlobal) && !op->args.empty() && as<StringImmNode>(op->args[0]) && op->attrs.empty()) {
      // TVM's GlobalVar call: Module.sub(args...).
      std::string out = module_name_ + "." + as<StringImmNode>(op->args[0])->value + "(";
      for (size_t i = 1; i < op->args.size(); ++i) out += (i > 1 ? ", " : "") + expr(op->args[i]);
      return out + ")";
    }
    if (op->is(Builtin::CallTir)) {
      std::string out = "T.call_tir(";
      for (size_t i = 0; i < op->args.size(); ++i) out += (i ? ", " : "") + call_tir_arg(op->args[i]);
      if (!op->attrs.empty()) out += ", attrs=" + dict(op->attrs);
      return out + ")";
    }
    auto dtype = op->attrs.find("dtype");
    if (!op->builtin && dtype != op->attrs.end() && std::holds_alternative<std::string>(dtype->second)) {
      // A TVM intrinsic's dtype="handle", as TVM writes it (the parser keeps it in attrs).
      Attrs rest = op->attrs;
      rest.erase("dtype");
      std::string out = call("T." + op->op, op->args, rest);
      out.pop_back();
      return out + (op->args.empty() && rest.empty() ? "" : ", ") + "dtype=" + quote(std::get<std::string>(dtype->second)) + ")";
    }
    return call("T." + op->op, op->args, op->attrs);
  }

  // A call_tir argument: a buffer, a region in slice syntax, or any expression; with
  // `slices`, a region is written in slices even where a name or an index would do.
  std::string call_tir_arg(const Expr& e, bool slices = false) {
    const auto* region = as<CallNode>(e);
    const auto* load = region && region->is(Builtin::TirRegion) && !region->args.empty()
                           ? as<BufferLoadNode>(region->args[0])
                           : nullptr;
    if (!load || load->indices.size() + 1 != region->args.size() || load->buffer->shape.size() != load->indices.size())
      return expr(e);
    const Buffer& b = load->buffer;
    bool whole = true;
    for (size_t k = 0; k < load->indices.size(); ++k) {
      const int64_t* lo = as_const_int(load->indices[k]);
      whole = whole && lo && *lo == 0 && load->indices[k]->dtype == b->shape[k]->dtype &&
              same_expr(region->args[k + 1], b->shape[k]);
    }
    if (whole && !slices) return buffer_ref(b);
    std::string out = buffer_ref(b) + "[";
    for (size_t k = 0; k < load->indices.size(); ++k) {
      const Expr& lo = load->indices[k];
      const Expr& ext = region->args[k + 1];
      const int64_t *l = as_const_int(lo), *x = as_const_int(ext);
      out += k ? ", " : "";
      if (x && *x == 1 && ext->dtype == lo->dtype && !slices) {
        out += expr(lo);
      } else if (l && *l == 0 && same_expr(ext, b->shape[k]) && lo->dtype == b->shape[k]->dtype && !slices) {
        out += ":";
      } else if (l && x) {
        out += expr(lo) + ":" + std::to_string(*l + *x);
      } else if (l && *l == 0) {
        out += expr(lo) + ":" + expr(ext);
      } else {
        out += expr(lo) + ":" + expr(Binary(ExprKind::Add, lo, ext));
      }
    }
    return out + "]";
  }

  std::ostringstream os_;
  int indent_ = 0;
  std::string module_name_ = "Module";  // for calls between its functions: Module.sub(...)
  std::unordered_map<const void*, std::string> names_;
  std::set<std::string> used_;
};

}  // namespace

std::string print_module(const IRModule& m) {
  Printer p;
  p.module(m);
  return p.str();
}

std::string print_func(const std::string& name, const PrimFunc& f) {
  Printer p;
  p.func(name, f);
  return "# from tvm.script import tir as T\n\n" + p.str();
}

std::string print_stmt(const Stmt& s) {
  Printer p;
  p.stmt(s, true);
  return p.str();
}

std::string print_expr(const Expr& e) {
  Printer p;
  return p.expr(e);
}

}  // namespace mtir
