// Internals of sim/predict shared by its two stages (prepare.cc, evaluate.cc). Not an API.
#ifndef PERFSIM_SIM_PREDICT_PREDICT_INTERNAL_H_
#define PERFSIM_SIM_PREDICT_PREDICT_INTERNAL_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "sim/comm/topology.h"
#include "sim/hw/chip.h"
#include "sim/lowering/lowering.h"
#include "sim/predict/predict.h"
#include "sim/simulator/simulator.h"

namespace perfsim {

struct PreparedStepData {
  PreparedStepData(PredictOptions o, LoweredStep s) : options(std::move(o)), step(std::move(s)) {}
  PredictOptions options;
  // The chip and slice the module is simulated on (the PreparedModule points at them and at
  // step.module: they stay where they are).
  std::unique_ptr<Chip> chip;
  std::unique_ptr<Topology> topology;
  std::string mesh;
  LoweredStep step;
  PreparedModule simulation;
  // Per op of the simulation: its stage ("" when none), and its phase as an index into
  // kPredictPhaseNames.
  std::vector<std::string> stage;
  std::vector<int32_t> phase;
  // Static HBM terms per device.
  double parameters = 0;
  double gradients = 0;
  double optimizer = 0;
  double input_activations = 0;  // x and dy
  double capacity = 0;
  double model_flops_per_device = 0;
  double peak_flops_per_device = 0;
};

struct PredictCache::Impl {
  SimulatorCache simulator;
};

}  // namespace perfsim

#endif  // PERFSIM_SIM_PREDICT_PREDICT_INTERNAL_H_
