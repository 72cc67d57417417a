// Fitting calibration factors (calibration.h).
#include "sim/accuracy/calibration.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "fmt/format.h"

namespace perfsim {
namespace {

constexpr double kPriorWeight = 0.01;
constexpr double kMinOverheadSpread = 2;
constexpr double kMinFraction = 0.01;
constexpr double kMaxOverheadSeconds = 1e-3;
constexpr int kGoldenSteps = 60;
constexpr int kMaxRounds = 2000;

constexpr FactorKind kAllFactors[] = {
    FactorKind::kMatmul,       FactorKind::kHbm,          FactorKind::kRing,
    FactorKind::kBidirectionalRing, FactorKind::kDirect,  FactorKind::kHierarchical,
    FactorKind::kNvlink,       FactorKind::kInfiniband,   FactorKind::kIci,
    FactorKind::kDcn,          FactorKind::kSmCopy,       FactorKind::kGemmOverhead,
    FactorKind::kCommOverhead, FactorKind::kApiOverhead};

// The per-algorithm collective fractions, which the link classes replace in the fit: no row
// model has a term of them (row_model.h), and the fitted link classes assume them at 1, so
// EfficiencyBlock writes them as 1 (proto/hardware.proto).
bool IsAlgorithmFactor(FactorKind kind) {
  return kind == FactorKind::kRing || kind == FactorKind::kBidirectionalRing ||
         kind == FactorKind::kDirect || kind == FactorKind::kHierarchical;
}

// How many times a row pays overhead `kind`: per group or per collective for the op class's
// overhead, once per API call for the API overhead.
double OverheadCount(const RowModel& model, FactorKind kind) {
  return kind == FactorKind::kApiOverhead ? model.api_calls : model.invocations;
}

// The variable the search moves: ln(fraction), or the overhead in seconds.
double FromVariable(FactorKind kind, double x) { return IsFraction(kind) ? std::exp(x) : x; }

// The datasheet-physics seconds per invocation of `kind` of the rows that inform the overhead,
// sorted.
std::vector<double> SecondsPerInvocation(const std::vector<const CalibrationRow*>& rows,
                                         FactorKind kind) {
  std::vector<double> seconds;
  for (const CalibrationRow* row : rows) {
    if (!ModelInforms(*row->model, kind)) continue;
    seconds.push_back(ModelSeconds(*row->model, ChipFactors()) / OverheadCount(*row->model, kind));
  }
  std::sort(seconds.begin(), seconds.end());
  return seconds;
}

double Median(const std::vector<double>& sorted) {
  const size_t n = sorted.size();
  return n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
}

class ChipObjective {
 public:
  ChipObjective(std::vector<const CalibrationRow*> rows, std::map<FactorKind, double> scales)
      : rows_(std::move(rows)), scales_(std::move(scales)) {}

  double operator()(const ChipFactors& factors, absl::Span<const FactorKind> fitted) const {
    double sum = 0;
    for (const CalibrationRow* row : rows_) {
      const double error = std::log(ModelValue(*row->model, factors) / row->measured);
      sum += error * error;
    }
    for (FactorKind kind : fitted) {
      const double prior =
          IsFraction(kind) ? std::log(factors.Get(kind)) : factors.Get(kind) / scales_.at(kind);
      sum += kPriorWeight * prior * prior;
    }
    return sum;
  }

 private:
  std::vector<const CalibrationRow*> rows_;
  std::map<FactorKind, double> scales_;  // per fitted overhead
};

// Golden-section search of factor `kind` over its range, the others fixed.
double SearchFactor(const ChipObjective& objective, ChipFactors factors, FactorKind kind,
                    absl::Span<const FactorKind> fitted) {
  const double phi = (std::sqrt(5.0) - 1) / 2;
  double lo = IsFraction(kind) ? std::log(kMinFraction) : 0.0;
  double hi = IsFraction(kind) ? 0.0 : kMaxOverheadSeconds;
  auto at = [&](double x) {
    factors.Set(kind, FromVariable(kind, x));
    return objective(factors, fitted);
  };
  double a = hi - phi * (hi - lo);
  double b = lo + phi * (hi - lo);
  double fa = at(a);
  double fb = at(b);
  for (int i = 0; i < kGoldenSteps; ++i) {
    if (fa <= fb) {
      hi = b;
      b = a;
      fb = fa;
      a = hi - phi * (hi - lo);
      fa = at(a);
    } else {
      lo = a;
      a = b;
      fa = fb;
      b = lo + phi * (hi - lo);
      fb = at(b);
    }
  }
  // The ends are candidates too: the optimum often sits on a bound (a fraction of 1).
  double best_x = fa <= fb ? a : b;
  double best = std::min(fa, fb);
  const double ends[] = {IsFraction(kind) ? std::log(kMinFraction) : 0.0,
                         IsFraction(kind) ? 0.0 : kMaxOverheadSeconds};
  for (double x : ends) {
    const double f = at(x);
    if (f < best) {
      best = f;
      best_x = x;
    }
  }
  return FromVariable(kind, best_x);
}

// Fits the factors the rows inform but those in `excluded` (they keep the datasheet value).
ChipCalibration FitFactors(const std::string& chip,
                           const std::vector<const CalibrationRow*>& all_rows,
                           const std::set<FactorKind>& excluded) {
  ChipCalibration out;
  out.chip = chip;
  // A row timed around a host API pays a per-call host cost that only API-timed rows of
  // different lengths can tell from a rate. When the chip's rows cannot fit that cost, its
  // API-timed rows inform nothing: fitted alone, their host cost would be read as a slow link
  // (GB200's one HybridEP row, M072, would put NVLink at 0.45 of peak).
  std::vector<const CalibrationRow*> rows = all_rows;
  const std::vector<double> api_seconds = SecondsPerInvocation(rows, FactorKind::kApiOverhead);
  const bool api_fittable =
      !api_seconds.empty() && api_seconds.back() >= kMinOverheadSpread * api_seconds.front();
  if (!api_fittable) {
    rows.erase(std::remove_if(rows.begin(), rows.end(),
                              [](const CalibrationRow* row) { return row->model->api_calls > 0; }),
               rows.end());
  }
  std::vector<FactorKind> fitted;
  for (FactorKind kind : kAllFactors) {
    if (excluded.count(kind) > 0) continue;
    std::vector<std::string> ids;
    for (const CalibrationRow* row : rows) {
      if (ModelInforms(*row->model, kind)) ids.push_back(row->id);
    }
    if (ids.empty()) continue;
    if (!IsFraction(kind)) {
      // A fixed cost and a rate are told apart only by rows of different lengths.
      const std::vector<double> seconds = SecondsPerInvocation(rows, kind);
      if (seconds.back() < kMinOverheadSpread * seconds.front()) continue;
      out.prior_scale_seconds[kind] = Median(seconds);
    }
    fitted.push_back(kind);
    out.fitted_on[kind] = std::move(ids);
  }
  const ChipObjective objective(rows, out.prior_scale_seconds);
  double current = objective(out.factors, fitted);
  for (int round = 0; round < kMaxRounds && !fitted.empty(); ++round) {
    const double before = current;
    for (FactorKind kind : fitted) {
      const double previous = out.factors.Get(kind);
      out.factors.Set(kind, SearchFactor(objective, out.factors, kind, fitted));
      const double now = objective(out.factors, fitted);
      // Never accept a step that makes things worse (the search is over one coordinate).
      if (now > current) {
        out.factors.Set(kind, previous);
      } else {
        current = now;
      }
    }
    if (before - current <= 1e-15 * std::max(1.0, before)) break;
  }
  out.objective = current;
  return out;
}

// Root mean square, over the rows whose ids are in `judged`, of the log error of each row
// predicted by a fit on all the other rows (FitFactors with `excluded`).
double LeaveOneOutError(const std::string& chip, const std::vector<const CalibrationRow*>& rows,
                        const std::vector<std::string>& judged,
                        const std::set<FactorKind>& excluded) {
  double sum = 0;
  double count = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (std::find(judged.begin(), judged.end(), rows[i]->id) == judged.end()) continue;
    std::vector<const CalibrationRow*> others;
    for (size_t j = 0; j < rows.size(); ++j) {
      if (j != i) others.push_back(rows[j]);
    }
    const ChipFactors f = FitFactors(chip, others, excluded).factors;
    const double error = std::log(ModelValue(*rows[i]->model, f) / rows[i]->measured);
    sum += error * error;
    count += 1;
  }
  return count > 0 ? std::sqrt(sum / count) : 0.0;
}

ChipCalibration FitChip(const std::string& chip, const std::vector<const CalibrationRow*>& rows,
                        const FitOptions& options) {
  std::set<FactorKind> excluded(options.excluded.begin(), options.excluded.end());
  const ChipCalibration all = FitFactors(chip, rows, excluded);
  if (!options.select_overheads) return all;
  // Each overhead the rows could fit must earn its place out of sample (calibration.h).
  std::map<FactorKind, OverheadSelection> selection;
  for (FactorKind kind : kAllFactors) {
    if (IsFraction(kind) || all.fitted_on.count(kind) == 0) continue;
    std::set<FactorKind> without = excluded;
    without.insert(kind);
    OverheadSelection& choice = selection[kind];
    choice.rows = all.fitted_on.at(kind);
    choice.loo_rms_log_error_with = LeaveOneOutError(chip, rows, choice.rows, excluded);
    choice.loo_rms_log_error_without = LeaveOneOutError(chip, rows, choice.rows, without);
    choice.kept = !(choice.loo_rms_log_error_without < choice.loo_rms_log_error_with);
    if (!choice.kept) excluded = std::move(without);
  }
  ChipCalibration out =
      excluded.size() == options.excluded.size() ? all : FitFactors(chip, rows, excluded);
  out.overhead_selection = std::move(selection);
  return out;
}

std::string Value(double v) { return fmt::format("{:.4g}", v); }
// A log error as a percentage for people: 0.0123 -> "1.2%".
std::string Percent(double v) { return fmt::format("{:.1f}%", v * 100); }

// The value `e` holds for `kind`; an unset field reads as its datasheet value (ChipFactors()).
double PreviousValue(const EfficiencySpec& e, FactorKind kind) {
  const double datasheet = ChipFactors().Get(kind);
  switch (kind) {
    case FactorKind::kMatmul:
      return e.has_matmul_fraction_of_peak() ? e.matmul_fraction_of_peak() : datasheet;
    case FactorKind::kHbm:
      return e.has_hbm_fraction_of_peak() ? e.hbm_fraction_of_peak() : datasheet;
    case FactorKind::kRing:
      return e.has_collective_ring_fraction_of_peak() ? e.collective_ring_fraction_of_peak()
                                                      : datasheet;
    case FactorKind::kBidirectionalRing:
      return e.has_collective_bidirectional_ring_fraction_of_peak()
                 ? e.collective_bidirectional_ring_fraction_of_peak()
                 : datasheet;
    case FactorKind::kDirect:
      return e.has_collective_direct_fraction_of_peak() ? e.collective_direct_fraction_of_peak()
                                                        : datasheet;
    case FactorKind::kHierarchical:
      return e.has_collective_hierarchical_fraction_of_peak()
                 ? e.collective_hierarchical_fraction_of_peak()
                 : datasheet;
    case FactorKind::kNvlink:
      return e.has_nvlink_fraction_of_peak() ? e.nvlink_fraction_of_peak() : datasheet;
    case FactorKind::kInfiniband:
      return e.has_infiniband_fraction_of_peak() ? e.infiniband_fraction_of_peak() : datasheet;
    case FactorKind::kIci:
      return e.has_ici_fraction_of_peak() ? e.ici_fraction_of_peak() : datasheet;
    case FactorKind::kDcn:
      return e.has_dcn_fraction_of_peak() ? e.dcn_fraction_of_peak() : datasheet;
    case FactorKind::kSmCopy:
      return e.has_sm_copy_fraction_of_peak() ? e.sm_copy_fraction_of_peak() : datasheet;
    case FactorKind::kGemmOverhead:
      return e.has_grouped_matmul_overhead_seconds_per_group()
                 ? e.grouped_matmul_overhead_seconds_per_group()
                 : datasheet;
    case FactorKind::kCommOverhead:
      return e.has_collective_overhead_seconds() ? e.collective_overhead_seconds() : datasheet;
    case FactorKind::kApiOverhead:
      return datasheet;  // not a field: never written
  }
  return datasheet;
}

// "M001 M002 M003": every id, so that a reader can find each row.
std::string RowList(const std::vector<std::string>& ids) { return absl::StrJoin(ids, " "); }

}  // namespace

ChipFactors Calibration::For(absl::string_view chip) const {
  auto it = chips.find(std::string(chip));
  return it == chips.end() ? ChipFactors() : it->second.factors;
}

Calibration FitCalibration(absl::Span<const CalibrationRow> rows, const FitOptions& options) {
  std::map<std::string, std::vector<const CalibrationRow*>> by_chip;
  for (const CalibrationRow& row : rows) by_chip[row.model->chip].push_back(&row);
  Calibration out;
  for (const auto& [chip, chip_rows] : by_chip) out.chips[chip] = FitChip(chip, chip_rows, options);
  return out;
}

std::string EfficiencyBlock(const ChipCalibration& fitted, const EfficiencySpec& previous,
                            absl::string_view source) {
  std::string block = absl::StrCat(
      "efficiency {\n"
      "  # Written by `perfsim calibrate ",
      source,
      "` (issue 7): least squares on the log error of\n"
      "  # the rows named per factor (sim/accuracy/calibration.h). `perfsim accuracy` shows\n"
      "  # every row's error at datasheet values, fitted, and leave-one-out. A factor no row\n"
      "  # informs keeps its value.\n");
  std::vector<std::string> all_ids;
  for (FactorKind kind : kAllFactors) {
    if (!IsChipProperty(kind)) continue;
    auto it = fitted.fitted_on.find(kind);
    const bool was_fitted = it != fitted.fitted_on.end();
    if (was_fitted) {
      for (const std::string& id : it->second) {
        if (std::find(all_ids.begin(), all_ids.end(), id) == all_ids.end()) all_ids.push_back(id);
      }
    }
    // A dropped overhead is none: its rows are predicted better without it.
    auto selected = fitted.overhead_selection.find(kind);
    const bool dropped = selected != fitted.overhead_selection.end() && !selected->second.kept;
    const bool algorithm = !was_fitted && IsAlgorithmFactor(kind);
    const double value = was_fitted           ? fitted.factors.Get(kind)
                         : dropped || algorithm ? ChipFactors().Get(kind)
                                              : PreviousValue(previous, kind);
    // Overheads are written in seconds; the comment says it in microseconds.
    const std::string micros =
        IsFraction(kind) ? "" : absl::StrCat(" ", Value(value * 1e6), " us;");
    std::string why;
    if (was_fitted) {
      why = absl::StrCat(" fitted on ", RowList(it->second));
    } else if (algorithm) {
      why = " held at 1: communication is fitted per link class (proto/hardware.proto)";
    } else if (dropped) {
      why = absl::StrCat(" not kept: ", RowList(selected->second.rows),
                         " predict each other better without it (leave-one-out rms log error ",
                         Percent(selected->second.loo_rms_log_error_without), " without, ",
                         Percent(selected->second.loo_rms_log_error_with), " with)");
    } else {
      why = " no row informs it: unchanged";
    }
    absl::StrAppend(&block, "  ", FactorFieldName(kind), ": ", Value(value), "  #", micros, why,
                    "\n");
  }
  auto api = fitted.fitted_on.find(FactorKind::kApiOverhead);
  if (api != fitted.fitted_on.end()) {
    // The row-class term is fitted with the others but is no property of the chip.
    absl::StrAppend(&block,
                    "  # Not written: ", Value(fitted.factors.Get(FactorKind::kApiOverhead) * 1e6),
                    " us per call of host-API timing, fitted on ", RowList(api->second),
                    "\n  # (timed around a library's host API call; a row-class term of the "
                    "accuracy model,\n  # not a property of this chip: "
                    "sim/accuracy/row_model.h).\n");
  }
  std::sort(all_ids.begin(), all_ids.end());
  absl::StrAppend(&block, "  fitted_on: \"perfsim calibrate ", source, ": ", all_ids.size(),
                  " rows (", RowList(all_ids), ")\"\n}\n");
  return block;
}

absl::StatusOr<std::string> ReplaceEfficiencyBlock(absl::string_view text,
                                                   absl::string_view block) {
  std::vector<absl::string_view> lines = absl::StrSplit(text, '\n');
  int64_t begin = -1;
  int64_t end = -1;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (begin < 0 && absl::StartsWith(lines[i], "efficiency {")) {
      begin = static_cast<int64_t>(i);
    } else if (begin >= 0 && absl::StartsWith(lines[i], "}")) {
      end = static_cast<int64_t>(i);
      break;
    }
  }
  std::string out;
  if (begin < 0) {
    out = std::string(text);
    if (!out.empty() && out.back() != '\n') out.push_back('\n');
    absl::StrAppend(&out, "\n", block);
    return out;
  }
  if (end < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("line ", begin + 1,
                     ": expected the efficiency block to end with '}' at the start of a "
                     "line; got the end of the file"));
  }
  for (int64_t i = 0; i < begin; ++i) absl::StrAppend(&out, lines[i], "\n");
  absl::StrAppend(&out, block);
  for (size_t i = static_cast<size_t>(end) + 1; i < lines.size(); ++i) {
    absl::StrAppend(&out, lines[i], i + 1 < lines.size() ? "\n" : "");
  }
  return out;
}

}  // namespace perfsim
