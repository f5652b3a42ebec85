// The size ratchet (issue 36): no function of the product code (core/, crt/, sim/,
// wasm/, web/src/) over 80 lines and no file over 1,000, except the entries of
// tests/unit/size_allowlist.txt, which predate the rule. The list may only shrink: an
// entry that grew fails, and so does one that shrank or went under the limit (lower or
// remove it in the same commit), so that every split is recorded and nothing regrows.
//
// A function's length is counted from the line of its opening brace to the line of its
// closing one, inclusive. Functions are found by a small scanner for C, C++ and
// JavaScript that skips comments, strings, template literals, regular expressions and
// preprocessor lines, and tells a function body from a namespace, a class or an
// initializer by what precedes its brace; a lambda inside a function is part of it.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>
#include "support/source_dir.h"

namespace {

namespace fs = std::filesystem;

const fs::path kSourceRoot = mtir::source_dir();
constexpr int kFunctionLimit = 80;
constexpr int kFileLimit = 1000;
const char* const kAllowList = "tests/unit/size_allowlist.txt";

struct Function {
  std::string name;
  int first_line = 0;  // the opening brace
  int lines = 0;
};

bool is_ident(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$'; }

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

bool ends_with_word(const std::string& s, const std::string& w) {
  if (s.size() < w.size() || s.compare(s.size() - w.size(), w.size(), w) != 0) return false;
  return s.size() == w.size() || !is_ident(s[s.size() - w.size() - 1]);
}

bool has_word(const std::string& s, const std::string& w) {
  for (size_t p = s.find(w); p != std::string::npos; p = s.find(w, p + 1)) {
    bool left = p == 0 || !is_ident(s[p - 1]);
    bool right = p + w.size() >= s.size() || !is_ident(s[p + w.size()]);
    if (left && right) return true;
  }
  return false;
}

// Source text with comments, string and character literals, template literals (their
// `${...}` parts kept) and preprocessor lines blanked to spaces; newlines stay, so
// line numbers hold.
std::string strip_source(const std::string& src, bool javascript) {
  std::string out = src;
  const size_t n = src.size();
  auto blank = [&](size_t from, size_t to) {
    for (size_t k = from; k < to && k < n; ++k)
      if (out[k] != '\n') out[k] = ' ';
  };
  std::vector<int> template_depth;  // brace depth at each open `${` of a template literal
  int depth = 0;
  char last_significant = ';';
  std::string last_word;
  bool line_start = true;
  size_t i = 0;
  auto skip_template_text = [&](size_t from) -> size_t {  // from just after ` or }; returns past ` or ${
    size_t k = from;
    while (k < n && src[k] != '`' && !(src[k] == '$' && k + 1 < n && src[k + 1] == '{')) k += src[k] == '\\' ? 2 : 1;
    blank(from, k);
    if (k < n && src[k] == '`') return k + 1;
    template_depth.push_back(depth);
    return k + 2;
  };
  while (i < n) {
    char c = src[i];
    if (c == '\n') {
      line_start = true;
      ++i;
      continue;
    }
    if (line_start && !javascript && c == '#') {  // a preprocessor line, with its continuations
      size_t k = i;
      while (k < n && (src[k] != '\n' || (k > 0 && src[k - 1] == '\\'))) ++k;
      blank(i, k);
      i = k;
      continue;
    }
    if (c != ' ' && c != '\t' && c != '\r') line_start = false;
    if (c == '/' && i + 1 < n && src[i + 1] == '/') {
      size_t k = src.find('\n', i);
      if (k == std::string::npos) k = n;
      blank(i, k);
      i = k;
      continue;
    }
    if (c == '/' && i + 1 < n && src[i + 1] == '*') {
      size_t k = src.find("*/", i + 2);
      k = k == std::string::npos ? n : k + 2;
      blank(i, k);
      i = k;
      continue;
    }
    if (!javascript && c == 'R' && i + 1 < n && src[i + 1] == '"' && (i == 0 || !is_ident(src[i - 1]))) {
      size_t open = src.find('(', i + 2);
      std::string close = ")" + src.substr(i + 2, open - i - 2) + "\"";
      size_t k = src.find(close, open);
      k = k == std::string::npos ? n : k + close.size();
      blank(i + 1, k - 1);
      i = k;
      last_significant = '"';
      continue;
    }
    if (c == '"' || (c == '\'' && (javascript || i == 0 || !is_ident(src[i - 1])))) {
      size_t k = i + 1;
      while (k < n && src[k] != c && src[k] != '\n') k += src[k] == '\\' ? 2 : 1;
      blank(i + 1, k);
      i = k + 1;
      last_significant = '"';
      continue;
    }
    if (javascript && c == '`') {
      i = skip_template_text(i + 1);
      last_significant = '"';
      continue;
    }
    if (javascript && c == '/') {  // a regular expression where an operand is expected
      bool operand = std::string("(,=:[!&|?{};+-*%<>~^").find(last_significant) != std::string::npos ||
                     last_word == "return" || last_word == "typeof";
      if (operand) {
        size_t k = i + 1;
        bool in_class = false;
        while (k < n && src[k] != '\n' && (in_class || src[k] != '/')) {
          if (src[k] == '\\')
            ++k;
          else if (src[k] == '[')
            in_class = true;
          else if (src[k] == ']')
            in_class = false;
          ++k;
        }
        blank(i + 1, k);
        i = k + 1;
        last_significant = '"';
        continue;
      }
    }
    if (c == '{') ++depth;
    if (c == '}') {
      if (!template_depth.empty() && template_depth.back() == depth) {
        template_depth.pop_back();
        i = skip_template_text(i + 1);
        last_significant = '"';
        continue;
      }
      --depth;
    }
    if (is_ident(c)) {
      size_t k = i;
      while (k < n && is_ident(src[k])) ++k;
      last_word = src.substr(i, k - i);
      last_significant = 'a';
      i = k;
      continue;
    }
    if (c != ' ' && c != '\t' && c != '\r') {
      last_significant = c;
      last_word.clear();
    }
    ++i;
  }
  return out;
}

// What a brace opens, judged from the text since the previous `;`, `{` or `}` of the
// same scope (the "header").
// kMemberInit: a brace inside a declaration's header (a braced member initializer, a
// default argument `= {}`), after which the header goes on.
enum class Scope { kTransparent, kClass, kInitializer, kMemberInit, kFunction, kInsideFunction };

bool is_function_header(const std::string& h) {
  if (h.empty()) return false;
  if (h.size() >= 2 && h.compare(h.size() - 2, 2, "=>") == 0) return true;  // JS arrow
  if (h.back() == ')') return true;
  for (const char* w : {"const", "override", "noexcept", "final", "mutable"})
    if (ends_with_word(h, w) && h.find(')') != std::string::npos) return true;
  size_t arrow = h.rfind("->");
  if (arrow != std::string::npos && h.rfind(')') < arrow && h.rfind(')') != std::string::npos) return true;
  return false;
}

// The first '(' outside template brackets: where a declarator's parameters begin.
size_t parameters_begin(const std::string& h) {
  int angle = 0;
  for (size_t k = 0; k < h.size(); ++k) {
    if (h[k] == '<') ++angle;
    if (h[k] == '>' && angle > 0 && (k == 0 || h[k - 1] != '-')) --angle;
    if (h[k] == '(' && angle == 0) return k;
  }
  return std::string::npos;
}

// The identifier chain (a::b, a.b) that ends at `end`.
std::string name_before(const std::string& h, size_t end) {
  std::string left = trim(h.substr(0, end));
  size_t b = left.size();
  while (b > 0 && (is_ident(left[b - 1]) || left[b - 1] == ':' || left[b - 1] == '~' || left[b - 1] == '.')) --b;
  return left.substr(b);
}

std::string function_name(const std::string& h) {
  if (has_word(h, "function")) {  // JS: function name(
    size_t p = h.find("function") + 8;
    while (p < h.size() && (h[p] == ' ' || h[p] == '*')) ++p;
    size_t e = p;
    while (e < h.size() && is_ident(h[e])) ++e;
    if (e > p) return h.substr(p, e - p);
  }
  const size_t op = h.find("operator");
  if (op != std::string::npos && (op == 0 || !is_ident(h[op - 1]))) {
    size_t end =
        h.compare(op, 10, "operator()") == 0 || h.compare(op, 10, "operator[]") == 0 ? op + 10 : h.find('(', op);
    std::string name = (op > 0 && h[op - 1] == ':' ? name_before(h, op) : "") + h.substr(op, end - op);
    name.erase(std::remove(name.begin(), name.end(), ' '), name.end());
    return name;
  }
  const bool arrow = h.size() >= 2 && h.compare(h.size() - 2, 2, "=>") == 0;
  const size_t lambda = h.find("](");
  if (arrow || lambda != std::string::npos) {
    // `name = (...) =>`, `name: (...) =>`, `auto name = [](...)`: the name before = or :;
    // `f(..., () =>`: the call it is an argument of.
    size_t cut = h.find_first_of("=:(");
    if (cut != std::string::npos && h[cut] == '(') {
      std::vector<size_t> open;
      for (size_t k = 0; k < h.size(); ++k) {
        if (h[k] == '(') open.push_back(k);
        if (h[k] == ')' && !open.empty()) open.pop_back();
      }
      cut = open.empty() ? std::string::npos : open.back();
    }
    std::string name = cut == std::string::npos ? "" : name_before(h, cut);
    if (!name.empty() && name[0] == '.') name = name.substr(1);
    return name.empty() ? "(lambda)" : name;
  }
  const size_t paren = parameters_begin(h);
  if (paren == std::string::npos) return "(block)";
  std::string name = name_before(h, paren);
  return name.empty() ? "(anonymous)" : name;
}

Scope classify(const std::string& raw_header) {
  std::string h = trim(raw_header);
  // Access specifiers and labels end with ':' and begin the header; drop them.
  for (const char* access : {"public:", "private:", "protected:"})
    if (h.rfind(access, 0) == 0) h = trim(h.substr(std::string(access).size()));
  if (has_word(h, "namespace") || (h.rfind("extern", 0) == 0 && h.find('(') == std::string::npos))
    return Scope::kTransparent;
  if (h.rfind("if", 0) == 0 || h.rfind("for", 0) == 0 || h.rfind("while", 0) == 0 || h.rfind("switch", 0) == 0 ||
      h.rfind("else", 0) == 0 || h.rfind("try", 0) == 0 || h.rfind("catch", 0) == 0 || h.rfind("do", 0) == 0) {
    if (h.rfind("if", 0) == 0 || h.rfind("for", 0) == 0 || h.rfind("while", 0) == 0 || h.rfind("switch", 0) == 0 ||
        h == "else" || h == "try" || h == "do" || h.rfind("catch", 0) == 0 || h.rfind("else if", 0) == 0)
      return Scope::kTransparent;  // top-level JavaScript statements
  }
  std::string body = h;
  if (body.rfind("template", 0) == 0) {  // skip template <...>
    int angle = 0;
    size_t k = 8;
    for (; k < body.size(); ++k) {
      if (body[k] == '<') ++angle;
      if (body[k] == '>' && --angle == 0) break;
    }
    body = trim(body.substr(std::min(k + 1, body.size())));
  }
  for (const char* prefix : {"export default ", "export ", "typedef "})
    if (body.rfind(prefix, 0) == 0) body = trim(body.substr(std::string(prefix).size()));
  for (const char* kw : {"class", "struct", "union"})
    if (body.rfind(kw, 0) == 0 && (body.size() == std::string(kw).size() || !is_ident(body[std::string(kw).size()])) &&
        !is_function_header(body))
      return Scope::kClass;
  if (body.rfind("enum", 0) == 0) return Scope::kInitializer;
  if (is_function_header(h)) return Scope::kFunction;
  if (std::count(h.begin(), h.end(), '(') > std::count(h.begin(), h.end(), ')'))
    return Scope::kMemberInit;  // a default argument `= {}` or a destructured JS parameter
  if (!h.empty() && is_ident(h.back()) && (h.find(") :") != std::string::npos || h.find("):") != std::string::npos))
    return Scope::kMemberInit;  // Ctor(...) : member_{...}
  if (!h.empty() && h.back() == '}' && (h.find(") :") != std::string::npos || h.find("):") != std::string::npos))
    return Scope::kFunction;  // the body after a braced member initializer
  return Scope::kInitializer;
}

std::vector<Function> find_functions(const std::string& source, bool javascript) {
  const std::string text = strip_source(source, javascript);
  std::vector<Function> out;
  struct Open {
    Scope scope;
    int line;
    std::string name;
    std::string saved_header;  // the header of the enclosing scope, for member initializers
  };
  std::vector<Open> stack;
  std::string header;
  int line = 1;
  for (char c : text) {
    if (c == '\n') {
      ++line;
      header += ' ';
      continue;
    }
    bool inside_function =
        !stack.empty() && (stack.back().scope == Scope::kFunction || stack.back().scope == Scope::kInsideFunction);
    if (c == '{') {
      if (inside_function) {
        stack.push_back({Scope::kInsideFunction, line, "", ""});
        continue;
      }
      Scope s = classify(header);
      std::string name = s == Scope::kFunction ? function_name(trim(header)) : "";
      stack.push_back({s, line, name, s == Scope::kMemberInit ? header : ""});
      header.clear();
      continue;
    }
    if (c == '}') {
      if (stack.empty()) continue;
      Open open = stack.back();
      stack.pop_back();
      if (open.scope == Scope::kFunction) out.push_back({open.name, open.line, line - open.line + 1});
      if (open.scope == Scope::kMemberInit)
        header = open.saved_header + "{}";
      else if (!inside_function)
        header.clear();
      continue;
    }
    if (inside_function) continue;
    if (c == ';' || (c == ',' && !stack.empty() && stack.back().scope == Scope::kInitializer)) {
      header.clear();
      continue;
    }
    header += c;
  }
  return out;
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int count_lines(const std::string& s) {
  int n = static_cast<int>(std::count(s.begin(), s.end(), '\n'));
  return !s.empty() && s.back() != '\n' ? n + 1 : n;
}

// "function <path> <name>" or "file <path>" -> lines, for everything over the limits.
using Measures = std::map<std::string, int>;

Measures measure_tree(const fs::path& root) {
  Measures out;
  const std::set<std::string> kExts = {".cc", ".h", ".c", ".js", ".mjs"};
  for (const char* dir : {"core", "crt", "sim", "wasm", "web/src"}) {
    if (!fs::exists(root / dir)) continue;
    for (const auto& e : fs::recursive_directory_iterator(root / dir)) {
      const std::string ext = e.path().extension().string();
      if (!e.is_regular_file() || !kExts.count(ext)) continue;
      const std::string rel = fs::relative(e.path(), root).generic_string();
      const std::string text = read_text(e.path());
      const int lines = count_lines(text);
      if (lines > kFileLimit) out["file " + rel] = lines;
      for (const Function& f : find_functions(text, ext == ".js" || ext == ".mjs")) {
        if (f.lines <= kFunctionLimit) continue;
        int& slot = out["function " + rel + " " + f.name];
        slot = std::max(slot, f.lines);  // overloads of one name: the longest
      }
    }
  }
  return out;
}

// The allow-list: "function <path> <name> <lines>" or "file <path> <lines>" a line, '#'
// comments.
Measures parse_allow_list(const std::string& text) {
  Measures out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    line = trim(line);
    if (line.empty() || line[0] == '#') continue;
    size_t last = line.find_last_of(' ');
    out[trim(line.substr(0, last))] = std::stoi(line.substr(last + 1));
  }
  return out;
}

// One message per difference between what the tree measures and what the list allows.
std::vector<std::string> ratchet_failures(const Measures& measured, const Measures& allowed) {
  std::vector<std::string> out;
  for (const auto& [key, lines] : measured) {
    const bool is_file = key.rfind("file ", 0) == 0;
    const int limit = is_file ? kFileLimit : kFunctionLimit;
    auto it = allowed.find(key);
    if (it == allowed.end())
      out.push_back(key + ": " + std::to_string(lines) + " lines, over the limit of " + std::to_string(limit) +
                    "; split it along its phases (the allow-list takes no new entries)");
    else if (lines > it->second)
      out.push_back(key + ": grew from " + std::to_string(it->second) + " to " + std::to_string(lines) +
                    " lines; the allow-list may only shrink, split it instead");
    else if (lines < it->second)
      out.push_back(key + ": shrank from " + std::to_string(it->second) + " to " + std::to_string(lines) +
                    " lines; lower its entry in " + kAllowList + " to " + std::to_string(lines));
  }
  for (const auto& [key, lines] : allowed)
    if (!measured.count(key))
      out.push_back(key + ": no longer over the limit (or gone); remove its entry from " + std::string(kAllowList));
  return out;
}

TEST(SizeRatchet, NoFunctionOrFileGrowsPastTheLimitsOutsideTheShrinkingAllowList) {
  const Measures measured = measure_tree(kSourceRoot);
  const Measures allowed = parse_allow_list(read_text(kSourceRoot / kAllowList));
  std::string report;
  for (const auto& f : ratchet_failures(measured, allowed)) report += f + "\n";
  std::string now;
  for (const auto& [key, lines] : measured) now += key + " " + std::to_string(lines) + "\n";
  EXPECT_TRUE(report.empty()) << report << "\nwhat the tree measures now:\n" << now;
}

TEST(SizeRatchet, ScannerFindsCxxFunctionsAndTheirLength) {
  const std::string src =
      "#include <x>\n"                                               // 1
      "#define BODY { return 1; }\n"                                 // 2
      "namespace a {\n"                                              // 3
      "struct S : Base<int> {\n"                                     // 4
      "  S(int x) : x_{x}, y_(x) {\n"                                // 5
      "    // } a comment brace\n"                                   // 6
      "  }\n"                                                        // 7
      "  int get() const { return x_; }\n"                           // 8
      "  int x_, y_;\n"                                              // 9
      "};\n"                                                         // 10
      "const Row kRows[] = {{\"{\", 1}, {\"}\", 2}};\n"              // 11
      "std::vector<int> Parser::parse_stmt(const std::string& s,\n"  // 12
      "                                   int n) {\n"                // 13
      "  auto f = [&](int k) { return k + '}'; };\n"                 // 14
      "  if (n) {\n"                                                 // 15
      "    return {R\"x({)x\"};\n"                                   // 16
      "  }\n"                                                        // 17
      "  return {};\n"                                               // 18
      "}\n"                                                          // 19
      "bool operator==(const S& a, const S& b) { return true; }\n"   // 20
      "}  // namespace a\n";
  const std::vector<Function> fs = find_functions(src, false);
  ASSERT_EQ(fs.size(), 4u);
  EXPECT_EQ(fs[0].name, "S");
  EXPECT_EQ(fs[0].first_line, 5);
  EXPECT_EQ(fs[0].lines, 3);
  EXPECT_EQ(fs[1].name, "get");
  EXPECT_EQ(fs[1].lines, 1);
  EXPECT_EQ(fs[2].name, "Parser::parse_stmt");
  EXPECT_EQ(fs[2].first_line, 13);
  EXPECT_EQ(fs[2].lines, 7);
  EXPECT_EQ(fs[3].name, "operator==");
}

TEST(SizeRatchet, ScannerFindsJavaScriptFunctions) {
  const std::string src =
      "import { a } from './a.js';\n"                        // 1
      "const re = /[{]/g;\n"                                 // 2
      "export function render(x) {\n"                        // 3
      "  const s = `a ${x.map((y) => { return y; })} }`;\n"  // 4
      "  return s;\n"                                        // 5
      "}\n"                                                  // 6
      "const onClick = (e) => {\n"                           // 7
      "  e.stop();\n"                                        // 8
      "};\n"                                                 // 9
      "const table = { key: 1, nested: { b: 2 } };\n"        // 10
      "class View {\n"                                       // 11
      "  draw(ctx) {\n"                                      // 12
      "    ctx.fill();\n"                                    // 13
      "  }\n"                                                // 14
      "}\n"
      "if (window.x) {\n"
      "  document.addEventListener('load', () => {\n"
      "    go();\n"
      "  });\n"
      "}\n";
  const std::vector<Function> fs = find_functions(src, true);
  ASSERT_EQ(fs.size(), 4u);
  EXPECT_EQ(fs[0].name, "render");
  EXPECT_EQ(fs[0].lines, 4);
  EXPECT_EQ(fs[1].name, "onClick");
  EXPECT_EQ(fs[1].lines, 3);
  EXPECT_EQ(fs[2].name, "draw");
  EXPECT_EQ(fs[2].lines, 3);
  EXPECT_EQ(fs[3].name, "document.addEventListener");
}

// The ratchet itself: a new long function, a grown entry, a shrunk entry and an entry
// under the limit all fail; an entry that measures what it says passes.
TEST(SizeRatchet, AllowListMayOnlyShrinkAndMustFollowTheTree) {
  const Measures allowed = parse_allow_list(
      "# comment\nfunction a.cc same 90\nfunction a.cc grew 90\nfunction a.cc shrank 95\nfunction a.cc gone 85\n"
      "file big.cc 1200\n");
  ASSERT_EQ(allowed.size(), 5u);
  const Measures measured = {{"function a.cc same", 90},
                             {"function a.cc grew", 91},
                             {"function a.cc shrank", 92},
                             {"function a.cc new", 81},
                             {"file big.cc", 1200}};
  const std::vector<std::string> f = ratchet_failures(measured, allowed);
  ASSERT_EQ(f.size(), 4u);
  std::string all;
  for (const auto& s : f) all += s + "\n";
  EXPECT_NE(all.find("function a.cc grew: grew from 90 to 91"), std::string::npos) << all;
  EXPECT_NE(all.find("function a.cc new: 81 lines, over the limit of 80"), std::string::npos) << all;
  EXPECT_NE(all.find("function a.cc shrank: shrank from 95 to 92"), std::string::npos) << all;
  EXPECT_NE(all.find("function a.cc gone: no longer over the limit"), std::string::npos) << all;
}

}  // namespace
