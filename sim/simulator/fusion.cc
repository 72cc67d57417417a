// Loop and producer fusion of unfused computations (fusion.h).
#include "sim/simulator/fusion.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"

namespace perfsim {

bool LoopFusible(const Instruction& instruction) {
  const Opcode op = instruction.opcode();
  return IsElementwiseUnary(op) || IsElementwiseBinary(op) || op == Opcode::kSelect ||
         op == Opcode::kCompare || op == Opcode::kConvert || op == Opcode::kClamp ||
         op == Opcode::kBroadcast || op == Opcode::kIota || op == Opcode::kConstant;
}

bool FusesProducers(const Instruction& instruction) {
  return instruction.opcode() == Opcode::kDot || instruction.opcode() == Opcode::kReduce;
}

FusionPlan PlanFusion(const Computation& computation) {
  const auto& instructions = computation.instructions();
  FusionPlan plan;
  plan.interior.assign(instructions.size(), false);
  const Module* module = computation.parent();
  if (module != nullptr && module->FindHeaderAttribute("is_scheduled") != nullptr &&
      *module->FindHeaderAttribute("is_scheduled") == "true") {
    return plan;
  }
  for (const auto& instruction : instructions) {
    if (instruction->opcode() == Opcode::kFusion) return plan;
  }
  plan.applied = true;
  absl::flat_hash_map<const Instruction*, int64_t> index;
  index.reserve(instructions.size());
  for (size_t i = 0; i < instructions.size(); ++i) index[instructions[i].get()] = i;
  // users[j]: uses of instruction j; absorbing[j]: uses by consumers that fuse it.
  std::vector<int64_t> users(instructions.size(), 0), absorbing(instructions.size(), 0);
  for (const auto& instruction : instructions) {
    const bool absorbs = LoopFusible(*instruction) || FusesProducers(*instruction);
    for (const Instruction* operand : instruction->operands()) {
      const auto it = index.find(operand);
      if (it == index.end()) continue;
      ++users[it->second];
      if (absorbs) ++absorbing[it->second];
    }
    // A control dependency is a use the fusion must not hide.
    for (const Instruction* predecessor : instruction->control_predecessors()) {
      const auto it = index.find(predecessor);
      if (it != index.end()) ++users[it->second];
    }
  }
  for (size_t i = 0; i < instructions.size(); ++i) {
    plan.interior[i] = LoopFusible(*instructions[i]) && users[i] > 0 &&
                       users[i] == absorbing[i] && instructions[i].get() != computation.root();
  }
  return plan;
}

OpCost FusedCost(const Instruction& instruction, const OpCost& cost, bool interior,
                 const std::vector<bool>& operand_interior) {
  const bool any_operand =
      std::find(operand_interior.begin(), operand_interior.end(), true) != operand_interior.end();
  if ((!interior && !any_operand) || cost.counts.bytes_accessed <= 0 ||
      !cost.seconds.has_value()) {
    return cost;
  }
  OpCost fused = cost;
  OpCounts& counts = fused.counts;
  if (interior) counts.output_bytes = 0;
  double bytes = counts.output_bytes;
  for (size_t k = 0; k < counts.operand_bytes.size(); ++k) {
    if (k < operand_interior.size() && operand_interior[k]) counts.operand_bytes[k] = 0;
    // Only the instruction's own operands: entries past them are not operand reads.
    if (k < operand_interior.size()) bytes += counts.operand_bytes[k];
  }
  counts.bytes_accessed = bytes;
  fused.memory_seconds = cost.memory_seconds * bytes / cost.counts.bytes_accessed;
  fused.overhead_seconds = interior ? 0 : cost.overhead_seconds;
  const double roofline = std::max(fused.compute_seconds, fused.memory_seconds);
  fused.seconds = roofline + fused.overhead_seconds;
  if (*fused.seconds == 0) {
    fused.bound = Bound::kNone;
  } else if (fused.overhead_seconds > roofline) {
    fused.bound = Bound::kOverhead;
  } else {
    fused.bound = fused.compute_seconds >= fused.memory_seconds ? Bound::kCompute : Bound::kMemory;
  }
  return fused;
}

}  // namespace perfsim
