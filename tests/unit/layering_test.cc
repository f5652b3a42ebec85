// The layers hold: every `#include "<folder>/..."` in core/ and in the top-level folders
// of product code outside it (crt/, sim/, wasm/, python/; web/'s relative JavaScript imports) must
// be allowed by the table under "## Layers" in docs/architecture.md, which this test
// reads (the page is the one place the rule is written). A folder without a row fails
// too. A folder is a folder of core/ (`ir`, `cli`, ...) or one of those top-level ones.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include "support/source_dir.h"

namespace {

namespace fs = std::filesystem;

const fs::path kSourceRoot = mtir::source_dir();

// folder -> what it may include: folder names and single headers ("ops/schedules.h").
using LayerTable = std::map<std::string, std::set<std::string>>;

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The rows of the table in the "## Layers" section: | `folder` | `a`, `b/c.h` | why |.
LayerTable parse_layer_table(const std::string& markdown) {
  LayerTable table;
  std::istringstream in(markdown);
  bool in_section = false;
  const std::regex row(R"(^\|\s*`([a-z_]+)`\s*\|([^|]*)\|)");
  const std::regex entry("`([^`]+)`");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("## ", 0) == 0) in_section = line == "## Layers";
    std::smatch m;
    if (!in_section || !std::regex_search(line, m, row)) continue;
    std::set<std::string>& allowed = table[m[1].str()];
    const std::string cell = m[2].str();
    for (std::sregex_iterator it(cell.begin(), cell.end(), entry), end; it != end; ++it) allowed.insert((*it)[1].str());
  }
  return table;
}

// The top-level folders of product code outside core/, each a layer of its own.
const std::vector<std::string> kTopLevelFolders = {"crt", "sim", "wasm", "web", "python"};

struct Include {
  std::string file;  // relative to the source root: "core/ir/expr.cc", "sim/process.cc"
  int line = 0;
  std::string path;  // as written: "ir/expr.h"; a JavaScript import as resolved: "core/codegen/wasm/x.mjs"
};

// The folder a file of the source tree belongs to: "core/ir/expr.cc" -> "ir", "sim/a.cc" -> "sim".
std::string folder_of_file(const std::string& file) {
  std::string rest = file.rfind("core/", 0) == 0 ? file.substr(5) : file;
  return rest.substr(0, rest.find('/'));
}

// Every quoted include of the C and C++ files (.h, .cc, .c, .def) under core/ and the
// top-level folders, and every relative import of their JavaScript, resolved against the
// source root.
std::vector<Include> source_includes(const fs::path& root) {
  std::vector<Include> out;
  const std::regex include(R"re(^\s*#\s*include\s+"([^"]+)")re");
  const std::regex import(R"re((?:from|import)\s+'(\.[^']+)')re");
  std::vector<fs::path> dirs = {root / "core"};
  for (const auto& t : kTopLevelFolders) dirs.push_back(root / t);
  for (const auto& dir : dirs) {
    if (!fs::exists(dir)) continue;
    for (auto it = fs::recursive_directory_iterator(dir); it != fs::recursive_directory_iterator(); ++it) {
      const auto& e = *it;
      if (e.is_directory() && e.path().filename() == "node_modules") it.disable_recursion_pending();
      const std::string ext = e.path().extension().string();
      const bool c_like = ext == ".h" || ext == ".cc" || ext == ".c" || ext == ".def";
      const bool js = ext == ".js" || ext == ".mjs";
      if (!e.is_regular_file() || (!c_like && !js)) continue;
      const std::string file = fs::relative(e.path(), root).generic_string();
      std::istringstream in(read_text(e.path()));
      int n = 0;
      for (std::string line; std::getline(in, line);) {
        ++n;
        std::smatch m;
        if (c_like && std::regex_search(line, m, include)) out.push_back({file, n, m[1].str()});
        if (js && std::regex_search(line, m, import)) {
          fs::path target = (e.path().parent_path() / m[1].str()).lexically_normal();
          out.push_back({file, n, fs::relative(target, root).generic_string()});
        }
      }
    }
  }
  std::sort(out.begin(), out.end(), [](const Include& a, const Include& b) {
    return a.file != b.file ? a.file < b.file : a.line < b.line;
  });
  return out;
}

std::string first_component(const std::string& path) { return path.substr(0, path.find('/')); }

// "file:line: includes X, which <folder> may not (allowed: ...)" for each include that
// goes to another folder the table does not allow. An include names a folder of core/
// ("ir/expr.h", core/ is on the include path), a top-level folder ("sim/process.h") or
// a file of its own folder; a resolved JavaScript import names "core/<folder>/...".
std::vector<std::string> violations(const LayerTable& table, const std::set<std::string>& folders,
                                    const std::vector<Include>& includes) {
  std::vector<std::string> out;
  for (const auto& inc : includes) {
    const std::string from = folder_of_file(inc.file);
    const std::string path = inc.path.rfind("core/", 0) == 0 ? inc.path.substr(5) : inc.path;
    const std::string to = first_component(path);
    if (path.find('/') == std::string::npos || !folders.count(to) || to == from) continue;
    auto row = table.find(from);
    if (row == table.end()) continue;  // reported once per folder by the caller
    if (row->second.count(to) || row->second.count(path)) continue;
    std::string allowed;
    for (const auto& a : row->second) allowed += (allowed.empty() ? "" : ", ") + a;
    out.push_back(inc.file + ":" + std::to_string(inc.line) + ": includes \"" + inc.path + "\", which " + from +
                  "/ may not (its row in docs/architecture.md allows: " + allowed + ")");
  }
  return out;
}

// The folders of core/ and the top-level folders of product code that exist.
std::set<std::string> folders_of(const fs::path& root) {
  std::set<std::string> out;
  for (const auto& e : fs::directory_iterator(root / "core"))
    if (e.is_directory()) out.insert(e.path().filename().string());
  for (const auto& t : kTopLevelFolders)
    if (fs::is_directory(root / t)) out.insert(t);
  return out;
}

// Where a folder of the table lives: core/<folder> or <folder> at the top.
fs::path folder_path(const fs::path& root, const std::string& folder) {
  return fs::is_directory(root / "core" / folder) ? root / "core" / folder : root / folder;
}

TEST(Layering, EveryIncludeFollowsTheTableInArchitectureMd) {
  const LayerTable table = parse_layer_table(read_text(kSourceRoot / "docs" / "architecture.md"));
  ASSERT_GE(table.size(), 10u) << "no layer table found under '## Layers' in docs/architecture.md";
  const std::set<std::string> folders = folders_of(kSourceRoot);
  for (const auto& t : kTopLevelFolders) EXPECT_TRUE(folders.count(t)) << t << "/ is missing from the source tree";
  for (const auto& f : folders)
    EXPECT_TRUE(table.count(f)) << f << "/ has no row in the layer table of docs/architecture.md";
  for (const auto& [folder, allowed] : table) {
    EXPECT_TRUE(folders.count(folder)) << "the layer table names " << folder << "/, which does not exist";
    for (const auto& a : allowed) {
      const std::string top = first_component(a);
      EXPECT_TRUE(folders.count(top) &&
                  (a.find('/') == std::string::npos || fs::exists(folder_path(kSourceRoot, top) / a.substr(top.size() + 1))))
          << "the row of " << folder << " allows '" << a << "', which is not a folder or a header of one";
    }
  }
  const std::vector<Include> includes = source_includes(kSourceRoot);
  ASSERT_GT(includes.size(), 300u) << "too few includes found under " << kSourceRoot;
  std::string report;
  for (const auto& v : violations(table, folders, includes)) report += v + "\n";
  EXPECT_TRUE(report.empty()) << report;
}

// The checker itself: a header entry allows that header only, a folder entry the folder,
// and includes of the own folder, of outside folders and of system headers pass.
TEST(Layering, CheckerFlagsEdgesTheTableDoesNotAllow) {
  const LayerTable table = parse_layer_table(
      "# x\n## Layers\n| folder | may include | why |\n| --- | --- | --- |\n"
      "| `ir` | `support` | base |\n| `codegen` | `ir`, `ops/schedules.h` | up |\n## Next\n| `ops` | `codegen` | ignored |\n");
  ASSERT_EQ(table.size(), 2u);
  const std::set<std::string> folders = {"ir", "support", "codegen", "ops", "driver"};
  const std::vector<Include> includes = {
      {"core/codegen/a.cc", 1, "ir/expr.h"},        {"core/codegen/a.cc", 2, "ops/schedules.h"},
      {"core/codegen/a.cc", 3, "ops/devices.h"},    {"core/codegen/a.cc", 4, "driver/build.h"},
      {"core/codegen/a.cc", 5, "codegen/a.h"},      {"core/codegen/a.cc", 6, "flatbuffers/flatbuffers.h"},
      {"core/ir/expr.cc", 7, "codegen/codegen_c.h"}, {"core/ir/expr.cc", 8, "support/names.h"}};
  const std::vector<std::string> v = violations(table, folders, includes);
  ASSERT_EQ(v.size(), 3u);
  EXPECT_NE(v[0].find("core/codegen/a.cc:3: includes \"ops/devices.h\""), std::string::npos) << v[0];
  EXPECT_NE(v[1].find("core/codegen/a.cc:4: includes \"driver/build.h\""), std::string::npos) << v[1];
  EXPECT_NE(v[2].find("core/ir/expr.cc:7"), std::string::npos) << v[2];
  EXPECT_NE(v[2].find("allows: support"), std::string::npos) << v[2];
}

// Top-level folders are layers too: core/cli may reach sim/ only through its row, sim/
// reaches core's folders through its own, and a JavaScript import resolved into core/
// counts as an include of that core folder.
TEST(Layering, TopLevelFoldersAreLayersToo) {
  const LayerTable table = parse_layer_table(
      "## Layers\n| `cli` | `driver` | x |\n| `sim` | `driver` | x |\n| `web` | `codegen` | x |\n"
      "| `driver` | | x |\n| `codegen` | | x |\n| `ir` | | x |\n");
  const std::set<std::string> folders = {"cli", "sim", "web", "driver", "codegen", "ir"};
  const std::vector<Include> includes = {
      {"core/cli/main.cc", 1, "sim/process.h"},  {"sim/host_sim.cc", 2, "driver/build.h"},
      {"sim/host_sim.cc", 3, "ir/expr.h"},       {"sim/host_sim.cc", 4, "process.h"},
      {"web/src/main.js", 5, "core/codegen/wasm/module_env.mjs"}, {"web/src/main.js", 6, "core/ir/x.mjs"}};
  const std::vector<std::string> v = violations(table, folders, includes);
  ASSERT_EQ(v.size(), 3u);
  EXPECT_NE(v[0].find("core/cli/main.cc:1: includes \"sim/process.h\", which cli/ may not"), std::string::npos) << v[0];
  EXPECT_NE(v[1].find("sim/host_sim.cc:3"), std::string::npos) << v[1];
  EXPECT_NE(v[2].find("web/src/main.js:6"), std::string::npos) << v[2];
}

}  // namespace
