#include "codegen/line_marks.h"

#include <algorithm>

namespace mtir {

std::string strip_line_marks(const std::string& text, std::vector<int>* map) {
  std::string out;
  out.reserve(text.size());
  map->clear();
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    // Within the line only: a search to the next mark would cross every unmarked line
    // after it (quadratic on a model's LLVM IR, where few lines carry one).
    const size_t mark = static_cast<size_t>(std::find(text.begin() + start, text.begin() + end, kLineMark) - text.begin());
    const bool marked = mark < end;
    map->push_back(marked ? std::stoi(text.substr(mark + 1, end - mark - 1)) : 0);
    out.append(text, start, (marked ? mark : end) - start);
    if (end < text.size()) out += '\n';
    start = end + 1;
  }
  return out;
}

}  // namespace mtir
