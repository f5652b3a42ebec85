#include "cli/onnx_model.h"

#include "cli/io.h"
#include "support/diagnostic.h"
#ifdef MICROTIR_HAVE_ONNX
#include "frontend/onnx.h"
#endif

namespace mtir::cli {

bool is_onnx_file(const std::string& path) {
  return path.size() > 5 && path.compare(path.size() - 5, 5, ".onnx") == 0;
}

Graph load_onnx_file(const std::string& path) {
#ifdef MICROTIR_HAVE_ONNX
  return load_onnx(read_file(path), path);
#else
  user_error({}, "'" + path + "': this microtir was built without the ONNX frontend (MICROTIR_ONNX=OFF; it needs "
                 "libonnx-dev and libprotobuf-dev)");
#endif
}

}  // namespace mtir::cli
