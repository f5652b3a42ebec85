// RESIZE_NEAREST_NEIGHBOR (float32, int8, int16) and RESIZE_BILINEAR (float32, int8 with
// TFLM's fixed-point kernel; int16 too): the output size must be a constant [2] int32
// tensor, as TFLM requires. Quantized data keeps its scale and zero point (TFLM
// interpolates the raw values).
#include "frontend/tflite/converter.h"

namespace mtir {
namespace tflite_import {

void TfliteConverter::resize(const tflite::Operator& op, bool bilinear) {
  int x = input(op, 0), out = output(op);
  TensorType xt = tensor_type(x);
  if (xt.shape.size() != 4) fail("the input must be 4-D (NHWC), it is " + xt.str());
  auto size = constant_ints(input(op, 1), "the output size");
  if (size.size() != 2) fail("the output size must have 2 values [height, width], it has " + std::to_string(size.size()));
  bool align = false, half = false;
  if (bilinear) {
    if (const auto* opt = op.builtin_options_as_ResizeBilinearOptions()) align = opt->align_corners(), half = opt->half_pixel_centers();
  } else if (const auto* opt = op.builtin_options_as_ResizeNearestNeighborOptions()) {
    align = opt->align_corners(), half = opt->half_pixel_centers();
  }
  emit(values_.at(out), bilinear ? "resize_bilinear" : "resize_nearest_neighbor", {value(x)},
       {{"size", size}, {"align_corners", align}, {"half_pixel_centers", half}});
}

}  // namespace tflite_import
}  // namespace mtir
