// int8 quantization helpers shared by the quantized operators (TFLite int8 style, see
// docs/quantization.md): the compile-time fixed-point multiplier, the TIR of the run-time
// requantization (int64 multiply, round half up, arithmetic shift), activation bounds,
// and reading the shared quantization attributes with errors that name the attribute.
// Internal to core/ops.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ops/op_util.h"

namespace mtir {
namespace ops {

// A real multiplier m > 0 as m ~= multiplier * 2^(shift - 31), multiplier in [2^30, 2^31).
struct QuantMultiplier {
  int32_t multiplier = 0;
  int shift = 0;
  // The right shift of the requantization, 31 - shift, in [1, 62].
  int right_shift() const { return 31 - shift; }
};

// frexp-based; a user error "op: requantization multiplier out of range (what = m)"
// when m is not a finite positive number or the right shift falls outside [1, 62].
QuantMultiplier quantize_multiplier(double m, const std::string& op, const std::string& what);

// (int32)(((int64)acc * M + (1 << (s - 1))) >> s): `acc` an int32 expression, s in [1, 62].
Expr requantize(Expr acc, int32_t multiplier, int s);
inline Expr requantize(Expr acc, const QuantMultiplier& q) { return requantize(std::move(acc), q.multiplier, q.right_shift()); }

// The int8 output range an activation allows (bounds inclusive).
struct ActBounds {
  int32_t lo = -128;
  int32_t hi = 127;
};
// activation "none" | "relu" | "relu6" for an output of this scale and zero point.
ActBounds activation_bounds(const std::string& activation, double output_scale, int32_t output_zero_point);

// (int8)clamp(y + zero_point, lo, hi) for an int32 expression `y`.
Expr saturate_int8(Expr y, int32_t zero_point, ActBounds bounds);

// The shared attributes of qconv2d and qdense.
struct QuantAttrs {
  double input_scale = 0;
  int32_t input_zero_point = 0;
  std::vector<double> weight_scale;  // one value (per tensor) or one per output channel
  double output_scale = 0;
  int32_t output_zero_point = 0;
  std::string activation = "none";
  ActBounds bounds;
  // input_scale * weight_scale[c] / output_scale as fixed point, one per output channel.
  std::vector<QuantMultiplier> multipliers;
};
// "input_scale", "input_zero_point", "weight_scale", "weight_zero_point",
// "output_scale", "output_zero_point", "activation".
const std::vector<std::string>& quant_attr_names();
// Reads and checks them: scales required, finite and > 0; zero points default 0, in
// [-128, 127]; weight_zero_point must be 0 (weights are symmetric); a per-channel
// weight_scale must have `out_channels` entries. Errors name the attribute.
QuantAttrs read_quant_attrs(const std::string& op, const AttrReader& r, int64_t out_channels);

// A required scale attribute: a finite number > 0.
double read_scale(const std::string& op, const AttrReader& r, const std::string& key);
// An optional zero point attribute in [-128, 127] (default 0).
int32_t read_zero_point(const AttrReader& r, const std::string& key);
// The "activation" attribute: "none" (default), "relu" or "relu6".
std::string read_activation(const AttrReader& r);

// Input `i` must have element type `t`.
void check_dtype(const std::string& op, const std::vector<TensorType>& inputs, size_t i, const std::string& name,
                 DataType t);

}  // namespace ops
}  // namespace mtir
