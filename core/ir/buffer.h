// A buffer: a typed, shaped view of memory behind a data pointer. Shape, strides and
// element offset are expressions so symbolic shapes (scalar parameters) work; empty
// strides mean compact row-major.
#pragma once

#include <string>
#include <vector>

#include "ir/expr.h"

namespace mtir {

struct BufferNode {
  std::string name;
  DataType dtype;
  std::vector<Expr> shape;
  std::vector<Expr> strides;  // empty: compact row-major
  Expr elem_offset;           // in elements; IntImm 0 by default
  Var data;                   // handle variable holding the base pointer
  int align = 0;              // in bytes; 0: the dtype's natural alignment
  Span span;

  size_t ndim() const { return shape.size(); }
};

// A buffer with compact strides, zero offset and a fresh data variable "<name>_data".
Buffer MakeBuffer(std::string name, DataType dtype, std::vector<Expr> shape, Span span = {});

// Number of elements if every extent is a constant.
bool const_num_elements(const Buffer& b, int64_t* out);

}  // namespace mtir
