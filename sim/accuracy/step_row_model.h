// An e2e_train row's prediction: the whole step composed by sim/step (step_time.h) from its
// blocks simulated on the chip with the given efficiency factors.
//
//   PERFSIM_ASSIGN_OR_RETURN(StepRowPrediction p, PredictStepRow(row, ChipFactors()));
//   p.value;   // in the row's metric and unit (s, tokens/s per device, model TFLOP/s per device)
//   p.detail;  // "step 13.2 s: attention 2.1 s, MoE 7.9 s, ..., bubble 1.0 s"
#ifndef PERFSIM_SIM_ACCURACY_STEP_ROW_MODEL_H_
#define PERFSIM_SIM_ACCURACY_STEP_ROW_MODEL_H_

#include <string>

#include "absl/status/statusor.h"
#include "sim/accuracy/row_model.h"
#include "sim/accuracy/scenario.h"

namespace perfsim {

struct StepRowPrediction {
  double value = 0;
  std::string detail;
};

absl::StatusOr<StepRowPrediction> PredictStepRow(const StepRowScenario& row,
                                                 const ChipFactors& factors);

}  // namespace perfsim

#endif  // PERFSIM_SIM_ACCURACY_STEP_ROW_MODEL_H_
