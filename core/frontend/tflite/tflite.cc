#include "frontend/tflite/converter.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "support/diagnostic.h"
#include "support/names.h"

namespace mtir {
namespace tflite_import {

std::string op_name(BuiltinOperator op) {
  const char* n = tflite::EnumNameBuiltinOperator(op);
  return n && *n ? n : "builtin operator " + std::to_string(static_cast<int>(op));
}

std::string short_name(const std::string& name) {
  std::string head = name.substr(0, name.find(';')), out;
  for (char ch : head) {
    bool ok = std::isalnum(static_cast<unsigned char>(ch)) || ch == '_';
    if (ok) out += ch;
    else if (out.empty() || out.back() != '_') out += '_';
  }
  while (!out.empty() && out.back() == '_') out.pop_back();
  if (out.size() > 64) out.resize(64);
  return out;
}

const tflite::Tensor& TfliteConverter::tensor(int index) const {
  const auto* tensors = sg_->tensors();
  if (!tensors || index < 0 || static_cast<size_t>(index) >= tensors->size())
    fail("tensor index " + std::to_string(index) + " is out of range (the subgraph has " +
         std::to_string(tensors ? tensors->size() : 0) + " tensors)");
  const auto* t = tensors->Get(static_cast<flatbuffers::uoffset_t>(index));
  if (!t) fail("tensor " + std::to_string(index) + " is missing");
  return *t;
}

std::string TfliteConverter::tensor_label(int index) const {
  const auto& t = tensor(index);
  std::string n = t.name() ? t.name()->str() : "";
  return "tensor " + std::to_string(index) + (n.empty() ? "" : " '" + n.substr(0, 80) + "'");
}

TensorType TfliteConverter::tensor_type(int index) const {
  const auto& t = tensor(index);
  TensorType ty;
  switch (t.type()) {
    case tflite::TensorType::FLOAT32: ty.dtype = DataType::Float(32); break;
    case tflite::TensorType::INT8: ty.dtype = DataType::Int(8); break;
    case tflite::TensorType::UINT8: ty.dtype = DataType::UInt(8); break;
    case tflite::TensorType::INT16: ty.dtype = DataType::Int(16); break;
    case tflite::TensorType::INT32: ty.dtype = DataType::Int(32); break;
    case tflite::TensorType::INT64: ty.dtype = DataType::Int(64); break;
    case tflite::TensorType::BOOL: ty.dtype = DataType::Bool(); break;
    default:
      unsupported(tensor_label(index) + " has type " + tflite::EnumNameTensorType(t.type()) +
                  " (float32, int8, int16, int32, int64, uint8 and bool are supported)");
  }
  if (t.sparsity()) unsupported(tensor_label(index) + " is sparse");
  int64_t n = 1;
  if (t.shape()) {
    for (int32_t d : *t.shape()) {
      if (d <= 0)
        fail(tensor_label(index) + " has a dimension of " + std::to_string(d) + " (dimensions must be positive)");
      n *= d;
      if (n > kMaxElements) fail(tensor_label(index) + " claims more than 2^31 elements");
      ty.shape.push_back(d);
    }
  }
  return ty;
}

bool TfliteConverter::has_data(int index) const {
  if (folded_.count(index)) return true;
  uint32_t b = tensor(index).buffer();
  const auto* buffers = model_.buffers();
  if (b == 0) return false;  // buffer 0 is the empty one of every run-time tensor
  if (!buffers || b >= buffers->size())
    fail(tensor_label(index) + " names buffer " + std::to_string(b) + ", but the model has " +
         std::to_string(buffers ? buffers->size() : 0) + " buffers");
  const auto* buf = buffers->Get(b);
  if (buf && buf->offset() > 1) unsupported(tensor_label(index) + " keeps its data outside the flatbuffer");
  return buf && buf->data() && buf->data()->size() > 0;
}

NDArray TfliteConverter::constant_value(int index) const {
  auto folded = folded_.find(index);
  if (folded != folded_.end()) return folded->second;
  TensorType ty = tensor_type(index);
  if (!has_data(index)) fail(tensor_label(index) + " must be a constant, but it has no data");
  const auto* data = model_.buffers()->Get(tensor(index).buffer())->data();
  NDArray a;
  a.dtype = ty.dtype;
  a.shape = ty.shape;
  size_t want = static_cast<size_t>(ty.num_elements()) * static_cast<size_t>(ty.dtype.bytes());
  if (data->size() != want)
    fail(tensor_label(index) + " has " + std::to_string(data->size()) + " bytes of data, but its shape and type need " +
         std::to_string(want));
  a.data.assign(data->data(), data->data() + data->size());
  return a;
}

Quant TfliteConverter::quant(int index, bool required) const {
  const auto& t = tensor(index);
  const auto* q = t.quantization();
  Quant out;
  if (!q || !q->scale() || q->scale()->size() == 0) {
    if (required)
      fail(tensor_label(index) + " is " + tensor_type(index).dtype.str() + " but has no quantization (scale and zero point)");
    return out;
  }
  if (q->details_type() != tflite::QuantizationDetails::NONE)
    unsupported(tensor_label(index) + " has a custom quantization");
  size_t n = q->scale()->size();
  if (!q->zero_point() || q->zero_point()->size() != n)
    fail(tensor_label(index) + " has " + std::to_string(n) + " scales but " +
         std::to_string(q->zero_point() ? q->zero_point()->size() : 0) + " zero points");
  // A zero point must be a value of the tensor's own type (int8 data: -128..127).
  DataType dt = tensor_type(index).dtype;
  int64_t zp_lo = -128, zp_hi = 127;
  if (dt == DataType::Int(16)) zp_lo = -32768, zp_hi = 32767;
  else if (dt == DataType::UInt(8)) zp_lo = 0, zp_hi = 255;
  else if (dt == DataType::Int(32) || dt == DataType::Int(64)) zp_lo = INT32_MIN, zp_hi = INT32_MAX;
  for (size_t k = 0; k < n; ++k) {
    double s = q->scale()->Get(static_cast<flatbuffers::uoffset_t>(k));
    int64_t z = q->zero_point()->Get(static_cast<flatbuffers::uoffset_t>(k));
    if (!(s > 0) || !std::isfinite(s))
      fail(tensor_label(index) + " has the scale " + std::to_string(s) + " (a scale must be a finite number > 0)");
    if (z < zp_lo || z > zp_hi)
      fail(tensor_label(index) + " has the zero point " + std::to_string(z) + " (outside the " + dt.str() + " range)");
    out.scale.push_back(s);
    out.zero_point.push_back(z);
  }
  out.axis = q->quantized_dimension();
  return out;
}

std::string TfliteConverter::fresh(const std::string& base) {
  std::string b = base.empty() ? "t" : base;
  std::string name = b;
  for (int k = 1; used_.count(name); ++k) name = b + "_" + std::to_string(k);
  used_.insert(name);
  return name;
}

std::string TfliteConverter::add_constant(const std::string& base, NDArray a) {
  std::string name = fresh(base);
  types_[name] = TensorType{a.dtype, a.shape};
  g_.constants[name] = std::move(a);
  return name;
}

bool TfliteConverter::is_variable(int index) const { return tensor(index).is_variable(); }

std::string TfliteConverter::state_value(int index) {
  auto it = values_.find(index);
  if (it != values_.end()) return it->second;
  TensorType ty = tensor_type(index);
  if (ty.shape.empty()) unsupported(tensor_label(index) + ", a variable, is a scalar");
  NDArray initial = NDArray::zeros(ty.dtype, ty.shape);
  if (ty.dtype == DataType::Int(8)) {
    Quant q = quant(index, true);
    if (!q.per_tensor()) unsupported(tensor_label(index) + ", a variable, is quantized per channel");
    for (int64_t i = 0; i < initial.num_elements(); ++i) initial.set_int(i, q.zero_point[0]);
  }
  std::string n = tensor(index).name() ? tensor(index).name()->str() : "";
  std::string name = fresh(short_name(n).empty() ? "state" + std::to_string(index) : short_name(n));
  types_[name] = ty;
  g_.state[name] = std::move(initial);
  values_[index] = name;
  return name;
}

std::string TfliteConverter::value(int index) {
  auto it = values_.find(index);
  if (it != values_.end()) return it->second;
  if (is_variable(index)) return state_value(index);
  if (!has_data(index))
    fail(tensor_label(index) + " is read before any operator computes it and is neither a model input nor a constant");
  std::string n = tensor(index).name() ? tensor(index).name()->str() : "";
  std::string name = add_constant(short_name(n).empty() ? "const" + std::to_string(index) : short_name(n),
                                  constant_value(index));
  values_[index] = name;
  return name;
}

std::string TfliteConverter::emit(const std::string& name, const std::string& op, const std::vector<std::string>& inputs,
                                  const json& attrs) {
  std::vector<TensorType> in_types;
  for (const auto& in : inputs) in_types.push_back(types_.at(in));
  GraphNode n;
  try {
    n = typed_node(name, op, inputs, in_types, attrs);
  } catch (const DiagnosticError& e) {
    if (e.internal()) throw;
    fail(e.diagnostics().empty() ? std::string("invalid") : e.diagnostics()[0].message);
  }
  types_[name] = n.type;
  g_.nodes.push_back(std::move(n));
  return name;
}

int TfliteConverter::input(const tflite::Operator& op, size_t i, bool optional) const {
  if (!op.inputs() || i >= op.inputs()->size()) {
    if (optional) return -1;
    fail("input " + std::to_string(i) + " is missing");
  }
  int t = op.inputs()->Get(static_cast<flatbuffers::uoffset_t>(i));
  if (t == -1 && optional) return -1;
  tensor(t);  // range check
  return t;
}

int TfliteConverter::output(const tflite::Operator& op) const {
  if (!op.outputs() || op.outputs()->size() != 1)
    unsupported(std::to_string(op.outputs() ? op.outputs()->size() : 0) + " outputs (the operator has one)");
  int t = op.outputs()->Get(0);
  tensor(t);
  return t;
}

std::vector<int> TfliteConverter::outputs(const tflite::Operator& op) const {
  if (!op.outputs() || op.outputs()->size() == 0) fail("it has no outputs");
  std::vector<int> outs;
  for (int t : *op.outputs()) {
    tensor(t);
    if (std::find(outs.begin(), outs.end(), t) != outs.end()) fail(tensor_label(t) + " is listed twice as an output");
    outs.push_back(t);
  }
  return outs;
}

json TfliteConverter::int8_attrs(int in, int out) const {
  Quant qi = quant(in, true), qo = quant(out, true);
  if (!qi.per_tensor() || !qo.per_tensor()) unsupported("per-channel quantized activations");
  return {{"input_scale", qi.scale[0]}, {"input_zero_point", qi.zero_point[0]},
          {"output_scale", qo.scale[0]}, {"output_zero_point", qo.zero_point[0]}};
}

void TfliteConverter::same_quant(int in, int out, const std::string& why) const {
  Quant qi = quant(in, true), qo = quant(out, true);
  if (qi.scale != qo.scale || qi.zero_point != qo.zero_point)
    unsupported(why + " with different input and output quantization");
}

int TfliteConverter::quantized_bias(int b, int64_t channels, const std::string& allowed) const {
  TensorType bt = tensor_type(b);
  bool ok = bt.shape == std::vector<int64_t>{channels} &&
            allowed.find(bt.dtype.str()) != std::string::npos;
  if (!ok) fail("the bias must be " + allowed + " [" + std::to_string(channels) + "], it is " + bt.str());
  return b;
}

// TFLite's padding: VALID pads nothing; SAME gives out = ceil(in / stride) and pads
// max(0, (out - 1) * stride + effective_k - in), the smaller half before.
std::vector<int64_t> TfliteConverter::padding(tflite::Padding pad, int64_t h, int64_t w, int64_t kh, int64_t kw,
                                               int64_t sh, int64_t sw, int64_t dh, int64_t dw) const {
  if (sh <= 0 || sw <= 0 || dh <= 0 || dw <= 0) fail("strides and dilations must be positive");
  if (pad == tflite::Padding::VALID) return {0, 0, 0, 0};
  if (pad != tflite::Padding::SAME) fail("unknown padding " + std::to_string(static_cast<int>(pad)));
  auto total = [](int64_t in, int64_t k, int64_t s, int64_t d) {
    int64_t eff = (k - 1) * d + 1, out = (in + s - 1) / s;
    return std::max<int64_t>(0, (out - 1) * s + eff - in);
  };
  int64_t th = total(h, kh, sh, dh), tw = total(w, kw, sw, dw);
  return {th / 2, tw / 2, th - th / 2, tw - tw / 2};
}

std::string activation_text(ActivationFunctionType act) {
  const char* n = tflite::EnumNameActivationFunctionType(act);
  return n && *n ? n : std::to_string(static_cast<int>(act));
}

// A clamp after `x` for the fused activation (an op without an activation attribute, or
// float data); returns `x` for NONE.
std::string TfliteConverter::activation_node(const std::string& name, const std::string& x, int out,
                                             ActivationFunctionType act) {
  if (act == ActivationFunctionType::NONE) return x;
  const DataType dt = types_.at(x).dtype;
  const bool quantized = dt == DataType::Int(8) || dt == DataType::Int(16);
  double lo, hi;
  if (act == ActivationFunctionType::RELU) lo = 0, hi = std::numeric_limits<double>::infinity();
  else if (act == ActivationFunctionType::RELU6) lo = 0, hi = 6;
  else if (act == ActivationFunctionType::RELU_N1_TO_1) lo = -1, hi = 1;
  else unsupported("the fused activation " + activation_text(act));
  if (!quantized) {
    if (act == ActivationFunctionType::RELU) return emit(name, "relu", {x});
    return emit(name, "clip", {x}, {{"min", lo}, {"max", hi}});
  }
  // TFLite's CalculateActivationRangeQuantized: the bounds quantized with the output's
  // scale and zero point (rounding half away from zero, in float), within int8 (int16).
  Quant q = quant(out, true);
  float scale = static_cast<float>(q.scale[0]);
  auto quantize = [&](double r) {
    return q.zero_point[0] + static_cast<int64_t>(std::round(static_cast<float>(r) / scale));
  };
  const int64_t type_max = dt == DataType::Int(8) ? 127 : 32767;
  int64_t qlo = std::max<int64_t>(-type_max - 1, quantize(lo));
  int64_t qhi = std::isinf(hi) ? type_max : std::min<int64_t>(type_max, quantize(hi));
  return emit(name, "clip", {x}, {{"min", qlo}, {"max", qhi}});
}

void TfliteConverter::finish(int out, const std::string& op, const std::vector<std::string>& inputs, json attrs,
                             ActivationFunctionType act, bool act_in_op) {
  std::string name = values_.at(out);
  const DataType dt = tensor_type(out).dtype;
  if (act_in_op && (dt == DataType::Int(8) || dt == DataType::Int(16))) {
    if (act == ActivationFunctionType::RELU) attrs["activation"] = "relu";
    else if (act == ActivationFunctionType::RELU6) attrs["activation"] = "relu6";
    else if (act == ActivationFunctionType::RELU_N1_TO_1) attrs["activation"] = "relu_n1_to_1";
    else if (act != ActivationFunctionType::NONE) unsupported("the fused activation " + activation_text(act));
    emit(name, op, inputs, attrs);
  } else if (act == ActivationFunctionType::NONE) {
    emit(name, op, inputs, attrs);
  } else {
    std::string pre = emit(fresh(name + "_pre"), op, inputs, attrs);
    // The clamp takes the output's name; the pre-activation node was named first.
    activation_node(name, pre, out, act);
  }
}

namespace {

// Depthwise filters are [1, KH, KW, C*M]; our qconv2d takes OHWI [C*M, KH, KW, 1].
NDArray depthwise_filter_ohwi(const NDArray& weight, int64_t o, int64_t kh, int64_t kw) {
  NDArray ohwi = weight;
  ohwi.shape = {o, kh, kw, 1};
  for (int64_t y = 0; y < kh; ++y)
    for (int64_t xx = 0; xx < kw; ++xx)
      for (int64_t oc = 0; oc < o; ++oc)
        ohwi.data[static_cast<size_t>((oc * kh + y) * kw + xx)] = weight.data[static_cast<size_t>((y * kw + xx) * o + oc)];
  return ohwi;
}

// A float OHWI filter as HWIO, the layout our float conv2d in NHWC takes.
NDArray float_filter_hwio(const NDArray& weight, int64_t o, int64_t kh, int64_t kw, int64_t ci) {
  NDArray hwio = weight;
  hwio.shape = {kh, kw, ci, o};
  const float* src = reinterpret_cast<const float*>(weight.data.data());
  float* dst = reinterpret_cast<float*>(hwio.data.data());
  for (int64_t oc = 0; oc < o; ++oc)
    for (int64_t y = 0; y < kh; ++y)
      for (int64_t xx = 0; xx < kw; ++xx)
        for (int64_t i = 0; i < ci; ++i) dst[((y * kw + xx) * ci + i) * o + oc] = src[((oc * kh + y) * kw + xx) * ci + i];
  return hwio;
}

}  // namespace

// The quantization attributes of an int8/int16 convolution: the input's and output's,
// and the filter's scale (one, or `o` along `axis`); int8 filters are symmetric.
json TfliteConverter::conv_quant_attrs(int x, int w, int out, int64_t o, int64_t axis) const {
  json q = int8_attrs(x, out);
  Quant wq = quant(w, true);
  for (int64_t z : wq.zero_point)
    if (z != 0) unsupported("a filter with a non-zero zero point (int8 filters are symmetric)");
  if (wq.per_tensor()) {
    q["weight_scale"] = wq.scale[0];
    return q;
  }
  if (wq.axis != axis || static_cast<int64_t>(wq.scale.size()) != o)
    fail("the filter's per-channel quantization must have " + std::to_string(o) + " scales along dimension " +
         std::to_string(axis));
  q["weight_scale"] = wq.scale;
  return q;
}

void TfliteConverter::conv(const tflite::Operator& op, bool depthwise) {
  int x = input(op, 0), w = input(op, 1), b = input(op, 2, true), out = output(op);
  TensorType xt = tensor_type(x), wt = tensor_type(w);
  if (xt.shape.size() != 4) fail("the input must be 4-D (NHWC), it is " + xt.str());
  if (wt.shape.size() != 4) fail("the filter must be 4-D, it is " + wt.str());
  if (!has_data(w)) unsupported("a filter computed at run time");
  int64_t c = xt.shape[3], kh = wt.shape[1], kw = wt.shape[2], o, groups;
  int64_t sh, sw, dh = 1, dw = 1;
  tflite::Padding pad;
  ActivationFunctionType act;
  if (depthwise) {
    const auto* opt = op.builtin_options_as_DepthwiseConv2DOptions();
    if (!opt) fail("the DepthwiseConv2DOptions are missing");
    sh = opt->stride_h(), sw = opt->stride_w(), dh = opt->dilation_h_factor(), dw = opt->dilation_w_factor();
    pad = opt->padding();
    act = opt->fused_activation_function();
    if (wt.shape[0] != 1) fail("a depthwise filter is [1, KH, KW, C*M], it is " + wt.str());
    o = wt.shape[3];
    if (o % c != 0) fail("the filter's " + std::to_string(o) + " channels are not a multiple of the input's " + std::to_string(c));
    if (opt->depth_multiplier() != 0 && opt->depth_multiplier() != o / c)
      fail("depth_multiplier " + std::to_string(opt->depth_multiplier()) + " does not match the filter (" +
           std::to_string(o / c) + ")");
    groups = c;
  } else {
    const auto* opt = op.builtin_options_as_Conv2DOptions();
    if (!opt) fail("the Conv2DOptions are missing");
    sh = opt->stride_h(), sw = opt->stride_w(), dh = opt->dilation_h_factor(), dw = opt->dilation_w_factor();
    pad = opt->padding();
    act = opt->fused_activation_function();
    o = wt.shape[0];
    if (wt.shape[3] <= 0 || c % wt.shape[3] != 0)
      fail("the input's " + std::to_string(c) + " channels are not a multiple of the filter's " + std::to_string(wt.shape[3]));
    groups = c / wt.shape[3];
  }
  json attrs = {{"strides", {sh, sw}},
                {"padding", padding(pad, xt.shape[1], xt.shape[2], kh, kw, sh, sw, dh, dw)},
                {"dilation", {dh, dw}},
                {"groups", groups}};
  NDArray weight = constant_value(w);
  std::string wname = short_name(tensor(w).name() ? tensor(w).name()->str() : "");
  if (wname.empty()) wname = "filter" + std::to_string(w);
  std::vector<std::string> inputs = {value(x)};
  const bool int16 = xt.dtype == DataType::Int(16);
  if (xt.dtype == DataType::Int(8) || int16) {
    if (weight.dtype != DataType::Int(8))
      unsupported("an " + xt.dtype.str() + " convolution with a " + weight.dtype.str() + " filter");
    attrs.update(conv_quant_attrs(x, w, out, o, depthwise ? 3 : 0));
    if (depthwise) weight = depthwise_filter_ohwi(weight, o, kh, kw);
    inputs.push_back(add_constant(wname, std::move(weight)));
    if (b >= 0) inputs.push_back(value(quantized_bias(b, o, int16 && depthwise ? "int64" : int16 ? "int64 or int32" : "int32")));
    // TFLM's int16x8 accumulator: int64, but int32 for a CONV_2D with an int32 bias (ops/qconv_s16.cc).
    if (int16) attrs["accumulator"] = !depthwise && b >= 0 && tensor_type(b).dtype == DataType::Int(32) ? "int32" : "int64";
    finish(out, int16 ? "qconv2d_s16" : "qconv2d", inputs, attrs, act, true);
    return;
  }
  if (xt.dtype != DataType::Float(32) || weight.dtype != DataType::Float(32))
    unsupported("a convolution of " + xt.dtype.str() + " data with a " + weight.dtype.str() + " filter");
  // Our float conv2d in NHWC takes HWIO: OHWI transposed (depthwise's [1, KH, KW, O] is
  // already [KH, KW, 1, O] in memory).
  NDArray hwio = depthwise ? weight : float_filter_hwio(weight, o, kh, kw, wt.shape[3]);
  if (depthwise) hwio.shape = {kh, kw, 1, o};
  attrs["layout"] = "NHWC";
  inputs.push_back(add_constant(wname, std::move(hwio)));
  if (b >= 0) inputs.push_back(value(b));
  finish(out, "conv2d", inputs, attrs, act, false);
}

void TfliteConverter::fully_connected(const tflite::Operator& op) {
  int x = input(op, 0), w = input(op, 1), b = input(op, 2, true), out = output(op);
  const auto* opt = op.builtin_options_as_FullyConnectedOptions();
  if (!opt) fail("the FullyConnectedOptions are missing");
  if (opt->weights_format() != tflite::FullyConnectedOptionsWeightsFormat::DEFAULT)
    unsupported("the shuffled weights format");
  TensorType xt = tensor_type(x), wt = tensor_type(w);
  if (wt.shape.size() != 2) fail("the weights must be 2-D [units, depth], they are " + wt.str());
  if (!has_data(w)) unsupported("weights computed at run time");
  int64_t units = wt.shape[0], depth = wt.shape[1];
  if (xt.shape.empty() || xt.num_elements() % depth != 0)
    fail("the input " + xt.str() + " does not split into rows of " + std::to_string(depth));
  int64_t rows = xt.num_elements() / depth;
  std::string data = value(x);
  std::string base = values_.at(out);
  if (xt.shape.size() != 2 || xt.shape[1] != depth) data = emit(fresh(base + "_rows"), "reshape", {data}, {{"newshape", {rows, depth}}});
  std::vector<int64_t> out_shape = {rows, units};
  if (opt->keep_num_dims()) {
    out_shape = xt.shape;
    out_shape.back() = units;
  }
  bool reshape_after = out_shape != std::vector<int64_t>{rows, units};
  std::vector<std::string> inputs = {data, value(w)};
  json attrs = json::object();
  std::string op_name;
  const bool int16 = xt.dtype == DataType::Int(16);
  const bool int8 = xt.dtype == DataType::Int(8) || int16;  // quantized: int8 or int16x8
  if (int8) {
    if (tensor_type(w).dtype != DataType::Int(8))
      unsupported("a " + xt.dtype.str() + " FULLY_CONNECTED with " + tensor_type(w).dtype.str() + " weights");
    attrs = int8_attrs(x, out);
    Quant wq = quant(w, true);
    for (int64_t z : wq.zero_point)
      if (z != 0) unsupported("weights with a non-zero zero point (int8 weights are symmetric)");
    if (wq.per_tensor()) attrs["weight_scale"] = wq.scale[0];
    else if (static_cast<int64_t>(wq.scale.size()) == units && wq.axis == 0) attrs["weight_scale"] = wq.scale;
    else fail("the weights' per-channel quantization must have " + std::to_string(units) + " scales along dimension 0");
    op_name = int16 ? "qdense_s16" : "qdense";
    // TFLM: an int64 accumulator, int32 with an int32 bias.
    if (int16) attrs["accumulator"] = b >= 0 && tensor_type(b).dtype == DataType::Int(32) ? "int32" : "int64";
    if (b >= 0) b = quantized_bias(b, units, int16 ? "int64 or int32" : "int32");
  } else {
    op_name = "dense";
  }
  if (b >= 0) inputs.push_back(value(b));
  ActivationFunctionType act = opt->fused_activation_function();
  if (!reshape_after) {
    finish(out, op_name, inputs, attrs, act, int8);
    return;
  }
  // keep_num_dims: the rows go back into the input's leading dimensions.
  std::string final_name = values_.at(out);
  values_[out] = fresh(final_name + "_rows_out");
  finish(out, op_name, inputs, attrs, act, int8);
  std::string rows_out = values_[out];
  values_[out] = final_name;
  emit(final_name, "reshape", {rows_out}, {{"newshape", out_shape}});
}

void TfliteConverter::pool(const tflite::Operator& op, bool average) {
  int x = input(op, 0), out = output(op);
  const auto* opt = op.builtin_options_as_Pool2DOptions();
  if (!opt) fail("the Pool2DOptions are missing");
  TensorType xt = tensor_type(x);
  if (xt.shape.size() != 4) fail("the input must be 4-D (NHWC), it is " + xt.str());
  int64_t fh = opt->filter_height(), fw = opt->filter_width(), sh = opt->stride_h(), sw = opt->stride_w();
  if (fh <= 0 || fw <= 0) fail("the filter size must be positive");
  json attrs = {{"pool_size", {fh, fw}},
                {"strides", {sh, sw}},
                {"padding", padding(opt->padding(), xt.shape[1], xt.shape[2], fh, fw, sh, sw, 1, 1)}};
  std::string op_name;
  if (xt.dtype == DataType::Int(8) || xt.dtype == DataType::Int(16)) {
    same_quant(x, out, average ? "AVERAGE_POOL_2D" : "MAX_POOL_2D");
    op_name = average ? "qavg_pool2d" : "max_pool2d";
    if (!average) attrs["layout"] = "NHWC";
  } else {
    op_name = average ? "avg_pool2d" : "max_pool2d";
    attrs["layout"] = "NHWC";
  }
  finish(out, op_name, {value(x)}, attrs, opt->fused_activation_function(), false);
}

void TfliteConverter::elementwise(const tflite::Operator& op, BuiltinOperator code) {
  int a = input(op, 0), b = input(op, 1), out = output(op);
  ActivationFunctionType act = ActivationFunctionType::NONE;
  std::string float_op, int8_op;
  if (code == BuiltinOperator::ADD) {
    const auto* opt = op.builtin_options_as_AddOptions();
    if (opt) act = opt->fused_activation_function();
    float_op = "add", int8_op = "qadd";
  } else if (code == BuiltinOperator::SUB) {
    const auto* opt = op.builtin_options_as_SubOptions();
    if (opt) act = opt->fused_activation_function();
    float_op = "sub", int8_op = "qsub";
  } else {
    const auto* opt = op.builtin_options_as_MulOptions();
    if (opt) act = opt->fused_activation_function();
    float_op = "mul", int8_op = "qmul";
  }
  TensorType at = tensor_type(a), bt = tensor_type(b);
  if (at.dtype == DataType::Float(32)) {
    finish(out, float_op, {value(a), value(b)}, json::object(), act, false);
    return;
  }
  if (at.dtype == DataType::Int(32) && bt.dtype == at.dtype) {
    // TFLM's int32 ADD: a plain sum, its activation range the whole of int32 whatever
    // the fused activation says (add.cc sets it so); int32 SUB and MUL clamp to their
    // activation's integer range (CalculateActivationRange<int32_t>).
    if (code == BuiltinOperator::ADD) emit(values_.at(out), "add", {value(a), value(b)});
    else finish(out, float_op, {value(a), value(b)}, json::object(), act, false);
    return;
  }
  if (at.dtype != DataType::Int(8) && at.dtype != DataType::Int(16)) unsupported(at.dtype.str() + " data");
  if (bt.dtype != at.dtype || tensor_type(out).dtype != at.dtype)
    unsupported(op_name(code) + " of " + at.dtype.str() + " and " + bt.dtype.str() + " into " + tensor_type(out).dtype.str());
  Quant qa = quant(a, true), qb = quant(b, true), qo = quant(out, true);
  if (!qa.per_tensor() || !qb.per_tensor() || !qo.per_tensor()) unsupported("per-channel quantized activations");
  // TFLM's int16 MUL requires zero points of 0 (Prepare refuses others).
  if (at.dtype == DataType::Int(16) && code == BuiltinOperator::MUL &&
      (qa.zero_point[0] != 0 || qb.zero_point[0] != 0 || qo.zero_point[0] != 0))
    fail("int16 " + op_name(code) + " needs zero points of 0 (TFLite's int16x8 quantization)");
  json attrs = {{"a_scale", qa.scale[0]},      {"a_zero_point", qa.zero_point[0]}, {"b_scale", qb.scale[0]},
                {"b_zero_point", qb.zero_point[0]}, {"output_scale", qo.scale[0]}, {"output_zero_point", qo.zero_point[0]}};
  finish(out, int8_op, {value(a), value(b)}, attrs, act, true);
}

void TfliteConverter::softmax(const tflite::Operator& op) {
  int x = input(op, 0), out = output(op);
  const auto* opt = op.builtin_options_as_SoftmaxOptions();
  double beta = opt ? opt->beta() : 1.0;
  TensorType xt = tensor_type(x);
  std::string name = values_.at(out);
  if (xt.dtype == DataType::Float(32)) {
    if (beta != 1.0) unsupported("SOFTMAX with beta " + std::to_string(beta) + " on float32 data (only beta = 1)");
    emit(name, "softmax", {value(x)}, {{"axis", -1}});
    return;
  }
  if (xt.dtype != DataType::Int(8) && xt.dtype != DataType::Int(16)) unsupported(xt.dtype.str() + " data");
  if (xt.shape.empty()) fail("the input must have at least one dimension");
  Quant qi = quant(x, true), qo = quant(out, true);
  if (!qi.per_tensor()) unsupported("per-channel quantized activations");
  json attrs = {{"input_scale", qi.scale[0]}, {"output_scale", qo.scale[0]}, {"output_zero_point", qo.zero_point[0]}};
  // int8 in and int16 out (TFLM's Softmax<int8, int16>); int16 in is int16 out.
  if (xt.dtype == DataType::Int(8) && tensor_type(out).dtype == DataType::Int(16)) attrs["dtype"] = "int16";
  if (beta != 1.0) attrs["beta"] = beta;  // qsoftmax scales by beta * input_scale, as TFLite does
  int64_t k = xt.shape.back(), rows = xt.num_elements() / k;
  std::string data = value(x);
  if (xt.shape.size() == 2) {
    emit(name, "qsoftmax", {data}, attrs);
    return;
  }
  data = emit(fresh(name + "_rows"), "reshape", {data}, {{"newshape", {rows, k}}});
  std::string s = emit(fresh(name + "_rows_out"), "qsoftmax", {data}, attrs);
  emit(name, "reshape", {s}, {{"newshape", xt.shape}});
}

void TfliteConverter::concatenation(const tflite::Operator& op) {
  int out = output(op);
  const auto* opt = op.builtin_options_as_ConcatenationOptions();
  if (!opt) fail("the ConcatenationOptions are missing");
  size_t n = op.inputs() ? op.inputs()->size() : 0;
  if (n == 0) fail("it has no inputs");
  std::vector<std::string> inputs;
  std::vector<int> ids;
  for (size_t i = 0; i < n; ++i) {
    ids.push_back(input(op, i));
    inputs.push_back(value(ids.back()));
  }
  TensorType ot = tensor_type(out);
  int64_t axis = opt->axis(), rank = static_cast<int64_t>(ot.shape.size());
  if (axis < -rank || axis >= rank) fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  if (axis < 0) axis += rank;
  if (ot.dtype == DataType::Int(8)) {
    json scales = json::array(), zps = json::array();
    for (int id : ids) {
      Quant q = quant(id, true);
      if (!q.per_tensor()) unsupported("per-channel quantized activations");
      scales.push_back(q.scale[0]);
      zps.push_back(q.zero_point[0]);
    }
    Quant qo = quant(out, true);
    json attrs = {{"axis", axis}, {"input_scales", scales}, {"input_zero_points", zps},
                  {"output_scale", qo.scale[0]}, {"output_zero_point", qo.zero_point[0]}};
    finish(out, "qconcat", inputs, attrs, opt->fused_activation_function(), false);
    return;
  }
  finish(out, "concat", inputs, {{"axis", axis}}, opt->fused_activation_function(), false);
}

void TfliteConverter::pad(const tflite::Operator& op) {
  int x = input(op, 0), p = input(op, 1), out = output(op);
  TensorType xt = tensor_type(x);
  if (!has_data(p)) unsupported("paddings computed at run time");
  NDArray pads = constant_value(p);
  if (pads.shape != std::vector<int64_t>{static_cast<int64_t>(xt.shape.size()), 2})
    fail("the paddings must be [" + std::to_string(xt.shape.size()) + ", 2], they are " + TensorType{pads.dtype, pads.shape}.str());
  json widths = json::array();
  for (size_t d = 0; d < xt.shape.size(); ++d) {
    int64_t before = pads.get_int(static_cast<int64_t>(2 * d)), after = pads.get_int(static_cast<int64_t>(2 * d + 1));
    if (before < 0 || after < 0 || before > kMaxElements || after > kMaxElements) fail("paddings must be non-negative");
    widths.push_back({before, after});
  }
  json attrs = {{"pad_width", widths}};
  // The padding value: PADV2's constant_values tensor, else TFLM's default: the zero
  // point for int8 (real zero), 0 for every other type (int16x8 has zero point 0).
  int c = input(op, 2, true);
  if (c >= 0) {
    if (!has_data(c)) unsupported("a padding value computed at run time");
    NDArray cv = constant_value(c);
    if (cv.dtype != xt.dtype || cv.num_elements() != 1)
      fail("the padding value must be one " + xt.dtype.str() + " value, it is " + TensorType{cv.dtype, cv.shape}.str());
    attrs["pad_value"] = cv.dtype.is_float() ? cv.get_float(0) : static_cast<double>(cv.get_int(0));
  }
  if (xt.dtype == DataType::Int(8) || xt.dtype == DataType::Int(16)) {
    same_quant(x, out, op_name(BuiltinOperator::PAD));
    if (c < 0 && xt.dtype == DataType::Int(8)) attrs["pad_value"] = quant(out, true).zero_point[0];  // real zero
  }
  emit(values_.at(out), "pad", {value(x)}, attrs);
}

void TfliteConverter::mean(const tflite::Operator& op, bool sum) {
  const std::string what = sum ? "SUM" : "MEAN";
  int x = input(op, 0), a = input(op, 1), out = output(op);
  const auto* opt = op.builtin_options_as_ReducerOptions();
  bool keep = opt && opt->keep_dims();
  TensorType xt = tensor_type(x);
  const int64_t rank = static_cast<int64_t>(xt.shape.size());
  const std::vector<int64_t> axes = constant_axes(a, rank);  // convert_reduce.cc
  const std::set<int64_t> ax(axes.begin(), axes.end());
  // The result with every reduced axis kept as 1; without keep_dims they are dropped.
  std::vector<int64_t> kept = xt.shape, dropped;
  for (int64_t k = 0; k < rank; ++k) {
    if (ax.count(k)) kept[k] = 1;
    else dropped.push_back(xt.shape[k]);
  }
  std::string op_name;
  json attrs;
  if (xt.dtype != DataType::Int(8) && xt.dtype != DataType::Int(16) &&
      (sum || rank != 4 || ax != std::set<int64_t>{1, 2})) {
    reduce(op, sum ? BuiltinOperator::SUM : BuiltinOperator::MEAN);  // convert_reduce.cc
    return;
  }
  if (xt.dtype == DataType::Float(32) && !sum) {
    op_name = "global_avg_pool2d";
    attrs = {{"layout", "NHWC"}};
  } else if (xt.dtype == DataType::Int(8) || xt.dtype == DataType::Int(16)) {
    // TFLite's integer mean (a truncating division or a requantization) or sum.
    Quant qi = quant(x, true), qo = quant(out, true);
    if (!qi.per_tensor() || !qo.per_tensor()) unsupported("per-channel quantized activations");
    op_name = sum ? "qsum" : "qmean";
    attrs = {{"input_scale", qi.scale[0]},
             {"input_zero_point", qi.zero_point[0]},
             {"output_scale", qo.scale[0]},
             {"output_zero_point", qo.zero_point[0]}};
    if (rank != 4 || ax != std::set<int64_t>{1, 2}) attrs["axis"] = std::vector<int64_t>(ax.begin(), ax.end());
  } else {
    unsupported(xt.dtype.str() + " " + what + " (" + (sum ? "int8 and int16" : "float32, int8 and int16") +
                " are supported)");
  }
  std::string name = values_.at(out);
  if (keep || kept == dropped) {
    emit(name, op_name, {value(x)}, attrs);
    return;
  }
  std::string m = emit(fresh(name + "_keep"), op_name, {value(x)}, attrs);
  emit(name, "reshape", {m}, {{"newshape", dropped}});
}

// Names each output of an operator (a model output keeps its TFLite name, reserved in
// run()) and checks that nothing else computes or holds it.
std::vector<int> TfliteConverter::name_outputs(const tflite::Operator& op) {
  const std::vector<int> outs = outputs(op);
  for (int out : outs) {
    if (values_.count(out)) fail(tensor_label(out) + " is computed twice");
    if (has_data(out)) fail(tensor_label(out) + " is an operator's output but holds constant data");
    if (is_variable(out)) unsupported(tensor_label(out) + ", a variable tensor, is an operator's output (a variable "
                                                           "tensor is an operator's own state; resource variables are "
                                                           "written with ASSIGN_VARIABLE)");
    // The output's name: a model output keeps its TFLite name (reserved in run()).
    std::string tname = tensor(out).name() ? tensor(out).name()->str() : "";
    bool is_output = false;
    for (int o : *sg_->outputs()) is_output = is_output || o == out;
    values_[out] = is_output ? io_names_.at(out) : fresh(short_name(tname).empty() ? "t" + std::to_string(out) : short_name(tname));
  }
  return outs;
}

// The elementwise, activation, comparison and reduction families: false for any other.
bool TfliteConverter::convert_math_op(const tflite::Operator& op, BuiltinOperator code) {
  switch (code) {
    case BuiltinOperator::LOGISTIC:
    case BuiltinOperator::TANH:
    case BuiltinOperator::RELU:
    case BuiltinOperator::RELU6:
    case BuiltinOperator::HARD_SWISH:
    case BuiltinOperator::ELU: activation(op, code); return true;
    case BuiltinOperator::ABS:
    case BuiltinOperator::NEG:
    case BuiltinOperator::SQUARE:
    case BuiltinOperator::SQRT:
    case BuiltinOperator::RSQRT:
    case BuiltinOperator::EXP:
    case BuiltinOperator::LOG:
    case BuiltinOperator::SIN:
    case BuiltinOperator::COS:
    case BuiltinOperator::FLOOR:
    case BuiltinOperator::CEIL:
    case BuiltinOperator::ROUND: unary_math(op, code); return true;
    case BuiltinOperator::MAXIMUM:
    case BuiltinOperator::MINIMUM:
    case BuiltinOperator::DIV:
    case BuiltinOperator::SQUARED_DIFFERENCE:
    case BuiltinOperator::FLOOR_DIV:
    case BuiltinOperator::FLOOR_MOD:
    case BuiltinOperator::ADD_N:
    case BuiltinOperator::PRELU: binary(op, code); return true;
    case BuiltinOperator::EQUAL:
    case BuiltinOperator::NOT_EQUAL:
    case BuiltinOperator::LESS:
    case BuiltinOperator::LESS_EQUAL:
    case BuiltinOperator::GREATER:
    case BuiltinOperator::GREATER_EQUAL:
    case BuiltinOperator::SELECT:
    case BuiltinOperator::SELECT_V2:
    case BuiltinOperator::LOGICAL_AND:
    case BuiltinOperator::LOGICAL_OR:
    case BuiltinOperator::LOGICAL_NOT: compare(op, code); return true;
    case BuiltinOperator::REDUCE_MAX:
    case BuiltinOperator::REDUCE_MIN:
    case BuiltinOperator::ARG_MAX:
    case BuiltinOperator::ARG_MIN:
    case BuiltinOperator::CUMSUM: reduce(op, code); return true;
    case BuiltinOperator::L2_POOL_2D:
    case BuiltinOperator::L2_NORMALIZATION:
    case BuiltinOperator::LOG_SOFTMAX:
    case BuiltinOperator::BATCH_MATMUL: float_composite(op, code); return true;
    default: return false;
  }
}

// Checks each output's computed type against the model's, and records it as a layer.
void TfliteConverter::record_outputs(const std::vector<int>& outs) {
  for (int o : outs) {
    TensorType got = types_.at(values_.at(o));
    if (got.dtype != tensor_type(o).dtype || got.shape != tensor_type(o).shape)
      fail("it computes " + got.str() + ", but the model says its output " + tensor_label(o) + " is " + tensor_type(o).str());
    layers_.push_back(values_.at(o));
    produced_.insert(o);
  }
}

void TfliteConverter::convert(size_t index, const tflite::Operator& op, BuiltinOperator code) {
  check_op_dtype(op, code);  // op_support.cc: the operator x dtype table
  if (convert_control_op(op, code)) return;  // convert_variable.cc
  const std::vector<int> outs = name_outputs(op);
  const int out = outs[0];
  const TensorType want = tensor_type(out);
  switch (code) {
    case BuiltinOperator::CONV_2D: conv(op, false); break;
    case BuiltinOperator::DEPTHWISE_CONV_2D: conv(op, true); break;
    case BuiltinOperator::FULLY_CONNECTED: fully_connected(op); break;
    case BuiltinOperator::TRANSPOSE_CONV: transpose_conv(op); break;
    case BuiltinOperator::AVERAGE_POOL_2D: pool(op, true); break;
    case BuiltinOperator::MAX_POOL_2D: pool(op, false); break;
    case BuiltinOperator::ADD:
    case BuiltinOperator::SUB:
    case BuiltinOperator::MUL: elementwise(op, code); break;
    case BuiltinOperator::RESHAPE: {
      int x = input(op, 0);
      if (tensor_type(x).num_elements() != want.num_elements())
        fail("it reshapes " + tensor_type(x).str() + " into " + want.str() + ", which has a different number of elements");
      emit(values_.at(out), "reshape", {value(x)}, {{"newshape", want.shape}});
      break;
    }
    case BuiltinOperator::SOFTMAX: softmax(op); break;
    case BuiltinOperator::QUANTIZE: quantize(op); break;
    case BuiltinOperator::DEQUANTIZE: dequantize(op); break;
    case BuiltinOperator::CAST: cast(op); break;
    case BuiltinOperator::PAD:
    case BuiltinOperator::PADV2: pad(op); break;
    case BuiltinOperator::STRIDED_SLICE: strided_slice(op); break;
    case BuiltinOperator::LEAKY_RELU: leaky_relu(op); break;
    case BuiltinOperator::SVDF: svdf(op); break;
    case BuiltinOperator::MEAN: mean(op, false); break;
    case BuiltinOperator::SUM: mean(op, true); break;
    case BuiltinOperator::CONCATENATION: concatenation(op); break;
    case BuiltinOperator::TRANSPOSE: transpose(op); break;
    case BuiltinOperator::UNIDIRECTIONAL_SEQUENCE_LSTM: lstm(op); break;
    default:
      if (!convert_math_op(op, code) && !convert_shape_op(op, code))
        user_error({}, file_ + ": unsupported TFLite operator " + op_name(code) + " (" + scope_ + "node " +
                           std::to_string(index) + ")");
  }
  record_outputs(outs);
}

BuiltinOperator TfliteConverter::operator_at(size_t i, const tflite::Operator** out) {
  const auto* codes = model_.operator_codes();
  const auto* op = sg_->operators()->Get(static_cast<flatbuffers::uoffset_t>(i));
  where_ = scope_ + "operator " + std::to_string(i) + ": ";
  if (!op) fail("it is missing");
  if (!codes || op->opcode_index() >= codes->size())
    fail("opcode index " + std::to_string(op->opcode_index()) + " is out of range (the model has " +
         std::to_string(codes ? codes->size() : 0) + " operator codes)");
  const auto* oc = codes->Get(op->opcode_index());
  // TFLite's rule: the larger of the two codes (the old byte field stops at 127).
  int32_t c = std::max<int32_t>(static_cast<int32_t>(oc->builtin_code()), oc->deprecated_builtin_code());
  auto code = static_cast<BuiltinOperator>(c);
  if (code == BuiltinOperator::CUSTOM)
    user_error({}, file_ + ": unsupported TFLite custom operator '" + (oc->custom_code() ? oc->custom_code()->str() : "") +
                       "' (node " + std::to_string(i) + ")");
  const char* name = tflite::EnumNameBuiltinOperator(code);
  if (!name || !*name)
    user_error({}, file_ + ": unknown TFLite operator code " + std::to_string(c) + " (node " + std::to_string(i) + ")");
  where_ = scope_ + "operator " + std::to_string(i) + " (" + name + "): ";
  *out = op;
  return code;
}

TfliteImport TfliteConverter::run() {
  if (!model_.subgraphs() || model_.subgraphs()->size() == 0) fail("the model has no subgraph");
  // Other subgraphs are read where an operator names them (CALL_ONCE, convert_variable.cc).
  sg_ = model_.subgraphs()->Get(0);
  if (!sg_ || !sg_->inputs() || !sg_->outputs() || !sg_->operators()) fail("the subgraph lacks inputs, outputs or operators");
  if (sg_->operators()->size() == 0) unsupported("a model without operators");
  if (sg_->outputs()->size() == 0) fail("the model has no outputs");
  g_.name = "model";
  // A model input or output keeps its TFLite name, whatever its characters (the C
  // identifiers come later, executor/aot.h); a nameless one is input_<k> / output_<k>,
  // k its position in the subgraph's list, with _1, _2, ... if another one has that name.
  auto own_name = [&](int t) { return tensor(t).name() ? valid_utf8(tensor(t).name()->str()) : std::string(); };
  for (int t : *sg_->inputs()) {
    if (own_name(t).empty()) continue;
    if (!used_.insert(own_name(t)).second) fail("two model inputs are called '" + own_name(t) + "'");
    io_names_[t] = own_name(t);
  }
  for (int t : *sg_->outputs()) {
    if (own_name(t).empty() || io_names_.count(t)) continue;
    if (!used_.insert(own_name(t)).second) fail("two model inputs or outputs are called '" + own_name(t) + "'");
    io_names_[t] = own_name(t);
  }
  for (const auto& [list, prefix] : {std::make_pair(sg_->inputs(), "input_"), std::make_pair(sg_->outputs(), "output_")})
    for (flatbuffers::uoffset_t k = 0; k < list->size(); ++k)
      if (!io_names_.count(list->Get(k))) io_names_[list->Get(k)] = fresh(prefix + std::to_string(k));
  auto io_name = [&](int t) { return io_names_.at(t); };
  auto record_quant = [&](int t, const std::string& name) {
    // Quantized I/O (int8, uint8, int16x8) records its scale and zero point. An int8 or
    // int16 tensor without them is plain integers (CAST's, MAXIMUM's): an operator whose
    // TFLM kernel reads the quantization asks for it, and refuses it by name if absent.
    const DataType dt = tensor_type(t).dtype;
    if (dt != DataType::Int(8) && dt != DataType::Int(16) && dt != DataType::UInt(8)) return;
    Quant q = quant(t, false);
    if (q.scale.empty()) return;
    if (!q.per_tensor()) unsupported("per-channel quantized model inputs or outputs");
    g_.quantization[name] = {q.scale[0], q.zero_point[0]};
  };
  for (int t : *sg_->inputs()) {
    std::string n = io_name(t);
    if (has_data(t)) fail(tensor_label(t) + " is a model input but holds constant data");
    if (is_variable(t)) unsupported(tensor_label(t) + ", a variable, is a model input");
    TensorType ty = tensor_type(t);
    if (ty.shape.empty()) unsupported("scalar model inputs");
    values_[t] = n;
    types_[n] = ty;
    g_.inputs.push_back({n, ty});
    record_quant(t, n);
  }
  for (int t : *sg_->outputs())
    if (values_.count(t)) unsupported("a model output that is a model input (" + io_name(t) + ")");
  collect_variables();
  for (size_t i = 0; i < sg_->operators()->size(); ++i) {
    const tflite::Operator* op = nullptr;
    const BuiltinOperator code = operator_at(i, &op);
    convert(i, *op, code);
  }
  where_.clear();
  for (int t : *sg_->outputs()) {
    if (!produced_.count(t)) fail(tensor_label(t) + ", a model output, is computed by no operator");
    g_.outputs.push_back(values_.at(t));
    record_quant(t, values_.at(t));
  }
  try {
    check_state_use(g_);
  } catch (const DiagnosticError& e) {
    if (e.internal()) throw;
    unsupported(e.diagnostics().empty() ? std::string("state") : e.diagnostics()[0].message);
  }
  return {std::move(g_), std::move(layers_)};
}

}  // namespace tflite_import

TfliteImport import_tflite(const std::string& bytes, const std::string& filename) {
  const auto* data = reinterpret_cast<const uint8_t*>(bytes.data());
  if (bytes.size() < 8) user_error({}, filename + ": not a TFLite model: the file is " + std::to_string(bytes.size()) + " bytes long");
  if (!flatbuffers::BufferHasIdentifier(data, tflite::ModelIdentifier()))
    user_error({}, filename + ": not a TFLite model: it lacks the flatbuffer identifier 'TFL3'");
  if (bytes.size() >= static_cast<size_t>(FLATBUFFERS_MAX_BUFFER_SIZE))
    user_error({}, filename + ": the file is larger than a flatbuffer can be (2 GiB)");
  // Alignment is checked relative to the buffer's start: copy into 16-byte-aligned memory.
  std::vector<uint64_t> aligned((bytes.size() + 7) / 8 + 1);
  std::memcpy(aligned.data(), bytes.data(), bytes.size());
  const auto* buf = reinterpret_cast<const uint8_t*>(aligned.data());
  flatbuffers::Verifier verifier(buf, bytes.size(), /*max_depth=*/64, /*max_tables=*/1000000);
  if (!tflite::VerifyModelBuffer(verifier))
    user_error({}, filename + ": not a valid TFLite model: the flatbuffer verifier rejects it (truncated or corrupt: "
                              "an offset, size or table lies outside the file)");
  return tflite_import::TfliteConverter(*tflite::GetModel(buf), filename).run();
}

Graph load_tflite(const std::string& bytes, const std::string& filename) { return import_tflite(bytes, filename).graph; }

}  // namespace mtir
