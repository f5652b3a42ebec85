#pragma once
// What the three code generators (C, LLVM IR, wasm text) share about calls, functions,
// names and attributes: refusing a builtin, the name a user knows a function by, boolean
// function attributes, the statement a call stands as, and names unique in a function. Each backend still has its
// own `switch (Builtin)` with a case for every row of ir/builtins.def; this header only
// holds what those cases and the statement walkers would otherwise repeat.

#include <map>
#include <set>
#include <string>

#include "ir/function.h"
#include "ir/stmt.h"

namespace mtir {

// A builtin `backend` ("C", "LLVM", "wasm") does not emit: the message names the builtin
// and the backend, and the pass that should have removed it when there is one
// (builtins.def's lowered_by), else `why`.
[[noreturn]] void refuse_builtin(const CallNode* call, const char* backend, const std::string& why);

// A vector expression (Ramp, Broadcast, Shuffle) or Let in a backend that emits scalar
// code (`what`: "scalar C99"): the message names the pass that scalarizes it.
[[noreturn]] void refuse_unscalarized(const Expr& e, const char* backend, const char* what);

// T.allocate_const or T.realize reaching `backend`: lower_allocate_const and
// refuse_carried_types remove them before code generation, so an internal error.
[[noreturn]] void unlowered_statement(const Stmt& s, const char* backend);

// A builtin that returns from the function (tvm_return, tvm_throw_last_error) found
// inside an expression: it can only be a statement of its own, which the verifier
// checks; a backend reaching one reports it at the call.
[[noreturn]] void refuse_statement_builtin(const CallNode* call, const char* backend);

// Whether function attribute `key` is the boolean true (tir.noalias, tir.internal).
bool attr_flag(const PrimFunc& f, const char* key);

// Whether parameter `index` may be declared distinct from every other (restrict in C,
// noalias in LLVM): tir.noalias, and `index` is not one of the parameters the memory
// planner made share bytes (kAliasedParamsAttr). `index` < 0 asks for all of them at
// once (a pointer that is not a parameter by position, as MakePackedAPI binds them).
bool noalias_param(const PrimFunc& f, int index);

// The weight parameters an AOT main reads from linked arrays instead (kLinkedParamsAttr):
// position -> the array's symbol (kConstantSymbolsAttr); empty unless linked.
std::map<size_t, std::string> linked_params(const PrimFunc& f);
// The file main's source includes for those arrays (kLinkedParamsAttr); "" unless linked.
std::string linked_params_file(const PrimFunc& f);

// The function's name as the user knows it: a packed function's kernel reports errors
// under the packed function's name (tir.kernel_of), any other under its symbol.
std::string user_function_name(const PrimFunc& f, const std::string& symbol);

// The call an Evaluate statement evaluates when it is one of the builtins that stand
// as statements (tvm_return, tvm_throw_last_error), else nullptr.
const CallNode* statement_builtin(const EvaluateNode* op);

// Whether evaluating `op` computes nothing (a constant): backends emit no code for it.
inline bool evaluates_constant(const EvaluateNode* op) {
  return op->value->kind == ExprKind::IntImm || op->value->kind == ExprKind::FloatImm;
}

// n when `op` is min(max(x, -2^(n-1)), 2^(n-1) - 1) or max(min(x, 2^(n-1) - 1), -2^(n-1))
// on int32, for n in [2, 31]; else 0. Backends emit it as one SSAT where the CPU has it.
int signed_clamp_bits(const BinaryNode* op);

// The first of `args` when they load elements i, i + 1, ..., i + n - 1 of one buffer, n
// the number of arguments (scalar unpredicated loads of one type, one index each, the
// indices one expression plus constants or all constants): one read of n elements in
// memory, as pack_bytes' four int8 arguments and word_pair's two int32 ones can be. Else
// nullptr.
const BufferLoadNode* consecutive_elements(const std::vector<Expr>& args);

// A name from any hint: characters outside [A-Za-z0-9_] (and '.', when `keep_dots`)
// become '_'.
std::string sanitized_name(const std::string& hint, bool keep_dots);

// `base`, or base<sep>1, base<sep>2, ... the first not in `used`, which records it.
std::string unique_name(const std::string& base, char sep, std::set<std::string>* used);
// The same name, the search starting at the suffix `next` keeps for `base` (`used` only
// grows, so no earlier suffix is free): constant time for the thousands of temporaries of
// one hint an emitter makes in a large function (quadratic otherwise).
std::string unique_name(const std::string& base, char sep, std::set<std::string>* used, std::map<std::string, int>* next);

}  // namespace mtir
