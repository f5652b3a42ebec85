#include "codegen/llvm/codegen_llvm.h"
#include "codegen/llvm/metadata_module_llvm.h"
#include "driver/build.h"

namespace mtir {

BuildResult build_llvm(const IRModule& m, const Target& target) {
  if (target.kind != "llvm") {
    user_error(Span{}, "build_llvm builds for --target llvm, not \"" + target.kind + "\" (use build_c)");
  }
  const LlvmTargetInfo& info = llvm_target(target.mtriple);  // refuses unknown triples before lowering
  for (const auto& [name, f] : m.functions)
    if (!device_of(f).empty())
      user_error(Span{}, "the model runs operators on device '" + device_of(f) +
                             "': device kernels are emitted by the C backend only; use --target c");
  std::vector<std::string> packed;
  BuildResult r = lower_for_target(m, target, &packed);
  LlvmCodegenOptions options;
  options.triple = info.triple;
  options.cpu = target.mcpu;
  options.description = "target \"" + target.str() + "\"";
  r.sources.push_back({"codegen/host/src/lib0.ll", codegen_llvm(r.lowered.module, options)});
  r.sources.push_back({"codegen/host/src/lib1.ll", codegen_llvm_metadata_module(packed, m.name, info)});
  return r;
}

BuildResult build_for_target(const IRModule& m, const Target& target) {
  return target.kind == "llvm" ? build_llvm(m, target) : build_c(m, target);
}

}  // namespace mtir
