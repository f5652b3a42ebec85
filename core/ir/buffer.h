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
  // TVM's axis_separators: where the physical (N-D, e.g. texture) memory splits the
  // dimensions. microtir's memory is flat, so it keeps them for printing and lays the
  // buffer out row-major as without them (the logical indexing is the same).
  std::vector<int64_t> axis_separators;
  Span span;

  size_t ndim() const { return shape.size(); }
};

// A buffer with compact strides, zero offset and a fresh data variable "<name>_data".
Buffer MakeBuffer(std::string name, DataType dtype, std::vector<Expr> shape, Span span = {});

// The type of an access to `b` with indices of `lanes` lanes. A buffer of vector type
// (TVM's "int32x2") holds whole vectors: a scalar index reads or writes one of them.
DataType access_dtype(const Buffer& b, int lanes, bool scalable = false);

// Number of elements if every extent is a constant.
bool const_num_elements(const Buffer& b, int64_t* out);

}  // namespace mtir
