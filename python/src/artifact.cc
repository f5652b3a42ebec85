// microtir.compile and Artifact.run: the CLI's compile_artifact and run_artifact_inputs
// (cli/commands.h), the files in memory until export or run writes them.
#include <pybind11/stl.h>

#include "cli/commands.h"
#include "cli/io.h"
#include "driver/target.h"
#include "python/src/bindings.h"
#include "script/printer.h"
#include "sim/budget.h"

namespace mtir::python {
namespace {

struct Artifact {
  std::string model_path;
  std::vector<std::string> devices;
  MlfArtifact mlf;
  LoadedModel reference;  // the model it was compiled from, with the target's schedules
};

py::dict files_of(const Artifact& a) {
  py::dict files;
  for (const auto& f : a.mlf.files) files[py::str(f.path)] = py::bytes(f.text);
  return files;
}

// The module after each lowering pass: (name, changed, text).
std::vector<std::tuple<std::string, bool, std::string>> passes_of(const Artifact& a) {
  std::vector<std::tuple<std::string, bool, std::string>> out;
  out.emplace_back("input", true, print_module(a.mlf.built.lowered.input));
  for (const auto& r : a.mlf.built.lowered.records) out.emplace_back(r.name, r.changed, print_module(r.module));
  return out;
}

std::string memory_plan_of(const Artifact& a) {
  return cli::planned_memory_report(a.reference.aot.module, a.reference.aot.main, a.mlf.target.reuse_io_buffers);
}

// Runs the artifact on `target` as `microtir run model.tar --target T` does: written to
// a temporary folder, built for the target, run, compared with the interpreter.
py::dict run(const Artifact& a, const py::dict& inputs, const std::string& target, bool profile_layers,
             const std::string& keep_build_dir, const std::string& max_flash, const std::string& max_ram) {
  const sim::Budget budget = cli::budget_options(max_flash, max_ram);  // a bad size is refused before any build
  std::map<std::string, cli::ArtifactInput> arrays;
  for (const auto& [key, value] : inputs) {
    const std::string name = py::str(key);
    arrays[name] = {to_ndarray(value, "input '" + name + "'"), "the array given for '" + name + "'"};
  }
  cli::TempDir work("");
  const std::string dir = work.path() + "/artifact";
  cli::write_artifact(a.mlf.files, dir);
  cli::ArtifactRunSettings settings;
  settings.profile_layers = profile_layers;
  settings.keep_build_dir = keep_build_dir;
  // The reference is the model just converted, unless devices took layers (as the CLI).
  cli::ArtifactRun r = [&] {
    py::gil_scoped_release release;
    return cli::run_artifact_inputs(dir, target, std::move(arrays), settings, a.devices.empty() ? &a.reference : nullptr);
  }();
  py::list outputs;
  for (const auto& o : r.outputs) outputs.append(py::make_tuple(o.name, o.identifier, to_numpy(o.value)));
  py::dict out;
  out["outputs"] = outputs;
  out["all_match"] = r.all_match;
  out["compare_json"] = r.compare.dump();
  out["report_json"] = r.report.dump();
  out["compare_text"] = r.compare_text;
  out["report_text"] = r.report_text;
  out["memory_plan"] = r.memory_plan;
  out["devices"] = r.devices;
  out["target"] = r.target;
  if (budget.any()) {
    const sim::BudgetResult checked = sim::check_budget(r.target_report, budget);
    out["budget_json"] = sim::budget_json(checked).dump();
    out["budget_text"] = sim::budget_text(checked);
    out["budget_ok"] = checked.ok();
  }
  return out;
}

}  // namespace

void bind_artifact(py::module_& m) {
  py::class_<Artifact>(m, "Artifact", "A compiled model (use microtir.compile)")
      .def_readonly("model_path", &Artifact::model_path)
      .def_property_readonly("target", [](const Artifact& a) { return a.mlf.target.str(); })
      .def("files", &files_of)
      .def("metadata_json", [](const Artifact& a) { return a.mlf.metadata.dump(); })
      .def("passes", &passes_of)
      .def("memory_plan", &memory_plan_of)
      .def("export", [](const Artifact& a, const std::string& path) { cli::write_artifact(a.mlf.files, path); })
      .def("run", &run, py::arg("inputs"), py::arg("target"), py::arg("profile_layers"), py::arg("keep_build_dir"),
           py::arg("max_flash") = "", py::arg("max_ram") = "");
  m.def(
      "compile_model",
      [](const std::string& path, const std::string& target, const std::vector<std::string>& devices,
         const std::string& schedules) {
        Artifact a{path, devices, {}, {}};
        a.mlf = cli::compile_artifact(path, parse_target(target), devices, &a.reference, schedules);
        return a;
      },
      py::arg("path"), py::arg("target"), py::arg("devices") = std::vector<std::string>{}, py::arg("schedules") = "");
  m.def("compile_target_for_run", &cli::compile_target_for_run, py::arg("run_target"), py::arg("backend") = "c");
  // What `microtir compile` compiles for without --target.
  m.def("default_compile_target", [] { return cli::CompileCommand{}.target; });
}

}  // namespace mtir::python
