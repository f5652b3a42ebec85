// The memory report of a function after PlanMemory: every tensor's place in the
// workspace pool, the pool size and the lower bound.
#pragma once

#include <string>

#include "ir/function.h"

namespace mtir {

std::string memory_report(const PrimFunc& planned);

}  // namespace mtir
