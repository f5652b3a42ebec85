// TRANSPOSE_CONV: inputs (output_shape int32 [4], filter [O, KH, KW, C], data NHWC,
// optional bias), in float32 (transpose_conv2d), int8 and int16x8 (qtranspose_conv2d,
// ops/qconv_s16.cc). The output's height and width are the output tensor's static shape.
// A constant output_shape must say the same; an output_shape that is a model input (as in
// TFLM's SEANet tests) is taken but not read: TFLM, which has no dynamic tensors, also
// reads only the output tensor's shape (in Prepare) and ignores input 0 afterwards.
#include "frontend/tflite/converter.h"

namespace mtir {
namespace tflite_import {

void TfliteConverter::transpose_conv(const tflite::Operator& op) {
  int shape = input(op, 0), w = input(op, 1), x = input(op, 2), b = input(op, 3, true), out = output(op);
  const auto* opt = op.builtin_options_as_TransposeConvOptions();
  if (!opt) fail("the TransposeConvOptions are missing");
  TensorType xt = tensor_type(x), wt = tensor_type(w), ot = tensor_type(out), st = tensor_type(shape);
  if (xt.shape.size() != 4) fail("the input must be 4-D (NHWC), it is " + xt.str());
  if (wt.shape.size() != 4) fail("the filter must be 4-D [O, KH, KW, C], it is " + wt.str());
  if (ot.shape.size() != 4) fail("the output must be 4-D (NHWC), it is " + ot.str());
  if (!has_data(w)) unsupported("a filter computed at run time");
  if (st.dtype != DataType::Int(32) || st.shape != std::vector<int64_t>{4})
    fail("the output shape (input 0) must be int32 [4], it is " + st.str());
  if (has_data(shape)) {
    NDArray given = constant_value(shape);
    for (int64_t d = 0; d < 4; ++d)
      if (given.get_int(d) != ot.shape[static_cast<size_t>(d)])
        fail("the output shape (input 0) says [" + std::to_string(given.get_int(0)) + ", " +
             std::to_string(given.get_int(1)) + ", " + std::to_string(given.get_int(2)) + ", " +
             std::to_string(given.get_int(3)) + "], the output tensor is " + ot.str());
  } else {
    value(shape);  // a model input: must exist, is not read (see above)
  }
  const int64_t o = wt.shape[0], kh = wt.shape[1], kw = wt.shape[2];
  if (wt.shape[3] != xt.shape[3])
    fail("the filter " + wt.str() + " takes " + std::to_string(wt.shape[3]) + " channels, the input has " +
         std::to_string(xt.shape[3]));
  if (ot.shape[0] != xt.shape[0] || ot.shape[3] != o)
    fail("the output " + ot.str() + " does not have the input's batch and the filter's " + std::to_string(o) + " channels");
  const int64_t sh = opt->stride_h(), sw = opt->stride_w();
  if (sh <= 0 || sw <= 0) fail("strides must be positive");
  // TFLM's ComputePaddingHeightWidth with the output's size in the input's place: the
  // size a convolution of that output would have, and the smaller half of its padding.
  auto before = [&](int64_t size, int64_t k, int64_t s) -> int64_t {
    int64_t conv_out;
    if (opt->padding() == tflite::Padding::SAME) conv_out = (size + s - 1) / s;
    else if (opt->padding() == tflite::Padding::VALID) conv_out = (size + s - k) / s;
    else fail("unknown padding " + std::to_string(static_cast<int>(opt->padding())));
    int64_t total = (conv_out - 1) * s + k - size;
    return total > 0 ? total / 2 : 0;
  };
  json attrs = {{"strides", {sh, sw}},
                {"padding", {before(ot.shape[1], kh, sh), before(ot.shape[2], kw, sw)}},
                {"output_size", {ot.shape[1], ot.shape[2]}}};
  std::vector<std::string> inputs = {value(x), value(w)};
  if (xt.dtype == DataType::Float(32)) {
    if (wt.dtype != DataType::Float(32)) unsupported("a float32 TRANSPOSE_CONV with a " + wt.dtype.str() + " filter");
    if (b >= 0) {
      TensorType bt = tensor_type(b);
      if (bt.dtype != DataType::Float(32) || bt.shape != std::vector<int64_t>{o})
        fail("the bias must be float32 [" + std::to_string(o) + "], it is " + bt.str());
      inputs.push_back(value(b));
    }
    finish(out, "transpose_conv2d", inputs, attrs, opt->fused_activation_function(), false);
    return;
  }
  const bool int16 = xt.dtype == DataType::Int(16);
  if (xt.dtype != DataType::Int(8) && !int16) unsupported(xt.dtype.str() + " data");
  if (wt.dtype != DataType::Int(8)) unsupported("an " + xt.dtype.str() + " TRANSPOSE_CONV with a " + wt.dtype.str() + " filter");
  attrs.update(int8_attrs(x, out));
  Quant wq = quant(w, true);
  for (int64_t z : wq.zero_point)
    if (z != 0) unsupported("a filter with a non-zero zero point (int8 filters are symmetric)");
  if (wq.per_tensor()) attrs["weight_scale"] = wq.scale[0];
  else if (wq.axis == 0 && static_cast<int64_t>(wq.scale.size()) == o) attrs["weight_scale"] = wq.scale;
  else fail("the filter's per-channel quantization must have " + std::to_string(o) + " scales along dimension 0");
  if (b >= 0) {
    TensorType bt = tensor_type(b);
    if (int16 && bt.dtype == DataType::Int(16) && bt.shape == std::vector<int64_t>{o} && has_data(b)) {
      // TFLM widens an int16 bias to int64 before its int16x8 kernel (a leftover of old
      // converters); so do we, once, at import.
      NDArray narrow = constant_value(b), wide = NDArray::zeros(DataType::Int(64), {o});
      for (int64_t c = 0; c < o; ++c) wide.set_int(c, narrow.get_int(c));
      inputs.push_back(add_constant(values_.at(out) + "_bias", std::move(wide)));
    } else {
      inputs.push_back(value(quantized_bias(b, o, int16 ? "int64" : "int32")));
    }
  }
  // int16x8: TFLM's scratch accumulator is int64 with or without a bias.
  if (int16) attrs["accumulator"] = "int64";
  finish(out, "qtranspose_conv2d", inputs, attrs, opt->fused_activation_function(), true);
}

}  // namespace tflite_import
}  // namespace mtir
