// Tests of the generic textproto loader (sim/util/textproto.h) and the proto printers
// (sim/util/proto_format.h), using the hardware schema as the message type.
#include "sim/util/textproto.h"

#include <cstdint>
#include <limits>
#include <random>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "proto/hardware.pb.h"
#include "proto/model.pb.h"
#include "sim/util/proto_format.h"
#include "sim/util/status_matchers.h"
#include "tests/hw/expected_errors.h"

namespace perfsim {
namespace {

using ::perfsim::testing::IsOk;
using ::perfsim::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr char kSmallChip[] =
    "name: \"toy\"\n"                               // line 1
    "compute {\n"                                   // line 2
    "  peak_bf16_flops_per_second: 1e14\n"          // line 3
    "}\n"                                           // line 4
    "interconnect {\n"                              // line 5
    "  dimensions { name: \"x\" size_chips: 4 }\n"  // line 6
    "  dimensions {\n"                              // line 7
    "    name: \"y\"\n"                             // line 8
    "    size_chips: 8\n"                           // line 9
    "  }\n"                                         // line 10
    "}\n";                                          // line 11

TEST(TextProto, ParsesValidTextIntoTheMessage) {
  HardwareSpec spec;
  PERFSIM_ASSERT_OK_AND_ASSIGN(TextProtoSource source,
                               ParseTextProto(kSmallChip, "toy.textproto", &spec));
  EXPECT_EQ(spec.name(), "toy");
  EXPECT_EQ(spec.compute().peak_bf16_flops_per_second(), 1e14);
  ASSERT_EQ(spec.interconnect().dimensions_size(), 2);
  EXPECT_EQ(spec.interconnect().dimensions(1).size_chips(), 8);
  EXPECT_EQ(source.filename(), "toy.textproto");
}

TEST(TextProto, WhereGivesOneBasedLineAndColumnOfNestedAndRepeatedFields) {
  HardwareSpec spec;
  PERFSIM_ASSERT_OK_AND_ASSIGN(TextProtoSource source,
                               ParseTextProto(kSmallChip, "toy.textproto", &spec));
  EXPECT_EQ(source.Where("name"), "toy.textproto:1:1");
  // "  peak_bf16..." starts in column 3 of line 3.
  EXPECT_EQ(source.Where("compute.peak_bf16_flops_per_second"), "toy.textproto:3:3");
  // dimensions[0].size_chips: line 6, after `  dimensions { name: "x" ` (25 characters).
  EXPECT_EQ(source.Where("interconnect.dimensions[0].size_chips"), "toy.textproto:6:26");
  EXPECT_EQ(source.Where("interconnect.dimensions[1].size_chips"), "toy.textproto:9:5");
}

TEST(TextProto, WhereFallsBackToTheInnermostWrittenMessage) {
  HardwareSpec spec;
  PERFSIM_ASSERT_OK_AND_ASSIGN(TextProtoSource source,
                               ParseTextProto(kSmallChip, "toy.textproto", &spec));
  // latency_seconds is not written in dimensions[1], which starts on line 7, column 3.
  EXPECT_EQ(source.Where("interconnect.dimensions[1].latency_seconds"), "toy.textproto:7:3");
  // An index past the written elements falls back to the enclosing `interconnect` (line 5).
  EXPECT_EQ(source.Where("interconnect.dimensions[5].size_chips"), "toy.textproto:5:1");
  // Nothing on the path was written: just the file.
  EXPECT_EQ(source.Where("memory.hbm_bytes_per_second"), "toy.textproto");
  // Malformed paths never crash.
  EXPECT_EQ(source.Where("compute..x[[3"), "toy.textproto:2:1");
  EXPECT_EQ(source.Where("no_such_field"), "toy.textproto");
  EXPECT_EQ(source.Where(""), "toy.textproto");
}

TEST(TextProto, ReportsEverySyntaxErrorOfAFileWithItsLine) {
  const std::string path = PERFSIM_TESTDATA_DIR "/hw/syntax_errors.textproto";
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::string text, ReadTextFile(path));
  HardwareSpec spec;
  absl::StatusOr<TextProtoSource> source = ParseTextProto(text, "syntax_errors.textproto", &spec);
  ASSERT_THAT(source, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("syntax_errors")));
  const std::vector<testing::ExpectedError> expected = testing::ReadExpectedErrors(text);
  ASSERT_EQ(expected.size(), 5u);  // The file has five annotated problems.
  testing::ExpectErrorsMatch(source.status().message(), "syntax_errors.textproto", expected);
}

TEST(TextProto, ErrorsCarryTheColumnOfTheOffendingToken) {
  HardwareSpec spec;
  absl::StatusOr<TextProtoSource> source =
      ParseTextProto("name: \"a\"\ncompute {\n  peak_bf16_flops_per_second: fast\n}\n", "f", &spec);
  // "fast" starts at column 31 of line 3: two spaces, 26 characters of name, ": ".
  EXPECT_THAT(source, StatusIs(absl::StatusCode::kInvalidArgument, StartsWith("f:3:31: ")));
}

TEST(TextProto, UnclosedBlockIsReportedOnce) {
  HardwareSpec spec;
  absl::StatusOr<TextProtoSource> source =
      ParseTextProto("name: \"a\"\ncompute {\n  tensorcores_per_chip: 2\n", "f", &spec);
  ASSERT_FALSE(source.ok());
  const std::vector<std::string> lines = absl::StrSplit(source.status().message(), '\n');
  EXPECT_EQ(lines.size(), 1u) << source.status();
  EXPECT_THAT(lines[0], StartsWith("f:"));
}

TEST(TextProto, StrayClosingBraceIsReportedAndParsingGoesOn) {
  HardwareSpec spec;
  absl::StatusOr<TextProtoSource> source =
      ParseTextProto("name: \"a\"\n}\nkind: CHIP_KIND_NOPE\n", "f", &spec);
  ASSERT_FALSE(source.ok());
  EXPECT_THAT(source.status().message(), HasSubstr("f:2:1: "));
  EXPECT_THAT(source.status().message(), HasSubstr("f:3:7: Unknown enumeration value"));
}

TEST(TextProto, DuplicateSingularFieldIsAnError) {
  ModelSpec spec;
  EXPECT_THAT(ParseTextProto("d_model: 1\nd_model: 2\n", "m", &spec),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("m:2:")));
}

TEST(TextProto, StopsAfterTooManyErrors) {
  std::string text;
  for (int i = 0; i < 3 * kMaxTextProtoErrors; ++i) absl::StrAppend(&text, "nope_", i, ": 1\n");
  HardwareSpec spec;
  absl::StatusOr<TextProtoSource> source = ParseTextProto(text, "f", &spec);
  ASSERT_FALSE(source.ok());
  const std::vector<std::string> lines = absl::StrSplit(source.status().message(), '\n');
  ASSERT_EQ(lines.size(), static_cast<size_t>(kMaxTextProtoErrors) + 1);
  EXPECT_THAT(lines.back(), HasSubstr("too many errors"));
}

TEST(TextProto, NeverCrashesOnRandomBytes) {
  // Deterministic garbage: random bytes, and random mixes of text-format punctuation, which
  // reach deeper into the parser and the recovery than plain noise.
  std::mt19937 rng(1234);
  const std::string alphabet = "{}<>[]:;,\"'#\\\n name compute dimensions 1e9 -x_";
  for (int round = 0; round < 300; ++round) {
    std::string text;
    const int length = static_cast<int>(rng() % 300);
    for (int i = 0; i < length; ++i) {
      text += round % 2 == 0 ? static_cast<char>(rng() % 256) : alphabet[rng() % alphabet.size()];
    }
    HardwareSpec spec;
    absl::StatusOr<TextProtoSource> source = ParseTextProto(text, "garbage", &spec);
    if (!source.ok()) {
      EXPECT_EQ(source.status().code(), absl::StatusCode::kInvalidArgument);
      EXPECT_THAT(std::string(source.status().message()), StartsWith("garbage"))
          << "round " << round;
    }
  }
}

TEST(TextProto, DeepNestingIsAnErrorNotACrash) {
  std::string text;
  for (int i = 0; i < 10000; ++i) text += "interconnect {";
  HardwareSpec spec;
  EXPECT_THAT(ParseTextProto(text, "deep", &spec),
              StatusIs(absl::StatusCode::kInvalidArgument, StartsWith("deep:")));
}

TEST(ConfigProblems, ReportsNothingWhenEmpty) {
  ConfigProblems problems(nullptr);
  EXPECT_TRUE(problems.empty());
  EXPECT_THAT(problems.ToStatus(), IsOk());
}

TEST(ConfigProblems, PrefixesEachProblemWithItsLocation) {
  HardwareSpec spec;
  PERFSIM_ASSERT_OK_AND_ASSIGN(TextProtoSource source,
                               ParseTextProto(kSmallChip, "toy.textproto", &spec));
  ConfigProblems problems(&source);
  problems.Add("compute.peak_bf16_flops_per_second", "expected > 1e15; got 1e14");
  problems.AddAt("interconnect.dimensions[1]", "interconnect.dimensions[1].links_per_chip",
                 "expected > 0; got 0 (unset)");
  EXPECT_THAT(problems.ToStatus(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "toy.textproto:3:3: compute.peak_bf16_flops_per_second: expected > 1e15; "
                       "got 1e14\n"
                       "toy.textproto:7:3: interconnect.dimensions[1].links_per_chip: expected > "
                       "0; got 0 (unset)"));
}

TEST(ConfigProblems, WithoutASourceNamesTheFieldPathOnly) {
  ConfigProblems problems(nullptr);
  problems.Add("memory.l2_bytes", "expected > 0; got 0 (unset)");
  EXPECT_THAT(problems.ToStatus(), StatusIs(absl::StatusCode::kInvalidArgument,
                                            "memory.l2_bytes: expected > 0; got 0 (unset)"));
}

TEST(TextProtoPaths, NamesWithASlashOrTheExtensionAreFiles) {
  EXPECT_FALSE(LooksLikeTextProtoPath("tpu_v5p"));
  EXPECT_TRUE(LooksLikeTextProtoPath("./tpu_v5p"));
  EXPECT_TRUE(LooksLikeTextProtoPath("hardware/tpu_v5p.textproto"));
  EXPECT_TRUE(LooksLikeTextProtoPath("mine.textproto"));
}

TEST(TextProtoPaths, ReadingAMissingFileIsNotFoundNamingThePath) {
  EXPECT_THAT(ReadTextFile("/nonexistent/dir/x.textproto"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("/nonexistent/dir/x.textproto")));
}

TEST(ProtoFormat, FormatsQuantitiesByTheUnitInTheFieldName) {
  EXPECT_EQ(FormatQuantity("peak_bf16_flops_per_second", 4.59e14), "459 TFLOP/s");
  EXPECT_EQ(FormatQuantity("peak_int8_ops_per_second", 1.836e15), "1836 TOP/s");
  EXPECT_EQ(FormatQuantity("hbm_bytes_per_second", 2.765e12), "2.765 TB/s");
  EXPECT_EQ(FormatQuantity("link_bytes_per_second_per_direction", 9e10), "90 GB/s");
  EXPECT_EQ(FormatQuantity("vmem_bytes_per_core", 64.0 * 1024 * 1024), "64 MiB");
  EXPECT_EQ(FormatQuantity("hbm_capacity_bytes", 95.0 * 1024 * 1024 * 1024), "95 GiB");
  EXPECT_EQ(FormatQuantity("shared_memory_bytes_per_sm", 228.0 * 1024), "228 KiB");
  EXPECT_EQ(FormatQuantity("latency_seconds", 1e-6), "1 us");
  EXPECT_EQ(FormatQuantity("scale_out_round_trip_seconds", 3.1e-5), "31 us");
  EXPECT_EQ(FormatQuantity("matmul_fraction_of_peak", 0.5), "50% of peak");
  EXPECT_EQ(FormatQuantity("size_chips", 4), "");
  EXPECT_EQ(FormatQuantity("peak_fp8_flops_per_second", 0), "");
}

TEST(ProtoFormat, FormatDoubleIsShortestRoundTrip) {
  for (double value : {0.1, 4.59e14, 1.0, 2.827, 1.0 / 3.0, 6.69e13, -0.0, 1e-300,
                       std::numeric_limits<double>::max()}) {
    const std::string text = FormatDouble(value);
    EXPECT_EQ(std::strtod(text.c_str(), nullptr), value) << text;
  }
  EXPECT_EQ(FormatDouble(4.59e14), "4.59e+14");
  EXPECT_EQ(FormatDouble(2.5), "2.5");
}

TEST(ProtoFormat, JsonStringEscapesQuotesBackslashesAndControls) {
  EXPECT_EQ(JsonString("a\"b\\c\n\x01"), "\"a\\\"b\\\\c\\n\\u0001\"");
}

TEST(ProtoFormat, JsonHasEveryFieldAndKeepsInt64AsNumbers) {
  HardwareSpec spec;
  spec.set_name("toy \"chip\"");
  spec.set_kind(CHIP_KIND_GPU);
  spec.mutable_memory()->set_hbm_capacity_bytes(int64_t{1} << 60);
  spec.mutable_interconnect()->add_dimensions()->set_size_chips(8);
  const std::string json = ProtoToJson(spec);
  // 2^60 = 1152921504606846976 must appear as a bare number, not a string as in proto3 JSON.
  EXPECT_THAT(json, HasSubstr("\"hbm_capacity_bytes\": 1152921504606846976"));
  EXPECT_THAT(json, HasSubstr("\"kind\": \"CHIP_KIND_GPU\""));
  // Unset fields are present with their defaults.
  EXPECT_THAT(json, HasSubstr("\"l2_bytes\": 0"));
  // The output is valid JSON: protobuf's JSON parser reads it back into a generic Value.
  google::protobuf::Value value;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json, &value).ok()) << json;
  const auto& fields = value.struct_value().fields();
  EXPECT_EQ(fields.at("name").string_value(), "toy \"chip\"");
  EXPECT_EQ(fields.at("interconnect")
                .struct_value()
                .fields()
                .at("dimensions")
                .list_value()
                .values(0)
                .struct_value()
                .fields()
                .at("size_chips")
                .number_value(),
            8);
}

TEST(ProtoFormat, DescribeListsSetScalarsWithPathsAndUnits) {
  HardwareSpec spec;
  spec.mutable_memory()->set_vmem_bytes_per_core(64 * 1024 * 1024);
  spec.mutable_interconnect()->add_dimensions()->set_name("x");
  spec.mutable_interconnect()->add_dimensions()->set_size_chips(4);
  const std::vector<ProtoFieldLine> lines = DescribeProtoFields(spec);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0].path, "memory.vmem_bytes_per_core");
  EXPECT_EQ(lines[0].value, "67108864");
  EXPECT_EQ(lines[0].human, "64 MiB");
  EXPECT_EQ(lines[1].path, "interconnect.dimensions[0].name");
  EXPECT_EQ(lines[1].value, "\"x\"");
  EXPECT_EQ(lines[2].path, "interconnect.dimensions[1].size_chips");
  EXPECT_EQ(lines[2].human, "");
}

}  // namespace
}  // namespace perfsim
