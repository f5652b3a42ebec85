#include "artifact/mlf.h"

#include <algorithm>

#include "analysis/well_formed.h"
#include "artifact/c_interface.h"
#include "codegen/c/metadata_module.h"
#include "codegen/llvm/llvm_target.h"
#include "codegen/llvm/metadata_module_llvm.h"
#include "artifact/wasm_model.h"
#include "support/names.h"
#include "support/npy.h"
#include "support/timing.h"

namespace mtir {

namespace {

// -interface-api=packed -link-params=1: the registry gets the interface's entry, which
// takes only the inputs and outputs (artifact/c_interface.h packed_linked_entry).
void add_packed_entry(const Graph& g, BuildResult* built) {
  built->packed_symbols.push_back(packed_linked_entry(to_c_identifier(g.name)));
  const std::string& module_name = built->lowered.module.name;
  for (auto& f : built->sources) {
    if (f.path == "codegen/host/src/lib1.c") f.text = codegen_c_metadata_module(built->packed_symbols, module_name);
    if (f.path == "codegen/host/src/lib1.ll")
      f.text = codegen_llvm_metadata_module(built->packed_symbols, module_name, llvm_target(built->target.mtriple));
  }
}

// The pool bytes PlanMemory gave a function (0 when it has no pool).
int64_t int_attr_or_zero(const PrimFunc& f, const char* key) {
  if (!f) return 0;
  auto it = f->attrs.find(key);
  return it != f->attrs.end() && std::holds_alternative<int64_t>(it->second) ? std::get<int64_t>(it->second) : 0;
}

int64_t pool_bytes(const PrimFunc& f) { return int_attr_or_zero(f, "workspace.pool_bytes"); }

// The bytes of main's parameters of one role.
int64_t role_bytes(const AotModule& aot, AotModule::Role role) {
  int64_t n = 0;
  for (const auto& p : aot.params)
    if (p.role == role) n += p.type.num_elements() * p.type.dtype.bytes();
  return n;
}

// TVM's per-function memory section: main's workspace, constants and I/O bytes (and the
// state's, which TVM does not have: RAM the artifact keeps), and the workspace of every
// operator function (device 1 is DLPack's kDLCPU).
nlohmann::json memory_section(const AotModule& aot, const IRModule& lowered) {
  int64_t bytes[4] = {0, 0, 0, 0};  // by role: input, constant, output, state
  for (const auto& p : aot.params) bytes[static_cast<int>(p.role)] += p.type.num_elements() * p.type.dtype.bytes();
  const int64_t in = bytes[static_cast<int>(AotModule::Role::kInput)];
  const int64_t out = bytes[static_cast<int>(AotModule::Role::kOutput)];
  nlohmann::json main = {{"device", 1},
                         {"workspace_size_bytes", pool_bytes(lowered.lookup(aot.main))},
                         {"constants_size_bytes", bytes[static_cast<int>(AotModule::Role::kConstant)]},
                         {"inputs_size_bytes", in},
                         {"outputs_size_bytes", out},
                         {"io_size_bytes", in + out},
                         {"state_size_bytes", bytes[static_cast<int>(AotModule::Role::kState)]}};
  nlohmann::json ops = nlohmann::json::array();
  for (const auto& [name, f] : lowered.functions) {
    if (name == aot.main) continue;
    ops.push_back({{"function_name", name},
                   {"workspace", nlohmann::json::array({{{"device", 1}, {"workspace_size_bytes", pool_bytes(f)}}})}});
  }
  return {{"main", nlohmann::json::array({main})}, {"operator_functions", ops}};
}

// The model's inputs or outputs in main's order: the model's own name, the C identifier
// the interface uses for it (struct member, TVMGEN_<MODEL>_<IDENTIFIER>_SIZE), its type
// and, where the model says it, its quantization.
nlohmann::json io_section(const LoadedModel& model, AotModule::Role role) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& p : model.aot.params) {
    if (p.role != role) continue;
    nlohmann::json j = {{"name", p.name}, {"identifier", p.c_name}, {"dtype", p.type.dtype.str()}, {"shape", p.type.shape}};
    auto q = model.graph.quantization.find(p.name);
    if (q != model.graph.quantization.end()) j["scale"] = q->second.first, j["zero_point"] = q->second.second;
    list.push_back(std::move(j));
  }
  return list;
}

}  // namespace

const char* const kDefaultCompileTarget = "c";

LoadedModel load_model(const std::string& json_text, const std::string& filename, const FileReader& read,
                       const std::vector<std::string>& devices, const ScheduleOptions& schedules) {
  Graph g;
  {
    TimingScope timing("step", "import");
    g = load_graph_json(json_text, filename, read);
  }
  return prepare_model(std::move(g), devices, schedules);
}

LoadedModel prepare_model(Graph g, const std::vector<std::string>& devices, const ScheduleOptions& schedules) {
  // The operators' kernels and schedules, and the AOT main that calls them.
  TimingScope timing("step", "schedule");
  LoadedModel lm;
  place_on_devices(g, devices);
  lm.graph = prepare_quantized(fold_batch_norm(g), schedules);
  AotOptions aot;
  aot.patch = schedules.patch;
  aot.patch_overlap = schedules.patch_overlap;
  aot.patch_residual = schedules.patch_residual;
  aot.patch_carry = schedules.patch_carry;
  aot.patch_edge_rows = schedules.patch_edge_rows;
  aot.band_loops = schedules.band_loops;
  aot.workspace_budget = schedules.workspace_budget;
  lm.aot = build_aot(lm.graph, aot);
  auto diags = check_well_formed(lm.aot.module);
  if (!diags.empty()) throw DiagnosticError(diags);
  return lm;
}

nlohmann::json target_defaults_json(const Target& target) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [key, value] : target.defaulted) j[key] = value.empty() ? nlohmann::json(nullptr) : nlohmann::json(value);
  return j;
}

Target artifact_target(Target target) {
  // Weights are linked into the artifact (flash) unless the target string says -link-params=0.
  if (!target.link_params_given) target.link_params = true;
  for (auto& [key, value] : target.defaulted)
    if (key == "link-params") value = target.link_params ? "1" : "0";
  return target;
}

MlfArtifact build_mlf(const LoadedModel& model, const Target& target, const MlfInputs& inputs) {
  MlfArtifact a;
  a.target = artifact_target(target);
  std::vector<SourceFileOut>& files = a.files;
  const bool wasm = a.target.kind == "wasm";
  if (wasm) {
    // One self-contained module (kernels, main, weights, run export) instead of C sources:
    // lowered only, since build_wasm's kernel text would be thrown away.
    std::vector<std::string> packed;
    a.built = lower_for_target(model.aot.module, a.target, &packed);
    TimingScope timing("step", "codegen");
    TimingScope backend("backend", "wasm: model module (.wat)");
    a.built.sources = {{wasm_model_source_path(model.graph),
                        wasm_model_module(model.aot, model.graph, a.built.lowered.module, a.target)}};
  } else {
    // C, or LLVM IR with the C interface; a C main reads linked weights itself.
    a.built = build_for_target(main_reading_linked_weights(model.aot.module, model.aot, model.graph, a.target), a.target);
  }
  TimingScope timing("step", "export");
  if (!wasm && a.target.interface_api == "packed" && a.target.link_params) add_packed_entry(model.graph, &a.built);
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
                {"memory",
                 {{"workspace_bytes", artifact_workspace_bytes(a.built.lowered.module, model.aot.main)},
                  {"state_bytes", role_bytes(model.aot, AotModule::Role::kState)},
                  {"pool_bytes", pool_bytes(a.built.lowered.module.lookup(model.aot.main))},
                  {"lower_bound_bytes", int_attr_or_zero(a.built.lowered.module.lookup(model.aot.main), "workspace.lower_bound_bytes")},
                  {"shared_lower_bound_bytes",
                   int_attr_or_zero(a.built.lowered.module.lookup(model.aot.main), "workspace.shared_lower_bound_bytes")},
                  {"functions", memory_section(model.aot, a.built.lowered.module)}}},
                {"inputs", io_section(model, AotModule::Role::kInput)},
                {"outputs", io_section(model, AotModule::Role::kOutput)},
                {"files", nlohmann::json::array()}};
  // The state (variable tensors) the artifact keeps in RAM, carried over between runs.
  nlohmann::json state = nlohmann::json::array();
  for (const auto& p : model.aot.params)
    if (p.role == AotModule::Role::kState)
      state.push_back({{"name", p.name}, {"dtype", p.type.dtype.str()}, {"shape", p.type.shape},
                       {"bytes", p.type.num_elements() * p.type.dtype.bytes()}});
  a.metadata["state"] = state;
  a.metadata["target_defaults"] = target_defaults_json(a.target);
  for (const auto& f : files) a.metadata["files"].push_back(f.path);
  files.push_back({"src/" + inputs.graph_filename, inputs.graph_text});
  for (const auto& f : inputs.graph_files) {
    // Only paths that stay inside src/.
    if (f.path.empty() || f.path[0] == '/' || f.path.find("..") != std::string::npos) continue;
    files.push_back({"src/" + f.path, f.text});
  }
  // The weights as .npy (linked into the C sources too, unless -link-params=0), and the C runtime the
  // artifact builds against, so the folder is complete on its own.
  for (const auto& p : model.aot.params)
    if (p.role == AotModule::Role::kConstant)
      files.push_back({"parameters/" + p.c_name + ".npy", write_npy(model.graph.constants.at(p.name))});
  std::vector<SourceFileOut> runtime = wasm ? std::vector<SourceFileOut>{} : inputs.runtime;  // wasm needs no CRT
  std::sort(runtime.begin(), runtime.end(), [](const SourceFileOut& x, const SourceFileOut& y) { return x.path < y.path; });
  for (const auto& f : runtime) files.push_back({"runtime/" + f.path, f.text});
  files.push_back({"metadata.json", a.metadata.dump(2) + "\n"});
  return a;
}

}  // namespace mtir
