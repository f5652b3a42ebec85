// Helpers for names: "did you mean" suggestions and identifier checks, shared by the
// parser, the graph loader, the target parser and the code generators.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace mtir {

// Levenshtein distance between `a` and `b`, ignoring ASCII case.
size_t edit_distance(const std::string& a, const std::string& b);

// The candidate closest to `word` by edit_distance (the first one on a tie), or ""
// when none is within max(2, word.size() / 3) edits.
std::string closest_match(const std::string& word, const std::vector<std::string>& candidates);

// True for a non-empty [A-Za-z_][A-Za-z0-9_]* (the C rule, and Python's for ASCII).
bool is_c_identifier(const std::string& s);

// A C identifier made from any name: other characters become '_', and a name that is
// empty or starts with a digit gets the prefix "t_". The graph's tensor and model names
// become C names this way, in the executor and in the generated interface alike.
std::string to_c_identifier(const std::string& s);

}  // namespace mtir
