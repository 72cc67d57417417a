// Dependency-driven simulation of one SPMD step on every device, with a compute stream and a
// communication stream per device.
//
//   ScheduleProblem p = ...;            // instructions, per-device durations, collective groups
//   PERFSIM_ASSIGN_OR_RETURN(Schedule s, SimulateSchedule(p));
//   s.makespan;                          // the slowest device's finish time
//   s.device(7).start[i];                // when op i starts on device 7
//
// Like XLA, perfsim runs ONE static instruction order on every device; the order comes from a
// list schedule (as XLA's latency-hiding scheduler does with its cost estimates):
//   1. On the mean durations over devices, repeatedly start, on whichever stream is free first,
//      the ready instruction with the longest remaining path to the end (HLFET list
//      scheduling). A collective is asynchronous: it occupies the communication stream, and
//      compute that does not depend on it proceeds.
//   2. Every device then executes that order with its own durations: an instruction starts when
//      its operands are done and its stream is free; a collective starts when every member of
//      its group is ready (it synchronises the group) and ends at start + its duration.
// Instructions with zero duration (parameters, tuples, bitcasts, ...) occupy no stream.
//
// Device classes. Step 2 is simulated once per class of devices whose timelines are provably
// identical: devices with equal durations on every op, and, for every collective, a group that
// meets the same set of classes (the coarsest such partition, found by refinement). By
// induction over the issue order every device of a class starts and finishes every op at the
// same times as the class's representative (its lowest device id), so the result is the same,
// bit for bit, as simulating every device; a uniform routing gives one class however many
// devices there are. Mean durations in step 1 are still summed over every device in id order.
#ifndef PERFSIM_SIM_SCHEDULE_SCHEDULE_H_
#define PERFSIM_SIM_SCHEDULE_SCHEDULE_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"

namespace perfsim {

enum class Stream { kNone, kCompute, kCommunication };

struct ScheduleOp {
  std::vector<int64_t> operands;  // indices of earlier ops this one waits for
  Stream stream = Stream::kCompute;
  // Seconds per device; one entry means the same on every device.
  std::vector<double> duration;
  // Collectives: the device groups that synchronise (device ids, each device in at most one
  // group); empty for compute.
  std::vector<std::vector<int64_t>> groups;

  double DurationOn(int64_t device) const {
    return duration.size() == 1 ? duration[0] : duration[device];
  }
};

struct ScheduleProblem {
  int64_t num_devices = 1;
  std::vector<ScheduleOp> ops;  // in a topological order (operands first)
};

struct DeviceSchedule {
  std::vector<double> start;   // per op
  std::vector<double> finish;  // per op
  double makespan = 0;
  double compute_busy = 0;  // seconds the compute stream is busy
  double communication_busy = 0;
  // Seconds when the communication stream is busy and the compute stream idle: the
  // communication the schedule failed to hide.
  double exposed_communication = 0;
};

struct Schedule {
  std::vector<int64_t> order;           // the static issue order (op indices)
  std::vector<int64_t> device_class;    // per device: its class
  std::vector<int64_t> representative;  // per class: its lowest device id
  std::vector<DeviceSchedule> classes;  // per class: the timeline of all its devices
  // The device with the largest makespan; among devices that finish at the same time (a
  // final collective synchronises them), the one with the most compute busy time (the one the
  // others waited for), then the lowest id.
  int64_t slowest_device = 0;
  double makespan = 0;

  int64_t num_devices() const { return static_cast<int64_t>(device_class.size()); }
  int64_t num_classes() const { return static_cast<int64_t>(classes.size()); }
  const DeviceSchedule& device(int64_t d) const { return classes[device_class[d]]; }
};

// InvalidArgument for an operand index that is not earlier, a duration list of the wrong
// length, a group naming a device out of range, or a device in two groups of one op.
absl::StatusOr<Schedule> SimulateSchedule(const ScheduleProblem& problem);

// For callers that simulate one problem under many sets of durations (sim/predict: one per
// routing), the structure and the durations apart; the result is the same, bit for bit, as
// SimulateSchedule of the ScheduleProblem they make up.
//
//   PERFSIM_ASSIGN_OR_RETURN(ScheduleGraph g, ScheduleGraph::Create(problem));  // once
//   ScheduleDurations d;
//   d.uniform = {2.0, 0.0, 1.5};   // per op, seconds on every device (read where row < 0)
//   d.row = {-1, 0, -1};           // op 1 has a time per device: row 0 of per_device
//   d.per_device = {...};          // rows × num_devices, row-major
//   PERFSIM_ASSIGN_OR_RETURN(Schedule s, SimulateSchedule(g, d, {.every_class = false}));
struct ScheduleDurations {
  std::vector<double> uniform;
  std::vector<int32_t> row;
  std::vector<double> per_device;
};

// A problem's operands, streams and collective groups (its durations are dropped), checked
// once, with every op's users.
class ScheduleGraph {
 public:
  // InvalidArgument as SimulateSchedule (durations are not read).
  static absl::StatusOr<ScheduleGraph> Create(ScheduleProblem problem);

  int64_t num_devices() const { return num_devices_; }
  int64_t num_ops() const { return static_cast<int64_t>(ops_.size()); }
  const ScheduleOp& op(int64_t i) const { return ops_[i]; }
  // The ops that read op i, ascending (an op reading i twice is listed twice).
  const int64_t* users_begin(int64_t i) const { return users_.data() + user_begin_[i]; }
  const int64_t* users_end(int64_t i) const { return users_.data() + user_begin_[i + 1]; }
  // Collectives with the same groups share a group structure: op i's index among the distinct
  // ones (-1: not a collective with groups), and each structure's first op.
  int64_t group_structure(int64_t i) const { return structure_[i]; }
  const std::vector<int64_t>& structure_ops() const { return structure_ops_; }

 private:
  int64_t num_devices_ = 1;
  std::vector<ScheduleOp> ops_;
  std::vector<int64_t> user_begin_;
  std::vector<int64_t> users_;
  std::vector<int64_t> structure_;
  std::vector<int64_t> structure_ops_;
};

struct SimulateOptions {
  // true: every class's DeviceSchedule in full (what a trace of several devices reads).
  // false: only the slowest device's class is complete; every other class has its makespan
  // and compute_busy (what picks the slowest device), empty start and finish, and zeros.
  bool every_class = true;
};

// InvalidArgument for durations that do not match the graph (list sizes, row indices).
absl::StatusOr<Schedule> SimulateSchedule(const ScheduleGraph& graph,
                                          const ScheduleDurations& durations,
                                          const SimulateOptions& options = {});

}  // namespace perfsim

#endif  // PERFSIM_SIM_SCHEDULE_SCHEDULE_H_
