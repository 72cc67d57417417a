// Rendering a Prediction: the readable table, JSON, and a Chrome/Perfetto trace.
//
//   std::cout << FormatPredictionTable(p);
//   std::cout << PredictionJson(p);
//   WriteFile("step.json", PredictionTrace(p));   // open in ui.perfetto.dev or chrome://tracing
#ifndef PERFSIM_SIM_REPORT_PREDICT_REPORT_H_
#define PERFSIM_SIM_REPORT_PREDICT_REPORT_H_

#include <string>

#include "sim/predict/predict.h"

namespace perfsim {

// Scenario, per-op rows of the slowest device (start, duration, stream, bound, phase, op,
// GFLOP, MB), per-phase subtotals, totals, exposed communication, MFU and HBM use.
std::string FormatPredictionTable(const Prediction& p);

// {"scenario": {...}, "step_seconds", "slowest_device", "compute_busy_seconds",
//  "communication_busy_seconds", "exposed_communication_seconds", "mfu", "model_flops_per_device",
//  "phases": [{"phase","seconds","flops","bytes"}], "memory": {...},
//  "ops": [{"name","opcode","stage","phase","stream","start","seconds","bound","flops","bytes"}]}
std::string PredictionJson(const Prediction& p);

// Trace-event JSON: one process per device (the slowest, device 0, and up to `max_devices`
// in all, evenly spread), one thread per stream (compute, comm); complete ("X") events in µs.
std::string PredictionTrace(const Prediction& p, int max_devices = 8);

}  // namespace perfsim

#endif  // PERFSIM_SIM_REPORT_PREDICT_REPORT_H_
