// Tests of `perfsim hw` and `perfsim models`, driven through the CLI library (cli/cli.h).
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "cli/cli.h"
#include "gmock/gmock.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "sim/hw/chip_registry.h"
#include "sim/moe/model_registry.h"
#include "sim/util/status_matchers.h"
#include "sim/util/textproto.h"
#include "tests/cli/cli_test_util.h"

namespace perfsim {
namespace {

using ::perfsim::testing::CliResult;
using ::perfsim::testing::RunCli;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::MatchesRegex;
using ::testing::StartsWith;

google::protobuf::Value ParseJson(const std::string& json) {
  google::protobuf::Value value;
  const auto status = google::protobuf::util::JsonStringToMessage(json, &value);
  EXPECT_TRUE(status.ok()) << status.ToString() << "\n" << json;
  return value;
}

const google::protobuf::Value& Field(const google::protobuf::Value& value,
                                     const std::string& name) {
  return value.struct_value().fields().at(name);
}

TEST(HwCli, ListHasOneRowPerBuiltinChip) {
  const CliResult run = RunCli({"hw", "list"});
  ASSERT_EQ(run.code, kExitOk) << run.err;
  EXPECT_THAT(run.err, IsEmpty());
  const std::vector<std::string> lines = absl::StrSplit(run.out, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), BuiltinChipNames().size() + 1);  // Header + one row per chip.
  EXPECT_THAT(lines[0], HasSubstr("bf16 TFLOP/s"));
  // v5p: 459 TFLOP/s bf16, 95 GiB, 2.77 TB/s (hardware.csv), 64 MiB VMEM per TensorCore.
  EXPECT_THAT(run.out, MatchesRegex("(.|\n)*tpu_v5p +TPU +459 +95 +2\\.77 +64 MiB VMEM  torus "
                                    "4x4x4(.|\n)*"));
  // H100: 989 TFLOP/s, 80 GiB, 3.35 TB/s, 228 KiB shared memory per SM, NVSwitch of 8.
  EXPECT_THAT(run.out, MatchesRegex("(.|\n)*gpu_h100 +GPU +989 +80 +3\\.35 +228 KiB SMEM/SM  "
                                    "switch 8(.|\n)*"));
}

TEST(HwCli, ListAsJsonIsValidAndMachineReadable) {
  const CliResult run = RunCli({"hw", "list", "--format=json"});
  ASSERT_EQ(run.code, kExitOk) << run.err;
  const google::protobuf::Value value = ParseJson(run.out);
  ASSERT_EQ(value.list_value().values_size(), static_cast<int>(BuiltinChipNames().size()));
  const google::protobuf::Value* v7x = nullptr;
  for (const google::protobuf::Value& chip : value.list_value().values()) {
    if (Field(chip, "name").string_value() == "tpu_v7x") v7x = &chip;
  }
  ASSERT_NE(v7x, nullptr);
  EXPECT_EQ(Field(*v7x, "peak_bf16_flops_per_second").number_value(), 2.307e15);
  EXPECT_EQ(Field(*v7x, "scratch_limit_bytes").number_value(), 32 * 1024 * 1024);
}

TEST(HwCli, ShowPrintsEveryFieldWithItsUnit) {
  const CliResult run = RunCli({"hw", "show", "tpu_v5p"});
  ASSERT_EQ(run.code, kExitOk) << run.err;
  EXPECT_THAT(run.out, StartsWith("tpu_v5p: TPU v5p (TPU)\n"));
  EXPECT_THAT(run.out, MatchesRegex("(.|\n)*compute.peak_bf16_flops_per_second +4.59e\\+14  459 "
                                    "TFLOP/s\n(.|\n)*"));
  EXPECT_THAT(run.out, MatchesRegex("(.|\n)*memory.default_scoped_vmem_limit_bytes +16777216  16 "
                                    "MiB\n(.|\n)*"));
  EXPECT_THAT(run.out, MatchesRegex("(.|\n)*interconnect.dimensions\\[2\\].latency_seconds +1e-06 "
                                    " 1 us\n(.|\n)*"));
  // Derived: 459e12 / 2.765e12 = 166 FLOP/B.
  EXPECT_THAT(run.out, MatchesRegex("(.|\n)*ridge_bf16 +166  FLOP/B(.|\n)*"));
}

TEST(HwCli, ShowAsJsonRoundTripsTheFields) {
  const CliResult run = RunCli({"hw", "show", "gpu_h100", "--format", "json"});
  ASSERT_EQ(run.code, kExitOk) << run.err;
  const google::protobuf::Value value = ParseJson(run.out);
  EXPECT_EQ(Field(value, "kind").string_value(), "CHIP_KIND_GPU");
  // H100 SXM HBM bandwidth 3.35 TB/s and 80 GiB (hardware.csv; XLA's spec says 80 GiB).
  EXPECT_EQ(Field(Field(value, "memory"), "hbm_bytes_per_second").number_value(), 3.35e12);
  EXPECT_EQ(Field(Field(value, "memory"), "hbm_capacity_bytes").number_value(), 85899345920.0);
}

TEST(HwCli, ShowReadsAFileOrStandardInput) {
  const std::string path = PERFSIM_TESTDATA_DIR "/hw/valid_chip.textproto";
  const CliResult from_file = RunCli({"hw", "show", path});
  ASSERT_EQ(from_file.code, kExitOk) << from_file.err;
  EXPECT_THAT(from_file.out, StartsWith("toy_tpu: Toy TPU (TPU)\n"));
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::string text, ReadTextFile(path));
  const CliResult from_stdin = RunCli({"hw", "show", "-"}, text);
  ASSERT_EQ(from_stdin.code, kExitOk) << from_stdin.err;
  EXPECT_EQ(from_stdin.out, from_file.out);
}

TEST(HwCli, UnknownChipExitsTwoListingTheKnownNames) {
  const CliResult run = RunCli({"hw", "show", "tpu_v9"});
  EXPECT_EQ(run.code, kExitBadInput);
  EXPECT_THAT(run.out, IsEmpty());
  EXPECT_THAT(run.err, HasSubstr("unknown hardware 'tpu_v9'"));
  for (const std::string& name : BuiltinChipNames()) EXPECT_THAT(run.err, HasSubstr(name));
}

TEST(HwCli, InvalidFileExitsTwoWithEveryProblemOnItsOwnLocatedLine) {
  const std::string path = PERFSIM_TESTDATA_DIR "/hw/invalid_chip.textproto";
  const CliResult run = RunCli({"hw", "show", path});
  EXPECT_EQ(run.code, kExitBadInput);
  std::vector<std::string> lines = absl::StrSplit(run.err, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 10u) << run.err;  // A heading, then the file's nine problems.
  EXPECT_THAT(lines[0], HasSubstr("invalid hardware description"));
  for (size_t i = 1; i < lines.size(); ++i) {
    EXPECT_THAT(lines[i], StartsWith(path + ":"));
    EXPECT_THAT(lines[i], MatchesRegex(".*\\.textproto:[0-9]+:[0-9]+: .*"));
  }
}

TEST(HwCli, SyntaxErrorsExitTwoWithFileLineAndColumn) {
  const CliResult run = RunCli({"hw", "show", "-"}, "name: \"x\"\ncompute { peak: 1 }\n");
  EXPECT_EQ(run.code, kExitBadInput);
  EXPECT_THAT(run.err, HasSubstr("<stdin>:2:11: "));
}

TEST(HwCli, UsageErrorsExitTwoAndHelpExitsZero) {
  EXPECT_EQ(RunCli({"hw"}).code, kExitBadInput);
  EXPECT_EQ(RunCli({"hw", "frobnicate"}).code, kExitBadInput);
  EXPECT_EQ(RunCli({"hw", "show"}).code, kExitBadInput);
  const CliResult bad_format = RunCli({"hw", "list", "--format=yaml"});
  EXPECT_EQ(bad_format.code, kExitBadInput);
  EXPECT_THAT(bad_format.err, HasSubstr("--format: expected table or json; got 'yaml'"));
  const CliResult help = RunCli({"hw", "--help"});
  EXPECT_EQ(help.code, kExitOk);
  EXPECT_THAT(help.out, HasSubstr("usage: perfsim hw list"));
}

TEST(ModelsCli, ListHasOneRowPerBuiltinModel) {
  const CliResult run = RunCli({"models", "list"});
  ASSERT_EQ(run.code, kExitOk) << run.err;
  const std::vector<std::string> lines = absl::StrSplit(run.out, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), BuiltinModelNames().size() + 1);
  // DeepSeek-V3: D 7168, F 2048, E 256, K 8, 1 shared, 58 of 61 layers MoE (models.md).
  EXPECT_THAT(run.out, MatchesRegex("(.|\n)*deepseek_v3 +7168 +2048 +256 +8 +1 +58/61  "
                                    "sigmoid\\+bias groups 4/8 renorm x2.5 +swiglu\n(.|\n)*"));
}

TEST(ModelsCli, ListAsJsonIsValid) {
  const CliResult run = RunCli({"models", "list", "--format=json"});
  ASSERT_EQ(run.code, kExitOk) << run.err;
  const google::protobuf::Value value = ParseJson(run.out);
  EXPECT_EQ(value.list_value().values_size(), static_cast<int>(BuiltinModelNames().size()));
}

TEST(ModelsCli, ShowPrintsFieldsAndDerivedCounts) {
  const CliResult run = RunCli({"models", "show", "deepseek_v3"});
  ASSERT_EQ(run.code, kExitOk) << run.err;
  EXPECT_THAT(run.out, StartsWith("deepseek_v3: DeepSeek-V3 (671B)\n"));
  EXPECT_THAT(run.out, MatchesRegex("(.|\n)*  d_model +7168\n(.|\n)*"));
  EXPECT_THAT(run.out, MatchesRegex("(.|\n)*  router.kind +ROUTER_KIND_SIGMOID_BIAS_GROUPED_TOPK"
                                    "\n(.|\n)*"));
  // 2·8·3·7168·2048 = 704,643,072 (models.md section 2: 704.6 M).
  EXPECT_THAT(run.out, MatchesRegex("(.|\n)*routed_flops_per_token +704643072(.|\n)*"));
}

TEST(ModelsCli, ShowAsJsonKeepsEnumsAndNumbers) {
  const CliResult run = RunCli({"models", "show", "nano", "--format=json"});
  ASSERT_EQ(run.code, kExitOk) << run.err;
  const google::protobuf::Value value = ParseJson(run.out);
  EXPECT_EQ(Field(value, "d_model").number_value(), 40);
  EXPECT_EQ(Field(Field(value, "router"), "kind").string_value(),
            "ROUTER_KIND_SIGMOID_BIAS_GROUPED_TOPK");
}

TEST(ModelsCli, UnknownModelExitsTwoListingTheKnownNames) {
  const CliResult run = RunCli({"models", "show", "gpt5"});
  EXPECT_EQ(run.code, kExitBadInput);
  for (const std::string& name : BuiltinModelNames()) EXPECT_THAT(run.err, HasSubstr(name));
}

TEST(ModelsCli, InvalidFileExitsTwoWithEveryProblemLocated) {
  const std::string path = PERFSIM_TESTDATA_DIR "/hw/invalid_model.textproto";
  const CliResult run = RunCli({"models", "show", path});
  EXPECT_EQ(run.code, kExitBadInput);
  std::vector<std::string> lines = absl::StrSplit(run.err, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 9u) << run.err;  // A heading, then the file's eight problems.
  for (size_t i = 1; i < lines.size(); ++i) EXPECT_THAT(lines[i], StartsWith(path + ":"));
}

TEST(ModelsCli, HelpExitsZero) {
  const CliResult run = RunCli({"models", "-h"});
  EXPECT_EQ(run.code, kExitOk);
  EXPECT_THAT(run.out, HasSubstr("usage: perfsim models list"));
}

}  // namespace
}  // namespace perfsim
