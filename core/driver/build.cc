#include "driver/build.h"

#include "codegen/c/codegen_c.h"
#include "codegen/c/metadata_module.h"
#include "ir/carried_types.h"
#include "ir/visitor.h"
#include "ir/attrs.h"
#include "support/timing.h"

#include <set>

namespace mtir {

std::string device_of(const PrimFunc& f) {
  auto it = f->attrs.find(kDeviceAttr);
  return it != f->attrs.end() && std::holds_alternative<std::string>(it->second) ? std::get<std::string>(it->second)
                                                                                 : std::string();
}

BuildResult build_c(const IRModule& m, const Target& target) {
  if (target.kind != "c") {
    user_error(Span{}, "build_c builds for --target c, not \"" + target.kind + "\" (use build_llvm)");
  }
  std::vector<std::string> packed;
  BuildResult r = lower_for_target(m, target, &packed);
  r.packed_symbols = packed;
  TimingScope timing("step", "codegen");
  // Functions that run on a device go to that device's own file, not the host's.
  std::set<std::string> devices;
  for (const auto& [name, f] : m.functions)
    if (!device_of(f).empty()) devices.insert(device_of(f));
  CCodegenOptions options;
  options.description = "target \"" + target.str() + "\"";
  if (!devices.empty()) {
    options.defines = [&](const std::string&, const PrimFunc& f) { return device_of(f).empty(); };
    options.declare_others = true;
  }
  options.line_map = &r.line_maps["codegen/host/src/lib0.c"];
  options.dsp_no_early_scheduling = target.schedules.dsp_no_early_scheduling;
  {
    TimingScope kernels("backend", "c: kernels (lib0.c)");
    r.sources.push_back({"codegen/host/src/lib0.c", codegen_c(r.lowered.module, options)});
  }
  for (const std::string& device : devices) {
    TimingScope device_kernels("backend", "c: device " + device + " kernels");
    CCodegenOptions device_options;
    device_options.description = "device \"" + device + "\" of target \"" + target.str() + "\"";
    device_options.defines = [&](const std::string&, const PrimFunc& f) { return device_of(f) == device; };
    device_options.line_map = &r.line_maps["codegen/" + device + "/src/lib0.c"];
    r.sources.push_back({"codegen/" + device + "/src/lib0.c", codegen_c(r.lowered.module, device_options)});
  }
  TimingScope metadata("backend", "c: metadata module (lib1.c)");
  r.sources.push_back({"codegen/host/src/lib1.c", codegen_c_metadata_module(packed, m.name)});
  return r;
}

// GPU thread loops parse and print, but no backend of ours has threads to bind them to.
static void refuse_gpu_threads(const IRModule& m) {
  struct Finder : Visitor {
    const ForNode* found = nullptr;
    const AttrStmtNode* launch = nullptr;
    void visit_For(const ForNode* op) override {
      if (op->for_kind == ForKind::kThreadBinding && !found) found = op;
      Visitor::visit_For(op);
    }
    void visit_AttrStmt(const AttrStmtNode* op) override {
      if (op->key == "thread_extent" && !launch) launch = op;
      Visitor::visit_AttrStmt(op);
    }
  };
  for (const auto& [name, f] : m.functions) {
    Finder finder;
    finder.visit_func(f);
    if (const AttrStmtNode* l = finder.launch) {
      const auto* v = as<VarNode>(l->node);
      user_error(l->span, "function '" + name + "' launches the GPU thread '" + (v ? v->thread_tag : std::string("?")) +
                              "' (T.launch_thread): microtir compiles for CPUs and microcontrollers, which have no "
                              "GPU threads");
    }
    if (finder.found)
      user_error(finder.found->span, "function '" + name + "' binds loop '" + finder.found->loop_var->name +
                                         "' to the GPU thread '" + finder.found->thread_tag +
                                         "': microtir compiles for CPUs and microcontrollers, which have no GPU threads");
  }
}

// TVM's T.match_buffer(b, ..., data=A.data): the interpreter runs the alias, but the
// calling conventions give every tensor parameter memory of its own.
static void refuse_shared_param_data(const IRModule& m) {
  for (const auto& [name, f] : m.functions)
    for (size_t i = 0; i < f->param_buffers.size(); ++i)
      for (size_t j = 0; f->param_buffers[i] && j < i; ++j)
        if (f->param_buffers[j] && f->param_buffers[j]->data == f->param_buffers[i]->data)
          user_error(f->param_buffers[i]->span, "function '" + name + "': buffer '" + f->param_buffers[i]->name +
                                                    "' views the memory of buffer '" + f->param_buffers[j]->name +
                                                    "' (T.match_buffer(..., data=" + f->param_buffers[j]->name +
                                                    ".data)): the interpreter runs it, but compiled functions take "
                                                    "one tensor of their own per buffer parameter");
}

LoweringOptions lowering_options(const Target& target) {
  LoweringOptions o;
  o.unpacked_api = target.unpacked_api;
  o.hoist_loop_invariants = target.schedules.hoist;
  o.scalarize_vectors = target.kind != "llvm";  // LLVM emits vectors itself
  o.keep_simd128 = target.kind == "wasm";
  o.merge_kernels = target.schedules.merge_kernels;
  return o;
}

BuildResult lower_for_target(const IRModule& m, const Target& target, std::vector<std::string>* packed_symbols) {
  refuse_gpu_threads(m);
  refuse_shared_param_data(m);
  refuse_carried_types(m, "the backends");
  // As in TVM: the AOT executor fills resource handles from the C interface's devices
  // struct, which only exists with plain pointers.
  for (const auto& [name, f] : m.functions) {
    if (device_of(f).empty() || (target.interface_api == "c" && target.unpacked_api)) continue;
    user_error(Span{}, "the model runs operators on device '" + device_of(f) +
                           "': device kernels with resource handles need -runtime=c -executor=aot "
                           "-interface-api=c -unpacked-api=1 (the target is \"" + target.str() + "\")");
  }
  TimingScope timing("step", "lower");
  BuildResult r;
  r.target = target;
  IRModule input = m;
  // Pools are laid out at the alignment the target asks for (at least the CRT's 16).
  input.attrs["workspace_byte_alignment"] = static_cast<int64_t>(target.workspace_byte_alignment);
  if (target.reuse_io_buffers) input.attrs["reuse_io_buffers"] = true;
  r.lowered = run_pipeline(input, lowering_pipeline(lowering_options(target)));
  for (const auto& [name, f] : r.lowered.module.functions) {
    const std::string symbol = symbol_of(name, f);
    r.symbols.emplace_back(name, symbol);
    if (is_packed(f)) packed_symbols->push_back(symbol);
  }
  return r;
}

}  // namespace mtir
