// ops/macs.h: the nominal MACs of each operator that counts, by hand from the shapes
// (out_h*out_w*out_c*k_h*k_w*in_c/groups for a convolution, units*in_depth per row for a
// dense layer), in every layout and weight form the graph carries.
#include <gtest/gtest.h>

#include "ops/macs.h"

namespace mtir {
namespace {

using json = nlohmann::json;

TensorType i8(std::vector<int64_t> shape) { return {DataType::Int(8), std::move(shape)}; }
TensorType f32(std::vector<int64_t> shape) { return {DataType::Float(32), std::move(shape)}; }

TEST(NominalMacs, QconvNhwcCountsTheFilterPerOutputChannel) {
  // KWS's first layer: [1,49,10,1] -> [1,25,5,64], 10x4 filters, stride 2. The view once
  // divided by the output's H (25) instead of its channels (64).
  EXPECT_EQ(nominal_macs("qconv2d", {i8({1, 49, 10, 1}), i8({64, 10, 4, 1})}, i8({1, 25, 5, 64}), json::object()),
            25 * 5 * 64 * 10 * 4 * 1);
  // Depthwise (groups = channels): OHWI [C, KH, KW, 1], one input channel per output.
  EXPECT_EQ(nominal_macs("qconv2d", {i8({1, 25, 5, 64}), i8({64, 3, 3, 1})}, i8({1, 25, 5, 64}), {{"groups", 64}}),
            25 * 5 * 64 * 3 * 3);
  // Packed for SMLAD: int32 words, the OHWI shape in "weight_shape".
  EXPECT_EQ(nominal_macs("qconv2d", {i8({1, 25, 5, 64}), {DataType::Int(32), {64, 288}}}, i8({1, 25, 5, 64}),
                         {{"weight_shape", {64, 3, 3, 64}}}),
            25 * 5 * 64 * 3 * 3 * 64);
  // ONNX's NCHW data keeps OHWI weights.
  EXPECT_EQ(nominal_macs("qconv2d", {i8({1, 8, 4, 4}), i8({16, 3, 3, 8})}, i8({1, 16, 4, 4}),
                         {{"layout", "NCHW"}, {"requant", "onnx"}}),
            16 * 4 * 4 * 3 * 3 * 8);
}

TEST(NominalMacs, FloatConvolutionsInBothLayouts) {
  // NCHW with OIHW weights (digits' conv2), NHWC with HWIO (a float TFLite model).
  EXPECT_EQ(nominal_macs("conv2d", {f32({1, 8, 4, 4}), f32({16, 8, 3, 3})}, f32({1, 16, 4, 4}), json::object()),
            16 * 4 * 4 * 8 * 9);
  EXPECT_EQ(nominal_macs("conv2d", {f32({1, 4, 4, 8}), f32({3, 3, 8, 16})}, f32({1, 4, 4, 16}), {{"layout", "NHWC"}}),
            16 * 4 * 4 * 8 * 9);
  // Grouped: weight [O, C/groups, KH, KW].
  EXPECT_EQ(nominal_macs("conv2d", {f32({1, 8, 4, 4}), f32({8, 2, 3, 3})}, f32({1, 8, 4, 4}), {{"groups", 4}}),
            8 * 4 * 4 * 2 * 9);
  EXPECT_EQ(nominal_macs("qlinear_conv", {i8({1, 8, 4, 4}), i8({16, 8, 3, 3}), i8({1})}, i8({1, 16, 4, 4}), json::object()),
            16 * 4 * 4 * 8 * 9);
  EXPECT_EQ(nominal_macs("conv3d", {f32({1, 2, 4, 4, 4}), f32({3, 2, 3, 3, 3})}, f32({1, 3, 2, 2, 2}), json::object()),
            3 * 8 * 2 * 27);
  // Transposed: every input element meets each tap of its group's output channels.
  EXPECT_EQ(nominal_macs("conv_transpose", {f32({1, 4, 5, 5}), f32({4, 6, 3, 3})}, f32({1, 6, 11, 11}), json::object()),
            4 * 5 * 5 * 6 * 9);
}

TEST(NominalMacs, DenseLayersAndMatrixProducts) {
  EXPECT_EQ(nominal_macs("dense", {f32({1, 64}), f32({10, 64}), f32({10})}, f32({1, 10}), json::object()), 10 * 64);
  EXPECT_EQ(nominal_macs("qdense", {i8({2, 640}), i8({128, 640})}, i8({2, 128}), json::object()), 2 * 128 * 640);
  EXPECT_EQ(nominal_macs("qdense", {i8({1, 640}), {DataType::Int(32), {128, 160}}}, i8({1, 128}),
                         {{"weight_shape", {128, 640}}}),
            128 * 640);
  EXPECT_EQ(nominal_macs("gemm", {f32({3, 5}), f32({5, 7})}, f32({3, 7}), json::object()), 3 * 7 * 5);
  EXPECT_EQ(nominal_macs("gemm", {f32({5, 3}), f32({7, 5})}, f32({3, 7}), {{"transA", true}, {"transB", 1}}), 3 * 7 * 5);
  EXPECT_EQ(nominal_macs("matmul", {f32({2, 3, 5}), f32({5, 7})}, f32({2, 3, 7}), json::object()), 2 * 3 * 7 * 5);
}

TEST(NominalMacs, Int16x8AndTransposedConvolutions) {
  const TensorType s16 = {DataType::Int(16), {1, 1, 40, 8}};
  EXPECT_EQ(nominal_macs("qconv2d_s16", {s16, i8({16, 1, 3, 8})}, {DataType::Int(16), {1, 1, 38, 16}}, json::object()),
            38 * 16 * 3 * 8);
  EXPECT_EQ(nominal_macs("qdense_s16", {{DataType::Int(16), {1, 96}}, i8({24, 96})}, {DataType::Int(16), {1, 24}},
                         json::object()),
            24 * 96);
  // TRANSPOSE_CONV (NHWC data, OHWI weight): every input element meets KH*KW*O taps.
  EXPECT_EQ(nominal_macs("qtranspose_conv2d", {i8({1, 1, 10, 8}), i8({4, 1, 6, 8})}, i8({1, 1, 24, 4}), json::object()),
            10 * 8 * 6 * 4);
  EXPECT_EQ(nominal_macs("transpose_conv2d", {f32({1, 3, 3, 2}), f32({5, 2, 2, 2})}, f32({1, 6, 6, 5}), json::object()),
            9 * 2 * 2 * 2 * 5);
}

TEST(NominalMacs, LstmCountsItsGateMatricesPerStep) {
  // trained_lstm: 28 steps of 28 inputs, 20 cells; four gates of input and recurrent weights.
  EXPECT_EQ(nominal_macs("lstm", {f32({1, 28, 28}), f32({4, 20, 28}), f32({4, 20, 20})}, f32({1, 28, 20}), json::object()),
            28 * 4 * 20 * (28 + 20));
  EXPECT_EQ(nominal_macs("qlstm", {i8({1, 28, 28}), i8({4, 20, 28}), i8({4, 20, 20})}, i8({1, 28, 20}), json::object()),
            107520);
}

TEST(NominalMacs, SvdfCountsItsFeatureAndTimeWeights) {
  // keyword_scrambled's first SVDF: 96 inputs, 64 filters (rank 1), memory 8.
  EXPECT_EQ(nominal_macs("qsvdf", {{DataType::Int(16), {1, 96}}, i8({64, 96}), {DataType::Int(16), {64, 8}}, i8({1, 512})},
                         {DataType::Int(16), {1, 64}}, json::object()),
            64 * 96 + 64 * 8);
  EXPECT_EQ(nominal_macs("svdf", {f32({2, 10}), f32({4, 10}), f32({4, 3}), f32({2, 12})}, f32({2, 4}), json::object()),
            2 * (4 * 10 + 4 * 3));
}

TEST(NominalMacs, OtherOperatorsCountNothing) {
  EXPECT_EQ(nominal_macs("add", {f32({1, 10}), f32({1, 10})}, f32({1, 10}), json::object()), 0);
  EXPECT_EQ(nominal_macs("qavg_pool2d", {i8({1, 25, 5, 64})}, i8({1, 1, 1, 64}), json::object()), 0);
  EXPECT_EQ(nominal_macs("reshape", {i8({1, 1, 1, 64}), i8({2})}, i8({1, 64}), json::object()), 0);
}

}  // namespace
}  // namespace mtir
