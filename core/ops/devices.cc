#include "ops/devices.h"

#include <algorithm>
#include <cctype>

#include "ops/op_util.h"
#include "support/names.h"

namespace mtir {

using json = nlohmann::json;

const std::vector<DeviceKind>& all_device_kinds() {
  // The simulated NPU (sim/npu): float32 conv2d (NCHW) and dense, with bias.
  static const std::vector<DeviceKind> kinds = {{"npu", "TVMDeviceNpu", {"conv2d", "dense"}}};
  return kinds;
}

const DeviceKind& device_kind_of(const std::string& instance) {
  std::string kind = instance;
  while (!kind.empty() && std::isdigit(static_cast<unsigned char>(kind.back()))) kind.pop_back();
  std::vector<std::string> names;
  for (const auto& k : all_device_kinds()) {
    if (k.name == kind) return k;
    names.push_back(k.name);
  }
  std::string known;
  for (const auto& n : names) known += (known.empty() ? "" : ", ") + n + "0";
  user_error(Span{}, "device '" + instance + "': unknown device kind '" + kind +
                         "' (an instance is named by its kind and a number, e.g. " + known + ")");
}

void check_device_support(const std::string& instance, const std::string& node, const std::string& op,
                          const std::vector<TensorType>& inputs, const json& attrs) {
  if (!is_c_identifier(instance))
    user_error(Span{}, "node '" + node + "': device name '" + instance + "' is not a C identifier");
  const DeviceKind& kind = device_kind_of(instance);
  std::string supported;
  for (const auto& o : kind.ops) supported += (supported.empty() ? "" : ", ") + o;
  if (std::find(kind.ops.begin(), kind.ops.end(), op) == kind.ops.end())
    user_error(Span{}, "node '" + node + "': op '" + op + "' cannot run on device '" + instance + "' (" + kind.name +
                           " runs " + supported + ")");
  if (op == "conv2d" && attrs.is_object() && attrs.value("layout", std::string("NCHW")) != "NCHW")
    user_error(Span{}, "node '" + node + "': device '" + instance + "' runs conv2d in the NCHW layout only");
  for (const auto& t : inputs)
    if (t.dtype != DataType::Float(32))
      user_error(Span{}, "node '" + node + "': device '" + instance + "' runs float32 only, not " + t.dtype.str());
}

namespace {

Expr address(const Buffer& b) {
  return Call(DataType::Handle(), "address_of", {ops::load(b, std::vector<Expr>(b->shape.size(), ops::ci(0)))});
}

std::vector<int64_t> ints_attr(const json& attrs, const char* key, std::vector<int64_t> def) {
  if (!attrs.is_object() || !attrs.contains(key)) return def;
  return attrs.at(key).get<std::vector<int64_t>>();
}

}  // namespace

PrimFunc build_device_function(const std::string& func_name, const std::string& instance, const std::string& op,
                               const std::vector<TensorType>& in, const TensorType& out, const json& attrs) {
  const DeviceKind& kind = device_kind_of(instance);
  ops::FuncBuilder fb;
  std::vector<Buffer> buffers;
  static const char* const kConvNames[] = {"data", "weight", "bias"};
  for (size_t i = 0; i < in.size(); ++i) buffers.push_back(fb.param(kConvNames[i], in[i].shape));
  Buffer o = fb.param("out", out.shape);
  const bool has_bias = in.size() == 3;
  // Without a bias the kernel is told so and gets the output again in its place (never read).
  std::vector<Expr> args = {StringImm(kind.name + "_" + op), address(buffers[0]), address(buffers[1]),
                            address(has_bias ? buffers[2] : o), address(o), ops::ci(has_bias ? 1 : 0)};
  auto push = [&](int64_t v) { args.push_back(ops::ci(v)); };
  if (op == "conv2d") {
    const auto& d = in[0].shape;
    const auto& w = in[1].shape;
    auto strides = ints_attr(attrs, "strides", {1, 1});
    auto dilation = ints_attr(attrs, "dilation", {1, 1});
    auto padding = ints_attr(attrs, "padding", {0, 0, 0, 0});
    int64_t groups = attrs.is_object() ? attrs.value("groups", int64_t{1}) : 1;
    for (int64_t v : {d[0], d[1], d[2], d[3], w[0], w[2], w[3], groups, strides[0], strides[1], dilation[0],
                      dilation[1], padding[0], padding[1], out.shape[2], out.shape[3]})
      push(v);
  } else {  // dense
    for (int64_t v : {in[0].shape[0], in[0].shape[1], out.shape[1]}) push(v);
  }
  // The function's last parameter: the instance's context.
  auto f = std::const_pointer_cast<PrimFuncNode>(fb.finish(func_name, Stmt()));
  Var context = MakeVar(instance, DataType::Handle());
  f->params.push_back(context);
  f->param_buffers.push_back(nullptr);
  args.push_back(context);
  Expr call = Call(DataType::Int(32), "call_extern", std::move(args), Attrs{{kResourceHandleAttr, true}});
  f->body = Evaluate(Call(DataType::Int(32), "tvm_return", {call}));
  f->attrs[kDeviceAttr] = instance;
  return f;
}

}  // namespace mtir
