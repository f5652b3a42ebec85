// A content digest: two FNV-1a streams with different offsets, 128 bits in hex. Plenty
// for caches and fingerprints whose worst collision is a wrong match for identical-looking
// input, never an attacker's (not a cryptographic hash).
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace mtir {

class Digest {
 public:
  void add(const std::string& s) {
    for (unsigned char c : s) {
      a_ = (a_ ^ c) * 0x100000001b3ULL;
      b_ = (b_ ^ c) * 0x100000001b3ULL;
    }
    // A separator, so ("ab","c") and ("a","bc") differ.
    a_ = (a_ ^ 0xff) * 0x100000001b3ULL;
    b_ = (b_ ^ 0xfe) * 0x100000001b3ULL;
  }
  std::string hex() const {
    char text[33];
    std::snprintf(text, sizeof text, "%016llx%016llx", static_cast<unsigned long long>(a_),
                  static_cast<unsigned long long>(b_));
    return text;
  }

 private:
  uint64_t a_ = 0xcbf29ce484222325ULL;
  uint64_t b_ = 0x84222325cbf29ce4ULL;
};

// The digest of one text.
inline std::string digest_of(const std::string& text) {
  Digest d;
  d.add(text);
  return d.hex();
}

}  // namespace mtir
