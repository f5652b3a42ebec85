// The C backend's builtin calls (builtin_calls.h).
#include "codegen/c/builtin_calls.h"

#include "codegen/c/c_helpers.h"
#include "codegen/emit_common.h"
#include "ir/op.h"
#include "ir/tvm_intrinsics.h"

namespace mtir::c_helpers {
namespace {

// Short suffix for helper names: i32, u8, f32.
std::string type_suffix(DataType t) {
  return std::string(t.is_float() ? "f" : t.is_uint() ? "u" : "i") + std::to_string(t.bits());
}

class BuiltinEmitter {
 public:
  explicit BuiltinEmitter(const BuiltinContext& context)
      : context_(context), helpers_(context.helpers), externs_(context.externs),
        module_symbols_(context.module_symbols) {}

  // libm's function of the same name (expf for float32), except sigmoid and abs.
  std::string math_call(const CallNode* op) {
    DataType t = op->dtype;
    const bool is_abs = op->is(Builtin::Abs);
    if (is_abs && t.is_integer()) {
      return t.is_uint() ? expr(op->args.at(0)) : call(use_helper("abs", t), op->args);
    }
    if (!t.is_float()) user_error(op->span, "intrinsic '" + op->op + "' needs a float argument, not " + t.str());
    std::string suffix = t.bits() == 32 ? "f" : "";
    std::string one = t.bits() == 32 ? "1.0f" : "1.0";
    if (op->is(Builtin::Sigmoid)) return "(" + one + " / (" + one + " + exp" + suffix + "(-" + expr(op->args.at(0)) + ")))";
    std::string name = is_abs ? "fabs" : op->op;
    return call(name + suffix, op->args);
  }

  // Shifts and bitwise operators. Narrow types compute in int and convert back. A
  // left shift goes through the unsigned type (shifting a negative value is undefined
  // in C); a signed right shift relies on the compiler's arithmetic shift (gcc and
  // clang define it so). A shift amount is masked into [0, bits) where shift_needs_mask:
  // the interpreter refuses one outside, C would leave it undefined.
  std::string int_binary(const CallNode* op) {
    DataType t = op->dtype;
    if (!t.is_integer()) user_error(op->span, "intrinsic '" + op->op + "' needs integer operands, not " + t.str());
    if (std::string halves = pack_halves(op); !halves.empty()) return halves;
    std::string ct = c_type(t, op->span);
    std::string a = expr(op->args.at(0)), b = expr(op->args.at(1));
    std::string r;
    const bool shift_left = op->is(Builtin::ShiftLeft);
    if (!is_shift_op(*op->builtin)) {
      r = "(" + a + (op->is(Builtin::BitwiseAnd) ? " & " : op->is(Builtin::BitwiseOr) ? " | " : " ^ ") + b + ")";
    } else {
      if (shift_needs_mask(op->args[1], t.bits())) b = "(" + b + " & " + std::to_string(t.bits() - 1) + ")";
      if (shift_left) {
        std::string ut = t.bits() <= 32 ? "uint32_t" : "uint64_t";
        r = "((" + ut + ")" + a + " << " + b + ")";
      } else {
        r = "(" + a + " >> " + b + ")";
      }
    }
    // Back to the type: narrow types were promoted to int, and a left shift ran unsigned.
    if (t.bits() < 32 || (shift_left && !(t.is_uint() && t.bits() >= 32))) return "((" + ct + ")" + r + ")";
    return r;
  }

  // (lo & 0xffff) | (hi << 16) in uint32 (ops' pack_pair, an im2col column's int16 pair) as
  // mtir_pack_halves (one PKHBT); "" for any other operation. Not where hi is a constant
  // (a half-full last word: the AND alone is one UXTH).
  std::string pack_halves(const CallNode* op) {
    const auto* low = op->args.size() == 2 ? as<CallNode>(op->args[0]) : nullptr;
    const auto* high = op->args.size() == 2 ? as<CallNode>(op->args[1]) : nullptr;
    if (!op->is(Builtin::BitwiseOr) || op->dtype != DataType::UInt(32) || !low || !high ||
        !low->is(Builtin::BitwiseAnd) || !high->is(Builtin::ShiftLeft))
      return "";
    const int64_t* mask = as_const_int(low->args.at(1));
    const int64_t* shift = as_const_int(high->args.at(1));
    Expr hi = high->args.at(0);
    while (const auto* cast = as<CastNode>(hi)) hi = cast->value;
    if (!mask || *mask != 0xffff || !shift || *shift != 16 || as_const_int(hi)) return "";
    (*helpers_)["mtir_pack_halves"] = kPackHalvesHelper;
    return "mtir_pack_halves(" + expr(low->args[0]) + ", " + expr(high->args[0]) + ")";
  }

  std::string extern_call(const CallNode* op) {
    // call_extern: the call's type is the result type, args[0] the symbol.
    const auto* sym = op->args.empty() ? nullptr : as<StringImmNode>(op->args[0]);
    if (!sym) user_error(op->span, "call_extern needs a symbol name");
    std::vector<Expr> args(op->args.begin() + 1, op->args.end());
    std::string proto = (op->dtype.is_void() ? std::string("void") : c_type(op->dtype, op->span)) + " " + sym->value + "(";
    for (size_t i = 0; i < args.size(); ++i) {
      std::string at = as<StringImmNode>(args[i]) ? "const char*" : c_type(args[i]->dtype, args[i]->span);
      proto += (i ? ", " : "") + at;
    }
    proto += std::string(args.empty() ? "void" : "") + ");";
    // A function of this module is already declared, with its exact signature.
    if (module_symbols_ && module_symbols_->count(sym->value)) return call(sym->value, args);
    auto [it, inserted] = externs_->emplace(sym->value, proto);
    if (!inserted && it->second != proto) {
      user_error(op->span, "external function '" + sym->value + "' is called with two different signatures",
                 {"first: " + it->second, "here: " + proto});
    }
    return call(sym->value, args);
  }

  // Every builtin of ir/builtins.def, by a switch without a default: a new row does not
  // compile until it has its case here. The packed calling convention's accesses
  // become TVMValue, type code and DLTensor accesses.
  std::string call_expr(const CallNode* op) {
    if (!op->builtin) user_error(op->span, "unknown intrinsic '" + op->op + "'");
    auto arg = [&](size_t i) { return expr(op->args.at(i)); };
    auto tensor = [&]() { return "((DLTensor*)" + arg(0) + ")"; };
    switch (*op->builtin) {
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
      case Builtin::Pow: return math_call(op);
      case Builtin::ShiftRight:
      case Builtin::ShiftLeft:
      case Builtin::BitwiseAnd:
      case Builtin::BitwiseOr:
      case Builtin::BitwiseXor: return int_binary(op);
      case Builtin::KnownRange: return arg(0);  // a fact for the shifts (int_binary), no code
      case Builtin::IfThenElse: return "(" + arg(0) + " ? " + arg(1) + " : " + arg(2) + ")";
      case Builtin::CallExtern: return extern_call(op);
      case Builtin::TvmArgTypeCode: return "((int32_t*)" + arg(0) + ")[" + arg(1) + "]";
      case Builtin::TvmArgHandle: return "((TVMValue*)" + arg(0) + ")[" + arg(1) + "].v_handle";
      case Builtin::TvmArgInt: return "((TVMValue*)" + arg(0) + ")[" + arg(1) + "].v_int64";
      case Builtin::TvmArgFloat: return "((TVMValue*)" + arg(0) + ")[" + arg(1) + "].v_float64";
      case Builtin::TvmTensorData: return tensor() + "->data";
      case Builtin::TvmTensorNdim: return "((int32_t)" + tensor() + "->ndim)";
      case Builtin::TvmTensorShape: return tensor() + "->shape[" + arg(1) + "]";
      case Builtin::TvmTensorStridesIsNull: return "(" + tensor() + "->strides == NULL)";
      case Builtin::TvmTensorStride: return tensor() + "->strides[" + arg(1) + "]";
      case Builtin::TvmTensorDtypeCode: return "((int32_t)" + tensor() + "->dtype.code)";
      case Builtin::TvmTensorDtypeBits: return "((int32_t)" + tensor() + "->dtype.bits)";
      case Builtin::TvmTensorDtypeLanes: return "((int32_t)" + tensor() + "->dtype.lanes)";
      case Builtin::TvmTensorByteOffset: return "((int64_t)" + tensor() + "->byte_offset)";
      case Builtin::TvmTensorDeviceType: return "((int32_t)" + tensor() + "->device.device_type)";
      case Builtin::TvmHandleIsNull: return "(" + arg(0) + " == NULL)";
      case Builtin::TvmHandleIsAligned: return "(((uintptr_t)" + arg(0) + " % (uintptr_t)" + arg(1) + ") == 0)";
      case Builtin::TvmThrowLastError:
      case Builtin::TvmReturn: refuse_statement_builtin(op, "C");
      case Builtin::TvmCallPacked:
      case Builtin::TvmMakeTensor:
      case Builtin::CallTir: case Builtin::CallGlobal:
      case Builtin::TirRegion: refuse_builtin(op, "C", "");
      case Builtin::TvmStackAlloca:
        refuse_builtin(op, "C", "it declares a stack array, so it can only be the value of a let (x = T.tvm_stack_alloca(...))");
      case Builtin::TvmSetArgHandle: return "(((TVMValue*)" + arg(0) + ")[" + arg(1) + "].v_handle = " + arg(2) + ")";
      case Builtin::TvmSetArgInt: return "(((TVMValue*)" + arg(0) + ")[" + arg(1) + "].v_int64 = " + arg(2) + ")";
      case Builtin::TvmSetArgFloat: return "(((TVMValue*)" + arg(0) + ")[" + arg(1) + "].v_float64 = " + arg(2) + ")";
      case Builtin::TvmSetTypeCode: return "(((int32_t*)" + arg(0) + ")[" + arg(1) + "] = " + arg(2) + ")";
      case Builtin::TvmSetShape: return "(((int64_t*)" + arg(0) + ")[" + arg(1) + "] = " + arg(2) + ")";
      case Builtin::TvmTensorInit:
        (*helpers_)["mtir_tensor_init"] = kTensorInitHelper;
        return "mtir_tensor_init((DLTensor*)" + arg(0) + ", " + arg(1) + ", (int64_t*)" + arg(2) + ", " + arg(3) + ", " +
               arg(4) + ", " + arg(5) + ")";
      case Builtin::TvmCallPackedLowered: return call_packed_lowered(op);
      case Builtin::AddressOf: {
        const auto* load = op->args.size() == 1 ? as<BufferLoadNode>(op->args[0]) : nullptr;
        if (!load) user_error(op->span, "T.address_of takes one buffer element, such as A[i]");
        return "(&" + access(load->buffer, load->indices, load->span) + ")";
      }
      case Builtin::Vmladava: case Builtin::MultiplyByQuantizedMultiplier: return helium_call(op);
      case Builtin::Smlad: return helped_call("mtir_smlad", kSmladHelper, op);
      case Builtin::Smlabb: return helped_call("mtir_smlabb", kSmlabbHelper, op);
      case Builtin::Smmlar: return helped_call("mtir_smmlar", kSmmlarHelper, op);
      case Builtin::Sxtb16: case Builtin::Sxtb16Ror8:
        (*helpers_)["mtir_sxtb16"] = kSxtb16Helper;
        return call("mtir_" + op->op, op->args);
      case Builtin::PackBytes: return pack_bytes(op);
      case Builtin::Clz: return clz(op);
      case Builtin::WordPair: return word_pair(op);
      case Builtin::Reinterpret: return reinterpret(op);
    }
    internal_error(__FILE__, __LINE__, "unhandled builtin");
  }

  // pack_bytes and word_pair: one read of the whole word through helper `reader` where
  // the arguments are consecutive elements of one buffer of the type it reads (int8 or
  // uint8: one possibly unaligned word; int32: one paired load), else the values combined.
  std::string pack_bytes(const CallNode* op) {
    const BufferLoadNode* first = consecutive_elements(op->args);
    if (first && first->dtype.bits() == 8) return whole_word("mtir_read_word", kReadWordHelper, first);
    return helped_call("mtir_pack_bytes", kPackBytesHelper, op);
  }
  std::string word_pair(const CallNode* op) {
    const BufferLoadNode* first = consecutive_elements(op->args);
    if (first && first->dtype == DataType::Int(32)) return whole_word("mtir_word_pair", kWordPairHelper, first);
    return "((int64_t)((uint64_t)(uint32_t)" + expr(op->args[0]) + " | ((uint64_t)(uint32_t)" + expr(op->args[1]) + " << 32)))";
  }
  // The reader's call on the first element's address.
  std::string whole_word(const std::string& reader, const char* text, const BufferLoadNode* first) {
    (*helpers_)[reader] = text;
    return reader + "(&" + access(first->buffer, first->indices, first->span) + ")";
  }
  // A call of helper `name`, whose definition `text` goes into the file once.
  std::string helped_call(const std::string& name, const char* text, const CallNode* op) {
    (*helpers_)[name] = text;
    return call(name, op->args);
  }
  std::string clz(const CallNode* op) {
    const bool wide = op->args.at(0)->dtype.bits() == 64;
    const std::string name = wide ? "mtir_clz64" : "mtir_clz32";
    (*helpers_)[name] = clz_helper(name, wide ? "uint64_t" : "uint32_t", wide ? 64 : 32);
    return name + "((" + std::string(wide ? "uint64_t" : "uint32_t") + ")" + expr(op->args.at(0)) + ")";
  }

  // The Helium builtins in scalar C: vmladava (below) and multiply_by_quantized_multiplier.
  std::string helium_call(const CallNode* op) {
    if (op->is(Builtin::Vmladava)) return vmladava(op);
    return helped_call(kMultiplyByQuantizedMultiplierName, kMultiplyByQuantizedMultiplierHelper, op);
  }

  // vmladava over two contiguous vector loads (scalarize_vectors keeps only those):
  // the helper reads `lanes` elements from each load's first address.
  std::string vmladava(const CallNode* op) {
    (*helpers_)["mtir_vmladava"] = kVmladavaHelper;
    auto address = [&](const Expr& e) {
      const auto* load = as<BufferLoadNode>(e);
      const auto* ramp = load && load->indices.size() == 1 ? as<RampNode>(load->indices[0]) : nullptr;
      if (!ramp) user_error(op->span, "T.vmladava in the C backend needs contiguous vector loads (A[T.Ramp(i, 1, n)]) as arguments");
      return "(&" + access(load->buffer, {ramp->base}, load->span) + ")";
    };
    const DataType t = op->args.at(1)->dtype;
    return std::string(t.bits() == 8 ? "mtir_vmladava_s8(" : "mtir_vmladava_s16(") + expr(op->args.at(0)) + ", " +
           address(op->args[1]) + ", " + address(op->args[2]) + ", " + std::to_string(t.lanes()) + ")";
  }

  std::string call_packed_lowered(const CallNode* op) {
    const auto* callee = as<StringImmNode>(op->args.at(0));
    if (!callee) user_error(op->span, "T.tvm_call_packed_lowered needs the function name first");
    std::string rest =
        "(TVMValue*)" + expr(op->args.at(1)) + ", (int32_t*)" + expr(op->args.at(2)) + ", " + expr(op->args.at(3)) + ")";
    if (module_symbols_ && module_symbols_->count(callee->value)) {
      // The static inline body of the packed function: the compiler can inline it
      // and fold its argument checks against the tensors built right here.
      (*helpers_)["mtir_call_packed"] = kCallDirectHelper;
      return "mtir_call_packed(" + callee->value + "_checked, " + rest;
    }
    (*helpers_)["mtir_call_packed_by_name"] = kCallByNameHelper;
    return "mtir_call_packed_by_name(" + c_string_literal(callee->value) + ", " + rest;
  }

  std::string reinterpret(const CallNode* op) {
    const DataType from = op->args.at(0)->dtype, to = op->dtype;
    if (to.is_handle()) return "NULL";  // T.reinterpret("handle", T.uint64(0)), the only one the verifier takes
    if (from.is_float() == to.is_float()) return "((" + c_type(to, op->span) + ")" + expr(op->args[0]) + ")";
    // A union reads the same bytes as the other type (C99 6.5.2.3).
    const std::string ft = c_type(from, op->span), tt = c_type(to, op->span);
    const std::string name = "mtir_reinterpret_" + from.str() + "_" + to.str();
    (*helpers_)[name] = "static inline " + tt + " " + name + "(" + ft + " x) {\n  union {\n    " + ft +
                        " from;\n    " + tt + " to;\n  } u;\n  u.from = x;\n  return u.to;\n}\n";
    return name + "(" + expr(op->args[0]) + ")";
  }

 private:
  std::string expr(const Expr& e) { return context_.expr(e); }
  std::string access(const Buffer& b, const std::vector<Expr>& indices, const Span& span) {
    return context_.element(b, indices, span);
  }
  std::string use_helper(const std::string& base, DataType t) { return typed_helper(base, t, helpers_); }
  std::string call(const std::string& fn, const std::vector<Expr>& args) {
    std::string s = fn + "(";
    for (size_t i = 0; i < args.size(); ++i) s += (i ? ", " : "") + expr(args[i]);
    return s + ")";
  }

  const BuiltinContext& context_;
  std::map<std::string, std::string>* helpers_;
  std::map<std::string, std::string>* externs_;
  const std::set<std::string>* module_symbols_;
};

}  // namespace

std::string typed_helper(const std::string& base, DataType t, std::map<std::string, std::string>* helpers) {
  std::string name = "mtir_" + base + "_" + type_suffix(t);
  if (!helpers->count(name)) (*helpers)[name] = helper_definition(name, t);
  return name;
}

std::string builtin_call(const CallNode* op, const BuiltinContext& context) {
  return BuiltinEmitter(context).call_expr(op);
}

}  // namespace mtir::c_helpers
