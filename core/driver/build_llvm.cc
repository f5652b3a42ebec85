#include "codegen/llvm/codegen_llvm.h"
#include "codegen/llvm/metadata_module_llvm.h"
#include "driver/build.h"
#include "support/timing.h"

#include <set>

namespace mtir {

BuildResult build_llvm(const IRModule& m, const Target& target) {
  if (target.kind != "llvm") {
    user_error(Span{}, "build_llvm builds for --target llvm, not \"" + target.kind + "\" (use build_c)");
  }
  const LlvmTargetInfo& info = llvm_target(target.mtriple);  // refuses unknown triples before lowering
  std::vector<std::string> packed;
  BuildResult r = lower_for_target(m, target, &packed);
  r.packed_symbols = packed;
  TimingScope timing("step", "codegen");
  LlvmCodegenOptions options;
  options.triple = info.triple;
  options.cpu = target.mcpu;
  options.arm_dsp = arm_dsp(info.triple, target.mcpu);
  options.profile_hooks = target.profile_hooks;
  options.description = "target \"" + target.str() + "\"";
  // As build_c: functions that run on a device go to that device's own module, which
  // the host module calls through declarations (the resource handle stays the last argument).
  std::set<std::string> devices;
  for (const auto& [name, f] : m.functions)
    if (!device_of(f).empty()) devices.insert(device_of(f));
  if (!devices.empty()) options.defines = [](const std::string&, const PrimFunc& f) { return device_of(f).empty(); };
  options.line_map = &r.line_maps["codegen/host/src/lib0.ll"];
  {
    TimingScope kernels("backend", "llvm: kernels (lib0.ll)");
    r.sources.push_back({"codegen/host/src/lib0.ll", codegen_llvm(r.lowered.module, options)});
  }
  for (const std::string& device : devices) {
    TimingScope device_kernels("backend", "llvm: device " + device + " kernels");
    LlvmCodegenOptions device_options = options;
    device_options.description = "device \"" + device + "\" of target \"" + target.str() + "\"";
    device_options.defines = [&](const std::string&, const PrimFunc& f) { return device_of(f) == device; };
    device_options.line_map = &r.line_maps["codegen/" + device + "/src/lib0.ll"];
    r.sources.push_back({"codegen/" + device + "/src/lib0.ll", codegen_llvm(r.lowered.module, device_options)});
  }
  TimingScope metadata("backend", "llvm: metadata module (lib1.ll)");
  r.sources.push_back({"codegen/host/src/lib1.ll", codegen_llvm_metadata_module(packed, m.name, info)});
  return r;
}

BuildResult build_for_target(const IRModule& m, const Target& target) {
  if (target.kind == "wasm") return build_wasm(m, target);
  return target.kind == "llvm" ? build_llvm(m, target) : build_c(m, target);
}

}  // namespace mtir
