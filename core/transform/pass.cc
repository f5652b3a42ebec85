#include "transform/pass.h"

namespace mtir {

Pass MakeFunctionPass(std::string name, std::function<PrimFunc(const PrimFunc&)> rewrite) {
  Pass p;
  p.name = std::move(name);
  p.run = [rewrite = std::move(rewrite)](const IRModule& m) {
    // The module is copied (names, attributes, function pointers), but a function the
    // rewrite hands back unchanged stays the very same object, so later identity
    // checks (and the pipeline's "changed" flag) stay cheap and exact.
    IRModule out = m;
    for (auto& entry : out.functions) {
      PrimFunc rewritten = rewrite(entry.second);
      if (rewritten != entry.second) entry.second = std::move(rewritten);
    }
    return out;
  };
  return p;
}

}  // namespace mtir
