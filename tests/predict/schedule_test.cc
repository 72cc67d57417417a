// sim/schedule: hand-derived timelines.
#include "sim/schedule/schedule.h"

#include <algorithm>
#include <vector>

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

// Per-device replay of an issue order (the rules of schedule.h, device by device, no classes):
// every device's start and finish times.
struct Replay {
  std::vector<std::vector<double>> start, finish;  // [device][op]
};
Replay ReplayEveryDevice(const ScheduleProblem& p, const std::vector<int64_t>& order) {
  const int64_t n = p.num_devices;
  Replay r{std::vector<std::vector<double>>(n, std::vector<double>(p.ops.size(), 0)),
           std::vector<std::vector<double>>(n, std::vector<double>(p.ops.size(), 0))};
  std::vector<double> compute_free(n, 0), comm_free(n, 0), start(n, 0);
  for (int64_t i : order) {
    const ScheduleOp& op = p.ops[i];
    for (int64_t d = 0; d < n; ++d) {
      double ready = 0;
      for (int64_t o : op.operands) ready = std::max(ready, r.finish[d][o]);
      if (op.stream != Stream::kNone) {
        ready = std::max(ready, op.stream == Stream::kCompute ? compute_free[d] : comm_free[d]);
      }
      start[d] = ready;
    }
    if (op.stream == Stream::kCommunication) {
      for (const auto& group : op.groups) {
        double t = 0;
        for (int64_t d : group) t = std::max(t, start[d]);
        for (int64_t d : group) start[d] = t;
      }
    }
    for (int64_t d = 0; d < n; ++d) {
      r.start[d][i] = start[d];
      r.finish[d][i] = start[d] + op.DurationOn(d);
      if (op.stream == Stream::kCompute) compute_free[d] = r.finish[d][i];
      if (op.stream == Stream::kCommunication) comm_free[d] = r.finish[d][i];
    }
  }
  return r;
}

TEST(ScheduleTest, SlowestClassAloneGivesEveryDevicesFigures) {
  // 16 devices, 60 ops: per-device durations drawn from two or three values (so devices share
  // classes on some ops and not on others), collectives over three group structures reused by
  // several ops (halves, quarters, pairs). SimulateSchedule on the graph without every class
  // must give the slowest device of a per-device replay, and that device's busy and exposed
  // times computed from the replay by their definitions.
  const int64_t n = 16;
  ScheduleProblem p{.num_devices = n};
  uint64_t state = 11;
  auto next = [&]() { return (state = state * 6364136223846793005ULL + 1442695040888963407ULL) >> 33; };
  const std::vector<std::vector<std::vector<int64_t>>> structures = {
      {{0, 1, 2, 3, 4, 5, 6, 7}, {8, 9, 10, 11, 12, 13, 14, 15}},
      {{0, 4, 8, 12}, {1, 5, 9, 13}, {2, 6, 10, 14}, {3, 7, 11, 15}},
      {{0, 1}, {2, 3}, {4, 5}, {6, 7}, {8, 9}, {10, 11}, {12, 13}, {14, 15}}};
  for (int i = 0; i < 60; ++i) {
    ScheduleOp op;
    if (i > 0) op.operands.push_back(static_cast<int64_t>(next() % i));
    if (i > 1) op.operands.push_back(static_cast<int64_t>(next() % i));
    if (i % 4 == 3) {
      op.stream = Stream::kCommunication;
      op.groups = structures[next() % 3];
      op.duration = {static_cast<double>(next() % 4 + 1)};
    } else if (i % 3 == 1) {
      const int64_t modulus = static_cast<int64_t>(next() % 3 + 2);
      for (int64_t d = 0; d < n; ++d) {
        op.duration.push_back(0.5 * static_cast<double>((d * 7 + i) % modulus + 1));
      }
    } else {
      op.stream = i % 5 == 0 ? Stream::kNone : Stream::kCompute;
      op.duration = {op.stream == Stream::kNone ? 0.0 : static_cast<double>(next() % 3 + 1)};
    }
    p.ops.push_back(op);
  }
  absl::StatusOr<Schedule> full = SimulateSchedule(p);
  ASSERT_TRUE(full.ok()) << full.status();
  absl::StatusOr<ScheduleGraph> graph = ScheduleGraph::Create(p);
  ASSERT_TRUE(graph.ok()) << graph.status();
  ScheduleDurations durations;
  for (const ScheduleOp& op : p.ops) {
    durations.uniform.push_back(op.duration.size() == 1 ? op.duration[0] : 0);
    durations.row.push_back(op.duration.size() == 1 ? -1
                                                    : static_cast<int32_t>(
                                                          durations.per_device.size() / n));
    if (op.duration.size() != 1) {
      durations.per_device.insert(durations.per_device.end(), op.duration.begin(),
                                  op.duration.end());
    }
  }
  absl::StatusOr<Schedule> slowest = SimulateSchedule(*graph, durations, {.every_class = false});
  ASSERT_TRUE(slowest.ok()) << slowest.status();
  EXPECT_EQ(slowest->order, full->order);
  EXPECT_GT(full->num_classes(), 1);

  const Replay replay = ReplayEveryDevice(p, full->order);
  // The slowest device by the rule: largest makespan, then most compute, then lowest id.
  int64_t slow = 0;
  double best_makespan = -1, best_busy = -1;
  for (int64_t d = 0; d < n; ++d) {
    double makespan = 0, busy = 0;
    for (size_t i = 0; i < p.ops.size(); ++i) {
      makespan = std::max(makespan, replay.finish[d][i]);
      if (p.ops[i].stream == Stream::kCompute) busy += replay.finish[d][i] - replay.start[d][i];
    }
    if (makespan > best_makespan || (makespan == best_makespan && busy > best_busy)) {
      slow = d;
      best_makespan = makespan;
      best_busy = busy;
    }
  }
  EXPECT_EQ(slowest->slowest_device, slow);
  EXPECT_EQ(slowest->makespan, best_makespan);
  const DeviceSchedule& ds = slowest->device(slow);
  ASSERT_EQ(ds.start.size(), p.ops.size());
  // Exposed communication by its definition: time in a communication op with the compute stream
  // idle, measured on a grid of 1/8 s (every duration is a multiple of 1/2).
  double communication = 0, exposed = 0;
  for (size_t i = 0; i < p.ops.size(); ++i) {
    EXPECT_EQ(ds.start[i], replay.start[slow][i]) << i;
    if (p.ops[i].stream != Stream::kCommunication) continue;
    communication += replay.finish[slow][i] - replay.start[slow][i];
    for (double t = replay.start[slow][i]; t < replay.finish[slow][i]; t += 0.125) {
      bool computing = false;
      for (size_t j = 0; j < p.ops.size(); ++j) {
        computing = computing || (p.ops[j].stream == Stream::kCompute &&
                                  replay.start[slow][j] <= t && t < replay.finish[slow][j]);
      }
      if (!computing) exposed += 0.125;
    }
  }
  EXPECT_DOUBLE_EQ(ds.compute_busy, best_busy);
  EXPECT_DOUBLE_EQ(ds.communication_busy, communication);
  EXPECT_DOUBLE_EQ(ds.exposed_communication, exposed);
  // The other classes keep only what picks the slowest device.
  for (int64_t c = 0; c < slowest->num_classes(); ++c) {
    if (c == slowest->device_class[slow]) continue;
    EXPECT_TRUE(slowest->classes[c].start.empty());
    EXPECT_EQ(slowest->classes[c].makespan, full->classes[c].makespan);
  }
}

TEST(ScheduleTest, DurationsThatDoNotMatchTheGraphAreErrors) {
  ScheduleProblem p{.num_devices = 2};
  p.ops.push_back(Compute({}, 1));
  p.ops.push_back(Compute({0}, 2));
  absl::StatusOr<ScheduleGraph> g = ScheduleGraph::Create(p);
  ASSERT_TRUE(g.ok()) << g.status();
  ScheduleDurations d{.uniform = {1}, .row = {-1}};
  EXPECT_FALSE(SimulateSchedule(*g, d).ok());  // one op's durations for two ops
  d = {.uniform = {1, 2}, .row = {-1, 0}};
  EXPECT_FALSE(SimulateSchedule(*g, d).ok());  // row 0 of none
  d = {.uniform = {1, 2}, .row = {-1, 0}, .per_device = {1, 2, 3}};
  EXPECT_FALSE(SimulateSchedule(*g, d).ok());  // not rows of 2
  d = {.uniform = {1, 0}, .row = {-1, 0}, .per_device = {2, 3}};
  absl::StatusOr<Schedule> s = SimulateSchedule(*g, d);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_DOUBLE_EQ(s->makespan, 4);  // device 1: 1 + 3
  EXPECT_EQ(s->slowest_device, 1);
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
