#include "sim/schedule/schedule.h"

#include <algorithm>
#include <queue>
#include <utility>

#include "absl/container/flat_hash_map.h"
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
  std::vector<bool> seen;
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
    if (op.groups.empty()) continue;
    seen.assign(p.num_devices, false);
    for (const auto& group : op.groups) {
      for (int64_t d : group) {
        if (d < 0 || d >= p.num_devices) {
          return absl::InvalidArgumentError(absl::StrCat(
              "op ", i, ": expected group devices below ", p.num_devices, "; got ", d));
        }
        if (seen[d]) {
          return absl::InvalidArgumentError(absl::StrCat(
              "op ", i, ": expected each device in at most one group; got ", d, " twice"));
        }
        seen[d] = true;
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

// Device classes (schedule.h): refines one class of all devices by every per-device duration,
// then by the set of classes each collective group meets, until nothing splits.
struct Classes {
  std::vector<int64_t> of;              // per device
  std::vector<int64_t> representative;  // per class, the lowest device id
  // Per op (collectives with groups only) and class: the classes of the representative's
  // group, ascending; empty when the representative is in no group (it waits for no one).
  std::vector<std::vector<std::vector<int64_t>>> group_classes;
};

// Renumbers `key` per device into dense class ids in order of first appearance; returns the
// number of classes.
template <typename Key>
int64_t Relabel(const std::vector<Key>& key, std::vector<int64_t>& of) {
  absl::flat_hash_map<Key, int64_t> ids;
  ids.reserve(16);
  for (size_t d = 0; d < key.size(); ++d) {
    of[d] = ids.try_emplace(key[d], static_cast<int64_t>(ids.size())).first->second;
  }
  return static_cast<int64_t>(ids.size());
}

// The sorted distinct classes of each group of `op`, interned: set_id[g].
std::vector<int64_t> GroupClassSets(const ScheduleOp& op, const std::vector<int64_t>& of,
                                    std::vector<std::vector<int64_t>>& sets) {
  absl::flat_hash_map<std::vector<int64_t>, int64_t> ids;
  std::vector<int64_t> set_id;
  set_id.reserve(op.groups.size());
  sets.clear();
  std::vector<int64_t> members;
  for (const auto& group : op.groups) {
    members.clear();
    for (int64_t d : group) members.push_back(of[d]);
    std::sort(members.begin(), members.end());
    members.erase(std::unique(members.begin(), members.end()), members.end());
    auto [it, inserted] = ids.try_emplace(members, static_cast<int64_t>(sets.size()));
    if (inserted) sets.push_back(members);
    set_id.push_back(it->second);
  }
  return set_id;
}

Classes FindClasses(const ScheduleProblem& p) {
  const int64_t n = p.num_devices;
  Classes c;
  c.of.assign(n, 0);
  int64_t count = 1;
  std::vector<std::pair<int64_t, double>> by_duration(n);
  for (const ScheduleOp& op : p.ops) {
    if (op.duration.size() == 1 || n == 1) continue;
    for (int64_t d = 0; d < n; ++d) by_duration[d] = {c.of[d], op.duration[d]};
    count = Relabel(by_duration, c.of);
  }
  // A device in no group waits for its own class only, as in a group of its class alone: so
  // one class stays one class.
  std::vector<std::pair<int64_t, int64_t>> by_group(n);
  std::vector<std::vector<int64_t>> sets;
  for (bool changed = true; changed && count > 1 && count < n;) {
    changed = false;
    for (const ScheduleOp& op : p.ops) {
      if (op.stream != Stream::kCommunication || op.groups.empty()) continue;
      const std::vector<int64_t> set_id = GroupClassSets(op, c.of, sets);
      for (int64_t d = 0; d < n; ++d) by_group[d] = {c.of[d], -1 - c.of[d]};
      for (size_t g = 0; g < op.groups.size(); ++g) {
        // A group of one class alone is the same as no group.
        const bool alone = sets[set_id[g]].size() == 1;
        for (int64_t d : op.groups[g]) by_group[d].second = alone ? -1 - c.of[d] : set_id[g];
      }
      const int64_t refined = Relabel(by_group, c.of);
      changed = changed || refined != count;
      count = refined;
    }
  }
  c.representative.assign(count, -1);
  for (int64_t d = n - 1; d >= 0; --d) c.representative[c.of[d]] = d;
  c.group_classes.resize(p.ops.size());
  // One class: every group meets only it, and a collective waits for no one else.
  if (count == 1) return c;
  std::vector<int64_t> group_of(n, -1);
  for (size_t i = 0; i < p.ops.size(); ++i) {
    const ScheduleOp& op = p.ops[i];
    if (op.stream != Stream::kCommunication || op.groups.empty()) continue;
    const std::vector<int64_t> set_id = GroupClassSets(op, c.of, sets);
    for (size_t g = 0; g < op.groups.size(); ++g) {
      for (int64_t d : op.groups[g]) group_of[d] = static_cast<int64_t>(g);
    }
    auto& per_class = c.group_classes[i];
    per_class.resize(count);
    for (int64_t k = 0; k < count; ++k) {
      const int64_t g = group_of[c.representative[k]];
      if (g >= 0) per_class[k] = sets[set_id[g]];
    }
    for (const auto& group : op.groups) {
      for (int64_t d : group) group_of[d] = -1;
    }
  }
  return c;
}

}  // namespace

absl::StatusOr<Schedule> SimulateSchedule(const ScheduleProblem& p) {
  if (absl::Status s = Check(p); !s.ok()) return s;
  const int64_t n = static_cast<int64_t>(p.ops.size());
  Schedule schedule;
  schedule.order = ListOrder(p);
  Classes classes = FindClasses(p);
  const int64_t num_classes = static_cast<int64_t>(classes.representative.size());
  schedule.device_class = std::move(classes.of);
  schedule.representative = classes.representative;
  schedule.classes.assign(num_classes, DeviceSchedule{});
  for (DeviceSchedule& d : schedule.classes) {
    d.start.assign(n, 0);
    d.finish.assign(n, 0);
  }
  std::vector<double> compute_free(num_classes, 0), comm_free(num_classes, 0),
      tentative(num_classes, 0), synchronised(num_classes, 0);
  for (int64_t i : schedule.order) {
    const ScheduleOp& op = p.ops[i];
    for (int64_t c = 0; c < num_classes; ++c) {
      double ready = 0;
      for (int64_t o : op.operands) ready = std::max(ready, schedule.classes[c].finish[o]);
      if (op.stream == Stream::kCompute) ready = std::max(ready, compute_free[c]);
      if (op.stream == Stream::kCommunication) ready = std::max(ready, comm_free[c]);
      tentative[c] = ready;
    }
    const auto& group_classes = classes.group_classes[i];
    if (op.stream == Stream::kCommunication && !group_classes.empty()) {
      // A collective starts when the last member of the group is ready.
      for (int64_t c = 0; c < num_classes; ++c) {
        double start = tentative[c];
        for (int64_t k : group_classes[c]) start = std::max(start, tentative[k]);
        synchronised[c] = start;
      }
      tentative.swap(synchronised);
    }
    for (int64_t c = 0; c < num_classes; ++c) {
      DeviceSchedule& ds = schedule.classes[c];
      ds.start[i] = tentative[c];
      ds.finish[i] = tentative[c] + op.DurationOn(classes.representative[c]);
      if (op.stream == Stream::kCompute) compute_free[c] = ds.finish[i];
      if (op.stream == Stream::kCommunication) comm_free[c] = ds.finish[i];
    }
  }
  for (DeviceSchedule& ds : schedule.classes) {
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
  }
  // The slowest device: the largest makespan; among devices that finish together (a final
  // collective synchronises them), the one with the most compute, which the others waited
  // for; then the lowest id.
  double busiest = 0;
  for (int64_t d = 0; d < p.num_devices; ++d) {
    const DeviceSchedule& ds = schedule.device(d);
    if (ds.makespan > schedule.makespan ||
        (ds.makespan == schedule.makespan && ds.compute_busy > busiest)) {
      schedule.makespan = ds.makespan;
      schedule.slowest_device = d;
      busiest = ds.compute_busy;
    }
  }
  return schedule;
}

}  // namespace perfsim
