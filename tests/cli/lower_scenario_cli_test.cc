// `perfsim lower` takes predict's scenario flags (cli/scenario_flags.h): with none it lowers the
// embedded default scenario, naming the model or the chip chooses the rest as predict does, and
// what predict refuses it refuses. Standard output holds the module alone.
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "cli/cli.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/ir/hlo_parser.h"
#include "sim/ir/hlo_printer.h"
#include "sim/ir/verifier.h"
#include "sim/lowering/lowering.h"
#include "sim/predict/predict.h"
#include "tests/cli/cli_test_util.h"

namespace perfsim {
namespace {

using ::perfsim::testing::CliResult;
using ::perfsim::testing::RunCli;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// The first line of `text` ("" when it has none).
std::string FirstLine(const std::string& text) { return text.substr(0, text.find('\n')); }

// The value of predict's JSON key "step_seconds" as printed ("" when absent).
std::string StepSeconds(const std::string& json) {
  const std::string key = "\"step_seconds\": ";
  const size_t at = json.find(key);
  if (at == std::string::npos) return "";
  const size_t begin = at + key.size();
  return json.substr(begin, json.find_first_of(",}\n", begin) - begin);
}

TEST(LowerScenarioCli, NoFlagsLowersTheDefaultScenarioPredictLowers) {
  absl::StatusOr<PredictOptions> defaults = DefaultPredictOptions();
  ASSERT_TRUE(defaults.ok()) << defaults.status();
  absl::StatusOr<LoweredStep> step = LowerStep(defaults->spec);
  ASSERT_TRUE(step.ok()) << step.status();
  CliResult r = RunCli({"lower"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(r.err, "");  // nothing chosen: the default is named in full
  EXPECT_EQ(r.out, PrintModule(*step->module));
  // DeepSeek-V3 (D = 7168), fwd_bwd, ep_ragged_a2a: the default's own spelling gives the same.
  EXPECT_THAT(r.out, HasSubstr("moe_ep_ragged_a2a_fwd_bwd"));
  CliResult named = RunCli({"lower", "--model", "deepseek_v3", "--hw", "tpu_v7x", "--mesh", "4x8x8",
                            "--parallelism", "dp=2,ep=256", "--backend", "ep_ragged_a2a", "--batch",
                            "512", "--seq", "4096", "--phase", "fwd_bwd"});
  ASSERT_EQ(named.code, kExitOk) << named.err;
  EXPECT_EQ(named.err, "chose: --mesh 4x8x8 --parallelism dp=2,ep=256 --batch 512 --seq 4096\n");
  EXPECT_EQ(named.out, r.out);
}

TEST(LowerScenarioCli, NamingTheModelAndChipChoosesWhatPredictChooses) {
  const std::vector<std::string> flags = {"--model", "mixtral_8x7b", "--hw", "gpu_h100"};
  std::vector<std::string> lower_args = {"lower"};
  lower_args.insert(lower_args.end(), flags.begin(), flags.end());
  std::vector<std::string> predict_args = {"predict"};
  predict_args.insert(predict_args.end(), flags.begin(), flags.end());
  CliResult lowered = RunCli(lower_args);
  ASSERT_EQ(lowered.code, kExitOk) << lowered.err;
  CliResult predicted = RunCli(predict_args);
  ASSERT_EQ(predicted.code, kExitOk) << predicted.err;
  // One NVLink node: 8 H100s, ep = gcd(8 experts, 8 devices); the batch is predict's choice.
  EXPECT_THAT(lowered.err, StartsWith("chose: --mesh 8 --parallelism ep=8 --batch "));
  EXPECT_EQ(lowered.err, FirstLine(predicted.out) + "\n");
  // Standard output is the module alone: it parses and verifies.
  EXPECT_THAT(lowered.out, StartsWith("HloModule "));
  absl::StatusOr<std::unique_ptr<Module>> m = ParseHloModule(lowered.out, "lowered.hlo");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_TRUE(VerifyModule(**m).ok());
  // The chosen flags, copied, name the same scenario: the same module, nothing left to choose
  // but the line that says so.
  std::vector<std::string> copied = {"lower", "--model", "mixtral_8x7b", "--hw", "gpu_h100"};
  const std::string chose = FirstLine(predicted.out).substr(std::string("chose: ").size());
  for (absl::string_view part : absl::StrSplit(chose, ' ')) copied.emplace_back(part);
  CliResult again = RunCli(copied);
  ASSERT_EQ(again.code, kExitOk) << again.err;
  EXPECT_EQ(again.err, lowered.err);
  EXPECT_EQ(again.out, lowered.out);
}

// lower FLAGS | predict --hlo - --hw H --mesh M --routing R is predict FLAGS --routing R.
TEST(LowerScenarioCli, ThePrintedModuleIsPredictsScenario) {
  const std::vector<std::string> flags = {
      "--model",       "nano", "--hw",      "gpu_h100",      "--mesh",  "4",
      "--parallelism", "ep=4", "--backend", "ep_ragged_a2a", "--batch", "8",
      "--seq",         "64",   "--phase",   "fwd_bwd"};
  std::vector<std::string> lower_args = {"lower", "--routing", "zipf:1.2"};
  lower_args.insert(lower_args.end(), flags.begin(), flags.end());
  CliResult lowered = RunCli(lower_args);
  ASSERT_EQ(lowered.code, kExitOk) << lowered.err;
  // The routing is a run-time value: the module is the same for every routing.
  std::vector<std::string> uniform_args = {"lower"};
  uniform_args.insert(uniform_args.end(), flags.begin(), flags.end());
  EXPECT_EQ(RunCli(uniform_args).out, lowered.out);
  CliResult from_hlo = RunCli({"predict", "--hlo", "-", "--hw", "gpu_h100", "--mesh", "4",
                               "--routing", "zipf:1.2", "--format=json"},
                              lowered.out);
  ASSERT_EQ(from_hlo.code, kExitOk) << from_hlo.err;
  std::vector<std::string> predict_args = {"predict", "--routing", "zipf:1.2", "--format=json"};
  predict_args.insert(predict_args.end(), flags.begin(), flags.end());
  CliResult predicted = RunCli(predict_args);
  ASSERT_EQ(predicted.code, kExitOk) << predicted.err;
  // The same step time, to the last digit printed (both simulate the same module).
  EXPECT_NE(StepSeconds(predicted.out), "");
  EXPECT_EQ(StepSeconds(from_hlo.out), StepSeconds(predicted.out));
}

TEST(LowerScenarioCli, InputsDirTakesItsRoutingCaseFromInputsRouting) {
  const std::string dir = ::testing::TempDir() + "/lower_scenario_inputs";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::vector<std::string> nano = {
      "lower",         "--model",   "nano",         "--hw", "gpu_h100", "--mesh", "2",
      "--parallelism", "ep=2",      "--batch",      "4",    "--seq",    "16",     "--phase",
      "fwd",           "--backend", "ep_ragged_a2a"};
  std::vector<std::string> args = nano;
  args.insert(args.end(), {"--inputs-dir", dir, "--inputs-routing", "skewed", "--seed", "3"});
  CliResult r = RunCli(args);
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_TRUE(std::filesystem::exists(dir + "/in2.d1.npy"));  // wi_0's shard on device 1
  args = nano;
  args.insert(args.end(), {"--inputs-dir", dir, "--inputs-routing", "zipf:1.2"});
  r = RunCli(args);
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_THAT(r.err, HasSubstr("--inputs-routing: expected a routing case (random, skewed"));
  args = nano;
  args.insert(args.end(), {"--inputs-routing", "skewed"});
  r = RunCli(args);
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_THAT(r.err, HasSubstr("expected them only with --inputs-dir"));
}

TEST(LowerScenarioCli, BadScenariosAreRefusedAsPredictRefusesThem) {
  struct Case {
    std::vector<std::string> flags;
    std::string message;
  };
  const std::vector<Case> cases = {
      // 4 GPUs cannot hold ep=8.
      {{"--model", "mixtral_8x7b", "--hw", "gpu_h100", "--mesh", "4", "--parallelism", "ep=8"},
       "expected the parallelism to use the mesh's 4 devices"},
      // The default's parallelism (512 devices) on one node.
      {{"--hw", "gpu_h100", "--parallelism", "dp=2,ep=256"},
       "expected the parallelism to use the mesh's 8 devices"},
      // predict's routing spellings; a validation case goes to --inputs-routing.
      {{"--routing", "zipf"},
       "expected uniform, zipf:S (S >= 0), hot:P (0 <= P <= 1) or file:PATH"},
      {{"--routing", "skewed"}, "expected uniform, zipf:S"},
      {{"--routing", "file:/nonexistent/counts.txt"}, "/nonexistent/counts.txt"},
      {{"--hw", "tpu_v0"}, "tpu_v0"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {"lower"};
    args.insert(args.end(), c.flags.begin(), c.flags.end());
    CliResult r = RunCli(args);
    EXPECT_EQ(r.code, kExitBadInput) << c.message << "\n" << r.err;
    EXPECT_THAT(r.err, HasSubstr(c.message));
    EXPECT_EQ(r.out, "") << c.message;
  }
}

}  // namespace
}  // namespace perfsim
