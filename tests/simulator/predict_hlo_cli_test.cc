// `perfsim predict --hlo FILE` through the CLI library: predict's report keys (parsed back
// into report.PredictReport), the table, the trace, refusals and bad input.
#include <fstream>
#include <sstream>
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
using ::testing::StartsWith;

const std::string kJax = std::string(PERFSIM_TESTDATA_DIR) + "/hlo/jax/";

report::PredictReport Parse(const std::string& json) {
  report::PredictReport r;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  const auto status = google::protobuf::util::JsonStringToMessage(json, &r, options);
  EXPECT_TRUE(status.ok()) << status.ToString() << "\n" << json.substr(0, 400);
  return r;
}

std::string WriteTemp(const std::string& name, const std::string& contents) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path) << contents;
  return path;
}

TEST(PredictHloCli, JsonHasPredictsKeys) {
  CliResult r = RunCli({"predict", "--hlo", kJax + "moe_ep_ragged_a2a_grad.compiled.hlo", "--hw",
                        "tpu_v5p", "--format=json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const report::PredictReport p = Parse(r.out);
  EXPECT_EQ(p.scenario().model(), "jit_moe_ep_ragged_a2a_grad");  // the module's name
  EXPECT_EQ(p.scenario().backend(), "hlo");
  EXPECT_EQ(p.scenario().devices(), 8);
  EXPECT_GT(p.step_seconds(), 0);
  EXPECT_GT(p.communication_busy_seconds(), 0);
  EXPECT_LE(p.exposed_communication_seconds(), p.communication_busy_seconds());
  EXPECT_GT(p.ops_size(), 0);
  EXPECT_GT(p.memory().total(), 0);
  // Phases are the op_name prefixes: the forward (jvp) and the backward (transpose of it).
  std::vector<std::string> phases;
  for (const auto& phase : p.phases()) phases.push_back(phase.phase());
  EXPECT_THAT(phases, ::testing::IsSupersetOf({"jvp()", "transpose(jvp())"}));
  for (const char* key : {"\"step_seconds\"", "\"compute_busy_seconds\"",
                          "\"communication_busy_seconds\"", "\"exposed_communication_seconds\"",
                          "\"phases\"", "\"memory\"", "\"ops\""}) {
    EXPECT_THAT(r.out, HasSubstr(key));
  }
}

TEST(PredictHloCli, TableAndTraceAndSameBitsTwice) {
  const std::string trace = ::testing::TempDir() + "/predict_hlo_trace.json";
  const std::vector<std::string> args = {"predict", "--hlo", kJax + "collective_all_gather.compiled.hlo",
                                         "--hw", "gpu_h100", "--trace", trace};
  CliResult r = RunCli(args);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, StartsWith("module jit_collective_all_gather (HLO, compiled), gpu_h100"));
  EXPECT_THAT(r.out, HasSubstr("step time"));
  EXPECT_THAT(r.out, HasSubstr("exposed communication"));
  std::ifstream in(trace);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_THAT(text.str(), HasSubstr("\"traceEvents\""));
  EXPECT_THAT(text.str(), HasSubstr("all-gather"));
  CliResult again = RunCli(args);
  EXPECT_EQ(again.out, r.out);
}

TEST(PredictHloCli, UnfusedModuleFromStandardInput) {
  CliResult r = RunCli({"predict", "--hlo", "-", "--hw", "tpu_v5p"}, R"(HloModule tiny

ENTRY main {
  x = f32[1024]{0} parameter(0)
  a = f32[1024]{0} negate(x)
  ROOT b = f32[1024]{0} exponential(a)
}
)");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, StartsWith("module tiny (HLO, unfused: loop fusion applied)"));
}

TEST(PredictHloCli, UntimedCustomCallIsReported) {
  const std::string path = WriteTemp("untimed.hlo", R"(HloModule untimed

ENTRY main {
  x = f32[1024]{0} parameter(0)
  ROOT k = f32[1024]{0} custom-call(x), custom_call_target="my_secret_kernel"
}
)");
  CliResult r = RunCli({"predict", "--hlo", path, "--hw", "tpu_v5p"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("note: 1 instruction(s) not fully timed"));
  EXPECT_THAT(r.out, HasSubstr(": k;"));
  CliResult json = RunCli({"predict", "--hlo", path, "--hw", "tpu_v5p", "--format=json"});
  ASSERT_EQ(json.code, 0) << json.err;
  const report::PredictReport p = Parse(json.out);
  ASSERT_EQ(p.ops_size(), 1);
  EXPECT_TRUE(p.ops(0).lower_bound());
}

TEST(PredictHloCli, BadInputIsExit2WithItsLocation) {
  const std::string path = WriteTemp("bad.hlo", "HloModule bad\n\nENTRY main {\n  x = f32[4] parameter(0)\n  ROOT y = f32[4] negate(x, \n}\n");
  CliResult r = RunCli({"predict", "--hlo", path, "--hw", "tpu_v5p"});
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr(path + ":"));
  EXPECT_THAT(r.err, HasSubstr("expected"));
  CliResult missing = RunCli({"predict", "--hlo", "/nonexistent/m.hlo", "--hw", "tpu_v5p"});
  EXPECT_EQ(missing.code, 2);
}

TEST(PredictHloCli, LoweringFlagsAreRefused) {
  CliResult r = RunCli({"predict", "--hlo", kJax + "reduce.compiled.hlo", "--hw", "tpu_v5p",
                        "--backend", "megablox_gmm", "--batch", "8"});
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("--hlo: expected only --hw, --mesh"));
  EXPECT_THAT(r.err, HasSubstr("got --batch, --backend"));
  CliResult no_hw = RunCli({"predict", "--hlo", kJax + "reduce.compiled.hlo"});
  EXPECT_EQ(no_hw.code, 2);
  EXPECT_THAT(no_hw.err, HasSubstr("--hw: expected a chip name"));
  CliResult small = RunCli({"predict", "--hlo", kJax + "collective_all_gather.compiled.hlo",
                            "--hw", "tpu_v5p", "--mesh", "1x1x1"});
  EXPECT_EQ(small.code, 2);
  EXPECT_THAT(small.err, HasSubstr("--mesh 1x1x1: expected at least the"));
}

TEST(PredictHloCli, MeshGivesTheSlice) {
  CliResult r = RunCli({"predict", "--hlo", kJax + "collective_all_reduce.compiled.hlo", "--hw",
                        "tpu_v5p", "--mesh", "2x2x2", "--format=json"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(Parse(r.out).scenario().mesh(), "2x2x2");
}

}  // namespace
}  // namespace perfsim
