// Comparing an artifact's output with the interpreter's: bit-exact for integers,
// within a relative tolerance (absolute near zero) for floats, NaN equal to NaN.
#pragma once

#include "support/ndarray.h"

namespace mtir {

struct Difference {
  double max_abs = 0, max_rel = 0;
  bool ok = true;
};

Difference compare_arrays(const NDArray& got, const NDArray& want, double float_tolerance = 1e-6);

}  // namespace mtir
