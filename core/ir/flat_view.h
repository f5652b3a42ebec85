// Flat views: a one-dimensional buffer over another buffer's memory with its dtype and no
// offset. The Helium kernels store four lanes at a time through one of their output
// (ops/qconv_mve.cc), and a fused consumer reads its inputs through such views at the
// same flat index (executor/fuse_elementwise.cc, analysis/elementwise_overwrite.cc).
#pragma once

#include "ir/buffer.h"
#include "ir/expr.h"

namespace mtir {

// Whether `view` has the shape of a flat view of `of` (one dimension, `of`'s dtype, no
// strides, no offset), whatever memory it names.
inline bool has_flat_view_shape(const Buffer& view, const Buffer& of) {
  const int64_t* offset = view->elem_offset ? as_const_int(view->elem_offset) : nullptr;
  return view->shape.size() == 1 && view->dtype == of->dtype && view->strides.empty() &&
         (!view->elem_offset || (offset && !*offset));
}

// Whether `view` is another buffer over `of`'s memory with the shape of a flat view.
inline bool is_flat_view_of(const Buffer& view, const Buffer& of) {
  return view != of && view->data && view->data == of->data && has_flat_view_shape(view, of);
}

}  // namespace mtir
