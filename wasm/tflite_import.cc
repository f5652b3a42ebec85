// See tflite_import.h.
#include "tflite_import.h"

#include "frontend/tflite/tflite.h"
#include "support/diagnostic.h"

namespace mtir::wasm {

nlohmann::json import_tflite_request(const uint8_t* bytes, size_t size, const std::string& filename) {
  try {
    std::string data(reinterpret_cast<const char*>(bytes), bytes ? size : 0);
    return {{"ok", true}, {"graph", write_graph_json(load_tflite(data, filename))}};
  } catch (const DiagnosticError& e) {
    std::string m = e.diagnostics().empty() ? "invalid" : e.diagnostics()[0].message;
    return {{"ok", false}, {"message", m}, {"internal", e.internal()}};
  } catch (const std::exception& e) {
    return {{"ok", false}, {"message", std::string("internal error: ") + e.what()}, {"internal", true}};
  }
}

}  // namespace mtir::wasm
