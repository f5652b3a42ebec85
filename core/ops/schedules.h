// The schedules of the int8 kernels (qconv2d, qdense; docs/quantization.md), each
// switchable so its value can be measured: a target key (-disabled-schedules=...) and
// the CLI's --disable-schedule write them, prepare_quantized copies them into each
// node's attrs["schedule"], and the op builders (and, for `hoist`, the lowering
// pipeline) follow them.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace mtir {

struct ScheduleOptions {
  bool fold_zero_point = true;  // input zero point folded into the bias at compile time
  bool block = true;            // im2col of two pixels, 2x2 register blocking
  bool unroll = true;           // reduction unrolled by four, depthwise windows fully
  bool hoist = true;            // hoist_loop_invariants in the lowering pipeline
  bool smlad = false;           // Cortex-M DSP dual MAC; on only for CPUs that have it
  bool sxtb16 = false;          // with smlad: weights stay int8, widened by SXTB16 (half the flash)
  bool interleave = true;       // with smlad and block: a channel pair's weight words interleaved
  bool fold_output_zero_point = true;  // per-channel tables: the output zero point added in the rounding term
  bool few_channels = true;     // with smlad: convolutions of 1-4 input channels gather interior pixels unchecked
  bool depthwise_tile = true;   // depthwise: a row of up to five outputs per pass, each input and weight loaded once
  bool depthwise_border_tiles = true;  // with depthwise_tile: border rows and tiles unrolled at constant positions (off: one checked loop, less code)
  bool smlal_requant = true;    // per-channel tables: the requantization's rounding in one 64-bit multiply-add
  bool smmlar_requant = false;  // one SMMLAR an output (DSP): per-channel tables (with smlal_requant) and per-tensor multipliers; on only for CPUs that have it
  bool merge_kernels = true;    // merge_kernels in the lowering pipeline: kernels differing in constants share code
  bool patch = true;            // chains of int8 convolutions band by band where it lowers the memory bound
  bool dense_chunks = true;     // with smlad: a batch-1 dense gathers its input a chunk at a time where that lowers the stack
  bool mve = false;             // Helium (MVE) int8 dot products, 16 lanes (ops/qconv_mve.cc); on only for CPUs that have it
  bool mve_depthwise = true;    // with mve: depthwise convolutions four channels a vector (ops/qconv_mve_depthwise.cc; off: depthwise_tile's scalar tiles)
  bool mve_short_requant = true;  // with mve: pointwise and dense layers of reductions up to 32 requantize four channels a vector (no smmlar_requant table)
  bool mve_pair_requant = true;  // with mve: ReLU convolutions and dense layers requantize each 2x2 tile (two pixels, two channels) as one int32x4 (no smmlar_requant table)
  bool mve_direct = true;  // with mve: convolutions whose input channels are a multiple of 16 read the windows of their interior pixels in place, no im2col column (ops/qconv_mve.cc)
  bool mve_signed_requant = true;  // with mve: convolutions without a ReLU bound requantize each 2x2 tile as one int32x4 with TFLite's rounding, and a fused elementwise consumer (a residual ADD) runs in int32x4 too
  bool patch_overlap = true;    // with patch: stages of one layer too, each stage's output a few rows beside its dying input
  bool pixel_triples = true;    // with smlad and block: the matrix-product tile three pixels by two channels (3x2)
  bool dsp_no_early_scheduling = true;  // C with smlad kernels: GCC for a DSP core without MVE schedules only after register allocation
  bool smmlar_add = false;      // int8 ADD/SUB (alone or fused into a convolution): each rounding one SMMLAR (DSP); on only for CPUs that have it
  bool rolled_leftovers = true;  // with block: the pixels left over after a layer's tiles (from kTriplesOnlyRows pixels on) reduce one step a pass (no unrolled copy)
  bool pixel_triples_stack = true;  // with pixel_triples: a layer keeps the 3x2 tile only where its instructions pay for the stack its three-pixel scratch adds (frontend/pixel_triples_budget.h)
  bool pixel_triples_code = true;   // with pixel_triples: a layer keeps the 3x2 tile only where its instructions pay for the code it adds (frontend/pixel_triples_budget.h)
  bool mve_depthwise_padded = true;  // with mve_depthwise: a padded layer's input copied into a scratch bordered with its zero point, the kernel one interior loop (off: border tiles at constant positions, more code)
  bool patch_residual = true;   // with patch_overlap: stages ending in the convolution a residual add fuses into, halos carried, the output over the residual
  bool word_gather = true;      // with sxtb16: convolutions of 4k input channels (NHWC) gather four int8 values a word (one load, two SXTB16), the weights packed to match
  bool patch_edge_rows = true;  // with patch_overlap: a one-layer stage's border rows are bands of their own, its interior equal bands (one kernel)
  bool band_loops = true;       // with patch: a patch stage's interior bands one loop in the AOT main, their region starts affine in the band (executor/band_loops.h)
  bool pair_loads = true;       // with smlad, without sxtb16: a batch-1 dense (and a convolution under word_gather) loads its int16 weight words and input words two at a time (one LDRD each)
  bool short_pairs = true;      // with sxtb16, word_gather and pair_loads: convolutions of a reduction of at most kShortPairsMaxReduction values keep int16 weights (twice their bytes), no SXTB16 of weights, paired loads
  bool patch_carry = true;      // with patch_overlap: a stage of several layers without a residual add carries its earlier layers' halo rows from band to band (top down) instead of recomputing them, where the bound allows
  bool pair_records = true;     // with short_pairs: each channel pair's bias, int16 weights and requantization table one record of the weight input, read through one pointer (ops/qconv_gemm.cc)
  bool few_channel_pairs = true;  // with few_channels and pair_loads: a first layer's tile loads its gathered and weight words two at a time (one LDRD each); on for the C backend only

  // Not a schedule: the patch planner's workspace budget in bytes (0: its lowest bound),
  // the target's -workspace-budget, carried with the schedules to the AOT executor.
  int64_t workspace_budget = 0;

  // Per-layer choices (a schedule record, frontend/schedule_records.h): node name ->
  // schedule -> on or off, over the fields above, for that node only (prepare_quantized).
  std::map<std::string, std::map<std::string, bool>> per_node;

  bool get(const std::string& name) const;
  void set(const std::string& name, bool on);
  // "block,smlad": the names switched off, in the fixed order of schedule_list().
  std::string disabled() const;
  // These options with the per-layer choices of `node` applied (per_node is not copied).
  ScheduleOptions for_node(const std::string& node) const;
};

// The schedules that work on the whole model (marked so in schedules.cc's table): a
// schedule record cannot set them per layer.
bool is_model_schedule(const std::string& name);
// Whether `name` is in schedule_list().
bool is_schedule(const std::string& name);

// Every schedule name, in the fixed order of the table in schedules.cc.
const std::vector<std::string>& schedule_list();
// The same names joined by ", " (for messages and the CLI's help).
std::string schedule_names();
// Switches off each name of a comma-separated list ("" switches nothing off); throws a
// user error naming an unknown schedule. `where` prefixes the message.
void disable_schedules(ScheduleOptions& s, const std::string& list, const std::string& where);
// The int32 words per output channel of a weight packed for smlad, for a reduction of
// length k: four int8 values per word with sxtb16, two int16 values otherwise. Shared by
// prepare_quantized, which packs, and the kernels, which read the packing.
inline int64_t packed_weight_words(int64_t k, bool sxtb16) { return sxtb16 ? (k + 3) / 4 : (k + 1) / 2; }
// The reduction steps one pass of the matrix-product core's main loop covers (ops/
// qconv_gemm.cc), for `whole` steps in all: interleaved, eight, or the largest divisor of
// `whole` from seven down to four, so no unrolled remainder doubles the code (k = 144:
// six steps a pass instead of eight and four more after the loop).
inline int64_t gemm_unroll_factor(bool unroll, bool interleave, bool sxtb16, int64_t whole) {
  if (!unroll) return 1;
  if (!interleave) return sxtb16 ? 2 : 4;
  for (int64_t f = 8; f >= 4; --f)
    if (whole % f == 0) return f;
  return 8;
}
// From this many output pixels on, the matrix-product core runs the one or two pixels
// left over after its three-pixel tiles one by one (ops/qconv_gemm.cc's pixel_tiles).
constexpr int64_t kTriplesOnlyRows = 24;
// short_pairs: the longest reduction whose convolution keeps int16 weights (IC's and
// VWW's 1x1 layers of 16 and 32 input channels; from 64 on the int8 tile is as fast).
constexpr int64_t kShortPairsMaxReduction = 32;
// pair_records: channel pair b's record in the weight input, [O / 2, pair_record_words]:
// the pair's two biases, its 2 * words interleaved weight words (packed_weight_index),
// then each channel's three requantization table columns. One pointer, stepped once a
// channel pair, reaches all a 3x2 tile reads (prepare_quantized lays it out).
constexpr int64_t kRecordBiasWords = 2, kRecordTableColumns = 3;
inline int64_t pair_record_words(int64_t words) { return kRecordBiasWords + 2 * words + 2 * kRecordTableColumns; }
// Convolutions with at most this many input channels (and a receptive field of at most
// kFewChannelsMaxReduction values) take the few_channels schedule.
constexpr int64_t kFewChannelsMaxInput = 4, kFewChannelsMaxReduction = 128;
// Where word j of output channel c lies in the packed weight of `channels` rows of
// `words` words. With `interleave` the rows of each channel pair (2b, 2b + 1) alternate
// word by word, so the 2x2 tile of the kernels reads both through one pointer; an odd
// last channel keeps its row.
inline int64_t packed_weight_index(int64_t c, int64_t j, int64_t channels, int64_t words, bool interleave) {
  if (!interleave || c >= channels - channels % 2) return c * words + j;
  return (c - c % 2) * words + 2 * j + c % 2;
}

// The depthwise weight under mve (ops/qconv_mve_depthwise.cc): shape [1, KH, KW, C], its
// channels in blocks of four, each block's taps in order ([C / 4, KH * KW, 4]), the last
// C % 4 channels a block of their own ([KH * KW, C % 4]), so one pointer reaches every
// tap of four channels. Where channel c's weight of tap (kh * KW + kw) lies; prepare_quantized
// lays it out, the kernel reads it.
constexpr int64_t kMveDepthwiseBlock = 4;
inline int64_t mve_depthwise_weight_index(int64_t c, int64_t tap, int64_t channels, int64_t taps) {
  const int64_t whole = channels / kMveDepthwiseBlock * kMveDepthwiseBlock;
  if (c < whole) return (c / kMveDepthwiseBlock * taps + tap) * kMveDepthwiseBlock + c % kMveDepthwiseBlock;
  return whole * taps + tap * (channels - whole) + (c - whole);
}

}  // namespace mtir
