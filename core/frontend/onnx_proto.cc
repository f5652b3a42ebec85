// The ONNX frontend's protobuf half (native only): an .onnx file through libonnx's
// generated classes into the protobuf-free model the converter reads (onnx_model.h).
// The only file that sees onnx:: types; the page's decoder (web/src/onnx_import.js)
// fills the same form from protobufjs.
#include <onnx/onnx_pb.h>

#include "frontend/onnx.h"
#include "frontend/onnx_convert.h"
#include "support/diagnostic.h"

namespace mtir {

namespace {

// A typed field's values (float_data, int32_data, ...: the one the dtype uses) as
// little-endian elements of the dtype, stored as NDArray stores them. The converter
// checks their count against the shape.
void read_typed_values(const onnx::TensorProto& t, OnnxTensor* out) {
  using T = onnx::TensorProto;
  DataType dt;
  if (!onnx_dtype_from_code(t.data_type(), &dt)) return;  // the converter refuses the dtype
  int64_t n = 0;
  switch (t.data_type()) {
    case T::FLOAT: n = t.float_data_size(); break;
    case T::DOUBLE: n = t.double_data_size(); break;
    case T::INT64: n = t.int64_data_size(); break;
    case T::UINT32:
    case T::UINT64: n = t.uint64_data_size(); break;
    default: n = t.int32_data_size(); break;  // float16 bits, int8/16/32, uint8/16, bool
  }
  out->typed_values_ = n;
  NDArray a = NDArray::zeros(dt, {n});
  for (int i = 0; i < static_cast<int>(n); ++i) {
    switch (t.data_type()) {
      case T::FLOAT: a.set_float(i, t.float_data(i)); break;
      case T::DOUBLE: a.set_float(i, t.double_data(i)); break;
      case T::INT64: a.set_int(i, t.int64_data(i)); break;
      case T::UINT32:
      case T::UINT64: a.set_int(i, static_cast<int64_t>(t.uint64_data(i))); break;
      case T::FLOAT16: {  // the 16 bits in int32_data
        auto bits = static_cast<uint16_t>(t.int32_data(i));
        a.data[2 * static_cast<size_t>(i)] = static_cast<uint8_t>(bits & 0xff);
        a.data[2 * static_cast<size_t>(i) + 1] = static_cast<uint8_t>(bits >> 8);
        break;
      }
      default: a.set_int(i, t.int32_data(i)); break;
    }
  }
  out->bytes_.assign(a.data.begin(), a.data.end());
}

OnnxTensor read_tensor(const onnx::TensorProto& t) {
  OnnxTensor out;
  out.name_ = t.name();
  out.data_type_ = t.data_type();
  out.dims_.assign(t.dims().begin(), t.dims().end());
  out.external_ = t.data_location() == onnx::TensorProto::EXTERNAL || t.external_data_size() > 0;
  out.segmented_ = t.has_segment();
  if (t.has_raw_data()) out.bytes_ = t.raw_data();
  else read_typed_values(t, &out);
  return out;
}

// Graphs, sparse tensors and type protos keep only their kind: no op we map takes them.
OnnxAttribute read_attribute(const onnx::AttributeProto& a) {
  OnnxAttribute out;
  out.name_ = a.name();
  out.ref_attr_name_ = a.ref_attr_name();
  out.type_ = a.type();
  out.i_ = a.i();
  out.f_ = a.f();
  out.s_ = a.s();
  out.ints_.assign(a.ints().begin(), a.ints().end());
  out.floats_.assign(a.floats().begin(), a.floats().end());
  out.strings_.assign(a.strings().begin(), a.strings().end());
  if (a.has_t()) out.t_.push_back(read_tensor(a.t()));
  return out;
}

OnnxNode read_node(const onnx::NodeProto& n) {
  OnnxNode out;
  out.op_type_ = n.op_type();
  out.domain_ = n.domain();
  out.name_ = n.name();
  out.input_.assign(n.input().begin(), n.input().end());
  out.output_.assign(n.output().begin(), n.output().end());
  for (const auto& a : n.attribute()) out.attribute_.push_back(read_attribute(a));
  return out;
}

OnnxValueInfo read_value_info(const onnx::ValueInfoProto& v) {
  OnnxValueInfo out;
  out.name_ = v.name();
  out.is_tensor_ = v.type().has_tensor_type();
  const auto& tt = v.type().tensor_type();
  out.elem_type_ = tt.elem_type();
  out.has_shape_ = tt.has_shape();
  for (const auto& d : tt.shape().dim())
    out.dims_.push_back({d.has_dim_value(), d.dim_value(), d.has_dim_param(), d.dim_param()});
  return out;
}

OnnxGraph read_graph(const onnx::GraphProto& g) {
  OnnxGraph out;
  out.name_ = g.name();
  for (const auto& n : g.node()) out.node_.push_back(read_node(n));
  for (const auto& t : g.initializer()) out.initializer_.push_back(read_tensor(t));
  out.sparse_initializer_count_ = g.sparse_initializer_size();
  for (const auto& v : g.input()) out.input_.push_back(read_value_info(v));
  for (const auto& v : g.output()) out.output_.push_back(read_value_info(v));
  return out;
}

}  // namespace

OnnxModel read_onnx_model(const std::string& bytes, const std::string& filename) {
  onnx::ModelProto m;
  if (bytes.empty()) user_error({}, "'" + filename + "' is empty, not an ONNX model");
  if (!m.ParseFromString(bytes))
    user_error({}, "'" + filename + "' is not a valid ONNX model: the protobuf data is malformed or truncated");
  OnnxModel out;
  out.ir_version = m.ir_version();
  for (const auto& op : m.opset_import()) out.opset_import.push_back({op.domain(), op.version()});
  out.has_graph = m.has_graph();
  if (out.has_graph) out.graph = read_graph(m.graph());
  return out;
}

Graph load_onnx(const std::string& bytes, const std::string& filename, const OnnxOptions& options) {
  return convert_onnx(read_onnx_model(bytes, filename), filename, options);
}

NDArray load_onnx_tensor(const std::string& bytes, const std::string& filename, std::string* name) {
  onnx::TensorProto t;
  if (!t.ParseFromString(bytes)) user_error({}, "'" + filename + "' is not a valid ONNX TensorProto");
  if (name) *name = t.name();
  return onnx_tensor_to_ndarray(read_tensor(t), "tensor '" + t.name() + "' in '" + filename + "'");
}

}  // namespace mtir
