#include "sim/schedule/schedule.h"

#include <algorithm>
#include <queue>
#include <utility>

#include "absl/strings/str_cat.h"

namespace perfsim {
namespace {

double Mean(const ScheduleOp& op, int64_t n) {
  if (op.duration.size() == 1) return op.duration[0];
  double sum = 0;
  for (double d : op.duration) sum += d;
  return sum / static_cast<double>(n);
}

absl::Status Check(const ScheduleProblem& p) {
  for (size_t i = 0; i < p.ops.size(); ++i) {
    const ScheduleOp& op = p.ops[i];
    for (int64_t o : op.operands) {
      if (o < 0 || o >= static_cast<int64_t>(i)) {
        return absl::InvalidArgumentError(
            absl::StrCat("op ", i, ": expected operands earlier in the order; got ", o));
      }
    }
    if (op.duration.size() != 1 && static_cast<int64_t>(op.duration.size()) != p.num_devices) {
      return absl::InvalidArgumentError(absl::StrCat("op ", i, ": expected 1 or ", p.num_devices,
                                                     " durations; got ", op.duration.size()));
    }
    for (const auto& group : op.groups) {
      for (int64_t d : group) {
        if (d < 0 || d >= p.num_devices) {
          return absl::InvalidArgumentError(absl::StrCat(
              "op ", i, ": expected group devices below ", p.num_devices, "; got ", d));
        }
      }
    }
  }
  return absl::OkStatus();
}

// Step 1: the static order, by HLFET list scheduling on mean durations.
std::vector<int64_t> ListOrder(const ScheduleProblem& p) {
  const int64_t n = static_cast<int64_t>(p.ops.size());
  std::vector<double> mean(n);
  for (int64_t i = 0; i < n; ++i) mean[i] = Mean(p.ops[i], p.num_devices);
  std::vector<std::vector<int64_t>> users(n);
  std::vector<int64_t> pending(n, 0);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t o : p.ops[i].operands) {
      users[o].push_back(i);
      ++pending[i];
    }
  }
  // Bottom level: the longest path from an op's start to the end.
  std::vector<double> level(n, 0);
  for (int64_t i = n - 1; i >= 0; --i) {
    double tail = 0;
    for (int64_t u : users[i]) tail = std::max(tail, level[u]);
    level[i] = mean[i] + tail;
  }
  std::vector<double> ready_at(n, 0), finish(n, 0);
  double stream_free[3] = {0, 0, 0};
  // Ready ops by (higher level first, then earlier index).
  auto cmp = [&](int64_t a, int64_t b) {
    return level[a] != level[b] ? level[a] < level[b] : a > b;
  };
  std::priority_queue<int64_t, std::vector<int64_t>, decltype(cmp)> ready(cmp);
  for (int64_t i = 0; i < n; ++i) {
    if (pending[i] == 0) ready.push(i);
  }
  std::vector<int64_t> order;
  order.reserve(n);
  while (!ready.empty()) {
    const int64_t i = ready.top();
    ready.pop();
    const int s = static_cast<int>(p.ops[i].stream);
    const double start =
        p.ops[i].stream == Stream::kNone ? ready_at[i] : std::max(ready_at[i], stream_free[s]);
    finish[i] = start + mean[i];
    if (p.ops[i].stream != Stream::kNone) stream_free[s] = finish[i];
    order.push_back(i);
    for (int64_t u : users[i]) {
      ready_at[u] = std::max(ready_at[u], finish[i]);
      if (--pending[u] == 0) ready.push(u);
    }
  }
  return order;
}

// Seconds of the sorted, disjoint intervals `busy` before time t; prefix[k] is the busy time of
// intervals 0..k-1.
double CoveredBefore(double t, const std::vector<std::pair<double, double>>& busy,
                     const std::vector<double>& prefix) {
  auto it = std::upper_bound(busy.begin(), busy.end(), std::make_pair(t, 1e300));
  if (it == busy.begin()) return 0;
  const size_t k = static_cast<size_t>(it - busy.begin()) - 1;
  return prefix[k] + std::max(0.0, std::min(t, busy[k].second) - busy[k].first);
}

}  // namespace

absl::StatusOr<Schedule> SimulateSchedule(const ScheduleProblem& p) {
  if (absl::Status s = Check(p); !s.ok()) return s;
  const int64_t n = static_cast<int64_t>(p.ops.size());
  const int64_t devices = p.num_devices;
  Schedule schedule;
  schedule.order = ListOrder(p);
  schedule.devices.assign(devices, DeviceSchedule{});
  for (DeviceSchedule& d : schedule.devices) {
    d.start.assign(n, 0);
    d.finish.assign(n, 0);
  }
  std::vector<double> compute_free(devices, 0), comm_free(devices, 0), tentative(devices, 0);
  for (int64_t i : schedule.order) {
    const ScheduleOp& op = p.ops[i];
    for (int64_t d = 0; d < devices; ++d) {
      double ready = 0;
      for (int64_t o : op.operands) ready = std::max(ready, schedule.devices[d].finish[o]);
      if (op.stream == Stream::kCompute) ready = std::max(ready, compute_free[d]);
      if (op.stream == Stream::kCommunication) ready = std::max(ready, comm_free[d]);
      tentative[d] = ready;
    }
    if (op.stream == Stream::kCommunication) {
      for (const auto& group : op.groups) {
        double start = 0;
        for (int64_t d : group) start = std::max(start, tentative[d]);
        for (int64_t d : group) tentative[d] = start;
      }
    }
    for (int64_t d = 0; d < devices; ++d) {
      DeviceSchedule& ds = schedule.devices[d];
      ds.start[i] = tentative[d];
      ds.finish[i] = tentative[d] + op.DurationOn(d);
      if (op.stream == Stream::kCompute) compute_free[d] = ds.finish[i];
      if (op.stream == Stream::kCommunication) comm_free[d] = ds.finish[i];
    }
  }
  for (int64_t d = 0; d < devices; ++d) {
    DeviceSchedule& ds = schedule.devices[d];
    std::vector<std::pair<double, double>> compute;
    for (int64_t i = 0; i < n; ++i) {
      ds.makespan = std::max(ds.makespan, ds.finish[i]);
      const double len = ds.finish[i] - ds.start[i];
      if (p.ops[i].stream == Stream::kCompute) {
        ds.compute_busy += len;
        if (len > 0) compute.push_back({ds.start[i], ds.finish[i]});
      } else if (p.ops[i].stream == Stream::kCommunication) {
        ds.communication_busy += len;
      }
    }
    // One compute stream: its intervals are disjoint once sorted.
    std::sort(compute.begin(), compute.end());
    std::vector<double> prefix(compute.size() + 1, 0);
    for (size_t k = 0; k < compute.size(); ++k) {
      prefix[k + 1] = prefix[k] + (compute[k].second - compute[k].first);
    }
    for (int64_t i = 0; i < n; ++i) {
      if (p.ops[i].stream == Stream::kCommunication && ds.finish[i] > ds.start[i]) {
        const double covered = CoveredBefore(ds.finish[i], compute, prefix) -
                               CoveredBefore(ds.start[i], compute, prefix);
        ds.exposed_communication += (ds.finish[i] - ds.start[i]) - covered;
      }
    }
    if (ds.makespan > schedule.makespan) {
      schedule.makespan = ds.makespan;
      schedule.slowest_device = d;
    }
  }
  return schedule;
}

}  // namespace perfsim
