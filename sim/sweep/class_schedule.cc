// Mirrors sim/schedule/schedule.cc (ListOrder, SimulateSchedule) operation for operation, so
// that the figures are bit-identical; the only change is that devices with identical timelines
// are simulated once.
#include "sim/sweep/class_schedule.h"

#include <algorithm>
#include <cstring>
#include <queue>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"

namespace perfsim {
namespace {

// SimulateSchedule's Mean: the value itself, or the sum over devices in device order / n.
double Mean(const DurationTable& d, int64_t op) {
  const int32_t r = d.row[op];
  if (r < 0) return d.uniform[op];
  double sum = 0;
  for (double v : d.per_device[r]) sum += v;
  return sum / static_cast<double>(d.num_devices);
}

std::vector<int64_t> ListOrder(const StagedStep& step, const DurationTable& d) {
  const int64_t n = static_cast<int64_t>(step.ops.size());
  std::vector<double> mean(n);
  for (int64_t i = 0; i < n; ++i) mean[i] = Mean(d, i);
  std::vector<int64_t> pending(n, 0);
  for (int64_t i = 0; i < n; ++i) pending[i] = static_cast<int64_t>(step.ops[i].operands.size());
  std::vector<double> level(n, 0);
  for (int64_t i = n - 1; i >= 0; --i) {
    double tail = 0;
    for (int64_t k = step.user_begin[i]; k < step.user_begin[i + 1]; ++k) {
      tail = std::max(tail, level[step.users[k]]);
    }
    level[i] = mean[i] + tail;
  }
  std::vector<double> ready_at(n, 0), finish(n, 0);
  double stream_free[3] = {0, 0, 0};
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
    const Stream stream = step.ops[i].stream;
    const int s = static_cast<int>(stream);
    const double start =
        stream == Stream::kNone ? ready_at[i] : std::max(ready_at[i], stream_free[s]);
    finish[i] = start + mean[i];
    if (stream != Stream::kNone) stream_free[s] = finish[i];
    order.push_back(i);
    for (int64_t k = step.user_begin[i]; k < step.user_begin[i + 1]; ++k) {
      const int64_t u = step.users[k];
      ready_at[u] = std::max(ready_at[u], finish[i]);
      if (--pending[u] == 0) ready.push(u);
    }
  }
  return order;
}

// Devices with equal durations on every per-device op, numbered by first appearance; each
// class's representative is its lowest device. Empty when a hash collision hides a difference
// (the caller then simulates every device).
struct Classes {
  std::vector<int32_t> of;   // per device
  std::vector<int64_t> rep;  // per class
};

Classes DurationClasses(const DurationTable& d) {
  const int64_t n = d.num_devices;
  Classes c;
  c.of.assign(n, 0);
  if (d.per_device.empty()) {
    c.rep = {0};
    return c;
  }
  std::vector<uint64_t> hash(n, 1469598103934665603ull);
  for (const std::vector<double>& row : d.per_device) {
    for (int64_t dev = 0; dev < n; ++dev) {
      uint64_t bits;
      std::memcpy(&bits, &row[dev], sizeof bits);
      hash[dev] = (hash[dev] ^ bits) * 1099511628211ull;
      hash[dev] ^= hash[dev] >> 29;
    }
  }
  absl::flat_hash_map<uint64_t, int32_t> ids;
  for (int64_t dev = 0; dev < n; ++dev) {
    auto [it, inserted] = ids.try_emplace(hash[dev], static_cast<int32_t>(c.rep.size()));
    if (inserted) c.rep.push_back(dev);
    c.of[dev] = it->second;
  }
  for (const std::vector<double>& row : d.per_device) {
    for (int64_t dev = 0; dev < n; ++dev) {
      if (!(row[dev] == row[c.rep[c.of[dev]]])) return Classes{};
    }
  }
  return c;
}

Classes IdentityClasses(int64_t n) {
  Classes c;
  c.of.resize(n);
  c.rep.resize(n);
  for (int64_t d = 0; d < n; ++d) {
    c.of[d] = static_cast<int32_t>(d);
    c.rep[d] = d;
  }
  return c;
}

// What op i's group synchronisation does to the classes: class c's devices sit in a group whose
// members are the classes sets[set_of[c]] (set_of[c] < 0: in no group, c keeps its own start).
struct OpMeets {
  std::vector<int32_t> set_of;
  std::vector<std::vector<int32_t>> sets;
};
using Meets = std::vector<OpMeets>;

// False when two devices of one class meet different classes (the classes are then not exact).
bool CollectiveMeets(const StagedStep& step,
                     const std::vector<std::vector<std::vector<int64_t>>>& groups,
                     const Classes& classes, int64_t n, Meets& meets) {
  const int64_t num_classes = static_cast<int64_t>(classes.rep.size());
  meets.assign(step.ops.size(), OpMeets{});
  std::vector<int32_t> group_of(n, -1);
  std::vector<char> seen(num_classes, 0);
  for (size_t i = 0; i < step.ops.size(); ++i) {
    if (step.ops[i].stream != Stream::kCommunication || groups[i].empty()) continue;
    OpMeets& m = meets[i];
    m.sets.resize(groups[i].size());
    std::fill(group_of.begin(), group_of.end(), -1);
    for (size_t g = 0; g < groups[i].size(); ++g) {
      std::vector<int32_t>& set = m.sets[g];
      for (int64_t d : groups[i][g]) {
        group_of[d] = static_cast<int32_t>(g);
        set.push_back(classes.of[d]);
      }
      std::sort(set.begin(), set.end());
      set.erase(std::unique(set.begin(), set.end()), set.end());
    }
    m.set_of.assign(num_classes, -1);
    std::fill(seen.begin(), seen.end(), 0);
    const auto same = [&m](int32_t c, int32_t a, int32_t b) {
      if (a == b) return true;
      const std::vector<int32_t> self = {c};
      const std::vector<int32_t>& x = a < 0 ? self : m.sets[a];
      const std::vector<int32_t>& y = b < 0 ? self : m.sets[b];
      return x == y;
    };
    for (int64_t d = 0; d < n; ++d) {
      const int32_t c = classes.of[d];
      if (!seen[c]) {
        seen[c] = 1;
        m.set_of[c] = group_of[d];
      } else if (!same(c, m.set_of[c], group_of[d])) {
        return false;
      }
    }
  }
  return true;
}

// Seconds of the sorted, disjoint intervals `busy` before time t (schedule.cc's CoveredBefore).
double CoveredBefore(double t, const std::vector<std::pair<double, double>>& busy,
                     const std::vector<double>& prefix) {
  auto it = std::upper_bound(busy.begin(), busy.end(), std::make_pair(t, 1e300));
  if (it == busy.begin()) return 0;
  const size_t k = static_cast<size_t>(it - busy.begin()) - 1;
  return prefix[k] + std::max(0.0, std::min(t, busy[k].second) - busy[k].first);
}

}  // namespace

absl::StatusOr<ClassSchedule> ScheduleOnClasses(
    const StagedStep& step, const DurationTable& durations,
    const std::vector<std::vector<std::vector<int64_t>>>& groups) {
  const int64_t n_ops = static_cast<int64_t>(step.ops.size());
  const int64_t n = durations.num_devices;
  for (int64_t i = 0; i < n_ops; ++i) {
    for (const auto& group : groups[i]) {
      for (int64_t d : group) {
        if (d < 0 || d >= n) {
          return absl::InvalidArgumentError(
              absl::StrCat("op ", i, ": expected group devices below ", n, "; got ", d));
        }
      }
    }
  }
  ClassSchedule result;
  result.order = ListOrder(step, durations);

  Classes classes = DurationClasses(durations);
  // One class: every device runs the same timeline and a collective's members are all ready
  // at once, so there is nothing to synchronise (meets stays empty).
  Meets meets(step.ops.size());
  if (classes.rep.empty() ||
      (classes.rep.size() > 1 && !CollectiveMeets(step, groups, classes, n, meets))) {
    classes = IdentityClasses(n);
    CollectiveMeets(step, groups, classes, n, meets);
  }
  const int64_t nc = static_cast<int64_t>(classes.rep.size());
  result.classes = nc;

  // finish/start[op · nc + class]; loops run over classes innermost (contiguous).
  std::vector<double> start(n_ops * nc, 0), finish(n_ops * nc, 0);
  std::vector<double> compute_free(nc, 0), comm_free(nc, 0), tentative(nc, 0), set_max;
  std::vector<std::vector<double>> at_rep(durations.per_device.size(), std::vector<double>(nc));
  for (size_t r = 0; r < durations.per_device.size(); ++r) {
    for (int64_t c = 0; c < nc; ++c) at_rep[r][c] = durations.per_device[r][classes.rep[c]];
  }
  double* t = tentative.data();
  for (int64_t i : result.order) {
    const StagedOp& op = step.ops[i];
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
    if (op.stream == Stream::kCommunication && !meets[i].sets.empty()) {
      const OpMeets& m = meets[i];
      set_max.assign(m.sets.size(), 0.0);
      for (size_t k = 0; k < m.sets.size(); ++k) {
        for (int32_t member : m.sets[k]) set_max[k] = std::max(set_max[k], t[member]);
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
      const double* d = at_rep[row].data();
      for (int64_t c = 0; c < nc; ++c) {
        s[c] = t[c];
        f[c] = t[c] + d[c];
      }
    }
    if (free != nullptr) std::copy(f, f + nc, free);
  }
  // The slowest device: the lowest id with the largest makespan (SimulateSchedule keeps the
  // first strictly larger one; representatives ascend with their class ids).
  int64_t slow = 0;
  std::vector<double> makespan(nc, 0);
  for (int64_t i = 0; i < n_ops; ++i) {
    const double* f = &finish[i * nc];
    for (int64_t c = 0; c < nc; ++c) makespan[c] = std::max(makespan[c], f[c]);
  }
  for (int64_t c = 0; c < nc; ++c) {
    if (makespan[c] > result.makespan) {
      result.makespan = makespan[c];
      slow = c;
    }
  }
  result.slowest_device = classes.rep[slow];
  result.start.resize(n_ops);
  result.finish.resize(n_ops);
  std::vector<std::pair<double, double>> compute;
  for (int64_t i = 0; i < n_ops; ++i) {
    const double s = start[i * nc + slow], f = finish[i * nc + slow];
    result.start[i] = s;
    result.finish[i] = f;
    const double len = f - s;
    if (step.ops[i].stream == Stream::kCompute) {
      result.compute_busy += len;
      if (len > 0) compute.push_back({s, f});
    } else if (step.ops[i].stream == Stream::kCommunication) {
      result.communication_busy += len;
    }
  }
  std::sort(compute.begin(), compute.end());
  std::vector<double> prefix(compute.size() + 1, 0);
  for (size_t k = 0; k < compute.size(); ++k) {
    prefix[k + 1] = prefix[k] + (compute[k].second - compute[k].first);
  }
  for (int64_t i = 0; i < n_ops; ++i) {
    if (step.ops[i].stream == Stream::kCommunication && result.finish[i] > result.start[i]) {
      const double covered = CoveredBefore(result.finish[i], compute, prefix) -
                             CoveredBefore(result.start[i], compute, prefix);
      result.exposed_communication += (result.finish[i] - result.start[i]) - covered;
    }
  }
  return result;
}

}  // namespace perfsim
