// The LLVM backend's core emitter: names, blocks, conversions, memory, expressions,
// vectors and statements; codegen_llvm() assembles the module.
#include "codegen/llvm/codegen_llvm_internal.h"

namespace mtir::llvm_backend {

std::string FunctionEmitter::define(const std::string& name, const std::string& linkage) {
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

std::string FunctionEmitter::local_name(const std::string& hint) {
  return unique_name("%" + sanitized_name(hint, /*keep_dots=*/true), '.', &used_, &next_suffix_);
}

Val FunctionEmitter::op(const std::string& ty, const std::string& text) {
  std::string r = tmp();
  inst(r + " = " + text);
  return {ty, r};
}

void FunctionEmitter::begin_block(const std::string& l) {
  *out_ << l << ":\n";
  block_ = l;
}

void FunctionEmitter::cond_br(const Val& c, const std::string& t, const std::string& f) {
  inst("br i1 " + c.v + ", label %" + t + ", label %" + f);
}

std::string FunctionEmitter::entry_alloca(const std::string& ty, int64_t count, int align, const std::string& hint) {
  std::string name = local_name(hint);
  entry_ << "  " << name << " = alloca " << ty << (count != 1 ? ", i32 " + std::to_string(count) : "") << ", align "
         << align << "\n";
  return name;
}

Val FunctionEmitter::cast(const Val& v, DataType from, DataType to, const Span& span) {
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

Val FunctionEmitter::as_int(const Val& v, DataType from, const std::string& ty) {
  if (v.ty == ty) return v;
  int fb = from.is_bool() ? 1 : from.bits();
  int tb = std::stoi(ty.substr(1));
  if (tb < fb) return op(ty, "trunc " + v.typed() + " to " + ty);
  return op(ty, std::string(from.is_int() ? "sext " : "zext ") + v.typed() + " to " + ty);
}

Val FunctionEmitter::handle(const Buffer& b, const Span& span) {
  auto it = vars_.find(b->data.get());
  if (it == vars_.end()) user_error(span, "buffer '" + b->name + "' has no data pointer where LLVM code uses it");
  return it->second;
}

Val FunctionEmitter::elem_ptr(const Buffer& b, const std::vector<Expr>& indices, const Span& span) {
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

Val FunctionEmitter::load(const BufferLoadNode* l) {
  if (l->dtype.is_vector()) return vector_load(l);
  if (!paired_loads_.empty())
    if (std::optional<Val> word = paired_load(l)) return *word;
  Val p = elem_ptr(l->buffer, l->indices, l->span);
  DataType t = l->buffer->dtype;
  std::string mt = mem_type(t, l->span);
  Val v = op(mt, "load " + mt + ", " + p.typed() + ", align " + std::to_string(natural_align(t, ms_->target->pointer_bits)));
  if (t.is_bool()) return op("i1", "icmp ne i8 " + v.v + ", 0");
  if (l->dtype != t) return cast(v, t, l->dtype, l->span);
  return v;
}

void FunctionEmitter::store(const BufferStoreNode* s) {
  if (s->value->dtype.is_vector()) return vector_store(s);
  DataType t = s->buffer->dtype;
  Val v = expr(s->value);
  if (s->value->dtype != t) v = cast(v, s->value->dtype, t, s->span);
  if (t.is_bool()) v = op("i8", "zext " + v.typed() + " to i8");
  Val p = elem_ptr(s->buffer, s->indices, s->span);
  inst("store " + v.typed() + ", " + p.typed() + ", align " + std::to_string(natural_align(t, ms_->target->pointer_bits)));
}

Val FunctionEmitter::int_const(DataType t, int64_t v) {
  if (t.is_bool()) return {"i1", v ? "true" : "false"};
  // Print the value sign-extended from the type's width; LLVM reads the bits.
  int bits = t.bits();
  int64_t s = bits >= 64 ? v : static_cast<int64_t>(static_cast<uint64_t>(v) << (64 - bits)) >> (64 - bits);
  return {ll_type(t, {}), std::to_string(s)};
}

Val FunctionEmitter::float_const(DataType t, double v, const Span& span) {
  std::string ty = ll_type(t, span);
  // The interpreter holds a float32 constant rounded to float32; LLVM wants that
  // value written as the double with the same value.
  if (t.bits() == 32) v = static_cast<double>(static_cast<float>(v));
  return {ty, hex_double(v)};
}

Val FunctionEmitter::binary(const char* int_op, const char* float_op, const BinaryNode* e) {
  Val a = expr(e->a), b = expr(e->b);
  return op(a.ty, std::string(e->dtype.is_float() ? float_op : int_op) + " " + a.typed() + ", " + b.v);
}

Val FunctionEmitter::arith(const char* int_op, const char* float_op, const Expr& self) {
  const auto* e = static_cast<const BinaryNode*>(self.get());
  const bool flags = !e->dtype.is_float() && !e->dtype.is_bool() && bounds_.no_overflow(self);
  if (self->kind == ExprKind::Mul)
    if (std::optional<Val> v = widened_product(e, flags ? "mul nsw" : "mul")) return *v;
  if (!flags) return binary(int_op, float_op, e);
  std::string flagged = std::string(int_op) + (e->dtype.is_int() ? " nsw" : " nuw");
  return binary(flagged.c_str(), float_op, e);
}

Val FunctionEmitter::compare(ExprKind k, const BinaryNode* e) {
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

Val FunctionEmitter::int_division(ExprKind k, const BinaryNode* e) {
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

Val FunctionEmitter::short_circuit(bool is_and, const Expr& ea, const Expr& eb) {
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

Val FunctionEmitter::if_then_else(const CallNode* c) {
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

Val FunctionEmitter::call_expr(const CallNode* c) {
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
    case Builtin::BitwiseOr: case Builtin::BitwiseXor: return int_binary(c);
    case Builtin::KnownRange: return expr(c->args.at(0));  // a fact for the shifts (int_binary), no code
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
    case Builtin::CallTir: case Builtin::CallGlobal:
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
    case Builtin::Vmladava: case Builtin::MultiplyByQuantizedMultiplier: return vmladava(c);
    case Builtin::Smlad: return smlad(c);
    case Builtin::Smlabb: {
      Val a = arg(0), bv = arg(1), acc = arg(2);
      if (ms_->arm_dsp) return intrinsic("llvm.arm.smlabb", "i32", {a, bv, acc});
      auto lo = [&](const Val& v) { return op("i32", "sext i16 " + op("i16", "trunc i32 " + v.v + " to i16").v + " to i32"); };
      return op("i32", "add i32 " + acc.v + ", " + op("i32", "mul i32 " + lo(a).v + ", " + lo(bv).v).v);
    }
    case Builtin::Smmlar: return smmlar(c);
    case Builtin::Sxtb16: case Builtin::Sxtb16Ror8: return sxtb16(arg(0), b == Builtin::Sxtb16Ror8);
    case Builtin::PackBytes: case Builtin::WordPair: return word_builtin(c);
    case Builtin::Clz: {
      Val x = arg(0);
      Val r = intrinsic("llvm.ctlz." + x.ty, x.ty, {x, {"i1", "false"}});
      return x.ty == "i32" ? r : op("i32", "trunc " + r.typed() + " to i32");
    }
    case Builtin::Reinterpret: {
      std::string to = ll_type(c->dtype, c->span);
      Val x = c->dtype.is_handle() ? Val{to, "null"} : arg(0);  // T.reinterpret("handle", T.uint64(0)): null
      return x.ty == to ? x : op(to, "bitcast " + x.typed() + " to " + to);
    }
  }
  internal_error(__FILE__, __LINE__, "unhandled builtin");
}

Val FunctionEmitter::splat(const Val& scalar, int lanes) {
  const std::string vt = "<" + std::to_string(lanes) + " x " + scalar.ty + ">";
  Val one = op(vt, "insertelement " + vt + " undef, " + scalar.typed() + ", i32 0");
  return op(vt, "shufflevector " + one.typed() + ", " + vt + " undef, <" + std::to_string(lanes) +
                    " x i32> zeroinitializer");
}

Val FunctionEmitter::extract(const Val& v, int k, const std::string& elem_ty) {
  return op(elem_ty, "extractelement " + v.typed() + ", i32 " + std::to_string(k));
}

Val FunctionEmitter::insert(const Val& v, const Val& x, int k) {
  return op(v.ty, "insertelement " + v.typed() + ", " + x.typed() + ", i32 " + std::to_string(k));
}

std::string FunctionEmitter::lane_list(const std::vector<int>& lanes) {
  std::string out = "<";
  for (size_t i = 0; i < lanes.size(); ++i) out += (i ? ", i32 " : "i32 ") + std::to_string(lanes[i]);
  return out + ">";
}

Val FunctionEmitter::ramp(const RampNode* r) {
  Val base = expr(r->base), stride = expr(r->stride);
  std::string steps = "<";
  for (int k = 0; k < r->lanes; ++k) steps += (k ? ", " : "") + base.ty + " " + std::to_string(k);
  steps += ">";
  const std::string vt = ll_type(r->dtype, r->span);
  Val offsets = op(vt, "mul " + splat(stride, r->lanes).typed() + ", " + steps);
  return op(vt, "add " + splat(base, r->lanes).typed() + ", " + offsets.v);
}

Val FunctionEmitter::shuffle(const ShuffleNode* s) {
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

Val FunctionEmitter::lanewise(const Expr& e) {
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

bool FunctionEmitter::native_vector(const Expr& e) const {
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
    case ExprKind::Call: {
      // Shifts and bitwise operations lane for lane; VQRDMULH where Helium has it.
      const auto* c = static_cast<const CallNode*>(e.get());
      if (c->is(Builtin::MultiplyByQuantizedMultiplier)) return is_vqrdmulh(c);
      return e->dtype.is_integer() && (c->is(Builtin::ShiftRight) || c->is(Builtin::ShiftLeft) ||
                                       c->is(Builtin::BitwiseAnd) || c->is(Builtin::BitwiseOr) ||
                                       c->is(Builtin::BitwiseXor));
    }
    default: return false;
  }
}

const RampNode* FunctionEmitter::contiguous(const Buffer& b, const std::vector<Expr>& indices) {
  const auto* r = indices.size() == 1 ? as<RampNode>(indices[0]) : nullptr;
  const int64_t* stride = r ? as_const_int(r->stride) : nullptr;
  return stride && *stride == 1 && !b->dtype.is_bool() ? r : nullptr;
}

Val FunctionEmitter::vector_load(const BufferLoadNode* l) {
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

void FunctionEmitter::vector_store(const BufferStoreNode* s) {
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

// a < b ? a : b (min; max with >), exactly as the C helpers (NaN operands pick b).
Val FunctionEmitter::min_max(bool mn, const BinaryNode* b) {
  // A clamp to a signed n-bit range is one SSAT, as the C backend's __ssat: as selects,
  // InstCombine moves an add out of the clamp into its bounds (clamp(y + 96) becomes
  // clamp(y, -224, 31) + 96), and the ARM backend then forms no SSAT (4 instructions more).
  if (int bits = ms_->arm_dsp ? signed_clamp_bits(b) : 0; bits > 0)
    return intrinsic("llvm.arm.ssat", "i32", {expr(static_cast<const BinaryNode*>(b->a.get())->a), {"i32", std::to_string(bits)}});
  Val x = expr(b->a), y = expr(b->b);
  DataType t = b->dtype;
  std::string pred = t.is_float() ? (mn ? "fcmp olt " : "fcmp ogt ")
                                  : std::string("icmp ") + (t.is_int() ? (mn ? "slt " : "sgt ") : (mn ? "ult " : "ugt "));
  Val c = op(ll_type(DataType::Bool().with_lanes(t.lanes()), b->span), pred + x.typed() + ", " + y.v);
  return op(x.ty, "select " + c.typed() + ", " + x.typed() + ", " + y.typed());
}

Val FunctionEmitter::expr(const Expr& e) {
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
    case ExprKind::Max: return min_max(e->kind == ExprKind::Min, static_cast<const BinaryNode*>(e.get()));
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

void FunctionEmitter::emit(const Stmt& s) {
  const SourceLineScope at(&source_line_, s);
  switch (s->kind) {
    case StmtKind::BufferStore: store(static_cast<const BufferStoreNode*>(s.get())); return;
    case StmtKind::For: emit_for(static_cast<const ForNode*>(s.get())); return;
    case StmtKind::IfThenElse: emit_if(static_cast<const IfThenElseNode*>(s.get())); return;
    case StmtKind::LetStmt: {
      const auto* op = static_cast<const LetStmtNode*>(s.get());
      if (const auto* alloca = as<CallNode>(op->value); alloca && alloca->is(Builtin::TvmStackAlloca)) {
        emit_stack_alloca(op->var, alloca);
      } else {
        Val v = profiled(op->value);
        vars_[op->var.get()] = v;
        if (op->var->dtype.is_integer()) bounds_.bind(op->var.get(), bounds_.bound(op->value));
      }
      emit(op->body);
      return;
    }
    case StmtKind::SeqStmt: {
      const auto& seq = static_cast<const SeqStmtNode*>(s.get())->seq;
      const bool planned = paired_loads_.empty() && plan_paired_loads(s);
      for (const auto& child : seq) emit(child);
      if (planned) paired_loads_.clear();
      return;
    }
    case StmtKind::While: emit_while(static_cast<const WhileNode*>(s.get())); return;
    case StmtKind::Evaluate: emit_evaluate(static_cast<const EvaluateNode*>(s.get()), s); return;
    case StmtKind::Allocate: emit_allocate(static_cast<const AllocateNode*>(s.get())); return;
    case StmtKind::AllocateConst:
    case StmtKind::BufferRealize: unlowered_statement(s, "LLVM");
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

void FunctionEmitter::emit_if(const IfThenElseNode* op) {
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
}

void FunctionEmitter::emit_while(const WhileNode* op) {
  std::string head = label("while.head"), body = label("while.body"), exit = label("while.end");
  br(head);
  begin_block(head);
  cond_br(expr(op->condition), body, exit);
  begin_block(body);
  loop_exits_.emplace_back(exit, head);
  emit(op->body);
  loop_exits_.pop_back();
  br(head);
  begin_block(exit);
}

void FunctionEmitter::emit_evaluate(const EvaluateNode* op, const Stmt& s) {
  if (evaluates_constant(op)) return;
  if (LoopExit e = loop_exit(s); e != LoopExit::kNone) {
    MTIR_ICHECK(!loop_exits_.empty(), "a loop exit outside a loop");
    br(e == LoopExit::kBreak ? loop_exits_.back().first : loop_exits_.back().second);
    begin_block(label(e == LoopExit::kBreak ? "after.break" : "after.continue"));
    return;
  }
  if (const CallNode* call = statement_builtin(op)) {
    if (call->is(Builtin::TvmReturn)) emit_return(as_int(expr(call->args.at(0)), call->args[0]->dtype, "i32").v);
    else throw_last_error(call);
    return;
  }
  profiled(op->value);
}

int FunctionEmitter::padded_window_gather(const Stmt& body) const {
  struct Loads : Visitor {
    bool any = false;
    void visit_BufferLoad(const BufferLoadNode*) override { any = true; }
  };
  struct Gather : Visitor {
    const std::set<const VarNode*>* own;
    bool ok = true, padded = false;
    // Copies of the tap, as the loops of at most three steps around its test repeat it.
    int copies = 1, most = 1, in_tap = 0;
    void visit_For(const ForNode* op) override {
      const int64_t* n = as_const_int(op->extent);
      const int outer = copies;
      if (n && *n >= 1 && *n <= 3 && in_tap == 0) copies *= static_cast<int>(*n);
      most = std::max(most, copies);
      Visitor::visit_For(op);
      copies = outer;
    }
    void visit_BufferStore(const BufferStoreNode* op) override {
      ok = ok && own->count(op->buffer->data.get());
      Visitor::visit_BufferStore(op);
    }
    void visit_Call(const CallNode* op) override {
      ok = ok && is_pure(op->builtin) && !op->is(Builtin::Smlad);
      Visitor::visit_Call(op);
    }
    // A tap's border test: copy the tap, or write the padding value (no load).
    void visit_IfThenElse(const IfThenElseNode* op) override {
      Loads else_loads;
      if (op->else_case) else_loads.visit(op->else_case);
      padded = padded || (op->else_case && !else_loads.any);
      ok = ok && !else_loads.any;
      ++in_tap;
      Visitor::visit_IfThenElse(op);
      --in_tap;
    }
  } gather;
  gather.own = &local_allocations_;
  gather.visit(body);
  return ms_->arm_dsp && gather.ok && gather.padded ? gather.most : 0;
}

void FunctionEmitter::emit_for(const ForNode* node) {
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
  if (IntBound range; bounds_.loop_range(node->min, node->extent, &range)) bounds_.bind(node->loop_var.get(), range);
  loop_exits_.emplace_back(exit, latch);
  loop_vars_.push_back(node->loop_var.get());
  // The body is planned whole when it is straight-line code (lets do not plan themselves).
  const bool tile = paired_loads_.empty() && plan_paired_loads(node->body);
  emit(node->body);
  if (tile) paired_loads_.clear();
  loop_vars_.pop_back();
  loop_exits_.pop_back();
  bounds_.unbind(node->loop_var.get());
  br(latch);
  begin_block(latch);
  // i < end <= MAX, so i + 1 cannot wrap.
  inst(next + " = add " + std::string(t.is_uint() ? "nuw " : "nsw ") + ty + " " + i + ", 1");
  // T.unroll and T.vectorized loops carry the matching hint on their back edge. So does a
  // paired-load tile run twice: O2 turns its index into a phi of two constants, which loop
  // strength reduction cannot step, so each step recomputes its addresses (AD's first
  // layer: 91 instructions a step against GCC's 84); unrolled, the addresses are constant
  // offsets of one base. A tile of at least 32 SMLADs run four times or more is unrolled
  // twice on DSP cores without Helium's low-overhead loops: half the pointer steps, end
  // compares and branches (IC 14,956,235 -> 14,685,559 instructions, VWW 10,684,823 ->
  // 10,615,459, AD 387,316 -> 381,653; IC's code +4.2 KB); an odd count adds one step after
  // the loop (IC's nine-step tiles: 14,049,106 -> 13,932,069, code +2.3 KB). Shorter
  // bodies gain nothing (KWS's first layer, 30 SMLADs: +3,664). An im2col gather over one
  // pixel's 3x3 window with a border test per tap is unrolled whole (nine taps): O2 unrolls
  // each three-step loop by two with an exit in the middle, and in the 3x2-tile functions
  // PBQP keeps the nest's counters in stack slots (IC 14,612,688 -> 14,049,106, code +14.6
  // KB; the three pixels' 27 taps too: 13,986,190, +36.6 KB).
  const int64_t* extent = as_const_int(node->extent);
  const int gather_taps = extent && *extent <= 3 ? padded_window_gather(node->body) : 0;
  const bool unroll = node->for_kind == ForKind::kUnrolled || (tile && extent && *extent == 2) ||
                      (gather_taps > 0 && *extent * gather_taps <= 9);
  const bool unroll_twice = !unroll && tile && extent && *extent >= 4 &&
                            smlad_count(node->body) >= 32 && ms_->target->features.find("+mve") == std::string::npos;
  if (unroll || node->for_kind == ForKind::kVectorized) {
    inst("br label %" + head + ", !llvm.loop " +
         ms_->loop_metadata(unroll ? "llvm.loop.unroll.full" : "llvm.loop.vectorize.enable"));
  } else if (unroll_twice) {
    inst("br label %" + head + ", !llvm.loop " + ms_->loop_metadata("llvm.loop.unroll.count", "i32 2"));
  } else if (fills_word_pair_buffer(node)) {
    inst("br label %" + head + ", !llvm.loop " + ms_->loop_metadata("llvm.loop.unroll.disable"));
  } else {
    br(head);
  }
  begin_block(exit);
}

}  // namespace mtir::llvm_backend

namespace mtir {

using llvm_backend::FunctionEmitter;
using llvm_backend::ModuleState;
using llvm_backend::kTypes;

std::string codegen_llvm(const IRModule& m, const LlvmCodegenOptions& options) {
  ModuleState ms;
  ms.target = &llvm_target(options.triple);
  ms.arm_dsp = options.arm_dsp;
  ms.profile_hooks = options.profile_hooks;
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
