#include "frontend/pixel_triples_budget.h"

#include <algorithm>
#include <vector>

namespace mtir {
namespace {

// One convolution through the matrix-product core: its im2col scratch and its 3x2 tile.
struct TripleCosts {
  std::string node;
  int64_t pair_bytes = 0, triple_bytes = 0;  // the stack scratch of the 2- and 3-pixel tiles
  int64_t saved = 0, code_bytes = 0;         // triples_saved_instructions, triples_code_bytes
  bool triples = false;   // the schedule gives it pixel_triples
  bool recorded = false;  // a schedule record chose pixel_triples for it
};

// The costs of node `n` under its schedules `o`, or false when it is no convolution of
// the core (dense layers gather no scratch; depthwise and grouped layers have their own
// kernels).
bool conv_costs(const Graph& g, const GraphNode& n, const ScheduleOptions& o, TripleCosts* c) {
  if (!n.device.empty() || n.op != "qconv2d" || !o.smlad || n.type.shape.size() != 4) return false;
  if (n.attrs.value("groups", int64_t{1}) != 1) return false;
  auto w = g.constants.find(n.inputs.size() > 1 ? n.inputs[1] : "");
  if (w == g.constants.end() || w->second.dtype != DataType::Int(8) || w->second.shape.size() != 4) return false;
  const std::vector<int64_t>& shape = n.type.shape;  // NHWC, or NCHW
  const bool nchw = n.attrs.value("layout", std::string("NHWC")) == "NCHW";
  const int64_t channels = nchw ? shape[1] : shape[3];
  const int64_t pixels = nchw ? shape[2] * shape[3] : shape[1] * shape[2];
  if (channels <= 0 || pixels <= 0) return false;
  const int64_t k = w->second.num_elements() / channels, words = (k + 1) / 2;  // int16 pairs a pixel
  // prepare_quantized's few_channels layers keep int16 weight pairs (no sxtb16).
  const bool few = o.few_channels && !nchw && w->second.shape[3] <= kFewChannelsMaxInput && k <= kFewChannelsMaxReduction;
  const bool quads = o.sxtb16 && !few;
  const int64_t whole = quads ? words / 2 : words, factor = gemm_unroll_factor(o.unroll, o.interleave, quads, whole);
  const int64_t steps = (whole >= factor ? factor : 0) + whole % factor + (quads && words % 2 ? 1 : 0);
  c->node = n.name;
  c->pair_bytes = std::min<int64_t>(o.block ? 2 : 1, pixels) * words * 4;
  c->triple_bytes = std::min<int64_t>(3, pixels) * words * 4;
  c->saved = triples_saved_instructions(shape[0] * pixels * channels * k, quads);
  c->code_bytes = triples_code_bytes(steps, quads);
  c->triples = o.block && o.pixel_triples && pixels >= 3;
  return true;
}

// pixel_triples_stack: the candidates whose scratch sizes do not pay for the stack peak
// they raise above `staying`, the deepest scratch that stays whatever is decided.
void over_stack(std::vector<TripleCosts> candidates, int64_t staying, std::set<std::string>* off) {
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const TripleCosts& a, const TripleCosts& b) { return a.triple_bytes > b.triple_bytes; });
  for (size_t i = 0; i < candidates.size();) {
    const int64_t level = candidates[i].triple_bytes;
    int64_t saved = 0;
    size_t j = i;
    for (; j < candidates.size() && candidates[j].triple_bytes == level; ++j) saved += candidates[j].saved;
    const int64_t below = std::max(staying, j < candidates.size() ? candidates[j].triple_bytes : 0);
    if (level <= below || saved >= kInstructionsPerStackByte * (level - below)) break;
    for (; i < j; ++i) off->insert(candidates[i].node);
  }
}

}  // namespace

std::set<std::string> triples_over_budget(const Graph& g, const ScheduleOptions& opts) {
  std::set<std::string> off;
  if (opts.mve || !(opts.pixel_triples_stack || opts.pixel_triples_code)) return off;
  int64_t staying = 0;
  std::vector<TripleCosts> candidates;
  for (const GraphNode& n : g.nodes) {
    TripleCosts c;
    if (!conv_costs(g, n, opts.for_node(n.name), &c)) continue;
    auto record = opts.per_node.find(n.name);
    c.recorded = record != opts.per_node.end() && record->second.count("pixel_triples");
    const bool candidate = c.triples && !c.recorded;
    if (candidate && opts.pixel_triples_code && c.saved < kInstructionsPerCodeByte * c.code_bytes) {
      off.insert(c.node);
      staying = std::max(staying, c.pair_bytes);
    } else if (candidate) {
      staying = std::max(staying, c.pair_bytes);
      candidates.push_back(c);
    } else {
      staying = std::max(staying, c.triples ? c.triple_bytes : c.pair_bytes);
    }
  }
  if (opts.pixel_triples_stack) over_stack(candidates, staying, &off);
  return off;
}

}  // namespace mtir
