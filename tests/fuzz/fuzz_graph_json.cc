// libFuzzer target: the JSON graph loader (with a weight file reader that serves the
// input's own bytes as any .npy it asks for), batch-norm folding and the AOT executor.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "analysis/well_formed.h"
#include "executor/aot.h"
#include "frontend/graph.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  // The first half is the graph, the second half the bytes of every weight file.
  const std::string graph = text.substr(0, size / 2), weights = text.substr(size / 2);
  mtir::FileReader reader = [&](const std::string&) { return weights; };
  try {
    mtir::Graph g = mtir::fold_batch_norm(mtir::load_graph_json(graph, "fuzz.json", reader));
    mtir::AotModule aot = mtir::build_aot(g);
    if (!mtir::check_well_formed(aot.module).empty()) std::abort();  // the executor made invalid TIR
  } catch (const mtir::DiagnosticError& e) {
    if (e.internal()) std::abort();
  }
  return 0;
}
