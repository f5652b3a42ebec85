// libFuzzer target: the TFLite loader (flatbuffers Verifier, then the conversion to a
// Graph), then what `microtir compile` does with a model that loads: batch-norm folding,
// the int8 kernels' compile-time half, the AOT executor, the well-formedness check and
// the C artifact (build_mlf with the default target). Any input must end in an artifact
// or a user error; a crash, a sanitizer report or an internal error is a bug.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "artifact/mlf.h"
#include "frontend/tflite/tflite.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  try {
    mtir::LoadedModel model = mtir::prepare_model(mtir::load_tflite(bytes, "fuzz.tflite"));
    mtir::build_mlf(model, mtir::parse_target(mtir::kDefaultCompileTarget), mtir::MlfInputs{"fuzz.tflite", bytes, {}, {}});
    if (std::getenv("MICROTIR_FUZZ_VERBOSE")) std::fprintf(stderr, "compiled '%s'\n", model.graph.name.c_str());
  } catch (const mtir::DiagnosticError& e) {
    if (e.internal()) std::abort();
    if (std::getenv("MICROTIR_FUZZ_VERBOSE")) std::fprintf(stderr, "refused: %s\n", e.what());
  }
  return 0;
}
