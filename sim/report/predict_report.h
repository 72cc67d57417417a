// Rendering a Prediction: the readable table, JSON, and a Chrome/Perfetto trace.
//
//   std::cout << FormatPredictionTable(p);
//   std::cout << PredictionJson(p);
//   WriteFile("step.json", PredictionTrace(p));   // open in ui.perfetto.dev or chrome://tracing
#ifndef PERFSIM_SIM_REPORT_PREDICT_REPORT_H_
#define PERFSIM_SIM_REPORT_PREDICT_REPORT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/report.pb.h"
#include "sim/predict/predict.h"

namespace perfsim {

// Scenario, per-op rows of the slowest device (start, duration, stream, bound, stage, op,
// GFLOP, HBM MB = bytes read and written in HBM, net MB = bytes sent to other devices; a
// duration marked '*' is a lower bound: the chip lacks a rate the op needs), per-phase
// subtotals, totals, exposed communication, MFU and HBM use.
std::string FormatPredictionTable(const Prediction& p);

// The scenario in one line, the first line of both reports: model, phase, batch and tokens,
// backend, parallelism, chip, slice and routing. The summary names the parallelism's axes
// that are not 1 ("dp=2,ep=256"); the timeline all of them, after "backend".
enum class ScenarioLineStyle { kSummary, kTimeline };
std::string PredictionScenarioLine(const Prediction& p, ScenarioLineStyle style);

// The prediction as a report.PredictReport (proto/report.proto documents every field): the
// scenario, step time and its parts, MFU, per-phase totals, HBM use and the slowest device's
// ops.
report::PredictReport PredictionReport(const Prediction& p);

// `predict --format=json`: PredictionReport(p) as ReportJson prints it (sim/util/proto_format.h).
std::string PredictionJson(const Prediction& p);

// Which devices a trace shows (device ids of the whole mesh; a device outside the simulated
// ones shows the timeline of its twin d % p.schedule.num_devices(), predict.h).
struct TraceDevices {
  bool all = false;          // every device of the mesh (512 on the default: a large file)
  std::vector<int64_t> ids;  // these devices
  // Neither: the default sample, the slowest device, device 0 and up to `max_devices` in all,
  // spread evenly over the simulated devices.
  int max_devices = 8;
};

// `--trace-devices` text: "all", or ids and ranges "0,7,100-103". InvalidArgument:
// "--trace-devices: expected all, or device ids and ranges in [0, 512) such as 0,7,100-103;
// got '600'".
absl::StatusOr<TraceDevices> ParseTraceDevices(absl::string_view text, int64_t num_devices);

// Trace-event JSON: one process per device, one thread per stream (compute, comm); complete
// ("X") events in µs. Needs a Prediction made with detail (the schedule).
std::string PredictionTrace(const Prediction& p, const TraceDevices& devices = {});

}  // namespace perfsim

#endif  // PERFSIM_SIM_REPORT_PREDICT_REPORT_H_
