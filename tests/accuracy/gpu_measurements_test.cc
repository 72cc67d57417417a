// perfsim's predictions for its own GPU measurements (validation/gpu/h200_measurements.csv: one
// H200, jax 0.11.2, validation/gpu/README.md). These rows are measurements, not goldens made by
// perfsim: the bounds below are what the model must keep explaining.
#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "sim/accuracy/accuracy.h"
#include "sim/accuracy/csv.h"
#include "tests/accuracy/accuracy_test_util.h"

namespace perfsim {
namespace {

using ::perfsim::testing::ReadFileOrDie;

const AccuracyReport& H200Report() {
  static const AccuracyReport* const kReport = [] {
    const std::string path =
        absl::StrCat(PERFSIM_SOURCE_DIR, "/validation/gpu/h200_measurements.csv");
    absl::StatusOr<MeasurementFile> file =
        ReadMeasurements(ReadFileOrDie(path), "h200_measurements.csv");
    EXPECT_TRUE(file.ok()) << file.status();
    if (!file.ok()) return new AccuracyReport();
    absl::StatusOr<AccuracyReport> r = RunAccuracy(*file);
    EXPECT_TRUE(r.ok()) << r.status();
    return new AccuracyReport(r.ok() ? *std::move(r) : AccuracyReport());
  }();
  return *kReport;
}

const ErrorSummary* Summary(int column, const std::string& scope) {
  for (const ErrorSummary& s : H200Report().summaries[column]) {
    if (s.scope == scope) return &s;
  }
  return nullptr;
}

// XLA's ragged_dot on a GPU is a dense dot over every group (sim/cost/grouped_matmul.h,
// kXlaRaggedDot). At datasheet peaks that model must be faster than the hardware on every row
// (nothing runs above peak) yet explain most of the time: the 40 rows ran at 57-82% of peak
// counted so. Costing only the useful work, as a grouped-GEMM kernel does, predicted 2-26% of
// the measured time and failed the lower bound on every row.
TEST(H200Measurements, RaggedDotRowsAreTheDenseExpansionAtUnderPeakAndWithinTenPercent) {
  int rows = 0;
  for (const AccuracyRow& row : H200Report().rows) {
    if (row.category != "kernel_grouped_gemm") continue;
    ASSERT_TRUE(row.simulated()) << row.id << ": " << row.skipped_reason;
    ++rows;
    EXPECT_LE(row.predicted[kPhysics], row.measured) << row.id << ": " << row.description;
    EXPECT_GE(row.predicted[kPhysics], 0.5 * row.measured) << row.id << ": " << row.description;
  }
  EXPECT_EQ(rows, 40);

  // Out of sample, with one matmul efficiency fitted on the other rows: 5.9% median and 12.7%
  // p90 when this test was written. The bounds leave room for refinements of the GEMM model,
  // not for losing the expansion (then every row is off by 60% or more, calibrated or not).
  // (One test, not two: each ctest process would run the 40 leave-one-out fits again.)
  const ErrorSummary* loo = Summary(kLeaveOneOut, "kernel_grouped_gemm");
  ASSERT_NE(loo, nullptr);
  EXPECT_EQ(loo->count, 40);
  EXPECT_LE(loo->median_abs_pct, 10.0);
  EXPECT_LE(loo->p90_abs_pct, 20.0);
}

}  // namespace
}  // namespace perfsim
