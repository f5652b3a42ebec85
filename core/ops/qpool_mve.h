// qavg_pool2d under schedule mve (Cortex-M55's Helium): four channels an int32x4.
#pragma once

#include <functional>

#include "ops/op_util.h"

namespace mtir {
namespace ops {

// An unpadded int8 NHWC average pool: its shapes and the buffers of its kernel.
struct MveAvgPool {
  Buffer data, out;  // [n, h, w, c] and [n, oh, ow, c], int8
  int64_t n, h, w, c, kh, kw, sh, sw, oh, ow;
};

// Whether mve_avg_pool takes a pool of these shapes: unpadded, at least four channels.
bool mve_avg_pool_applies(int64_t channels, const std::vector<int64_t>& padding);

// The pool with each window's sums four channels at a time: a window row's inputs widened
// (VLDRB.S32) and added to an int32x4 kept in a local array (VLDRW, VADD, VSTRW), rows in
// a loop; then each lane's output `finish(sum)` (an int8 expression) one at a time. The
// last 1 to 3 channels are summed as scalars.
Stmt mve_avg_pool(const MveAvgPool& p, const std::function<Expr(Expr sum)>& finish);

}  // namespace ops
}  // namespace mtir
