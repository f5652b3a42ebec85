// strided_slice: TFLite's STRIDED_SLICE on any element type. Every output element is
// an input element, so the op is pure data movement. The attributes are TFLite's own
// (begin, end and strides per axis, the begin, end and shrink-axis masks, offset); the
// start and stop of each axis are resolved at compile time exactly as TFLite's
// strided_slice_logic does (StartForAxis / StopForAxis), so the kernel is a loop nest
// over the output with input index start + i * stride on each axis.
#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/op_util.h"

namespace mtir {
namespace ops {
namespace {

using json = nlohmann::json;

const std::vector<std::string> kAttrs = {"begin", "end", "strides", "begin_mask", "end_mask", "shrink_axis_mask", "offset"};

struct AxisSlice {
  int64_t start;
  int64_t stride;
  int64_t count;  // output extent
  bool shrink;
};

int64_t clamp(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : (v > hi ? hi : v); }

std::vector<AxisSlice> resolve(const std::vector<TensorType>& in, const json& attrs) {
  const std::string op = "strided_slice";
  AttrReader r(op, attrs, kAttrs);
  check_inputs(op, in, 1, {"data"}, Dtypes::kAny);
  const auto& shape = in[0].shape;
  const size_t rank = shape.size();
  const int64_t lo32 = std::numeric_limits<int32_t>::min(), hi32 = std::numeric_limits<int32_t>::max();
  auto begin = r.get_ints("begin", rank, lo32, "int32 values, one per axis", std::nullopt);
  auto end = r.get_ints("end", rank, lo32, "int32 values, one per axis", std::nullopt);
  auto strides = r.get_ints("strides", rank, lo32, "non-zero int32 values, one per axis",
                            std::vector<int64_t>(rank, 1));
  for (const auto* v : {&begin, &end, &strides})
    for (int64_t x : *v)
      if (x > hi32) fail(op, "begin, end and strides must be int32 values");
  const int64_t mask_limit = int64_t{1} << std::min<size_t>(rank, 31);
  auto mask = [&](const char* key) {
    int64_t m = r.get_int(key, 0);
    if (m < 0 || m >= mask_limit)
      r.bad(key, "a bit mask over the " + std::to_string(rank) + " axes (0 to " + std::to_string(mask_limit - 1) + ")");
    return m;
  };
  const int64_t begin_mask = mask("begin_mask"), end_mask = mask("end_mask"), shrink_mask = mask("shrink_axis_mask");
  const bool offset = r.get_bool("offset", false);
  std::vector<AxisSlice> axes;
  for (size_t k = 0; k < rank; ++k) {
    const int64_t n = shape[k], s = strides[k];
    if (s == 0) r.bad("strides", "non-zero values (axis " + std::to_string(k) + " has stride 0)");
    // StartForAxis: the mask picks the first element in the direction of travel; a
    // negative index counts from the end; then the start is clamped.
    int64_t start = begin[k];
    if (begin_mask >> k & 1) start = s > 0 ? 0 : n - 1;
    if (start < 0) start += n;
    start = s > 0 ? clamp(start, 0, n) : clamp(start, -1, n - 1);
    AxisSlice a{start, s, 0, (shrink_mask >> k & 1) != 0};
    if (a.shrink) {
      if (start < 0 || start >= n)
        fail(op, "axis " + std::to_string(k) + " is shrunk at index " + std::to_string(begin[k]) +
                     ", which is outside its " + std::to_string(n) + " elements");
      a.count = 1;
    } else {
      // StopForAxis: offset makes end relative to the start; the mask runs to the end.
      int64_t stop = end[k];
      if (offset) stop += start;
      if (end_mask >> k & 1) stop = s > 0 ? n : -1;
      else if (stop < 0) stop += n;
      stop = s > 0 ? clamp(stop, 0, n) : clamp(stop, -1, n - 1);
      // ceil((stop - start) / stride), for either sign of the stride.
      const int64_t span = stop - start;
      a.count = s > 0 ? (span + s - 1) / s : (-span + (-s) - 1) / (-s);
      if (a.count <= 0)
        fail(op, "axis " + std::to_string(k) + " selects no element (start " + std::to_string(start) + ", stop " +
                     std::to_string(stop) + ", stride " + std::to_string(s) + "): empty tensors are not supported");
    }
    axes.push_back(a);
  }
  return axes;
}

TensorType strided_slice_infer(const std::vector<TensorType>& in, const json& attrs) {
  std::vector<int64_t> out;
  for (const auto& a : resolve(in, attrs))
    if (!a.shrink) out.push_back(a.count);
  if (out.empty()) fail("strided_slice", "every axis is shrunk: scalar (rank 0) outputs are not supported");
  return TensorType{in[0].dtype, out};
}

PrimFunc strided_slice_build(const std::string& fname, const std::vector<TensorType>& in, const TensorType& out,
                             const json& attrs) {
  const auto axes = resolve(in, attrs);
  FuncBuilder fb;
  Buffer data = fb.param("data", in[0].shape, in[0].dtype);
  Buffer o = fb.param("out", out.shape, out.dtype);
  LoopNest nest;
  std::vector<Expr> oidx, iidx;
  for (size_t k = 0; k < axes.size(); ++k) {
    const auto& a = axes[k];
    if (a.shrink) {
      iidx.push_back(ci(a.start));
      continue;
    }
    Expr i = nest.axis("i" + std::to_string(k), a.count);
    oidx.push_back(i);
    iidx.push_back(add(ci(a.start), mul(i, ci(a.stride))));
  }
  return fb.finish(fname, nest.wrap(store(o, load(data, iidx), oidx)));
}

}  // namespace

void register_strided_slice_ops(std::vector<OpDef>& ops) {
  ops.push_back(OpDef{"strided_slice", strided_slice_infer, strided_slice_build});
}

}  // namespace ops
}  // namespace mtir
