// The ONNX frontend's entry and tensors: from the protobuf-free model (onnx_model.h) to
// the converter. See onnx.h and docs/onnx.md.
#include "frontend/onnx.h"

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
  switch (code) {
    case kOnnxFloat: *out = DataType::Float(32); return true;
    case kOnnxDouble: *out = DataType::Float(64); return true;
    case kOnnxFloat16: *out = DataType::Float(16); return true;
    case kOnnxInt8: *out = DataType::Int(8); return true;
    case kOnnxInt16: *out = DataType::Int(16); return true;
    case kOnnxInt32: *out = DataType::Int(32); return true;
    case kOnnxInt64: *out = DataType::Int(64); return true;
    case kOnnxUint8: *out = DataType::UInt(8); return true;
    case kOnnxUint16: *out = DataType::UInt(16); return true;
    case kOnnxUint32: *out = DataType::UInt(32); return true;
    case kOnnxUint64: *out = DataType::UInt(64); return true;
    case kOnnxBool: *out = DataType::Bool(); return true;
    default: return false;
  }
}

const OnnxTensor& OnnxAttribute::t() const {
  static const OnnxTensor kNone;
  return t_.empty() ? kNone : t_[0];
}

NDArray onnx_tensor_to_ndarray(const OnnxTensor& t, const std::string& what) {
  DataType dt;
  if (!onnx_dtype_from_code(t.data_type(), &dt))
    user_error({}, "unsupported: " + what + " has dtype " + onnx_dtype_name(t.data_type()));
  if (t.external_) user_error({}, "unsupported: " + what + " keeps its data in an external file");
  if (t.segmented_) user_error({}, "unsupported: " + what + " is a segmented tensor");
  const std::vector<int64_t>& shape = t.dims();
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
  const int64_t nbytes = elements * dt.bytes();
  if (t.typed_values_ < 0 && static_cast<int64_t>(t.bytes_.size()) != nbytes)
    user_error({}, what + " has " + std::to_string(t.bytes_.size()) +
                       " bytes of raw data but its shape and dtype need " + std::to_string(nbytes));
  if (t.typed_values_ >= 0 && t.typed_values_ != elements)
    user_error({}, what + " has " + std::to_string(t.typed_values_) + " values but its shape needs " +
                       std::to_string(elements));
  // A typed field's values came as bytes of the dtype: a mismatch is the reader's mistake.
  MTIR_ICHECK(static_cast<int64_t>(t.bytes_.size()) == nbytes,
              what + ": " + std::to_string(t.typed_values_) + " typed values in " + std::to_string(t.bytes_.size()) +
                  " bytes");
  NDArray a = NDArray::zeros(dt, shape);
  std::memcpy(a.data.data(), t.bytes_.data(), t.bytes_.size());  // both little-endian
  return a;
}

namespace {

// The opset version of the default domain; other domains are refused where they are used.
int64_t default_opset(const OnnxModel& m, const std::string& filename) {
  int64_t version = -1;
  for (const auto& op : m.opset_import) {
    if (op.domain.empty() || op.domain == "ai.onnx") version = op.version;
  }
  if (version < 0) {
    std::string domains;
    for (const auto& op : m.opset_import) domains += (domains.empty() ? "" : ", ") + ("'" + op.domain + "'");
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

Graph convert_onnx(const OnnxModel& model, const std::string& filename, const OnnxOptions& options) {
  // Protobuf parsing accepts many byte strings that are not models (an empty file, most
  // short texts), so a parsed model must also have what every exporter writes.
  if (model.ir_version <= 0 || !model.has_graph)
    user_error({}, "'" + filename + "' is not an ONNX model: it has no ir_version or no graph (wrong file type?)");
  int64_t opset = default_opset(model, filename);
  OnnxConverter conv(model.graph, opset, options);
  return conv.run();
}

}  // namespace mtir
