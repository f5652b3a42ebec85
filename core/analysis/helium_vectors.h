// The int32x4 vector stores the C backend emits for Helium (Armv8.1-M's MVE, Cortex-M55)
// instead of scalarizing them: 4 lanes of int32, one 128-bit register. scalarize_vectors
// keeps a store exactly when helium_store accepts it; codegen/c/helium_vectors.cc emits
// it with the mtir_v4 helpers (arm_mve.h where the compiler has MVE, four-lane loops
// elsewhere). The grammar of an int32x4 value:
//   A[Ramp(i, s, 4)]            int32 load, contiguous (s = 1, VLDRW) or strided (a
//                               constant s > 1, a gather)
//   A[Shuffle(Ramp, Ramp)]      int32 gather of lanes at constant offsets from lane 0
//                               (helium_lane_offsets; a 2x2 tile's table columns)
//   Shuffle(a, b, c, d)         four scalar int32 loads, one a lane (VMOV: a tile's sums)
//   int32x4(B[Ramp(i, 1, 4)])   an int8 or int16 contiguous load widened (VLDRB.S32, VLDRH.S32),
//                               or an int8 one at constant offsets (a VLDRB.S32 gather)
//   int32x4(int8x4(a))          the low byte of each lane, sign-extended
//   int32x4(T.shift_left(uint32x4(a), c))   a wrapping left shift by a constant (VSHL)
//   Broadcast(x, 4)             a scalar int32 (VDUP)
//   a + b, a - b, a * b, min(a, b), max(a, b)            (wrapping, as TIR's int32)
//   T.multiply_by_quantized_multiplier(x, m, s)           (VQRDMULH and VRSHL)
//   T.shift_right(a, b)                                   (VSHL by -b)
//   v                           an int32x4 variable of a kept let (below)
// and a kept store is A[Ramp(i, 1, 4)] = value into int32, or = int8x4(value) into int8
// (VSTRB.32, the low byte of each lane; a scatter where the lanes lie at constant offsets,
// helium_lane_offsets), A one-dimensional. Besides, 16 bytes copied or
// filled: A[Ramp(i, 1, 16)] = B[Ramp(j, 1, 16)] or = Broadcast(x, 16), int8 (VLDRB.8,
// VSTRB.8, VDUP.8; the mve convolutions' im2col columns).
// A LetStmt of an int32x4 variable whose value is of the grammar is kept too (a Q register
// in C: `mtir_v4 v = ...;`) when every use of the variable lies in kept stores and kept
// lets (helium_lets decides which), so a kernel can share a loaded vector or carry a sum
// across statements without a round trip through memory.
#pragma once

#include <unordered_set>

#include "ir/expr.h"
#include "ir/stmt.h"

namespace mtir {

constexpr int kHeliumLanes = 4, kHeliumBytes = 16;

using HeliumVars = std::unordered_set<const VarNode*>;

// Whether `e` is an int32x4 value of the grammar above; an int32x4 variable counts when
// it is in `vars` (every int32x4 variable when `vars` is null: after scalarize_vectors,
// the only ones left are kept lets').
bool helium_vector(const Expr& e, const HeliumVars* vars = nullptr);
// Whether the C backend keeps `store` as one Helium vector store.
bool helium_store(const BufferStoreNode* store, const HeliumVars* vars = nullptr);
// The int32x4 variables of `body`'s LetStmts that stay vectors: each bound to a value of
// the grammar and used only in kept stores and in the values of other kept lets.
HeliumVars helium_lets(const Stmt& body);
// Whether `store` is a kept 16-byte copy or fill (the value a load or a Broadcast).
bool helium_byte_store(const BufferStoreNode* store);
// The int8 or int16 contiguous load (or int8 gather) that `e` widens to int32x4, or null.
const BufferLoadNode* helium_widened_load(const Expr& e);
// The T.shift_left of int32x4(T.shift_left(uint32x4(a), c)) with its constant c, or null.
const CallNode* helium_shift_left(const Expr& e, int64_t* amount);
// The int32x4 value `a` of int32x4(int8x4(a)), or null.
const Expr* helium_narrowed_value(const Expr& e);
// Lane `k` of a Ramp with a constant stride, or of a Shuffle of them: its base and the
// constant added to it; false for any other vector.
bool helium_ramp_lane(const Expr& index, int k, Expr* base, int64_t* offset);
// Whether the four lanes of `index` (a Ramp with a constant stride, or a Shuffle of such
// Ramps) lie at constant offsets, none negative, from lane 0: lane k is lane 0 plus
// offsets[k] (Shuffle(Ramp(i, 1, 2), Ramp(i + 64, 1, 2)): 0, 1, 64, 65).
bool helium_lane_offsets(const Expr& index, int64_t offsets[kHeliumLanes]);
// Whether `store` is a kept int8x4 store whose lanes lie at constant offsets that are not
// contiguous (VSTRB.32 scatter), and those offsets.
bool helium_scatter_store(const BufferStoreNode* store, int64_t offsets[kHeliumLanes]);
// The constant stride of a one-dimensional vector load A[Ramp(i, s, n)], or 0.
int64_t helium_load_stride(const Expr& e);

}  // namespace mtir
