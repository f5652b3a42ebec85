// The reference's graph side: a minimal .npy reader/writer (int8, int32) and an evaluator
// for microtir JSON graphs that runs the nodes in dependency order with eval_op and
// records where each node's codes landed (to catch a graph whose layers all saturate).
#include <algorithm>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "int8_reference.h"

namespace int8ref {
namespace {

using nlohmann::json;

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error("cannot open " + path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string dirname(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

// The value of 'key' in a numpy header dict, e.g. "'<i4'" or "(1, 2, )".
std::string header_field(const std::string& header, const std::string& key, const std::string& path) {
  size_t at = header.find("'" + key + "'");
  if (at == std::string::npos) throw Error(path + ": npy header has no '" + key + "'");
  at = header.find(':', at) + 1;
  while (header[at] == ' ') ++at;
  size_t end = header[at] == '(' ? header.find(')', at) + 1 : header.find_first_of(",}", at);
  return header.substr(at, end - at);
}

}  // namespace

Tensor read_npy(const std::string& path) {
  std::string bytes = read_file(path);
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0) throw Error(path + ": not a .npy file");
  size_t header_len = static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8), start = 10;
  if (bytes[6] != 1) {  // versions 2 and 3: a 4-byte header length
    header_len |= (static_cast<size_t>(static_cast<unsigned char>(bytes[10])) << 16) |
                  (static_cast<size_t>(static_cast<unsigned char>(bytes[11])) << 24);
    start = 12;
  }
  std::string header = bytes.substr(start, header_len);
  std::string descr = header_field(header, "descr", path), shape_text = header_field(header, "shape", path);
  if (header_field(header, "fortran_order", path) != "False") throw Error(path + ": Fortran order is not supported");
  Tensor t;
  std::string digits;
  for (char ch : shape_text + ",") {
    if (isdigit(static_cast<unsigned char>(ch))) digits += ch;
    else if (!digits.empty()) t.shape.push_back(std::stoll(digits)), digits.clear();
  }
  size_t width = 0;
  if (descr == "'|i1'" || descr == "'i1'" || descr == "'<i1'") t.dtype = "int8", width = 1;
  else if (descr == "'<i4'") t.dtype = "int32", width = 4;
  else throw Error(path + ": dtype " + descr + " is not int8 or int32");
  const char* data = bytes.data() + start + header_len;
  size_t n = static_cast<size_t>(t.size());
  if (bytes.size() - start - header_len != n * width) throw Error(path + ": data size does not match the shape");
  t.data.resize(n);
  for (size_t i = 0; i < n; ++i) {
    if (width == 1) {
      t.data[i] = static_cast<int8_t>(data[i]);
    } else {
      uint32_t u = 0;
      for (int b = 3; b >= 0; --b) u = (u << 8) | static_cast<unsigned char>(data[i * 4 + b]);
      t.data[i] = static_cast<int32_t>(u);
    }
  }
  return t;
}

void write_npy(const std::string& path, const Tensor& t) {
  std::string shape;
  for (int64_t d : t.shape) shape += std::to_string(d) + ", ";
  std::string header = "{'descr': '" + std::string(t.dtype == "int8" ? "|i1" : "<i4") +
                       "', 'fortran_order': False, 'shape': (" + shape + "), }";
  header += std::string(63 - (header.size() + 10) % 64, ' ') + "\n";
  std::ofstream f(path, std::ios::binary);
  f << "\x93NUMPY" << '\x01' << '\x00' << static_cast<char>(header.size() & 0xff) << static_cast<char>(header.size() >> 8)
    << header;
  for (int32_t v : t.data) {
    if (t.dtype == "int8") f.put(static_cast<char>(v));
    else for (int b = 0; b < 4; ++b) f.put(static_cast<char>((static_cast<uint32_t>(v) >> (8 * b)) & 0xff));
  }
  if (!f) throw Error("cannot write " + path);
}

namespace {
json load_json(const std::string& path) {
  try {
    return json::parse(read_file(path));
  } catch (const json::exception& e) {
    throw Error(path + ": " + e.what());
  }
}
}  // namespace

std::vector<std::string> graph_input_names(const std::string& json_path) {
  std::vector<std::string> names;
  const json g = load_json(json_path);
  for (const json& in : g.at("inputs")) names.push_back(in.at("name"));
  return names;
}

GraphResult run_graph(const std::string& json_path, const std::map<std::string, Tensor>& inputs) {
  json g = load_json(json_path);
  GraphResult r;
  for (const json& in : g.at("inputs")) {
    std::string name = in.at("name");
    auto it = inputs.find(name);
    if (it == inputs.end()) throw Error("no value for the graph input '" + name + "'");
    if (it->second.shape != in.at("shape").get<std::vector<int64_t>>())
      throw Error("input '" + name + "' has the wrong shape");
    r.values[name] = it->second;
  }
  for (const json& c : g.value("constants", json::array())) {
    std::string name = c.at("name");
    if (c.contains("file")) {
      r.values[name] = read_npy(dirname(json_path) + "/" + c["file"].get<std::string>());
    } else if (c.contains("values")) {
      r.values[name] = Tensor{c.at("dtype"), c.at("shape").get<std::vector<int64_t>>(), c["values"].get<std::vector<int32_t>>()};
    } else {
      throw Error("constant '" + name + "': the reference reads .npy files and inline values only");
    }
  }
  // Nodes in dependency order: repeatedly run every node whose inputs are ready.
  std::vector<json> pending(g.at("nodes").begin(), g.at("nodes").end());
  while (!pending.empty()) {
    auto ready = std::find_if(pending.begin(), pending.end(), [&](const json& n) {
      return std::all_of(n.at("inputs").begin(), n.at("inputs").end(),
                         [&](const json& i) { return r.values.count(i.get<std::string>()) > 0; });
    });
    if (ready == pending.end()) throw Error("the graph has a cycle or an undefined input");
    const json node = *ready;
    pending.erase(ready);
    std::vector<const Tensor*> in;
    for (const json& i : node.at("inputs")) in.push_back(&r.values.at(i.get<std::string>()));
    std::string name = node.at("name"), op = node.at("op");
    try {
      r.values[name] = eval_op(op, in, node.value("attrs", json::object()));
    } catch (const std::exception& e) {
      throw Error("node '" + name + "' (" + op + "): " + e.what());
    }
    const Tensor& t = r.values[name];
    NodeStats s{name, op, t.size(), 0, 0, 0};
    std::set<int32_t> codes(t.data.begin(), t.data.end());
    s.distinct = static_cast<int>(codes.size());
    s.at_min = std::count(t.data.begin(), t.data.end(), -128);
    s.at_max = std::count(t.data.begin(), t.data.end(), 127);
    r.stats.push_back(s);
  }
  for (const json& o : g.at("outputs")) r.output_names.push_back(o.get<std::string>());
  return r;
}

}  // namespace int8ref
