// float32 operators composed of library ops, in TFLite Micro's order of arithmetic:
//   L2_POOL_2D        sqrt(average of x² over the window, padding not counted): square,
//                     avg_pool2d, sqrt, then the fused activation;
//   L2_NORMALIZATION  x / max(sqrt(sum of x² over the last axis), 1e-6);
//   LOG_SOFTMAX       log_softmax over the last axis;
//   BATCH_MATMUL      matmul with broadcast batch dimensions, adj_x / adj_y transposing
//                     the last two axes first.
// int8 L2_NORMALIZATION is `ql2_normalization`, int8 LOG_SOFTMAX `qlog_softmax` (with its
// compile-time table), int8 and int16 BATCH_MATMUL `qbatch_matmul` (TFLM's integer
// kernels; int16 with its int64 accumulator); the
// operator x dtype table (op_support.cc) refuses the other dtypes.
#include <numeric>

#include "frontend/tflite/converter.h"
#include "ops/qlog_softmax.h"

namespace mtir {
namespace tflite_import {

void TfliteConverter::float_composite(const tflite::Operator& op, BuiltinOperator code) {
  int x = input(op, 0), out = output(op);
  TensorType xt = tensor_type(x);
  const std::string name = values_.at(out);
  const bool int8 = xt.dtype == DataType::Int(8);  // else float32 (op_support.cc)
  if (int8 && (code == BuiltinOperator::L2_NORMALIZATION || code == BuiltinOperator::LOG_SOFTMAX)) {
    // TFLM's Prepare insists on the output quantization its kernel assumes.
    const bool l2 = code == BuiltinOperator::L2_NORMALIZATION;
    Quant qi = quant(x, true), qo = quant(out, true);
    if (!qi.per_tensor() || !qo.per_tensor()) unsupported("per-channel quantized activations");
    if (static_cast<float>(qo.scale[0]) != (l2 ? 1.0f / 128 : 16.0f / 256) || qo.zero_point[0] != (l2 ? 0 : 127))
      fail(std::string("the int8 output must have scale ") + (l2 ? "1/128 and zero point 0" : "16/256 and zero point 127") +
           " (TFLite's " + op_name(code) + " output)");
    if (l2) emit(name, "ql2_normalization", {value(x)}, {{"input_zero_point", qi.zero_point[0]}});
    else emit(name, "qlog_softmax", {value(x), add_constant(name + "_table", ops::log_softmax_table(qi.scale[0]))},
              {{"input_scale", qi.scale[0]}});
    return;
  }
  if (code == BuiltinOperator::LOG_SOFTMAX) {
    emit(name, "log_softmax", {value(x)}, {{"axis", -1}});
    return;
  }
  if (code == BuiltinOperator::BATCH_MATMUL) {
    int y = input(op, 1);
    const auto* opt = op.builtin_options_as_BatchMatMulOptions();
    auto adjoint = [&](int t, bool adj) {
      std::string v = value(t);
      if (!adj) return v;
      std::vector<int64_t> axes(tensor_type(t).shape.size());
      std::iota(axes.begin(), axes.end(), 0);
      if (axes.size() < 2) fail("an adjoint operand needs two dimensions");
      std::swap(axes[axes.size() - 1], axes[axes.size() - 2]);
      return emit(fresh(name + "_adj"), "transpose", {v}, {{"axes", axes}});
    };
    if (tensor_type(y).dtype != xt.dtype) unsupported("BATCH_MATMUL of " + xt.dtype.str() + " and " + tensor_type(y).dtype.str());
    const std::string a = adjoint(x, opt && opt->adj_x()), b = adjoint(y, opt && opt->adj_y());
    if (xt.dtype == DataType::Float(32)) {
      emit(name, "matmul", {a, b});
      return;
    }
    Quant qa = quant(x, true), qb = quant(y, true), qo = quant(out, true);
    if (!qa.per_tensor() || !qb.per_tensor() || !qo.per_tensor()) unsupported("per-channel quantized BATCH_MATMUL operands");
    emit(name, "qbatch_matmul", {a, b},
         {{"a_scale", qa.scale[0]}, {"a_zero_point", qa.zero_point[0]}, {"b_scale", qb.scale[0]},
          {"b_zero_point", qb.zero_point[0]}, {"output_scale", qo.scale[0]}, {"output_zero_point", qo.zero_point[0]}});
    return;
  }
  std::string sq = emit(fresh(name + "_square"), "square", {value(x)});
  if (code == BuiltinOperator::L2_NORMALIZATION) {
    if (xt.shape.empty()) fail("the input must have at least one dimension");
    const int64_t last = static_cast<int64_t>(xt.shape.size()) - 1;
    std::string sum = emit(fresh(name + "_sum"), "reduce_sum", {sq}, {{"axis", {last}}});
    std::string norm = emit(fresh(name + "_norm"), "sqrt", {sum});
    NDArray eps = NDArray::zeros(DataType::Float(32), {1});
    eps.set_float(0, 1e-6f);
    std::string floor = emit(fresh(name + "_floor"), "maximum", {norm, add_constant(name + "_epsilon", eps)});
    emit(name, "div", {value(x), floor});
    return;
  }
  // L2_POOL_2D
  const auto* opt = op.builtin_options_as_Pool2DOptions();
  if (!opt) fail("the Pool2DOptions are missing");
  if (xt.shape.size() != 4) fail("the input must be 4-D (NHWC), it is " + xt.str());
  int64_t fh = opt->filter_height(), fw = opt->filter_width(), sh = opt->stride_h(), sw = opt->stride_w();
  if (fh <= 0 || fw <= 0) fail("the filter size must be positive");
  json attrs = {{"pool_size", {fh, fw}},
                {"strides", {sh, sw}},
                {"padding", padding(opt->padding(), xt.shape[1], xt.shape[2], fh, fw, sh, sw, 1, 1)},
                {"layout", "NHWC"}};
  std::string mean = emit(fresh(name + "_mean"), "avg_pool2d", {sq}, attrs);
  finish(out, "sqrt", {mean}, json::object(), opt->fused_activation_function(), false);
}

}  // namespace tflite_import
}  // namespace mtir
