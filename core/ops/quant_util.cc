#include "ops/quant_util.h"

#include <algorithm>
#include <cmath>

#include "interp/scalar.h"

namespace mtir {
namespace ops {

QuantMultiplier quantize_multiplier(double m, const std::string& op, const std::string& what) {
  auto out_of_range = [&]() {
    fail(op, "requantization multiplier out of range (" + what + " = " + interp::format_double(m) +
                 "; it must lie in [2^-32, 2^30))");
  };
  if (!std::isfinite(m) || m <= 0) out_of_range();
  int exponent = 0;
  double q = std::frexp(m, &exponent);  // m = q * 2^exponent, q in [0.5, 1)
  int64_t mantissa = static_cast<int64_t>(std::round(std::ldexp(q, 31)));
  if (mantissa == (int64_t{1} << 31)) {
    mantissa /= 2;
    ++exponent;
  }
  QuantMultiplier r{static_cast<int32_t>(mantissa), exponent};
  int s = r.right_shift();
  if (s < 1 || s > 62) out_of_range();
  return r;
}

Expr requantize(Expr acc, int32_t multiplier, int s) {
  const DataType i64 = DataType::Int(64);
  Expr wide = Binary(ExprKind::Mul, Cast(i64, std::move(acc)), IntImm(i64, multiplier));
  Expr rounded = Binary(ExprKind::Add, wide, IntImm(i64, int64_t{1} << (s - 1)));
  return Cast(DataType::Int(32), Call(i64, "shift_right", {rounded, IntImm(i64, s)}));
}

ActBounds activation_bounds(const std::string& activation, double output_scale, int32_t output_zero_point) {
  ActBounds b;
  if (activation == "none") return b;
  b.lo = std::max(-128, output_zero_point);
  if (activation == "relu6") {
    double top = output_zero_point + std::round(6.0 / output_scale);
    b.hi = static_cast<int32_t>(std::min(127.0, top));
  }
  return b;
}

Expr saturate_int8(Expr y, int32_t zero_point, ActBounds bounds) {
  Expr v = add(std::move(y), ci(zero_point));
  return Cast(DataType::Int(8), min_(max_(v, ci(bounds.lo)), ci(bounds.hi)));
}

const std::vector<std::string>& quant_attr_names() {
  static const std::vector<std::string> names = {"input_scale",  "input_zero_point",  "weight_scale", "weight_zero_point",
                                                 "output_scale", "output_zero_point", "activation"};
  return names;
}

double read_scale(const std::string& op, const AttrReader& r, const std::string& key) {
  if (!r.has(key)) fail(op, "missing required attribute '" + key + "' (a number > 0)");
  double v = r.get_float(key, 0);
  if (!(v > 0)) r.bad(key, "a number > 0");
  return v;
}

int32_t read_zero_point(const AttrReader& r, const std::string& key) {
  int64_t v = r.get_int(key, 0);
  if (v < -128 || v > 127) r.bad(key, "an integer in [-128, 127]");
  return static_cast<int32_t>(v);
}

std::string read_activation(const AttrReader& r) { return r.get_string("activation", "none", {"none", "relu", "relu6"}); }

namespace {

std::vector<double> read_weight_scales(const std::string& op, const AttrReader& r, int64_t out_channels) {
  const nlohmann::json* v = r.raw("weight_scale");
  if (!v) fail(op, "missing required attribute 'weight_scale' (a number > 0, or a list of one per output channel)");
  std::vector<double> scales;
  if (v->is_number()) {
    scales.push_back(v->get<double>());
  } else if (v->is_array()) {
    if (static_cast<int64_t>(v->size()) != out_channels)
      r.bad("weight_scale", "a number or a list of " + std::to_string(out_channels) +
                                " numbers (one per output channel), not a list of " + std::to_string(v->size()));
    for (const auto& e : *v) {
      if (!e.is_number()) r.bad("weight_scale", "a list of numbers > 0");
      scales.push_back(e.get<double>());
    }
  } else {
    r.bad("weight_scale", "a number > 0 or a list of numbers > 0");
  }
  for (double s : scales)
    if (!std::isfinite(s) || !(s > 0)) r.bad("weight_scale", "made of finite numbers > 0");
  return scales;
}

void check_weight_zero_point(const AttrReader& r) {
  const nlohmann::json* v = r.raw("weight_zero_point");
  if (!v) return;
  bool zero = v->is_number_integer() && v->get<int64_t>() == 0;
  if (v->is_array()) {
    zero = true;
    for (const auto& e : *v) zero = zero && e.is_number_integer() && e.get<int64_t>() == 0;
  }
  if (!zero) r.bad("weight_zero_point", "0: int8 weights are symmetric, a non-zero weight zero point is not supported");
}

}  // namespace

QuantAttrs read_quant_attrs(const std::string& op, const AttrReader& r, int64_t out_channels) {
  QuantAttrs q;
  q.input_scale = read_scale(op, r, "input_scale");
  q.input_zero_point = read_zero_point(r, "input_zero_point");
  q.weight_scale = read_weight_scales(op, r, out_channels);
  check_weight_zero_point(r);
  q.output_scale = read_scale(op, r, "output_scale");
  q.output_zero_point = read_zero_point(r, "output_zero_point");
  q.activation = read_activation(r);
  q.bounds = activation_bounds(q.activation, q.output_scale, q.output_zero_point);
  for (int64_t c = 0; c < out_channels; ++c) {
    double ws = q.weight_scale[q.weight_scale.size() == 1 ? 0 : c];
    std::string what = "input_scale * weight_scale" + (q.weight_scale.size() == 1 ? "" : "[" + std::to_string(c) + "]") +
                       " / output_scale";
    q.multipliers.push_back(quantize_multiplier(q.input_scale * ws / q.output_scale, op, what));
  }
  return q;
}

void check_dtype(const std::string& op, const std::vector<TensorType>& inputs, size_t i, const std::string& name,
                 DataType t) {
  if (inputs[i].dtype != t)
    fail(op, "input '" + name + "' has type " + inputs[i].dtype.str() + "; " + t.str() + " is required");
}

}  // namespace ops
}  // namespace mtir
