// C++20's std::bit_cast for C++17: the bytes of a value read as another type of the
// same size (a float's encoding, and back), without the undefined behaviour of a
// pointer cast.
#pragma once

#include <cstring>
#include <type_traits>

namespace mtir {

template <typename To, typename From>
To bit_cast(const From& from) {
  static_assert(sizeof(To) == sizeof(From), "bit_cast between types of one size");
  static_assert(std::is_trivially_copyable<To>::value && std::is_trivially_copyable<From>::value,
                "bit_cast of trivially copyable types");
  To to;
  std::memcpy(&to, &from, sizeof to);
  return to;
}

}  // namespace mtir
