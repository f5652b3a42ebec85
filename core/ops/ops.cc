// The operator registry. Each family of ops registers itself from its own file; the
// list is built once, on first use, and kept sorted by name.
#include "ops/ops.h"

#include <algorithm>
#include <limits>

#include "ops/op_util.h"

namespace mtir {
namespace ops {
// control_flow.cc: if, while, control_output (declared here: only the registry calls it)
void register_control_flow_ops(std::vector<OpDef>& ops);
}  // namespace ops

int64_t TensorType::num_elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string TensorType::str() const { return dtype.str() + ops::shape_str(shape); }

const std::vector<OpDef>& all_op_defs() {
  static const std::vector<OpDef> defs = [] {
    std::vector<OpDef> v;
    ops::register_nn_ops(v);
    ops::register_pool_ops(v);
    ops::register_elemwise_ops(v);
    ops::register_shape_ops(v);
    ops::register_strided_slice_ops(v);
    ops::register_quantized_ops(v);
    ops::register_qconv_ops(v);
    ops::register_qconv_s16_ops(v);
    ops::register_onnx_quant_ops(v);
    ops::register_svdf_ops(v);
    ops::register_lstm_ops(v);
    ops::register_space_batch_ops(v);
    ops::register_index_map_ops(v);
    ops::register_gather_ops(v);
    ops::register_resize_ops(v);
    ops::register_qactivation_ops(v);
    ops::register_prelu_ops(v);
    ops::register_qsquared_difference_ops(v);
    ops::register_qdiv_ops(v);
    ops::register_compare_ops(v);
    ops::register_reduce_ops(v);
    ops::register_variable_ops(v);
    ops::register_control_flow_ops(v);
    ops::register_cast_ops(v);
    ops::register_qbatch_matmul_ops(v);
    ops::register_ql2_normalization_ops(v);
    ops::register_qlog_softmax_ops(v);
    // Every output must be indexable with int32 loop variables.
    for (auto& d : v) {
      auto infer = d.infer;
      d.infer = [infer, name = d.name](const std::vector<TensorType>& in, const nlohmann::json& attrs) {
        TensorType t = infer(in, attrs);
        int64_t n = 1;
        for (int64_t e : t.shape) {
          n *= e;
          if (n > std::numeric_limits<int32_t>::max())
            ops::fail(name, "the output " + t.str() + " would have more than 2^31-1 elements");
        }
        return t;
      };
    }
    std::sort(v.begin(), v.end(), [](const OpDef& a, const OpDef& b) { return a.name < b.name; });
    return v;
  }();
  return defs;
}

std::vector<size_t> written_inputs(const OpDef& op, const nlohmann::json& attrs, size_t num_inputs) {
  if (!op.writes_inputs) return {};
  std::vector<size_t> w = op.writes_inputs(attrs, num_inputs);
  std::sort(w.begin(), w.end());
  w.erase(std::unique(w.begin(), w.end()), w.end());
  return w;
}

const OpDef* find_op(const std::string& name) {
  const auto& defs = all_op_defs();
  auto it = std::lower_bound(defs.begin(), defs.end(), name,
                             [](const OpDef& d, const std::string& n) { return d.name < n; });
  return it != defs.end() && it->name == name ? &*it : nullptr;
}

}  // namespace mtir
