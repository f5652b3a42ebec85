// An independent int8 reference for the quantized operators and the int8 MLPerf Tiny
// graphs: plain loops written from the op contract in TFLite's integer arithmetic
// (its reference kernels, double rounding), sharing no code with microtir's ops/ or its TIR interpreter, so a bug in
// either shows up as a bit mismatch. Used by int8_reference_test (unit) and by the
// int8_reference tool that the e2e / qemu graph tests compare microtir's outputs with.
#pragma once

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace int8ref {

// A user-facing problem with a graph or a file (unknown op, bad attribute, bad npy).
struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// int8 and int32 tensors; values are kept widened to int32.
struct Tensor {
  std::string dtype;  // "int8" or "int32"
  std::vector<int64_t> shape;
  std::vector<int32_t> data;
  int64_t size() const;
};

// TFLite's fixed-point multiplier (QuantizeMultiplier): real ~= m * 2^(shift - 31), m in
// [2^30, 2^31), shift in [-31, 30] (positive shifts left); below 2^-31 m = shift = 0.
struct Multiplier {
  int32_t m;
  int shift;
};
Multiplier quantize_multiplier(double real);
// gemmlowp's SaturatingRoundingDoublingHighMul and RoundingDivideByPOT, and TFLite's
// MultiplyByQuantizedMultiplier built from them (tflite_arith.cc).
int32_t saturating_rounding_doubling_high_mul(int32_t a, int32_t b);
int32_t rounding_divide_by_pot(int32_t x, int exponent);
int32_t multiply_by_quantized_multiplier(int32_t x, Multiplier q);
// gemmlowp's fixed-point functions on raw int32 values (`integer_bits` of the input).
namespace fixed_point {
int32_t exp_on_negative_values(int32_t a, int integer_bits);
int32_t one_over_one_plus_x_for_x_in_0_1(int32_t a);
int32_t logistic(int32_t a, int integer_bits);
int32_t tanh(int32_t a, int integer_bits);
int32_t rescale(int32_t x, int src_integer_bits, int dst_integer_bits);
// TFLite's GetReciprocal.
int32_t get_reciprocal(int32_t x, int x_integer_digits, int* num_bits_over_unit);
}  // namespace fixed_point
// Round half away from zero of a / b for b > 0 (the pools' rounding).
int32_t div_round_away(int32_t a, int32_t b);

// One operator applied to its evaluated inputs; attrs is the node's "attrs" object.
Tensor eval_op(const std::string& op, const std::vector<const Tensor*>& in, const nlohmann::json& attrs);

// Where a node's outputs landed: how many sit on the int8 bounds, how many distinct codes.
struct NodeStats {
  std::string name, op;
  int64_t size = 0, at_min = 0, at_max = 0;
  int distinct = 0;
};

struct GraphResult {
  std::vector<std::string> output_names;
  std::map<std::string, Tensor> values;  // every input, constant and node
  std::vector<NodeStats> stats;          // one per node, in evaluation order
};
// Evaluates a microtir JSON graph (constants from .npy files beside it or inline values)
// on the given inputs.
std::vector<std::string> graph_input_names(const std::string& json_path);
GraphResult run_graph(const std::string& json_path, const std::map<std::string, Tensor>& inputs);

Tensor read_npy(const std::string& path);
void write_npy(const std::string& path, const Tensor& t);

}  // namespace int8ref
