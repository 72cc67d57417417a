// The cost of one instruction on one device of a chip: counts plus roofline time.
//
//   PERFSIM_ASSIGN_OR_RETURN(Chip chip, ResolveChip("tpu_v5p"));
//   PERFSIM_ASSIGN_OR_RETURN(Topology topology, Topology::Create(chip, "2x2x2"));
//   CostOptions options{.mode = CostMode::kTrue, .num_devices = 8, .topology = &topology};
//   PERFSIM_ASSIGN_OR_RETURN(OpCost cost, CostInstruction(*instruction, chip, options));
//   cost.seconds;  // e.g. 2.3e-06
//   cost.bound;    // Bound::kMemory
//
// Counts follow options.mode (op_counts.h). Time always comes from the true-cost work:
//   kernels (every instruction that runs code: elementwise ops, dots, fusions, copies, ...)
//     compute = matrix-unit time (dots, ragged-dots, convolutions, grouped matmuls: tile
//               padding and waves, roofline.h) + vector time (flops at
//               vector_f32_flops_per_second) + transcendental time (transcendentals at
//               transcendentals_per_second), summed over the fused instructions of a fusion;
//               a dot with no free dimension on one side or nothing to contract (m, n or k
//               is 1: a matrix-vector product, an outer product) is vector work, 2·b·m·n·k
//               flops without tile padding, as XLA strength-reduces it to multiply + reduce;
//     memory  = true bytes / (HBM bandwidth * efficiency.hbm_fraction_of_peak);
//     seconds = max(compute, memory) + kernel_overhead_seconds.
//   perfsim.gmm / perfsim.tgmm / perfsim.fused_ffn: the grouped-matmul model (grouped_matmul.h).
//   collectives (and -start/-done, async wrappers of them): sim/comm on options.topology;
//     bound communication; -done costs 0 (its time is on the start). Without a topology they
//     are not timed (seconds = nullopt).
//   call, async-start of a computation: the sum over the callee's instructions; while: body
//     times the trip count plus condition times (trip count + 1), the count from
//     known_trip_count or the counted-loop pattern (trip_count.h StaticTripCount), one of each
//     when the trip count is unknown (in both modes: the time is the true one); conditional: the
//     slowest branch. Untimed when any instruction inside is.
//   parameter, constant, get-tuple-element, tuple, bitcast, a transpose or reshape that is a
//     bitcast, a dynamic-slice / dynamic-update-slice (or a fusion of one) of a contiguous
//     layer (op_counts.h), after-all, add-dependency, domain, opt-barrier, partition-id, replica-id, the
//     -done half of copies, sends, receives and async ops, and annotation custom-calls:
//     0 seconds, bound none.
// Where the chip has no figure for a rate an instruction needs, that part of the work is left
// out and the field is listed in unknown_rates.
#ifndef PERFSIM_SIM_COST_OP_COST_H_
#define PERFSIM_SIM_COST_OP_COST_H_

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "sim/comm/topology.h"
#include "sim/cost/cost_types.h"
#include "sim/hw/chip.h"
#include "sim/ir/instruction.h"

namespace perfsim {

// What one costing pass has already worked out: the time of each called computation and the
// counts of each instruction, so that a computation called from many sites is costed once and
// nested calls are costed callees first, with an explicit stack instead of recursion. Use one
// memo for one chip and one CostOptions (a module's instructions); it must outlive the calls.
class CostMemo {
 public:
  CostMemo();
  ~CostMemo();
  CostMemo(const CostMemo&) = delete;
  CostMemo& operator=(const CostMemo&) = delete;

  struct State;  // op_cost.cc
  State& state() { return *state_; }

 private:
  std::unique_ptr<State> state_;
};

struct CostOptions {
  CostMode mode = CostMode::kTrue;
  // Participants of a collective whose replica_groups are empty, for its counts.
  int64_t num_devices = 1;
  // The slice collectives run on; null leaves them untimed.
  const Topology* topology = nullptr;
  // Shared across the calls of one pass (module_cost.cc); null: each call keeps its own.
  CostMemo* memo = nullptr;
};

// InvalidArgument for a malformed perfsim.gmm/tgmm or a collective sim/comm cannot place on
// the topology (e.g. device ids beyond it).
absl::StatusOr<OpCost> CostInstruction(const Instruction& instruction, const Chip& chip,
                                       const CostOptions& options);

}  // namespace perfsim

#endif  // PERFSIM_SIM_COST_OP_COST_H_
