#include "sim/schedule/schedule.h"

#include <algorithm>
#include <cstring>
#include <queue>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"

namespace perfsim {
namespace {

// The structure's checks; the durations' too when `durations` (SimulateSchedule of a problem).
absl::Status Check(const ScheduleProblem& p, bool durations) {
  std::vector<bool> seen;
  for (size_t i = 0; i < p.ops.size(); ++i) {
    const ScheduleOp& op = p.ops[i];
    for (int64_t o : op.operands) {
      if (o < 0 || o >= static_cast<int64_t>(i)) {
        return absl::InvalidArgumentError(
            absl::StrCat("op ", i, ": expected operands earlier in the order; got ", o));
      }
    }
    if (durations && op.duration.size() != 1 &&
        static_cast<int64_t>(op.duration.size()) != p.num_devices) {
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

absl::Status CheckDurations(const ScheduleGraph& g, const ScheduleDurations& d) {
  const size_t n_ops = static_cast<size_t>(g.num_ops());
  if (d.uniform.size() != n_ops || d.row.size() != n_ops) {
    return absl::InvalidArgumentError(absl::StrCat("durations: expected ", n_ops,
                                                   " uniform and row entries; got ",
                                                   d.uniform.size(), " and ", d.row.size()));
  }
  const size_t n = static_cast<size_t>(g.num_devices());
  if (d.per_device.size() % n != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "durations: expected rows of ", n, " per-device values; got ", d.per_device.size()));
  }
  const int64_t rows = static_cast<int64_t>(d.per_device.size() / n);
  for (size_t i = 0; i < n_ops; ++i) {
    if (d.row[i] >= rows) {
      return absl::InvalidArgumentError(
          absl::StrCat("op ", i, ": expected a duration row below ", rows, "; got ", d.row[i]));
    }
  }
  return absl::OkStatus();
}

// An op's mean duration over the devices: its uniform time, or the sum of its row in device
// order over the device count.
double Mean(const ScheduleDurations& d, int64_t op, int64_t n) {
  if (d.row[op] < 0) return d.uniform[op];
  const double* row = &d.per_device[static_cast<size_t>(d.row[op]) * n];
  double sum = 0;
  for (int64_t k = 0; k < n; ++k) sum += row[k];
  return sum / static_cast<double>(n);
}

// Step 1: the static order, by HLFET list scheduling on mean durations.
std::vector<int64_t> ListOrder(const ScheduleGraph& g, const ScheduleDurations& d) {
  const int64_t n = g.num_ops();
  std::vector<double> mean(n);
  for (int64_t i = 0; i < n; ++i) mean[i] = Mean(d, i, g.num_devices());
  std::vector<int64_t> pending(n, 0);
  for (int64_t i = 0; i < n; ++i) pending[i] = static_cast<int64_t>(g.op(i).operands.size());
  // Bottom level: the longest path from an op's start to the end.
  std::vector<double> level(n, 0);
  for (int64_t i = n - 1; i >= 0; --i) {
    double tail = 0;
    for (const int64_t* u = g.users_begin(i); u != g.users_end(i); ++u) {
      tail = std::max(tail, level[*u]);
    }
    level[i] = mean[i] + tail;
  }
  std::vector<double> ready_at(n, 0), finish(n, 0);
  double stream_free[3] = {0, 0, 0};
  // Ready ops by (higher level first, then earlier index).
  auto cmp = [&](int64_t a, int64_t b) {
    return level[a] != level[b] ? level[a] < level[b] : a > b;
  };
  std::vector<int64_t> heap;
  heap.reserve(n);
  std::priority_queue<int64_t, std::vector<int64_t>, decltype(cmp)> ready(cmp, std::move(heap));
  for (int64_t i = 0; i < n; ++i) {
    if (pending[i] == 0) ready.push(i);
  }
  std::vector<int64_t> order;
  order.reserve(n);
  while (!ready.empty()) {
    const int64_t i = ready.top();
    ready.pop();
    const Stream stream = g.op(i).stream;
    const int s = static_cast<int>(stream);
    const double start =
        stream == Stream::kNone ? ready_at[i] : std::max(ready_at[i], stream_free[s]);
    finish[i] = start + mean[i];
    if (stream != Stream::kNone) stream_free[s] = finish[i];
    order.push_back(i);
    for (const int64_t* u = g.users_begin(i); u != g.users_end(i); ++u) {
      ready_at[*u] = std::max(ready_at[*u], finish[i]);
      if (--pending[*u] == 0) ready.push(*u);
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

// Device classes (schedule.h): one class of all devices refined by every per-device duration,
// then by the set of classes each collective group meets, until nothing splits. Any partition
// whose devices provably share their timelines gives the same bits; the coarsest is the
// cheapest to simulate.
struct Classes {
  std::vector<int64_t> of;              // per device
  std::vector<int64_t> representative;  // per class, the lowest device id
  // Per group structure (ScheduleGraph::group_structure; none with one class): the distinct
  // classes each group meets, and per class its representative's group (-1: in no group, it
  // waits for no one).
  struct Meets {
    std::vector<std::vector<int64_t>> sets;
    std::vector<int64_t> set_of;
  };
  std::vector<Meets> meets;
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

// Devices by their durations on every row, compared with ==: classes numbered by first
// appearance. Hashes each device's row values, then checks every device against its class's
// first device; should a hash hide a difference (or a NaN compare unequal) it refines row by
// row instead. Returns the number of classes.
int64_t DurationClasses(const ScheduleDurations& d, int64_t n, std::vector<int64_t>& of) {
  const int64_t rows = static_cast<int64_t>(d.per_device.size()) / n;
  bool constant = true;
  for (int64_t r = 0; r < rows && constant; ++r) {
    const double* row = &d.per_device[r * n];
    for (int64_t k = 1; k < n && constant; ++k) constant = row[k] == row[0];
  }
  if (constant) return 1;
  std::vector<uint64_t> hash(n, 1469598103934665603ull);
  for (int64_t r = 0; r < rows; ++r) {
    const double* row = &d.per_device[r * n];
    for (int64_t k = 0; k < n; ++k) {
      uint64_t bits = 0;
      if (row[k] != 0) std::memcpy(&bits, &row[k], sizeof bits);  // 0 and -0 alike, as ==
      hash[k] = (hash[k] ^ bits) * 1099511628211ull;
      hash[k] ^= hash[k] >> 29;
    }
  }
  const int64_t count = Relabel(hash, of);
  std::vector<int64_t> first(count, -1);
  for (int64_t k = 0; k < n; ++k) {
    if (first[of[k]] < 0) first[of[k]] = k;
  }
  bool exact = true;
  for (int64_t r = 0; r < rows && exact; ++r) {
    const double* row = &d.per_device[r * n];
    for (int64_t k = 0; k < n && exact; ++k) exact = row[k] == row[first[of[k]]];
  }
  if (exact) return count;
  std::fill(of.begin(), of.end(), 0);
  int64_t refined = 1;
  std::vector<std::pair<int64_t, double>> by_duration(n);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t k = 0; k < n; ++k) by_duration[k] = {of[k], d.per_device[r * n + k]};
    refined = Relabel(by_duration, of);
  }
  return refined;
}

Classes FindClasses(const ScheduleGraph& g, const ScheduleDurations& durations) {
  const int64_t n = g.num_devices();
  Classes c;
  c.of.assign(n, 0);
  int64_t count = 1;
  if (n > 1 && !durations.per_device.empty()) count = DurationClasses(durations, n, c.of);
  // A device in no group waits for its own class only, as in a group of its class alone: so
  // one class stays one class.
  std::vector<std::pair<int64_t, int64_t>> by_group(n);
  std::vector<std::vector<int64_t>> sets;
  // Collectives with the same groups refine alike: each structure is applied once per pass (the
  // coarsest stable partition does not depend on the order of refinements).
  for (bool changed = true; changed && count > 1 && count < n;) {
    changed = false;
    for (int64_t i : g.structure_ops()) {
      const ScheduleOp& op = g.op(i);
      const std::vector<int64_t> set_id = GroupClassSets(op, c.of, sets);
      for (int64_t d = 0; d < n; ++d) by_group[d] = {c.of[d], -1 - c.of[d]};
      for (size_t k = 0; k < op.groups.size(); ++k) {
        // A group of one class alone is the same as no group.
        const bool alone = sets[set_id[k]].size() == 1;
        for (int64_t d : op.groups[k]) by_group[d].second = alone ? -1 - c.of[d] : set_id[k];
      }
      const int64_t refined = Relabel(by_group, c.of);
      changed = changed || refined != count;
      count = refined;
    }
  }
  c.representative.assign(count, -1);
  for (int64_t d = n - 1; d >= 0; --d) c.representative[c.of[d]] = d;
  // One class: every group meets only it, and a collective waits for no one else.
  if (count == 1) return c;
  // Per group structure and group, the distinct classes it meets (in order of first member; the
  // simulation takes their latest start, which no order changes).
  c.meets.resize(g.structure_ops().size());
  std::vector<int64_t> group_of(n, -1), seen(count, -1);
  int64_t stamp = 0;
  for (size_t structure = 0; structure < g.structure_ops().size(); ++structure) {
    const ScheduleOp& op = g.op(g.structure_ops()[structure]);
    Classes::Meets& m = c.meets[structure];
    m.sets.resize(op.groups.size());
    for (size_t k = 0; k < op.groups.size(); ++k, ++stamp) {
      for (int64_t d : op.groups[k]) {
        group_of[d] = static_cast<int64_t>(k);
        if (seen[c.of[d]] != stamp) {
          seen[c.of[d]] = stamp;
          m.sets[k].push_back(c.of[d]);
        }
      }
    }
    m.set_of.assign(count, -1);
    for (int64_t k = 0; k < count; ++k) m.set_of[k] = group_of[c.representative[k]];
    for (const auto& group : op.groups) {
      for (int64_t d : group) group_of[d] = -1;
    }
  }
  return c;
}

// Class c's timeline (column c of the op-major arrays of nc classes), its communication busy
// time and its exposed communication.
void FillTimeline(const ScheduleGraph& g, const std::vector<double>& start,
                  const std::vector<double>& finish, int64_t c, int64_t nc, DeviceSchedule& ds) {
  const int64_t n_ops = g.num_ops();
  ds.start.resize(n_ops);
  ds.finish.resize(n_ops);
  for (int64_t i = 0; i < n_ops; ++i) {
    ds.start[i] = start[i * nc + c];
    ds.finish[i] = finish[i * nc + c];
  }
  std::vector<std::pair<double, double>> compute;
  ds.communication_busy = 0;
  for (int64_t i = 0; i < n_ops; ++i) {
    const double s = start[i * nc + c], f = finish[i * nc + c];
    if (g.op(i).stream == Stream::kCompute && f - s > 0) {
      compute.push_back({s, f});
    } else if (g.op(i).stream == Stream::kCommunication) {
      ds.communication_busy += f - s;
    }
  }
  // One compute stream: its intervals are disjoint once sorted.
  std::sort(compute.begin(), compute.end());
  std::vector<double> prefix(compute.size() + 1, 0);
  for (size_t k = 0; k < compute.size(); ++k) {
    prefix[k + 1] = prefix[k] + (compute[k].second - compute[k].first);
  }
  ds.exposed_communication = 0;
  for (int64_t i = 0; i < n_ops; ++i) {
    const double s = start[i * nc + c], f = finish[i * nc + c];
    if (g.op(i).stream == Stream::kCommunication && f > s) {
      const double covered = CoveredBefore(f, compute, prefix) - CoveredBefore(s, compute, prefix);
      ds.exposed_communication += (f - s) - covered;
    }
  }
}

// Collective groups compared by value through pointers (ScheduleGraph's group structures).
struct GroupsHash {
  size_t operator()(const std::vector<std::vector<int64_t>>* groups) const {
    return absl::Hash<std::vector<std::vector<int64_t>>>()(*groups);
  }
};
struct GroupsEqual {
  bool operator()(const std::vector<std::vector<int64_t>>* a,
                  const std::vector<std::vector<int64_t>>* b) const {
    return *a == *b;
  }
};

}  // namespace

absl::StatusOr<ScheduleGraph> ScheduleGraph::Create(ScheduleProblem problem) {
  if (absl::Status s = Check(problem, /*durations=*/false); !s.ok()) return s;
  ScheduleGraph g;
  g.num_devices_ = problem.num_devices;
  g.ops_ = std::move(problem.ops);
  const int64_t n = g.num_ops();
  g.user_begin_.assign(n + 1, 0);
  for (ScheduleOp& op : g.ops_) {
    op.duration.clear();
    for (int64_t o : op.operands) ++g.user_begin_[o + 1];
  }
  for (int64_t i = 0; i < n; ++i) g.user_begin_[i + 1] += g.user_begin_[i];
  g.users_.resize(g.user_begin_[n]);
  std::vector<int64_t> fill(g.user_begin_.begin(), g.user_begin_.end() - 1);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t o : g.ops_[i].operands) g.users_[fill[o]++] = i;
  }
  absl::flat_hash_map<const std::vector<std::vector<int64_t>>*, int64_t, GroupsHash, GroupsEqual>
      structures;
  g.structure_.assign(n, -1);
  for (int64_t i = 0; i < n; ++i) {
    const ScheduleOp& op = g.ops_[i];
    if (op.stream != Stream::kCommunication || op.groups.empty()) continue;
    auto [it, inserted] =
        structures.try_emplace(&op.groups, static_cast<int64_t>(g.structure_ops_.size()));
    if (inserted) g.structure_ops_.push_back(i);
    g.structure_[i] = it->second;
  }
  return g;
}

absl::StatusOr<Schedule> SimulateSchedule(const ScheduleProblem& p) {
  if (absl::Status s = Check(p, /*durations=*/true); !s.ok()) return s;
  ScheduleDurations durations;
  durations.uniform.assign(p.ops.size(), 0);
  durations.row.assign(p.ops.size(), -1);
  for (size_t i = 0; i < p.ops.size(); ++i) {
    const std::vector<double>& d = p.ops[i].duration;
    if (d.size() == 1) {
      durations.uniform[i] = d[0];
    } else {
      durations.row[i] =
          static_cast<int32_t>(durations.per_device.size() / static_cast<size_t>(p.num_devices));
      durations.per_device.insert(durations.per_device.end(), d.begin(), d.end());
    }
  }
  absl::StatusOr<ScheduleGraph> graph = ScheduleGraph::Create(p);
  if (!graph.ok()) return graph.status();
  return SimulateSchedule(*graph, durations);
}

absl::StatusOr<Schedule> SimulateSchedule(const ScheduleGraph& g,
                                          const ScheduleDurations& durations,
                                          const SimulateOptions& options) {
  if (absl::Status s = CheckDurations(g, durations); !s.ok()) return s;
  const int64_t n_ops = g.num_ops();
  const int64_t n = g.num_devices();
  Schedule schedule;
  schedule.order = ListOrder(g, durations);
  Classes classes = FindClasses(g, durations);
  const int64_t nc = static_cast<int64_t>(classes.representative.size());
  schedule.device_class = std::move(classes.of);
  schedule.representative = classes.representative;

  // Step 2 on the classes, op-major: start/finish[op · nc + class]; every entry is written once
  // (the order holds every op), so the arrays are reused from call to call, uninitialised.
  thread_local std::vector<double> start, finish;
  start.resize(static_cast<size_t>(n_ops * nc));
  finish.resize(static_cast<size_t>(n_ops * nc));
  std::vector<double> compute_free(nc, 0), comm_free(nc, 0), tentative(nc, 0), set_max;
  double* t = tentative.data();
  for (int64_t i : schedule.order) {
    const ScheduleOp& op = g.op(i);
    std::fill(t, t + nc, 0.0);
    for (int64_t o : op.operands) {
      const double* f = &finish[o * nc];
      for (int64_t c = 0; c < nc; ++c) t[c] = std::max(t[c], f[c]);
    }
    double* free = op.stream == Stream::kCompute         ? compute_free.data()
                   : op.stream == Stream::kCommunication ? comm_free.data()
                                                         : nullptr;
    if (free != nullptr) {
      for (int64_t c = 0; c < nc; ++c) t[c] = std::max(t[c], free[c]);
    }
    const int64_t structure = g.group_structure(i);
    if (structure >= 0 && !classes.meets.empty()) {
      const Classes::Meets& m = classes.meets[structure];
      // A collective starts when the last member of the group is ready.
      set_max.resize(m.sets.size());
      for (size_t k = 0; k < m.sets.size(); ++k) {
        if (m.sets[k].empty()) continue;  // an empty group: no class is in it
        double latest = t[m.sets[k].front()];
        for (int64_t member : m.sets[k]) latest = std::max(latest, t[member]);
        set_max[k] = latest;
      }
      for (int64_t c = 0; c < nc; ++c) {
        if (m.set_of[c] >= 0) t[c] = set_max[m.set_of[c]];
      }
    }
    double* s = &start[i * nc];
    double* f = &finish[i * nc];
    const int32_t row = durations.row[i];
    if (row < 0) {
      const double d = durations.uniform[i];
      for (int64_t c = 0; c < nc; ++c) {
        s[c] = t[c];
        f[c] = t[c] + d;
      }
    } else {
      const double* d = &durations.per_device[static_cast<size_t>(row) * n];
      for (int64_t c = 0; c < nc; ++c) {
        s[c] = t[c];
        f[c] = t[c] + d[classes.representative[c]];
      }
    }
    if (free != nullptr) std::copy(f, f + nc, free);
  }

  // Per class: makespan and compute busy time (in op order), what picks the slowest device.
  std::vector<double> makespan(nc, 0), compute_busy(nc, 0);
  for (int64_t i = 0; i < n_ops; ++i) {
    const double* s = &start[i * nc];
    const double* f = &finish[i * nc];
    for (int64_t c = 0; c < nc; ++c) makespan[c] = std::max(makespan[c], f[c]);
    if (g.op(i).stream != Stream::kCompute) continue;
    for (int64_t c = 0; c < nc; ++c) compute_busy[c] += f[c] - s[c];
  }
  schedule.classes.assign(nc, DeviceSchedule{});
  for (int64_t c = 0; c < nc; ++c) {
    schedule.classes[c].makespan = makespan[c];
    schedule.classes[c].compute_busy = compute_busy[c];
  }
  // The slowest device: the largest makespan; among devices that finish at the same time (a
  // final collective synchronises them), the one with the most compute, which the others waited
  // for; then the lowest id.
  double busiest = 0;
  for (int64_t d = 0; d < n; ++d) {
    const DeviceSchedule& ds = schedule.device(d);
    if (ds.makespan > schedule.makespan ||
        (ds.makespan == schedule.makespan && ds.compute_busy > busiest)) {
      schedule.makespan = ds.makespan;
      schedule.slowest_device = d;
      busiest = ds.compute_busy;
    }
  }
  const int64_t slowest_class =
      schedule.device_class.empty() ? 0 : schedule.device_class[schedule.slowest_device];
  for (int64_t c = 0; c < nc; ++c) {
    if (!options.every_class && c != slowest_class) continue;
    FillTimeline(g, start, finish, c, nc, schedule.classes[c]);
  }
  // Keep at most 64 MiB between calls.
  if (start.capacity() > (size_t{4} << 20)) {
    std::vector<double>().swap(start);
    std::vector<double>().swap(finish);
  }
  return schedule;
}

}  // namespace perfsim
