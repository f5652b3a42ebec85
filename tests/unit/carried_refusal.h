// What the TVMScript tests share about carried forms: a form microtir reads and prints
// but does not run is refused by every backend and the interpreter, at its location.
#pragma once

#include <gtest/gtest.h>

#include "driver/build.h"
#include "interp/interpreter.h"
#include "program_corpus.h"
#include "script/parser.h"
#include "support/source_dir.h"

namespace mtir {
namespace testing_corpus {

// A type microtir carries but does not run: every backend and the interpreter refuse
// `m` with `message` (then "but <who> cannot run it") at line:col.
inline void expect_refused_everywhere(const IRModule& m, const std::string& func, std::vector<InterpArg> args,
                               const std::string& message, int line, int col) {
  auto expect_refusal = [&](const DiagnosticError& e, const std::string& who) {
    const Diagnostic& d = e.diagnostics().at(0);
    EXPECT_NE(d.message.find(message), std::string::npos) << d.message;
    EXPECT_NE(d.message.find("but " + who + " cannot run it"), std::string::npos) << d.message;
    EXPECT_EQ(d.span.line, line) << d.message;
    EXPECT_EQ(d.span.col, col) << d.message;
  };
  for (const char* target : {"c -unpacked-api=0", "llvm -unpacked-api=1", "wasm"}) {
    SCOPED_TRACE(target);
    try {
      build_for_target(m, parse_target(target));
      ADD_FAILURE() << "a carried type was compiled";
    } catch (const DiagnosticError& e) {
      expect_refusal(e, "the backends");
    }
  }
  try {
    interpret(m, func, args);
    ADD_FAILURE() << "a carried type was interpreted";
  } catch (const DiagnosticError& e) {
    expect_refusal(e, "the interpreter");
  }
}

inline IRModule parse_corpus_file(const std::string& stem) {
  return parse_module_or_throw(read(fs::path(mtir::source_dir()) / "tests/script/tvm" / (stem + ".tir")), stem + ".tir");
}

}  // namespace testing_corpus
}  // namespace mtir
