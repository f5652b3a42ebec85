// The calls of a patch stage (patch_calls.h).
#include "executor/patch_calls.h"

#include <algorithm>
#include <tuple>

#include "executor/band_loops.h"
#include "executor/control_flow.h"
#include "executor/fuse_elementwise.h"
#include "ir/attrs.h"

namespace mtir {
namespace {

// Rows [row, row + rows) of a one-image NHWC buffer: a contiguous region.
Expr rows_of(const Buffer& b, int64_t row, int64_t rows) {
  std::vector<Expr> start(4, IntImm(DataType::Int(32), 0));
  start[1] = IntImm(DataType::Int(32), row);
  std::vector<Expr> region;
  region.push_back(BufferLoad(b, std::move(start)));
  region.push_back(b->shape[0]);
  region.push_back(IntImm(DataType::Int(32), rows));
  region.push_back(b->shape[2]);
  region.push_back(b->shape[3]);
  return Call(DataType::Handle(), "tir_region", std::move(region));
}

TensorType with_rows(TensorType t, int64_t rows) {
  t.shape[1] = rows;
  return t;
}

class StageCalls {
 public:
  StageCalls(const StageCallContext& cx, const PatchStage& stage)
      : cx_(cx), stage_(stage), types_(cx.g.all_types()), carried_(stage.nodes.size()) {
    if (!stage.carried) return;
    for (size_t l = 0; l + 1 < stage.nodes.size(); ++l) {
      int64_t rows = 0;
      for (const auto& band : stage.bands)
        rows = std::max(rows, band[l + 1].zero_top + band[l].carried + band[l].out_rows + band[l + 1].zero_bottom);
      const GraphNode& node = node_at(l);
      carried_[l] = MakeBuffer(fresh_name(cx.ids.at(node.name) + "_band"), node.type.dtype,
                               shape_exprs(with_rows(node.type, rows)));
      cx.intermediates.push_back(carried_[l]);
    }
  }

  // The bands' calls, interior bands as a loop (band_loops.h).
  std::vector<Stmt> calls(const Buffer& result) {
    std::vector<BandCalls> bands(stage_.bands.size());
    for (size_t k = 0; k < stage_.bands.size(); ++k) {
      std::vector<Stmt>& calls = bands[k].calls;
      const size_t b = stage_.bottom_up ? stage_.bands.size() - 1 - k : k;  // bottom_up: the last band first
      Buffer previous;
      PatchLayer padded;  // the layer's band with its padding rows in `previous`, when they are there
      for (size_t l = 0; l < stage_.nodes.size(); ++l) {
        const PatchLayer band = padded.in_rows > 0 ? padded : stage_.bands[b][l];
        if (band.carried > 0) calls.push_back(move_call(l, b, band.carried));
        if (stage_.carried && band.zero_top > 0) calls.push_back(zero_rows_call(l, carried_[l - 1], 0, band.zero_top));
        if (stage_.carried && band.zero_bottom > 0)
          calls.push_back(zero_rows_call(l, carried_[l - 1], band.in_rows - band.zero_bottom, band.zero_bottom));
        padded = PatchLayer{};
        const GraphNode& node = node_at(l);
        std::vector<Expr> args = {StringImm(kernel(l, band))};
        if (l == 0) args.push_back(rows_of(cx_.buffer_of(node.inputs[0]), band.in_begin, band.in_rows));
        else args.push_back(stage_.carried ? rows_of(carried_[l - 1], 0, band.in_rows) : whole(previous));
        for (size_t k = 1; k < node.inputs.size(); ++k) args.push_back(whole(cx_.buffer_of(node.inputs[k])));
        Attrs attrs;
        if (l + 1 == stage_.nodes.size()) {
          if (stage_.shortcut) {  // its rows in the output, which the add reads there
            calls.push_back(shortcut_call(stage_.shortcut_bands[b], result));
            args.push_back(rows_of(result, band.out_begin, band.out_rows));
          } else if (stage_.fused) {
            attrs[kMayOverwriteAttr] = int64_t{1} << (args.size() - 1);  // the operand, an input of the call
            args.push_back(rows_of(cx_.buffer_of(fused_operand()), band.out_begin, band.out_rows));
          }
          args.push_back(rows_of(result, band.out_begin, band.out_rows));
        } else if (stage_.carried) {
          args.push_back(rows_of(carried_[l], stage_.bands[b][l + 1].zero_top + band.carried, band.out_rows));
        } else {
          padded = zero_padded(l + 1, stage_.bands[b][l + 1]);
          const int64_t top = padded.zero_top, bottom = padded.zero_bottom;
          previous = MakeBuffer(cx_.ids.at(node.name) + "_band" + std::to_string(b), node.type.dtype,
                                shape_exprs(with_rows(node.type, top + band.out_rows + bottom)));
          bands[k].own.push_back(previous);
          args.push_back(rows_of(previous, top, band.out_rows));
          if (top > 0) calls.push_back(zero_rows_call(l + 1, previous, 0, top));
          if (bottom > 0) calls.push_back(zero_rows_call(l + 1, previous, top + band.out_rows, bottom));
        }
        calls.push_back(Evaluate(Call(DataType::Int(32), "call_tir", std::move(args), std::move(attrs))));
      }
    }
    if (!cx_.band_loops) {
      std::vector<Stmt> calls;
      for (BandCalls& band : bands) {
        calls.insert(calls.end(), band.calls.begin(), band.calls.end());
        cx_.intermediates.insert(cx_.intermediates.end(), band.own.begin(), band.own.end());
      }
      return calls;
    }
    return roll_band_calls(bands, cx_.intermediates);
  }

 private:
  const GraphNode& node_at(size_t l) const { return cx_.g.nodes[stage_.nodes[l]]; }

  std::string fresh_name(std::string name) {
    while (cx_.taken.count(name)) name += "_";
    cx_.taken.insert(name);
    return name;
  }

  // The add's operand that is not the last layer's output.
  const std::string& fused_operand() const {
    const GraphNode& add = cx_.g.nodes[*stage_.fused];
    return add.inputs[add.inputs[0] == node_at(stage_.nodes.size() - 1).name ? 1 : 0];
  }

  // Copies the last `rows` rows of layer l's buffer as band b - 1 left it to its top.
  Stmt move_call(size_t l, size_t b, int64_t rows) {
    const PatchLayer& before = stage_.bands[b - 1][l];
    const int64_t filled = stage_.bands[b - 1][l + 1].zero_top + before.carried + before.out_rows;
    std::string& fname = moves_[{l, rows}];
    const GraphNode& node = node_at(l);
    if (fname.empty()) {
      fname = fresh_name(cx_.prefix + cx_.ids.at(node.name) + "_carry" + std::to_string(moves_.size() - 1));
      const TensorType t = with_rows(node.type, rows);
      cx_.aot.module.functions.emplace_back(fname, find_op("reshape")->build(fname, {t}, t, {{"newshape", t.shape}}));
      cx_.aot.band_kernel_of[fname] = node.name;
    }
    return Evaluate(Call(DataType::Int(32), "call_tir",
                         {StringImm(fname), rows_of(carried_[l], filled - rows, rows), rows_of(carried_[l], 0, rows)}));
  }

  // Layer l's band (of a stage that does not carry) with its padding rows as zero-point rows
  // of the band buffer it reads (zero_top, zero_bottom, counted in in_rows), when a band
  // without padding reads as many rows: then it runs that band's kernel, and its own
  // (a copy of the row code for the border rows) is not made (patch_edge_rows). Else a
  // band of no rows.
  PatchLayer zero_padded(size_t l, const PatchLayer& band) const {
    if (!cx_.edge_rows || band.pad_top + band.pad_bottom == 0) return PatchLayer{};
    PatchLayer p = band;
    p.zero_top = band.pad_top, p.zero_bottom = band.pad_bottom;
    p.in_rows += band.pad_top + band.pad_bottom;
    p.pad_top = p.pad_bottom = 0;
    for (const auto& other : stage_.bands)
      if (other[l].pad_top + other[l].pad_bottom == 0 && other[l].in_rows == p.in_rows) return p;
    return PatchLayer{};
  }

  // Fills `rows` rows of `buffer`, which layer l reads, from `row` on with its input zero
  // point: the padding rows of its band.
  Stmt zero_rows_call(size_t l, const Buffer& buffer, int64_t row, int64_t rows) {
    std::string& fname = zeros_[{l, rows}];
    const GraphNode& reader = node_at(l);
    const GraphNode& node = node_at(l - 1);
    if (fname.empty()) {
      fname = fresh_name(cx_.prefix + cx_.ids.at(node.name) + "_zero_rows" + std::to_string(zeros_.size() - 1));
      const TensorType t = with_rows(node.type, rows);
      const nlohmann::json attrs = {{"shape", t.shape}, {"value", reader.attrs.value("input_zero_point", 0.0)},
                                    {"dtype", t.dtype.str()}};
      cx_.aot.module.functions.emplace_back(fname, find_op("full")->build(fname, {}, t, attrs));
      cx_.aot.band_kernel_of[fname] = reader.name;
    }
    return Evaluate(Call(DataType::Int(32), "call_tir", {StringImm(fname), rows_of(buffer, row, rows)}));
  }

  // The shortcut's call on band rows `band`: its rows of the stage's output.
  Stmt shortcut_call(const PatchLayer& band, const Buffer& result) {
    const GraphNode& node = cx_.g.nodes[*stage_.shortcut];
    std::vector<Expr> args = {StringImm(kernel(stage_.nodes.size(), band))};
    args.push_back(rows_of(cx_.buffer_of(node.inputs[0]), band.in_begin, band.in_rows));
    for (size_t k = 1; k < node.inputs.size(); ++k) args.push_back(whole(cx_.buffer_of(node.inputs[k])));
    args.push_back(rows_of(result, band.out_begin, band.out_rows));
    return Evaluate(Call(DataType::Int(32), "call_tir", std::move(args)));
  }

  // The op's kernel on a band's shapes and padding (with the residual add fused, for a
  // residual stage's last layer). Layer nodes.size() is the shortcut.
  std::string kernel(size_t l, const PatchLayer& band) {
    std::string& fname = kernels_[{l, band.in_rows, band.pad_top, band.pad_bottom}];
    if (!fname.empty()) return fname;
    const GraphNode& node = l < stage_.nodes.size() ? node_at(l) : cx_.g.nodes[*stage_.shortcut];
    fname = fresh_name(cx_.prefix + cx_.ids.at(node.name) + "_band" + std::to_string(variants_[l]++));
    std::vector<TensorType> in_types;
    for (const auto& in : node.inputs) in_types.push_back(types_.at(in));
    in_types[0].shape[1] = band.in_rows;
    const TensorType out_type = with_rows(node.type, band.out_rows);
    nlohmann::json attrs = node.attrs;
    std::vector<int64_t> padding = {0, 0, 0, 0};
    if (attrs.contains("padding")) padding = attrs["padding"].get<std::vector<int64_t>>();
    padding[0] = band.pad_top, padding[2] = band.pad_bottom;
    attrs["padding"] = padding;
    try {
      PrimFunc f = find_op(node.op)->build(fname, in_types, out_type, attrs);
      if (l + 1 == stage_.nodes.size() && stage_.fused) f = fused_add(fname, f, node, band.out_rows);
      cx_.aot.module.functions.emplace_back(fname, f);
    } catch (const DiagnosticError& e) {
      Diagnostic d = e.diagnostics().at(0);
      d.message = "node '" + node.name + "' (" + node.op + "), band rows " + std::to_string(band.out_begin) + ": " + d.message;
      throw DiagnosticError(d);
    }
    if (!cx_.aot.kernel_of.count(node.name)) cx_.aot.kernel_of[node.name] = fname;
    cx_.aot.band_kernel_of[fname] = node.name;
    if (stage_.fused && l + 1 == stage_.nodes.size()) cx_.aot.kernel_of[cx_.g.nodes[*stage_.fused].name] = fname;
    return fname;
  }

  PrimFunc fused_add(const std::string& fname, const PrimFunc& conv, const GraphNode& node, int64_t rows) {
    const GraphNode& add = cx_.g.nodes[*stage_.fused];
    std::vector<TensorType> in_types;
    for (const auto& in : add.inputs) in_types.push_back(with_rows(types_.at(in), rows));
    const size_t input = add.inputs[0] == node.name ? 0 : 1;
    PrimFunc f = find_op(add.op)->build(fname + "_add", in_types, with_rows(add.type, rows), add.attrs);
    PrimFunc fused = fuse_elementwise(fname, conv, f, input);
    if (!fused) user_error(Span{}, "patch stage: '" + add.name + "' does not fuse into the bands of '" + node.name + "'");
    if (!stage_.shortcut) return fused;
    // The shortcut's rows are the output's own: the call passes the same rows as the
    // operand and the output. call_tir's check (analysis/call_tir_check.h) accepts that
    // only when the kernel reads each operand element where it writes it.
    const size_t operand = fused->param_buffers.size() - 2;
    auto shared = std::make_shared<PrimFuncNode>(*fused);
    shared->attrs[kAliasedParamsAttr] = std::to_string(operand) + "," + std::to_string(operand + 1);
    return shared;
  }

  const StageCallContext& cx_;
  const PatchStage& stage_;
  const std::map<std::string, TensorType> types_;
  std::vector<Buffer> carried_;  // per layer but the last: its one buffer, when carried
  std::map<std::tuple<size_t, int64_t, int64_t, int64_t>, std::string> kernels_;
  std::map<std::pair<size_t, int64_t>, std::string> moves_, zeros_;
  std::map<size_t, int> variants_;  // per layer
};

}  // namespace

std::vector<Stmt> patch_stage_calls(const StageCallContext& cx, const PatchStage& stage, const Buffer& result) {
  if (cx.edge_rows) return StageCalls(cx, edge_row_bands(cx.g, stage)).calls(result);
  return StageCalls(cx, stage).calls(result);
}

}  // namespace mtir
