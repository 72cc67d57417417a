// Expert-parallel dispatch / combine time (ep_dispatch.h).
#include "sim/comm/ep_dispatch.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "sim/comm/traffic.h"
#include "sim/util/status.h"

namespace perfsim {
namespace {

TrafficMatrix Transposed(const TrafficMatrix& m) {
  TrafficMatrix t = TrafficMatrix::Zero(m.devices);
  for (int64_t i = 0; i < m.size(); ++i) {
    for (int64_t j = 0; j < m.size(); ++j) t.set(j, i, m.get(i, j));
  }
  return t;
}

}  // namespace

absl::string_view EpKernelModeName(EpKernelMode mode) {
  switch (mode) {
    case EpKernelMode::kNormal:
      return "normal";
    case EpKernelMode::kLowLatency:
      return "low-latency";
  }
  return "?";
}

absl::string_view EpPathName(EpPath path) {
  switch (path) {
    case EpPath::kNvlink:
      return "nvlink";
    case EpPath::kHierarchical:
      return "hierarchical";
    case EpPath::kFlat:
      return "flat";
  }
  return "?";
}

EpPath EpPathFor(EpKernelMode mode, int64_t nodes) {
  if (nodes <= 1) return EpPath::kNvlink;
  switch (mode) {
    case EpKernelMode::kNormal:
      return EpPath::kHierarchical;
    case EpKernelMode::kLowLatency:
      return EpPath::kFlat;
  }
  return EpPath::kHierarchical;
}

absl::StatusOr<EpTime> TimeEpExchange(const EpExchange& ep, const Chip& chip,
                                      const Topology& topology) {
  const int64_t g = ep.gpus_per_node;
  const int64_t ranks = ep.nodes * g;
  if (ep.nodes <= 0 || g <= 0 || topology.num_devices() != ranks) {
    return absl::InvalidArgumentError(absl::StrCat(
        "expert-parallel exchange: expected a topology of ", ep.nodes, " x ", g, " devices; got ",
        topology.ToString()));
  }
  if (!(ep.tokens_per_rank >= 0 && ep.bytes_per_token >= 0 && ep.p_node >= 0 && ep.p_rank >= 0 &&
        ep.sms >= 0)) {
    return absl::InvalidArgumentError(
        "expert-parallel exchange: expected non-negative tokens, bytes, probabilities and SMs");
  }
  EpTime out;
  out.path = EpPathFor(ep.mode, ep.nodes);
  std::vector<int64_t> devices;
  for (int64_t d = 0; d < ranks; ++d) devices.push_back(d);
  const double per_pair = ep.tokens_per_rank * ep.p_rank * ep.bytes_per_token;
  // NVLink (kNvlink, kHierarchical) or every rank (kFlat): who sends to whom.
  TrafficMatrix direct = TrafficMatrix::Zero(devices);
  for (int64_t s = 0; s < ranks; ++s) {
    for (int64_t r = 0; r < ranks; ++r) {
      if (r == s) continue;
      if (out.path == EpPath::kFlat) {
        direct.set(s, r, per_pair);
      } else if (r / g == s / g) {
        // With several nodes the forwarder (same local index) sends the tokens of every node.
        direct.set(s, r, static_cast<double>(ep.nodes) * per_pair);
      }
    }
  }
  if (ep.combine) direct = Transposed(direct);
  PERFSIM_ASSIGN_OR_RETURN(TrafficTime first, RouteTraffic(direct, topology));
  out.nvlink_seconds = first.transfer_seconds;
  out.bound = first.busiest_link_fabric;
  out.fixed_seconds = topology.collective_fixed_seconds() + first.latency_seconds;
  std::vector<double> sm_bytes(ranks, 0.0);
  for (int64_t i = 0; i < ranks; ++i) {
    sm_bytes[i] = first.devices[i].send_bytes + first.devices[i].receive_bytes;
  }
  double stages = out.nvlink_seconds;
  if (out.path == EpPath::kHierarchical) {
    // One copy per remote node reached, to the rank of the same local index.
    TrafficMatrix ib = TrafficMatrix::Zero(devices);
    const double per_node = ep.tokens_per_rank * ep.p_node * ep.bytes_per_token;
    for (int64_t s = 0; s < ranks; ++s) {
      for (int64_t node = 0; node < ep.nodes; ++node) {
        if (node != s / g) ib.set(s, node * g + s % g, per_node);
      }
    }
    if (ep.combine) ib = Transposed(ib);
    PERFSIM_ASSIGN_OR_RETURN(TrafficTime inter, RouteTraffic(ib, topology));
    out.scale_out_seconds = inter.transfer_seconds;
    out.fixed_seconds += inter.latency_seconds;
    if (inter.transfer_seconds > stages) out.bound = inter.busiest_link_fabric;
    stages = std::max(stages, inter.transfer_seconds);
    // The sender's SMs stage what it puts on the wire into its RDMA buffer; the NIC moves it.
    for (int64_t i = 0; i < ranks; ++i) sm_bytes[i] += inter.devices[i].send_bytes;
  }
  const double per_sm = chip.proto().compute().sm_copy_bytes_per_second_per_sm();
  double sm = 0;
  if (ep.sms > 0 && per_sm > 0) {
    out.sm_bytes = *std::max_element(sm_bytes.begin(), sm_bytes.end());
    out.sm_seconds = out.sm_bytes / (static_cast<double>(ep.sms) * per_sm);
    sm = out.sm_seconds / chip.proto().efficiency().sm_copy_fraction_of_peak();
  }
  out.seconds = out.fixed_seconds + std::max(stages, sm);
  return out;
}

}  // namespace perfsim
