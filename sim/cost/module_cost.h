// The cost of a whole module: one row per instruction of the entry computation, and totals.
//
//   PERFSIM_ASSIGN_OR_RETURN(ModuleCost cost,
//                            CostModule(*module, chip, {.mode = CostMode::kXlaCompatible}));
//   cost.totals.flops;        // what JAX's cost_analysis()["flops"] says for the module
//   cost.seconds;             // sum of the rows' times: the module run op after op
//
// Rows are the entry computation's instructions in text order; a fusion, call, while or
// conditional is one row that includes its called computations (as XLA reports them). Totals
// are XLA's module totals in xla-compatible mode (float32 sums in XLA's visiting order, so they
// match XLA to the bit) and plain sums in true mode. `seconds` is serial time: overlap of
// communication with compute is the schedule's business (sim/schedule).
#ifndef PERFSIM_SIM_COST_MODULE_COST_H_
#define PERFSIM_SIM_COST_MODULE_COST_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "sim/comm/topology.h"
#include "sim/cost/cost_types.h"
#include "sim/hw/chip.h"
#include "sim/ir/instruction.h"

namespace perfsim {

struct ModuleCostOptions {
  CostMode mode = CostMode::kTrue;
  // Devices the module runs on (collective groups, the slice collectives are timed on): the
  // slice must have exactly this many. 0 takes ModuleDeviceCount, rounded up to a slice the
  // chip allows.
  int64_t num_devices = 0;
};

struct InstructionCost {
  const Instruction* instruction = nullptr;
  OpCost cost;
};

struct ModuleCost {
  std::vector<InstructionCost> instructions;
  OpCounts totals;
  double seconds = 0;                // sum over the timed rows
  int64_t untimed_instructions = 0;  // rows with no time (see OpCost::seconds)
  std::vector<std::string> unknown_rates;  // union over the rows
  int64_t num_devices = 1;
  // The slice collectives were timed on, e.g. "tpu_v5p 2x2x2 ..."; empty when the module has
  // no collective.
  std::string topology;
};

// Devices a module names: replica_count x num_partitions from its header, or more when a
// replica group or source_target_pair of some collective names a higher device id (a
// shard_map module lowered by JAX has no counts in its header).
int64_t ModuleDeviceCount(const Module& module);

// A slice of `chip` with `devices` JAX devices: GPU "N"; TPU: devices / devices_per_chip chips
// over the chip's torus axes, as even as possible (8 chips on a 3D torus: "2x2x2"; 4: "2x2x1").
// InvalidArgument when the count is not positive or not a whole number of chips.
absl::StatusOr<std::string> SliceShapeForDevices(const Chip& chip, int64_t devices);

// The slice collectives are timed on for `devices` devices: SliceShapeForDevices when the chip's
// slice rules allow that shape; otherwise, with `allow_larger`, the smallest larger device count
// they allow (30 GPUs in 8-GPU NVLink domains: 32), so that every device id the module names
// exists, and without it the error. Fewer devices than one chip has (1 device of a TPU v7x)
// gives a one-chip slice of that many.
absl::StatusOr<Topology> TopologyForDevices(const Chip& chip, int64_t devices,
                                            bool allow_larger = true);

// InvalidArgument for a module without an entry computation, a bad device count, a collective
// naming a device id at or beyond kMaxSliceDevices (refused before any slice is built or
// searched for), or an instruction CostInstruction rejects (the message names it).
absl::StatusOr<ModuleCost> CostModule(const Module& module, const Chip& chip,
                                      const ModuleCostOptions& options);

}  // namespace perfsim

#endif  // PERFSIM_SIM_COST_MODULE_COST_H_
