// Fitting factors (sim/accuracy/calibration.h) on synthetic rows whose answer is known in
// closed form, and writing the efficiency block of a hardware file.
#include "sim/accuracy/calibration.h"

#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/accuracy/scenario.h"
#include "sim/hw/chip.h"
#include "sim/util/status_matchers.h"
#include "tests/accuracy/accuracy_test_util.h"

namespace perfsim {
namespace {

using ::perfsim::testing::ReadFileOrDie;
using ::perfsim::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::Not;

// A row whose time is `seconds` / factor(kind), in seconds.
RowModel OneTerm(const std::string& chip, FactorKind kind, double seconds) {
  RowModel m;
  m.chip = chip;
  m.terms = {{kind, seconds}};
  m.unit = MeasurementUnit::kSeconds;
  return m;
}

// OneTerm plus a fitted fixed cost of kind `overhead`, charged `invocations` times.
RowModel OneTermWithOverhead(const std::string& chip, FactorKind kind, double seconds,
                             FactorKind overhead, double invocations = 1) {
  RowModel m = OneTerm(chip, kind, seconds);
  m.overhead = overhead;
  m.invocations = invocations;
  return m;
}

TEST(Calibration, RecoversAFractionInClosedForm) {
  // Three rows measured at 1 / 0.6 of their physics time. With x = ln f the objective is
  // 3 (x - ln 0.6)^2 + 0.01 x^2, minimised at x = ln 0.6 * 3 / 3.01: the prior pulls the
  // factor a third of a percent of its logarithm towards 1.
  const std::vector<RowModel> models = {OneTerm("c", FactorKind::kMatmul, 1e-3),
                                        OneTerm("c", FactorKind::kMatmul, 2e-3),
                                        OneTerm("c", FactorKind::kMatmul, 5e-4)};
  std::vector<CalibrationRow> rows;
  for (size_t i = 0; i < models.size(); ++i) {
    rows.push_back({absl::StrCat("R", i), &models[i], models[i].terms[0].seconds / 0.6});
  }
  const Calibration cal = FitCalibration(rows);
  const double expected = std::exp(std::log(0.6) * 3 / 3.01);
  // The golden-section search stops within ~1e-13 of the optimum in x; 1e-9 leaves margin.
  EXPECT_NEAR(cal.For("c").Get(FactorKind::kMatmul), expected, 1e-9);
  EXPECT_THAT(cal.chips.at("c").fitted_on.at(FactorKind::kMatmul),
              ::testing::ElementsAre("R0", "R1", "R2"));
  // Factors no row uses are not fitted and stay at the datasheet value exactly.
  EXPECT_EQ(cal.For("c").Get(FactorKind::kDirect), 1.0);
  EXPECT_EQ(cal.chips.at("c").fitted_on.count(FactorKind::kDirect), 0u);
  // A chip with no row gets the datasheet factors.
  EXPECT_EQ(cal.For("other").Get(FactorKind::kMatmul), 1.0);
}

TEST(Calibration, FractionsNeverExceedOne) {
  // Measured twice as fast as the datasheet allows: the factor stops at its bound, 1.
  const RowModel m = OneTerm("c", FactorKind::kDirect, 1e-3);
  const std::vector<CalibrationRow> rows = {{"R", &m, 0.5e-3}};
  EXPECT_EQ(FitCalibration(rows).For("c").Get(FactorKind::kDirect), 1.0);
}

TEST(Calibration, FitsAnOverheadThatExplainsShortRows) {
  // t = o + w / h: two rows of 10 us and 100 us of work measured at 40 us and 130 us: o = 30 us
  // and h = 1 explain both exactly (nothing else can with h <= 1). The priors 0.01 (o / s)^2,
  // s = 55 us (the median of the rows' datasheet times, 10 and 100 us), and 0.01 (ln h)^2 pull
  // o down and h below 1, a little: the objective
  //   ln((o + 10/h)/40)^2 + ln((o + 100/h)/130)^2 + 0.01 (o/55)^2 + 0.01 (ln h)^2   (o in us)
  // has its minimum at o = 29.79 us, h = 0.9961 (numpy grid search: 0.01 us x 1e-4 steps over
  // [0, 60] x [0.5, 1], then 0.0005 us x 1e-6 around the best point).
  RowModel shorter = OneTermWithOverhead("c", FactorKind::kHbm, 10e-6, FactorKind::kGemmOverhead);
  RowModel longer = OneTermWithOverhead("c", FactorKind::kHbm, 100e-6, FactorKind::kGemmOverhead);
  const std::vector<CalibrationRow> rows = {{"S", &shorter, 40e-6}, {"L", &longer, 130e-6}};
  const ChipFactors f = FitCalibration(rows).For("c");
  EXPECT_NEAR(f.Get(FactorKind::kGemmOverhead), 29.79e-6, 0.01e-6);
  EXPECT_NEAR(f.Get(FactorKind::kHbm), 0.9961, 0.0002);
}

TEST(Calibration, OverheadPriorScalesWithTheRowsLength) {
  // The rows above ten times longer (100 us and 1 ms of work measured at 400 us and 1.3 ms): the
  // prior's scale is 550 us, so the objective is the one above with o in units of 10 us, and
  // its minimum is ten times the one above: o = 297.9 us, h = 0.9961.
  RowModel shorter = OneTermWithOverhead("c", FactorKind::kHbm, 100e-6, FactorKind::kGemmOverhead);
  RowModel longer = OneTermWithOverhead("c", FactorKind::kHbm, 1e-3, FactorKind::kGemmOverhead);
  const std::vector<CalibrationRow> rows = {{"S", &shorter, 400e-6}, {"L", &longer, 1.3e-3}};
  const Calibration cal = FitCalibration(rows);
  EXPECT_DOUBLE_EQ(cal.chips.at("c").prior_scale_seconds.at(FactorKind::kGemmOverhead), 550e-6);
  EXPECT_NEAR(cal.For("c").Get(FactorKind::kGemmOverhead), 297.9e-6, 0.1e-6);
  EXPECT_NEAR(cal.For("c").Get(FactorKind::kHbm), 0.9961, 0.0002);
}

TEST(Calibration, RowsOfOneLengthDoNotFitAnOverhead) {
  // Two rows of the same datasheet time per invocation (10 us of work, once; 20 us of work over
  // two invocations) cannot tell a fixed cost from a slower rate: only the fraction is fitted,
  // and the overhead keeps its datasheet value, 0.
  RowModel one = OneTermWithOverhead("c", FactorKind::kDirect, 10e-6, FactorKind::kCommOverhead);
  RowModel two = OneTermWithOverhead("c", FactorKind::kDirect, 20e-6, FactorKind::kCommOverhead, 2);
  const std::vector<CalibrationRow> rows = {{"A", &one, 15e-6}, {"B", &two, 30e-6}};
  const Calibration cal = FitCalibration(rows);
  EXPECT_EQ(cal.chips.at("c").fitted_on.count(FactorKind::kCommOverhead), 0u);
  EXPECT_EQ(cal.For("c").Get(FactorKind::kCommOverhead), 0.0);
  EXPECT_EQ(cal.chips.at("c").fitted_on.count(FactorKind::kDirect), 1u);
  // 10 / f = 15: f = 2/3 up to the prior's pull (x = ln f minimises 2 (x - ln 2/3)^2 + 0.01 x^2).
  EXPECT_NEAR(cal.For("c").Get(FactorKind::kDirect), std::exp(std::log(2.0 / 3) * 2 / 2.01), 1e-9);
}

TEST(Calibration, ApiTimedRowsFitTheApiOverheadNotTheChipOverhead) {
  // The rows of FitsAnOverheadThatExplainsShortRows, timed around a host API: the same
  // objective, so the same optimum (o = 29.79 us, h = 0.9961), but o is the API term and the
  // chip's collective overhead is not fitted (it stays 0).
  RowModel shorter = OneTermWithOverhead("c", FactorKind::kHbm, 10e-6, FactorKind::kCommOverhead);
  shorter.api_calls = 1;
  RowModel longer = OneTermWithOverhead("c", FactorKind::kHbm, 100e-6, FactorKind::kCommOverhead);
  longer.api_calls = 1;
  const std::vector<CalibrationRow> rows = {{"S", &shorter, 40e-6}, {"L", &longer, 130e-6}};
  const Calibration cal = FitCalibration(rows);
  const ChipCalibration& c = cal.chips.at("c");
  EXPECT_NEAR(c.factors.Get(FactorKind::kApiOverhead), 29.79e-6, 0.01e-6);
  EXPECT_NEAR(c.factors.Get(FactorKind::kHbm), 0.9961, 0.0002);
  EXPECT_EQ(c.factors.Get(FactorKind::kCommOverhead), 0.0);
  EXPECT_EQ(c.fitted_on.count(FactorKind::kCommOverhead), 0u);
  EXPECT_THAT(c.fitted_on.at(FactorKind::kApiOverhead), ::testing::ElementsAre("S", "L"));
  // The block keeps the file's collective overhead and names the API term only in a comment.
  EfficiencySpec previous;
  previous.set_collective_overhead_seconds(2e-6);
  const std::string block = EfficiencyBlock(c, previous, "cal.csv");
  EXPECT_THAT(block, HasSubstr("collective_overhead_seconds: 2e-06  # 2 us; no row informs it"));
  EXPECT_THAT(block, HasSubstr("  # Not written: 29.79 us per call of host-API timing, fitted on "
                               "S L\n"));
  EXPECT_THAT(block, Not(HasSubstr("api_overhead_seconds:")));
}

TEST(Calibration, KeepsAnOverheadThatPredictsItsRowsOutOfSample) {
  // t = 30 us + w exactly, for w = 10, 100 and 1000 us: any two rows recover o close to 30 us
  // (the prior pulls a little) and predict the third within a few percent; without o, one
  // fraction cannot fit a 4x and a 1.03x slowdown at once, so leave-one-out misses by 10s of %.
  std::vector<RowModel> models;
  for (double w : {10e-6, 100e-6, 1000e-6}) {
    models.push_back(OneTermWithOverhead("c", FactorKind::kHbm, w, FactorKind::kGemmOverhead));
  }
  const std::vector<CalibrationRow> rows = {
      {"A", &models[0], 40e-6}, {"B", &models[1], 130e-6}, {"C", &models[2], 1030e-6}};
  const ChipCalibration c = FitCalibration(rows).chips.at("c");
  const OverheadSelection& choice = c.overhead_selection.at(FactorKind::kGemmOverhead);
  EXPECT_TRUE(choice.kept);
  EXPECT_LT(choice.loo_rms_log_error_with, 0.05);
  EXPECT_GT(choice.loo_rms_log_error_without, 0.3);
  EXPECT_NEAR(c.factors.Get(FactorKind::kGemmOverhead), 30e-6, 1e-6);
}

TEST(Calibration, DropsAnOverheadItsRowsPredictBetterWithout) {
  // The DeepGEMM rows (M001-M004, H800) could fit a per-group overhead (their per-group times
  // span 3.4x). The test repeats the rule with the selection off: each row predicted by a fit
  // on the other three, with and without the overhead; the root mean square log errors must be
  // the ones recorded, and the overhead dropped exactly when it is lower without.
  std::vector<RowModel> models;
  std::vector<std::string> ids = {"M001", "M002", "M003", "M004"};
  for (const std::string& id : ids) {
    absl::StatusOr<MappedRow> mapped = MapMeasurement(::perfsim::testing::CalibrationRow(id));
    ASSERT_TRUE(mapped.ok() && mapped->scenario.has_value()) << id;
    PERFSIM_ASSERT_OK_AND_ASSIGN(RowModel m, BuildRowModel(*mapped->scenario));
    models.push_back(m);
  }
  std::vector<CalibrationRow> rows;
  for (size_t i = 0; i < ids.size(); ++i) {
    rows.push_back({ids[i], &models[i], ::perfsim::testing::CalibrationRow(ids[i]).value.value});
  }
  auto loo = [&](const FitOptions& options) {
    double sum = 0;
    for (size_t i = 0; i < rows.size(); ++i) {
      std::vector<CalibrationRow> others;
      for (size_t j = 0; j < rows.size(); ++j) {
        if (j != i) others.push_back(rows[j]);
      }
      const ChipFactors f = FitCalibration(others, options).For("gpu_h800");
      const double e = std::log(ModelValue(models[i], f) / rows[i].measured);
      sum += e * e;
    }
    return std::sqrt(sum / static_cast<double>(rows.size()));
  };
  const double with = loo({.select_overheads = false});
  const double without = loo({.select_overheads = false, .excluded = {FactorKind::kGemmOverhead}});
  const ChipCalibration c = FitCalibration(rows).chips.at("gpu_h800");
  const OverheadSelection& choice = c.overhead_selection.at(FactorKind::kGemmOverhead);
  EXPECT_EQ(choice.loo_rms_log_error_with, with);
  EXPECT_EQ(choice.loo_rms_log_error_without, without);
  EXPECT_EQ(choice.kept, !(without < with));
  EXPECT_THAT(choice.rows, ::testing::ElementsAreArray(ids));
  // With the epilogue write in the model (sim/cost/grouped_matmul.h), these rows do not
  // demand a per-group cost: it is dropped, 0, and the block says why.
  EXPECT_FALSE(choice.kept);
  EXPECT_EQ(c.factors.Get(FactorKind::kGemmOverhead), 0.0);
  EXPECT_EQ(c.fitted_on.count(FactorKind::kGemmOverhead), 0u);
  EfficiencySpec previous;
  previous.set_grouped_matmul_overhead_seconds_per_group(22.67e-6);  // a stale fitted value
  EXPECT_THAT(EfficiencyBlock(c, previous, "cal.csv"),
              HasSubstr("grouped_matmul_overhead_seconds_per_group: 0  # 0 us; not kept: M001 "
                        "M002 M003 M004 predict each other better without it"));
  // The fit without it equals a fit that never had it.
  const ChipFactors never =
      FitCalibration(rows, {.excluded = {FactorKind::kGemmOverhead}}).For("gpu_h800");
  EXPECT_EQ(c.factors.values, never.values);
}

TEST(Calibration, ChipsAreFittedIndependentlyAndDeterministically) {
  const RowModel a = OneTerm("a", FactorKind::kMatmul, 1e-3);
  const RowModel b = OneTerm("b", FactorKind::kMatmul, 1e-3);
  const std::vector<CalibrationRow> only_a = {{"A", &a, 1.3e-3}};
  const std::vector<CalibrationRow> both = {{"A", &a, 1.3e-3}, {"B", &b, 4e-3}};
  const double alone = FitCalibration(only_a).For("a").Get(FactorKind::kMatmul);
  // Bit-identical: b's rows change nothing for a, and the same rows give the same bits.
  EXPECT_EQ(FitCalibration(both).For("a").Get(FactorKind::kMatmul), alone);
  EXPECT_EQ(FitCalibration(only_a).For("a").Get(FactorKind::kMatmul), alone);
}

TEST(Calibration, EachLinkClassIsFittedOnlyOnTheRowsItBounds) {
  // Two pipelined exchanges (max of stages). A: NVLink 10 us, IB 20 us, measured 25 us: IB
  // bounds it. B: NVLink 30 us, IB 5 us, measured 40 us: NVLink bounds it. Each class is
  // fitted on its own row only: x = ln f minimises (x - ln(20/25))^2 + 0.01 x^2 for IB, so
  // f = 0.8^(1/1.01); NVLink likewise 0.75^(1/1.01). Neither moves the other row's bound
  // (A's NVLink 10 / 0.75 = 13 us < 25; B's IB 5 / 0.8 = 6 us < 40), so the two are independent.
  RowModel a;
  a.chip = "c";
  a.terms = {{FactorKind::kNvlink, 10e-6}, {FactorKind::kInfiniband, 20e-6}};
  a.unit = MeasurementUnit::kSeconds;
  RowModel b = a;
  b.terms = {{FactorKind::kNvlink, 30e-6}, {FactorKind::kInfiniband, 5e-6}};
  const std::vector<CalibrationRow> rows = {{"A", &a, 25e-6}, {"B", &b, 40e-6}};
  const ChipCalibration c = FitCalibration(rows).chips.at("c");
  EXPECT_THAT(c.fitted_on.at(FactorKind::kInfiniband), ::testing::ElementsAre("A"));
  EXPECT_THAT(c.fitted_on.at(FactorKind::kNvlink), ::testing::ElementsAre("B"));
  EXPECT_NEAR(c.factors.Get(FactorKind::kInfiniband), std::exp(std::log(0.8) / 1.01), 1e-9);
  EXPECT_NEAR(c.factors.Get(FactorKind::kNvlink), std::exp(std::log(0.75) / 1.01), 1e-9);
  // The per-algorithm fractions are not fitted and are written as 1, whatever the file held:
  // the link classes were fitted with them at 1.
  EfficiencySpec previous;
  previous.set_collective_direct_fraction_of_peak(0.65);
  const std::string block = EfficiencyBlock(c, previous, "cal.csv");
  EXPECT_THAT(block, HasSubstr("collective_direct_fraction_of_peak: 1  # held at 1"));
  EXPECT_THAT(block, HasSubstr("infiniband_fraction_of_peak: 0.8018  # fitted on A\n"));
  EXPECT_THAT(block, HasSubstr("nvlink_fraction_of_peak: 0.7521  # fitted on B\n"));
}

TEST(Calibration, EfficiencyBlockReplacesTheFilesBlockAndStaysValid) {
  const std::string path = absl::StrCat(PERFSIM_SOURCE_DIR, "/hardware/gpu_h800.textproto");
  const std::string text = ReadFileOrDie(path);
  PERFSIM_ASSERT_OK_AND_ASSIGN(Chip before, Chip::FromText(text, path));
  ChipCalibration fitted;
  fitted.chip = "gpu_h800";
  fitted.factors.Set(FactorKind::kMatmul, 0.61234);
  fitted.factors.Set(FactorKind::kGemmOverhead, 12e-6);
  fitted.fitted_on[FactorKind::kMatmul] = {"M001", "M002"};
  fitted.fitted_on[FactorKind::kGemmOverhead] = {"M001"};
  // The file's current values (whatever the shipped file holds, the test states its own):
  // unset fields read as datasheet values, 1 for a fraction.
  EfficiencySpec previous;
  previous.set_collective_overhead_seconds(3e-6);
  const std::string block = EfficiencyBlock(fitted, previous, "cal.csv");
  EXPECT_THAT(block, HasSubstr("matmul_fraction_of_peak: 0.6123  # fitted on M001 M002"));
  EXPECT_THAT(block, HasSubstr("collective_direct_fraction_of_peak: 1  # held at 1: "
                               "communication is fitted per link class"));
  EXPECT_THAT(block, HasSubstr("grouped_matmul_overhead_seconds_per_group: 1.2e-05  # 12 us; "
                               "fitted on M001\n"));
  EXPECT_THAT(block, HasSubstr("collective_overhead_seconds: 3e-06  # 3 us; no row informs it"));
  EXPECT_THAT(block, HasSubstr("fitted_on: \"perfsim calibrate cal.csv: 2 rows (M001 M002)\""));
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::string updated, ReplaceEfficiencyBlock(text, block));
  PERFSIM_ASSERT_OK_AND_ASSIGN(Chip after, Chip::FromText(updated, path));
  EXPECT_EQ(after.proto().efficiency().matmul_fraction_of_peak(), 0.6123);
  EXPECT_EQ(after.proto().efficiency().grouped_matmul_overhead_seconds_per_group(), 1.2e-5);
  EXPECT_EQ(after.proto().efficiency().collective_overhead_seconds(), 3e-6);
  EXPECT_EQ(after.proto().efficiency().collective_direct_fraction_of_peak(), 1);
  // Everything outside the block is kept.
  EXPECT_EQ(after.proto().compute().peak_fp8_flops_per_second(),
            before.proto().compute().peak_fp8_flops_per_second());
  EXPECT_EQ(updated.substr(0, text.find("efficiency {")),
            text.substr(0, text.find("efficiency {")));
  // Replacing again is idempotent.
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::string twice, ReplaceEfficiencyBlock(updated, block));
  EXPECT_EQ(twice, updated);
}

TEST(Calibration, ReplaceAppendsAMissingBlockAndRejectsAnUnterminatedOne) {
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::string appended,
                               ReplaceEfficiencyBlock("name: \"x\"", "efficiency {\n}\n"));
  EXPECT_EQ(appended, "name: \"x\"\n\nefficiency {\n}\n");
  EXPECT_THAT(ReplaceEfficiencyBlock("a: 1\nefficiency {\n  x: 1\n", "efficiency {\n}\n"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("line 2: expected")));
  EXPECT_THAT(ReplaceEfficiencyBlock("a: 1\n", "b"),
              Not(StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("expected"))));
}

}  // namespace
}  // namespace perfsim
