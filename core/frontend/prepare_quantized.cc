// prepare_quantized: the compile-time half of the int8 kernels. Everything that depends
// only on constants is computed here, once, so the kernels do none of it at run time:
// per-channel requantization tables, the input zero point folded into the bias, weights
// packed as int16 pairs for SMLAD, softmax's exponential table, the logistic and tanh
// tables. Each node records the
// schedules it gets in attrs["schedule"] (see ops/schedules.h), so the op builder and a
// reader of the dumped graph agree on what was done. The functions that IF and WHILE
// nodes call (Graph::functions) are prepared too, per call site (prepare_functions).
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>

#include "frontend/graph.h"
#include "frontend/pixel_triples_budget.h"
#include "ops/fixed_point.h"
#include "ops/quant_util.h"
#include "ops/schedules.h"

namespace mtir {
namespace {

using json = nlohmann::json;

const DataType kI8 = DataType::Int(8), kI32 = DataType::Int(32);

double number_or(const json& attrs, const char* key, double def) {
  auto it = attrs.find(key);
  return it != attrs.end() && it->is_number() ? it->get<double>() : def;
}

// The weight scale of channel c: a number or a per-channel list.
double weight_scale(const json& attrs, int64_t c) {
  auto it = attrs.find("weight_scale");
  if (it == attrs.end()) return 1.0;
  if (it->is_array()) return (*it)[static_cast<size_t>(c)].get<double>();
  return it->get<double>();
}

bool per_channel(const json& attrs) {
  auto it = attrs.find("weight_scale");
  if (it == attrs.end() || !it->is_array()) return false;
  for (const auto& v : *it)
    if (v != (*it)[0]) return true;
  return false;
}

// smmlar_requant (ops/qconv_gemm.cc, requantize_channel): the smlal_requant table (M, s,
// R) becomes (2M - 2^32, s + 1, 2R), one SMMLAR per output (without a ReLU, with the sign
// correction smlal_requant's multipliers above 2^30 allow); a per-tensor multiplier takes
// the same form as constants (ops/quant_util.h, smmlar_form). Exact while SMMLAR's
// rounded high word 2R + floor((x * M + 2^30) / 2^31) fits int32: |x| + |2R| + 1 < 2^31,
// the accumulator x at most |bias| + k * 2^15 (int8 products, or 255 * 128 with the zero
// point subtracted), and while the shift s + 1 stays below 32. smmlar_form_fits says
// whether every channel qualifies; smmlar_table rewrites `table` when they do.
// mve_pair_requant's vector form has the same bounds (ops/qconv_mve.cc) and needs a ReLU.
// Whether the node's lower bound is at least its output zero point (a ReLU): what
// mve_pair_requant needs, and mve_signed_requant leaves to it.
bool relu_bounded(const GraphNode& node) {
  const int32_t zo = static_cast<int32_t>(number_or(node.attrs, "output_zero_point", 0));
  return ops::activation_bounds(node.attrs.value("activation", std::string("none")),
                                number_or(node.attrs, "output_scale", 1.0), zo)
             .lo >= zo;
}

// Whether |x| + |rounding(c)| + 1 < 2^31 for every channel's accumulator x.
bool smmlar_sum_fits(const Graph& g, const std::vector<std::string>& inputs, int64_t channels, int64_t k,
                     const std::function<int64_t(int64_t)>& rounding) {
  const NDArray* bias = nullptr;
  if (inputs.size() > 2) {
    auto bit = g.constants.find(inputs[2]);
    if (bit == g.constants.end() || bit->second.dtype != kI32) return false;
    bias = &bit->second;
  }
  for (int64_t c = 0; c < channels; ++c) {
    const int64_t x = std::abs(bias ? bias->get_int(c) : 0) + k * (int64_t{1} << 15);
    if (x + std::abs(rounding(c)) + 1 >= (int64_t{1} << 31)) return false;
  }
  return true;
}

bool smmlar_form_fits(const Graph& g, const std::vector<std::string>& inputs, const NDArray& table, int64_t k) {
  if (table.shape.size() != 2 || table.shape[1] != 3) return false;
  for (int64_t c = 0; c < table.shape[0]; ++c)
    if (table.get_int(3 * c + 1) + 1 > 31) return false;
  return smmlar_sum_fits(g, inputs, table.shape[0], k, [&](int64_t c) { return 2 * table.get_int(3 * c + 2); });
}

// smmlar_requant on a per-tensor multiplier (tflite rule, int8 output): its constant form
// exists and fits, and, without a ReLU, the multiplier is above 2^30.
bool smmlar_per_tensor(const Graph& g, const GraphNode& node, const std::vector<std::string>& inputs, int64_t channels,
                       int64_t k) {
  if (node.attrs.value("requant", std::string("tflite")) != "tflite" || node.type.dtype != kI8) return false;
  const ops::QuantMultiplier m = ops::quantize_multiplier(
      number_or(node.attrs, "input_scale", 1.0) * weight_scale(node.attrs, 0) / number_or(node.attrs, "output_scale", 1.0),
      node.op, "input_scale * weight_scale / output_scale");
  ops::SmmlarForm form;
  if (!ops::smmlar_form(m, static_cast<int32_t>(number_or(node.attrs, "output_zero_point", 0)), &form)) return false;
  if (!relu_bounded(node) && m.multiplier <= (int64_t{1} << 30)) return false;
  return smmlar_sum_fits(g, inputs, channels, k, [&](int64_t) { return form.rounding; });
}

bool smmlar_table(const Graph& g, const std::vector<std::string>& inputs, NDArray& table, int64_t k) {
  if (!smmlar_form_fits(g, inputs, table, k)) return false;
  const int64_t channels = table.shape[0];
  for (int64_t c = 0; c < channels; ++c) {
    table.set_int(3 * c, table.get_int(3 * c) * 2 - (int64_t{1} << 32));
    table.set_int(3 * c + 1, table.get_int(3 * c + 1) + 1);
    table.set_int(3 * c + 2, table.get_int(3 * c + 2) * 2);
  }
  return true;
}

// mve on a depthwise convolution (NHWC, one output channel per input channel, input
// zero point folded, tflite rule): the weight [C, KH, KW, 1] becomes [1, KH, KW, C] in
// blocks of four channels (mve_depthwise_weight_index) for ops/qconv_mve_depthwise.cc's
// vector loads; its requantization reads the table as it is, so no smlal/smmlar rewrite.
void take_mve_depthwise(Graph& g, const ScheduleOptions& opts, GraphNode& node, std::vector<std::string>& inputs,
                        int64_t groups, json& sched,
                        std::set<std::string>& maybe_unused) {
  const NDArray& w = g.constants.at(inputs[1]);
  const bool nhwc = node.attrs.value("layout", std::string("NHWC")) == "NHWC";
  if (!nhwc || w.shape.size() != 4 || w.shape[3] != 1 || w.shape[0] != groups || !sched["fold_zero_point"].get<bool>() ||
      node.attrs.value("requant", std::string("tflite")) != "tflite")
    return;
  const int64_t channels = w.shape[0], taps = w.shape[1] * w.shape[2];
  NDArray blocks = NDArray::zeros(w.dtype, {1, w.shape[1], w.shape[2], channels});
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t t = 0; t < taps; ++t) blocks.set_int(mve_depthwise_weight_index(c, t, channels, taps), w.get_int(c * taps + t));
  std::string name = fresh_name(g, node.name + "__weight_blocks");
  g.constants[name] = std::move(blocks);
  maybe_unused.insert(inputs[1]);
  inputs[1] = name;
  sched["mve"] = true;
  sched["smlal_requant"] = false;
  sched["mve_depthwise_padded"] = opts.mve_depthwise_padded;
}

// mve (Cortex-M55): the int8 weights as they are, for a node whose input zero point
// folded under the tflite rule (int8 data); recorded in `sched`. A depthwise node takes
// it with mve_depthwise (-disabled-schedules=mve_depthwise gives it depthwise_tile's
// scalar tiles).
bool takes_mve(Graph& g, const ScheduleOptions& opts, GraphNode& node, std::vector<std::string>& inputs, int64_t groups,
               json& sched, std::set<std::string>& maybe_unused) {
  if (groups > 1) {
    if (opts.mve && opts.mve_depthwise && node.op == "qconv2d")
      take_mve_depthwise(g, opts, node, inputs, groups, sched, maybe_unused);
    return sched["mve"].get<bool>();
  }
  sched["mve"] = opts.mve && sched["fold_zero_point"].get<bool>() &&
                 node.attrs.value("requant", std::string("tflite")) == "tflite";
  return sched["mve"].get<bool>();
}

// mve_short_requant: a node under mve whose pixels the kernel reads in place (a dense
// layer, an unpadded NHWC 1x1 convolution) with a reduction of at most
// kMveShortReduction keeps its three-column table for the int32x4 requantization of
// ops/qconv_mve.cc (vector_outputs) instead of smmlar_requant's rewrite.
constexpr int64_t kMveShortReduction = 32;
bool takes_mve_short_requant(const GraphNode& node, const ScheduleOptions& opts, const json& sched, int64_t k,
                             const NDArray& weight) {
  if (!opts.mve_short_requant || !sched["mve"].get<bool>() || k > kMveShortReduction) return false;
  if (node.op != "qconv2d") return true;
  std::vector<int64_t> padding = node.attrs.value("padding", std::vector<int64_t>{0, 0, 0, 0});
  bool unpadded = true;
  for (int64_t v : padding) unpadded = unpadded && v == 0;
  return unpadded && weight.shape.size() == 4 && weight.shape[1] == 1 && weight.shape[2] == 1 &&
         node.attrs.value("groups", int64_t{1}) == 1 && node.attrs.value("layout", std::string("NHWC")) == "NHWC";
}

// Per-channel multipliers and shifts (TFLite's QuantizeMultiplier) as an int32 table:
// [O, 3] (multiplier, r - 1, 1 << (r - 2)) when every channel's right shift r is at
// least 2, [O, 2] (multiplier, shift) otherwise (see ops/qconv_gemm.cc). Records
// fold_output_zero_point and smlal_requant in `sched`; returns the table's constant.
std::string requant_table(Graph& g, const GraphNode& node, const ScheduleOptions& opts, int64_t channels,
                          json& sched) {
  double in_scale = number_or(node.attrs, "input_scale", 1.0), out_scale = number_or(node.attrs, "output_scale", 1.0);
  std::vector<ops::QuantMultiplier> ms;
  bool high_word = true;
  for (int64_t c = 0; c < channels; ++c) {
    ms.push_back(ops::quantize_multiplier(in_scale * weight_scale(node.attrs, c) / out_scale, node.op,
                                          "input_scale * weight_scale[" + std::to_string(c) + "] / output_scale"));
    high_word = high_word && ms.back().right_shift() >= 2;
  }
  const int64_t columns = high_word ? 3 : 2;
  // fold_output_zero_point: the rounding term also carries zo << (r - 1), so the kernel
  // adds no zero point after the shift ((v + zo * 2^s) >> s == (v >> s) + zo). Exact
  // while the sum stays in int32: the high word is within 2^30, so r - 1 <= 22 keeps
  // |zo| * 2^(r - 1) + 2^(r - 2) below 2^30.
  const int64_t zo = static_cast<int64_t>(number_or(node.attrs, "output_zero_point", 0));
  bool fold_zo = opts.fold_output_zero_point && high_word && zo != 0;
  for (int64_t c = 0; c < channels && fold_zo; ++c) fold_zo = ms[c].right_shift() - 1 <= 22;
  NDArray table = NDArray::zeros(kI32, {channels, columns});
  for (int64_t c = 0; c < channels; ++c) {
    const int right = ms[c].right_shift();
    table.set_int(columns * c, ms[c].multiplier);
    table.set_int(columns * c + 1, high_word ? right - 1 : ms[c].shift);
    if (high_word)
      table.set_int(columns * c + 2, (int64_t{1} << (right - 2)) + (fold_zo ? zo * (int64_t{1} << (right - 1)) : 0));
  }
  sched["fold_output_zero_point"] = fold_zo;
  // smlal_requant (ops/qconv_gemm.cc, smlal_requantize): exact when every multiplier is above
  // 2^30 (QuantizeMultiplier's range is [2^30, 2^31); 2^30 itself is an exact power of two).
  bool smlal = opts.smlal_requant && high_word;
  for (int64_t c = 0; c < channels && smlal; ++c) smlal = ms[c].multiplier > (int64_t{1} << 30);
  sched["smlal_requant"] = smlal;
  std::string name = fresh_name(g, node.name + "__requant");
  g.constants[name] = std::move(table);
  return name;
}

// bias' = bias - zx * sum(w): the reduction then multiplies raw inputs. Replaces (or
// adds) the bias input when the folded bias fits int32; records fold_zero_point.
void fold_input_zero_point(Graph& g, const GraphNode& node, const NDArray& w, int64_t channels,
                           std::vector<std::string>& inputs, json& sched, std::set<std::string>& maybe_unused) {
  const int64_t k = w.num_elements() / channels;
  int64_t zx = static_cast<int64_t>(number_or(node.attrs, "input_zero_point", 0));
  const NDArray* bias = nullptr;
  if (inputs.size() > 2) {
    auto bit = g.constants.find(inputs[2]);
    bias = bit != g.constants.end() && bit->second.dtype == kI32 && bit->second.shape.size() == 1 ? &bit->second : nullptr;
  }
  if (inputs.size() != 2 && !bias) return;
  NDArray folded = NDArray::zeros(kI32, {channels});
  bool fits = true;
  for (int64_t c = 0; c < channels; ++c) {
    int64_t sum = 0;
    for (int64_t i = 0; i < k; ++i) sum += w.get_int(c * k + i);
    int64_t b = (bias ? bias->get_int(c) : 0) - zx * sum;
    fits = fits && b >= std::numeric_limits<int32_t>::min() && b <= std::numeric_limits<int32_t>::max();
    folded.set_int(c, b);
  }
  if (!fits) return;
  sched["fold_zero_point"] = true;
  if (zx == 0 && bias) return;
  std::string name = fresh_name(g, node.name + "__bias_folded");
  g.constants[name] = std::move(folded);
  if (bias) maybe_unused.insert(inputs[2]);
  if (inputs.size() > 2)
    inputs[2] = name;
  else
    inputs.push_back(name);
}

// The weights packed for SMLAD in place of input 1; records the packing in `sched`.
void pack_smlad_weights(Graph& g, GraphNode& node, const ScheduleOptions& opts, const NDArray& w, int64_t channels,
                        std::vector<std::string>& inputs, json& sched, std::set<std::string>& maybe_unused) {
  const bool conv = node.op == "qconv2d";
  const bool nchw = conv && node.attrs.value("layout", std::string("NHWC")) == "NCHW";
  const int64_t k = w.num_elements() / channels;
  // few_channels: a first layer (1-4 input channels, NHWC) keeps int16 pairs even
  // with sxtb16: its weights are a few hundred bytes, and its tile then has no
  // widening to do (the kernel gathers interior pixels without bound checks).
  const bool few_channels = opts.few_channels && conv && !nchw && w.shape.size() == 4 &&
                            w.shape[3] <= kFewChannelsMaxInput && k <= kFewChannelsMaxReduction;
  // word_gather: the kernel reads four input channels as one word (int8 data, NHWC, the
  // zero point folded), so the weights keep the order SXTB16 widens them in.
  const bool word_gather = opts.word_gather && !few_channels && conv && !nchw && w.shape.size() == 4 &&
                           w.shape[3] % 4 == 0 && sched.value("fold_zero_point", false) &&
                           node.attrs.value("requant", std::string("tflite")) != "onnx";
  // short_pairs: a short reduction keeps int16 weights (a few KB at most) so its tile
  // loads gathered and weight words in pairs and widens no weight (pair_loads).
  const bool short_pairs = opts.short_pairs && opts.pair_loads && word_gather && k <= kShortPairsMaxReduction;
  const bool sxtb16 = opts.sxtb16 && !few_channels && !short_pairs;
  // sxtb16: four int8 weights per word in the order 0, 2, 1, 3, so SXTB16 yields the
  // pair (0, 1) and SXTB16 with ROR #8 the pair (2, 3) (word_gather: 0, 1, 2, 3, the
  // pairs (0, 2) and (1, 3), as the kernel widens the input). Otherwise int16 pairs in
  // int32 words, element 2j in the low half: SMLAD's operand order (word_gather: the
  // pairs (4e, 4e + 2) and (4e + 1, 4e + 3) of each four). With interleave (the kernels'
  // 2x2 tile, so only with block) channel pairs alternate word by word.
  const int64_t words = packed_weight_words(k, sxtb16);
  const bool interleave = opts.interleave && opts.block;
  NDArray packed = NDArray::zeros(kI32, {channels, words});
  auto weight = [&](int64_t c, int64_t e) { return e < k ? w.get_int(c * k + e) : 0; };
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t j = 0; j < words; ++j) {
      uint32_t word = 0;
      if (sxtb16) {
        static const int kBytePosition[4] = {0, 2, 1, 3};
        for (int e = 0; e < 4; ++e)
          word |= static_cast<uint32_t>(static_cast<uint8_t>(weight(c, 4 * j + e))) << (8 * (word_gather ? e : kBytePosition[e]));
      } else {
        const int64_t lo = word_gather ? 4 * (j / 2) + j % 2 : 2 * j, hi = word_gather ? lo + 2 : lo + 1;
        word = static_cast<uint16_t>(weight(c, lo)) | static_cast<uint32_t>(static_cast<uint16_t>(weight(c, hi))) << 16;
      }
      packed.set_int(packed_weight_index(c, j, channels, words, interleave), static_cast<int32_t>(word));
    }
  node.attrs["weight_shape"] = w.shape;
  std::string name = fresh_name(g, node.name + (sxtb16 ? "__weight_q7x4" : "__weight_q15x2"));
  g.constants[name] = std::move(packed);
  maybe_unused.insert(inputs[1]);
  inputs[1] = name;
  sched["smlad"] = true;
  sched["sxtb16"] = sxtb16;
  sched["few_channels"] = few_channels;
  sched["word_gather"] = word_gather;
  sched["interleave"] = interleave;
  sched["pixel_triples"] = opts.pixel_triples && opts.block;
  // The kernel chunks only a batch-1 dense whose gathered row outweighs the chunk.
  sched["dense_chunks"] = !conv && opts.dense_chunks;
  // pair_loads: a batch-1 dense, and the convolutions that gather words into int16 pairs
  // (few_channels' gather too, under few_channel_pairs).
  const bool few_pairs = few_channels && opts.few_channel_pairs;
  sched["pair_loads"] = opts.pair_loads && (!conv || ((word_gather || few_pairs) && !sxtb16));
}

// pair_records: a short_pairs convolution's bias, weight and three-column table become one
// input of a record per channel pair (ops/schedules.h), so the kernel's channel loop
// steps one pointer where it held three and the loop counter (GCC spilled them all).
void pack_pair_records(Graph& g, const GraphNode& node, const ScheduleOptions& opts, int64_t channels, int64_t k,
                       std::vector<std::string>& inputs, json& sched, std::set<std::string>& maybe_unused) {
  const bool short_conv = node.op == "qconv2d" && sched["pair_loads"].get<bool>() && sched["word_gather"].get<bool>() &&
                          !sched["sxtb16"].get<bool>() && sched["interleave"].get<bool>() &&
                          sched["smmlar_requant"].get<bool>() && !sched["mve"].get<bool>();
  if (!opts.pair_records || !short_conv || k > kShortPairsMaxReduction || channels % 2 || inputs.size() != 4) return;
  const NDArray &w = g.constants.at(inputs[1]), &bias = g.constants.at(inputs[2]), &table = g.constants.at(inputs[3]);
  if (bias.shape != std::vector<int64_t>{channels} || table.shape != std::vector<int64_t>{channels, kRecordTableColumns})
    return;
  const int64_t words = w.shape.at(1), record = pair_record_words(words);
  NDArray records = NDArray::zeros(kI32, {channels / 2, record});
  for (int64_t b = 0; b < channels / 2; ++b) {
    int64_t at = b * record;
    for (int64_t c = 0; c < 2; ++c) records.set_int(at++, bias.get_int(2 * b + c));
    for (int64_t j = 0; j < 2 * words; ++j) records.set_int(at++, w.get_int(2 * b * words + j));
    for (int64_t j = 0; j < 2 * kRecordTableColumns; ++j) records.set_int(at++, table.get_int(2 * b * kRecordTableColumns + j));
  }
  std::string name = fresh_name(g, node.name + "__pair_records");
  g.constants[name] = std::move(records);
  maybe_unused.insert(inputs.begin() + 1, inputs.end());
  inputs = {inputs[0], name};
  sched["pair_records"] = true;
}

// The schedules a node of `op` can take; the rest are recorded as off.
void prepare_matmul_node(Graph& g, GraphNode& node, const ScheduleOptions& opts, std::set<std::string>& maybe_unused) {
  const bool conv = node.op == "qconv2d";
  // Already prepared (a graph written back by `microtir import`, or prepared twice).
  if (node.attrs.contains("schedule")) return;
  const bool nchw = conv && node.attrs.value("layout", std::string("NHWC")) == "NCHW";
  json sched = {{"fold_zero_point", false},
                {"block", opts.block},
                {"unroll", opts.unroll},
                {"smlad", false},
                {"sxtb16", false},
                {"interleave", false},
                {"fold_output_zero_point", false},
                {"few_channels", false},
                {"depthwise_tile", conv && opts.depthwise_tile},
                {"depthwise_border_tiles", conv && opts.depthwise_border_tiles},
                {"smlal_requant", false},
                {"smmlar_requant", false},
                {"dense_chunks", false},
                {"mve", false},
                {"mve_short_requant", false},
                {"mve_pair_requant", false},
                {"mve_signed_requant", false},
                {"mve_direct", false},
                {"pixel_triples", false},
                {"rolled_leftovers", opts.block && opts.rolled_leftovers},
                {"mve_depthwise_padded", false},
                {"word_gather", false},
                {"pair_loads", false},
                {"pair_records", false}};
  auto wit = g.constants.find(node.inputs.size() > 1 ? node.inputs[1] : "");
  const bool const_weight = wit != g.constants.end() && wit->second.dtype == kI8;
  const int64_t channels = nchw ? node.type.shape.at(1) : node.type.shape.back();
  const int64_t groups = conv ? node.attrs.value("groups", int64_t{1}) : 1;
  std::vector<std::string> extra;
  if (per_channel(node.attrs)) extra.push_back(requant_table(g, node, opts, channels, sched));
  std::vector<std::string> inputs = node.inputs;
  if (const_weight) {
    if (opts.fold_zero_point) fold_input_zero_point(g, node, wit->second, channels, inputs, sched, maybe_unused);
    if (!takes_mve(g, opts, node, inputs, groups, sched, maybe_unused) && opts.smlad && groups == 1)
      pack_smlad_weights(g, node, opts, wit->second, channels, inputs, sched, maybe_unused);
  }
  // mve_direct: the op builder takes it where the input channels are a multiple of 16.
  if (conv && !nchw && groups == 1 && opts.mve_direct && sched["mve"].get<bool>()) sched["mve_direct"] = true;
  const bool three_columns = !extra.empty() && g.constants[extra[0]].shape.size() == 2 && g.constants[extra[0]].shape[1] == 3;
  const int64_t k = const_weight ? wit->second.num_elements() / channels : 0;
  if (three_columns && const_weight && takes_mve_short_requant(node, opts, sched, k, wit->second))
    sched["mve_short_requant"] = true;
  else if (three_columns && const_weight && opts.mve_pair_requant && sched["mve"].get<bool>() && groups == 1 && !nchw &&
           relu_bounded(node) && smmlar_form_fits(g, inputs, g.constants[extra[0]], k))
    sched["mve_pair_requant"] = true;
  else if (!extra.empty() && const_weight && opts.mve_signed_requant && sched["mve"].get<bool>() && groups == 1 && !nchw &&
           !relu_bounded(node))
    sched["mve_signed_requant"] = true;  // the table as it is (ops/qconv_mve.cc, signed_outputs)
  else if (!extra.empty() && const_weight && sched["smlal_requant"].get<bool>() && opts.smmlar_requant)
    sched["smmlar_requant"] = smmlar_table(g, inputs, g.constants[extra[0]], k);
  else if (extra.empty() && const_weight && opts.smmlar_requant && !sched["mve"].get<bool>())
    sched["smmlar_requant"] = smmlar_per_tensor(g, node, inputs, channels, k);
  inputs.insert(inputs.end(), extra.begin(), extra.end());
  pack_pair_records(g, node, opts, channels, k, inputs, sched, maybe_unused);
  node.inputs = inputs;
  node.attrs["schedule"] = sched;
}

// qlinear_conv and qlinear_matmul (ONNX's QLinearConv and QLinearMatMul, and QDQ groups
// folded by the ONNX frontend) onto the fast kernels: qconv2d with layout "NCHW" and
// qdense, both with requant "onnx", which is qlinear_conv's requantization to the bit
// (ops/qconv.cc). The weight zero point is subtracted at compile time, the weight
// transposed to OHWI (conv) or (N, K) (matmul), and the params table's columns become
// the bias and the (M, s) multiplier (an attribute when every channel shares it, an
// [O, 2] table otherwise). Left as they are (the plain loops, same results): int32
// outputs, weights that are not constants or whose values minus the zero point leave
// int8, a params table that is not a constant, matmuls of rank above 2.
void lower_onnx_node(Graph& g, GraphNode& node) {
  const bool conv = node.op == "qlinear_conv";
  if (node.inputs.size() != 3 || node.attrs.value("output_dtype", std::string("int32")) == "int32") return;
  auto wit = g.constants.find(node.inputs[1]);
  auto pit = g.constants.find(node.inputs[2]);
  if (wit == g.constants.end() || pit == g.constants.end()) return;
  const NDArray& w = wit->second;
  const NDArray& params = pit->second;
  if (w.dtype != kI8 && w.dtype != DataType::UInt(8)) return;
  if (params.dtype != kI32 || params.shape.size() != 2 || params.shape[1] != 4) return;
  if (w.shape.size() != (conv ? 4u : 2u) || (!conv && node.type.shape.size() != 2)) return;
  const int64_t channels = conv ? w.shape[0] : w.shape[1];
  const int64_t k = w.num_elements() / channels;
  auto row = [&](int64_t c) { return params.shape[0] == 1 ? 0 : c; };
  // The weight minus its zero point, laid out (channel, reduction) with the reduction
  // in the kernel's order: (kh, kw, ci) for conv, K for matmul.
  NDArray weight = NDArray::zeros(kI8, conv ? std::vector<int64_t>{w.shape[0], w.shape[2], w.shape[3], w.shape[1]}
                                            : std::vector<int64_t>{channels, k});
  for (int64_t c = 0; c < channels; ++c) {
    const int64_t zw = params.get_int(4 * row(c));
    for (int64_t e = 0; e < k; ++e) {
      int64_t src;
      if (conv) {
        const int64_t cg = w.shape[1], kh = w.shape[2], kw = w.shape[3];
        const int64_t y = e / (kw * cg), x = e / cg % kw, i = e % cg;
        src = ((c * cg + i) * kh + y) * kw + x;
      } else {
        src = e * channels + c;
      }
      const int64_t v = w.get_int(src) - zw;
      if (v < -128 || v > 127) return;
      weight.set_int(c * k + e, v);
    }
  }
  NDArray bias = NDArray::zeros(kI32, {channels});
  bool uniform = true;
  for (int64_t c = 0; c < channels; ++c) {
    bias.set_int(c, params.get_int(4 * row(c) + 1));
    for (int j = 2; j < 4; ++j) uniform = uniform && params.get_int(4 * row(c) + j) == params.get_int(j);
  }
  json attrs = {{"requant", "onnx"},
                {"input_zero_point", node.attrs.value("data_zero_point", int64_t{0})},
                {"output_zero_point", node.attrs.value("output_zero_point", int64_t{0})},
                {"output_dtype", node.attrs.value("output_dtype", std::string("int8"))},
                {"activation", node.attrs.value("relu", false) ? "relu" : "none"}};
  if (conv) {
    for (const char* key : {"strides", "padding", "dilation", "groups"})
      if (node.attrs.contains(key)) attrs[key] = node.attrs[key];
    attrs["layout"] = "NCHW";
  }
  std::vector<std::string> inputs = {node.inputs[0], fresh_name(g, node.name + "__weight"),
                                     fresh_name(g, node.name + "__bias")};
  g.constants[inputs[1]] = std::move(weight);
  g.constants[inputs[2]] = std::move(bias);
  if (uniform) {
    attrs["onnx_multiplier"] = {params.get_int(2), params.get_int(3)};
  } else {
    // (M', t, 2^(t-1)) when every channel has the 32-bit form (ops/quant_util.h), else (M, s).
    std::vector<ops::OnnxHighWord> forms(channels);
    bool high_word = true;
    for (int64_t c = 0; c < channels; ++c)
      high_word = high_word && ops::onnx_high_word_form(params.get_int(4 * row(c) + 2), params.get_int(4 * row(c) + 3), &forms[c]);
    const int64_t columns = high_word ? 3 : 2;
    NDArray table = NDArray::zeros(kI32, {channels, columns});
    for (int64_t c = 0; c < channels; ++c) {
      if (high_word) {
        table.set_int(3 * c, forms[c].multiplier);
        table.set_int(3 * c + 1, forms[c].shift);
        table.set_int(3 * c + 2, int64_t{1} << (forms[c].shift - 1));
      } else {
        for (int j = 0; j < 2; ++j) table.set_int(2 * c + j, params.get_int(4 * row(c) + 2 + j));
      }
    }
    inputs.push_back(fresh_name(g, node.name + "__requant"));
    g.constants[inputs[3]] = std::move(table);
  }
  node.op = conv ? "qconv2d" : "qdense";
  node.inputs = inputs;
  node.attrs = attrs;
}

// qsoftmax: TFLite's fixed-point exp of every input difference d = max - x (0 where
// TFLite leaves the element out), see ops/fixed_point.h.
void prepare_softmax_node(Graph& g, GraphNode& node) {
  if (node.inputs.size() != 1) return;
  double scale = number_or(node.attrs, "input_scale", 0), beta = number_or(node.attrs, "beta", 1.0);
  if (!(scale > 0) || !(beta > 0)) return;  // the op's own check reports it
  if (g.all_types().at(node.inputs[0]).dtype == DataType::Int(16)) {
    // int16 data: TFLM's two interpolation tables, exp on [-10, 0] and 1 / (1 + x) on [0, 1].
    for (bool exp : {true, false}) {
      auto values = ops::fixed_point::softmax_int16_lut(exp);
      NDArray table = NDArray::zeros(DataType::Int(16), {513});
      for (int64_t i = 0; i < 513; ++i) table.set_int(i, values[static_cast<size_t>(i)]);
      std::string name = fresh_name(g, node.name + (exp ? "__exp_lut" : "__recip_lut"));
      g.constants[name] = std::move(table);
      node.inputs.push_back(name);
    }
    return;
  }
  auto params = ops::fixed_point::softmax_params(scale, beta, "qsoftmax");
  auto exps = ops::fixed_point::softmax_exp_table(params);
  NDArray table = NDArray::zeros(kI32, {256});
  for (int64_t d = 0; d < 256; ++d) table.set_int(d, exps[d]);
  std::string name = fresh_name(g, node.name + "__exp_table");
  g.constants[name] = std::move(table);
  node.inputs.push_back(name);
}

// qlogistic / qtanh: TFLite's output for each of the 256 input codes.
void prepare_activation_node(Graph& g, GraphNode& node) {
  if (node.inputs.size() != 1) return;
  double scale = number_or(node.attrs, "input_scale", 0);
  if (!(scale > 0)) return;  // the op's own check reports it
  int32_t zp = static_cast<int32_t>(number_or(node.attrs, "input_zero_point", 0));
  if (zp < -128 || zp > 127) return;
  auto values = ops::fixed_point::activation_table(node.op == "qtanh", scale, zp, node.op);
  NDArray table = NDArray::zeros(kI8, {256});
  for (int64_t i = 0; i < 256; ++i) table.set_int(i, values[i]);
  std::string name = fresh_name(g, node.name + "__table");
  g.constants[name] = std::move(table);
  node.inputs.push_back(name);
}

// qconv2d_s16, qdense_s16 and qtranspose_conv2d (ops/qconv_s16.cc): per-channel
// multipliers differ, so their QuantizeMultiplier pairs go in an int32 table [O, 2]
// (multiplier, shift), the kernel's last input; the kernel derives TFLM's 16-bit
// reduced multiplier from it for an int64 accumulator.
bool is_wide_mac_op(const std::string& op) {
  return op == "qconv2d_s16" || op == "qdense_s16" || op == "qtranspose_conv2d";
}

void prepare_wide_mac_node(Graph& g, GraphNode& node, const ScheduleOptions& opts) {
  if (!node.attrs.contains("schedule")) node.attrs["schedule"] = {{"unroll", opts.unroll}};
  if (!per_channel(node.attrs)) return;
  const int64_t channels = node.type.shape.back();
  for (size_t i = 2; i < node.inputs.size(); ++i) {
    auto it = g.constants.find(node.inputs[i]);
    if (it != g.constants.end() && it->second.shape.size() == 2) return;  // prepared already
  }
  const double in_scale = number_or(node.attrs, "input_scale", 1.0), out_scale = number_or(node.attrs, "output_scale", 1.0);
  NDArray table = NDArray::zeros(kI32, {channels, 2});
  for (int64_t c = 0; c < channels; ++c) {
    ops::QuantMultiplier m = ops::quantize_multiplier(in_scale * weight_scale(node.attrs, c) / out_scale, node.op,
                                                      "input_scale * weight_scale[" + std::to_string(c) + "] / output_scale");
    table.set_int(2 * c, m.multiplier);
    table.set_int(2 * c + 1, m.shift);
  }
  std::string name = fresh_name(g, node.name + "__requant");
  g.constants[name] = std::move(table);
  node.inputs.push_back(name);
}

Graph prepare_graph(const Graph& in, const ScheduleOptions& opts);

// The functions a node calls, each with the attribute listing which of the node's
// inputs it takes: IF's then/else branches, WHILE's cond and body.
std::vector<std::pair<std::string, std::string>> called_functions(const GraphNode& node) {
  if (node.op == "if") return {{"then", "then_args"}, {"else", "else_args"}};
  if (node.op == "while") return {{"cond", "cond_args"}, {"body", "body_args"}};
  return {};
}

// Function f as its call site sees it: each input the node binds to a constant of the
// caller is that constant (so that weights are constants to prepare, as in main).
Graph bind_constants(const Graph& f, const Graph& caller, const GraphNode& node, const std::vector<size_t>& args,
                     std::set<std::string>* bound) {
  Graph local = f;
  local.inputs.clear();
  for (size_t j = 0; j < f.inputs.size(); ++j) {
    auto c = caller.constants.find(node.inputs.at(args.at(j)));
    if (c == caller.constants.end()) {
      local.inputs.push_back(f.inputs[j]);
    } else {
      local.constants[f.inputs[j].first] = c->second;
      bound->insert(f.inputs[j].first);
    }
  }
  return local;
}

void prepare_functions(Graph& caller, std::vector<Graph>& functions, const std::vector<Graph>& originals,
                       const ScheduleOptions& opts, std::set<std::string>& prepared);

// Prepares the function `fn_key` of call node `node` (of `caller`): its inputs bound to
// the caller's constants are constants while it is prepared; the constants preparation
// adds (tables, packed weights) become new inputs of the function, passed by the node
// from new constants of the caller. A function already prepared for another call site
// is prepared again as a copy under a new name.
void prepare_call(Graph& caller, GraphNode& node, const std::string& fn_key, const std::string& args_key,
                  std::vector<Graph>& functions, const std::vector<Graph>& originals, const ScheduleOptions& opts,
                  std::set<std::string>& prepared) {
  const std::string name = node.attrs.at(fn_key).get<std::string>();
  const Graph* original = nullptr;
  for (const Graph& f : originals)
    if (f.name == name) original = &f;
  if (!original) return;  // the executor names the missing function
  std::vector<size_t> args = node.attrs.at(args_key).get<std::vector<size_t>>();
  std::set<std::string> bound;
  Graph local = prepare_graph(bind_constants(*original, caller, node, args, &bound), opts);
  prepare_functions(local, functions, originals, opts, prepared);
  Graph f = *original;
  f.nodes = std::move(local.nodes);
  f.outputs = std::move(local.outputs);
  for (auto& [cname, array] : local.constants) {
    if (bound.count(cname)) continue;  // still passed as the input it was
    const std::string passed = fresh_name(caller, name + "__" + cname);
    f.inputs.push_back({cname, TensorType{array.dtype, array.shape}});
    caller.constants[passed] = std::move(array);
    node.inputs.push_back(passed);
    args.push_back(node.inputs.size() - 1);
  }
  node.attrs[args_key] = args;
  if (prepared.count(name)) {
    std::set<std::string> taken;
    for (const Graph& g : functions) taken.insert(g.name);
    f.name = name + "_1";
    for (int k = 2; taken.count(f.name); ++k) f.name = name + "_" + std::to_string(k);
    node.attrs[fn_key] = f.name;
    functions.push_back(std::move(f));
    return;
  }
  prepared.insert(name);
  for (Graph& g : functions)
    if (g.name == name) g = std::move(f);
}

void prepare_functions(Graph& caller, std::vector<Graph>& functions, const std::vector<Graph>& originals,
                       const ScheduleOptions& opts, std::set<std::string>& prepared) {
  for (GraphNode& node : caller.nodes)
    for (const auto& [fn_key, args_key] : called_functions(node))
      prepare_call(caller, node, fn_key, args_key, functions, originals, opts, prepared);
}

// Prepares the nodes of one graph (main, or a function with its constants bound).
Graph prepare_graph(const Graph& in, const ScheduleOptions& opts) {
  Graph g = in;
  std::set<std::string> maybe_unused;
  const std::set<std::string> pairs_only = triples_over_budget(g, opts);
  auto matmul_options = [&](const std::string& node) {
    ScheduleOptions o = opts.for_node(node);
    if (pairs_only.count(node)) o.pixel_triples = false;
    return o;
  };
  // An add fused into an mve_signed_requant convolution is applied to four lanes at
  // once, where SMMLAR (a scalar DSP instruction) has no vector form.
  auto smmlar_add_for = [&](const std::string& name) {
    const ScheduleOptions& o = opts.for_node(name);
    return o.smmlar_add && !(o.mve && o.mve_signed_requant);
  };
  for (auto& node : g.nodes) {
    if (!node.device.empty()) continue;
    if (node.op == "qlinear_conv" || node.op == "qlinear_matmul") {
      std::string weight = node.inputs.size() > 1 ? node.inputs[1] : "", params = node.inputs.size() > 2 ? node.inputs[2] : "";
      lower_onnx_node(g, node);
      if (node.op != "qlinear_conv" && node.op != "qlinear_matmul") maybe_unused.insert({weight, params});
    }
    if (node.op == "qconv2d" || node.op == "qdense") prepare_matmul_node(g, node, matmul_options(node.name), maybe_unused);
    else if (node.op == "qavg_pool2d" && !node.attrs.contains("schedule") && opts.for_node(node.name).mve)
      node.attrs["schedule"] = {{"mve", true}};  // the window sums four channels a vector (ops/qpool_mve.h)
    else if ((node.op == "qadd" || node.op == "qsub") && !node.attrs.contains("schedule") && smmlar_add_for(node.name))
      node.attrs["schedule"] = {{"smmlar_add", true}};  // three SMMLARs (ops/qadd_smmlar.h)
    else if (node.op == "qsoftmax") prepare_softmax_node(g, node);
    else if (node.op == "qlogistic" || node.op == "qtanh") prepare_activation_node(g, node);
    else if (is_wide_mac_op(node.op)) prepare_wide_mac_node(g, node, opts.for_node(node.name));
  }
  drop_unused_constants(g, maybe_unused);
  // The rewritten nodes are checked again, so a bad attribute is reported against the
  // node as the user wrote it rather than deep inside a kernel builder.
  auto types = g.all_types();
  for (auto& node : g.nodes) {
    if (node.op != "qconv2d" && node.op != "qdense" && node.op != "qsoftmax" && node.op != "qlogistic" &&
        node.op != "qtanh" && !is_wide_mac_op(node.op))
      continue;
    std::vector<TensorType> in_types;
    for (const auto& x : node.inputs) in_types.push_back(types.at(x));
    try {
      find_op(node.op)->infer(in_types, node.attrs);
    } catch (const DiagnosticError& e) {
      Diagnostic d = e.diagnostics().at(0);
      d.message = "node '" + node.name + "' (" + node.op + "): " + d.message;
      throw DiagnosticError(d);
    }
  }
  return g;
}

}  // namespace

Graph prepare_quantized(const Graph& in, const ScheduleOptions& opts) {
  Graph g = prepare_graph(in, opts);
  const std::vector<Graph> originals = g.functions;
  std::set<std::string> prepared;
  prepare_functions(g, g.functions, originals, opts, prepared);
  return g;
}

}  // namespace mtir
