#include "ir/op.h"

namespace mtir {

const std::vector<OpInfo>& all_ops() {
  using K = OpInfo::Kind;
  const DataType i32 = DataType::Int(32), i64 = DataType::Int(64), h = DataType::Handle();
  const DataType f64 = DataType::Float(64), b = DataType::Bool();
  static const std::vector<OpInfo> ops = {
      {"exp", K::kUnaryMath, false},   {"log", K::kUnaryMath, false},
      {"log2", K::kUnaryMath, false},
      {"sqrt", K::kUnaryMath, false},  {"tanh", K::kUnaryMath, false},
      {"sigmoid", K::kUnaryMath, false}, {"sin", K::kUnaryMath, false},
      {"cos", K::kUnaryMath, false},   {"floor", K::kUnaryMath, false},
      {"ceil", K::kUnaryMath, false},  {"round", K::kUnaryMath, false},
      {"erf", K::kUnaryMath, false},   {"abs", K::kUnaryMath, true},
      {"pow", K::kBinaryMath, false},
      {"shift_right", K::kIntBinary, true}, {"shift_left", K::kIntBinary, true},
      {"bitwise_and", K::kIntBinary, true}, {"bitwise_or", K::kIntBinary, true},
      {"bitwise_xor", K::kIntBinary, true},
      {"if_then_else", K::kIfThenElse, true},
      {"call_extern", K::kCallExtern, true},
      // The packed calling convention (MakePackedAPI). Arguments: TVMValue* args,
      // int32_t* type_codes; tensors are DLTensor*.
      {"tvm_arg_type_code", K::kBuiltin, false, i32, "hi"},
      {"tvm_arg_handle", K::kBuiltin, false, h, "hi"},
      {"tvm_arg_int", K::kBuiltin, false, i64, "hi"},
      {"tvm_arg_float", K::kBuiltin, false, f64, "hi"},
      {"tvm_tensor_data", K::kBuiltin, false, h, "h"},
      {"tvm_tensor_ndim", K::kBuiltin, false, i32, "h"},
      {"tvm_tensor_shape", K::kBuiltin, false, i64, "hi"},
      {"tvm_tensor_strides_is_null", K::kBuiltin, false, b, "h"},
      {"tvm_tensor_stride", K::kBuiltin, false, i64, "hi"},
      {"tvm_tensor_dtype_code", K::kBuiltin, false, i32, "h"},
      {"tvm_tensor_dtype_bits", K::kBuiltin, false, i32, "h"},
      {"tvm_tensor_dtype_lanes", K::kBuiltin, false, i32, "h"},
      {"tvm_tensor_byte_offset", K::kBuiltin, false, i64, "h"},
      {"tvm_tensor_device_type", K::kBuiltin, false, i32, "h"},
      {"tvm_handle_is_null", K::kBuiltin, false, b, "h"},
      {"tvm_handle_is_aligned", K::kBuiltin, false, b, "hi"},
      // Sets the runtime's last error to the message ("{}" replaced by the integer
      // arguments in order) and returns -1 from the function.
      {"tvm_throw_last_error", K::kBuiltin, false, i32, "s#", true},
      // Returns its (int32) argument from the function: the packed wrapper returns what
      // the kernel it calls returned.
      {"tvm_return", K::kBuiltin, false, i32, "i", true},
      // Calling a packed function by name, as TIR writes it: arguments are scalars and
      // tensors made with tvm_make_tensor(data, "dtype", extents...). Returns 0 or the
      // callee's error code. LowerBuiltins turns it into the explicit forms below.
      {"tvm_call_packed", K::kBuiltin, false, i32, "s*", true},
      {"tvm_make_tensor", K::kBuiltin, false, h, "hs#"},
      // Explicit forms: arrays on the caller's stack ("arg_value": TVMValue, "arg_tcode":
      // int32, "array": DLTensor, "shape": int64), field stores, and the call itself.
      {"tvm_stack_alloca", K::kBuiltin, false, h, "si"},
      {"tvm_set_arg_handle", K::kBuiltin, false, i32, "hih", true},
      {"tvm_set_arg_int", K::kBuiltin, false, i32, "hii", true},
      {"tvm_set_arg_float", K::kBuiltin, false, i32, "hif", true},
      {"tvm_set_type_code", K::kBuiltin, false, i32, "hii", true},
      {"tvm_set_shape", K::kBuiltin, false, i32, "hii", true},
      // tvm_tensor_init(tensor, data, shape, ndim, dtype code, bits): a compact CPU tensor.
      {"tvm_tensor_init", K::kBuiltin, false, i32, "hhhiii", true},
      {"tvm_call_packed_lowered", K::kBuiltin, false, i32, "shhi", true},
      // call_tir("callee", args...): a call to a PrimFunc of the same module, with
      // destination passing. A buffer argument is tir_region(B[mins...], extents...):
      // the rectangle of B starting at the load's indices; a whole buffer has zero mins
      // and its full extents. Returns 0 or the callee's error code.
      {"call_tir", K::kBuiltin, false, i32, "s*", true},
      {"tir_region", K::kBuiltin, false, h, "*"},
      // The address of a buffer element (its load is not performed).
      {"address_of", K::kBuiltin, false, h, "*"},
      // smlad(a, b, acc): acc + lo16(a) * lo16(b) + hi16(a) * hi16(b), the halves as
      // signed 16-bit values, wrapping in int32: the Cortex-M DSP dual multiply-accumulate
      // (one instruction there; plain arithmetic on other targets).
      {"smlad", K::kBuiltin, false, i32, "iii"},
      // sxtb16(x): bytes 0 and 2 of x sign-extended into the low and high halves (the
      // DSP SXTB16); sxtb16_ror8(x) takes bytes 1 and 3 (SXTB16 with ROR #8). Together
      // they widen four int8 values of one word into two int16 pairs for smlad.
      {"sxtb16", K::kBuiltin, false, i32, "i"},
      // TVM's clz: leading zero bits of a 32- or 64-bit integer (the width for zero).
      {"clz", K::kBuiltin, false, i32, "i"},
      // TVM's reinterpret: the same bits as another type of the same width (32 or 64
      // bits); the result type is the call's, so the verifier checks it apart.
      {"reinterpret", K::kBuiltin, false, i32, "*"},
      {"sxtb16_ror8", K::kBuiltin, false, i32, "i"},
  };
  return ops;
}

bool builtin_args_ok(const OpInfo& op, const std::vector<DataType>& arg_types, std::string* why) {
  std::string sig = op.signature;
  // A trailing '*' allows more arguments of any type, '#' more integers.
  char rest = !sig.empty() && (sig.back() == '*' || sig.back() == '#') ? sig.back() : 0;
  bool variadic = rest != 0;
  if (variadic) sig.pop_back();
  if (arg_types.size() < sig.size() || (!variadic && arg_types.size() != sig.size())) {
    *why = std::string("T.") + op.name + " takes " + (variadic ? "at least " : "") + std::to_string(sig.size()) +
           " argument(s), got " + std::to_string(arg_types.size());
    return false;
  }
  for (size_t i = 0; i < sig.size(); ++i) {
    DataType t = arg_types[i];
    bool ok = sig[i] == 'h'   ? t.is_handle()
              : sig[i] == 'i' ? t.is_integer()
              : sig[i] == 'f' ? t.is_float()
                              : t.is_handle();  // strings are handles
    if (!ok) {
      *why = std::string("argument ") + std::to_string(i + 1) + " of T." + op.name + " must be " +
             (sig[i] == 'i' ? "an integer" : sig[i] == 'h' ? "a handle" : sig[i] == 'f' ? "a float" : "a string") +
             ", not " + t.str();
      return false;
    }
  }
  for (size_t i = sig.size(); i < arg_types.size() && rest == '#'; ++i) {
    if (!arg_types[i].is_integer() && !arg_types[i].is_bool()) {
      *why = std::string("argument ") + std::to_string(i + 1) + " of T." + op.name + " must be an integer, not " +
             arg_types[i].str();
      return false;
    }
  }
  return true;
}

std::string format_error_message(const std::string& format, const std::vector<int64_t>& values) {
  std::string out;
  size_t next = 0;
  for (size_t i = 0; i < format.size(); ++i) {
    if (format.compare(i, 2, "{}") == 0 && next < values.size()) {
      out += std::to_string(values[next++]);
      ++i;
    } else {
      out += format[i];
    }
  }
  return out;
}

const OpInfo* lookup_op(const std::string& name) {
  for (const auto& op : all_ops())
    if (name == op.name) return &op;
  return nullptr;
}

}  // namespace mtir
