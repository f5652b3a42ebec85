#include "frontend/schedule_records.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include "frontend/pixel_triples_budget.h"
#include "ops/quant_util.h"
#include "support/digest.h"
#include "support/source_offset.h"

namespace mtir {
namespace {

using json = nlohmann::json;

// Locations in the record's text: a JSON syntax error at its byte, a bad field at the
// `nth` occurrence of its key (layers are found by their "operator" keys).
class RecordText {
 public:
  RecordText(const std::string& text, const std::string& filename)
      : file_(std::make_shared<SourceFile>(SourceFile{filename, text})) {}

  [[noreturn]] void fail_at(size_t offset, const std::string& message) const {
    user_error(span_at_offset(file_, offset), message);
  }
  // The `nth` occurrence of "key" (0-based), or the start of the text.
  [[noreturn]] void fail_key(const std::string& key, size_t nth, const std::string& message) const {
    const std::string quoted = "\"" + key + "\"";
    size_t p = file_->text.find(quoted);
    for (size_t i = 0; i < nth && p != std::string::npos; ++i) p = file_->text.find(quoted, p + 1);
    fail_at(p == std::string::npos ? 0 : p, message);
  }
  json parse() const {
    try {
      return json::parse(file_->text);
    } catch (const json::parse_error& e) {
      std::string m = e.what();
      size_t q = m.find(": ", m.find("parse error"));
      fail_at(e.byte > 0 ? e.byte - 1 : 0, "invalid JSON: " + (q != std::string::npos ? m.substr(q + 2) : m));
    } catch (const json::exception& e) {
      fail_at(0, std::string("invalid JSON: ") + e.what());
    }
  }

 private:
  std::shared_ptr<SourceFile> file_;
};

LayerSchedules parse_layer(const json& l, size_t k, const RecordText& t) {
  const std::string where = "layers[" + std::to_string(k) + "]";
  if (!l.is_object()) t.fail_key("layers", 0, where + " must be an object {\"operator\", \"node\", \"op\", \"schedules\"}");
  for (const auto& item : l.items())
    if (item.key() != "operator" && item.key() != "node" && item.key() != "op" && item.key() != "schedules" &&
        item.key() != "tuning")
      t.fail_key(item.key(), 0, where + ": unknown field '" + item.key() + "' (known: operator, node, op, schedules, tuning)");
  LayerSchedules layer;
  auto op_index = l.find("operator");
  if (op_index == l.end() || !op_index->is_number_integer() || op_index->get<int64_t>() < 0)
    t.fail_key("operator", k, where + ": 'operator' must be the model's operator index (an integer >= 0)");
  layer.op_index = op_index->get<int64_t>();
  for (const char* key : {"node", "op"}) {
    auto it = l.find(key);
    if (it == l.end() || !it->is_string()) t.fail_key("operator", k, where + ": '" + key + "' must be a string");
    (std::string(key) == "node" ? layer.node : layer.op) = it->get<std::string>();
  }
  auto s = l.find("schedules");
  if (s == l.end() || !s->is_object()) t.fail_key("operator", k, where + ": 'schedules' must be an object {NAME: true|false}");
  for (const auto& item : s->items()) {
    const std::string name = item.key();
    if (!is_schedule(name)) t.fail_key(name, 0, where + ": unknown schedule '" + name + "' (known: " + schedule_names() + ")");
    if (is_model_schedule(name))
      t.fail_key(name, 0, where + ": '" + name + "' works on the whole model, not per layer: switch it with the target's -disabled-schedules");
    if (!item.value().is_boolean()) t.fail_key(name, 0, where + ": schedule '" + name + "' must be true or false");
    layer.schedules[name] = item.value().get<bool>();
  }
  return layer;
}

bool per_channel(const json& attrs) {
  auto it = attrs.find("weight_scale");
  if (it == attrs.end() || !it->is_array()) return false;
  return std::any_of(it->begin(), it->end(), [&](const json& v) { return v != (*it)[0]; });
}

int64_t int_attr(const json& attrs, const char* key, int64_t def) {
  auto it = attrs.find(key);
  return it != attrs.end() && it->is_number() ? static_cast<int64_t>(it->get<double>()) : def;
}

double scale_attr(const json& attrs, const char* key) {
  auto it = attrs.find(key);
  if (it != attrs.end() && it->is_array() && !it->empty()) it = it->begin();
  return it != attrs.end() && it->is_number() ? it->get<double>() : 0.0;
}

// prepare_quantized's smmlar_per_tensor without the accumulator bound: a per-tensor
// multiplier (tflite rule) that has the SMMLAR form, above 2^30 where no ReLU clamps.
bool smmlar_per_tensor_form(const json& a) {
  const double m = scale_attr(a, "input_scale") * scale_attr(a, "weight_scale") / scale_attr(a, "output_scale");
  if (!(m > 0) || !std::isfinite(m) || m >= 1.0) return false;  // no scales, or a left shift
  const ops::QuantMultiplier q = ops::quantize_multiplier(m, "qdense", "input_scale * weight_scale / output_scale");
  const int32_t zo = static_cast<int32_t>(int_attr(a, "output_zero_point", 0));
  ops::SmmlarForm form;
  const bool relu = ops::activation_bounds(a.value("activation", std::string("none")), scale_attr(a, "output_scale"), zo).lo >= zo;
  return ops::smmlar_form(q, zo, &form) && (relu || q.multiplier > (int64_t{1} << 30));
}

}  // namespace

ScheduleRecord parse_schedule_record(const std::string& text, const std::string& filename) {
  RecordText t(text, filename);
  json root = t.parse();
  if (!root.is_object()) t.fail_at(0, "a schedule record must be a JSON object");
  for (const auto& item : root.items())
    if (item.key() != "format" && item.key() != "version" && item.key() != "model" && item.key() != "target" &&
        item.key() != "layers" && item.key() != "tuning")
      t.fail_key(item.key(), 0, "unknown field '" + item.key() + "' (known: format, version, model, target, layers, tuning)");
  if (root.value("format", json()) != kScheduleRecordFormat)
    t.fail_key("format", 0, std::string("not a schedule record: 'format' must be \"") + kScheduleRecordFormat + "\"");
  auto version = root.find("version");
  if (version == root.end() || !version->is_number_integer() || version->get<int64_t>() != kScheduleRecordVersion)
    t.fail_key("version", 0, "schedule record version " + (version == root.end() ? std::string("missing") : version->dump()) +
                                 ": this microtir reads version " + std::to_string(kScheduleRecordVersion));
  ScheduleRecord r;
  auto model = root.find("model");
  if (model == root.end() || !model->is_object() || !model->value("name", json()).is_string() ||
      !model->value("fingerprint", json()).is_string())
    t.fail_key("model", 0, "'model' must be {\"name\": FILE, \"fingerprint\": HEX} (the model the record was made for)");
  r.model = (*model)["name"].get<std::string>();
  r.fingerprint = (*model)["fingerprint"].get<std::string>();
  if (root.contains("target") && !root["target"].is_string()) t.fail_key("target", 0, "'target' must be a string");
  r.target = root.value("target", std::string());
  auto layers = root.find("layers");
  if (layers == root.end() || !layers->is_array()) t.fail_key("layers", 0, "'layers' must be an array");
  for (size_t k = 0; k < layers->size(); ++k) r.layers.push_back(parse_layer((*layers)[k], k, t));
  r.hash = digest_of(text);
  return r;
}

json schedule_record_json(const ScheduleRecord& r) {
  json layers = json::array();
  for (const auto& l : r.layers)
    layers.push_back({{"operator", l.op_index}, {"node", l.node}, {"op", l.op}, {"schedules", l.schedules}});
  return {{"format", kScheduleRecordFormat},
          {"version", kScheduleRecordVersion},
          {"model", {{"name", r.model}, {"fingerprint", r.fingerprint}}},
          {"target", r.target},
          {"layers", layers}};
}

std::vector<std::string> applicable_schedules(const Graph& g, const GraphNode& node, const ScheduleOptions& target) {
  std::vector<std::string> out;
  auto add = [&](const char* name, bool applies) {
    if (applies && target.get(name)) out.push_back(name);
  };
  if (node.op == "qconv2d_s16" || node.op == "qdense_s16" || node.op == "qtranspose_conv2d") add("unroll", true);
  const bool conv = node.op == "qconv2d" || node.op == "qlinear_conv";
  if (!conv && node.op != "qdense" && node.op != "qlinear_matmul") return out;
  const json& a = node.attrs;
  const bool onnx = node.op == "qlinear_conv" || node.op == "qlinear_matmul";
  const bool nchw = onnx || a.value("layout", std::string("NHWC")) == "NCHW";
  auto w = g.constants.find(node.inputs.size() > 1 ? node.inputs[1] : "");
  const bool const_weight = w != g.constants.end();
  const std::vector<int64_t>& shape = node.type.shape;
  const int64_t channels = shape.empty() ? 0 : (nchw && conv ? shape.at(1) : shape.back());
  const int64_t k = const_weight && channels > 0 ? w->second.num_elements() / channels : 0;
  const int64_t groups = conv ? int_attr(a, "groups", 1) : 1;
  const bool depthwise = conv && groups > 1 && groups == channels;
  const int64_t input_channels = const_weight && conv && w->second.shape.size() == 4 ? w->second.shape[3] : 0;
  const bool pc = !onnx && per_channel(a);
  const int64_t zo = int_attr(a, "output_zero_point", 0);
  const bool smlad = const_weight && groups == 1 && target.smlad;
  const bool few = smlad && conv && !nchw && input_channels > 0 && input_channels <= kFewChannelsMaxInput &&
                   k <= kFewChannelsMaxReduction && target.few_channels;
  add("fold_zero_point", const_weight && int_attr(a, onnx ? "data_zero_point" : "input_zero_point", 0) != 0);
  // depthwise_tile's kernel neither blocks nor unrolls (its windows are straight-line code).
  add("block", !(depthwise && target.depthwise_tile));
  add("unroll", !(depthwise && target.depthwise_tile));
  add("smlad", smlad);
  add("sxtb16", smlad && !few);
  const bool words = smlad && !few && conv && !nchw && input_channels > 0 && input_channels % 4 == 0;
  add("word_gather", words);
  // prepare_quantized's short_pairs: int8 weights become int16 on a short reduction.
  const bool short_pairs = words && target.sxtb16 && target.word_gather && target.pair_loads && target.short_pairs &&
                           k <= kShortPairsMaxReduction;
  add("short_pairs", short_pairs);
  add("interleave", smlad && target.block && channels >= 2);
  // Three pixels at a time needs three pixels: a batch-1 dense has one.
  int64_t pixels = channels > 0 ? 1 : 0;
  for (int64_t d : shape) pixels *= d;
  if (channels > 0) pixels /= channels;
  // Not where the triple does not pay for its stack or code (pixel_triples_budget.h):
  // there the layer runs in pairs whatever the knob says.
  const bool triples = smlad && target.block && pixels >= 3 && !triples_over_budget(g, target).count(node.name);
  add("pixel_triples", triples);
  // Only where one or two pixels are left over after the tiles (under pair_loads two stay
  // a 2x2 tile, ops/qconv_gemm.cc's pixel_tiles).
  const bool int16_words = words && target.word_gather && target.pair_loads && (!target.sxtb16 || short_pairs);
  // prepare_quantized's few_channel_pairs: a few-channel convolution's pairs, int16 too.
  const bool few_pairs = few && target.pair_loads && target.few_channel_pairs;
  const int64_t tile = triples && target.pixel_triples ? 3 : 2;
  add("rolled_leftovers", groups == 1 && target.block && pixels >= kTriplesOnlyRows && pixels % tile != 0 &&
                              !((int16_words || few_pairs) && tile == 3 && pixels % 3 == 2));
  add("fold_output_zero_point", pc && zo != 0);
  add("few_channels", few);
  add("depthwise_tile", depthwise);
  add("depthwise_border_tiles", depthwise && target.depthwise_tile);
  add("smlal_requant", pc);
  // On a per-channel table (with smlal_requant) and on a per-tensor multiplier (not under mve).
  add("smmlar_requant", pc || (!onnx && const_weight && !target.mve && node.type.dtype == DataType::Int(8) &&
                               smmlar_per_tensor_form(a)));
  // ops/qconv_gemm.cc's takes_dense_chunks: a batch-1 row of k / 2 words above one sum per
  // channel plus two chunks of 64 values.
  add("dense_chunks", smlad && !conv && shape.size() == 2 && shape[0] == 1 && (k + 1) / 2 > channels + 64);
  // ops/qconv_gemm.cc's takes_pair_loads: a batch-1 dense with int16 weights, which only a
  // target without sxtb16 makes (with it the weights stay int8 and the knob changes
  // nothing), and a word-gathered convolution with int16 weights (short_pairs' too).
  add("pair_loads", (smlad && !target.sxtb16 && !conv && shape.size() == 2 && shape[0] == 1) || int16_words || few_pairs);
  add("few_channel_pairs", few && target.pair_loads);
  // prepare_quantized's pack_pair_records: a short int16-word convolution's per-channel
  // table and bias with its weights, a record per channel pair.
  add("pair_records", int16_words && pc && k <= kShortPairsMaxReduction && channels % 2 == 0 && target.block &&
                          target.interleave && target.smlal_requant && target.smmlar_requant);
  return out;
}

ScheduleOptions apply_schedule_record(const ScheduleRecord& r, const std::string& filename, const Graph& g,
                                      const ModelOperators& model, const ScheduleOptions& target) {
  const std::string where = "schedule record " + filename;
  if (r.fingerprint != model.fingerprint)
    user_error({}, where + " was made for model '" + r.model + "' (fingerprint " + r.fingerprint + "), not for '" +
                       model.name + "' (fingerprint " + model.fingerprint +
                       "): a record applies only to the model it was tuned on (`microtir tune " + model.name + "` makes one)");
  ScheduleOptions out = target;
  for (size_t k = 0; k < r.layers.size(); ++k) {
    const LayerSchedules& l = r.layers[k];
    const std::string layer = where + ", layers[" + std::to_string(k) + "] (operator " + std::to_string(l.op_index) + ")";
    if (l.op_index >= static_cast<int64_t>(model.nodes.size()))
      user_error({}, layer + ": the model has " + std::to_string(model.nodes.size()) + " operators");
    const GraphNode* node = g.find_node(model.nodes[static_cast<size_t>(l.op_index)]);
    if (!node || node->name != l.node || node->op != l.op)
      user_error({}, layer + " names node '" + l.node + "' (" + l.op + "), but operator " + std::to_string(l.op_index) +
                         " of '" + model.name + "' is '" + model.nodes[static_cast<size_t>(l.op_index)] + "'" +
                         (node ? " (" + node->op + ")" : ""));
    const std::vector<std::string> can = applicable_schedules(g, *node, target);
    for (const auto& [name, on] : l.schedules) {
      if (std::find(can.begin(), can.end(), name) != can.end() || on == target.get(name)) continue;
      std::string list;
      for (const auto& c : can) list += (list.empty() ? "" : ", ") + c;
      user_error({}, layer + ": schedule '" + name + "' does not apply to node '" + l.node + "' (" + l.op +
                         ") on this target (it takes: " + (list.empty() ? "none" : list) + ")");
    }
    out.per_node[l.node] = l.schedules;
  }
  return out;
}

}  // namespace mtir
