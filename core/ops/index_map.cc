// Ops whose every output element is one input element at an index computed from the
// output's: reverse (TFLite's REVERSE_V2: the listed axes run backwards) and
// broadcast_to (TFLite's BROADCAST_TO: the data, aligned to the trailing axes, repeated
// along every axis where it has size 1 or none). Pure data movement on any element type.
#include <set>

#include "ops/op_util.h"

namespace mtir {
namespace ops {
namespace {

using json = nlohmann::json;

std::set<int64_t> reverse_axes(const std::vector<TensorType>& in, const json& attrs) {
  AttrReader r("reverse", attrs, {"axes"});
  check_inputs("reverse", in, 1, {"data"}, Dtypes::kAny);
  const int64_t rank = static_cast<int64_t>(in[0].shape.size());
  std::set<int64_t> axes;
  for (int64_t a : r.get_ints("axes", 0, -rank, "axis indices", std::nullopt)) {
    if (a >= rank) r.bad("axes", "axis indices in [-" + std::to_string(rank) + ", " + std::to_string(rank) + ")");
    axes.insert(a < 0 ? a + rank : a);
  }
  return axes;
}

PrimFunc reverse_build(const std::string& fname, const std::vector<TensorType>& in, const TensorType& out,
                       const json& attrs) {
  const auto axes = reverse_axes(in, attrs);
  FuncBuilder fb;
  Buffer data = fb.param("data", in[0].shape, in[0].dtype);
  Buffer o = fb.param("out", out.shape, out.dtype);
  LoopNest nest;
  std::vector<Expr> oidx, iidx;
  for (size_t k = 0; k < out.shape.size(); ++k) {
    oidx.push_back(nest.axis("i" + std::to_string(k), out.shape[k]));
    const bool flip = axes.count(static_cast<int64_t>(k)) && out.shape[k] > 1;
    iidx.push_back(flip ? sub(ci(out.shape[k] - 1), oidx.back()) : oidx.back());
  }
  return fb.finish(fname, nest.wrap(store(o, load(data, iidx), oidx)));
}

// ---- broadcast_to -------------------------------------------------------------------

TensorType broadcast_to_infer(const std::vector<TensorType>& in, const json& attrs) {
  AttrReader r("broadcast_to", attrs, {"shape"});
  check_inputs("broadcast_to", in, 1, {"data"}, Dtypes::kAny);
  auto shape = r.get_ints("shape", 0, 1, "positive integers", std::nullopt);
  const auto& s = in[0].shape;
  if (s.empty()) fail("broadcast_to", "the data is a scalar (rank 0): give it the shape [1]");
  bool ok = shape.size() >= s.size();
  for (size_t k = 0; ok && k < s.size(); ++k) {
    int64_t d = s[s.size() - 1 - k], t = shape[shape.size() - 1 - k];
    ok = d == t || d == 1;
  }
  if (!ok) fail("broadcast_to", "the data " + shape_str(s) + " does not broadcast to " + shape_str(shape));
  return TensorType{in[0].dtype, shape};
}

PrimFunc broadcast_to_build(const std::string& fname, const std::vector<TensorType>& in, const TensorType& out,
                            const json&) {
  const auto& s = in[0].shape;
  const size_t lead = out.shape.size() - s.size();
  FuncBuilder fb;
  Buffer data = fb.param("data", s, in[0].dtype);
  Buffer o = fb.param("out", out.shape, out.dtype);
  LoopNest nest;
  std::vector<Expr> oidx, iidx;
  for (size_t k = 0; k < out.shape.size(); ++k) {
    oidx.push_back(nest.axis("i" + std::to_string(k), out.shape[k]));
    if (k >= lead) iidx.push_back(s[k - lead] == 1 ? ci(0) : oidx.back());
  }
  return fb.finish(fname, nest.wrap(store(o, load(data, iidx), oidx)));
}

}  // namespace

void register_index_map_ops(std::vector<OpDef>& ops) {
  ops.push_back(OpDef{"reverse", same_type_as_input(reverse_axes), reverse_build});
  ops.push_back(OpDef{"broadcast_to", broadcast_to_infer, broadcast_to_build});
}

}  // namespace ops
}  // namespace mtir
