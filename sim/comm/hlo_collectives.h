// Costing one HLO collective instruction on a topology. The entry point sim/cost calls.
//
//   PERFSIM_ASSIGN_OR_RETURN(Topology t, Topology::Create(chip, "4x4x4"));
//   if (IsCollectiveInstruction(instruction)) {
//     PERFSIM_ASSIGN_OR_RETURN(CollectiveCost c, CostCollectiveInstruction(instruction, t));
//     c.seconds;  // time of the slowest group; 0 for *-done (the time is on the -start)
//   }
//
// Handles all-gather, all-reduce, reduce-scatter, all-to-all (array and tuple forms),
// collective-permute, ragged-all-to-all, collective-broadcast, their -start forms, and
// async-start whose called computation holds one of them. *-done, async-update and async-done
// cost 0. Anything else is InvalidArgument ("expected a collective; got add").
//
// Bytes come from the shapes (dense bytes per element, layouts ignored):
//   all-gather       the result per device = sum of operand bytes x group size
//   reduce-scatter, all-reduce   sum of operand bytes
//   collective-broadcast         sum of operand bytes, costed as an all-reduce (scatter from
//                                the root, then all-gather: the same bytes per link)
//   all-to-all                   sum of operand bytes (the send buffer)
//   collective-permute           operand 0, per source -> target pair
//   ragged-all-to-all            see RaggedTraffic below
//
// Device ids. Replica groups and source_target_pairs are read in XLA's id space, as the
// interpreter does (XLA's CollectiveOpGroupMode, sim/ir/collective_groups.h): without
// channel_id they are replica ids; with channel_id, partition ids for all-to-all,
// ragged-all-to-all, collective-permute and collective-broadcast, replica ids times every
// partition for all-reduce, all-gather and reduce-scatter (cross-replica-and-partition), and
// global ids with use_global_device_ids. The
// module's replica_count and num_partitions (header; 1 when absent) give the global id
// replica * num_partitions + partition, which is the topology's device id (row-major,
// topology.h); a module of fewer devices than the topology runs on its first ones, one of
// more is InvalidArgument. Empty replica_groups mean one group of all ids of the mode. When the
// module gives neither count, ids are device ids and an empty group list means every device of
// the topology. Ids out of range are InvalidArgument.
//
// Groups run at once (SPMD): the cost is that of the slowest group. Routed collectives
// (collective-permute, ragged-all-to-all) route every group's flows together.
//
// ragged-all-to-all: the bytes each device sends to each peer depend on runtime sizes. Given
// `traffic` (one matrix over all devices, bytes), its entries within each group are used.
// Otherwise RaggedTraffic says what to assume:
//   kUniformInput (default) every device sends its whole input buffer (operand 0), split
//                 evenly over the group (its own share stays local);
//   kFullOutput   every device receives a full output buffer (operand 1), evenly from the
//                 group: the most a receiver can take, the worst balanced case.
#ifndef PERFSIM_SIM_COMM_HLO_COLLECTIVES_H_
#define PERFSIM_SIM_COMM_HLO_COLLECTIVES_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "sim/comm/collectives.h"
#include "sim/comm/topology.h"
#include <memory>

#include "sim/comm/traffic.h"
#include "sim/ir/instruction.h"
#include "sim/ir/opcode.h"

namespace perfsim {

enum class RaggedTraffic { kUniformInput, kFullOutput };

// Group-collective costs of one module already worked out, by what determines them: the
// collective, its payload, its replica groups and their mode (the module's header and the
// topology are the same for every instruction of one pass). A lowered step's all-gathers and
// reduce-scatters of equally sharded weights then cost one analysis. One memo per module and
// topology; not thread-safe.
class CollectiveTimeMemo {
 public:
  CollectiveTimeMemo();
  ~CollectiveTimeMemo();
  CollectiveTimeMemo(const CollectiveTimeMemo&) = delete;
  CollectiveTimeMemo& operator=(const CollectiveTimeMemo&) = delete;

  struct State;  // hlo_collectives.cc
  State& state() { return *state_; }

 private:
  std::unique_ptr<State> state_;
};

struct CollectiveCostOptions {
  RaggedTraffic ragged_traffic = RaggedTraffic::kUniformInput;
  // Bytes between all devices of the topology for ragged-all-to-all; null = assume as above.
  const TrafficMatrix* traffic = nullptr;
  // Shared by the calls of one pass over one module on one topology; null: no memo.
  CollectiveTimeMemo* memo = nullptr;
};

struct CollectiveCost {
  double seconds = 0;  // slowest group, fixed cost included; 0 for *-done
  // Payload per device the formula was given (see the table above); for routed collectives
  // the most bytes any device sends.
  double bytes_per_device = 0;
  int64_t group_size = 0;  // devices per group (the largest group)
  int64_t num_groups = 0;
  CollectiveTime time;  // breakdown of the slowest group (routed: the whole exchange)
};

// True for every instruction CostCollectiveInstruction accepts: collectives, their -start and
// -done forms, and async-start/-update/-done around a collective.
bool IsCollectiveInstruction(const Instruction& instruction);

absl::StatusOr<CollectiveCost> CostCollectiveInstruction(const Instruction& instruction,
                                                         const Topology& topology,
                                                         const CollectiveCostOptions& options);
inline absl::StatusOr<CollectiveCost> CostCollectiveInstruction(const Instruction& instruction,
                                                                const Topology& topology) {
  return CostCollectiveInstruction(instruction, topology, CollectiveCostOptions());
}

}  // namespace perfsim

#endif  // PERFSIM_SIM_COMM_HLO_COLLECTIVES_H_
