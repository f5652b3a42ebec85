#include "cli/io.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

namespace mtir::cli {
namespace fs = std::filesystem;

static Span no_span() { return {}; }

std::string read_file(const std::string& path) {
  if (path == "-") {
    std::ostringstream os;
    os << std::cin.rdbuf();
    return os.str();
  }
  std::error_code ec;
  if (fs::is_directory(path, ec)) user_error(no_span(), "'" + path + "' is a directory, not a file");
  std::ifstream in(path, std::ios::binary);
  if (!in) user_error(no_span(), "cannot open '" + path + "': " + std::strerror(errno));
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) user_error(no_span(), "cannot read '" + path + "'");
  return s;
}

static std::string staged_name(const std::string& path) { return path + ".microtir-tmp"; }

static void write_staged(const std::string& path, const std::string& contents) {
  std::string tmp = staged_name(path);
  std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
  if (!out) user_error(no_span(), "cannot write '" + path + "': " + std::strerror(errno));
  out << contents;
  out.close();
  if (!out) {
    std::remove(tmp.c_str());
    user_error(no_span(), "cannot write '" + path + "'");
  }
}

static void publish(const std::string& path) {
  std::error_code ec;
  fs::rename(staged_name(path), path, ec);
  if (ec) user_error(no_span(), "cannot write '" + path + "': " + ec.message());
}

void ensure_directory(const std::string& dir) {
  std::error_code ec;
  if (fs::exists(dir, ec)) {
    if (!fs::is_directory(dir, ec)) user_error(no_span(), "'" + dir + "' exists and is not a directory");
    return;
  }
  fs::create_directories(dir, ec);
  if (ec) user_error(no_span(), "cannot create directory '" + dir + "': " + ec.message());
}

void OutputSet::add(std::string path, std::string contents) { files_.emplace_back(std::move(path), std::move(contents)); }

void OutputSet::commit() {
  size_t staged = 0;
  try {
    for (const auto& [path, contents] : files_) {
      write_staged(path, contents);
      ++staged;
    }
  } catch (...) {
    for (size_t i = 0; i < staged; ++i) std::remove(staged_name(files_[i].first).c_str());
    throw;
  }
  for (const auto& f : files_) publish(f.first);
  files_.clear();
}

}  // namespace mtir::cli
