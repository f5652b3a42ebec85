// The source line of each generated line (codegen/line_marks.h), which the playground's
// source <-> output view reads: for C, LLVM IR and WebAssembly text, asking for the map
// leaves the text unchanged, and the lines of a statement point at that statement.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "codegen/line_marks.h"
#include "driver/build.h"
#include "driver/target.h"
#include "script/parser.h"
#include "support/source_dir.h"

namespace mtir {
namespace {

namespace fs = std::filesystem;

std::string read(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::vector<std::string> lines_of(const std::string& t) {
  std::vector<std::string> lines;
  std::istringstream in(t);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

TEST(LineMarks, StripKeepsTheTextAndReadsEachLinesMark) {
  std::vector<int> map{7};
  const std::string text = std::string("a\nb") + kLineMark + "12\n\nc" + kLineMark + "3";
  EXPECT_EQ(strip_line_marks(text, &map), "a\nb\n\nc");
  EXPECT_EQ(map, (std::vector<int>{0, 12, 0, 3}));
  EXPECT_EQ(line_mark(false, 5), "");
  EXPECT_EQ(line_mark(true, 0), "");
  EXPECT_EQ(line_mark(true, 5), std::string(1, kLineMark) + "5");
}

// A model's LLVM IR: a few marked lines among many unmarked ones. Each line's mark is
// read from that line only (the search used to run on to the next mark, 10 s on a model).
TEST(LineMarks, AMarkBelongsToItsOwnLineAmongManyUnmarked) {
  std::string text;
  for (int i = 0; i < 20000; ++i) text += "  %x = add i32 %a, %b\n";
  text += std::string("  ret i32 0") + kLineMark + "9\n}";
  std::vector<int> map;
  const std::string out = strip_line_marks(text, &map);
  ASSERT_EQ(map.size(), 20002u);
  EXPECT_EQ(map[19999], 0);
  EXPECT_EQ(map[20000], 9);
  EXPECT_EQ(map[20001], 0);
  EXPECT_EQ(out.find(kLineMark), std::string::npos);
  EXPECT_EQ(out.substr(out.size() - 13), "  ret i32 0\n}");
}

struct Case {
  const char* target;
  const char* file;   // the kernel source whose map is checked
  const char* inner;  // text of the inner statement's arithmetic in that file
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.target; }

class LineMap : public ::testing::TestWithParam<Case> {};

// matmul.tir's innermost statement (C[i, j] = C[i, j] + A[i, k] * B[k, j]) becomes lines
// holding `inner`; each such line maps to it, and the marks never reach the text.
TEST_P(LineMap, EachEmitterMapsTheInnerStatementToItsSourceLine) {
  const Case& c = GetParam();
  const fs::path path = fs::path(mtir::source_dir()) / "examples" / "matmul.tir";
  const std::string source = read(path);
  const BuildResult built = build_for_target(parse_module_or_throw(source, path.string()), parse_target(c.target));
  const auto text = std::find_if(built.sources.begin(), built.sources.end(), [&](const auto& s) { return s.path == c.file; });
  ASSERT_NE(text, built.sources.end()) << c.file;
  EXPECT_EQ(text->text.find(kLineMark), std::string::npos);
  ASSERT_TRUE(built.line_maps.count(c.file));
  const std::vector<int>& map = built.line_maps.at(c.file);
  const std::vector<std::string> out = lines_of(text->text), src = lines_of(source);
  ASSERT_EQ(map.size(), out.size());
  int inner_lines = 0, mapped = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    if (map[i] > 0) {
      ++mapped;
      ASSERT_LE(map[i], static_cast<int>(src.size()));
    }
    if (out[i].find(c.inner) == std::string::npos) continue;
    ++inner_lines;
    ASSERT_GT(map[i], 0) << out[i];
    EXPECT_NE(src[map[i] - 1].find("C[i, j] = C[i, j] + A[i, k] * B[k, j]"), std::string::npos) << out[i];
  }
  EXPECT_GE(inner_lines, 1);
  // The function's frame (signature, declarations) maps to nothing.
  EXPECT_LT(mapped, static_cast<int>(out.size()));
}

INSTANTIATE_TEST_SUITE_P(Emitters, LineMap,
                         ::testing::Values(Case{"c", "codegen/host/src/lib0.c", "C[k_inv0] = (C[k_inv0] +"},
                                           Case{"llvm", "codegen/host/src/lib0.ll", "fadd"},
                                           Case{"wasm -unpacked-api=1 -interface-api=c", "codegen/host/src/lib0.wat", "f32.add"}),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return std::string(info.param.target).substr(0, std::string(info.param.target).find(' '));
                         });

}  // namespace
}  // namespace mtir
