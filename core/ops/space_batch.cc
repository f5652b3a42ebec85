// Rearrangements of NHWC data between space, depth and batch, as TFLite's reference
// kernels define them: space_to_depth / depth_to_space (blocks of b x b pixels become
// b*b*C channels, block row first) and space_to_batch_nd / batch_to_space_nd (the
// image padded or cropped, then each of the bh x bw offsets within a block becomes a
// batch: output batch (offset_h * bw + offset_w) * B + b). Pure data movement on any
// element type; space_to_batch_nd fills its padding with `pad_value` (TFLite Micro
// with raw 0, TFLite with a quantized output's zero point).
#include "ops/op_util.h"

namespace mtir {
namespace ops {
namespace {

using json = nlohmann::json;

int64_t block_size(const std::string& op, const std::vector<TensorType>& in, const json& attrs) {
  AttrReader r(op, attrs, {"block_size"});
  check_inputs(op, in, 1, {"data"}, Dtypes::kAny);
  check_rank(op, in, 0, "data (NHWC)", 4);
  if (!r.has("block_size")) fail(op, "missing required attribute 'block_size' (a positive integer)");
  const int64_t b = r.get_int("block_size", 1);
  if (b < 1) r.bad("block_size", "a positive integer");
  return b;
}

TensorType space_to_depth_infer(const std::vector<TensorType>& in, const json& attrs) {
  const int64_t b = block_size("space_to_depth", in, attrs);
  const auto& s = in[0].shape;
  if (s[1] % b != 0 || s[2] % b != 0)
    fail("space_to_depth", "the height and width of " + shape_str(s) + " must be multiples of the block size " +
                               std::to_string(b));
  return TensorType{in[0].dtype, {s[0], s[1] / b, s[2] / b, s[3] * b * b}};
}

// out[n, oh, ow, (by * b + bx) * C + c] = in[n, oh * b + by, ow * b + bx, c]
PrimFunc space_to_depth_build(const std::string& fname, const std::vector<TensorType>& in, const TensorType& out,
                              const json& attrs) {
  const int64_t b = block_size("space_to_depth", in, attrs), c_in = in[0].shape[3];
  FuncBuilder fb;
  Buffer data = fb.param("data", in[0].shape, in[0].dtype);
  Buffer o = fb.param("out", out.shape, out.dtype);
  LoopNest nest;
  Expr n = nest.axis("n", out.shape[0]), oh = nest.axis("oh", out.shape[1]), ow = nest.axis("ow", out.shape[2]);
  Expr by = nest.axis("by", b), bx = nest.axis("bx", b), c = nest.axis("c", c_in);
  Expr src = load(data, {n, add(mul(oh, ci(b)), by), add(mul(ow, ci(b)), bx), c});
  return fb.finish(fname, nest.wrap(store(o, src, {n, oh, ow, add(mul(add(mul(by, ci(b)), bx), ci(c_in)), c)})));
}

TensorType depth_to_space_infer(const std::vector<TensorType>& in, const json& attrs) {
  const int64_t b = block_size("depth_to_space", in, attrs);
  const auto& s = in[0].shape;
  if (s[3] % (b * b) != 0)
    fail("depth_to_space", "the " + std::to_string(s[3]) + " channels of " + shape_str(s) +
                               " are not a multiple of the block size squared (" + std::to_string(b * b) + ")");
  return TensorType{in[0].dtype, {s[0], s[1] * b, s[2] * b, s[3] / (b * b)}};
}

// out[n, ih * b + by, iw * b + bx, c] = in[n, ih, iw, (by * b + bx) * C_out + c]
PrimFunc depth_to_space_build(const std::string& fname, const std::vector<TensorType>& in, const TensorType& out,
                              const json& attrs) {
  const int64_t b = block_size("depth_to_space", in, attrs), c_out = out.shape[3];
  FuncBuilder fb;
  Buffer data = fb.param("data", in[0].shape, in[0].dtype);
  Buffer o = fb.param("out", out.shape, out.dtype);
  LoopNest nest;
  Expr n = nest.axis("n", in[0].shape[0]), ih = nest.axis("ih", in[0].shape[1]), by = nest.axis("by", b);
  Expr iw = nest.axis("iw", in[0].shape[2]), bx = nest.axis("bx", b), c = nest.axis("c", c_out);
  Expr src = load(data, {n, ih, iw, add(mul(add(mul(by, ci(b)), bx), ci(c_out)), c)});
  return fb.finish(fname, nest.wrap(store(o, src, {n, add(mul(ih, ci(b)), by), add(mul(iw, ci(b)), bx), c})));
}

// ---- space_to_batch_nd / batch_to_space_nd ------------------------------------------

struct BlockParams {
  int64_t bh, bw, top, bottom, left, right;  // padding (space_to_batch_nd) or crops
};

BlockParams block_params(const std::string& op, const std::vector<TensorType>& in, const AttrReader& r,
                         const char* margins) {
  check_inputs(op, in, 1, {"data"}, Dtypes::kAny);
  check_rank(op, in, 0, "data (NHWC)", 4);
  auto block = r.get_ints("block_shape", 2, 1, "two positive integers [height, width]", std::nullopt);
  auto m = r.get_ints(margins, 4, 0, "four non-negative integers [top, bottom, left, right]",
                      std::vector<int64_t>{0, 0, 0, 0});
  return BlockParams{block[0], block[1], m[0], m[1], m[2], m[3]};
}

const std::vector<std::string> kS2bAttrs = {"block_shape", "paddings", "pad_value"};

TensorType space_to_batch_nd_infer(const std::vector<TensorType>& in, const json& attrs) {
  const std::string op = "space_to_batch_nd";
  AttrReader r(op, attrs, kS2bAttrs);
  BlockParams p = block_params(op, in, r, "paddings");
  r.get_float("pad_value", 0.0);
  const auto& s = in[0].shape;
  const int64_t h = s[1] + p.top + p.bottom, w = s[2] + p.left + p.right;
  if (h % p.bh != 0 || w % p.bw != 0)
    fail(op, "the padded height and width (" + std::to_string(h) + ", " + std::to_string(w) +
                 ") must be multiples of the block shape (" + std::to_string(p.bh) + ", " + std::to_string(p.bw) + ")");
  return TensorType{in[0].dtype, {s[0] * p.bh * p.bw, h / p.bh, w / p.bw, s[3]}};
}

// out[(sh * bw + sw) * B + b, oh, ow, c] = in[b, oh * bh + sh - top, ow * bw + sw - left, c],
// or pad_value where that falls outside the input.
PrimFunc space_to_batch_nd_build(const std::string& fname, const std::vector<TensorType>& in, const TensorType& out,
                                 const json& attrs) {
  const std::string op = "space_to_batch_nd";
  AttrReader r(op, attrs, kS2bAttrs);
  BlockParams p = block_params(op, in, r, "paddings");
  const auto& s = in[0].shape;
  FuncBuilder fb;
  Buffer data = fb.param("data", s, in[0].dtype);
  Buffer o = fb.param("out", out.shape, out.dtype);
  LoopNest nest;
  Expr sh = nest.axis("sh", p.bh), sw = nest.axis("sw", p.bw), b = nest.axis("b", s[0]);
  Expr oh = nest.axis("oh", out.shape[1]), ow = nest.axis("ow", out.shape[2]), c = nest.axis("c", s[3]);
  Expr ih = sub(add(mul(oh, ci(p.bh)), sh), ci(p.top)), iw = sub(add(mul(ow, ci(p.bw)), sw), ci(p.left));
  Expr inside;
  if (p.top > 0) inside = and_(inside, ge(ih, ci(0)));
  if (p.bottom > 0) inside = and_(inside, lt(ih, ci(s[1])));
  if (p.left > 0) inside = and_(inside, ge(iw, ci(0)));
  if (p.right > 0) inside = and_(inside, lt(iw, ci(s[2])));
  Expr value = lazy_select(inside, load(data, {b, ih, iw, c}), cv(in[0].dtype, r.get_float("pad_value", 0.0)));
  Expr ob = add(mul(add(mul(sh, ci(p.bw)), sw), ci(s[0])), b);
  return fb.finish(fname, nest.wrap(store(o, value, {ob, oh, ow, c})));
}

TensorType batch_to_space_nd_infer(const std::vector<TensorType>& in, const json& attrs) {
  const std::string op = "batch_to_space_nd";
  AttrReader r(op, attrs, {"block_shape", "crops"});
  BlockParams p = block_params(op, in, r, "crops");
  const auto& s = in[0].shape;
  if (s[0] % (p.bh * p.bw) != 0)
    fail(op, "the batch " + std::to_string(s[0]) + " is not a multiple of the block size " + std::to_string(p.bh * p.bw));
  const int64_t h = s[1] * p.bh - p.top - p.bottom, w = s[2] * p.bw - p.left - p.right;
  if (h <= 0 || w <= 0) fail(op, "the crops leave no pixel of the " + shape_str(s) + " data");
  return TensorType{in[0].dtype, {s[0] / (p.bh * p.bw), h, w, s[3]}};
}

// out[b, oh, ow, c] = in[(((oh + top) % bh) * bw + (ow + left) % bw) * B + b, (oh + top) / bh, (ow + left) / bw, c]
PrimFunc batch_to_space_nd_build(const std::string& fname, const std::vector<TensorType>& in, const TensorType& out,
                                 const json& attrs) {
  const std::string op = "batch_to_space_nd";
  AttrReader r(op, attrs, {"block_shape", "crops"});
  BlockParams p = block_params(op, in, r, "crops");
  FuncBuilder fb;
  Buffer data = fb.param("data", in[0].shape, in[0].dtype);
  Buffer o = fb.param("out", out.shape, out.dtype);
  LoopNest nest;
  Expr b = nest.axis("b", out.shape[0]), oh = nest.axis("oh", out.shape[1]), ow = nest.axis("ow", out.shape[2]);
  Expr c = nest.axis("c", out.shape[3]);
  Expr y = add(oh, ci(p.top)), x = add(ow, ci(p.left));
  Expr ib = add(mul(add(mul(floormod(y, ci(p.bh)), ci(p.bw)), floormod(x, ci(p.bw))), ci(out.shape[0])), b);
  Expr src = load(data, {ib, floordiv(y, ci(p.bh)), floordiv(x, ci(p.bw)), c});
  return fb.finish(fname, nest.wrap(store(o, src, {b, oh, ow, c})));
}

}  // namespace

void register_space_batch_ops(std::vector<OpDef>& ops) {
  ops.push_back(OpDef{"space_to_depth", space_to_depth_infer, space_to_depth_build});
  ops.push_back(OpDef{"depth_to_space", depth_to_space_infer, depth_to_space_build});
  ops.push_back(OpDef{"space_to_batch_nd", space_to_batch_nd_infer, space_to_batch_nd_build});
  ops.push_back(OpDef{"batch_to_space_nd", batch_to_space_nd_infer, batch_to_space_nd_build});
}

}  // namespace ops
}  // namespace mtir
