// Inputs that once crashed, hung or exhausted the machine, through the command line: each ends
// with exit 2 and a message naming the limit, or runs within bounded resources. The modules
// are generated (tests/ir/generated_hlo.h) rather than committed.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli/cli.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cli/cli_test_util.h"
#include "tests/ir/generated_hlo.h"

namespace perfsim {
namespace {

using ::perfsim::testing::CallChainHlo;
using ::perfsim::testing::CallFanOutHlo;
using ::perfsim::testing::CliResult;
using ::perfsim::testing::FarDevicePermuteHlo;
using ::perfsim::testing::kNeverEndingWhileHlo;
using ::perfsim::testing::RunCli;
using ::testing::HasSubstr;
using ::testing::Not;

TEST(ResourceLimits, CostCountsCallsNestedAnyDepthWithoutRecursing) {
  // 5,000 nested calls overflowed the stack of `perfsim cost`; it now walks callees first
  // with an explicit stack. The chain passes one f32[] down to one negate: 1 flop in all.
  const CliResult r =
      RunCli({"cost", "-", "--hw", "tpu_v5p", "--format", "json"}, CallChainHlo(20000));
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("\"flops\": 1,"));
}

TEST(ResourceLimits, CostOfCallsThatExpandExponentiallyIsLinear) {
  // 60 levels each calling the next twice: main -> f60 runs 2^60 negates, which a walk over
  // every call site would visit one by one; each computation is summed once.
  const CliResult r = RunCli({"cost", "-", "--hw", "tpu_v5p"}, CallFanOutHlo(60));
  EXPECT_EQ(r.code, 0) << r.err;
}

TEST(ResourceLimits, RunRefusesCallsNestedDeeperThanTheLimitWhileHloCheckAcceptsThem) {
  // 10,000 nested calls overflowed the stack of `perfsim run`: the interpreter recurses per
  // call and refuses chains deeper than 256. XLA accepts the module, and so does hlo check.
  const CliResult run = RunCli({"run", "-"}, CallChainHlo(10000));
  EXPECT_EQ(run.code, 2) << run.err;
  EXPECT_THAT(run.err, HasSubstr("expected calls nested at most 256 deep; got 10000"));
  const CliResult check = RunCli({"hlo", "check", "-"}, CallChainHlo(10000));
  EXPECT_EQ(check.code, 0) << check.err;
  const CliResult at_limit = RunCli({"run", "-"}, CallChainHlo(256));
  EXPECT_EQ(at_limit.code, 0) << at_limit.err;
}

TEST(ResourceLimits, RunEndsALoopThatNeverEndsWithTheLoopBudget) {
  const CliResult r = RunCli({"run", "-", "--max-loop-iterations", "1000"}, kNeverEndingWhileHlo);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("w: expected the device's while loops to end within "
                               "--max-loop-iterations 1000 iterations in all; got more"));
  const CliResult zero = RunCli({"run", "-", "--max-loop-iterations", "0"}, kNeverEndingWhileHlo);
  EXPECT_EQ(zero.code, 2);
  EXPECT_THAT(zero.err, HasSubstr("--max-loop-iterations: expected an integer >= 1; got '0'"));
  const CliResult help = RunCli({"run", "--help"});
  EXPECT_THAT(help.out, HasSubstr("--max-loop-iterations N"));
  EXPECT_THAT(help.out, HasSubstr("Default\n                     1000000."));
}

TEST(ResourceLimits, RunRefusesAMemoryBudgetBeyondThePhysicalMemory) {
  const CliResult r = RunCli({"run", "-", "--memory-budget", "1000TiB"}, CallChainHlo(1));
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("--memory-budget: expected at most the machine's physical "
                               "memory, "));
  EXPECT_THAT(r.err, HasSubstr("got '1000TiB' (1099511627776000 bytes)"));
}

TEST(ResourceLimits, RunsAThousandDevicesOnTheThreadsAsked) {
  // Without collectives the devices are shared out to --threads workers; this started a
  // thread per device.
  const CliResult r = RunCli({"run", "-", "--devices", "1000", "--threads", "4"}, CallChainHlo(2));
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("1000 devices"));
  EXPECT_THAT(r.out, HasSubstr("\n     0    999  f32[]"));
}

TEST(ResourceLimits, CostRefusesADeviceIdBeyondTheLargestSlice) {
  // A collective naming device 10^9 made cost search slices up to 2·10^9 devices.
  const CliResult r = RunCli({"cost", "-", "--hw", "tpu_v5p"}, FarDevicePermuteHlo(1000000000));
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("<stdin>:5:8: r: expected device ids below 1048576 (the "
                               "largest slice perfsim models); got device 1000000000"));
}

TEST(ResourceLimits, ValidateRefusesARunBeyondItsMemoryBudgetBeforeAllocating) {
  // 10^8 tokens of nano: the global inputs alone are 32 GB, and the allocator aborted. Each
  // case's need is now estimated after its static and fit checks, before anything is
  // allocated.
  const std::vector<std::string> one_case = {"--backend", "dense_einsum", "--router", "model",
                                             "--routing", "random",       "--devices", "1",
                                             "--phase",   "fwd"};
  std::vector<std::string> big = {"validate", "--batch", "10000", "--seq", "10000"};
  big.insert(big.end(), one_case.begin(), one_case.end());
  const CliResult r = RunCli(big);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("dense_einsum fwd on 1 device: validate: the case needs "));
  EXPECT_THAT(r.err, HasSubstr("budget 4294967296 bytes (--memory-budget): expected a need "
                               "within the budget"));
  // The default sizes need about 2.4 MB: a budget of 1 KiB refuses them...
  std::vector<std::string> tiny = {"validate", "--memory-budget", "1KiB"};
  tiny.insert(tiny.end(), one_case.begin(), one_case.end());
  const CliResult refused = RunCli(tiny);
  EXPECT_EQ(refused.code, 2);
  EXPECT_THAT(refused.err, HasSubstr("budget 1024 bytes"));
  // ... and 64 MiB runs them: the budget is a bound, not a refusal.
  std::vector<std::string> small = {"validate", "--memory-budget", "64MiB"};
  small.insert(small.end(), one_case.begin(), one_case.end());
  const CliResult ran = RunCli(small);
  EXPECT_EQ(ran.code, 0) << ran.err;
  EXPECT_THAT(ran.out, HasSubstr("1 passed, 0 failed"));
  const CliResult too_big = RunCli({"validate", "--memory-budget", "1000TiB"});
  EXPECT_EQ(too_big.code, 2);
  EXPECT_THAT(too_big.err, HasSubstr("expected at most the machine's physical memory"));
}

TEST(ResourceLimits, ValidateHloRefusesAModuleBeyondItsMemoryBudget) {
  const CliResult r = RunCli(
      {"validate", "--hlo", "-", "--batch", "10000", "--seq", "10000", "--memory-budget", "1GiB"},
      CallChainHlo(1));
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("validate: the dense reference of batch 10000 x seq 10000 tokens "
                               "(fwd) needs "));
  EXPECT_THAT(r.err, HasSubstr("budget 1073741824 bytes (--memory-budget)"));
}

}  // namespace
}  // namespace perfsim
