// Table and JSON output of `perfsim accuracy` (accuracy_report.h).
#include "sim/accuracy/accuracy_report.h"

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "fmt/format.h"
#include "sim/util/proto_format.h"

namespace perfsim {
namespace {

// 4 significant digits for people.
std::string Number(double v) { return fmt::format("{:.4g}", v); }
std::string Signed(double pct) { return fmt::format("{:+.1f}", pct); }

google::protobuf::Value NumberIf(bool present, double v) {
  return NumberOrNull(present ? std::optional<double>(v) : std::nullopt);
}

void SetSummaries(const std::vector<ErrorSummary>& summaries,
                  google::protobuf::RepeatedPtrField<report::AccuracySummary>* out) {
  for (const ErrorSummary& s : summaries) {
    report::AccuracySummary& summary = *out->Add();
    summary.set_scope(s.scope);
    summary.set_count(s.count);
    summary.set_median_abs_error_pct(s.median_abs_pct);
    summary.set_p90_abs_error_pct(s.p90_abs_pct);
    *summary.mutable_worst_id() = StringOrNull(s.count == 0 ? "" : s.worst_id);
    summary.set_worst_error_pct(s.worst_pct);
  }
}

const ErrorSummary* FindScope(const std::vector<ErrorSummary>& summaries,
                              const std::string& scope) {
  for (const ErrorSummary& s : summaries) {
    if (s.scope == scope) return &s;
  }
  return nullptr;
}

}  // namespace

void PrintFittedFactors(const Calibration& calibration, std::ostream& out) {
  for (const auto& [chip, fitted] : calibration.chips) {
    for (int k = 0; k < kNumFactorKinds; ++k) {
      const FactorKind kind = static_cast<FactorKind>(k);
      auto ids = fitted.fitted_on.find(kind);
      auto choice = fitted.overhead_selection.find(kind);
      const bool tested = choice != fitted.overhead_selection.end();
      if (ids == fitted.fitted_on.end() && !tested) continue;
      // The API overhead is a term of the API-timed rows, not of the chip (row_model.h).
      const std::string name = IsChipProperty(kind)
                                   ? std::string(FactorFieldName(kind))
                                   : absl::StrCat(FactorFieldName(kind), " (not written)");
      if (ids != fitted.fitted_on.end()) {
        const double value = fitted.factors.Get(kind);
        out << fmt::format(
            "  {:<9} {:<42} {:>9}  {}\n", chip, name,
            IsFraction(kind) ? Number(value) : absl::StrCat(Number(value * 1e6), " us"),
            absl::StrJoin(ids->second, " "));
      } else {
        out << fmt::format("  {:<9} {:<42} {:>9}  {}\n", chip, name, "not kept",
                           absl::StrJoin(choice->second.rows, " "));
      }
      // An overhead's out-of-sample test (calibration.h).
      if (tested) {
        out << fmt::format(
            "  {:<9} leave-one-out rms log error of those rows: {:.1f}% with it, {:.1f}% "
            "without\n",
            "", 100 * choice->second.loo_rms_log_error_with,
            100 * choice->second.loo_rms_log_error_without);
      }
    }
  }
}

void PrintAccuracyTable(const AccuracyReport& report, std::ostream& out) {
  out << fmt::format("perfsim accuracy {}: {} rows, {} simulated, {} skipped\n", report.filename,
                     report.rows.size(), report.rows.size() - report.skipped, report.skipped);
  out << "Each row predicted in its own unit; err% = (predicted - measured) / measured * 100.\n"
         "  physics: datasheet peaks (every efficiency fraction 1, overhead 0); calibrated: "
         "factors fitted on\n  all rows; loo: factors fitted on all rows but that one (out of "
         "sample).\n"
         "  * measured value approximate or a range (the midpoint is used).\n\n";
  out << fmt::format("{:<6} {:<20} {:<9} {:<8} {:>9} {:>9} {:>7} {:>9} {:>7} {:>9} {:>7}\n", "id",
                     "category", "chip", "unit", "measured", "physics", "err%", "calib.", "err%",
                     "loo", "err%");
  for (const AccuracyRow& row : report.rows) {
    if (!row.simulated()) continue;
    out << fmt::format("{:<6} {:<20} {:<9} {:<8} {:>9} {:>9} {:>7} {:>9} {:>7} {:>9} {:>7}\n",
                       row.id, row.category, row.chip, row.unit,
                       Number(row.measured) + (row.measured_flagged ? "*" : ""),
                       Number(row.predicted[kPhysics]), Signed(row.error_pct[kPhysics]),
                       Number(row.predicted[kCalibrated]), Signed(row.error_pct[kCalibrated]),
                       Number(row.predicted[kLeaveOneOut]), Signed(row.error_pct[kLeaveOneOut]));
  }
  if (report.skipped > 0) {
    out << "\nskipped (not simulated):\n";
    for (const AccuracyRow& row : report.rows) {
      if (!row.simulated()) out << fmt::format("  {:<6} {}\n", row.id, row.skipped_reason);
    }
  }
  out << "\n|error| in %: median / p90 (worst row, signed)\n";
  out << fmt::format("{:<20} {:>3}  {:<24} {:<24} {:<24}\n", "scope", "n", "physics", "calibrated",
                     "leave-one-out");
  for (const ErrorSummary& s : report.summaries[kPhysics]) {
    std::vector<std::string> cells;
    for (int c = 0; c < kNumAccuracyColumns; ++c) {
      const ErrorSummary* cs = FindScope(report.summaries[c], s.scope);
      cells.push_back(cs == nullptr || cs->count == 0
                          ? "-"
                          : fmt::format("{:.1f} / {:.1f} ({} {})", cs->median_abs_pct,
                                        cs->p90_abs_pct, cs->worst_id, Signed(cs->worst_pct)));
    }
    out << fmt::format("{:<20} {:>3}  {:<24} {:<24} {:<24}\n", s.scope, s.count, cells[0], cells[1],
                       cells[2]);
  }
  out << "\nfactors fitted on all rows ('perfsim calibrate' writes them, except a term marked "
         "not written:\na row-class term such as the host-API cost of API-timed rows, not a "
         "property of the chip):\n";
  PrintFittedFactors(report.calibration, out);
}

report::AccuracyReport AccuracyReportProto(const AccuracyReport& report) {
  report::AccuracyReport out;
  out.set_file(report.filename);
  for (const AccuracyRow& r : report.rows) {
    const bool sim = r.simulated();
    report::AccuracyRow& row = *out.add_rows();
    row.set_id(r.id);
    row.set_category(r.category);
    *row.mutable_chip() = StringOrNull(r.chip);
    row.set_unit(r.unit);
    row.set_measured(r.measured);
    row.set_measured_text(r.measured_text);
    row.set_measured_flagged(r.measured_flagged);
    *row.mutable_predicted() = NumberIf(sim, r.predicted[kCalibrated]);
    *row.mutable_error_pct() = NumberIf(sim, r.error_pct[kCalibrated]);
    *row.mutable_physics_predicted() = NumberIf(sim, r.predicted[kPhysics]);
    *row.mutable_physics_error_pct() = NumberIf(sim, r.error_pct[kPhysics]);
    *row.mutable_loo_predicted() = NumberIf(sim, r.predicted[kLeaveOneOut]);
    *row.mutable_loo_error_pct() = NumberIf(sim, r.error_pct[kLeaveOneOut]);
    row.set_description(r.description);
    row.set_detail(r.detail);
    *row.mutable_skipped_reason() = StringOrNull(r.skipped_reason);
  }
  out.set_skipped(report.skipped);
  report::AccuracySummaries& summary = *out.mutable_summary();
  SetSummaries(report.summaries[kPhysics], summary.mutable_physics());
  SetSummaries(report.summaries[kCalibrated], summary.mutable_calibrated());
  SetSummaries(report.summaries[kLeaveOneOut], summary.mutable_leave_one_out());
  for (const auto& [chip, fitted] : report.calibration.chips) {
    for (int k = 0; k < kNumFactorKinds; ++k) {
      const FactorKind kind = static_cast<FactorKind>(k);
      auto ids = fitted.fitted_on.find(kind);
      auto choice = fitted.overhead_selection.find(kind);
      const bool tested = choice != fitted.overhead_selection.end();
      if (ids == fitted.fitted_on.end() && !tested) continue;
      report::AccuracyFactor& factor = *out.add_factors();
      factor.set_chip(chip);
      factor.set_factor(std::string(FactorFieldName(kind)));
      factor.set_value(fitted.factors.Get(kind));
      factor.set_chip_property(IsChipProperty(kind));
      if (ids != fitted.fitted_on.end()) {
        for (const std::string& id : ids->second) factor.add_fitted_on(id);
      }
      if (tested) {
        factor.set_kept(choice->second.kept);
        factor.set_loo_rms_log_error_with(choice->second.loo_rms_log_error_with);
        factor.set_loo_rms_log_error_without(choice->second.loo_rms_log_error_without);
        for (const std::string& id : choice->second.rows) factor.add_tested_on(id);
      }
    }
  }
  return out;
}

void PrintAccuracyJson(const AccuracyReport& report, std::ostream& out) {
  out << ReportJson(AccuracyReportProto(report));
}

}  // namespace perfsim
