// Data movement: reshape, flatten, concat, transpose, pad. They take integer and bool data
// too (Dtypes::kAny; flatten kNumeric): the result has the input's type. And full, a
// tensor of one value.
#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/op_util.h"

namespace mtir {
namespace ops {
namespace {

using json = nlohmann::json;

// A row-major copy between two shapes with the same number of elements: one loop
// over the flat index, through flat views of both buffers. Indexed by their shapes, the
// flattened index (i / 512 % 2 * 512 + i / 16 % 32 * 16 + i % 16) is not folded back to
// i, and the copy costs about ten instructions a byte instead of one straight copy.
PrimFunc copy_build(const std::string& fname, const std::vector<TensorType>& in, const TensorType& out) {
  FuncBuilder fb;
  Buffer data = fb.param("data", in[0].shape, in[0].dtype);
  Buffer o = fb.param("out", out.shape, out.dtype);
  const int64_t n = out.num_elements();
  const Buffer data_flat = flat_view(data, n), out_flat = flat_view(o, n);
  LoopNest nest;
  Expr i = nest.axis("i", n);
  return fb.finish(fname, DeclBuffer(data_flat, DeclBuffer(out_flat, nest.wrap(store(out_flat, load(data_flat, {i}), {i})))));
}

// ---- reshape ----------------------------------------------------------------------

TensorType reshape_infer(const std::vector<TensorType>& in, const json& attrs) {
  AttrReader r("reshape", attrs, {"newshape"});
  check_inputs("reshape", in, 1, {"data"}, Dtypes::kAny);
  auto ns = r.get_ints("newshape", 0, -1, "integers >= -1 (one -1 allowed; 0 copies the input dimension)",
                       std::nullopt);
  const auto& s = in[0].shape;
  const std::vector<int64_t> written = ns;
  int64_t known = 1;
  int infer_at = -1;
  for (size_t k = 0; k < ns.size(); ++k) {
    if (ns[k] == -1) {
      if (infer_at >= 0) fail("reshape", "attribute 'newshape' " + shape_str(ns) + " has more than one -1");
      infer_at = static_cast<int>(k);
      continue;
    }
    if (ns[k] == 0) {
      if (k >= s.size())
        fail("reshape", "attribute 'newshape' " + shape_str(ns) + " has 0 at position " + std::to_string(k) +
                            " but the data " + shape_str(s) + " has no dimension there to copy");
      ns[k] = s[k];
    }
    known *= ns[k];
    if (known > in[0].num_elements())
      fail("reshape", "cannot reshape data " + shape_str(s) + " (" + std::to_string(in[0].num_elements()) +
                          " elements) to " + shape_str(written) + ": too many elements");
  }
  int64_t total = in[0].num_elements();
  if (infer_at >= 0) {
    if (total % known != 0)
      fail("reshape", "cannot reshape data " + shape_str(s) + " (" + std::to_string(total) + " elements) to " +
                          shape_str(written) + ": " + std::to_string(total) +
                          " is not a multiple of " + std::to_string(known));
    ns[infer_at] = total / known;
  } else if (known != total) {
    fail("reshape", "cannot reshape data " + shape_str(s) + " (" + std::to_string(total) + " elements) to " +
                        shape_str(ns) + " (" + std::to_string(known) + " elements)");
  }
  return TensorType{in[0].dtype, ns};
}

// ---- flatten ----------------------------------------------------------------------

TensorType flatten_infer(const std::vector<TensorType>& in, const json& attrs) {
  AttrReader r("flatten", attrs, {"axis"});
  check_inputs("flatten", in, 1, {"data"}, Dtypes::kNumeric);
  const auto& s = in[0].shape;
  int64_t rank = static_cast<int64_t>(s.size());
  int64_t axis = normalize_axis("flatten", "axis", r.get_int("axis", 1), rank, true);
  int64_t a = 1, b = 1;
  for (int64_t k = 0; k < rank; ++k) (k < axis ? a : b) *= s[k];
  return TensorType{in[0].dtype, {a, b}};
}

PrimFunc copy_op_build(const std::string& fname, const std::vector<TensorType>& in, const TensorType& out,
                       const json&) {
  return copy_build(fname, in, out);
}

// ---- concat -----------------------------------------------------------------------

int64_t concat_axis(const std::vector<TensorType>& in, const json& attrs) {
  AttrReader r("concat", attrs, {"axis"});
  if (in.size() < 2) fail("concat", "expected at least 2 inputs, got " + std::to_string(in.size()));
  std::vector<std::string> names;
  for (size_t i = 0; i < in.size(); ++i) names.push_back("input" + std::to_string(i));
  check_inputs("concat", in, in.size(), names, Dtypes::kAny);
  int64_t rank = static_cast<int64_t>(in[0].shape.size());
  if (rank < 1) fail("concat", "inputs must have rank >= 1");
  return normalize_axis("concat", "axis", r.get_int("axis", 0), rank);
}

TensorType concat_infer(const std::vector<TensorType>& in, const json& attrs) {
  int64_t axis = concat_axis(in, attrs);
  std::vector<int64_t> out = in[0].shape;
  for (size_t i = 1; i < in.size(); ++i) {
    const auto& s = in[i].shape;
    bool ok = s.size() == out.size();
    for (size_t k = 0; ok && k < s.size(); ++k) ok = static_cast<int64_t>(k) == axis || s[k] == out[k];
    if (!ok)
      fail("concat", "input " + std::to_string(i) + " has shape " + shape_str(s) + ", which does not match input 0 " +
                         shape_str(in[0].shape) + " outside axis " + std::to_string(axis));
    out[axis] += s[axis];
  }
  return TensorType{in[0].dtype, out};
}

PrimFunc concat_build(const std::string& fname, const std::vector<TensorType>& in, const TensorType& out,
                      const json& attrs) {
  int64_t axis = concat_axis(in, attrs);
  FuncBuilder fb;
  std::vector<Buffer> bufs;
  for (size_t i = 0; i < in.size(); ++i)
    bufs.push_back(fb.param("input" + std::to_string(i), in[i].shape, in[i].dtype));
  Buffer o = fb.param("out", out.shape, out.dtype);
  std::vector<Stmt> copies;
  int64_t offset = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    LoopNest nest;
    std::vector<Expr> idx;
    for (size_t k = 0; k < in[i].shape.size(); ++k)
      idx.push_back(nest.axis("i" + std::to_string(k) + "_" + std::to_string(i), in[i].shape[k]));
    std::vector<Expr> oidx = idx;
    oidx[axis] = add(idx[axis], ci(offset));
    copies.push_back(nest.wrap(store(o, load(bufs[i], idx), oidx)));
    offset += in[i].shape[axis];
  }
  return fb.finish(fname, SeqStmt(copies));
}

// ---- transpose --------------------------------------------------------------------

std::vector<int64_t> transpose_axes(const std::vector<TensorType>& in, const json& attrs) {
  AttrReader r("transpose", attrs, {"axes"});
  check_inputs("transpose", in, 1, {"data"}, Dtypes::kAny);
  int64_t rank = static_cast<int64_t>(in[0].shape.size());
  std::vector<int64_t> def;
  for (int64_t k = rank - 1; k >= 0; --k) def.push_back(k);
  auto axes = r.get_ints("axes", 0, -rank, "axis indices", def);
  std::string req = "a permutation of the " + std::to_string(rank) + " axes of the data";
  if (static_cast<int64_t>(axes.size()) != rank) r.bad("axes", req);
  std::vector<bool> seen(rank, false);
  for (auto& a : axes) {
    if (a >= rank) r.bad("axes", req);
    if (a < 0) a += rank;
    if (seen[a]) r.bad("axes", req);
    seen[a] = true;
  }
  return axes;
}

TensorType transpose_infer(const std::vector<TensorType>& in, const json& attrs) {
  auto axes = transpose_axes(in, attrs);
  std::vector<int64_t> out;
  for (int64_t a : axes) out.push_back(in[0].shape[a]);
  return TensorType{in[0].dtype, out};
}

PrimFunc transpose_build(const std::string& fname, const std::vector<TensorType>& in, const TensorType& out,
                         const json& attrs) {
  auto axes = transpose_axes(in, attrs);
  FuncBuilder fb;
  Buffer data = fb.param("data", in[0].shape, in[0].dtype);
  Buffer o = fb.param("out", out.shape, out.dtype);
  LoopNest nest;
  std::vector<Expr> oidx, iidx(axes.size());
  for (size_t k = 0; k < axes.size(); ++k) {
    oidx.push_back(nest.axis("i" + std::to_string(k), out.shape[k]));
    iidx[axes[k]] = oidx.back();
  }
  return fb.finish(fname, nest.wrap(store(o, load(data, iidx), oidx)));
}

// ---- pad --------------------------------------------------------------------------

// symmetric mirrors including the edge element (TFLite's MIRROR_PAD SYMMETRIC).
const std::vector<std::string> kPadModes = {"constant", "edge", "reflect", "symmetric"};

std::vector<std::pair<int64_t, int64_t>> pad_widths(const std::vector<TensorType>& in, const AttrReader& r) {
  check_inputs("pad", in, 1, {"data"}, Dtypes::kAny);
  std::string mode = r.raw("mode") && r.raw("mode")->is_string() ? r.raw("mode")->get<std::string>() : "constant";
  if (mode != "constant" && mode != "edge" && mode != "reflect" && mode != "symmetric")
    fail("pad", "mode '" + mode + "' is not supported; only \"constant\", \"edge\", \"reflect\" and \"symmetric\" padding are implemented");
  r.get_string("mode", "constant", kPadModes);
  r.get_float("pad_value", 0.0);
  size_t rank = in[0].shape.size();
  std::string req = "a list of " + std::to_string(rank) + " [before, after] pairs of non-negative integers";
  const json* pw = r.raw("pad_width");
  if (!pw) fail("pad", "missing required attribute 'pad_width' (" + req + ")");
  if (!pw->is_array() || pw->size() != rank) r.bad("pad_width", req);
  std::vector<std::pair<int64_t, int64_t>> out;
  for (const auto& p : *pw) {
    if (!p.is_array() || p.size() != 2 || !p[0].is_number_integer() || !p[1].is_number_integer() ||
        p[0].get<int64_t>() < 0 || p[1].get<int64_t>() < 0)
      r.bad("pad_width", req);
    out.emplace_back(p[0].get<int64_t>(), p[1].get<int64_t>());
  }
  // Reflection mirrors around the edge element without repeating it: at most n - 1 wide.
  for (size_t k = 0; k < rank && mode == "reflect"; ++k)
    if (out[k].first > in[0].shape[k] - 1 || out[k].second > in[0].shape[k] - 1)
      fail("pad", "reflect padding of dimension " + std::to_string(k) + " (size " + std::to_string(in[0].shape[k]) +
                      ") is wider than " + std::to_string(in[0].shape[k] - 1) + "; that is not supported");
  for (size_t k = 0; k < rank && mode == "symmetric"; ++k)
    if (out[k].first > in[0].shape[k] || out[k].second > in[0].shape[k])
      fail("pad", "symmetric padding of dimension " + std::to_string(k) + " (size " + std::to_string(in[0].shape[k]) +
                      ") is wider than the dimension; that is not supported");
  return out;
}

const std::vector<std::string> kPadAttrs = {"pad_width", "pad_value", "mode"};

TensorType pad_infer(const std::vector<TensorType>& in, const json& attrs) {
  AttrReader r("pad", attrs, kPadAttrs);
  auto pw = pad_widths(in, r);
  std::vector<int64_t> out = in[0].shape;
  for (size_t k = 0; k < out.size(); ++k) out[k] += pw[k].first + pw[k].second;
  return TensorType{in[0].dtype, out};
}

PrimFunc pad_build(const std::string& fname, const std::vector<TensorType>& in, const TensorType& out,
                   const json& attrs) {
  AttrReader r("pad", attrs, kPadAttrs);
  auto pw = pad_widths(in, r);
  double value = r.get_float("pad_value", 0.0);
  std::string mode = r.get_string("mode", "constant", kPadModes);
  FuncBuilder fb;
  Buffer data = fb.param("data", in[0].shape, in[0].dtype);
  Buffer o = fb.param("out", out.shape, out.dtype);
  LoopNest nest;
  std::vector<Expr> oidx, iidx;
  Expr cond;
  for (size_t k = 0; k < out.shape.size(); ++k) {
    oidx.push_back(nest.axis("i" + std::to_string(k), out.shape[k]));
    Expr x = sub(oidx.back(), ci(pw[k].first));
    int64_t n = in[0].shape[k];
    if (mode != "constant" && (pw[k].first > 0 || pw[k].second > 0)) {
      if (mode == "edge") {
        x = min_(max_(x, ci(0)), ci(n - 1));  // clamp to the nearest edge element
      } else if (mode == "symmetric") {
        // y = max(x, -1 - x), then min(y, 2n - 1 - y), for -n <= x <= 2n - 1.
        Expr y = max_(x, sub(ci(-1), x));
        x = min_(y, sub(ci(2 * n - 1), y));
      } else {
        // Mirror: n-1 - |n-1 - |x||, for -(n-1) <= x <= 2(n-1).
        Expr ax = max_(x, sub(ci(0), x));
        Expr d = sub(ci(n - 1), ax);
        x = sub(ci(n - 1), max_(d, sub(ci(0), d)));
      }
      iidx.push_back(x);
      continue;
    }
    if (pw[k].first > 0) cond = and_(cond, ge(x, ci(0)));
    if (pw[k].second > 0) cond = and_(cond, lt(x, ci(in[0].shape[k])));
    iidx.push_back(x);
  }
  return fb.finish(fname, nest.wrap(store(o, lazy_select(cond, load(data, iidx), cv(in[0].dtype, value)), oidx)));
}

// ---- full -------------------------------------------------------------------------
// No input: a tensor of `shape` and `dtype` holding `value` everywhere (ONNX Dropout's
// mask at inference is full of true).

const std::vector<std::string> kFullDtypes = {"float32", "bool",   "int8",   "int16",  "int32", "int64",
                                              "uint8",   "uint16", "uint32", "uint64"};

TensorType full_infer(const std::vector<TensorType>& in, const json& attrs) {
  AttrReader r("full", attrs, {"shape", "value", "dtype"});
  check_inputs("full", in, 0, {});
  auto shape = r.get_ints("shape", 0, 1, "positive integers", std::nullopt);
  if (shape.empty()) r.bad("shape", "a non-empty list of positive integers");
  DataType dt = *DataType::parse(r.get_string("dtype", "float32", kFullDtypes));
  double v = r.get_float("value", 0.0);
  if (!std::isfinite(v) && !dt.is_float()) r.bad("value", "a finite number for dtype " + dt.str());
  int64_t n = 1;
  for (int64_t d : shape) {
    n *= d;
    if (n > std::numeric_limits<int32_t>::max()) fail("full", "the result would have more than 2^31-1 elements");
  }
  return TensorType{dt, shape};
}

PrimFunc full_build(const std::string& fname, const std::vector<TensorType>&, const TensorType& out,
                    const json& attrs) {
  AttrReader r("full", attrs, {"shape", "value", "dtype"});
  FuncBuilder fb;
  Buffer o = fb.param("out", out.shape, out.dtype);
  LoopNest nest;
  Expr i = nest.axis("i", out.num_elements());
  return fb.finish(fname, nest.wrap(store(o, cv(out.dtype, r.get_float("value", 0.0)), unflatten(i, out.shape))));
}

}  // namespace

void register_shape_ops(std::vector<OpDef>& ops) {
  ops.push_back(OpDef{"full", full_infer, full_build});
  ops.push_back(OpDef{"reshape", reshape_infer, copy_op_build, OutputSharing::kView});
  ops.push_back(OpDef{"flatten", flatten_infer, copy_op_build, OutputSharing::kView});
  ops.push_back(OpDef{"concat", concat_infer, concat_build});
  ops.push_back(OpDef{"transpose", transpose_infer, transpose_build});
  ops.push_back(OpDef{"pad", pad_infer, pad_build});
}

}  // namespace ops
}  // namespace mtir
