#include "support/names.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <set>

namespace mtir {

size_t edit_distance(const std::string& a, const std::string& b) {
  auto lower = [](char c) { return std::tolower(static_cast<unsigned char>(c)); };
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t sub = prev[j - 1] + (lower(a[i - 1]) == lower(b[j - 1]) ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string closest_match(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_d = std::string::npos;
  for (const auto& c : candidates) {
    size_t d = edit_distance(word, c);
    if (d < best_d) best_d = d, best = c;
  }
  if (best.empty() || best_d > std::max<size_t>(2, word.size() / 3)) return "";
  return best;
}

bool is_c_identifier(const std::string& s) {
  if (s.empty()) return false;
  auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  if (!alpha(s[0])) return false;
  for (char c : s)
    if (!alpha(c) && !(c >= '0' && c <= '9')) return false;
  return true;
}

std::string to_c_identifier(const std::string& s) {
  std::string out;
  for (char c : s) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0]))) out = "t_" + out;
  return out;
}

bool is_c_keyword(const std::string& s) {
  static const std::set<std::string> keywords = {
      // C99 and C11
      "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else", "enum", "extern",
      "float", "for", "goto", "if", "inline", "int", "long", "register", "restrict", "return", "short", "signed",
      "sizeof", "static", "struct", "switch", "typedef", "union", "unsigned", "void", "volatile", "while", "_Bool",
      "_Complex", "_Imaginary", "_Alignas", "_Alignof", "_Atomic", "_Generic", "_Noreturn", "_Static_assert",
      "_Thread_local",
      // C++ (the header is extern "C" for C++ applications)
      "alignas", "alignof", "and", "and_eq", "asm", "bitand", "bitor", "bool", "catch", "char16_t", "char32_t",
      "char8_t", "class", "compl", "concept", "consteval", "constexpr", "constinit", "const_cast", "co_await",
      "co_return", "co_yield", "decltype", "delete", "dynamic_cast", "explicit", "export", "false", "friend",
      "mutable", "namespace", "new", "noexcept", "not", "not_eq", "nullptr", "operator", "or", "or_eq", "private",
      "protected", "public", "reinterpret_cast", "requires", "static_assert", "static_cast", "template", "this",
      "thread_local", "throw", "true", "try", "typeid", "typename", "using", "virtual", "wchar_t", "xor", "xor_eq"};
  return keywords.count(s) > 0;
}

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Names a struct member, macro or symbol of the generated interface cannot take: the
// interface's own words after its tvmgen_<model>_ / TVMGEN_<MODEL>_ prefix (any case),
// identifiers C reserves (leading "__" or "_" and a capital: __LINE__ is a macro), and
// the macros of the standard headers the interface includes (NULL, <stdint.h>'s
// INT8_MAX, UINT32_C, ...).
bool is_reserved_word(const std::string& s) {
  const std::string l = lower(s);
  if (l == "run" || l == "workspace") return true;
  if (s.size() >= 2 && s[0] == '_' && (s[1] == '_' || std::isupper(static_cast<unsigned char>(s[1])))) return true;
  if (s == "NULL" || s == "INFINITY" || s == "NAN" || s == "EOF") return true;
  auto ends_with = [&](const char* t) {
    const std::string suffix = t;
    return s.size() > suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  const bool upper = std::none_of(s.begin(), s.end(), [](char c) { return std::islower(static_cast<unsigned char>(c)); });
  return upper && (ends_with("_MIN") || ends_with("_MAX") || ends_with("_C"));
}

std::string base_identifier(const std::string& name) {
  std::string out = to_c_identifier(name);  // '_' for other bytes; "t_" when empty or before a digit
  if (is_c_keyword(out) || is_reserved_word(out)) out = "t_" + out;
  if (out.size() > kMaxCIdentifier) out.resize(kMaxCIdentifier);
  return out;
}

}  // namespace

std::vector<std::string> unique_c_identifiers(const std::vector<std::string>& names) {
  std::vector<std::string> ids(names.size());
  std::set<std::string> taken;  // lower case
  // Names that are valid identifiers already keep them first.
  for (size_t i = 0; i < names.size(); ++i) {
    std::string base = base_identifier(names[i]);
    if (base == names[i] && taken.insert(lower(base)).second) ids[i] = base;
  }
  for (size_t i = 0; i < names.size(); ++i) {
    if (!ids[i].empty()) continue;
    const std::string base = base_identifier(names[i]);
    std::string id = base;
    for (int k = 2; taken.count(lower(id)); ++k) {
      const std::string suffix = "_" + std::to_string(k);
      id = base.substr(0, kMaxCIdentifier - suffix.size()) + suffix;
    }
    taken.insert(lower(id));
    ids[i] = id;
  }
  return ids;
}

std::string valid_utf8(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    // The length of the sequence `c` starts and the range of its second byte (RFC 3629).
    size_t n = 0;
    unsigned char lo = 0x80, hi = 0xbf;
    if (c < 0x80) n = 1;
    else if (c >= 0xc2 && c <= 0xdf) n = 2;
    else if (c >= 0xe0 && c <= 0xef) n = 3, lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
    else if (c >= 0xf0 && c <= 0xf4) n = 4, lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
    bool ok = n > 0 && i + n <= s.size();
    for (size_t k = 1; ok && k < n; ++k) {
      const unsigned char b = static_cast<unsigned char>(s[i + k]);
      ok = k == 1 ? b >= lo && b <= hi : b >= 0x80 && b <= 0xbf;
    }
    if (ok) {
      out.append(s, i, n);
      i += n;
    } else {
      out += "\xef\xbf\xbd";
      ++i;
    }
  }
  return out;
}

std::string c_escaped(const std::string& name) {
  std::string out;
  for (size_t i = 0; i < name.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(name[i]);
    const char next = i + 1 < name.size() ? name[i + 1] : '\0';
    if (c == '\\' || c == '"') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else if (c == '*' && next == '/') {
      out += "*\\";  // "*/" would end the comment
    } else if (c == '?' && next == '?') {
      out += "?\\";  // "??x" is a trigraph in C99
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

}  // namespace mtir
