// What protobuf's JSON parser, as ReadBackendConfig / ParseBackendConfig call it, accepts and
// refuses in HLO backend_config text: the cases the hand-written top-level field reader
// (sim/util/json_fields, deleted in issue 12) was tested on, now against the typed messages.
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/backend_config.pb.h"
#include "sim/ir/backend_config.h"
#include "sim/ir/hlo_parser.h"
#include "sim/util/status_matchers.h"

namespace perfsim {
namespace {

using ::perfsim::testing::StatusIs;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// A module whose root `k` is a custom-call with `config` as its backend_config text.
std::unique_ptr<Module> WithConfig(const std::string& config) {
  absl::StatusOr<std::unique_ptr<Module>> m = ParseHloModule(
      absl::StrCat("HloModule m\nENTRY e {\n  p = f32[4] parameter(0)\n",
                   "  ROOT k = f32[4] custom-call(p), custom_call_target=\"perfsim.gmm\", ",
                   "backend_config=", config, "\n}\n"),
      "t.hlo");
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? *std::move(m) : nullptr;
}

absl::Status ReadKernel(const std::string& config, KernelBackendConfig* out) {
  std::unique_ptr<Module> m = WithConfig(config);
  if (m == nullptr) return absl::InternalError("does not parse");
  return ReadBackendConfig(*m->entry()->root(), out);
}

TEST(BackendConfigReader, AbsentFieldsReadAsTheirDefaults) {
  KernelBackendConfig k;
  PERFSIM_ASSERT_OK(ReadKernel(R"({"tiling":[]})", &k));
  EXPECT_TRUE(k.tiling().empty());
  EXPECT_EQ(k.group_offset(), 0);
  EXPECT_FALSE(k.transpose_rhs());
  EXPECT_FALSE(k.has_clip_limit());
}

TEST(BackendConfigReader, QuotedStringFormAndStringIntegers) {
  // XLA writes int64 as JSON strings; the HLO string form escapes the quotes.
  KernelBackendConfig k;
  PERFSIM_ASSERT_OK(ReadKernel(R"("{\"tiling\":[8,128,\"256\"],\"group_offset\":\"3\"}")", &k));
  EXPECT_THAT(k.tiling(), ElementsAre(8, 128, 256));
  EXPECT_EQ(k.group_offset(), 3);
}

TEST(BackendConfigReader, KeysInsideNestedObjectsAndStringsAreNotTopLevelFields) {
  KernelBackendConfig k;
  PERFSIM_ASSERT_OK(
      ReadKernel(R"({"outer":{"tiling":[1,2,3]},"note":"\"tiling\": [4]","tiling":[5,6,7]})", &k));
  EXPECT_THAT(k.tiling(), ElementsAre(5, 6, 7));
  PERFSIM_ASSERT_OK(ReadKernel(R"({"a":{"group_offset":1}})", &k));
  EXPECT_EQ(k.group_offset(), 0);
}

TEST(BackendConfigReader, WrongKindsAndMalformedTextAreErrorsNamingTheInstruction) {
  for (const char* config : {
           R"({"tiling":[1,"x"]})",                 // a non-integer in an integer list
           R"({"transpose_rhs":1})",                // a number for a bool
           R"({"tiling":{"a":1}})",                 // an object for a list
           R"("{\"tiling\": [1]")",                 // unterminated object (string form)
           R"("{")",                                // just an opening brace
           R"("{\"tiled_dim\": \"unterminated}")",  // unterminated string
           R"("[1, 2]")",                           // not an object
       }) {
    KernelBackendConfig k;
    EXPECT_THAT(ReadKernel(config, &k),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         AllOf(StartsWith("k: expected backend_config JSON for "
                                          "KernelBackendConfig; got "),
                               HasSubstr(config))))
        << config;
  }
}

TEST(BackendConfigReader, IntegersOutOfInt64RangeAreRefused) {
  // 2^63 is one past INT64_MAX; as a string or as a number; 1e19 in a list; a fraction. (A
  // number literal below INT64_MIN is not refused: protobuf 3.21 reads it through a double,
  // which rounds -2^63 - 1 to -2^63.)
  for (const char* config :
       {R"({"group_offset":9223372036854775808})", R"({"group_offset":"9223372036854775808"})",
        R"({"tiling":[1,10000000000000000000]})", R"({"group_offset":1.5})"}) {
    KernelBackendConfig k;
    EXPECT_THAT(ReadKernel(config, &k), StatusIs(absl::StatusCode::kInvalidArgument,
                                                 HasSubstr("k: expected backend_config JSON")))
        << config;
  }
  KernelBackendConfig k;
  PERFSIM_ASSERT_OK(ReadKernel(R"({"group_offset":"9223372036854775807"})", &k));
  EXPECT_EQ(k.group_offset(), INT64_MAX);
}

TEST(BackendConfigReader, ParseWithoutAnInstructionNamesNone) {
  KernelBackendConfig k;
  EXPECT_THAT(ParseBackendConfig(R"({"tiling":"wide"})", &k),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       StartsWith("expected backend_config JSON for KernelBackendConfig; got "
                                  "{\"tiling\":\"wide\"}: ")));
  PERFSIM_EXPECT_OK(ParseBackendConfig("  ", &k));
  k.set_group_offset(4);
  PERFSIM_ASSERT_OK(ParseBackendConfig("", &k));
  EXPECT_EQ(k.group_offset(), 0);  // cleared
}

TEST(BackendConfigReader, ParserErrorsAreOneLine) {
  // Protobuf's tokenizer errors add lines that repeat a window of the text with a caret; the
  // message keeps the first, as "got" already shows the whole text.
  KernelBackendConfig k;
  const absl::Status s = ParseBackendConfig(R"({"clip_limit":1e400})", &k);
  EXPECT_THAT(s, StatusIs(absl::StatusCode::kInvalidArgument,
                          AllOf(HasSubstr(R"(got {"clip_limit":1e400}: )"),
                                HasSubstr("Number exceeds the range of double."))));
  EXPECT_EQ(std::string(s.message()).find('\n'), std::string::npos) << s;
}

TEST(BackendConfigReader, CostEstimateFieldsTrackPresence) {
  auto m = WithConfig(R"({"cost_estimate":{"flops":"5","bytes_accessed":0}})");
  ASSERT_NE(m, nullptr);
  PallasBackendConfig p;
  PERFSIM_ASSERT_OK(ReadBackendConfig(*m->entry()->root(), &p));
  ASSERT_TRUE(p.has_cost_estimate());
  EXPECT_EQ(p.cost_estimate().flops(), 5);
  EXPECT_TRUE(p.cost_estimate().has_bytes_accessed());
  EXPECT_FALSE(p.cost_estimate().has_transcendentals());
  EXPECT_FALSE(p.custom_call_config().has_cost_estimate());
}

}  // namespace
}  // namespace perfsim
