// `perfsim lower` and `perfsim validate` through the CLI library: outputs, JSON schema, exit
// codes and error messages.
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/ir/hlo_parser.h"
#include "sim/ir/hlo_printer.h"
#include "sim/ir/verifier.h"

namespace perfsim {
namespace {

using ::testing::HasSubstr;

struct CliResult {
  int code;
  std::string out;
  std::string err;
};

CliResult RunCli(const std::vector<std::string>& args) {
  std::istringstream in;
  std::ostringstream out, err;
  const int code = RunPerfsim(args, in, out, err);
  return {code, out.str(), err.str()};
}

TEST(LowerCliTest, PrintsAModuleThatParsesVerifiesAndRoundTrips) {
  for (const char* backend : {"dense_einsum", "sparse_ragged_dot"}) {
    CliResult r = RunCli({"lower", "--backend", backend, "--phase", "fwd_bwd"});
    ASSERT_EQ(r.code, 0) << r.err;
    absl::StatusOr<std::unique_ptr<Module>> m = ParseHloModule(r.out, "lowered.hlo");
    ASSERT_TRUE(m.ok()) << m.status();
    EXPECT_TRUE(VerifyModule(**m).ok());
    EXPECT_EQ(PrintModule(**m), r.out);
    EXPECT_THAT(r.out, HasSubstr("op_name=\"moe/router\""));
    EXPECT_THAT(r.out, HasSubstr("op_name=\"moe/experts_bwd\""));
  }
}

TEST(LowerCliTest, BadInputIsExitTwoWithTheReason) {
  CliResult r = RunCli({"lower", "--backend", "nope"});
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("unknown backend 'nope'; known: dense_einsum"));
  r = RunCli({"lower", "--backend", "dense_einsum", "--parallelism", "ep=5"});
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("expected batch·seq divisible by dp·fsdp·ep"));
  r = RunCli({"lower", "--batch", "x"});
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("--batch: expected a positive integer; got 'x'"));
  r = RunCli({"lower", "--backend", "dense_einsum", "--parallelism", "ep=2"});
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("backend dense_einsum: expected ep=1 and tp=1"));
}

TEST(ValidateCliTest, JsonHasTheContractFields) {
  CliResult r = RunCli({"validate", "--backend", "sparse_ragged_dot", "--devices", "2",
                        "--router", "topk_softmax", "--routing", "skewed", "--phase", "fwd_bwd",
                        "--format=json"});
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  EXPECT_THAT(r.out, HasSubstr("{\"results\": ["));
  EXPECT_THAT(r.out, HasSubstr("\"backend\": \"sparse_ragged_dot\", \"router\": \"topk_softmax\", "
                               "\"routing\": \"skewed\", \"phase\": \"fwd_bwd\", \"devices\": 2, "
                               "\"parallelism\": {\"dp\": 2, \"fsdp\": 1, \"ep\": 1, \"tp\": 1}, "
                               "\"status\": \"pass\""));
  EXPECT_THAT(r.out, HasSubstr("{\"tensor\": \"d_wo\", \"max_rel_error\": "));
  EXPECT_THAT(r.out, HasSubstr("\"message\": \"\""));
}

TEST(ValidateCliTest, TableAndUserModule) {
  CliResult r = RunCli({"validate", "--backend", "dense_einsum", "--devices", "1",
                        "--phase", "fwd", "--router", "softmax_topk", "--routing", "random"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("1 passed, 0 failed"));
  const std::string testdata = PERFSIM_TESTDATA_DIR;
  r = RunCli({"validate", "--hlo", testdata + "/hlo/jax/moe_ep_ragged_a2a_fwd.compiled.hlo",
              "--model", testdata + "/models/jax_golden.textproto", "--parallelism", "ep=8"});
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  EXPECT_THAT(r.out, HasSubstr("1 passed, 0 failed"));
}

TEST(ValidateCliTest, BadFlagsAreExitTwo) {
  CliResult r = RunCli({"validate", "--router", "sigmoid"});
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("--router: expected a router family (model, softmax_topk"));
  r = RunCli({"validate", "--routing", "hot"});
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("--routing: expected a routing case (random, skewed"));
  r = RunCli({"validate", "--devices", "0"});
  EXPECT_EQ(r.code, 2);
  r = RunCli({"validate", "--hlo", "/nonexistent.hlo"});
  EXPECT_EQ(r.code, 2);
  const std::string testdata = PERFSIM_TESTDATA_DIR;
  r = RunCli({"validate", "--hlo", testdata + "/hlo/jax/moe_dense_einsum_fwd.lowered.hlo"});
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("expected per-device shape"));
}

}  // namespace
}  // namespace perfsim
