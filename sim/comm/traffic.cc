#include "sim/comm/traffic.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "sim/util/status.h"

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
  // Add, for a device the caller already moved to its slot's device (Add's first step).
  void AddAt(int64_t slot_device, int64_t dimension, int direction, double bytes) {
    loads_[Slot(slot_device, dimension, direction)] += bytes;
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

  LinkFabric Fabric(int64_t slot) const {
    return topology_.dimension((slot / 2) % topology_.rank()).fabric;
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

// Walks `hops` steps of `direction` (+1 or -1) along torus dimension `d` from position `at` of
// `device`, loading each link with `bytes`.
void WalkTorus(const Topology& topology, int64_t d, int direction, int64_t hops, double bytes,
               int64_t at, int64_t device, LinkLoads& loads) {
  const TopologyDimension& dim = topology.dimension(d);
  for (int64_t h = 0; h < hops; ++h) {
    loads.Add(device, d, direction > 0 ? 0 : 1, bytes);
    const int64_t next = (at + direction + dim.size) % dim.size;
    device += (next - at) * dim.device_stride;
    at = next;
  }
}

// Hops of a leg from position `from` to `to` (different) along dimension `d`.
int64_t LegHops(const TopologyDimension& dim, int64_t from, int64_t to) {
  if (dim.kind != LinkKind::kTorus) return 1;
  if (!dim.wraparound) return std::abs(to - from);
  const int64_t forward = (to - from + dim.size) % dim.size;
  return 2 * forward <= dim.size ? forward : dim.size - forward;
}

// Loads the links of one leg of a route: along dimension `d` from `device` (at position
// `from`) to position `to` (different), as traffic.h says.
void RouteLeg(const Topology& topology, int64_t d, int64_t device, int64_t from, int64_t to,
              double bytes, LinkLoads& loads) {
  const TopologyDimension& dim = topology.dimension(d);
  if (dim.kind != LinkKind::kTorus) {
    loads.Add(device, d, 0, bytes);
    loads.Add(device + (to - from) * dim.device_stride, d, 1, bytes);
    return;
  }
  const int64_t forward = (to - from + dim.size) % dim.size;
  if (!dim.wraparound) {
    WalkTorus(topology, d, to > from ? 1 : -1, std::abs(to - from), bytes, from, device, loads);
  } else if (2 * forward == dim.size) {
    // Exactly half way round: half the bytes each way.
    WalkTorus(topology, d, -1, forward, bytes / 2, from, device, loads);
    WalkTorus(topology, d, 1, forward, bytes / 2, from, device, loads);
  } else if (2 * forward < dim.size) {
    WalkTorus(topology, d, 1, forward, bytes, from, device, loads);
  } else {
    WalkTorus(topology, d, -1, dim.size - forward, bytes, from, device, loads);
  }
}

// The links a leg along dimension `d` from position `from` to `to` loads, in RouteLeg's order:
// each as (position of the link's device along d, direction, share of the bytes).
struct LegLink {
  int64_t position = 0;
  int direction = 0;
  double share = 1;
};
std::vector<LegLink> LegLinks(const TopologyDimension& dim, int64_t from, int64_t to) {
  std::vector<LegLink> links;
  if (dim.kind != LinkKind::kTorus) return {{from, 0, 1.0}, {to, 1, 1.0}};
  auto walk = [&](int direction, int64_t hops, double share) {
    for (int64_t h = 0, at = from; h < hops; ++h) {
      links.push_back({at, direction > 0 ? 0 : 1, share});
      at = (at + direction + dim.size) % dim.size;
    }
  };
  const int64_t forward = (to - from + dim.size) % dim.size;
  if (!dim.wraparound) {
    walk(to > from ? 1 : -1, std::abs(to - from), 1.0);
  } else if (2 * forward == dim.size) {
    walk(-1, forward, 0.5);
    walk(1, forward, 0.5);
  } else if (2 * forward < dim.size) {
    walk(1, forward, 1.0);
  } else {
    walk(-1, dim.size - forward, 1.0);
  }
  return links;
}

// The route of one flow from `from` to `to` (coordinates): hops and latency, summed over the
// dimensions in routing order.
struct Route {
  int64_t hops = 0;
  double latency_seconds = 0;
};
Route RouteOf(const Topology& topology, const int64_t* from, const int64_t* to) {
  Route route;
  for (int64_t d = 0; d < topology.rank(); ++d) {
    if (from[d] == to[d]) continue;
    const TopologyDimension& dim = topology.dimension(d);
    const int64_t hops = LegHops(dim, from[d], to[d]);
    route.hops += hops;
    route.latency_seconds += static_cast<double>(hops) * dim.hop_latency_seconds;
  }
  return route;
}

// Any set of devices: every flow routed on its own, dimension by dimension.
void RouteEveryFlow(const TrafficMatrix& matrix, const Topology& topology,
                    const std::vector<int64_t>& coordinates, LinkLoads& loads) {
  const int64_t n = matrix.size(), rank = topology.rank();
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      const double b = matrix.get(i, j);
      if (i == j || b <= 0) continue;
      const int64_t* from = &coordinates[i * rank];
      const int64_t* to = &coordinates[j * rank];
      int64_t device = matrix.devices[i];
      for (int64_t d = 0; d < rank; ++d) {
        if (from[d] == to[d]) continue;
        RouteLeg(topology, d, device, from[d], to[d], b, loads);
        device += (to[d] - from[d]) * topology.dimension(d).device_stride;
      }
    }
  }
}

// The devices as a box: a product of one set of positions per dimension, listed in row-major
// order (as a replica group of a mesh axis usually is).
struct Box {
  std::vector<std::vector<int64_t>> positions;  // per dimension, ascending
  std::vector<int64_t> sizes;                   // positions[d].size()
};
std::optional<Box> AsBox(int64_t n, const Topology& topology,
                         const std::vector<int64_t>& coordinates) {
  const int64_t rank = topology.rank();
  Box box;
  box.positions.resize(rank);
  int64_t product = 1;
  std::vector<char> present;
  for (int64_t d = 0; d < rank; ++d) {
    present.assign(topology.dimension(d).size, 0);
    for (int64_t i = 0; i < n; ++i) present[coordinates[i * rank + d]] = 1;
    std::vector<int64_t>& p = box.positions[d];
    for (int64_t position = 0; position < static_cast<int64_t>(present.size()); ++position) {
      if (present[position]) p.push_back(position);
    }
    box.sizes.push_back(static_cast<int64_t>(p.size()));
    product *= box.sizes.back();
  }
  if (product != n) return std::nullopt;
  // Row-major: device j sits at the positions of j's mixed-radix digits.
  std::vector<int64_t> digits(rank, 0);
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t d = 0; d < rank; ++d) {
      if (coordinates[j * rank + d] != box.positions[d][digits[d]]) return std::nullopt;
    }
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (++digits[d] < box.sizes[d]) break;
      digits[d] = 0;
    }
  }
  return box;
}

// A box of devices: the loads of dimension-order routing without routing every flow. The leg
// of flow s -> t along dimension d runs at positions (t_0..t_{d-1}, ·, s_{d+1}..) from s_d to
// t_d, so its bytes are A_d[t_<d, s_d, t_d, s_>d] = Σ over s_<d and t_>d of the traffic: the
// matrix, read as a tensor [s_0..s_{r-1}, t_0..t_{r-1}], summed over t's trailing axes, then
// over s's leading ones; each entry of A_d is one leg, loaded once. Exact whenever the byte
// counts are integers (or halves) below 2^52, as every routing-derived matrix is.
void RouteBox(const TrafficMatrix& matrix, const Topology& topology, const Box& box,
              LinkLoads& loads) {
  const int64_t n = matrix.size(), rank = topology.rank();
  // x = Σ over t_>d, shape [n sources, P_d = ∏_{k<=d} sizes_k], from d = rank - 1 down (where
  // it is the matrix itself).
  const double* x = matrix.bytes.data();
  std::vector<double> reduced_storage, next;
  int64_t targets = n;  // P_d
  for (int64_t d = rank - 1; d >= 0; --d) {
    if (d < rank - 1) {
      const int64_t inner = box.sizes[d + 1];
      const int64_t reduced = targets / inner;
      next.assign(static_cast<size_t>(n * reduced), 0.0);
      for (int64_t i = 0; i < n; ++i) {
        const double* from = &x[i * targets];
        double* to = &next[i * reduced];
        for (int64_t p = 0; p < reduced; ++p) {
          double sum = 0;
          for (int64_t q = 0; q < inner; ++q) sum += from[p * inner + q];
          to[p] = sum;
        }
      }
      reduced_storage.swap(next);
      x = reduced_storage.data();
      targets = reduced;
    }
    if (box.sizes[d] == 1) continue;  // nothing moves along d
    // A_d = Σ over s_<d: sources are row-major, so s_<d is the outer block of `outer` rows.
    int64_t outer = 1;
    for (int64_t k = 0; k < d; ++k) outer *= box.sizes[k];
    const int64_t rows = n / outer;  // s_d, s_>d
    std::vector<double> a(static_cast<size_t>(rows * targets), 0.0);
    for (int64_t o = 0; o < outer; ++o) {
      const double* from = &x[o * rows * targets];
      for (int64_t k = 0; k < rows * targets; ++k) a[k] += from[k];
    }
    // Each entry: the source suffix (s_d, s_>d) = row r, the target prefix (t_<d, t_d) = p.
    const TopologyDimension& dim = topology.dimension(d);
    int64_t inner_sources = 1;  // ∏_{k>d} sizes_k
    for (int64_t k = d + 1; k < rank; ++k) inner_sources *= box.sizes[k];
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t s_d = box.positions[d][r / inner_sources];
      // Device at (0.., s_d, s_>d): the source's suffix, decoded.
      int64_t suffix_device = s_d * dim.device_stride;
      for (int64_t k = rank - 1, rest = r % inner_sources; k > d; --k) {
        suffix_device +=
            box.positions[k][rest % box.sizes[k]] * topology.dimension(k).device_stride;
        rest /= box.sizes[k];
      }
      for (int64_t p = 0; p < targets; ++p) {
        const double b = a[r * targets + p];
        if (b <= 0) continue;
        const int64_t t_d = box.positions[d][p % box.sizes[d]];
        if (t_d == s_d) continue;
        int64_t device = suffix_device;
        for (int64_t k = d - 1, rest = p / box.sizes[d]; k >= 0; --k) {
          device += box.positions[k][rest % box.sizes[k]] * topology.dimension(k).device_stride;
          rest /= box.sizes[k];
        }
        RouteLeg(topology, d, device, s_d, t_d, b, loads);
      }
    }
  }
}

absl::Status ValidateDevices(const std::vector<int64_t>& devices, const Topology& topology) {
  if (devices.empty()) {
    return absl::InvalidArgumentError("traffic matrix: expected at least one device; got none");
  }
  for (int64_t d : devices) {
    if (d < 0 || d >= topology.num_devices()) {
      return absl::InvalidArgumentError(absl::StrCat("traffic matrix: expected device ids in [0, ",
                                                     topology.num_devices(), "); got ", d));
    }
  }
  std::vector<int64_t> sorted = devices;
  std::sort(sorted.begin(), sorted.end());
  const auto repeated = std::adjacent_find(sorted.begin(), sorted.end());
  if (repeated != sorted.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("traffic matrix: expected distinct devices; got ", *repeated, " twice"));
  }
  return absl::OkStatus();
}

// Bytes must be finite and non-negative; `where(i)` names entry i in the message.
template <typename Where>
absl::Status ValidateBytes(const std::vector<double>& bytes, Where where) {
  // One branch-free pass finds whether any entry is bad; the slow one names the first.
  bool bad = false;
  for (double b : bytes) bad |= !(b >= 0 && b <= std::numeric_limits<double>::max());
  if (!bad) return absl::OkStatus();
  for (size_t i = 0; i < bytes.size(); ++i) {
    const double b = bytes[i];
    if (!std::isfinite(b) || b < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("traffic matrix: expected finite non-negative bytes; got ", b, where(i)));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateMatrix(const TrafficMatrix& matrix, const Topology& topology) {
  PERFSIM_RETURN_IF_ERROR(ValidateDevices(matrix.devices, topology));
  const int64_t n = matrix.size();
  if (static_cast<int64_t>(matrix.bytes.size()) != n * n) {
    return absl::InvalidArgumentError(absl::StrCat("traffic matrix: expected ", n * n,
                                                   " entries for ", n, " devices; got ",
                                                   matrix.bytes.size()));
  }
  return ValidateBytes(matrix.bytes, [&](size_t i) {
    return absl::StrCat(" from ", matrix.devices[i / n], " to ", matrix.devices[i % n]);
  });
}

std::vector<int64_t> CoordinatesOf(const std::vector<int64_t>& devices, const Topology& topology) {
  const int64_t n = static_cast<int64_t>(devices.size()), rank = topology.rank();
  std::vector<int64_t> coordinates(static_cast<size_t>(n * rank));
  for (int64_t i = 0; i < n; ++i) {
    const int32_t* c = topology.CoordinatesOf(devices[i]);
    for (int64_t d = 0; d < rank; ++d) coordinates[i * rank + d] = c[d];
  }
  return coordinates;
}

// The longest route of a box in which every pair of different devices exchanges bytes: the
// longest leg of each dimension combined (any combination of positions is a pair of the box),
// summed in routing order as a route is.
void BoxLatency(const Box& box, const Topology& topology, TrafficTime& result) {
  for (int64_t d = 0; d < topology.rank(); ++d) {
    const TopologyDimension& dim = topology.dimension(d);
    int64_t longest = 0;
    for (int64_t from : box.positions[d]) {
      for (int64_t to : box.positions[d]) {
        if (from != to) longest = std::max(longest, LegHops(dim, from, to));
      }
    }
    if (longest == 0) continue;
    result.max_hops += longest;
    result.latency_seconds += static_cast<double>(longest) * dim.hop_latency_seconds;
  }
}

// The longest route among the flows `carries(i, j)` says carry bytes.
template <typename Carries>
void FlowLatency(const std::vector<int64_t>& coordinates, const Topology& topology, int64_t n,
                 Carries carries, TrafficTime& result) {
  const int64_t rank = topology.rank();
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      if (i == j || !carries(i, j)) continue;
      const Route route = RouteOf(topology, &coordinates[i * rank], &coordinates[j * rank]);
      result.latency_seconds = std::max(result.latency_seconds, route.latency_seconds);
      result.max_hops = std::max(result.max_hops, route.hops);
    }
  }
}

// The slowest device, the busiest link and the time, once sends, receives, latency and the
// link loads are in.
void Finish(const Topology& topology, const LinkLoads& loads, TrafficTime& result) {
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
    result.busiest_link_fabric = loads.Fabric(busiest);
    result.transfer_seconds = result.busiest_link_bytes / loads.Bandwidth(busiest, efficiency);
    result.fixed_seconds = topology.collective_fixed_seconds();
  }
  result.seconds = result.fixed_seconds + result.transfer_seconds + result.latency_seconds;
}

// A box in which every source sends bytes(s, t) = v(t) (kToEach) or u(s) (kFromEach): the
// entries of RouteBox's A_d are products, no sum over n² flows needed. Along dimension d,
//   kToEach   A_d = N_<d · V_d[t_<=d],  V_d = Σ over t_>d of v,  N_<d = ∏_{k<d} sizes_k
//   kFromEach A_d = N_>d · U_d[s_>=d],  U_d = Σ over s_<d of u,  N_>d = ∏_{k>d} sizes_k
// (exactly RouteBox's sums when the bytes are integers below 2^52).
enum class Uniform { kToEach, kFromEach };
void RouteUniformBox(const std::vector<double>& values, Uniform kind, const Topology& topology,
                     const Box& box, LinkLoads& loads) {
  const int64_t n = static_cast<int64_t>(values.size()), rank = topology.rank();
  for (int64_t d = 0; d < rank; ++d) {
    if (box.sizes[d] == 1) continue;
    const TopologyDimension& dim = topology.dimension(d);
    int64_t before = 1, after = 1;  // N_<d, N_>d
    for (int64_t k = 0; k < d; ++k) before *= box.sizes[k];
    for (int64_t k = d + 1; k < rank; ++k) after *= box.sizes[k];
    const int64_t size = box.sizes[d];
    // Reduced values: kToEach over t_>d (index t_<=d, `before * size` entries); kFromEach over
    // s_<d (index s_>=d, `size * after` entries).
    std::vector<double> reduced;
    if (kind == Uniform::kToEach) {
      reduced.assign(static_cast<size_t>(before * size), 0.0);
      for (int64_t i = 0; i < n; ++i) reduced[i / after] += values[i];
    } else {
      reduced.assign(static_cast<size_t>(size * after), 0.0);
      for (int64_t i = 0; i < n; ++i) reduced[i % (size * after)] += values[i];
    }
    const double factor = static_cast<double>(kind == Uniform::kToEach ? before : after);
    // The links of a leg between any two positions of the box along d.
    std::vector<std::vector<LegLink>> legs(size * size);
    for (int64_t a = 0; a < size; ++a) {
      for (int64_t b = 0; b < size; ++b) {
        if (a != b) legs[a * size + b] = LegLinks(dim, box.positions[d][a], box.positions[d][b]);
      }
    }
    // Device offset of each source suffix's row (s_>d; s_d at position 0).
    std::vector<int64_t> row_offset(size * after, 0);
    for (int64_t r = 0; r < size * after; ++r) {
      for (int64_t k = rank - 1, rest = r % after; k > d; --k) {
        row_offset[r] +=
            box.positions[k][rest % box.sizes[k]] * topology.dimension(k).device_stride;
        rest /= box.sizes[k];
      }
    }
    // Every leg: target prefix (t_<d, t_d) = p, source suffix (s_d, s_>d) = r.
    for (int64_t p = 0; p < before * size; ++p) {
      int64_t prefix_device = 0;
      for (int64_t k = d - 1, rest = p / size; k >= 0; --k) {
        prefix_device +=
            box.positions[k][rest % box.sizes[k]] * topology.dimension(k).device_stride;
        rest /= box.sizes[k];
      }
      for (int64_t r = 0; r < size * after; ++r) {
        const int64_t s_index = r / after;
        if (s_index == p % size) continue;
        const double b = factor * reduced[kind == Uniform::kToEach ? p : r];
        if (b <= 0) continue;
        // The device of the leg's row at position 0 along d, moved to the device that holds
        // the row's link slots (the chip's first, but for on-chip links); positions along d
        // do not change the core, so every link of the leg is on that row.
        int64_t row = prefix_device + row_offset[r];
        if (dim.kind != LinkKind::kOnChip) row -= row % topology.devices_per_chip();
        for (const LegLink& link : legs[s_index * size + p % size]) {
          loads.AddAt(row + link.position * dim.device_stride, d, link.direction, b * link.share);
        }
      }
    }
  }
}

absl::StatusOr<TrafficTime> RouteUniform(const std::vector<int64_t>& devices,
                                         const std::vector<double>& values, Uniform kind,
                                         const Topology& topology) {
  PERFSIM_RETURN_IF_ERROR(ValidateDevices(devices, topology));
  const int64_t n = static_cast<int64_t>(devices.size());
  if (static_cast<int64_t>(values.size()) != n) {
    return absl::InvalidArgumentError(absl::StrCat(
        "traffic matrix: expected ", n, " byte counts for ", n, " devices; got ", values.size()));
  }
  PERFSIM_RETURN_IF_ERROR(ValidateBytes(values, [&](size_t i) {
    return absl::StrCat(kind == Uniform::kToEach ? " to " : " from ", devices[i]);
  }));
  const std::vector<int64_t> coordinates = CoordinatesOf(devices, topology);
  const std::optional<Box> box = AsBox(n, topology, coordinates);
  if (!box.has_value()) {
    TrafficMatrix matrix = TrafficMatrix::Zero(devices);
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < n; ++j) matrix.set(i, j, values[kind == Uniform::kToEach ? j : i]);
    }
    return RouteTraffic(matrix, topology);
  }
  TrafficTime result;
  result.devices.resize(n);
  double total = 0;
  bool every_pair = true;
  for (int64_t i = 0; i < n; ++i) {
    total += values[i];
    every_pair = every_pair && values[i] > 0;
  }
  const double others = static_cast<double>(n - 1);
  for (int64_t i = 0; i < n; ++i) {
    DeviceTraffic& t = result.devices[i];
    t.device = devices[i];
    // kToEach: device i sends v_j to every j != i and receives v_i from the n - 1 others.
    const double to_others = total - values[i], from_others = others * values[i];
    t.send_bytes = kind == Uniform::kToEach ? to_others : from_others;
    t.receive_bytes = kind == Uniform::kToEach ? from_others : to_others;
  }
  LinkLoads loads(topology);
  RouteUniformBox(values, kind, topology, *box, loads);
  if (every_pair && n > 1) {
    BoxLatency(*box, topology, result);
  } else {
    FlowLatency(
        coordinates, topology, n,
        [&](int64_t i, int64_t j) { return values[kind == Uniform::kToEach ? j : i] > 0; }, result);
  }
  Finish(topology, loads, result);
  return result;
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
  const std::vector<int64_t> coordinates = CoordinatesOf(matrix.devices, topology);
  // Sends and receives (the bytes are non-negative: zeros add nothing), and whether every flow
  // between two different devices carries bytes.
  std::vector<double> received(n, 0.0);
  int64_t empty_flows = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double* row = &matrix.bytes[i * n];
    double sent = 0;
    for (int64_t j = 0; j < n; ++j) {
      const double b = j == i ? 0.0 : row[j];
      sent += b;
      received[j] += b;
      empty_flows += b <= 0 ? 1 : 0;
    }
    result.devices[i].send_bytes = sent;
  }
  for (int64_t j = 0; j < n; ++j) result.devices[j].receive_bytes = received[j];
  const bool every_pair = empty_flows == n;  // only the n local "flows" are empty
  const std::optional<Box> box = AsBox(n, topology, coordinates);
  if (box.has_value()) {
    RouteBox(matrix, topology, *box, loads);
  } else {
    RouteEveryFlow(matrix, topology, coordinates, loads);
  }
  if (box.has_value() && every_pair && n > 1) {
    BoxLatency(*box, topology, result);
  } else {
    FlowLatency(
        coordinates, topology, n, [&](int64_t i, int64_t j) { return matrix.get(i, j) > 0; },
        result);
  }
  Finish(topology, loads, result);
  return result;
}

absl::StatusOr<TrafficTime> RouteTrafficToEach(const std::vector<int64_t>& devices,
                                               const std::vector<double>& to_each,
                                               const Topology& topology) {
  return RouteUniform(devices, to_each, Uniform::kToEach, topology);
}

absl::StatusOr<TrafficTime> RouteTrafficFromEach(const std::vector<int64_t>& devices,
                                                 const std::vector<double>& from_each,
                                                 const Topology& topology) {
  return RouteUniform(devices, from_each, Uniform::kFromEach, topology);
}

}  // namespace perfsim
