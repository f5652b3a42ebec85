#include "cli/onnx_model.h"

#include <iostream>

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

int run_import(const ImportCommand& c) {
  if (!is_onnx_file(c.file))
    user_error({}, "'" + c.file + "': import reads an ONNX model (a file ending in .onnx)");
  std::string text = write_graph_json(load_onnx_file(c.file));
  if (c.output.empty() || c.output == "-") {
    std::cout << text;
    return 0;
  }
  OutputSet out;
  out.add(c.output, text);
  out.commit();
  std::cout << "wrote " << c.output << "\n";
  return 0;
}

}  // namespace mtir::cli
