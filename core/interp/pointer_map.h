// The interpreter's map from node addresses to bindings. Internal to core/interp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace mtir {
namespace interp {

// A map from node addresses (variables, buffers' data variables) to their binding, looked
// up on every variable read and buffer access: open addressing with linear probing, so a
// lookup is a multiply and usually one compare (std::unordered_map divides by a prime and
// chases a list node). Deletion shifts the following entries back, so no tombstones.
template <typename V>
class PointerMap {
 public:
  PointerMap() : slots_(16) {}
  V* find(const void* key) {
    for (size_t i = home(key);; i = (i + 1) & mask()) {
      if (slots_[i].key == key) return &slots_[i].value;
      if (!slots_[i].key) return nullptr;
    }
  }
  bool count(const void* key) { return find(key) != nullptr; }
  template <typename F>
  void for_each(F f) const {
    for (const Slot& s : slots_)
      if (s.key) f(s.key, s.value);
  }
  V& operator[](const void* key) {
    if (V* v = find(key)) return *v;
    if (2 * (size_ + 1) > slots_.size()) grow();
    size_t i = home(key);
    while (slots_[i].key) i = (i + 1) & mask();
    slots_[i].key = key;
    slots_[i].value = V();
    ++size_;
    return slots_[i].value;
  }
  void erase(const void* key) {
    size_t i = home(key);
    while (slots_[i].key != key) {
      if (!slots_[i].key) return;
      i = (i + 1) & mask();
    }
    // Move back each later entry of the run whose home is not between the hole and it.
    for (size_t j = (i + 1) & mask(); slots_[j].key; j = (j + 1) & mask()) {
      const size_t h = home(slots_[j].key);
      const bool stays = i <= j ? (i < h && h <= j) : (i < h || h <= j);
      if (stays) continue;
      slots_[i] = std::move(slots_[j]);
      i = j;
    }
    slots_[i].key = nullptr;
    slots_[i].value = V();
    --size_;
  }

 private:
  struct Slot {
    const void* key = nullptr;
    V value{};
  };
  size_t mask() const { return slots_.size() - 1; }
  size_t home(const void* key) const {
    // Fibonacci hashing of the address (its low bits are alignment zeros).
    return static_cast<size_t>((reinterpret_cast<uintptr_t>(key) * 0x9E3779B97F4A7C15ull) >> 20) & mask();
  }
  void grow() {
    std::vector<Slot> old(slots_.size() * 2);
    old.swap(slots_);
    size_ = 0;
    for (Slot& s : old)
      if (s.key) (*this)[s.key] = std::move(s.value);
  }
  std::vector<Slot> slots_;
  size_t size_ = 0;
};

}  // namespace interp
}  // namespace mtir
