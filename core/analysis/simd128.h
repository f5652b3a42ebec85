#pragma once
// What the wasm backend emits as SIMD128, decided in one place so the lowering
// (scalarize_vectors_simd128 keeps these stores) and the wasm emitter agree.

#include <vector>

#include "ir/stmt.h"

namespace mtir {

// A vector type of 128 bits with i8/i16/i32/i64/f32/f64 lanes.
bool simd128_lane_type(DataType t);
// Indices whose last one is a stride-1 Ramp of `lanes` lanes and the others scalars.
bool simd128_index(const std::vector<Expr>& indices, int lanes);
// A store of a 128-bit vector to a contiguous slice of a buffer of its lane type, whose
// value is built from contiguous loads, Broadcasts of scalars and add/sub/mul/min/max
// (and float div) where wasm has the lane shape's instruction.
bool simd128_store(const BufferStoreNode* op);

}  // namespace mtir
