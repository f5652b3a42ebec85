// The data-movement and shape operators' dispatch, and the shape family: SQUEEZE and
// EXPAND_DIMS (a reshape whose target is checked against the axes), FILL and ZEROS_LIKE
// (a tensor of one value), SHAPE (a constant: every shape is static here, so later
// operators read it as a constant, e.g. as the shape of a RESHAPE or FILL) and
// BROADCAST_TO, BROADCAST_ARGS (a constant, as SHAPE's). Every shape, axis or value these operators take from a tensor must be
// a constant, or the compiler could not size the buffers: a tensor only a run would
// know is refused by name.
#include <algorithm>

#include "frontend/tflite/converter.h"

namespace mtir {
namespace tflite_import {

bool TfliteConverter::convert_shape_op(const tflite::Operator& op, BuiltinOperator code) {
  switch (code) {
    case BuiltinOperator::SLICE: slice(op); return true;
    case BuiltinOperator::SPLIT: split(op, false); return true;
    case BuiltinOperator::SPLIT_V: split(op, true); return true;
    case BuiltinOperator::PACK: pack(op); return true;
    case BuiltinOperator::UNPACK: unpack(op); return true;
    case BuiltinOperator::SQUEEZE:
    case BuiltinOperator::EXPAND_DIMS: squeeze_or_expand(op, code); return true;
    case BuiltinOperator::FILL:
    case BuiltinOperator::ZEROS_LIKE: fill(op, code); return true;
    case BuiltinOperator::SHAPE: shape(op); return true;
    case BuiltinOperator::BROADCAST_TO: broadcast_to(op); return true;
    case BuiltinOperator::BROADCAST_ARGS: broadcast_args(op); return true;
    case BuiltinOperator::EMBEDDING_LOOKUP: embedding_lookup(op); return true;
    case BuiltinOperator::SPACE_TO_DEPTH:
    case BuiltinOperator::DEPTH_TO_SPACE:
    case BuiltinOperator::SPACE_TO_BATCH_ND:
    case BuiltinOperator::BATCH_TO_SPACE_ND: space_batch(op, code); return true;
    case BuiltinOperator::MIRROR_PAD: mirror_pad(op); return true;
    case BuiltinOperator::REVERSE_V2: reverse(op); return true;
    case BuiltinOperator::GATHER: gather(op, false); return true;
    case BuiltinOperator::GATHER_ND: gather(op, true); return true;
    case BuiltinOperator::RESIZE_NEAREST_NEIGHBOR: resize(op, false); return true;
    case BuiltinOperator::RESIZE_BILINEAR: resize(op, true); return true;
    default: return false;
  }
}

std::vector<int64_t> TfliteConverter::constant_ints(int t, const std::string& what) {
  if (!has_data(t))
    unsupported(what + " computed at run time (" + tensor_label(t) +
                " must be a constant: the compiler sizes every buffer before the model runs)");
  NDArray a = constant_value(t);
  if (a.dtype != DataType::Int(32) && a.dtype != DataType::Int(64))
    fail(what + " " + tensor_label(t) + " is " + a.dtype.str() + " (int32 or int64 expected)");
  std::vector<int64_t> v;
  for (int64_t k = 0; k < a.num_elements(); ++k) v.push_back(a.get_int(k));
  return v;
}

void TfliteConverter::squeeze_or_expand(const tflite::Operator& op, BuiltinOperator code) {
  int x = input(op, 0), out = output(op);
  const std::vector<int64_t> s = tensor_type(x).shape;
  const int64_t rank = static_cast<int64_t>(s.size());
  std::vector<int64_t> shape;
  if (code == BuiltinOperator::SQUEEZE) {
    const auto* opt = op.builtin_options_as_SqueezeOptions();
    // SQUEEZE: the listed axes (every axis of size 1 when none is listed) are dropped.
    std::vector<bool> drop(static_cast<size_t>(rank), false);
    const bool all = !opt || !opt->squeeze_dims() || opt->squeeze_dims()->size() == 0;
    for (int64_t k = 0; all && k < rank; ++k) drop[static_cast<size_t>(k)] = s[static_cast<size_t>(k)] == 1;
    if (!all)
      for (int32_t a : *opt->squeeze_dims()) {
        if (a < -rank || a >= rank) fail("squeeze axis " + std::to_string(a) + " is out of range for rank " + std::to_string(rank));
        int64_t k = a < 0 ? a + rank : a;
        if (s[static_cast<size_t>(k)] != 1)
          fail("axis " + std::to_string(k) + " of " + tensor_type(x).str() + " has size " +
               std::to_string(s[static_cast<size_t>(k)]) + ", it cannot be squeezed");
        drop[static_cast<size_t>(k)] = true;
      }
    for (int64_t k = 0; k < rank; ++k)
      if (!drop[static_cast<size_t>(k)]) shape.push_back(s[static_cast<size_t>(k)]);
  } else {
    // EXPAND_DIMS: a 1 inserted at the axis, in [-(rank + 1), rank].
    auto axis = constant_ints(input(op, 1), "the axis");
    if (axis.size() != 1) fail("the axis must be one value, it has " + std::to_string(axis.size()));
    int64_t a = axis[0];
    if (a < -rank - 1 || a > rank) fail("axis " + std::to_string(a) + " is out of range for rank " + std::to_string(rank));
    if (a < 0) a += rank + 1;
    shape = s;
    shape.insert(shape.begin() + a, 1);
  }
  if (shape.empty()) unsupported("a scalar (rank 0) result");
  emit(values_.at(out), "reshape", {value(x)}, {{"newshape", shape}});
}

void TfliteConverter::fill(const tflite::Operator& op, BuiltinOperator code) {
  int out = output(op);
  TensorType ot = tensor_type(out);
  double v = 0;
  if (code == BuiltinOperator::FILL) {
    auto dims = constant_ints(input(op, 0), "the dimensions");
    if (dims != ot.shape)
      fail("the dimensions " + TensorType{ot.dtype, dims}.str() + " differ from the output's, " + ot.str());
    int c = input(op, 1);
    if (!has_data(c)) unsupported("a FILL value computed at run time (" + tensor_label(c) + " must be a constant)");
    NDArray a = constant_value(c);
    if (a.num_elements() != 1 || a.dtype != ot.dtype)
      fail("the value must be one " + ot.dtype.str() + ", it is " + TensorType{a.dtype, a.shape}.str());
    v = a.dtype.is_float() ? a.get_float(0) : static_cast<double>(a.get_int(0));
  } else {
    TensorType xt = tensor_type(input(op, 0));
    if (xt.dtype != ot.dtype || xt.shape != ot.shape) fail("the output " + ot.str() + " differs from the input " + xt.str());
  }
  if (ot.shape.empty()) unsupported("a scalar (rank 0) result");
  emit(values_.at(out), "full", {}, {{"shape", ot.shape}, {"value", v}, {"dtype", ot.dtype.str()}});
}

void TfliteConverter::shape(const tflite::Operator& op) {
  int x = input(op, 0), out = output(op);
  TensorType xt = tensor_type(x), ot = tensor_type(out);
  if (ot.dtype != DataType::Int(32) && ot.dtype != DataType::Int(64)) fail("the output must be int32 or int64, it is " + ot.str());
  const int64_t rank = static_cast<int64_t>(xt.shape.size());
  if (rank == 0) unsupported("SHAPE of a scalar (an empty result)");
  NDArray a = NDArray::zeros(ot.dtype, {rank});
  for (int64_t k = 0; k < rank; ++k) a.set_int(k, xt.shape[static_cast<size_t>(k)]);
  fold(out, std::move(a));
}

// The constant `a` is tensor `out`'s value: later operators read it as a constant.
void TfliteConverter::fold(int out, NDArray a) {
  const int64_t rank = a.num_elements();
  const std::string& name = values_.at(out);
  folded_[out] = a;
  // A model output is computed by a node: a copy of the constant.
  if (std::find(sg_->outputs()->begin(), sg_->outputs()->end(), out) != sg_->outputs()->end()) {
    emit(name, "reshape", {add_constant(name + "_value", std::move(a))}, {{"newshape", {rank}}});
    return;
  }
  types_[name] = TensorType{a.dtype, a.shape};
  g_.constants[name] = std::move(a);
}

// BROADCAST_ARGS: the broadcast of two constant shapes (numpy's rules, as TFLM's
// reference_ops::BroadcastArgs), folded to a constant like SHAPE's.
void TfliteConverter::broadcast_args(const tflite::Operator& op) {
  int out = output(op);
  auto a = constant_ints(input(op, 0), "the first shape"), b = constant_ints(input(op, 1), "the second shape");
  const DataType dt = tensor_type(out).dtype;
  if (dt != DataType::Int(32) && dt != DataType::Int(64)) fail("the output must be int32 or int64, it is " + dt.str());
  if (a.size() < b.size()) std::swap(a, b);
  b.insert(b.begin(), a.size() - b.size(), 1);
  NDArray r = NDArray::zeros(dt, {static_cast<int64_t>(a.size())});
  for (size_t k = 0; k < a.size(); ++k) {
    if (a[k] != b[k] && a[k] != 1 && b[k] != 1)
      fail("the shapes do not broadcast: dimension " + std::to_string(k) + " is " + std::to_string(a[k]) + " and " +
           std::to_string(b[k]));
    r.set_int(static_cast<int64_t>(k), a[k] == 1 ? b[k] : a[k]);
  }
  if (r.num_elements() == 0) unsupported("BROADCAST_ARGS of two scalar shapes (an empty result)");
  fold(out, std::move(r));
}

void TfliteConverter::broadcast_to(const tflite::Operator& op) {
  int x = input(op, 0), out = output(op);
  auto shape = constant_ints(input(op, 1), "the target shape");
  TensorType xt = tensor_type(x);
  std::string data = value(x);
  if (xt.shape.empty()) data = emit(fresh(values_.at(out) + "_value"), "reshape", {data}, {{"newshape", {1}}});
  emit(values_.at(out), "broadcast_to", {data}, {{"shape", shape}});
}

}  // namespace tflite_import
}  // namespace mtir
