// Slicing and joining: SLICE (begin and size, size -1 to the end), SPLIT (equal parts),
// SPLIT_V (given sizes, one of them -1 for the rest), UNPACK (every index of an axis,
// the axis dropped) and PACK (inputs stacked along a new axis). Each output of a
// multi-output operator is its own strided_slice node; PACK is each input reshaped with
// the new axis, then one concat. Data is only moved, in every dtype, bytes for bytes:
// as TFLM, no requantization between the inputs' and outputs' quantization.
#include "frontend/tflite/converter.h"

namespace mtir {
namespace tflite_import {
namespace {

// A strided_slice taking [begin, end) on every axis (stride 1).
json slice_attrs(const std::vector<int64_t>& begin, const std::vector<int64_t>& end) {
  return {{"begin", begin}, {"end", end}, {"strides", std::vector<int64_t>(begin.size(), 1)}};
}

}  // namespace

void TfliteConverter::slice(const tflite::Operator& op) {
  int x = input(op, 0), out = output(op);
  const std::vector<int64_t> s = tensor_type(x).shape;
  auto begin = constant_ints(input(op, 1), "the begin");
  auto size = constant_ints(input(op, 2), "the size");
  if (begin.size() != s.size() || size.size() != s.size())
    fail("begin and size need " + std::to_string(s.size()) + " values, one per axis of " + tensor_type(x).str());
  std::vector<int64_t> end(s.size());
  for (size_t k = 0; k < s.size(); ++k) {
    end[k] = size[k] == -1 ? s[k] : begin[k] + size[k];
    if (begin[k] < 0 || size[k] < -1 || size[k] == 0 || end[k] > s[k])
      fail("axis " + std::to_string(k) + " (size " + std::to_string(s[k]) + ") cannot be sliced from " +
           std::to_string(begin[k]) + " for " + std::to_string(size[k]));
  }
  emit(values_.at(out), "strided_slice", {value(x)}, slice_attrs(begin, end));
}

void TfliteConverter::split(const tflite::Operator& op, bool sizes) {
  const std::vector<int> outs = outputs(op);
  // SPLIT is (axis, data); SPLIT_V is (data, size_splits, axis).
  int x = input(op, sizes ? 0 : 1);
  auto axis_v = constant_ints(input(op, sizes ? 2 : 0), "the axis");
  const std::vector<int64_t> s = tensor_type(x).shape;
  const int64_t rank = static_cast<int64_t>(s.size());
  if (axis_v.size() != 1) fail("the axis must be one value, it has " + std::to_string(axis_v.size()));
  int64_t axis = axis_v[0];
  if (axis < -rank || axis >= rank) fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  if (axis < 0) axis += rank;
  const int64_t n = s[static_cast<size_t>(axis)], parts = static_cast<int64_t>(outs.size());
  std::vector<int64_t> lengths;
  if (!sizes) {
    if (n % parts != 0)
      fail("axis " + std::to_string(axis) + " of size " + std::to_string(n) + " does not split into " +
           std::to_string(parts) + " equal parts");
    lengths.assign(static_cast<size_t>(parts), n / parts);
  } else {
    lengths = constant_ints(input(op, 1), "the split sizes");
    if (static_cast<int64_t>(lengths.size()) != parts)
      fail(std::to_string(lengths.size()) + " split sizes for " + std::to_string(parts) + " outputs");
    int64_t known = 0, rest = -1;
    for (size_t k = 0; k < lengths.size(); ++k) {
      if (lengths[k] == -1 && rest < 0) rest = static_cast<int64_t>(k);
      else if (lengths[k] <= 0) fail("split size " + std::to_string(lengths[k]) + " (sizes are positive, one may be -1)");
      else known += lengths[k];
    }
    if (rest >= 0) lengths[static_cast<size_t>(rest)] = n - known;
    if (known + (rest >= 0 ? lengths[static_cast<size_t>(rest)] : 0) != n || (rest >= 0 && lengths[static_cast<size_t>(rest)] <= 0))
      fail("the split sizes do not add up to the " + std::to_string(n) + " elements of axis " + std::to_string(axis));
  }
  std::string data = value(x);
  int64_t start = 0;
  for (size_t k = 0; k < outs.size(); ++k) {
    std::vector<int64_t> begin(s.size(), 0), end = s;
    begin[static_cast<size_t>(axis)] = start;
    end[static_cast<size_t>(axis)] = start + lengths[k];
    start += lengths[k];
    emit(values_.at(outs[k]), "strided_slice", {data}, slice_attrs(begin, end));
  }
}

void TfliteConverter::unpack(const tflite::Operator& op) {
  const std::vector<int> outs = outputs(op);
  int x = input(op, 0);
  const std::vector<int64_t> s = tensor_type(x).shape;
  const int64_t rank = static_cast<int64_t>(s.size());
  const auto* opt = op.builtin_options_as_UnpackOptions();
  int64_t axis = opt ? opt->axis() : 0;
  if (axis < -rank || axis >= rank) fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  if (axis < 0) axis += rank;
  if (rank < 2) unsupported("UNPACK of a rank-1 tensor (its outputs would be scalars)");
  if (static_cast<int64_t>(outs.size()) != s[static_cast<size_t>(axis)])
    fail(std::to_string(outs.size()) + " outputs for the " + std::to_string(s[static_cast<size_t>(axis)]) +
         " elements of axis " + std::to_string(axis));
  std::string data = value(x);
  for (size_t k = 0; k < outs.size(); ++k) {
    std::vector<int64_t> begin(s.size(), 0), end = s;
    begin[static_cast<size_t>(axis)] = static_cast<int64_t>(k);
    end[static_cast<size_t>(axis)] = static_cast<int64_t>(k) + 1;
    json attrs = slice_attrs(begin, end);
    attrs["shrink_axis_mask"] = int64_t{1} << axis;
    emit(values_.at(outs[k]), "strided_slice", {data}, attrs);
  }
}

void TfliteConverter::pack(const tflite::Operator& op) {
  int out = output(op);
  const size_t n = op.inputs() ? op.inputs()->size() : 0;
  if (n == 0) fail("it has no inputs");
  const TensorType first = tensor_type(input(op, 0));
  const int64_t rank = static_cast<int64_t>(first.shape.size());
  const auto* opt = op.builtin_options_as_PackOptions();
  int64_t axis = opt ? opt->axis() : 0;
  if (axis < -rank - 1 || axis > rank) fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank + 1));
  if (axis < 0) axis += rank + 1;
  std::vector<int64_t> stacked = first.shape;
  stacked.insert(stacked.begin() + axis, 1);
  const std::string name = values_.at(out);
  std::vector<std::string> parts;
  for (size_t i = 0; i < n; ++i) {
    int t = input(op, i);
    TensorType tt = tensor_type(t);
    if (tt.dtype != first.dtype || tt.shape != first.shape)
      fail("input " + std::to_string(i) + " is " + tt.str() + ", input 0 is " + first.str());
    const std::string part = n == 1 ? name : fresh(name + "_in" + std::to_string(i));
    parts.push_back(emit(part, "reshape", {value(t)}, {{"newshape", stacked}}));
  }
  if (n > 1) emit(name, "concat", parts, {{"axis", axis}});
}

}  // namespace tflite_import
}  // namespace mtir
