// ONNX operators (opsets 1..17; the forms before 7 are read where they differ) onto ops
// of the registry. Each mapping reads the attributes it understands (an attribute left unread is refused by the converter),
// turns compile-time inputs into attributes and emits one or more of our nodes.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>

#include "frontend/onnx_convert.h"
#include "support/diagnostic.h"

namespace mtir {

namespace {

using json = nlohmann::json;
using C = OnnxConverter;

std::string out0(C& c) { return c.node().output(0); }

}  // namespace

// Every output after the first must be absent (optional outputs such as MaxPool's
// Indices or BatchNormalization's running statistics).
void single_output(C& c) {
  for (int k = 1; k < c.node().output_size(); ++k)
    if (!c.node().output(k).empty()) c.unsupported("output " + std::to_string(k) + " ('" + c.node().output(k) + "')");
}

void expect_inputs(C& c, size_t lo, size_t hi) {
  size_t n = c.num_inputs();
  while (n > 0 && c.node().input(static_cast<int>(n - 1)).empty()) --n;
  if (n < lo || n > hi)
    c.invalid("expected " + std::to_string(lo) + (hi != lo ? " to " + std::to_string(hi) : "") + " inputs, got " +
              std::to_string(n));
}

namespace {

int64_t rank_of(C& c, const std::string& name) { return static_cast<int64_t>(c.type_of(name).shape.size()); }

void unary(C& c, const std::string& op, const json& attrs = json::object()) {
  expect_inputs(c, 1, 1);
  single_output(c);
  c.emit(out0(c), op, {c.input(0)}, attrs);
}

void binary(C& c, const std::string& op) {
  expect_inputs(c, 2, 2);
  single_output(c);
  std::string a = c.input(0), b = c.input(1);
  // Opset 7 dropped the legacy broadcast/axis attributes for numpy broadcasting. Before,
  // broadcast = 1 aligns B's shape with A's dims from `axis` on (default: B is a suffix
  // of A): B is reshaped to A's rank with ones around it, which numpy broadcasting then
  // reads the same way. broadcast = 0 requires equal shapes.
  if (c.opset() < 7 && c.attr_int("broadcast", 0) != 0) {
    auto as = c.type_of(a).shape, bs = c.type_of(b).shape;
    int64_t ra = static_cast<int64_t>(as.size()), rb = static_cast<int64_t>(bs.size());
    if (rb > ra) c.invalid("with broadcast = 1, B (rank " + std::to_string(rb) + ") has a higher rank than A");
    int64_t axis = c.attr_int("axis", ra - rb);
    if (axis < 0) axis += ra;
    if (axis < 0 || axis + rb > ra)
      c.invalid("attribute 'axis' does not place B's shape " + json(bs).dump() + " inside A's " + json(as).dump());
    for (int64_t k = 0; k < rb; ++k)
      if (bs[k] != 1 && bs[k] != as[axis + k])
        c.invalid("B's shape " + json(bs).dump() + " does not match A's " + json(as).dump() + " at axis " +
                  std::to_string(axis));
    if (rb < ra) {
      std::vector<int64_t> shape(ra, 1);
      for (int64_t k = 0; k < rb; ++k) shape[axis + k] = bs[k];
      b = c.emit(c.temp("broadcast"), "reshape", {b}, {{"newshape", shape}});
    }
  } else if (c.opset() < 7) {
    if (c.has_attr("axis")) c.attr_int("axis", 0);  // meaningless without broadcast
    if (c.type_of(a).shape != c.type_of(b).shape)
      c.invalid("shapes differ but attribute 'broadcast' is 0 (opset " + std::to_string(c.opset()) + ")");
  }
  c.emit(out0(c), op, {a, b});
}

}  // namespace


// 1-D windows (3-D NCL data) are read as 2-D ones of height 1: the data is reshaped to
// (N, C, 1, L) around the op. 3-D windows (5-D data, with `three_d`: pools and Conv)
// are returned as read, with pads [d, h, w begins, d, h, w ends].
Window read_window(C& c, const std::string& data, std::vector<int64_t> kernel_from_weight, bool three_d) {
  const auto& shape = c.type_of(data).shape;
  if (shape.size() != 4 && shape.size() != 3 && !(three_d && shape.size() == 5))
    c.unsupported(std::string("only 1-D and 2-D windows (3-D or 4-D data)") + (three_d ? " and 3-D ones (5-D data)" : "") +
                  " are supported; the data has rank " + std::to_string(shape.size()));
  size_t dims = shape.size() - 2;
  Window w;
  w.kernel = c.attr_ints("kernel_shape", kernel_from_weight);
  if (w.kernel.size() != dims) c.invalid("attribute 'kernel_shape' must have " + std::to_string(dims) + " values");
  if (!kernel_from_weight.empty() && w.kernel != kernel_from_weight)
    c.invalid("attribute 'kernel_shape' does not match the weight's spatial shape");
  w.strides = c.attr_ints("strides", std::vector<int64_t>(dims, 1));
  w.dilations = c.attr_ints("dilations", std::vector<int64_t>(dims, 1));
  std::vector<int64_t> pads = c.attr_ints("pads", std::vector<int64_t>(2 * dims, 0));
  if (w.strides.size() != dims || w.dilations.size() != dims || pads.size() != 2 * dims)
    c.invalid("attributes 'strides' and 'dilations' need " + std::to_string(dims) + " values and 'pads' " +
              std::to_string(2 * dims));
  std::string auto_pad = c.attr_string("auto_pad", "NOTSET");
  if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    // Output = ceil(input / stride); the padding that needs, the odd pixel at the end
    // (SAME_UPPER) or at the start (SAME_LOWER).
    for (size_t k = 0; k < dims; ++k) {
      int64_t in = shape[2 + k], s = w.strides[k];
      int64_t extent = (w.kernel[k] - 1) * w.dilations[k] + 1;
      int64_t total = std::max<int64_t>(((in + s - 1) / s - 1) * s + extent - in, 0);
      int64_t small = total / 2, big = total - small;
      pads[k] = auto_pad == "SAME_UPPER" ? small : big;
      pads[k + dims] = auto_pad == "SAME_UPPER" ? big : small;
    }
  } else if (auto_pad == "VALID") {
    pads.assign(2 * dims, 0);
  } else if (auto_pad != "NOTSET") {
    c.invalid("attribute 'auto_pad' is '" + auto_pad + "'");
  }
  if (dims == 1) {
    w.kernel.insert(w.kernel.begin(), 1);
    w.strides.insert(w.strides.begin(), 1);
    w.dilations.insert(w.dilations.begin(), 1);
    pads = {0, pads[0], 0, pads[1]};
  }
  // ONNX pads are [h_begin, w_begin, h_end, w_end]: already our [top, left, bottom, right].
  w.pads = pads;
  return w;
}

namespace {

// Emits `op` on `data` (rank 3 or 4; rank 3 goes through a height-1 reshape).
void emit_windowed(C& c, const std::string& op, std::vector<std::string> ins, const json& attrs,
                   std::string out = "") {
  if (out.empty()) out = out0(c);
  auto shape = c.type_of(ins[0]).shape;
  if (shape.size() == 4) {
    c.emit(out, op, ins, attrs);
    return;
  }
  ins[0] = c.emit(c.temp("2d"), "reshape", {ins[0]}, {{"newshape", {shape[0], shape[1], 1, shape[2]}}});
  if (op == "conv2d") {
    auto ws = c.type_of(ins[1]).shape;
    ins[1] = c.emit(c.temp("w2d"), "reshape", {ins[1]}, {{"newshape", {ws[0], ws[1], 1, ws[2]}}});
  }
  std::string r = c.emit(c.temp(op), op, ins, attrs);
  auto os = c.type_of(r).shape;
  c.emit(out, "reshape", {r}, {{"newshape", {os[0], os[1], os[3]}}});
}

// A 3-D convolution (NCDHW data, OIDHW weight) is our conv3d; pads [d, h, w begins,
// d, h, w ends] are its `padding`.
void conv_3d(C& c) {
  std::string data = c.input(0), weight = c.input(1);
  const auto& ws = c.type_of(weight).shape;
  if (c.type_of(data).shape.size() != 5) c.invalid("the data and the weight have different ranks");
  Window w = read_window(c, data, std::vector<int64_t>(ws.begin() + 2, ws.end()), true);
  json attrs = {{"strides", w.strides}, {"padding", w.pads}, {"dilation", w.dilations},
                {"groups", c.attr_int("group", 1)}};
  std::vector<std::string> ins = {data, weight};
  if (!c.input(2).empty()) ins.push_back(c.input(2));
  c.emit(out0(c), "conv3d", ins, attrs);
}

void conv(C& c) {
  expect_inputs(c, 2, 3);
  single_output(c);
  std::string data = c.input(0), weight = c.input(1);
  const auto& ws = c.type_of(weight).shape;
  if (ws.size() == 5) return conv_3d(c);
  if (ws.size() != 4 && ws.size() != 3)
    c.unsupported("only 1-D, 2-D and 3-D convolutions are supported; the weight has rank " + std::to_string(ws.size()));
  if (ws.size() != c.type_of(data).shape.size()) c.invalid("the data and the weight have different ranks");
  Window w = read_window(c, data, std::vector<int64_t>(ws.begin() + 2, ws.end()));
  json attrs = {{"strides", w.strides}, {"padding", w.pads}, {"dilation", w.dilations},
                {"groups", c.attr_int("group", 1)}};
  std::vector<std::string> ins = {data, weight};
  if (!c.input(2).empty()) ins.push_back(c.input(2));
  emit_windowed(c, "conv2d", ins, attrs);
}

// A 3-D pool as two 2-D ones: over (H, W) with the depth folded into the channels,
// then over D with H·W flattened. Exact for max, and for the average too: a window's
// count of positions inside the (padded) input is the product of its counts per axis,
// so the mean over the box is the mean over D of the means over (H, W).
void pool_3d(C& c, const std::string& op, const std::string& data, const Window& w, json attrs) {
  auto s = c.type_of(data).shape;  // N, C, D, H, W
  std::string x = c.emit(c.temp("hw"), "reshape", {data}, {{"newshape", {s[0], s[1] * s[2], s[3], s[4]}}});
  attrs["pool_size"] = {w.kernel[1], w.kernel[2]};
  attrs["strides"] = {w.strides[1], w.strides[2]};
  attrs["dilation"] = {w.dilations[1], w.dilations[2]};
  attrs["padding"] = {w.pads[1], w.pads[2], w.pads[4], w.pads[5]};
  std::string hw = c.emit(c.temp(op + "_hw"), op, {x}, attrs);
  auto o = c.type_of(hw).shape;  // N, C·D, OH, OW
  std::string y = c.emit(c.temp("d"), "reshape", {hw}, {{"newshape", {s[0], s[1], s[2], o[2] * o[3]}}});
  attrs["pool_size"] = {w.kernel[0], 1};
  attrs["strides"] = {w.strides[0], 1};
  attrs["dilation"] = {w.dilations[0], 1};
  attrs["padding"] = {w.pads[0], 0, w.pads[3], 0};
  std::string d = c.emit(c.temp(op + "_d"), op, {y}, attrs);
  int64_t od = c.type_of(d).shape[2];
  c.emit(out0(c), "reshape", {d}, {{"newshape", {s[0], s[1], od, o[2], o[3]}}});
}

void pool(C& c, const std::string& op) {
  expect_inputs(c, 1, 1);
  // MaxPool's optional output 1 is the Indices (max_pool2d with `indices`).
  std::string indices = op == "max_pool2d" && c.node().output_size() > 1 ? c.node().output(1) : "";
  for (int k = indices.empty() ? 1 : 2; k < c.node().output_size(); ++k)
    if (!c.node().output(k).empty()) c.unsupported("output " + std::to_string(k) + " ('" + c.node().output(k) + "')");
  std::string data = c.input(0);
  Window w = read_window(c, data, {}, true);
  if (!c.has_attr("kernel_shape")) c.invalid("missing attribute 'kernel_shape'");
  // storage_order only changes the Indices output: column-major (h, w) positions.
  bool column_major = c.attr_int("storage_order", 0) != 0;
  json attrs = {{"pool_size", w.kernel}, {"strides", w.strides}, {"padding", w.pads}, {"dilation", w.dilations},
                {"ceil_mode", c.attr_int("ceil_mode", 0) != 0}};
  if (op == "avg_pool2d") attrs["count_include_pad"] = c.attr_int("count_include_pad", 0) != 0;
  for (size_t k = 0; k < w.kernel.size(); ++k)
    if (w.pads[k] >= w.kernel[k] || w.pads[k + w.kernel.size()] >= w.kernel[k])
      c.unsupported("a padding as large as the window (pads " + json(w.pads).dump() + ", kernel " +
                    json(w.kernel).dump() + ")");
  if (!indices.empty() && w.kernel.size() == 3) c.unsupported("the Indices output of a 3-D MaxPool");
  if (w.kernel.size() == 3) return pool_3d(c, op, data, w, attrs);
  emit_windowed(c, op, {data}, attrs);
  // A 1-D pool runs on (N, C, 1, L): the same flat indices as (N, C, L).
  if (!indices.empty()) {
    attrs["indices"] = true;
    if (column_major) attrs["column_major_indices"] = true;
    emit_windowed(c, op, {data}, attrs, indices);
  }
}

void global_avg_pool(C& c) {
  expect_inputs(c, 1, 1);
  single_output(c);
  if (rank_of(c, c.input(0)) != 4)
    c.unsupported("only 4-D (NCHW) data is supported; the data has rank " + std::to_string(rank_of(c, c.input(0))));
  c.emit(out0(c), "global_avg_pool2d", {c.input(0)});
}

void gemm(C& c) {
  expect_inputs(c, 2, 3);
  single_output(c);
  // Before opset 7, broadcast = 1 lets C broadcast to (M, N) numpy-style, as it always
  // does since; broadcast = 0 requires C of shape (M, N), which broadcasting reads alike.
  if (c.opset() < 7) c.attr_int("broadcast", 0);
  json attrs = {{"alpha", c.attr_float("alpha", 1.0)}, {"beta", c.attr_float("beta", 1.0)},
                {"transA", c.attr_int("transA", 0)}, {"transB", c.attr_int("transB", 0)}};
  std::vector<std::string> ins = {c.input(0), c.input(1)};
  if (!c.input(2).empty()) ins.push_back(c.input(2));
  // The fully connected layer every exporter writes (A·Bᵀ + bias of shape (N,)) is our
  // dense op, so ONNX and JSON graphs of the same model give the same kernels.
  bool plain = attrs["alpha"] == 1.0 && attrs["beta"] == 1.0 && attrs["transA"] == 0 && attrs["transB"] == 1;
  if (plain && ins.size() == 3) {
    const auto& bias = c.type_of(ins[2]).shape;
    plain = bias.size() == 1 && bias[0] == c.type_of(ins[1]).shape.at(0);
  }
  if (plain && rank_of(c, ins[0]) == 2 && rank_of(c, ins[1]) == 2) {
    c.emit(out0(c), "dense", ins);
    return;
  }
  c.emit(out0(c), "gemm", ins, attrs);
}

void matmul(C& c) {
  expect_inputs(c, 2, 2);
  single_output(c);
  std::string a = c.input(0), b = c.input(1);
  if (rank_of(c, a) < 2 || rank_of(c, b) < 2)
    c.unsupported("1-D operands of MatMul (reshape them to 2-D first)");
  c.emit(out0(c), "matmul", {a, b});
}

// A scalar float from an optional compile-time input, or none.
bool optional_scalar(C& c, size_t i, const std::string& role, double* v) {
  if (c.input(i).empty()) return false;
  const NDArray& a = c.static_value(i, role);
  if (a.num_elements() != 1) c.invalid("input '" + role + "' must be a scalar");
  *v = a.dtype.is_float() ? a.get_float(0) : static_cast<double>(a.get_int(0));
  return true;
}

void clip(C& c) {
  single_output(c);
  json attrs = json::object();
  if (c.opset() < 11) {
    expect_inputs(c, 1, 1);
    if (c.has_attr("min")) attrs["min"] = c.attr_float("min", 0);
    if (c.has_attr("max")) attrs["max"] = c.attr_float("max", 0);
  } else {
    expect_inputs(c, 1, 3);
    double v;
    if (optional_scalar(c, 1, "min", &v)) attrs["min"] = v;
    if (optional_scalar(c, 2, "max", &v)) attrs["max"] = v;
  }
  // ONNX leaves min > max to the implementation (numpy gives max); ours refuses it.
  if (attrs.contains("min") && attrs.contains("max") && attrs["min"].get<double>() > attrs["max"].get<double>())
    c.unsupported("min greater than max");
  c.emit(out0(c), "clip", {c.input(0)}, attrs);
}

// Softmax before opset 13 normalizes over all axes from `axis` on, as one flattened
// row: a reshape to 2-D around the op when that is more than the last axis.
void softmax(C& c, const std::string& op) {
  expect_inputs(c, 1, 1);
  single_output(c);
  std::string data = c.input(0);
  auto shape = c.type_of(data).shape;
  int64_t rank = static_cast<int64_t>(shape.size());
  int64_t axis = c.attr_int("axis", c.opset() < 13 ? 1 : -1);
  if (axis < -rank || axis >= rank) c.invalid("attribute 'axis' is out of range for rank " + std::to_string(rank));
  if (axis < 0) axis += rank;
  if (c.opset() >= 13 || axis == rank - 1) {
    c.emit(out0(c), op, {data}, {{"axis", axis}});
    return;
  }
  int64_t outer = 1, inner = 1;
  for (int64_t k = 0; k < rank; ++k) (k < axis ? outer : inner) *= shape[k];
  std::string flat = c.emit(c.temp("2d"), "reshape", {data}, {{"newshape", {outer, inner}}});
  std::string sm = c.emit(c.temp(op), op, {flat}, {{"axis", 1}});
  c.emit(out0(c), "reshape", {sm}, {{"newshape", shape}});
}

void reshape(C& c) {
  single_output(c);
  std::vector<int64_t> shape;
  if (c.opset() < 5) {
    shape = c.attr_ints("shape", {});
  } else {
    expect_inputs(c, 2, 2);
    shape = c.static_ints(1, "shape");
  }
  bool allowzero = c.attr_int("allowzero", 0) != 0;
  if (allowzero && std::count(shape.begin(), shape.end(), 0) > 0)
    c.unsupported("allowzero = 1 with a 0 in the shape (a zero-sized tensor)");
  if (shape.empty()) c.unsupported("reshape to a scalar (rank 0)");
  c.emit(out0(c), "reshape", {c.input(0)}, {{"newshape", shape}});
}

void flatten(C& c) {
  expect_inputs(c, 1, 1);
  single_output(c);
  c.emit(out0(c), "flatten", {c.input(0)}, {{"axis", c.attr_int("axis", 1)}});
}

void concat(C& c) {
  single_output(c);
  if (c.opset() >= 4 && !c.has_attr("axis")) c.invalid("missing attribute 'axis'");
  std::vector<std::string> ins;
  for (size_t i = 0; i < c.num_inputs(); ++i) ins.push_back(c.input(i));
  int64_t axis = c.attr_int("axis", 1);  // required since opset 4; 1 before
  if (ins.size() == 1) {
    c.emit(out0(c), "reshape", ins, {{"newshape", c.type_of(ins[0]).shape}});
    return;
  }
  c.emit(out0(c), "concat", ins, {{"axis", axis}});
}

void transpose(C& c) {
  expect_inputs(c, 1, 1);
  single_output(c);
  json attrs = json::object();
  if (c.has_attr("perm")) attrs["axes"] = c.attr_ints("perm", {});
  c.emit(out0(c), "transpose", {c.input(0)}, attrs);
}

void pad(C& c) {
  single_output(c);
  std::string mode = c.attr_string("mode", "constant");
  if (mode != "constant" && mode != "edge" && mode != "reflect") c.unsupported("mode '" + mode + "'");
  std::vector<int64_t> pads;
  double value = 0;
  if (c.opset() < 11) {
    expect_inputs(c, 1, 1);
    // Opset 1 called the attribute `paddings`; same layout.
    const char* name = c.opset() < 2 ? "paddings" : "pads";
    if (!c.has_attr(name)) c.invalid(std::string("missing attribute '") + name + "'");
    pads = c.attr_ints(name, {});
    value = c.attr_float("value", 0);
  } else {
    expect_inputs(c, 2, 3);
    pads = c.static_ints(1, "pads");
    optional_scalar(c, 2, "constant_value", &value);
  }
  int64_t rank = rank_of(c, c.input(0));
  if (static_cast<int64_t>(pads.size()) != 2 * rank)
    c.invalid("'pads' has " + std::to_string(pads.size()) + " values; the data of rank " + std::to_string(rank) +
              " needs " + std::to_string(2 * rank));
  json widths = json::array();
  for (int64_t k = 0; k < rank; ++k) {
    if (pads[k] < 0 || pads[k + rank] < 0) c.unsupported("negative pads (cropping)");
    widths.push_back({pads[k], pads[k + rank]});
  }
  c.emit(out0(c), "pad", {c.input(0)}, {{"pad_width", widths}, {"pad_value", value}, {"mode", mode}});
}

// The mean of `x` (N, C, ...) over every axis but 1, as (1, C, 1, 1): a global average
// pool of the data rearranged to (1, C, N, rest).
std::string channel_mean(C& c, const std::string& x) {
  auto s = c.type_of(x).shape;
  int64_t rest = 1;
  for (size_t k = 2; k < s.size(); ++k) rest *= s[k];
  std::string a = c.emit(c.temp("ncs"), "reshape", {x}, {{"newshape", {s[0], s[1], rest}}});
  std::string t = c.emit(c.temp("cns"), "transpose", {a}, {{"axes", {1, 0, 2}}});
  std::string b = c.emit(c.temp("1cns"), "reshape", {t}, {{"newshape", {1, s[1], s[0], rest}}});
  return c.emit(c.temp("mean"), "global_avg_pool2d", {b});
}

// training_mode = 1 (opset 14+): normalizes with the batch's own statistics (the mean
// and the biased variance over every axis but 1) and outputs the running statistics
// updated as running·momentum + batch·(1 - momentum). Deterministic: plain graph ops.
void batch_norm_training(C& c, const std::vector<std::string>& ins, double eps, double momentum) {
  auto s = c.type_of(ins[0]).shape;
  int64_t ch = s[1];
  std::vector<int64_t> bshape(s.size(), 1);
  bshape[1] = ch;
  std::string mean4 = channel_mean(c, ins[0]);
  std::string mean_b = c.emit(c.temp("mean_b"), "reshape", {mean4}, {{"newshape", bshape}});
  std::string diff = c.emit(c.temp("diff"), "sub", {ins[0], mean_b});
  std::string sq = c.emit(c.temp("sq"), "mul", {diff, diff});
  std::string var4 = channel_mean(c, sq);
  std::string mean = c.emit(c.temp("batch_mean"), "reshape", {mean4}, {{"newshape", {ch}}});
  std::string var = c.emit(c.temp("batch_var"), "reshape", {var4}, {{"newshape", {ch}}});
  c.emit(out0(c), "batch_norm", {ins[0], ins[1], ins[2], mean, var}, {{"epsilon", eps}, {"axis", 1}});
  auto scalar = [&](const std::string& hint, double v) {
    std::string name = c.temp(hint);
    NDArray a = NDArray::zeros(DataType::Float(32), {1});
    a.set_float(0, v);
    c.add_constant(name, std::move(a));
    return name;
  };
  std::string keep = scalar("momentum", momentum), take = scalar("one_minus_momentum", 1.0 - momentum);
  for (int k = 1; k <= 2; ++k) {
    std::string out = k < c.node().output_size() ? c.node().output(k) : "";
    if (out.empty()) continue;
    std::string running = c.emit(c.temp("running"), "mul", {ins[2 + k], keep});
    std::string batch = c.emit(c.temp("batch"), "mul", {k == 1 ? mean : var, take});
    c.emit(out, "add", {running, batch});
  }
}

// spatial = 0 (opsets 1-8): the statistics are per activation, of shape (C, D1, ...),
// which numpy broadcasting aligns with the data's trailing axes:
// y = (x - mean) / sqrt(var + epsilon) * scale + B.
void batch_norm_per_activation(C& c, const std::vector<std::string>& ins, double eps) {
  auto xs = c.type_of(ins[0]).shape;
  std::vector<int64_t> want(xs.begin() + 1, xs.end());
  for (size_t i = 1; i < 5; ++i) {
    auto s = c.type_of(ins[i]).shape;
    if (s != want && !(s.size() == 1 && s[0] == xs[1]))
      c.invalid("with spatial = 0, input " + std::to_string(i) + " has shape " + json(s).dump() + ", not " +
                json(want).dump());
  }
  // A (C,) statistic (allowed too) is per channel: reshaped to (C, 1, ...).
  auto per_activation = [&](size_t i) {
    if (c.type_of(ins[i]).shape == want) return ins[i];
    std::vector<int64_t> shape(want.size(), 1);
    shape[0] = xs[1];
    return c.emit(c.temp("stat"), "reshape", {ins[i]}, {{"newshape", shape}});
  };
  std::string epsilon = c.temp("epsilon");
  NDArray e = NDArray::zeros(c.type_of(ins[4]).dtype, {1});
  e.set_float(0, eps);
  c.add_constant(epsilon, std::move(e));
  std::string std_dev = c.emit(c.temp("std"), "sqrt", {c.emit(c.temp("var_eps"), "add", {per_activation(4), epsilon})});
  std::string centred = c.emit(c.temp("centred"), "sub", {ins[0], per_activation(3)});
  std::string normed = c.emit(c.temp("normed"), "div", {centred, std_dev});
  std::string scaled = c.emit(c.temp("scaled"), "mul", {normed, per_activation(1)});
  c.emit(out0(c), "add", {scaled, per_activation(2)});
}

void batch_norm(C& c) {
  expect_inputs(c, 5, 5);
  bool training = c.attr_int("training_mode", 0) != 0;
  if (training && c.opset() < 14) c.invalid("attribute 'training_mode' before opset 14");
  // Training mode has the running mean and variance as outputs 1 and 2.
  for (int k = training ? 3 : 1; k < c.node().output_size(); ++k)
    if (!c.node().output(k).empty()) c.unsupported("output " + std::to_string(k) + " ('" + c.node().output(k) + "')");
  // Before opset 7 the default was training (is_test = 0): only is_test = 1 is read.
  if (c.opset() < 7 && c.attr_int("is_test", 0) == 0)
    c.unsupported("is_test = 0 (training, the default before opset 7; this model has opset " +
                  std::to_string(c.opset()) + ")");
  bool spatial = c.opset() < 9 ? c.attr_int("spatial", 1) != 0 : true;
  double momentum = c.attr_float("momentum", 0.9);  // only used in training
  double eps = c.attr_float("epsilon", 1e-5);
  std::vector<std::string> ins;
  for (size_t i = 0; i < 5; ++i) ins.push_back(c.input(i));
  if (rank_of(c, ins[0]) < 2) c.unsupported("data of rank below 2");
  if (training) return batch_norm_training(c, ins, eps, momentum);
  if (!spatial) return batch_norm_per_activation(c, ins, eps);
  c.emit(out0(c), "batch_norm", ins, {{"epsilon", eps}, {"axis", 1}});
}

void identity(C& c) {
  expect_inputs(c, 1, 1);
  single_output(c);
  c.alias(out0(c), c.input(0));
}

// Dropout at inference (or with ratio 0) is the identity, and its mask (output 1) is
// all true: a `full` node (bool from opset 10, the data's type before). Training with a
// non-zero ratio (random masks) is refused.
void dropout(C& c) {
  expect_inputs(c, 1, 3);
  for (int k = 2; k < c.node().output_size(); ++k)
    if (!c.node().output(k).empty()) c.unsupported("output " + std::to_string(k) + " ('" + c.node().output(k) + "')");
  c.attr_float("ratio", 0.5);
  c.attr_int("seed", 0);
  if (c.opset() < 7 && c.attr_int("is_test", 0) == 0)
    c.unsupported("is_test = 0 (training, the default before opset 7; this model has opset " +
                  std::to_string(c.opset()) + ")");
  if (!c.input(2).empty()) {
    const NDArray& training = c.static_value(2, "training_mode");
    double ratio = 0.5;
    if (!c.input(1).empty()) {
      const NDArray& r = c.static_value(1, "ratio");
      ratio = r.dtype.is_float() ? r.get_float(0) : 0.5;
    }
    if (training.num_elements() != 1) c.invalid("input 'training_mode' must be a scalar");
    if (training.get_int(0) != 0 && ratio != 0) c.unsupported("training_mode = true (random dropout)");
  }
  c.alias(out0(c), c.input(0));
  if (c.node().output_size() > 1 && !c.node().output(1).empty()) {
    TensorType t = c.type_of(c.input(0));
    c.emit(c.node().output(1), "full", {},
           {{"shape", t.shape}, {"value", 1}, {"dtype", c.opset() >= 10 ? "bool" : t.dtype.str()}});
  }
}

// GlobalMaxPool is a max pool whose window is the whole image.
void global_max_pool(C& c) {
  expect_inputs(c, 1, 1);
  single_output(c);
  auto shape = c.type_of(c.input(0)).shape;
  if (shape.size() != 4) c.unsupported("only 4-D (NCHW) data is supported; the data has rank " + std::to_string(shape.size()));
  c.emit(out0(c), "max_pool2d", {c.input(0)}, {{"pool_size", {shape[2], shape[3]}}});
}

NDArray scalar_or_list(DataType dt, const std::vector<double>& v, bool scalar) {
  NDArray a = NDArray::zeros(dt, scalar ? std::vector<int64_t>{} : std::vector<int64_t>{static_cast<int64_t>(v.size())});
  for (size_t i = 0; i < v.size(); ++i) {
    if (dt.is_float()) a.set_float(static_cast<int64_t>(i), v[i]);
    else a.set_int(static_cast<int64_t>(i), static_cast<int64_t>(v[i]));
  }
  return a;
}

void constant(C& c) {
  expect_inputs(c, 0, 0);
  single_output(c);
  if (c.node().attribute_size() != 1) c.invalid("expected exactly one value attribute");
  const std::string name = c.node().attribute(0).name();
  const OnnxAttribute* a = c.attr(name);
  NDArray v;
  if (name == "value") {
    v = onnx_tensor_to_ndarray(a->t(), "the value of Constant '" + out0(c) + "'");
  } else if (name == "value_float") {
    v = scalar_or_list(DataType::Float(32), {a->f()}, true);
  } else if (name == "value_floats") {
    v = scalar_or_list(DataType::Float(32), std::vector<double>(a->floats().begin(), a->floats().end()), false);
  } else if (name == "value_int") {
    v = scalar_or_list(DataType::Int(64), {static_cast<double>(a->i())}, true);
  } else if (name == "value_ints") {
    std::vector<double> d;
    for (int64_t x : a->ints()) d.push_back(static_cast<double>(x));
    v = scalar_or_list(DataType::Int(64), d, false);
  } else {
    c.unsupported("attribute '" + name + "'");
  }
  c.add_constant(out0(c), std::move(v));
}

// Squeeze and Unsqueeze are reshapes; their axes come from an attribute before opset
// 13 and from a compile-time input after.
std::vector<int64_t> axes_of(C& c, bool required) {
  if (c.opset() < 13) {
    if (required && !c.has_attr("axes")) c.invalid("missing attribute 'axes'");
    return c.attr_ints("axes", {});
  }
  expect_inputs(c, required ? 2 : 1, 2);
  if (c.input(1).empty()) return {};
  return c.static_ints(1, "axes");
}

void squeeze(C& c) {
  single_output(c);
  auto shape = c.type_of(c.input(0)).shape;
  int64_t rank = static_cast<int64_t>(shape.size());
  std::vector<int64_t> axes = axes_of(c, false);
  std::vector<bool> drop(shape.size(), false);
  if (axes.empty()) {
    for (size_t k = 0; k < shape.size(); ++k) drop[k] = shape[k] == 1;
  }
  for (int64_t a : axes) {
    if (a < -rank || a >= rank) c.invalid("axis " + std::to_string(a) + " is out of range");
    if (a < 0) a += rank;
    if (shape[a] != 1) c.invalid("cannot squeeze axis " + std::to_string(a) + " of size " + std::to_string(shape[a]));
    drop[a] = true;
  }
  std::vector<int64_t> out;
  for (size_t k = 0; k < shape.size(); ++k)
    if (!drop[k]) out.push_back(shape[k]);
  if (out.empty()) c.unsupported("squeezing to a scalar (rank 0)");
  c.emit(out0(c), "reshape", {c.input(0)}, {{"newshape", out}});
}

void unsqueeze(C& c) {
  single_output(c);
  auto shape = c.type_of(c.input(0)).shape;
  std::vector<int64_t> axes = axes_of(c, true);
  int64_t rank = static_cast<int64_t>(shape.size() + axes.size());
  std::vector<bool> inserted(rank, false);
  for (int64_t a : axes) {
    if (a < -rank || a >= rank) c.invalid("axis " + std::to_string(a) + " is out of range");
    if (a < 0) a += rank;
    if (inserted[a]) c.invalid("axis " + std::to_string(a) + " is given twice");
    inserted[a] = true;
  }
  std::vector<int64_t> out;
  size_t next = 0;
  for (int64_t k = 0; k < rank; ++k) out.push_back(inserted[k] ? 1 : shape[next++]);
  c.emit(out0(c), "reshape", {c.input(0)}, {{"newshape", out}});
}

// Upsample (opsets 7-9; deprecated by Resize in 10) in mode 'nearest' with whole
// scales: output[i] = input[floor(i / scale)] repeats each element `scale` times along
// each axis. Done as a reshape to (..., d, 1, ...), a multiply by ones of shape
// (..., 1, scale, ...) (numpy broadcasting repeats; x * 1 is exact), and a reshape back.
void upsample(C& c) {
  single_output(c);
  std::string mode = c.attr_string("mode", "nearest");
  if (mode != "nearest") c.unsupported("mode '" + mode + "' (only 'nearest' is supported)");
  auto shape = c.type_of(c.input(0)).shape;
  std::vector<double> scales;
  if (c.opset() < 7) {
    // Opset 1: height_scale and width_scale of 4-D (NCHW) data.
    expect_inputs(c, 1, 1);
    if (shape.size() != 4) c.unsupported("Upsample of opset 1 on data of rank " + std::to_string(shape.size()));
    if (!c.has_attr("height_scale") || !c.has_attr("width_scale"))
      c.invalid("missing attribute 'height_scale' or 'width_scale'");
    scales = {1.0, 1.0, c.attr_float("height_scale", 1), c.attr_float("width_scale", 1)};
  } else if (c.opset() < 9) {
    expect_inputs(c, 1, 1);
    if (!c.has_attr("scales")) c.invalid("missing attribute 'scales'");
    const OnnxAttribute* a = c.attr("scales");
    scales.assign(a->floats().begin(), a->floats().end());
  } else {
    expect_inputs(c, 2, 2);
    const NDArray& v = c.static_value(1, "scales");
    for (int64_t i = 0; i < v.num_elements(); ++i) scales.push_back(v.dtype.is_float() ? v.get_float(i) : 0.0);
  }
  if (scales.size() != shape.size())
    c.invalid("'scales' has " + std::to_string(scales.size()) + " values for data of rank " +
              std::to_string(shape.size()));
  std::vector<int64_t> split, ones, out;
  for (size_t k = 0; k < shape.size(); ++k) {
    double s = scales[k];
    if (!(s >= 1) || s != std::floor(s) || s > 1024)
      c.unsupported("scale " + json(s).dump() + " on axis " + std::to_string(k) +
                    " (only whole scales from 1 are supported)");
    auto whole = static_cast<int64_t>(s);
    split.insert(split.end(), {shape[k], 1});
    ones.insert(ones.end(), {1, whole});
    out.push_back(shape[k] * whole);
  }
  TensorType t = c.type_of(c.input(0));
  if (!t.dtype.is_float()) c.unsupported("data of type " + t.dtype.str() + " (float only)");
  std::string x = c.emit(c.temp("split"), "reshape", {c.input(0)}, {{"newshape", split}});
  std::string one = c.emit(c.temp("ones"), "full", {}, {{"shape", ones}, {"value", 1}, {"dtype", t.dtype.str()}});
  std::string rep = c.emit(c.temp("repeated"), "mul", {x, one});
  c.emit(out0(c), "reshape", {rep}, {{"newshape", out}});
}

// ConvTranspose on 1 to 3 spatial axes is our conv_transpose. `output_shape` (or
// auto_pad SAME_*, whose output is input * stride) sets the padding: the total
// stride * (in - 1) + output_padding + dilated kernel - output, split as ONNX's reference
// does (floor(total / 2) at the end, or at the start with SAME_UPPER).
void conv_transpose(C& c) {
  expect_inputs(c, 2, 3);
  single_output(c);
  std::string data = c.input(0), weight = c.input(1);
  const auto& xs = c.type_of(data).shape;
  const auto& ws = c.type_of(weight).shape;
  if (xs.size() < 3 || xs.size() > 5)
    c.unsupported("only 1-D, 2-D and 3-D transposed convolutions; the data has rank " + std::to_string(xs.size()));
  if (ws.size() != xs.size()) c.invalid("the data and the weight have different ranks");
  size_t dims = xs.size() - 2;
  std::vector<int64_t> kernel(ws.begin() + 2, ws.end());
  if (c.attr_ints("kernel_shape", kernel) != kernel) c.invalid("attribute 'kernel_shape' does not match the weight");
  auto strides = c.attr_ints("strides", std::vector<int64_t>(dims, 1));
  auto dilations = c.attr_ints("dilations", std::vector<int64_t>(dims, 1));
  auto output_padding = c.attr_ints("output_padding", std::vector<int64_t>(dims, 0));
  auto pads = c.attr_ints("pads", std::vector<int64_t>(2 * dims, 0));
  auto output_shape = c.attr_ints("output_shape", {});
  std::string auto_pad = c.attr_string("auto_pad", "NOTSET");
  if (strides.size() != dims || dilations.size() != dims || output_padding.size() != dims || pads.size() != 2 * dims)
    c.invalid("attributes 'strides', 'dilations' and 'output_padding' need " + std::to_string(dims) +
              " values and 'pads' " + std::to_string(2 * dims));
  if (auto_pad != "NOTSET" && auto_pad != "VALID" && auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER")
    c.invalid("attribute 'auto_pad' is '" + auto_pad + "'");
  if (output_shape.size() == dims + 2) output_shape.erase(output_shape.begin(), output_shape.begin() + 2);
  if (output_shape.empty() && (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER"))
    for (size_t k = 0; k < dims; ++k) output_shape.push_back(xs[2 + k] * strides[k]);
  if (!output_shape.empty()) {
    if (output_shape.size() != dims) c.invalid("attribute 'output_shape' needs " + std::to_string(dims) + " values");
    for (size_t k = 0; k < dims; ++k) {
      int64_t total = strides[k] * (xs[2 + k] - 1) + output_padding[k] + (kernel[k] - 1) * dilations[k] + 1 -
                      output_shape[k];
      int64_t half = total >= 0 ? total / 2 : -((1 - total) / 2);  // floor(total / 2), as the reference
      pads[k] = auto_pad == "SAME_UPPER" ? half : total - half;
      pads[k + dims] = total - pads[k];
      // A negative end pad (an output_shape one past the full output) extends the end
      // with the bias alone: output_padding does exactly that.
      if (pads[k + dims] < 0 && pads[k] >= 0) output_padding[k] -= pads[k + dims], pads[k + dims] = 0;
      if (pads[k] < 0 || pads[k + dims] < 0)
        c.unsupported("an output_shape that pads the start of the output (negative 'pads')");
    }
  } else if (auto_pad == "VALID") {
    pads.assign(2 * dims, 0);
  }
  json attrs = {{"strides", strides}, {"padding", pads}, {"dilation", dilations},
                {"output_padding", output_padding}, {"groups", c.attr_int("group", 1)}};
  std::vector<std::string> ins = {data, weight};
  if (!c.input(2).empty()) ins.push_back(c.input(2));
  c.emit(out0(c), "conv_transpose", ins, attrs);
}

// Max and Min of any number of inputs (numpy broadcasting): a chain of binary maximum
// or minimum nodes; one input is a copy.
void variadic(C& c, const std::string& op) {
  single_output(c);
  size_t n = c.num_inputs();
  if (n == 0) c.invalid("expected at least 1 input");
  for (size_t i = 0; i < n; ++i)
    if (c.input(i).empty()) c.invalid("input " + std::to_string(i) + " is empty");
  if (n == 1) {
    c.emit(out0(c), "reshape", {c.input(0)}, {{"newshape", c.type_of(c.input(0)).shape}});
    return;
  }
  std::string acc = c.input(0);
  for (size_t i = 1; i < n; ++i) acc = c.emit(i + 1 == n ? out0(c) : c.temp(op), op, {acc, c.input(i)});
}

using Mapping = std::function<void(C&)>;

const std::map<std::string, Mapping>& mappings() {
  static const std::map<std::string, Mapping> m = {
      {"Abs", [](C& c) { unary(c, "abs"); }},
      {"Add", [](C& c) { binary(c, "add"); }},
      {"AveragePool", [](C& c) { pool(c, "avg_pool2d"); }},
      {"BatchNormalization", batch_norm},
      {"Clip", clip},
      {"Concat", concat},
      {"Constant", constant},
      {"Conv", conv},
      {"ConvTranspose", conv_transpose},
      {"Div", [](C& c) { binary(c, "div"); }},
      {"Dropout", dropout},
      {"Exp", [](C& c) { unary(c, "exp"); }},
      {"Flatten", flatten},
      {"Gemm", gemm},
      {"GlobalAveragePool", global_avg_pool},
      {"GlobalMaxPool", global_max_pool},
      {"Identity", identity},
      {"LeakyRelu", [](C& c) { unary(c, "leaky_relu", {{"alpha", c.attr_float("alpha", 0.01)}}); }},
      {"LogSoftmax", [](C& c) { softmax(c, "log_softmax"); }},
      {"MatMul", matmul},
      {"Max", [](C& c) { variadic(c, "maximum"); }},
      {"MaxPool", [](C& c) { pool(c, "max_pool2d"); }},
      {"Min", [](C& c) { variadic(c, "minimum"); }},
      {"Mul", [](C& c) { binary(c, "mul"); }},
      {"Neg", [](C& c) { unary(c, "neg"); }},
      {"Pad", pad},
      {"Relu", [](C& c) { unary(c, "relu"); }},
      {"Reshape", reshape},
      {"Sigmoid", [](C& c) { unary(c, "sigmoid"); }},
      {"Softmax", [](C& c) { softmax(c, "softmax"); }},
      {"Sqrt", [](C& c) { unary(c, "sqrt"); }},
      {"Squeeze", squeeze},
      {"Sub", [](C& c) { binary(c, "sub"); }},
      {"Tanh", [](C& c) { unary(c, "tanh"); }},
      {"Transpose", transpose},
      {"Unsqueeze", unsqueeze},
      {"Upsample", upsample},
  };
  return m;
}

}  // namespace

void convert_onnx_node(OnnxConverter& c) {
  const auto& m = mappings();
  const auto& quant = onnx_quant_mappings();
  auto it = m.find(c.node().op_type());
  auto qit = quant.find(c.node().op_type());
  if (it == m.end() && qit == quant.end()) c.unsupported("operator '" + c.node().op_type() + "'");
  const Mapping& mapping = it != m.end() ? it->second : qit->second;
  if (c.node().output_size() < 1 || c.node().output(0).empty()) c.invalid("the node has no output");
  // Opsets 1-5 let elementwise ops and BatchNormalization name `consumed_inputs`, a
  // hint for in-place updates with no effect on the values.
  if (c.opset() < 6 && c.has_attr("consumed_inputs")) c.attr("consumed_inputs");
  mapping(c);
}

const std::vector<std::string>& supported_onnx_ops() {
  static const std::vector<std::string> v = [] {
    std::vector<std::string> names;
    for (const auto& kv : mappings()) names.push_back(kv.first);
    for (const auto& kv : onnx_quant_mappings()) names.push_back(kv.first);
    std::sort(names.begin(), names.end());
    return names;
  }();
  return v;
}

}  // namespace mtir
