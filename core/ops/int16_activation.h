// TFLite's int16 sigmoid and tanh (reference_integer_ops logistic.h and tanh.h, the int16
// overloads), as the integer LSTM and int16 LOGISTIC/TANH use them: the input is scaled by
// an integer multiplier and a rounding right shift, and |x| indexes a 256-entry table of
// sigmoid(i / 24) in unsigned 0.16 fixed point, linearly interpolated; sigmoid gives Q0.15
// in [0, 32767], tanh Q0.15 in [-32767, 32767]. The kernels read the table from a uint16
// [256] buffer (sigmoid_table_array). Internal to core/ops.
#pragma once

#include <array>
#include <cstdint>
#include <functional>

#include "ops/op_util.h"
#include "support/ndarray.h"

namespace mtir {
namespace ops {

// TFLite's sigmoid_table_uint16 (common.h): the values are TFLite's, not recomputed (a
// plain round(65536 / (1 + exp(-i / 24))) differs in a few entries).
const std::array<uint16_t, 256>& sigmoid_table_uint16();
// The table as a uint16 (256) constant for a kernel's table input.
NDArray sigmoid_table_array();

// TFLite's (input_multiplier, input_left_shift) convention: multiplier 0 means the
// power-of-two case, multiplier 3 << shift and no shift; otherwise x * multiplier is
// rounded right by `shift` bits. `x` is an int32 expression holding an int16 value, the
// table a uint16 (256) buffer. The steps are bound to variables (`name`_v, ...) around
// the statement `use` makes of the result, an int32 expression holding the int16 value.
using UseResult = std::function<Stmt(Expr)>;
Stmt int16_logistic(const std::string& name, Expr x, const Buffer& table, int32_t multiplier, int32_t shift,
                    const UseResult& use);
Stmt int16_tanh(const std::string& name, Expr x, const Buffer& table, int32_t multiplier, int32_t shift,
                const UseResult& use);

}  // namespace ops
}  // namespace mtir
