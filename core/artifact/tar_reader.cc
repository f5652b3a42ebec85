#include "artifact/tar_reader.h"

#include <cstring>

#include "support/diagnostic.h"

namespace mtir {
namespace {

[[noreturn]] void broken(const std::string& name, const std::string& why) {
  user_error(Span{}, name + " is not a usable tar archive: " + why);
}

// An octal field: digits, optionally padded with spaces or NULs on either side.
unsigned long long octal(const char* field, size_t width, const std::string& name, const char* what) {
  unsigned long long v = 0;
  size_t i = 0;
  while (i < width && field[i] == ' ') ++i;
  bool any = false;
  for (; i < width && field[i] >= '0' && field[i] <= '7'; ++i) {
    if (v > (~0ull >> 3)) broken(name, std::string("the ") + what + " field overflows");
    v = v * 8 + static_cast<unsigned>(field[i] - '0');
    any = true;
  }
  for (; i < width; ++i)
    if (field[i] != ' ' && field[i] != '\0') broken(name, std::string("the ") + what + " field is not octal");
  if (!any) broken(name, std::string("the ") + what + " field is empty");
  return v;
}

std::string field_string(const char* field, size_t width) { return std::string(field, strnlen(field, width)); }

bool all_zero(const char* block) {
  for (size_t i = 0; i < 512; ++i)
    if (block[i]) return false;
  return true;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> read_tar(const std::string& archive, const std::string& name) {
  std::vector<std::pair<std::string, std::string>> files;
  size_t at = 0;
  while (true) {
    if (at + 512 > archive.size()) {
      if (at == archive.size() && !files.empty()) break;  // no end blocks: tolerated, as tar(1) does
      broken(name, archive.empty() ? "it is empty" : "it is truncated (a header is cut off)");
    }
    const char* h = archive.data() + at;
    if (all_zero(h)) break;  // the end-of-archive marker
    unsigned sum = 0;
    for (size_t i = 0; i < 512; ++i) sum += (i >= 148 && i < 156) ? ' ' : static_cast<unsigned char>(h[i]);
    if (octal(h + 148, 8, name, "checksum") != sum)
      broken(name, "the header at byte " + std::to_string(at) + " has a wrong checksum");
    if (std::memcmp(h + 257, "ustar", 5) != 0) broken(name, "the header at byte " + std::to_string(at) + " is not ustar");
    std::string path = field_string(h, 100);
    const std::string prefix = field_string(h + 345, 155);
    if (!prefix.empty()) path = prefix + "/" + path;
    const unsigned long long size = octal(h + 124, 12, name, "size");
    const char type = h[156];
    at += 512;
    if (size > archive.size() - at) broken(name, "it is truncated ('" + path + "' is cut off)");
    if (path.empty() || path[0] == '/' || path == ".." || path.compare(0, 3, "../") == 0 ||
        path.find("/../") != std::string::npos || (path.size() >= 3 && path.compare(path.size() - 3, 3, "/..") == 0))
      broken(name, "entry '" + path + "' would be written outside the archive's folder");
    if (type == '0' || type == '\0') {
      if (path.compare(0, 2, "./") == 0) path = path.substr(2);
      files.emplace_back(path, archive.substr(at, size));
    } else if (type != '5') {
      broken(name, "entry '" + path + "' is not a regular file or folder (type '" + std::string(1, type) + "')");
    }
    at += (size + 511) / 512 * 512;
  }
  if (files.empty()) broken(name, "it holds no files");
  return files;
}

}  // namespace mtir
