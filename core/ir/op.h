// The builtins a CallNode may name (exp, if_then_else, call_extern, smlad, the packed
// calling convention's accessors, ...): one table, generated from ir/builtins.def, used
// by the parser (arity, result type), the verifier (arguments), the interpreter and the
// code generators (a switch over Builtin each).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/dtype.h"

namespace mtir {

enum class Builtin : uint8_t {
#define MTIR_BUILTIN(Id, name, Kind, int_ok, Result, signature, Effect, Position, lowered_by) Id,
#include "ir/builtins.def"
};

struct OpInfo {
  enum class Kind {
    kUnaryMath,   // f(x) -> type of x; floats only unless `int_ok`
    kBinaryMath,  // f(x, y) -> type of x, both the same type
    kIntBinary,   // shift_right, shift_left, bitwise_and, bitwise_or, bitwise_xor: integers only,
                  // both operands the same type, result that type
    kIfThenElse,  // if_then_else(cond, a, b): lazy select
    kCallExtern,  // call_extern("dtype", "symbol", args...): an external C function
    kBuiltin,     // fixed signature (the packed calling convention, DSP helpers, ...)
  };
  // How the result type follows from the call: see builtins.def.
  enum class Result { kFirstArg, kBranches, kCallType, kFixed };
  // Where a call may stand: see builtins.def.
  enum class Position { kExpr, kStmt, kLetValue };

  Builtin id;
  const char* name;
  Kind kind;
  bool int_ok;  // also defined on integers (abs)
  Result result_rule;
  DataType result;  // kFixed only
  // The arguments, one letter each (see builtins.def); its length without a trailing
  // '*' or '#' is `arity`, and `variadic` says whether more may follow.
  const char* signature;
  // Evaluating it does more than compute a value (it may write memory or return from
  // the function), so passes must never drop or duplicate it.
  bool side_effect;
  Position position;
  // The pass that removes it before code generation, "" when the backends emit it.
  const char* lowered_by;
  size_t arity;
  bool variadic;
  bool none_ok;  // a call without arguments is allowed too ('?')
};

// nullopt for a name that is no builtin.
std::optional<Builtin> lookup_builtin(const std::string& name);
const OpInfo& builtin_info(Builtin b);
// Every builtin, in builtins.def order (indexable by Builtin).
const std::vector<OpInfo>& all_ops();
// nullptr for an unknown name.
inline const OpInfo* lookup_op(const std::string& name) {
  auto b = lookup_builtin(name);
  return b ? &builtin_info(*b) : nullptr;
}

// Whether a call of `b` only computes a value (builtins.def's Pure), so passes may drop
// or duplicate it; an unknown name (nullopt) is not.
inline bool is_pure(std::optional<Builtin> b) { return b && !builtin_info(*b).side_effect; }

// Whether the number of arguments fits; if not, `why` says "T.x takes ...".
bool builtin_arity_ok(const OpInfo& op, size_t num_args, std::string* why);
// Whether `args` fit a builtin's signature (arity and letters); if not, `why` says what
// is wrong.
bool builtin_args_ok(const OpInfo& op, const std::vector<DataType>& arg_types, std::string* why);
// The message of tvm_throw_last_error: each "{}" replaced by the next value.
std::string format_error_message(const std::string& format, const std::vector<int64_t>& values);

// Shifts: shift_right is arithmetic for signed types, logical for unsigned ones. The
// shift amount must be in [0, bits of the type): a constant outside is a user error
// (well-formedness), a run-time value outside is a user error in the interpreter and
// is masked to the low bits by the code generators (C leaves it undefined), unless
// shift_needs_mask says otherwise (ir/expr.h). Kernels only emit in-range shifts.
inline bool is_shift_op(Builtin b) { return b == Builtin::ShiftRight || b == Builtin::ShiftLeft; }

}  // namespace mtir
