// A minimal, deterministic POSIX ustar writer: what `compile -o model.tar` produces.
// Every entry is a regular file with mode 0644, owner 0 and time 0, so the same
// artifact gives the same bytes.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace mtir {

// The archive of `files` (path inside the archive, contents), in that order. A user
// error if a path is too long for ustar (255 bytes, split at a '/').
std::string make_tar(const std::vector<std::pair<std::string, std::string>>& files);

}  // namespace mtir
