// Schedule smmlar_add (DSP cores): TFLite's int8 ADD and SUB with each of their three
// roundings in one SMMLAR (the `smmlar` builtin), the same values as the generic form
// in quantized.cc. Alone or fused into the convolution before it (IC's residual adds),
// the generic form spends about 26 instructions an output on three 64-bit multiplies
// and their sign corrections. Internal to core/ops.
#pragma once

#include "ops/quant_util.h"

namespace mtir {
namespace ops {

// The attribute (true) of a kernel in the fast form, kept when the add is fused into its
// producer (executor/fuse_elementwise.cc keeps the consumer's "mtir.*" marks): the C
// backend then asks GCC for one register-allocation region (codegen/c/codegen_c.h).
constexpr const char* kSmmlarAddAttr = "mtir.smmlar_add";

// `f` with kSmmlarAddAttr set.
PrimFunc with_smmlar_add_mark(const PrimFunc& f);

// What the fast form needs to know about one input: its multiplier toward the common
// scale and whether its offset value v = x - zero_point can be negative.
struct SmmlarAddInput {
  QuantMultiplier m;
  bool never_negative = false;  // the zero point is the type's lowest value
};

// The op's attribute "schedule": {"smmlar_add": true or false} (prepare_quantized writes
// it on qadd and qsub for DSP cores); a user error for anything else and for qmul.
bool read_smmlar_add(const std::string& op, const AttrReader& r);

// Whether the fast form applies: int8 (|v| <= 255, so v * 2^21 fits int32), the input
// multipliers at least 2^30 (or 0.5 exactly) and every multiplier a right shift.
bool smmlar_add_applies(const SmmlarAddInput& a, const SmmlarAddInput& b, const QuantMultiplier& out);

// MultiplyByQuantizedMultiplierSmallerThanOneExp(sa +- sb, out) of TFLite's ADD (or
// SUB with `subtract`) for the offset inputs va, vb (int32 expressions in [-255, 255]),
// before the output zero point and the clamp. `negatives_clamp`: the output's lower
// bound is at least its zero point, so a negative sum may round either way.
Expr smmlar_add(Expr va, Expr vb, const SmmlarAddInput& a, const SmmlarAddInput& b, const QuantMultiplier& out,
                bool subtract, bool negatives_clamp);

}  // namespace ops
}  // namespace mtir
