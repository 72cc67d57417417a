// The time of the computations a call, while, conditional or async-start runs, with the
// simulator's rules applied inside them too (simulator.h): loop fusion of unfused computations
// (fusion.h) and trip counts from known_trip_count or the counted-loop pattern.
//
//   ComputationTimer timer(chip, cost_options);
//   PERFSIM_ASSIGN_OR_RETURN(std::optional<double> s, timer.CompositeSeconds(instruction));
//   // s: the while's body x trips + condition x (trips + 1), each a fused pass; nullopt for
//   // an instruction that calls no code (or an async collective: sim/comm times it)
//
// A pass over a computation is the sum of its instructions' times (sim/cost's CostInstruction,
// then FusedCost where PlanFusion fuses), nested composites by these rules; a conditional is
// its slowest branch; a loop of unknown trip count counts one trip. Each computation is timed
// once (memo), so the cost is linear in the module. Recursion follows the call nesting: the
// caller bounds it (SimulateModule checks kMaxCallDepth first).
#ifndef PERFSIM_SIM_SIMULATOR_COMPUTATION_TIME_H_
#define PERFSIM_SIM_SIMULATOR_COMPUTATION_TIME_H_

#include <optional>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "sim/cost/op_cost.h"
#include "sim/hw/chip.h"
#include "sim/ir/instruction.h"

namespace perfsim {


class ComputationTimer {
 public:
  // Both must outlive the timer.
  ComputationTimer(const Chip& chip, const CostOptions& options)
      : chip_(chip), options_(options) {}

  // The fused time of a call, while, conditional or non-collective async-start; nullopt for
  // every other instruction. Errors are CostInstruction's, naming the instruction.
  absl::StatusOr<std::optional<double>> CompositeSeconds(const Instruction& instruction);

  // One pass over `computation` (0 for null).
  absl::StatusOr<double> PassSeconds(const Computation* computation);

 private:
  const Chip& chip_;
  const CostOptions& options_;
  absl::flat_hash_map<const Computation*, double> memo_;
};

}  // namespace perfsim

#endif  // PERFSIM_SIM_SIMULATOR_COMPUTATION_TIME_H_
