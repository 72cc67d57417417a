// Fused times of called computations (computation_time.h).
#include "sim/simulator/computation_time.h"

#include <algorithm>
#include <vector>

#include "sim/comm/hlo_collectives.h"
#include "sim/cost/op_counts.h"
#include "sim/cost/trip_count.h"
#include "sim/simulator/fusion.h"
#include "sim/util/status.h"

namespace perfsim {

absl::StatusOr<std::optional<double>> ComputationTimer::CompositeSeconds(
    const Instruction& instruction) {
  // Only these run other computations as code (a fusion is one kernel, costed whole).
  const Opcode op = instruction.opcode();
  if (op == Opcode::kCall) {
    PERFSIM_ASSIGN_OR_RETURN(double s, PassSeconds(instruction.to_apply()));
    return std::optional<double>(s);
  }
  if (op == Opcode::kAsyncStart) {
    if (IsCollectiveInstruction(instruction) || instruction.calls().empty()) {
      return std::optional<double>();
    }
    PERFSIM_ASSIGN_OR_RETURN(double s, PassSeconds(instruction.calls()[0]));
    return std::optional<double>(s);
  }
  if (op == Opcode::kWhile) {
    const double trips = static_cast<double>(StaticTripCount(instruction).value_or(1));
    PERFSIM_ASSIGN_OR_RETURN(double body, PassSeconds(instruction.body()));
    PERFSIM_ASSIGN_OR_RETURN(double condition, PassSeconds(instruction.condition()));
    return std::optional<double>(body * trips + condition * (trips + 1));
  }
  if (op == Opcode::kConditional) {
    double slowest = 0;
    for (const Computation* branch : instruction.branch_computations()) {
      PERFSIM_ASSIGN_OR_RETURN(double s, PassSeconds(branch));
      slowest = std::max(slowest, s);
    }
    return std::optional<double>(slowest);
  }
  return std::optional<double>();
}

absl::StatusOr<double> ComputationTimer::PassSeconds(const Computation* computation) {
  if (computation == nullptr) return 0.0;
  if (auto it = memo_.find(computation); it != memo_.end()) return it->second;
  const FusionPlan plan = PlanFusion(*computation);
  const auto& instructions = computation->instructions();
  absl::flat_hash_map<const Instruction*, size_t> index;
  if (plan.applied) {
    index.reserve(instructions.size());
    for (size_t i = 0; i < instructions.size(); ++i) index[instructions[i].get()] = i;
  }
  double seconds = 0;
  std::vector<bool> operand_interior;
  for (size_t i = 0; i < instructions.size(); ++i) {
    const Instruction& instruction = *instructions[i];
    PERFSIM_ASSIGN_OR_RETURN(std::optional<double> composite, CompositeSeconds(instruction));
    if (composite.has_value()) {
      seconds += *composite;
      continue;
    }
    PERFSIM_ASSIGN_OR_RETURN(OpCost cost, CostInstruction(instruction, chip_, options_));
    if (plan.applied) {
      operand_interior.clear();
      for (const Instruction* operand : instruction.operands()) {
        const auto it = index.find(operand);
        operand_interior.push_back(it != index.end() && plan.interior[it->second]);
      }
      cost = FusedCost(instruction, cost, plan.interior[i], operand_interior);
    }
    seconds += cost.seconds.value_or(0);
  }
  memo_[computation] = seconds;
  return seconds;
}

}  // namespace perfsim
