// An ONNX model in memory, independent of protobuf: what the converter (onnx_convert.h)
// reads. Natively it is filled from libonnx's generated classes (onnx_proto.cc, the only
// file that sees them); in the wasm build from JSON (wasm/onnx_import.cc) that the page
// decodes with protobufjs (web/src/onnx_import.js). So both run one converter.
//
// It keeps what the converter looks at, nothing more: a graph attribute, a sparse
// tensor or a type proto keeps only its kind (the op holding it is refused anyway), and
// a tensor's values are little-endian bytes however the file stored them. The accessors
// carry onnx.proto's names (op_type(), input(i), attribute(), dims(), ...), so the
// converter reads this form as it read the protobuf classes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mtir {

// TensorProto.DataType codes (onnx.proto).
enum OnnxDtype : int {
  kOnnxUndefined = 0, kOnnxFloat = 1, kOnnxUint8 = 2, kOnnxInt8 = 3, kOnnxUint16 = 4, kOnnxInt16 = 5,
  kOnnxInt32 = 6, kOnnxInt64 = 7, kOnnxString = 8, kOnnxBool = 9, kOnnxFloat16 = 10, kOnnxDouble = 11,
  kOnnxUint32 = 12, kOnnxUint64 = 13,
};

struct OnnxTensor {
  std::string name_;
  int data_type_ = kOnnxUndefined;
  std::vector<int64_t> dims_;
  // The values' bytes, little-endian. From raw_data as it is; from a typed field
  // (float_data, int32_data, ...) one element of the dtype per value, as NDArray's
  // set_float / set_int store it.
  std::string bytes_;
  // -1 when the values were raw_data; otherwise how many values the typed field held
  // (the converter checks that count against the shape, as it checks raw bytes).
  int64_t typed_values_ = -1;
  bool external_ = false;   // data_location EXTERNAL or external_data entries
  bool segmented_ = false;  // has a segment

  const std::string& name() const { return name_; }
  int data_type() const { return data_type_; }
  const std::vector<int64_t>& dims() const { return dims_; }
};

struct OnnxAttribute {
  // AttributeProto.AttributeType codes.
  enum Type : int {
    kUndefined = 0, kFloat = 1, kInt = 2, kString = 3, kTensor = 4, kGraph = 5, kFloats = 6, kInts = 7,
    kStrings = 8, kTensors = 9, kGraphs = 10, kSparseTensor = 11, kSparseTensors = 12, kTypeProto = 13,
    kTypeProtos = 14,
  };
  std::string name_, ref_attr_name_;
  int type_ = kUndefined;
  int64_t i_ = 0;
  double f_ = 0;  // a float32 value
  std::string s_;
  std::vector<int64_t> ints_;
  std::vector<double> floats_;  // float32 values
  std::vector<std::string> strings_;
  std::vector<OnnxTensor> t_;  // the tensor of a kTensor attribute (one element)

  const std::string& name() const { return name_; }
  const std::string& ref_attr_name() const { return ref_attr_name_; }
  int type() const { return type_; }
  int64_t i() const { return i_; }
  double f() const { return f_; }
  const std::string& s() const { return s_; }
  const std::vector<int64_t>& ints() const { return ints_; }
  const std::vector<double>& floats() const { return floats_; }
  const std::vector<std::string>& strings() const { return strings_; }
  // The tensor value; an empty tensor (undefined dtype) when the attribute has none.
  const OnnxTensor& t() const;
};

struct OnnxNode {
  std::string op_type_, domain_, name_;
  std::vector<std::string> input_, output_;
  std::vector<OnnxAttribute> attribute_;

  const std::string& op_type() const { return op_type_; }
  const std::string& domain() const { return domain_; }
  const std::string& name() const { return name_; }
  int input_size() const { return static_cast<int>(input_.size()); }
  const std::string& input(int i) const { return input_.at(static_cast<size_t>(i)); }
  const std::vector<std::string>& input() const { return input_; }
  int output_size() const { return static_cast<int>(output_.size()); }
  const std::string& output(int i) const { return output_.at(static_cast<size_t>(i)); }
  const std::vector<std::string>& output() const { return output_; }
  int attribute_size() const { return static_cast<int>(attribute_.size()); }
  const OnnxAttribute& attribute(int i) const { return attribute_.at(static_cast<size_t>(i)); }
  const std::vector<OnnxAttribute>& attribute() const { return attribute_; }
};

// A graph input or output (ValueInfoProto): the converter needs only tensor types.
struct OnnxValueInfo {
  struct Dim {
    bool has_value = false;
    int64_t value = 0;
    bool has_param = false;
    std::string param;
  };
  std::string name_;
  bool is_tensor_ = false;  // type.tensor_type is set (not a sequence, map, optional)
  int elem_type_ = kOnnxUndefined;
  bool has_shape_ = false;
  std::vector<Dim> dims_;

  const std::string& name() const { return name_; }
};

struct OnnxGraph {
  std::string name_;
  std::vector<OnnxNode> node_;
  std::vector<OnnxTensor> initializer_;
  int sparse_initializer_count_ = 0;
  std::vector<OnnxValueInfo> input_, output_;

  const std::string& name() const { return name_; }
  int node_size() const { return static_cast<int>(node_.size()); }
  const OnnxNode& node(int i) const { return node_.at(static_cast<size_t>(i)); }
  const std::vector<OnnxNode>& node() const { return node_; }
  const std::vector<OnnxTensor>& initializer() const { return initializer_; }
  int sparse_initializer_size() const { return sparse_initializer_count_; }
  const std::vector<OnnxValueInfo>& input() const { return input_; }
  const std::vector<OnnxValueInfo>& output() const { return output_; }
};

struct OnnxOpsetImport {
  std::string domain;
  int64_t version = 0;
};

struct OnnxModel {
  int64_t ir_version = 0;
  std::vector<OnnxOpsetImport> opset_import;
  bool has_graph = false;
  OnnxGraph graph;
};

}  // namespace mtir
