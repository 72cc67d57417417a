// The ops whose sizes are run-time values drawn from a routing (simulator.h step 6): grouped
// matmuls and ragged-all-to-alls whose annotations say what their ragged sizes hold
// (proto/annotation.proto RaggedSizes, RaggedTransfer, RoutingShape).
//
// What is routed (everything else, and these without their annotation, keeps sim/cost's static
// time):
//   - ragged-dot (2-D lhs, 1-D group sizes) and perfsim.gmm / perfsim.tgmm custom-calls whose
//     group-sizes operand (operand 2) carries RaggedSizes with a routing: the sizes
//     RaggedGroupSizes (sim/moe/ragged_sizes.h) gives each device, truncated to the rows the
//     buffer has (TruncateGroupSizes: MaxText's _truncate_matrix), timed by CostGroupedMatmul
//     (sim/cost/grouped_matmul.h); a ragged-dot with the spec RaggedDotGroupedSpec gives;
//   - ragged-all-to-all with a RaggedTransfer annotation: each replica group's rows
//     (RaggedExchangeRows) times the operand's row bytes, routed over the topology
//     (RouteTraffic; when every member routes alike, RouteTrafficToEach / FromEach in O(n));
//     each member's duration is its group's time, and its HBM bytes what it reads (every row
//     it sends, its own share included) plus what it writes (every row it receives, its own
//     share too).
// Replicas: when every routed op names one layout over all the module's devices and the
// routing gives every data-parallel replica (ep·tp consecutive devices) the same rows, only
// the first replica is simulated: the others have the same timelines (their ops have the same
// durations, and a collective over replicas keeps its full-group time; restricted to the first
// replica, a group of fewer than two devices waits for no one). Collectives still take their
// times from their full groups on the full topology.
#ifndef PERFSIM_SIM_SIMULATOR_ROUTED_H_
#define PERFSIM_SIM_SIMULATOR_ROUTED_H_

#include <optional>
#include <string>
#include <vector>

#include "sim/cost/cost_types.h"
#include "sim/cost/grouped_matmul.h"
#include "sim/hw/chip.h"
#include "sim/ir/instruction.h"

namespace perfsim {

// One routed op's cost on one device.
struct RoutedWork {
  double seconds = 0;
  double flops = 0;
  double bytes = 0;       // HBM bytes read and written
  double sent_bytes = 0;  // ragged-all-to-all: bytes sent to other devices
  Bound bound = Bound::kNone;
  std::vector<std::string> unknown_rates;
};

// The grouped-matmul spec of a ragged-dot (gmm: rows ragged, the rhs grouped; tgmm: the ragged
// dimension contracted): a grouped-GEMM kernel (no Pallas grid), with, on a TPU, the tiling
// annotated on it (Kernel tm, tk, tn: the ragged_dot_tiling metadata MaxText sets) or
// megablox's default (128, 128, 128) (MaxText's ragged_dot path runs jax.lax.ragged_dot under
// set_xla_metadata(ragged_dot_tiling=...) with the projection's forward tiles, shared/reference/
// backends.md; that the backward's ragged-dots keep them is an assumption); on a GPU the CTA tile ChooseGpuGemmTile picks for m
// split evenly (CostGroupedMatmul picks again on the routed sizes). nullopt for a form the
// grouped model does not read (lhs not 2-D, group sizes not 1-D).
std::optional<GroupedMatmulSpec> RaggedDotGroupedSpec(const Instruction& ragged_dot,
                                                      const Chip& chip);

}  // namespace perfsim

#endif  // PERFSIM_SIM_SIMULATOR_ROUTED_H_
