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

// The C symbol of function `name`: its "global_symbol" attribute, or the name itself;
// a symbol `main` (TVM's default function name, reserved in C) becomes `tvm_main`.
std::string symbol_of(const std::string& name, const PrimFunc& f);
// Whether MakePackedAPI made `f` a packed function ("calling_conv": "packed").
bool is_packed(const PrimFunc& f);
// DLPack's type code of a tensor element type (0 int, 1 uint and bool, 2 float, 3 handle).
int dl_type_code(DataType t);

struct IRModule {
  std::string name = "Module";
  std::vector<std::pair<std::string, PrimFunc>> functions;  // in definition order
  Attrs attrs;

  PrimFunc lookup(const std::string& fname) const;  // null if absent
  // Replace the function named `fname`, or append it.
  void set(const std::string& fname, PrimFunc f);
};

}  // namespace mtir
