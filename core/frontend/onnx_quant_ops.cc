// ONNX's quantized operators (QOperator form) onto the ops of core/ops/onnx_quant.cc,
// which compute in ONNX's arithmetic: QuantizeLinear, DequantizeLinear (per tensor and
// per axis), QLinearConv, QLinearMatMul, ConvInteger, MatMulInteger and
// DynamicQuantizeLinear. Scales and zero points must be compile-time values (they are
// initializers in every exporter's output); each becomes a small constant of the graph.
#include <algorithm>
#include <cmath>

#include "frontend/onnx_convert.h"
#include "support/diagnostic.h"

namespace mtir {

namespace {

using json = nlohmann::json;
using C = OnnxConverter;

bool is_q8(DataType t) { return t == DataType::Int(8) || t == DataType::UInt(8); }

// A compile-time scale: float32 values, all > 0 and finite.
std::vector<double> read_scales(C& c, size_t i, const std::string& role) {
  const NDArray& a = c.static_value(i, role);
  if (a.dtype != DataType::Float(32)) c.invalid("input '" + role + "' must be float32, not " + a.dtype.str());
  if (a.shape.size() > 1) c.invalid("input '" + role + "' must be a scalar or 1-D");
  std::vector<double> v;
  for (int64_t k = 0; k < a.num_elements(); ++k) {
    double s = a.get_float(k);
    if (!(s > 0) || !std::isfinite(s)) c.unsupported("input '" + role + "' holds the scale " + json(s).dump() + " (a scale must be a finite number > 0)");
    v.push_back(s);
  }
  return v;
}

// A compile-time zero point of an 8-bit type; absent: `count` zeros of `absent_type`.
std::vector<int64_t> read_zero_points(C& c, size_t i, const std::string& role, DataType* type, size_t count,
                                      DataType absent_type) {
  if (c.input(i).empty()) {
    *type = absent_type;
    return std::vector<int64_t>(count, 0);
  }
  const NDArray& a = c.static_value(i, role);
  if (a.shape.size() > 1) c.invalid("input '" + role + "' must be a scalar or 1-D");
  *type = a.dtype;
  std::vector<int64_t> v;
  for (int64_t k = 0; k < a.num_elements(); ++k) v.push_back(a.get_int(k));
  return v;
}

std::string vector_constant(C& c, const std::string& hint, DataType dt, const std::vector<double>& v) {
  std::string name = c.temp(hint);
  NDArray a = NDArray::zeros(dt, {static_cast<int64_t>(v.size())});
  for (size_t k = 0; k < v.size(); ++k) {
    if (dt.is_float()) a.set_float(static_cast<int64_t>(k), v[k]);
    else a.set_int(static_cast<int64_t>(k), static_cast<int64_t>(v[k]));
  }
  c.add_constant(name, std::move(a));
  return name;
}

// QuantizeLinear (x, y_scale, [y_zero_point]) and DequantizeLinear (x, x_scale,
// [x_zero_point]); `axis` from opset 13 (per-axis scales), per tensor before.
void affine(C& c, bool quantize) {
  expect_inputs(c, 2, 3);
  single_output(c);
  std::string x = c.input(0);
  TensorType xt = c.type_of(x);
  std::vector<double> scales = read_scales(c, 1, quantize ? "y_scale" : "x_scale");
  DataType zt;
  DataType absent = quantize ? DataType::UInt(8) : xt.dtype;
  std::vector<int64_t> zps = read_zero_points(c, 2, quantize ? "y_zero_point" : "x_zero_point", &zt, scales.size(), absent);
  if (zps.size() != scales.size())
    c.invalid("the scale has " + std::to_string(scales.size()) + " values but the zero point " + std::to_string(zps.size()));
  if (quantize && !is_q8(zt)) c.unsupported("a zero point of type " + zt.str() + " (int8 and uint8 are supported)");
  int64_t axis = c.opset() >= 13 ? c.attr_int("axis", 1) : 1;
  if (scales.size() > 1 && c.opset() < 13) c.invalid("per-axis scales need opset 13");
  std::vector<double> zd(zps.begin(), zps.end());
  std::string s = vector_constant(c, "scale", DataType::Float(32), scales);
  std::string z = vector_constant(c, "zero_point", zt, zd);
  c.emit(c.node().output(0), quantize ? "quantize_linear" : "dequantize_linear", {x, s, z}, {{"axis", axis}});
}

// The data's zero point: a single value of the data's type.
int64_t data_zero_point(C& c, size_t i, const std::string& role, DataType data_type) {
  DataType zt;
  std::vector<int64_t> z = read_zero_points(c, i, role, &zt, 1, data_type);
  if (z.size() != 1) c.unsupported("input '" + role + "' with " + std::to_string(z.size()) + " values (per tensor only)");
  if (zt != data_type) c.invalid("input '" + role + "' has type " + zt.str() + " but the data " + data_type.str());
  return z[0];
}

// QLinearConv's and QLinearMatMul's requantization: a multiplier per weight scale, from
// the scales of inputs 1 (the data's, `data`_scale), 4 (the weight's, `weight`_scale) and
// 6 (the output's, y_scale); the output's zero point and type into `attrs`. `per_channel`
// names what is refused when the data's or the output's scale is not one value.
std::vector<std::pair<int64_t, int64_t>> linear_multipliers(C& c, const std::string& data, const std::string& weight,
                                                            const std::string& per_channel, json& attrs) {
  const std::vector<double> ds = read_scales(c, 1, data + "_scale"), ws = read_scales(c, 4, weight + "_scale"),
                            ys = read_scales(c, 6, "y_scale");
  if (ds.size() != 1 || ys.size() != 1) c.unsupported(per_channel);
  DataType yzt;
  std::vector<int64_t> yzp = read_zero_points(c, 7, "y_zero_point", &yzt, 1, DataType::UInt(8));
  if (yzp.size() != 1 || !is_q8(yzt)) c.unsupported("y_zero_point must be one int8 or uint8 value");
  std::vector<std::pair<int64_t, int64_t>> mult;
  for (double s : ws) mult.push_back(onnx_multiplier(c, ds[0], s, ys[0]));
  attrs["output_zero_point"] = yzp[0];
  attrs["output_dtype"] = yzt.str();
  return mult;
}

// QLinearConv (requantize) or ConvInteger (int32 out).
void qconv(C& c, bool linear) {
  expect_inputs(c, linear ? 8 : 2, linear ? 9 : 4);
  single_output(c);
  size_t wi = linear ? 3 : 1;
  std::string x = c.input(0), w = c.input(wi);
  TensorType xt = c.type_of(x), wt = c.type_of(w);
  if (!is_q8(xt.dtype) || !is_q8(wt.dtype)) c.invalid("the data and the weight must be int8 or uint8");
  if (xt.shape.size() != 4 || wt.shape.size() != 4)
    c.unsupported("only 2-D convolutions (4-D data and weight) are supported; the data has rank " + std::to_string(xt.shape.size()));
  Window win = read_window(c, x, std::vector<int64_t>(wt.shape.begin() + 2, wt.shape.end()));
  int64_t o = wt.shape[0];
  int64_t xzp = data_zero_point(c, 2, "x_zero_point", xt.dtype);
  DataType wzt;
  std::vector<int64_t> wzp = read_zero_points(c, linear ? 5 : 3, "w_zero_point", &wzt, 1, wt.dtype);
  if (wzt != wt.dtype) c.invalid("input 'w_zero_point' has type " + wzt.str() + " but the weight " + wt.dtype.str());
  json attrs = {{"strides", win.strides}, {"padding", win.pads}, {"dilation", win.dilations},
                {"groups", c.attr_int("group", 1)}, {"data_zero_point", xzp}};
  std::vector<int64_t> bias;
  std::vector<std::pair<int64_t, int64_t>> mult;
  if (linear) {
    mult = linear_multipliers(c, "x", "w", "per-channel x_scale or y_scale", attrs);
    if (!c.input(8).empty()) {
      const NDArray& b = c.static_value(8, "B");
      if (b.dtype != DataType::Int(32) || b.shape != std::vector<int64_t>{o}) c.invalid("the bias must be int32 of shape (" + std::to_string(o) + ")");
      for (int64_t k = 0; k < o; ++k) bias.push_back(b.get_int(k));
    }
  }
  std::string params = params_table(c, static_cast<size_t>(o), wzp, bias, mult);
  attrs["symmetric_weights"] = std::all_of(wzp.begin(), wzp.end(), [](int64_t z) { return z == 0; });
  c.emit(c.node().output(0), "qlinear_conv", {x, w, params}, attrs);
}

// QLinearMatMul (requantize) or MatMulInteger (int32 out). B's zero point and scale may
// be per column.
void qmatmul(C& c, bool linear) {
  expect_inputs(c, linear ? 8 : 2, linear ? 8 : 4);
  single_output(c);
  size_t bi = linear ? 3 : 1;
  std::string a = c.input(0), b = c.input(bi);
  TensorType at = c.type_of(a), bt = c.type_of(b);
  if (!is_q8(at.dtype) || !is_q8(bt.dtype)) c.invalid("A and B must be int8 or uint8");
  if (at.shape.size() < 2 || bt.shape.size() < 2) c.unsupported("1-D operands (reshape them to 2-D first)");
  int64_t n = bt.shape.back();
  int64_t azp = data_zero_point(c, 2, "a_zero_point", at.dtype);
  DataType bzt;
  std::vector<int64_t> bzp = read_zero_points(c, linear ? 5 : 3, "b_zero_point", &bzt, 1, bt.dtype);
  if (bzt != bt.dtype) c.invalid("input 'b_zero_point' has type " + bzt.str() + " but B " + bt.dtype.str());
  json attrs = {{"data_zero_point", azp}};
  std::vector<std::pair<int64_t, int64_t>> mult;
  if (linear) mult = linear_multipliers(c, "a", "b", "per-row a_scale or per-column y_scale", attrs);
  std::string params = params_table(c, static_cast<size_t>(n), bzp, {}, mult);
  attrs["symmetric_weights"] = std::all_of(bzp.begin(), bzp.end(), [](int64_t z) { return z == 0; });
  c.emit(c.node().output(0), "qlinear_matmul", {a, b, params}, attrs);
}

void dynamic_quantize(C& c) {
  expect_inputs(c, 1, 1);
  const char* names[] = {"y", "scale", "zero_point"};
  for (int k = 0; k < c.node().output_size() && k < 3; ++k)
    if (!c.node().output(k).empty()) c.emit(c.node().output(k), "dynamic_quantize_linear", {c.input(0)}, {{"output", names[k]}});
}

}  // namespace

// ONNX's requantization multiplier m = x_scale * w_scale / y_scale in float32, as the
// reference computes it, as (M, s) with m = M * 2^-s exactly (M < 2^24, s in [1, 62]).
std::pair<int64_t, int64_t> onnx_multiplier(C& c, double xs, double ws, double ys) {
  float m = static_cast<float>(xs) * static_cast<float>(ws);
  m = m / static_cast<float>(ys);
  if (!(m > 0) || !std::isfinite(m)) c.unsupported("the requantization multiplier x_scale * w_scale / y_scale is " + json(m).dump());
  int e = 0;
  double f = std::frexp(static_cast<double>(m), &e);  // m = f * 2^e, f in [0.5, 1)
  int64_t mant = static_cast<int64_t>(std::ldexp(f, 24));  // exact: m is a float32
  int64_t s = 24 - e;
  // Trailing zero bits make the shift smaller (the same number).
  while (s > 1 && mant % 2 == 0 && mant > 0) mant /= 2, --s;
  if (s < 1) c.unsupported("a requantization multiplier of 2^23 or more (" + json(m).dump() + ")");
  if (s > 62) return {0, 1};  // below 2^-38: |acc * m| < 2^-7, every product rounds to 0
  return {mant, s};
}

// The int32 [T, 4] table of qlinear_conv / qlinear_matmul: (weight zero point, bias, M, s).
std::string params_table(C& c, size_t channels, const std::vector<int64_t>& wzp, const std::vector<int64_t>& bias,
                         const std::vector<std::pair<int64_t, int64_t>>& mult) {
  size_t rows = std::max({wzp.size(), bias.size(), mult.size()});
  if (rows != 1 && rows != channels) c.invalid("per-channel values for " + std::to_string(rows) + " channels; the output has " + std::to_string(channels));
  for (const auto* v : {&wzp, &bias})
    if (v->size() > 1 && v->size() != rows) c.invalid("per-channel values of different lengths");
  if (mult.size() > 1 && mult.size() != rows) c.invalid("per-channel values of different lengths");
  std::string name = c.temp("params");
  NDArray a = NDArray::zeros(DataType::Int(32), {static_cast<int64_t>(rows), 4});
  for (size_t r = 0; r < rows; ++r) {
    int64_t base = static_cast<int64_t>(r) * 4;
    a.set_int(base, wzp.empty() ? 0 : wzp[wzp.size() == 1 ? 0 : r]);
    a.set_int(base + 1, bias.empty() ? 0 : bias[bias.size() == 1 ? 0 : r]);
    auto mr = mult.empty() ? std::pair<int64_t, int64_t>{0, 1} : mult[mult.size() == 1 ? 0 : r];
    a.set_int(base + 2, mr.first);
    a.set_int(base + 3, mr.second);
  }
  c.add_constant(name, std::move(a));
  return name;
}

const std::map<std::string, std::function<void(OnnxConverter&)>>& onnx_quant_mappings() {
  static const std::map<std::string, std::function<void(OnnxConverter&)>> m = {
      {"QuantizeLinear", [](C& c) { affine(c, true); }},
      {"DequantizeLinear", [](C& c) { affine(c, false); }},
      {"QLinearConv", [](C& c) { qconv(c, true); }},
      {"ConvInteger", [](C& c) { qconv(c, false); }},
      {"QLinearMatMul", [](C& c) { qmatmul(c, true); }},
      {"MatMulInteger", [](C& c) { qmatmul(c, false); }},
      {"DynamicQuantizeLinear", dynamic_quantize},
  };
  return m;
}

}  // namespace mtir
