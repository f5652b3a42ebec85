// The C ABI of the wasm build: JSON in, JSON out. Nothing escapes it: failures are
// diagnostics in the response (compile_request.h).
#include <cstdlib>
#include <cstring>
#include <new>

#include "compile_request.h"
#include "infer_request.h"

extern "C" {

// Compiles the request (wasm/README.md) and returns the response as a NUL-terminated
// string owned by the caller, to be released with mtir_free; NULL only when even the
// response cannot be allocated.
char* mtir_compile(const char* request_json) {
  try {
    std::string out = mtir::wasm::compile_request_text(request_json ? request_json : "");
    char* p = static_cast<char*>(std::malloc(out.size() + 1));
    if (!p) return nullptr;
    std::memcpy(p, out.data(), out.size() + 1);
    return p;
  } catch (...) {
    return nullptr;
  }
}

// One op's output type (infer_request.h), for the page's ONNX converter; the same
// ownership as mtir_compile.
char* mtir_infer(const char* request_json) {
  try {
    std::string out = mtir::wasm::infer_request_text(request_json ? request_json : "");
    char* p = static_cast<char*>(std::malloc(out.size() + 1));
    if (!p) return nullptr;
    std::memcpy(p, out.data(), out.size() + 1);
    return p;
  } catch (...) {
    return nullptr;
  }
}

void mtir_free(char* p) { std::free(p); }

const char* mtir_version(void) { return MICROTIR_VERSION; }

}  // extern "C"
