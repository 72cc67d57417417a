// Any traffic matrix routed over the topology: the link-load model behind all-to-all,
// ragged all-to-all and collective-permute.
//
//   // 4 devices on an open line (TPU v5e "4x1"), device 0 sends 1 MB to device 3:
//   TrafficMatrix m = TrafficMatrix::Zero({0, 1, 2, 3});
//   m.set(0, 3, 1e6);
//   RouteTraffic(m, t)->seconds;   // 1e6 / 45e9 + 3 hops * 1 us
//
// Routing. Every flow source -> destination goes dimension by dimension, outermost first
// (dimension-order routing, as on the TPU torus):
//   torus   the shorter way round on a wrapped dimension (a flow exactly half way round is split
//           in two halves, one each way), the only way on an open one; one link per hop
//   switch / scale-out / on-chip   one hop: the source's port out, the destination's port in
// A flow crossing NVLink domains takes InfiniBand first, from its own NIC, then NVLink inside
// the destination domain. Flows of a device to itself are local copies and load no link.
//
// Time. Each link's (or port's) bytes over its bandwidth times the direct efficiency factor;
// the busiest one decides the transfer time. A link's bandwidth is the datasheet's times its
// class's efficiency fraction (topology.h: an IB port at infiniband_fraction_of_peak, an NVLink
// port at nvlink_fraction_of_peak), so the link that bounds the exchange is found, and timed,
// at its own class's efficiency; busiest_link_fabric names that class. Every device's send and receive bytes are reported
// too: one routing matrix gives every device its sends and receives, and the slowest device
// decides the step. Latency is the longest route's sum of hop latencies (flows are pipelined,
// not stepped). seconds = fixed cost + transfer + latency.
#ifndef PERFSIM_SIM_COMM_TRAFFIC_H_
#define PERFSIM_SIM_COMM_TRAFFIC_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "sim/comm/topology.h"

namespace perfsim {

// Bytes between the devices of a set: bytes(i, j) goes from devices[i] to devices[j].
struct TrafficMatrix {
  std::vector<int64_t> devices;  // topology device ids, distinct
  std::vector<double> bytes;     // devices.size()^2, row-major: [source index][destination index]

  static TrafficMatrix Zero(std::vector<int64_t> devices);
  int64_t size() const { return static_cast<int64_t>(devices.size()); }
  double get(int64_t i, int64_t j) const { return bytes[i * size() + j]; }
  void set(int64_t i, int64_t j, double value) { bytes[i * size() + j] = value; }
  void add(int64_t i, int64_t j, double value) { bytes[i * size() + j] += value; }
  // Sum over all entries, local copies included.
  double TotalBytes() const;
};

struct DeviceTraffic {
  int64_t device = 0;
  double send_bytes = 0;     // to other devices
  double receive_bytes = 0;  // from other devices
};

struct TrafficTime {
  double seconds = 0;  // fixed + transfer + latency
  double fixed_seconds = 0;
  double transfer_seconds = 0;  // busiest link bytes / its bandwidth
  double latency_seconds = 0;   // longest route
  int64_t max_hops = 0;         // hops of the longest route carrying bytes
  double busiest_link_bytes = 0;
  std::string busiest_link;            // e.g. "x+ from (1,0,2)", "nvlink out of 3", "ib in to 8"
  LinkFabric busiest_link_fabric = LinkFabric::kIci;  // its class (meaningless when none)
  std::vector<DeviceTraffic> devices;  // in the order of the matrix's devices
  int64_t slowest_device = -1;         // most bytes sent or received (-1 when nothing moves)
};

// InvalidArgument when the matrix is malformed (size, repeated or out-of-range devices,
// negative or non-finite bytes).
//
// Speed. When the devices form a box (the product of one set of positions per dimension,
// listed in row-major order, as the replica group of a mesh axis is), the loads come from
// per-dimension sums of the matrix rather than from routing each of the n² flows: the leg of
// flow s -> t along dimension d runs at positions (t_<d, ·, s_>d) from s_d to t_d, so one sum
// over s_<d and t_>d gives every leg's bytes. Link loads are then sums in another order than
// flow by flow: the same bits whenever the byte counts are integers (or halves) below 2^52, as
// routing-derived traffic always is, and within rounding otherwise.
absl::StatusOr<TrafficTime> RouteTraffic(const TrafficMatrix& matrix, const Topology& topology);

// RouteTraffic of the matrix in which every device sends to_each[j] bytes to each other device
// j (an exchange where every source has the same rows, e.g. a uniform dispatch), or
// from_each[i] bytes from device i to each other device (its combine). The same result as the
// full matrix for integer byte counts, in O(n) link work on a box instead of O(n²).
absl::StatusOr<TrafficTime> RouteTrafficToEach(const std::vector<int64_t>& devices,
                                               const std::vector<double>& to_each,
                                               const Topology& topology);
absl::StatusOr<TrafficTime> RouteTrafficFromEach(const std::vector<int64_t>& devices,
                                                 const std::vector<double>& from_each,
                                                 const Topology& topology);

}  // namespace perfsim

#endif  // PERFSIM_SIM_COMM_TRAFFIC_H_
