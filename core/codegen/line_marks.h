#pragma once
// The source line of each generated line, for the playground's source <-> output view:
// an emitter asked for a line map ends each line it emits for a located statement with
// kLineMark and the statement's source line, then strip_line_marks() removes the marks.

#include <string>
#include <vector>

#include "ir/stmt.h"

namespace mtir {

inline constexpr char kLineMark = '\x01';

// The mark that ends a line emitted for source line `line` ("" for none).
inline std::string line_mark(bool marking, int line) {
  return marking && line > 0 ? kLineMark + std::to_string(line) : std::string();
}

// While alive, `*line` is the line of statement `s` (when it has one); then what it was.
class SourceLineScope {
 public:
  SourceLineScope(int* line, const Stmt& s) : line_(line), outer_(*line) {
    if (s->span.line > 0) *line = s->span.line;
  }
  ~SourceLineScope() { *line_ = outer_; }
  SourceLineScope(const SourceLineScope&) = delete;
  SourceLineScope& operator=(const SourceLineScope&) = delete;

 private:
  int* line_;
  int outer_;
};

// `text` without its marks; map[i] = the source line of output line i + 1, or 0.
std::string strip_line_marks(const std::string& text, std::vector<int>* map);

}  // namespace mtir
