// Unpacking a model.tar from elsewhere and reading the files its graph names
// (sim/artifact_files.h): clashing or escaping entries are refused before anything is
// written, `tar cf model.tar folder/` is found under its top folder, and the graph
// cannot make `run` read files outside the artifact.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "artifact/tar.h"
#include "sim/artifact_files.h"
#include "support/diagnostic.h"

namespace mtir::sim {
namespace {

namespace fs = std::filesystem;

class ArtifactFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("microtir-artifact-files-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // The first message of the user error unpacking `files` gives, or "".
  std::string unpack_error(const std::vector<std::pair<std::string, std::string>>& files) {
    try {
      unpack_artifact(make_tar(files), "m.tar", dir_.string());
    } catch (const DiagnosticError& e) {
      EXPECT_FALSE(e.internal());
      return e.diagnostics().at(0).message;
    }
    return "";
  }
  fs::path dir_;
};

TEST_F(ArtifactFiles, UnpacksAndFindsTheTopFolder) {
  EXPECT_EQ(unpack_artifact(make_tar({{"metadata.json", "{}"}, {"src/m.json", "{}"}}), "m.tar", dir_.string()),
            dir_.string());
  EXPECT_TRUE(fs::is_regular_file(dir_ / "src/m.json"));
  fs::remove_all(dir_);
  fs::create_directories(dir_);
  EXPECT_EQ(unpack_artifact(make_tar({{"m/metadata.json", "{}"}, {"m/./src/m.json", "{}"}}), "m.tar", dir_.string()),
            (dir_ / "m").string());
  EXPECT_TRUE(fs::is_regular_file(dir_ / "m/src/m.json"));
}

TEST_F(ArtifactFiles, RefusesClashesBeforeWritingAnything) {
  EXPECT_EQ(unpack_error({{"a.txt", "x"}, {"a.txt/b", "y"}}), "m.tar is not a usable artifact: 'a.txt' is both a file and a folder");
  EXPECT_EQ(unpack_error({{"b/c", "x"}, {"b//c", "y"}}), "m.tar is not a usable artifact: it holds 'b/c' twice");
  EXPECT_TRUE(fs::is_empty(dir_));
}

TEST_F(ArtifactFiles, GraphReaderStaysInsideTheArtifact) {
  fs::create_directories(dir_ / "src/weights");
  std::ofstream(dir_ / "src/weights/w.npy") << "bytes";
  ArtifactInfo info;
  info.dir = dir_.string();
  info.graph_file = (dir_ / "src/m.json").string();
  FileReader read = artifact_graph_reader(info, "m.tar");
  EXPECT_EQ(read("weights/w.npy"), "bytes");
  EXPECT_EQ(read("./weights/../weights/w.npy"), "bytes");
  for (const char* escape : {"/etc/passwd", "../metadata.json", "weights/../../x", "/dev/zero", "weights/"}) {
    try {
      read(escape);
      ADD_FAILURE() << escape << " was read";
    } catch (const DiagnosticError& e) {
      EXPECT_NE(e.diagnostics().at(0).message.find("is not a file inside the artifact's src/ folder"), std::string::npos)
          << e.diagnostics().at(0).message;
    }
  }
  try {
    read("weights/missing.npy");
    ADD_FAILURE() << "a missing file was read";
  } catch (const DiagnosticError& e) {
    EXPECT_EQ(e.diagnostics().at(0).message,
              "m.tar lacks src/weights/missing.npy, which its graph needs (recompile it with this microtir)");
  }
}

}  // namespace
}  // namespace mtir::sim
