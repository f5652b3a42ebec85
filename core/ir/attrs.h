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
// The function attribute naming the device instance a function runs on.
inline constexpr const char* kDeviceAttr = "device";

}  // namespace mtir
