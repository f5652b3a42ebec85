// Diagnostics: the one error type of microtir.
//
// A user error carries a span (file, line, column) and renders like a C compiler's
// message: "file:line:col: error: message", the source line, then a caret. Internal
// errors (MTIR_ICHECK) are diagnostics too, never aborts, because the core also runs
// as WebAssembly where an abort would take the page down.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace mtir {

// One source text, shared by every span that points into it.
struct SourceFile {
  std::string name;
  std::string text;
  // The text of 1-based line `line`, without its newline; empty if out of range.
  std::string line_text(int line) const;
};

struct Span {
  std::shared_ptr<const SourceFile> file;
  int line = 0;  // 1-based; 0 means "no location"
  int col = 0;   // 1-based
  bool defined() const { return line > 0; }
  // "file:line:col", or "<unknown>" without a location.
  std::string str() const;
};

enum class Severity { kError, kWarning, kNote, kInternal };

struct Diagnostic {
  Severity severity = Severity::kError;
  Span span;
  std::string message;
  std::vector<std::string> notes;
  // The full rendering: location, severity, message, source line with caret, notes.
  std::string render() const;
};

const char* severity_name(Severity s);

// Thrown inside the library; every public entry point catches it and returns the
// diagnostics instead, so no exception escapes the API.
class DiagnosticError : public std::runtime_error {
 public:
  explicit DiagnosticError(Diagnostic d);
  explicit DiagnosticError(std::vector<Diagnostic> ds);
  const std::vector<Diagnostic>& diagnostics() const { return diags_; }
  bool internal() const;

 private:
  std::vector<Diagnostic> diags_;
};

// A user error at `span`.
[[noreturn]] void user_error(const Span& span, const std::string& message,
                             std::vector<std::string> notes = {});
// A broken invariant of the compiler itself.
[[noreturn]] void internal_error(const char* file, int line, const std::string& message);

// Render a list of diagnostics, one after another.
std::string render_all(const std::vector<Diagnostic>& diags);

}  // namespace mtir

#define MTIR_ICHECK(cond, msg)                                              \
  do {                                                                      \
    if (!(cond)) ::mtir::internal_error(__FILE__, __LINE__,                 \
                                        std::string("check failed: " #cond ": ") + (msg)); \
  } while (0)
