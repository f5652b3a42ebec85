#include "sim/artifact_files.h"

#include <filesystem>
#include <fstream>
#include <set>
#include <system_error>

#include "artifact/tar_reader.h"
#include "sim/process.h"
#include "support/diagnostic.h"

namespace mtir::sim {
namespace fs = std::filesystem;

namespace {

[[noreturn]] void fail(const std::string& message) { user_error(Span{}, message); }

// `path` without "." components and repeated slashes; "" if it is not a plain relative
// path to a file (empty, absolute, "..", or naming a folder).
std::string normal_relative(const std::string& path) {
  const fs::path p = fs::path(path).lexically_normal();
  if (p.empty() || p.is_absolute() || !p.has_filename() || p == ".") return "";
  for (const auto& part : p)
    if (part == "..") return "";
  return p.generic_string();
}

}  // namespace

std::string unpack_artifact(const std::string& archive, const std::string& name, const std::string& dir) {
  const auto entries = read_tar(archive, name);
  // Check every path first, so a clash never leaves a half-unpacked folder.
  std::set<std::string> files, folders;
  std::vector<std::string> paths;
  for (const auto& [path, contents] : entries) {
    const std::string rel = normal_relative(path);
    if (rel.empty()) fail(name + " is not a usable artifact: entry '" + path + "' does not name a file");
    if (!files.insert(rel).second) fail(name + " is not a usable artifact: it holds '" + rel + "' twice");
    for (fs::path parent = fs::path(rel).parent_path(); !parent.empty(); parent = parent.parent_path())
      folders.insert(parent.generic_string());
    paths.push_back(rel);
  }
  for (const auto& f : files)
    if (folders.count(f)) fail(name + " is not a usable artifact: '" + f + "' is both a file and a folder");
  for (size_t i = 0; i < entries.size(); ++i) {
    const fs::path out = fs::path(dir) / paths[i];
    std::error_code ec;
    fs::create_directories(out.parent_path(), ec);
    if (ec) fail("cannot unpack " + name + ": cannot create " + out.parent_path().string() + ": " + ec.message());
    std::ofstream f(out, std::ios::binary);
    f << entries[i].second;
    f.close();
    if (!f) fail("cannot unpack " + name + ": cannot write " + out.string());
  }
  // `tar cf model.tar folder/` puts everything under one top folder.
  std::string top;
  for (const auto& p : paths) {
    const std::string first = fs::path(p).begin()->generic_string();
    if (first == p || (!top.empty() && first != top)) return dir;
    top = first;
  }
  if (!files.count("metadata.json") && files.count(top + "/metadata.json")) return (fs::path(dir) / top).string();
  return dir;
}

FileReader artifact_graph_reader(const ArtifactInfo& info, const std::string& name) {
  const fs::path graph_dir = fs::path(info.graph_file).parent_path();
  const std::string graph_name = fs::path(info.graph_file).filename().string();
  return [graph_dir, graph_name, name](const std::string& relative) {
    const std::string rel = normal_relative(relative);
    if (rel.empty())
      fail(name + ": src/" + graph_name + " names '" + relative + "', which is not a file inside the artifact's src/ folder");
    const fs::path p = graph_dir / rel;
    std::error_code ec;
    if (!fs::is_regular_file(p, ec))
      fail(name + " lacks src/" + rel + ", which its graph needs (recompile it with this microtir)");
    return read_text(p);
  };
}

}  // namespace mtir::sim
