// Device kinds operators can be placed on (accelerators such as an NPU), what each
// runs, and the device-side function that launches one placed operator.
//
// A device instance is named by the application ("npu0", "npu1"); its kind is the name
// without trailing digits ("npu"). A placed operator becomes a function
// `tvmgen_<model>_<instance>_<node>` that calls the device library's kernel
// (`npu_conv2d`, ...) with the instance's context, an opaque resource handle, as its
// last argument. The call carries the attribute kResourceHandleAttr (ir/attrs.h).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ir/attrs.h"
#include "ir/function.h"
#include "ops/ops.h"

namespace mtir {

struct DeviceKind {
  std::string name;              // "npu"
  std::string hook_prefix;       // "TVMDeviceNpu": TVMDeviceNpuActivate, ...Open, ...Close, ...Deactivate
  std::vector<std::string> ops;  // the operators its kernel library implements
};

const std::vector<DeviceKind>& all_device_kinds();

// The kind of an instance name; a user error naming the instance and the known kinds.
const DeviceKind& device_kind_of(const std::string& instance);

// Throws a user error naming the node when `op` with these inputs and attributes cannot
// run on `instance` (unknown kind, op not in its library, unsupported attribute).
void check_device_support(const std::string& instance, const std::string& node, const std::string& op,
                          const std::vector<TensorType>& inputs, const nlohmann::json& attrs);

// The device-side function of one placed operator: the op's buffers, then the
// instance's context (a T.handle named after the instance), calling the kernel.
PrimFunc build_device_function(const std::string& func_name, const std::string& instance, const std::string& op,
                               const std::vector<TensorType>& inputs, const TensorType& output,
                               const nlohmann::json& attrs);

}  // namespace mtir
