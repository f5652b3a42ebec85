#include "artifact/tar.h"

#include <cstdio>
#include <cstring>

#include "support/diagnostic.h"

namespace mtir {
namespace {

void put_octal(char* field, size_t width, unsigned long long value) {
  // width - 1 digits and a NUL, as ustar readers expect.
  std::snprintf(field, width, "%0*llo", static_cast<int>(width - 1), value);
}

}  // namespace

std::string make_tar(const std::vector<std::pair<std::string, std::string>>& files) {
  std::string out;
  for (const auto& [path, contents] : files) {
    char header[512];
    std::memset(header, 0, sizeof header);
    // Names longer than 100 bytes go in the prefix field, split at a '/'.
    std::string name = path, prefix;
    if (name.size() > 100) {
      size_t cut = path.rfind('/', 155);
      if (cut == std::string::npos || path.size() - cut - 1 > 100 || cut > 155)
        user_error(Span{}, "path '" + path + "' is too long for a tar archive");
      prefix = path.substr(0, cut);
      name = path.substr(cut + 1);
    }
    std::memcpy(header, name.data(), name.size());
    put_octal(header + 100, 8, 0644);                // mode
    put_octal(header + 108, 8, 0);                   // uid
    put_octal(header + 116, 8, 0);                   // gid
    put_octal(header + 124, 12, contents.size());    // size
    put_octal(header + 136, 12, 0);                  // mtime
    std::memset(header + 148, ' ', 8);               // checksum, counted as spaces
    header[156] = '0';                               // a regular file
    std::memcpy(header + 257, "ustar", 6);           // magic with its NUL
    std::memcpy(header + 263, "00", 2);              // version
    std::memcpy(header + 345, prefix.data(), prefix.size());
    unsigned sum = 0;
    for (unsigned char c : header) sum += c;
    std::snprintf(header + 148, 8, "%06o", sum);     // six digits, NUL, then the space left from above
    header[155] = ' ';
    out.append(header, sizeof header);
    out += contents;
    out.append((512 - contents.size() % 512) % 512, '\0');
  }
  out.append(1024, '\0');  // two zero blocks end the archive
  return out;
}

}  // namespace mtir
