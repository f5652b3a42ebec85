// The shared name helpers: edit distance, "did you mean" matching, identifier checks,
// and the C identifiers of a model's tensor names (the rule docs/tflite.md states).
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

TEST(Names, UniqueCIdentifiersSanitize) {
  // Every byte outside [A-Za-z0-9_] is one '_' (a UTF-8 character is several).
  EXPECT_EQ(unique_c_identifiers({"serving_default_dense_input:0", "a/b;c d", "caf\xc3\xa9"}),
            (std::vector<std::string>{"serving_default_dense_input_0", "a_b_c_d", "caf__"}));
  // Empty, a leading digit, keywords (C and C++), the interface's words, reserved and
  // standard-macro names get "t_".
  EXPECT_EQ(unique_c_identifiers({"", "9lives", "int", "class", "run", "Workspace", "__LINE__", "_Foo", "NULL",
                                  "INT8_MAX", "UINT32_C", "main"}),
            (std::vector<std::string>{"t_", "t_9lives", "t_int", "t_class", "t_run", "t_Workspace", "t___LINE__",
                                      "t__Foo", "t_NULL", "t_INT8_MAX", "t_UINT32_C", "main"}));
  // Cut to 64 characters.
  const std::string long_name = std::string(100, 'a') + ":0";
  EXPECT_EQ(unique_c_identifiers({long_name}), (std::vector<std::string>{std::string(64, 'a')}));
}

TEST(Names, UniqueCIdentifiersCollide) {
  // A name that is its own identifier keeps it even when an earlier one sanitizes to it.
  EXPECT_EQ(unique_c_identifiers({"x:0", "x_0", "x/0"}), (std::vector<std::string>{"x_0_2", "x_0", "x_0_3"}));
  // Case is ignored: macros are upper case, file systems may ignore case.
  EXPECT_EQ(unique_c_identifiers({"x", "X", "X_2"}), (std::vector<std::string>{"x", "X_3", "X_2"}));
  // Long names that agree in their first 64 characters stay within 64 with their suffix.
  const std::string a = std::string(70, 'a');
  std::vector<std::string> ids = unique_c_identifiers({a + "1", a + "2"});
  EXPECT_EQ(ids[0], std::string(64, 'a'));
  EXPECT_EQ(ids[1], std::string(62, 'a') + "_2");
  // Deterministic, and every identifier is one.
  EXPECT_EQ(ids, unique_c_identifiers({a + "1", a + "2"}));
  for (const auto& id : unique_c_identifiers({"", "?", "1", "a b", "\xff\xfe", "delete"})) EXPECT_TRUE(is_c_identifier(id)) << id;
}

TEST(Names, ValidUtf8) {
  EXPECT_EQ(valid_utf8("plain \xc3\xa9 \xe8\xbe\x93 \xf0\x9f\x98\x80"), "plain \xc3\xa9 \xe8\xbe\x93 \xf0\x9f\x98\x80");
  EXPECT_EQ(valid_utf8("a\xff"), "a\xef\xbf\xbd");              // never a UTF-8 byte
  EXPECT_EQ(valid_utf8("\xc3"), "\xef\xbf\xbd");                 // cut short
  EXPECT_EQ(valid_utf8("\xc0\xaf"), "\xef\xbf\xbd\xef\xbf\xbd");  // overlong '/'
  EXPECT_EQ(valid_utf8("\xed\xa0\x80"), "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");  // a surrogate
}

TEST(Names, CEscaped) {
  EXPECT_EQ(c_escaped("plain/name:0"), "plain/name:0");
  EXPECT_EQ(c_escaped("a*/b"), "a*\\/b");
  EXPECT_EQ(c_escaped("q\"\\"), "q\\\"\\\\");
  EXPECT_EQ(c_escaped("?" "?/"), "?\\?/");  // split: "??/" is a trigraph in this file too
  EXPECT_EQ(c_escaped("tab\tnl\n"), "tab\\x09nl\\x0a");
  EXPECT_EQ(c_escaped("\xe8\xbe\x93"), "\xe8\xbe\x93");  // UTF-8 kept
}

}  // namespace
}  // namespace mtir
