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

}  // namespace mtir
