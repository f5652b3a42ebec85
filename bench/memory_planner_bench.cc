// Plans the activations of the four MLPerf Tiny models (float32, batch 1) with each
// heuristic of the memory planner and with plan_memory (the best of all); reports
// pool / lower bound as the counter `ratio` (1.00 is optimal), plus the pool and the
// bound in bytes.
//
// The models are built as op graphs with the layer shapes of the MLPerf Tiny reference
// networks, batch norm and ReLU fused into the op before them (as deployed), and
// scheduled in definition order, which is topological. Every op runs at one step and
// writes one output tensor, live from its step to the step of its last consumer. The
// pool holds the intermediate tensors; the model's input and output belong to the
// caller (as in TVM's AOT executor), so they are not planned; the `_with_io` variants
// plan them too.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "memory/planner.h"

namespace {

using mtir::PlannerHeuristic;
using mtir::TensorLifetime;

// A model as a list of ops in schedule order; op 0 is the model input.
class Graph {
 public:
  explicit Graph(int64_t input_elements) { ops_.push_back({"input", input_elements, {}}); }
  int last() const { return static_cast<int>(ops_.size()) - 1; }
  // Adds an op with float32 output of `elements` elements reading `inputs`.
  int add(const std::string& name, int64_t elements, std::vector<int> inputs) {
    ops_.push_back({name, elements, std::move(inputs)});
    return last();
  }
  int add(const std::string& name, int64_t elements) { return add(name, elements, {last()}); }

  // The intermediate tensors: every op's output but the input's and the last op's; with
  // `with_io`, those two as well (as in a TFLite arena).
  std::vector<TensorLifetime> lifetimes(bool with_io) const {
    std::vector<int> last_use(ops_.size());
    for (size_t i = 0; i < ops_.size(); ++i) last_use[i] = static_cast<int>(i);
    for (size_t i = 0; i < ops_.size(); ++i) {
      for (int in : ops_[i].inputs) last_use[in] = std::max(last_use[in], static_cast<int>(i));
    }
    std::vector<TensorLifetime> out;
    const size_t skip = with_io ? 0 : 1;
    for (size_t i = skip; i + skip < ops_.size(); ++i) {
      out.push_back({ops_[i].name, ops_[i].elements * 4, static_cast<int>(i), last_use[i]});
    }
    return out;
  }

 private:
  struct Op {
    std::string name;
    int64_t elements;
    std::vector<int> inputs;
  };
  std::vector<Op> ops_;
};

int64_t hwc(int64_t h, int64_t w, int64_t c) { return h * w * c; }

// Keyword spotting: DS-CNN (small), 49x10x1 MFCC input.
std::vector<TensorLifetime> ds_cnn(bool with_io) {
  Graph g(hwc(49, 10, 1));
  g.add("conv_10x4_s2", hwc(25, 5, 64));
  for (int b = 1; b <= 4; ++b) {
    g.add("dw" + std::to_string(b), hwc(25, 5, 64));
    g.add("pw" + std::to_string(b), hwc(25, 5, 64));
  }
  g.add("avg_pool", 64);
  g.add("dense", 12);
  g.add("softmax", 12);
  return g.lifetimes(with_io);
}

// Visual wake words: MobileNetV1 width 0.25, 96x96x3 input.
std::vector<TensorLifetime> mobilenet_v1_025(bool with_io) {
  Graph g(hwc(96, 96, 3));
  int64_t size = 48, channels = 8;
  g.add("conv_s2", hwc(size, size, channels));
  struct Block { int stride; int64_t out_channels; };
  const std::vector<Block> blocks = {{1, 16}, {2, 32}, {1, 32},  {2, 64},  {1, 64},
                                     {2, 128}, {1, 128}, {1, 128}, {1, 128}, {1, 128},
                                     {1, 128}, {2, 256}, {1, 256}};
  for (size_t b = 0; b < blocks.size(); ++b) {
    size /= blocks[b].stride;
    g.add("dw" + std::to_string(b + 1), hwc(size, size, channels));
    channels = blocks[b].out_channels;
    g.add("pw" + std::to_string(b + 1), hwc(size, size, channels));
  }
  g.add("avg_pool", channels);
  g.add("dense", 2);
  g.add("softmax", 2);
  return g.lifetimes(with_io);
}

// Image classification: ResNet-8 for CIFAR-10, 32x32x3 input, three residual stacks.
std::vector<TensorLifetime> resnet8(bool with_io) {
  Graph g(hwc(32, 32, 3));
  int stack_in = g.add("conv", hwc(32, 32, 16));
  int64_t size = 32;
  const int64_t widths[] = {16, 32, 64};
  for (int s = 0; s < 3; ++s) {
    const std::string p = "stack" + std::to_string(s + 1) + "_";
    if (s > 0) size /= 2;
    const int64_t out = hwc(size, size, widths[s]);
    g.add(p + "conv_a", out, {stack_in});
    int b = g.add(p + "conv_b", out);
    int skip = stack_in;
    if (s > 0) skip = g.add(p + "skip_conv_1x1", out, {stack_in});
    stack_in = g.add(p + "add_relu", out, {b, skip});
  }
  g.add("avg_pool", 64);
  g.add("dense", 10);
  g.add("softmax", 10);
  return g.lifetimes(with_io);
}

// Anomaly detection: the fully connected autoencoder, 640 inputs.
std::vector<TensorLifetime> fc_autoencoder(bool with_io) {
  Graph g(640);
  for (int i = 1; i <= 4; ++i) g.add("enc" + std::to_string(i), 128);
  g.add("bottleneck", 8);
  for (int i = 1; i <= 4; ++i) g.add("dec" + std::to_string(i), 128);
  g.add("output", 640);
  return g.lifetimes(with_io);
}

// heuristic < 0 means plan_memory, the best of all heuristics.
void BM_plan(benchmark::State& state, std::vector<TensorLifetime> tensors, int heuristic) {
  mtir::PlannerOptions options;
  mtir::MemoryPlan plan;
  for (auto _ : state) {
    plan = heuristic < 0 ? mtir::plan_memory(tensors, options)
                         : mtir::plan_memory_with(tensors, static_cast<PlannerHeuristic>(heuristic),
                                                  options);
    benchmark::DoNotOptimize(plan.pool_size);
  }
  if (!mtir::check_plan(tensors, plan, options.alignment).empty()) {
    state.SkipWithError("invalid plan");
    return;
  }
  state.counters["ratio"] = static_cast<double>(plan.pool_size) / static_cast<double>(plan.lower_bound);
  state.counters["pool_bytes"] = static_cast<double>(plan.pool_size);
  state.counters["lower_bound_bytes"] = static_cast<double>(plan.lower_bound);
  state.counters["tensors"] = static_cast<double>(tensors.size());
  state.SetLabel(plan.algorithm);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::pair<std::string, std::vector<TensorLifetime>>> models;
  for (bool with_io : {false, true}) {
    const std::string suffix = with_io ? "_with_io" : "";
    models.emplace_back("ds_cnn" + suffix, ds_cnn(with_io));
    models.emplace_back("mobilenet_v1_025" + suffix, mobilenet_v1_025(with_io));
    models.emplace_back("resnet8" + suffix, resnet8(with_io));
    models.emplace_back("fc_autoencoder" + suffix, fc_autoencoder(with_io));
  }
  for (const auto& [name, tensors] : models) {
    for (PlannerHeuristic h : mtir::all_heuristics()) {
      benchmark::RegisterBenchmark(("plan/" + name + "/" + mtir::heuristic_name(h)).c_str(),
                                   BM_plan, tensors, static_cast<int>(h));
    }
    benchmark::RegisterBenchmark(("plan/" + name + "/plan_memory").c_str(), BM_plan, tensors, -1);
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
