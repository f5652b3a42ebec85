// File input and output for the CLI: the only place that touches the file system.
// Outputs are written to a temporary name and renamed, so a failure never leaves a
// half-written file behind.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "support/diagnostic.h"

namespace mtir::cli {

// Reads a whole file ("-" is standard input); a user error if it cannot be read.
std::string read_file(const std::string& path);
// Creates `dir` (and parents) if missing; a user error if it is not a directory.
void ensure_directory(const std::string& dir);

// A work folder: the one the user named (kept), or a fresh temporary one (removed).
class TempDir {
 public:
  explicit TempDir(const std::string& keep) {
    if (!keep.empty()) {
      path_ = keep;
      return;
    }
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/microtir-XXXXXX";
    std::vector<char> buf(pattern.begin(), pattern.end());
    buf.push_back('\0');
    if (!mkdtemp(buf.data())) user_error({}, "cannot create a temporary folder under " + pattern);
    path_ = buf.data();
    owned_ = true;
  }
  ~TempDir() {
    std::error_code ec;
    if (owned_) std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  bool owned_ = false;
};

// A set of files written together: all are staged first, then renamed into place.
class OutputSet {
 public:
  void add(std::string path, std::string contents);
  void commit();  // write everything or nothing
 private:
  std::vector<std::pair<std::string, std::string>> files_;
};

}  // namespace mtir::cli
