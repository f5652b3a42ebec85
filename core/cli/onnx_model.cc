#include "cli/onnx_model.h"

#include <iostream>
#include <set>

#include "cli/io.h"
#include "frontend/tflite/op_support.h"
#include "frontend/tflite/tflite.h"
#include "support/diagnostic.h"
#include "support/timing.h"
#ifdef MICROTIR_HAVE_ONNX
#include "frontend/onnx.h"
#endif

namespace mtir::cli {

bool is_onnx_file(const std::string& path) {
  return path.size() > 5 && path.compare(path.size() - 5, 5, ".onnx") == 0;
}

Graph load_onnx_file(const std::string& path) {
#ifdef MICROTIR_HAVE_ONNX
  Graph g = load_onnx(read_file(path), path);
  // `run --target` loads the model twice (the artifact, then the interpreter's
  // reference): each note once.
  static std::set<std::string> printed;
  for (const auto& n : g.notes)
    if (printed.insert(n).second) std::cerr << "microtir: note: " << n << "\n";
  return g;
#else
  user_error({}, "'" + path + "': this microtir was built without the ONNX frontend (MICROTIR_ONNX=OFF; it needs "
                 "libonnx-dev and libprotobuf-dev)");
#endif
}

bool is_tflite_file(const std::string& path) {
  return path.size() > 7 && path.compare(path.size() - 7, 7, ".tflite") == 0;
}

Graph load_tflite_file(const std::string& path) { return load_tflite(read_file(path), path); }

Graph load_foreign_model(const std::string& path) {
  TimingScope timing("step", "import");
  return is_tflite_file(path) ? load_tflite_file(path) : load_onnx_file(path);
}

namespace {

// The operator x dtype table: a line per operator (its dtypes, then each refused pair
// with its reason), or JSON.
int list_tflite_ops(bool as_json) {
  if (as_json) {
    nlohmann::json ops = nlohmann::json::array();
    for (const auto& e : tflite_op_support()) {
      nlohmann::json refused = nlohmann::json::object();
      for (const auto& [d, why] : e.refused) refused[d] = why;
      ops.push_back({{"op", e.op}, {"key", e.key}, {"dtypes", e.dtypes}, {"refused", refused}, {"note", e.note}});
    }
    std::cout << nlohmann::json{{"dtypes", tflite_dtypes()}, {"operators", ops}}.dump(1) << "\n";
    return 0;
  }
  for (const auto& e : tflite_op_support()) {
    std::string line = e.op + std::string(e.op.size() < 30 ? 30 - e.op.size() : 1, ' ');
    for (const auto& d : e.dtypes) line += d + " ";
    if (!e.note.empty()) line += "(" + e.note + ") ";
    for (const auto& [d, why] : e.refused) line += "[refused " + d + ": " + why + "] ";
    std::cout << line.substr(0, line.find_last_not_of(' ') + 1) << "\n";
  }
  return 0;
}

}  // namespace

int run_import(const ImportCommand& c) {
  if (c.list_ops) {
    if (!c.file.empty()) user_error({}, "import --list-ops takes no model file");
    return list_tflite_ops(c.json);
  }
  if (c.json) user_error({}, "import --json goes with --list-ops (the graph itself is JSON already)");
  if (c.file.empty()) user_error({}, "import needs a model file (.onnx or .tflite), or --list-ops");
  if (!is_onnx_file(c.file) && !is_tflite_file(c.file))
    user_error({}, "'" + c.file + "': import reads an ONNX model (.onnx) or a TFLite model (.tflite)");
  if (c.layer_outputs && !is_tflite_file(c.file))
    user_error({}, "'" + c.file + "': --layer-outputs is for TFLite models (.tflite)");
  Graph g;
  if (c.layer_outputs) {
    TfliteImport imported = import_tflite(read_file(c.file), c.file);
    g = std::move(imported.graph);
    g.outputs = imported.layers;  // the model's outputs are layers too
  } else {
    g = load_foreign_model(c.file);
  }
  std::string text = write_graph_json(g);
  if (c.output.empty() || c.output == "-") {
    std::cout << text;
    return 0;
  }
  OutputSet out;
  out.add(c.output, text);
  out.commit();
  std::cout << "wrote " << c.output << "\n";
  return 0;
}

}  // namespace mtir::cli
