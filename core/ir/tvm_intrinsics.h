// TVM's intrinsics that are not microtir builtins (ir/tvm_intrinsics.def): the ones
// with a meaning here are expanded into builtins and arithmetic; the rest are carried
// through parsing and printing and refused where code would be made.
#pragma once

#include <string>
#include <unordered_set>

#include "ir/expr.h"
#include "ir/op.h"
#include "ir/stmt.h"

namespace mtir {

struct TvmIntrinsic {
  enum class Result { kI32, kBool, kHandle, kArg, kFirst, kLast };
  const char* name;
  Result result;
  size_t min_args;
  bool variadic;
  bool runs;  // Run: expand_tvm_intrinsic rewrites it; Carry: refused
  const char* what;
};

// nullptr for a name that is not in the table.
const TvmIntrinsic* lookup_tvm_intrinsic(const std::string& name);

// Whether the number of arguments fits; if not, `why` says "T.x takes ...".
bool tvm_intrinsic_arity_ok(const TvmIntrinsic& in, size_t num_args, std::string* why);

// A Run intrinsic's call as builtins and arithmetic with TVM's semantics (T.assume is
// true, T.isnullptr is tvm_handle_is_null, T.q_multiply_shift TVM's int64 rounding
// multiply). A Carry intrinsic, or a call of a name not in the table, is a user error at
// the call's location naming `where` ("the C backend", "the interpreter").
Expr expand_tvm_intrinsic(const CallNode* call, const std::string& where);

// `break` and `continue` are the statements T.evaluate(T.break_loop()) and
// T.evaluate(T.continue_loop()), run by the interpreter and every backend.
enum class LoopExit { kNone, kBreak, kContinue };
LoopExit loop_exit(const Stmt& s);

// Whether `body` breaks out of or continues the loop it is the body of (exits inside
// loops nested in it are theirs): a pass that copies, removes or hoists out of a loop
// leaves such a loop alone.
bool exits_loop(const Stmt& body);
// The allocations under `root` whose body exits_loop is true of, found in one walk
// (exits_loop of each body in turn is quadratic in the nesting of allocations, which an
// AOT main of thousands of calls has).
std::unordered_set<const AllocateNode*> allocations_left_by_loop_exit(const Stmt& root);

}  // namespace mtir
