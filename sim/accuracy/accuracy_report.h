// Output of `perfsim accuracy`: a table for people, JSON for scripts.
//
// JSON: report.AccuracyReport (proto/report.proto documents every field):
//   {"file": "calibration.csv", "rows": [ROW...], "skipped": 0,
//    "summary": {"physics": [SUMMARY...], "calibrated": [...], "leave_one_out": [...]},
//    "factors": [{"chip": "gpu_h800", "factor": "matmul_fraction_of_peak", "value": 0.6,
//                 "chip_property": true, "fitted_on": ["M001", ...], "tested_on": []}, ...]}
//   ROW: {"id", "category", "chip", "unit", "measured", "measured_text", "measured_flagged",
//         "predicted", "error_pct", "physics_predicted", "physics_error_pct", "loo_predicted",
//         "loo_error_pct", "description", "detail", "skipped_reason"}; a skipped row has null
//         predictions and errors and a skipped_reason (null otherwise).
#ifndef PERFSIM_SIM_ACCURACY_ACCURACY_REPORT_H_
#define PERFSIM_SIM_ACCURACY_ACCURACY_REPORT_H_

#include <ostream>

#include "proto/report.pb.h"
#include "sim/accuracy/accuracy.h"

namespace perfsim {

void PrintAccuracyTable(const AccuracyReport& report, std::ostream& out);
void PrintAccuracyJson(const AccuracyReport& report, std::ostream& out);

// The report as printed by PrintAccuracyJson.
report::AccuracyReport AccuracyReportProto(const AccuracyReport& report);

// One line per fitted factor: "gpu_h800  matmul_fraction_of_peak  0.6031  M001 M002 M003 M004";
// a factor that is not a chip property is named "api_overhead_seconds (not written)"; an
// overhead tested out of sample says "not kept" when dropped and has a second line with its
// leave-one-out errors.
void PrintFittedFactors(const Calibration& calibration, std::ostream& out);

}  // namespace perfsim

#endif  // PERFSIM_SIM_ACCURACY_ACCURACY_REPORT_H_
