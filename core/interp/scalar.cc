// Scalar semantics of the reference interpreter; see scalar.h for the rules.
// Integer arithmetic is done on uint64_t, where overflow is defined, and then wrapped
// to the operand width, so the interpreter itself never hits signed-overflow UB.
#include "interp/scalar.h"

#include <cmath>
#include <cstdlib>
#include <limits>
#include <sstream>

#include "support/ndarray.h"

namespace mtir {
namespace interp {

namespace {

uint64_t u(int64_t v) { return static_cast<uint64_t>(v); }

// Applies `op` (a generic lambda) in the float type's own precision.
template <typename Op>
double float_op(DataType t, double a, double b, Op op) {
  if (t.bits() == 64) return op(a, b);
  float r = op(static_cast<float>(a), static_cast<float>(b));
  return round_to_float_type(t, r);
}

template <typename Op>
double float_op1(DataType t, double a, Op op) {
  if (t.bits() == 64) return op(a);
  float r = op(static_cast<float>(a));
  return round_to_float_type(t, r);
}

Scalar float_arith(ExprKind kind, DataType t, double a, double b) {
  switch (kind) {
    case ExprKind::Add: return make_float(t, float_op(t, a, b, [](auto x, auto y) { return x + y; }));
    case ExprKind::Sub: return make_float(t, float_op(t, a, b, [](auto x, auto y) { return x - y; }));
    case ExprKind::Mul: return make_float(t, float_op(t, a, b, [](auto x, auto y) { return x * y; }));
    case ExprKind::Div: return make_float(t, float_op(t, a, b, [](auto x, auto y) { return x / y; }));
    case ExprKind::Mod: return make_float(t, float_op(t, a, b, [](auto x, auto y) { return std::fmod(x, y); }));
    case ExprKind::FloorDiv:
      return make_float(t, float_op(t, a, b, [](auto x, auto y) { return std::floor(x / y); }));
    case ExprKind::FloorMod:
      return make_float(t, float_op(t, a, b, [](auto x, auto y) { return x - std::floor(x / y) * y; }));
    case ExprKind::Min: return make_float(t, a < b ? a : b);
    case ExprKind::Max: return make_float(t, a > b ? a : b);
    default: break;
  }
  MTIR_ICHECK(false, std::string("not an arithmetic node: ") + expr_kind_name(kind));
}

// Division and remainder on the integer values, truncating (C) or flooring (TIR).
int64_t int_divmod(ExprKind kind, DataType t, int64_t a, int64_t b, const Span& span) {
  if (b == 0) {
    bool is_div = kind == ExprKind::Div || kind == ExprKind::FloorDiv;
    user_error(span, is_div ? "division by zero" : "division by zero (in modulo)");
  }
  if (t.is_uint() || t.is_bool()) {
    // Operands are zero-extended (uint64 keeps its bit pattern), so unsigned
    // arithmetic on the 64-bit patterns is exact; floor and trunc agree.
    bool is_div = kind == ExprKind::Div || kind == ExprKind::FloorDiv;
    return static_cast<int64_t>(is_div ? u(a) / u(b) : u(a) % u(b));
  }
  // The one overflowing case of int64 division; narrower types compute it in int64
  // without overflow and wrap afterwards, which gives the same INT_MIN.
  if (a == std::numeric_limits<int64_t>::min() && b == -1) {
    return (kind == ExprKind::Div || kind == ExprKind::FloorDiv) ? a : 0;
  }
  int64_t q = a / b, r = a % b;
  switch (kind) {
    case ExprKind::Div: return q;
    case ExprKind::Mod: return r;
    case ExprKind::FloorDiv: return (r != 0 && ((r < 0) != (b < 0))) ? q - 1 : q;
    case ExprKind::FloorMod: return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
    default: break;
  }
  MTIR_ICHECK(false, "not a division");
}

bool int_less(DataType t, int64_t a, int64_t b) { return t.is_uint() ? u(a) < u(b) : a < b; }

Scalar int_arith(ExprKind kind, DataType t, int64_t a, int64_t b, const Span& span) {
  switch (kind) {
    case ExprKind::Add: return make_int(t, static_cast<int64_t>(u(a) + u(b)));
    case ExprKind::Sub: return make_int(t, static_cast<int64_t>(u(a) - u(b)));
    case ExprKind::Mul: return make_int(t, static_cast<int64_t>(u(a) * u(b)));
    case ExprKind::Div:
    case ExprKind::Mod:
    case ExprKind::FloorDiv:
    case ExprKind::FloorMod: return make_int(t, int_divmod(kind, t, a, b, span));
    case ExprKind::Min: return make_int(t, int_less(t, b, a) ? b : a);
    case ExprKind::Max: return make_int(t, int_less(t, a, b) ? b : a);
    default: break;
  }
  MTIR_ICHECK(false, std::string("not an arithmetic node: ") + expr_kind_name(kind));
}

// Range check for float -> integer conversion on the truncated value, as C requires.
bool float_fits_int(double v, DataType t) {
  if (std::isnan(v)) return false;
  double tv = std::trunc(v);
  if (t.is_bool()) return true;
  int bits = t.bits();
  if (t.is_uint()) return tv >= 0 && tv < std::ldexp(1.0, bits);  // -0.5 truncates to 0: fine
  return tv >= -std::ldexp(1.0, bits - 1) && tv < std::ldexp(1.0, bits - 1);
}

// int64 (or uint64 bit pattern) -> float type, rounding once.
double int_to_float(DataType to, DataType from, int64_t v) {
  bool from_unsigned = from.is_uint();
  if (to.bits() == 32)
    return from_unsigned ? static_cast<float>(u(v)) : static_cast<float>(v);
  double d = from_unsigned ? static_cast<double>(u(v)) : static_cast<double>(v);
  // For float16, d is exact below 2^53, and anything above overflows half anyway.
  return to.bits() == 16 ? round_to_float_type(to, d) : d;
}

}  // namespace

double round_to_float_type(DataType t, double v) {
  switch (t.bits()) {
    case 16: return half_to_float(float_to_half(v));
    case 32: return static_cast<float>(v);
    default: return v;
  }
}

Scalar make_float(DataType t, double v) {
  Scalar s;
  s.dtype = t;
  s.f = round_to_float_type(t, v);
  return s;
}

Scalar arith(ExprKind kind, DataType t, const Scalar& a, const Scalar& b, const Span& span) {
  if (t.is_float()) return float_arith(kind, t, a.f, b.f);
  MTIR_ICHECK(t.is_integer() || t.is_bool(), "arithmetic on " + t.str());
  return int_arith(kind, t, a.i, b.i, span);
}

bool compare(ExprKind kind, const Scalar& a, const Scalar& b) {
  if (a.dtype.is_float()) {
    switch (kind) {
      case ExprKind::EQ: return a.f == b.f;
      case ExprKind::NE: return a.f != b.f;
      case ExprKind::LT: return a.f < b.f;
      case ExprKind::LE: return a.f <= b.f;
      case ExprKind::GT: return a.f > b.f;
      case ExprKind::GE: return a.f >= b.f;
      default: break;
    }
  } else {
    DataType t = a.dtype;
    switch (kind) {
      case ExprKind::EQ: return a.i == b.i;
      case ExprKind::NE: return a.i != b.i;
      case ExprKind::LT: return int_less(t, a.i, b.i);
      case ExprKind::LE: return !int_less(t, b.i, a.i);
      case ExprKind::GT: return int_less(t, b.i, a.i);
      case ExprKind::GE: return !int_less(t, a.i, b.i);
      default: break;
    }
  }
  MTIR_ICHECK(false, std::string("not a comparison: ") + expr_kind_name(kind));
}

Scalar cast(DataType t, const Scalar& v, const Span& span) {
  const DataType from = v.dtype;
  if (t.is_bool()) return make_int(t, v.truthy() ? 1 : 0);
  if (t.is_integer()) {
    if (!from.is_float()) return make_int(t, v.i);  // wrap_int: C's modular conversion
    if (!float_fits_int(v.f, t))
      user_error(span, "cast of out-of-range value " + format_double(v.f) + " to " + t.str());
    double tv = std::trunc(v.f);
    int64_t bits = t.is_uint() && tv >= 0x1p63 ? static_cast<int64_t>(static_cast<uint64_t>(tv))
                                               : static_cast<int64_t>(tv);
    return make_int(t, bits);
  }
  if (t.is_float()) {
    if (from.is_float()) return make_float(t, v.f);
    return make_float(t, int_to_float(t, from, v.i));
  }
  user_error(span, "cannot interpret a cast to " + t.str());
}

Scalar unary_math(Builtin op, DataType t, const Scalar& x, const Span& span, const UnaryFunction& f) {
  const std::string name = builtin_info(op).name;
  if (!t.is_float()) {
    if (op != Builtin::Abs || !(t.is_integer() || t.is_bool()))
      user_error(span, name + " is only defined on floats, not " + t.str());
    if (t.is_uint() || t.is_bool() || x.i >= 0) return make_int(t, x.i);
    return make_int(t, static_cast<int64_t>(0 - u(x.i)));  // abs(INT_MIN) wraps to INT_MIN
  }
  if (t.bits() == 64) return make_float(t, f.f64(x.f));
  return make_float(t, float_op1(t, x.f, f.f32));
}

Scalar binary_math(Builtin op, DataType t, const Scalar& x, const Scalar& y, const Span& span) {
  const std::string name = builtin_info(op).name;
  if (op != Builtin::Pow) user_error(span, "T." + name + " is no math function of two arguments");
  if (!t.is_float()) user_error(span, name + " is only defined on floats, not " + t.str());
  if (t.bits() == 64) return make_float(t, std::pow(x.f, y.f));
  return make_float(t, float_op(t, x.f, y.f, [](float a, float b) { return static_cast<float>(std::pow(a, b)); }));
}

Scalar known_range(const Scalar& x, const Scalar& lo, const Scalar& hi, const Span& span) {
  if (x.i < lo.i || x.i > hi.i)
    user_error(span, "T.known_range: " + std::to_string(x.i) + " is outside the range [" + std::to_string(lo.i) + ", " +
                         std::to_string(hi.i) + "] it promises");
  return x;
}

Scalar int_binary(Builtin op, DataType t, const Scalar& x, const Scalar& y, const Span& span) {
  const std::string name = builtin_info(op).name;
  if (!t.is_integer()) user_error(span, name + " is only defined on integers, not " + t.str());
  if (op == Builtin::BitwiseAnd) return make_int(t, static_cast<int64_t>(u(x.i) & u(y.i)));
  if (op == Builtin::BitwiseOr) return make_int(t, static_cast<int64_t>(u(x.i) | u(y.i)));
  if (op == Builtin::BitwiseXor) return make_int(t, static_cast<int64_t>(u(x.i) ^ u(y.i)));
  if (!is_shift_op(op)) user_error(span, "T." + name + " is no shift or bitwise operator");
  // Values are already wrapped to t (sign- or zero-extended), so the shift amount is
  // in range exactly when its 64-bit value is.
  if (y.i < 0 || y.i >= t.bits()) // a uint64 amount above INT64_MAX looks negative here
    user_error(span, name + " by " + (t.is_uint() ? std::to_string(u(y.i)) : std::to_string(y.i)) +
                         " is out of range [0, " + std::to_string(t.bits()) + ") for " + t.str());
  if (op == Builtin::ShiftLeft) return make_int(t, static_cast<int64_t>(u(x.i) << y.i));
  // Arithmetic for signed values (sign-extended in i), logical for unsigned ones
  // (zero-extended in i, except uint64, whose bit pattern shifts as unsigned).
  if (t.is_int()) return make_int(t, x.i >> y.i);
  return make_int(t, static_cast<int64_t>(u(x.i) >> y.i));
}

std::string format_double(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  // Whole numbers print whole ("300", not "3e+02") while they stay readable.
  if (v == std::trunc(v) && std::fabs(v) < 1e16) {
    std::ostringstream os;
    os.precision(0);
    os << std::fixed << v;
    return os.str();
  }
  for (int precision = 1; precision <= 17; ++precision) {
    std::ostringstream os;
    os.precision(precision);
    os << v;
    // strtod, not stod: stod throws on subnormal results.
    if (std::strtod(os.str().c_str(), nullptr) == v) return os.str();
  }
  std::ostringstream os;
  os.precision(17);
  os << v;
  return os.str();
}

}  // namespace interp
}  // namespace mtir
