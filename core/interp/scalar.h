// Scalar values of the reference interpreter and the arithmetic on them. Internal to
// core/interp; this is where the exact semantics every target is compared against
// live, so each rule states what C code it corresponds to.
//
// Integers (and bool) live in `i`, already wrapped to their width: signed types are
// sign-extended, unsigned ones zero-extended (a uint64 keeps its 64-bit pattern, so
// values above INT64_MAX look negative here and are compared and divided unsigned). Floats live in `f`, already rounded to their type (a float32 value is
// always exactly representable as a float).
#pragma once

#include <cstdint>
#include <string>

#include "ir/expr.h"

namespace mtir {
namespace interp {

struct Scalar {
  DataType dtype;
  int64_t i = 0;
  double f = 0;

  bool truthy() const { return dtype.is_float() ? f != 0 : i != 0; }
};

// Wraps `v` to an integer or bool type. Inline, like wrap_int: the interpreter's
// hottest path.
inline Scalar make_int(DataType t, int64_t v) {
  Scalar s;
  s.dtype = t;
  s.i = wrap_int(t, v);
  return s;
}
// Rounds `v` to a float type (float16 and float32 round to nearest even).
Scalar make_float(DataType t, double v);
// Rounds a double to the precision of float type `t`.
double round_to_float_type(DataType t, double v);

// Add, Sub, Mul, Div, Mod, FloorDiv, FloorMod, Min, Max of two values of type `t`.
//  - integers: two's complement wrap-around; Div/Mod truncate like C; FloorDiv and
//    FloorMod round toward negative infinity (the remainder takes the divisor's sign).
//    A zero divisor is a user error at `span`. INT_MIN / -1 wraps to INT_MIN and
//    INT_MIN % -1 is 0 (what the hardware result would be if C defined it).
//  - floats: each operation is rounded to the type (float16 computes in float, then
//    rounds to half). Div by zero gives IEEE inf/nan. Mod is fmod (truncating);
//    FloorDiv is floor(a / b) and FloorMod is a - floor(a / b) * b.
//    Min/Max are `a < b ? a : b` and `a > b ? a : b`, like the C printed for them: with
//    a NaN operand they return the second operand, and min(0.0, -0.0) is -0.0.
Scalar arith(ExprKind kind, DataType t, const Scalar& a, const Scalar& b, const Span& span);

// EQ, NE, LT, LE, GT, GE: IEEE comparisons for floats (NaN is unordered), unsigned
// comparisons for unsigned integers.
bool compare(ExprKind kind, const Scalar& a, const Scalar& b);

// C conversion to `t`, except that a float -> integer conversion whose truncated
// value does not fit the target (or is NaN) is a user error at `span`: C leaves it
// undefined. Anything -> bool is "nonzero" (a NaN is true, as in C).
Scalar cast(DataType t, const Scalar& v, const Span& span);

// The math builtins of ir/builtins.def (exp, log, ..., abs, pow) on a value of type `t`.
// float32 uses the float overloads of <cmath>, float64 the double ones, float16 the
// float ones followed by rounding to half. abs on integers wraps (abs(INT_MIN) is
// INT_MIN, like the two's complement result).
// `f` computes the function in float and in double (the interpreter's switch over
// Builtin passes one per builtin).
struct UnaryFunction {
  float (*f32)(float);
  double (*f64)(double);
};
Scalar unary_math(Builtin op, DataType t, const Scalar& x, const Span& span, const UnaryFunction& f);
Scalar binary_math(Builtin op, DataType t, const Scalar& x, const Scalar& y, const Span& span);

// shift_right, shift_left, bitwise_and, bitwise_or on integers of type `t`. A shift
// amount outside [0, bits of t) is a user error at `span` (C leaves it undefined).
// shift_right is arithmetic for signed types; shift_left wraps.
Scalar int_binary(Builtin op, DataType t, const Scalar& x, const Scalar& y, const Span& span);
// known_range(x, lo, hi): x, or a user error at `span` when it lies outside [lo, hi]
// (the code generators shift by it without a mask).
Scalar known_range(const Scalar& x, const Scalar& lo, const Scalar& hi, const Span& span);

// The float and double forms of a math builtin of one argument (exp ... abs); false for
// any other builtin.
bool unary_function(Builtin op, UnaryFunction* out);

// The DSP and bit-level builtins whose value is a pure function of their evaluated
// arguments (smlad, smlabb, smmlar, clz, sxtb16, sxtb16_ror8, pack_bytes, reinterpret): `args` are
// the call's arguments in order, `from` the first argument's type, `to` the call's.
// false for any other builtin.
bool is_pure_intrinsic(Builtin op);
// The most arguments of a pure intrinsic (pack_bytes).
constexpr size_t kMaxPureArgs = 4;
Scalar pure_intrinsic(Builtin op, DataType from, DataType to, const Scalar* args);

// How the tree walk (interpreter.cc) evaluates each builtin's calls.
enum class CallFamily {
  kUnaryMath,
  kBinaryMath,
  kIntBinary,
  kKnownRange,
  kIfThenElse,
  kExtern,
  kCallPacked,
  kCallTir,
  kCallGlobal,
  kPureIntrinsic,
  kVmladava,
  kReturn,
  kThrowLastError,
  kRefused,  // as an argument only, or in lowered functions only
};

CallFamily call_family(Builtin b);

// T.tvm_throw_last_error() without a message (TVM's form): the function fails with the
// error a runtime call set before it, which the interpreter has none of.
inline const char* const kNoMessageError =
    "the function failed: T.tvm_throw_last_error() returns the error an earlier runtime call set";

// Why the interpreter cannot evaluate `op` (a tensor description, an address, the
// packed API's argument accessors), or "" when it can.
std::string builtin_refusal(const CallNode* op);

// For messages: the shortest decimal that reads back as `v`.
std::string format_double(double v);

}  // namespace interp
}  // namespace mtir
