// Internal: virtual devices, replica groups, and the rendezvous collectives meet at.
//
// Devices. A run has num_devices = replica_count * num_partitions devices; device d is
// replica d / num_partitions, partition d % num_partitions (XLA's global device id). When the
// module header gives neither count ("flat" grid), every id in replica_groups and
// source_target_pairs, and replica-id/partition-id, is the device number itself.
//
// Groups follow XLA's CollectiveOpGroupMode (sim/ir/collective_groups.h, which computes them):
//   no channel_id                                  cross-replica: ids are replica ids, one set
//                                                  of groups per partition
//   channel_id, all-to-all, ragged-all-to-all,     cross-partition: ids are partition ids, one
//   collective-permute, collective-broadcast       set of groups per replica
//   channel_id, all-reduce, all-gather,            cross-replica-and-partition: ids are replica
//   reduce-scatter, use_global_device_ids=false    ids; a group is its replicas in every
//                                                  partition (listed size x num_partitions)
//   channel_id, use_global_device_ids=true         flattened: ids are global device ids
//                                                  (replica * num_partitions + partition)
// Empty replica_groups mean one group of every id of the mode's kind.
//
// Data semantics (collectives.cc), per group in group order:
//   all-reduce           every member gets the fold of all contributions, in group order
//   all-gather           concatenation along dimensions[0]
//   reduce-scatter       the fold, then the member's block along dimensions[0]
//   all-to-all           array form: split dimensions[0] into group-size blocks, block j goes
//                        to member j, received blocks concatenate in sender order; tuple form:
//                        operand j goes to member j
//   collective-permute   target receives the source's operand; devices nobody sends to get 0
//   collective-broadcast every member gets the first member's operand
//   ragged-all-to-all    operands (input, output, input_offsets, send_sizes, output_offsets,
//                        recv_sizes), offsets/sizes of shape [group_size * U] indexed
//                        peer * U + u. Sender s writes input rows
//                        [input_offsets[r*U+u], +send_sizes[r*U+u]) of dimension 0 into
//                        receiver r's output at row output_offsets[r*U+u] (sender-side
//                        offsets, as JAX defines them). Rows nobody writes keep the output
//                        operand's values. Out-of-range rows, and a receiver whose
//                        recv_sizes[s*U+u] differs from what s sends, are InvalidArgument.
#ifndef PERFSIM_SIM_INTERP_COLLECTIVES_H_
#define PERFSIM_SIM_INTERP_COLLECTIVES_H_

#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "sim/interp/value.h"
#include "sim/ir/instruction.h"

namespace perfsim {
namespace interp {

struct DeviceGrid {
  int64_t num_replicas = 1;
  int64_t num_partitions = 1;
  bool flat = true;

  int64_t num_devices() const { return num_replicas * num_partitions; }
  int64_t ReplicaId(int64_t device) const { return flat ? device : device / num_partitions; }
  int64_t PartitionId(int64_t device) const { return flat ? device : device % num_partitions; }
};

// The grid for running `module` on `num_devices` devices; InvalidArgument when the module's
// replica_count * num_partitions is set and differs.
absl::StatusOr<DeviceGrid> MakeDeviceGrid(const Module& module, int64_t num_devices);

// The devices (global ids, in group order) of the group `device` belongs to for a grouped
// collective. InvalidArgument when the device is in no group or an id is out of range.
absl::StatusOr<std::vector<int64_t>> CollectiveGroup(const Instruction& instruction,
                                                     const DeviceGrid& grid, int64_t device);

// Where device threads meet. Each member of a group calls Exchange with its contribution and
// gets every member's contribution back, in group order, once all have arrived. At most
// `num_threads` devices compute at once: a device gives up its run slot while it waits.
class CollectiveHub {
 public:
  CollectiveHub(int64_t num_devices, int64_t num_threads);

  absl::StatusOr<std::vector<Value>> Exchange(const Instruction* instruction, int64_t sequence,
                                              absl::Span<const int64_t> group, int64_t device,
                                              Value contribution);

  // A device's program ended (with or without an error): peers waiting for it fail instead of
  // waiting forever.
  void DeviceFinished(int64_t device);

  void AcquireRunSlot();
  void ReleaseRunSlot();

 private:
  struct Slot {
    std::vector<Value> contributions;
    std::vector<bool> arrived;
    int64_t arrived_count = 0;
    int64_t departed_count = 0;
  };
  using Key = std::tuple<const Instruction*, int64_t, int64_t>;

  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<Key, Slot> slots_;
  std::vector<bool> finished_;
  int64_t free_run_slots_;
};

}  // namespace interp
}  // namespace perfsim

#endif  // PERFSIM_SIM_INTERP_COLLECTIVES_H_
