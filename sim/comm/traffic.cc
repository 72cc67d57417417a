#include "sim/comm/traffic.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace perfsim {
namespace {

// Link loads, one slot per (device, dimension, direction). Torus slots hold the link from that
// chip to its +1 (direction 0) or -1 (direction 1) neighbour; switch, scale-out and on-chip slots
// hold the port out of (0) and into (1) the chip or device. Every slot of a chip except on-chip
// ones is kept at the chip's first device, so the devices of a chip load the same links.
class LinkLoads {
 public:
  explicit LinkLoads(const Topology& topology)
      : topology_(topology),
        loads_(static_cast<size_t>(topology.num_devices() * topology.rank() * 2), 0.0) {}

  void Add(int64_t device, int64_t dimension, int direction, double bytes) {
    if (topology_.dimension(dimension).kind != LinkKind::kOnChip) {
      device -= device % topology_.devices_per_chip();
    }
    loads_[Slot(device, dimension, direction)] += bytes;
  }

  // The slot whose bytes take longest over its bandwidth; -1 when nothing is loaded.
  int64_t Busiest(double efficiency) const {
    int64_t best = -1;
    double best_seconds = 0;
    for (size_t slot = 0; slot < loads_.size(); ++slot) {
      if (loads_[slot] <= 0) continue;
      const double seconds = loads_[slot] / Bandwidth(static_cast<int64_t>(slot), efficiency);
      if (best < 0 || seconds > best_seconds) {
        best = static_cast<int64_t>(slot);
        best_seconds = seconds;
      }
    }
    return best;
  }

  double bytes(int64_t slot) const { return loads_[slot]; }
  double Bandwidth(int64_t slot, double efficiency) const {
    const int64_t dimension = (slot / 2) % topology_.rank();
    return topology_.dimension(dimension).bytes_per_second_per_direction * efficiency;
  }

  // "x+ from (1,0,2)", "nvlink out of device 3", "ib in to device 8".
  std::string Describe(int64_t slot) const {
    const int direction = static_cast<int>(slot % 2);
    const int64_t dimension = (slot / 2) % topology_.rank();
    const int64_t device = slot / 2 / topology_.rank();
    const TopologyDimension& dim = topology_.dimension(dimension);
    if (dim.kind == LinkKind::kTorus) {
      std::vector<int64_t> coordinates = topology_.Coordinates(device);
      if (topology_.devices_per_chip() > 1) coordinates.pop_back();  // the core
      return absl::StrCat(dim.name, direction == 0 ? "+" : "-", " from (",
                          absl::StrJoin(coordinates, ","), ")");
    }
    return absl::StrCat(dim.name, direction == 0 ? " out of device " : " in to device ", device);
  }

 private:
  size_t Slot(int64_t device, int64_t dimension, int direction) const {
    return static_cast<size_t>((device * topology_.rank() + dimension) * 2 + direction);
  }

  const Topology& topology_;
  std::vector<double> loads_;
};

struct Route {
  int64_t hops = 0;
  double latency_seconds = 0;
};

// Walks `hops` steps of `direction` (+1 or -1) along torus dimension `d` from `coordinates`,
// loading each link with `bytes`. Moves `coordinates` and `device` to the end.
void WalkTorus(const Topology& topology, int64_t d, int direction, int64_t hops, double bytes,
               std::vector<int64_t>& coordinates, int64_t& device, LinkLoads& loads) {
  const TopologyDimension& dim = topology.dimension(d);
  for (int64_t h = 0; h < hops; ++h) {
    loads.Add(device, d, direction > 0 ? 0 : 1, bytes);
    const int64_t next = (coordinates[d] + direction + dim.size) % dim.size;
    device += (next - coordinates[d]) * dim.device_stride;
    coordinates[d] = next;
  }
}

// Routes one flow dimension by dimension (traffic.h) and returns its hops and latency.
Route RouteFlow(const Topology& topology, int64_t source, int64_t destination, double bytes,
                LinkLoads& loads) {
  Route route;
  std::vector<int64_t> at = topology.Coordinates(source);
  const std::vector<int64_t> to = topology.Coordinates(destination);
  int64_t device = source;
  for (int64_t d = 0; d < topology.rank(); ++d) {
    if (at[d] == to[d]) continue;
    const TopologyDimension& dim = topology.dimension(d);
    int64_t hops = 1;
    if (dim.kind == LinkKind::kTorus) {
      const int64_t forward = (to[d] - at[d] + dim.size) % dim.size;
      if (!dim.wraparound) {
        hops = std::abs(to[d] - at[d]);
        WalkTorus(topology, d, to[d] > at[d] ? 1 : -1, hops, bytes, at, device, loads);
      } else if (2 * forward == dim.size) {
        // Exactly half way round: half the bytes each way (both walks end at the same place).
        hops = forward;
        std::vector<int64_t> other = at;
        int64_t other_device = device;
        WalkTorus(topology, d, -1, hops, bytes / 2, other, other_device, loads);
        WalkTorus(topology, d, 1, hops, bytes / 2, at, device, loads);
      } else if (2 * forward < dim.size) {
        hops = forward;
        WalkTorus(topology, d, 1, hops, bytes, at, device, loads);
      } else {
        hops = dim.size - forward;
        WalkTorus(topology, d, -1, hops, bytes, at, device, loads);
      }
    } else {
      const int64_t next = device + (to[d] - at[d]) * dim.device_stride;
      loads.Add(device, d, 0, bytes);
      loads.Add(next, d, 1, bytes);
      device = next;
      at[d] = to[d];
    }
    route.hops += hops;
    route.latency_seconds += static_cast<double>(hops) * dim.hop_latency_seconds;
  }
  return route;
}

absl::Status ValidateMatrix(const TrafficMatrix& matrix, const Topology& topology) {
  const int64_t n = matrix.size();
  if (n == 0) {
    return absl::InvalidArgumentError("traffic matrix: expected at least one device; got none");
  }
  if (static_cast<int64_t>(matrix.bytes.size()) != n * n) {
    return absl::InvalidArgumentError(absl::StrCat("traffic matrix: expected ", n * n,
                                                   " entries for ", n, " devices; got ",
                                                   matrix.bytes.size()));
  }
  absl::flat_hash_set<int64_t> seen;
  for (int64_t d : matrix.devices) {
    if (d < 0 || d >= topology.num_devices()) {
      return absl::InvalidArgumentError(absl::StrCat("traffic matrix: expected device ids in [0, ",
                                                     topology.num_devices(), "); got ", d));
    }
    if (!seen.insert(d).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("traffic matrix: expected distinct devices; got ", d, " twice"));
    }
  }
  for (int64_t i = 0; i < n * n; ++i) {
    const double b = matrix.bytes[i];
    if (!std::isfinite(b) || b < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("traffic matrix: expected finite non-negative bytes; got ", b, " from ",
                       matrix.devices[i / n], " to ", matrix.devices[i % n]));
    }
  }
  return absl::OkStatus();
}

}  // namespace

TrafficMatrix TrafficMatrix::Zero(std::vector<int64_t> devices) {
  TrafficMatrix m;
  const size_t n = devices.size();
  m.devices = std::move(devices);
  m.bytes.assign(n * n, 0.0);
  return m;
}

double TrafficMatrix::TotalBytes() const {
  double total = 0;
  for (double b : bytes) total += b;
  return total;
}

absl::StatusOr<TrafficTime> RouteTraffic(const TrafficMatrix& matrix, const Topology& topology) {
  if (absl::Status s = ValidateMatrix(matrix, topology); !s.ok()) return s;
  const int64_t n = matrix.size();
  LinkLoads loads(topology);
  TrafficTime result;
  result.devices.resize(n);
  for (int64_t i = 0; i < n; ++i) result.devices[i].device = matrix.devices[i];
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      const double b = matrix.get(i, j);
      if (i == j || b <= 0) continue;
      result.devices[i].send_bytes += b;
      result.devices[j].receive_bytes += b;
      const Route route = RouteFlow(topology, matrix.devices[i], matrix.devices[j], b, loads);
      if (route.latency_seconds > result.latency_seconds) {
        result.latency_seconds = route.latency_seconds;
      }
      result.max_hops = std::max(result.max_hops, route.hops);
    }
  }
  double most = 0;
  for (const DeviceTraffic& d : result.devices) {
    const double heavier = std::max(d.send_bytes, d.receive_bytes);
    if (heavier > most) {
      most = heavier;
      result.slowest_device = d.device;
    }
  }
  const double efficiency = topology.efficiency().collective_direct_fraction_of_peak();
  const int64_t busiest = loads.Busiest(efficiency);
  if (busiest >= 0) {
    result.busiest_link_bytes = loads.bytes(busiest);
    result.busiest_link = loads.Describe(busiest);
    result.transfer_seconds = result.busiest_link_bytes / loads.Bandwidth(busiest, efficiency);
    result.fixed_seconds = topology.collective_fixed_seconds();
  }
  result.seconds = result.fixed_seconds + result.transfer_seconds + result.latency_seconds;
  return result;
}

}  // namespace perfsim
