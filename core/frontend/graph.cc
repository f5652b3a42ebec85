// The JSON graph loader and batch-norm folding. See graph.h and docs/graph-format.md.
#include "frontend/graph.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <sstream>

#include "ops/devices.h"
#include "support/diagnostic.h"
#include "support/source_offset.h"
#include "support/names.h"
#include "support/npy.h"

namespace mtir {

using nlohmann::json;

namespace {

const char* kFormat = "microtir-graph";
const int kVersion = 1;

// The dtypes a graph tensor may have (what the operator library and the C runtime
// know how to hold).
const std::vector<std::string>& supported_dtypes() {
  static const std::vector<std::string> v = {"float32", "float16", "int8",  "uint8", "int16",
                                             "uint16",  "int32",   "uint32", "int64"};
  return v;
}

std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? sep : "") + v[i];
  return s;
}

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  if (shape.size() == 1) s += ",";
  return s + ")";
}

// " (did you mean 'x'?)" for the closest candidate, or "".
std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best = closest_match(word, candidates);
  return best.empty() ? "" : " (did you mean '" + best + "'?)";
}

std::string json_type_name(const json& j) {
  switch (j.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return "a boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: return "an integer";
    case json::value_t::number_float: return "a number";
    case json::value_t::string: return "a string";
    case json::value_t::array: return "a list";
    case json::value_t::object: return "an object";
    default: return "a value";
  }
}

// Where an error points; computed only when an error is reported, since finding a
// location scans the text.
using Where = std::function<Span()>;

[[noreturn]] void fail(const Where& where, const std::string& message, std::vector<std::string> notes = {}) {
  user_error(where(), message, std::move(notes));
}

// The loader: the JSON text (for locations) and the graph being built.
class Loader {
 public:
  Loader(const std::string& text, const std::string& filename, const FileReader& read)
      : read_(read) {
    auto f = std::make_shared<SourceFile>();
    f->name = filename;
    f->text = text;
    file_ = f;
  }

  Graph load();

 private:
  // ---- locations
  Span at_offset(size_t offset) const { return span_at_offset(file_, offset); }
  static size_t skip_ws(const std::string& t, size_t p) {
    while (p < t.size() && (t[p] == ' ' || t[p] == '\t' || t[p] == '\n' || t[p] == '\r')) ++p;
    return p;
  }
  // Where `"key": ` is followed by the JSON string `value` at or after `from` (the
  // first such place, or the last with `last`), or npos.
  size_t find_key_value(const std::string& key, const std::string& value, size_t from, bool last) const {
    const std::string& t = file_->text;
    std::string k = json(key).dump(), v = json(value).dump();
    size_t found = std::string::npos;
    for (size_t p = t.find(k, from); p != std::string::npos; p = t.find(k, p + 1)) {
      size_t q = skip_ws(t, p + k.size());
      if (q >= t.size() || t[q] != ':') continue;
      q = skip_ws(t, q + 1);
      if (t.compare(q, v.size(), v) != 0) continue;
      found = p;
      if (!last) break;
    }
    return found;
  }
  // The location of the object whose "name" is `name` (its "name" key), looked for
  // after the top-level `section` key first; `last` takes the last such object (for
  // duplicates). Else the `section` key, else the start of the file.
  Span locate(const std::string& name, const std::string& section, bool last = false) const {
    size_t sec = key_offset(section);
    size_t p = find_key_value("name", name, sec == std::string::npos ? 0 : sec, last);
    if (p == std::string::npos) p = find_key_value("name", name, 0, last);
    if (p != std::string::npos) return at_offset(p);
    return locate_key(section);
  }
  size_t key_offset(const std::string& key) const {
    const std::string& t = file_->text;
    if (key.empty()) return std::string::npos;
    std::string k = json(key).dump();
    for (size_t p = t.find(k); p != std::string::npos; p = t.find(k, p + 1)) {
      size_t q = skip_ws(t, p + k.size());
      if (q < t.size() && t[q] == ':') return p;
    }
    return std::string::npos;
  }
  Span locate_key(const std::string& key) const {
    size_t p = key_offset(key);
    return at_offset(p == std::string::npos ? 0 : p);
  }

  // ---- field readers; `what` names the thing ("node 'conv1'", "inputs[2]").
  const json& field(const json& obj, const std::string& key, const std::string& what,
                    const Where& span) const {
    auto it = obj.find(key);
    if (it == obj.end()) fail(span, what + ": missing field '" + key + "'");
    return *it;
  }
  std::string string_field(const json& obj, const std::string& key, const std::string& what,
                           const Where& span) const {
    const json& j = field(obj, key, what, span);
    if (!j.is_string())
      fail(span, what + ": field '" + key + "' must be a string, not " + json_type_name(j));
    return j.get<std::string>();
  }
  void check_keys(const json& obj, const std::vector<std::string>& known, const std::string& what,
                  const Where& span) const {
    for (auto it = obj.begin(); it != obj.end(); ++it) {
      const std::string& k = it.key();
      if (!k.empty() && k[0] == '_') continue;  // comments and test annotations
      if (std::find(known.begin(), known.end(), k) == known.end())
        fail(span, what + ": unknown field '" + k + "'" + did_you_mean(k, known) +
                             "; known fields: " + join(known, ", "));
    }
  }
  std::vector<int64_t> shape_field(const json& j, const std::string& what, const Where& span) const {
    if (!j.is_array())
      fail(span, what + ": 'shape' must be a list of positive integers, not " + json_type_name(j));
    std::vector<int64_t> shape;
    int64_t elements = 1;
    for (size_t i = 0; i < j.size(); ++i) {
      const json& d = j[i];
      if (!d.is_number_integer())
        fail(span, what + ": 'shape' must be a list of positive integers, but dimension " +
                             std::to_string(i) + " is " + d.dump());
      int64_t v = d.get<int64_t>();
      if (v <= 0)
        fail(span, what + ": dimension " + std::to_string(i) + " of the shape is " + std::to_string(v) +
                             "; dimensions must be positive");
      if (v > (int64_t{1} << 31))
        fail(span, what + ": dimension " + std::to_string(i) + " (" + std::to_string(v) + ") is too large");
      shape.push_back(v);
      elements *= v;
      if (elements > (int64_t{1} << 31) - 1)
        fail(span, what + ": the shape has more than 2^31 - 1 elements");
    }
    return shape;
  }
  DataType dtype_of(const std::string& name, const std::string& what, const Where& span) const {
    const auto& ok = supported_dtypes();
    auto dt = DataType::parse(name);
    if (!dt || std::find(ok.begin(), ok.end(), name) == ok.end())
      fail(span, what + ": unsupported dtype '" + name + "'" + did_you_mean(name, ok) +
                           "; supported: " + join(ok, ", "));
    return *dt;
  }
  DataType dtype_field(const json& obj, const std::string& what, const Where& span) const {
    auto it = obj.find("dtype");
    if (it == obj.end()) return DataType::Float(32);
    if (!it->is_string())
      fail(span, what + ": field 'dtype' must be a string, not " + json_type_name(*it));
    return dtype_of(it->get<std::string>(), what, span);
  }

  void declare(const std::string& name, const std::string& kind, const std::string& what, const Where& span) {
    if (name.empty()) fail(span, what + ": the name is empty");
    auto it = kinds_.find(name);
    if (it != kinds_.end())
      fail(span, what + ": duplicate name '" + name + "', already used by " + it->second + " '" + name +
                           "'; names must be unique across inputs, constants and nodes");
    kinds_[name] = kind;
  }

  std::string read_file(const std::string& path, const std::string& what, const Where& span) const {
    if (!read_) fail(span, what + ": cannot read '" + path + "': no file reader was given");
    try {
      return read_(path);
    } catch (const DiagnosticError& e) {
      if (e.internal()) throw;
      std::string m = e.diagnostics().empty() ? "unreadable" : e.diagnostics()[0].message;
      fail(span, what + ": cannot read '" + path + "': " + m);
    }
  }

  void load_header(const json& root);
  void load_inputs(const json& root);
  void load_constants(const json& root, const char* key);
  void load_constant(const json& c, size_t index, const char* key);
  NDArray constant_from_npy(const json& c, const std::optional<std::vector<int64_t>>& shape,
                            const std::optional<DataType>& dtype, const std::string& what, const Where& span);
  void fill_from_blob(const json& c, NDArray& a, const std::string& what, const Where& span);
  void fill_from_values(const json& c, NDArray& a, const std::string& what, const Where& span);
  void load_nodes(const json& root);
  void sort_nodes();
  void infer_types();
  void load_outputs(const json& root);
  void load_quantization(const json& root);

  const FileReader& read_;
  std::shared_ptr<const SourceFile> file_;
  Graph g_;
  std::map<std::string, std::string> kinds_;  // name -> "model input" / "constant" / "node"
  std::map<std::string, std::string> blobs_;  // blob file -> bytes
  std::map<std::string, TensorType> types_;
};

void Loader::load_header(const json& root) {
  Where top = [this] { return at_offset(0); };
  check_keys(root, {"format", "version", "name", "description", "inputs", "constants", "state", "nodes", "outputs", "quantization"},
             "the graph", top);
  auto fmt = root.find("format");
  if (fmt == root.end())
    fail(top, "missing field 'format' (expected \"" + std::string(kFormat) + "\")");
  if (!fmt->is_string() || fmt->get<std::string>() != kFormat)
    user_error(locate_key("format"),
               "wrong format " + fmt->dump() + ": expected \"" + std::string(kFormat) + "\"");
  auto ver = root.find("version");
  if (ver == root.end()) fail(top, "missing field 'version' (expected " + std::to_string(kVersion) + ")");
  if (!ver->is_number_integer() || ver->get<int64_t>() != kVersion)
    user_error(locate_key("version"), "unsupported version " + ver->dump() + ": this microtir reads version " +
                                          std::to_string(kVersion));
  g_.name = string_field(root, "name", "the graph", top);
  if (!is_c_identifier(g_.name))
    user_error(locate(g_.name, ""), "the model name '" + g_.name +
                                       "' is not a C identifier (letters, digits and '_', not starting "
                                       "with a digit); generated symbols are tvmgen_<name>_...");
}

void Loader::load_inputs(const json& root) {
  const json& ins = field(root, "inputs", "the graph", [this] { return at_offset(0); });
  if (!ins.is_array()) user_error(locate_key("inputs"), "'inputs' must be a list, not " + json_type_name(ins));
  for (size_t i = 0; i < ins.size(); ++i) {
    const json& in = ins[i];
    std::string what = "inputs[" + std::to_string(i) + "]";
    Where span = [this] { return locate_key("inputs"); };
    if (!in.is_object()) fail(span, what + " must be an object, not " + json_type_name(in));
    std::string name = string_field(in, "name", what, span);
    what = "input '" + name + "'";
    span = [this, name] { return locate(name, "inputs", true); };
    check_keys(in, {"name", "shape", "dtype"}, what, span);
    declare(name, "the model input", what, span);
    TensorType t;
    t.shape = shape_field(field(in, "shape", what, span), what, span);
    t.dtype = dtype_field(in, what, span);
    g_.inputs.emplace_back(name, t);
    types_[name] = t;
  }
}

// "constants" (weights) or "state" (initial values of persistent state): the same form.
void Loader::load_constants(const json& root, const char* key) {
  auto it = root.find(key);
  if (it == root.end()) return;  // a graph without weights, or without state
  if (!it->is_array())
    user_error(locate_key(key), "'" + std::string(key) + "' must be a list, not " + json_type_name(*it));
  for (size_t i = 0; i < it->size(); ++i) load_constant((*it)[i], i, key);
}

void Loader::load_constant(const json& c, size_t index, const char* key) {
  const bool is_state = std::string(key) == "state";
  std::string what = std::string(key) + "[" + std::to_string(index) + "]";
  Where span = [this, key] { return locate_key(key); };
  if (!c.is_object()) fail(span, what + " must be an object, not " + json_type_name(c));
  std::string name = string_field(c, "name", what, span);
  what = (is_state ? "state '" : "constant '") + name + "'";
  span = [this, name, key] { return locate(name, key, true); };
  check_keys(c, {"name", "file", "blob", "offset", "shape", "dtype", "values"}, what, span);
  declare(name, is_state ? "the state" : "the constant", what, span);
  int sources = static_cast<int>(c.count("file") + c.count("blob") + c.count("values"));
  if (sources != 1)
    fail(span, what + ": give exactly one of 'file' (a .npy file), 'blob' (with 'offset') or "
                            "'values' (found " + std::to_string(sources) + ")");

  std::optional<std::vector<int64_t>> shape;
  if (c.contains("shape")) shape = shape_field(c["shape"], what, span);
  std::optional<DataType> dtype;
  if (c.contains("dtype")) dtype = dtype_field(c, what, span);

  NDArray a;
  if (c.contains("file")) {
    a = constant_from_npy(c, shape, dtype, what, span);
  } else {
    if (!shape) fail(span, what + ": missing field 'shape' (needed with 'blob' or 'values')");
    if (!dtype) fail(span, what + ": missing field 'dtype' (needed with 'blob' or 'values')");
    a = NDArray::zeros(*dtype, *shape);
    if (c.contains("blob"))
      fill_from_blob(c, a, what, span);
    else
      fill_from_values(c, a, what, span);
  }
  TensorType t;
  t.dtype = a.dtype;
  t.shape = a.shape;
  types_[name] = t;
  (is_state ? g_.state : g_.constants)[name] = std::move(a);
}

// A constant's 'file': a .npy file, checked against the declared dtype and shape.
NDArray Loader::constant_from_npy(const json& c, const std::optional<std::vector<int64_t>>& shape,
                                  const std::optional<DataType>& dtype, const std::string& what, const Where& span) {
  std::string path = string_field(c, "file", what, span);
  std::string bytes = read_file(path, what, span);
  NDArray a;
  try {
    a = read_npy(bytes, path);
  } catch (const DiagnosticError& e) {
    if (e.internal()) throw;
    fail(span, what + ": " + (e.diagnostics().empty() ? "bad .npy file" : e.diagnostics()[0].message));
  }
  std::string dn = a.dtype.str();
  dtype_of(dn, what + " ('" + path + "')", span);
  if (dtype && *dtype != a.dtype)
    fail(span, what + ": declared dtype " + dtype->str() + " but '" + path + "' holds " + dn);
  if (shape && *shape != a.shape)
    fail(span, what + ": declared shape " + shape_string(*shape) + " but '" + path + "' holds " +
                         shape_string(a.shape));
  for (size_t d = 0; d < a.shape.size(); ++d)
    if (a.shape[d] <= 0)
      fail(span, what + ": '" + path + "' has shape " + shape_string(a.shape) +
                           "; dimensions must be positive");
  return a;
}

// A constant's 'blob' and 'offset': `a`'s bytes from a shared binary file.
void Loader::fill_from_blob(const json& c, NDArray& a, const std::string& what, const Where& span) {
  const size_t nbytes = a.data.size();
  std::string blob = string_field(c, "blob", what, span);
  const json& off = field(c, "offset", what, span);
  if (!off.is_number_integer() || off.get<int64_t>() < 0)
    fail(span, what + ": 'offset' must be a non-negative integer, not " + off.dump());
  int64_t offset = off.get<int64_t>();
  auto bit = blobs_.find(blob);
  if (bit == blobs_.end()) bit = blobs_.emplace(blob, read_file(blob, what, span)).first;
  int64_t size = static_cast<int64_t>(bit->second.size());
  if (offset > size || static_cast<int64_t>(nbytes) > size - offset)
    fail(span, what + ": bytes [" + std::to_string(offset) + ", " +
                         std::to_string(offset + static_cast<int64_t>(nbytes)) + ") of blob '" + blob +
                         "' are out of range: the blob has " + std::to_string(size) + " bytes");
  std::copy(bit->second.begin() + offset, bit->second.begin() + offset + static_cast<int64_t>(nbytes), a.data.begin());
}

// A constant's 'values': a flat list of numbers, integers for an integer dtype.
void Loader::fill_from_values(const json& c, NDArray& a, const std::string& what, const Where& span) {
  const json& vals = c["values"];
  if (!vals.is_array()) fail(span, what + ": 'values' must be a flat list of numbers, not " + json_type_name(vals));
  if (static_cast<int64_t>(vals.size()) != a.num_elements())
    fail(span, what + ": 'values' has " + std::to_string(vals.size()) + " numbers but the shape " +
                         shape_string(a.shape) + " needs " + std::to_string(a.num_elements()));
  for (size_t k = 0; k < vals.size(); ++k) {
    const json& v = vals[k];
    if (a.dtype.is_float()) {
      if (!v.is_number()) fail(span, what + ": values[" + std::to_string(k) + "] is " + v.dump() + ", not a number");
      a.set_float(static_cast<int64_t>(k), v.get<double>());
    } else {
      if (!v.is_number_integer())
        fail(span, what + ": values[" + std::to_string(k) + "] is " + v.dump() + ", not an integer");
      a.set_int(static_cast<int64_t>(k), v.get<int64_t>());
    }
  }
}

void Loader::load_nodes(const json& root) {
  const json& nodes = field(root, "nodes", "the graph", [this] { return at_offset(0); });
  if (!nodes.is_array()) user_error(locate_key("nodes"), "'nodes' must be a list, not " + json_type_name(nodes));
  std::vector<std::string> op_names;
  for (const auto& d : all_op_defs()) op_names.push_back(d.name);
  for (size_t i = 0; i < nodes.size(); ++i) {
    const json& n = nodes[i];
    std::string what = "nodes[" + std::to_string(i) + "]";
    Where span = [this] { return locate_key("nodes"); };
    if (!n.is_object()) fail(span, what + " must be an object, not " + json_type_name(n));
    GraphNode node;
    node.name = string_field(n, "name", what, span);
    what = "node '" + node.name + "'";
    span = [this, n = node.name] { return locate(n, "nodes", true); };
    check_keys(n, {"name", "op", "inputs", "attrs", "device"}, what, span);
    declare(node.name, "the node", what, span);
    node.op = string_field(n, "op", what, span);
    if (!find_op(node.op))
      fail(span, what + ": unknown op '" + node.op + "'" + did_you_mean(node.op, op_names));
    const json& ins = field(n, "inputs", what, span);
    if (!ins.is_array()) fail(span, what + ": 'inputs' must be a list of names, not " + json_type_name(ins));
    for (size_t k = 0; k < ins.size(); ++k) {
      if (!ins[k].is_string())
        fail(span, what + ": inputs[" + std::to_string(k) + "] must be a name (a string), not " +
                             ins[k].dump());
      node.inputs.push_back(ins[k].get<std::string>());
    }
    auto at = n.find("attrs");
    if (at != n.end()) {
      if (!at->is_object()) fail(span, what + ": 'attrs' must be an object, not " + json_type_name(*at));
      node.attrs = *at;
    }
    if (n.contains("device")) node.device = string_field(n, "device", what, span);
    g_.nodes.push_back(std::move(node));
  }
  // Every input must name something, now that all names are known.
  std::vector<std::string> all_names;
  for (const auto& kv : kinds_) all_names.push_back(kv.first);
  for (const auto& node : g_.nodes)
    for (const auto& in : node.inputs)
      if (!kinds_.count(in))
        user_error(locate(node.name, "nodes"), "node '" + node.name + "': input '" + in +
                                                   "' is not a model input, constant or node" +
                                                   did_you_mean(in, all_names));
}

void Loader::sort_nodes() {
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < g_.nodes.size(); ++i) index[g_.nodes[i].name] = i;
  size_t n = g_.nodes.size();
  std::vector<size_t> pending(n, 0);
  std::vector<std::vector<size_t>> consumers(n);
  for (size_t i = 0; i < n; ++i)
    for (const auto& in : g_.nodes[i].inputs) {
      auto it = index.find(in);
      if (it == index.end()) continue;
      ++pending[i];
      consumers[it->second].push_back(i);
    }
  // Kahn's algorithm, always taking the earliest ready node in file order, so a graph
  // already in order keeps its order.
  std::set<size_t> ready;
  for (size_t i = 0; i < n; ++i)
    if (pending[i] == 0) ready.insert(i);
  std::vector<size_t> order;
  while (!ready.empty()) {
    size_t i = *ready.begin();
    ready.erase(ready.begin());
    order.push_back(i);
    for (size_t c : consumers[i])
      if (--pending[c] == 0) ready.insert(c);
  }
  if (order.size() != n) {
    // Every node left waits for another node left: walking inputs from any of them
    // must come back to a node already seen.
    size_t start = 0;
    while (pending[start] == 0) ++start;
    std::vector<size_t> path;
    std::map<size_t, size_t> pos;
    size_t cur = start;
    while (!pos.count(cur)) {
      pos[cur] = path.size();
      path.push_back(cur);
      bool found = false;
      for (const auto& in : g_.nodes[cur].inputs) {
        auto it = index.find(in);
        if (it != index.end() && pending[it->second] > 0) {
          cur = it->second;
          found = true;
          break;
        }
      }
      MTIR_ICHECK(found, "cycle search lost its way");
    }
    // path[pos[cur]..] is the cycle, each node consuming the next; print it in data-flow order.
    std::vector<std::string> cyc;
    // Starting from the node where the walk closed the loop.
    cyc.push_back(g_.nodes[cur].name);
    for (size_t k = path.size(); k-- > pos[cur] + 1;) cyc.push_back(g_.nodes[path[k]].name);
    cyc.push_back(cyc.front());
    user_error(locate(cyc.front(), "nodes"), "the graph has a cycle: " + join(cyc, " -> ") +
                                                 " (node '" + cyc.front() + "' depends on its own output)");
  }
  std::vector<GraphNode> sorted;
  for (size_t i : order) sorted.push_back(std::move(g_.nodes[i]));
  g_.nodes = std::move(sorted);
}

void Loader::infer_types() {
  for (auto& node : g_.nodes) {
    std::vector<TensorType> in_types;
    for (const auto& in : node.inputs) in_types.push_back(types_.at(in));
    std::string prefix = "node '" + node.name + "' (" + node.op + "): ";
    Where span = [this, n = node.name] { return locate(n, "nodes"); };
    try {
      node.type = find_op(node.op)->infer(in_types, node.attrs);
    } catch (const DiagnosticError& e) {
      if (e.internal()) throw;
      std::string m = e.diagnostics().empty() ? "invalid" : e.diagnostics()[0].message;
      if (m.rfind(node.op + ": ", 0) == 0) m = m.substr(node.op.size() + 2);
      std::vector<std::string> notes = e.diagnostics().empty() ? std::vector<std::string>{}
                                                               : e.diagnostics()[0].notes;
      std::vector<std::string> shapes;
      for (size_t k = 0; k < node.inputs.size(); ++k) shapes.push_back(node.inputs[k] + ": " + in_types[k].str());
      if (!shapes.empty()) notes.push_back("the inputs are " + join(shapes, ", "));
      fail(span, prefix + m, notes);
    } catch (const json::exception& e) {
      fail(span, prefix + "bad attributes: " + e.what());
    }
    for (int64_t d : node.type.shape)
      MTIR_ICHECK(d > 0, "op '" + node.op + "' inferred a non-positive dimension for node '" + node.name + "'");
    if (!node.device.empty()) {
      try {
        check_device_support(node.device, node.name, node.op, in_types, node.attrs);
      } catch (const DiagnosticError& e) {
        if (e.internal()) throw;
        fail(span, e.diagnostics().at(0).message);
      }
    }
    types_[node.name] = node.type;
  }
}

void Loader::load_outputs(const json& root) {
  const json& outs = field(root, "outputs", "the graph", [this] { return at_offset(0); });
  Where span = [this] { return locate_key("outputs"); };
  if (!outs.is_array() || outs.empty())
    fail(span, "'outputs' must be a non-empty list of names, not " +
                         (outs.is_array() ? std::string("an empty list") : json_type_name(outs)));
  std::vector<std::string> all_names;
  for (const auto& kv : kinds_) all_names.push_back(kv.first);
  for (size_t i = 0; i < outs.size(); ++i) {
    if (!outs[i].is_string())
      fail(span, "outputs[" + std::to_string(i) + "] must be a name (a string), not " + outs[i].dump());
    std::string name = outs[i].get<std::string>();
    if (!kinds_.count(name))
      fail(span, "output '" + name + "' is not a model input, constant or node" +
                           did_you_mean(name, all_names));
    if (kinds_.at(name) != "the node")
      fail(span, "output '" + name + "' is " + kinds_.at(name) + ", not a node's result; a model output is "
                 "a buffer run() writes (a reshape node to the same shape copies it into one)");
    if (std::find(g_.outputs.begin(), g_.outputs.end(), name) != g_.outputs.end())
      fail(span, "output '" + name + "' is listed twice");
    g_.outputs.push_back(name);
  }
  load_quantization(root);
}

// Optional: {"NAME": {"scale": S, "zero_point": Z}} for int8 model inputs and outputs,
// documented in the C header (a TFLite model's, kept by `microtir import`).
void Loader::load_quantization(const json& root) {
  auto it = root.find("quantization");
  if (it == root.end()) return;
  Where span = [this] { return locate_key("quantization"); };
  if (!it->is_object()) fail(span, "'quantization' must be an object, not " + json_type_name(*it));
  for (const auto& item : it->items()) {
    const std::string name = item.key();  // a plain variable: lambdas cannot capture bindings (C++17)
    const json& q = item.value();
    std::string what = "quantization of '" + name + "'";
    bool io = std::find(g_.outputs.begin(), g_.outputs.end(), name) != g_.outputs.end() ||
              std::any_of(g_.inputs.begin(), g_.inputs.end(), [&](const auto& in) { return in.first == name; });
    if (!io) fail(span, what + ": '" + name + "' is not a model input or output");
    if (!q.is_object()) fail(span, what + " must be an object {\"scale\", \"zero_point\"}");
    check_keys(q, {"scale", "zero_point"}, what, span);
    auto s = q.find("scale");
    auto z = q.find("zero_point");
    if (s == q.end() || !s->is_number() || !(s->get<double>() > 0) || !std::isfinite(s->get<double>()))
      fail(span, what + ": 'scale' must be a number > 0");
    if (z == q.end() || !z->is_number_integer() || z->get<int64_t>() < -128 || z->get<int64_t>() > 127)
      fail(span, what + ": 'zero_point' must be an integer in [-128, 127]");
    g_.quantization[name] = {s->get<double>(), z->get<int64_t>()};
  }
}

Graph Loader::load() {
  json root;
  try {
    root = json::parse(file_->text);
  } catch (const json::parse_error& e) {
    std::string m = e.what();
    size_t p = m.find("parse error");
    if (p != std::string::npos) {
      size_t q = m.find(": ", p);
      if (q != std::string::npos) m = m.substr(q + 2);
    }
    size_t byte = e.byte > 0 ? e.byte - 1 : 0;
    user_error(at_offset(std::min(byte, file_->text.size())), "invalid JSON: " + m);
  } catch (const json::exception& e) {
    // Found by fuzzing: a number too large for a double is out_of_range, not a parse_error.
    std::string m = e.what();
    size_t q = m.find("] ");
    user_error(at_offset(0), "invalid JSON: " + (q != std::string::npos ? m.substr(q + 2) : m));
  }
  if (!root.is_object()) user_error(at_offset(0), "the graph must be a JSON object, not " + json_type_name(root));
  load_header(root);
  load_inputs(root);
  load_constants(root, "constants");
  load_constants(root, "state");
  load_nodes(root);
  load_outputs(root);
  sort_nodes();
  infer_types();
  try {
    check_state_use(g_);
  } catch (const DiagnosticError& e) {
    if (e.internal()) throw;
    fail([this] { return locate_key("state"); }, e.diagnostics().at(0).message);
  }
  return std::move(g_);
}

}  // namespace

bool is_graph_dtype(DataType dtype) {
  const auto& ok = supported_dtypes();
  return std::find(ok.begin(), ok.end(), dtype.str()) != ok.end();
}

TensorType Graph::type_of(const std::string& n) const {
  for (const auto& in : inputs)
    if (in.first == n) return in.second;
  auto c = constants.find(n);
  if (c != constants.end()) {
    TensorType t;
    t.dtype = c->second.dtype;
    t.shape = c->second.shape;
    return t;
  }
  auto st = state.find(n);
  if (st != state.end()) return TensorType{st->second.dtype, st->second.shape};
  if (const GraphNode* node = find_node(n)) return node->type;
  user_error(Span{}, "graph '" + name + "' has no input, constant, state or node named '" + n + "'");
}

std::map<std::string, TensorType> Graph::all_types() const {
  std::map<std::string, TensorType> types;
  for (const auto& [n, t] : inputs) types[n] = t;
  for (const auto& [n, c] : constants) types[n] = TensorType{c.dtype, c.shape};
  for (const auto& [n, c] : state) types[n] = TensorType{c.dtype, c.shape};
  for (const auto& node : nodes) types[node.name] = node.type;
  return types;
}

const Graph* Graph::function(const std::string& n) const {
  for (const Graph& f : functions)
    if (f.name == n) return &f;
  return nullptr;
}

const GraphNode* Graph::find_node(const std::string& n) const {
  auto indexed = [&]() -> const GraphNode* {
    auto it = node_index_.find(n);
    if (it == node_index_.end() || it->second >= nodes.size() || nodes[it->second].name != n) return nullptr;
    return &nodes[it->second];
  };
  if (const GraphNode* hit = indexed()) return hit;
  if (indexed_nodes_ <= nodes.size()) {  // nodes appended since: index them
    for (size_t i = indexed_nodes_; i < nodes.size(); ++i) node_index_.emplace(nodes[i].name, i);
    indexed_nodes_ = nodes.size();
    if (const GraphNode* hit = indexed()) return hit;
  }
  // Absent, or the graph was edited in place (nodes erased, renamed): scan, and rebuild
  // the index when the scan finds what the index did not.
  for (const auto& node : nodes)
    if (node.name == n) {
      node_index_.clear();
      for (size_t i = 0; i < nodes.size(); ++i) node_index_.emplace(nodes[i].name, i);
      indexed_nodes_ = nodes.size();
      return &node;
    }
  return nullptr;
}

void check_state_use(const Graph& g) {
  for (const auto& node : g.nodes) {
    const OpDef* op = find_op(node.op);
    std::vector<size_t> written = op ? written_inputs(*op, node.attrs, node.inputs.size()) : std::vector<size_t>{};
    for (size_t k : written) {
      if (k >= node.inputs.size() || !g.state.count(node.inputs[k]))
        user_error(Span{}, "node '" + node.name + "' (" + node.op + ") updates its input " + std::to_string(k) +
                               (k < node.inputs.size() ? " ('" + node.inputs[k] + "')" : std::string()) +
                               " in place, which must be a state of the graph (listed under \"state\")");
      if (!node.device.empty())
        user_error(Span{}, "node '" + node.name + "' (" + node.op + ") updates state, which only the host can do (device '" +
                               node.device + "')");
    }
    // Several nodes may read a state (they run in node order: the AOT executor never fuses
    // them), but one node reads it through one input, so a kernel that writes it never
    // reads it through another pointer.
    std::set<std::string> read;
    for (const auto& in : node.inputs)
      if (g.state.count(in) && !read.insert(in).second)
        user_error(Span{}, "state '" + in + "' is read twice by node '" + node.name + "'; a node reads a state through one input");
  }
  for (const auto& out : g.outputs)
    if (g.state.count(out)) user_error(Span{}, "state '" + out + "' is a model output; a state is internal to the model");
}

Graph load_graph_json(const std::string& json_text, const std::string& filename, const FileReader& read) {
  return Loader(json_text, filename, read).load();
}

// ---------------------------------------------------------------- batch-norm folding

namespace {

// An attribute of `attrs` or its default.
template <typename T>
T attr_or(const json& attrs, const char* key, T def) {
  if (!attrs.is_object()) return def;
  auto it = attrs.find(key);
  if (it == attrs.end() || it->is_null()) return def;
  try {
    return it->get<T>();
  } catch (const json::exception&) {
    return def;
  }
}

bool is_f32_vector(const NDArray& a, int64_t n) {
  return a.dtype == DataType::Float(32) && a.shape.size() == 1 && a.shape[0] == n;
}

}  // namespace

GraphNode typed_node(const std::string& name, const std::string& op, const std::vector<std::string>& inputs,
                     const std::vector<TensorType>& input_types, const nlohmann::json& attrs) {
  const OpDef* def = find_op(op);
  MTIR_ICHECK(def, "a frontend emits the unknown op '" + op + "'");
  GraphNode n;
  n.name = name;
  n.op = op;
  n.inputs = inputs;
  n.attrs = attrs;
  n.type = def->infer(input_types, attrs);
  return n;
}

std::string fresh_name(const Graph& g, const std::string& base) {
  auto taken = [&](const std::string& n) {
    if (g.constants.count(n) || g.state.count(n) || g.find_node(n)) return true;
    for (const auto& in : g.inputs)
      if (in.first == n) return true;
    return false;
  };
  if (!taken(base)) return base;
  for (int i = 1;; ++i)
    if (!taken(base + "_" + std::to_string(i))) return base + "_" + std::to_string(i);
}

void drop_unused_constants(Graph& g, const std::set<std::string>& candidates) {
  for (const auto& c : candidates) {
    bool used = std::find(g.outputs.begin(), g.outputs.end(), c) != g.outputs.end();
    for (const auto& n : g.nodes)
      for (const auto& x : n.inputs) used = used || x == c;
    if (!used) g.constants.erase(c);
  }
}

namespace {

// A batch_norm that can fold into its producer: a float conv2d or dense node used by it
// alone, with constant weights, bias and batch_norm parameters over the channel axis.
struct FoldableBatchNorm {
  size_t producer = 0;
  const NDArray* weight = nullptr;
  const NDArray* bias = nullptr;   // null: the producer has none
  const NDArray* params[4] = {};   // gamma, beta, mean, var
  int64_t weight_axis = 0, channels = 0;
};

// The channel axis of a conv2d's or dense's output and of its weight, if it has one.
std::optional<std::pair<int64_t, int64_t>> channel_axes(const GraphNode& prod, const NDArray& w) {
  const int64_t rank = static_cast<int64_t>(prod.type.shape.size());
  if (prod.op == "dense") {
    if (rank != 2 || w.shape.size() != 2) return std::nullopt;
    return std::make_pair(int64_t{1}, int64_t{0});  // weight [M, K]
  }
  const std::string layout = attr_or<std::string>(prod.attrs, "layout", "NCHW");
  if (rank != 4 || w.shape.size() != 4) return std::nullopt;
  if (layout == "NCHW") return std::make_pair(int64_t{1}, int64_t{0});  // weight OIHW
  if (layout == "NHWC") return std::make_pair(int64_t{3}, int64_t{3});  // weight HWIO
  return std::nullopt;
}

std::optional<FoldableBatchNorm> foldable_batch_norm(const Graph& g, size_t bi) {
  const GraphNode& bn = g.nodes[bi];
  if (bn.op != "batch_norm" || bn.inputs.size() != 5) return std::nullopt;
  FoldableBatchNorm f;
  f.producer = g.nodes.size();
  for (size_t k = 0; k < bi; ++k)
    if (g.nodes[k].name == bn.inputs[0]) f.producer = k;
  if (f.producer == g.nodes.size()) return std::nullopt;
  const GraphNode& prod = g.nodes[f.producer];
  if (prod.op != "conv2d" && prod.op != "dense") return std::nullopt;
  int uses = 0;
  for (const auto& n : g.nodes)
    for (const auto& x : n.inputs) uses += x == prod.name;
  for (const auto& o : g.outputs) uses += o == prod.name;
  if (uses != 1 || prod.inputs.size() < 2 || prod.inputs.size() > 3) return std::nullopt;
  auto wit = g.constants.find(prod.inputs[1]);
  if (wit == g.constants.end() || wit->second.dtype != DataType::Float(32)) return std::nullopt;
  f.weight = &wit->second;
  if (prod.inputs.size() == 3) {
    auto bit = g.constants.find(prod.inputs[2]);
    if (bit == g.constants.end()) return std::nullopt;
    f.bias = &bit->second;
  }
  const auto axes = channel_axes(prod, *f.weight);
  if (!axes) return std::nullopt;
  int64_t axis = attr_or<int64_t>(bn.attrs, "axis", 1);
  if (axis < 0) axis += static_cast<int64_t>(prod.type.shape.size());
  if (axis != axes->first) return std::nullopt;
  f.weight_axis = axes->second;
  f.channels = prod.type.shape[axes->first];
  if (f.weight->shape[f.weight_axis] != f.channels) return std::nullopt;
  if (f.bias && !is_f32_vector(*f.bias, f.channels)) return std::nullopt;
  for (int k = 0; k < 4; ++k) {
    auto it = g.constants.find(bn.inputs[1 + k]);
    if (it == g.constants.end() || !is_f32_vector(it->second, f.channels)) return std::nullopt;
    f.params[k] = &it->second;
  }
  return f;
}

// scale = gamma / sqrt(var + eps); w' = w * scale (per output channel);
// b' = (b - mean) * scale + beta.
std::pair<NDArray, NDArray> folded_weight_and_bias(const FoldableBatchNorm& f, double eps) {
  const int64_t C = f.channels;
  std::vector<double> scale(C), shift(C);
  for (int64_t c = 0; c < C; ++c) {
    double gamma = f.params[0]->get_float(c), beta = f.params[1]->get_float(c), mean = f.params[2]->get_float(c),
           var = f.params[3]->get_float(c);
    scale[c] = gamma / std::sqrt(var + eps);
    double b = f.bias ? f.bias->get_float(c) : 0.0;
    shift[c] = (b - mean) * scale[c] + beta;
  }
  const NDArray& w = *f.weight;
  NDArray nw = w;
  int64_t inner = 1;
  for (size_t d = static_cast<size_t>(f.weight_axis) + 1; d < w.shape.size(); ++d) inner *= w.shape[d];
  for (int64_t i = 0; i < nw.num_elements(); ++i) nw.set_float(i, static_cast<float>(w.get_float(i) * scale[(i / inner) % C]));
  NDArray nb = NDArray::zeros(DataType::Float(32), {C});
  for (int64_t c = 0; c < C; ++c) nb.set_float(c, static_cast<float>(shift[c]));
  return {std::move(nw), std::move(nb)};
}

}  // namespace

Graph fold_batch_norm(const Graph& in) {
  Graph g = in;
  std::set<std::string> maybe_unused;
  for (size_t bi = 0; bi < g.nodes.size(); ++bi) {
    const std::optional<FoldableBatchNorm> f = foldable_batch_norm(g, bi);
    if (!f) continue;
    const GraphNode& bn = g.nodes[bi];
    const GraphNode& prod = g.nodes[f->producer];
    auto [nw, nb] = folded_weight_and_bias(*f, attr_or<double>(bn.attrs, "epsilon", 1e-5));
    GraphNode fused = prod;
    fused.name = bn.name;  // consumers and outputs keep referring to it
    fused.type = bn.type;
    std::string wname = fresh_name(g, bn.name + "_weight");
    g.constants[wname] = std::move(nw);
    std::string bname = fresh_name(g, bn.name + "_bias");
    g.constants[bname] = std::move(nb);
    for (size_t k = 1; k < prod.inputs.size(); ++k) maybe_unused.insert(prod.inputs[k]);
    for (size_t k = 1; k < bn.inputs.size(); ++k) maybe_unused.insert(bn.inputs[k]);
    fused.inputs = {prod.inputs[0], wname, bname};
    const size_t pi = f->producer;
    g.nodes[bi] = std::move(fused);
    g.nodes.erase(g.nodes.begin() + static_cast<std::ptrdiff_t>(pi));
    --bi;  // the fused node moved one place up
  }
  drop_unused_constants(g, maybe_unused);  // those only the folded nodes used
  return g;
}

}  // namespace mtir

namespace mtir {

void place_on_devices(Graph& g, const std::vector<std::string>& specs) {
  std::map<std::string, std::string> placed;  // op -> instance
  for (const auto& spec : specs) {
    size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
      user_error(Span{}, "bad --device '" + spec + "': expected INSTANCE=OP[,OP...], e.g. npu0=conv2d,dense");
    const std::string instance = spec.substr(0, eq);
    device_kind_of(instance);
    std::string list = spec.substr(eq + 1) + ",";
    for (size_t start = 0, comma; (comma = list.find(',', start)) != std::string::npos; start = comma + 1) {
      std::string op = list.substr(start, comma - start);
      if (op.empty()) user_error(Span{}, "bad --device '" + spec + "': an empty op name");
      if (!find_op(op)) user_error(Span{}, "bad --device '" + spec + "': unknown op '" + op + "'");
      auto [it, inserted] = placed.emplace(op, instance);
      if (!inserted && it->second != instance)
        user_error(Span{}, "op '" + op + "' is placed on two devices, '" + it->second + "' and '" + instance + "'");
    }
  }
  const auto types = g.all_types();
  for (auto& node : g.nodes) {
    auto it = placed.find(node.op);
    if (it != placed.end()) node.device = it->second;
    if (node.device.empty()) continue;
    std::vector<TensorType> in;
    for (const auto& name : node.inputs) in.push_back(types.at(name));
    check_device_support(node.device, node.name, node.op, in, node.attrs);
  }
}

}  // namespace mtir
