#include "sim/build_cache.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <system_error>
#include <unistd.h>

#include "sim/cross_targets.h"
#include "support/digest.h"
#include "support/text.h"
#include "sim/process.h"

namespace mtir::sim {
namespace fs = std::filesystem;

namespace {

// Bumped when what an entry holds, or how keys are made, changes.
constexpr const char* kFormat = "microtir-build-cache-2";

std::optional<fs::path> cache_root() {
  const char* set = std::getenv("MICROTIR_BUILD_CACHE");
  if (set) {
    const std::string v = set;
    if (v.empty() || v == "off" || v == "0") return std::nullopt;
    return fs::path(v);
  }
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return fs::path(xdg) / "microtir/firmware";
  if (const char* home = std::getenv("HOME"); home && *home) return fs::path(home) / ".cache/microtir/firmware";
  return std::nullopt;
}

bool is_header(const fs::path& p) {
  const std::string ext = p.extension().string();
  return ext == ".h" || ext == ".inc" || ext == ".def";
}

// Every header in `dir` (below it too when `recursive`), by name relative to it and content.
bool is_linker_script(const fs::path& p) { return p.extension() == ".ld"; }

// The files of `dir` (and below it, if `recursive`) that `wanted` picks, by content.
void add_files(Digest& d, const fs::path& dir, bool recursive, bool (*wanted)(const fs::path&)) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return;
  std::vector<fs::path> found;
  auto visit = [&](const fs::directory_entry& e) {
    if (e.is_regular_file(ec) && wanted(e.path())) found.push_back(e.path());
  };
  if (recursive)
    for (const auto& e : fs::recursive_directory_iterator(dir, ec)) visit(e);
  else
    for (const auto& e : fs::directory_iterator(dir, ec)) visit(e);
  std::sort(found.begin(), found.end());
  for (const auto& p : found) {
    d.add(p.lexically_relative(dir).string());
    d.add(read_text(p));
  }
}

void add_headers(Digest& d, const fs::path& dir, bool recursive) { add_files(d, dir, recursive, is_header); }

bool is_file(const std::string& path) {
  std::error_code ec;
  return !path.empty() && fs::is_regular_file(path, ec);
}

// The compiler as ccache's default check sees it: its path, size and modification time.
std::string compiler_identity(const std::string& cc) {
  const std::string path = find_in_path(cc);
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  const auto time = fs::last_write_time(path, ec).time_since_epoch().count();
  return path + ":" + std::to_string(ec ? 0 : size) + ":" + std::to_string(time);
}

uintmax_t folder_bytes(const fs::path& dir) {
  uintmax_t total = 0;
  std::error_code ec;
  for (const auto& e : fs::recursive_directory_iterator(dir, ec))
    if (e.is_regular_file(ec)) total += e.file_size(ec);
  return total;
}

uintmax_t cache_limit() {
  uintmax_t limit_mb = 1024;
  if (const char* v = std::getenv("MICROTIR_BUILD_CACHE_MAX_MB"); v && *v) limit_mb = std::strtoull(v, nullptr, 10);
  return limit_mb << 20;
}

// The ledger of stored bytes: one line per store since the last scan (appends from
// parallel runs do not interleave), so a store sums a small file instead of walking
// every entry, which grew with the cache (tens of ms per store at a few thousand).
fs::path ledger(const fs::path& root) { return root / "stored-bytes"; }

// The bytes the ledger holds after adding `bytes`; nothing when there is no ledger yet.
std::optional<uintmax_t> record_stored_bytes(const fs::path& root, uintmax_t bytes) {
  std::error_code ec;
  if (!fs::exists(ledger(root), ec)) return std::nullopt;
  std::ofstream(ledger(root), std::ios::app) << bytes << "\n";
  std::ifstream in(ledger(root));
  uintmax_t total = 0, n = 0;
  while (in >> n) total += n;
  return total;
}

// Drops the least recently used entries once the cache passes its bound, and restarts
// the ledger at what is left.
void trim_cache(const fs::path& root) {
  const uintmax_t limit = cache_limit();
  std::vector<std::pair<fs::file_time_type, fs::path>> entries;
  std::map<fs::path, uintmax_t> bytes;
  uintmax_t total = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(root, ec)) {
    if (!e.is_directory(ec)) continue;
    entries.emplace_back(e.last_write_time(ec), e.path());
    total += bytes[e.path()] = folder_bytes(e.path());
  }
  if (total > limit) {
    std::sort(entries.begin(), entries.end());
    for (const auto& [time, path] : entries) {
      if (total <= limit * 4 / 5) break;
      total -= bytes[path];
      fs::remove_all(path, ec);
    }
  }
  std::ofstream(ledger(root), std::ios::trunc) << total << "\n";
}

// The longest paths first, so /a/lib1.c is not replaced inside /a/lib10.c.
std::vector<size_t> longest_first(const std::vector<std::string>& paths) {
  std::vector<size_t> order(paths.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return paths[a].size() > paths[b].size(); });
  return order;
}

// The object the unit `index` of `out` compiles to, <out>-<unit>.o. A unit whose name an
// earlier one took gets another prefix, <out>.<index>-<unit>.o, so its call graph stays
// out of the program's (GCC's one command keeps one call-graph file per name too).
fs::path unit_object(const fs::path& out, const std::string& source, size_t index, std::set<std::string>& seen) {
  const std::string stem = fs::path(source).stem().string();
  std::string prefix = out.filename().string();
  if (!seen.insert(stem).second) prefix += "." + std::to_string(index);
  return out.parent_path() / (prefix + "-" + stem + ".o");
}

std::string placeholder(size_t i) { return "@mtir-source-" + std::to_string(i) + "@"; }

bool copy_into(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
  return !ec;
}

// What call-graph files the command writes (GCC's -fcallgraph-info).
CallGraphFiles callgraph_kind(const std::vector<std::string>& command) {
  bool writes = false, compile_only = false;
  for (const auto& arg : command) {
    writes = writes || arg.compare(0, 16, "-fcallgraph-info") == 0;
    compile_only = compile_only || arg == "-c";
  }
  if (!writes) return CallGraphFiles::kNone;
  return compile_only ? CallGraphFiles::kUnit : CallGraphFiles::kProgram;
}

// The call-graph files `build` writes beside `out`, each with its name in the entry.
std::vector<std::pair<fs::path, std::string>> written_callgraph(const CachedBuild& build, const fs::path& out) {
  std::vector<std::pair<fs::path, std::string>> files;
  if (build.callgraph == CallGraphFiles::kUnit) {
    fs::path ci = out;
    std::error_code ec;
    if (fs::is_regular_file(ci.replace_extension(".ci"), ec)) files.emplace_back(ci, "unit.ci");
  } else if (build.callgraph == CallGraphFiles::kProgram) {
    const size_t prefix = out.filename().string().size() + 1;
    for (const auto& ci : callgraph_files(out)) files.emplace_back(ci, ci.filename().string().substr(prefix));
  }
  return files;
}

// Where a stored call-graph file goes back for `out`.
fs::path restored_callgraph(const CachedBuild& build, const fs::path& out, const std::string& stored) {
  fs::path to = out;
  if (build.callgraph == CallGraphFiles::kUnit) return to.replace_extension(".ci");
  return out.parent_path() / (out.filename().string() + "-" + stored);
}

}  // namespace

std::vector<fs::path> callgraph_files(const fs::path& out) {
  std::vector<fs::path> found;
  const std::string prefix = out.filename().string() + "-";
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(out.parent_path(), ec)) {
    const std::string name = e.path().filename().string();
    if (name.compare(0, prefix.size(), prefix) == 0 && e.path().extension() == ".ci") found.push_back(e.path());
  }
  std::sort(found.begin(), found.end());
  return found;
}

std::optional<CachedBuild> build_cache_entry(const std::vector<std::string>& command, const std::string& out) {
  const std::optional<fs::path> root = cache_root();
  if (!root || command.empty()) return std::nullopt;
  CachedBuild build;
  build.callgraph = callgraph_kind(command);
  Digest d;
  d.add(kFormat);
  d.add(compiler_identity(command[0]));
  for (size_t i = 1; i < command.size(); ++i) {
    const std::string& arg = command[i];
    if (arg == out) {
      d.add("@out");
      continue;
    }
    // A file stands for its content, not its place; so does a path inside an argument
    // (-T/x/cortex_m.ld).
    const size_t slash = is_file(arg) ? 0 : arg.find('/');
    if (slash != std::string::npos && is_file(arg.substr(slash))) {
      const fs::path file = arg.substr(slash);
      d.add(arg.substr(0, slash) + "@file:" + file.filename().string());
      d.add(read_text(file));
      if (slash == 0) {
        build.sources.push_back(arg);
        add_headers(d, file.parent_path(), false);  // #include "x.h" beside the source
      }
      continue;
    }
    if (arg.compare(0, 2, "-I") == 0) {
      d.add("-I@dir");
      add_headers(d, arg.substr(2), true);
      continue;
    }
    // A linker script's INCLUDEs are found on the -L folders (cortex_m_sections.ld).
    if (arg.compare(0, 2, "-L") == 0) {
      d.add("-L@dir");
      add_files(d, arg.substr(2), false, is_linker_script);
      continue;
    }
    d.add(arg);
  }
  build.entry = *root / d.hex();
  return build;
}

bool restore_cached_build(const CachedBuild& build, const fs::path& out) {
  std::error_code ec;
  const fs::path program = build.entry / "program";
  if (!fs::is_regular_file(program, ec) || !copy_into(program, out)) return false;
  fs::permissions(out, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                           fs::perms::others_read | fs::perms::others_exec, ec);
  const std::vector<size_t> order = longest_first(build.sources);
  for (const auto& e : fs::directory_iterator(build.entry / "callgraph", ec)) {
    std::string text = read_text(e.path());
    for (size_t i : order) text = replace_all(text, placeholder(i), build.sources[i]);
    std::ofstream(restored_callgraph(build, out, e.path().filename().string()), std::ios::binary) << text;
  }
  fs::last_write_time(build.entry, fs::file_time_type::clock::now(), ec);  // recently used
  return true;
}

void store_cached_build(const CachedBuild& build, const fs::path& out) {
  std::error_code ec;
  const fs::path root = build.entry.parent_path();
  fs::create_directories(root, ec);
  // Filled aside and renamed into place, so a parallel run never sees half an entry.
  const fs::path staging = root / (build.entry.filename().string() + ".tmp" + std::to_string(::getpid()));
  fs::remove_all(staging, ec);
  fs::create_directories(staging / "callgraph", ec);
  if (ec || !copy_into(out, staging / "program")) {
    fs::remove_all(staging, ec);
    return;
  }
  const std::vector<size_t> order = longest_first(build.sources);
  for (const auto& [ci, stored] : written_callgraph(build, out)) {
    std::string text = read_text(ci);
    for (size_t i : order) text = replace_all(text, build.sources[i], placeholder(i));
    std::ofstream(staging / "callgraph" / stored, std::ios::binary) << text;
  }
  fs::rename(staging, build.entry, ec);
  if (ec) {
    fs::remove_all(staging, ec);  // another run stored it first
    return;
  }
  const std::optional<uintmax_t> stored = record_stored_bytes(root, folder_bytes(build.entry));
  if (!stored || *stored > cache_limit()) trim_cache(root);
}

int build_with_cache(const std::vector<std::string>& command, const fs::path& out, const fs::path& log) {
  const std::optional<CachedBuild> cached = build_cache_entry(command, out.string());
  if (cached && restore_cached_build(*cached, out)) {
    std::ofstream(log, std::ios::trunc);
    return 0;
  }
  const int rc = run_process(command, log);
  if (rc == 0 && cached) store_cached_build(*cached, out);
  return rc;
}

int build_units_with_cache(const std::vector<std::string>& flags, const std::vector<std::string>& inputs,
                           const std::vector<std::string>& link_flags, const fs::path& out, const fs::path& log) {
  std::vector<std::string> link;
  for (const auto& f : flags)
    if (f.compare(0, 16, "-fcallgraph-info") != 0) link.push_back(f);  // the units wrote theirs
  // A specs file that picks the C library picks its headers too (picolibc's math.h).
  std::vector<std::string> compile = flags;
  for (const auto& f : link_flags)
    if (f.compare(0, 8, "--specs=") == 0) compile.push_back(f);
  std::set<std::string> seen;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string& input = inputs[i];
    if (fs::path(input).extension() != ".c") {
      link.push_back(input);  // an object (the LLVM backend's)
      continue;
    }
    const fs::path object = unit_object(out, input, i, seen);
    std::vector<std::string> unit = compile;
    unit.insert(unit.end(), {"-c", input, "-o", object.string()});
    if (const int rc = build_with_cache(unit, object, log); rc != 0) return rc;
    link.push_back(object.string());
  }
  link.insert(link.end(), link_flags.begin(), link_flags.end());
  link.insert(link.end(), {"-o", out.string()});
  return build_with_cache(link, out, log);
}

}  // namespace mtir::sim
