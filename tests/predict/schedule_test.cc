// sim/schedule: hand-derived timelines.
#include "sim/schedule/schedule.h"

#include "gtest/gtest.h"

namespace perfsim {
namespace {

ScheduleOp Compute(std::vector<int64_t> operands, double seconds) {
  return ScheduleOp{.operands = std::move(operands), .stream = Stream::kCompute,
                    .duration = {seconds}};
}

TEST(ScheduleTest, AsyncCollectiveOverlapsIndependentCompute) {
  // 0: compute 2s. 1: all-reduce of 0, 3s. 2: compute 4s independent of 1. 3: compute 1s
  // using 1 and 2. List order: after 0, the all-reduce (comm) and op 2 (compute) run at once:
  // all-reduce [2, 5), op 2 [2, 6), op 3 [6, 7). Exposed communication 0: the compute stream is
  // busy through [2, 5).
  ScheduleProblem p{.num_devices = 2};
  p.ops.push_back(Compute({}, 2));
  p.ops.push_back(ScheduleOp{.operands = {0}, .stream = Stream::kCommunication,
                             .duration = {3}, .groups = {{0, 1}}});
  p.ops.push_back(Compute({}, 4));
  p.ops.push_back(Compute({1, 2}, 1));
  absl::StatusOr<Schedule> s = SimulateSchedule(p);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_DOUBLE_EQ(s->makespan, 7);
  const DeviceSchedule& d = s->devices[0];
  EXPECT_DOUBLE_EQ(d.start[1], 2);
  EXPECT_DOUBLE_EQ(d.finish[2], 6);
  EXPECT_DOUBLE_EQ(d.start[3], 6);
  EXPECT_DOUBLE_EQ(d.exposed_communication, 0);
  EXPECT_DOUBLE_EQ(d.compute_busy, 7);
  EXPECT_DOUBLE_EQ(d.communication_busy, 3);
}

TEST(ScheduleTest, CollectiveSynchronisesItsGroupAndTheSlowestDeviceDecides) {
  // Device 1's compute takes 5s, device 0's 1s; the all-reduce starts on both at 5 and ends at
  // 7; device 0 waited 4s. Exposed: device 0's comm [5, 7) has no compute under it: 2s.
  ScheduleProblem p{.num_devices = 2};
  p.ops.push_back(ScheduleOp{.operands = {}, .stream = Stream::kCompute, .duration = {1, 5}});
  p.ops.push_back(ScheduleOp{.operands = {0}, .stream = Stream::kCommunication,
                             .duration = {2}, .groups = {{0, 1}}});
  absl::StatusOr<Schedule> s = SimulateSchedule(p);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_DOUBLE_EQ(s->devices[0].start[1], 5);
  EXPECT_DOUBLE_EQ(s->devices[1].start[1], 5);
  EXPECT_DOUBLE_EQ(s->makespan, 7);
  EXPECT_DOUBLE_EQ(s->devices[0].exposed_communication, 2);
}

TEST(ScheduleTest, SeparateGroupsDoNotWaitForEachOther) {
  ScheduleProblem p{.num_devices = 4};
  p.ops.push_back(ScheduleOp{.operands = {}, .stream = Stream::kCompute,
                             .duration = {1, 1, 9, 9}});
  p.ops.push_back(ScheduleOp{.operands = {0}, .stream = Stream::kCommunication,
                             .duration = {1}, .groups = {{0, 1}, {2, 3}}});
  absl::StatusOr<Schedule> s = SimulateSchedule(p);
  ASSERT_TRUE(s.ok());
  EXPECT_DOUBLE_EQ(s->devices[0].finish[1], 2);
  EXPECT_DOUBLE_EQ(s->devices[2].finish[1], 10);
  EXPECT_EQ(s->slowest_device, 2);
}

TEST(ScheduleTest, CriticalPathGoesFirst) {
  // Two independent chains on one compute stream: A (1s) then a 10s comm; B (3s) alone. HLFET
  // starts A first (bottom level 11 > 3), so the comm hides behind B: makespan 11, not 14.
  ScheduleProblem p{.num_devices = 1};
  p.ops.push_back(Compute({}, 3));  // B, listed first
  p.ops.push_back(Compute({}, 1));  // A
  p.ops.push_back(ScheduleOp{.operands = {1}, .stream = Stream::kCommunication,
                             .duration = {10}, .groups = {{0}}});
  absl::StatusOr<Schedule> s = SimulateSchedule(p);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->order.front(), 1);
  EXPECT_DOUBLE_EQ(s->makespan, 11);
}

TEST(ScheduleTest, BadProblemsAreErrors) {
  ScheduleProblem p{.num_devices = 2};
  p.ops.push_back(Compute({1}, 1));
  EXPECT_FALSE(SimulateSchedule(p).ok());
  p.ops = {ScheduleOp{.operands = {}, .stream = Stream::kCompute, .duration = {1, 2, 3}}};
  EXPECT_FALSE(SimulateSchedule(p).ok());
  p.ops = {ScheduleOp{.operands = {}, .stream = Stream::kCommunication, .duration = {1},
                      .groups = {{0, 7}}}};
  EXPECT_FALSE(SimulateSchedule(p).ok());
}

}  // namespace
}  // namespace perfsim
