// Fitting the calibration factors of row_model.h to measurements, and writing them back.
//
//   std::vector<CalibrationRow> rows = {{"M001", &model, 1297.0}, ...};
//   Calibration cal = FitCalibration(rows);
//   cal.For("gpu_h800").Get(FactorKind::kMatmul);   // e.g. 0.60
//   EfficiencyBlock(cal.chips.at("gpu_h800"), previous, "calibration.csv");  // textproto text
//
// Method (simple on purpose, so that every factor can be explained). Chips share no factor, so
// each chip is fitted on its own rows. The factors fitted are those at least one of its rows
// informs (ModelInforms: the row is bound by it at datasheet physics, or it is the row's
// overhead); the others keep their datasheet value. An overhead is fitted only when its rows'
// datasheet times per invocation span a factor of 2 at least: rows of one length cannot tell a
// fixed cost from a slower rate (a leave-one-out fit of two rows would otherwise split the
// difference by the prior alone). The factors fitted minimise
//
//   sum over rows (ln predicted - ln measured)^2  +  0.01 * sum over factors prior^2
//
// with prior = ln(fraction) for a fraction of peak (pulls towards the datasheet) and
// overhead / scale for an overhead (pulls towards none), where scale is the median, over the
// rows the overhead is fitted on, of the row's datasheet-physics time per invocation (per call,
// or per group of a grouped matmul). So an overhead as long as its typical row costs as much as
// a fraction of 1/e, whatever the rows' durations: the prior is as weak for the overheads as for
// the fractions. (An absolute scale, 10 us, was tried first: it held the 0.6 ms fixed cost that
// HybridEP's Torch-API timings show down to 4 us, and with it the FP8 rows, which move half
// the bytes in that same fixed time, 45% out of sample.) The log error treats a factor of 2 too
// fast like a factor of 2 too slow, whatever the row's unit; the small prior keeps a factor that
// few rows inform from wandering (a leave-one-out fit may leave a factor with no row: it then
// stays at the datasheet value). Fractions lie in [0.01, 1], overheads in [0, 1 ms].
// Minimisation: coordinate descent, a golden-section search per factor (fractions on a log
// scale), rounds until the objective stops improving (at most 2000). Deterministic: same rows,
// same bits.
#ifndef PERFSIM_SIM_ACCURACY_CALIBRATION_H_
#define PERFSIM_SIM_ACCURACY_CALIBRATION_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "proto/hardware.pb.h"
#include "sim/accuracy/row_model.h"

namespace perfsim {

struct CalibrationRow {
  std::string id;
  const RowModel* model = nullptr;
  double measured = 0;  // in model->unit
};

struct ChipCalibration {
  std::string chip;
  ChipFactors factors;
  // Per factor kind: the ids of the rows that inform it; empty when it was not fitted.
  std::map<FactorKind, std::vector<std::string>> fitted_on;
  // Per fitted overhead: the prior's scale, seconds (see the file comment).
  std::map<FactorKind, double> prior_scale_seconds;
  double objective = 0;  // at the optimum
};

struct Calibration {
  std::map<std::string, ChipCalibration> chips;
  // The chip's fitted factors, or the datasheet's when no row is on that chip.
  ChipFactors For(absl::string_view chip) const;
};

Calibration FitCalibration(absl::Span<const CalibrationRow> rows);

// The `efficiency { ... }` block of a hardware textproto holding `fitted`: every factor, the
// fitted ones with the rows they were fitted on, the others as in `previous` (the file's
// current values), and fitted_on naming `source` and the rows.
std::string EfficiencyBlock(const ChipCalibration& fitted, const EfficiencySpec& previous,
                            absl::string_view source);

// `text` (a hardware textproto) with its top-level `efficiency { ... }` block replaced by
// `block`, or appended when it has none. InvalidArgument when the block cannot be found
// cleanly (an "efficiency {" without its closing "}" at the start of a line).
absl::StatusOr<std::string> ReplaceEfficiencyBlock(absl::string_view text, absl::string_view block);

}  // namespace perfsim

#endif  // PERFSIM_SIM_ACCURACY_CALIBRATION_H_
