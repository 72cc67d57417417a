// How many times a while loop runs its body, when that is known before running it.
//
//   std::optional<int64_t> trips = StaticTripCount(*while_instruction);   // e.g. 8
//
// Two sources, in this order:
//   1. backend_config known_trip_count, which XLA's passes write on the loops of an optimised
//      module: {"known_trip_count":{"n":"8"}, ...} -> 8 (KnownTripCount).
//   2. The counted loop every `lax.scan` / `fori_loop` lowers to, before XLA has annotated it
//      (CountedLoopTrips): the condition's root is `compare(gte(p, k), constant)` (either
//      order; or a fusion whose fused root compares its two parameters, fed with those two, as
//      XLA:CPU wraps a lone compare), the body's root a tuple whose element k is
//      `add(gte(p, k), constant)` (either order) or `subtract(gte(p, k), constant)`, and the
//      loop's operand a tuple whose element k is a constant. The counter must be a signed
//      integer; the count is computed exactly (in 128 bits), so a loop whose counter would
//      wrap before it ends is not recognised.
// Anything else is nullopt: the caller decides (sim/cost counts such a loop once, the
// interpreter's compute budget treats its count as a lower bound).
//
// Used by the cost model (op_counts.cc, op_cost.cc), the interpreter's compute budget
// (sim/interp/compute_plan.h) and the simulator, so that they all agree on a loop's count.
#ifndef PERFSIM_SIM_COST_TRIP_COUNT_H_
#define PERFSIM_SIM_COST_TRIP_COUNT_H_

#include <cstdint>
#include <optional>

#include "sim/ir/instruction.h"

namespace perfsim {

// backend_config known_trip_count of a while loop, e.g. {"known_trip_count":{"n":"5"}} -> 5;
// nullopt when absent, unreadable or negative (sim/ir/backend_config.h KnownTripCountOf, XLA's
// JSON read with protobuf's parser).
std::optional<int64_t> KnownTripCount(const Instruction& while_instruction);

// The counted-loop pattern above, ignoring backend_config.
std::optional<int64_t> CountedLoopTrips(const Instruction& while_instruction);

// KnownTripCount, else CountedLoopTrips.
std::optional<int64_t> StaticTripCount(const Instruction& while_instruction);

}  // namespace perfsim

#endif  // PERFSIM_SIM_COST_TRIP_COUNT_H_
