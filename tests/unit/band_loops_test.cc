// band_loops (executor/band_loops.h): a patch stage's interior bands run as one loop in
// the AOT main, its region starts affine in the band, and the analyses read the loop as
// the calls it makes (analysis/call_loops.h): the same memory plan, the same bytes.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "analysis/call_loops.h"
#include "executor/band_loops.h"
#include "ir/visitor.h"
#include "ops/schedules.h"

#include "patch_cases.h"

namespace mtir {
namespace {

using namespace patch_cases;

// A pointwise layer, a 3x3 depthwise layer (stride 1, padded) on 24 rows and another
// pointwise layer: with no recomputation allowed, the depthwise layer is a stage of its
// own whose border rows are bands of their own and whose interior runs in equal bands.
Graph depthwise_chain(std::mt19937& rng) {
  Graph g;
  g.name = "band_loops";
  g.inputs = {{"x", TensorType{DataType::Int(8), {1, 24, 5, 8}}}};
  const Shape pw = {8, 1, 1, 8}, w = {8, 3, 3, 1};
  std::string previous = append_qconv(g, "pw0", "x", pw, random_values(rng, pw), quant({{"activation", "relu"}}));
  const json attrs = quant({{"padding", {1, 1, 1, 1}}, {"strides", {1, 1}}, {"groups", 8}, {"activation", "relu"}});
  previous = append_qconv(g, "dw", previous, w, random_values(rng, w), attrs);
  g.outputs = {append_qconv(g, "pw1", previous, pw, random_values(rng, pw), quant({{"activation", "relu"}}))};
  return prepare_quantized(g, ScheduleOptions{});
}

// The statements of main under its allocations and views.
std::vector<Stmt> main_steps(const AotModule& aot) {
  Stmt body = aot.module.lookup(aot.main)->body;
  while (true) {
    if (const auto* a = as<AllocateNode>(body)) body = a->body;
    else if (const auto* d = as<DeclBufferNode>(body)) body = d->body;
    else break;
  }
  if (const auto* seq = as<SeqStmtNode>(body)) return seq->seq;
  return {body};
}

// Each call's callee and region starts, in order: "kernel(0,3,0,0 0,2,0,0)".
std::vector<std::string> call_signatures(const std::vector<Stmt>& steps) {
  std::vector<std::string> out;
  for (const Stmt& s : steps) {
    const auto* eval = as<EvaluateNode>(s);
    const auto* call = eval ? as<CallNode>(eval->value) : nullptr;
    if (!call) {
      out.push_back("not a call");
      continue;
    }
    std::string text = as<StringImmNode>(call->args[0])->value + "(";
    for (size_t k = 1; k < call->args.size(); ++k) {
      const auto* region = as<CallNode>(call->args[k]);
      const auto* load = region && region->op == "tir_region" ? as<BufferLoadNode>(region->args[0]) : nullptr;
      if (!load) continue;
      for (const Expr& start : load->indices) {
        const int64_t* c = as_const_int(start);
        text += c ? std::to_string(*c) + "," : "?,";
      }
      text += " ";
    }
    out.push_back(text + ")");
  }
  return out;
}

int64_t pool_bytes(AotModule& aot) {
  PipelineResult planned = run_pipeline(aot.module, {*find_pass("simplify"), *find_pass("plan_memory")});
  aot.module = planned.module;
  return std::get<int64_t>(aot.module.lookup(aot.main)->attrs.at("workspace.pool_bytes"));
}

TEST(BandLoops, InteriorBandsAreOneLoopWithTheSameCallsPlanAndBytes) {
  std::mt19937 rng(5);
  const Graph g = depthwise_chain(rng);
  const std::vector<int64_t> input = random_values(rng, {1, 24, 5, 8});
  AotOptions whole, unrolled, looped;
  whole.patch = false;
  unrolled.patch_max_recomputed_percent = looped.patch_max_recomputed_percent = 0;
  unrolled.band_loops = false;
  const NDArray want = run_int8_aot(g, build_aot(g, whole), input).back();
  AotModule a = build_aot(g, unrolled), b = build_aot(g, looped);
  const std::vector<Stmt> calls = main_steps(a), steps = main_steps(b);
  // The interior bands: one serial loop of at least kMinLoopBands iterations.
  int loops = 0;
  for (const Stmt& s : steps) {
    const auto* loop = as<ForNode>(s);
    if (!loop) continue;
    ++loops;
    EXPECT_EQ(loop->for_kind, ForKind::kSerial);
    EXPECT_GE(*as_const_int(loop->extent), static_cast<int64_t>(kMinLoopBands));
  }
  EXPECT_EQ(loops, 1);
  EXPECT_LT(steps.size() + kMinLoopBands - 1, calls.size());
  // Read as the calls it makes, the loop is the unrolled main, call for call.
  EXPECT_EQ(call_signatures(expand_call_loops(steps)), call_signatures(calls));
  // Planned, the same pool; run, the whole-tensor run's bytes.
  EXPECT_EQ(pool_bytes(b), pool_bytes(a));
  EXPECT_EQ(run_int8_aot(g, a, input).back().data, want.data);
  EXPECT_EQ(run_int8_aot(g, b, input).back().data, want.data);
  EXPECT_TRUE(is_model_schedule("band_loops"));
}

// Bands whose rows do not move by the same count from band to band, or that call another
// kernel, stay calls of their own; a run shorter than kMinLoopBands too.
TEST(BandLoops, OnlyRunsOfAffineBandsRoll) {
  const Buffer in = MakeBuffer("in", DataType::Int(8), {IntImm(DataType::Int(32), 32)});
  const Buffer out = MakeBuffer("out", DataType::Int(8), {IntImm(DataType::Int(32), 32)});
  auto band = [&](const char* kernel, int64_t row) {
    auto region = [&](const Buffer& b) {
      return Call(DataType::Handle(), "tir_region",
                  {BufferLoad(b, {IntImm(DataType::Int(32), row)}), IntImm(DataType::Int(32), 2)});
    };
    return BandCalls{{Evaluate(Call(DataType::Int(32), "call_tir", {StringImm(kernel), region(in), region(out)}))}, {}};
  };
  std::vector<Buffer> intermediates;
  // Rows 0, 2, 4, 6 then 10, 14, 18: a loop of 4, then 10 starts a loop of 3 (10, 14, 18).
  std::vector<BandCalls> bands = {band("k", 0), band("k", 2), band("k", 4), band("k", 6),
                                  band("k", 10), band("k", 14), band("k", 18)};
  std::vector<Stmt> out_steps = roll_band_calls(bands, intermediates);
  ASSERT_EQ(out_steps.size(), 2u);
  EXPECT_EQ(*as_const_int(as<ForNode>(out_steps[0])->extent), 4);
  EXPECT_EQ(*as_const_int(as<ForNode>(out_steps[1])->extent), 3);
  EXPECT_EQ(call_signatures(expand_call_loops(out_steps)),
            (std::vector<std::string>{"k(0, 0, )", "k(2, 2, )", "k(4, 4, )", "k(6, 6, )", "k(10, 10, )",
                                      "k(14, 14, )", "k(18, 18, )"}));
  // Another kernel in the middle: two bands on each side, no loop.
  bands = {band("k", 0), band("k", 2), band("j", 4), band("k", 6), band("k", 8)};
  EXPECT_EQ(roll_band_calls(bands, intermediates).size(), 5u);
}

}  // namespace
}  // namespace mtir
