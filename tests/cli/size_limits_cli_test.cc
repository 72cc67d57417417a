// Sizes on the command line that overflow int64 or pass the plausibility limits of a step
// (sim/moe/step_spec.h): each is exit 2 naming the quantity and the limit, never a segfault, a
// wrapped size or a silently wrong answer (issue 16, defects 2 and 3).
#include <string>
#include <vector>

#include "cli/cli.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cli/cli_test_util.h"

namespace perfsim {
namespace {

using ::perfsim::testing::CliResult;
using ::perfsim::testing::NanoLowerArgs;
using ::perfsim::testing::RunCli;

using ::testing::HasSubstr;

// predict on one H100 (one device, dp = ep = 1): any token count divides the devices, so a
// wrapped count passed every check downstream.
std::vector<std::string> PredictOnOneGpu(std::vector<std::string> extra) {
  std::vector<std::string> args = {"predict",  "--model",   "nano",        "--hw",
                                   "gpu_h100", "--mesh",    "1",           "--parallelism",
                                   "dp=1",     "--backend", "dense_einsum"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

TEST(SizeLimitsCli, PredictOnOneGpuPrintsItsTokens) {
  // The configuration of the tests below, within the limits: 3 x 6 = 18 tokens.
  CliResult r = RunCli(PredictOnOneGpu({"--batch", "3", "--seq", "6"}));
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_THAT(r.out, HasSubstr("batch 3 x seq 6 = 18 tokens"));
}

TEST(SizeLimitsCli, PredictRefusesTokensThatWrapInt64InsteadOfPredictingTwoTokens) {
  // 3 * 6148914691236517206 = 2^64 + 2: wrapped, predict printed "= 2 tokens", a step time
  // and exit 0.
  CliResult r = RunCli(PredictOnOneGpu({"--batch", "3", "--seq", "6148914691236517206"}));
  EXPECT_EQ(r.code, kExitBadInput) << r.out;
  EXPECT_THAT(r.err, HasSubstr("tokens = batch * seq: 3 * 6148914691236517206 overflows int64 "
                               "(max 9223372036854775807)"));
  EXPECT_EQ(r.out, "");
}

TEST(SizeLimitsCli, PredictRefusesHugeBatchesWithTheLimit) {
  // 2^31 * 2^31 = 2^62 tokens fits int64 but not the 2^32 limit; unchecked, the lowerings'
  // shapes overflowed and predict segfaulted.
  CliResult r = RunCli(PredictOnOneGpu({"--batch", "2147483648", "--seq", "2147483648"}));
  EXPECT_EQ(r.code, kExitBadInput) << r.out;
  EXPECT_THAT(r.err, HasSubstr("tokens = batch * seq: expected at most 4294967296; got "
                               "4611686018427387904"));
  r = RunCli({"predict", "--batch", "1000000000000000000"});  // the default seq 4096
  EXPECT_EQ(r.code, kExitBadInput) << r.out;
  EXPECT_THAT(r.err, HasSubstr("tokens = batch * seq: 1000000000000000000 * 4096 overflows int64"));
}

TEST(SizeLimitsCli, LowerRefusesASeqThatWrapsToZeroTokens) {
  // The default batch 512 * 2^62 = 2^71 wraps to 0 (so did nano's old default 4 * 2^62 = 2^64):
  // lower emitted a module of zero tokens, exit 0.
  CliResult r = RunCli({"lower", "--seq", "4611686018427387904"});
  EXPECT_EQ(r.code, kExitBadInput) << r.out;
  EXPECT_THAT(r.err, HasSubstr("tokens = batch * seq: 512 * 4611686018427387904 overflows int64"));
  EXPECT_EQ(r.out, "");
}

TEST(SizeLimitsCli, ValidateRefusesTokensBeyondTheLimit) {
  CliResult r =
      RunCli({"validate", "--backend", "dense_einsum", "--batch", "65536", "--seq", "65537"});
  EXPECT_EQ(r.code, kExitBadInput) << r.out;
  EXPECT_THAT(r.err, HasSubstr("tokens = batch * seq: expected at most 4294967296; got "
                               "4295032832"));
}

TEST(SizeLimitsCli, SweepRefusesASeqWhoseTokensOverflowBeforeEnumerating) {
  // Default space: DeepSeek-V3 on TPU v7x 4x8x8 (512 devices), batch 1 per device.
  CliResult r = RunCli({"sweep", "--seq", "4611686018427387904", "--quiet"});
  EXPECT_EQ(r.code, kExitBadInput) << r.out;
  EXPECT_THAT(r.err, HasSubstr("tokens = batch per device 1 * 512 devices * seq "
                               "4611686018427387904: the product overflows int64"));
  r = RunCli({"sweep", "--seq", "16777216", "--quiet"});  // 512 * 2^24 = 2^33 tokens
  EXPECT_EQ(r.code, kExitBadInput) << r.out;
  EXPECT_THAT(r.err, HasSubstr("expected at most 4294967296; got 8589934592"));
}

TEST(SizeLimitsCli, KnobsBeyondTheirLimitsAreRefusedByName) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      // Unchecked, E·(A−1) padding rows wrapped and lower segfaulted.
      {{"--backend", "grouped_gemm_aligned", "--align-size", "4611686018427387904"},
       "align_size: expected at most 1048576; got 4611686018427387904"},
      {{"--backend", "capacity_einsum", "--capacity-factor", "1e300"},
       "capacity_factor: expected a finite number at most 16384; got 1e+300"},
      {{"--backend", "capacity_einsum", "--capacity-factor", "inf"},
       "capacity_factor: expected a finite number at most 16384; got inf"},
      {{"--backend", "ep_ragged_a2a", "--parallelism", "ep=2", "--ragged-buffer-factor", "1e300"},
       "ragged_buffer_factor: expected a finite number at most 16384; got 1e+300"},
      {{"--backend", "fused_expert_ffn", "--parallelism", "ep=2", "--fused-tile",
        "4611686018427387904"},
       "fused_tile: expected at most 1048576; got 4611686018427387904"},
      {{"--backend", "megablox_gmm", "--tiling-wi", "512,4611686018427387904,1024"},
       "tiling wi.fwd tk: expected at most 1048576; got 4611686018427387904"},
      {{"--parallelism", "dp=4611686018427387904,ep=4"},
       "devices = dp * fsdp * ep * tp: the product overflows int64"},
      {{"--parallelism", "dp=2097152"},
       "devices = dp * fsdp * ep * tp: expected at most 1048576; got 2097152"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {"lower"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    CliResult r = RunCli(args);
    EXPECT_EQ(r.code, kExitBadInput) << c.message;
    EXPECT_THAT(r.err, HasSubstr(c.message));
  }
}

TEST(SizeLimitsCli, BuffersABackendDerivesAreCheckedAgainstTheLimit) {
  // Within every flag's own limit, a backend's derived buffer can still be too large: the
  // capacity masks [B_l, S, E, C] grow with S² (nano: E = 8, K = 2; S = 2^24, cf = 16384).
  CliResult r = RunCli(NanoLowerArgs({"--backend", "capacity_einsum", "--batch", "1", "--seq",
                                      "16777216", "--capacity-factor", "16384"}));
  EXPECT_EQ(r.code, kExitBadInput) << r.out;
  EXPECT_THAT(r.err, HasSubstr("bytes of the capacity mask [B_l, S, E, C] in f32"));
  // ep_ragged_a2a's receive buffer int(T_l·K·f) rows at f = 16384.
  r = RunCli(NanoLowerArgs({"--backend", "ep_ragged_a2a", "--parallelism", "ep=2", "--batch",
                            "65536", "--seq", "65536", "--ragged-buffer-factor", "16384"}));
  EXPECT_EQ(r.code, kExitBadInput) << r.out;
  EXPECT_THAT(r.err, HasSubstr("bytes of the ragged receive buffer"));
}

TEST(SizeLimitsCli, HelpStatesTheLimits) {
  CliResult r = RunCli({"lower", "--help"});
  EXPECT_EQ(r.code, kExitOk);
  EXPECT_THAT(r.out, HasSubstr("at most 2^32"));
  EXPECT_THAT(r.out, HasSubstr("68x the largest published global batch"));
}

}  // namespace
}  // namespace perfsim
