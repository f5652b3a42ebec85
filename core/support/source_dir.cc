#include "support/source_dir.h"

namespace mtir {

// MICROTIR_SOURCE_ROOT is set for this file only (core/CMakeLists.txt).
const char* source_dir() { return MICROTIR_SOURCE_ROOT; }

}  // namespace mtir
