#include "codegen/c/codegen_c.h"

#include <cctype>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>
#include <utility>

#include "analysis/helium_vectors.h"
#include "analysis/int_bound.h"
#include "codegen/c/builtin_calls.h"
#include "codegen/c/c_helpers.h"
#include "codegen/c/helium_vectors.h"
#include "codegen/emit_common.h"
#include "codegen/line_marks.h"
#include "ir/op.h"
#include "ir/tvm_intrinsics.h"
#include "ir/visitor.h"
#include "support/names.h"

namespace mtir {
namespace {

using namespace c_helpers;  // c_type and the helper texts

// Buffers declared (T.decl_buffer) on each pointer variable of a function body.
std::unordered_map<const VarNode*, std::vector<Buffer>> declared_views(const Stmt& body) {
  struct Finder : Visitor {
    std::unordered_map<const VarNode*, std::vector<Buffer>> views;
    void visit_DeclBuffer(const DeclBufferNode* op) override {
      if (op->buffer && op->buffer->data) views[op->buffer->data.get()].push_back(op->buffer);
      Visitor::visit_DeclBuffer(op);
    }
  } finder;
  finder.visit(body);
  return finder.views;
}

class FunctionEmitter {
 public:
  FunctionEmitter(const std::string& symbol, const PrimFunc& func, std::map<std::string, std::string>* helpers,
                  std::map<std::string, std::string>* externs, bool* needs_stdio)
      : symbol_(symbol), func_(func), helpers_(helpers), externs_(externs), needs_stdio_(needs_stdio),
        views_(declared_views(func->body)), linked_(linked_params(func)) {}

  // The C names of the parameters, after signature().
  std::vector<std::string> param_names() {
    std::vector<std::string> names;
    for (const auto& p : func_->params) names.push_back(names_.at(p.get()));
    return names;
  }

  std::string signature() {
    std::ostringstream os;
    // Kernels behind a packed wrapper are private to the translation unit.
    if (attr_flag(func_, "tir.internal")) os << "static ";
    os << "int32_t " << symbol_ << "(";
    if (is_packed(func_)) {
      // Exactly TVMBackendPackedCFunc, so the registry can hold it without a cast.
      static const char* const kTypes[] = {"TVMValue*", "int32_t*", "int32_t", "TVMValue*", "int32_t*", "void*"};
      if (func_->params.size() != 6) user_error(func_->span, symbol_ + ": a packed function has 6 parameters");
      for (size_t i = 0; i < 6; ++i) {
        os << (i ? ", " : "") << kTypes[i] << " " << name_of(func_->params[i].get(), func_->params[i]->name);
      }
      os << ")";
      return os.str();
    }
    // Pointer parameters take the element type of the buffers declared on them.
    auto& views = views_;
    const char* separator = "";
    for (size_t i = 0; i < func_->params.size(); ++i) {
      const Var& p = func_->params[i];
      const Buffer& b = func_->param_buffers[i];
      const bool noalias = noalias_param(func_, static_cast<int>(i));
      if (linked_.count(i)) {  // a linked weight: body() points it at its array
        linked_pointer(i);
        continue;
      }
      os << std::exchange(separator, ", ");
      if (b) {
        // A buffer parameter is passed as a typed pointer to its data.
        os << c_type(b->dtype, b->span) << "* " << (noalias ? "restrict " : "") << name_of(b->data.get(), b->name);
        pointer_type_[b->data.get()] = b->dtype;
      } else if (p->dtype.is_handle() && views.count(p.get())) {
        const std::vector<Buffer>& vs = views[p.get()];
        bool one_type = true;
        for (const auto& v : vs) one_type = one_type && v->dtype == vs[0]->dtype;
        // A C name from the buffer, which is what the user called it.
        const std::string& n = name_of(p.get(), vs[0]->name);
        if (one_type) {
          os << c_type(vs[0]->dtype, vs[0]->span) << "* " << (noalias ? "restrict " : "") << n;
          pointer_type_[p.get()] = vs[0]->dtype;
        } else {
          os << "void* " << n;
        }
      } else {
        os << c_type(p->dtype, p->span) << " " << name_of(p.get(), p->name);
      }
    }
    if (!*separator) os << "void";
    os << ")";
    return os.str();
  }

  std::string body() {
    std::ostringstream os;
    out_ = &os;
    indent_ = 1;
    // Parameters a convention requires but this body does not read (-Wunused-parameter).
    struct Uses : Visitor {
      std::set<const VarNode*> vars;
      void visit_Var(const VarNode* v) override { vars.insert(v); }
      // Only the data pointer: a flat view's shape emits no C (merge_kernels makes some
      // view shapes parameters), and a (void) on a parameter that is read is harmless.
      void visit_buffer(const Buffer& b) override {
        if (b && b->data) vars.insert(b->data.get());
      }
      // A declaration emits no C; only accesses through the buffer read its pointer.
      void visit_DeclBuffer(const DeclBufferNode* op) override { visit(op->body); }
    } uses;
    uses.visit(func_->body);
    for (size_t i = 0; i < func_->params.size(); ++i) {
      const VarNode* p = func_->params[i].get();
      const Buffer& b = func_->param_buffers[i];
      bool used = uses.vars.count(p) || (b && uses.vars.count(b->data.get()));
      if (linked_.count(i)) {  // defined static in the included file (kLinkedParamsAttr)
        const std::string file = linked_params_file(func_);
        externs_->emplace(file, "#include \"" + file + "\"");
        const std::string name = linked_pointer(i).first, ct = c_type(linked_pointer(i).second, p->span);
        // main never writes its weights: the const is cast away; an unused one is still
        // referenced, as -Wunused-const-variable asks of a static array.
        line(used ? ct + "* " + name + " = (" + ct + "*)" + linked_.at(i) + ";" : "(void)" + linked_.at(i) + ";");
      } else if (!used) {
        line("(void)" + name_of(p, p->name) + ";");
      }
    }
    emit(func_->body);
    if (!ends_in_return(func_->body)) line("return 0;");
    return os.str();
  }

 private:
  // Linked weight i's C name and type: its buffer's, or the buffers' declared on its handle.
  std::pair<std::string, DataType> linked_pointer(size_t i) {
    const Buffer& b = func_->param_buffers[i];
    const VarNode* p = b ? b->data.get() : func_->params[i].get();
    if (!b && !views_.count(p)) user_error(func_->span, symbol_ + ": a linked weight parameter has no buffer");
    const Buffer& typed = b ? b : views_.at(p)[0];
    return {name_of(p, typed->name), pointer_type_[p] = typed->dtype};
  }

  // Whether the last statement executed on the straight path is a tvm_return.
  static bool ends_in_return(const Stmt& s) {
    if (!s) return false;
    switch (s->kind) {
      case StmtKind::SeqStmt: {
        const auto& seq = static_cast<const SeqStmtNode*>(s.get())->seq;
        return !seq.empty() && ends_in_return(seq.back());
      }
      case StmtKind::LetStmt: return ends_in_return(static_cast<const LetStmtNode*>(s.get())->body);
      case StmtKind::DeclBuffer: return ends_in_return(static_cast<const DeclBufferNode*>(s.get())->body);
      case StmtKind::Evaluate: {
        const auto* call = as<CallNode>(static_cast<const EvaluateNode*>(s.get())->value);
        return call && call->is(Builtin::TvmReturn);
      }
      default: return false;
    }
  }

  std::string user_name() const { return user_function_name(func_, symbol_); }
  // For pointers that are no parameter by position (MakePackedAPI's lets).
  bool noalias() const { return noalias_param(func_, -1); }

  // ---- names --------------------------------------------------------------------
  const std::string& name_of(const VarNode* v, const std::string& hint) {
    auto it = names_.find(v);
    if (it != names_.end()) return it->second;
    std::string base = sanitized_name(hint, /*keep_dots=*/false);
    if (base.empty() || std::isdigit(static_cast<unsigned char>(base[0]))) base = "v_" + base;
    if (is_reserved_c_word(base) || base.rfind("mtir_", 0) == 0) base += "_";
    return names_[v] = unique_name(base, '_', &used_);
  }

  const std::string& var_name(const VarNode* v) {
    auto it = names_.find(v);
    if (it == names_.end()) user_error(v->span, "variable '" + v->name + "' is not defined where C code uses it");
    return it->second;
  }

  std::string use_helper(const std::string& base, DataType t) { return typed_helper(base, t, helpers_); }

  // With a line map asked for, a line emitted for a located statement ends in its mark
  // (codegen/line_marks.h).
  void line(const std::string& s) {
    *out_ << std::string(2 * indent_, ' ') << s << line_mark(mark_lines_, source_line_) << "\n";
  }

  // ---- expressions ----------------------------------------------------------------
  std::string int_literal(DataType t, int64_t v) {
    if (t.is_bool()) return v ? "true" : "false";
    if (t.is_uint()) {
      uint64_t u = static_cast<uint64_t>(v);
      if (t.bits() == 64) return "UINT64_C(" + std::to_string(u) + ")";
      if (t.bits() == 32) return std::to_string(u) + "U";
      return "((" + c_type(t, {}) + ")" + std::to_string(u) + ")";
    }
    if (t.bits() == 64) {
      if (v == INT64_MIN) return "(-INT64_C(9223372036854775807) - 1)";
      return v < 0 ? "(-INT64_C(" + std::to_string(-v) + "))" : "INT64_C(" + std::to_string(v) + ")";
    }
    if (t.bits() == 32) {
      if (v == INT32_MIN) return "(-2147483647 - 1)";
      return v < 0 ? "(" + std::to_string(v) + ")" : std::to_string(v);
    }
    return "((" + c_type(t, {}) + ")" + std::to_string(v) + ")";
  }

  std::string float_literal(DataType t, double v, const Span& span) {
    c_type(t, span);  // rejects float16
    bool f32 = t.bits() == 32;
    // The interpreter holds a float32 constant rounded to float32: print that value,
    // so the C compiler does not round a second time (or overflow on 1e39).
    if (f32) v = static_cast<double>(static_cast<float>(v));
    if (std::isnan(v)) return f32 ? "((float)NAN)" : "((double)NAN)";
    if (std::isinf(v)) return std::string(v < 0 ? "(-" : "(") + (f32 ? "INFINITY" : "(double)INFINITY") + ")";
    char buf[64];
    // 9 significant digits round-trip every float32, 17 every float64.
    std::snprintf(buf, sizeof buf, f32 ? "%.9g" : "%.17g", v);
    std::string s = buf;
    if (s.find_first_of(".e") == std::string::npos) s += ".0";
    if (f32) s += "f";
    return v < 0 || (v == 0 && std::signbit(v)) ? "(" + s + ")" : s;
  }

  std::string binary(const char* op, const BinaryNode* e) { return "(" + expr(e->a) + " " + op + " " + expr(e->b) + ")"; }

  // + - * on integers: plain C when the bounds prove no overflow, else wrapping
  // arithmetic through the unsigned type (defined in C, like the interpreter).
  std::string arith(const char* op, const BinaryNode* e, const Expr& self) {
    DataType t = e->dtype;
    if (t.is_float() || (t.is_uint() && t.bits() >= 32) || bounds_.no_overflow(self)) return binary(op, e);
    std::string ut = t.bits() <= 32 ? "uint32_t" : "uint64_t";
    return "((" + c_type(t, e->span) + ")((" + ut + ")" + expr(e->a) + " " + op + " (" + ut + ")" + expr(e->b) + "))";
  }

  std::string call(const std::string& fn, const std::vector<Expr>& args) {
    std::string s = fn + "(";
    for (size_t i = 0; i < args.size(); ++i) s += (i ? ", " : "") + expr(args[i]);
    return s + ")";
  }

  // The symbol a call_extern calls when it is a function of this module, else "".
  std::string module_callee(const Expr& e) const {
    const auto* call = as<CallNode>(e);
    if (!call || !call->is(Builtin::CallExtern) || call->args.empty() || !module_symbols_) return "";
    const auto* sym = as<StringImmNode>(call->args[0]);
    if (!sym || !module_symbols_->count(sym->value)) return "";
    // merge_kernels: a shared kernel called for another; the hooks name the one it replaces.
    auto own = call->attrs.find("kernel_name");
    if (own != call->attrs.end() && std::holds_alternative<std::string>(own->second))
      return std::get<std::string>(own->second);
    return sym->value;
  }

  // Every builtin of ir/builtins.def, in builtin_calls.cc.
  std::string call_expr(const CallNode* op) {
    const BuiltinContext context{[&](const Expr& e) { return expr(e); },
                                 [&](const Buffer& b, const std::vector<Expr>& indices, const Span& span) {
                                   return access(b, indices, span);
                                 },
                                 helpers_, externs_, module_symbols_};
    return builtin_call(op, context);
  }

  // tvm_throw_last_error: set the message, with "{}" filled in at run time, and fail.
  // One call to a shared, out-of-line formatter keeps each check small, so the function
  // that holds the checks stays cheap to inline into callers.
  void throw_last_error(const CallNode* op) {
    if (op->args.empty()) return emit_return("-1");  // the failed runtime call set the error
    const auto* fmt = op->args.empty() ? nullptr : as<StringImmNode>(op->args[0]);
    if (!fmt) user_error(op->span, "T.tvm_throw_last_error needs a message string");
    if (op->args.size() == 1) {
      line("TVMAPISetLastError(" + c_string_literal(fmt->value) + ");");
      emit_return("-1");
      return;
    }
    std::string printf_format;
    std::vector<std::string> values;
    size_t next = 1;
    for (size_t i = 0; i < fmt->value.size(); ++i) {
      if (fmt->value.compare(i, 2, "{}") == 0 && next < op->args.size()) {
        printf_format += "%lld";
        values.push_back("(long long)" + expr(op->args[next++]));
        ++i;
      } else {
        printf_format += fmt->value[i] == '%' ? std::string("%%") : std::string(1, fmt->value[i]);
      }
    }
    if (values.size() > 3) user_error(op->span, "T.tvm_throw_last_error takes at most 3 values");
    while (values.size() < 3) values.push_back("0");
    *needs_stdio_ = true;
    (*helpers_)["mtir_set_error"] = kSetErrorHelper;
    line("mtir_set_error(" + c_string_literal(printf_format) + ", " + values[0] + ", " + values[1] + ", " + values[2] +
         ");");
    emit_return("-1");
  }


  std::string load(const BufferLoadNode* op) { return access(op->buffer, op->indices, op->span); }

  // A Helium int32x4 store, and a kept int32x4 let's value (codegen/c/helium_vectors.cc).
  std::string helium_statement(const BufferStoreNode* op) {
    return helium_store_statement(
        op, [&](const Expr& e) { return expr(e); },
        [&](const Buffer& b, const Expr& i, const Span& at) { return "(&" + access(b, {i}, at) + ")"; }, helpers_);
  }
  std::string helium_value(const Expr& e) {
    return helium_vector_value(
        e, [&](const Expr& x) { return expr(x); },
        [&](const Buffer& b, const Expr& i, const Span& at) { return "(&" + access(b, {i}, at) + ")"; }, helpers_);
  }

  std::string access(const Buffer& b, const std::vector<Expr>& indices, const Span& span) {
    if (indices.size() != 1) {
      user_error(span, "buffer '" + b->name + "' is accessed with " + std::to_string(indices.size()) +
                           " indices; the C backend needs flat buffers (run the flatten_buffer pass)");
    }
    std::string ptr = var_name(b->data.get());
    auto it = pointer_type_.find(b->data.get());
    if (it == pointer_type_.end() || it->second != b->dtype) {
      ptr = "((" + c_type(b->dtype, b->span) + "*)" + ptr + ")";
    }
    std::string index = expr(indices[0]);
    // The index of a subscript needs no outer parentheses.
    if (index.size() > 2 && index.front() == '(' && index.back() == ')' && balanced_inside(index)) {
      index = index.substr(1, index.size() - 2);
    }
    return ptr + "[" + index + "]";
  }

  static bool balanced_inside(const std::string& s) {
    int depth = 0;
    for (size_t i = 1; i + 1 < s.size(); ++i) {
      if (s[i] == '(') ++depth;
      if (s[i] == ')' && --depth < 0) return false;
    }
    return depth == 0;
  }

  std::string expr(const Expr& e) {
    switch (e->kind) {
      case ExprKind::IntImm: return int_literal(e->dtype, static_cast<const IntImmNode*>(e.get())->value);
      case ExprKind::FloatImm:
        return float_literal(e->dtype, static_cast<const FloatImmNode*>(e.get())->value, e->span);
      case ExprKind::StringImm: return c_string_literal(static_cast<const StringImmNode*>(e.get())->value);
      case ExprKind::Var: return var_name(static_cast<const VarNode*>(e.get()));
      case ExprKind::Add: return arith("+", static_cast<const BinaryNode*>(e.get()), e);
      case ExprKind::Sub: return arith("-", static_cast<const BinaryNode*>(e.get()), e);
      case ExprKind::Mul: return arith("*", static_cast<const BinaryNode*>(e.get()), e);
      case ExprKind::Div:
      case ExprKind::Mod: {
        const auto* op = static_cast<const BinaryNode*>(e.get());
        const bool is_div = e->kind == ExprKind::Div;
        DataType t = op->dtype;
        if (t.is_float()) return is_div ? binary("/", op) : call(t.bits() == 32 ? "fmodf" : "fmod", {op->a, op->b});
        if (t.is_int() && t.bits() >= 32) {
          // Only INT_MIN / -1 is undefined: plain C when the bounds exclude it.
          IntBound a = bounds_.bound(op->a), b = bounds_.bound(op->b);
          bool safe = !b.contains(-1) || a.min > type_range(t).min;
          if (!safe) return call(use_helper(is_div ? "div" : "mod", t), {op->a, op->b});
        }
        std::string plain = binary(is_div ? "/" : "%", op);
        // Narrow types compute in int: bring the result back to the type, as TIR does.
        return t.bits() < 32 ? "((" + c_type(t, op->span) + ")" + plain + ")" : plain;
      }
      case ExprKind::FloorDiv:
      case ExprKind::FloorMod: {
        const auto* op = static_cast<const BinaryNode*>(e.get());
        bool is_div = e->kind == ExprKind::FloorDiv;
        DataType t = op->dtype;
        if (t.is_float()) {
          std::string f = t.bits() == 32 ? "floorf" : "floor";
          if (is_div) return f + "(" + binary("/", op) + ")";
          std::string a = expr(op->a), b = expr(op->b);
          return "(" + a + " - " + f + "(" + a + " / " + b + ") * " + b + ")";
        }
        // Floor and truncation agree when both operands are non-negative.
        if (t.is_uint() || (bounds_.bound(op->a).non_negative() && bounds_.bound(op->b).min > 0)) {
          return binary(is_div ? "/" : "%", op);
        }
        return call(use_helper(is_div ? "floordiv" : "floormod", t), {op->a, op->b});
      }
      case ExprKind::Min:
      case ExprKind::Max: {
        const auto* op = static_cast<const BinaryNode*>(e.get());
        if (int bits = signed_clamp_bits(op); bits > 0) {
          // A clamp to the range of a signed n-bit integer: one SSAT where the CPU has it.
          const std::string name = "mtir_ssat" + std::to_string(bits);
          if (!helpers_->count(name)) (*helpers_)[name] = ssat_helper(name, bits);
          return call(name, {static_cast<const BinaryNode*>(op->a.get())->a});
        }
        return call(use_helper(e->kind == ExprKind::Min ? "min" : "max", op->dtype), {op->a, op->b});
      }
      case ExprKind::EQ: return binary("==", static_cast<const BinaryNode*>(e.get()));
      case ExprKind::NE: return binary("!=", static_cast<const BinaryNode*>(e.get()));
      case ExprKind::LT: return binary("<", static_cast<const BinaryNode*>(e.get()));
      case ExprKind::LE: return binary("<=", static_cast<const BinaryNode*>(e.get()));
      case ExprKind::GT: return binary(">", static_cast<const BinaryNode*>(e.get()));
      case ExprKind::GE: return binary(">=", static_cast<const BinaryNode*>(e.get()));
      case ExprKind::And: return binary("&&", static_cast<const BinaryNode*>(e.get()));
      case ExprKind::Or: return binary("||", static_cast<const BinaryNode*>(e.get()));
      case ExprKind::Not: return "(!" + expr(static_cast<const NotNode*>(e.get())->a) + ")";
      case ExprKind::Select: {
        const auto* op = static_cast<const SelectNode*>(e.get());
        return "(" + expr(op->condition) + " ? " + expr(op->true_value) + " : " + expr(op->false_value) + ")";
      }
      case ExprKind::Cast: {
        const auto* op = static_cast<const CastNode*>(e.get());
        if (op->dtype.is_bool()) return "(" + expr(op->value) + " != 0)";
        return "((" + c_type(op->dtype, op->span) + ")" + expr(op->value) + ")";
      }
      case ExprKind::BufferLoad: return load(static_cast<const BufferLoadNode*>(e.get()));
      case ExprKind::Call: return call_expr(static_cast<const CallNode*>(e.get()));
      case ExprKind::Ramp:
      case ExprKind::Broadcast:
      case ExprKind::Shuffle:
      case ExprKind::Let: refuse_unscalarized(e, "C", "scalar C99");
    }
    internal_error(__FILE__, __LINE__, "unhandled expression kind");
  }

  // ---- statements -----------------------------------------------------------------
  void bind_loop(const ForNode* op) {
    if (IntBound range; bounds_.loop_range(op->min, op->extent, &range)) bounds_.bind(op->loop_var.get(), range);
  }

  void emit(const Stmt& first) {
    const SourceLineScope at(&source_line_, first);
    // Buffer views nest each in the next (hundreds deep in unrolled int8 kernels): walk
    // the chain rather than recurse through it.
    const Stmt* s = &first;
    for (;;) {
      if ((*s)->span.line > 0) source_line_ = (*s)->span.line;
      if ((*s)->kind != StmtKind::DeclBuffer) break;
      const auto* view = static_cast<const DeclBufferNode*>(s->get());
      var_name(view->buffer->data.get());
      s = &view->body;
    }
    emit_stmt(*s);
  }

  void emit_stmt(const Stmt& s) {
    switch (s->kind) {
      case StmtKind::BufferStore: {
        const auto* op = static_cast<const BufferStoreNode*>(s.get());
        if (op->value->dtype.is_vector() && helium_store(op)) return line(helium_statement(op));
        std::string value = expr(op->value);
        line(access(op->buffer, op->indices, op->span) + " = " + value + ";");
        return;
      }
      case StmtKind::For: emit_for(static_cast<const ForNode*>(s.get())); return;
      case StmtKind::IfThenElse: emit_if(static_cast<const IfThenElseNode*>(s.get())); return;
      case StmtKind::LetStmt: emit_let(static_cast<const LetStmtNode*>(s.get())); return;
      case StmtKind::SeqStmt:
        for (const auto& child : static_cast<const SeqStmtNode*>(s.get())->seq) emit(child);
        return;
      case StmtKind::While: {
        const auto* op = static_cast<const WhileNode*>(s.get());
        line("while (" + expr(op->condition) + ") {");
        ++indent_;
        emit(op->body);
        --indent_;
        line("}");
        return;
      }
      case StmtKind::Evaluate: {
        const auto* op = static_cast<const EvaluateNode*>(s.get());
        if (evaluates_constant(op)) return;
        if (LoopExit e = loop_exit(s); e != LoopExit::kNone) {
          line(e == LoopExit::kBreak ? "break;" : "continue;");
          return;
        }
        if (const CallNode* call = statement_builtin(op)) {
          if (call->is(Builtin::TvmReturn)) emit_return(expr(call->args.at(0)));
          else throw_last_error(call);
          return;
        }
        // An operator call whose code is not checked (a kernel that cannot fail,
        // lower_call_tir): between the profiling hooks too.
        const std::string index = profile_begin(op->value);
        line(std::string(op->value->kind == ExprKind::Call ? "" : "(void)") + expr(op->value) + ";");
        profile_end(index);
        return;
      }
      case StmtKind::Allocate: emit_allocate(static_cast<const AllocateNode*>(s.get())); return;
      case StmtKind::AllocateConst:
      case StmtKind::BufferRealize: unlowered_statement(s, "C");
      case StmtKind::DeclBuffer: {
        // A view of memory that is already named in C: accesses use its data pointer.
        const auto* op = static_cast<const DeclBufferNode*>(s.get());
        var_name(op->buffer->data.get());
        emit(op->body);
        return;
      }
      case StmtKind::AttrStmt: {
        const auto* op = static_cast<const AttrStmtNode*>(s.get());
        line("/* attr " + op->key + " */");
        emit(op->body);
        return;
      }
      case StmtKind::AssertStmt: {
        const auto* op = static_cast<const AssertStmtNode*>(s.get());
        line("if (!" + expr(op->condition) + ") {");
        ++indent_;
        line("TVMAPISetLastError(" + c_string_literal(user_name() + ": assertion failed: " + op->message) + ");");
        emit_return("-1");
        --indent_;
        line("}");
        emit(op->body);
        return;
      }
    }
  }

  void emit_for(const ForNode* op) {
    const std::string& v = name_of(op->loop_var.get(), op->loop_var->name);
    std::string ct = c_type(op->loop_var->dtype, op->span);
    const int64_t* min = as_const_int(op->min);
    std::string begin = expr(op->min);
    std::string end = min && *min == 0 ? expr(op->extent) : expr(Binary(ExprKind::Add, op->min, op->extent));
    if (op->for_kind != ForKind::kSerial) line(std::string("/* ") + for_kind_name(op->for_kind) + " loop */");
    line("for (" + ct + " " + v + " = " + begin + "; " + v + " < " + end + "; ++" + v + ") {");
    bind_loop(op);
    ++indent_;
    emit(op->body);
    --indent_;
    bounds_.unbind(op->loop_var.get());
    line("}");
  }

  void emit_if(const IfThenElseNode* op) {
    std::string c = expr(op->condition);
    if (c.size() > 2 && c.front() == '(' && balanced_inside(c) && c.back() == ')') c = c.substr(1, c.size() - 2);
    line("if (" + c + ") {");
    ++indent_;
    emit(op->then_case);
    --indent_;
    if (op->else_case && !is_no_op(op->else_case)) {
      line("} else {");
      ++indent_;
      emit(op->else_case);
      --indent_;
    }
    line("}");
  }

  // A let: a stack alloca, a typed data pointer for the buffers viewing it, or a local.
  void emit_let(const LetStmtNode* op) {
    if (const auto* alloca = as<CallNode>(op->value); alloca && alloca->is(Builtin::TvmStackAlloca)) {
      emit_stack_alloca(op->var, alloca);
      emit(op->body);
      return;
    }
    if (op->var->dtype.is_vector() && helium_vector(op->value)) {
      // An int32x4 let scalarize_vectors kept for Helium: one Q register.
      line("mtir_v4 " + name_of(op->var.get(), op->var->name) + " = " + helium_value(op->value) + ";");
      emit(op->body);
      return;
    }
    std::string value = expr(op->value);
    auto view = views_.find(op->var.get());
    if (op->var->dtype.is_handle() && view != views_.end()) {
      // A data pointer: typed after the buffers that view it, named after the first.
      DataType t = view->second[0]->dtype;
      bool one_type = true;
      for (const auto& b : view->second) one_type = one_type && b->dtype == t;
      if (one_type) {
        std::string ct = c_type(t, op->span);
        // tir.noalias promises distinct buffers; restrict passes that on to C.
        line(ct + "* " + (noalias() ? "restrict " : "") + name_of(op->var.get(), view->second[0]->name) + " = (" +
             ct + "*)" + value + ";");
        pointer_type_[op->var.get()] = t;
        emit(op->body);
        return;
      }
    }
    const std::string index = profile_begin(op->value);
    line(c_type(op->var->dtype, op->span) + " " + name_of(op->var.get(), op->var->name) + " = " + value + ";");
    profile_end(index);
    if (op->var->dtype.is_integer()) bounds_.bind(op->var.get(), bounds_.bound(op->value));
    emit(op->body);
  }

  // Opens the profiling hooks around an operator call of the AOT main (a call of another
  // function of the module): the hook's index, or "" for any other value.
  std::string profile_begin(const Expr& value) {
    const std::string callee = module_callee(value);
    if (callee.empty()) return "";
    const std::string index = std::to_string(profile_points_++);
    (*helpers_)["TVMGEN_PROFILE"] = kProfileHooks;
    line("TVMGEN_PROFILE_BEGIN(" + index + ", \"" + callee + "\");");
    return index;
  }
  void profile_end(const std::string& index) { if (!index.empty()) line("TVMGEN_PROFILE_END(" + index + ");"); }

  // A return from inside workspace allocations first frees them, newest first, so the
  // LIFO workspace stays balanced for the next call even after an error.
  void emit_return(const std::string& value) {
    for (size_t i = live_workspace_.size(); i-- > 0;) line("(void)TVMBackendFreeWorkspace(1, 0, " + live_workspace_[i] + ");");
    line("return " + value + ";");
  }

  // tvm_stack_alloca("kind", n): an array on the C stack, named after the variable.
  void emit_stack_alloca(const Var& v, const CallNode* op) {
    const auto* kind = op->args.size() == 2 ? as<StringImmNode>(op->args[0]) : nullptr;
    const int64_t* count = op->args.size() == 2 ? as_const_int(op->args[1]) : nullptr;
    static const std::map<std::string, std::string> kTypes = {
        {"arg_value", "TVMValue"}, {"arg_tcode", "int32_t"}, {"array", "DLTensor"}, {"shape", "int64_t"}};
    if (!kind || !count || *count <= 0 || !kTypes.count(kind->value))
      user_error(op->span, "T.tvm_stack_alloca needs a kind (arg_value, arg_tcode, array, shape) and a constant count");
    line(kTypes.at(kind->value) + " " + name_of(v.get(), v->name) + "[" + std::to_string(*count) + "];");
  }

  // Constant-size "local" buffers live on the C stack; everything else comes from the
  // CRT workspace, which the application sizes and which frees in LIFO order.
  void emit_allocate(const AllocateNode* op) {
    const Buffer& b = op->buffer;
    std::string ct = c_type(b->dtype, b->span);
    const std::string& name = name_of(b->data.get(), b->name);
    pointer_type_[b->data.get()] = b->dtype;
    int64_t n = 0;
    bool constant = const_num_elements(b, &n);
    if (op->scope == "local" && constant) {
      line(ct + " " + name + "[" + std::to_string(n > 0 ? n : 1) + "];");
      // A buffer nothing reads or writes must not trip -Wunused-variable.
      line("(void)" + name + ";");
      emit(op->body);
      return;
    }
    std::string bytes;
    if (constant) {
      bytes = "(uint64_t)" + std::to_string(n * b->dtype.bytes());
    } else {
      bytes = "(uint64_t)" + std::to_string(b->dtype.bytes());
      for (const auto& d : b->shape) bytes += " * (uint64_t)" + expr(d);
    }
    int code = dl_type_code(b->dtype);
    line(ct + "* " + name + " = (" + ct + "*)TVMBackendAllocWorkspace(1, 0, " + bytes + ", " + std::to_string(code) +
         ", " + std::to_string(b->dtype.bits()) + ");");
    line("if (" + name + " == NULL) {");
    ++indent_;
    emit_return("-1");
    --indent_;
    line("}");
    live_workspace_.push_back(name);
    emit(op->body);
    live_workspace_.pop_back();
    line("if (TVMBackendFreeWorkspace(1, 0, " + name + ") != 0) {");
    ++indent_;
    emit_return("-1");
    --indent_;
    line("}");
  }

  std::string symbol_;
  PrimFunc func_;
  std::map<std::string, std::string>* helpers_;
  std::map<std::string, std::string>* externs_;
  bool* needs_stdio_;  // snprintf for messages with run-time values
 public:
  const std::set<std::string>* module_symbols_ = nullptr;  // functions defined in this file

 private:
  std::unordered_map<const VarNode*, std::string> names_;
  std::set<std::string> used_;
  std::unordered_map<const VarNode*, DataType> pointer_type_;  // declared pointee types
  std::unordered_map<const VarNode*, std::vector<Buffer>> views_;
  std::map<size_t, std::string> linked_;  // weight parameters read from linked arrays
  std::vector<std::string> live_workspace_;  // workspace allocations enclosing this point
  int profile_points_ = 0;                   // operator calls bracketed so far
  IntBoundAnalyzer bounds_;
  std::ostringstream* out_ = nullptr;
  int source_line_ = 0;  // of the statement being emitted
 public:
  bool mark_lines_ = false;
 private:
  int indent_ = 0;
};


}  // namespace

std::string c_signature(const std::string& symbol, const PrimFunc& f) {
  std::map<std::string, std::string> unused_helpers, unused_externs;
  bool unused_stdio = false;
  return FunctionEmitter(symbol, f, &unused_helpers, &unused_externs, &unused_stdio).signature();
}

std::string codegen_c(const IRModule& m, const CCodegenOptions& options) {
  std::map<std::string, std::string> helpers, externs;
  bool needs_stdio = false;
  std::ostringstream prototypes, bodies;
  std::set<std::string> module_symbols;
  for (const auto& [name, func] : m.functions) module_symbols.insert(symbol_of(name, func));
  for (const auto& [name, func] : m.functions) {
    const std::string symbol = symbol_of(name, func);
    if (!is_c_identifier(symbol) || is_reserved_c_word(symbol))
      user_error(func->span, "function '" + name + "' would be the C symbol '" + symbol +
                                 "', which C reserves; give it another name or global_symbol");
    FunctionEmitter emitter(symbol, func, &helpers, &externs, &needs_stdio);
    emitter.module_symbols_ = &module_symbols;
    emitter.mark_lines_ = options.line_map != nullptr;
    std::string signature = emitter.signature();
    if (options.defines && !options.defines(name, func)) {
      if (options.declare_others) prototypes << signature << ";\n";
      continue;
    }
    std::string body = emitter.body();
    if (!is_packed(func)) {
      prototypes << signature << ";\n";
      bodies << "\n" << signature << " {\n" << body << "}\n";
      continue;
    }
    // A packed function is a static inline body (`<symbol>_checked`), which callers in
    // this file use directly, and the exported entry point the registry holds.
    std::string inline_signature = "static inline " + signature;
    inline_signature.replace(inline_signature.find(symbol + "("), symbol.size(), symbol + "_checked");
    std::string forward;
    for (const auto& p : emitter.param_names()) forward += (forward.empty() ? "" : ", ") + p;
    prototypes << inline_signature << ";\n" << signature << ";\n";
    bodies << "\n" << inline_signature << " {\n" << body << "}\n";
    bodies << "\n" << signature << " {\n  return " << symbol << "_checked(" << forward << ");\n}\n";
  }
  std::ostringstream os;
  os << "/* Generated by microtir " << MICROTIR_VERSION << " from module \"" << m.name << "\"";
  if (!options.description.empty()) os << " (" << options.description << ")";
  os << ". Do not edit. */\n"
     << "#include <math.h>\n#include <stdbool.h>\n#include <stddef.h>\n#include <stdint.h>\n"
     << (needs_stdio ? "#include <stdio.h>\n" : "")
     << "#include <tvm/runtime/c_backend_api.h>\n#include <tvm/runtime/c_runtime_api.h>\n";
  if (helpers.count("mtir_vmladava") || helpers.count("mtir_v4")) os << kHeliumSchedulingPragma;
  if (options.dsp_no_early_scheduling && helpers.count("mtir_smlad")) {
    os << kDspSchedulingPragma;
    // A kernel in schedule smmlar_add's form (the op library marks it "mtir.smmlar_add",
    // ops/qadd_smmlar.h): one register-allocation region for the file (c_helpers.cc).
    for (const auto& [fname, f] : m.functions)
      if (f->attrs.count("mtir.smmlar_add")) {
        os << kDspOneRegionPragma;
        break;
      }
  }
  if (!helpers.empty()) {
    os << "\n";
    for (const auto& [name, def] : helpers) os << def;
  }
  if (!externs.empty()) {
    os << "\n";
    for (const auto& [name, proto] : externs) os << proto << "\n";
  }
  os << "\n" << prototypes.str() << bodies.str();
  return options.line_map ? strip_line_marks(os.str(), options.line_map) : os.str();
}

}  // namespace mtir
