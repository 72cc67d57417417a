// A moe_block / moe_layer_fused row's prediction: the layer simulated whole by sim/predict.
//
//   PERFSIM_ASSIGN_OR_RETURN(BlockPrediction p, PredictBlock(block, ChipFactors()));
//   p.value;   // the forward step time in the row's unit (e.g. 14.7 for a 14.7 ms layer)
//   p.detail;  // "router 0.36 ms, permute 0.88 ms, experts 10.46 ms, combine 2.96 ms"
//
// The chip is the built-in one with every EfficiencySpec field set from `factors`
// (ChipWithFactors, row_model.h): ChipFactors() is datasheet physics, a fitted Calibration's
// factors give the calibrated prediction. Unlike a kernel row, a block row is not a closed-form
// function of the factors, so each prediction is a fresh simulation (a few milliseconds).
#ifndef PERFSIM_SIM_ACCURACY_BLOCK_MODEL_H_
#define PERFSIM_SIM_ACCURACY_BLOCK_MODEL_H_

#include <string>

#include "absl/status/statusor.h"
#include "sim/accuracy/row_model.h"
#include "sim/accuracy/scenario.h"

namespace perfsim {

struct BlockPrediction {
  double value = 0;    // in block.unit
  std::string detail;  // per-phase busy time of the slowest device
};

// InvalidArgument when the simulator refuses the scenario (e.g. a layer that does not fit).
absl::StatusOr<BlockPrediction> PredictBlock(const BlockScenario& block,
                                             const ChipFactors& factors);

}  // namespace perfsim

#endif  // PERFSIM_SIM_ACCURACY_BLOCK_MODEL_H_
