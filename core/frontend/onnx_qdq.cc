// QDQ folding: quantized ONNX models as onnxruntime's quantizer and PyTorch's exporters
// write them, float operators between DequantizeLinear and QuantizeLinear,
//
//   x_q -> DQ -> x ┐
//   w_q -> DQ -> w ┼-> Conv | Gemm | MatMul [-> Relu] -> QuantizeLinear -> y_q
//   b_q -> DQ -> b ┘
//
// become one integer kernel (qlinear_conv, qlinear_matmul) computing what the
// QOperator form (QLinearConv, QLinearMatMul) computes: the exact int32 accumulator,
// then ONNX's requantization (round half to even of acc * x_scale * w_scale / y_scale).
// That is the meaning QDQ stands for; the float graph computes it up to float rounding.
// Add (two dequantized inputs) becomes qlinear_add: the float graph's own float32 steps
// fused, so the same bits without the float intermediates.
// MaxPool and the data movement ops (Flatten, Reshape, Transpose, Squeeze, Unsqueeze)
// between a DQ and a Q of the same scale and zero point run on the quantized tensor as
// they are (max and moves commute with a monotone quantization); so does a Concat whose
// inputs all have the output's scale and zero point. AveragePool and
// GlobalAveragePool there become qlinear_avg_pool: the exact mean, rounded half to even.
//
// A group folds only when it is exact: constant weights (initializers) quantized per
// tensor or per output channel, an int32 bias whose scale is x_scale * w_scale (as
// float32) with zero point 0, one consumer along the chain. Anything else stays float,
// and a note says why. Planning happens before conversion, so the DQ, Relu and Q nodes a
// group absorbs are never emitted.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "frontend/onnx_convert.h"
#include "support/diagnostic.h"

namespace mtir {

namespace {

using Node = OnnxNode;

bool is_q8(DataType t) { return t == DataType::Int(8) || t == DataType::UInt(8); }

int64_t int_attr(const Node& n, const std::string& name, int64_t def) {
  for (const auto& a : n.attribute())
    if (a.name() == name && a.type() == OnnxAttribute::kInt) return a.i();
  return def;
}

double float_attr(const Node& n, const std::string& name, double def) {
  for (const auto& a : n.attribute())
    if (a.name() == name && a.type() == OnnxAttribute::kFloat) return a.f();
  return def;
}

std::string label(const Node& n) { return "'" + (n.output_size() ? n.output(0) : n.name()) + "' (" + n.op_type() + ")"; }

// The graph's wiring: who makes and who reads each tensor.
struct Wiring {
  std::map<std::string, const Node*> producer;
  std::map<std::string, std::vector<const Node*>> consumers;
  std::set<std::string> outputs;
};

// The scale and zero point of a DequantizeLinear or QuantizeLinear, when both are
// constants (the zero point may be absent: zeros).
struct Affine {
  std::vector<double> scale;  // float32 values
  std::vector<int64_t> zero_point;
  DataType zero_type;
  bool zero_given = false;
  int64_t axis = 1;
};

bool read_affine(OnnxConverter& c, const Node& n, Affine* a, std::string* why) {
  const NDArray* s = n.input_size() > 1 ? c.constant(n.input(1)) : nullptr;
  if (!s || s->dtype != DataType::Float(32) || s->shape.size() > 1) {
    *why = "the scale of " + label(n) + " is not a constant float32 scalar or vector";
    return false;
  }
  for (int64_t k = 0; k < s->num_elements(); ++k) a->scale.push_back(s->get_float(k));
  a->axis = int_attr(n, "axis", 1);
  if (n.input_size() > 2 && !n.input(2).empty()) {
    const NDArray* z = c.constant(n.input(2));
    if (!z || z->num_elements() != s->num_elements()) {
      *why = "the zero point of " + label(n) + " is not a constant of the scale's length";
      return false;
    }
    a->zero_given = true;
    a->zero_type = z->dtype;
    for (int64_t k = 0; k < z->num_elements(); ++k) a->zero_point.push_back(z->get_int(k));
  } else {
    a->zero_point.assign(a->scale.size(), 0);
  }
  return true;
}

bool same_bits(double a, double b) {
  float fa = static_cast<float>(a), fb = static_cast<float>(b);
  return std::memcmp(&fa, &fb, sizeof fa) == 0;
}

const std::set<std::string>& matrix_ops() {
  static const std::set<std::string> s = {"Conv", "Gemm", "MatMul"};
  return s;
}
const std::set<std::string>& pass_through_ops() {
  static const std::set<std::string> s = {"MaxPool", "Flatten", "Reshape", "Transpose", "Squeeze", "Unsqueeze",
                                          "AveragePool", "GlobalAveragePool", "Concat"};
  return s;
}
bool is_avg_pool(const Node& n) { return n.op_type() == "AveragePool" || n.op_type() == "GlobalAveragePool"; }

// The DQ producing input `i` of `n`, or null.
const Node* dequant_of(const Wiring& w, const Node& n, int i) {
  if (i >= n.input_size() || n.input(i).empty()) return nullptr;
  auto p = w.producer.find(n.input(i));
  return p != w.producer.end() && p->second->op_type() == "DequantizeLinear" ? p->second : nullptr;
}

// The one node reading `name`, or null (several readers, or a graph output).
const Node* single_consumer(const Wiring& w, const std::string& name) {
  auto it = w.consumers.find(name);
  if (w.outputs.count(name) || it == w.consumers.end() || it->second.size() != 1) return nullptr;
  return it->second[0];
}

// Whether a matrix group is exact; `why` says what is not.
bool matrix_group_exact(OnnxConverter& c, const QdqGroup& g, std::string* why) {
  const Node& op = *g.op;
  Affine x, w, y;
  if (!read_affine(c, *g.dequant[0], &x, why) || !read_affine(c, *g.dequant[1], &w, why) ||
      !read_affine(c, *g.quant, &y, why))
    return false;
  if (x.scale.size() != 1 || y.scale.size() != 1) {
    *why = "per-axis activation scales";
    return false;
  }
  if (y.zero_given && !is_q8(y.zero_type)) {
    *why = "the output is quantized to " + y.zero_type.str();
    return false;
  }
  const NDArray* wq = c.constant(g.dequant[1]->input(0));
  if (!wq || !is_q8(wq->dtype)) {
    *why = "the weight is not a constant int8 or uint8 tensor (an initializer)";
    return false;
  }
  int64_t rank = static_cast<int64_t>(wq->shape.size());
  int64_t out_axis = 0;  // the weight's output-channel axis
  if (op.op_type() == "Conv") {
    if (rank != 4) {
      *why = "only 2-D convolutions fold";
      return false;
    }
  } else {
    if (rank != 2) {
      *why = "the weight has rank " + std::to_string(rank);
      return false;
    }
    bool trans_b = op.op_type() == "Gemm" && int_attr(op, "transB", 0) != 0;
    out_axis = trans_b ? 0 : 1;
    if (op.op_type() == "Gemm" && (float_attr(op, "alpha", 1) != 1 || float_attr(op, "beta", 1) != 1 ||
                                   int_attr(op, "transA", 0) != 0)) {
      *why = "Gemm with alpha or beta other than 1, or transA";
      return false;
    }
  }
  int64_t channels = wq->shape[out_axis];
  if (w.scale.size() != 1) {
    int64_t axis = w.axis < 0 ? w.axis + rank : w.axis;
    if (axis != out_axis || static_cast<int64_t>(w.scale.size()) != channels) {
      *why = "the weight's scales are not per output channel";
      return false;
    }
  }
  if (g.dequant.size() > 2 && g.dequant[2]) {
    Affine b;
    if (!read_affine(c, *g.dequant[2], &b, why)) return false;
    const NDArray* bq = c.constant(g.dequant[2]->input(0));
    if (!bq || bq->dtype != DataType::Int(32) || bq->shape != std::vector<int64_t>{channels}) {
      *why = "the bias is not a constant int32 vector of " + std::to_string(channels);
      return false;
    }
    for (size_t k = 0; k < b.scale.size(); ++k) {
      double want = static_cast<float>(x.scale[0]) * static_cast<float>(w.scale[w.scale.size() == 1 ? 0 : k]);
      if (b.zero_point[k] != 0 || !same_bits(b.scale[k], want)) {
        *why = "the bias's scale is not x_scale * w_scale (or its zero point is not 0)";
        return false;
      }
    }
    if (b.scale.size() != 1 && static_cast<int64_t>(b.scale.size()) != channels) {
      *why = "the bias's scales do not match the channels";
      return false;
    }
  } else if (op.input_size() > 2 && !op.input(2).empty()) {
    *why = "the bias is float (not an int32 DequantizeLinear)";
    return false;
  }
  return true;
}

bool pass_through_exact(OnnxConverter& c, const QdqGroup& g, std::string* why) {
  Affine y;
  if (!read_affine(c, *g.quant, &y, why)) return false;
  for (const Node* dq : g.dequant) {
    Affine x;
    if (!read_affine(c, *dq, &x, why)) return false;
    bool same = x.scale.size() == 1 && y.scale.size() == 1 && same_bits(x.scale[0], y.scale[0]) &&
                x.zero_point == y.zero_point && (!x.zero_given || !y.zero_given || x.zero_type == y.zero_type);
    if (!same) {
      *why = g.dequant.size() == 1 ? "its input and output have different scales or zero points"
                                   : "its inputs and output do not all have one scale and zero point";
      return false;
    }
  }
  if (g.op->op_type() == "AveragePool") {
    bool unit_dilation = true;
    for (const auto& a : g.op->attribute())
      if (a.name() == "dilations")
        for (int64_t d : a.ints()) unit_dilation = unit_dilation && d == 1;
    int64_t dims = 0;
    for (const auto& a : g.op->attribute())
      if (a.name() == "kernel_shape") dims = static_cast<int64_t>(a.ints().size());
    if (int_attr(*g.op, "ceil_mode", 0) != 0 || !unit_dilation || dims != 2) {
      *why = "only 2-D AveragePool windows without ceil_mode or dilations fold";
      return false;
    }
  }
  return true;
}

bool add_group_exact(OnnxConverter& c, const QdqGroup& g, std::string* why) {
  Affine a, b, y;
  if (!read_affine(c, *g.dequant[0], &a, why) || !read_affine(c, *g.dequant[1], &b, why) ||
      !read_affine(c, *g.quant, &y, why))
    return false;
  if (a.scale.size() != 1 || b.scale.size() != 1 || y.scale.size() != 1) {
    *why = "per-axis scales";
    return false;
  }
  if (y.zero_given && !is_q8(y.zero_type)) {
    *why = "the output is quantized to " + y.zero_type.str();
    return false;
  }
  return true;
}

// A DQ is absorbed when every reader is a group's op; a pass-through group needs its
// data's DQ absorbed (its op then reads the quantized tensor). Dropping a group can
// keep another's DQ, so repeat until nothing changes. Returns how many groups were dropped.
int absorb_dequants(OnnxConverter& c, Wiring& w, QdqPlan& plan) {
  int dropped = 0;
  for (bool changed = true; changed;) {
    changed = false;
    plan.absorbed.clear();
    for (const auto& [op, g] : plan.groups) {
      if (g.relu) plan.absorbed.insert(g.relu);
      plan.absorbed.insert(g.quant);
      for (const Node* dq : g.dequant) {
        if (!dq || w.outputs.count(dq->output(0))) continue;
        bool all = true;
        for (const Node* r : w.consumers[dq->output(0)]) all = all && plan.groups.count(r);
        if (all) plan.absorbed.insert(dq);
      }
    }
    for (auto it = plan.groups.begin(); it != plan.groups.end();) {
      bool all_absorbed = true;
      for (const Node* dq : it->second.dequant) all_absorbed = all_absorbed && plan.absorbed.count(dq);
      if (it->second.kind == QdqGroup::Kind::kPassThrough && !all_absorbed) {
        c.note("QDQ: node " + label(*it->first) + " stays float: its input is also read as float elsewhere");
        ++dropped;
        it = plan.groups.erase(it);
        changed = true;
      } else {
        ++it;
      }
    }
  }
  return dropped;
}

}  // namespace

QdqPlan plan_qdq(OnnxConverter& c, const OnnxGraph& graph, const std::vector<const Node*>& order) {
  Wiring w;
  for (const Node* n : order) {
    for (const auto& o : n->output())
      if (!o.empty()) w.producer[o] = n;
    for (const auto& i : n->input())
      if (!i.empty()) w.consumers[i].push_back(n);
  }
  for (const auto& o : graph.output()) w.outputs.insert(o.name());
  QdqPlan plan;
  int kept_float = 0;
  for (const Node* n : order) {
    bool matrix = matrix_ops().count(n->op_type()) > 0;
    bool is_add = n->op_type() == "Add";
    if (!dequant_of(w, *n, 0) || n->op_type() == "QuantizeLinear") continue;  // a float op of a float model
    if (!matrix && !is_add && !pass_through_ops().count(n->op_type())) {
      c.note("QDQ: node " + label(*n) + " stays float: no integer kernel for " + n->op_type() + " folds");
      ++kept_float;
      continue;
    }
    QdqGroup g;
    g.kind = matrix ? QdqGroup::Kind::kMatrix : is_add ? QdqGroup::Kind::kAdd : QdqGroup::Kind::kPassThrough;
    g.op = n;
    std::string why;
    const Node* next = n->output_size() == 1 ? single_consumer(w, n->output(0)) : nullptr;
    if ((matrix || is_add) && next && next->op_type() == "Relu") {
      g.relu = next;
      next = single_consumer(w, next->output(0));
    }
    if (!next || next->op_type() != "QuantizeLinear") {
      why = "its output is not quantized (no single QuantizeLinear after it)";
    } else {
      g.quant = next;
      bool concat = n->op_type() == "Concat";
      int inputs = matrix ? std::min(n->input_size(), 3) : is_add ? 2 : concat ? n->input_size() : 1;
      for (int i = 0; i < inputs; ++i) g.dequant.push_back(dequant_of(w, *n, i));
      if (matrix && !g.dequant[1]) why = "its weight is not dequantized";
      else if (is_add && !g.dequant[1]) why = "its second input is not dequantized";
      else if (concat && std::count(g.dequant.begin(), g.dequant.end(), nullptr)) why = "an input is not dequantized";
      else if (matrix) matrix_group_exact(c, g, &why);
      else if (is_add) add_group_exact(c, g, &why);
      else pass_through_exact(c, g, &why);
    }
    if (!why.empty()) {
      c.note("QDQ: node " + label(*n) + " stays float: " + why);
      ++kept_float;
      continue;
    }
    plan.groups[n] = g;
  }
  kept_float += absorb_dequants(c, w, plan);
  if (!plan.groups.empty()) {
    int matrix = 0;
    for (const auto& [op, g] : plan.groups) matrix += g.kind == QdqGroup::Kind::kMatrix;
    c.note("QDQ: " + std::to_string(plan.groups.size()) + " group(s) folded to integer kernels (" +
           std::to_string(matrix) + " qlinear_conv/qlinear_matmul), " + std::to_string(kept_float) + " kept float");
  }
  return plan;
}

namespace {

std::vector<int64_t> ints_of(const NDArray& a) {
  std::vector<int64_t> v;
  for (int64_t k = 0; k < a.num_elements(); ++k) v.push_back(a.get_int(k));
  return v;
}

void convert_matrix(OnnxConverter& c, const QdqGroup& g) {
  const Node& op = *g.op;
  const Node& qn = *g.quant;
  Affine x, w, y;
  std::string why;
  read_affine(c, *g.dequant[0], &x, &why);
  read_affine(c, *g.dequant[1], &w, &why);
  read_affine(c, qn, &y, &why);
  std::string xq = c.resolved(g.dequant[0]->input(0));
  DataType xt = c.type_of(xq).dtype;
  if (!is_q8(xt)) c.invalid("the dequantized data '" + xq + "' has type " + xt.str() + ", not int8 or uint8");
  std::string wname = c.resolved(g.dequant[1]->input(0));
  const NDArray& wq = *c.constant(wname);
  bool conv = op.op_type() == "Conv";
  bool trans_b = op.op_type() == "Gemm" && c.attr_int("transB", 0) != 0;
  if (op.op_type() == "Gemm") {
    c.attr_float("alpha", 1), c.attr_float("beta", 1), c.attr_int("transA", 0);
  }
  int64_t channels = conv || trans_b ? wq.shape[0] : wq.shape[1];
  std::vector<int64_t> bias;
  if (g.dequant.size() > 2 && g.dequant[2]) bias = ints_of(*c.constant(g.dequant[2]->input(0)));
  std::vector<std::pair<int64_t, int64_t>> mult;
  for (double ws : w.scale) mult.push_back(onnx_multiplier(c, x.scale[0], ws, y.scale[0]));
  std::string params = params_table(c, static_cast<size_t>(channels), w.zero_point, bias, mult);
  DataType yt = y.zero_given ? y.zero_type : DataType::UInt(8);
  nlohmann::json attrs = {{"data_zero_point", x.zero_point[0]},
                          {"output_zero_point", y.zero_point[0]},
                          {"output_dtype", yt.str()},
                          {"relu", g.relu != nullptr},
                          {"symmetric_weights", std::all_of(w.zero_point.begin(), w.zero_point.end(),
                                                            [](int64_t z) { return z == 0; })}};
  const std::string out = qn.output(0);
  if (conv) {
    if (c.type_of(xq).shape.size() != 4) c.unsupported("QDQ Conv on data of rank " + std::to_string(c.type_of(xq).shape.size()));
    Window win = read_window(c, xq, std::vector<int64_t>(wq.shape.begin() + 2, wq.shape.end()));
    attrs["strides"] = win.strides;
    attrs["padding"] = win.pads;
    attrs["dilation"] = win.dilations;
    attrs["groups"] = c.attr_int("group", 1);
    c.emit(out, "qlinear_conv", {xq, wname, params}, attrs);
    return;
  }
  if (trans_b) {
    // qlinear_matmul reads B as (K, N): the weight transposed once, at compile time.
    int64_t n = wq.shape[0], k = wq.shape[1];
    NDArray t = NDArray::zeros(wq.dtype, {k, n});
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < k; ++j) t.set_int(j * n + i, wq.get_int(i * k + j));
    wname = c.temp("weight_kn");
    c.add_constant(wname, std::move(t));
  }
  c.emit(out, "qlinear_matmul", {xq, wname, params}, attrs);
}

// Add: qlinear_add, the float graph's arithmetic fused (bit-identical to it).
void convert_add(OnnxConverter& c, const QdqGroup& g) {
  Affine a, b, y;
  std::string why;
  read_affine(c, *g.dequant[0], &a, &why);
  read_affine(c, *g.dequant[1], &b, &why);
  read_affine(c, *g.quant, &y, &why);
  std::string aq = c.resolved(g.dequant[0]->input(0)), bq = c.resolved(g.dequant[1]->input(0));
  for (const auto& in : {aq, bq})
    if (!is_q8(c.type_of(in).dtype)) c.invalid("the dequantized input '" + in + "' is not int8 or uint8");
  DataType yt = y.zero_given ? y.zero_type : DataType::UInt(8);
  c.emit(g.quant->output(0), "qlinear_add", {aq, bq},
         {{"a_scale", a.scale[0]}, {"a_zero_point", a.zero_point[0]}, {"b_scale", b.scale[0]},
          {"b_zero_point", b.zero_point[0]}, {"output_scale", y.scale[0]}, {"output_zero_point", y.zero_point[0]},
          {"output_dtype", yt.str()}, {"relu", g.relu != nullptr}});
}

// AveragePool / GlobalAveragePool with the same scale and zero point in and out:
// qlinear_avg_pool, the exact mean rounded half to even.
void convert_avg_pool(OnnxConverter& c, const QdqGroup& g) {
  Affine x;
  std::string why;
  read_affine(c, *g.dequant[0], &x, &why);
  std::string xq = c.resolved(g.dequant[0]->input(0));
  if (!is_q8(c.type_of(xq).dtype)) c.invalid("the dequantized data '" + xq + "' is not int8 or uint8");
  nlohmann::json attrs = {{"zero_point", x.zero_point[0]}};
  if (g.op->op_type() == "GlobalAveragePool") {
    attrs["global"] = true;
  } else {
    if (c.type_of(xq).shape.size() != 4) c.unsupported("a QDQ AveragePool on data of rank " + std::to_string(c.type_of(xq).shape.size()));
    Window w = read_window(c, xq, {});
    attrs["pool_size"] = w.kernel;
    attrs["strides"] = w.strides;
    attrs["padding"] = w.pads;
    attrs["count_include_pad"] = c.attr_int("count_include_pad", 0) != 0;
    c.attr_int("ceil_mode", 0);
  }
  c.emit(g.quant->output(0), "qlinear_avg_pool", {xq}, attrs);
}

}  // namespace

void convert_qdq_group(OnnxConverter& c, const QdqGroup& g) {
  if (g.kind == QdqGroup::Kind::kMatrix) return convert_matrix(c, g);
  if (g.kind == QdqGroup::Kind::kAdd) return convert_add(c, g);
  if (is_avg_pool(*g.op)) return convert_avg_pool(c, g);
  // The op itself, on the quantized tensor: its DQs' outputs are the quantized inputs,
  // and the Q's output is its result.
  for (const Node* dq : g.dequant) c.alias(dq->output(0), dq->input(0));
  convert_onnx_node(c);
  c.alias(g.quant->output(0), g.op->output(0));
}

}  // namespace mtir
