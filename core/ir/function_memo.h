// Facts about functions that hold as long as the function lives. A PrimFunc's nodes are
// immutable, so what holds for one function object holds while the object lives; a pass
// that changes a function makes a new object. Weak pointers tell the object a fact was
// recorded for from a new one allocated at a freed address. Safe across threads.
#pragma once

#include <algorithm>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "ir/function.h"

namespace mtir {

template <typename Fact>
class FunctionFacts {
 public:
  std::optional<Fact> find(const PrimFunc& f) const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = facts_.find(f.get());
    if (it == facts_.end() || it->second.owner.expired()) return std::nullopt;
    return it->second.fact;
  }
  bool contains(const PrimFunc& f) const { return find(f).has_value(); }

  void record(const PrimFunc& f, Fact fact = {}) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (facts_.size() >= prune_at_) {  // forget the functions that died
      for (auto it = facts_.begin(); it != facts_.end();) it = it->second.owner.expired() ? facts_.erase(it) : std::next(it);
      prune_at_ = std::max<size_t>(1024, 2 * facts_.size());
    }
    facts_[f.get()] = Entry{f, std::move(fact)};
  }

 private:
  struct Entry {
    std::weak_ptr<const PrimFuncNode> owner;
    Fact fact;
  };
  mutable std::mutex mutex_;
  std::unordered_map<const PrimFuncNode*, Entry> facts_;
  size_t prune_at_ = 1024;
};

// Functions known to have some property.
struct Holds {};
using FunctionSet = FunctionFacts<Holds>;

}  // namespace mtir
