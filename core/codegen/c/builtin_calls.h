// The C backend's builtin calls: the C expression of every builtin of ir/builtins.def
// (math, shifts and bit operations, the packed calling convention's accesses, extern
// calls, the DSP and Helium helpers), for the function emitter of codegen_c.cc.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "codegen/c/helium_vectors.h"
#include "ir/stmt.h"

namespace mtir::c_helpers {

// "A[i]": the C of an element of a flat buffer.
using ElementEmitter = std::function<std::string(const Buffer&, const std::vector<Expr>& indices, const Span&)>;

// What the C of a builtin needs from the function it is emitted in.
struct BuiltinContext {
  ScalarEmitter expr;                           // the C of an argument
  ElementEmitter element;                       // the C of a buffer element
  std::map<std::string, std::string>* helpers;  // helper name -> its definition, once per file
  std::map<std::string, std::string>* externs;  // external symbol -> its prototype
  const std::set<std::string>* module_symbols;  // the functions this file defines, or null
};

// The C expression of builtin call `op`; refuses (file:line:col) what C cannot emit there.
std::string builtin_call(const CallNode* op, const BuiltinContext& context);

// mtir_<base>_<type> (abs, div, mod, floordiv, floormod, min, max of t), its definition
// registered in `helpers`.
std::string typed_helper(const std::string& base, DataType t, std::map<std::string, std::string>* helpers);

}  // namespace mtir::c_helpers
