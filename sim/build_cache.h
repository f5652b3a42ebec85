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

// The call-graph files a command writes: none, one for a `-c` compile (<out stem>.ci), or
// one per unit for a compile-and-link (<out name>-<unit>.ci).
enum class CallGraphFiles { kNone, kUnit, kProgram };

struct CachedBuild {
  std::filesystem::path entry;       // the cache's folder for this key
  std::vector<std::string> sources;  // the source paths the command names, in order
  CallGraphFiles callgraph = CallGraphFiles::kNone;
};

// The cache entry a build command maps to, or nothing when the cache is off. `out` is the
// command's output; its #includes reach the -I folders and each source's own folder.
std::optional<CachedBuild> build_cache_entry(const std::vector<std::string>& command, const std::string& out);

// Copies a stored build's output (and the call-graph files its command writes, with this
// build's source paths) into place; false when there is none.
bool restore_cached_build(const CachedBuild& build, const std::filesystem::path& out);

// The call-graph files GCC wrote beside `out` (<out name>-<unit>.ci), sorted.
std::vector<std::filesystem::path> callgraph_files(const std::filesystem::path& out);

// Stores a successful build's output and the call-graph files its command wrote.
void store_cached_build(const CachedBuild& build, const std::filesystem::path& out);

// Builds `out` with `command` through the cache: a hit restores it (and leaves `log`
// empty), a miss runs the command with its output in `log` and stores it when it
// succeeds. The command's exit status (0 for a hit).
int build_with_cache(const std::vector<std::string>& command, const std::filesystem::path& out,
                     const std::filesystem::path& log);

// Builds `out` from `inputs` as one `flags... inputs... link_flags... -o out` command
// would (flags[0] the compiler), unit by unit through the cache: each C source compiled
// alone to <out>-<unit>.o (so GCC writes its call graph where the one command does,
// <out>-<unit>.ci), then linked with the other inputs. A program differing from a
// cached one in some units compiles only those. The first failing step's status (0 when
// all succeed), its output in `log`.
int build_units_with_cache(const std::vector<std::string>& flags, const std::vector<std::string>& inputs,
                           const std::vector<std::string>& link_flags, const std::filesystem::path& out,
                           const std::filesystem::path& log);

}  // namespace mtir::sim
