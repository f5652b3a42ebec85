// microtir.load: a model file through the CLI's loader (cli/commands.h load_model_file),
// its inputs and outputs, its layers (artifact/model_view.h) and its JSON graph.
#include <pybind11/stl.h>

#include "artifact/model_view.h"
#include "cli/commands.h"
#include "cli/io.h"
#include "cli/onnx_model.h"
#include "python/src/bindings.h"

namespace mtir::python {
namespace {

using nlohmann::json;

struct Model {
  std::string path;
  std::vector<std::string> devices;
  LoadedModel loaded;
};

// The model's inputs and outputs in main's order: name, C identifier, dtype, shape and,
// for a quantized tensor, its scale and zero point.
std::string io_json(const Model& m) {
  json inputs = json::array(), outputs = json::array();
  for (const auto& p : m.loaded.aot.params) {
    if (p.role != AotModule::Role::kInput && p.role != AotModule::Role::kOutput) continue;
    json t = {{"name", p.name}, {"identifier", p.c_name}, {"dtype", p.type.dtype.str()}, {"shape", p.type.shape}};
    auto q = m.loaded.graph.quantization.find(p.name);
    t["quantization"] = q == m.loaded.graph.quantization.end()
                            ? json(nullptr)
                            : json{{"scale", q->second.first}, {"zero_point", q->second.second}};
    (p.role == AotModule::Role::kInput ? inputs : outputs).push_back(std::move(t));
  }
  return json{{"inputs", inputs}, {"outputs", outputs}}.dump();
}

// The JSON graph `microtir import` writes (a .tflite or .onnx model), or the graph file itself.
std::string graph_json(const Model& m) {
  if (cli::is_onnx_file(m.path) || cli::is_tflite_file(m.path)) return write_graph_json(cli::load_foreign_model(m.path));
  return cli::read_file(m.path);
}

}  // namespace

void bind_model(py::module_& m) {
  py::class_<Model>(m, "Model", "A loaded model (use microtir.load)")
      .def_readonly("path", &Model::path)
      .def_readonly("devices", &Model::devices)
      .def_property_readonly("name", [](const Model& self) { return self.loaded.graph.name; })
      .def("io_json", &io_json)
      .def("view_json", [](const Model& self) { return model_view_json(self.loaded).dump(); })
      .def("graph_json", &graph_json)
      .def("notes", [](const Model& self) { return self.loaded.graph.notes; });
  m.def(
      "load_model",
      [](const std::string& path, const std::vector<std::string>& devices) {
        if (!cli::is_graph_file(path))
          user_error({}, "'" + path + "' is not a model: load takes a JSON graph (.json), an ONNX model (.onnx), "
                         "a TFLite model (.tflite) or TIR text");
        return Model{path, devices, cli::load_model_file(path, nullptr, devices)};
      },
      py::arg("path"), py::arg("devices") = std::vector<std::string>{});
}

}  // namespace mtir::python
