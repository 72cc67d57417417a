// The short answer of `perfsim predict`: the step time and what to change first.
//
//   std::vector<Alternative> alts = PredictAlternatives(p);   // a few re-predictions
//   std::cout << FormatPredictionSummary(p, alts);
//
// The summary: the scenario in one line; step time, tokens/s per chip (tokens per step / step
// time / chips), MFU, exposed communication, HBM per device against capacity; the per-phase
// table; the ops that cost most on the slowest device with what bounds them; and what limits
// the step, at most two findings, each from the prediction's own numbers:
//   - HBM over capacity (with the largest halved --batch that fits, re-predicted);
//   - a one-knob change re-predicted (Alternative): ep_ragged_a2a's worst-case receive buffer
//     (--ragged-buffer-factor 1, with the padding fraction of its rows), capacity_einsum's
//     capacity factor (--capacity-factor 1), or another backend; reported with its measured
//     saving when it saves at least 2% of the step;
//   - exposed communication (at least 10% of the step), with the phase that communicates most;
//   - the memory-bound share of the experts phase (at least half of it).
// Findings are ranked by the time they stand for (a measured saving, or the exposed or
// memory-bound time); when none applies, the step's compute share and MFU are the finding.
// The full per-op timeline is FormatPredictionTable (predict_report.h).
#ifndef PERFSIM_SIM_REPORT_PREDICT_SUMMARY_H_
#define PERFSIM_SIM_REPORT_PREDICT_SUMMARY_H_

#include <string>
#include <vector>

#include "sim/predict/predict.h"

namespace perfsim {

// The prediction's scenario with one knob changed, re-predicted (without per-op detail).
struct Alternative {
  enum class Kind { kRaggedBufferFactor, kCapacityFactor, kBackend, kSmallerBatch };
  Kind kind;
  std::string flags;  // what the user would add: "--ragged-buffer-factor 1"
  double step_seconds = 0;
  MemoryUse memory;
};

// The alternatives that apply to `p`'s scenario and predict without error: the knobs above,
// every other backend that accepts the scenario, and, when HBM is over capacity, the largest
// batch halved from p's that fits. Deterministic; each is one prediction of a few ms.
std::vector<Alternative> PredictAlternatives(const Prediction& p);

// At most two sentences on what limits the step, most time first (see the file comment).
std::vector<std::string> StepLimiters(const Prediction& p,
                                      const std::vector<Alternative>& alternatives);

// The summary above; `top_ops` rows of the costliest ops.
std::string FormatPredictionSummary(const Prediction& p,
                                    const std::vector<Alternative>& alternatives, int top_ops = 6);

// Chips of the physical slice `mesh` ("4x8x8" -> 256, "8" -> 8); 0 when it does not parse.
int64_t ChipsOfMesh(const std::string& mesh);

}  // namespace perfsim

#endif  // PERFSIM_SIM_REPORT_PREDICT_SUMMARY_H_
