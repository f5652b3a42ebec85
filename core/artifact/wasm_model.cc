#include "artifact/wasm_model.h"

#include "artifact/c_interface.h"
#include "codegen/wasm/codegen_wat.h"
#include "support/names.h"

namespace mtir {

std::string wasm_model_source_path(const Graph& g) { return "codegen/host/src/" + to_c_identifier(g.name) + ".wat"; }
std::string wasm_model_binary_path(const Graph& g) { return "codegen/host/lib/" + to_c_identifier(g.name) + ".wasm"; }
std::string wasm_model_text_path(const Graph& g) { return "codegen/host/lib/" + to_c_identifier(g.name) + ".wat"; }

std::string wasm_model_module(const AotModule& aot, const Graph& g, const IRModule& lowered, const Target& target) {
  WatOptions options;
  options.description = "model \"" + g.name + "\", target \"" + target.str() + "\"";
  options.workspace_bytes = artifact_workspace_bytes(lowered, aot.main);
  options.has_run = true;
  options.run.main_symbol = aot.main;
  options.run.devices = aot.devices;
  for (const auto& p : aot.params) {
    WasmRunExport::Param param;
    param.name = p.c_name;
    param.bytes = p.type.num_elements() * p.type.dtype.bytes();
    if (p.role == AotModule::Role::kConstant || p.role == AotModule::Role::kState) {
      const bool state = p.role == AotModule::Role::kState;
      param.kind = state ? WasmRunExport::Param::Kind::kState : WasmRunExport::Param::Kind::kConstant;
      const NDArray& value = state ? g.state.at(p.name) : g.constants.at(p.name);
      param.data.assign(value.data.begin(), value.data.end());
    } else {
      param.kind = p.role == AotModule::Role::kInput ? WasmRunExport::Param::Kind::kInput : WasmRunExport::Param::Kind::kOutput;
    }
    options.run.params.push_back(std::move(param));
  }
  return codegen_wat(lowered, options);
}

}  // namespace mtir
