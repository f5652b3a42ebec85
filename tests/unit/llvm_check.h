// Checks generated LLVM IR with real LLVM: in process through the native helpers when
// the build has them (MICROTIR_LLVM), else with Debian's llc-14 (which verifies its
// input before code generation); without either the caller skips, saying why.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

#include "sim/process.h"
#include "support/diagnostic.h"
#ifdef MICROTIR_HAVE_LLVM_NATIVE
#include "codegen/llvm/native/llvm_native.h"
#endif

namespace mtir::llvm_check {

inline bool have_llc() { return std::system("llc-14 --version > /dev/null 2>&1") == 0; }

// Whether IR can be checked here; `why` says what is missing when not.
inline bool available(std::string* why) {
#ifdef MICROTIR_HAVE_LLVM_NATIVE
  (void)why;
  return true;
#else
  if (have_llc()) return true;
  *why = "MICROTIR_LLVM is OFF and llc-14 is not installed (apt-get install llvm-14)";
  return false;
#endif
}

// `ir` verifies and compiles to an object for `triple`, at -O2.
inline void expect_compiles(const std::string& ir, const std::string& triple, const std::string& what) {
#ifdef MICROTIR_HAVE_LLVM_NATIVE
  try {
    llvm_native::Options options;
    options.triple = triple;
    std::string object = llvm_native::compile_to_object(ir, what, options);
    EXPECT_GT(object.size(), 0u) << what;
  } catch (const DiagnosticError& e) {
    ADD_FAILURE() << what << " for " << triple << ": " << e.diagnostics().at(0).message;
  }
#else
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("microtir-llc-" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "in.ll") << ir;
  int rc = sim::run_process({"llc-14", "-O2", "-filetype=obj", "-mtriple=" + triple, (dir / "in.ll").string(), "-o",
                             (dir / "out.o").string()},
                            dir / "llc.log");
  EXPECT_EQ(rc, 0) << what << " for " << triple << ":\n" << sim::read_text(dir / "llc.log");
  EXPECT_GT(fs::exists(dir / "out.o") ? fs::file_size(dir / "out.o") : 0, 0u) << what;
  fs::remove_all(dir);
#endif
}

}  // namespace mtir::llvm_check

// Skips the current test when no LLVM is at hand, naming what is missing.
#define MICROTIR_REQUIRE_LLVM_CHECKER()                          \
  do {                                                           \
    std::string mtir_why_;                                       \
    if (!::mtir::llvm_check::available(&mtir_why_)) GTEST_SKIP() << mtir_why_; \
  } while (0)
