// Schedule smmlar_requant (ops/qconv_gemm.cc, smmlar_requantize): one SMMLAR an output,
// on per-tensor multipliers (ops/quant_util.h, smmlar_form) and on per-channel tables,
// with and without a ReLU, against qconv_cases.h's reference (TFLite's rounding computed
// by floor divisions of its own); at the end of the process every case also runs as host
// C and through the wasm backend, and must equal the interpreter.
#include <gtest/gtest.h>

#include "ir/visitor.h"
#include "ops/quant_util.h"
#include "qconv_cases.h"

namespace mtir {
namespace {

using namespace qconv_cases;

const auto* const kBackends =
    ::testing::AddGlobalTestEnvironment(new backend_cases::Environment({"smmlar_requant", {"c -unpacked-api=1"}, true, 0}));

// The prepared one-node graph's schedule, how many smmlar calls its kernels make, and
// how many of their shifts the code generators mask (shift_needs_mask).
struct Prepared {
  json sched;
  int smmlar_calls = 0;
  int masked_shifts = 0;
};
Prepared prepare(const Case& k, const ScheduleOptions& o) {
  Graph p = prepare_quantized(zero_weight_graph(k, "s", true), o);
  struct Count : Visitor {
    int n = 0, masked = 0;
    void visit_Call(const CallNode* op) override {
      n += op->op == "smmlar";
      masked += op->builtin && is_shift_op(*op->builtin) && shift_needs_mask(op->args.at(1), op->dtype.bits());
      Visitor::visit_Call(op);
    }
  } count;
  AotModule aot = build_aot(p);
  for (const auto& [name, f] : aot.module.functions) count.visit(f->body);
  return {p.nodes[0].attrs["schedule"], count.n, count.masked};
}

json per_tensor(double output_scale, json extra) {
  json a = quant(std::move(extra));
  a["output_scale"] = output_scale;
  return a;
}

// A batch-2 dense (48 inputs, 10 outputs) with a per-tensor multiplier, and whether
// smmlar_requant takes it. The multipliers m = 0.05 * 0.02 / output_scale: 0.0025 (r = 8),
// 0.25 (exactly 2^30 * 2^-31 * 2^-1: with a ReLU only, as the sign of the high word is not
// the accumulator's), 0.7 (r = 0: no rounding divide), 0.3 (r = 1), 2.5 (a left shift: no
// form), 2.5e-8 (r = 25: the rounding term with zero point 127 leaves int32, with 0 it fits).
struct PerTensorCase {
  double output_scale;
  json extra;
  bool takes;
};
const PerTensorCase kPerTensor[] = {
    {0.4, json::object(), true},
    {0.4, {{"activation", "relu"}}, true},
    {0.4, {{"activation", "relu"}, {"output_zero_point", -128}}, true},
    {0.4, {{"activation", "relu6"}, {"output_zero_point", -20}}, true},
    {0.004, {{"activation", "relu"}}, true},
    {0.004, json::object(), false},
    {0.001 / 0.7, {{"output_zero_point", -7}}, true},
    {0.001 / 0.3, {{"output_zero_point", 100}}, true},
    {0.0004, json::object(), false},
    {0.001 / 2.5e-8, {{"output_zero_point", 127}}, false},
    {0.001 / 2.5e-8, {{"output_zero_point", 0}}, true},
};

TEST(SmmlarRequant, PerTensorDenseBitExact) {
  int i = 0;
  for (const PerTensorCase& t : kPerTensor) {
    const Case k{"qdense", {2, 48}, {10, 48}, per_tensor(t.output_scale, t.extra)};
    for (int variant = 0; variant < 3; ++variant) {
      ScheduleOptions o;
      o.smlad = o.sxtb16 = variant == 0;  // as on a Cortex-M4
      o.pixel_triples_stack = o.pixel_triples_code = false;
      o.smmlar_requant = variant != 2;
      const std::string label = "per-tensor dense " + std::to_string(i) + " " + k.attrs.dump() +
                                (variant == 0 ? " [smlad]" : variant == 1 ? "" : " [off: smmlar_requant]");
      SCOPED_TRACE(label);
      run_case(k, o, label);
      const Prepared p = prepare(k, o);
      const bool on = t.takes && o.smmlar_requant;
      EXPECT_EQ(p.sched["smmlar_requant"].get<bool>(), on);
      EXPECT_EQ(p.smmlar_calls > 0, on) << p.smmlar_calls;
    }
    ++i;
  }
}

// Accumulators small enough that the outputs do not saturate (one input, weights -1..1,
// no bias): every rounding case of r = 0 (no rounding divide, so no sign correction),
// r = 1 (ties at every odd accumulator, half of them negative) and r = 2 is reached.
TEST(SmmlarRequant, SmallAccumulatorsRoundLikeTflite) {
  for (double m : {0.7, 0.55, 0.3, 0.15}) {
    for (const char* act : {"none", "relu"}) {
      Case k{"qdense", {64, 1}, {10, 1}, per_tensor(0.001 / m, {{"activation", act}}), false, 1};
      ScheduleOptions o;
      o.smlad = o.sxtb16 = true;
      o.pixel_triples_stack = o.pixel_triples_code = false;
      o.smmlar_requant = true;
      const std::string label = "small accumulators, m = " + std::to_string(m) + " " + act;
      SCOPED_TRACE(label);
      run_case(k, o, label);
      EXPECT_TRUE(prepare(k, o).sched["smmlar_requant"].get<bool>());
    }
  }
}

// A padded 3x3 convolution with a per-tensor multiplier, signed and ReLU, through the
// matrix-product core (im2col) and the depthwise tiles.
TEST(SmmlarRequant, PerTensorConvolutionsBitExact) {
  const Case cases[] = {
      {"qconv2d", {1, 5, 4, 8}, {6, 3, 3, 8}, quant({{"padding", {1, 1, 1, 1}}})},
      {"qconv2d", {1, 5, 4, 8}, {6, 3, 3, 8}, quant({{"padding", {1, 1, 1, 1}}, {"activation", "relu"}})},
      {"qconv2d", {1, 6, 5, 8}, {8, 3, 3, 1}, quant({{"padding", {1, 1, 1, 1}}, {"groups", 8}})},
      {"qconv2d", {1, 6, 5, 8}, {8, 3, 3, 1},
       quant({{"padding", {1, 1, 1, 1}}, {"groups", 8}, {"activation", "relu"}, {"output_zero_point", -128}})}};
  for (const Case& k : cases)
    for (bool smlad : {true, false}) {
      ScheduleOptions o;
      o.smlad = o.sxtb16 = smlad;
      o.pixel_triples_stack = o.pixel_triples_code = false;  // the 3x2 tile wherever it applies
      o.smmlar_requant = true;
      const std::string label = "per-tensor conv " + k.attrs.dump() + (smlad ? " [smlad]" : "");
      SCOPED_TRACE(label);
      run_case(k, o, label);
      const Prepared p = prepare(k, o);
      EXPECT_TRUE(p.sched["smmlar_requant"].get<bool>());
      EXPECT_GT(p.smmlar_calls, 0);
    }
}

// Per-channel tables without a ReLU take the SMMLAR form too (with the sign correction),
// as IC's strided 1x1 shortcuts do; with it off they keep smlal_requant's. Either way the
// table's shift is T.known_range, so C shifts by it without a mask.
TEST(SmmlarRequant, PerChannelWithoutReluBitExact) {
  const json scales = {0.01, 0.02, 0.015, 0.03, 0.012, 0.0015, 0.001, 0.025};
  const Case cases[] = {{"qconv2d", {1, 6, 6, 16}, {8, 1, 1, 16}, quant({{"strides", {2, 2}}}, scales)},
                        {"qdense", {3, 40}, {8, 40}, quant({{"output_zero_point", -9}}, scales)}};
  for (const Case& k : cases)
    for (bool on : {true, false}) {
      ScheduleOptions o;
      o.smlad = o.sxtb16 = true;
      o.pixel_triples_stack = o.pixel_triples_code = false;
      o.smmlar_requant = on;
      const std::string label = "per-channel " + k.op + (on ? "" : " [off: smmlar_requant]");
      SCOPED_TRACE(label);
      run_case(k, o, label);
      const Prepared p = prepare(k, o);
      EXPECT_TRUE(p.sched["smlal_requant"].get<bool>());
      EXPECT_EQ(p.sched["smmlar_requant"].get<bool>(), on);
      EXPECT_EQ(p.smmlar_calls > 0, on);
      EXPECT_EQ(p.masked_shifts, 0);
    }
}

// smmlar_form's constants, and where it has none.
TEST(SmmlarRequant, FormConstants) {
  ops::SmmlarForm f;
  ASSERT_TRUE(ops::smmlar_form(ops::QuantMultiplier{1442237646, -4}, -128, &f));
  EXPECT_EQ(f.multiplier, 2 * int64_t{1442237646} - (int64_t{1} << 32));
  EXPECT_EQ(f.shift, 4);
  EXPECT_EQ(f.rounding, 8 - 128 * 16);
  ASSERT_TRUE(ops::smmlar_form(ops::QuantMultiplier{1 << 30, 0}, 5, &f));
  EXPECT_EQ(f.shift, 0);
  EXPECT_EQ(f.rounding, 5);
  EXPECT_FALSE(ops::smmlar_form(ops::QuantMultiplier{1 << 30, 1}, 0, &f));   // a left shift
  EXPECT_FALSE(ops::smmlar_form(ops::QuantMultiplier{0, 0}, 0, &f));         // below 2^-31
  EXPECT_FALSE(ops::smmlar_form(ops::QuantMultiplier{1 << 30, -25}, 127, &f));  // 127 * 2^25 + 2^24 > INT32_MAX
  EXPECT_TRUE(ops::smmlar_form(ops::QuantMultiplier{1 << 30, -24}, -128, &f));  // -2^31 + 2^23 fits
  EXPECT_FALSE(ops::smmlar_form(ops::QuantMultiplier{1 << 30, -32}, 0, &f));    // a shift beyond 31
}

}  // namespace
}  // namespace mtir
