// Which devices a collective groups together: XLA's CollectiveOpGroupMode
// (xla/hlo/ir/collective_op_group_mode.h) and GetParticipatingDevicesGroups
// (xla/service/collective_ops_utils.h), for shape inference, the interpreter and the cost model
// alike.
//
// The mode follows from channel_id and use_global_device_ids:
//   channel_id  use_global_device_ids   mode                          ids in replica_groups
//   no          absent or false         kCrossReplica                 replica ids
//   no          true                    (invalid)
//   yes         absent                  kCrossPartition               partition ids
//   yes         false                   kCrossReplicaAndPartition     replica ids
//   yes         true                    kFlattenedId                  global device ids
// all-reduce(-start), all-gather(-start) and reduce-scatter carry use_global_device_ids (false
// when the text leaves it out); all-to-all, ragged-all-to-all, collective-permute(-start) and
// collective-broadcast never do. So an all-gather with a channel_id and no
// use_global_device_ids is cross-replica-and-partition: each listed group of replicas, times
// every partition.
//
// Devices: global id = replica * num_partitions + partition (the identity device assignment).
// Example, 3 replicas x 2 partitions, replica_groups={{0},{1,2}}:
//   kCrossReplica               {0},{1},{2,4},{3,5}   (a group per listed group and partition)
//   kCrossReplicaAndPartition   {0,1},{2,3,4,5}       (replicas of the group, every partition)
// Empty replica_groups mean every id of the mode (all replicas, all partitions, all devices);
// kFlattenedId requires explicit groups.
#ifndef PERFSIM_SIM_IR_COLLECTIVE_GROUPS_H_
#define PERFSIM_SIM_IR_COLLECTIVE_GROUPS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "sim/ir/attributes.h"
#include "sim/ir/opcode.h"

namespace perfsim {

class Instruction;

enum class CollectiveOpGroupMode {
  kCrossReplica,
  kCrossPartition,
  kCrossReplicaAndPartition,
  kFlattenedId,
};

// "cross_replica", "cross_partition", "cross_replica_and_partition", "flattened_id" (XLA's
// spelling).
absl::string_view CollectiveOpGroupModeName(CollectiveOpGroupMode mode);

// XLA's GetCollectiveOpGroupMode. InvalidArgument for use_global_device_ids=true without a
// channel_id.
absl::StatusOr<CollectiveOpGroupMode> GroupModeFor(bool has_channel_id,
                                                   std::optional<bool> use_global_device_ids);

// True for the opcodes that carry use_global_device_ids (see above).
bool CarriesUseGlobalDeviceIds(Opcode opcode);

// The mode of a collective instruction (any opcode: those without use_global_device_ids pass
// nullopt). The message names the instruction.
absl::StatusOr<CollectiveOpGroupMode> GroupModeOf(const Instruction& instruction);

// Devices per group, as XLA's verifier computes it (GetSubgroupSize): the first listed group's
// size, or the mode's id count for empty groups, times num_partitions in
// kCrossReplicaAndPartition. With header counts of 1 this can be smaller than the devices the
// module really runs on; XLA skips its checks when it is 1.
int64_t SubgroupSize(absl::Span<const std::vector<int64_t>> replica_groups,
                     CollectiveOpGroupMode mode, int64_t replica_count, int64_t num_partitions);

// Every group of participating global device ids, in XLA's order (GetParticipatingDevicesGroups
// with the identity device assignment). InvalidArgument (naming the id and the range) for ids
// outside [0, replica_count), [0, num_partitions) or [0, replica_count * num_partitions) as the
// mode requires, and for empty groups in kFlattenedId mode.
absl::StatusOr<std::vector<std::vector<int64_t>>> ParticipatingDeviceGroups(
    absl::Span<const std::vector<int64_t>> replica_groups, CollectiveOpGroupMode mode,
    int64_t replica_count, int64_t num_partitions);

// The groups of `replica_groups=mesh[...] {...}` (ReplicaGroups::MeshAxes), XLA's
// MeshAxesReplicaGroupList::flattened_replica_groups: the mesh's device ids (iota) reshaped to
// the axis sizes, each referenced sub-axis `'x':(pre)size` split out of its axis, the axes not
// referenced moved first and the referenced ones last in the order written, then cut into
// groups of the product of the referenced sizes.
// Example: mesh['a'=2,'b'=2] {'a'} gives {{0,2},{1,3}}; {'b'} gives {{0,1},{2,3}}.
// InvalidArgument for an axis index out of range, a sub-axis that does not divide its axis, or
// overlapping sub-axes.
absl::StatusOr<std::vector<std::vector<int64_t>>> ExpandMeshAxesReplicaGroups(
    const ReplicaGroups::MeshAxes& mesh_axes);

// The text XLA prints for the mesh-axes form: mesh['a'=2,'b'=2] {'a','b':(1)2}.
std::string MeshAxesReplicaGroupsText(const ReplicaGroups::MeshAxes& mesh_axes);

}  // namespace perfsim

#endif  // PERFSIM_SIM_IR_COLLECTIVE_GROUPS_H_
