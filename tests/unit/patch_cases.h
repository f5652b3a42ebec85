// The patch-stage tests' graphs and runs (qconv_test.cc, patch_branch_test.cc,
// patch_edge_rows_test.cc): small int8 graphs built layer by layer, run through the AOT
// executor in the interpreter.
#pragma once

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "driver/pipeline.h"
#include "executor/aot.h"
#include "frontend/graph.h"
#include "interp/interpreter.h"
#include "ops/op_util.h"
#include "transform/plan_memory.h"

#include "qconv_cases.h"

namespace mtir {
namespace patch_cases {

using json = nlohmann::json;
using namespace qconv_cases;

// Values in [-60, 60] for a tensor of this shape: the band-planner tests' weights and inputs.
inline std::vector<int64_t> random_values(std::mt19937& rng, const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::uniform_int_distribution<int> d(-60, 60);
  std::vector<int64_t> v(n);
  for (auto& e : v) e = d(rng);
  return v;
}

// Runs an int8 AOT module of one input in the interpreter: every argument, the output last.
inline std::vector<NDArray> run_int8_aot(const Graph& g, const AotModule& aot, const std::vector<int64_t>& input) {
  std::vector<NDArray> arrays;
  for (const auto& p : aot.params) {
    if (p.role == AotModule::Role::kInput) arrays.push_back(array_of(DataType::Int(8), p.type.shape, input));
    else if (p.role == AotModule::Role::kConstant) arrays.push_back(g.constants.at(p.name));
    else arrays.push_back(NDArray::zeros(DataType::Int(8), p.type.shape));
  }
  std::vector<InterpArg> args;
  for (auto& a : arrays) args.push_back(&a);
  interpret(aot.module, aot.main, args);
  return arrays;
}

// Appends a bias-free qconv2d `name` reading `previous`, with an int8 weight of shape `w`
// and values `weight`; returns its name (the next layer's input).
inline std::string append_qconv(Graph& g, const std::string& name, const std::string& previous, const Shape& w,
                                const std::vector<int64_t>& weight, const json& attrs) {
  g.constants[name + "_w"] = array_of(DataType::Int(8), w, weight);
  GraphNode node;
  node.name = name;
  node.op = "qconv2d";
  node.inputs = {previous, name + "_w"};
  node.attrs = attrs;
  node.type = find_op("qconv2d")->infer({g.type_of(previous), TensorType{DataType::Int(8), w}}, node.attrs);
  g.nodes.push_back(node);
  return name;
}

// Appends the qadd `name` of `a` and `b` (with a ReLU), as IC's residual adds.
inline void append_qadd(Graph& g, const std::string& name, const std::string& a, const std::string& b) {
  GraphNode add;
  add.name = name, add.op = "qadd", add.inputs = {a, b};
  add.attrs = {{"a_scale", 0.4}, {"a_zero_point", 3}, {"b_scale", 0.4}, {"b_zero_point", 3}, {"output_scale", 0.5},
               {"output_zero_point", -2}, {"activation", "relu"}};
  add.type = find_op("qadd")->infer({g.type_of(a), g.type_of(b)}, add.attrs);
  g.nodes.push_back(add);
}

// The default build of `prepared`, its memory planned: its pool within `pool_bound` and
// its output that of the whole-tensor run (patch off), which it returns.
inline NDArray expect_planned_run_bit_exact(const Graph& prepared, const std::vector<int64_t>& input, int64_t pool_bound,
                                            const AotOptions& options = AotOptions{}) {
  AotOptions whole = options;
  whole.patch = false;
  const NDArray want = run_int8_aot(prepared, build_aot(prepared, whole), input).back();
  AotModule aot = build_aot(prepared, options);
  PipelineResult planned = run_pipeline(aot.module, {*find_pass("simplify"), *find_pass("plan_memory")});
  const PrimFunc main = planned.module.lookup(aot.main);
  EXPECT_LE(std::get<int64_t>(main->attrs.at("workspace.pool_bytes")), pool_bound) << memory_report(main);
  aot.module = planned.module;
  EXPECT_EQ(run_int8_aot(prepared, aot, input).back().data, want.data);
  return want;
}

}  // namespace patch_cases
}  // namespace mtir
