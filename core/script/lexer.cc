#include "script/lexer.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>

namespace mtir {
namespace script {

std::string describe(const Token& t) {
  switch (t.kind) {
    case TokKind::kName:
      return "name '" + t.text + "'";
    case TokKind::kInt:
    case TokKind::kFloat:
      return "number " + t.text;
    case TokKind::kString:
      return "string literal";
    case TokKind::kOp:
      return "'" + t.text + "'";
    case TokKind::kNewline:
      return "end of line";
    case TokKind::kIndent:
      return "indent";
    case TokKind::kDedent:
      return "dedent";
    case TokKind::kEof:
      return "end of file";
  }
  return "token";
}

namespace {

bool is_ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_ident_char(char c) { return is_ident_start(c) || is_digit(c); }

class Lexer {
 public:
  explicit Lexer(const std::shared_ptr<const SourceFile>& file) : file_(file), src_(file->text) {}

  std::vector<Token> run() {
    indents_.push_back(0);
    while (pos_ < src_.size()) {
      if (at_line_start_ && depth_ == 0) {
        if (!handle_indentation()) continue;  // blank or comment-only line
      }
      size_t before = out_.size();
      lex_one();
      if (out_.size() > before) {
        // Where the last token ends: errors at end of input point here, on a line
        // that exists, so the diagnostic can show it with a caret.
        const Token& t = out_.back();
        end_line_ = t.kind == TokKind::kNewline ? t.line : line_;
        end_col_ = t.kind == TokKind::kNewline ? t.col : col_;
      }
    }
    if (!out_.empty() && out_.back().kind != TokKind::kNewline && out_.back().kind != TokKind::kDedent &&
        out_.back().kind != TokKind::kIndent)
      push(TokKind::kNewline, "", end_line_, end_col_);
    while (indents_.size() > 1) {
      indents_.pop_back();
      push(TokKind::kDedent, "", end_line_, end_col_);
    }
    push(TokKind::kEof, "", end_line_, end_col_);
    return std::move(out_);
  }

 private:
  [[noreturn]] void fail(int line, int col, const std::string& msg) { user_error(Span{file_, line, col}, msg); }

  void push(TokKind k, std::string text, int line, int col) {
    Token t;
    t.kind = k;
    t.text = std::move(text);
    t.line = line;
    t.col = col;
    out_.push_back(std::move(t));
  }

  char peek(size_t ahead = 0) const { return pos_ + ahead < src_.size() ? src_[pos_ + ahead] : '\0'; }

  void advance() {
    if (src_[pos_] == '\n') {
      ++line_;
      col_ = 1;
      at_line_start_ = depth_ == 0;  // inside brackets a newline is just whitespace
    } else {
      ++col_;
    }
    ++pos_;
  }

  // Measures the indentation of a new logical line and emits INDENT/DEDENT. Returns
  // false when the line is blank or a comment (it is skipped entirely).
  bool handle_indentation() {
    int width = 0;
    int tab_col = 0;  // a tab only matters on a line that has code
    while (pos_ < src_.size() && (peek() == ' ' || peek() == '\t' || peek() == '\r' || peek() == '\f')) {
      if (peek() == '\t' && tab_col == 0) tab_col = col_;
      if (peek() == ' ') ++width;
      advance();
    }
    if (pos_ >= src_.size()) return false;
    if (peek() == '#') {
      while (pos_ < src_.size() && peek() != '\n') advance();
      return false;
    }
    if (peek() == '\n') {
      advance();
      return false;
    }
    if (tab_col) fail(line_, tab_col, "tabs are not allowed in indentation");
    at_line_start_ = false;
    if (width > indents_.back()) {
      // An indent is only legal right after a line ending in ':'; the parser checks
      // that, since only it knows where blocks start.
      indents_.push_back(width);
      push(TokKind::kIndent, "", line_, col_);
    } else {
      while (width < indents_.back()) {
        indents_.pop_back();
        push(TokKind::kDedent, "", line_, col_);
      }
      if (width != indents_.back()) fail(line_, col_, "unindent does not match any outer indentation level");
    }
    return true;
  }

  void lex_one() {
    char c = peek();
    int line = line_, col = col_;
    if (c == '\n') {
      if (depth_ == 0) push(TokKind::kNewline, "", line, col);
      advance();
      return;
    }
    if (c == ' ' || c == '\t' || c == '\r' || c == '\f') {
      advance();
      return;
    }
    if (c == '#') {
      while (pos_ < src_.size() && peek() != '\n') advance();
      return;
    }
    if (c == '\\' && peek(1) == '\n') {  // explicit line joining
      advance();
      advance();
      at_line_start_ = false;
      return;
    }
    if (is_ident_start(c)) {
      size_t start = pos_;
      while (pos_ < src_.size() && is_ident_char(peek())) advance();
      push(TokKind::kName, src_.substr(start, pos_ - start), line, col);
      return;
    }
    if (is_digit(c) || (c == '.' && is_digit(peek(1)))) return lex_number();
    if (c == '"' || c == '\'') return lex_string();
    static const char* const kOps[] = {
        "**", "//", "->", "==", "!=", "<=", ">=", "+=", "-=", "*=", "/=", "+", "-", "*", "/",
        "%",  "<",  ">",  "=",  "(",  ")",  "[",  "]",  "{",  "}",  ",",  ":", ".", "@"};
    for (const char* op : kOps) {
      size_t n = std::char_traits<char>::length(op);
      if (src_.compare(pos_, n, op) == 0) {
        if (op[0] == '(' || op[0] == '[' || op[0] == '{') ++depth_;
        if ((op[0] == ')' || op[0] == ']' || op[0] == '}') && depth_ > 0) --depth_;
        for (size_t i = 0; i < n; ++i) advance();
        push(TokKind::kOp, op, line, col);
        return;
      }
    }
    unsigned char uc = static_cast<unsigned char>(c);
    if (uc < 32 || uc >= 127) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", uc);
      fail(line, col, std::string("unexpected character '") + buf + "'");
    }
    fail(line, col, std::string("unexpected character '") + c + "'");
  }

  void lex_number() {
    int line = line_, col = col_;
    size_t start = pos_;
    bool is_float = false;
    while (is_digit(peek())) advance();
    if (peek() == '.' && !is_ident_start(peek(1))) {
      is_float = true;
      advance();
      while (is_digit(peek())) advance();
    }
    if (peek() == 'e' || peek() == 'E') {
      size_t save = pos_;
      int save_col = col_;
      advance();
      if (peek() == '+' || peek() == '-') advance();
      if (!is_digit(peek())) {
        pos_ = save;
        col_ = save_col;
        fail(line, col, "invalid number literal '" + src_.substr(start, pos_ - start + 1) + "'");
      }
      while (is_digit(peek())) advance();
      is_float = true;
    }
    if (is_ident_char(peek()) || peek() == '.')
      fail(line, col, "invalid number literal '" + src_.substr(start, pos_ - start + 1) + "'");
    std::string text = src_.substr(start, pos_ - start);
    Token t;
    t.text = text;
    t.line = line;
    t.col = col;
    if (is_float) {
      t.kind = TokKind::kFloat;
      t.float_value = std::strtod(text.c_str(), nullptr);
    } else {
      t.kind = TokKind::kInt;
      errno = 0;
      unsigned long long v = std::strtoull(text.c_str(), nullptr, 10);
      if (errno == ERANGE) fail(line, col, "integer literal '" + text + "' is too large");
      t.int_value = v;
    }
    out_.push_back(std::move(t));
  }

  static int hex_value(char c) {
    if (is_digit(c)) return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }

  // A triple-quoted string (a docstring): it may span lines, and its text is kept as
  // written (escapes are not interpreted; the parser skips docstrings anyway).
  void lex_long_string() {
    int line = line_, col = col_;
    char quote = peek();
    advance(), advance(), advance();
    std::string value;
    while (!(peek() == quote && peek(1) == quote && peek(2) == quote)) {
      if (pos_ >= src_.size()) fail(line, col, "unterminated triple-quoted string");
      if (peek() == '\\' && pos_ + 1 < src_.size()) value += peek(), advance();
      value += peek();
      advance();
    }
    advance(), advance(), advance();
    at_line_start_ = false;  // the newlines inside do not start logical lines
    push(TokKind::kString, std::move(value), line, col);
  }

  void lex_string() {
    int line = line_, col = col_;
    char quote = peek();
    if (peek(1) == quote && peek(2) == quote) return lex_long_string();
    advance();
    std::string value;
    while (true) {
      if (pos_ >= src_.size() || peek() == '\n') fail(line, col, "unterminated string");
      char c = peek();
      if (c == quote) {
        advance();
        break;
      }
      if (c != '\\') {
        value += c;
        advance();
        continue;
      }
      int esc_line = line_, esc_col = col_;
      advance();
      if (pos_ >= src_.size()) fail(line, col, "unterminated string");
      char e = peek();
      switch (e) {
        case 'n':
          value += '\n';
          break;
        case 't':
          value += '\t';
          break;
        case 'r':
          value += '\r';
          break;
        case '0':
          value += '\0';
          break;
        case '\\':
          value += '\\';
          break;
        case '"':
          value += '"';
          break;
        case '\'':
          value += '\'';
          break;
        case 'x': {
          int hi = hex_value(peek(1)), lo = hex_value(peek(2));
          if (hi < 0 || lo < 0) fail(esc_line, esc_col, "invalid \\x escape in string");
          advance();
          advance();
          value += static_cast<char>(hi * 16 + lo);
          break;
        }
        case '\n':
          fail(line, col, "unterminated string");
        default:
          fail(esc_line, esc_col, std::string("unknown escape sequence '\\") + e + "'");
      }
      advance();
    }
    push(TokKind::kString, std::move(value), line, col);
  }

  std::shared_ptr<const SourceFile> file_;
  const std::string& src_;
  size_t pos_ = 0;
  int line_ = 1, col_ = 1;
  bool at_line_start_ = true;
  int end_line_ = 1, end_col_ = 1;
  int depth_ = 0;  // bracket nesting: newlines and indentation are ignored inside
  std::vector<int> indents_;
  std::vector<Token> out_;
};

}  // namespace

std::vector<Token> tokenize(const std::shared_ptr<const SourceFile>& file) { return Lexer(file).run(); }

}  // namespace script
}  // namespace mtir
