// The firmware build cache (sim/build_cache.h): keys follow content, not place; a stored
// build comes back with its call graph naming this build's sources; "off" disables it.
// And the firmware builder on it (sim/artifact_runner.h): unit by unit, so a second
// firmware of the same kernels compiles only what differs, into the same program.
#include "sim/build_cache.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <fstream>

#include "sim/artifact_runner.h"
#include "sim/cross_targets.h"
#include "sim/host_sim.h"
#include "sim/process.h"
#include "support/text.h"

namespace fs = std::filesystem;
using mtir::sim::build_cache_entry;

namespace {

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

class BuildCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("mtir_build_cache_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    setenv("MICROTIR_BUILD_CACHE", (root_ / "cache").c_str(), 1);
    unsetenv("MICROTIR_BUILD_CACHE_MAX_MB");
  }
  void TearDown() override {
    unsetenv("MICROTIR_BUILD_CACHE");
    fs::remove_all(root_);
  }
  // A program in `dir`: a source, a header beside it and one under an -I folder.
  std::vector<std::string> project(const std::string& dir, const std::string& define = "") {
    const fs::path d = root_ / dir;
    write(d / "inc/api.h", "int twice(int x);\n");
    write(d / "src/local.h", "#define SEVEN 7\n");
    write(d / "src/main.c",
          "#include \"api.h\"\n#include \"local.h\"\nint twice(int x) { return 2 * x; }\n"
          "int main(void) { return twice(SEVEN) - 14; }\n");
    std::vector<std::string> cmd = {"cc", "-O2", "-fcallgraph-info=su", "-I" + (d / "inc").string()};
    if (!define.empty()) cmd.push_back("-D" + define);
    cmd.insert(cmd.end(), {(d / "src/main.c").string(), "-o", (d / "prog").string()});
    return cmd;
  }
  fs::path root_;
};

TEST_F(BuildCacheTest, KeyFollowsContentNotPlace) {
  const auto a = build_cache_entry(project("a"), (root_ / "a/prog").string());
  const auto b = build_cache_entry(project("b"), (root_ / "b/prog").string());
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->entry, b->entry);
  EXPECT_EQ(a->entry.parent_path(), root_ / "cache");
  ASSERT_EQ(b->sources.size(), 1u);
  EXPECT_EQ(b->sources[0], (root_ / "b/src/main.c").string());
}

TEST_F(BuildCacheTest, HeadersFlagsAndSourcesChangeTheKey) {
  const auto base = build_cache_entry(project("a"), (root_ / "a/prog").string())->entry;
  EXPECT_NE(base, build_cache_entry(project("b", "X=1"), (root_ / "b/prog").string())->entry);
  auto cmd = project("c");
  write(root_ / "c/inc/api.h", "int twice(int y);\n");  // under the -I folder
  EXPECT_NE(base, build_cache_entry(cmd, (root_ / "c/prog").string())->entry);
  cmd = project("d");
  write(root_ / "d/src/local.h", "#define SEVEN 8\n");  // beside the source
  EXPECT_NE(base, build_cache_entry(cmd, (root_ / "d/prog").string())->entry);
  cmd = project("e");
  write(root_ / "e/src/main.c", "int main(void) { return 0; }\n");
  EXPECT_NE(base, build_cache_entry(cmd, (root_ / "e/prog").string())->entry);
}

// The Cortex-M boards' scripts INCLUDE cortex_m_sections.ld from the -L folder: its
// content is in the key, its place is not.
TEST_F(BuildCacheTest, LinkerScriptsOnTheLibraryPathChangeTheKey) {
  auto with_port = [&](const std::string& dir, const std::string& sections) {
    write(root_ / dir / "port/board.ld", "INCLUDE sections.ld\n");
    write(root_ / dir / "port/sections.ld", sections);
    auto cmd = project(dir);
    cmd.insert(cmd.end() - 2, {"-L" + (root_ / dir / "port").string(), "-T" + (root_ / dir / "port/board.ld").string()});
    return build_cache_entry(cmd, (root_ / dir / "prog").string())->entry;
  };
  const auto a = with_port("a", "SECTIONS { }\n");
  EXPECT_EQ(a, with_port("b", "SECTIONS { }\n"));
  EXPECT_NE(a, with_port("c", "SECTIONS { .text : { *(.text) } }\n"));
}

TEST_F(BuildCacheTest, OffDisablesIt) {
  setenv("MICROTIR_BUILD_CACHE", "off", 1);
  EXPECT_FALSE(build_cache_entry(project("a"), (root_ / "a/prog").string()));
}

TEST_F(BuildCacheTest, StoredBuildComesBackWithItsCallGraph) {
  const auto cmd = project("a");
  const fs::path prog_a = root_ / "a/prog";
  ASSERT_EQ(mtir::sim::run_process(cmd, root_ / "a/build.log"), 0) << mtir::sim::read_text(root_ / "a/build.log");
  const auto a = build_cache_entry(cmd, prog_a.string());
  ASSERT_TRUE(a);
  EXPECT_FALSE(mtir::sim::restore_cached_build(*a, root_ / "nowhere"));
  mtir::sim::store_cached_build(*a, prog_a);

  const auto cmd_b = project("b");
  const fs::path prog_b = root_ / "b/prog";
  const auto b = build_cache_entry(cmd_b, prog_b.string());
  ASSERT_TRUE(b);
  ASSERT_TRUE(mtir::sim::restore_cached_build(*b, prog_b));
  EXPECT_EQ(mtir::sim::run_process({prog_b.string()}, root_ / "b/run.log"), 0);
  const std::string graph = mtir::sim::read_text(root_ / "b/prog-main.ci");
  EXPECT_NE(graph.find((root_ / "b/src/main.c").string()), std::string::npos) << graph;
  EXPECT_EQ(graph.find((root_ / "a/src/main.c").string()), std::string::npos) << graph;
  EXPECT_NE(graph.find("twice"), std::string::npos);
}

// The call-graph files of one program: <name>-<unit>.ci beside it, sorted; not another
// program's, not other files.
TEST_F(BuildCacheTest, CallGraphFilesAreThoseOfTheProgram) {
  for (const char* name : {"prog-b.ci", "prog-a.ci", "prog-a.o", "other-a.ci", "prog.ci"}) write(root_ / name, "x");
  const auto found = mtir::sim::callgraph_files(root_ / "prog");
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0], root_ / "prog-a.ci");
  EXPECT_EQ(found[1], root_ / "prog-b.ci");
}

// build_with_cache, as both firmware builders call it: a miss runs and stores, a hit in
// another folder restores the program and empties the log, a failure is not stored and
// keeps the compiler's message.
TEST_F(BuildCacheTest, BuildWithCacheStoresOnlySuccesses) {
  const std::vector<std::string> a = project("a");
  ASSERT_EQ(mtir::sim::build_with_cache(a, root_ / "a/prog", root_ / "a/build.log"), 0);
  EXPECT_TRUE(fs::exists(build_cache_entry(a, (root_ / "a/prog").string())->entry));
  write(root_ / "b/build.log", "stale");
  EXPECT_EQ(mtir::sim::build_with_cache(project("b"), root_ / "b/prog", root_ / "b/build.log"), 0);
  EXPECT_EQ(mtir::sim::run_process({(root_ / "b/prog").string()}, root_ / "b/run.log"), 0);
  EXPECT_EQ(fs::file_size(root_ / "b/build.log"), 0u);
  const std::vector<std::string> broken = project("c");
  write(root_ / "c/src/main.c", "int main(void) { return oops; }\n");
  EXPECT_NE(mtir::sim::build_with_cache(broken, root_ / "c/prog", root_ / "c/build.log"), 0);
  EXPECT_FALSE(fs::exists(build_cache_entry(broken, (root_ / "c/prog").string())->entry));
  std::ifstream log(root_ / "c/build.log");
  EXPECT_NE(std::string(std::istreambuf_iterator<char>(log), {}).find("oops"), std::string::npos);
}

// A `-c` compile writes one call graph, <object stem>.ci: it is stored with the object and
// comes back naming this build's source.
TEST_F(BuildCacheTest, ACompiledUnitComesBackWithItsCallGraph) {
  auto unit = [&](const std::string& dir) {
    std::vector<std::string> cmd = project(dir);
    cmd.resize(cmd.size() - 3);  // the source, -o and the program
    cmd.insert(cmd.end(), {"-c", (root_ / dir / "src/main.c").string(), "-o", (root_ / dir / "prog-main.o").string()});
    return cmd;
  };
  ASSERT_EQ(mtir::sim::build_with_cache(unit("a"), root_ / "a/prog-main.o", root_ / "a/build.log"), 0)
      << mtir::sim::read_text(root_ / "a/build.log");
  ASSERT_TRUE(fs::exists(root_ / "a/prog-main.ci"));
  ASSERT_EQ(mtir::sim::build_with_cache(unit("b"), root_ / "b/prog-main.o", root_ / "b/build.log"), 0);
  EXPECT_EQ(fs::file_size(root_ / "b/build.log"), 0u);  // a hit
  EXPECT_EQ(mtir::sim::read_text(root_ / "b/prog-main.o"), mtir::sim::read_text(root_ / "a/prog-main.o"));
  const std::string graph = mtir::sim::read_text(root_ / "b/prog-main.ci");
  EXPECT_NE(graph.find((root_ / "b/src/main.c").string()), std::string::npos) << graph;
  EXPECT_EQ(graph.find((root_ / "a/src/main.c").string()), std::string::npos) << graph;
}

// A link writes no call graph: the units' files beside its output are not its own, and
// a restored link leaves them as this build's compiles wrote them.
TEST_F(BuildCacheTest, ALinkStoresNoCallGraph) {
  write(root_ / "a/main.c", "int main(void) { return 0; }\n");
  ASSERT_EQ(mtir::sim::run_process({"cc", "-c", (root_ / "a/main.c").string(), "-o", (root_ / "a/prog-main.o").string()},
                                   root_ / "a/cc.log"), 0);
  write(root_ / "a/prog-main.ci", "graph: { title: \"main.c\" }\n");
  const std::vector<std::string> link = {"cc", (root_ / "a/prog-main.o").string(), "-o", (root_ / "a/prog").string()};
  ASSERT_EQ(mtir::sim::build_with_cache(link, root_ / "a/prog", root_ / "a/build.log"), 0);
  const auto entry = build_cache_entry(link, (root_ / "a/prog").string());
  ASSERT_TRUE(entry && fs::exists(entry->entry / "program"));
  EXPECT_TRUE(fs::is_empty(entry->entry / "callgraph"));
}

// The firmware builder compiles unit by unit through the cache: a second firmware with
// the same kernel and another main compiles only main.c (and links), and the program is
// the one the Makefile's single command beside it builds.
TEST_F(BuildCacheTest, FirmwaresShareTheirUnchangedUnits) {
  const mtir::sim::CrossTarget& host = mtir::sim::find_cross_target("host");
  auto firmware = [&](const std::string& dir, int x) {
    write(root_ / dir / "kernel.c", "int kernel(int x);\nint kernel(int x) { return x * x; }\n");
    write(root_ / dir / "main.c", "int kernel(int x);\nint main(void) { return kernel(" + std::to_string(x) + ") - " +
                                      std::to_string(x * x) + "; }\n");
    mtir::sim::ProgramSpec spec;
    spec.sources = {(root_ / dir / "kernel.c").string(), (root_ / dir / "main.c").string()};
    spec.crt_dir = mtir::sim::default_crt_dir();
    spec.work_dir = (root_ / dir / "work").string();
    const std::string program = mtir::sim::build_program(host, spec);
    EXPECT_EQ(mtir::sim::run_process({program}, root_ / dir / "run.log"), 0);
    return program;
  };
  auto entries = [&] {
    size_t n = 0;
    for (const auto& e : fs::directory_iterator(root_ / "cache")) n += e.is_directory();
    return n;
  };
  const std::string first = firmware("a", 3);
  EXPECT_EQ(entries(), 4u);  // kernel.c, main.c, the port's platform.c, the link
  EXPECT_TRUE(fs::exists(root_ / "a/work/firmware.elf-kernel.ci"));
  firmware("b", 4);
  EXPECT_EQ(entries(), 6u);  // main.c and the link
  EXPECT_NE(mtir::sim::read_text(root_ / "b/work/firmware.elf-kernel.ci").find((root_ / "b/kernel.c").string()),
            std::string::npos);

  const std::string units = mtir::sim::read_text(first);
  ASSERT_EQ(mtir::sim::run_process({"make", "-B", "-C", (root_ / "a/work").string(), first}, root_ / "a/make.log"), 0)
      << mtir::sim::read_text(root_ / "a/make.log");
  EXPECT_EQ(mtir::sim::read_text(first), units) << "the one command builds another program";
}

// Units that share a file name (codegen/host/src/lib0.c, codegen/npu0/src/lib0.c, ...)
// each compile to their own object.
TEST_F(BuildCacheTest, UnitsOfTheSameNameEachGetAnObject) {
  mtir::sim::ProgramSpec spec;
  std::string calls;
  for (int i = 0; i < 3; ++i) {
    const fs::path unit = root_ / ("part" + std::to_string(i)) / "lib0.c";
    write(unit, "int k" + std::to_string(i) + "(void);\nint k" + std::to_string(i) + "(void) { return " +
                    std::to_string(i + 1) + "; }\n");
    spec.sources.push_back(unit.string());
    calls += "int k" + std::to_string(i) + "(void);\n";
  }
  write(root_ / "main.c", calls + "int main(void) { return k0() + k1() + k2() - 6; }\n");
  spec.sources.push_back((root_ / "main.c").string());
  spec.crt_dir = mtir::sim::default_crt_dir();
  spec.work_dir = (root_ / "work").string();
  const std::string program = mtir::sim::build_program(mtir::sim::find_cross_target("host"), spec);
  EXPECT_EQ(mtir::sim::run_process({program}, root_ / "run.log"), 0);
}

TEST_F(BuildCacheTest, BoundDropsTheLeastRecentlyUsed) {
  setenv("MICROTIR_BUILD_CACHE_MAX_MB", "0", 1);
  const auto cmd = project("a");
  ASSERT_EQ(mtir::sim::run_process(cmd, root_ / "a/build.log"), 0);
  const auto a = build_cache_entry(cmd, (root_ / "a/prog").string());
  mtir::sim::store_cached_build(*a, root_ / "a/prog");
  EXPECT_FALSE(fs::exists(a->entry));  // over a bound of 0 bytes, nothing stays
}

// A store adds its bytes to the cache's ledger and walks the entries only once the
// ledger passes the bound (the walk grew with the cache); the walk restarts the ledger.
TEST_F(BuildCacheTest, StoresScanTheEntriesOnlyPastTheBound) {
  setenv("MICROTIR_BUILD_CACHE_MAX_MB", "1", 1);
  auto store = [&](const std::string& name, size_t bytes) {
    const fs::path out = root_ / name;
    write(out, std::string(bytes, 'x'));
    const auto build = build_cache_entry({"cc", "-DNAME=" + name, "-o", out.string()}, out.string());
    mtir::sim::store_cached_build(*build, out);
    return build->entry;
  };
  const fs::path first = store("first", 1000);  // no ledger yet: a walk starts it
  const fs::path unseen = root_ / "cache/unseen";  // an entry the ledger does not count
  write(unseen / "program", std::string(2 << 20, 'x'));
  fs::last_write_time(unseen, fs::last_write_time(first) - std::chrono::hours(1));
  store("second", 1000);
  EXPECT_TRUE(fs::exists(unseen));  // 2000 bytes in the ledger: no walk
  const fs::path third = store("third", 700 << 10);
  EXPECT_TRUE(fs::exists(unseen));
  const fs::path fourth = store("fourth", 400 << 10);  // the ledger passes 1 MB: a walk
  EXPECT_FALSE(fs::exists(unseen));  // the oldest go until 80 % of the bound is left
  EXPECT_FALSE(fs::exists(first));
  EXPECT_FALSE(fs::exists(third));
  EXPECT_TRUE(fs::exists(fourth));
  std::ifstream ledger(root_ / "cache/stored-bytes");
  uintmax_t total = 0;
  ledger >> total;
  EXPECT_EQ(total, 400u << 10);  // what the walk left
}

}  // namespace

// support/text.h's replace_all, which the cache uses to swap source paths for placeholders
// in stored call graphs and the artifact runner to fill {port} and {work} in commands.
TEST(ReplaceAll, ReplacesEveryOccurrenceWithoutRescanningTheReplacement) {
  EXPECT_EQ(mtir::replace_all("-L{port}/lib -I{port}", "{port}", "/p"), "-L/p/lib -I/p");
  EXPECT_EQ(mtir::replace_all("aaa", "a", "aa"), "aaaaaa");  // the inserted text is not searched again
  EXPECT_EQ(mtir::replace_all("/a/lib10.c", "/a/lib1.c", "X"), "/a/lib10.c");
  EXPECT_EQ(mtir::replace_all("abc", "", "x"), "abc");  // an empty pattern replaces nothing
  EXPECT_EQ(mtir::replace_all("x-x", "x", ""), "-");
}
