// Table and JSON output of `perfsim accuracy` (accuracy_report.h).
#include "sim/accuracy/accuracy_report.h"

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

std::string JsonNumberOrNull(bool present, double v) { return present ? FormatDouble(v) : "null"; }

std::string JsonStringList(const std::vector<std::string>& values) {
  std::vector<std::string> parts;
  for (const std::string& v : values) parts.push_back(JsonString(v));
  return absl::StrCat("[", absl::StrJoin(parts, ", "), "]");
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

void PrintAccuracyJson(const AccuracyReport& report, std::ostream& out) {
  out << "{\n  \"file\": " << JsonString(report.filename) << ",\n  \"rows\": [";
  for (size_t i = 0; i < report.rows.size(); ++i) {
    const AccuracyRow& r = report.rows[i];
    const bool sim = r.simulated();
    out << (i == 0 ? "\n" : ",\n")
        << fmt::format(
               "    {{\"id\": {}, \"category\": {}, \"chip\": {}, \"unit\": {}, \"measured\": {}, "
               "\"measured_text\": {}, \"measured_flagged\": {}, \"predicted\": {}, "
               "\"error_pct\": {}, \"physics_predicted\": {}, \"physics_error_pct\": {}, "
               "\"loo_predicted\": {}, \"loo_error_pct\": {}, \"description\": {}, "
               "\"detail\": {}, \"skipped_reason\": {}}}",
               JsonString(r.id), JsonString(r.category),
               r.chip.empty() ? "null" : JsonString(r.chip), JsonString(r.unit),
               FormatDouble(r.measured), JsonString(r.measured_text),
               r.measured_flagged ? "true" : "false",
               JsonNumberOrNull(sim, r.predicted[kCalibrated]),
               JsonNumberOrNull(sim, r.error_pct[kCalibrated]),
               JsonNumberOrNull(sim, r.predicted[kPhysics]),
               JsonNumberOrNull(sim, r.error_pct[kPhysics]),
               JsonNumberOrNull(sim, r.predicted[kLeaveOneOut]),
               JsonNumberOrNull(sim, r.error_pct[kLeaveOneOut]), JsonString(r.description),
               JsonString(r.detail), sim ? "null" : JsonString(r.skipped_reason));
  }
  out << "\n  ],\n  \"skipped\": " << report.skipped << ",\n  \"summary\": {";
  for (int c = 0; c < kNumAccuracyColumns; ++c) {
    out << (c == 0 ? "\n" : ",\n") << "    "
        << JsonString(AccuracyColumnName(static_cast<AccuracyColumn>(c))) << ": [";
    const std::vector<ErrorSummary>& list = report.summaries[c];
    for (size_t i = 0; i < list.size(); ++i) {
      const ErrorSummary& s = list[i];
      out << (i == 0 ? "\n" : ",\n")
          << fmt::format(
                 "      {{\"scope\": {}, \"count\": {}, \"median_abs_error_pct\": {}, "
                 "\"p90_abs_error_pct\": {}, \"worst_id\": {}, \"worst_error_pct\": {}}}",
                 JsonString(s.scope), s.count, FormatDouble(s.median_abs_pct),
                 FormatDouble(s.p90_abs_pct), s.count == 0 ? "null" : JsonString(s.worst_id),
                 FormatDouble(s.worst_pct));
    }
    out << "\n    ]";
  }
  out << "\n  },\n  \"factors\": [";
  bool first = true;
  for (const auto& [chip, fitted] : report.calibration.chips) {
    for (int k = 0; k < kNumFactorKinds; ++k) {
      const FactorKind kind = static_cast<FactorKind>(k);
      auto ids = fitted.fitted_on.find(kind);
      auto choice = fitted.overhead_selection.find(kind);
      const bool tested = choice != fitted.overhead_selection.end();
      if (ids == fitted.fitted_on.end() && !tested) continue;
      const std::string selection =
          tested ? fmt::format(
                       ", \"kept\": {}, \"loo_rms_log_error_with\": {}, "
                       "\"loo_rms_log_error_without\": {}, \"tested_on\": {}",
                       choice->second.kept ? "true" : "false",
                       FormatDouble(choice->second.loo_rms_log_error_with),
                       FormatDouble(choice->second.loo_rms_log_error_without),
                       JsonStringList(choice->second.rows))
                 : std::string();
      out << (first ? "\n" : ",\n")
          << fmt::format(
                 "    {{\"chip\": {}, \"factor\": {}, \"value\": {}, \"chip_property\": {}, "
                 "\"fitted_on\": {}{}}}",
                 JsonString(chip), JsonString(FactorFieldName(kind)),
                 FormatDouble(fitted.factors.Get(kind)), IsChipProperty(kind) ? "true" : "false",
                 JsonStringList(ids == fitted.fitted_on.end() ? std::vector<std::string>()
                                                              : ids->second),
                 selection);
      first = false;
    }
  }
  out << "\n  ]\n}\n";
}

}  // namespace perfsim
