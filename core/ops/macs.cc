#include "ops/macs.h"

namespace mtir {
namespace {

using json = nlohmann::json;

int64_t product(const std::vector<int64_t>& v, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to && i < v.size(); ++i) p *= v[i];
  return p;
}

std::string string_attr(const json& attrs, const char* key, const std::string& fallback) {
  if (!attrs.is_object()) return fallback;
  auto it = attrs.find(key);
  return it != attrs.end() && it->is_string() ? it->get<std::string>() : fallback;
}

bool bool_attr(const json& attrs, const char* key) {
  if (!attrs.is_object()) return false;
  auto it = attrs.find(key);
  return it != attrs.end() && (it->is_boolean() ? it->get<bool>() : it->is_number_integer() && it->get<int64_t>() != 0);
}

// A weight packed in int32 words (the SMLAD schedules) keeps its shape in "weight_shape".
std::vector<int64_t> weight_shape(const TensorType& w, const json& attrs) {
  if (w.dtype != DataType::Int(32) || !attrs.is_object() || !attrs.contains("weight_shape")) return w.shape;
  std::vector<int64_t> s;
  for (const auto& d : attrs["weight_shape"])
    if (d.is_number_integer()) s.push_back(d.get<int64_t>());
  return s;
}

}  // namespace

int64_t nominal_macs(const std::string& op, const std::vector<TensorType>& inputs, const TensorType& output,
                     const json& attrs) {
  const int64_t out = output.num_elements();
  if (inputs.size() < 2 || out <= 0) return 0;
  const std::vector<int64_t>& x = inputs[0].shape;
  const std::vector<int64_t> w = weight_shape(inputs[1], attrs);
  // Convolutions: output elements x the taps of one filter (kernel x input channels per group).
  if (op == "conv2d" && w.size() == 4) {
    // NCHW takes OIHW weights, NHWC HWIO: the filter is everything but O.
    const bool nhwc = string_attr(attrs, "layout", "NCHW") == "NHWC";
    return out * (nhwc ? product(w, 0, 3) : product(w, 1, 4));
  }
  if ((op == "conv3d" || op == "qlinear_conv") && w.size() >= 4) return out * product(w, 1, w.size());  // OI...
  if ((op == "qconv2d" || op == "qconv2d_s16") && w.size() == 4) return out * product(w, 1, 4);  // OHWI, any data layout
  // Transposed: each input element meets every tap of its group's filters.
  if (op == "conv_transpose" && w.size() == x.size() && w.size() >= 3) {
    return inputs[0].num_elements() * product(w, 1, w.size());  // weight [C, O/groups, k...]
  }
  if ((op == "transpose_conv2d" || op == "qtranspose_conv2d") && w.size() == 4) {
    return inputs[0].num_elements() * product(w, 0, 3);  // NHWC data, OHWI weight
  }
  // Dense layers and matrix products: output elements x the reduction length.
  if ((op == "dense" || op == "qdense" || op == "qdense_s16" || op == "matmul" || op == "qlinear_matmul") && !x.empty())
    return out * x.back();
  // An LSTM: per time step and batch row, its gate matrices (input and recurrent weights);
  // an SVDF: per batch row, its feature and time weights.
  if ((op == "lstm" || op == "qlstm" || op == "svdf" || op == "qsvdf") && inputs.size() >= 3 && !x.empty() &&
      x.back() > 0)
    return inputs[0].num_elements() / x.back() * (inputs[1].num_elements() + inputs[2].num_elements());
  if (op == "gemm" && x.size() == 2) return out * (bool_attr(attrs, "transA") ? x[0] : x[1]);
  return 0;
}

}  // namespace mtir
