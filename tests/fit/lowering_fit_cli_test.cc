// A lowering whose kernel tiling does not fit is a failed check (exit 1) in `perfsim predict`
// and `perfsim validate`, with the numbers; other RESOURCE_EXHAUSTED errors stay bad input.
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/cord.h"
#include "cli/cli.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/fit/module_fit.h"
#include "tests/cli/cli_test_util.h"

namespace perfsim {
namespace {

using ::perfsim::testing::CliResult;
using ::perfsim::testing::RunCli;

using ::testing::AllOf;
using ::testing::HasSubstr;



// DeepSeek-V3 through fused_expert_ffn tiled over D on v7x. The lowering's default knobs give
// the kernel (tm, td, tf) = (512, 1024, 2048) over the padded sorted rows (sim/lowering/
// fused_expert_ffn.cc), and a D-tiled kernel holds wi_0 and wi_1 whole: 2 × 2 × 7168 × 2048 ×
// 2 B = 112 MiB of weights alone, over the kernel's own limit of 0.9 × 64 MiB = 57.6 MiB
// (60397977 B). The exact total depends on the row tile the lowering picks, so the test asks
// for the parts the derivation fixes.
TEST(LoweringFitCli, PredictMisfitIsAFailedCheckWithTheNumbers) {
  const CliResult run =
      RunCli({"predict", "--backend", "fused_expert_ffn", "--fused-tiling", "d", "--model",
               "deepseek_v3", "--hw", "tpu_v7x", "--parallelism", "dp=2", "--mesh", "1x1x1"});
  EXPECT_EQ(run.code, kExitCheckFailed) << run.err;
  EXPECT_THAT(run.err, AllOf(HasSubstr("backend fused_expert_ffn on tpu_v7x: "),
                             HasSubstr("(perfsim.fused_ffn"),
                             HasSubstr("fused_ffn_d_tiled tiling ("), HasSubstr(" MiB of VMEM ("),
                             HasSubstr("limit 57.6 MiB (60397977 bytes, the kernel's own limit"),
                             HasSubstr("wi_0 2 x [7168,2048] bf16 = 56 MiB")));
  // Tiled over F with (tm, tf) = (256, 256) the same step fits (x, wi_0, wi_1, wo, out and the
  // f32 accumulator, 7 MiB each: 42 MiB, as `perfsim fit` shows), and predict succeeds. One
  // v7x chip is the two devices of dp=2.
  const CliResult over_f =
      RunCli({"predict", "--backend", "fused_expert_ffn", "--fused-tiling", "f", "--fused-tile",
               "256", "--tiling-wi", "256,1024,1024", "--model", "deepseek_v3", "--hw",
               "tpu_v7x", "--parallelism", "dp=2", "--mesh", "1x1x1"});
  EXPECT_EQ(over_f.code, kExitOk) << over_f.err;
}

TEST(LoweringFitCli, ValidateMisfitFailsTheCaseWithTheNumbers) {
  // The same D-tiled kernel at validate's default 4 × 16 tokens: 64 tokens × K 8 = 512 sorted
  // rows, still 112 MiB of whole wi_0 and wi_1 on v7x. The fit check runs before the
  // interpreter, so the case fails without running DeepSeek-V3 on the CPU.
  const CliResult run =
      RunCli({"validate", "--backend", "fused_expert_ffn", "--fused-tiling", "d", "--model",
               "deepseek_v3", "--hw", "tpu_v7x", "--devices", "1", "--phase", "fwd", "--router",
               "model", "--routing", "random", "--format", "json"});
  EXPECT_EQ(run.code, kExitCheckFailed) << run.err << run.out;
  EXPECT_THAT(run.out, AllOf(HasSubstr("fit on tpu_v7x: "), HasSubstr("fused_ffn_d_tiled tiling"),
                             HasSubstr(" MiB of VMEM ("), HasSubstr("limit 57.6 MiB")));
}

TEST(LoweringFitCli, OnlyMarkedStatusesAreFailedChecks) {
  std::istringstream in;
  std::ostringstream out, err;
  CliIo io{in, out, err};
  // The interpreter's memory budget and other RESOURCE_EXHAUSTED errors are bad input.
  EXPECT_EQ(ReportStatus(absl::ResourceExhaustedError("memory budget"), io), kExitBadInput);
  absl::Status marked = absl::ResourceExhaustedError("does not fit");
  marked.SetPayload(kMisfitPayloadUrl, absl::Cord("fit"));
  EXPECT_EQ(ReportStatus(marked, io), kExitCheckFailed);
  EXPECT_THAT(err.str(), HasSubstr("perfsim: does not fit"));
}

}  // namespace
}  // namespace perfsim
