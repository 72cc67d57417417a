// `perfsim step` (the whole training step) through the CLI library: table and JSON, the flag
// spellings users bring (Megatron's, MaxText's, a published row's string, a textproto), and
// bad input exiting 2 with the numbers named.
#include <string>

#include "gmock/gmock.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "proto/report.pb.h"
#include "tests/cli/cli_test_util.h"

namespace perfsim {
namespace {

using ::perfsim::testing::CliResult;
using ::perfsim::testing::RunCli;
using ::testing::HasSubstr;

report::StepReport ParseReport(const std::string& json) {
  report::StepReport r;
  const auto status = google::protobuf::util::JsonStringToMessage(json, &r);
  EXPECT_TRUE(status.ok()) << status.ToString() << "\n" << json;
  return r;
}

// Mixtral 8x7B on one 8-GPU H100 node, expert parallel over all 8, 8 micro-batches.
TEST(TrainStepCliTest, TablePrintsTimeThroughputMfuBreakdownAndMemory) {
  const CliResult r = RunCli({"step", "--model", "mixtral_8x7b", "--hw", "gpu_h100", "--devices",
                              "8", "--gbs", "64", "--seq", "4096", "--parallelism",
                              "EP8 MBS1", "--zero", "1"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("step: mixtral_8x7b on 8 x gpu_h100 (mesh 8), GBS 64 x 4096, "
                               "MBS 1, 8 micro-batches"));
  EXPECT_THAT(r.out, HasSubstr("dp=8 fsdp=1 zero=1 tp=1 ep=8 pp=1 vp=1 cp=1 1f1b"));
  for (const char* line : {"step time", "tokens/s per device", "model TFLOP/s/device",
                           "MFU (bf16 peak)", "pipeline bubble", "exposed DP reduction",
                           "HBM per device"}) {
    EXPECT_THAT(r.out, HasSubstr(line));
  }
}

// JSON: the same figures, related as the report says: tokens/s per device = GBS·S / step /
// devices, MFU = model TFLOP/s over the bf16 peak.
TEST(TrainStepCliTest, JsonFiguresAreConsistent) {
  const CliResult r = RunCli({"step", "--model", "mixtral_8x7b", "--hw", "gpu_h100", "--devices",
                              "8", "--gbs", "64", "--seq", "4096", "--ep", "8", "--zero", "1",
                              "--format=json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const report::StepReport rep = ParseReport(r.out);
  EXPECT_EQ(rep.model(), "mixtral_8x7b");
  EXPECT_EQ(rep.microbatches(), 8);
  EXPECT_GT(rep.step_seconds(), 0);
  EXPECT_NEAR(rep.tokens_per_second_per_device(), 64.0 * 4096 / rep.step_seconds() / 8,
              1e-9 * rep.tokens_per_second_per_device());
  EXPECT_NEAR(rep.model_tflops_per_device_megatron(),
              rep.model_flops_megatron() / rep.step_seconds() / 8 / 1e12, 1e-9);
  EXPECT_NEAR(rep.mfu_megatron_pct(), 100 * rep.model_tflops_per_device_megatron() * 1e12 / 989e12,
              1e-6);
  EXPECT_EQ(rep.distinct_layer_kinds(), 1);  // 32 identical MoE layers
  EXPECT_GT(rep.breakdown().moe_seconds(), rep.breakdown().attention_seconds());
  EXPECT_EQ(rep.moe_backend(), "ep_ragged_a2a");
}

// MaxText's flags: per-device batch 4 on FSDP 32 x TP 4 (128 v5p chips) is GBS 512 in one
// micro-batch of 16 sequences per FSDP shard; a textproto from stdin gives the same step as
// the flags.
TEST(TrainStepCliTest, MaxTextFlagsAndTextproto) {
  const CliResult flags = RunCli({"step", "--model", "llama4_maverick", "--hw", "tpu_v5p",
                                  "--mesh", "4x4x8", "--devices", "128",
                                  "--ici-fsdp-parallelism", "32", "--ici-tensor-parallelism", "4",
                                  "--per-device-batch-size", "4", "--seq", "8192", "--remat",
                                  "full", "--format=json"});
  ASSERT_EQ(flags.code, 0) << flags.err;
  const report::StepReport a = ParseReport(flags.out);
  EXPECT_EQ(a.global_batch(), 512);
  EXPECT_EQ(a.micro_batch(), 16);
  EXPECT_EQ(a.microbatches(), 1);
  EXPECT_GT(a.breakdown().recompute_seconds(), 0);
  const CliResult text = RunCli(
      {"step", "--step", "-", "--mesh", "4x4x8", "--format=json"},
      R"pb(model: "llama4_maverick" hw: "tpu_v5p" devices: 128 global_batch: 512 seq_len: 8192
           micro_batch: 16 parallelism { fsdp: 32 tp: 4 } remat { policy: REMAT_FULL })pb");
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_EQ(ParseReport(text.out).step_seconds(), a.step_seconds());
}

// --sweep ranks plans; the best is printed first with its plan, and the rest are accounted for.
TEST(TrainStepCliTest, SweepRanksPlans) {
  const CliResult r = RunCli({"step", "--sweep", "--model", "mixtral_8x7b", "--hw", "gpu_h100",
                              "--devices", "16", "--gbs", "128", "--seq", "4096", "--zero", "1",
                              "--top", "3"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("sweep: mixtral_8x7b on 16 x gpu_h100, GBS 128 x 4096:"));
  EXPECT_THAT(r.out, HasSubstr("   1  "));
  EXPECT_THAT(r.out, HasSubstr("   3  "));
  EXPECT_THAT(r.out, ::testing::Not(HasSubstr("   4  ")));
  EXPECT_THAT(r.out, HasSubstr("does not fit HBM"));
  const CliResult json = RunCli({"step", "--sweep", "--model", "mixtral_8x7b", "--hw",
                                 "gpu_h100", "--devices", "16", "--gbs", "128", "--seq", "4096",
                                 "--format=json"});
  EXPECT_EQ(json.code, 2);
  EXPECT_THAT(json.err, HasSubstr("--sweep prints a table only"));
}

TEST(TrainStepCliTest, BadInputExitsTwoNamingTheNumbers) {
  CliResult r = RunCli({"step", "--model", "deepseek_v3", "--hw", "gpu_h100", "--devices", "24",
                        "--gbs", "24", "--seq", "4096", "--tp", "3", "--pp", "8"});
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("tp 3 does not divide the model's 128 query heads"));
  EXPECT_THAT(r.err, HasSubstr("pp · vp = 8 chunks do not divide the model's 61 layers"));
  r = RunCli({"step", "--model", "deepseek_v3", "--hw", "gpu_h100", "--devices", "8", "--gbs",
              "8", "--seq", "4096", "--ep", "3"});
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("ep 3 does not divide the model's 256 experts"));
  r = RunCli({"step", "--model", "mixtral_8x7b", "--hw", "gpu_h100", "--gbs", "8", "--seq",
              "4096", "--remat", "sometimes"});
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("--remat: expected none, full, selective:MODULE[,MODULE...] or "
                               "maxtext:POLICY; got 'sometimes'"));
  r = RunCli({"step", "--model", "mixtral_8x7b", "--gbs", "8"});
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("expected --model and --hw"));
  r = RunCli({"step", "--model", "mixtral_8x7b", "--hw", "gpu_h100", "--gbs", "-4"});
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("--gbs: expected an integer"));
  r = RunCli({"step", "--step", "-"}, "model: \"mixtral_8x7b\" hw: 7");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("<stdin>:1:27: Expected string, got: 7"));
}

}  // namespace
}  // namespace perfsim
