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

// True for C99/C11 keywords and C++ keywords (a generated header is included from C++
// too), case-sensitively.
bool is_c_keyword(const std::string& s);

// The C identifiers of a model's tensor parameters (its inputs, outputs and weights),
// one for each of `names` in order: the names the generated header's struct members
// and macros, main's buffer parameters, the linked weights' symbols, `run --output-dir`
// files and metadata.json's "identifier" use. The rule (docs/tflite.md, "Names"):
//  - the base: every byte outside [A-Za-z0-9_] becomes '_'; "t_" goes in front of a
//    name that is empty, starts with a digit, is a C or C++ keyword, one of the
//    interface's own words (run, workspace, any case), an identifier C reserves
//    (leading "__", or "_" and a capital) or a standard macro (NULL, INFINITY, NAN, EOF,
//    upper case ending in _MIN, _MAX or _C); then it is cut to kMaxCIdentifier
//    characters;
//  - a name that is its own base keeps it, unless an earlier such name has it already;
//  - every other name, in order, takes its base if no name has it yet, else the base
//    (cut to leave room) followed by _2, _3, ... : the first that is free.
// "Has it" ignores ASCII case, so macros (upper case) and file names on case-insensitive
// file systems stay distinct too. Equal names get one identifier each (duplicates).
std::vector<std::string> unique_c_identifiers(const std::vector<std::string>& names);
constexpr size_t kMaxCIdentifier = 64;

// `s` with every byte that is not part of a well-formed UTF-8 sequence replaced by U+FFFD
// (a model file's names are meant to be UTF-8; JSON output needs them to be).
std::string valid_utf8(const std::string& s);

// `name` as text that can stand inside a C comment, quoted: backslash, quote and control
// bytes escaped as in a C string, "*/" as "*\/" and "??" as "?\?"; UTF-8 kept.
std::string c_escaped(const std::string& name);

}  // namespace mtir
