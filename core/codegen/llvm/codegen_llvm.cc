#include "codegen/llvm/codegen_llvm.h"

#include <array>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>

#include "analysis/int_bound.h"
#include "codegen/emit_common.h"
#include "codegen/line_marks.h"
#include "ir/op.h"
#include "ir/visitor.h"
#include "support/names.h"

namespace mtir {
namespace {

// An SSA value or constant with its LLVM type: {"i32", "%t4"}, {"float", "0x3FF0..."}.
struct Val {
  std::string ty;
  std::string v;
  std::string typed() const { return ty + " " + v; }
};

// Register type of a TIR type; bool is i1 in registers and i8 in memory. A vector
// type is an LLVM vector of its lanes.
std::string ll_type(DataType t, const Span& span) {
  if (t.is_vector()) return "<" + std::to_string(t.lanes()) + " x " + ll_type(t.element_of(), span) + ">";
  if (t.is_bool()) return "i1";
  if (t.is_integer()) return "i" + std::to_string(t.bits());
  if (t.is_handle()) return "i8*";
  if (t.is_float() && t.bits() == 32) return "float";
  if (t.is_float() && t.bits() == 64) return "double";
  user_error(span, "the LLVM backend does not support " + t.str() + " values");
}
std::string mem_type(DataType t, const Span& span) { return t.is_bool() ? "i8" : ll_type(t, span); }
int natural_align(DataType t, int pointer_bits) {
  if (t.is_handle()) return pointer_bits / 8;
  return t.is_bool() ? 1 : t.bytes();
}

// Parameter attributes the C ABI gives narrow integers (clang marks them the same way).
std::string ext_attr(DataType t) {
  if (t.is_bool() || (t.is_uint() && t.bits() < 32)) return " zeroext";
  if (t.is_int() && t.bits() < 32) return " signext";
  return "";
}

std::string hex_double(double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%016" PRIX64, bits);
  return buf;
}

// The runtime's types. TVMValue is an 8-byte union: accessed through casts of its address.
const char* kTypes =
    "%DLDevice = type { i32, i32 }\n"
    "%DLDataType = type { i8, i8, i16 }\n"
    "%DLTensor = type { i8*, %DLDevice, i32, %DLDataType, i64*, i64*, i64 }\n"
    "%TVMValue = type { i64 }\n";

// State shared by the functions of one module: declarations, helpers, string constants.
struct ModuleState {
  const LlvmTargetInfo* target = nullptr;
  bool arm_dsp = false;                                 // an Arm CPU with the DSP extension
  std::string attr_group;                               // "#0"
  std::map<std::string, std::string> declares;          // symbol -> declare line
  std::map<std::string, std::string> helpers;           // symbol -> definition
  std::map<std::string, std::string> strings;           // value -> global name
  std::vector<std::string> globals;                     // global definitions, in order
  std::map<std::string, PrimFunc> module_functions;     // symbol -> function
  std::set<std::string> defined;                        // the module functions defined in this file
  std::vector<std::string> metadata;                    // "!N = ..." lines
  bool mark_lines = false;                              // end lines with their source line

  // A distinct loop-metadata node carrying `hint` (e.g. "llvm.loop.unroll.full").
  std::string loop_metadata(const std::string& hint) {
    std::string self = "!" + std::to_string(metadata.size());
    std::string property = "!" + std::to_string(metadata.size() + 1);
    metadata.push_back(self + " = distinct !{" + self + ", " + property + "}");
    metadata.push_back(property + " = !{!\"" + hint + "\"" +
                       (hint == "llvm.loop.vectorize.enable" ? ", i1 true" : "") + "}");
    return self;
  }

  Val string_constant(const std::string& s) {
    auto it = strings.find(s);
    std::string name;
    if (it != strings.end()) {
      name = it->second;
    } else {
      name = "@.str." + std::to_string(strings.size());
      strings[s] = name;
      globals.push_back(name + " = private unnamed_addr constant [" + std::to_string(s.size() + 1) + " x i8] " +
                        llvm_c_string(s) + ", align 1");
    }
    std::string arr = "[" + std::to_string(s.size() + 1) + " x i8]";
    return {"i8*", "getelementptr inbounds (" + arr + ", " + arr + "* " + name + ", i32 0, i32 0)"};
  }

  void declare(const std::string& symbol, const std::string& line) { declares.emplace(symbol, line); }
};

// Emits one PrimFunc: SSA values for expressions, basic blocks for control flow, allocas
// in the entry block. TIR variables map to the SSA values bound to them.
class FunctionEmitter {
 public:
  FunctionEmitter(ModuleState* ms, std::string symbol, PrimFunc func)
      : ms_(ms), symbol_(std::move(symbol)), func_(std::move(func)) {}

  // "define ... { ... }" under `name` with `linkage` ("" or "internal ").
  std::string define(const std::string& name, const std::string& linkage) {
    std::string params = signature_params(true);
    std::ostringstream body;
    out_ = &body;
    begin_block("body.start");
    emit(func_->body);
    inst("ret i32 0");
    std::ostringstream os;
    os << "define " << linkage << "i32 @" << name << "(" << params << ") " << ms_->attr_group << " {\nentry:\n"
       << entry_.str() << "  br label %body.start\n"
       << body.str() << "}\n";
    return os.str();
  }

  // The parameter list, with names (for a definition) or without (a declaration).
  std::string signature_params(bool with_names) {
    std::string out;
    for (size_t i = 0; i < func_->params.size(); ++i) {
      const Var& p = func_->params[i];
      const Buffer& b = func_->param_buffers[i];
      const bool noalias = noalias_param(func_, static_cast<int>(i));
      std::string ty = b ? "i8*" : ll_type(p->dtype, p->span);
      std::string attrs = b ? "" : ext_attr(p->dtype);
      if (b || p->dtype.is_handle()) {
        if (noalias && !is_packed(func_)) attrs += " noalias";
        int align = declared_align(p, b);
        if (align > 1) attrs += " align " + std::to_string(align);
      }
      out += (i ? ", " : "") + ty + attrs;
      if (with_names) {
        std::string n = local_name("p." + p->name);
        vars_[p.get()] = {ty, n};
        if (b && b->data && b->data.get() != p.get()) vars_[b->data.get()] = {ty, n};
        out += " " + n;
      }
    }
    return out;
  }

 private:
  // The alignment promised for pointer parameter `p` beyond its element's: the buffer's
  // own, or the smallest of the views declared on it (T.decl_buffer(..., align=N)).
  int declared_align(const Var& p, const Buffer& b) const {
    auto beyond_natural = [&](const Buffer& v) {
      return v->align > natural_align(v->dtype, ms_->target->pointer_bits) ? v->align : 0;
    };
    if (b) return beyond_natural(b);
    struct Finder : Visitor {
      const VarNode* var;
      std::vector<Buffer> views;
      void visit_DeclBuffer(const DeclBufferNode* op) override {
        if (op->buffer && op->buffer->data.get() == var) views.push_back(op->buffer);
        Visitor::visit_DeclBuffer(op);
      }
    } finder;
    finder.var = p.get();
    finder.visit(func_->body);
    int align = 0;
    for (size_t i = 0; i < finder.views.size(); ++i) {
      int a = beyond_natural(finder.views[i]);
      align = i == 0 ? a : std::min(align, a);
    }
    return align;
  }

  // ---- names and blocks ---------------------------------------------------------
  std::string local_name(const std::string& hint) {
    return unique_name("%" + sanitized_name(hint, /*keep_dots=*/true), '.', &used_);
  }
  std::string tmp() { return "%.t" + std::to_string(next_tmp_++); }
  std::string label(const std::string& hint) { return hint + "." + std::to_string(next_label_++); }
  void inst(const std::string& s) { *out_ << "  " << s << line_mark(ms_->mark_lines, source_line_) << "\n"; }
  Val op(const std::string& ty, const std::string& text) {
    std::string r = tmp();
    inst(r + " = " + text);
    return {ty, r};
  }
  void begin_block(const std::string& l) {
    *out_ << l << ":\n";
    block_ = l;
  }
  void br(const std::string& l) { inst("br label %" + l); }
  void cond_br(const Val& c, const std::string& t, const std::string& f) {
    inst("br i1 " + c.v + ", label %" + t + ", label %" + f);
  }
  // An alloca in the entry block, so it is allocated once however often its code runs.
  std::string entry_alloca(const std::string& ty, int64_t count, int align, const std::string& hint) {
    std::string name = local_name(hint);
    entry_ << "  " << name << " = alloca " << ty << (count != 1 ? ", i32 " + std::to_string(count) : "") << ", align "
           << align << "\n";
    return name;
  }

  std::string user_name() const { return user_function_name(func_, symbol_); }

  // ---- conversions ----------------------------------------------------------------
  Val cast(const Val& v, DataType from, DataType to, const Span& span) {
    std::string tt = ll_type(to, span);
    if (to.is_bool()) {
      if (from.is_bool()) return v;
      if (from.is_float()) return op("i1", "fcmp une " + v.typed() + ", 0.0");
      if (from.is_handle()) return op("i1", "icmp ne " + v.typed() + ", null");
      return op("i1", "icmp ne " + v.typed() + ", 0");
    }
    if (from.is_handle() || to.is_handle()) {
      if (from.is_handle() && to.is_handle()) return v;
      user_error(span, "the LLVM backend cannot cast " + from.str() + " to " + to.str());
    }
    if (v.ty == tt) return {tt, v.v};  // int32 <-> uint32: the same bits
    if (from.is_float() && to.is_float()) return op(tt, std::string(to.bits() > from.bits() ? "fpext " : "fptrunc ") + v.typed() + " to " + tt);
    if (from.is_float()) return op(tt, std::string(to.is_uint() ? "fptoui " : "fptosi ") + v.typed() + " to " + tt);
    bool from_signed = from.is_int();
    if (to.is_float()) return op(tt, std::string(from_signed ? "sitofp " : "uitofp ") + v.typed() + " to " + tt);
    int fb = from.is_bool() ? 1 : from.bits();
    if (to.bits() < fb) return op(tt, "trunc " + v.typed() + " to " + tt);
    return op(tt, std::string(from_signed ? "sext " : "zext ") + v.typed() + " to " + tt);
  }
  // An integer value of any width as `ty` (sign-extending signed types).
  Val as_int(const Val& v, DataType from, const std::string& ty) {
    if (v.ty == ty) return v;
    int fb = from.is_bool() ? 1 : from.bits();
    int tb = std::stoi(ty.substr(1));
    if (tb < fb) return op(ty, "trunc " + v.typed() + " to " + ty);
    return op(ty, std::string(from.is_int() ? "sext " : "zext ") + v.typed() + " to " + ty);
  }

  // ---- memory -----------------------------------------------------------------------
  Val handle(const Buffer& b, const Span& span) {
    auto it = vars_.find(b->data.get());
    if (it == vars_.end()) user_error(span, "buffer '" + b->name + "' has no data pointer where LLVM code uses it");
    return it->second;
  }
  Val elem_ptr(const Buffer& b, const std::vector<Expr>& indices, const Span& span) {
    if (indices.size() != 1) {
      user_error(span, "buffer '" + b->name + "' is accessed with " + std::to_string(indices.size()) +
                           " indices; the LLVM backend needs flat buffers (run the flatten_buffer pass)");
    }
    std::string mt = mem_type(b->dtype, b->span);
    Val base = handle(b, span);
    Val index = expr(indices[0]);
    // Unsigned indices would be sign-extended by getelementptr.
    if (indices[0]->dtype.is_uint() || indices[0]->dtype.is_bool()) index = as_int(index, indices[0]->dtype, "i64");
    Val typed = op(mt + "*", "bitcast " + base.typed() + " to " + mt + "*");
    return op(mt + "*", "getelementptr inbounds " + mt + ", " + typed.typed() + ", " + index.typed());
  }
  Val load(const BufferLoadNode* l) {
    if (l->dtype.is_vector()) return vector_load(l);
    Val p = elem_ptr(l->buffer, l->indices, l->span);
    DataType t = l->buffer->dtype;
    std::string mt = mem_type(t, l->span);
    Val v = op(mt, "load " + mt + ", " + p.typed() + ", align " + std::to_string(natural_align(t, ms_->target->pointer_bits)));
    if (t.is_bool()) return op("i1", "icmp ne i8 " + v.v + ", 0");
    if (l->dtype != t) return cast(v, t, l->dtype, l->span);
    return v;
  }
  void store(const BufferStoreNode* s) {
    if (s->value->dtype.is_vector()) return vector_store(s);
    DataType t = s->buffer->dtype;
    Val v = expr(s->value);
    if (s->value->dtype != t) v = cast(v, s->value->dtype, t, s->span);
    if (t.is_bool()) v = op("i8", "zext " + v.typed() + " to i8");
    Val p = elem_ptr(s->buffer, s->indices, s->span);
    inst("store " + v.typed() + ", " + p.typed() + ", align " + std::to_string(natural_align(t, ms_->target->pointer_bits)));
  }

  // A field of a DLTensor given as i8*.
  Val tensor_field(const Val& t, const std::string& path, const std::string& ty) {
    Val s = op("%DLTensor*", "bitcast " + t.typed() + " to %DLTensor*");
    return op(ty + "*", "getelementptr inbounds %DLTensor, " + s.typed() + ", i32 0, " + path);
  }
  Val load_ty(const std::string& ty, const Val& p, int align) {
    return op(ty, "load " + ty + ", " + p.typed() + ", align " + std::to_string(align));
  }
  // Element `i` of an array of `ty` at handle `base`.
  Val array_elem(const Val& base, const std::string& ty, const Val& i) {
    Val typed = op(ty + "*", "bitcast " + base.typed() + " to " + ty + "*");
    return op(ty + "*", "getelementptr inbounds " + ty + ", " + typed.typed() + ", " + i.typed());
  }
  // The member of type `ty` of TVMValue `i` of the array at `base`.
  Val value_member(const Val& base, const Val& i, const std::string& ty) {
    Val slot = array_elem(base, "%TVMValue", i);
    return op(ty + "*", "bitcast " + slot.typed() + " to " + ty + "*");
  }

  // ---- expressions ------------------------------------------------------------------
  Val int_const(DataType t, int64_t v) {
    if (t.is_bool()) return {"i1", v ? "true" : "false"};
    // Print the value sign-extended from the type's width; LLVM reads the bits.
    int bits = t.bits();
    int64_t s = bits >= 64 ? v : static_cast<int64_t>(static_cast<uint64_t>(v) << (64 - bits)) >> (64 - bits);
    return {ll_type(t, {}), std::to_string(s)};
  }
  Val float_const(DataType t, double v, const Span& span) {
    std::string ty = ll_type(t, span);
    // The interpreter holds a float32 constant rounded to float32; LLVM wants that
    // value written as the double with the same value.
    if (t.bits() == 32) v = static_cast<double>(static_cast<float>(v));
    return {ty, hex_double(v)};
  }

  Val binary(const char* int_op, const char* float_op, const BinaryNode* e) {
    Val a = expr(e->a), b = expr(e->b);
    return op(a.ty, std::string(e->dtype.is_float() ? float_op : int_op) + " " + a.typed() + ", " + b.v);
  }
  // + - * wrap in TIR; where the integer bounds prove they cannot, nsw/nuw tell LLVM so
  // (as plain signed arithmetic tells a C compiler), which lets it widen indices.
  Val arith(const char* int_op, const char* float_op, const Expr& self) {
    const auto* e = static_cast<const BinaryNode*>(self.get());
    if (e->dtype.is_float() || e->dtype.is_bool() || !bounds_.no_overflow(self)) return binary(int_op, float_op, e);
    std::string flagged = std::string(int_op) + (e->dtype.is_int() ? " nsw" : " nuw");
    return binary(flagged.c_str(), float_op, e);
  }

  Val compare(ExprKind k, const BinaryNode* e) {
    Val a = expr(e->a), b = expr(e->b);
    DataType t = e->a->dtype;
    static const std::map<ExprKind, std::array<const char*, 3>> preds = {
        {ExprKind::EQ, {"oeq", "eq", "eq"}},   {ExprKind::NE, {"une", "ne", "ne"}},
        {ExprKind::LT, {"olt", "slt", "ult"}}, {ExprKind::LE, {"ole", "sle", "ule"}},
        {ExprKind::GT, {"ogt", "sgt", "ugt"}}, {ExprKind::GE, {"oge", "sge", "uge"}}};
    const auto& p = preds.at(k);
    const std::string bt = ll_type(e->dtype, e->span);  // i1, or <n x i1> for vectors
    if (t.is_float()) return op(bt, std::string("fcmp ") + p[0] + " " + a.typed() + ", " + b.v);
    return op(bt, std::string("icmp ") + (t.is_int() ? p[1] : p[2]) + " " + a.typed() + ", " + b.v);
  }

  // Integer / % floordiv floormod with no undefined case: a zero divisor (which the
  // interpreter refuses) divides by 1 instead, and MIN / -1 wraps to MIN as in C's
  // helpers. Guards are left out where the bounds prove them unnecessary.
  Val int_division(ExprKind k, const BinaryNode* e) {
    DataType t = e->dtype;
    const bool is_signed = t.is_int();
    IntBound ba = bounds_.bound(e->a), bb = bounds_.bound(e->b);
    Val a = expr(e->a), b = expr(e->b);
    const std::string ty = a.ty;
    const bool floor = k == ExprKind::FloorDiv || k == ExprKind::FloorMod;
    const bool div = k == ExprKind::Div || k == ExprKind::FloorDiv;
    const bool zero_guard = bb.contains(0);
    const bool neg_guard = is_signed && bb.contains(-1) && ba.min <= type_range(t).min;
    Val d = b;
    Val is_neg1;
    if (zero_guard || neg_guard) {
      Val bad = zero_guard ? op("i1", "icmp eq " + b.typed() + ", 0") : Val{};
      if (neg_guard) {
        is_neg1 = op("i1", "icmp eq " + b.typed() + ", -1");
        bad = zero_guard ? op("i1", "or i1 " + bad.v + ", " + is_neg1.v) : is_neg1;
      }
      d = op(ty, "select i1 " + bad.v + ", " + ty + " 1, " + b.typed());
    }
    if (!is_signed) return op(ty, std::string(div ? "udiv " : "urem ") + a.typed() + ", " + d.v);
    Val r;
    if (floor && !(ba.non_negative() && bb.min > 0)) {
      Val q = op(ty, "sdiv " + a.typed() + ", " + d.v);
      Val rem = op(ty, "srem " + a.typed() + ", " + d.v);
      // Truncation rounds toward zero; step down when the remainder's sign differs from b's.
      Val nz = op("i1", "icmp ne " + rem.typed() + ", 0");
      Val rneg = op("i1", "icmp slt " + rem.typed() + ", 0");
      Val bneg = op("i1", "icmp slt " + b.typed() + ", 0");
      Val differ = op("i1", "xor i1 " + rneg.v + ", " + bneg.v);
      Val adjust = op("i1", "and i1 " + nz.v + ", " + differ.v);
      if (div) {
        Val one = op(ty, "zext i1 " + adjust.v + " to " + ty);
        r = op(ty, "sub " + q.typed() + ", " + one.v);
      } else {
        Val add = op(ty, "select i1 " + adjust.v + ", " + b.typed() + ", " + ty + " 0");
        r = op(ty, "add " + rem.typed() + ", " + add.v);
      }
    } else {
      r = op(ty, std::string(div ? "sdiv " : "srem ") + a.typed() + ", " + d.v);
    }
    if (neg_guard) {
      Val special = div ? op(ty, "sub " + ty + " 0, " + a.v) : Val{ty, "0"};
      r = op(ty, "select i1 " + is_neg1.v + ", " + special.typed() + ", " + r.typed());
    }
    return r;
  }

  Val intrinsic(const std::string& name, const std::string& ty, const std::vector<Val>& args) {
    std::string decl = "declare " + ty + " @" + name + "(";
    std::string call = "call " + ty + " @" + name + "(";
    for (size_t i = 0; i < args.size(); ++i) {
      decl += (i ? ", " : "") + args[i].ty;
      call += (i ? ", " : "") + args[i].typed();
    }
    ms_->declare(name, decl + ")");
    return op(ty, call + ")");
  }

  Val math_call(const CallNode* c) {
    DataType t = c->dtype;
    const bool is_abs = c->is(Builtin::Abs);
    if (is_abs && t.is_integer()) {
      Val a = expr(c->args.at(0));
      if (t.is_uint()) return a;
      Val neg = op(a.ty, "sub " + a.ty + " 0, " + a.v);  // wraps MIN to MIN, like the interpreter
      Val lt = op("i1", "icmp slt " + a.typed() + ", 0");
      return op(a.ty, "select i1 " + lt.v + ", " + neg.typed() + ", " + a.typed());
    }
    if (!t.is_float()) user_error(c->span, "intrinsic '" + c->op + "' needs a float argument, not " + t.str());
    std::string ty = ll_type(t, c->span);
    std::string suffix = t.bits() == 32 ? ".f32" : ".f64";
    std::vector<Val> args;
    for (const auto& a : c->args) args.push_back(expr(a));
    if (c->is(Builtin::Sigmoid)) {
      Val neg = op(ty, "fneg " + args[0].typed());
      Val e = intrinsic("llvm.exp" + suffix, ty, {neg});
      Val one = {ty, hex_double(1.0)};
      Val den = op(ty, "fadd " + one.typed() + ", " + e.v);
      return op(ty, "fdiv " + one.typed() + ", " + den.v);
    }
    // libm has these; LLVM has no intrinsic for them.
    if (c->is(Builtin::Tanh) || c->is(Builtin::Erf)) return intrinsic(c->op + (t.bits() == 32 ? "f" : ""), ty, args);
    std::string name = is_abs ? "fabs" : c->op;
    return intrinsic("llvm." + name + suffix, ty, args);
  }

  // `(int32)(q >> 32) >> 31` on Cortex-M: the sign of a 64-bit value's high word (the
  // requantization's rounding correction). LLVM folds it into a 64-bit compare of q (of
  // the product, before the rounding term is added), which Thumb does with SUBS/SBCS and
  // the product computed twice; `freeze` on the high word stops that fold, so the sign
  // stays one ASR of a register, as GCC emits it (KWS: 3 to 4 instructions per output).
  bool is_sign_of_high_word(const CallNode* c) const {
    const int64_t* amount = as_const_int(c->args[1]);
    const auto* cast = as<CastNode>(c->args[0]);
    return ms_->target->triple.rfind("thumb", 0) == 0 && c->dtype == DataType::Int(32) && amount && *amount == 31 &&
           cast && cast->value->dtype == DataType::Int(64);
  }

  // Shifts and bitwise operators in the operands' type. A non-constant shift amount is
  // masked into [0, bits) (LLVM makes a larger one poison; the interpreter refuses it).
  Val int_binary(const CallNode* c) {
    DataType t = c->dtype;
    if (!t.is_integer()) user_error(c->span, "intrinsic '" + c->op + "' needs integer operands, not " + t.str());
    Val a = expr(c->args.at(0)), b = expr(c->args.at(1));
    if (c->is(Builtin::BitwiseAnd)) return op(a.ty, "and " + a.typed() + ", " + b.v);
    if (c->is(Builtin::BitwiseOr)) return op(a.ty, "or " + a.typed() + ", " + b.v);
    if (c->is(Builtin::BitwiseXor)) return op(a.ty, "xor " + a.typed() + ", " + b.v);
    if (!as_const_int(c->args[1])) b = op(b.ty, "and " + b.typed() + ", " + std::to_string(t.bits() - 1));
    if (c->is(Builtin::ShiftRight) && is_sign_of_high_word(c)) a = op(a.ty, "freeze " + a.typed());
    const char* inst = c->is(Builtin::ShiftLeft) ? "shl " : t.is_int() ? "ashr " : "lshr ";
    return op(a.ty, inst + a.typed() + ", " + b.v);
  }

  Val extern_call(const CallNode* c) {
    const auto* sym = c->args.empty() ? nullptr : as<StringImmNode>(c->args[0]);
    if (!sym) user_error(c->span, "call_extern needs a symbol name");
    std::string ret = c->dtype.is_void() ? "void" : ll_type(c->dtype, c->span);
    std::vector<Val> args;
    std::vector<DataType> types;
    for (size_t i = 1; i < c->args.size(); ++i) {
      args.push_back(expr(c->args[i]));
      types.push_back(c->args[i]->dtype);
    }
    auto callee = ms_->module_functions.find(sym->value);
    if (callee != ms_->module_functions.end()) {
      // A function of this module: pass scalars in its parameters' types.
      const PrimFunc& f = callee->second;
      if (f->params.size() != args.size())
        user_error(c->span, "'" + sym->value + "' takes " + std::to_string(f->params.size()) + " arguments");
      for (size_t i = 0; i < args.size(); ++i) {
        const Var& p = f->params[i];
        if (!f->param_buffers[i] && p->dtype != types[i]) {
          args[i] = cast(args[i], types[i], p->dtype, c->span);
          types[i] = p->dtype;
        }
      }
    }
    std::string decl = "declare " + ret + " @" + sym->value + "(";
    std::string call = "call " + ret + " @" + sym->value + "(";
    for (size_t i = 0; i < args.size(); ++i) {
      decl += (i ? ", " : "") + args[i].ty + ext_attr(types[i]);
      call += (i ? ", " : "") + args[i].ty + ext_attr(types[i]) + " " + args[i].v;
    }
    decl += ")";
    call += ")";
    if (callee == ms_->module_functions.end() || !ms_->defined.count(sym->value)) {
      auto [it, inserted] = ms_->declares.emplace(sym->value, decl);
      if (!inserted && it->second != decl) {
        user_error(c->span, "external function '" + sym->value + "' is called with two different signatures",
                   {"first: " + it->second, "here: " + decl});
      }
    }
    if (ret == "void") {
      inst(call);
      return {"i32", "0"};
    }
    return op(ret, call);
  }

  // Lazy forms: only the branch that is taken is evaluated (a && b guards b's loads).
  Val short_circuit(bool is_and, const Expr& ea, const Expr& eb) {
    Val a = expr(ea);
    std::string from = block_, rhs = label(is_and ? "and.rhs" : "or.rhs"), end = label(is_and ? "and.end" : "or.end");
    if (is_and) cond_br(a, rhs, end);
    else cond_br(a, end, rhs);
    begin_block(rhs);
    Val b = expr(eb);
    std::string from_b = block_;
    br(end);
    begin_block(end);
    return op("i1", std::string("phi i1 [ ") + (is_and ? "false" : "true") + ", %" + from + " ], [ " + b.v + ", %" +
                        from_b + " ]");
  }
  Val if_then_else(const CallNode* c) {
    Val cond = expr(c->args.at(0));
    std::string t = label("ite.then"), f = label("ite.else"), end = label("ite.end");
    cond_br(cond, t, f);
    begin_block(t);
    Val tv = expr(c->args.at(1));
    std::string from_t = block_;
    br(end);
    begin_block(f);
    Val fv = expr(c->args.at(2));
    std::string from_f = block_;
    br(end);
    begin_block(end);
    return op(tv.ty, "phi " + tv.ty + " [ " + tv.v + ", %" + from_t + " ], [ " + fv.v + ", %" + from_f + " ]");
  }

  // Every builtin of ir/builtins.def, by a switch without a default: a new row does not
  // compile until it has its case here.
  Val call_expr(const CallNode* c) {
    if (!c->builtin) user_error(c->span, "unknown intrinsic '" + c->op + "'");
    auto arg = [&](size_t i) { return expr(c->args.at(i)); };
    auto arg_as = [&](size_t i, const std::string& ty) { return as_int(arg(i), c->args.at(i)->dtype, ty); };
    const int pa = ms_->target->pointer_bits / 8;
    const Builtin b = *c->builtin;
    switch (b) {
      case Builtin::Exp:
      case Builtin::Log:
      case Builtin::Log2:
      case Builtin::Sqrt:
      case Builtin::Tanh:
      case Builtin::Sigmoid:
      case Builtin::Sin:
      case Builtin::Cos:
      case Builtin::Floor:
      case Builtin::Ceil:
      case Builtin::Round:
      case Builtin::Erf:
      case Builtin::Abs:
      case Builtin::Pow: return math_call(c);
      case Builtin::ShiftRight:
      case Builtin::ShiftLeft:
      case Builtin::BitwiseAnd:
      case Builtin::BitwiseOr:
      case Builtin::BitwiseXor: return int_binary(c);
      case Builtin::IfThenElse: return if_then_else(c);
      case Builtin::CallExtern: return extern_call(c);
      case Builtin::TvmArgTypeCode: return load_ty("i32", array_elem(arg(0), "i32", arg(1)), 4);
      case Builtin::TvmArgHandle: return load_ty("i8*", value_member(arg(0), arg(1), "i8*"), 8);
      case Builtin::TvmArgInt: return load_ty("i64", value_member(arg(0), arg(1), "i64"), 8);
      case Builtin::TvmArgFloat: return load_ty("double", value_member(arg(0), arg(1), "double"), 8);
      case Builtin::TvmTensorData: return load_ty("i8*", tensor_field(arg(0), "i32 0", "i8*"), pa);
      case Builtin::TvmTensorNdim: return load_ty("i32", tensor_field(arg(0), "i32 2", "i32"), 4);
      case Builtin::TvmTensorShape:
      case Builtin::TvmTensorStride: {
        Val t = arg(0), i = arg(1);
        Val array = load_ty("i64*", tensor_field(t, b == Builtin::TvmTensorShape ? "i32 4" : "i32 5", "i64*"), pa);
        Val p = op("i64*", "getelementptr inbounds i64, " + array.typed() + ", " + i.typed());
        return load_ty("i64", p, 8);
      }
      case Builtin::TvmTensorStridesIsNull: {
        Val s = load_ty("i64*", tensor_field(arg(0), "i32 5", "i64*"), pa);
        return op("i1", "icmp eq " + s.typed() + ", null");
      }
      case Builtin::TvmTensorDtypeCode:
      case Builtin::TvmTensorDtypeBits: {
        const char* path = b == Builtin::TvmTensorDtypeCode ? "i32 3, i32 0" : "i32 3, i32 1";
        Val f = load_ty("i8", tensor_field(arg(0), path, "i8"), 1);
        return op("i32", "zext " + f.typed() + " to i32");
      }
      case Builtin::TvmTensorDtypeLanes: {
        Val f = load_ty("i16", tensor_field(arg(0), "i32 3, i32 2", "i16"), 2);
        return op("i32", "zext " + f.typed() + " to i32");
      }
      case Builtin::TvmTensorByteOffset: return load_ty("i64", tensor_field(arg(0), "i32 6", "i64"), 8);
      case Builtin::TvmTensorDeviceType: return load_ty("i32", tensor_field(arg(0), "i32 1, i32 0", "i32"), 4);
      case Builtin::TvmHandleIsNull: return op("i1", "icmp eq " + arg(0).typed() + ", null");
      case Builtin::TvmHandleIsAligned: return handle_is_aligned(c);
      case Builtin::TvmThrowLastError:
      case Builtin::TvmReturn: refuse_statement_builtin(c, "LLVM");
      case Builtin::TvmCallPacked:
      case Builtin::TvmMakeTensor:
      case Builtin::CallTir:
      case Builtin::TirRegion: refuse_builtin(c, "LLVM", "");
      case Builtin::TvmStackAlloca:
        refuse_builtin(c, "LLVM", "it declares a stack array, so it can only be the value of a let (x = T.tvm_stack_alloca(...))");
      case Builtin::TvmSetArgHandle:
      case Builtin::TvmSetArgInt:
      case Builtin::TvmSetArgFloat: {
        Val base = arg(0), i = arg(1);
        Val v = arg(2);
        std::string ty = b == Builtin::TvmSetArgHandle ? "i8*" : b == Builtin::TvmSetArgInt ? "i64" : "double";
        if (ty == "i64") v = as_int(v, c->args[2]->dtype, "i64");
        if (ty == "double" && v.ty != "double") v = cast(v, c->args[2]->dtype, DataType::Float(64), c->span);
        Val p = value_member(base, i, ty);
        inst("store " + v.typed() + ", " + p.typed() + ", align 8");
        return {"i32", "0"};
      }
      case Builtin::TvmSetTypeCode:
      case Builtin::TvmSetShape: {
        std::string ty = b == Builtin::TvmSetTypeCode ? "i32" : "i64";
        Val base = arg(0), i = arg(1), v = arg_as(2, ty);
        Val p = array_elem(base, ty, i);
        inst("store " + v.typed() + ", " + p.typed() + ", align " + (ty == "i32" ? "4" : "8"));
        return {"i32", "0"};
      }
      case Builtin::TvmTensorInit: return tensor_init(c);
      case Builtin::TvmCallPackedLowered: return call_packed(c);
      case Builtin::AddressOf: {
        const auto* l = c->args.size() == 1 ? as<BufferLoadNode>(c->args[0]) : nullptr;
        if (!l) user_error(c->span, "T.address_of takes one buffer element, such as A[i]");
        Val p = elem_ptr(l->buffer, l->indices, l->span);
        return op("i8*", "bitcast " + p.typed() + " to i8*");
      }
      case Builtin::Smlad: {
        Val a = arg(0), bv = arg(1), acc = arg(2);
        // LLVM 14's ARM backend turns the generic form below into SMLABB + SMLATT, two
        // instructions for one SMLAD: on DSP cores, its intrinsic.
        if (ms_->arm_dsp) return intrinsic("llvm.arm.smlad", "i32", {a, bv, acc});
        // Sign-extended halves, two products, wrapping adds.
        auto lo = [&](const Val& v) { return op("i32", "sext i16 " + op("i16", "trunc i32 " + v.v + " to i16").v + " to i32"); };
        auto hi = [&](const Val& v) { return op("i32", "ashr i32 " + v.v + ", 16"); };
        Val p0 = op("i32", "mul i32 " + lo(a).v + ", " + lo(bv).v);
        Val p1 = op("i32", "mul i32 " + hi(a).v + ", " + hi(bv).v);
        return op("i32", "add i32 " + op("i32", "add i32 " + acc.v + ", " + p0.v).v + ", " + p1.v);
      }
      case Builtin::Smlabb: {
        Val a = arg(0), bv = arg(1), acc = arg(2);
        if (ms_->arm_dsp) return intrinsic("llvm.arm.smlabb", "i32", {a, bv, acc});
        auto lo = [&](const Val& v) { return op("i32", "sext i16 " + op("i16", "trunc i32 " + v.v + " to i16").v + " to i32"); };
        return op("i32", "add i32 " + acc.v + ", " + op("i32", "mul i32 " + lo(a).v + ", " + lo(bv).v).v);
      }
      case Builtin::Smmlar: {
        auto wide = [&](const Val& v) { return op("i64", "sext i32 " + v.v + " to i64"); };
        Val p = op("i64", "mul i64 " + wide(arg(0)).v + ", " + wide(arg(1)).v);
        Val hi = op("i64", "shl i64 " + op("i64", "zext i32 " + arg(2).v + " to i64").v + ", 32");
        Val sum = op("i64", "add i64 " + op("i64", "add i64 " + hi.v + ", " + p.v).v + ", 2147483648");
        return op("i32", "trunc i64 " + op("i64", "lshr i64 " + sum.v + ", 32").v + " to i32");
      }
      case Builtin::Sxtb16:
      case Builtin::Sxtb16Ror8: return sxtb16(arg(0), b == Builtin::Sxtb16Ror8);
      case Builtin::Clz: {
        Val x = arg(0);
        Val r = intrinsic("llvm.ctlz." + x.ty, x.ty, {x, {"i1", "false"}});
        return x.ty == "i32" ? r : op("i32", "trunc " + r.typed() + " to i32");
      }
      case Builtin::Reinterpret: {
        Val x = arg(0);
        std::string to = ll_type(c->dtype, c->span);
        return x.ty == to ? x : op(to, "bitcast " + x.typed() + " to " + to);
      }
    }
    internal_error(__FILE__, __LINE__, "unhandled builtin");
  }

  Val handle_is_aligned(const CallNode* c) {
    const std::string st = ms_->target->size_type();
    Val p = expr(c->args.at(0));
    Val addr = op(st, "ptrtoint " + p.typed() + " to " + st);
    const int64_t* k = as_const_int(c->args.at(1));
    Val m;
    if (k && *k > 0) {
      m = op(st, "urem " + addr.typed() + ", " + std::to_string(*k));
    } else {
      Val a = as_int(expr(c->args.at(1)), c->args.at(1)->dtype, st);
      Val zero = op("i1", "icmp eq " + a.typed() + ", 0");
      Val d = op(st, "select i1 " + zero.v + ", " + st + " 1, " + a.typed());
      m = op(st, "urem " + addr.typed() + ", " + d.v);
    }
    return op("i1", "icmp eq " + m.typed() + ", 0");
  }

  Val tensor_init(const CallNode* c) {
    const int pa = ms_->target->pointer_bits / 8;
    auto arg = [&](size_t i) { return expr(c->args.at(i)); };
    auto arg_as = [&](size_t i, const std::string& ty) { return as_int(arg(i), c->args.at(i)->dtype, ty); };
    Val t = arg(0), data = arg(1), shape = arg(2), ndim = arg_as(3, "i32"), code = arg_as(4, "i8"), bits = arg_as(5, "i8");
    auto put = [&](const std::string& path, const Val& v, int align) {
      inst("store " + v.typed() + ", " + tensor_field(t, path, v.ty).typed() + ", align " + std::to_string(align));
    };
    put("i32 0", data, pa);
    put("i32 1, i32 0", {"i32", "1"}, 4);  // kDLCPU
    put("i32 1, i32 1", {"i32", "0"}, 4);
    put("i32 2", ndim, 4);
    put("i32 3, i32 0", code, 1);
    put("i32 3, i32 1", bits, 1);
    put("i32 3, i32 2", {"i16", "1"}, 2);
    put("i32 4", op("i64*", "bitcast " + shape.typed() + " to i64*"), pa);
    put("i32 5", {"i64*", "null"}, pa);
    put("i32 6", {"i64", "0"}, 8);
    return {"i32", "0"};
  }

  Val sxtb16(Val x, bool ror8) {
    if (ms_->arm_dsp) {
      // ARM's backend does not form SXTB16 from shifts and masks: its intrinsic, with
      // the rotate folded into the instruction's ROR operand.
      if (ror8) x = intrinsic("llvm.fshr.i32", "i32", {x, x, {"i32", "8"}});
      return intrinsic("llvm.arm.sxtb16", "i32", {x});
    }
    // Elsewhere: two bytes sign-extended into the halves.
    if (ror8) x = op("i32", "lshr i32 " + x.v + ", 8");
    auto byte = [&](int k) {
      Val shifted = k ? op("i32", "lshr i32 " + x.v + ", " + std::to_string(8 * k)) : x;
      Val b = op("i8", "trunc i32 " + shifted.v + " to i8");
      return op("i32", "zext i16 " + op("i16", "sext i8 " + b.v + " to i16").v + " to i32");
    };
    Val hi = op("i32", "shl i32 " + byte(2).v + ", 16");
    return op("i32", "or i32 " + byte(0).v + ", " + hi.v);
  }

  // A packed function of this module is called directly (LLVM may inline its checks);
  // any other is looked up in the system library's registry.
  Val call_packed(const CallNode* c) {
    const auto* callee = as<StringImmNode>(c->args.at(0));
    if (!callee) user_error(c->span, "T.tvm_call_packed_lowered needs the function name first");
    Val values = expr(c->args.at(1)), codes = expr(c->args.at(2)), n = as_int(expr(c->args.at(3)), c->args[3]->dtype, "i32");
    auto f = ms_->module_functions.find(callee->value);
    if (f != ms_->module_functions.end() && is_packed(f->second)) {
      if (ret_value_.empty()) {
        ret_value_ = entry_alloca("%TVMValue", 1, 8, "ret.value");
        ret_code_ = entry_alloca("i32", 1, 4, "ret.code");
      }
      Val rv = op("i8*", "bitcast %TVMValue* " + ret_value_ + " to i8*");
      Val rc = op("i8*", "bitcast i32* " + ret_code_ + " to i8*");
      return op("i32", "call i32 @" + callee->value + "_checked(" + values.typed() + ", " + codes.typed() + ", " +
                           n.typed() + ", " + rv.typed() + ", " + rc.typed() + ", i8* null)");
    }
    use_call_by_name_helper();
    Val name = ms_->string_constant(callee->value);
    return op("i32", "call i32 @mtir_call_packed_by_name(" + name.typed() + ", " + values.typed() + ", " +
                         codes.typed() + ", " + n.typed() + ")");
  }

  void use_call_by_name_helper() {
    ms_->declare("TVMFuncGetGlobal", "declare i32 @TVMFuncGetGlobal(i8*, i8**)");
    ms_->declare("TVMFuncCall", "declare i32 @TVMFuncCall(i8*, i8*, i8*, i32, i8*, i8*)");
    ms_->helpers.emplace("mtir_call_packed_by_name",
                         "define internal i32 @mtir_call_packed_by_name(i8* %name, i8* %values, i8* %codes, i32 %n) " +
                             ms_->attr_group +
                             " {\nentry:\n"
                             "  %f = alloca i8*, align 8\n"
                             "  %ret = alloca %TVMValue, align 8\n"
                             "  %ret.code = alloca i32, align 4\n"
                             "  store i8* null, i8** %f, align 8\n"
                             "  %found = call i32 @TVMFuncGetGlobal(i8* %name, i8** %f)\n"
                             "  %missing = icmp ne i32 %found, 0\n"
                             "  br i1 %missing, label %fail, label %call\n"
                             "fail:\n  ret i32 -1\n"
                             "call:\n"
                             "  %fn = load i8*, i8** %f, align 8\n"
                             "  %rv = bitcast %TVMValue* %ret to i8*\n"
                             "  %rc = bitcast i32* %ret.code to i8*\n"
                             "  %r = call i32 @TVMFuncCall(i8* %fn, i8* %values, i8* %codes, i32 %n, i8* %rv, i8* %rc)\n"
                             "  ret i32 %r\n}\n");
  }

  // ---- vectors ----------------------------------------------------------------------
  // Vector code is emitted as LLVM vectors: Ramp, Broadcast and Shuffle as
  // insertelement/shufflevector, contiguous loads and stores (a Ramp with stride 1) as
  // one vector access, + - * / min max, comparisons, selects and numeric casts as vector
  // instructions. The rest (integer division, calls, logic) runs lane by lane on
  // extracted scalars and is put back together, which LLVM may vectorize again.
  Val splat(const Val& scalar, int lanes) {
    const std::string vt = "<" + std::to_string(lanes) + " x " + scalar.ty + ">";
    Val one = op(vt, "insertelement " + vt + " undef, " + scalar.typed() + ", i32 0");
    return op(vt, "shufflevector " + one.typed() + ", " + vt + " undef, <" + std::to_string(lanes) +
                      " x i32> zeroinitializer");
  }
  Val extract(const Val& v, int k, const std::string& elem_ty) {
    return op(elem_ty, "extractelement " + v.typed() + ", i32 " + std::to_string(k));
  }
  Val insert(const Val& v, const Val& x, int k) {
    return op(v.ty, "insertelement " + v.typed() + ", " + x.typed() + ", i32 " + std::to_string(k));
  }
  static std::string lane_list(const std::vector<int>& lanes) {
    std::string out = "<";
    for (size_t i = 0; i < lanes.size(); ++i) out += (i ? ", i32 " : "i32 ") + std::to_string(lanes[i]);
    return out + ">";
  }

  Val ramp(const RampNode* r) {
    Val base = expr(r->base), stride = expr(r->stride);
    std::string steps = "<";
    for (int k = 0; k < r->lanes; ++k) steps += (k ? ", " : "") + base.ty + " " + std::to_string(k);
    steps += ">";
    const std::string vt = ll_type(r->dtype, r->span);
    Val offsets = op(vt, "mul " + splat(stride, r->lanes).typed() + ", " + steps);
    return op(vt, "add " + splat(base, r->lanes).typed() + ", " + offsets.v);
  }

  Val shuffle(const ShuffleNode* s) {
    std::vector<Val> vs;
    for (const auto& v : s->vectors) vs.push_back(expr(v));
    const std::string elem = ll_type(s->dtype.element_of(), s->span);
    const bool uniform = vs.size() <= 2 && s->vectors[0]->dtype.is_vector() &&
                         (vs.size() == 1 || s->vectors[1]->dtype == s->vectors[0]->dtype);
    if (uniform && s->dtype.is_vector()) {
      std::string second = vs.size() == 2 ? vs[1].typed() : vs[0].ty + " undef";
      return op(ll_type(s->dtype, s->span),
                "shufflevector " + vs[0].typed() + ", " + second + ", <" + std::to_string(s->indices.size()) +
                    " x i32> " + lane_list(s->indices));
    }
    // Lane by lane from vectors of any widths (scalars count as one lane).
    auto pick = [&](int index) {
      for (size_t i = 0; i < vs.size(); ++i) {
        int n = s->vectors[i]->dtype.lanes();
        if (index < n) return n == 1 ? vs[i] : extract(vs[i], index, elem);
        index -= n;
      }
      internal_error(__FILE__, __LINE__, "shuffle index past its vectors");
    };
    if (s->dtype.is_scalar()) return pick(s->indices[0]);
    Val out{ll_type(s->dtype, s->span), "undef"};
    for (size_t k = 0; k < s->indices.size(); ++k) out = insert(out, pick(s->indices[k]), static_cast<int>(k));
    return out;
  }

  // `e` (a vector node of one of the kinds below) computed lane by lane: each operand
  // lane is bound to a scalar variable and the scalar node is emitted as usual.
  Val lanewise(const Expr& e) {
    std::vector<Expr> operands;
    if (is_binary(e->kind)) {
      operands = {static_cast<const BinaryNode*>(e.get())->a, static_cast<const BinaryNode*>(e.get())->b};
    } else if (const auto* n = as<NotNode>(e)) {
      operands = {n->a};
    } else if (const auto* c = as<CastNode>(e)) {
      operands = {c->value};
    } else if (const auto* s = as<SelectNode>(e)) {
      operands = {s->condition, s->true_value, s->false_value};
    } else if (const auto* c = as<CallNode>(e)) {
      operands = c->args;
    } else {
      user_error(e->span, std::string("the LLVM backend cannot emit a vector ") + expr_kind_name(e->kind));
    }
    std::vector<Val> vals;
    for (const auto& o : operands) vals.push_back(expr(o));
    Val out{ll_type(e->dtype, e->span), "undef"};
    for (int k = 0; k < e->dtype.lanes(); ++k) {
      std::vector<Var> temps;
      std::vector<Expr> scalars;
      for (size_t i = 0; i < operands.size(); ++i) {
        DataType t = operands[i]->dtype;
        temps.push_back(MakeVar("lane", t.element_of()));
        vars_[temps.back().get()] = t.is_vector() ? extract(vals[i], k, ll_type(t.element_of(), e->span)) : vals[i];
        scalars.push_back(temps.back());
      }
      Expr scalar;
      if (is_binary(e->kind)) scalar = Binary(e->kind, scalars[0], scalars[1], e->span);
      else if (e->kind == ExprKind::Not) scalar = Not(scalars[0], e->span);
      else if (e->kind == ExprKind::Cast) scalar = Cast(e->dtype.element_of(), scalars[0], e->span);
      else if (e->kind == ExprKind::Select) scalar = Select(scalars[0], scalars[1], scalars[2], e->span);
      else scalar = Call(e->dtype.element_of(), as<CallNode>(e)->op, scalars, as<CallNode>(e)->attrs, e->span);
      out = insert(out, expr(scalar), k);
      for (const auto& t : temps) vars_.erase(t.get());
    }
    return out;
  }

  // The vector kinds with a native form; nullopt for the lane-by-lane rest.
  bool native_vector(const Expr& e) const {
    switch (e->kind) {
      case ExprKind::Add:
      case ExprKind::Sub:
      case ExprKind::Mul:
      case ExprKind::Min:
      case ExprKind::Max:
      case ExprKind::EQ:
      case ExprKind::NE:
      case ExprKind::LT:
      case ExprKind::LE:
      case ExprKind::GT:
      case ExprKind::GE:
      case ExprKind::Select:
      case ExprKind::Var:
      case ExprKind::Ramp:
      case ExprKind::Broadcast:
      case ExprKind::Shuffle:
      case ExprKind::Let:
      case ExprKind::BufferLoad: return true;
      case ExprKind::Div: return e->dtype.is_float();
      case ExprKind::Cast:
        return !e->dtype.is_bool() && !static_cast<const CastNode*>(e.get())->value->dtype.is_bool();
      default: return false;
    }
  }

  // A load or store of lanes: contiguous (stride-1 Ramp index, non-bool) is one vector
  // access at the element alignment; anything else goes element by element.
  const RampNode* contiguous(const Buffer& b, const std::vector<Expr>& indices) {
    const auto* r = indices.size() == 1 ? as<RampNode>(indices[0]) : nullptr;
    const int64_t* stride = r ? as_const_int(r->stride) : nullptr;
    return stride && *stride == 1 && !b->dtype.is_bool() ? r : nullptr;
  }
  Val vector_load(const BufferLoadNode* l) {
    const DataType t = l->buffer->dtype;
    const std::string vt = ll_type(l->dtype, l->span), align = std::to_string(natural_align(t, ms_->target->pointer_bits));
    if (const RampNode* r = contiguous(l->buffer, l->indices)) {
      Val p = elem_ptr(l->buffer, {r->base}, l->span);
      Val vp = op(vt + "*", "bitcast " + p.typed() + " to " + vt + "*");
      return op(vt, "load " + vt + ", " + vp.typed() + ", align " + align);
    }
    Val index = expr(l->indices.at(0));
    const std::string it = ll_type(l->indices[0]->dtype.element_of(), l->span);
    Val out{vt, "undef"};
    for (int k = 0; k < l->dtype.lanes(); ++k) {
      Var i = MakeVar("lane.index", l->indices[0]->dtype.element_of());
      vars_[i.get()] = extract(index, k, it);
      Val x = expr(BufferLoad(l->buffer, {i}, l->span));
      vars_.erase(i.get());
      out = insert(out, x, k);
    }
    return out;
  }
  void vector_store(const BufferStoreNode* s) {
    const DataType t = s->buffer->dtype;
    Val v = expr(s->value);
    const std::string vt = ll_type(s->value->dtype, s->span), align = std::to_string(natural_align(t, ms_->target->pointer_bits));
    if (const RampNode* r = contiguous(s->buffer, s->indices)) {
      Val p = elem_ptr(s->buffer, {r->base}, s->span);
      Val vp = op(vt + "*", "bitcast " + p.typed() + " to " + vt + "*");
      inst("store " + v.typed() + ", " + vp.typed() + ", align " + align);
      return;
    }
    // Every lane's value and index is read before the first element is written.
    Val index = expr(s->indices.at(0));
    const std::string it = ll_type(s->indices[0]->dtype.element_of(), s->span);
    const std::string et = ll_type(t, s->span);
    std::vector<Var> values, indices;
    for (int k = 0; k < s->value->dtype.lanes(); ++k) {
      values.push_back(MakeVar("lane.value", t));
      indices.push_back(MakeVar("lane.index", s->indices[0]->dtype.element_of()));
      vars_[values.back().get()] = extract(v, k, et);
      vars_[indices.back().get()] = extract(index, k, it);
    }
    for (size_t k = 0; k < values.size(); ++k) {
      store(std::static_pointer_cast<const BufferStoreNode>(BufferStore(s->buffer, values[k], {indices[k]}, s->span)).get());
      vars_.erase(values[k].get());
      vars_.erase(indices[k].get());
    }
  }

  Val expr(const Expr& e) {
    if (e->dtype.is_vector() && !native_vector(e)) return lanewise(e);
    switch (e->kind) {
      case ExprKind::IntImm: return int_const(e->dtype, static_cast<const IntImmNode*>(e.get())->value);
      case ExprKind::FloatImm: return float_const(e->dtype, static_cast<const FloatImmNode*>(e.get())->value, e->span);
      case ExprKind::StringImm: return ms_->string_constant(static_cast<const StringImmNode*>(e.get())->value);
      case ExprKind::Var: {
        const auto* v = static_cast<const VarNode*>(e.get());
        auto it = vars_.find(v);
        if (it == vars_.end()) user_error(v->span, "variable '" + v->name + "' is not defined where LLVM code uses it");
        return it->second;
      }
      case ExprKind::Add: return arith("add", "fadd", e);
      case ExprKind::Sub: return arith("sub", "fsub", e);
      case ExprKind::Mul: return arith("mul", "fmul", e);
      case ExprKind::Div:
      case ExprKind::Mod:
      case ExprKind::FloorDiv:
      case ExprKind::FloorMod: {
        const auto* b = static_cast<const BinaryNode*>(e.get());
        if (!e->dtype.is_float()) return int_division(e->kind, b);
        ll_type(e->dtype, e->span);
        if (e->kind == ExprKind::Div) return binary("", "fdiv", b);
        if (e->kind == ExprKind::Mod) return binary("", "frem", b);  // fmod
        Val a = expr(b->a), d = expr(b->b);
        Val q = op(a.ty, "fdiv " + a.typed() + ", " + d.v);
        Val fl = intrinsic(std::string("llvm.floor.") + (e->dtype.bits() == 32 ? "f32" : "f64"), a.ty, {q});
        if (e->kind == ExprKind::FloorDiv) return fl;
        Val m = op(a.ty, "fmul " + fl.typed() + ", " + d.v);
        return op(a.ty, "fsub " + a.typed() + ", " + m.v);
      }
      case ExprKind::Min:
      case ExprKind::Max: {
        // a < b ? a : b, exactly as the C helpers (NaN operands pick b).
        const auto* b = static_cast<const BinaryNode*>(e.get());
        Val x = expr(b->a), y = expr(b->b);
        bool mn = e->kind == ExprKind::Min;
        DataType t = e->dtype;
        std::string pred = t.is_float() ? (mn ? "fcmp olt " : "fcmp ogt ")
                                        : std::string("icmp ") + (t.is_int() ? (mn ? "slt " : "sgt ") : (mn ? "ult " : "ugt "));
        Val c = op(ll_type(DataType::Bool().with_lanes(t.lanes()), e->span), pred + x.typed() + ", " + y.v);
        return op(x.ty, "select " + c.typed() + ", " + x.typed() + ", " + y.typed());
      }
      case ExprKind::EQ:
      case ExprKind::NE:
      case ExprKind::LT:
      case ExprKind::LE:
      case ExprKind::GT:
      case ExprKind::GE: return compare(e->kind, static_cast<const BinaryNode*>(e.get()));
      case ExprKind::And:
      case ExprKind::Or: {
        const auto* b = static_cast<const BinaryNode*>(e.get());
        return short_circuit(e->kind == ExprKind::And, b->a, b->b);
      }
      case ExprKind::Not: return op("i1", "xor i1 " + expr(static_cast<const NotNode*>(e.get())->a).v + ", true");
      case ExprKind::Select: {
        const auto* s = static_cast<const SelectNode*>(e.get());
        Val c = expr(s->condition), t = expr(s->true_value), f = expr(s->false_value);
        return op(t.ty, "select " + c.typed() + ", " + t.typed() + ", " + f.typed());
      }
      case ExprKind::Cast: {
        const auto* c = static_cast<const CastNode*>(e.get());
        return cast(expr(c->value), c->value->dtype, c->dtype, c->span);
      }
      case ExprKind::BufferLoad: return load(static_cast<const BufferLoadNode*>(e.get()));
      case ExprKind::Call: return call_expr(static_cast<const CallNode*>(e.get()));
      case ExprKind::Ramp: return ramp(static_cast<const RampNode*>(e.get()));
      case ExprKind::Broadcast: {
        const auto* b = static_cast<const BroadcastNode*>(e.get());
        return splat(expr(b->value), b->lanes);
      }
      case ExprKind::Shuffle: return shuffle(static_cast<const ShuffleNode*>(e.get()));
      case ExprKind::Let: {
        const auto* l = static_cast<const LetNode*>(e.get());
        vars_[l->var.get()] = expr(l->value);
        Val out = expr(l->body);
        vars_.erase(l->var.get());
        return out;
      }
    }
    internal_error(__FILE__, __LINE__, "unhandled expression kind");
  }

  // ---- statements -------------------------------------------------------------------
  void emit(const Stmt& s) {
    const SourceLineScope at(&source_line_, s);
    switch (s->kind) {
      case StmtKind::BufferStore: store(static_cast<const BufferStoreNode*>(s.get())); return;
      case StmtKind::For: emit_for(static_cast<const ForNode*>(s.get())); return;
      case StmtKind::IfThenElse: {
        const auto* op = static_cast<const IfThenElseNode*>(s.get());
        Val c = expr(op->condition);
        std::string then_l = label("if.then"), end_l = label("if.end");
        bool has_else = op->else_case && !is_no_op(op->else_case);
        std::string else_l = has_else ? label("if.else") : end_l;
        cond_br(c, then_l, else_l);
        begin_block(then_l);
        emit(op->then_case);
        br(end_l);
        if (has_else) {
          begin_block(else_l);
          emit(op->else_case);
          br(end_l);
        }
        begin_block(end_l);
        return;
      }
      case StmtKind::LetStmt: {
        const auto* op = static_cast<const LetStmtNode*>(s.get());
        if (const auto* alloca = as<CallNode>(op->value); alloca && alloca->is(Builtin::TvmStackAlloca)) {
          emit_stack_alloca(op->var, alloca);
        } else {
          Val v = expr(op->value);
          vars_[op->var.get()] = v;
          if (op->var->dtype.is_integer()) bounds_.bind(op->var.get(), bounds_.bound(op->value));
        }
        emit(op->body);
        return;
      }
      case StmtKind::SeqStmt:
        for (const auto& child : static_cast<const SeqStmtNode*>(s.get())->seq) emit(child);
        return;
      case StmtKind::While: {
        const auto* op = static_cast<const WhileNode*>(s.get());
        std::string head = label("while.head"), body = label("while.body"), exit = label("while.end");
        br(head);
        begin_block(head);
        cond_br(expr(op->condition), body, exit);
        begin_block(body);
        emit(op->body);
        br(head);
        begin_block(exit);
        return;
      }
      case StmtKind::Evaluate: {
        const auto* op = static_cast<const EvaluateNode*>(s.get());
        if (evaluates_constant(op)) return;
        if (const CallNode* call = statement_builtin(op)) {
          if (call->is(Builtin::TvmReturn)) emit_return(as_int(expr(call->args.at(0)), call->args[0]->dtype, "i32").v);
          else throw_last_error(call);
          return;
        }
        expr(op->value);
        return;
      }
      case StmtKind::Allocate: emit_allocate(static_cast<const AllocateNode*>(s.get())); return;
      case StmtKind::DeclBuffer: {
        const auto* op = static_cast<const DeclBufferNode*>(s.get());
        handle(op->buffer, op->span);  // a view of memory that already has a pointer
        emit(op->body);
        return;
      }
      case StmtKind::AttrStmt: emit(static_cast<const AttrStmtNode*>(s.get())->body); return;
      case StmtKind::AssertStmt: {
        const auto* op = static_cast<const AssertStmtNode*>(s.get());
        Val c = expr(op->condition);
        std::string fail = label("assert.fail"), ok = label("assert.ok");
        cond_br(c, ok, fail);
        begin_block(fail);
        set_last_error(ms_->string_constant(user_name() + ": assertion failed: " + op->message));
        emit_return("-1");
        br(ok);
        begin_block(ok);
        emit(op->body);
        return;
      }
    }
  }

  void emit_for(const ForNode* node) {
    DataType t = node->loop_var->dtype;
    std::string ty = ll_type(t, node->span);
    Val begin = expr(node->min);
    const int64_t* min = as_const_int(node->min);
    Val end = min && *min == 0 ? expr(node->extent) : expr(Binary(ExprKind::Add, node->min, node->extent));
    std::string head = label("for.head"), body = label("for.body"), latch = label("for.latch"), exit = label("for.end");
    std::string pre = block_;
    br(head);
    begin_block(head);
    std::string i = local_name(node->loop_var->name), next = local_name(node->loop_var->name + ".next");
    inst(i + " = phi " + ty + " [ " + begin.v + ", %" + pre + " ], [ " + next + ", %" + latch + " ]");
    Val c = op_cmp(t.is_uint() ? "ult" : "slt", {ty, i}, end);
    cond_br(c, body, exit);
    begin_block(body);
    vars_[node->loop_var.get()] = {ty, i};
    IntBound lo = bounds_.bound(node->min), ext = bounds_.bound(node->extent);
    int64_t hi;
    if (ext.max >= 1 && !__builtin_add_overflow(lo.max, ext.max - 1, &hi)) bounds_.bind(node->loop_var.get(), {lo.min, hi});
    emit(node->body);
    bounds_.unbind(node->loop_var.get());
    br(latch);
    begin_block(latch);
    // i < end <= MAX, so i + 1 cannot wrap.
    inst(next + " = add " + std::string(t.is_uint() ? "nuw " : "nsw ") + ty + " " + i + ", 1");
    // T.unroll and T.vectorized loops carry the matching hint on their back edge.
    if (node->for_kind == ForKind::kUnrolled || node->for_kind == ForKind::kVectorized) {
      inst("br label %" + head + ", !llvm.loop " +
           ms_->loop_metadata(node->for_kind == ForKind::kUnrolled ? "llvm.loop.unroll.full" : "llvm.loop.vectorize.enable"));
    } else {
      br(head);
    }
    begin_block(exit);
  }
  Val op_cmp(const std::string& pred, const Val& a, const Val& b) { return op("i1", "icmp " + pred + " " + a.typed() + ", " + b.v); }

  void emit_stack_alloca(const Var& v, const CallNode* c) {
    const auto* kind = c->args.size() == 2 ? as<StringImmNode>(c->args[0]) : nullptr;
    const int64_t* count = c->args.size() == 2 ? as_const_int(c->args[1]) : nullptr;
    static const std::map<std::string, std::pair<std::string, int>> kTypes = {
        {"arg_value", {"%TVMValue", 8}}, {"arg_tcode", {"i32", 4}}, {"array", {"%DLTensor", 8}}, {"shape", {"i64", 8}}};
    if (!kind || !count || *count <= 0 || !kTypes.count(kind->value))
      user_error(c->span, "T.tvm_stack_alloca needs a kind (arg_value, arg_tcode, array, shape) and a constant count");
    const auto& [ty, align] = kTypes.at(kind->value);
    std::string a = entry_alloca(ty, *count, align, v->name);
    std::string p = local_name(v->name + ".ptr");
    entry_ << "  " << p << " = bitcast " << ty << "* " << a << " to i8*\n";
    vars_[v.get()] = {"i8*", p};
  }

  // Constant-size "local" buffers live on the stack; everything else comes from the
  // CRT workspace, freed in LIFO order (also on every early return).
  void emit_allocate(const AllocateNode* node) {
    const Buffer& b = node->buffer;
    std::string mt = mem_type(b->dtype, b->span);
    int64_t n = 0;
    bool constant = const_num_elements(b, &n);
    int align = std::max(natural_align(b->dtype, ms_->target->pointer_bits), b->align);
    if (node->scope == "local" && constant) {
      std::string a = entry_alloca(mt, n > 0 ? n : 1, align, b->name);
      std::string p = local_name(b->name + ".ptr");
      entry_ << "  " << p << " = bitcast " << mt << "* " << a << " to i8*\n";
      vars_[b->data.get()] = {"i8*", p};
      emit(node->body);
      return;
    }
    Val bytes;
    if (constant) {
      bytes = {"i64", std::to_string(n * b->dtype.bytes())};
    } else {
      bytes = {"i64", std::to_string(b->dtype.bytes())};
      for (const auto& d : b->shape) {
        Val dv = as_int(expr(d), d->dtype, "i64");
        bytes = op("i64", "mul " + bytes.typed() + ", " + dv.v);
      }
    }
    ms_->declare("TVMBackendAllocWorkspace", "declare i8* @TVMBackendAllocWorkspace(i32, i32, i64, i32, i32)");
    ms_->declare("TVMBackendFreeWorkspace", "declare i32 @TVMBackendFreeWorkspace(i32, i32, i8*)");
    Val p = op("i8*", "call i8* @TVMBackendAllocWorkspace(i32 1, i32 0, " + bytes.typed() + ", i32 " +
                          std::to_string(dl_type_code(b->dtype)) + ", i32 " + std::to_string(b->dtype.bits()) + ")");
    Val null = op("i1", "icmp eq " + p.typed() + ", null");
    std::string fail = label("alloc.fail"), ok = label("alloc.ok");
    cond_br(null, fail, ok);
    begin_block(fail);
    emit_return("-1");
    br(ok);
    begin_block(ok);
    vars_[b->data.get()] = p;
    live_workspace_.push_back(p.v);
    emit(node->body);
    live_workspace_.pop_back();
    Val rc = op("i32", "call i32 @TVMBackendFreeWorkspace(i32 1, i32 0, " + p.typed() + ")");
    Val bad = op("i1", "icmp ne " + rc.typed() + ", 0");
    std::string free_fail = label("free.fail"), free_ok = label("free.ok");
    cond_br(bad, free_fail, free_ok);
    begin_block(free_fail);
    emit_return("-1");
    br(free_ok);
    begin_block(free_ok);
  }

  // Frees the enclosing workspace allocations, newest first, and returns. Code after it
  // (in the same TIR statement list) lands in a block with no predecessors.
  void emit_return(const std::string& value) {
    for (size_t i = live_workspace_.size(); i-- > 0;) {
      inst("call i32 @TVMBackendFreeWorkspace(i32 1, i32 0, i8* " + live_workspace_[i] + ")");
    }
    inst("ret i32 " + value);
    begin_block(label("after.ret"));
  }

  void set_last_error(const Val& message) {
    ms_->declare("TVMAPISetLastError", "declare void @TVMAPISetLastError(i8*)");
    inst("call void @TVMAPISetLastError(" + message.typed() + ")");
  }

  // tvm_throw_last_error: "{}" in the message are filled in at run time by one shared,
  // out-of-line formatter, so each check stays small.
  void throw_last_error(const CallNode* c) {
    const auto* fmt = c->args.empty() ? nullptr : as<StringImmNode>(c->args[0]);
    if (!fmt) user_error(c->span, "T.tvm_throw_last_error needs a message string");
    if (c->args.size() == 1) {
      set_last_error(ms_->string_constant(fmt->value));
      emit_return("-1");
      return;
    }
    std::string printf_format;
    std::vector<Val> values;
    size_t next = 1;
    for (size_t i = 0; i < fmt->value.size(); ++i) {
      if (fmt->value.compare(i, 2, "{}") == 0 && next < c->args.size()) {
        printf_format += "%lld";
        values.push_back(as_int(expr(c->args[next]), c->args[next]->dtype, "i64"));
        ++next;
        ++i;
      } else {
        printf_format += fmt->value[i] == '%' ? std::string("%%") : std::string(1, fmt->value[i]);
      }
    }
    if (values.size() > 3) user_error(c->span, "T.tvm_throw_last_error takes at most 3 values");
    while (values.size() < 3) values.push_back({"i64", "0"});
    use_set_error_helper();
    inst("call void @mtir_set_error(" + ms_->string_constant(printf_format).typed() + ", " + values[0].typed() + ", " +
         values[1].typed() + ", " + values[2].typed() + ")");
    emit_return("-1");
  }

  void use_set_error_helper() {
    const std::string st = ms_->target->size_type();
    ms_->declare("snprintf", "declare i32 @snprintf(i8*, " + st + ", i8*, ...)");
    ms_->declare("TVMAPISetLastError", "declare void @TVMAPISetLastError(i8*)");
    ms_->helpers.emplace("mtir_set_error",
                         "define internal void @mtir_set_error(i8* %format, i64 %a, i64 %b, i64 %c) noinline " +
                             ms_->attr_group +
                             " {\nentry:\n"
                             "  %buf = alloca [256 x i8], align 1\n"
                             "  %p = getelementptr inbounds [256 x i8], [256 x i8]* %buf, i32 0, i32 0\n"
                             "  %n = call i32 (i8*, " + st + ", i8*, ...) @snprintf(i8* %p, " + st +
                             " 256, i8* %format, i64 %a, i64 %b, i64 %c)\n"
                             "  call void @TVMAPISetLastError(i8* %p)\n"
                             "  ret void\n}\n");
  }

  ModuleState* ms_;
  std::string symbol_;
  PrimFunc func_;
  std::ostringstream entry_;
  std::ostringstream* out_ = nullptr;
  std::string block_;
  int next_tmp_ = 0, next_label_ = 0;
  std::set<std::string> used_;
  std::unordered_map<const VarNode*, Val> vars_;
  std::vector<std::string> live_workspace_;
  std::string ret_value_, ret_code_;  // the out-values of direct packed calls
  IntBoundAnalyzer bounds_;
  int source_line_ = 0;  // of the statement being emitted
};

}  // namespace

std::string codegen_llvm(const IRModule& m, const LlvmCodegenOptions& options) {
  ModuleState ms;
  ms.target = &llvm_target(options.triple);
  ms.arm_dsp = options.arm_dsp;
  ms.attr_group = "#0";
  ms.mark_lines = options.line_map != nullptr;
  for (const auto& [name, func] : m.functions) {
    ms.module_functions[symbol_of(name, func)] = func;
    if (!options.defines || options.defines(name, func)) ms.defined.insert(symbol_of(name, func));
  }
  std::ostringstream defs;
  for (const auto& [name, func] : m.functions) {
    const std::string symbol = symbol_of(name, func);
    if (!ms.defined.count(symbol)) continue;  // declared where called
    if (!is_c_identifier(symbol))
      user_error(func->span, "function '" + name + "' would be the symbol '" + symbol + "', which is not a C identifier");
    if (ms.helpers.count(symbol) || symbol.rfind("mtir_", 0) == 0 || symbol == "TVMSystemLibEntryPoint")
      user_error(func->span, "function '" + name + "' would be the symbol '" + symbol + "', which the runtime reserves");
    FunctionEmitter emitter(&ms, symbol, func);
    if (!is_packed(func)) {
      defs << "\n" << emitter.define(symbol, attr_flag(func, "tir.internal") ? "internal " : "");
      continue;
    }
    if (func->params.size() != 6) user_error(func->span, symbol + ": a packed function has 6 parameters");
    // The checked body (`<symbol>_checked`), which callers in this module use directly,
    // and the exported entry point the registry holds.
    defs << "\n" << emitter.define(symbol + "_checked", "internal ");
    defs << "\ndefine i32 @" << symbol
         << "(i8* %args, i8* %type_codes, i32 %num_args, i8* %out_ret_value, i8* %out_ret_tcode, i8* %resource_handle) "
         << ms.attr_group << " {\nentry:\n  %r = call i32 @" << symbol
         << "_checked(i8* %args, i8* %type_codes, i32 %num_args, i8* %out_ret_value, i8* %out_ret_tcode, i8* "
            "%resource_handle)\n  ret i32 %r\n}\n";
  }
  for (const auto& symbol : ms.defined) ms.declares.erase(symbol);
  std::ostringstream os;
  os << "; Generated by microtir " << MICROTIR_VERSION << " from module \"" << m.name << "\"";
  if (!options.description.empty()) os << " (" << options.description << ")";
  os << ". Do not edit.\n"
     << "source_filename = \"" << m.name << "\"\n"
     << llvm_module_header(*ms.target) << "\n"
     << kTypes;
  if (!ms.globals.empty()) {
    os << "\n";
    for (const auto& g : ms.globals) os << g << "\n";
  }
  if (!ms.declares.empty()) {
    os << "\n";
    for (const auto& [name, d] : ms.declares) os << d << "\n";
  }
  for (const auto& [name, def] : ms.helpers) os << "\n" << def;
  os << defs.str();
  os << "\nattributes #0 = { nounwind";
  if (!options.cpu.empty()) os << " \"target-cpu\"=\"" << options.cpu << "\"";
  const std::string& features = llvm_target(options.triple).features;
  if (!features.empty()) os << " \"target-features\"=\"" << features << "\"";
  os << " }\n";
  if (!ms.metadata.empty()) {
    os << "\n";
    for (const auto& line : ms.metadata) os << line << "\n";
  }
  return options.line_map ? strip_line_marks(os.str(), options.line_map) : os.str();
}

}  // namespace mtir
