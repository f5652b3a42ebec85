// Where the 3x2 tile (schedule pixel_triples) pays for what it costs besides
// instructions: stack (pixel_triples_stack) and code (pixel_triples_code).
// A convolution through the matrix-product core gathers its tile's pixels into an im2col
// scratch on the C stack: 2k bytes a pixel for a receptive field of k values (int16
// pairs). Three pixels need half as much again as two, and the deepest of these frames
// is the model's stack high-water mark, which counts in its RAM like the workspace does.
// The 3x2 tile is also a longer copy of the unrolled reduction than the 2x2 one. So a
// layer keeps the triple only where the instructions it saves pay for the bytes it adds
// to the stack's peak (VWW's last pointwise layer: 512 bytes for about 61,000
// instructions) and for its code (IC's 1x1 shortcut of k = 32: about 240 bytes for
// 13,600); elsewhere it runs in pairs.
#pragma once

#include <cstdint>
#include <set>
#include <string>

#include "frontend/graph.h"
#include "ops/schedules.h"

namespace mtir {

// What a byte is worth, in instructions per inference: one off the stack's peak (RAM),
// and one of code (flash, about four times as plentiful as RAM on Cortex-M4 parts).
constexpr int64_t kInstructionsPerStackByte = 256, kInstructionsPerCodeByte = 64;

// The qconv2d nodes of `g` that `opts` (per node) gives pixel_triples but whose triples
// do not pay for themselves: with pixel_triples_stack, those that raise the deepest
// im2col scratch of the model's convolutions by more bytes than they pay for (layers
// that share a scratch size are weighed together, from the largest size down, each
// against the next size that stays); with pixel_triples_code, those whose estimated
// extra code (triples_code_bytes) costs more than they save. A layer whose schedule
// record sets pixel_triples keeps that choice. Nothing under mve (the Helium core).
std::set<std::string> triples_over_budget(const Graph& g, const ScheduleOptions& opts);

// The instructions pixel_triples saves on `macs` multiply-accumulates. Per four reduction
// values of a channel pair (sxtb16), the 2x2 tile takes 15 instructions for 16 MACs (an
// LDRD of the two weight words, four SXTB16, two LDRD of gathered words, eight SMLAD)
// and the 3x2 tile 20 for 24 (one more LDRD, four more SMLAD): 5/48 of an instruction a
// MAC. With int16 weight pairs, per two values: 7 for 8 against 10 for 12, 2/48.
inline int64_t triples_saved_instructions(int64_t macs, bool sxtb16) { return macs * (sxtb16 ? 5 : 2) / 48; }

// The code the 3x2 tile adds to the 2x2 one, in bytes (32-bit DSP instructions): per
// unrolled reduction step the third pixel's load and its SMLADs (5 with sxtb16, 3 with
// int16 pairs), and 20 for the third pixel's bias loads, requantizations and stores.
inline int64_t triples_code_bytes(int64_t unrolled_steps, bool sxtb16) {
  return 4 * ((sxtb16 ? 5 : 3) * unrolled_steps + 20);
}

}  // namespace mtir
