// The live-byte profile of patch stages on integer tensor ids (patch_profile.h).
#include "executor/patch_profile.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <string>

#include "ops/ops.h"

namespace mtir {
namespace {

constexpr int64_t kAlignment = 16;  // the planner's default workspace alignment

int64_t aligned(int64_t n) { return (n + kAlignment - 1) / kAlignment * kAlignment; }

int64_t bytes_of(const TensorType& t) { return t.num_elements() * t.dtype.bytes(); }

// The bytes of one row of an NHWC tensor, 0 for other ranks.
int64_t row_bytes_of(const TensorType& t) {
  return t.shape.size() == 4 ? t.shape[2] * t.shape[3] * t.dtype.bytes() : 0;
}

// A stage's input (a root tensor id) and output, the shift between them, its steps.
struct StageOverlap {
  int in = -1, out = -1;
  int64_t shift = 0;
  int first = 0, last = 0;  // the stage's steps
};

// Per node, its stage and position in the chain, or (-1, -1); the fused add and the
// shortcut run in the stage's last layer (position -1).
std::vector<std::pair<int, int>> stage_positions(const std::vector<const PatchStage*>& all, size_t nodes) {
  std::vector<std::pair<int, int>> stage_of(nodes, {-1, -1});
  for (size_t s = 0; s < all.size(); ++s) {
    for (size_t l = 0; l < all[s]->nodes.size(); ++l) stage_of[all[s]->nodes[l]] = {int(s), int(l)};
    if (all[s]->fused) stage_of[*all[s]->fused] = {int(s), -1};
    if (all[s]->shortcut) stage_of[*all[s]->shortcut] = {int(s), -1};
  }
  return stage_of;
}

}  // namespace

int64_t overlap_shift_of_rows(const PatchStage& stage, int64_t in_row, int64_t out_row) {
  int64_t shift = 0;
  for (size_t b = 0; b < stage.bands.size(); ++b) {
    // The first later read: this band's own when the stage is one layer (one call reads
    // and writes), else the next band's.
    const size_t reader = stage.nodes.size() == 1 ? b : b + 1;
    int64_t read = reader < stage.bands.size() ? stage.bands[reader].front().in_begin : -1;
    // A shortcut reads the input in the band's own call that writes the output first.
    if (stage.shortcut) read = read < 0 ? stage.shortcut_bands[b].in_begin : std::min(read, stage.shortcut_bands[b].in_begin);
    if (read < 0) continue;
    const PatchLayer& out = stage.bands[b].back();
    shift = std::max(shift, (out.out_begin + out.out_rows) * out_row - read * in_row);
  }
  return aligned(shift);
}

PatchProfiler::PatchProfiler(const Graph& g, bool overlap) : overlap_(overlap) {
  std::set<std::string> outside;  // not intermediates: model inputs, outputs, constants, state
  for (const auto& [name, type] : g.inputs) outside.insert(name);
  for (const auto& out : g.outputs) outside.insert(out);
  for (const auto& [name, array] : g.constants) outside.insert(name);
  for (const auto& [name, array] : g.state) outside.insert(name);
  // A view (reshape, flatten) is its input's memory: its uses count for the input.
  std::map<std::string, std::string> alias;
  const std::set<std::string> outputs(g.outputs.begin(), g.outputs.end());
  for (const GraphNode& node : g.nodes) {
    const OpDef* op = find_op(node.op);
    if (op && op->sharing == OutputSharing::kView && node.device.empty() && !outputs.count(node.name) &&
        node.inputs.size() == 1)
      alias[node.name] = alias.count(node.inputs[0]) ? alias[node.inputs[0]] : node.inputs[0];
  }
  std::map<std::string, int> ids;
  auto id_of = [&](const std::string& name) {
    auto a = alias.find(name);
    const std::string& root = a == alias.end() ? name : a->second;
    if (outside.count(root)) return -1;
    auto [it, fresh] = ids.emplace(root, static_cast<int>(sizes_.size()));
    if (fresh) sizes_.push_back(bytes_of(g.type_of(root)));
    return it->second;
  };
  for (const GraphNode& node : g.nodes) {
    NodeUse use;
    use.view = alias.count(node.name) > 0;
    if (!use.view) {
      for (const auto& in : node.inputs) use.inputs.push_back(id_of(in));
      use.output = id_of(node.name);
      if (!node.inputs.empty()) {
        use.first_input = use.inputs[0];
        use.in_row_bytes = row_bytes_of(g.type_of(node.inputs[0]));
      }
      use.row_bytes = row_bytes_of(node.type);
    }
    nodes_.push_back(std::move(use));
  }
  const std::vector<std::optional<size_t>> fused = fused_reader_of(g);
  std::vector<std::vector<size_t>> runs_before(g.nodes.size());  // an op -> the node fused into it
  for (size_t k = 0; k < fused.size(); ++k) {
    if (!fused[k]) continue;
    runs_before[*fused[k]].push_back(k);
    // One kernel: the fused node's output never exists, and its inputs are read while
    // the reader's output is written.
    NodeUse& reader = nodes_[*fused[k]];
    for (int& in : reader.inputs)
      if (in == nodes_[k].output) in = -1;
    reader.fused_inputs.insert(reader.fused_inputs.end(), nodes_[k].inputs.begin(), nodes_[k].inputs.end());
    nodes_[k].output = -1;
  }
  std::function<void(size_t)> run = [&](size_t i) {
    for (size_t k : runs_before[i]) run(k);
    order_.push_back(i);
  };
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (!fused[i]) run(i);
}

std::vector<StepSpan> PatchProfiler::lifetimes(const std::vector<PatchStage>& stages, const PatchStage* extra) const {
  std::vector<const PatchStage*> all;
  for (const PatchStage& s : stages) all.push_back(&s);
  if (extra) all.push_back(extra);
  const std::vector<std::pair<int, int>> stage_of = stage_positions(all, nodes_.size());

  std::vector<int> first(sizes_.size(), -1), last(sizes_.size(), -1);
  std::vector<StepSpan> spans;  // the band buffers, then what overlaps add
  std::vector<StageOverlap> overlaps;
  int step = 0;
  auto use = [&](int id) {
    if (id < 0) return;
    if (first[id] < 0) first[id] = step;
    last[id] = step;
  };
  for (size_t i : order_) {
    const NodeUse& node = nodes_[i];
    if (node.view) continue;
    const auto [s, position] = stage_of[i];
    if (s < 0) {
      for (int in : node.inputs) use(in);
      for (int in : node.fused_inputs) use(in);
      use(node.output);
      ++step;
      continue;
    }
    const PatchStage& stage = *all[s];
    if (position < 0 || size_t(position) + 1 != stage.nodes.size()) continue;  // the stage runs at its last node
    const NodeUse& front = nodes_[stage.nodes.front()];
    const int output = stage.fused ? nodes_[*stage.fused].output : node.output;
    const int stage_first = step;
    std::vector<int64_t> carried_rows(stage.nodes.size(), 0);  // a carried layer's one buffer
    for (size_t b = 0; b < stage.bands.size(); ++b) {
      for (size_t l = 0; l < stage.nodes.size(); ++l) {
        const NodeUse& layer = nodes_[stage.nodes[l]];
        const PatchLayer& band = stage.bands[b][l];
        if (l == 0) use(layer.first_input);
        if (l + 1 == stage.nodes.size()) {
          use(output);
          // The add's other operand, at the band's rows; a shortcut's rows are the output's.
          const int shortcut = stage.shortcut ? nodes_[*stage.shortcut].output : -1;
          if (stage.shortcut) use(front.first_input);
          if (stage.fused)
            for (int in : nodes_[*stage.fused].inputs)
              if (in != layer.output && in != shortcut) use(in);
        } else if (stage.carried) {
          const PatchLayer& next = stage.bands[b][l + 1];
          carried_rows[l] = std::max(carried_rows[l], next.zero_top + band.carried + band.out_rows + next.zero_bottom);
        } else {
          // A band buffer is written by layer l and read by layer l + 1, at the next step.
          spans.push_back({band.out_rows * layer.row_bytes, step, step + 1});
        }
        ++step;
      }
    }
    for (size_t l = 0; l < stage.nodes.size(); ++l)
      if (carried_rows[l] > 0) spans.push_back({carried_rows[l] * nodes_[stage.nodes[l]].row_bytes, stage_first, step - 1});
    const int64_t shift = overlap_shift_of_rows(stage, front.in_row_bytes, node.row_bytes);
    // The fused add reads its operand where it writes: only in place (shift 0) is proven;
    // a shortcut's operand is the output itself, so any shift is.
    if (overlap_ && (!stage.fused || stage.shortcut || shift == 0))
      overlaps.push_back({front.first_input, output, shift, stage_first, step - 1});
  }
  // An input that dies in its stage: until then the output adds only what sticks out of
  // it (the shift beside it, or an output larger than input and shift).
  const std::vector<int> produced = first;  // each tensor's own first step
  for (const StageOverlap& o : overlaps) {
    if (o.in < 0 || o.out < 0 || first[o.in] < 0 || first[o.out] < 0) continue;
    // The input must die in the stage: a residual read after it keeps its bytes.
    if (last[o.in] >= last[o.out] || last[o.in] > o.last || produced[o.in] >= o.first) continue;
    const int64_t in_size = aligned(sizes_[o.in]);
    const int64_t extra_bytes = std::max<int64_t>(0, std::max(in_size + o.shift, aligned(sizes_[o.out])) - in_size);
    spans.push_back({extra_bytes, first[o.out], last[o.in]});
    first[o.out] = last[o.in] + 1;
  }
  for (size_t id = 0; id < sizes_.size(); ++id)
    if (first[id] >= 0) spans.push_back({sizes_[id], first[id], last[id]});
  return spans;
}

std::vector<int64_t> PatchProfiler::profile(const std::vector<PatchStage>& stages, const PatchStage* extra) const {
  const std::vector<StepSpan> spans = lifetimes(stages, extra);
  int end = 0;
  for (const StepSpan& t : spans) end = std::max({end, t.first, t.last + 1});
  // Net change of the live bytes at each step where some tensor starts or ends.
  std::vector<int64_t> delta(size_t(end) + 1, 0);
  std::vector<char> changes(size_t(end) + 1, 0);
  for (const StepSpan& t : spans) {
    const int64_t size = aligned(t.size);
    delta[t.first] += size, changes[t.first] = 1;
    delta[t.last + 1] -= size, changes[t.last + 1] = 1;
  }
  std::vector<int64_t> live;
  int64_t sum = 0;
  for (int step = 0; step <= end; ++step) {
    if (!changes[step]) continue;
    sum += delta[step];
    live.push_back(sum);
  }
  std::sort(live.rbegin(), live.rend());
  return live;
}

int64_t PatchProfiler::bound(const std::vector<PatchStage>& stages, const PatchStage* extra) const {
  const std::vector<int64_t> live = profile(stages, extra);
  return live.empty() ? 0 : std::max<int64_t>(0, live.front());
}

}  // namespace mtir
