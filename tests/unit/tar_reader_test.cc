// The tar reader against the writer (round trip) and against broken archives: each
// problem is a user error that names the archive and says what is wrong.
#include <gtest/gtest.h>

#include "artifact/tar.h"
#include "artifact/tar_reader.h"
#include "support/diagnostic.h"

namespace mtir {
namespace {

using Files = std::vector<std::pair<std::string, std::string>>;

std::string error_of(const std::string& archive) {
  try {
    read_tar(archive, "m.tar");
  } catch (const DiagnosticError& e) {
    return e.diagnostics().at(0).message;
  }
  return "";
}

TEST(TarReader, ReadsWhatTheWriterWrites) {
  const std::string long_dir(120, 'd');
  Files files = {{"metadata.json", "{}\n"}, {"codegen/host/src/lib0.c", std::string(1000, 'x')},
                 {"empty.txt", ""}, {long_dir + "/name.c", "int x;\n"}};
  EXPECT_EQ(read_tar(make_tar(files), "m.tar"), files);
}

TEST(TarReader, RefusesTruncatedArchives) {
  std::string tar = make_tar({{"a.txt", std::string(2000, 'a')}});
  EXPECT_NE(error_of(tar.substr(0, 300)).find("m.tar is not a usable tar archive: it is truncated (a header"), std::string::npos);
  EXPECT_NE(error_of(tar.substr(0, 1000)).find("'a.txt' is cut off"), std::string::npos);
  EXPECT_NE(error_of("").find("it is empty"), std::string::npos);
}

TEST(TarReader, RefusesABadChecksumAndNonUstarHeaders) {
  std::string tar = make_tar({{"a.txt", "hello"}});
  std::string bad = tar;
  bad[3] = 'X';
  EXPECT_NE(error_of(bad).find("the header at byte 0 has a wrong checksum"), std::string::npos);
  EXPECT_NE(error_of(std::string(512, 'z')).find("checksum field is not octal"), std::string::npos);
}

TEST(TarReader, RefusesPathsOutsideTheFolderAndLinks) {
  EXPECT_NE(error_of(make_tar({{"../evil.c", "x"}})).find("entry '../evil.c' would be written outside"), std::string::npos);
  EXPECT_NE(error_of(make_tar({{"a/../../evil.c", "x"}})).find("would be written outside"), std::string::npos);
  // A symbolic link: type '2', checksum recomputed.
  std::string tar = make_tar({{"link", ""}});
  tar[156] = '2';
  unsigned sum = 0;
  for (size_t i = 0; i < 512; ++i) sum += (i >= 148 && i < 156) ? ' ' : static_cast<unsigned char>(tar[i]);
  std::snprintf(&tar[148], 8, "%06o", sum);
  EXPECT_NE(error_of(tar).find("entry 'link' is not a regular file or folder (type '2')"), std::string::npos);
}

TEST(TarReader, AnArchiveWithoutFilesIsAnError) {
  EXPECT_NE(error_of(std::string(1024, '\0')).find("it holds no files"), std::string::npos);
}

}  // namespace
}  // namespace mtir
