#include "driver/build.h"

#include "codegen/c/codegen_c.h"
#include "codegen/c/metadata_module.h"

namespace mtir {

BuildResult build_c(const IRModule& m, const Target& target) {
  if (target.kind != "c") {
    user_error(Span{}, "build_c builds for --target c, not \"" + target.kind + "\" (use build_llvm)");
  }
  std::vector<std::string> packed;
  BuildResult r = lower_for_target(m, target, &packed);
  CCodegenOptions options;
  options.description = "target \"" + target.str() + "\"";
  r.sources.push_back({"codegen/host/src/lib0.c", codegen_c(r.lowered.module, options)});
  r.sources.push_back({"codegen/host/src/lib1.c", codegen_c_metadata_module(packed, m.name)});
  return r;
}

BuildResult lower_for_target(const IRModule& m, const Target& target, std::vector<std::string>* packed_symbols) {
  BuildResult r;
  r.target = target;
  IRModule input = m;
  // Pools are laid out at the alignment the target asks for (at least the CRT's 16).
  input.attrs["workspace_byte_alignment"] = static_cast<int64_t>(target.workspace_byte_alignment);
  r.lowered = run_pipeline(input, lowering_pipeline(target.unpacked_api));
  for (const auto& [name, f] : r.lowered.module.functions) {
    const std::string symbol = symbol_of(name, f);
    r.symbols.emplace_back(name, symbol);
    if (is_packed(f)) packed_symbols->push_back(symbol);
  }
  return r;
}

}  // namespace mtir
