// Per-device times of the instructions whose sizes are run-time values drawn from a routing
// (simulator.h step 6): grouped matmuls and ragged-all-to-alls whose annotations say what
// their ragged sizes hold (proto/annotation.proto RaggedSizes, RaggedTransfer, RoutingShape).
//
//   RoutedTimer timer(chip, topology, routing_spec, /*num_devices=*/8);
//   PERFSIM_ASSIGN_OR_RETURN(std::optional<RoutedTime> t, timer.Time(instruction));
//   if (t.has_value()) t->work[t->work_of_device[3]].seconds;   // device 3's duration
//
// What is routed (everything else, and these without their annotation, returns nullopt and
// keeps sim/cost's static time):
//   - ragged-dot (2-D lhs, 1-D group sizes) and perfsim.gmm / perfsim.tgmm custom-calls whose
//     group-sizes operand (operand 2) carries RaggedSizes with a routing: the sizes
//     RaggedGroupSizes (sim/moe/ragged_sizes.h) gives each device, truncated to the rows the
//     buffer has (TruncateGroupSizes), timed by CostGroupedMatmul (sim/cost/grouped_matmul.h);
//     a ragged-dot as XLA's native ragged-dot with the tiling RaggedDotGroupedSpec gives;
//   - ragged-all-to-all with a RaggedTransfer annotation: each replica group's rows
//     (RaggedExchangeRows) times the operand's row bytes, routed over the topology
//     (RouteTraffic); each member's duration is its group's time, and its HBM bytes what it
//     reads (every row it sends, its own share included) plus what it writes (every row it
//     receives, its own share too).
// These are sim/predict's rules (evaluate.cc), so that `lower` -> `predict --hlo --routing R`
// times these ops as `predict --routing R` does.
//
// Errors: InvalidArgument naming the instruction for an annotated routing that is malformed
// (RoutingLayout::FromProto), whose devices (token_shards · tp) are not the module's, or that
// the routing spec cannot fill (a routing file of the wrong width or row count).
#ifndef PERFSIM_SIM_SIMULATOR_ROUTED_H_
#define PERFSIM_SIM_SIMULATOR_ROUTED_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "sim/comm/topology.h"
#include "sim/cost/cost_types.h"
#include "sim/cost/grouped_matmul.h"
#include "sim/hw/chip.h"
#include "sim/ir/instruction.h"
#include "sim/moe/ragged_sizes.h"
#include "sim/moe/routing.h"

namespace perfsim {

struct RoutedWork {
  double seconds = 0;
  double flops = 0;
  double bytes = 0;       // HBM bytes read and written
  double sent_bytes = 0;  // ragged-all-to-all: bytes sent to other devices
  Bound bound = Bound::kNone;
  std::vector<std::string> unknown_rates;
};

struct RoutedTime {
  std::vector<RoutedWork> work;         // distinct costs
  std::vector<int32_t> work_of_device;  // per device: its entry in `work`
};

// The grouped-matmul spec of a ragged-dot (gmm: rows ragged, the rhs grouped; tgmm: the ragged
// dimension contracted), as sim/predict costs it: XLA's native ragged-dot (no Pallas grid),
// with, on a TPU, the tiling annotated on it (Kernel tm, tk, tn: the ragged_dot_tiling metadata
// MaxText sets) or megablox's default (128, 128, 128); on a GPU the CTA tile ChooseGpuGemmTile
// picks for m split evenly (CostGroupedMatmul picks again on the routed sizes). nullopt for a
// form the grouped model does not read (lhs not 2-D, group sizes not 1-D). sim/predict's
// PrepareStep uses it too.
std::optional<GroupedMatmulSpec> RaggedDotGroupedSpec(const Instruction& ragged_dot,
                                                      const Chip& chip);

class RoutedTimer {
 public:
  // All must outlive the timer. num_devices: the module's (simulator.h).
  RoutedTimer(const Chip& chip, const Topology& topology, const RoutingSpec& routing,
              int64_t num_devices)
      : chip_(chip), topology_(topology), routing_(routing), num_devices_(num_devices) {}

  // nullopt for an instruction that is not routed (the file comment).
  absl::StatusOr<std::optional<RoutedTime>> Time(const Instruction& instruction);

 private:
  struct Routed {
    RoutingLayout layout;
    RoutingMatrix matrix;
  };
  // The layout and matrix of an annotated routing shape, built once per distinct shape.
  absl::StatusOr<const Routed*> RoutingFor(const Instruction& instruction,
                                           const RoutingShape& shape);
  absl::StatusOr<std::optional<RoutedTime>> GroupedMatmul(const Instruction& instruction);
  absl::StatusOr<std::optional<RoutedTime>> RaggedAllToAll(const Instruction& instruction);

  const Chip& chip_;
  const Topology& topology_;
  const RoutingSpec& routing_;
  int64_t num_devices_;
  std::map<std::string, std::unique_ptr<Routed>> routed_;  // by the serialised shape
};

}  // namespace perfsim

#endif  // PERFSIM_SIM_SIMULATOR_ROUTED_H_
