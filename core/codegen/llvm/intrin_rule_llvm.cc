// Math and target intrinsics of the LLVM backend (TVM's intrin_rule_llvm): llvm.*
// intrinsics, libm calls, the Arm DSP helpers, extern C calls.
#include "codegen/emit_common.h"
#include "codegen/llvm/codegen_llvm_internal.h"

namespace mtir::llvm_backend {

Val FunctionEmitter::intrinsic(const std::string& name, const std::string& ty, const std::vector<Val>& args) {
  std::string decl = "declare " + ty + " @" + name + "(";
  std::string call = "call " + ty + " @" + name + "(";
  for (size_t i = 0; i < args.size(); ++i) {
    decl += (i ? ", " : "") + args[i].ty;
    call += (i ? ", " : "") + args[i].typed();
  }
  ms_->declare(name, decl + ")");
  return op(ty, call + ")");
}

Val FunctionEmitter::word_pair(const CallNode* c) {
  if (std::optional<Val> both = adjacent_word_pair(c)) return *both;
  auto wide = [&](const Expr& e) { return op("i64", "zext i32 " + expr(e).v + " to i64"); };
  Val lo = wide(c->args.at(0));
  Val hi = op("i64", "shl i64 " + wide(c->args.at(1)).v + ", 32");
  return op("i64", "or i64 " + lo.v + ", " + hi.v);
}

Val FunctionEmitter::smlad(const CallNode* c) {
  Val a = expr(c->args.at(0)), bv = expr(c->args.at(1)), acc = expr(c->args.at(2));
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

Val FunctionEmitter::smmlar(const CallNode* c) {
  Val a = expr(c->args.at(0)), bv = expr(c->args.at(1)), acc = expr(c->args.at(2));
  const bool constant_operand = as_const_int(c->args[0]) || as_const_int(c->args[1]) || as_const_int(c->args[2]);
  if (ms_->arm_dsp && constant_operand) {
    // A constant operand through an empty asm too: a register value that LICM hoists out
    // of the loops (as a constant, instruction selection rebuilt it with MOVW and MOVT at
    // every use: IC 15,048,335 -> 14,958,763 instructions).
    auto in_register = [&](const Val& v, size_t i) {
      if (!as_const_int(c->args[i])) return v;
      return op("i32", "call i32 asm \"\", \"=r,0\"(" + v.typed() + ") nounwind readnone");
    };
    a = in_register(a, 0), bv = in_register(bv, 1), acc = in_register(acc, 2);
    return op("i32", "call i32 asm \"smmlar $0, $1, $2, $3\", \"=r,r,r,r\"(" + a.typed() + ", " + bv.typed() + ", " +
                         acc.typed() + ") nounwind readnone");
  }
  auto wide = [&](const Val& v) { return op("i64", "sext i32 " + v.v + " to i64"); };
  Val p = op("i64", "mul i64 " + wide(a).v + ", " + wide(bv).v);
  Val hi = op("i64", "shl i64 " + op("i64", "zext i32 " + acc.v + " to i64").v + ", 32");
  Val sum = op("i64", "add i64 " + op("i64", "add i64 " + hi.v + ", " + p.v).v + ", 2147483648");
  return op("i32", "trunc i64 " + op("i64", "lshr i64 " + sum.v + ", 32").v + " to i32");
}

// On Helium an int32x4 T.multiply_by_quantized_multiplier is VQRDMULH (the doubled high
// word rounded half up, saturated) between the shifts, as the C backend's mtir_v4_mbqm:
// x << max(s, 0) before, and after a rounding shift right by -min(s, 0) (VRSHL rounds
// half up; one less for a negative value first makes it half away from zero, TFLite's
// rounding). With shift 0 it is the VQRDMULH alone (mve_pair_requant's form). Without
// MVE it runs lane by lane (LLVM has no 64-bit vector multiply on MVE).
bool FunctionEmitter::is_vqrdmulh(const CallNode* c) const {
  return c->dtype == DataType::Int(32).with_lanes(4) && ms_->target->features.find("+mve") != std::string::npos;
}

Val FunctionEmitter::helium_multiply_by_quantized_multiplier(const CallNode* c) {
  const std::string v4 = "<4 x i32>";
  auto vqrdmulh = [&](const Val& a, const Val& b) { return intrinsic("llvm.arm.mve.vqrdmulh.v4i32", v4, {a, b}); };
  const auto* shift = as<BroadcastNode>(c->args[2]);
  const int64_t* zero = shift ? as_const_int(shift->value) : nullptr;
  if (zero && *zero == 0) return vqrdmulh(expr(c->args[0]), expr(c->args[1]));
  auto splat4 = [](int64_t v) {
    const std::string e = "i32 " + std::to_string(v);
    return "<" + e + ", " + e + ", " + e + ", " + e + ">";
  };
  auto bin = [&](const std::string& inst, const Val& a, const std::string& b) { return op(v4, inst + " " + a.typed() + ", " + b); };
  auto pick = [&](const std::string& pred, const Val& a, const std::string& b) {
    Val cond = op("<4 x i1>", "icmp " + pred + " " + a.typed() + ", " + b);
    return op(v4, "select " + cond.typed() + ", " + a.typed() + ", " + v4 + " " + b);
  };
  Val s = pick("sgt", pick("slt", expr(c->args[2]), splat4(30)), splat4(-31));  // the interpreter's range
  Val right = pick("slt", s, splat4(0)), left = pick("sgt", s, splat4(0));
  Val h = vqrdmulh(bin("shl", expr(c->args[0]), left.v), expr(c->args[1]));
  Val minus_one_if_negative = bin("ashr", bin("and", h, right.v), splat4(31));
  h = intrinsic("llvm.sadd.sat.v4i32", v4, {h, minus_one_if_negative});
  return intrinsic("llvm.arm.mve.vshl.vector.v4i32.v4i32", v4, {h, right, {"i32", "0"}, {"i32", "1"}, {"i32", "0"}});
}

// In 64-bit lanes: x << left, the doubled high word rounded half up (INT32_MIN *
// INT32_MIN saturates), then the division by 2^right rounded half away from zero; the
// shifts clamped to [0, 30] and [0, 31] as the interpreter does.
Val FunctionEmitter::multiply_by_quantized_multiplier(const CallNode* c) {
  if (is_vqrdmulh(c)) return helium_multiply_by_quantized_multiplier(c);
  const int n = c->dtype.lanes();
  Val x = expr(c->args.at(0)), m = expr(c->args.at(1)), s = expr(c->args.at(2));
  auto type = [&](const char* elem) { return n > 1 ? "<" + std::to_string(n) + " x " + elem + ">" : std::string(elem); };
  const std::string t32 = type("i32"), t64 = type("i64"), t1 = type("i1");
  auto splat = [&](const char* elem, int64_t v) {
    if (n == 1) return std::to_string(v);
    std::string out = "<";
    for (int k = 0; k < n; ++k) out += (k ? ", " : "") + std::string(elem) + " " + std::to_string(v);
    return out + ">";
  };
  auto bin = [&](const std::string& inst, const std::string& ty, const Val& a, const std::string& b) {
    return op(ty, inst + " " + ty + " " + a.v + ", " + b);
  };
  auto cmp = [&](const std::string& pred, const Val& a, const std::string& b) {
    return op(t1, "icmp " + pred + " " + t32 + " " + a.v + ", " + b);
  };
  auto pick = [&](const Val& cond, const std::string& a, const std::string& b) {
    return op(t32, "select " + t1 + " " + cond.v + ", " + t32 + " " + a + ", " + t32 + " " + b);
  };
  auto clamp = [&](const Val& v, const std::string& pred, int64_t limit) {
    return pick(cmp(pred, v, splat("i32", limit)), splat("i32", limit), v.v);
  };
  Val left = clamp(clamp(s, "slt", 0), "sgt", 30);
  Val right = clamp(clamp(bin("sub", t32, Val{t32, splat("i32", 0)}, s.v), "slt", 0), "sgt", 31);
  Val a = bin("shl", t32, x, left.v);
  Val a64 = op(t64, "sext " + a.typed() + " to " + t64), m64 = op(t64, "sext " + m.typed() + " to " + t64);
  Val p = bin("add", t64, bin("mul", t64, a64, m64.v), splat("i64", int64_t{1} << 30));
  Val high = op(t32, "trunc " + bin("ashr", t64, p, splat("i64", 31)).typed() + " to " + t32);
  const int64_t kMin = -(int64_t{1} << 31);
  Val both_min = bin("and", t1, cmp("eq", a, splat("i32", kMin)), cmp("eq", m, splat("i32", kMin)).v);
  Val h = pick(both_min, splat("i32", (int64_t{1} << 31) - 1), high.v);
  Val mask = bin("sub", t32, bin("shl", t32, Val{t32, splat("i32", 1)}, right.v), splat("i32", 1));
  Val negative = op(t32, "zext " + cmp("slt", h, splat("i32", 0)).typed() + " to " + t32);
  Val threshold = bin("add", t32, bin("ashr", t32, mask, splat("i32", 1)), negative.v);
  Val up = op(t32, "zext " + cmp("sgt", bin("and", t32, h, mask.v), threshold.v).typed() + " to " + t32);
  return bin("add", t32, bin("ashr", t32, h, right.v), up.v);
}

// Widened lanes, their products and llvm.vector.reduce.add: LLVM's ARM backend forms
// VMLADAVA from this where the target has MVE, a lane loop elsewhere.
Val FunctionEmitter::vmladava(const CallNode* c) {
  if (c->is(Builtin::MultiplyByQuantizedMultiplier)) return multiply_by_quantized_multiplier(c);  // Helium's other builtin
  Val acc = expr(c->args.at(0)), a = expr(c->args.at(1)), bv = expr(c->args.at(2));
  const int lanes = c->args[1]->dtype.lanes();
  // On Helium, 16 int8 lanes are one VMLADAVA.S8 through its intrinsic. As widened lanes,
  // LICM hoists a column's sign extension out of the channel loop: four q registers of
  // int32 lanes per column, spilled, and four VMLADAVA.U32 a step (KWS's pointwise
  // layers 3.4x C's instructions).
  if (lanes == 16 && c->args[1]->dtype.element_of() == DataType::Int(8) &&
      c->args[2]->dtype.element_of() == DataType::Int(8) && ms_->target->features.find("+mve") != std::string::npos)
    return intrinsic("llvm.arm.mve.vmldava.v16i8", "i32", {{"i32", "0"}, {"i32", "0"}, {"i32", "0"}, acc, a, bv});
  const std::string wide = "<" + std::to_string(lanes) + " x i32>";
  Val xa = op(wide, "sext " + a.typed() + " to " + wide), xb = op(wide, "sext " + bv.typed() + " to " + wide);
  Val prod = op(wide, "mul " + wide + " " + xa.v + ", " + xb.v);
  Val sum = intrinsic("llvm.vector.reduce.add.v" + std::to_string(lanes) + "i32", "i32", {prod});
  return op("i32", "add i32 " + acc.v + ", " + sum.v);
}

Val FunctionEmitter::math_call(const CallNode* c) {
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

bool FunctionEmitter::is_sign_of_high_word(const CallNode* c) const {
  const int64_t* amount = as_const_int(c->args[1]);
  const auto* cast = as<CastNode>(c->args[0]);
  return ms_->target->triple.rfind("thumb", 0) == 0 && c->dtype == DataType::Int(32) && amount && *amount == 31 &&
         cast && cast->value->dtype == DataType::Int(64);
}

std::optional<Val> FunctionEmitter::widened_product(const BinaryNode* e, const std::string& mul) {
  if (!ms_->arm_dsp || !(e->dtype == DataType::Int(64))) return std::nullopt;
  const bool constant_first = as_const_int(e->a) != nullptr;
  const int64_t* c = as_const_int(constant_first ? e->a : e->b);
  const auto* widened = as<CastNode>(constant_first ? e->b : e->a);
  if (!c || !widened || !(widened->value->dtype == DataType::Int(32))) return std::nullopt;
  if ((*c >= -65536 && *c <= 65535) || *c < INT32_MIN || *c > INT32_MAX) return std::nullopt;
  Val x = expr(constant_first ? e->b : e->a);
  // readnone: LLVM may still hoist it out of loops and share it.
  Val k = op("i32", "call i32 asm \"\", \"=r,0\"(i32 " + std::to_string(*c) + ") nounwind readnone");
  Val wide = op("i64", "sext " + k.typed() + " to i64");
  return op("i64", mul + " " + x.typed() + ", " + wide.v);
}

Val FunctionEmitter::int_binary(const CallNode* c) {
  DataType t = c->dtype;
  if (!t.is_integer()) user_error(c->span, "intrinsic '" + c->op + "' needs integer operands, not " + t.str());
  Val a = expr(c->args.at(0)), b = expr(c->args.at(1));
  if (c->is(Builtin::BitwiseAnd)) return op(a.ty, "and " + a.typed() + ", " + b.v);
  if (c->is(Builtin::BitwiseOr)) return op(a.ty, "or " + a.typed() + ", " + b.v);
  if (c->is(Builtin::BitwiseXor)) return op(a.ty, "xor " + a.typed() + ", " + b.v);
  if (shift_needs_mask(c->args[1], t.bits())) {
    const Val mask{ll_type(t.element_of(), c->span), std::to_string(t.bits() - 1)};
    b = op(b.ty, "and " + b.typed() + ", " + (t.is_vector() ? splat(mask, t.lanes()) : mask).v);
  }
  if (c->is(Builtin::ShiftRight) && is_sign_of_high_word(c)) a = op(a.ty, "freeze " + a.typed());
  const char* inst = c->is(Builtin::ShiftLeft) ? "shl " : t.is_int() ? "ashr " : "lshr ";
  return op(a.ty, inst + a.typed() + ", " + b.v);
}

Val FunctionEmitter::extern_call(const CallNode* c) {
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
  if (c == profiled_call_.first) inst(profiled_call_.second);
  if (ret == "void") {
    inst(call);
    return {"i32", "0"};
  }
  return op(ret, call);
}

Val FunctionEmitter::sxtb16(Val x, bool ror8) {
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

// Four consecutive int8 elements of one buffer: one word load of alignment 1 (ARM: one
// LDR, whose address may be unaligned; LLVM does not combine the byte loads itself, IC
// +400,000 instructions). Otherwise the low bytes of the four arguments or-ed into place.
Val FunctionEmitter::pack_bytes(const CallNode* c) {
  if (const BufferLoadNode* first = consecutive_elements(c->args); first && first->dtype.bits() == 8) {
    Val p = elem_ptr(first->buffer, first->indices, first->span);
    return load_ty("i32", op("i32*", "bitcast " + p.typed() + " to i32*"), 1);
  }
  Val word;
  for (size_t k = 0; k < 4; ++k) {
    Val x = as_int(expr(c->args.at(k)), c->args[k]->dtype, "i32");
    x = op("i32", "and i32 " + x.v + ", 255");
    if (k) x = op("i32", "shl i32 " + x.v + ", " + std::to_string(8 * k));
    word = k ? op("i32", "or i32 " + word.v + ", " + x.v) : x;
  }
  return word;
}

}  // namespace mtir::llvm_backend
