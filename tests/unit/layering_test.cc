// The layers of core/ hold: every `#include "<folder>/..."` in core/ must be allowed by
// the table under "## Layers" in docs/architecture.md, which this test reads (the page
// is the one place the rule is written). A folder of core/ without a row fails too.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

namespace {

namespace fs = std::filesystem;

const fs::path kSourceRoot = MICROTIR_SOURCE_DIR;

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

struct Include {
  std::string file;  // relative to core/
  int line = 0;
  std::string path;  // as written: "ir/expr.h"
};

// Every quoted include of the files under `core` (.h, .cc, .def).
std::vector<Include> core_includes(const fs::path& core) {
  std::vector<Include> out;
  const std::regex include(R"re(^\s*#\s*include\s+"([^"]+)")re");
  for (const auto& e : fs::recursive_directory_iterator(core)) {
    const std::string ext = e.path().extension().string();
    if (!e.is_regular_file() || (ext != ".h" && ext != ".cc" && ext != ".def")) continue;
    std::istringstream in(read_text(e.path()));
    int n = 0;
    for (std::string line; std::getline(in, line);) {
      ++n;
      std::smatch m;
      if (std::regex_search(line, m, include))
        out.push_back({fs::relative(e.path(), core).generic_string(), n, m[1].str()});
    }
  }
  std::sort(out.begin(), out.end(), [](const Include& a, const Include& b) {
    return a.file != b.file ? a.file < b.file : a.line < b.line;
  });
  return out;
}

std::string first_component(const std::string& path) { return path.substr(0, path.find('/')); }

// "file:line: includes X, which <folder> may not (allowed: ...)" for each include that
// goes to another folder of core/ the table does not allow.
std::vector<std::string> violations(const LayerTable& table, const std::set<std::string>& core_folders,
                                    const std::vector<Include>& includes) {
  std::vector<std::string> out;
  for (const auto& inc : includes) {
    const std::string from = first_component(inc.file);
    const std::string to = first_component(inc.path);
    if (inc.path.find('/') == std::string::npos || !core_folders.count(to) || to == from) continue;
    auto row = table.find(from);
    if (row == table.end()) continue;  // reported once per folder by the caller
    if (row->second.count(to) || row->second.count(inc.path)) continue;
    std::string allowed;
    for (const auto& a : row->second) allowed += (allowed.empty() ? "" : ", ") + a;
    out.push_back("core/" + inc.file + ":" + std::to_string(inc.line) + ": includes \"" + inc.path + "\", which " +
                  from + "/ may not (its row in docs/architecture.md allows: " + allowed + ")");
  }
  return out;
}

std::set<std::string> folders_of(const fs::path& core) {
  std::set<std::string> out;
  for (const auto& e : fs::directory_iterator(core))
    if (e.is_directory()) out.insert(e.path().filename().string());
  return out;
}

TEST(Layering, EveryIncludeInCoreFollowsTheTableInArchitectureMd) {
  const LayerTable table = parse_layer_table(read_text(kSourceRoot / "docs" / "architecture.md"));
  ASSERT_GE(table.size(), 10u) << "no layer table found under '## Layers' in docs/architecture.md";
  const fs::path core = kSourceRoot / "core";
  const std::set<std::string> folders = folders_of(core);
  for (const auto& f : folders)
    EXPECT_TRUE(table.count(f)) << "core/" << f << "/ has no row in the layer table of docs/architecture.md";
  for (const auto& [folder, allowed] : table) {
    EXPECT_TRUE(folders.count(folder)) << "the layer table names core/" << folder << "/, which does not exist";
    for (const auto& a : allowed)
      EXPECT_TRUE(folders.count(first_component(a)) && (a.find('/') == std::string::npos || fs::exists(core / a)))
          << "the row of " << folder << " allows '" << a << "', which is not a folder or header of core/";
  }
  const std::vector<Include> includes = core_includes(core);
  ASSERT_GT(includes.size(), 300u) << "too few includes found under " << core;
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
      {"codegen/a.cc", 1, "ir/expr.h"},        {"codegen/a.cc", 2, "ops/schedules.h"},
      {"codegen/a.cc", 3, "ops/devices.h"},    {"codegen/a.cc", 4, "driver/build.h"},
      {"codegen/a.cc", 5, "codegen/a.h"},      {"codegen/a.cc", 6, "flatbuffers/flatbuffers.h"},
      {"ir/expr.cc", 7, "codegen/codegen_c.h"}, {"ir/expr.cc", 8, "support/names.h"}};
  const std::vector<std::string> v = violations(table, folders, includes);
  ASSERT_EQ(v.size(), 3u);
  EXPECT_NE(v[0].find("core/codegen/a.cc:3: includes \"ops/devices.h\""), std::string::npos) << v[0];
  EXPECT_NE(v[1].find("core/codegen/a.cc:4: includes \"driver/build.h\""), std::string::npos) << v[1];
  EXPECT_NE(v[2].find("core/ir/expr.cc:7"), std::string::npos) << v[2];
  EXPECT_NE(v[2].find("allows: support"), std::string::npos) << v[2];
}

}  // namespace
