// The backend_config field reader the fit checker uses (sim/util/json_fields.h).
#include "sim/util/json_fields.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace perfsim {
namespace {

using ::testing::ElementsAre;
using ::testing::Optional;

TEST(JsonFields, ReadsTopLevelScalarsAndIntegerArrays) {
  constexpr char kJson[] =
      R"({"tiling": [512, 1024, 128], "transpose_rhs": true, "group_offset": 3})";
  EXPECT_THAT(JsonTopLevelIntArray(kJson, "tiling"), Optional(ElementsAre(512, 1024, 128)));
  EXPECT_THAT(JsonTopLevelBool(kJson, "transpose_rhs"), Optional(true));
  EXPECT_THAT(JsonTopLevelInt(kJson, "group_offset"), Optional(3));
  EXPECT_EQ(JsonTopLevelInt(kJson, "missing"), std::nullopt);
}

TEST(JsonFields, AcceptsTheQuotedStringFormAndStringIntegers) {
  EXPECT_THAT(JsonTopLevelIntArray(R"("{\"tiling\":[8,128,256]}")", "tiling"),
              Optional(ElementsAre(8, 128, 256)));
  EXPECT_THAT(JsonTopLevelInt(R"({"n":"8"})", "n"), Optional(8));
}

TEST(JsonFields, IgnoresKeysInsideNestedObjectsAndStrings) {
  constexpr char kJson[] =
      R"({"outer": {"tiling": [1, 2, 3]}, "note": "\"tiling\": [4]", "tiling": [5, 6, 7]})";
  EXPECT_THAT(JsonTopLevelIntArray(kJson, "tiling"), Optional(ElementsAre(5, 6, 7)));
  EXPECT_EQ(JsonTopLevelInt(R"({"a": {"b": 1}})", "b"), std::nullopt);
}

TEST(JsonFields, WrongKindsAndMalformedTextGiveNullopt) {
  EXPECT_EQ(JsonTopLevelIntArray(R"({"tiling": [1, "x"]})", "tiling"), std::nullopt);
  EXPECT_EQ(JsonTopLevelBool(R"({"flag": 1})", "flag"), std::nullopt);
  EXPECT_EQ(JsonTopLevelInt(R"({"a": 1)", "b"), std::nullopt);
  EXPECT_EQ(JsonTopLevelInt("", "a"), std::nullopt);
  EXPECT_EQ(JsonTopLevelInt("{", "a"), std::nullopt);
  EXPECT_EQ(JsonTopLevelInt(R"({"a")", "a"), std::nullopt);
  EXPECT_EQ(JsonTopLevelInt(R"({"a": "unterminated)", "a"), std::nullopt);
  EXPECT_THAT(JsonTopLevelIntArray(R"({"tiling": []})", "tiling"), Optional(ElementsAre()));
}

}  // namespace
}  // namespace perfsim
