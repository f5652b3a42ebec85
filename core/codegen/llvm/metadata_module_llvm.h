// The CRT metadata module in LLVM IR: the same function registry as the C one (a names
// blob with a 16-bit count in front, a function-pointer table) and
// TVMSystemLibEntryPoint, all constants, so an LLVM-built artifact needs no C file and
// does no work at start-up.
#pragma once

#include <string>
#include <vector>

#include "codegen/llvm/llvm_target.h"

namespace mtir {

// LLVM IR of the registry for packed functions named `symbols` (in this order). A user
// error if there are more than 65535 or a name is not a C identifier.
std::string codegen_llvm_metadata_module(const std::vector<std::string>& symbols, const std::string& module_name,
                                         const LlvmTargetInfo& target);

}  // namespace mtir
