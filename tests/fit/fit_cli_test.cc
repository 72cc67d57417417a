// `perfsim fit` through the CLI library: exit codes, JSON fields, usage errors.
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli.h"
#include "gmock/gmock.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "tests/cli/cli_test_util.h"

namespace perfsim {
namespace {

using ::perfsim::testing::CliResult;
using ::perfsim::testing::RunCli;

using ::testing::HasSubstr;
using ::testing::IsEmpty;



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

std::vector<std::string> GmmV5p(const std::string& dtype) {
  return {"fit",          "--kernel",          "gmm",     "--hw", "tpu_v5p",
          "--shape",      "16384,1024,1024,8", "--dtype", dtype,  "--tiling",
          "512,1024,1024"};
}

TEST(FitCli, F32MisfitExitsOneWithTheNumbersInJson) {
  // 18 MiB (18874368 B) against v5p's 16 MiB scoped limit (footprint_test.cc derives it).
  std::vector<std::string> args = GmmV5p("f32,f32,f32");
  args.push_back("--format=json");
  const CliResult run = RunCli(args);
  EXPECT_EQ(run.code, kExitCheckFailed) << run.err;
  EXPECT_THAT(run.err, IsEmpty());
  const google::protobuf::Value json = ParseJson(run.out);
  EXPECT_FALSE(Field(json, "fits").bool_value());
  EXPECT_EQ(Field(json, "required_bytes").number_value(), 18874368);
  EXPECT_EQ(Field(json, "limit_bytes").number_value(), 16777216);
  EXPECT_EQ(Field(json, "physical_bytes").number_value(), 67108864);
  EXPECT_EQ(Field(json, "margin_bytes").number_value(), -2097152);
  const auto& buffers = Field(json, "buffers").list_value();
  ASSERT_GE(buffers.values_size(), 4);
  const google::protobuf::Value& rhs = buffers.values(1);
  EXPECT_EQ(Field(rhs, "name").string_value(), "rhs");
  EXPECT_EQ(Field(rhs, "dtype").string_value(), "f32");
  EXPECT_EQ(Field(rhs, "count").number_value(), 2);
  EXPECT_EQ(Field(rhs, "bytes").number_value(), 8388608);
  EXPECT_EQ(Field(rhs, "shape").list_value().values(0).number_value(), 1024);
}

TEST(FitCli, Bf16FitsAndExitsZero) {
  const CliResult run = RunCli(GmmV5p("bf16"));
  EXPECT_EQ(run.code, kExitOk) << run.err;
  EXPECT_THAT(run.out, HasSubstr("VMEM required    10 MiB (10485760 B)"));
  EXPECT_THAT(run.out, HasSubstr("fits: needs 10 MiB of VMEM"));
}

TEST(FitCli, TableNamesTheMisfit) {
  const CliResult run = RunCli(GmmV5p("f32"));
  EXPECT_EQ(run.code, kExitCheckFailed);
  EXPECT_THAT(run.out, HasSubstr("DOES NOT FIT: needs 18 MiB of VMEM; limit 16 MiB"));
}

TEST(FitCli, VmemLimitFlagTakesUnits) {
  std::vector<std::string> args = GmmV5p("f32");
  args.push_back("--vmem-limit=32MiB");
  const CliResult run = RunCli(args);
  EXPECT_EQ(run.code, kExitOk) << run.err;
  EXPECT_THAT(run.out, HasSubstr("limit            32 MiB (33554432 B): the given VMEM limit"));
}

TEST(FitCli, SearchFindsAFittingTilingAndListsRunnersUp) {
  const CliResult run =
      RunCli({"fit", "--kernel", "gmm", "--hw", "tpu_v7x", "--shape", "16384,7168,2048,256",
               "--dtype", "bf16", "--search", "--top", "3", "--format", "json"});
  EXPECT_EQ(run.code, kExitOk) << run.err;
  const google::protobuf::Value json = ParseJson(run.out);
  EXPECT_EQ(Field(Field(json, "search"), "candidates").number_value(), 12 * 56 * 16);
  EXPECT_THAT(Field(Field(json, "search"), "cost_model").string_value(),
              HasSubstr("CostGroupedMatmul"));
  // The fields, at top level, for the chosen tiling.
  EXPECT_TRUE(Field(json, "fits").bool_value());
  const double required = Field(json, "required_bytes").number_value();
  EXPECT_GT(required, 0);
  EXPECT_LE(required, 33554432);
  EXPECT_EQ(Field(json, "limit_bytes").number_value(), 33554432);
  EXPECT_EQ(Field(json, "physical_bytes").number_value(), 67108864);
  EXPECT_EQ(Field(json, "margin_bytes").number_value(), 33554432 - required);
  EXPECT_EQ(Field(json, "tiling").list_value().values_size(), 3);
  EXPECT_GT(Field(json, "estimated_seconds").number_value(), 0);
  double buffer_bytes = 0;
  for (const google::protobuf::Value& b : Field(json, "buffers").list_value().values()) {
    if (Field(b, "memory").string_value() == "VMEM")
      buffer_bytes += Field(b, "bytes").number_value();
  }
  EXPECT_EQ(buffer_bytes, required);
  EXPECT_EQ(Field(json, "runners_up").list_value().values_size(), 3);
}

TEST(FitCli, SearchJsonWithNothingFittingReportsTheSmallestFootprintAtTopLevel) {
  // fused_ffn_d_tiled on DeepSeek-V3 (search_test.cc derives the smallest footprint, tiling
  // (8, 128, 2048), 119021568 B).
  const CliResult run =
      RunCli({"fit", "--kernel", "fused_ffn_d_tiled", "--hw", "tpu_v7x", "--shape",
               "16384,7168,2048,256", "--dtype", "bf16", "--search", "--format=json"});
  EXPECT_EQ(run.code, kExitCheckFailed) << run.err;
  const google::protobuf::Value json = ParseJson(run.out);
  EXPECT_FALSE(Field(json, "fits").bool_value());
  EXPECT_EQ(Field(json, "required_bytes").number_value(), 119021568);
  EXPECT_EQ(Field(Field(json, "search"), "fitting").number_value(), 0);
  EXPECT_EQ(Field(json, "runners_up").list_value().values_size(), 0);
}

TEST(FitCli, WithoutTilingUsesTheKernelsDefault) {
  // megablox's default (128, 128, 128) in bf16: lhs, rhs, out 2 × 32 KiB each and acc
  // 128·128·4 = 64 KiB: 256 KiB (backends.md 1b, "JAX default (128,128,128) bf16 gmm").
  const CliResult run = RunCli({"fit", "--kernel", "gmm", "--hw", "tpu_v5p", "--shape",
                              "16384,1024,1024,8", "--dtype", "bf16"});
  EXPECT_EQ(run.code, kExitOk) << run.err;
  EXPECT_THAT(run.out, HasSubstr("tiling (128, 128, 128) (no --tiling: megablox's default"));
  EXPECT_THAT(run.out, HasSubstr("VMEM required    256 KiB (262144 B)"));
  // Clamped to small dimensions: m = 64 gives tm = 64.
  const CliResult small = RunCli({"fit", "--kernel", "tgmm", "--hw", "tpu_v5p", "--shape",
                                "64,1024,1024,8", "--dtype", "bf16", "--format=json"});
  EXPECT_EQ(small.code, kExitOk) << small.err;
  const google::protobuf::Value json = ParseJson(small.out);
  EXPECT_EQ(Field(json, "tiling").list_value().values(0).number_value(), 64);
  EXPECT_THAT(Field(json, "tiling_source").string_value(), HasSubstr("megablox"));
  // The fused FFN's default is what fused_expert_ffn emits: (512, D, 1024) over F.
  const CliResult ffn = RunCli({"fit", "--kernel", "fused_ffn_f_tiled", "--hw", "tpu_v7x", "--shape",
                              "16384,7168,2048,256", "--dtype", "bf16"});
  EXPECT_THAT(ffn.out, HasSubstr("tiling (512, 7168, 1024) (no --tiling: perfsim's "
                                 "fused_expert_ffn default"));
}

TEST(FitCli, SearchWithNothingFittingExitsOneAndShowsTheClosestMiss) {
  const CliResult run = RunCli({"fit", "--kernel", "fused_ffn_d_tiled", "--hw", "tpu_v7x", "--shape",
                              "16384,7168,2048,256", "--dtype", "bf16", "--search"});
  EXPECT_EQ(run.code, kExitCheckFailed) << run.err;
  EXPECT_THAT(run.out,
              HasSubstr("no tiling fits; the smallest footprint is tiling (8, 128, 2048)"));
}

TEST(FitCli, BadInputExitsTwoWithExpectedGot) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<std::string> base = {"fit",     "--hw", "tpu_v5p", "--shape", "1024,1024,1024",
                                         "--dtype", "bf16"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  const std::vector<Case> cases = {
      {with({"--kernel", "gmm3", "--tiling", "128,128,128"}),
       "--kernel: expected one of gmm, tgmm, gmm_v2"},
      {with({"--kernel", "gmm", "--tiling", "128,128,128", "--search"}),
       "fit: expected at most one of --tiling and --search; got both"},
      {with({"--kernel", "gmm_v2"}), "fit: gmm_v2 has no fixed default"},
      {with({"--kernel", "ragged_gather"}), "expected --tiling or --search; got neither"},
      {with({"--kernel", "gmm", "--tiling", "128,128"}),
       "--tiling: expected tm,tk,tn as positive integers; got '128,128'"},
      {with({"--kernel", "gmm", "--tiling", "128,128,128", "--stages", "3"}),
       "--stages: applies to gpu_grouped_gemm; got --kernel gmm"},
      {with({"--kernel", "gmm", "--tiling", "128,128,128", "--vmem-limit", "lots"}),
       "--vmem-limit: expected a positive byte count"},
      {with({"--kernel", "gmm", "--tiling", "128,128,128", "--vmem-limit", "1GiB"}),
       "VMEM limit: expected 1 to 67108864 bytes"},
      {with({"--kernel", "gpu_grouped_gemm", "--tiling", "128,64,128"}),
       "gpu_grouped_gemm: expected a GPU chip"},
      {{"fit", "--kernel", "gmm", "--hw", "tpu_v5p", "--shape", "0,1,1", "--dtype", "bf16",
        "--tiling", "8,128,128"},
       "--shape: expected m,k,n[,groups] as positive integers; got '0,1,1'"},
      {{"fit", "--kernel", "gmm", "--hw", "tpu_v5p", "--shape", "8,128,128", "--dtype", "bf17",
        "--tiling", "8,128,128"},
       "--dtype: expected an element type such as bf16"},
      {{"fit", "--kernel", "gmm", "--hw", "tpu_v9", "--shape", "8,128,128", "--dtype", "bf16",
        "--tiling", "8,128,128"},
       "unknown hardware 'tpu_v9'"},
      {{"fit", "--kernel", "gmm", "--shape", "8,128,128", "--dtype", "bf16", "--tiling",
        "8,128,128"},
       "fit: expected --hw; got none"},
  };
  for (const Case& c : cases) {
    const CliResult run = RunCli(c.args);
    EXPECT_EQ(run.code, kExitBadInput) << c.message << "\n" << run.out;
    EXPECT_THAT(run.err, HasSubstr(c.message));
  }
}

TEST(FitCli, HelpListsEveryKernel) {
  const CliResult run = RunCli({"fit", "--help"});
  EXPECT_EQ(run.code, kExitOk);
  for (const char* kernel : {"gmm", "tgmm", "gmm_v2", "tgmm_v2", "fused_ffn_d_tiled",
                             "fused_ffn_f_tiled", "ragged_gather", "gpu_grouped_gemm"}) {
    EXPECT_THAT(run.out, HasSubstr(kernel));
  }
}

}  // namespace
}  // namespace perfsim
