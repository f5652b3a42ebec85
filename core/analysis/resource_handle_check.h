// Checks of device calls (ops/devices.h): a call marked with the resource-handle
// attribute passes its device context, a T.handle parameter of the calling function,
// as its last argument; and a context goes nowhere else (not as another argument, not
// to an unmarked call, not into arithmetic), so a kernel never gets another device's
// context by position.
#pragma once

#include <string>
#include <vector>

#include "ir/function.h"

namespace mtir {

// `name` is the function's name in its module, for the messages.
void check_resource_handles(const std::string& name, const PrimFunc& f, std::vector<Diagnostic>* diags);

}  // namespace mtir
