// Reading the ustar archives `compile -o model.tar` writes (and the usual ones tar(1)
// writes for a folder of regular files). Every problem is a user error naming the
// archive: truncation, a bad header checksum, a non-ustar header, a path that leaves
// the archive's folder, links and devices. No I/O: the caller reads the bytes.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace mtir {

// (path, contents) of each regular file, in archive order; directories are skipped.
std::vector<std::pair<std::string, std::string>> read_tar(const std::string& archive, const std::string& name);

}  // namespace mtir
