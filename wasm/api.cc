// The C ABI of the wasm build: JSON in, JSON out. Nothing escapes it: failures are
// diagnostics in the response (compile_request.h).
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "compile_request.h"
#include "onnx_import.h"
#include "tflite_import.h"

namespace {

// Runs `handle` on the request and returns its response as a malloc'ed NUL-terminated
// string; NULL only when even that cannot be allocated (or anything escapes).
template <typename Handler>
char* respond(const char* request_json, Handler handle) {
  try {
    std::string out = handle(std::string(request_json ? request_json : ""));
    char* p = static_cast<char*>(std::malloc(out.size() + 1));
    if (!p) return nullptr;
    std::memcpy(p, out.data(), out.size() + 1);
    return p;
  } catch (...) {
    return nullptr;
  }
}

}  // namespace

extern "C" {

// Compiles the request (wasm/README.md) and returns the response as a NUL-terminated
// string owned by the caller, to be released with mtir_free; NULL only when even the
// response cannot be allocated.
char* mtir_compile(const char* request_json) { return respond(request_json, mtir::wasm::compile_request_text); }

// The pass IR texts and the archive the last compile deferred (compile_request.h); the
// same ownership as mtir_compile.
char* mtir_compile_details(const char* request_json) {
  return respond(request_json, mtir::wasm::compile_details_text);
}

// A .tflite file's bytes as the JSON graph the native frontend reads from it
// (tflite_import.h): {"ok": true, "graph": TEXT} or {"ok": false, "message", "internal"};
// the same ownership as mtir_compile. `filename` names the file in messages.
char* mtir_import_tflite(const unsigned char* bytes, size_t size, const char* filename) {
  std::string name = filename ? filename : "model.tflite";
  return respond("", [&](const std::string&) { return mtir::wasm::import_tflite_request(bytes, size, name).dump(); });
}

// An .onnx model the page decoded (the JSON of onnx_import.h) as the JSON graph
// `microtir import` writes: {"ok": true, "graph": TEXT, "notes"} or {"ok": false,
// "message", "internal"}; the same ownership as mtir_compile. `filename` names the
// model in messages.
char* mtir_import_onnx(const char* model_json, const char* filename) {
  std::string name = filename ? filename : "model.onnx";
  return respond(model_json,
                 [&](const std::string& text) { return mtir::wasm::import_onnx_request(text, name).dump(); });
}

void mtir_free(char* p) { std::free(p); }

const char* mtir_version(void) { return MICROTIR_VERSION; }

}  // extern "C"
