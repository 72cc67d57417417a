// Output of `perfsim accuracy`: a table for people, JSON for scripts.
//
// JSON (one object):
//   {"file": "calibration.csv", "rows": [ROW...], "skipped": 0,
//    "summary": {"physics": [SUMMARY...], "calibrated": [...], "leave_one_out": [...]},
//    "factors": [{"chip": "gpu_h800", "factor": "matmul_fraction_of_peak", "value": 0.6,
//                 "chip_property": true, "fitted_on": ["M001", ...]}, ...]}
//   An overhead that the rows could fit was tested out of sample (calibration.h) and has
//   "kept", "loo_rms_log_error_with", "loo_rms_log_error_without" and "tested_on" (row ids);
//   one not kept has "value": 0 and "fitted_on": [].
//   chip_property is false for a row-class term that `perfsim calibrate` does not write into
//   the hardware file ("api_overhead_seconds": the host-API cost of API-timed rows,
//   sim/accuracy/row_model.h).
//   ROW: {"id", "category", "chip", "unit", "measured", "measured_text", "measured_flagged",
//         "predicted", "error_pct",                  (calibrated in sample, see accuracy.h)
//         "physics_predicted", "physics_error_pct", "loo_predicted", "loo_error_pct",
//         "description", "detail", "skipped_reason"}
//     error_pct = (predicted - measured) / measured * 100, signed; for a skipped row every
//     prediction and error is null and skipped_reason says why (null otherwise).
//   SUMMARY: {"scope", "count", "median_abs_error_pct", "p90_abs_error_pct", "worst_id",
//             "worst_error_pct"}
#ifndef PERFSIM_SIM_ACCURACY_ACCURACY_REPORT_H_
#define PERFSIM_SIM_ACCURACY_ACCURACY_REPORT_H_

#include <ostream>

#include "sim/accuracy/accuracy.h"

namespace perfsim {

void PrintAccuracyTable(const AccuracyReport& report, std::ostream& out);
void PrintAccuracyJson(const AccuracyReport& report, std::ostream& out);

// One line per fitted factor: "gpu_h800  matmul_fraction_of_peak  0.6031  M001 M002 M003 M004";
// a factor that is not a chip property is named "api_overhead_seconds (not written)"; an
// overhead tested out of sample says "not kept" when dropped and has a second line with its
// leave-one-out errors.
void PrintFittedFactors(const Calibration& calibration, std::ostream& out);

}  // namespace perfsim

#endif  // PERFSIM_SIM_ACCURACY_ACCURACY_REPORT_H_
