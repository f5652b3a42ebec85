// Patch-based inference (the idea of MCUNetV2): a chain of int8 NHWC convolutions (a
// "stage") runs band by band over the rows of its last layer's output, so the large
// activations inside the stage never exist whole. Each band computes the rows of every
// layer that its output band needs (its receptive field; neighbouring bands recompute
// the overlapping halo) into small buffers of its own, and writes its rows of the
// stage's output. Every layer of a band is the unchanged qconv2d kernel on a shorter
// input with the band's own top and bottom padding, so the fast schedules run as they
// are and the result is bit-exact.
//
// plan_patch_stages chooses the stages: greedily the one (chain, band count) that most
// lowers the whole-tensor bound of the graph's intermediates, among those with the
// fewest recomputed MACs for that bound, while the recomputed MACs stay within
// kMaxRecomputedPercent of the model's MACs; it stops when no stage lowers the bound.
// That is the lowest bound it reaches. Then each stage takes its cheapest choice (fewest
// recomputed MACs, then fewest bands; running whole is cheapest) that keeps the bound
// within the target: the lowest bound, or a workspace budget (-workspace-budget) above
// it. A stage whose bands lower only steps below the model's peak saves no byte, so it
// runs whole or in fewer bands. build_aot runs the chosen stages
// (-disabled-schedules=patch turns it off).
//
// With `overlap` (the patch_overlap schedule) a stage may be one layer, and a stage whose
// input dies in it counts its output beside that input: band k writes its output rows
// only after the bands before it read the input rows above them, so the output fits
// `shift` bytes below the input (bands top down) or above it (bottom up; consecutive
// stages alternate, so a chain of stages does not drift). The memory planner proves and
// places the overlap from the band calls (analysis/call_overlap.h). Stages are then
// compared by their whole step profile of live bytes, highest first (the peak, then the
// next highest step, ...), so each stage lowers its own part of the graph even when the
// peak is elsewhere; at the end each stage takes its cheapest choice as above (one that
// recomputes and carries nothing keeps its bands or runs whole: its shift, patch_stages.cc).
//
// With `residual` (patch_residual) a stage may end in the convolution a residual add
// fuses into, written over the add's other operand: the stage's input (a ResNet block),
// or a shortcut, a one-layer convolution of the stage's input that runs in the stage's
// bands and writes its rows where the add reads them (IC's downsampling blocks: two
// branches, PatchStage::shortcut).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "frontend/graph.h"

namespace mtir {

// By default recomputed MACs may add at most this share (percent) of the model's MACs.
constexpr int64_t kMaxRecomputedPercent = 3;

// One layer of a stage within one band: the input rows it reads (clipped to the tensor),
// the padding rows the band adds above and below them, and the output rows it writes.
// In a carried stage a layer computes only its new rows, [out_begin, out_begin +
// out_rows), below the `carried` rows of its band buffer that the previous band computed
// (moved to the buffer's top before the layer runs). There a later layer's padding rows
// are rows of the buffer it reads, filled with its input zero point (`zero_top`,
// `zero_bottom`, counted in `in_rows`; the same sums as padding), so the first and last
// bands run the middle bands' kernel.
struct PatchLayer {
  int64_t in_begin = 0, in_rows = 0;
  int64_t pad_top = 0, pad_bottom = 0;
  int64_t out_begin = 0, out_rows = 0;
  int64_t carried = 0;
  int64_t zero_top = 0, zero_bottom = 0;
};

struct PatchStage {
  std::vector<size_t> nodes;                    // indices into g.nodes: the chain, in order
  std::vector<std::vector<PatchLayer>> bands;   // [band][layer]
  int64_t recomputed_macs = 0;
  bool bottom_up = false;  // run the last band first (overlap: the output above the input)
  bool carried = false;    // the earlier layers' halo rows carried from band to band
  // The residual add fused into the last layer (residual stages): the stage's output is
  // its output, written over its other operand, the stage's input.
  std::optional<size_t> fused;
  // A residual stage of two branches (IC's downsampling blocks): the add's other operand
  // is this one-layer convolution of the stage's input (a strided 1x1 shortcut). In each
  // band it writes its rows (`shortcut_bands[band]`) into the stage's output just before
  // the last layer, whose fused add reads them there and writes over them in place.
  std::optional<size_t> shortcut;
  std::vector<PatchLayer> shortcut_bands;
};

struct PatchPlan {
  std::vector<PatchStage> stages;
  // The bound of the graph's intermediates (the most bytes live at once, model inputs
  // and outputs aside) with whole tensors, and with the chosen stages.
  int64_t whole_tensor_bound = 0;
  int64_t patched_bound = 0;
  // The lowest bound the search reached and its stages, before each stage took its
  // cheapest choice within the target (the report compares the two).
  int64_t lowest_bound = 0;
  std::vector<PatchStage> lowest_stages;
  // The target the stages had to keep: a workspace budget in bytes, or 0 for the lowest bound.
  int64_t budget = 0;
  int64_t model_macs = 0;
  int64_t recomputed_macs = 0;
};

// Per node, the elementwise node that build_aot fuses into it, as its groups do: the
// first of an elementwise node's producers (in node order) whose output only it reads.
std::vector<std::optional<size_t>> fused_reader_of(const Graph& g);

// Whether node `i` can be a layer of a stage; when not, `why` says so.
bool patchable_conv(const Graph& g, size_t i, std::string* why = nullptr);

// The residual add that fuses into node `i` when `i` can be the last layer of a residual
// stage (a patchable convolution but for that add: a two-operand elementwise op whose
// other operand has its output's type, whose own output nothing else fuses into and is
// no model output); when not, nullopt and `why` says so.
std::optional<size_t> residual_add_of(const Graph& g, size_t i, std::string* why = nullptr);

// The bands of the chain `nodes` split into `bands` bands of its last output's rows.
// With `residual` the chain ends in residual_add_of's convolution, whose add reads the
// chain's input (or, with `shortcut`, that node's output, a one-layer convolution of the
// chain's input that only the add reads), and its earlier layers carry their halos. Throws a user error when the
// chain is not patchable, a band of some layer would read only padding rows or (carried)
// compute no row, or a carried buffer's rows would be moved over themselves
// (plan_patch_stages passes over such band counts).
PatchStage make_patch_stage(const Graph& g, const std::vector<size_t>& nodes, int64_t bands, bool residual = false,
                            std::optional<size_t> shortcut = std::nullopt);

// Every node a stage runs: its chain, its fused add and its shortcut.
std::vector<size_t> stage_members(const PatchStage& stage);

// A stage of one layer cut again so that no band mixes rows whose window reaches into the
// padding (border rows) with interior rows: the border rows are bands of their own and
// the interior runs in equal bands of at most the stage's largest band, so every band
// but the border ones runs one kernel (patch_edge_rows; VWW's first depthwise layer had
// its interior row code three times). Other stages come back as they are.
PatchStage edge_row_bands(const Graph& g, const PatchStage& stage);

// `max_recomputed_percent`: the share of the model's MACs the recomputed halos may add.
// `residual` (with `overlap`): residual stages may be chosen too. `budget` (bytes, 0:
// none): the stages need only keep the bound within it; a user error naming the lowest
// bound reached when that is above it.
// `carry` (with `overlap`): a stage of several layers without a residual add may take
// a choice that carries its halo rows instead of recomputing them (patch_carry).
PatchPlan plan_patch_stages(const Graph& g, int64_t max_recomputed_percent = kMaxRecomputedPercent,
                            bool overlap = false, bool residual = false, int64_t budget = 0, bool carry = false);

// `stage`'s chain (its fused add and shortcut kept) cut into `bands` even bands; none
// when a band of some layer would be empty (the planner passes over such counts). It
// carries its halos when the stage has a residual add, or with `carry`.
std::optional<PatchStage> restage(const Graph& g, const PatchStage& stage, int64_t bands, bool carry = false);

// The whole-tensor bound of the graph's intermediates with `stages` run band by band
// (with `overlap`, each stage's output beside the input that dies in it).
int64_t patched_bound(const Graph& g, const std::vector<PatchStage>& stages, bool overlap = false);

// The live bytes of the graph's intermediates at each step, highest first.
std::vector<int64_t> patched_profile(const Graph& g, const std::vector<PatchStage>& stages, bool overlap);

// The bytes a stage's output must sit below its input when the bands run top down so
// that no band writes input rows a band after it (or, for one layer, itself) still reads.
int64_t overlap_shift(const Graph& g, const PatchStage& stage);

}  // namespace mtir
