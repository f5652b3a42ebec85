// See onnx_import.h.
#include "onnx_import.h"

#include <cmath>
#include <limits>
#include <stdexcept>

#include "base64.h"
#include "frontend/onnx.h"
#include "support/diagnostic.h"

namespace mtir::wasm {

using nlohmann::json;

namespace {

// The request broke the format of onnx_import.h: the page's decoder is wrong, not the model.
struct Malformed : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The member `key` of `o`, or null when absent (protobuf's default).
const json* field(const json& o, const char* key) {
  if (!o.is_object()) throw Malformed(std::string("expected an object holding '") + key + "'");
  auto it = o.find(key);
  return it == o.end() || it->is_null() ? nullptr : &*it;
}

int64_t int_of(const json& v, const char* what) {
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    size_t used = 0;
    try {
      int64_t x = std::stoll(s, &used);
      if (used == s.size()) return x;
    } catch (const std::exception&) {
    }
  }
  throw Malformed(std::string("'") + what + "' is not an int64: " + v.dump());
}

double float_of(const json& v, const char* what) {
  if (v.is_number()) return v.get<double>();
  if (v == "NaN") return std::numeric_limits<double>::quiet_NaN();
  if (v == "Infinity") return std::numeric_limits<double>::infinity();
  if (v == "-Infinity") return -std::numeric_limits<double>::infinity();
  if (v == "-0") return -0.0;
  throw Malformed(std::string("'") + what + "' is not a float: " + v.dump());
}

int64_t int_field(const json& o, const char* key) {
  const json* v = field(o, key);
  return v ? int_of(*v, key) : 0;
}

bool bool_field(const json& o, const char* key) {
  const json* v = field(o, key);
  if (v && !v->is_boolean()) throw Malformed(std::string("'") + key + "' is not a boolean");
  return v && v->get<bool>();
}

std::string string_field(const json& o, const char* key) {
  const json* v = field(o, key);
  if (v && !v->is_string()) throw Malformed(std::string("'") + key + "' is not a string");
  return v ? v->get<std::string>() : std::string();
}

// The elements of the list `key` (empty when absent), each read by `read`.
template <typename T, typename Read>
std::vector<T> list_field(const json& o, const char* key, Read read) {
  std::vector<T> out;
  const json* v = field(o, key);
  if (!v) return out;
  if (!v->is_array()) throw Malformed(std::string("'") + key + "' is not a list");
  for (const auto& x : *v) out.push_back(read(x));
  return out;
}

std::vector<std::string> strings_field(const json& o, const char* key) {
  return list_field<std::string>(o, key, [&](const json& x) {
    if (!x.is_string()) throw Malformed(std::string("'") + key + "' holds a non-string");
    return x.get<std::string>();
  });
}

OnnxTensor read_tensor(const json& o) {
  OnnxTensor t;
  t.name_ = string_field(o, "name");
  t.data_type_ = static_cast<int>(int_field(o, "data_type"));
  t.dims_ = list_field<int64_t>(o, "dims", [](const json& x) { return int_of(x, "dims"); });
  t.bytes_ = base64_decode(string_field(o, "bytes"), "the bytes of tensor '" + t.name_ + "'");
  t.typed_values_ = field(o, "typed_values") ? int_field(o, "typed_values") : -1;
  t.external_ = bool_field(o, "external");
  t.segmented_ = bool_field(o, "segmented");
  return t;
}

OnnxAttribute read_attribute(const json& o) {
  OnnxAttribute a;
  a.name_ = string_field(o, "name");
  a.ref_attr_name_ = string_field(o, "ref_attr_name");
  a.type_ = static_cast<int>(int_field(o, "type"));
  a.i_ = int_field(o, "i");
  if (const json* f = field(o, "f")) a.f_ = float_of(*f, "f");
  a.s_ = string_field(o, "s");
  a.ints_ = list_field<int64_t>(o, "ints", [](const json& x) { return int_of(x, "ints"); });
  a.floats_ = list_field<double>(o, "floats", [](const json& x) { return float_of(x, "floats"); });
  a.strings_ = strings_field(o, "strings");
  if (const json* t = field(o, "t")) a.t_.push_back(read_tensor(*t));
  return a;
}

OnnxNode read_node(const json& o) {
  OnnxNode n;
  n.op_type_ = string_field(o, "op_type");
  n.domain_ = string_field(o, "domain");
  n.name_ = string_field(o, "name");
  n.input_ = strings_field(o, "input");
  n.output_ = strings_field(o, "output");
  n.attribute_ = list_field<OnnxAttribute>(o, "attribute", read_attribute);
  return n;
}

OnnxValueInfo read_value_info(const json& o) {
  OnnxValueInfo v;
  v.name_ = string_field(o, "name");
  v.is_tensor_ = bool_field(o, "tensor");
  v.elem_type_ = static_cast<int>(int_field(o, "elem_type"));
  v.has_shape_ = bool_field(o, "has_shape");
  v.dims_ = list_field<OnnxValueInfo::Dim>(o, "dims", [](const json& d) {
    OnnxValueInfo::Dim dim;
    dim.has_value = field(d, "value") != nullptr;
    dim.value = int_field(d, "value");
    dim.has_param = field(d, "param") != nullptr;
    dim.param = string_field(d, "param");
    return dim;
  });
  return v;
}

OnnxModel read_model(const json& o) {
  OnnxModel m;
  m.ir_version = int_field(o, "ir_version");
  m.opset_import = list_field<OnnxOpsetImport>(o, "opset_import", [](const json& x) {
    return OnnxOpsetImport{string_field(x, "domain"), int_field(x, "version")};
  });
  const json* g = field(o, "graph");
  m.has_graph = g != nullptr;
  if (!g) return m;
  m.graph.name_ = string_field(*g, "name");
  m.graph.node_ = list_field<OnnxNode>(*g, "node", read_node);
  m.graph.initializer_ = list_field<OnnxTensor>(*g, "initializer", read_tensor);
  m.graph.sparse_initializer_count_ = static_cast<int>(int_field(*g, "sparse_initializer_count"));
  m.graph.input_ = list_field<OnnxValueInfo>(*g, "input", read_value_info);
  m.graph.output_ = list_field<OnnxValueInfo>(*g, "output", read_value_info);
  return m;
}

json failure(const std::string& message, bool internal) {
  return {{"ok", false}, {"message", message}, {"internal", internal}};
}

}  // namespace

json import_onnx_request(const std::string& model_json, const std::string& filename) {
  try {
    OnnxModel model = read_model(json::parse(model_json));
    Graph g = convert_onnx(model, filename);
    return {{"ok", true}, {"graph", write_graph_json(g)}, {"notes", g.notes}};
  } catch (const DiagnosticError& e) {
    return failure(e.diagnostics().empty() ? "invalid" : e.diagnostics()[0].message, e.internal());
  } catch (const Malformed& e) {
    return failure(std::string("malformed ONNX model request: ") + e.what(), true);
  } catch (const json::exception& e) {
    return failure(std::string("malformed ONNX model request: ") + e.what(), true);
  } catch (const std::exception& e) {
    return failure(std::string("internal error: ") + e.what(), true);
  }
}

}  // namespace mtir::wasm
