// The C runtime sources (crt/include, crt/src, crt/ports), compiled into the wasm
// build so that its MLF artifact is complete without a file system.
#pragma once

#include <vector>

#include "driver/build.h"

namespace mtir::wasm {

// Paths relative to crt/, in path order.
const std::vector<SourceFileOut>& embedded_crt_files();

}  // namespace mtir::wasm
