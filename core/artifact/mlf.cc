#include "artifact/mlf.h"

#include <algorithm>

#include "analysis/well_formed.h"
#include "codegen/c/interface.h"
#include "codegen/wasm/wasm_model.h"
#include "support/npy.h"

namespace mtir {

const char* const kDefaultCompileTarget = "c -executor=aot -interface-api=c -unpacked-api=1 -link-params=1";

LoadedModel load_model(const std::string& json_text, const std::string& filename, const FileReader& read,
                       const std::vector<std::string>& devices, const ScheduleOptions& schedules) {
  return prepare_model(load_graph_json(json_text, filename, read), devices, schedules);
}

LoadedModel prepare_model(Graph g, const std::vector<std::string>& devices, const ScheduleOptions& schedules) {
  LoadedModel lm;
  place_on_devices(g, devices);
  lm.graph = prepare_quantized(fold_batch_norm(g), schedules);
  lm.aot = build_aot(lm.graph);
  auto diags = check_well_formed(lm.aot.module);
  if (!diags.empty()) throw DiagnosticError(diags);
  return lm;
}

MlfArtifact build_mlf(const LoadedModel& model, const std::string& target_string, const MlfInputs& inputs) {
  MlfArtifact a;
  a.target = parse_target(target_string);
  // Weights are linked into the artifact (flash) unless the target string says -link-params=0.
  if (target_string.find("-link-params") == std::string::npos) a.target.link_params = true;
  a.built = build_for_target(model.aot.module, a.target);  // C, or LLVM IR with the C interface
  std::vector<SourceFileOut>& files = a.files;
  const bool wasm = a.target.kind == "wasm";
  if (wasm) {
    // One self-contained module (kernels, main, weights, run export) instead of C sources.
    a.built.sources = {{wasm_model_source_path(model.graph),
                        wasm_model_module(model.aot, model.graph, a.built.lowered.module, a.target)}};
  }
  files = a.built.sources;
  InterfaceOptions interface{a.target.interface_api, a.target.link_params};
  if (!wasm)
    for (auto& f : c_interface(model.aot, model.graph, a.built.lowered.module, interface)) files.push_back(std::move(f));
  a.metadata = {{"version", 1},
                {"model_name", model.graph.name},
                {"target", a.target.str()},
                {"executor", "aot"},
                {"interface_api", a.target.interface_api},
                {"link_params", a.target.link_params},
                {"devices", model.aot.devices},
                {"main", model.aot.main},
                {"memory", {{"workspace_bytes", artifact_workspace_bytes(a.built.lowered.module, model.aot.main)}}},
                {"files", nlohmann::json::array()}};
  for (const auto& f : files) a.metadata["files"].push_back(f.path);
  files.push_back({"src/" + inputs.graph_filename, inputs.graph_text});
  for (const auto& f : inputs.graph_files) {
    // Only paths that stay inside src/.
    if (f.path.empty() || f.path[0] == '/' || f.path.find("..") != std::string::npos) continue;
    files.push_back({"src/" + f.path, f.text});
  }
  // The weights as .npy (linked into the C sources too, unless -link-params=0), and the C runtime the
  // artifact builds against, so the folder is complete on its own.
  for (const auto& [name, array] : model.graph.constants) files.push_back({"parameters/" + name + ".npy", write_npy(array)});
  std::vector<SourceFileOut> runtime = wasm ? std::vector<SourceFileOut>{} : inputs.runtime;  // wasm needs no CRT
  std::sort(runtime.begin(), runtime.end(), [](const SourceFileOut& x, const SourceFileOut& y) { return x.path < y.path; });
  for (const auto& f : runtime) files.push_back({"runtime/" + f.path, f.text});
  files.push_back({"metadata.json", a.metadata.dump(2) + "\n"});
  return a;
}

}  // namespace mtir
