// Choosing the stages of patch-based inference and their bands (patch_stages.h).
#include "executor/patch_stages.h"

#include "executor/patch_profile.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <map>
#include <set>
#include <tuple>

#include "ops/macs.h"
#include "ops/ops.h"
#include "support/diagnostic.h"

namespace mtir {
namespace {

using json = nlohmann::json;

// A stage has at most this many layers and its output at most this many bands: the
// halo grows with every layer and the recomputation with every band.
constexpr size_t kMaxStageLayers = 8;
// With overlap a stage's output sits beside its input: short stages (no halo to
// recompute) lower the peak as well, and a long one takes the budget others need.
constexpr size_t kMaxOverlapStageLayers = 2;
constexpr int64_t kMaxBands = 32;

// The row geometry of one NHWC convolution (the columns and channels stay whole).
struct ConvRows {
  int64_t h = 0, oh = 0;                     // input and output rows
  int64_t kh = 0, sh = 1, dh = 1, pt = 0;    // kernel rows, stride, dilation, top padding
  int64_t macs_per_row = 0;                  // of one output row
};

std::vector<int64_t> ints_or(const json& attrs, const char* key, std::vector<int64_t> fallback) {
  auto it = attrs.find(key);
  if (it == attrs.end() || !it->is_array()) return fallback;
  std::vector<int64_t> v;
  for (const auto& x : *it) {
    if (!x.is_number_integer()) return fallback;
    v.push_back(x.get<int64_t>());
  }
  return v.size() == fallback.size() ? v : fallback;
}

// The weight's OHWI shape: the int8 constant's, or the "weight_shape" attribute of a
// weight packed in int32 words.
std::vector<int64_t> weight_shape(const Graph& g, const GraphNode& node) {
  if (node.inputs.size() < 2) return {};
  const TensorType w = g.type_of(node.inputs[1]);
  if (w.dtype == DataType::Int(8)) return w.shape;
  return ints_or(node.attrs, "weight_shape", {0, 0, 0, 0});
}

int64_t node_macs(const Graph& g, const GraphNode& node) {
  std::vector<TensorType> inputs;
  for (const auto& in : node.inputs) inputs.push_back(g.type_of(in));
  return nominal_macs(node.op, inputs, node.type, node.attrs);
}

ConvRows conv_rows(const Graph& g, const GraphNode& node) {
  ConvRows r;
  const TensorType in = g.type_of(node.inputs[0]);
  const std::vector<int64_t> w = weight_shape(g, node);
  r.h = in.shape[1];
  r.oh = node.type.shape[1];
  r.kh = w[1];
  r.sh = ints_or(node.attrs, "strides", {1, 1})[0];
  r.dh = ints_or(node.attrs, "dilation", {1, 1})[0];
  r.pt = ints_or(node.attrs, "padding", {0, 0, 0, 0})[0];
  r.macs_per_row = node_macs(g, node) / (node.type.shape[0] * r.oh);
  return r;
}

}  // namespace

std::vector<std::optional<size_t>> fused_reader_of(const Graph& g) {
  std::map<std::string, size_t> producer, readers;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    producer[g.nodes[i].name] = i;
    for (const auto& in : g.nodes[i].inputs) ++readers[in];
  }
  const std::set<std::string> outputs(g.outputs.begin(), g.outputs.end());
  std::vector<std::optional<size_t>> fused(g.nodes.size());
  for (size_t j = 0; j < g.nodes.size(); ++j) {
    const OpDef* op = find_op(g.nodes[j].op);
    if (!op || op->sharing != OutputSharing::kElementwise || !g.nodes[j].device.empty()) continue;
    std::optional<size_t> first;
    for (const auto& in : g.nodes[j].inputs) {
      auto p = producer.find(in);
      if (p == producer.end() || outputs.count(in) || readers[in] != 1) continue;
      const OpDef* producer_op = find_op(g.nodes[p->second].op);
      if (!g.nodes[p->second].device.empty() || (producer_op && producer_op->sharing == OutputSharing::kView)) continue;
      if (!first || p->second < *first) first = p->second;
    }
    if (first) fused[*first] = j;
  }
  return fused;
}

namespace {

// Why node `i` cannot run in bands as a plain convolution (its fused reader aside), or "".
std::string conv_refusal(const Graph& g, size_t i) {
  const GraphNode& node = g.nodes.at(i);
  if (node.op != "qconv2d") return "op '" + node.op + "' is not qconv2d";
  if (!node.device.empty()) return "it runs on device '" + node.device + "'";
  if (node.attrs.value("layout", std::string("NHWC")) != "NHWC") return "its layout is not NHWC";
  if (node.inputs.size() < 2) return "it has no weight";
  const TensorType in = g.type_of(node.inputs[0]);
  if (in.shape.size() != 4 || in.shape[0] != 1 || node.type.shape.size() != 4 || node.type.shape[0] != 1)
    return "its data is not one NHWC image";
  const std::vector<int64_t> w = weight_shape(g, node);
  if (w.size() != 4 || w[1] < 1 || w[2] < 1 || w[3] < 1) return "its weight shape is unknown";
  const ConvRows r = conv_rows(g, node);
  if (r.sh < 1 || r.dh < 1 || r.pt < 0) return "its strides, dilation or padding are not plain";
  return "";
}

}  // namespace

bool patchable_conv(const Graph& g, size_t i, std::string* why) {
  std::string reason = conv_refusal(g, i);
  // A stage layer runs as the plain op: the elementwise op would fall out of its kernel
  // (and with it the in-place write over its other input), unless the layer ends a
  // residual stage (residual_add_of). A residual's producer that the op does not fuse
  // into may be a stage.
  if (reason.empty())
    if (const std::optional<size_t> reader = fused_reader_of(g)[i])
      reason = "elementwise op '" + g.nodes[*reader].name + "' fuses into it (and writes over its other input)";
  if (why) *why = reason;
  return reason.empty();
}

std::optional<size_t> residual_add_of(const Graph& g, size_t i, std::string* why) {
  auto refuse = [&](const std::string& reason) {
    if (why) *why = reason;
    return std::nullopt;
  };
  const std::string reason = conv_refusal(g, i);
  if (!reason.empty()) return refuse(reason);
  const std::vector<std::optional<size_t>> fused = fused_reader_of(g);
  const std::optional<size_t> reader = fused[i];
  if (!reader) return refuse("no elementwise op fuses into it");
  const GraphNode& add = g.nodes[*reader];
  if (add.inputs.size() != 2) return refuse("'" + add.name + "' does not have two operands");
  const std::string& other = add.inputs[add.inputs[0] == g.nodes[i].name ? 1 : 0];
  auto same = [](const TensorType& a, const TensorType& b) { return a.dtype == b.dtype && a.shape == b.shape; };
  if (other == g.nodes[i].name || !same(g.type_of(other), add.type) || !same(add.type, g.nodes[i].type))
    return refuse("the other operand of '" + add.name + "' does not have its output's type");
  for (const auto& out : g.outputs)
    if (out == add.name) return refuse("'" + add.name + "' is a model output");
  // build_aot would fuse the add's own reader into the same kernel: the stage keeps one add.
  if (fused[*reader]) return refuse("an elementwise op fuses into '" + add.name + "' too");
  if (why) why->clear();
  return reader;
}

namespace {

// `bands` bands of `rows` rows, as even as they go.
std::vector<int64_t> even_cuts(int64_t rows, int64_t bands) {
  std::vector<int64_t> cuts;
  for (int64_t b = 0; b <= bands; ++b) cuts.push_back(b * rows / bands);
  return cuts;
}

// Why node `s` cannot be the shortcut of a residual stage whose add is `add` and whose
// input is `input` (a one-layer convolution of the input whose output only the add
// reads), or "".
std::string shortcut_refusal(const Graph& g, size_t add, size_t s, const std::string& input) {
  std::string why;
  const GraphNode& node = g.nodes.at(s);
  if (!patchable_conv(g, s, &why)) return "node '" + node.name + "' cannot run in bands: " + why;
  const std::vector<std::string>& operands = g.nodes[add].inputs;
  if (std::find(operands.begin(), operands.end(), node.name) == operands.end())
    return "'" + g.nodes[add].name + "' does not add '" + node.name + "'";
  if (node.inputs[0] != input) return "node '" + node.name + "' does not read the stage's input '" + input + "'";
  if (std::find(g.outputs.begin(), g.outputs.end(), node.name) != g.outputs.end())
    return "node '" + node.name + "' is a model output";
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (i != add && std::find(g.nodes[i].inputs.begin(), g.nodes[i].inputs.end(), node.name) != g.nodes[i].inputs.end())
      return "node '" + g.nodes[i].name + "' reads '" + node.name + "' too";
  return "";
}

// The bands of a patchable chain, or nullopt with the band and layer in `empty` when a
// band of some layer reads only padding rows (a 1x1 convolution with padding 1 has such
// rows): its kernel would have an input of no rows. With `carried` the layers but the
// last compute only the rows no band before computed, below the rows they keep (carry)
// from the previous band's buffer; nullopt too when a layer would compute no row or the
// kept rows would be moved over themselves (fewer than twice as many in the buffer).
// `rows`: conv_rows of each node of the chain.
// `cuts`: the bands' first output rows of the last layer, then its row count.
std::optional<PatchStage> band_geometry(const std::vector<ConvRows>& rows, const std::vector<size_t>& nodes,
                                        const std::vector<int64_t>& cuts, std::pair<int64_t, size_t>* empty,
                                        bool carried = false) {
  const int64_t bands = static_cast<int64_t>(cuts.size()) - 1;
  PatchStage stage;
  stage.nodes = nodes;
  stage.carried = carried;
  std::vector<int64_t> computed(nodes.size(), 0);
  // Carried: the previous band's buffer, its first row and the rows it filled (the next
  // layer's zero-point rows above them included: the move reads below those).
  std::vector<int64_t> done(nodes.size(), 0), buffer_begin(nodes.size(), 0), filled(nodes.size(), 0);
  for (int64_t b = 0; b < bands; ++b) {
    std::vector<PatchLayer> layers(nodes.size());
    int64_t begin = cuts[b], end = cuts[b + 1];
    for (size_t l = nodes.size(); l-- > 0;) {
      const ConvRows& r = rows[l];
      PatchLayer& p = layers[l];
      const int64_t fresh = carried && l + 1 < nodes.size() ? std::max(begin, done[l]) : begin;
      p.carried = fresh - begin;
      const bool bad_carry = p.carried > 0 && (begin < buffer_begin[l] || filled[l] < 2 * p.carried);
      // Output rows [fresh, end) read input rows [lo, hi], padding included.
      const int64_t lo = fresh * r.sh - r.pt, hi = (end - 1) * r.sh - r.pt + (r.kh - 1) * r.dh;
      p.out_begin = fresh, p.out_rows = end - fresh;
      p.in_begin = std::max<int64_t>(lo, 0);
      const int64_t in_end = std::min(hi, r.h - 1) + 1;
      p.in_rows = in_end - p.in_begin;
      p.pad_top = p.in_begin - lo;
      p.pad_bottom = hi - (in_end - 1);
      if (p.in_rows < 1 || p.out_rows < 1 || bad_carry) {
        *empty = {b, l};
        return std::nullopt;
      }
      computed[l] += p.out_rows;
      done[l] = end, buffer_begin[l] = begin;
      filled[l] = (l + 1 < nodes.size() ? layers[l + 1].zero_top : 0) + p.carried + p.out_rows;
      begin = p.in_begin, end = in_end;
      if (carried && l > 0) {  // padding rows as zero-point rows of the carried buffer
        p.zero_top = p.pad_top, p.zero_bottom = p.pad_bottom;
        p.in_rows += p.pad_top + p.pad_bottom;
        p.pad_top = p.pad_bottom = 0;
      }
    }
    stage.bands.push_back(std::move(layers));
  }
  for (size_t l = 0; l < nodes.size(); ++l) stage.recomputed_macs += (computed[l] - rows[l].oh) * rows[l].macs_per_row;
  return stage;
}

// The shortcut `node` (row geometry `rows`) of a residual stage, on the stage's output
// bands; false when a band of it would read only padding rows.
bool add_shortcut_bands(const ConvRows& rows, size_t node, PatchStage& stage) {
  std::pair<int64_t, size_t> empty;
  const std::optional<PatchStage> own =
      band_geometry({rows}, {node}, even_cuts(rows.oh, static_cast<int64_t>(stage.bands.size())), &empty);
  if (!own) return false;
  stage.shortcut = node;
  stage.shortcut_bands.clear();
  for (const auto& band : own->bands) stage.shortcut_bands.push_back(band[0]);
  return true;
}

}  // namespace

PatchStage make_patch_stage(const Graph& g, const std::vector<size_t>& nodes, int64_t bands, bool residual,
                            std::optional<size_t> shortcut) {
  if (nodes.empty()) user_error(Span{}, "patch stage: no layers");
  std::string why;
  std::optional<size_t> add;
  for (size_t k = 0; k < nodes.size(); ++k) {
    const bool ends_residual = residual && k + 1 == nodes.size();
    if (ends_residual ? !(add = residual_add_of(g, nodes[k], &why)) : !patchable_conv(g, nodes[k], &why))
      user_error(Span{}, "patch stage: node '" + g.nodes.at(nodes[k]).name + "' cannot run in bands: " + why);
    if (k > 0 && g.nodes[nodes[k]].inputs[0] != g.nodes[nodes[k - 1]].name)
      user_error(Span{}, "patch stage: node '" + g.nodes[nodes[k]].name + "' does not read '" +
                             g.nodes[nodes[k - 1]].name + "'");
  }
  const std::string& input = g.nodes[nodes.front()].inputs[0];
  if (shortcut && !add) user_error(Span{}, "patch stage: a shortcut needs a residual stage");
  if (shortcut) {
    const std::string why_not = shortcut_refusal(g, *add, *shortcut, input);
    if (!why_not.empty()) user_error(Span{}, "patch stage: shortcut: " + why_not);
  } else if (add &&
             std::find(g.nodes[*add].inputs.begin(), g.nodes[*add].inputs.end(), input) == g.nodes[*add].inputs.end()) {
    user_error(Span{}, "patch stage: '" + g.nodes[*add].name + "' does not add the stage's input '" + input + "'");
  }
  const int64_t out_rows = conv_rows(g, g.nodes[nodes.back()]).oh;
  if (bands < 1 || bands > out_rows)
    user_error(Span{}, "patch stage: " + std::to_string(bands) + " bands of " + std::to_string(out_rows) + " rows");
  std::pair<int64_t, size_t> empty;
  std::vector<ConvRows> rows;
  for (size_t i : nodes) rows.push_back(conv_rows(g, g.nodes[i]));
  std::optional<PatchStage> stage = band_geometry(rows, nodes, even_cuts(out_rows, bands), &empty, residual);
  if (!stage)
    user_error(Span{}, "patch stage: band " + std::to_string(empty.first) + " of node '" +
                           g.nodes[nodes[empty.second]].name +
                           "' reads no input rows, computes no new row, or would move its carried rows over themselves");
  stage->fused = add;
  if (shortcut && !add_shortcut_bands(conv_rows(g, g.nodes[*shortcut]), *shortcut, *stage))
    user_error(Span{}, "patch stage: a band of shortcut '" + g.nodes[*shortcut].name + "' reads no input rows");
  return *stage;
}

std::optional<PatchStage> restage(const Graph& g, const PatchStage& stage, int64_t bands, bool carry) {
  std::vector<ConvRows> rows;
  for (size_t i : stage.nodes) rows.push_back(conv_rows(g, g.nodes[i]));
  if (bands < 1 || bands > rows.back().oh) return std::nullopt;
  std::pair<int64_t, size_t> empty;
  std::optional<PatchStage> other = band_geometry(rows, stage.nodes, even_cuts(rows.back().oh, bands), &empty,
                                                      carry || stage.fused.has_value());
  if (!other) return other;
  other->fused = stage.fused;
  if (stage.shortcut && !add_shortcut_bands(conv_rows(g, g.nodes[*stage.shortcut]), *stage.shortcut, *other))
    return std::nullopt;
  return other;
}

PatchStage edge_row_bands(const Graph& g, const PatchStage& stage) {
  if (stage.nodes.size() != 1 || stage.fused || stage.shortcut || stage.carried || stage.bands.size() < 2)
    return stage;
  const ConvRows r = conv_rows(g, g.nodes[stage.nodes[0]]);
  // Output rows [top, bottom) read no padding row.
  const int64_t top = std::min(r.oh, (r.pt + r.sh - 1) / r.sh);
  const int64_t last_inside = r.h - 1 + r.pt - (r.kh - 1) * r.dh;  // the last start of a window inside the input
  const int64_t bottom = last_inside < 0 ? top : std::clamp(last_inside / r.sh + 1, top, r.oh);
  int64_t most = 0;
  for (const auto& band : stage.bands) most = std::max(most, band[0].out_rows);
  // The border rows in bands of their own; the interior in bands of `rows` (the last
  // band takes what is left).
  auto recut = [&](int64_t rows) -> std::optional<PatchStage> {
    std::vector<int64_t> cuts = {0};
    auto cut = [&cuts](int64_t begin, int64_t end, int64_t step) {
      for (int64_t c = begin; c < end; c += step)
        if (c > cuts.back()) cuts.push_back(c);
    };
    cut(0, top, most), cut(top, bottom, rows), cut(bottom, r.oh, most);
    cuts.push_back(r.oh);
    std::pair<int64_t, size_t> empty;
    std::optional<PatchStage> s = band_geometry({r}, stage.nodes, cuts, &empty);
    if (s) s->bottom_up = stage.bottom_up;
    return s;
  };
  // The copies of a row's code the bands' kernels carry (one kernel per band geometry,
  // patch_calls.h): each border row's own, and one loop over the interior rows.
  auto row_codes = [&](const PatchStage& s) {
    std::map<std::tuple<int64_t, int64_t, int64_t>, int64_t> kinds;
    for (const auto& band : s.bands) {
      const PatchLayer& p = band[0];
      const int64_t inside = std::max<int64_t>(0, std::min(p.out_begin + p.out_rows, bottom) - std::max(p.out_begin, top));
      kinds[{p.in_rows, p.pad_top, p.pad_bottom}] = p.out_rows - inside + (inside > 0 ? 1 : 0);
    }
    int64_t n = 0;
    for (const auto& kind : kinds) n += kind.second;
    return std::make_pair(n, s.bands.size());
  };
  // The fewest row codes, then the fewest bands (calls): the stage as planned, its
  // interior in bands of its largest band, or in the largest equal bands no larger; never
  // a cut that needs the output further from the input (more memory: IC's 1x1 stride-2
  // shortcut in bands of one row needed 512 bytes more).
  PatchStage best = stage;
  int64_t equal = std::max<int64_t>(std::min(most, bottom - top), 1);
  while (equal > 1 && (bottom - top) % equal != 0) --equal;
  for (int64_t rows : {most, equal}) {
    std::optional<PatchStage> s = recut(rows);
    if (s && row_codes(*s) < row_codes(best) && overlap_shift(g, *s) <= overlap_shift(g, stage))
      best = std::move(*s);
  }
  return best;
}

std::vector<size_t> stage_members(const PatchStage& stage) {
  std::vector<size_t> members = stage.nodes;
  if (stage.fused) members.push_back(*stage.fused);
  if (stage.shortcut) members.push_back(*stage.shortcut);
  return members;
}

int64_t overlap_shift(const Graph& g, const PatchStage& stage) {
  const GraphNode& first = g.nodes[stage.nodes.front()];
  const GraphNode& last = g.nodes[stage.nodes.back()];
  const TensorType in = g.type_of(first.inputs[0]);
  const int64_t in_row = in.shape[2] * in.shape[3] * in.dtype.bytes();
  const int64_t out_row = last.type.shape[2] * last.type.shape[3] * last.type.dtype.bytes();
  return overlap_shift_of_rows(stage, in_row, out_row);
}

int64_t patched_bound(const Graph& g, const std::vector<PatchStage>& stages, bool overlap) {
  return PatchProfiler(g, overlap).bound(stages);
}

std::vector<int64_t> patched_profile(const Graph& g, const std::vector<PatchStage>& stages, bool overlap) {
  return PatchProfiler(g, overlap).profile(stages);
}

namespace {

// Top down and bottom up in turn along a chain of stages (one's output the next's
// input), so their overlaps alternate sides instead of drifting one way.
void alternate_directions(const Graph& g, std::vector<PatchStage>& stages) {
  std::sort(stages.begin(), stages.end(), [](const PatchStage& a, const PatchStage& b) { return a.nodes[0] < b.nodes[0]; });
  std::map<std::string, bool> bottom_up_of;  // a stage's output -> its direction
  for (PatchStage& s : stages) {
    auto producer = bottom_up_of.find(g.nodes[s.nodes.front()].inputs[0]);
    // A residual or carried stage runs top down: its carried rows and in-place writes assume it.
    s.bottom_up = !s.fused && !s.carried && producer != bottom_up_of.end() && !producer->second;
    bottom_up_of[g.nodes[s.nodes.back()].name] = s.bottom_up;
  }
}

// What a stage's choice costs: the MACs it recomputes, then its bands (each calls every
// layer once more and, carried, moves the halo rows). Running whole costs nothing.
std::pair<int64_t, int64_t> cost_of(const PatchStage* stage) {
  if (!stage) return {0, 0};
  return {stage->recomputed_macs, static_cast<int64_t>(stage->bands.size())};
}

// The choices of a stage cheaper than its own, cheapest first (null: run it whole). A
// stage that recomputes nothing and carries nothing (one layer beside its dying input,
// or 1x1 layers) keeps its bands or runs whole: fewer bands save a call each but widen
// the shift between its input and output, which the profile counts only pairwise, and
// plan_memory's placement of chains of such overlaps then misses the bound (VWW: its
// pool 21,120 -> 21,888 bytes for the same bound of 20,736).
// With `carry` a stage of several layers without a residual add may also carry its halos
// (patch_carry: VWW's 1x1 layer before its stride-2 depthwise one recomputed a row in three).
std::vector<std::optional<PatchStage>> cheaper_choices(const Graph& g, const PatchStage& stage, bool carry) {
  std::vector<std::optional<PatchStage>> choices = {std::nullopt};
  if (!stage.carried && stage.recomputed_macs == 0) return choices;
  const bool may_carry = carry && !stage.fused && stage.nodes.size() > 1;
  for (int64_t bands = 2; bands <= kMaxBands; ++bands) {
    for (bool carried : {false, true}) {
      if (carried && !may_carry) continue;
      std::optional<PatchStage> other = restage(g, stage, bands, carried);
      if (other && cost_of(&*other) < cost_of(&stage)) choices.push_back(std::move(other));
    }
  }
  std::stable_sort(choices.begin(), choices.end(), [](const auto& a, const auto& b) {
    return cost_of(a ? &*a : nullptr) < cost_of(b ? &*b : nullptr);
  });
  return choices;
}

// Each stage's cheapest choice that keeps the plan's bound within `target`, taken one at
// a time, the largest saving first: a stage whose bands lower only steps below the
// model's peak runs whole or in fewer bands (IC's carried blocks: 16 bands of 2 rows
// cost 0.5 % more instructions than 8 of 4 for the same peak).
void keep_cheapest(const Graph& g, const PatchProfiler& profiler, PatchPlan& plan, int64_t target, bool carry) {
  for (;;) {
    std::optional<std::pair<size_t, std::optional<PatchStage>>> best;
    std::pair<int64_t, int64_t> best_saving = {0, 0};
    for (size_t s = 0; s < plan.stages.size(); ++s) {
      const std::pair<int64_t, int64_t> now = cost_of(&plan.stages[s]);
      for (std::optional<PatchStage>& choice : cheaper_choices(g, plan.stages[s], carry)) {
        std::vector<PatchStage> trial = plan.stages;
        if (choice) trial[s] = *choice;
        else trial.erase(trial.begin() + static_cast<std::ptrdiff_t>(s));
        if (profiler.bound(trial) > target) continue;
        const std::pair<int64_t, int64_t> cost = cost_of(choice ? &*choice : nullptr);
        const std::pair<int64_t, int64_t> saving = {now.first - cost.first, now.second - cost.second};
        if (saving > best_saving) best_saving = saving, best = {s, std::move(choice)};
        break;
      }
    }
    if (!best) break;
    if (best->second) plan.stages[best->first] = std::move(*best->second);
    else plan.stages.erase(plan.stages.begin() + static_cast<std::ptrdiff_t>(best->first));
  }
  plan.recomputed_macs = 0;
  for (const PatchStage& s : plan.stages) plan.recomputed_macs += s.recomputed_macs;
  plan.patched_bound = profiler.bound(plan.stages);
}

// One greedy round's search over every start x chain x band count. What does not depend
// on the round (which nodes may be layers, their row geometry, each chain's next layer)
// is computed once per graph.
class StageSearch {
 public:
  StageSearch(const Graph& g, const PatchProfiler& profiler, bool overlap, bool residual, int64_t budget)
      : g_(g), profiler_(profiler), overlap_(overlap), budget_(budget), patchable_(g.nodes.size()),
        rows_(g.nodes.size()), next_(g.nodes.size()), residual_next_(g.nodes.size()), shortcut_of_(g.nodes.size()) {
    std::vector<std::optional<size_t>> add(g.nodes.size());
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      patchable_[i] = patchable_conv(g, i);
      if (overlap && residual && !patchable_[i]) add[i] = residual_add_of(g, i);
      if (patchable_[i] || add[i]) rows_[i] = conv_rows(g, g.nodes[i]);
    }
    // The next layer of a chain: the one reader of a node's output, reading it as data.
    std::map<std::string, std::vector<size_t>> readers;
    for (size_t i = 0; i < g.nodes.size(); ++i)
      for (const auto& in : g.nodes[i].inputs) readers[in].push_back(i);
    const std::set<std::string> outputs(g.outputs.begin(), g.outputs.end());
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      auto r = readers.find(g.nodes[i].name);
      if (outputs.count(g.nodes[i].name) || r == readers.end() || r->second.size() != 1) continue;
      const size_t j = r->second[0];
      if (g.nodes[j].inputs[0] != g.nodes[i].name) continue;
      if (patchable_[j]) next_[i] = j;
      if (add[j]) residual_next_[i] = {j, *add[j]};
    }
    // Two branches: the add's other operand a one-layer convolution of the stage's input.
    std::map<std::string, size_t> producer;
    for (size_t i = 0; i < g.nodes.size(); ++i) producer[g.nodes[i].name] = i;
    for (size_t j = 0; j < g.nodes.size(); ++j) {
      if (!add[j]) continue;
      const GraphNode& a = g.nodes[*add[j]];
      auto p = producer.find(a.inputs[a.inputs[0] == g.nodes[j].name ? 1 : 0]);
      if (p != producer.end() && shortcut_refusal(g, *add[j], p->second, g.nodes[p->second].inputs[0]).empty())
        shortcut_of_[j] = p->second;
    }
  }

  // The stage (chain, band count) that most lowers `profile` (without overlap: its peak)
  // within the budget, the fewest recomputed MACs among equals; none when none lowers it.
  std::optional<PatchStage> best_stage(const PatchPlan& plan, std::vector<int64_t> best_profile,
                                       const std::vector<bool>& used) const {
    std::optional<PatchStage> best;
    const size_t max_layers = overlap_ ? kMaxOverlapStageLayers : kMaxStageLayers;
    for (size_t start = 0; start < g_.nodes.size(); ++start) {
      if (!patchable_[start] || used[start]) continue;
      std::vector<size_t> chain = {start};
      std::vector<ConvRows> chain_rows = {rows_[start]};
      while (chain.size() <= max_layers) {
        if (overlap_ || chain.size() > 1) try_bands(plan, chain, chain_rows, best, best_profile);
        try_residual(plan, chain, chain_rows, used, best, best_profile);
        const std::optional<size_t> n = next_[chain.back()];
        if (!n || used[*n] || chain.size() == max_layers) break;
        chain.push_back(*n);
        chain_rows.push_back(rows_[*n]);
      }
    }
    return best;
  }

 private:
  // The chain ended by the convolution a residual add of the chain's input fuses into.
  void try_residual(const PatchPlan& plan, const std::vector<size_t>& chain, const std::vector<ConvRows>& chain_rows,
                    const std::vector<bool>& used, std::optional<PatchStage>& best,
                    std::vector<int64_t>& best_profile) const {
    const std::optional<std::pair<size_t, size_t>> next = residual_next_[chain.back()];
    if (!next || used[next->first]) return;
    const std::vector<std::string>& operands = g_.nodes[next->second].inputs;
    const std::string& input = g_.nodes[chain.front()].inputs[0];
    std::optional<size_t> shortcut = shortcut_of_[next->first];
    if (shortcut && (used[*shortcut] || g_.nodes[*shortcut].inputs[0] != input)) shortcut.reset();
    if (!shortcut && std::find(operands.begin(), operands.end(), input) == operands.end()) return;
    std::vector<size_t> nodes = chain;
    nodes.push_back(next->first);
    std::vector<ConvRows> rows = chain_rows;
    rows.push_back(rows_[next->first]);
    try_bands(plan, nodes, rows, best, best_profile, next->second, shortcut);
  }

  void try_bands(const PatchPlan& plan, const std::vector<size_t>& chain, const std::vector<ConvRows>& chain_rows,
                 std::optional<PatchStage>& best, std::vector<int64_t>& best_profile,
                 std::optional<size_t> add = std::nullopt, std::optional<size_t> shortcut = std::nullopt) const {
    const int64_t rows = g_.nodes[chain.back()].type.shape[1];
    for (int64_t bands = 2; bands <= std::min(rows, kMaxBands); ++bands) {
      // The chain was checked link by link: only a band of padding rows (or, carried, a
      // band with no new row or a move over itself) can fail.
      std::pair<int64_t, size_t> empty;
      std::optional<PatchStage> candidate = band_geometry(chain_rows, chain, even_cuts(rows, bands), &empty, add.has_value());
      if (!candidate) continue;
      PatchStage& stage = *candidate;
      stage.fused = add;
      if (shortcut && !add_shortcut_bands(rows_[*shortcut], *shortcut, stage)) continue;
      if (plan.recomputed_macs + stage.recomputed_macs > budget_) break;
      std::vector<int64_t> p = profiler_.profile(plan.stages, &stage);
      // Without overlap only the peak counts, as before the profile.
      if (!overlap_) p.resize(std::min<size_t>(p.size(), 1)), best_profile.resize(std::min<size_t>(best_profile.size(), 1));
      if (p < best_profile || (best && p == best_profile && stage.recomputed_macs < best->recomputed_macs)) {
        best = std::move(stage);
        best_profile = std::move(p);
      }
    }
  }

  const Graph& g_;
  const PatchProfiler& profiler_;
  bool overlap_;
  int64_t budget_;
  std::vector<bool> patchable_;
  std::vector<ConvRows> rows_;                // of the patchable nodes
  std::vector<std::optional<size_t>> next_;  // the next layer of a chain
  // The convolution that can end a residual stage after a node, and its add.
  std::vector<std::optional<std::pair<size_t, size_t>>> residual_next_;
  // Per such convolution, the shortcut its add reads (a convolution that may be one).
  std::vector<std::optional<size_t>> shortcut_of_;
};

}  // namespace

PatchPlan plan_patch_stages(const Graph& g, int64_t max_recomputed_percent, bool overlap, bool residual, int64_t budget,
                            bool carry) {
  const PatchProfiler profiler(g, overlap);
  PatchPlan plan;
  plan.whole_tensor_bound = plan.patched_bound = profiler.bound({});
  for (const GraphNode& node : g.nodes) plan.model_macs += node_macs(g, node);
  const StageSearch search(g, profiler, overlap, residual, plan.model_macs * max_recomputed_percent / 100);
  std::vector<bool> used(g.nodes.size(), false);
  std::vector<int64_t> profile = profiler.profile({});
  for (;;) {
    std::optional<PatchStage> best = search.best_stage(plan, profile, used);
    if (!best) break;
    for (size_t i : stage_members(*best)) used[i] = true;
    plan.recomputed_macs += best->recomputed_macs;
    plan.stages.push_back(std::move(*best));
    plan.patched_bound = profiler.bound(plan.stages);
    profile = profiler.profile(plan.stages);
  }
  plan.lowest_bound = plan.patched_bound;
  plan.lowest_stages = plan.stages;
  plan.budget = budget;
  if (budget > 0 && plan.lowest_bound > budget)
    user_error(Span{}, "-workspace-budget=" + std::to_string(budget) + ": the lowest bound the patch planner reaches is " +
                           std::to_string(plan.lowest_bound) + " bytes (whole tensors: " +
                           std::to_string(plan.whole_tensor_bound) + " bytes, recomputed halos within " +
                           std::to_string(max_recomputed_percent) + "% of the model's MACs); nothing lower fits");
  const int64_t target = budget > 0 ? budget : plan.lowest_bound;
  if (plan.whole_tensor_bound <= target) plan.stages.clear();
  keep_cheapest(g, profiler, plan, target, overlap && carry);
  if (overlap) alternate_directions(g, plan.stages);
  return plan;
}

}  // namespace mtir
