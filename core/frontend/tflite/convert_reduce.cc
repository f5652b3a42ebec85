// Reductions: REDUCE_MAX, REDUCE_MIN (any dtype; int8/int16 need equal input and output
// quantization, as TFLM checks), SUM and MEAN on float32 / int32 over any axes (the
// integer SUM and MEAN requantize: tflite.cc's mean()), ARG_MAX, ARG_MIN (int32 or
// int64 out) and CUMSUM, each with its axes from a constant tensor.
#include <set>

#include "frontend/tflite/converter.h"

namespace mtir {
namespace tflite_import {

std::vector<int64_t> TfliteConverter::constant_axes(int t, int64_t rank) {
  if (!has_data(t)) unsupported("axes computed at run time");
  NDArray axes = constant_value(t);
  std::vector<int64_t> out;
  for (int64_t i = 0; i < axes.num_elements(); ++i) {
    int64_t v = axes.get_int(i);
    if (v < -rank || v >= rank) fail("axis " + std::to_string(v) + " is out of range for rank " + std::to_string(rank));
    out.push_back(v < 0 ? v + rank : v);
  }
  return out;
}

void TfliteConverter::reduce(const tflite::Operator& op, BuiltinOperator code) {
  int x = input(op, 0), a = input(op, 1), out = output(op);
  TensorType xt = tensor_type(x);
  const std::string name = values_.at(out), what = xt.dtype.str() + " " + op_name(code);
  const int64_t rank = static_cast<int64_t>(xt.shape.size());
  std::vector<int64_t> axes = constant_axes(a, rank);
  const bool quantized = xt.dtype == DataType::Int(8) || xt.dtype == DataType::Int(16);
  if (code == BuiltinOperator::ARG_MAX || code == BuiltinOperator::ARG_MIN) {
    if (axes.size() != 1) fail("the axis must be one value");
    emit(name, code == BuiltinOperator::ARG_MAX ? "argmax" : "argmin", {value(x)},
         {{"axis", axes[0]}, {"dtype", tensor_type(out).dtype.str()}});
    return;
  }
  if (code == BuiltinOperator::CUMSUM) {
    if (axes.size() != 1) fail("the axis must be one value");
    if (xt.dtype == DataType::Int(16)) unsupported(what + " (float32, int8 and int32 are supported)");
    const auto* opt = op.builtin_options_as_CumsumOptions();
    const json attrs = {{"axis", axes[0]}, {"exclusive", opt && opt->exclusive()}, {"reverse", opt && opt->reverse()}};
    if (!quantized) {
      emit(name, "cumsum", {value(x)}, attrs);
      return;
    }
    const Quant q = scaled_sum_quant(op, 1);  // TFLM's scaled int32 running sum (convert_scaled_sum.cc)
    scaled_sum_output(out, q, emit(fresh(name + "_sums"), "cumsum", {scaled_input(x, q, name + "_scaled")}, attrs));
    return;
  }
  std::string kind;
  if (code == BuiltinOperator::REDUCE_MAX) kind = "reduce_max";
  else if (code == BuiltinOperator::REDUCE_MIN) kind = "reduce_min";
  else if (code == BuiltinOperator::SUM) kind = "reduce_sum";
  else kind = "reduce_mean";
  if (quantized) {
    if (kind != "reduce_max" && kind != "reduce_min") fail("integer SUM and MEAN requantize (tflite.cc)");
    same_quant(x, out, op_name(code));
  } else if (xt.dtype != DataType::Float(32) && (kind == "reduce_mean" || xt.dtype != DataType::Int(32))) {
    unsupported(what + " (float32" + std::string(kind == "reduce_mean" ? "" : ", int32") + ", int8 and int16 are supported)");
  }
  const auto* opt = op.builtin_options_as_ReducerOptions();
  std::set<int64_t> unique(axes.begin(), axes.end());
  std::vector<int64_t> dropped;
  for (int64_t k = 0; k < rank; ++k)
    if (!unique.count(k)) dropped.push_back(xt.shape[static_cast<size_t>(k)]);
  if (unique.empty()) {
    emit(name, "reshape", {value(x)}, {{"newshape", xt.shape}});  // no axis: a copy
    return;
  }
  json attrs = {{"axis", std::vector<int64_t>(unique.begin(), unique.end())}};
  if (opt && opt->keep_dims()) {
    emit(name, kind, {value(x)}, attrs);
    return;
  }
  std::string r = emit(fresh(name + "_keep"), kind, {value(x)}, attrs);
  emit(name, "reshape", {r}, {{"newshape", dropped}});
}

}  // namespace tflite_import
}  // namespace mtir
