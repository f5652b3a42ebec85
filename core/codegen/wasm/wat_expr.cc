// The wasm emitter's expressions: constants, arithmetic, comparisons, trap-free
// division, math imports, calls and every builtin (wat_function.h).
#include "codegen/wasm/wat_function.h"

namespace mtir {
namespace wat_codegen {

WVal FunctionEmitter::int_const(DataType t, int64_t v) {
  std::string ty = wasm_type(t, {});
  int bits = t.is_bool() ? 32 : t.bits();
  return {ty, "(" + ty + ".const " + int_text(v, bits) + ")"};
}

WVal FunctionEmitter::float_const(DataType t, double v, const Span& span) {
  std::string ty = wasm_type(t, span);
  return {ty, "(" + ty + ".const " + float_text(v, ty == "f32") + ")"};
}

// + - * in the value type, re-wrapped into narrow integer types.
WVal FunctionEmitter::arith(const char* name, const BinaryNode* e) {
  WVal a = expr(e->a), b = expr(e->b);
  return {a.ty, normalize("(" + a.ty + "." + name + " " + a.code + " " + b.code + ")", e->dtype)};
}

WVal FunctionEmitter::compare(ExprKind k, const BinaryNode* e) {
  WVal a = expr(e->a), b = expr(e->b);
  DataType t = e->a->dtype;
  static const std::map<ExprKind, const char*> names = {{ExprKind::EQ, "eq"}, {ExprKind::NE, "ne"},
                                                        {ExprKind::LT, "lt"}, {ExprKind::LE, "le"},
                                                        {ExprKind::GT, "gt"}, {ExprKind::GE, "ge"}};
  std::string n = names.at(k);
  if (!t.is_float() && k != ExprKind::EQ && k != ExprKind::NE) n += sign_suffix(t);
  return {"i32", "(" + a.ty + "." + n + " " + a.code + " " + b.code + ")"};
}

// Integer / % floordiv floormod with no trap: as the C and LLVM backends, a zero
// divisor divides by 1 and MIN / -1 wraps. The checks live in one helper per
// operation and type; where the bounds prove them unnecessary the instruction is used
// directly.
WVal FunctionEmitter::int_division(ExprKind k, const BinaryNode* e) {
  DataType t = e->dtype;
  const bool is_signed = t.is_int();
  const bool floor = k == ExprKind::FloorDiv || k == ExprKind::FloorMod;
  const bool div = k == ExprKind::Div || k == ExprKind::FloorDiv;
  IntBound ba = bounds_.bound(e->a), bb = bounds_.bound(e->b);
  WVal a = expr(e->a), b = expr(e->b);
  const std::string& ty = a.ty;
  const bool narrow_min = t.bits() < 32;  // MIN / -1 of int8 or int16 does not trap in i32
  const bool safe = !bb.contains(0) && (!is_signed || !bb.contains(-1) || narrow_min || ba.min > type_range(t).min) &&
                    (!floor || !is_signed || (ba.non_negative() && bb.min > 0));
  std::string code;
  if (safe) {
    code = "(" + ty + (div ? ".div" : ".rem") + sign_suffix(t) + " " + a.code + " " + b.code + ")";
  } else {
    std::string helper = std::string("$mtir.") + (floor ? "floor" : "") + (div ? "div" : "mod") + (is_signed ? "_s_" : "_u_") + ty;
    ms_->helpers.insert(helper);
    code = "(call " + helper + " " + a.code + " " + b.code + ")";
  }
  return {ty, normalize(code, t)};
}

WVal FunctionEmitter::math_call(const CallNode* c) {
  DataType t = c->dtype;
  if (c->is(Builtin::Abs) && t.is_integer()) {
    WVal a = expr(c->args.at(0));
    if (t.is_uint()) return a;
    // Operands are evaluated in order: the first one sets the temporary.
    std::string x = temp(a.ty);
    std::string neg = normalize("(" + a.ty + ".sub (" + a.ty + ".const 0) (local.tee " + x + " " + a.code + "))", t);
    return {a.ty, "(select " + neg + " (local.get " + x + ") (" + a.ty + ".lt_s (local.get " + x + ") (" + a.ty +
                      ".const 0)))"};
  }
  if (!t.is_float()) user_error(c->span, "intrinsic '" + c->op + "' needs a float argument, not " + t.str());
  std::string ty = wasm_type(t, c->span);
  std::vector<WVal> args;
  for (const auto& a : c->args) args.push_back(expr(a));
  // wasm has sqrt, floor, ceil and abs as instructions: the others come from libm.
  if (c->is(Builtin::Sqrt) || c->is(Builtin::Floor) || c->is(Builtin::Ceil) || c->is(Builtin::Abs))
    return {ty, "(" + ty + "." + c->op + " " + args[0].code + ")"};
  const std::string libm_suffix = ty == "f32" ? "f" : "";
  if (c->is(Builtin::Sigmoid)) {
    std::string e = ms_->math_import("exp" + libm_suffix, ty, 1);
    return {ty, "(" + ty + ".div (" + ty + ".const 1) (" + ty + ".add (" + ty + ".const 1) (call " + e + " (" + ty +
                    ".neg " + args[0].code + "))))"};
  }
  if (c->is(Builtin::Round)) {
    // Half away from zero, as C's round: x - trunc(x) is exact.
    std::string x = temp(ty), r = temp(ty);
    return {ty, "(select (" + ty + ".add (local.tee " + r + " (" + ty + ".trunc (local.tee " + x + " " + args[0].code +
                    "))) (" + ty + ".copysign (" + ty + ".const 1) (local.get " + x + "))) (local.get " + r + ") (" + ty +
                    ".ge (" + ty + ".abs (" + ty + ".sub (local.get " + x + ") (local.get " + r + "))) (" + ty +
                    ".const 0.5)))"};
  }
  std::string f = ms_->math_import(c->op + libm_suffix, ty, static_cast<int>(args.size()));
  std::string call = "(call " + f;
  for (const auto& a : args) call += " " + a.code;
  return {ty, call + ")"};
}

// Shifts and bitwise operators. Narrow integers live sign- or zero-extended in an
// i32, so and, or and right shifts keep them extended; a left shift is re-wrapped.
// wasm takes shift amounts modulo 32 or 64; narrow types mask theirs into [0, bits)
// as the C and LLVM backends do (the interpreter refuses an amount outside).
WVal FunctionEmitter::int_binary(const CallNode* c) {
  DataType t = c->dtype;
  if (!t.is_integer()) user_error(c->span, "intrinsic '" + c->op + "' needs integer operands, not " + t.str());
  WVal a = expr(c->args.at(0)), b = expr(c->args.at(1));
  if (!is_shift_op(*c->builtin)) {
    // Operands are sign- or zero-extended alike, so the result is extended the same way.
    const char* inst = c->is(Builtin::BitwiseAnd) ? ".and " : c->is(Builtin::BitwiseOr) ? ".or " : ".xor ";
    return {a.ty, "(" + a.ty + inst + a.code + " " + b.code + ")"};
  }
  std::string amount = b.code;
  if (t.bits() < 32 && shift_needs_mask(c->args[1], t.bits()))
    amount = "(i32.and " + amount + " (i32.const " + std::to_string(t.bits() - 1) + "))";
  if (c->is(Builtin::ShiftLeft)) return {a.ty, normalize("(" + a.ty + ".shl " + a.code + " " + amount + ")", t)};
  return {a.ty, "(" + a.ty + ".shr" + sign_suffix(t) + " " + a.code + " " + amount + ")"};
}

WVal FunctionEmitter::extern_call(const CallNode* c) {
  const auto* sym = c->args.empty() ? nullptr : as<StringImmNode>(c->args[0]);
  if (!sym) user_error(c->span, "call_extern needs a symbol name");
  auto callee = ms_->functions.find(sym->value);
  if (callee == ms_->functions.end()) return imported_call(c, sym->value);
  const PrimFunc& f = callee->second;
  if (f->params.size() + 1 != c->args.size())
    user_error(c->span, "'" + sym->value + "' takes " + std::to_string(f->params.size()) + " arguments");
  std::string call = "(call " + ident(sym->value);
  for (size_t i = 1; i < c->args.size(); ++i) {
    WVal v = expr(c->args[i]);
    const Var& p = f->params[i - 1];
    if (!f->param_buffers[i - 1] && p->dtype != c->args[i]->dtype) v = cast(v, c->args[i]->dtype, p->dtype, c->span);
    call += " " + v.code;
  }
  forget_loads();  // the callee may write memory
  return {"i32", call + ")"};
}

// A function outside the module (a device library's kernel or hook) is imported from
// the host ("env" "<symbol>"), typed by its arguments; handles are i32 addresses.
WVal FunctionEmitter::imported_call(const CallNode* c, const std::string& symbol) {
  if (!c->dtype.is_void() && !(c->dtype.is_int() && c->dtype.bits() == 32))
    user_error(c->span, "external function '" + symbol + "' returns " + c->dtype.str() +
                            "; the wasm backend imports functions returning int32 or nothing");
  std::string params, call = "(call $env." + symbol;
  for (size_t i = 1; i < c->args.size(); ++i) {
    WVal v = expr(c->args[i]);
    params += " " + v.ty;
    call += " " + v.code;
  }
  forget_loads();  // the callee may write memory
  std::string decl = "(import \"" + std::string(kWasmMathImportModule) + "\" \"" + symbol + "\" (func $env." + symbol +
                     (params.empty() ? "" : " (param" + params + ")") + (c->dtype.is_void() ? "" : " (result i32)") + "))";
  auto [it, inserted] = ms_->imports.emplace("$env." + symbol, decl);
  if (!inserted && it->second != decl) {
    user_error(c->span, "external function '" + symbol + "' is called with two different signatures",
               {"first: " + it->second, "here: " + decl});
  }
  return {c->dtype.is_void() ? "" : "i32", call + ")"};
}

// Every builtin of ir/builtins.def, by a switch without a default: a new row does not
// compile until it has its case here.
// TFLite's MultiplyByQuantizedMultiplier (builtins.def) on i32: the arguments once each,
// in order, into locals; the shift clamped to [-31, 30] as the interpreter does; x << left,
// the doubled high word of the 64-bit product rounded half up (INT32_MIN * INT32_MIN
// saturates), then the division by 2^right rounded half away from zero.
// One load of the word where the arguments are consecutive elements of one buffer in
// linear memory (consecutive_elements, as the C and LLVM backends read pack_bytes' four
// int8 and word_pair's two int32): wasm loads may be unaligned, `align` says how far they
// are. Not for elements held in locals, nor bool (its bytes are normalized one by one).
std::string FunctionEmitter::whole_word_load(const CallNode* c, int bits, const std::string& op, int align) {
  const BufferLoadNode* first = consecutive_elements(c->args);
  if (!first || first->dtype != first->buffer->dtype || first->dtype.bits() != bits || !first->dtype.is_integer() ||
      register_arrays_.count(first->buffer->data.get()))
    return "";
  for (const Expr& a : c->args)
    if (!promoted(first->buffer, as<BufferLoadNode>(a)->indices).empty()) return "";
  std::string at = memarg(first->buffer, first->indices, first->span);  // "offset=N address" or "address"
  const size_t offset_end = at.rfind("offset=", 0) == 0 ? at.find(' ') + 1 : 0;
  at.insert(offset_end, "align=" + std::to_string(align) + " ");
  return "(" + op + " " + at + ")";
}

// pack_bytes: one word load, else the low bytes of the four arguments or-ed into place.
WVal FunctionEmitter::pack_bytes(const CallNode* c) {
  if (std::string load = whole_word_load(c, 8, "i32.load", 1); !load.empty()) return {"i32", load};
  std::string word;
  for (size_t k = 0; k < 4; ++k) {
    WVal x = expr(c->args.at(k));
    std::string b = "(i32.and " + x.code + " (i32.const 255))";
    if (k) b = "(i32.shl " + b + " (i32.const " + std::to_string(8 * k) + "))";
    word = k ? "(i32.or " + word + " " + b + ")" : b;
  }
  return {"i32", word};
}

WVal FunctionEmitter::word_pair(const CallNode* c) {
  if (std::string load = whole_word_load(c, 32, "i64.load", 4); !load.empty()) return {"i64", load};
  WVal lo = expr(c->args.at(0)), hi = expr(c->args.at(1));
  return {"i64", "(i64.or (i64.extend_i32_u " + lo.code + ") (i64.shl (i64.extend_i32_u " + hi.code + ") (i64.const 32)))"};
}

WVal FunctionEmitter::multiply_by_quantized_multiplier(const CallNode* c) {
  const std::string x = temp("i32"), m = temp("i32"), s = temp("i32"), a = temp("i32"), h = temp("i32"),
                    r = temp("i32"), mask = temp("i32");
  auto get = [](const std::string& v) { return "(local.get " + v + ")"; };
  auto set = [](const std::string& v, const std::string& code) { return "(local.set " + v + " " + code + ")"; };
  const std::string code = expr(c->args.at(0)).code, mcode = expr(c->args.at(1)).code, scode = expr(c->args.at(2)).code;
  const std::string kMin = "(i32.const -2147483648)";
  std::string out = "(block (result i32) " + set(x, code) + " " + set(m, mcode) + " " + set(s, scode) + " ";
  out += set(s, "(select " + get(s) + " (i32.const -31) (i32.gt_s " + get(s) + " (i32.const -31)))") + " ";
  out += set(s, "(select " + get(s) + " (i32.const 30) (i32.lt_s " + get(s) + " (i32.const 30)))") + " ";
  out += set(a, "(i32.shl " + get(x) + " (select " + get(s) + " (i32.const 0) (i32.gt_s " + get(s) + " (i32.const 0))))") + " ";
  const std::string product = "(i64.mul (i64.extend_i32_s " + get(a) + ") (i64.extend_i32_s " + get(m) + "))";
  const std::string high = "(i32.wrap_i64 (i64.shr_s (i64.add " + product + " (i64.const 1073741824)) (i64.const 31)))";
  const std::string both_min = "(i32.and (i32.eq " + get(a) + " " + kMin + ") (i32.eq " + get(m) + " " + kMin + "))";
  out += set(h, "(select (i32.const 2147483647) " + high + " " + both_min + ")") + " ";
  out += set(r, "(select (i32.sub (i32.const 0) " + get(s) + ") (i32.const 0) (i32.lt_s " + get(s) + " (i32.const 0)))") + " ";
  out += set(mask, "(i32.sub (i32.shl (i32.const 1) " + get(r) + ") (i32.const 1))") + " ";
  const std::string threshold = "(i32.add (i32.shr_s " + get(mask) + " (i32.const 1)) (i32.lt_s " + get(h) + " (i32.const 0)))";
  out += "(i32.add (i32.shr_s " + get(h) + " " + get(r) + ") (i32.gt_s (i32.and " + get(h) + " " + get(mask) + ") " + threshold + ")))";
  return {"i32", out};
}

WVal FunctionEmitter::call_expr(const CallNode* c) {
  if (!c->builtin) user_error(c->span, "unknown intrinsic '" + c->op + "'");
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
    case Builtin::BitwiseOr: case Builtin::BitwiseXor: return int_binary(c);
    case Builtin::KnownRange: return expr(c->args.at(0));  // a fact for the shifts (int_binary), no code
    case Builtin::IfThenElse: {
      WVal cond = expr(c->args.at(0));
      WVal t = conditional_expr(c->args.at(1)), f = conditional_expr(c->args.at(2));
      return {t.ty, "(if (result " + t.ty + ") " + cond.code + " (then " + t.code + ") (else " + f.code + "))"};
    }
    case Builtin::CallExtern: return extern_call(c);
    case Builtin::TvmHandleIsNull: return {"i32", "(i32.eqz " + expr(c->args.at(0)).code + ")"};
    // The packed calling convention: wasm modules are built unpacked.
    case Builtin::TvmArgTypeCode:
    case Builtin::TvmArgHandle:
    case Builtin::TvmArgInt:
    case Builtin::TvmArgFloat:
    case Builtin::TvmTensorData:
    case Builtin::TvmTensorNdim:
    case Builtin::TvmTensorShape:
    case Builtin::TvmTensorStridesIsNull:
    case Builtin::TvmTensorStride:
    case Builtin::TvmTensorDtypeCode:
    case Builtin::TvmTensorDtypeBits:
    case Builtin::TvmTensorDtypeLanes:
    case Builtin::TvmTensorByteOffset:
    case Builtin::TvmTensorDeviceType:
    case Builtin::TvmHandleIsAligned:
    case Builtin::TvmStackAlloca:
    case Builtin::TvmSetArgHandle:
    case Builtin::TvmSetArgInt:
    case Builtin::TvmSetArgFloat:
    case Builtin::TvmSetTypeCode:
    case Builtin::TvmSetShape:
    case Builtin::TvmTensorInit:
    case Builtin::TvmCallPackedLowered:
      refuse_builtin(c, "wasm", "it belongs to the packed calling convention, and wasm modules are built with "
                                "-unpacked-api=1");
    case Builtin::TvmThrowLastError:
    case Builtin::TvmReturn: refuse_statement_builtin(c, "wasm");
    case Builtin::TvmCallPacked:
    case Builtin::TvmMakeTensor:
    case Builtin::CallTir: case Builtin::CallGlobal: case Builtin::Vmladava:  // vmladava: scalarize_vectors_simd128 expands it
    case Builtin::TirRegion: refuse_builtin(c, "wasm", "");
    case Builtin::AddressOf: {
      const auto* l = c->args.size() == 1 ? as<BufferLoadNode>(c->args[0]) : nullptr;
      if (!l) user_error(c->span, "T.address_of takes one buffer element, such as A[i]");
      return {"i32", address(l->buffer, l->indices, l->span)};
    }
    case Builtin::Smlad: {
      // Emitted in the order the text evaluates them (the accumulator first), for reused loads.
      WVal acc = expr(c->args.at(2));
      WVal a = expr(c->args.at(0)), bv = expr(c->args.at(1));
      auto lo = [](const WVal& v) { return "(i32.shr_s (i32.shl " + v.code + " (i32.const 16)) (i32.const 16))"; };
      auto hi = [](const WVal& v) { return "(i32.shr_s " + v.code + " (i32.const 16))"; };
      return {"i32", "(i32.add (i32.add " + acc.code + " (i32.mul " + lo(a) + " " + lo(bv) + ")) (i32.mul " + hi(a) + " " + hi(bv) + "))"};
    }
    case Builtin::MultiplyByQuantizedMultiplier: return multiply_by_quantized_multiplier(c);
    case Builtin::Smlabb: {
      WVal acc = expr(c->args.at(2)), a = expr(c->args.at(0)), bv = expr(c->args.at(1));
      auto lo = [](const WVal& v) { return "(i32.extend16_s " + v.code + ")"; };
      return {"i32", "(i32.add " + acc.code + " (i32.mul " + lo(a) + " " + lo(bv) + "))"};
    }
    case Builtin::Smmlar: {
      WVal acc = expr(c->args.at(2));
      WVal a = expr(c->args.at(0)), bv = expr(c->args.at(1));
      std::string p = "(i64.mul (i64.extend_i32_s " + a.code + ") (i64.extend_i32_s " + bv.code + "))";
      std::string hi = "(i64.shl (i64.extend_i32_u " + acc.code + ") (i64.const 32))";
      return {"i32", "(i32.wrap_i64 (i64.shr_u (i64.add (i64.add " + hi + " " + p + ") (i64.const 2147483648)) (i64.const 32)))"};
    }
    case Builtin::PackBytes: case Builtin::WordPair: return word_builtin(c);
    case Builtin::Sxtb16: case Builtin::Sxtb16Ror8: {
      WVal x = expr(c->args.at(0));
      std::string v = b == Builtin::Sxtb16 ? x.code : "(i32.shr_u " + x.code + " (i32.const 8))";
      // Byte 0 sign-extended and masked to the low half; byte 2 sign-extended into the high half.
      std::string lo = "(i32.and (i32.extend8_s " + v + ") (i32.const 65535))";
      std::string hi = "(i32.shl (i32.extend8_s (i32.shr_u " + v + " (i32.const 16))) (i32.const 16))";
      return {"i32", "(i32.or " + lo + " " + hi + ")"};
    }
    case Builtin::Clz: {
      WVal x = expr(c->args.at(0));
      if (x.ty == "i64") return {"i32", "(i32.wrap_i64 (i64.clz " + x.code + "))"};
      return {"i32", "(i32.clz " + x.code + ")"};
    }
    case Builtin::Reinterpret: {
      std::string to = wasm_type(c->dtype, c->span);
      WVal x = c->dtype.is_handle() ? WVal{to, "(" + to + ".const 0)"} : expr(c->args.at(0));  // a null handle
      if (x.ty == to) return {to, x.code};
      return {to, "(" + to + ".reinterpret_" + x.ty + " " + x.code + ")"};
    }
  }
  internal_error(__FILE__, __LINE__, "unhandled builtin");
}

WVal FunctionEmitter::expr(const Expr& e) {
  if (e->dtype.is_vector() && e->kind != ExprKind::Var) return simd_expr(e);
  switch (e->kind) {
    case ExprKind::IntImm: return int_const(e->dtype, static_cast<const IntImmNode*>(e.get())->value);
    case ExprKind::FloatImm: return float_const(e->dtype, static_cast<const FloatImmNode*>(e.get())->value, e->span);
    case ExprKind::StringImm:
      return {"i32", "(i32.const " + int_text(ms_->string_address(static_cast<const StringImmNode*>(e.get())->value), 32) + ")"};
    case ExprKind::Var: {
      const auto* v = static_cast<const VarNode*>(e.get());
      auto it = vars_.find(v);
      if (it == vars_.end()) user_error(v->span, "variable '" + v->name + "' is not defined where wasm code uses it");
      return it->second;
    }
    case ExprKind::Add: return arith("add", static_cast<const BinaryNode*>(e.get()));
    case ExprKind::Sub: return arith("sub", static_cast<const BinaryNode*>(e.get()));
    case ExprKind::Mul: return arith("mul", static_cast<const BinaryNode*>(e.get()));
    case ExprKind::Div:
    case ExprKind::Mod:
    case ExprKind::FloorDiv:
    case ExprKind::FloorMod: {
      const auto* b = static_cast<const BinaryNode*>(e.get());
      if (!e->dtype.is_float()) return int_division(e->kind, b);
      WVal x = expr(b->a), y = expr(b->b);
      const std::string& ty = x.ty;
      if (e->kind == ExprKind::Div) return {ty, "(" + ty + ".div " + x.code + " " + y.code + ")"};
      if (e->kind == ExprKind::Mod) {
        std::string f = ms_->math_import(ty == "f32" ? "fmodf" : "fmod", ty, 2);
        return {ty, "(call " + f + " " + x.code + " " + y.code + ")"};
      }
      if (e->kind == ExprKind::FloorDiv) return {ty, "(" + ty + ".floor (" + ty + ".div " + x.code + " " + y.code + "))"};
      std::string tx = temp(ty), ty_ = temp(ty);
      return {ty, "(" + ty + ".sub (local.tee " + tx + " " + x.code + ") (" + ty + ".mul (" + ty + ".floor (" + ty +
                      ".div (local.get " + tx + ") (local.tee " + ty_ + " " + y.code + "))) (local.get " + ty_ + ")))"};
    }
    case ExprKind::Min:
    case ExprKind::Max: {
      // a < b ? a : b, exactly as the C helpers (NaN operands pick b).
      const auto* b = static_cast<const BinaryNode*>(e.get());
      WVal x = expr(b->a), y = expr(b->b);
      const bool mn = e->kind == ExprKind::Min;
      DataType t = e->dtype;
      std::string tx = temp(x.ty), tyv = temp(y.ty);
      std::string cmp = std::string(mn ? "lt" : "gt") + (t.is_float() ? "" : sign_suffix(t));
      // Operands are evaluated in order: the values first, then the comparison of them.
      return {x.ty, "(select (local.tee " + tx + " " + x.code + ") (local.tee " + tyv + " " + y.code + ") (" + x.ty + "." +
                        cmp + " (local.get " + tx + ") (local.get " + tyv + ")))"};
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
      WVal x = expr(b->a);
      WVal y = conditional_expr(b->b);
      if (e->kind == ExprKind::And) return {"i32", "(if (result i32) " + x.code + " (then " + y.code + ") (else (i32.const 0)))"};
      return {"i32", "(if (result i32) " + x.code + " (then (i32.const 1)) (else " + y.code + "))"};
    }
    case ExprKind::Not: return {"i32", "(i32.eqz " + expr(static_cast<const NotNode*>(e.get())->a).code + ")"};
    case ExprKind::Select: {
      const auto* s = static_cast<const SelectNode*>(e.get());
      // select evaluates both values, then the condition.
      WVal t = expr(s->true_value), f = expr(s->false_value);
      WVal c = expr(s->condition);
      return {t.ty, "(select " + t.code + " " + f.code + " " + c.code + ")"};
    }
    case ExprKind::Cast: {
      const auto* c = static_cast<const CastNode*>(e.get());
      return cast(expr(c->value), c->value->dtype, c->dtype, c->span);
    }
    case ExprKind::BufferLoad: return load(static_cast<const BufferLoadNode*>(e.get()));
    case ExprKind::Call: return call_expr(static_cast<const CallNode*>(e.get()));
    case ExprKind::Ramp:
    case ExprKind::Broadcast:
    case ExprKind::Shuffle:
    case ExprKind::Let:  // scalarize_vectors_simd128 leaves none
      refuse_unscalarized(e, "wasm", "scalar code");
  }
  internal_error(__FILE__, __LINE__, "unhandled expression kind");
}

}  // namespace wat_codegen
}  // namespace mtir
