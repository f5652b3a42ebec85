// The target string, as TVM users write it: a kind ("c", "llvm" or "wasm") followed by
// -key=value options, e.g. "c -unpacked-api=1 -interface-api=c" or
// "llvm -mtriple=thumbv7em-none-eabihf -mcpu=cortex-m4". Combinations that cannot work
// are refused here, at option-parse time, with a message naming the rule.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ops/schedules.h"

namespace mtir {

struct Target {
  std::string kind = "c";              // c | llvm | wasm (WebAssembly through Binaryen)
  std::string runtime = "c";           // only the C runtime is supported
  std::string executor = "aot";        // only AOT is supported
  // Unwritten, the lean pair: the C interface and plain-pointer kernels; -unpacked-api=0
  // alone gives the packed interface, -interface-api=packed alone packed kernels.
  std::string interface_api = "c";  // c | packed
  bool unpacked_api = true;
  bool link_params = false;
  int workspace_byte_alignment = 16;
  // The model's input and output buffers double as workspace: the planner may place
  // intermediate tensors in them while they hold nothing the model still needs, so
  // run() overwrites its input (docs/target-options.md).
  bool reuse_io_buffers = false;
  // The workspace pool the patch planner's bands need only fit (bytes; 0: the lowest bound
  // it reaches): the fewest recomputed MACs within it (executor/patch_stages.h).
  int64_t workspace_budget = 0;
  // llvm only: the AOT main calls mtir_profile_begin/_end around each operator call, as
  // the C backend's TVMGEN_PROFILE macros do (`run --profile-layers`); off, no trace of them.
  bool profile_hooks = false;
  std::string mtriple;  // llvm only
  std::string mcpu;     // llvm: the CPU; c: only chooses schedules (cortex-m4/m7/m33/m55: smlad)
  std::string disabled_schedules;  // "block,smlad": int8 schedules switched off (ops/schedules.h)
  std::string opt = "O2";  // wasm only: Binaryen's optimization level (O0 O1 O2 O3 Os Oz)
  // The int8 schedules the target gets, decided once by parse_target: all but smlad,
  // sxtb16, smmlar_requant and smmlar_add on, those on for CPUs with the DSP extension,
  // merge_kernels off on wasm, minus -disabled-schedules.
  ScheduleOptions schedules;
  // Whether the text said -link-params (`compile` links the weights when it does not).
  bool link_params_given = false;
  // The keys the text did not write, with the value each took, in str()'s order
  // ("mcpu" -> "": no CPU, the generic kernels). `compile -v` and metadata.json show them.
  std::vector<std::pair<std::string, std::string>> defaulted;

  // The canonical spelling: every option, in a fixed order.
  std::string str() const;
};

// Throws DiagnosticError (a user error) for unknown kinds, unknown options, bad values
// and unsupported combinations. The one place a target's text is read: everything after
// it takes the Target.
Target parse_target(const std::string& text);

// Whether the CPU (a -mcpu value such as "cortex-m4") has the DSP extension's SMLAD.
bool cpu_has_dsp(const std::string& mcpu);
// Whether code for `triple` (an Arm one) on `mcpu` may use the DSP instructions.
bool arm_dsp(const std::string& triple, const std::string& mcpu);
// Whether LLVM's machine scheduler runs for `target`: not for a DSP core without Helium
// while schedule dsp_no_early_scheduling is on (as GCC's early scheduling is not for the
// C backend): the 3x2 SMLAD tiles' loads move ahead of their uses and accumulators spill.
bool llvm_machine_scheduling(const Target& target);

}  // namespace mtir
