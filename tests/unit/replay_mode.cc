#include "replay_mode.h"

namespace mtir {
namespace backend_cases {

bool generate_only() {
#if defined(MICROTIR_REPLAY_GENERATE_ONLY)  // tests/CMakeLists.txt: the sanitized build
  return true;
#else
  return false;
#endif
}

}  // namespace backend_cases
}  // namespace mtir
