#pragma once
// The checkout this binary was built from: where the tools find crt/, tools/ and the
// tests their data. One generated constant in one object (source_dir.cc), so that no
// other compile command names the checkout's path: ccache then hits in a clone at
// another path, as CI's fresh checkouts are.
namespace mtir {
const char* source_dir();
}  // namespace mtir
