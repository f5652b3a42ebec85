// The intrinsics a CallNode may name. One table, used by the parser (arity, result
// type), the verifier (argument types), the interpreter (what to compute) and the
// code generators.
#pragma once

#include <string>
#include <vector>

#include "ir/dtype.h"

namespace mtir {

struct OpInfo {
  enum class Kind {
    kUnaryMath,   // f(x) -> type of x; floats only unless `int_ok`
    kBinaryMath,  // f(x, y) -> type of x, both the same type
    kIntBinary,   // shift_right, shift_left, bitwise_and, bitwise_or, bitwise_xor: integers only,
                  // both operands the same type, result that type
    kIfThenElse,  // if_then_else(cond, a, b): lazy select
    kCallExtern,  // call_extern("dtype", "symbol", args...): an external C function
    kBuiltin,     // lowering builtins (packed calling convention): fixed signature
  };
  const char* name;
  Kind kind;
  bool int_ok;  // also defined on integers (abs)
  // Builtins only: the result type, and the arguments, one letter each: 'h' handle,
  // 'i' integer, 'f' float, 's' string; a trailing '*' allows any number of further
  // arguments, '#' any number of further integers.
  DataType result = DataType::Void();
  const char* signature = "";
  // Builtins only: evaluating it does more than compute a value (it may return from
  // the function), so passes must never drop or duplicate it.
  bool side_effect = false;
};

// Whether `args` fit a builtin's signature; if not, `why` says what is wrong.
bool builtin_args_ok(const OpInfo& op, const std::vector<DataType>& arg_types, std::string* why);
// The message of tvm_throw_last_error: each "{}" replaced by the next value.
std::string format_error_message(const std::string& format, const std::vector<int64_t>& values);

// Shifts: shift_right is arithmetic for signed types, logical for unsigned ones. The
// shift amount must be in [0, bits of the type): a constant outside is a user error
// (well-formedness), a run-time value outside is a user error in the interpreter and
// is masked to the low bits by the code generators (C leaves it undefined). Kernels
// only emit in-range shifts.
inline bool is_shift_op(const std::string& name) { return name == "shift_right" || name == "shift_left"; }

// nullptr for an unknown name.
const OpInfo* lookup_op(const std::string& name);
// Every op, for diagnostics ("did you mean") and documentation.
const std::vector<OpInfo>& all_ops();

}  // namespace mtir
