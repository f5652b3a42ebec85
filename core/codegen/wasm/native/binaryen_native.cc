#include "codegen/wasm/native/binaryen_native.h"

#include <binaryen-c.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <optional>
#include <regex>

#include "support/timing.h"
#include "support/diagnostic.h"

namespace mtir::binaryen_native {
namespace {

// Binaryen's validator prints to stderr; capture it for the error message.
class StderrCapture {
 public:
  StderrCapture() {
    std::fflush(stderr);
    file_ = std::tmpfile();
    saved_ = dup(2);
    if (file_ && saved_ >= 0) dup2(fileno(file_), 2);
  }
  std::string finish() {
    std::fflush(stderr);
    if (saved_ >= 0) dup2(saved_, 2), close(saved_), saved_ = -1;
    std::string out;
    if (file_) {
      std::rewind(file_);
      char buf[4096];
      for (size_t n; (n = std::fread(buf, 1, sizeof buf, file_)) > 0;) out.append(buf, n);
      std::fclose(file_), file_ = nullptr;
    }
    return out;
  }
  ~StderrCapture() { finish(); }

 private:
  std::FILE* file_ = nullptr;
  int saved_ = -1;
};

}  // namespace

Assembled assemble(const std::string& wat, const std::string& opt, const std::string& what) {
  // Binaryen's optimize level is process-wide state.
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  std::optional<TimingScope> timing(std::in_place, "backend", "binaryen: parse");
  std::unique_ptr<std::remove_pointer_t<BinaryenModuleRef>, void (*)(BinaryenModuleRef)> module(
      BinaryenModuleParse(wat.c_str()), BinaryenModuleDispose);
  timing.emplace("backend", "binaryen: validate");
  // SIMD128: vector stores that fit 128 bits are v128 code (scalarize_vectors_simd128).
  BinaryenModuleSetFeatures(module.get(), BinaryenFeatureMVP() | BinaryenFeatureSignExt() |
                                              BinaryenFeatureNontrappingFPToInt() | BinaryenFeatureMutableGlobals() |
                                              BinaryenFeatureSIMD128());
  StderrCapture capture;
  bool valid = BinaryenModuleValidate(module.get());
  std::string log = capture.finish();
  if (!valid) {
    std::smatch m;
    std::string function = std::regex_search(log, m, std::regex("error in function \\$?([^\\] ]+)")) ? m[1].str() : "?";
    internal_error(__FILE__, __LINE__,
                   "Binaryen's validator rejects the wasm module of " + what + " in function " + function + ":\n" +
                       log.substr(0, 2000));
  }
  const int level = opt == "O0" ? 0 : opt == "O1" ? 1 : opt == "O3" ? 3 : 2;
  const int shrink = opt == "Os" ? 1 : opt == "Oz" ? 2 : 0;
  if (level > 0 || shrink > 0) {
    BinaryenSetOptimizeLevel(level);
    BinaryenSetShrinkLevel(shrink);
    // Binaryen inlines every function with one caller, whatever its size, so each kernel
    // (called once, from main) ends up in one giant `run`. V8 compiles that with its
    // optimizing tier only after many calls, in the background, and runs the baseline
    // code meanwhile (KWS: 10x slower for the first hundreds of inferences). Kernels stay
    // functions; small helpers still inline.
    BinaryenSetOneCallerInlineMaxSize(kOneCallerInlineMaxSize);
    timing.emplace("backend", "binaryen: optimize (-" + opt + ")");
    BinaryenModuleOptimize(module.get());
  }
  Assembled out;
  timing.emplace("backend", "binaryen: write the binary");
  BinaryenModuleAllocateAndWriteResult r = BinaryenModuleAllocateAndWrite(module.get(), nullptr);
  out.binary.assign(static_cast<const char*>(r.binary), r.binaryBytes);
  std::free(r.binary);
  std::free(r.sourceMap);
  timing.emplace("backend", "binaryen: print the optimized text");
  char* text = BinaryenModuleAllocateAndWriteText(module.get());
  out.text = text;
  std::free(text);
  return out;
}

}  // namespace mtir::binaryen_native
