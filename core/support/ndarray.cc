// Host tensors. Elements are stored as explicit little-endian bytes, assembled and
// taken apart byte by byte, so the layout matches .npy files and the targets whatever
// the host's byte order is.
#include "support/ndarray.h"

#include <cmath>
#include <cstring>

#include "support/bit_cast.h"
#include "support/diagnostic.h"

namespace mtir {

namespace {

uint64_t load_le(const uint8_t* p, int nbytes) {
  uint64_t v = 0;
  for (int b = nbytes - 1; b >= 0; --b) v = (v << 8) | p[b];
  return v;
}

void store_le(uint8_t* p, int nbytes, uint64_t v) {
  for (int b = 0; b < nbytes; ++b) {
    p[b] = static_cast<uint8_t>(v & 0xff);
    v >>= 8;
  }
}


}  // namespace

uint16_t float_to_half(double v) {
  const uint16_t sign = std::signbit(v) ? 0x8000 : 0;
  if (std::isnan(v)) return sign | 0x7e00;
  double a = std::fabs(v);
  if (std::isinf(a)) return sign | 0x7c00;
  if (a == 0) return sign;
  int e2;  // a = m * 2^e2 with m in [0.5, 1), so 2^(e2-1) <= a < 2^e2
  std::frexp(a, &e2);
  int exponent = e2 - 1;
  // Scaling by a power of two is exact, so std::nearbyint (round to nearest, ties to
  // even in the default rounding mode) performs the one and only rounding.
  if (exponent < -14) {
    // Subnormal range: a multiple of 2^-24. A result of 1024 is the smallest normal,
    // whose encoding (exponent field 1, mantissa 0) is exactly 1024 too.
    double q = std::nearbyint(std::ldexp(a, 24));
    return sign | static_cast<uint16_t>(q);
  }
  double q = std::nearbyint(std::ldexp(a, 10 - exponent));  // in [1024, 2048]
  if (q == 2048) {  // rounded up into the next binade
    q = 1024;
    ++exponent;
  }
  if (exponent > 15) return sign | 0x7c00;  // overflow rounds to infinity
  uint16_t mantissa = static_cast<uint16_t>(static_cast<int>(q) - 1024);
  return sign | static_cast<uint16_t>((exponent + 15) << 10) | mantissa;
}

double half_to_float(uint16_t bits) {
  const bool negative = bits & 0x8000;
  const int exponent = (bits >> 10) & 0x1f;
  const int mantissa = bits & 0x3ff;
  double magnitude;
  if (exponent == 0) {
    magnitude = std::ldexp(static_cast<double>(mantissa), -24);
  } else if (exponent == 31) {
    magnitude = mantissa ? std::nan("") : HUGE_VAL;
  } else {
    magnitude = std::ldexp(static_cast<double>(1024 + mantissa), exponent - 25);
  }
  return negative ? -magnitude : magnitude;
}

NDArray NDArray::zeros(DataType dtype, std::vector<int64_t> shape) {
  NDArray a;
  a.dtype = dtype;
  a.shape = std::move(shape);
  // Shapes can come from user input (a --scalar that sizes an output), so this is a
  // user error rather than an internal one.
  for (int64_t d : a.shape)
    if (d < 0) user_error(Span{}, "negative extent " + std::to_string(d) + " in tensor shape");
  a.data.assign(static_cast<size_t>(a.num_elements() * dtype.bytes()), 0);
  return a;
}

int64_t NDArray::num_elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

double NDArray::get_float(int64_t i) const {
  MTIR_ICHECK(i >= 0 && i < num_elements(), "NDArray index out of range");
  const int nbytes = dtype.bytes();
  const uint64_t raw = load_le(&data[static_cast<size_t>(i * nbytes)], nbytes);
  if (dtype.is_float()) {
    switch (dtype.bits()) {
      case 16: return half_to_float(static_cast<uint16_t>(raw));
      case 32: return bit_cast<float>(static_cast<uint32_t>(raw));
      case 64: return bit_cast<double>(raw);
      default: break;
    }
    MTIR_ICHECK(false, "unsupported float width " + dtype.str());
  }
  // Integers and bool read as doubles too, which is what printing code wants.
  if (dtype.is_uint()) return static_cast<double>(static_cast<uint64_t>(get_int(i)));
  return static_cast<double>(get_int(i));
}

int64_t NDArray::get_int(int64_t i) const {
  MTIR_ICHECK(i >= 0 && i < num_elements(), "NDArray index out of range");
  MTIR_ICHECK(dtype.is_integer() || dtype.is_bool(), "get_int on " + dtype.str());
  const int nbytes = dtype.bytes();
  const uint64_t raw = load_le(&data[static_cast<size_t>(i * nbytes)], nbytes);
  if (dtype.is_bool()) return raw != 0;
  // wrap_int sign-extends signed types and zero-extends unsigned ones.
  DataType t = dtype.is_int() ? DataType::Int(nbytes * 8) : DataType::UInt(nbytes * 8);
  return wrap_int(t, static_cast<int64_t>(raw));
}

void NDArray::set_float(int64_t i, double v) {
  MTIR_ICHECK(i >= 0 && i < num_elements(), "NDArray index out of range");
  MTIR_ICHECK(dtype.is_float(), "set_float on " + dtype.str());
  uint8_t* p = &data[static_cast<size_t>(i * dtype.bytes())];
  switch (dtype.bits()) {
    case 16: store_le(p, 2, float_to_half(v)); return;
    case 32: store_le(p, 4, bit_cast<uint32_t>(static_cast<float>(v))); return;
    case 64: store_le(p, 8, bit_cast<uint64_t>(v)); return;
    default: break;
  }
  MTIR_ICHECK(false, "unsupported float width " + dtype.str());
}

void NDArray::set_int(int64_t i, int64_t v) {
  MTIR_ICHECK(i >= 0 && i < num_elements(), "NDArray index out of range");
  if (dtype.is_float()) {
    if (dtype.bits() == 32) {
      // Convert straight to float: int64 -> double -> float could round twice.
      set_float(i, static_cast<double>(static_cast<float>(v)));
    } else {
      set_float(i, static_cast<double>(v));  // exact for |v| <= 2^53; half overflows first
    }
    return;
  }
  MTIR_ICHECK(dtype.is_integer() || dtype.is_bool(), "set_int on " + dtype.str());
  uint8_t* p = &data[static_cast<size_t>(i * dtype.bytes())];
  uint64_t raw = dtype.is_bool() ? (v != 0 ? 1 : 0) : static_cast<uint64_t>(v);
  store_le(p, dtype.bytes(), raw);  // keeps the low bytes: two's complement wrap
}

}  // namespace mtir
