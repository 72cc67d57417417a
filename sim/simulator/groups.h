// The device groups a collective synchronises, for the schedule (sim/schedule: a collective
// starts when every member of its group is ready).
//
//   PERFSIM_ASSIGN_OR_RETURN(auto groups, SyncGroups(instruction, /*num_devices=*/8));
//   // all-reduce, replica_groups={{0,1,2,3},{4,5,6,7}}  ->  {{0,1,2,3},{4,5,6,7}}
//
// Device ids are XLA's global ids, replica * num_partitions + partition (the identity device
// assignment), the ids sim/comm times collectives with (hlo_collectives.h):
//   - all-gather, all-reduce, reduce-scatter, all-to-all, ragged-all-to-all,
//     collective-broadcast (and -start forms): replica_groups in the collective's group mode
//     (sim/ir/collective_groups.h ParticipatingDeviceGroups); a module whose header gives
//     neither replica_count nor num_partitions reads them as device ids of `num_devices`
//     devices (empty: one group of all of them);
//   - collective-permute(-start): each source -> target pair joins its two devices; the groups
//     are the connected sets (a ring is one group), in the pairs' id space (partition ids with
//     a channel_id, replica ids without), once per replica or partition;
//   - async-start: the groups of the collective its computation holds;
//   - anything else, and -done halves: none.
// Groups of one device are dropped (nothing to wait for).
#ifndef PERFSIM_SIM_SIMULATOR_GROUPS_H_
#define PERFSIM_SIM_SIMULATOR_GROUPS_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "sim/ir/instruction.h"

namespace perfsim {

// InvalidArgument (naming the instruction) for ids outside the device range.
absl::StatusOr<std::vector<std::vector<int64_t>>> SyncGroups(const Instruction& instruction,
                                                             int64_t num_devices);

// SyncGroups, with groups of one device kept when `keep_single` (a ragged-all-to-all's
// lone member still copies its own rows). Permute groups are never single.
absl::StatusOr<std::vector<std::vector<int64_t>>> CollectiveGroups(const Instruction& instruction,
                                                                   int64_t num_devices,
                                                                   bool keep_single);

}  // namespace perfsim

#endif  // PERFSIM_SIM_SIMULATOR_GROUPS_H_
