// The builtins of ir/builtins.def whose value the interpreter computes without its
// state (math functions, DSP and bit-level intrinsics), and the message for those it
// refuses: shared by the tree walk (interpreter.cc) and the compiled form (compile_*.cc);
// and each builtin's family, which the tree walk dispatches on.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "interp/scalar.h"
#include "support/bit_cast.h"
#include "ir/op.h"

namespace mtir {
namespace interp {

namespace {

// A generic lambda taken in float and in double.
template <typename F>
UnaryFunction both(F f) {
  return {static_cast<float (*)(float)>(f), static_cast<double (*)(double)>(f)};
}

// The same bits as another type of the same width (32 or 64 bits).
Scalar reinterpret_bits(DataType from, DataType to, const Scalar& x) {
  uint64_t bits = static_cast<uint64_t>(x.i);
  if (from.is_float()) bits = from.bits() == 32 ? bit_cast<uint32_t>(static_cast<float>(x.f)) : bit_cast<uint64_t>(x.f);
  if (to.is_float() && to.bits() == 32) return make_float(to, bit_cast<float>(static_cast<uint32_t>(bits)));
  if (to.is_float()) return make_float(to, bit_cast<double>(bits));
  return make_int(to, static_cast<int64_t>(bits));
}

int64_t half16(int64_t v, int k) { return static_cast<int16_t>(static_cast<uint32_t>(v) >> (16 * k)); }

// TFLite's MultiplyByQuantizedMultiplier (builtins.def): x * 2^left wrapping,
// SaturatingRoundingDoublingHighMul, RoundingDivideByPOT (half away from zero). Shifts
// outside [-31, 30] are clamped to it.
int32_t multiply_by_quantized_multiplier(int32_t x, int32_t m, int32_t s) {
  const int left = s > 0 ? std::min(s, 30) : 0, right = s < 0 ? std::min(-static_cast<int64_t>(s), int64_t{31}) : 0;
  const int32_t a = static_cast<int32_t>(static_cast<uint32_t>(x) << left);
  const int32_t kMin = std::numeric_limits<int32_t>::min();
  const int32_t h = a == kMin && m == kMin ? std::numeric_limits<int32_t>::max()
                                           : static_cast<int32_t>((int64_t{a} * m + (int64_t{1} << 30)) >> 31);
  const int32_t mask = static_cast<int32_t>((int64_t{1} << right) - 1);
  const int32_t threshold = (mask >> 1) + (h < 0 ? 1 : 0);
  return (h >> right) + ((h & mask) > threshold ? 1 : 0);
}

}  // namespace

bool unary_function(Builtin op, UnaryFunction* out) {
  switch (op) {
    case Builtin::Exp: *out = both([](auto x) { return std::exp(x); }); return true;
    case Builtin::Log: *out = both([](auto x) { return std::log(x); }); return true;
    case Builtin::Log2: *out = both([](auto x) { return std::log2(x); }); return true;
    case Builtin::Sqrt: *out = both([](auto x) { return std::sqrt(x); }); return true;
    case Builtin::Tanh: *out = both([](auto x) { return std::tanh(x); }); return true;
    case Builtin::Sigmoid:
      *out = both([](auto x) { return decltype(x)(1) / (decltype(x)(1) + std::exp(-x)); });
      return true;
    case Builtin::Sin: *out = both([](auto x) { return std::sin(x); }); return true;
    case Builtin::Cos: *out = both([](auto x) { return std::cos(x); }); return true;
    case Builtin::Floor: *out = both([](auto x) { return std::floor(x); }); return true;
    case Builtin::Ceil: *out = both([](auto x) { return std::ceil(x); }); return true;
    // Halfway cases away from zero, like roundf.
    case Builtin::Round: *out = both([](auto x) { return std::round(x); }); return true;
    case Builtin::Erf: *out = both([](auto x) { return std::erf(x); }); return true;
    case Builtin::Abs: *out = both([](auto x) { return std::fabs(x); }); return true;
    default: return false;
  }
}

bool is_pure_intrinsic(Builtin op) {
  switch (op) {
    case Builtin::Smlad:
    case Builtin::Smlabb:
    case Builtin::Smmlar:
    case Builtin::MultiplyByQuantizedMultiplier:
    case Builtin::Clz:
    case Builtin::Sxtb16:
    case Builtin::Sxtb16Ror8:
    case Builtin::PackBytes:
    case Builtin::WordPair:
    case Builtin::Reinterpret: return true;
    default: return false;
  }
}

Scalar pure_intrinsic(Builtin op, DataType from, DataType to, const Scalar* args) {
  const DataType i32 = DataType::Int(32);
  switch (op) {
    case Builtin::Smlad:
      return make_int(i32, args[2].i + half16(args[0].i, 0) * half16(args[1].i, 0) +
                               half16(args[0].i, 1) * half16(args[1].i, 1));
    case Builtin::Smlabb: return make_int(i32, args[2].i + half16(args[0].i, 0) * half16(args[1].i, 0));
    case Builtin::Smmlar: {
      const int64_t a = static_cast<int32_t>(args[0].i), b = static_cast<int32_t>(args[1].i);
      const uint64_t acc = static_cast<uint32_t>(args[2].i);
      const uint64_t sum = (acc << 32) + static_cast<uint64_t>(a * b) + 0x80000000u;
      return make_int(i32, static_cast<int32_t>(static_cast<uint32_t>(sum >> 32)));
    }
    case Builtin::MultiplyByQuantizedMultiplier:
      return make_int(i32, multiply_by_quantized_multiplier(static_cast<int32_t>(args[0].i), static_cast<int32_t>(args[1].i),
                                                            static_cast<int32_t>(args[2].i)));
    case Builtin::Clz: {
      const int bits = from.bits();
      uint64_t x = static_cast<uint64_t>(args[0].i);
      if (bits < 64) x &= (uint64_t{1} << bits) - 1;
      int n = bits;
      while (x) x >>= 1, --n;
      return make_int(i32, n);
    }
    case Builtin::Sxtb16:
    case Builtin::Sxtb16Ror8: {
      const uint32_t x = static_cast<uint32_t>(args[0].i) >> (op == Builtin::Sxtb16 ? 0 : 8);
      auto half = [x](int k) { return static_cast<uint32_t>(static_cast<uint16_t>(static_cast<int8_t>(x >> (16 * k)))); };
      return make_int(i32, static_cast<int32_t>(half(0) | (half(1) << 16)));
    }
    case Builtin::PackBytes: {
      uint32_t word = 0;
      for (int k = 0; k < 4; ++k) word |= static_cast<uint32_t>(static_cast<uint8_t>(args[k].i)) << (8 * k);
      return make_int(i32, static_cast<int32_t>(word));
    }
    case Builtin::WordPair:
      return make_int(DataType::Int(64), static_cast<int64_t>(static_cast<uint32_t>(args[0].i) |
                                                              static_cast<uint64_t>(static_cast<uint32_t>(args[1].i)) << 32));
    case Builtin::Reinterpret: return reinterpret_bits(from, to, args[0]);
    default: break;
  }
  MTIR_ICHECK(false, "not a pure intrinsic");
}

// Every builtin of ir/builtins.def, by a switch without a default: a new row does not
// compile until the interpreter says what it computes (or why it cannot).
CallFamily call_family(Builtin b) {
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
    case Builtin::Abs: return CallFamily::kUnaryMath;
    case Builtin::Pow: return CallFamily::kBinaryMath;
    case Builtin::ShiftRight:
    case Builtin::ShiftLeft:
    case Builtin::BitwiseAnd:
    case Builtin::BitwiseOr:
    case Builtin::BitwiseXor: return CallFamily::kIntBinary;
    case Builtin::KnownRange: return CallFamily::kKnownRange;
    case Builtin::IfThenElse: return CallFamily::kIfThenElse;
    case Builtin::CallExtern: return CallFamily::kExtern;
    case Builtin::TvmCallPacked: return CallFamily::kCallPacked;
    case Builtin::CallTir: return CallFamily::kCallTir;
    case Builtin::CallGlobal: return CallFamily::kCallGlobal;
    case Builtin::Smlad:
    case Builtin::Smlabb:
    case Builtin::Smmlar:
    case Builtin::MultiplyByQuantizedMultiplier:
    case Builtin::Reinterpret:
    case Builtin::Clz:
    case Builtin::Sxtb16:
    case Builtin::Sxtb16Ror8:
    case Builtin::PackBytes: return CallFamily::kPureIntrinsic;
    case Builtin::WordPair: return CallFamily::kPureIntrinsic;
    case Builtin::Vmladava: return CallFamily::kVmladava;
    case Builtin::TvmReturn: return CallFamily::kReturn;
    case Builtin::TvmThrowLastError: return CallFamily::kThrowLastError;
    // Arguments of calls above only (call_function reads them), then lowered functions' packed API.
    case Builtin::TvmMakeTensor:
    case Builtin::TirRegion:
    case Builtin::AddressOf:
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
    case Builtin::TvmHandleIsNull:
    case Builtin::TvmHandleIsAligned:
    case Builtin::TvmStackAlloca:
    case Builtin::TvmSetArgHandle:
    case Builtin::TvmSetArgInt:
    case Builtin::TvmSetArgFloat:
    case Builtin::TvmSetTypeCode:
    case Builtin::TvmSetShape:
    case Builtin::TvmTensorInit:
    case Builtin::TvmCallPackedLowered: return CallFamily::kRefused;
  }
  MTIR_ICHECK(false, "unhandled builtin");
}

std::string builtin_refusal(const CallNode* op) {
  const Builtin b = *op->builtin;
  if (call_family(b) != CallFamily::kRefused) return "";
  // Only as arguments of a call the interpreter makes (tvm_call_packed, call_tir).
  if (b == Builtin::TvmMakeTensor || b == Builtin::TirRegion)
    return "T." + op->op + " describes a tensor argument: it can only be an argument of T.tvm_call_packed or T.call_tir";
  if (b == Builtin::AddressOf) return "T.address_of yields a machine address, which the interpreter does not model";
  // Lowered functions only: the packed calling convention's arguments and stack.
  return "T." + op->op +
         " reads packed-API arguments, which exist only in generated code; interpret the function before "
         "make_packed_api";
}

}  // namespace interp
}  // namespace mtir
