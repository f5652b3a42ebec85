// Factories of every pass. One pass per file in this folder, named as the factory in
// snake_case (simplify.cc -> Simplify()).
#pragma once

#include <vector>

#include "ir/stmt.h"
#include "transform/pass.h"

namespace mtir {

// Checks the module (see analysis/well_formed.h) and returns it unchanged, or throws
// the diagnostics.
Pass VerifyWellFormed();
// Buffers of vector type become scalar buffers with a dimension of lanes.
Pass ExpandVectorBuffers();
// TVM's intrinsics that are not builtins (ir/tvm_intrinsics.def): the runnable ones
// become builtins and arithmetic, the carried ones are refused with their location.
Pass LowerTvmIntrinsics();
// T.allocate_const (a constant buffer, its data inline) becomes an allocation at the top of
// the function and stores of its values where it stood, so the backends run it as T.allocate.
Pass LowerAllocateConst();
// Constant folding, algebraic identities, dead branches with constant conditions; the
// digits of a flattened index merge back (x / a % b * a + x % a is x % (a * b)), and a
// division or remainder by c of an x the enclosing loops keep in [0, c) folds.
Pass Simplify();
// Global allocations at the top of a function share one planned workspace pool or a model output before its result
// (aot.output_params; inputs after their last read with -reuse-io-buffers=1, and an input of the output's first
// write that dies there when that call reads it wholly before it writes); a plain view on one moves with it, and
// a call offering its output to an input it reads elementwise (tir.may_overwrite) may write over that input when the
// input dies there. In an operator kernel, an allocation of at most 64 bytes becomes a local (stack) one.
Pass PlanMemory();
// Multi-dimensional buffer accesses become 1-D accesses of flat views.
Pass FlattenBuffer();
// Pure, trap-free integer expressions that do not change inside a loop (address
// arithmetic, padding bound checks) are computed once in a let before the loop; add/sub
// chains are regrouped so their invariant terms form one subexpression.
Pass HoistLoopInvariants();
// The packed calling convention, with every argument check.
Pass MakePackedAPI();
// The unpacked calling convention: buffer parameters become data pointers.
Pass MakeUnpackedAPI();
// call_tir becomes a direct call of the callee's kernel with data pointers; its return
// code is checked unless the kernel cannot fail.
Pass LowerCallTIR();
// Vector code becomes one scalar statement per lane and Let expressions are inlined,
// for backends without vector types (C99; wasm runs ScalarizeVectorsSimd128), except the
// Helium vectors the C backend keeps: T.vmladava over contiguous loads, int32x4 stores
// and int32x4 lets of analysis/helium_vectors.h's grammar (Q registers under arm_mve.h).
Pass ScalarizeVectors();
// ScalarizeVectors for the wasm backend: stores that fit SIMD128 (simd128_store) stay
// vectors, the rest is scalarized.
Pass ScalarizeVectorsSimd128();

// Loops marked T.unroll with small constant bounds become straight-line copies.
Pass UnrollLoops();
// Packed calls (T.tvm_call_packed) become explicit stack arrays, stores and the call.
Pass LowerBuiltins();
// Kernels that differ only in integer constants become one function taking them as
// int32 parameters; each call passes its own (unpacked calls, after lower_call_tir). A
// constant found only in flat views' shapes needs no parameter: the views take the largest;
// one that is 2..1024 times another's in every kernel reads that parameter times the factor.
Pass MergeKernels();

}  // namespace mtir
