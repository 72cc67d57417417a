// The schedule of sim/schedule/schedule.h (HLFET issue order on mean durations, then every
// device runs that order with its own durations, collectives synchronising their groups),
// simulated on device classes (staged_predict.h explains why that is exact).
//
//   DurationTable d{.num_devices = 512};
//   d.uniform = {...};             // per op; used when the op has no per-device row
//   d.row = {-1, 0, -1, ...};      // per op: index into d.per_device, or -1
//   d.per_device = {{...512 values...}};
//   PERFSIM_ASSIGN_OR_RETURN(ClassSchedule s, ScheduleOnClasses(step, d, groups, scratch));
//   s.makespan == SimulateSchedule(the same problem on every device).makespan
#ifndef PERFSIM_SIM_SWEEP_CLASS_SCHEDULE_H_
#define PERFSIM_SIM_SWEEP_CLASS_SCHEDULE_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "sim/sweep/staged_predict.h"

namespace perfsim {

struct DurationTable {
  int64_t num_devices = 1;
  std::vector<double> uniform;
  std::vector<int32_t> row;
  std::vector<std::vector<double>> per_device;
};

struct ClassSchedule {
  std::vector<int64_t> order;
  double makespan = 0;
  int64_t slowest_device = 0;
  double compute_busy = 0;
  double communication_busy = 0;
  double exposed_communication = 0;
  // Per op, on the slowest device.
  std::vector<double> start;
  std::vector<double> finish;
  int64_t classes = 0;
};

// groups[i]: op i's replica groups restricted to devices < num_devices (empty ones dropped),
// as Predict passes them to the schedule.
absl::StatusOr<ClassSchedule> ScheduleOnClasses(
    const StagedStep& step, const DurationTable& durations,
    const std::vector<std::vector<std::vector<int64_t>>>& groups);

}  // namespace perfsim

#endif  // PERFSIM_SIM_SWEEP_CLASS_SCHEDULE_H_
