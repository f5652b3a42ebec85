// pair_records: prepare_quantized lays a short_pairs convolution's bias, int16 weights
// and three-column requantization table out as one record per channel pair, and the
// kernel reads them through its weight parameter alone, bit-exact with the separate
// inputs (the schedule sweep runs each case with and without the records, then as host
// C and wasm).
#include <gtest/gtest.h>

#include "driver/build.h"
#include "qconv_cases.h"

namespace mtir {
namespace {

using namespace qconv_cases;

const auto* const kBackends =
    ::testing::AddGlobalTestEnvironment(new backend_cases::Environment({"qconv_records", {"c -unpacked-api=1"}, true, 0}));

const json kScales = {0.02, 0.03, 0.01, 0.04, 0.02, 0.05};

Graph one_node(const Case& k) {
  Graph g = zero_weight_graph(k, "records");
  int64_t n = 1;
  for (int64_t d : k.weight) n *= d;
  std::vector<int64_t> w(n);
  for (int64_t i = 0; i < n; ++i) w[i] = i % 11 - 5;
  g.constants["w"] = array_of(DataType::Int(8), k.weight, w);
  return g;
}

ScheduleOptions m4() {
  ScheduleOptions o;
  o.smlad = o.sxtb16 = o.smmlar_requant = true;
  o.pixel_triples_stack = o.pixel_triples_code = false;
  return o;
}

// IC's stride-2 1x1 shortcut in small: record b holds channel 2b's and 2b + 1's bias, the
// pair's interleaved weight words, then their table rows, as the separate inputs hold them.
TEST(PairRecords, OneRecordPerChannelPair) {
  const Case k{"qconv2d", {1, 4, 26, 16}, {6, 1, 1, 16}, quant({{"strides", {2, 2}}}, kScales)};
  const Graph on = prepare_quantized(one_node(k), m4());
  ScheduleOptions without = m4();
  without.pair_records = false;
  const Graph off = prepare_quantized(one_node(k), without);
  ASSERT_TRUE(on.nodes[0].attrs["schedule"]["pair_records"].get<bool>());
  ASSERT_FALSE(off.nodes[0].attrs["schedule"]["pair_records"].get<bool>());
  ASSERT_EQ(on.nodes[0].inputs.size(), 2u);
  ASSERT_EQ(off.nodes[0].inputs.size(), 4u);
  const NDArray& records = on.constants.at(on.nodes[0].inputs[1]);
  const NDArray &w = off.constants.at(off.nodes[0].inputs[1]), &bias = off.constants.at(off.nodes[0].inputs[2]),
                &table = off.constants.at(off.nodes[0].inputs[3]);
  const int64_t words = 8, record = pair_record_words(words);
  EXPECT_EQ(record, 2 + 16 + 6);
  ASSERT_EQ(records.shape, (std::vector<int64_t>{3, record}));
  for (int64_t b = 0; b < 3; ++b) {
    for (int64_t c = 0; c < 2; ++c) {
      EXPECT_EQ(records.get_int(b * record + c), bias.get_int(2 * b + c));
      for (int64_t j = 0; j < 3; ++j)
        EXPECT_EQ(records.get_int(b * record + 2 + 2 * words + 3 * c + j), table.get_int(3 * (2 * b + c) + j));
    }
    for (int64_t j = 0; j < 2 * words; ++j) EXPECT_EQ(records.get_int(b * record + 2 + j), w.get_int(2 * b * words + j));
  }
  // The kernel takes the data, the records and the output.
  AotModule aot = build_aot(on);
  for (const auto& [name, f] : aot.module.functions)
    if (name != aot.main) {
      EXPECT_EQ(f->params.size(), 3u) << name;
    }
}

// Not on an odd channel count, a per-tensor multiplier (no table) or a long reduction.
TEST(PairRecords, OnlyOnShortPerChannelPairs) {
  auto records = [](const Case& k) {
    return prepare_quantized(one_node(k), m4()).nodes[0].attrs["schedule"]["pair_records"].get<bool>();
  };
  EXPECT_FALSE(records({"qconv2d", {1, 4, 26, 16}, {5, 1, 1, 16}, quant({}, {0.02, 0.03, 0.01, 0.04, 0.02})}));
  EXPECT_FALSE(records({"qconv2d", {1, 4, 26, 16}, {6, 1, 1, 16}, quant({})}));
  EXPECT_FALSE(records({"qconv2d", {1, 4, 6, 64}, {6, 1, 1, 64}, quant({}, kScales)}));
  EXPECT_TRUE(records({"qconv2d", {1, 4, 6, 32}, {6, 1, 1, 32}, quant({{"activation", "relu"}}, kScales)}));
}

// A weight input that is not the records is refused.
TEST(PairRecords, RefusesSeparateInputs) {
  const Case k{"qconv2d", {1, 4, 26, 16}, {6, 1, 1, 16}, quant({{"strides", {2, 2}}}, kScales)};
  ScheduleOptions without = m4();
  without.pair_records = false;
  Graph g = prepare_quantized(one_node(k), without);
  g.nodes[0].attrs["schedule"]["pair_records"] = true;
  try {
    build_aot(g);
    FAIL() << "built";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("pair_records"), std::string::npos) << e.what();
  }
}

TEST(PairRecords, BitExact) {
  // IC's shortcut (stride 2, no ReLU; two pixels left over: a 2x2 tile), VWW's K = 8 and
  // K = 16 layers (ReLU; one pixel left over), K = 32.
  run_all_schedules({"qconv2d", {1, 4, 26, 16}, {6, 1, 1, 16}, quant({{"strides", {2, 2}}}, kScales)},
                    "conv 1x1 16->6 stride 2 per-channel");
  run_all_schedules({"qconv2d", {1, 5, 5, 8}, {6, 1, 1, 8}, quant({{"activation", "relu"}}, kScales)},
                    "conv 1x1 8->6 per-channel relu");
  run_all_schedules({"qconv2d", {1, 2, 5, 16}, {4, 1, 1, 16}, quant({{"activation", "relu"}}, {0.02, 0.03, 0.01, 0.04})},
                    "conv 1x1 16->4 per-channel relu");
  run_all_schedules({"qconv2d", {1, 3, 3, 32}, {6, 1, 1, 32}, quant({}, kScales)}, "conv 1x1 32->6 per-channel");
}

}  // namespace
}  // namespace mtir
