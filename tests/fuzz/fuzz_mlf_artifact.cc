// libFuzzer target: reading a compiled artifact as `microtir run model.tar` does. The
// bytes are the archive: it is unpacked (sim/artifact_files.h) into a scratch folder,
// its metadata.json and folders read (read_artifact_info), and its JSON graph loaded
// with the weights it names. Any input must end in a parsed artifact or a user error.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "artifact/mlf.h"
#include "sim/artifact_files.h"
#include "sim/process.h"

namespace {

namespace fs = std::filesystem;

// A scratch folder of this process (in memory where /dev/shm exists), removed at exit.
const fs::path& scratch() {
  static const fs::path dir = [] {
    fs::path base = fs::is_directory("/dev/shm") ? "/dev/shm" : fs::temp_directory_path();
    fs::path d = base / ("microtir-fuzz-mlf-" + std::to_string(getpid()));
    std::atexit([] {
      std::error_code ec;
      fs::remove_all(scratch(), ec);
    });
    return d;
  }();
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string archive(reinterpret_cast<const char*>(data), size);
  const fs::path& dir = scratch();
  fs::remove_all(dir);
  fs::create_directories(dir);
  try {
    const std::string root = mtir::sim::unpack_artifact(archive, "fuzz.tar", dir.string());
    mtir::sim::ArtifactInfo info = mtir::sim::read_artifact_info(root);
    if (info.graph_file.size() > 5 && info.graph_file.compare(info.graph_file.size() - 5, 5, ".json") == 0) {
      mtir::load_model(mtir::sim::read_text(info.graph_file), info.graph_file,
                       mtir::sim::artifact_graph_reader(info, "fuzz.tar"));
    }
    if (std::getenv("MICROTIR_FUZZ_VERBOSE")) std::fprintf(stderr, "artifact '%s' read\n", info.model_name.c_str());
  } catch (const mtir::DiagnosticError& e) {
    if (e.internal()) std::abort();
    if (std::getenv("MICROTIR_FUZZ_VERBOSE")) std::fprintf(stderr, "refused: %s\n", e.what());
  }
  return 0;
}
