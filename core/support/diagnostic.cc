#include "support/diagnostic.h"
#include "support/source_offset.h"

#include <algorithm>
#include <sstream>

namespace mtir {

Span span_at_offset(const std::shared_ptr<const SourceFile>& file, size_t offset) {
  Span s;
  s.file = file;
  s.line = 1;
  s.col = 1;
  const std::string& t = file->text;
  for (size_t i = 0; i < offset && i < t.size(); ++i) {
    if (t[i] == '\n') {
      ++s.line;
      s.col = 1;
    } else {
      ++s.col;
    }
  }
  return s;
}

std::string SourceFile::line_text(int line) const {
  if (line <= 0) return "";
  size_t pos = 0;
  for (int l = 1; l < line; ++l) {
    pos = text.find('\n', pos);
    if (pos == std::string::npos) return "";
    ++pos;
  }
  size_t end = text.find('\n', pos);
  std::string s = text.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
  if (!s.empty() && s.back() == '\r') s.pop_back();
  return s;
}

std::string Span::str() const {
  if (!defined()) return "<unknown>";
  std::ostringstream os;
  os << (file ? file->name : std::string("<input>")) << ":" << line << ":" << col;
  return os.str();
}

const char* severity_name(Severity s) {
  switch (s) {
    case Severity::kError: return "error";
    case Severity::kWarning: return "warning";
    case Severity::kNote: return "note";
    case Severity::kInternal: return "internal error";
  }
  return "error";
}

std::string Diagnostic::render() const {
  std::ostringstream os;
  if (span.defined()) os << span.str() << ": ";
  os << severity_name(severity) << ": " << message << "\n";
  if (span.defined() && span.file) {
    std::string src = span.file->line_text(span.line);
    if (!src.empty()) {
      // A long line (a model's JSON on one line) is shown as a window around the column.
      const size_t kWidth = 120, col = static_cast<size_t>(std::max(span.col, 1)) - 1;
      size_t begin = 0, end = src.size();
      if (src.size() > kWidth) {
        begin = col > kWidth / 2 ? std::min(col - kWidth / 2, src.size() - kWidth) : 0;
        end = begin + kWidth;
        // Whole UTF-8 characters only.
        while (begin > 0 && (static_cast<unsigned char>(src[begin]) & 0xC0) == 0x80) --begin;
        while (end < src.size() && (static_cast<unsigned char>(src[end]) & 0xC0) == 0x80) ++end;
      }
      const std::string before = begin > 0 ? "..." : "", after = end < src.size() ? "..." : "";
      os << "  " << before << src.substr(begin, end - begin) << after << "\n  " << std::string(before.size(), ' ');
      // Keep tabs so the caret lines up under the column.
      for (size_t i = begin; i < col && i < end; ++i) os << (src[i] == '\t' ? '\t' : ' ');
      os << "^\n";
    }
  }
  for (const auto& n : notes) os << "  note: " << n << "\n";
  return os.str();
}

static std::string first_message(const std::vector<Diagnostic>& ds) {
  return ds.empty() ? std::string("error") : ds.front().render();
}

DiagnosticError::DiagnosticError(Diagnostic d)
    : DiagnosticError(std::vector<Diagnostic>{std::move(d)}) {}

DiagnosticError::DiagnosticError(std::vector<Diagnostic> ds)
    : std::runtime_error(first_message(ds)), diags_(std::move(ds)) {}

bool DiagnosticError::internal() const {
  for (const auto& d : diags_)
    if (d.severity == Severity::kInternal) return true;
  return false;
}

void user_error(const Span& span, const std::string& message, std::vector<std::string> notes) {
  Diagnostic d;
  d.severity = Severity::kError;
  d.span = span;
  d.message = message;
  d.notes = std::move(notes);
  throw DiagnosticError(std::move(d));
}

void internal_error(const char* file, int line, const std::string& message) {
  Diagnostic d;
  d.severity = Severity::kInternal;
  d.message = message;
  d.notes.push_back(std::string("at ") + file + ":" + std::to_string(line));
  throw DiagnosticError(std::move(d));
}

std::string render_all(const std::vector<Diagnostic>& diags) {
  std::string out;
  for (const auto& d : diags) out += d.render();
  return out;
}

}  // namespace mtir
