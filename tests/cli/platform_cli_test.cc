// `perfsim cost` on a module lowered for another platform than --hw's chip warns and still
// costs it; StableHLO input is refused with exit 2 and what to do.
#include <fstream>
#include <sstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cli/cli_test_util.h"

namespace perfsim {
namespace {

using ::perfsim::testing::CliResult;
using ::perfsim::testing::RunCli;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::string Example(const std::string& name) {
  return absl::StrCat(PERFSIM_SOURCE_DIR, "/examples/hlo/", name);
}

TEST(PlatformCli, CostWarnsWhenACpuLoweredModuleIsCostedOnATpu) {
  CliResult r = RunCli({"cost", Example("moe_layer.cpu.hlo"), "--hw", "tpu_v5p"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr(absl::StrCat("warning: ", Example("moe_layer.cpu.hlo"),
                               ": the module was lowered for CPU")));
  EXPECT_THAT(r.err, HasSubstr("lowering_platforms=(\"tpu\",)"));
  EXPECT_THAT(r.out, HasSubstr("total"));
}

TEST(PlatformCli, CostOfTheTpuLoweringOnATpuDoesNotWarn) {
  CliResult r = RunCli({"cost", Example("moe_layer.tpu.hlo"), "--hw", "tpu_v5p"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.err, IsEmpty());
}

// The warning's reason in numbers: the CPU lowering counts the 8 experts' dense dots, the TPU
// lowering the ragged-dots. The expert FFN's FLOPs are 3 matmuls of 2*T*k*D*F each,
// 3 * 2 * 8192 * 1024 * 3584 = 180.4 GFLOP with ragged-dot, and E = 8 times that dense.
TEST(PlatformCli, TheCpuLoweringCountsNumExpertsTimesTheExpertFlops) {
  auto total_flops = [](const std::string& file) {
    CliResult r = RunCli({"cost", Example(file), "--hw", "tpu_v5p", "--format=json"});
    EXPECT_EQ(r.code, 0) << r.err;
    const size_t totals = r.out.find("\"totals\"");
    const size_t flops = r.out.find("\"flops\"", totals);
    return std::stod(r.out.substr(r.out.find(':', flops) + 1));
  };
  const double expert_flops = 3.0 * 2 * 8192 * 1024 * 3584;
  const double tpu = total_flops("moe_layer.tpu.hlo");
  const double cpu = total_flops("moe_layer.cpu.hlo");
  // Router, softmax, top-k and combine add well under 1% on top of the experts.
  EXPECT_NEAR(tpu / expert_flops, 1.0, 0.01);
  EXPECT_NEAR(cpu / expert_flops, 8.0, 0.08);
}

TEST(PlatformCli, StableHloInputExitsTwoWithWhatToDo) {
  CliResult r = RunCli({"hlo", "check", "-"},
                       "module @jit_f attributes {mhlo.num_replicas = 1 : i32} {\n"
                       "  func.func public @main() {\n  }\n}\n");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("<stdin>:1:1: expected HLO text"));
  EXPECT_THAT(r.err, HasSubstr("as_text(dialect=\"hlo\")"));
}

}  // namespace
}  // namespace perfsim
