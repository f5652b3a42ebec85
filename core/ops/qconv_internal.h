// The private interface of the int8 convolution and dense kernels, shared by their
// three files: qconv.cc (the qconv2d and qdense ops, the dense and pointwise
// convolutions through the matrix-product core), qconv_depthwise.cc (the depthwise
// tiles and the one-output-at-a-time loop nests) and qconv_gemm.cc (attributes,
// requantization and the shared matrix-product core). The schedules and the two
// requantization rules are described at the top of qconv.cc. Nothing here is for other
// files: the ops are reached through the registry (register_qconv_ops).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ops/op_util.h"
#include "ops/quant_util.h"
#include "ops/schedules.h"

namespace mtir {
namespace ops {
namespace qconv_impl {

using json = nlohmann::json;

const DataType kU8 = DataType::UInt(8);

// The requantization rule and the element types it implies.
struct Rule {
  bool onnx = false;
  DataType data = kI8, out = kI8;
  // onnx: (M, s) shared by every channel, or absent when the table input holds them
  // ([O, 2]: M and s; [O, 3]: onnx_high_word_form's M', t and 2^(t-1)).
  bool uniform = false;
  int64_t m = 0, s = 1;
};

// Reads "requant" and, for the tflite rule, the scale attributes (read_quant_attrs);
// for the onnx rule the zero points in the range of their types, "output_dtype",
// "activation" ("none" or "relu": the output is at least its zero point) and
// "onnx_multiplier" [M, s] (M in [0, 2^24), s in [1, 62]).
Rule read_rule(const std::string& op, const AttrReader& r, QuantAttrs* q, int64_t out_channels);
// The data's type: int8, or uint8 under the onnx rule; its zero point must fit it.
void check_data(const std::string& op, const std::vector<TensorType>& in, Rule& rule, const QuantAttrs& q);

struct Schedule {
  bool fold_zero_point = false, block = false, unroll = false, smlad = false, sxtb16 = false, interleave = false,
       fold_output_zero_point = false, few_channels = false, depthwise_tile = false, depthwise_border_tiles = false,
       smlal_requant = false, smmlar_requant = false, dense_chunks = false, mve = false, mve_short_requant = false,
       mve_pair_requant = false, mve_signed_requant = false, mve_direct = false, pixel_triples = false,
       rolled_leftovers = false, mve_depthwise_padded = false, word_gather = false, pair_loads = false,
       pair_records = false;
  // Packed weight words per output channel for a reduction of length k.
  int64_t weight_words(int64_t k) const { return smlad ? packed_weight_words(k, sxtb16) : k; }
};

Schedule read_schedule(const std::string& op, const AttrReader& r);

// The inputs of both ops after the data: the weight (int8, or int16 pairs packed in
// int32 words by prepare_quantized for smlad), then an optional int32 bias [O] and an
// optional int32 requantization table [O, 2] or [O, 3] (see requantize_channel).
struct QInputs {
  bool bias = false, table = false, packed = false;
  bool records = false;  // pair_records: the bias and the table lie in the weight input's records
  int64_t table_columns = 0;
};

// The kernel's buffer parameters, in the order of the inputs, then the output.
struct QParams {
  Buffer data, weight, bias, table, out;
};
QParams declare_params(FuncBuilder& fb, const std::vector<TensorType>& in, const TensorType& out, const QInputs& q,
                       int64_t out_channels);
QInputs classify_inputs(const std::string& op, const std::vector<TensorType>& in, int64_t out_channels);
// The schedule and the weight's packing agree: packed (int32) exactly when smlad, in
// the shape prepare_quantized gives it for a reduction of length k.
void check_packing(const std::string& op, const Schedule& s, const QInputs& q, const QuantAttrs& attrs,
                   const std::vector<int64_t>& shape, int64_t rows, int64_t k);

// The requantized value of accumulator `acc` for output channel `oc` (qconv_gemm.cc says
// how each form computes it).
Expr requantize_channel(const QuantAttrs& q, const Rule& rule, const Buffer& table, int64_t columns, Expr acc, Expr oc,
                        bool zero_point_folded, bool smlal = false, bool smmlar = false,
                        const std::function<Expr(int64_t)>& column = nullptr);
// Per-channel multipliers that differ need the table input (prepare_quantized adds it).
void check_requant_table(const std::string& op, const QuantAttrs& q, const Rule& rule, const QInputs& in);

// ---- geometry ------------------------------------------------------------------

struct QConv {
  int64_t n, h, w, c;
  int64_t o, kh, kw, cg, groups;
  int64_t sh, sw, dh, dw, pt, pl, pb, pr;
  int64_t oh, ow;
  bool nchw = false;  // layout "NCHW" (the weight is OHWI in both layouts)
  QInputs inputs;
  QuantAttrs q;
  Rule rule;
  Schedule sched;
  int64_t k() const { return kh * kw * cg; }
  // The data (and output) index of image n, row y, column x, channel c.
  std::vector<Expr> at(Expr n, Expr y, Expr x, Expr c) const {
    return nchw ? std::vector<Expr>{n, c, y, x} : std::vector<Expr>{n, y, x, c};
  }
};

// An input element of qconv2d as the reduction sees it (int32): the zero point
// subtracted unless it is folded; where `cond` is false (padding) the zero point itself
// when folded, else zero.
Expr conv_input(const QConv& p, const Buffer& data, Expr n, Expr ih, Expr iw, Expr ic, Expr cond);

// The input coordinate of output `o` and kernel tap `k`, and its bound check (null when
// no output of the axis can leave the input).
Expr tap(Expr o, Expr k, int64_t stride, int64_t dilation, int64_t pad);
Expr inside(Expr coord, int64_t pad, int64_t extent, int64_t out, int64_t kernel, int64_t stride, int64_t dilation);

// The output positions along one axis in up to three ranges: those whose window starts
// before the input, those whose window lies inside it, and those whose window ends
// past it. Only the first and last need bound checks.
struct OutputRange {
  int64_t begin, end;
  bool check;
};
std::vector<OutputRange> border_split(int64_t out, int64_t pad, int64_t extent, int64_t kernel, int64_t stride,
                                      int64_t dilation);

// [begin, end) in as few tiles of at most `widest` outputs as fit, of balanced widths
// (seven at a widest of 5 is 4 + 3, not 5 + 2): each tile's first output and width.
std::vector<std::pair<int64_t, int64_t>> balanced_tiles(int64_t begin, int64_t end, int64_t widest);

// ---- the shared matrix-product core (qconv_gemm.cc) ---------------------------------

// mve_direct: a convolution's input read in place where a pixel's window lies inside it
// (no im2col column); the pixels of the border ranges are gathered as before.
struct Window {
  Buffer data;                                  // the input, flat
  int64_t out_w = 0;                            // output pixels a row
  std::vector<OutputRange> rows, cols;          // border_split of each output axis
  int64_t kh = 0, kw = 0, channels = 0;         // taps, and input channels a tap (a multiple of 16)
  int64_t tap_row = 0, tap_col = 0;             // elements between kernel rows, kernel columns
  int64_t pixel_step = 0;                       // elements between the windows of adjacent outputs
  std::function<Expr(Expr oy, Expr ox)> start;  // the first element of the window of (oy, ox)
};

// Everything the core needs to know about one op instance.
struct Gemm {
  int64_t rows, cols, k;  // output pixels (per image), output channels, reduction length
  const QuantAttrs* q;
  const Rule* rule;
  const Schedule* sched;
  Buffer weight;       // flat [cols * weight_words(k)]: int8, or packed int32 words
  Buffer bias, table;  // may be null
  int64_t table_columns = 0;
  // pair_records: the words of a channel pair's record in `weight` (ops/schedules.h),
  // which then also holds the bias and the table (both null); 0 otherwise.
  int64_t record_words = 0;
  // Stores the value of reduction element `kk` of pixel `row` (an int16 expression:
  // the input minus its zero point, or the raw input when the zero point is folded).
  std::function<Expr(Expr row, Expr kk)> gathered;
  // Fills col[slot * k + kk] for pixel `row`, or null when the core reads `gathered`
  // directly (dense: the pixel is a contiguous row).
  std::function<Stmt(Expr row, const Buffer& col, Expr slot)> gather;
  std::function<Stmt(Expr row, Expr col, Expr value)> store;
  // mve: when set, pixel `row`'s reduction values lie contiguous in `direct` from
  // row_start(row) on (dense rows, unpadded 1x1 convolutions), so nothing is gathered.
  Buffer direct;
  std::function<Expr(Expr row)> row_start;
  // mve: when set, pixel `row`'s output channels lie contiguous in `out_flat` from
  // out_start(row) on (NHWC convolutions, dense), so four of them store as one vector;
  // pixel row + 1's from out_start(row) + cols on.
  Buffer out_flat;
  std::function<Expr(Expr row)> out_start;
  // mve_direct: when set, interior pixels read their windows in place (gather still
  // serves the border).
  const Window* window = nullptr;
};

// Two int16 values (int32 expressions in range) as one word, `lo` in the low half.
Expr pack_pair(Expr lo, Expr hi);
// Pixels in pairs (or one by one without `block`), channels in pairs, odd ones last.
Stmt gemm(const Gemm& g);
// dense_chunks: whether a batch-1 dense gathers its input in chunks, and the core over
// those chunks; `gather_range(col, k0, len)` fills col words 0..(len + 1) / 2 - 1 with
// the int16 pairs of input values k0..k0 + len - 1 of row 0.
bool takes_dense_chunks(const Gemm& g);
Stmt dense_chunked(const Gemm& g, const std::function<Stmt(const Buffer&, Expr, int64_t)>& gather_range);
// The declarations of the core's flat views (flat_view, op_util.h).
Stmt declare_views(const Gemm& g, Stmt body);

// ---- the Helium (MVE) core (qconv_mve.cc) -------------------------------------------

// Schedule mve: the core of gemm() with 16-lane int8 dot products (T.vmladava) over
// int8 weights and int8 gathered (or direct) pixels; the input zero point is folded.
Stmt gemm_mve(const Gemm& g);
// TFLite's requantization of the int32 lanes `acc` (or a scalar when lanes is 1) for
// output channels c0 .. c0 + lanes - 1, as int8 lanes: T.multiply_by_quantized_multiplier
// (VQRDMULH, VRSHL) with the per-tensor multiplier or the table's columns (M, shift) or
// (M, r - 1, ...), then the output zero point and the bounds. Not smmlar_requant's table.
Expr helium_requantize(const QuantAttrs& q, const Buffer& table, int64_t columns, Expr acc, Expr c0, int64_t lanes);
// The same with the table's column k given by `column(k)` (lanes in any order; null: the
// per-tensor multiplier).
Expr requantize_lanes(const QuantAttrs& q, int64_t columns, Expr acc, const std::function<Expr(int64_t)>& column,
                      int64_t lanes);
// Whether a node with this schedule, rule and packing can take mve (else the op fails).
void check_mve(const std::string& op, const Schedule& s, const Rule& rule, const QInputs& q);

// ---- the Helium depthwise kernel (qconv_mve_depthwise.cc) ---------------------------

// Whether schedule mve takes this convolution as a depthwise one (NHWC, one output
// channel per input channel; the weight as [1, KH, KW, O]).
bool mve_depthwise_applies(const QConv& p);
Stmt mve_depthwise(const QConv& p, const QParams& b);

// ---- the depthwise and per-output loop nests (qconv_depthwise.cc) -------------------

// Depthwise, tiled (schedule depthwise_tile).
Stmt depthwise_tiles(const QConv& p, const QParams& b);
// An input column j that a row of a tile of t depthwise outputs reads: its taps (output i,
// kernel column rw) with i * sw + rw * dw == j, outputs in order, and whether it lies
// inside the input (not padding). With the tile's first output column ow0_c unknown
// (-1: an interior tile), every column is inside.
struct TileColumn {
  int64_t j;
  std::vector<std::pair<int64_t, int64_t>> taps;
  bool inside;
};
// The columns of such a tile that some tap reads, left to right.
std::vector<TileColumn> tile_columns(const QConv& p, int64_t t, int64_t ow0_c);
// A border row of a depthwise tile as a loop iteration: its kernel rows first .. first +
// rows - 1 read the input, the kernel rows `padding` only the padding (expressions of the
// loop's counter).
struct RowWindow {
  Expr first;
  int64_t rows;
  std::vector<Expr> padding;
};
// The kernel rows of a tile's window in output row oh_c (-1: a loop row, all inside, or
// with `win` a border row of a loop): those that read the input, as (the offset of the
// row's weights, the input row's offset in kernel rows from the window's top), and those
// that read only padding (the offset of their weights); a weight row is `row_elements`
// apart. A loop row's offsets are first * row_elements plus a constant, so one pointer
// reaches all its weights.
void window_rows(const QConv& p, int64_t oh_c, const RowWindow* win, int64_t row_elements,
                 std::vector<std::pair<Expr, int64_t>>* rows, std::vector<Expr>* padding_rows);
// The border rows (windows reaching above or below the input): those with the same number
// of valid kernel rows as one loop over `row(oh, -1, win)` (stride 1: the top and the
// bottom row share one copy of the row's code), a row alone in its group as `row(oh, oh,
// nullptr)` at its constant position.
std::vector<Stmt> depthwise_border_rows(const QConv& p, const std::vector<OutputRange>& ranges,
                                        const std::function<Stmt(Expr, int64_t, const RowWindow*)>& row);
// One output at a time: blocked depthwise (schedule block) or the plain loop nest of
// every other convolution the matrix-product core does not take.
Stmt conv_loops(const QConv& p, const QParams& b);

}  // namespace qconv_impl
}  // namespace ops
}  // namespace mtir
