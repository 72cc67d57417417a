// Dependency-driven simulation of one SPMD step on every device, with a compute stream and a
// communication stream per device.
//
//   ScheduleProblem p = ...;            // instructions, per-device durations, collective groups
//   PERFSIM_ASSIGN_OR_RETURN(Schedule s, SimulateSchedule(p));
//   s.makespan;                          // the slowest device's finish time
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
#ifndef PERFSIM_SIM_SCHEDULE_SCHEDULE_H_
#define PERFSIM_SIM_SCHEDULE_SCHEDULE_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"

namespace perfsim {

enum class Stream { kNone, kCompute, kCommunication };

struct ScheduleOp {
  std::vector<int64_t> operands;       // indices of earlier ops this one waits for
  Stream stream = Stream::kCompute;
  // Seconds per device; one entry means the same on every device.
  std::vector<double> duration;
  // Collectives: the device groups that synchronise (device ids); empty for compute.
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
  std::vector<double> start;    // per op
  std::vector<double> finish;   // per op
  double makespan = 0;
  double compute_busy = 0;      // seconds the compute stream is busy
  double communication_busy = 0;
  // Seconds when the communication stream is busy and the compute stream idle: the
  // communication the schedule failed to hide.
  double exposed_communication = 0;
};

struct Schedule {
  std::vector<int64_t> order;           // the static issue order (op indices)
  std::vector<DeviceSchedule> devices;  // per device
  int64_t slowest_device = 0;
  double makespan = 0;
};

// InvalidArgument for an operand index that is not earlier, a duration list of the wrong
// length, or a group naming a device out of range.
absl::StatusOr<Schedule> SimulateSchedule(const ScheduleProblem& problem);

}  // namespace perfsim

#endif  // PERFSIM_SIM_SCHEDULE_SCHEDULE_H_
