// The int8 operators of the reference, one plain loop nest each, straight from the op
// contract (see docs/operators.md, "int8 operators"): int32 accumulation, the fixed-point
// requantization of TFLite's reference kernels, saturating casts. Slow and obvious on purpose.
#include "int8_reference.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace int8ref {
namespace {

using nlohmann::json;

int64_t product(const std::vector<int64_t>& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

Tensor make(const std::string& dtype, std::vector<int64_t> shape) {
  Tensor t{dtype, std::move(shape), {}};
  t.data.assign(static_cast<size_t>(product(t.shape)), 0);
  return t;
}

int32_t clamp(int64_t v, int32_t lo, int32_t hi) { return static_cast<int32_t>(std::min<int64_t>(std::max<int64_t>(v, lo), hi)); }

double number(const json& attrs, const char* name) {
  if (!attrs.contains(name)) throw Error(std::string("missing attribute '") + name + "'");
  if (!attrs[name].is_number()) throw Error(std::string("attribute '") + name + "' is not a number");
  return attrs[name].get<double>();
}

int32_t int_or(const json& attrs, const char* name, int32_t fallback) {
  return attrs.contains(name) ? attrs[name].get<int32_t>() : fallback;
}

std::vector<int64_t> ints_or(const json& attrs, const char* name, std::vector<int64_t> fallback) {
  return attrs.contains(name) ? attrs[name].get<std::vector<int64_t>>() : fallback;
}

void expect_rank(const Tensor& t, size_t rank, const char* what) {
  if (t.shape.size() != rank) throw Error(std::string(what) + " must have rank " + std::to_string(rank));
}

// [lo, hi] of the output codes for "activation": TFLite's CalculateActivationRangeQuantized,
// zo + round(f / so) with f and so in float32.
std::pair<int32_t, int32_t> act_bounds(const json& attrs, int32_t zo, double so) {
  std::string act = attrs.value("activation", std::string("none"));
  auto quantize = [&](float f) { return zo + static_cast<int32_t>(std::round(f / static_cast<float>(so))); };
  if (act == "none") return {-128, 127};
  if (act == "relu") return {std::max(-128, quantize(0.0f)), 127};
  if (act == "relu6") return {std::max(-128, quantize(0.0f)), std::min(127, quantize(6.0f))};
  if (act == "relu_n1_to_1") return {std::max(-128, quantize(-1.0f)), std::min(127, quantize(1.0f))};
  throw Error("unknown activation '" + act + "'");
}

// The per-output-channel multipliers of conv/dense: input_scale * weight_scale[c] / output_scale.
std::vector<Multiplier> channel_multipliers(const json& attrs, int64_t channels) {
  double sx = number(attrs, "input_scale"), so = number(attrs, "output_scale");
  if (!attrs.contains("weight_scale")) throw Error("missing attribute 'weight_scale'");
  std::vector<double> ws;
  if (attrs["weight_scale"].is_array()) {
    ws = attrs["weight_scale"].get<std::vector<double>>();
    if (static_cast<int64_t>(ws.size()) != channels) throw Error("'weight_scale' needs one scale per output channel");
  } else {
    ws.assign(static_cast<size_t>(channels), number(attrs, "weight_scale"));
  }
  std::vector<Multiplier> out;
  for (double w : ws) out.push_back(quantize_multiplier(sx * w / so));
  return out;
}

// Requantizes accumulators acc[.., c] (c innermost) into int8 codes.
Tensor requantize(const std::vector<int64_t>& acc, std::vector<int64_t> shape, const json& attrs) {
  int64_t channels = shape.back();
  std::vector<Multiplier> q = channel_multipliers(attrs, channels);
  int32_t zo = int_or(attrs, "output_zero_point", 0);
  auto [lo, hi] = act_bounds(attrs, zo, number(attrs, "output_scale"));
  Tensor out = make("int8", std::move(shape));
  for (size_t i = 0; i < acc.size(); ++i)
    out.data[i] = clamp(static_cast<int64_t>(multiply_by_quantized_multiplier(static_cast<int32_t>(acc[i]), q[i % channels])) + zo, lo, hi);
  return out;
}

Tensor qconv2d(const std::vector<const Tensor*>& in, const json& attrs) {
  const Tensor &x = *in[0], &w = *in[1];
  expect_rank(x, 4, "qconv2d data");
  expect_rank(w, 4, "qconv2d weight");
  int64_t n = x.shape[0], h = x.shape[1], wd = x.shape[2], c = x.shape[3];
  int64_t o = w.shape[0], kh = w.shape[1], kw = w.shape[2], cg = w.shape[3];
  int64_t groups = int_or(attrs, "groups", 1);
  auto st = ints_or(attrs, "strides", {1, 1}), dil = ints_or(attrs, "dilation", {1, 1});
  auto pad = ints_or(attrs, "padding", {0, 0, 0, 0});
  if (cg * groups != c || o % groups) throw Error("qconv2d: weight channels do not match the data and groups");
  int64_t oh = (h + pad[0] + pad[2] - dil[0] * (kh - 1) - 1) / st[0] + 1;
  int64_t ow = (wd + pad[1] + pad[3] - dil[1] * (kw - 1) - 1) / st[1] + 1;
  int32_t zx = int_or(attrs, "input_zero_point", 0);
  std::vector<int64_t> acc(static_cast<size_t>(n * oh * ow * o));
  size_t i = 0;
  for (int64_t b = 0; b < n; ++b)
    for (int64_t y = 0; y < oh; ++y)
      for (int64_t xo = 0; xo < ow; ++xo)
        for (int64_t oc = 0; oc < o; ++oc, ++i) {
          int64_t g = oc / (o / groups), sum = in.size() > 2 ? in[2]->data[oc] : 0;
          for (int64_t ky = 0; ky < kh; ++ky)
            for (int64_t kx = 0; kx < kw; ++kx) {
              int64_t iy = y * st[0] - pad[0] + ky * dil[0], ix = xo * st[1] - pad[1] + kx * dil[1];
              if (iy < 0 || iy >= h || ix < 0 || ix >= wd) continue;  // padding: x == zx
              for (int64_t ic = 0; ic < cg; ++ic)
                sum += static_cast<int64_t>(x.data[((b * h + iy) * wd + ix) * c + g * cg + ic] - zx) *
                       w.data[((oc * kh + ky) * kw + kx) * cg + ic];
            }
          acc[i] = sum;
        }
  return requantize(acc, {n, oh, ow, o}, attrs);
}

Tensor qdense(const std::vector<const Tensor*>& in, const json& attrs) {
  const Tensor &x = *in[0], &w = *in[1];
  expect_rank(x, 2, "qdense data");
  expect_rank(w, 2, "qdense weight");
  int64_t n = x.shape[0], k = x.shape[1], m = w.shape[0];
  if (w.shape[1] != k) throw Error("qdense: weight [M, K] does not match data [N, K]");
  int32_t zx = int_or(attrs, "input_zero_point", 0);
  std::vector<int64_t> acc(static_cast<size_t>(n * m));
  for (int64_t b = 0; b < n; ++b)
    for (int64_t j = 0; j < m; ++j) {
      int64_t sum = in.size() > 2 ? in[2]->data[j] : 0;
      for (int64_t t = 0; t < k; ++t) sum += static_cast<int64_t>(x.data[b * k + t] - zx) * w.data[j * k + t];
      acc[b * m + j] = sum;
    }
  return requantize(acc, {n, m}, attrs);
}

// TFLite's int8 ADD / SUB (reference_ops::AddElementwise / SubElementwise, left_shift 20,
// QuantizeMultiplierSmallerThanOneExp) and MUL (integer_ops MulElementwise), with numpy
// broadcasting as TFLite's Broadcast*Slow kernels do it.
Tensor qbinary(const std::string& op, const std::vector<const Tensor*>& in, const json& attrs) {
  const Tensor &a = *in[0], &b = *in[1];
  double sa = number(attrs, "a_scale"), sb = number(attrs, "b_scale"), so = number(attrs, "output_scale");
  int32_t za = int_or(attrs, "a_zero_point", 0), zb = int_or(attrs, "b_zero_point", 0);
  int32_t zo = int_or(attrs, "output_zero_point", 0);
  const size_t rank = std::max(a.shape.size(), b.shape.size());
  auto padded = [&](const std::vector<int64_t>& s) {
    std::vector<int64_t> p(rank - s.size(), 1);
    p.insert(p.end(), s.begin(), s.end());
    return p;
  };
  std::vector<int64_t> pa = padded(a.shape), pb = padded(b.shape), shape(rank);
  for (size_t k = 0; k < rank; ++k) {
    if (pa[k] != pb[k] && pa[k] != 1 && pb[k] != 1) throw Error(op + ": the inputs do not broadcast");
    shape[k] = std::max(pa[k], pb[k]);
  }
  const int left_shift = 20;
  const double twice_max_input_scale = 2 * std::max(sa, sb);
  auto smaller_than_one = [](double real) {
    Multiplier q = quantize_multiplier(real);
    if (!(real < 1) || q.shift > 0) throw Error("multiplier not below 1");
    return q;
  };
  auto [lo, hi] = act_bounds(attrs, zo, so);
  Tensor out = make("int8", shape);
  std::vector<int64_t> idx(rank, 0);
  for (int64_t i = 0; i < out.size(); ++i) {
    int64_t rem = i;
    for (size_t k = rank; k-- > 0;) idx[k] = rem % shape[k], rem /= shape[k];
    auto flat = [&](const std::vector<int64_t>& s) {
      int64_t f = 0;
      for (size_t k = 0; k < rank; ++k) f = f * s[k] + (s[k] == 1 ? 0 : idx[k]);
      return f;
    };
    const int32_t input1_val = -za + a.data[flat(pa)];
    const int32_t input2_val = -zb + b.data[flat(pb)];
    int32_t raw_output;
    if (op == "qmul") {
      raw_output = multiply_by_quantized_multiplier(input1_val * input2_val, quantize_multiplier(sa * sb / so));
    } else {
      // TFLM computes ADD's quotients in double and SUB's in float32 (sub_common.cc).
      double m1 = sa / twice_max_input_scale, m2 = sb / twice_max_input_scale;
      double mo = twice_max_input_scale / ((1 << left_shift) * so);
      if (op == "qsub") {
        const float fa = static_cast<float>(sa), fb = static_cast<float>(sb), fo = static_cast<float>(so);
        const float ftwice = 2 * std::max(fa, fb);
        m1 = static_cast<double>(fa / ftwice);
        m2 = static_cast<double>(fb / ftwice);
        mo = static_cast<double>(ftwice / ((1 << left_shift) * fo));
      }
      const int32_t scaled1 = multiply_by_quantized_multiplier(input1_val * (1 << left_shift), smaller_than_one(m1));
      const int32_t scaled2 = multiply_by_quantized_multiplier(input2_val * (1 << left_shift), smaller_than_one(m2));
      const int32_t raw = op == "qadd" ? scaled1 + scaled2 : scaled1 - scaled2;
      raw_output = multiply_by_quantized_multiplier(raw, smaller_than_one(mo));
    }
    out.data[i] = clamp(static_cast<int64_t>(raw_output) + zo, lo, hi);
  }
  return out;
}

// Average (qavg_pool2d, qglobal_avg_pool2d) or max pooling over NHWC windows; padded
// positions are skipped and not counted.
Tensor pool(const Tensor& x, std::vector<int64_t> k, std::vector<int64_t> st, std::vector<int64_t> pad, bool avg,
           std::pair<int32_t, int32_t> bounds = {-128, 127}) {
  expect_rank(x, 4, "pool data");
  int64_t n = x.shape[0], h = x.shape[1], w = x.shape[2], c = x.shape[3];
  int64_t oh = (h + pad[0] + pad[2] - k[0]) / st[0] + 1, ow = (w + pad[1] + pad[3] - k[1]) / st[1] + 1;
  if (oh <= 0 || ow <= 0) throw Error("pool: the window is larger than the padded input");
  Tensor out = make("int8", {n, oh, ow, c});
  size_t i = 0;
  for (int64_t b = 0; b < n; ++b)
    for (int64_t y = 0; y < oh; ++y)
      for (int64_t xo = 0; xo < ow; ++xo)
        for (int64_t ch = 0; ch < c; ++ch, ++i) {
          int32_t sum = 0, count = 0, mx = -128;
          for (int64_t ky = 0; ky < k[0]; ++ky)
            for (int64_t kx = 0; kx < k[1]; ++kx) {
              int64_t iy = y * st[0] - pad[0] + ky, ix = xo * st[1] - pad[1] + kx;
              if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
              int32_t v = x.data[((b * h + iy) * w + ix) * c + ch];
              sum += v, ++count, mx = std::max(mx, v);
            }
          if (count == 0) throw Error("pool: a window covers only padding");
          out.data[i] = avg ? clamp(div_round_away(sum, count), bounds.first, bounds.second) : mx;
        }
  return out;
}

// TFLite's int8 SOFTMAX (reference_ops::Softmax as TFLM runs it): the input difference
// to the row maximum scaled by beta * input_scale into 5 integer bits
// (PreprocessSoftmaxScaling), exp in fixed point, the sum with 12 integer bits, its
// reciprocal (GetReciprocal) and the output in 1/256 steps from -128. Differences below
// diff_min (CalculateInputRadius) give -128 and add nothing.
Tensor qsoftmax(const std::vector<const Tensor*>& in, const json& attrs) {
  const Tensor& x = *in[0];
  if (x.shape.empty()) throw Error("qsoftmax: data must have rank >= 1");
  double sx = number(attrs, "input_scale"), beta = attrs.value("beta", 1.0);
  if (attrs.contains("output_scale") && number(attrs, "output_scale") != 1.0 / 256)
    throw Error("qsoftmax: 'output_scale' must be 1/256");
  if (int_or(attrs, "output_zero_point", -128) != -128) throw Error("qsoftmax: 'output_zero_point' must be -128");
  const int kScaledDiffIntegerBits = 5, kAccumulationIntegerBits = 12;
  const double max_real_multiplier = (1LL << 31) - 1.0;
  const double input_beta_real_multiplier =
      std::min(beta * sx * (1 << (31 - kScaledDiffIntegerBits)), max_real_multiplier);
  if (!(input_beta_real_multiplier > 1)) throw Error("qsoftmax: beta * input_scale too small");
  const Multiplier input_beta = quantize_multiplier(input_beta_real_multiplier);
  if (input_beta.shift < 0) throw Error("qsoftmax: multiplier below 1");
  const double max_input_rescaled = 1.0 * ((1 << kScaledDiffIntegerBits) - 1) *
                                    (1LL << (31 - kScaledDiffIntegerBits)) / (1LL << input_beta.shift);
  const int diff_min = -1 * static_cast<int>(std::floor(max_input_rescaled));
  const int64_t depth = x.shape.back(), rows = x.size() / depth;
  Tensor out = make("int8", x.shape);
  auto exp_of = [&](int32_t input_diff) {
    const int32_t rescaled = saturating_rounding_doubling_high_mul(input_diff * (1 << input_beta.shift), input_beta.m);
    return fixed_point::exp_on_negative_values(rescaled, kScaledDiffIntegerBits);
  };
  for (int64_t r = 0; r < rows; ++r) {
    const int32_t* row = &x.data[r * depth];
    const int32_t max_in_row = *std::max_element(row, row + depth);
    int32_t sum_of_exps = 0;
    for (int64_t c = 0; c < depth; ++c) {
      const int32_t input_diff = row[c] - max_in_row;
      if (input_diff >= diff_min) sum_of_exps += fixed_point::rescale(exp_of(input_diff), 0, kAccumulationIntegerBits);
    }
    int num_bits_over_unit = 0;
    const int32_t shifted_scale = fixed_point::get_reciprocal(sum_of_exps, kAccumulationIntegerBits, &num_bits_over_unit);
    for (int64_t c = 0; c < depth; ++c) {
      const int32_t input_diff = row[c] - max_in_row;
      int32_t v = -128;
      if (input_diff >= diff_min) {
        const int32_t unsat = rounding_divide_by_pot(saturating_rounding_doubling_high_mul(shifted_scale, exp_of(input_diff)),
                                                     num_bits_over_unit + 31 - 8);
        v = clamp(static_cast<int64_t>(unsat) - 128, -128, 127);
      }
      out.data[r * depth + c] = v;
    }
  }
  return out;
}

// TFLite's int8 LOGISTIC and TANH (reference_integer_ops Logistic / Tanh as TFLM prepares
// them): the input offset by its zero point, scaled into 4 integer bits by a multiplier
// from frexp(input_scale * 2^27), saturated outside the input radius, then gemmlowp's
// logistic / tanh and a rounding shift to 1/256 (logistic, zero point -128) or 1/128 (tanh).
Tensor qactivation(const std::string& op, const Tensor& x, const json& attrs) {
  const double sx = number(attrs, "input_scale");
  const int32_t zx = int_or(attrs, "input_zero_point", 0);
  const int kInputIntegerBits = 4;
  int shift = 0;
  const double q = std::frexp(sx * static_cast<double>(1 << (31 - kInputIntegerBits)), &shift);
  const int64_t m = static_cast<int64_t>(std::round(q * (1LL << 31)));
  if (m >= (1LL << 31) || shift < 0) throw Error(op + ": input_scale out of TFLite's range");
  const double radius_real =
      1.0 * ((1 << kInputIntegerBits) - 1) * (1LL << (31 - kInputIntegerBits)) / std::ldexp(1.0, shift);
  const int32_t radius = static_cast<int32_t>(std::floor(radius_real));
  Tensor out = make("int8", x.shape);
  for (int64_t i = 0; i < x.size(); ++i) {
    const int32_t input = x.data[i] - zx;
    int32_t v;
    if (input <= -radius) {
      v = -128;
    } else if (input >= radius) {
      v = 127;
    } else {
      const int32_t input_in_q4 = multiply_by_quantized_multiplier(input, Multiplier{static_cast<int32_t>(m), shift});
      if (op == "qlogistic") {
        v = clamp(static_cast<int64_t>(rounding_divide_by_pot(fixed_point::logistic(input_in_q4, kInputIntegerBits), 23)) - 128, -128, 127);
      } else {
        v = clamp(rounding_divide_by_pot(fixed_point::tanh(input_in_q4, kInputIntegerBits), 24), -128, 127);
      }
    }
    out.data[i] = v;
  }
  return out;
}

Tensor qconcat(const std::vector<const Tensor*>& in, const json& attrs) {
  auto scales = attrs.at("input_scales").get<std::vector<double>>();
  auto zps = ints_or(attrs, "input_zero_points", std::vector<int64_t>(in.size(), 0));
  if (scales.size() != in.size() || zps.size() != in.size()) throw Error("qconcat: one scale and zero point per input");
  double so = number(attrs, "output_scale");
  int32_t zo = int_or(attrs, "output_zero_point", 0);
  int64_t rank = static_cast<int64_t>(in[0]->shape.size()), axis = int_or(attrs, "axis", 0);
  if (axis < 0) axis += rank;
  std::vector<int64_t> shape = in[0]->shape;
  shape[axis] = 0;
  for (const Tensor* t : in) shape[axis] += t->shape[axis];
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= shape[d];
  for (int64_t d = axis + 1; d < rank; ++d) inner *= shape[d];
  Tensor out = make("int8", shape);
  int64_t offset = 0;
  for (size_t t = 0; t < in.size(); ++t) {
    const bool copy = scales[t] == so && zps[t] == zo;
    Multiplier q = copy ? Multiplier{0, 0} : quantize_multiplier(scales[t] / so);
    int64_t len = in[t]->shape[axis] * inner;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j < len; ++j)
        out.data[o * shape[axis] * inner + offset + j] =
            copy ? in[t]->data[o * len + j]
                 : clamp(static_cast<int64_t>(multiply_by_quantized_multiplier(
                             static_cast<int32_t>(in[t]->data[o * len + j] - zps[t]), q)) + zo,
                         -128, 127);
    offset += len;
  }
  return out;
}

Tensor reshape(const Tensor& x, std::vector<int64_t> shape) {
  int64_t known = 1, infer = -1;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 0) shape[d] = x.shape.at(d);
    if (shape[d] == -1) infer = static_cast<int64_t>(d);
    else known *= shape[d];
  }
  if (infer >= 0) shape[infer] = x.size() / known;
  if (product(shape) != x.size()) throw Error("reshape: the new shape has a different element count");
  return Tensor{x.dtype, shape, x.data};
}

}  // namespace

int64_t Tensor::size() const { return product(shape); }

// TFLite's AveragePool rounding: acc > 0 ? (acc + n/2) / n : (acc - n/2) / n, truncating.
int32_t div_round_away(int32_t a, int32_t b) { return a > 0 ? (a + b / 2) / b : (a - b / 2) / b; }

// TFLite's int8 MEAN over H and W (TFLM's EvalIntegerMean): with equal quantization the
// raw sum over the count, truncated (reference_ops::Mean); otherwise QuantizedMeanOrSum,
// whose multiplier takes 1/count as multiplier << s / count with s = floor(log2 count)
// capped at 32 and 31 + shift.
Tensor qmean(const Tensor& x, const json& attrs) {
  expect_rank(x, 4, "qmean data");
  const double si = number(attrs, "input_scale"), so = number(attrs, "output_scale");
  const int64_t zi = int_or(attrs, "input_zero_point", 0), zo = int_or(attrs, "output_zero_point", 0);
  const int64_t n = x.shape[0], count = x.shape[1] * x.shape[2], c = x.shape[3];
  Multiplier q = quantize_multiplier(si / so);
  int s = 0;
  while ((int64_t{1} << (s + 1)) <= count) ++s;
  s = std::min(std::min(s, 32), 31 + q.shift);
  q = Multiplier{static_cast<int32_t>((static_cast<int64_t>(q.m) << s) / count), q.shift - s};
  Tensor out{"int8", {n, 1, 1, c}, std::vector<int32_t>(n * c)};
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ch = 0; ch < c; ++ch) {
      int32_t sum = 0;
      for (int64_t i = 0; i < count; ++i) sum += x.data[(b * count + i) * c + ch];
      out.data[b * c + ch] = si == so && zi == zo
                                 ? sum / static_cast<int32_t>(count)
                                 : clamp(static_cast<int64_t>(multiply_by_quantized_multiplier(
                                             sum - static_cast<int32_t>(zi * count), q)) + zo, -128, 127);
    }
  return out;
}

Tensor eval_op(const std::string& op, const std::vector<const Tensor*>& in, const nlohmann::json& attrs) {
  if (op == "qconv2d") return qconv2d(in, attrs);
  if (op == "qdense") return qdense(in, attrs);
  if (op == "qadd" || op == "qsub" || op == "qmul") return qbinary(op, in, attrs);
  if (op == "qlogistic" || op == "qtanh") return qactivation(op, *in[0], attrs);
  if (op == "qsoftmax") return qsoftmax(in, attrs);
  if (op == "qconcat") return qconcat(in, attrs);
  if (op == "qavg_pool2d" || op == "max_pool2d") {
    if (op == "max_pool2d" && attrs.value("layout", std::string("NCHW")) != "NHWC")
      throw Error("max_pool2d: the reference takes layout NHWC only");
    return pool(*in[0], attrs.at("pool_size").get<std::vector<int64_t>>(), ints_or(attrs, "strides", {1, 1}),
                ints_or(attrs, "padding", {0, 0, 0, 0}), op == "qavg_pool2d",
                attrs.value("activation", std::string("none")) == "none"
                    ? std::pair<int32_t, int32_t>{-128, 127}
                    : act_bounds(attrs, int_or(attrs, "output_zero_point", 0), number(attrs, "output_scale")));
  }
  if (op == "qglobal_avg_pool2d") {
    expect_rank(*in[0], 4, "qglobal_avg_pool2d data");
    return pool(*in[0], {in[0]->shape[1], in[0]->shape[2]}, {1, 1}, {0, 0, 0, 0}, true);
  }
  if (op == "qmean") return qmean(*in[0], attrs);
  if (op == "reshape") return reshape(*in[0], attrs.at("newshape").get<std::vector<int64_t>>());
  if (op == "flatten") {
    int64_t axis = int_or(attrs, "axis", 1), outer = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= in[0]->shape[d];
    return reshape(*in[0], {outer, in[0]->size() / outer});
  }
  throw Error("the int8 reference has no op '" + op + "'");
}

}  // namespace int8ref
