// Space, depth and batch: SPACE_TO_DEPTH, DEPTH_TO_SPACE (block_size), SPACE_TO_BATCH_ND
// and BATCH_TO_SPACE_ND (constant block shape and paddings or crops; 3-D [B, H, C] data,
// as TFLM takes it, goes through the 4-D op as [B, H, 1, C]), MIRROR_PAD (REFLECT or
// SYMMETRIC, constant paddings) and REVERSE_V2 (constant axes). Data is only moved, in
// every dtype, without requantization (TFLM copies). SPACE_TO_BATCH_ND pads with raw 0 in
// every dtype, int8 too: TFLM's kernel memsets the padding with
// SpaceToBatchParams::output_offset, which it never sets (a persistent buffer of a fresh,
// zeroed arena), where TFLite's interpreter would use the zero point.
#include "frontend/tflite/converter.h"

namespace mtir {
namespace tflite_import {

void TfliteConverter::space_batch(const tflite::Operator& op, BuiltinOperator code) {
  int x = input(op, 0), out = output(op);
  TensorType xt = tensor_type(x), ot = tensor_type(out);
  const std::string name = values_.at(out);
  if (code == BuiltinOperator::SPACE_TO_DEPTH || code == BuiltinOperator::DEPTH_TO_SPACE) {
    const bool to_depth = code == BuiltinOperator::SPACE_TO_DEPTH;
    int64_t b = to_depth ? (op.builtin_options_as_SpaceToDepthOptions() ? op.builtin_options_as_SpaceToDepthOptions()->block_size() : 0)
                         : (op.builtin_options_as_DepthToSpaceOptions() ? op.builtin_options_as_DepthToSpaceOptions()->block_size() : 0);
    if (b < 1) fail("the block size must be positive, it is " + std::to_string(b));
    if (xt.shape.size() != 4) fail("the input must be 4-D (NHWC), it is " + xt.str());
    emit(name, to_depth ? "space_to_depth" : "depth_to_space", {value(x)}, {{"block_size", b}});
    return;
  }
  const bool to_batch = code == BuiltinOperator::SPACE_TO_BATCH_ND;
  const size_t rank = xt.shape.size();
  if (rank != 3 && rank != 4) unsupported("a rank-" + std::to_string(rank) + " input (TFLM takes 3-D and 4-D)");
  auto block = constant_ints(input(op, 1), "the block shape");
  auto margins = constant_ints(input(op, 2), to_batch ? "the paddings" : "the crops");
  if (block.size() != rank - 2 || margins.size() != 2 * (rank - 2))
    fail("a rank-" + std::to_string(rank) + " input takes " + std::to_string(rank - 2) + " block sizes and " +
         std::to_string(2 * (rank - 2)) + (to_batch ? " paddings" : " crops"));
  if (rank == 3) block.push_back(1), margins.insert(margins.end(), {0, 0});
  for (int64_t v : block)
    if (v < 1) fail("block sizes must be positive");
  for (int64_t v : margins)
    if (v < 0) fail(std::string(to_batch ? "paddings" : "crops") + " must be non-negative");
  json attrs = {{"block_shape", block}, {to_batch ? "paddings" : "crops", margins}};
  std::string data = value(x);
  if (rank == 3) data = emit(fresh(name + "_4d"), "reshape", {data}, {{"newshape", {xt.shape[0], xt.shape[1], 1, xt.shape[2]}}});
  const std::string op_name = to_batch ? "space_to_batch_nd" : "batch_to_space_nd";
  if (rank == 4) {
    emit(name, op_name, {data}, attrs);
    return;
  }
  std::string r = emit(fresh(name + "_4d_out"), op_name, {data}, attrs);
  emit(name, "reshape", {r}, {{"newshape", ot.shape}});
}

void TfliteConverter::mirror_pad(const tflite::Operator& op) {
  int x = input(op, 0), out = output(op);
  TensorType xt = tensor_type(x);
  auto pads = constant_ints(input(op, 1), "the paddings");
  if (pads.size() != 2 * xt.shape.size())
    fail("the paddings need [" + std::to_string(xt.shape.size()) + ", 2] values, they have " + std::to_string(pads.size()));
  const auto* opt = op.builtin_options_as_MirrorPadOptions();
  const bool symmetric = opt && opt->mode() == tflite::MirrorPadMode::SYMMETRIC;
  json widths = json::array();
  for (size_t d = 0; d < xt.shape.size(); ++d) {
    int64_t before = pads[2 * d], after = pads[2 * d + 1], limit = xt.shape[d] - (symmetric ? 0 : 1);
    if (before < 0 || after < 0 || before > limit || after > limit)
      fail("axis " + std::to_string(d) + " (size " + std::to_string(xt.shape[d]) + ") cannot be padded by " +
           std::to_string(before) + " and " + std::to_string(after) + " in " + (symmetric ? "SYMMETRIC" : "REFLECT") +
           " mode (at most " + std::to_string(limit) + ")");
    widths.push_back({before, after});
  }
  emit(values_.at(out), "pad", {value(x)}, {{"pad_width", widths}, {"mode", symmetric ? "symmetric" : "reflect"}});
}

void TfliteConverter::reverse(const tflite::Operator& op) {
  int x = input(op, 0), out = output(op);
  auto axes = constant_ints(input(op, 1), "the axes");
  emit(values_.at(out), "reverse", {value(x)}, {{"axes", axes}});
}

}  // namespace tflite_import
}  // namespace mtir
