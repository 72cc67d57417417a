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
// An overhead the rows could fit is then kept only if its rows demand it out of sample: in
// FactorKind order, each is dropped when the leave-one-out error of the rows it is fitted on
// (the root mean square of their log errors, each row predicted by a fit on all the chip's
// other rows, with the overheads still in) is strictly lower without it. An overhead that no
// leave-one-out fit can fit (two rows: one row spans no length) ties and is kept. A dropped
// overhead is 0 (`perfsim calibrate` writes 0 and says why). Example: the DeepGEMM rows
// (M001-M004) fit a per-group overhead of a few us, but predict each other better without it.
// The fits inside this test do not select again; the leave-one-out column of `perfsim
// accuracy` repeats the whole procedure, selection included, without the row it predicts.
//
// Communication is fitted per link class (nvlink, infiniband, ici, dcn; issue 14): a row
// informs the class whose links bound it at datasheet physics (the slower stage of an
// expert-parallel exchange, the IB or NVLink phase of a collective), so each class is fitted
// only on rows that class bounds. The per-algorithm collective fractions are not fitted and
// are written as 1 (proto/hardware.proto says why).
//
// The API overhead (row_model.h: a fixed cost per call of rows timed around a library's host
// API) is fitted like the other overheads, on the API-timed rows, with the same spread rule
// and prior; those rows do not inform their op class's chip overhead. It is reported (the
// accuracy table, `perfsim calibrate`'s output) but EfficiencyBlock writes it only as a
// comment: it is not a property of the chip, and `perfsim predict` never charges it. When a
// chip's API-timed rows cannot fit it (one row, or rows too alike in length), they inform no
// factor at all: their host cost would otherwise be read as a slow link (GB200's one HybridEP
// row, M072, would set NVLink to 0.45 of peak); `perfsim calibrate` then leaves the file alone.
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

// The out-of-sample test of one overhead (the file comment): the root-mean-square log error of
// the rows it is fitted on, each predicted by a fit on the chip's other rows, with and without
// the overhead.
struct OverheadSelection {
  std::vector<std::string> rows;  // the rows that could fit it
  bool kept = true;
  double loo_rms_log_error_with = 0;
  double loo_rms_log_error_without = 0;
};

struct ChipCalibration {
  std::string chip;
  ChipFactors factors;
  // Per factor kind: the ids of the rows that inform it; empty when it was not fitted (a
  // dropped overhead included).
  std::map<FactorKind, std::vector<std::string>> fitted_on;
  // Per overhead the rows could fit (they inform it and span its spread): whether it was kept.
  std::map<FactorKind, OverheadSelection> overhead_selection;
  // Per fitted overhead: the prior's scale, seconds (see the file comment).
  std::map<FactorKind, double> prior_scale_seconds;
  double objective = 0;  // at the optimum
};

struct Calibration {
  std::map<std::string, ChipCalibration> chips;
  // The chip's fitted factors, or the datasheet's when no row is on that chip.
  ChipFactors For(absl::string_view chip) const;
};

struct FitOptions {
  // false: fit every overhead the rows can fit, without the out-of-sample test (the file
  // comment); what the test itself does inside, exposed so that it can be checked.
  bool select_overheads = true;
  // Factors not fitted at all: they keep their datasheet value (an overhead 0).
  std::vector<FactorKind> excluded;
};

Calibration FitCalibration(absl::Span<const CalibrationRow> rows, const FitOptions& options = {});

// The `efficiency { ... }` block of a hardware textproto holding `fitted`: every EfficiencySpec
// factor, the fitted ones with the rows they were fitted on, the others as in `previous` (the
// file's current values), a comment with the API overhead when one was fitted (never a field),
// and fitted_on naming `source` and the rows.
std::string EfficiencyBlock(const ChipCalibration& fitted, const EfficiencySpec& previous,
                            absl::string_view source);

// `text` (a hardware textproto) with its top-level `efficiency { ... }` block replaced by
// `block`, or appended when it has none. InvalidArgument when the block cannot be found
// cleanly (an "efficiency {" without its closing "}" at the start of a line).
absl::StatusOr<std::string> ReplaceEfficiencyBlock(absl::string_view text, absl::string_view block);

}  // namespace perfsim

#endif  // PERFSIM_SIM_ACCURACY_CALIBRATION_H_
