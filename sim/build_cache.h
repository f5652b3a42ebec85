// A content-addressed cache of firmware builds, like ccache for the one command that
// compiles and links a firmware (ccache caches neither links nor GCC's -fcallgraph-info
// files). The key is the compiler's identity and the command with every file in it, every
// header beside or under its include directories and every linker script in its -L
// directories (which INCLUDE finds), replaced by its content, so a
// rebuild of the same artifact in another temporary folder is a hit. Only successful
// builds are stored.
//
// MICROTIR_BUILD_CACHE: a folder, or "off" (default ${XDG_CACHE_HOME:-$HOME/.cache}/microtir/
// firmware); MICROTIR_BUILD_CACHE_MAX_MB bounds it (default 1024; the oldest used go).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace mtir::sim {

struct CachedBuild {
  std::filesystem::path entry;       // the cache's folder for this key
  std::vector<std::string> sources;  // the source paths the command names, in order
};

// The cache entry a build command maps to, or nothing when the cache is off. `out` is the
// command's output; its #includes reach the -I folders and each source's own folder.
std::optional<CachedBuild> build_cache_entry(const std::vector<std::string>& command, const std::string& out);

// Copies a stored build's output (and its call-graph files, with this build's source
// paths) into place; false when there is none.
bool restore_cached_build(const CachedBuild& build, const std::filesystem::path& out);

// The call-graph files GCC wrote beside `out` (<out name>-<unit>.ci), sorted.
std::vector<std::filesystem::path> callgraph_files(const std::filesystem::path& out);

// Stores a successful build's output and call-graph files (<out name>-<unit>.ci).
void store_cached_build(const CachedBuild& build, const std::filesystem::path& out);

// Builds `out` with `command` through the cache: a hit restores it (and leaves `log`
// empty), a miss runs the command with its output in `log` and stores it when it
// succeeds. The command's exit status (0 for a hit).
int build_with_cache(const std::vector<std::string>& command, const std::filesystem::path& out,
                     const std::filesystem::path& log);

}  // namespace mtir::sim
