// The C interface of an AOT model (-interface-api=c): `tvmgen_<model>.h` with the
// inputs and outputs structs, a size macro for every tensor and for the workspace, and
// `tvmgen_<model>_run`; plus its source, which holds the weights as const arrays.
#pragma once

#include <string>
#include <vector>

#include "driver/build.h"
#include "executor/aot.h"

namespace mtir {

// The workspace bytes an application must give TVMCrtWorkspaceInit for this artifact.
int64_t artifact_workspace_bytes(const IRModule& lowered, const std::string& main_kernel);

struct InterfaceOptions {
  std::string interface_api = "c";  // c: structs and run(); packed: a header for TVMFuncCall
  bool link_params = true;          // weights as const arrays in the artifact, or passed in
};

// The registry's entry of a model compiled with -interface-api=packed -link-params=1:
// "tvmgen_<c_model>_run", which takes the inputs and outputs and adds the weights.
std::string packed_linked_entry(const std::string& c_model);

// `lowered` is the module build_c produced for `aot`: unpacked API for the C interface,
// packed for the packed one (which gets a header only: main is in the registry).
// The elements of `a` as the body of a C initialiser (the linked weights, the state's
// initial values): six a line, each line indented by four, commas between, each as its
// linked C type spells it exactly (float32 %.9g with an f, int64 and unsigned with the
// stdint macros).
std::string c_literal_list(const NDArray& a);

// The file `main_reading_linked_weights` has main's source include: tvmgen_<model>_weights.inc.
std::string linked_weights_file(const Graph& g);

// `m` with its AOT main marked to read the weights itself (kLinkedParamsAttr) when
// `target` links them under the unpacked C interface: c_interface then writes them as
// static arrays into linked_weights_file(g), which main's source includes, and run()
// passes no pointer for them. `m` unchanged for any other target.
IRModule main_reading_linked_weights(const IRModule& m, const AotModule& aot, const Graph& g, const Target& target);

// Throws a user error for combinations that cannot work (packed with devices).
std::vector<SourceFileOut> c_interface(const AotModule& aot, const Graph& g, const IRModule& lowered,
                                       const InterfaceOptions& options = {});

}  // namespace mtir
