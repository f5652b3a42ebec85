// microtir.parse and microtir.run_tir: the script parser, the well-formedness check and
// the reference interpreter, as `microtir parse` and `microtir run FILE.tir` run them.
#include <pybind11/stl.h>

#include "analysis/well_formed.h"
#include "cli/commands.h"
#include "python/src/bindings.h"
#include "script/parser.h"
#include "script/printer.h"

namespace mtir::python {
namespace {

IRModule parse_checked(const std::string& text, const std::string& filename, bool verify) {
  ParseResult r = parse_module(text, filename);
  if (!r.ok()) throw DiagnosticError(r.diagnostics);
  if (verify) {
    auto diags = check_well_formed(*r.module);
    if (!diags.empty()) throw DiagnosticError(diags);
  }
  return *r.module;
}

std::map<std::string, NDArray> arrays_of(const py::dict& given, const char* what) {
  std::map<std::string, NDArray> out;
  for (const auto& [key, value] : given) {
    const std::string name = py::str(key);
    out[name] = to_ndarray(value, std::string(what) + " '" + name + "'");
  }
  return out;
}

py::tuple run_tir(const IRModule& m, const std::string& func, const py::dict& inputs, const py::dict& inouts,
                  const std::map<std::string, std::string>& scalars) {
  cli::TirRun r = cli::interpret_function(m, func, arrays_of(inputs, "input"), arrays_of(inouts, "inout"), scalars);
  py::list outputs;
  for (const auto& [name, value] : r.outputs) outputs.append(py::make_tuple(name, to_numpy(value)));
  return py::make_tuple(r.func, outputs, r.returned ? py::object(py::int_(*r.returned)) : py::none());
}

}  // namespace

void bind_tir(py::module_& m) {
  py::class_<IRModule>(m, "IRModule", "A TIR module (use microtir.parse)")
      .def("text", [](const IRModule& self) { return print_module(self); })
      .def("functions", [](const IRModule& self) {
        std::vector<std::string> names;
        for (const auto& [name, f] : self.functions) names.push_back(name);
        return names;
      });
  m.def("parse", &parse_checked, py::arg("text"), py::arg("filename") = "<input>", py::arg("verify") = true);
  m.def("run_tir", &run_tir, py::arg("module"), py::arg("func"), py::arg("inputs"), py::arg("inouts"),
        py::arg("scalars"));
  m.def("pass_list", &cli::pass_list);
}

}  // namespace mtir::python
