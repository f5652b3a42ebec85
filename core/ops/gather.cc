// gather and gather_nd: TFLite's GATHER (slices of the data along `axis` picked by an
// integer index tensor, with `batch_dims` leading axes shared by data and indices) and
// GATHER_ND (the last axis of the indices addresses the leading axes of the data). The
// indices may be computed at run time: each is checked before it is used, and an index
// outside its axis stops the kernel with an error (TFLM's Eval returns kTfLiteError),
// so no out-of-bounds read ever happens.
#include "ops/op_util.h"

namespace mtir {
namespace ops {
namespace {

using json = nlohmann::json;

// Two inputs: data of any type and int32 or int64 indices.
void check_gather_inputs(const std::string& op, const std::vector<TensorType>& in) {
  if (in.size() != 2) fail(op, "expected 2 inputs (data, indices), got " + std::to_string(in.size()));
  check_inputs(op, {in[0]}, 1, {"data"}, Dtypes::kAny);
  const TensorType& t = in[1];
  if (t.dtype != DataType::Int(32) && t.dtype != DataType::Int(64))
    fail(op, "the indices are " + t.dtype.str() + "; int32 or int64 indices are supported");
  for (int64_t d : t.shape)
    if (d <= 0) fail(op, "the indices " + shape_str(t.shape) + " have an empty dimension");
}

// A checked index: `body(v)` runs with v bound to the int32 value of `index`, when
// 0 <= v < size.
Stmt with_index(const std::string& op, const std::string& name, Expr index, int64_t size,
                const std::function<Stmt(Expr)>& body) {
  Var v = ivar(name);
  if (index->dtype != DataType::Int(32)) index = Cast(DataType::Int(32), index);
  Expr ok = and_(ge(v, ci(0)), lt(v, ci(size)));
  return LetStmt(v, index, AssertStmt(ok, op + ": an index is outside [0, " + std::to_string(size) + ")", body(v)));
}

// out[dst..., t...] = data[src..., t...] over the trailing axes `tail` (the inner loops).
Stmt copy_slice(const LoopNest& inner, const std::vector<Expr>& tail, const Buffer& out, std::vector<Expr> dst,
                const Buffer& data, std::vector<Expr> src) {
  src.insert(src.end(), tail.begin(), tail.end());
  dst.insert(dst.end(), tail.begin(), tail.end());
  return inner.wrap(store(out, load(data, src), dst));
}

struct GatherParams {
  int64_t axis, batch_dims;
};

GatherParams gather_params(const std::vector<TensorType>& in, const json& attrs) {
  const std::string op = "gather";
  AttrReader r(op, attrs, {"axis", "batch_dims"});
  check_gather_inputs(op, in);
  const int64_t rank = static_cast<int64_t>(in[0].shape.size()), irank = static_cast<int64_t>(in[1].shape.size());
  if (rank < 1) fail(op, "the data must have at least one axis");
  GatherParams p{normalize_axis(op, "axis", r.get_int("axis", 0), rank), r.get_int("batch_dims", 0)};
  if (p.batch_dims < 0) p.batch_dims += irank;
  if (p.batch_dims < 0 || p.batch_dims > irank || p.batch_dims > p.axis)
    r.bad("batch_dims", "a number of leading axes in [0, " + std::to_string(std::min(irank, p.axis)) +
                            "] (at most the indices' rank and the axis)");
  for (int64_t k = 0; k < p.batch_dims; ++k)
    if (in[0].shape[k] != in[1].shape[k])
      fail(op, "batch axis " + std::to_string(k) + " differs between the data " + shape_str(in[0].shape) +
                   " and the indices " + shape_str(in[1].shape));
  return p;
}

// out = data[:axis] + indices[batch_dims:] + data[axis + 1:]
TensorType gather_infer(const std::vector<TensorType>& in, const json& attrs) {
  GatherParams p = gather_params(in, attrs);
  const auto &d = in[0].shape, &i = in[1].shape;
  std::vector<int64_t> out(d.begin(), d.begin() + p.axis);
  out.insert(out.end(), i.begin() + p.batch_dims, i.end());
  out.insert(out.end(), d.begin() + p.axis + 1, d.end());
  if (out.empty()) fail("gather", "the result would be a scalar (rank 0), which is not supported");
  return TensorType{in[0].dtype, out};
}

PrimFunc gather_build(const std::string& fname, const std::vector<TensorType>& in, const TensorType& out,
                      const json& attrs) {
  GatherParams p = gather_params(in, attrs);
  const auto &d = in[0].shape, &i = in[1].shape;
  FuncBuilder fb;
  Buffer data = fb.param("data", d, in[0].dtype);
  Buffer indices = fb.param("indices", i, in[1].dtype);
  Buffer o = fb.param("out", out.shape, out.dtype);
  // Outer loops over the output axes up to the gathered slice, the index read once per
  // slice, inner loops over the slice.
  LoopNest outer, inner;
  std::vector<Expr> oidx, iidx, didx;
  for (int64_t k = 0; k < p.axis; ++k) {
    oidx.push_back(outer.axis("d" + std::to_string(k), d[k]));
    didx.push_back(oidx.back());
    if (k < p.batch_dims) iidx.push_back(oidx.back());
  }
  for (size_t k = static_cast<size_t>(p.batch_dims); k < i.size(); ++k) {
    oidx.push_back(outer.axis("j" + std::to_string(k), i[k]));
    iidx.push_back(oidx.back());
  }
  if (iidx.empty()) iidx.push_back(ci(0));  // scalar indices: one element
  std::vector<Expr> tail;
  for (size_t k = static_cast<size_t>(p.axis) + 1; k < d.size(); ++k) tail.push_back(inner.axis("d" + std::to_string(k), d[k]));
  Stmt body = with_index("gather", "index", load(indices, iidx), d[p.axis], [&](Expr v) {
    std::vector<Expr> src = didx;
    src.push_back(v);
    return copy_slice(inner, tail, o, oidx, data, src);
  });
  return fb.finish(fname, outer.wrap(body));
}

// ---- gather_nd ------------------------------------------------------------------------

int64_t gather_nd_depth(const std::vector<TensorType>& in, const json& attrs) {
  const std::string op = "gather_nd";
  AttrReader r(op, attrs, {});
  check_gather_inputs(op, in);
  if (in[0].shape.empty() || in[1].shape.empty()) fail(op, "the data and the indices must have at least one axis");
  const int64_t nd = in[1].shape.back();
  if (nd > static_cast<int64_t>(in[0].shape.size()))
    fail(op, "the indices address " + std::to_string(nd) + " axes, but the data " + shape_str(in[0].shape) + " has " +
                 std::to_string(in[0].shape.size()));
  return nd;
}

// out = indices[:-1] + data[nd:]
TensorType gather_nd_infer(const std::vector<TensorType>& in, const json& attrs) {
  const int64_t nd = gather_nd_depth(in, attrs);
  std::vector<int64_t> out(in[1].shape.begin(), in[1].shape.end() - 1);
  out.insert(out.end(), in[0].shape.begin() + nd, in[0].shape.end());
  if (out.empty()) fail("gather_nd", "the result would be a scalar (rank 0), which is not supported");
  return TensorType{in[0].dtype, out};
}

PrimFunc gather_nd_build(const std::string& fname, const std::vector<TensorType>& in, const TensorType& out,
                         const json& attrs) {
  const int64_t nd = gather_nd_depth(in, attrs);
  const auto &d = in[0].shape, &i = in[1].shape;
  FuncBuilder fb;
  Buffer data = fb.param("data", d, in[0].dtype);
  Buffer indices = fb.param("indices", i, in[1].dtype);
  Buffer o = fb.param("out", out.shape, out.dtype);
  LoopNest outer, inner;
  std::vector<Expr> oidx;
  for (size_t k = 0; k + 1 < i.size(); ++k) oidx.push_back(outer.axis("j" + std::to_string(k), i[k]));
  std::vector<Expr> tail;
  for (size_t k = static_cast<size_t>(nd); k < d.size(); ++k) tail.push_back(inner.axis("d" + std::to_string(k), d[k]));
  std::vector<Expr> src;
  std::function<Stmt(int64_t)> level = [&](int64_t k) -> Stmt {
    if (k == nd) return copy_slice(inner, tail, o, oidx, data, src);
    std::vector<Expr> at = oidx;
    at.push_back(ci(k));
    return with_index("gather_nd", "index" + std::to_string(k), load(indices, at), d[k], [&](Expr v) {
      src.push_back(v);
      return level(k + 1);
    });
  };
  return fb.finish(fname, outer.wrap(level(0)));
}

}  // namespace

void register_gather_ops(std::vector<OpDef>& ops) {
  ops.push_back(OpDef{"gather", gather_infer, gather_build});
  ops.push_back(OpDef{"gather_nd", gather_nd_infer, gather_nd_build});
}

}  // namespace ops
}  // namespace mtir
