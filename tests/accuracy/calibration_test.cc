// Fitting factors (sim/accuracy/calibration.h) on synthetic rows whose answer is known in
// closed form, and writing the efficiency block of a hardware file.
#include "sim/accuracy/calibration.h"

#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
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
  // and h = 1 explain both exactly (nothing else can with h <= 1). The priors 0.01 (o / 10 us)^2
  // and 0.01 (ln h)^2 then pull o down and h below 1: the objective
  //   ln((o + 10/h)/40)^2 + ln((o + 100/h)/130)^2 + 0.01 (o/10)^2 + 0.01 (ln h)^2   (o in us)
  // has its minimum at o = 25.20 us, h = 0.912 (a grid search at 0.006 us x 1e-4 steps).
  RowModel shorter = OneTerm("c", FactorKind::kHbm, 10e-6);
  shorter.overhead = FactorKind::kGemmOverhead;
  shorter.invocations = 1;
  RowModel longer = OneTerm("c", FactorKind::kHbm, 100e-6);
  longer.overhead = FactorKind::kGemmOverhead;
  longer.invocations = 1;
  const std::vector<CalibrationRow> rows = {{"S", &shorter, 40e-6}, {"L", &longer, 130e-6}};
  const ChipFactors f = FitCalibration(rows).For("c");
  EXPECT_NEAR(f.Get(FactorKind::kGemmOverhead), 25.20e-6, 0.02e-6);
  EXPECT_NEAR(f.Get(FactorKind::kHbm), 0.912, 0.001);
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
  const std::string block = EfficiencyBlock(fitted, before.proto().efficiency(), "cal.csv");
  EXPECT_THAT(block, HasSubstr("matmul_fraction_of_peak: 0.6123  # fitted on M001 M002"));
  EXPECT_THAT(block, HasSubstr("collective_direct_fraction_of_peak: 1  # no row informs it"));
  EXPECT_THAT(block, HasSubstr("grouped_matmul_overhead_seconds 12 us"));
  EXPECT_THAT(block, HasSubstr("fitted on M001."));
  EXPECT_THAT(block, HasSubstr("fitted_on: \"perfsim calibrate cal.csv: 2 rows (M001 M002)\""));
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::string updated, ReplaceEfficiencyBlock(text, block));
  PERFSIM_ASSERT_OK_AND_ASSIGN(Chip after, Chip::FromText(updated, path));
  EXPECT_EQ(after.proto().efficiency().matmul_fraction_of_peak(), 0.6123);
  EXPECT_EQ(after.proto().efficiency().collective_direct_fraction_of_peak(),
            before.proto().efficiency().collective_direct_fraction_of_peak());
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
