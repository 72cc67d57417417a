// Loop fusion of an unfused (pre-optimisation) computation, as XLA's fusion passes would do it,
// applied to per-instruction costs. The simulator (simulator.h) runs it on the entry
// computation; sim/predict's own copy (prepare.cc) is to be pointed here.
//
//   FusionPlan plan = PlanFusion(*module.entry());
//   if (plan.applied && plan.interior[i]) ...      // instruction i never reaches HBM
//   OpCost fused = FusedCost(instruction, cost, plan, index_of_operands);
//
// Two rules decide that a producer's result stays on chip (is "interior"):
//   1. loop fusion: an elementwise op, convert, broadcast, iota or constant (LoopFusible) whose
//      users are all loop-fusible is fused into them;
//   2. producer fusion (issue 12, item 4): a loop-fusible producer whose users are loop-fusible
//      ops, dots or reduces (FusesProducers) fuses into them too, as XLA fuses a convert or a
//      broadcast into the dot or reduce that reads it.
// The root is never interior. An interior instruction is not written to HBM and pays no kernel
// launch; it still reads its own non-interior operands and does its arithmetic, so the fused
// kernel's reads of the producer's inputs are charged on the producer's row ("the consumer
// reads the producer's inputs instead"). A consumer does not read an interior operand.
//
// A computation that already holds a fusion instruction, or belongs to a module whose header
// says is_scheduled=true, was compiled by XLA, which made its own fusion decisions: PlanFusion
// leaves it alone (applied = false, nothing interior).
#ifndef PERFSIM_SIM_SIMULATOR_FUSION_H_
#define PERFSIM_SIM_SIMULATOR_FUSION_H_

#include <cstdint>
#include <vector>

#include "sim/cost/cost_types.h"
#include "sim/ir/instruction.h"

namespace perfsim {

// Ops XLA's loop fusion puts into one kernel with their elementwise consumers.
bool LoopFusible(const Instruction& instruction);

// Consumers that take loop-fusible producers into their own kernel: dot and reduce.
bool FusesProducers(const Instruction& instruction);

struct FusionPlan {
  // Per instruction of the computation, in its instruction order: the result stays on chip.
  std::vector<bool> interior;
  // False for a computation that already has fusions (compiled): nothing is interior.
  bool applied = false;
};

FusionPlan PlanFusion(const Computation& computation);

// The cost of `instruction` after fusion, from its unfused cost: when it is interior its
// output write and its kernel overhead go; reads of interior operands (operand_interior[k])
// go. The memory time scales with the bytes kept, seconds = max(compute, memory) + overhead,
// and the bound follows. Unchanged when nothing of it is fused (or it moves no bytes).
OpCost FusedCost(const Instruction& instruction, const OpCost& cost, bool interior,
                 const std::vector<bool>& operand_interior);

}  // namespace perfsim

#endif  // PERFSIM_SIM_SIMULATOR_FUSION_H_
