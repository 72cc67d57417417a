// `perfsim accuracy`: every measurement row predicted three ways, and how far off each is.
//
//   PERFSIM_ASSIGN_OR_RETURN(MeasurementFile file, ReadMeasurements(text, "calibration.csv"));
//   PERFSIM_ASSIGN_OR_RETURN(AccuracyReport report, RunAccuracy(file));
//   report.rows[0].predicted[kCalibrated];      // in the row's own unit
//   report.rows[0].error_pct[kLeaveOneOut];     // (predicted - measured) / measured * 100
//
// The three predictions of a row (columns):
//   physics        datasheet peaks: every efficiency fraction 1, no grouped-matmul overhead
//                  (sourced fixed costs such as a GPU's 1 us kernel launch stay);
//   calibrated     with the factors fitted on every row of the file (calibration.h): in sample;
//   leave-one-out  with the factors fitted on every row but this one: out of sample, so a
//                  factor that only memorises its row shows here. The whole fit is repeated
//                  without the row, including its choice of overheads (calibration.h).
// moe_block and moe_layer_fused rows (scenario.h BlockScenario) are simulated whole by the step
// simulator with the same three sets of factors. They inform no factor, so their calibrated
// prediction is already out of sample and is also their leave-one-out prediction.
// A row timed around a host API (scenario.h) carries the API overhead in the calibrated and
// leave-one-out columns, a term of those rows that is not written into any hardware file.
// A row perfsim cannot simulate stays in the report with its skipped_reason and no
// predictions; it is never dropped.
//
// Summaries per column: per category (in file order), "kernel" (every category that starts with
// "kernel_": the grouped-GEMM and all-to-all rows the targets are about) and "overall";
// each gives the count, the median |error| (mean of the two middle values when the count is
// even), the p90 |error| (nearest rank: the ceil(0.9 n)-th smallest) and the worst row.
#ifndef PERFSIM_SIM_ACCURACY_ACCURACY_H_
#define PERFSIM_SIM_ACCURACY_ACCURACY_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "sim/accuracy/calibration.h"
#include "sim/accuracy/measurement.h"
#include "sim/accuracy/row_model.h"

namespace perfsim {

enum AccuracyColumn { kPhysics = 0, kCalibrated = 1, kLeaveOneOut = 2 };
inline constexpr int kNumAccuracyColumns = 3;

// "physics", "calibrated", "leave_one_out".
absl::string_view AccuracyColumnName(AccuracyColumn column);

struct AccuracyRow {
  std::string id;
  std::string category;
  std::string chip;  // built-in chip name; empty when the hardware is not known
  double measured = 0;
  std::string measured_text;      // as written ("~370", "46-49")
  bool measured_flagged = false;  // approximate or a range (the midpoint is used)
  std::string unit;               // the row's unit as perfsim names it ("GB/s"), else as written
  std::string skipped_reason;     // empty when simulated
  std::string description;        // what is simulated
  std::string detail;             // the model's pieces at datasheet physics
  // Index of the row's closed-form model in AccuracyReport::models; -1 for a skipped row and
  // for a block row (simulated whole, block_model.h).
  int64_t model_index = -1;
  std::array<double, kNumAccuracyColumns> predicted = {0, 0, 0};
  std::array<double, kNumAccuracyColumns> error_pct = {0, 0, 0};
  bool simulated() const { return skipped_reason.empty(); }
};

struct ErrorSummary {
  std::string scope;  // a category, "kernel" or "overall"
  int64_t count = 0;
  double median_abs_pct = 0;
  double p90_abs_pct = 0;
  std::string worst_id;
  double worst_pct = 0;  // signed
};

struct AccuracyReport {
  std::string filename;
  std::vector<AccuracyRow> rows;  // in file order, skipped ones included
  std::vector<RowModel> models;   // one per simulated row, in row order
  Calibration calibration;        // fitted on every simulated row
  // summaries[column]: categories in file order, then "kernel" (when any), then "overall".
  std::array<std::vector<ErrorSummary>, kNumAccuracyColumns> summaries;
  int64_t skipped = 0;
};

struct AccuracyOptions {
  // false: no leave-one-out fits (`perfsim calibrate` needs only the fit on every row); the
  // leave-one-out predictions and errors are then NaN and its summaries have count 0.
  bool leave_one_out = true;
};

// Maps, simulates and fits. InvalidArgument "file:line:col: ..." for a malformed cell where a
// number must be (scenario.h); rows perfsim cannot simulate are reported, not errors.
absl::StatusOr<AccuracyReport> RunAccuracy(const MeasurementFile& file,
                                           const AccuracyOptions& options = {});

// Summary of signed errors (the ids name the rows); count 0 when empty.
ErrorSummary SummarizeErrors(std::string scope, absl::Span<const std::string> ids,
                             absl::Span<const double> error_pct);

}  // namespace perfsim

#endif  // PERFSIM_SIM_ACCURACY_ACCURACY_H_
