// The CRT metadata module for C: the system library's function registry, laid out at
// compile time (a names blob and a function-pointer table) with
// TVMSystemLibEntryPoint, so TVMFuncGetGlobal works with no dynamic loading and no
// parsing at start-up.
#pragma once

#include <string>
#include <vector>

namespace mtir {

// C source of the registry for packed functions named `symbols` (in this order). A user
// error if there are more than 65535 or a name is not a C identifier.
std::string codegen_c_metadata_module(const std::vector<std::string>& symbols, const std::string& module_name);

}  // namespace mtir
