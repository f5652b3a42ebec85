#include "support/compare.h"

#include <algorithm>
#include <cmath>

namespace mtir {

Difference compare_arrays(const NDArray& got, const NDArray& want, double float_tolerance) {
  Difference d;
  if (got.dtype != want.dtype || got.shape != want.shape) {
    d.ok = false;
    return d;
  }
  for (int64_t i = 0; i < want.num_elements(); ++i) {
    if (want.dtype.is_float()) {
      double g = got.get_float(i), w = want.get_float(i);
      if (std::isnan(w) || std::isnan(g)) {
        d.ok = d.ok && std::isnan(w) && std::isnan(g);
        continue;
      }
      if (g == w) continue;  // also equal infinities
      double abs_diff = std::fabs(g - w);
      d.max_abs = std::max(d.max_abs, abs_diff);
      d.max_rel = std::max(d.max_rel, abs_diff / std::max(std::fabs(w), 1e-30));
      if (!(abs_diff <= float_tolerance * std::max(1.0, std::fabs(w)))) d.ok = false;
    } else if (got.get_int(i) != want.get_int(i)) {
      double abs_diff = std::fabs(static_cast<double>(got.get_int(i)) - static_cast<double>(want.get_int(i)));
      d.max_abs = std::max(d.max_abs, abs_diff);
      d.max_rel = std::max(d.max_rel, abs_diff / std::max(1.0, std::fabs(static_cast<double>(want.get_int(i)))));
      d.ok = false;
    }
  }
  return d;
}

}  // namespace mtir
