// Internal: the static liveness pass behind the memory budget (MemoryNeed in interpreter.h).
//
// Before any device runs, PlanDeviceMemory replays the evaluator's schedule without data:
// every computation the entry reaches, in the order its ComputationPlan runs it, each value
// dropped after its last use as DeviceEvaluator::Evaluate drops it. Values are followed down
// to their array buffers so that a buffer several values share counts once, as the
// evaluator's shared Literals do:
//   - parameter, tuple, get-tuple-element, copy, opt-barrier, domain, add-dependency,
//     set-dimension-size, the -done halves of async pairs, real() of a real array and the
//     sharding custom calls hand their operand's buffers on;
//   - call, fusion and async-start hand on what their computation's root hands back, and count
//     that computation's own peak while they run;
//   - while counts the state carried from the previous iteration (every leaf the body does not
//     hand back unchanged) on top of the larger of its condition's and body's peaks;
//     conditional counts its largest branch, and its result as new buffers;
//   - ops that call a scalar computation per element (reduce, reduce-window, map, sort,
//     scatter, select-and-scatter, all-reduce, reduce-scatter) count the scalar arguments,
//     result and peak of that computation on top of their result; reduce-scatter also the
//     full fold it cuts its block from, array all-to-all one block;
//   - every other op allocates its result (a collective's result counts as the device's own,
//     also where the evaluator shares a peer's buffer).
// Constants count once per device for the whole run: the evaluator materialises them before
// the device starts. Working storage that op implementations keep outside Values (a dot's
// packed operands, a sort's permutation) is not counted.
//
// Nothing here depends on data, thread count or timing. On one device the result bounds the
// BufferCounter's peak from above (tests check it); every modelled approximation (a while
// loop's carried state, a conditional's result, per-element call scratch) errs upward. Results
// written into a dying operand's buffer (elementwise ops and dynamic-update-slice, when no
// other value holds it: DeviceEvaluator::TakeOperandBuffer) are still counted as new buffers:
// whether a buffer is shared depends on how inputs are handed to the run, and the budget
// stays a bound that does not.
#ifndef PERFSIM_SIM_INTERP_MEMORY_PLAN_H_
#define PERFSIM_SIM_INTERP_MEMORY_PLAN_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "sim/interp/evaluator.h"
#include "sim/ir/instruction.h"

namespace perfsim {
namespace interp {

struct DeviceMemoryPlan {
  // One device's constants plus the peak of its live buffers, inputs (entry parameters) not
  // included. Both saturate at kInt64Max (sim/util/checked_math.h): a program that holds more
  // than int64 bytes at once reports kInt64Max, never a wrapped small number.
  int64_t peak_bytes = 0;
  int64_t constant_bytes = 0;
  // The instruction running at the peak, through the calls that lead to it:
  // "fusion.3" or "while.2 > dot.7" (dot.7 runs in the body of while.2).
  std::string peak_at;
  // The constants of every computation the entry reaches, in first-use order.
  std::vector<const Instruction*> constants;
};

// The plan of one device's program. `plans` are the evaluator's (BuildPlans);
// `num_devices` bounds the group size of collectives whose replica groups are implicit.
absl::StatusOr<DeviceMemoryPlan> PlanDeviceMemory(
    const Module& module, const absl::flat_hash_map<const Computation*, ComputationPlan>& plans,
    int64_t num_devices);

}  // namespace interp
}  // namespace perfsim

#endif  // PERFSIM_SIM_INTERP_MEMORY_PLAN_H_
