// TFLite Micro's int8 LOG_SOFTMAX (qlog_softmax.cc): the compile-time table the
// converter passes to the op beside the data.
#pragma once

#include "support/ndarray.h"

namespace mtir {
namespace ops {

// [2, 256] int32, for each difference d = max - x in 0..255: row 0 the exp of the scaled
// difference in Q12 (0 beyond TFLite's diff_min: not summed), row 1 the scaled
// difference in Q5.26 (TFLite's input_diff_in_q5). `input_scale` as float32.
NDArray log_softmax_table(double input_scale);

}  // namespace ops
}  // namespace mtir
