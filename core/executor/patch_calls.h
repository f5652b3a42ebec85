// The calls of a patch stage in the AOT main (executor/patch_stages.h), band by band and
// layer by layer. A layer reads its band of the stage's input or the previous layer's band
// buffer and writes its own band buffer or its rows of the stage's output. Each distinct
// band geometry of a layer is one kernel, the op's own on the band's shapes and padding.
// With patch_edge_rows a later layer's padding rows in a band are zero-point rows of the
// band buffer it reads when a band without padding reads as many rows: it runs that
// band's kernel. A carried layer has one buffer for the whole stage: before each band a copy kernel
// moves the rows the band keeps to its top, and the layer writes its new rows below them.
// A residual stage's last layer is the convolution with its add fused
// (executor/fuse_elementwise.h) on the band's rows, reading the band's rows of the add's
// other operand; the call offers to write over them (kMayOverwriteAttr), which
// plan_memory proves from the calls' rows (analysis/call_overlap.h).
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "executor/aot.h"
#include "executor/patch_stages.h"

namespace mtir {

struct StageCallContext {
  const Graph& g;
  const std::string& prefix;  // "tvmgen_<model>_"
  std::function<Buffer(const std::string&)> buffer_of;
  std::set<std::string>& taken;          // function names in use
  AotModule& aot;                        // the module the kernels join
  std::vector<Buffer>& intermediates;    // main's allocations (band buffers join them)
  const std::map<std::string, std::string>& ids;  // node name -> C identifier
  bool edge_rows = true;  // patch_edge_rows: edge_row_bands, and zero-point padding rows
  bool band_loops = true;  // band_loops: interior bands as one loop (band_loops.h)
};

// The stage's calls; `result` is the stage's output (the add's, for a residual stage).
std::vector<Stmt> patch_stage_calls(const StageCallContext& cx, const PatchStage& stage, const Buffer& result);

}  // namespace mtir
