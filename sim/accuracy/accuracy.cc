// Predictions, fits and error summaries of `perfsim accuracy` (accuracy.h).
#include "sim/accuracy/accuracy.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "sim/accuracy/block_model.h"
#include "sim/accuracy/step_row_model.h"
#include "sim/accuracy/scenario.h"
#include "sim/util/status.h"

namespace perfsim {
namespace {

double ErrorPct(double predicted, double measured) {
  return (predicted - measured) / measured * 100;
}

}  // namespace

absl::string_view AccuracyColumnName(AccuracyColumn column) {
  switch (column) {
    case kPhysics:
      return "physics";
    case kCalibrated:
      return "calibrated";
    case kLeaveOneOut:
      return "leave_one_out";
  }
  return "?";
}

ErrorSummary SummarizeErrors(std::string scope, absl::Span<const std::string> ids,
                             absl::Span<const double> error_pct) {
  ErrorSummary s;
  s.scope = std::move(scope);
  s.count = static_cast<int64_t>(error_pct.size());
  if (error_pct.empty()) return s;
  std::vector<double> abs_errors;
  for (size_t i = 0; i < error_pct.size(); ++i) {
    abs_errors.push_back(std::fabs(error_pct[i]));
    // The first of equally bad rows is the worst, so the choice does not depend on sorting.
    if (i == 0 || std::fabs(error_pct[i]) > std::fabs(s.worst_pct)) {
      s.worst_pct = error_pct[i];
      s.worst_id = ids[i];
    }
  }
  std::sort(abs_errors.begin(), abs_errors.end());
  const size_t n = abs_errors.size();
  s.median_abs_pct =
      n % 2 == 1 ? abs_errors[n / 2] : (abs_errors[n / 2 - 1] + abs_errors[n / 2]) / 2;
  // Nearest rank: the ceil(0.9 n)-th smallest, 1-based.
  const size_t rank = static_cast<size_t>(std::ceil(0.9 * static_cast<double>(n)));
  s.p90_abs_pct = abs_errors[std::max<size_t>(rank, 1) - 1];
  return s;
}

namespace {

// A row simulated whole (a block or a whole step): `predict` maps a chip's factors to the
// row's value and detail (BlockPrediction or StepRowPrediction), physics and calibrated.
template <typename Predict>
void FillSimulatedRow(const Predict& predict, const Calibration& calibration,
                      const std::string& chip, const AccuracyOptions& options, AccuracyRow& row,
                      int64_t& skipped) {
  const auto physics = predict(ChipFactors());
  const auto calibrated = predict(calibration.For(chip));
  if (!physics.ok() || !calibrated.ok()) {
    row.skipped_reason = absl::StrCat(
        "cannot simulate: ", (physics.ok() ? calibrated.status() : physics.status()).message());
    ++skipped;
    return;
  }
  row.detail = physics->detail;
  row.predicted[kPhysics] = physics->value;
  row.predicted[kCalibrated] = calibrated->value;
  row.predicted[kLeaveOneOut] =
      options.leave_one_out ? calibrated->value : std::numeric_limits<double>::quiet_NaN();
  for (int c = 0; c < kNumAccuracyColumns; ++c) {
    row.error_pct[c] = ErrorPct(row.predicted[c], row.measured);
  }
}

}  // namespace

absl::StatusOr<AccuracyReport> RunAccuracy(const MeasurementFile& file,
                                           const AccuracyOptions& options) {
  AccuracyReport report;
  report.filename = file.filename;
  std::vector<int64_t> model_of_row;  // index into report.models, -1 when skipped or a block
  std::map<size_t, BlockScenario> block_of_row;  // by index into report.rows
  std::map<size_t, StepRowScenario> step_of_row;
  for (const Measurement& m : file.rows) {
    AccuracyRow row;
    row.id = m.id;
    row.category = m.category;
    row.measured = m.value.value;
    row.measured_text = m.value.text;
    row.measured_flagged = m.value.kind != MeasuredValue::Kind::kExact;
    row.unit = m.unit.has_value() ? std::string(MeasurementUnitName(*m.unit))
                                  : std::string(m.Field("unit").text);
    PERFSIM_ASSIGN_OR_RETURN(MappedRow mapped, MapMeasurement(m));
    int64_t model_index = -1;
    if (mapped.block.has_value()) {
      row.chip = mapped.block->chip;
      row.description = mapped.block->description;
      block_of_row.emplace(report.rows.size(), *std::move(mapped.block));
    } else if (mapped.train_step.has_value()) {
      row.chip = mapped.train_step->chip;
      row.description = mapped.train_step->description;
      step_of_row.emplace(report.rows.size(), *std::move(mapped.train_step));
    } else if (!mapped.scenario.has_value()) {
      row.skipped_reason = mapped.skipped_reason;
    } else {
      row.chip = mapped.scenario->chip;
      row.description = mapped.scenario->description;
      absl::StatusOr<RowModel> model = BuildRowModel(*mapped.scenario);
      if (!model.ok()) {
        row.skipped_reason = absl::StrCat("cannot simulate: ", model.status().message());
      } else {
        row.detail = model->detail;
        model_index = static_cast<int64_t>(report.models.size());
        report.models.push_back(*std::move(model));
      }
    }
    if (!row.simulated()) ++report.skipped;
    row.model_index = model_index;
    model_of_row.push_back(model_index);
    report.rows.push_back(std::move(row));
  }

  // Pointers into report.models are taken only now that it no longer grows.
  std::vector<CalibrationRow> training;
  std::vector<size_t> row_of_training;
  for (size_t i = 0; i < report.rows.size(); ++i) {
    if (model_of_row[i] < 0) continue;
    training.push_back(
        {report.rows[i].id, &report.models[model_of_row[i]], report.rows[i].measured});
    row_of_training.push_back(i);
  }
  report.calibration = FitCalibration(training);

  for (size_t t = 0; t < training.size(); ++t) {
    AccuracyRow& row = report.rows[row_of_training[t]];
    const RowModel& model = *training[t].model;
    row.predicted[kPhysics] = ModelValue(model, ChipFactors());
    row.predicted[kCalibrated] = ModelValue(model, report.calibration.For(model.chip));
    row.predicted[kLeaveOneOut] = std::numeric_limits<double>::quiet_NaN();
    if (options.leave_one_out) {
      // Refit this row's chip without it (other chips share no factor).
      std::vector<CalibrationRow> others;
      for (size_t u = 0; u < training.size(); ++u) {
        if (u != t && training[u].model->chip == model.chip) others.push_back(training[u]);
      }
      const Calibration without = FitCalibration(others);
      row.predicted[kLeaveOneOut] = ModelValue(model, without.For(model.chip));
    }
    for (int c = 0; c < kNumAccuracyColumns; ++c) {
      row.error_pct[c] = ErrorPct(row.predicted[c], row.measured);
    }
  }

  // Block and whole-step rows: simulated whole with the factors of each column. They are in no
  // fit, so the factors fitted on every kernel row are already out of sample for them:
  // leave-one-out is the calibrated prediction.
  for (auto& [index, block] : block_of_row) {
    FillSimulatedRow(
        [&](const ChipFactors& f) { return PredictBlock(block, f); }, report.calibration,
        block.chip, options, report.rows[index], report.skipped);
  }
  for (auto& [index, step] : step_of_row) {
    FillSimulatedRow(
        [&](const ChipFactors& f) { return PredictStepRow(step, f); }, report.calibration,
        step.chip, options, report.rows[index], report.skipped);
  }

  // Scopes: categories in file order, "kernel", "overall".
  std::vector<std::string> scopes;
  bool any_kernel = false;
  for (const AccuracyRow& row : report.rows) {
    if (!row.simulated()) continue;
    if (std::find(scopes.begin(), scopes.end(), row.category) == scopes.end()) {
      scopes.push_back(row.category);
    }
    any_kernel = any_kernel || absl::StartsWith(row.category, "kernel_");
  }
  if (any_kernel) scopes.push_back("kernel");
  scopes.push_back("overall");
  for (int c = 0; c < kNumAccuracyColumns; ++c) {
    for (const std::string& scope : scopes) {
      std::vector<std::string> ids;
      std::vector<double> errors;
      for (const AccuracyRow& row : report.rows) {
        if (!row.simulated()) continue;
        const bool in_scope = scope == "overall" ||
                              (scope == "kernel" && absl::StartsWith(row.category, "kernel_")) ||
                              row.category == scope;
        if (!in_scope) continue;
        if (c == kLeaveOneOut && !options.leave_one_out) continue;
        ids.push_back(row.id);
        errors.push_back(row.error_pct[c]);
      }
      report.summaries[c].push_back(SummarizeErrors(scope, ids, errors));
    }
  }
  return report;
}

}  // namespace perfsim
