// Collective time on a topology: pure functions (bytes, group, topology) -> CollectiveTime.
//
//   PERFSIM_ASSIGN_OR_RETURN(Topology t, Topology::Create(chip, "4x4x4"));     // tpu_v5p
//   PERFSIM_ASSIGN_OR_RETURN(CollectiveTime ag, AllGatherTime(64 << 20, {0, 16, 32, 48}, t));
//   ag.seconds;    // 3/4 * 64 MiB / (2 * 90 GB/s) + 2 * 1 us: a bidirectional ring along x
//
// Bytes, per device (the same on every member):
//   AllGatherTime      the gathered result (n shards of bytes/n each)
//   ReduceScatterTime  the input before scattering (the result is bytes/n)
//   AllReduceTime      the buffer reduced
//   AllToAllTime       the send buffer: bytes/n go to each member (one n-th stays local)
//   CollectivePermuteTime  what each source sends to its target
//
// Algorithms, per dimension a regular group spans (group.h), with n members, stride s, link
// bandwidth W per direction (topology.h) times the efficiency factor of the algorithm, hop
// latency a, and V the bytes the phase moves for each device:
//   ring                (open line, or the scale-out ring across NVLink domains)
//                       (n-1)/n * V / W          + (n-1) * s * a
//   bidirectional_ring  (members close a wrapped ring) half the data goes each way round
//                       (n-1)/n * V / (2 W)      + floor(n/2) * s * a
//   direct              (NVLink switch, on-chip) every member sends to every other at once
//                       (n-1)/n * V / W_port     + a
// Strided groups share links with the s groups interleaved with them, and the devices of one
// chip share its ICI links (devices_per_chip d), so torus bandwidth is W / (s * d).
//
// Several torus dimensions run at the same time (the scaling book, jax-ml/scaling-book
// sharding.md, "What happens when we AllGather over multiple axes?": the available bandwidth
// grows with the number of axes, T = max(T_min * sum_i |X_i| / 2, V / (W_bidir * N_axes))).
// The buffer is split into k
// equal parts, one per spanned torus dimension; part p gathers over the dimensions in the
// rotated order p, p+1, ..., p+k-1, as multi-dimensional ring algorithms do, so that every
// dimension's links carry a share at once. Along dimension d a part of P gathered bytes moves
// (n_d - 1)/N * P times the sizes of the dimensions it has already crossed, N the group size;
// the transfer is the busiest dimension's bytes over its rate (or, if longer, one part's chain
// through all the dimensions at their full rates), and each part crosses every dimension in
// turn, so the hop latencies add. On a 4x4x4 v5p (W = 9e10 B/s per direction) an
// all-gather of 64 shards of 16 MiB moves 63/64 * 1 GiB / 3 per device on each axis:
//   63 * 16 MiB / (3 * 2 * 9e10) + 3 * 2 hops = 1957.3 us + 6 us      (in sequence: 5872 us)
// The equal split is what the scaling book assumes; with unequal dimension rates (an open line
// beside a closed ring, a strided dimension) it can lose to running the dimensions in sequence,
// and then the dimensions run in sequence, slowest first (below).
//
// Different link classes run in sequence, one stage per class (the torus dimensions together
// are one stage): all-gather goes from the slowest stage to the fastest, so that the slow links
// move the smallest data (this order is optimal: swapping two stages changes the sum by
// (1/W_a - 1/W_b) terms of one sign); reduce-scatter goes fastest first; all-reduce is
// reduce-scatter then all-gather (each twice the stages). A group spanning NVLink and
// InfiniBand is therefore the hierarchical algorithm NCCL runs: reduce-scatter in the domain,
// all-reduce across domains on every rail, all-gather in the domain; a v7x group over torus
// axes and both cores gathers over the torus stage and the on-chip copy in sequence. Latency
// adds over stages. A group spanning one dimension is a single phase as above.
//
// All-to-all and collective-permute move each flow directly along its route (traffic.h:
// dimension-order on the torus, shortest way round on wrapped rings): their time is the most
// loaded link's bytes over its bandwidth (direct factor) plus the longest route's hop latency.
// For regular groups all-to-all has a closed form per dimension (n members along it, N in the
// group, m = bytes/N to each peer): the busiest link of a dimension carries
//   (N/n) * L(n) * m * s * d        (d = 1 for the on-chip dimension)
// where L(n), the flows crossing the busiest link of one line of n, is n^2/8 on an even closed
// ring ((n^2-1)/8 odd), floor(n/2)*ceil(n/2) on an open line and n-1 on a switch port; the
// latency is the sum over dimensions of the longest route (floor(n/2) * s or (n-1) * s hops; one
// through a switch). tests/comm checks it against routing every group's flows at once. The
// open-line form assumes flows stay inside the line, which shortest routing does unless the
// line covers more than half of a wrapped ring.
//
// Irregular groups (not a product of evenly spaced positions): all-gather, reduce-scatter and
// all-reduce run a ring through the members in group order, each step's flows routed; all-to-all
// routes the uniform exchange. Only that group's flows are counted there.
//
// Every result adds the fixed cost (topology.collective_fixed_seconds()) once. Efficiency
// factors come from the chip's EfficiencySpec: ring, bidirectional ring and direct phases use
// their own; scale-out phases of a group that also spans NVLink use the hierarchical factor.
// A group of one device costs nothing.
#ifndef PERFSIM_SIM_COMM_COLLECTIVES_H_
#define PERFSIM_SIM_COMM_COLLECTIVES_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "sim/comm/topology.h"

namespace perfsim {

enum class CollectiveAlgorithm {
  kNone,               // a group of one device: nothing moves
  kRing,               // unidirectional ring, or a bidirectional open line
  kBidirectionalRing,  // half the data each way round a closed ring
  kDirect,             // every member sends straight to every other (switch, routed flows)
  kHierarchical,       // stages in sequence (NVLink then InfiniBand; torus then on-chip)
  kMultiAxis,          // several torus dimensions at once, the buffer split among them
};

// "none", "ring", "bidirectional_ring", "direct", "hierarchical", "multi_axis".
absl::string_view CollectiveAlgorithmName(CollectiveAlgorithm algorithm);

// One phase: the collective along one dimension. Phases of one stage run at the same time (the
// torus dimensions of a multi-axis collective, each with its share of the buffer); stages run
// in order.
struct PhaseTime {
  std::string dimension;  // topology dimension name, e.g. "x", "nvlink", "ib"
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kNone;  // of this dimension's ring
  int64_t stage = 0;       // index of its stage: equal for phases that run concurrently
  int64_t group_size = 1;  // members along this dimension
  int64_t stride = 1;
  double link_bytes = 0;             // bytes on the busiest link, one direction
  double link_bytes_per_second = 0;  // bandwidth it was costed at (shares, efficiency)
  int64_t latency_steps = 0;         // hops of latency paid in sequence
  double transfer_seconds = 0;       // this dimension's links draining its share
  // Transfer of the whole stage: the longest transfer of its phases, or the longest chain of
  // one part of the buffer through the stage's dimensions when that is longer. Equal to
  // transfer_seconds for a stage of one phase.
  double stage_transfer_seconds = 0;
  double latency_seconds = 0;
  double seconds = 0;  // transfer + latency (of this dimension alone)
};

struct CollectiveTime {
  double seconds = 0;  // fixed + transfer + latency
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kNone;
  // In the order they run, stage by stage; empty for routed collectives. transfer_seconds is
  // the sum over stages of their stage_transfer_seconds.
  std::vector<PhaseTime> phases;
  // Bytes, one direction, on the link that takes longest to drain: of the slowest phase, or
  // of the busiest routed link.
  double busiest_link_bytes = 0;
  std::string busiest_link;  // "phase y" (phased), "x+ from (1,0,2)" (routed)
  double fixed_seconds = 0;
  double transfer_seconds = 0;
  double latency_seconds = 0;
};

// `group` lists distinct device ids of `topology`. InvalidArgument for bad groups or negative
// bytes.
absl::StatusOr<CollectiveTime> AllGatherTime(double bytes, absl::Span<const int64_t> group,
                                             const Topology& topology);
absl::StatusOr<CollectiveTime> ReduceScatterTime(double bytes, absl::Span<const int64_t> group,
                                                 const Topology& topology);
absl::StatusOr<CollectiveTime> AllReduceTime(double bytes, absl::Span<const int64_t> group,
                                             const Topology& topology);
absl::StatusOr<CollectiveTime> AllToAllTime(double bytes, absl::Span<const int64_t> group,
                                            const Topology& topology);
// Every (source, target) pair sends `bytes` at once; a target may appear once, a source once.
absl::StatusOr<CollectiveTime> CollectivePermuteTime(
    double bytes, absl::Span<const std::pair<int64_t, int64_t>> source_target_pairs,
    const Topology& topology);

}  // namespace perfsim

#endif  // PERFSIM_SIM_COMM_COLLECTIVES_H_
