// NumPy .npy files. Layout: the magic "\x93NUMPY", a major and minor version byte, the
// header length (2 bytes little-endian in version 1.0, 4 bytes in 2.0 and 3.0), then
// the header: a Python dict literal such as
//   {'descr': '<f4', 'fortran_order': False, 'shape': (4, 8), }
// padded with spaces and ended by '\n', then the raw C-order data.
// We parse the dict with a small literal parser instead of string searching, so key
// order, quoting style and spacing do not matter.
#include "support/npy.h"

#include <cctype>
#include <limits>
#include <map>

#include "support/diagnostic.h"

namespace mtir {

namespace {

const char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;

// A value of the header dict: a string, a bool or a tuple of integers.
struct HeaderValue {
  enum class Kind { kString, kBool, kTuple } kind = Kind::kString;
  std::string text;
  bool flag = false;
  std::vector<int64_t> items;
};

[[noreturn]] void npy_error(const std::string& what, const std::string& message) {
  user_error(Span{}, what + ": " + message);
}

// Recursive-descent parser for the subset of Python literals .npy headers use.
class HeaderParser {
 public:
  HeaderParser(const std::string& text, const std::string& what) : text_(text), what_(what) {}

  std::map<std::string, HeaderValue> parse_dict() {
    std::map<std::string, HeaderValue> dict;
    expect('{');
    while (true) {
      skip_space();
      if (peek() == '}') break;
      std::string key = parse_string();
      expect(':');
      dict[key] = parse_value();
      skip_space();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() != '}') fail("expected ',' or '}' in header");
    }
    ++pos_;
    return dict;
  }

 private:
  [[noreturn]] void fail(const std::string& message) { npy_error(what_, "malformed header: " + message); }

  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  char peek() {
    skip_space();
    return pos_ < text_.size() ? text_[pos_] : '\0';
  }
  void expect(char c) {
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++pos_;
  }

  std::string parse_string() {
    char quote = peek();
    if (quote != '\'' && quote != '"') fail("expected a quoted string");
    size_t end = text_.find(quote, ++pos_);
    if (end == std::string::npos) fail("unterminated string");
    std::string s = text_.substr(pos_, end - pos_);
    pos_ = end + 1;
    return s;
  }

  HeaderValue parse_value() {
    HeaderValue v;
    char c = peek();
    if (c == '\'' || c == '"') {
      v.text = parse_string();
    } else if (c == '(') {
      v.kind = HeaderValue::Kind::kTuple;
      ++pos_;
      while (peek() != ')') {
        v.items.push_back(parse_int());
        if (peek() == ',') ++pos_;
        else if (peek() != ')') fail("expected ',' or ')' in shape");
      }
      ++pos_;
    } else if (text_.compare(pos_, 4, "True") == 0 || text_.compare(pos_, 5, "False") == 0) {
      v.kind = HeaderValue::Kind::kBool;
      v.flag = text_[pos_] == 'T';
      pos_ += v.flag ? 4 : 5;
    } else {
      fail("unsupported value (descr must be a simple type string)");
    }
    return v;
  }

  int64_t parse_int() {
    skip_space();
    size_t start = pos_;
    int64_t v = 0;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      if (v > (std::numeric_limits<int64_t>::max() - 9) / 10) fail("shape extent too large");
      v = v * 10 + (text_[pos_++] - '0');
    }
    if (pos_ == start) fail("expected a non-negative integer in shape");
    if (pos_ < text_.size() && text_[pos_] == 'L') ++pos_;  // Python 2 long suffix
    return v;
  }

  const std::string& text_;
  const std::string& what_;
  size_t pos_ = 0;
};

// '<f4' and friends to a DataType. '|' (no byte order) and '=' (native) count as
// little-endian; '>' is accepted only where byte order cannot matter (one byte).
DataType parse_descr(const std::string& descr, const std::string& what) {
  if (descr.size() < 3) npy_error(what, "unsupported dtype '" + descr + "'");
  char order = descr[0];
  char kind = descr[1];
  std::string size_text = descr.substr(2);
  if (order != '<' && order != '>' && order != '|' && order != '=')
    npy_error(what, "unsupported dtype '" + descr + "'");
  int nbytes = 0;
  for (char c : size_text) {
    if (!std::isdigit(static_cast<unsigned char>(c)) || nbytes > 100)
      npy_error(what, "unsupported dtype '" + descr + "'");
    nbytes = nbytes * 10 + (c - '0');
  }
  if (order == '>' && nbytes > 1)
    npy_error(what, "big-endian data ('" + descr + "') is not supported; save it little-endian");
  bool int_size = nbytes == 1 || nbytes == 2 || nbytes == 4 || nbytes == 8;
  switch (kind) {
    case 'f':
      if (nbytes == 2 || nbytes == 4 || nbytes == 8) return DataType::Float(nbytes * 8);
      break;
    case 'i':
      if (int_size) return DataType::Int(nbytes * 8);
      break;
    case 'u':
      if (int_size) return DataType::UInt(nbytes * 8);
      break;
    case 'b':
      if (nbytes == 1) return DataType::Bool();
      break;
    default: break;
  }
  npy_error(what, "unsupported dtype '" + descr + "'");
}

std::string descr_of(DataType t) {
  char kind = t.is_bool() ? 'b' : t.is_float() ? 'f' : t.is_uint() ? 'u' : 'i';
  MTIR_ICHECK(t.is_bool() || t.is_numeric(), "write_npy of " + t.str());
  return std::string(t.bytes() == 1 ? "|" : "<") + kind + std::to_string(t.bytes());
}

uint32_t read_le(const std::string& bytes, size_t pos, int n) {
  uint32_t v = 0;
  for (int b = n - 1; b >= 0; --b) v = (v << 8) | static_cast<uint8_t>(bytes[pos + b]);
  return v;
}

}  // namespace

NDArray read_npy(const std::string& bytes, const std::string& what) {
  if (bytes.size() < kMagicLen || bytes.compare(0, kMagicLen, kMagic, kMagicLen) != 0)
    npy_error(what, "not a .npy file (bad magic)");
  if (bytes.size() < kMagicLen + 2) npy_error(what, "truncated header");
  int major = static_cast<uint8_t>(bytes[6]);
  int minor = static_cast<uint8_t>(bytes[7]);
  if (major < 1 || major > 3 || minor != 0)
    npy_error(what, "unsupported .npy format version " + std::to_string(major) + "." + std::to_string(minor));
  // Version 1.0 has a 2-byte header length; 2.0 widened it to 4; 3.0 only changed the
  // header's text encoding to UTF-8, which our ASCII-only parser handles unchanged.
  const int len_bytes = major == 1 ? 2 : 4;
  const size_t header_start = kMagicLen + 2 + len_bytes;
  if (bytes.size() < header_start) npy_error(what, "truncated header");
  const size_t header_len = read_le(bytes, kMagicLen + 2, len_bytes);
  if (bytes.size() - header_start < header_len) npy_error(what, "truncated header");
  const std::string header = bytes.substr(header_start, header_len);

  std::map<std::string, HeaderValue> dict = HeaderParser(header, what).parse_dict();
  auto descr = dict.find("descr");
  auto fortran = dict.find("fortran_order");
  auto shape = dict.find("shape");
  if (descr == dict.end() || descr->second.kind != HeaderValue::Kind::kString)
    npy_error(what, "malformed header: missing 'descr'");
  if (fortran == dict.end() || fortran->second.kind != HeaderValue::Kind::kBool)
    npy_error(what, "malformed header: missing 'fortran_order'");
  if (shape == dict.end() || shape->second.kind != HeaderValue::Kind::kTuple)
    npy_error(what, "malformed header: missing 'shape'");
  if (fortran->second.flag)
    npy_error(what, "Fortran-order (column-major) arrays are not supported; save it in C order");

  DataType dtype = parse_descr(descr->second.text, what);
  // Count elements with an overflow check: a hostile header must not wrap the size.
  int64_t count = 1;
  for (int64_t d : shape->second.items) {
    if (d != 0 && count > std::numeric_limits<int64_t>::max() / dtype.bytes() / d)
      npy_error(what, "shape too large");
    count *= d;
  }
  const size_t expected = static_cast<size_t>(count) * dtype.bytes();
  const size_t found = bytes.size() - header_start - header_len;
  if (found != expected)
    npy_error(what, "data size mismatch: shape and dtype need " + std::to_string(expected) +
                        " bytes but the file holds " + std::to_string(found));

  NDArray a;
  a.dtype = dtype;
  a.shape = shape->second.items;
  a.data.assign(bytes.begin() + static_cast<std::ptrdiff_t>(header_start + header_len), bytes.end());
  return a;
}

std::string write_npy(const NDArray& a) {
  std::string dict = "{'descr': '" + descr_of(a.dtype) + "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < a.shape.size(); ++i) dict += (i ? ", " : "") + std::to_string(a.shape[i]);
  dict += a.shape.size() == 1 ? ",), }" : "), }";
  // Pad with spaces so the data starts on a 64-byte boundary, as numpy does; the
  // header always ends in '\n'.
  const size_t prefix = kMagicLen + 2 + 2;
  size_t total = prefix + dict.size() + 1;
  size_t padded = (total + 63) / 64 * 64;
  dict.append(padded - total, ' ');
  dict += '\n';
  MTIR_ICHECK(dict.size() <= 0xffff, "npy header too long for version 1.0");

  std::string out(kMagic, kMagicLen);
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(dict.size() & 0xff);
  out += static_cast<char>((dict.size() >> 8) & 0xff);
  out += dict;
  out.append(a.data.begin(), a.data.end());
  return out;
}

}  // namespace mtir
