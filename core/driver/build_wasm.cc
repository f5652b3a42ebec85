#include "codegen/wasm/codegen_wat.h"
#include "driver/build.h"
#include "support/timing.h"

namespace mtir {

BuildResult build_wasm(const IRModule& m, const Target& target) {
  if (target.kind != "wasm") {
    user_error(Span{}, "build_wasm builds for --target wasm, not \"" + target.kind + "\" (use build_for_target)");
  }
  std::vector<std::string> packed;
  BuildResult r = lower_for_target(m, target, &packed);
  TimingScope timing("step", "codegen");
  WatOptions options;
  options.description = "target \"" + target.str() + "\"";
  // Every function is exported and may be called on its own or through the others: the
  // pool holds all their workspaces at once.
  for (const auto& [name, f] : r.lowered.module.functions) {
    // One block per element type's pool, each with its header (PlanMemory).
    auto it = f->attrs.find("workspace.block_bytes");
    if (it != f->attrs.end() && std::holds_alternative<int64_t>(it->second)) {
      options.workspace_bytes += std::get<int64_t>(it->second);
      continue;
    }
    it = f->attrs.find("workspace.pool_bytes");
    if (it != f->attrs.end() && std::holds_alternative<int64_t>(it->second))
      options.workspace_bytes += 16 + (std::get<int64_t>(it->second) + 15) / 16 * 16;
  }
  options.line_map = &r.line_maps["codegen/host/src/lib0.wat"];
  TimingScope kernels("backend", "wasm: kernels (lib0.wat)");
  r.sources.push_back({"codegen/host/src/lib0.wat", codegen_wat(r.lowered.module, options)});
  return r;
}

}  // namespace mtir
