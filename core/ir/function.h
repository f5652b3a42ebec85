// PrimFunc (one tensor function) and IRModule (named functions plus attributes).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "ir/stmt.h"

namespace mtir {

struct PrimFuncNode {
  std::vector<Var> params;
  // Parallel to params: the buffer a handle parameter stands for, or null for scalars.
  std::vector<Buffer> param_buffers;
  Stmt body;
  DataType ret_type = DataType::Void();
  Attrs attrs;  // "global_symbol", "tir.noalias", ...
  Span span;

  Buffer buffer_of(const Var& param) const;
};
using PrimFunc = std::shared_ptr<const PrimFuncNode>;

// A copy of `f` with another body.
PrimFunc WithBody(const PrimFunc& f, Stmt body);

struct IRModule {
  std::string name = "Module";
  std::vector<std::pair<std::string, PrimFunc>> functions;  // in definition order
  Attrs attrs;

  PrimFunc lookup(const std::string& fname) const;  // null if absent
  // Replace the function named `fname`, or append it.
  void set(const std::string& fname, PrimFunc f);
};

}  // namespace mtir
