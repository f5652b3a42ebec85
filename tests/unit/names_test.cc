// The shared name helpers: edit distance, "did you mean" matching, identifier checks.
#include <gtest/gtest.h>

#include "support/names.h"

namespace mtir {
namespace {

TEST(Names, EditDistance) {
  EXPECT_EQ(edit_distance("", ""), 0u);
  EXPECT_EQ(edit_distance("abc", ""), 3u);
  EXPECT_EQ(edit_distance("", "ab"), 2u);
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(edit_distance("relu", "reluu"), 1u);
  EXPECT_EQ(edit_distance("conv2", "conv2d"), 1u);
  // Case is ignored.
  EXPECT_EQ(edit_distance("Select", "select"), 0u);
  EXPECT_EQ(edit_distance("ABC", "abd"), 1u);
  // Symmetric.
  EXPECT_EQ(edit_distance("flaw", "lawn"), edit_distance("lawn", "flaw"));
}

TEST(Names, ClosestMatch) {
  const std::vector<std::string> ops = {"conv2d", "relu", "dense", "max_pool2d"};
  EXPECT_EQ(closest_match("conv2", ops), "conv2d");
  EXPECT_EQ(closest_match("reluu", ops), "relu");
  EXPECT_EQ(closest_match("RELU", ops), "relu");
  EXPECT_EQ(closest_match("frobnicate", ops), "");
  EXPECT_EQ(closest_match("relu", {}), "");
  // Within max(2, size / 3) edits: 2 for short words...
  EXPECT_EQ(closest_match("ab", {"xy"}), "xy");
  EXPECT_EQ(closest_match("abc", {"xyz"}), "");
  // ...and a third of the length for long ones.
  EXPECT_EQ(closest_match("workspacebytealign", {"workspace-byte-alignment"}), "workspace-byte-alignment");
  EXPECT_EQ(closest_match("interface_api", {"runtime", "interface-api", "unpacked-api"}), "interface-api");
  // The first of equally close candidates wins.
  EXPECT_EQ(closest_match("cat", {"bat", "hat"}), "bat");
}

TEST(Names, IsCIdentifier) {
  EXPECT_TRUE(is_c_identifier("x"));
  EXPECT_TRUE(is_c_identifier("_"));
  EXPECT_TRUE(is_c_identifier("conv2d_1"));
  EXPECT_TRUE(is_c_identifier("_Tensor9"));
  EXPECT_FALSE(is_c_identifier(""));
  EXPECT_FALSE(is_c_identifier("2d"));
  EXPECT_FALSE(is_c_identifier("a-b"));
  EXPECT_FALSE(is_c_identifier("a b"));
  EXPECT_FALSE(is_c_identifier("a.b"));
  EXPECT_FALSE(is_c_identifier("caf\xc3\xa9"));
}

}  // namespace
}  // namespace mtir
