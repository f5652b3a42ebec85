// Small text helpers shared across layers.
#pragma once

#include <string>

namespace mtir {

// `s` with every occurrence of `from` replaced by `to`, left to right; the replaced text is
// not searched again (so `to` may contain `from`). An empty `from` replaces nothing.
inline std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  if (from.empty()) return s;
  for (size_t at = 0; (at = s.find(from, at)) != std::string::npos; at += to.size()) s.replace(at, from.size(), to);
  return s;
}

}  // namespace mtir
