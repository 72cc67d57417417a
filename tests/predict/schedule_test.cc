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
  const DeviceSchedule& d = s->device(0);
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
  EXPECT_DOUBLE_EQ(s->device(0).start[1], 5);
  EXPECT_DOUBLE_EQ(s->device(1).start[1], 5);
  EXPECT_DOUBLE_EQ(s->makespan, 7);
  EXPECT_DOUBLE_EQ(s->device(0).exposed_communication, 2);
}

TEST(ScheduleTest, SeparateGroupsDoNotWaitForEachOther) {
  ScheduleProblem p{.num_devices = 4};
  p.ops.push_back(ScheduleOp{.operands = {}, .stream = Stream::kCompute,
                             .duration = {1, 1, 9, 9}});
  p.ops.push_back(ScheduleOp{.operands = {0}, .stream = Stream::kCommunication,
                             .duration = {1}, .groups = {{0, 1}, {2, 3}}});
  absl::StatusOr<Schedule> s = SimulateSchedule(p);
  ASSERT_TRUE(s.ok());
  EXPECT_DOUBLE_EQ(s->device(0).finish[1], 2);
  EXPECT_DOUBLE_EQ(s->device(2).finish[1], 10);
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

TEST(ScheduleTest, IdenticalDevicesShareOneClass) {
  // 64 devices with the same durations and all-device collectives: one timeline simulated.
  ScheduleProblem p{.num_devices = 64};
  std::vector<int64_t> all(64);
  for (int64_t d = 0; d < 64; ++d) all[d] = d;
  p.ops.push_back(Compute({}, 2));
  p.ops.push_back(ScheduleOp{.operands = {0}, .stream = Stream::kCommunication,
                             .duration = {3}, .groups = {all}});
  p.ops.push_back(Compute({1}, 1));
  absl::StatusOr<Schedule> s = SimulateSchedule(p);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->num_classes(), 1);
  EXPECT_EQ(s->num_devices(), 64);
  EXPECT_DOUBLE_EQ(s->device(63).finish[2], 6);  // 2 + 3 + 1
  EXPECT_EQ(s->slowest_device, 0);
}

TEST(ScheduleTest, ClassesSplitByDurationAndByWhoTheirGroupWaitsFor) {
  // Devices 0..3; compute: device 2 takes 5 s, the others 1 s. The all-reduce groups are {0,1}
  // and {2,3}: device 3 has device 0's durations but waits for device 2, so it is a class of
  // its own. Derivation: group {0,1} starts at 1, ends at 2; group {2,3} starts at 5, ends at 6.
  // Classes: {0,1}, {2}, {3}.
  ScheduleProblem p{.num_devices = 4};
  p.ops.push_back(ScheduleOp{.operands = {}, .stream = Stream::kCompute,
                             .duration = {1, 1, 5, 1}});
  p.ops.push_back(ScheduleOp{.operands = {0}, .stream = Stream::kCommunication,
                             .duration = {1}, .groups = {{0, 1}, {2, 3}}});
  absl::StatusOr<Schedule> s = SimulateSchedule(p);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->num_classes(), 3);
  EXPECT_EQ(s->device_class[0], s->device_class[1]);
  EXPECT_NE(s->device_class[0], s->device_class[3]);
  EXPECT_NE(s->device_class[2], s->device_class[3]);
  EXPECT_DOUBLE_EQ(s->device(1).finish[1], 2);
  EXPECT_DOUBLE_EQ(s->device(3).start[1], 5);
  EXPECT_DOUBLE_EQ(s->device(3).finish[1], 6);
  EXPECT_DOUBLE_EQ(s->device(3).exposed_communication, 1);
  EXPECT_EQ(s->slowest_device, 2);
}

TEST(ScheduleTest, ClassesGiveTheSameTimelinesAsEveryDevice) {
  // A pseudo-random problem: every device's timeline from the classes equals a per-device
  // replay of the same rules (below). Durations alternate by device parity and every group
  // holds both parities, so two classes suffice.
  const int64_t n = 12;
  ScheduleProblem p{.num_devices = n};
  uint64_t state = 7;
  auto next = [&]() { return (state = state * 6364136223846793005ULL + 1442695040888963407ULL) >> 33; };
  for (int i = 0; i < 40; ++i) {
    ScheduleOp op;
    if (i > 0) op.operands.push_back(static_cast<int64_t>(next() % i));
    if (i % 5 == 4) {
      op.stream = Stream::kCommunication;
      op.duration = {static_cast<double>(next() % 4 + 1)};
      const int64_t size = 2 * ((i % 3) + 1);  // groups of 2, 4 or 6 consecutive devices
      for (int64_t g = 0; g + size <= n; g += size) {
        std::vector<int64_t> group;
        for (int64_t d = g; d < g + size; ++d) group.push_back(d);
        op.groups.push_back(group);
      }
    } else if (i % 7 == 3) {
      for (int64_t d = 0; d < n; ++d) op.duration.push_back(static_cast<double>(d % 2 + 1));
    } else {
      op.duration = {static_cast<double>(next() % 3 + 1)};
    }
    p.ops.push_back(op);
  }
  absl::StatusOr<Schedule> s = SimulateSchedule(p);
  ASSERT_TRUE(s.ok()) << s.status();
  // Per-device replay of the issue order.
  std::vector<std::vector<double>> finish(n, std::vector<double>(p.ops.size(), 0));
  std::vector<double> compute_free(n, 0), comm_free(n, 0), start(n, 0);
  for (int64_t i : s->order) {
    const ScheduleOp& op = p.ops[i];
    for (int64_t d = 0; d < n; ++d) {
      double ready = 0;
      for (int64_t o : op.operands) ready = std::max(ready, finish[d][o]);
      ready = std::max(ready, op.stream == Stream::kCompute ? compute_free[d] : comm_free[d]);
      start[d] = ready;
    }
    for (const auto& group : op.groups) {
      double t = 0;
      for (int64_t d : group) t = std::max(t, start[d]);
      for (int64_t d : group) start[d] = t;
    }
    for (int64_t d = 0; d < n; ++d) {
      finish[d][i] = start[d] + op.DurationOn(d);
      (op.stream == Stream::kCompute ? compute_free : comm_free)[d] = finish[d][i];
      EXPECT_EQ(s->device(d).start[i], start[d]) << "device " << d << " op " << i;
    }
  }
  EXPECT_EQ(s->num_classes(), 2);
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
  p.ops = {ScheduleOp{.operands = {}, .stream = Stream::kCommunication, .duration = {1},
                      .groups = {{0, 1}, {1}}}};
  EXPECT_FALSE(SimulateSchedule(p).ok());
}

}  // namespace
}  // namespace perfsim
