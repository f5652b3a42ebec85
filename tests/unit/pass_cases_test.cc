// Data-driven pass tests: every tests/transform/<pass>/<case>.tir is one test.
//
// A case file is
//     # pass: simplify                 (or several, comma-separated, run in order)
//     # purpose: what the case shows
//     # before
//     <program>
//     # expected
//     <program after the pass>
// or, instead of `# expected`, a line `# expected-error: L:C: message-substring` where
// L:C is a position in the case file itself. Expected programs are compared with the
// pass's output structurally (ir/structural_equal.h), so names and formatting do not
// matter; a mismatch prints the input, the expected and the actual program. With
// MICROTIR_UPDATE=1 the expected section is rewritten with the actual output.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "driver/pipeline.h"
#include "ir/structural_equal.h"
#include "script/parser.h"
#include "script/printer.h"
#include "support/source_dir.h"

namespace mtir {
namespace {

namespace fs = std::filesystem;

const std::string kCaseRoot = std::string(mtir::source_dir()) + "/tests/transform";

struct CaseFile {
  std::vector<std::string> passes;
  std::string purpose;
  std::string before;          // padded with blank lines so line numbers match the file
  std::string expected;        // the same for the expected program
  bool expects_error = false;
  int error_line = 0, error_col = 0;
  std::string error_substring;
  size_t expected_marker = 0;  // 0-based line of `# expected`, for MICROTIR_UPDATE
  std::vector<std::string> lines;
};

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r"), e = s.find_last_not_of(" \t\r");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

// Lines [from, to) of the file as a program, preceded by `from` empty lines so the
// parser's line numbers are the case file's.
std::string section(const std::vector<std::string>& lines, size_t from, size_t to) {
  std::string text(from, '\n');
  for (size_t i = from; i < to && i < lines.size(); ++i) text += lines[i] + "\n";
  return text;
}

// Parses the case format; failures are reported through gtest's ADD_FAILURE.
bool load_case(const fs::path& path, CaseFile* c) {
  std::string text = read_text(path);
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    c->lines.push_back(line);
  }
  size_t before_at = std::string::npos, expected_at = std::string::npos;
  for (size_t i = 0; i < c->lines.size(); ++i) {
    const std::string t = trim(c->lines[i]);
    if (starts_with(t, "# pass:")) {
      std::stringstream names(t.substr(7));
      for (std::string n; std::getline(names, n, ',');)
        if (!trim(n).empty()) c->passes.push_back(trim(n));
    } else if (starts_with(t, "# purpose:")) {
      c->purpose = trim(t.substr(10));
    } else if (t == "# before" && before_at == std::string::npos) {
      before_at = i;
    } else if (before_at != std::string::npos && expected_at == std::string::npos &&
               (t == "# expected" || starts_with(t, "# expected-error:"))) {
      expected_at = i;
      if (t != "# expected") {
        c->expects_error = true;
        std::string spec = trim(t.substr(17));  // "L:C: message"
        size_t c1 = spec.find(':'), c2 = spec.find(':', c1 + 1);
        if (c1 == std::string::npos || c2 == std::string::npos) {
          ADD_FAILURE() << path << ": expected-error must read 'L:C: message', got '" << spec << "'";
          return false;
        }
        c->error_line = std::atoi(spec.substr(0, c1).c_str());
        c->error_col = std::atoi(spec.substr(c1 + 1, c2 - c1 - 1).c_str());
        c->error_substring = trim(spec.substr(c2 + 1));
      }
    }
  }
  if (c->passes.empty()) ADD_FAILURE() << path << ": missing '# pass: NAME'";
  if (c->purpose.empty()) ADD_FAILURE() << path << ": missing '# purpose: ...'";
  if (before_at == std::string::npos) ADD_FAILURE() << path << ": missing '# before'";
  if (expected_at == std::string::npos) ADD_FAILURE() << path << ": missing '# expected' or '# expected-error: ...'";
  if (c->passes.empty() || c->purpose.empty() || before_at == std::string::npos || expected_at == std::string::npos)
    return false;
  c->before = section(c->lines, before_at + 1, expected_at);
  c->expected = section(c->lines, expected_at + 1, c->lines.size());
  c->expected_marker = expected_at;
  return true;
}

void rewrite_expected(const fs::path& path, const CaseFile& c, const std::string& printed) {
  std::string out;
  for (size_t i = 0; i <= c.expected_marker; ++i) out += c.lines[i] + "\n";
  out += printed;
  if (!printed.empty() && printed.back() != '\n') out += "\n";
  std::ofstream(path, std::ios::binary) << out;
}

std::vector<std::string> list_cases() {
  std::vector<std::string> cases;
  std::error_code ec;
  for (const auto& dir : fs::directory_iterator(kCaseRoot, ec)) {
    if (!dir.is_directory()) continue;
    for (const auto& f : fs::directory_iterator(dir.path()))
      if (f.path().extension() == ".tir") cases.push_back(fs::relative(f.path(), kCaseRoot).generic_string());
  }
  std::sort(cases.begin(), cases.end());
  return cases;
}

class PassCase : public ::testing::TestWithParam<std::string> {};

TEST_P(PassCase, Run) {
  const fs::path path = fs::path(kCaseRoot) / GetParam();
  CaseFile c;
  if (!load_case(path, &c)) return;
  const std::string file = path.generic_string();
  SCOPED_TRACE(file + " (" + c.purpose + ")");

  std::vector<Pass> passes;
  for (const auto& name : c.passes) {
    const Pass* p = find_pass(name);
    ASSERT_NE(p, nullptr) << "unknown pass '" << name << "'";
    passes.push_back(*p);
  }

  std::optional<IRModule> result;
  std::vector<Diagnostic> diags;
  try {
    IRModule before = parse_module_or_throw(c.before, file);
    result = run_pipeline(before, passes).module;
  } catch (const DiagnosticError& e) {
    diags = e.diagnostics();
  }

  if (c.expects_error) {
    ASSERT_FALSE(result.has_value()) << "expected an error, but the pass succeeded:\n" << print_module(*result);
    ASSERT_FALSE(diags.empty());
    const Diagnostic& d = diags.front();
    EXPECT_EQ(d.span.line, c.error_line) << render_all(diags);
    EXPECT_EQ(d.span.col, c.error_col) << render_all(diags);
    EXPECT_NE(d.message.find(c.error_substring), std::string::npos)
        << "message '" << d.message << "' does not contain '" << c.error_substring << "'";
    return;
  }

  ASSERT_TRUE(result.has_value()) << render_all(diags);
  const std::string actual = print_module(*result);
  const char* update = std::getenv("MICROTIR_UPDATE");
  if (update && std::string(update) == "1") {
    rewrite_expected(path, c, actual);
    return;
  }
  IRModule expected;
  try {
    expected = parse_module_or_throw(c.expected, file);
  } catch (const DiagnosticError& e) {
    FAIL() << "the expected section does not parse:\n" << render_all(e.diagnostics());
  }
  // Structurally: variable names and formatting do not matter, the program does.
  if (!structural_equal(*result, expected)) {
    ADD_FAILURE() << file << ": the pass output differs from the expected program "
                  << "(run with MICROTIR_UPDATE=1 to accept the new output)\n"
                  << "--- input:\n" << print_module(parse_module_or_throw(c.before, file))
                  << "--- expected:\n" << print_module(expected) << "--- actual:\n" << actual;
  }
}

// gtest names allow only letters, digits and '_': "simplify/fold-1.tir" -> simplify_fold_1.
std::string case_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = info.param;
  if (name.size() > 4 && name.compare(name.size() - 4, 4, ".tir") == 0) name.resize(name.size() - 4);
  for (char& ch : name)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return name;
}

INSTANTIATE_TEST_SUITE_P(Transform, PassCase, ::testing::ValuesIn(list_cases()), case_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(PassCase);

TEST(PassCases, TheCaseFolderIsNotEmpty) {
  auto cases = list_cases();
  EXPECT_GE(std::count_if(cases.begin(), cases.end(), [](const std::string& s) { return starts_with(s, "simplify/"); }), 12);
  EXPECT_GE(std::count_if(cases.begin(), cases.end(),
                          [](const std::string& s) { return starts_with(s, "verify_well_formed/"); }),
            3);
}

}  // namespace
}  // namespace mtir
