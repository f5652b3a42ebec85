// The pass and backend timer (support/timing.h): a compile of the digits model for each
// backend records every step, every pass its lowering pipeline runs (in order) and every
// backend part, with non-negative figures; without a session nothing is recorded; rows
// nest and survive an exception. Never a time is asserted.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "artifact/mlf.h"
#include "driver/build.h"
#include "driver/pipeline.h"
#include "support/timing.h"
#include "support/source_dir.h"

namespace mtir {
namespace {

namespace fs = std::filesystem;

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> names_of_kind(const TimingTable& t, const std::string& kind) {
  std::vector<std::string> out;
  for (const auto& r : t.rows)
    if (r.kind == kind) out.push_back(r.name);
  return out;
}

struct BackendCase {
  const char* target;
  std::vector<std::string> steps;
  std::vector<std::string> backend_parts;
};

std::vector<BackendCase> backend_cases() {
  return {
      {"c -interface-api=c -unpacked-api=1", {"import", "schedule", "lower", "codegen", "export"},
       {"c: kernels (lib0.c)", "c: metadata module (lib1.c)"}},
      {"llvm -mtriple=thumbv7em-none-eabihf -interface-api=c -unpacked-api=1", 
       {"import", "schedule", "lower", "codegen", "export"},
       {"llvm: kernels (lib0.ll)", "llvm: metadata module (lib1.ll)"}},
      {"wasm", {"import", "schedule", "lower", "codegen", "export"}, {"wasm: model module (.wat)"}},
  };
}

TEST(Timing, EveryStepPassAndBackendOfACompileIsInTheTable) {
  const fs::path model = fs::path(mtir::source_dir()) / "models" / "digits";
  for (const BackendCase& c : backend_cases()) {
    SCOPED_TRACE(c.target);
    TimingTable table;
    {
      TimingSession session(&table);
      ASSERT_EQ(active_timing_table(), &table);
      LoadedModel lm = load_model(read(model / "digits.json"), "digits.json",
                                  [&](const std::string& rel) { return read(model / rel); });
      build_mlf(lm, parse_target(c.target), MlfInputs{"digits.json", "{}", {}, {}});
    }
    EXPECT_EQ(active_timing_table(), nullptr);
    EXPECT_EQ(names_of_kind(table, "step"), c.steps);
    // Every pass the target's lowering runs, in pipeline order, one row each.
    std::vector<std::string> expected_passes;
    for (const Pass& p : lowering_pipeline(lowering_options(parse_target(c.target)))) expected_passes.push_back(p.name);
    EXPECT_EQ(names_of_kind(table, "pass"), expected_passes);
    EXPECT_EQ(names_of_kind(table, "backend"), c.backend_parts);
    for (const auto& r : table.rows) {
      EXPECT_GE(r.wall_ms, 0) << r.name;
      EXPECT_GE(r.peak_bytes, 0) << r.name;
      EXPECT_EQ(r.depth, r.kind == "step" ? 0 : 1) << r.name;  // passes in "lower", parts in "codegen"
    }
    const std::string text = table.text();
    for (const auto& r : table.rows) EXPECT_NE(text.find(r.name), std::string::npos) << r.name;
    EXPECT_EQ(table.to_json()["rows"].size(), table.rows.size());
    EXPECT_EQ(table.to_json()["memory"], memory_kind());
  }
}

TEST(Timing, NothingIsRecordedWithoutASession) {
  TimingTable table;
  { TimingScope scope("step", "unrecorded"); }
  EXPECT_EQ(active_timing_table(), nullptr);
  EXPECT_TRUE(table.rows.empty());
}

TEST(Timing, ScopesNestAndCloseOnExceptions) {
  TimingTable table;
  TimingSession session(&table);
  try {
    TimingScope outer("step", "outer");
    TimingScope inner("pass", "inner");
    std::vector<char> grown(8 << 20, 1);  // touched: the peak of both scopes
    throw std::runtime_error(std::string(1, grown[grown.size() - 1]));
  } catch (const std::runtime_error&) {
  }
  { TimingScope after("step", "after"); }
  ASSERT_EQ(table.rows.size(), 3u);
  EXPECT_EQ(table.rows[0].depth, 0);
  EXPECT_EQ(table.rows[1].depth, 1);
  EXPECT_EQ(table.rows[2].depth, 0);  // the thrown-through scopes were closed
  if (std::string(memory_kind()) == "rss_peak") {
    // The inner peak reaches the outer scope too, though the inner one reset the mark.
    EXPECT_GE(table.rows[1].peak_bytes, 4 << 20);
    EXPECT_GE(table.rows[0].peak_bytes, table.rows[1].peak_bytes);
  }
}

// Work timed on another thread (the LLVM backend's parts) nests in the open scope, with
// the given time and no memory figure of its own; without a session it is dropped.
TEST(Timing, RowsRecordedElsewhereNestInTheOpenScope) {
  TimingScope::record_elsewhere("backend", "unrecorded", 1.0);
  TimingTable table;
  TimingSession session(&table);
  {
    TimingScope outer("step", "objects");
    TimingScope::record_elsewhere("backend", "part 0", 12.5);
  }
  TimingScope::record_elsewhere("backend", "top", 2.0);
  ASSERT_EQ(table.rows.size(), 3u);
  EXPECT_EQ(table.rows[1].name, "part 0");
  EXPECT_EQ(table.rows[1].depth, 1);
  EXPECT_EQ(table.rows[1].wall_ms, 12.5);
  EXPECT_EQ(table.rows[1].peak_bytes, 0);
  EXPECT_EQ(table.rows[2].depth, 0);
}

}  // namespace
}  // namespace mtir
