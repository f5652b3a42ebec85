// The interior bands of a patch stage as one loop in the AOT main (executor/patch_calls.h).
//
// Every band of a stage is a few calls with constant regions. Interior bands call the
// same kernels on rows that move by the same count from one band to the next: unrolled,
// each is a call with its own constant pointers (VWW: about 200 calls, 3.9 KB of
// flash). A run of such bands becomes one serial loop whose region starts are affine in
// the loop variable, in every backend alike. The analyses that prove things about the
// main's calls (analysis/call_loops.h: plan_memory's live ranges and overlaps,
// call_tir_check's bounds and aliasing) read a loop of calls as the calls it makes.
#pragma once

#include <vector>

#include "ir/stmt.h"

namespace mtir {

// One band's calls (Evaluate(call_tir)), in order, and the band buffers made for this
// band alone (the padded input of a later layer of a stage that does not carry).
struct BandCalls {
  std::vector<Stmt> calls;
  std::vector<Buffer> own;
};

// A loop's bands at least: fewer and the loop's own instructions and code outweigh the
// calls it saves.
constexpr size_t kMinLoopBands = 3;

// The bands' calls in order, each run of at least kMinLoopBands consecutive bands that
// call the same kernels with the same arguments but for region starts that move by the
// same constants from band to band as one loop over them. A band's own buffers match the
// first band's of its run by position, shape and type, and the loop uses the first
// band's. `intermediates` gets every band buffer still used.
std::vector<Stmt> roll_band_calls(const std::vector<BandCalls>& bands, std::vector<Buffer>& intermediates);

}  // namespace mtir
