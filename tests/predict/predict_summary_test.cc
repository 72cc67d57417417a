// `perfsim predict`'s summary (sim/report/predict_summary.h) and the scenario it derives from the
// model and the chip (sim/predict/choose_scenario.h).
#include "sim/report/predict_summary.h"

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/hw/chip_registry.h"
#include "sim/moe/model_registry.h"
#include "sim/predict/choose_scenario.h"
#include "sim/predict/predict.h"
#include "sim/util/status.h"
#include "tests/cli/cli_test_util.h"

namespace perfsim {
namespace {

using ::perfsim::testing::CliResult;
using ::perfsim::testing::RunCli;
using ::testing::HasSubstr;
using ::testing::Not;

int64_t Lines(const std::string& text) { return std::count(text.begin(), text.end(), '\n'); }

Prediction PredictOrDie(const PredictOptions& o) {
  absl::StatusOr<Prediction> p = Predict(o);
  PERFSIM_CHECK(p.ok()) << p.status();
  return *std::move(p);
}

TEST(PredictSummaryCli, DefaultFitsSixtyLinesWithTheStepTimeAndWhatLimitsIt) {
  const CliResult r = RunCli({"predict"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_LE(Lines(r.out), 60) << r.out;
  for (const char* part :
       {"step time ", "tokens/s per chip ", "MFU ", "exposed communication ", "HBM per device ",
        "per phase", "costliest ops", "what limits the step", "--timeline"}) {
    EXPECT_THAT(r.out, HasSubstr(part));
  }
  // The embedded default is not a chosen scenario: no "chose:" line.
  EXPECT_THAT(r.out, Not(HasSubstr("chose:")));
  // The example: MaxText's dropless receive buffer for EP = 256, K = 8, E = 256 holds
  // min(EP·T_l·K, T_l·E) = 4096·256 rows, of which a shard fills T_l·K = 4096·8 on average:
  // 1 − 8/256 = 96.9% padding.
  EXPECT_THAT(r.out, HasSubstr("1048576 rows; a shard receives 32768 on average): 97% of its "
                               "rows are padding; --ragged-buffer-factor 1 would save ~"));
}

TEST(PredictSummaryCli, TimelinePrintsEveryOp) {
  const CliResult r = RunCli({"predict", "--timeline"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("timeline of device 0 (the slowest)"));
  EXPECT_GT(Lines(r.out), 100);
}

TEST(PredictSummaryCli, ModelAndChipAloneChooseAScenarioThatFits) {
  const CliResult r = RunCli({"predict", "--model", "mixtral_8x7b", "--hw", "gpu_h100"});
  ASSERT_EQ(r.code, 0) << r.err;
  // One 8-GPU node, all 8 experts one per GPU, the largest power-of-two batch that fits 80 GB.
  EXPECT_THAT(r.out, HasSubstr("chose: --mesh 8 --parallelism ep=8 --batch 64 --seq 4096\n"));
  EXPECT_THAT(r.out, HasSubstr("(fits)"));
  EXPECT_THAT(r.out, Not(HasSubstr("OVER CAPACITY")));
  // The chosen flags reproduce the scenario.
  const CliResult again = RunCli({"predict", "--model", "mixtral_8x7b", "--hw", "gpu_h100",
                                  "--mesh", "8", "--parallelism", "ep=8", "--batch", "64"});
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_EQ(again.out, r.out);
}

TEST(PredictSummaryCli, AnExplicitBatchIsKeptEvenOverCapacity) {
  const CliResult r = RunCli({"predict", "--model", "mixtral_8x7b", "--hw", "gpu_h100",
                              "--parallelism", "ep=8", "--batch", "512"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("chose: --mesh 8 --parallelism ep=8 --batch 512 --seq 4096"));
  EXPECT_THAT(r.out, HasSubstr("OVER CAPACITY"));
  // What limits the step first: HBM, with the largest halved batch that fits (64, as chosen).
  EXPECT_THAT(r.out, HasSubstr("  - HBM is over capacity: the plan needs "));
  EXPECT_THAT(r.out, HasSubstr("; --batch 64 fits ("));
}

TEST(PredictSummaryCli, AnInconsistentExplicitCombinationStillErrs) {
  const CliResult r = RunCli(
      {"predict", "--model", "mixtral_8x7b", "--hw", "gpu_h100", "--parallelism", "ep=8,dp=2"});
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("expected the parallelism to use the mesh's 8 devices"));
}

TEST(PredictSummary, TheLimiterFollowsTheScenario) {
  absl::StatusOr<PredictOptions> o = DefaultPredictOptions();
  ASSERT_TRUE(o.ok());
  const Prediction dropless = PredictOrDie(*o);
  const std::vector<std::string> first = StepLimiters(dropless, PredictAlternatives(dropless));
  ASSERT_FALSE(first.empty());
  EXPECT_THAT(first[0], HasSubstr("the receive buffer is sized for the worst case"));
  // With the buffer already at T_l·K rows the padding finding is gone and another leads.
  o->spec.knobs.ragged_buffer_factor = 1;
  const Prediction sized = PredictOrDie(*o);
  EXPECT_LT(sized.step_seconds, dropless.step_seconds);
  const std::vector<std::string> second = StepLimiters(sized, PredictAlternatives(sized));
  ASSERT_FALSE(second.empty());
  EXPECT_NE(second[0], first[0]);
  for (const std::string& s : second) EXPECT_THAT(s, Not(HasSubstr("receive buffer")));
}

TEST(PredictSummary, TheSavingIsTheMeasuredStepTimeDifference) {
  absl::StatusOr<PredictOptions> o = DefaultPredictOptions();
  ASSERT_TRUE(o.ok());
  const Prediction p = PredictOrDie(*o);
  const std::vector<Alternative> alternatives = PredictAlternatives(p);
  const auto it = std::find_if(alternatives.begin(), alternatives.end(), [](const Alternative& a) {
    return a.kind == Alternative::Kind::kRaggedBufferFactor;
  });
  ASSERT_NE(it, alternatives.end());
  o->spec.knobs.ragged_buffer_factor = 1;
  EXPECT_EQ(it->step_seconds, PredictOrDie(*o).step_seconds);
  // Deterministic: the same prediction gives the same summary.
  EXPECT_EQ(FormatPredictionSummary(p, alternatives),
            FormatPredictionSummary(p, PredictAlternatives(p)));
}

TEST(PredictSummary, ChipsOfMesh) {
  EXPECT_EQ(ChipsOfMesh("4x8x8"), 256);
  EXPECT_EQ(ChipsOfMesh("8"), 8);
  EXPECT_EQ(ChipsOfMesh("4xa"), 0);
}

ScenarioRequest RequestFor(const std::string& model_name, const std::string& hw) {
  absl::StatusOr<ModelConfig> model = ResolveModel(model_name);
  EXPECT_TRUE(model.ok()) << model_name;
  ScenarioRequest r{.options = {.spec = StepSpec::Defaults(*model)}};
  r.options.spec.batch = kMaxChosenBatch;
  r.options.spec.seq = 4096;
  r.options.spec.phase = Phase::kForwardBackward;
  r.options.spec.backend = "ep_ragged_a2a";
  r.options.hw = hw;
  return r;
}

// Every built-in model on every built-in chip: a chosen scenario whose parallelism divides the
// experts and uses the whole default slice, and whose HBM plan fits; or an error saying the
// model does not fit.
TEST(ChooseScenario, EveryModelOnEveryChipFitsOrSaysWhyNot) {
  for (const std::string& model : BuiltinModelNames()) {
    for (const std::string& hw : BuiltinChipNames()) {
      SCOPED_TRACE(model + " on " + hw);
      absl::StatusOr<ChosenScenario> c = ChooseScenario(RequestFor(model, hw));
      if (!c.ok()) {
        EXPECT_THAT(c.status().message(), HasSubstr("does not fit"));
        continue;
      }
      const StepSpec& s = c->options.spec;
      EXPECT_EQ(s.model.num_experts() % s.parallelism.ep, 0);
      absl::StatusOr<Chip> chip = ResolveChip(hw);
      ASSERT_TRUE(chip.ok());
      EXPECT_EQ(c->options.mesh, chip->DefaultSliceShape());
      const Prediction p = PredictOrDie(c->options);
      EXPECT_EQ(p.num_devices, s.num_devices());
      EXPECT_TRUE(p.memory.fits) << c->flags;
      EXPECT_EQ(s.tokens() % s.token_shards(), 0);
    }
  }
}

TEST(ChooseScenario, MixtralOnOneH100Node) {
  absl::StatusOr<ChosenScenario> c = ChooseScenario(RequestFor("mixtral_8x7b", "gpu_h100"));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->flags, "--mesh 8 --parallelism ep=8 --batch 64 --seq 4096");
  // 64 is the largest power of two that fits: 128 does not.
  PredictOptions twice = c->options;
  twice.spec.batch = 128;
  EXPECT_FALSE(PredictOrDie(twice).memory.fits);
}

TEST(ChooseScenario, TheBatchSplitsOverANonPowerOfTwoSlice) {
  // 72 GB200s: 8 experts give ep = 8, dp = 9; a batch splits over 72 token shards of 4096-token
  // sequences only in multiples of 9.
  absl::StatusOr<ChosenScenario> c = ChooseScenario(RequestFor("mixtral_8x7b", "gpu_gb200"));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->options.spec.parallelism.dp, 9);
  EXPECT_EQ(c->options.spec.parallelism.ep, 8);
  EXPECT_EQ(c->options.spec.batch % 9, 0);
}

TEST(ChooseScenario, AModelThatFitsNoBatchIsAnErrorSayingSo) {
  // DeepSeek-V3's 256 experts on one v5e chip (16 GiB): the expert weights alone are
  // 256 × 3 × 7168 × 2048 × 2 B = 21 GiB.
  ScenarioRequest r = RequestFor("deepseek_v3", "tpu_v5e");
  r.options.mesh = "1x1";
  r.mesh_given = true;
  absl::StatusOr<ChosenScenario> c = ChooseScenario(r);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(c.status().message(),
              HasSubstr("deepseek_v3 does not fit tpu_v5e 1x1 (1 device) even at batch 1 x seq "
                        "4096"));
}

TEST(ChooseScenario, ExplicitValuesAreKept) {
  ScenarioRequest r = RequestFor("mixtral_8x7b", "gpu_h100");
  r.options.spec.parallelism = Parallelism{.dp = 2, .ep = 4};
  r.parallelism_given = true;
  r.options.spec.batch = 3;
  r.batch_given = true;
  absl::StatusOr<ChosenScenario> c = ChooseScenario(r);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->flags, "--mesh 8 --parallelism dp=2,ep=4 --batch 3 --seq 4096");
}

}  // namespace
}  // namespace perfsim
