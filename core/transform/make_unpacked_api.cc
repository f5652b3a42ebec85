// MakeUnpackedAPI: the signature transformation of the unpacked calling convention.
// Each buffer parameter becomes its data pointer (`int32_t f(float* A, float* B)` in C)
// and the body sees the buffer through a `T.decl_buffer` on that pointer. A pointer
// carries nothing but an address, so a function that needs anything else from its
// buffer argument at run time (a shape bound by T.match_buffer, the tensor handle
// itself) is refused, naming that use.
#include "transform/pointer_signature.h"
#include "transform/transform.h"

namespace mtir {

Pass MakeUnpackedAPI() {
  Pass p;
  p.name = "make_unpacked_api";
  p.run = [](const IRModule& m) {
    IRModule out = m;
    for (auto& [name, f] : out.functions) {
      bool has_buffer = false;
      for (const auto& b : f->param_buffers) has_buffer = has_buffer || b != nullptr;
      if (has_buffer) f = to_pointer_signature(name, f, /*runtime_shapes=*/false);
    }
    return out;
  };
  return p;
}

}  // namespace mtir
