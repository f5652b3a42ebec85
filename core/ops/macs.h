// The nominal multiply-accumulate count of one graph operator: the one count the
// playground's model view and the AOT executor's patch planner use.
//
// Nominal as TFLite Micro's figures count them: every tap of a window counts, padded
// or not. A convolution is output elements x kernel taps x input channels per group
// (CONV_2D out_h*out_w*out_c*k_h*k_w*in_c/groups, DEPTHWISE_CONV_2D out_h*out_w*out_c*
// k_h*k_w), a transposed one input elements x kernel taps x output channels per group,
// a dense layer or matrix product output elements x the reduction length (FULLY_CONNECTED
// units*in_depth), an LSTM its gate matrices' elements per time step and batch row, an
// SVDF its feature and time weights' elements per batch row (TFLM's figures count
// UNIDIRECTIONAL_SEQUENCE_LSTM and SVDF so). Other operators count 0.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ops/ops.h"

namespace mtir {

// `inputs`: the node's input types in order; `output`: its output type; `attrs` as in the
// graph. Types the op would refuse count 0 (the op's own check reports them).
int64_t nominal_macs(const std::string& op, const std::vector<TensorType>& inputs, const TensorType& output,
                     const nlohmann::json& attrs);

}  // namespace mtir
