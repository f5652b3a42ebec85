// Attribute values on functions, modules and calls: a small closed set of scalars,
// kept in a sorted map so printing and hashing are deterministic.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <variant>

namespace mtir {

using AttrValue = std::variant<bool, int64_t, double, std::string>;
using Attrs = std::map<std::string, AttrValue>;

// Attribute keys more than one layer reads (the passes and checks below the operator
// library, the executor and the code generators).
// The call attribute that marks a device call: its last argument is the resource handle.
inline constexpr const char* kResourceHandleAttr = "tir.resource_handle";
// On a call_tir of the AOT main: a bit mask of the callee's input parameters that it
// reads elementwise, so its output may be written over one of them. PlanMemory checks
// the callee, decides, and removes the attribute.
inline constexpr const char* kMayOverwriteAttr = "tir.may_overwrite";
// On a kernel whose output the memory planner placed over an input: the positions of
// the parameters that share bytes, comma-separated ("3,5"). tir.noalias then holds
// for the other parameters only (codegen/emit_common.h: noalias_param).
inline constexpr const char* kAliasedParamsAttr = "tir.aliased_params";
// On an AOT main: the positions of its parameters that are the model's inputs, and
// those that are its outputs, comma-separated ("0,1"); the others are weights.
inline constexpr const char* kInputParamsAttr = "aot.input_params";
inline constexpr const char* kOutputParamsAttr = "aot.output_params";
// On an AOT main with weights: "position:symbol" for each weight parameter, comma-separated,
// the C array the C interface links it as. The artifact (c_interface.h:
// main_reading_linked_weights) sets kLinkedParamsAttr to a file name when the weights are
// linked (-link-params=1, unpacked C interface): main's source then includes that file,
// which defines the arrays static, and main reads them itself instead of taking them as
// parameters (no pointers passed through run(), no symbols an application could clash with).
inline constexpr const char* kConstantSymbolsAttr = "aot.constant_symbols";
inline constexpr const char* kLinkedParamsAttr = "aot.linked_params";
// On an AOT main with patch stages (executor/patch_stages.h): the whole-tensor bound of
// the graph's intermediates without them and with them (bytes), and the stages in words.
inline constexpr const char* kPatchWholeTensorBoundAttr = "patch.whole_tensor_bound_bytes";
inline constexpr const char* kPatchBoundAttr = "patch.bound_bytes";
inline constexpr const char* kPatchStagesAttr = "patch.stages";
// The lowest bound the patch planner reached (bytes): the stages took their cheapest
// choices within it, or within the workspace budget.
inline constexpr const char* kPatchLowestBoundAttr = "patch.lowest_bound_bytes";
// On an AOT main built with -workspace-budget: the budget (bytes); plan_memory refuses a
// pool over it.
inline constexpr const char* kWorkspaceBudgetAttr = "workspace.budget_bytes";
// The function attribute naming the device instance a function runs on.
inline constexpr const char* kDeviceAttr = "device";

}  // namespace mtir
