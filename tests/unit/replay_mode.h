// Whether the unit tests' backend replays (backend_cases.h) compile and run what they
// generate, or generate only (the sanitized build, where the compiler's code is what the
// sanitizers check and the normal build compiles and runs the same bytes).
#pragma once

namespace mtir {
namespace backend_cases {

// Defined in replay_mode.cc, the one test object whose flags differ between the normal
// and the sanitized build, so that ccache shares all the others (tests/CMakeLists.txt).
bool generate_only();

}  // namespace backend_cases
}  // namespace mtir
