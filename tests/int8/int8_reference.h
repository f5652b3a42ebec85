// An independent int8 reference for the quantized operators and the int8 MLPerf Tiny
// graphs: plain loops written from the op contract (TFLite int8 conventions, single
// rounding), sharing no code with microtir's ops/ or its TIR interpreter, so a bug in
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

// Fixed-point multiplier: real m ~= M * 2^-s, M in [2^30, 2^31), s in [1, 62].
struct Multiplier {
  int32_t m;
  int s;
};
Multiplier quantize_multiplier(double real);
// (int32)(((int64)acc * M + 2^(s-1)) >> s): rounds half up, no zero point, no clamp.
int32_t requant_raw(int64_t acc, Multiplier q);
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
