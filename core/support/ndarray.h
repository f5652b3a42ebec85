// A host tensor: dtype, shape and row-major bytes. What the interpreter reads and
// writes, and what .npy files hold.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/dtype.h"

namespace mtir {

struct NDArray {
  DataType dtype = DataType::Float(32);
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;  // num_elements() * dtype.bytes() bytes, little-endian

  static NDArray zeros(DataType dtype, std::vector<int64_t> shape);
  int64_t num_elements() const;

  // Element access through the widest type of its kind (no range checks on `i`
  // beyond an internal check: callers index within num_elements()).
  double get_float(int64_t i) const;
  int64_t get_int(int64_t i) const;  // integers and bool; uint64 values wrap
  void set_float(int64_t i, double v);
  void set_int(int64_t i, int64_t v);
};

// IEEE 754 binary16 conversions. float_to_half rounds once, to nearest with ties to
// even, straight from double (going through float first would round twice), and
// handles subnormals, overflow to infinity and NaN (kept quiet, sign preserved).
uint16_t float_to_half(double v);
double half_to_float(uint16_t bits);

}  // namespace mtir
