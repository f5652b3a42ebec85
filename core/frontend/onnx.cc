// The ONNX frontend. See onnx.h and docs/onnx.md.
#include "frontend/onnx.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <set>

#include "frontend/onnx_convert.h"
#include "support/diagnostic.h"
#include "support/names.h"

namespace mtir {

namespace {

// ONNX TensorProto.DataType codes and their names (for messages).
std::string onnx_dtype_name(int code) {
  static const char* const kNames[] = {"undefined", "float32", "uint8",  "int8",      "uint16",    "int16",
                                       "int32",     "int64",   "string", "bool",      "float16",   "float64",
                                       "uint32",    "uint64",  "complex64", "complex128", "bfloat16"};
  if (code >= 0 && code < static_cast<int>(sizeof(kNames) / sizeof(kNames[0]))) return kNames[code];
  return "dtype code " + std::to_string(code);
}

}  // namespace

// Our dtype for an ONNX element type, or false when the CRT cannot hold it.
bool onnx_dtype_from_code(int code, DataType* out) {
  using T = onnx::TensorProto;
  switch (code) {
    case T::FLOAT: *out = DataType::Float(32); return true;
    case T::DOUBLE: *out = DataType::Float(64); return true;
    case T::FLOAT16: *out = DataType::Float(16); return true;
    case T::INT8: *out = DataType::Int(8); return true;
    case T::INT16: *out = DataType::Int(16); return true;
    case T::INT32: *out = DataType::Int(32); return true;
    case T::INT64: *out = DataType::Int(64); return true;
    case T::UINT8: *out = DataType::UInt(8); return true;
    case T::UINT16: *out = DataType::UInt(16); return true;
    case T::UINT32: *out = DataType::UInt(32); return true;
    case T::UINT64: *out = DataType::UInt(64); return true;
    case T::BOOL: *out = DataType::Bool(); return true;
    default: return false;
  }
}

NDArray onnx_tensor_to_ndarray(const onnx::TensorProto& t, const std::string& what) {
  DataType dt;
  if (!onnx_dtype_from_code(t.data_type(), &dt))
    user_error({}, "unsupported: " + what + " has dtype " + onnx_dtype_name(t.data_type()));
  if (t.data_location() == onnx::TensorProto::EXTERNAL || t.external_data_size() > 0)
    user_error({}, "unsupported: " + what + " keeps its data in an external file");
  if (t.has_segment()) user_error({}, "unsupported: " + what + " is a segmented tensor");
  std::vector<int64_t> shape(t.dims().begin(), t.dims().end());
  for (int64_t d : shape)
    if (d < 0) user_error({}, what + " has a negative dimension " + std::to_string(d));
  // Zero-sized tensors are valid ONNX but none of our ops takes them.
  for (int64_t d : shape)
    if (d == 0) user_error({}, "unsupported: " + what + " has a zero-sized dimension");
  int64_t elements = 1;
  for (int64_t d : shape) {
    elements *= d;
    if (elements > (int64_t{1} << 31) - 1) user_error({}, what + " has more than 2^31 - 1 elements");
  }
  // The values must be there before the array is allocated: a few bytes of protobuf
  // can claim 2^31 elements.
  const int64_t n = elements;
  const int64_t nbytes = n * dt.bytes();
  using T = onnx::TensorProto;
  if (t.has_raw_data()) {
    if (static_cast<int64_t>(t.raw_data().size()) != nbytes)
      user_error({}, what + " has " + std::to_string(t.raw_data().size()) +
                         " bytes of raw data but its shape and dtype need " + std::to_string(nbytes));
  } else {
    int64_t got = 0;
    switch (t.data_type()) {
      case T::FLOAT: got = t.float_data_size(); break;
      case T::DOUBLE: got = t.double_data_size(); break;
      case T::INT64: got = t.int64_data_size(); break;
      case T::UINT32:
      case T::UINT64: got = t.uint64_data_size(); break;
      default: got = t.int32_data_size(); break;  // float16 bits, int8/16/32, uint8/16, bool
    }
    if (got != n) user_error({}, what + " has " + std::to_string(got) + " values but its shape needs " + std::to_string(n));
  }
  NDArray a = NDArray::zeros(dt, shape);
  if (t.has_raw_data()) {
    std::memcpy(a.data.data(), t.raw_data().data(), t.raw_data().size());  // both little-endian
    return a;
  }
  switch (t.data_type()) {
    case T::FLOAT:
      for (int64_t i = 0; i < n; ++i) a.set_float(i, t.float_data(static_cast<int>(i)));
      break;
    case T::DOUBLE:
      for (int64_t i = 0; i < n; ++i) a.set_float(i, t.double_data(static_cast<int>(i)));
      break;
    case T::INT64:
      for (int64_t i = 0; i < n; ++i) a.set_int(i, t.int64_data(static_cast<int>(i)));
      break;
    case T::UINT32:
    case T::UINT64:
      for (int64_t i = 0; i < n; ++i) a.set_int(i, static_cast<int64_t>(t.uint64_data(static_cast<int>(i))));
      break;
    case T::FLOAT16:
      // Stored as the 16 bits in int32_data.
      for (int64_t i = 0; i < n; ++i) {
        uint16_t bits = static_cast<uint16_t>(t.int32_data(static_cast<int>(i)));
        std::memcpy(a.data.data() + 2 * i, &bits, 2);
      }
      break;
    default:  // int8/16/32, uint8/16, bool: int32_data
      for (int64_t i = 0; i < n; ++i) a.set_int(i, t.int32_data(static_cast<int>(i)));
      break;
  }
  return a;
}

namespace {

// Protobuf parsing accepts many byte strings that are not models (an empty file, most
// short texts), so a parsed model must also have what every exporter writes.
onnx::ModelProto parse_model(const std::string& bytes, const std::string& filename) {
  onnx::ModelProto m;
  if (bytes.empty()) user_error({}, "'" + filename + "' is empty, not an ONNX model");
  if (!m.ParseFromString(bytes))
    user_error({}, "'" + filename + "' is not a valid ONNX model: the protobuf data is malformed or truncated");
  if (m.ir_version() <= 0 || !m.has_graph())
    user_error({}, "'" + filename + "' is not an ONNX model: it has no ir_version or no graph (wrong file type?)");
  return m;
}

// The opset version of the default domain; other domains are refused where they are used.
int64_t default_opset(const onnx::ModelProto& m, const std::string& filename) {
  int64_t version = -1;
  for (const auto& op : m.opset_import()) {
    if (op.domain().empty() || op.domain() == "ai.onnx") version = op.version();
  }
  if (version < 0) {
    std::string domains;
    for (const auto& op : m.opset_import()) domains += (domains.empty() ? "" : ", ") + ("'" + op.domain() + "'");
    user_error({}, "unsupported: '" + filename + "' imports no opset of the default ONNX domain (it imports " +
                       (domains.empty() ? std::string("none") : domains) + ")");
  }
  // Opsets 1 to 6 are read too: the ops whose meaning changed before 7 announce it with
  // attributes we refuse (broadcast, consumed_inputs, is_test, paddings) or check the
  // opset themselves.
  if (version < 1 || version > 17)
    user_error({}, "unsupported: opset version " + std::to_string(version) +
                       " of the default domain; microtir reads opsets 1 to 17 (7 to 17 fully)");
  return version;
}

}  // namespace

NDArray load_onnx_tensor(const std::string& bytes, const std::string& filename, std::string* name) {
  onnx::TensorProto t;
  if (!t.ParseFromString(bytes)) user_error({}, "'" + filename + "' is not a valid ONNX TensorProto");
  if (name) *name = t.name();
  return onnx_tensor_to_ndarray(t, "tensor '" + t.name() + "' in '" + filename + "'");
}

Graph load_onnx(const std::string& bytes, const std::string& filename, const OnnxOptions& options) {
  onnx::ModelProto model = parse_model(bytes, filename);
  int64_t opset = default_opset(model, filename);
  OnnxConverter conv(model.graph(), opset, options);
  return conv.run();
}

}  // namespace mtir
