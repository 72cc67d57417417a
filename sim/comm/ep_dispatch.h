// An expert-parallel dispatch or combine (DeepEP, HybridEP, NCCL EP): the expected traffic of
// uniform top-k routing, the path it takes, and the SMs that copy it.
//
//   EpExchange ep;                 // 2 nodes x 8 H100, 4096 tokens of 7392 B per rank
//   ep.nodes = 2; ep.gpus_per_node = 8; ep.tokens_per_rank = 4096; ep.bytes_per_token = 7392;
//   ep.p_node = 0.996; ep.p_rank = 0.405; ep.sms = 8;
//   PERFSIM_ASSIGN_OR_RETURN(EpTime t, TimeEpExchange(ep, chip, topology));
//   t.sm_seconds;                  // (NVLink sends + receives + IB sends) / (8 SMs x 63.4 GB/s)
//
// Paths (what a kernel's mode and the slice decide):
//   kNvlink        one NVLink domain: every rank sends each token once to every other rank that
//                  holds one of its experts (DeepEP intranode, HybridEP on one node or an NVL72
//                  rack).
//   kHierarchical  normal (high-throughput) mode over several domains: a token crosses the
//                  scale-out network once per remote node it needs, to the rank of the same local
//                  index, which forwards it over NVLink to the ranks it needs there (DeepEP
//                  internode, HybridEP). The two stages are pipelined: the slower one decides.
//   kFlat          low-latency mode: every (token, rank) pair is its own message straight to the
//                  destination rank (IB between nodes, NVLink inside one), no forwarding.
// Combine is the same traffic transposed.
//
// Time. Each stage's transfer is the busiest link of its traffic over that link's bandwidth
// (sim/comm/traffic.h: the link class's efficiency fraction included). A kernel given `sms` SMs
// also cannot copy faster than they can: every byte a rank sends or receives over NVLink, and
// every byte it stages into its RDMA buffer, passes through an SM's load/store path, at most
// compute.sm_copy_bytes_per_second_per_sm (32 B/clock, XLA) times efficiency.sm_copy_fraction_of
// _peak each. In normal mode the stages and the SM copy overlap (the kernels pipeline chunks
// through their buffers), so
//   seconds = fixed + max(IB stage, NVLink stage, SM copy) + latencies of the stages used
// where fixed = Topology::collective_fixed_seconds(). `sms` = 0 (not stated) or a chip with no
// sourced SM copy rate: no SM term. Low-latency mode's per-message cost is not modelled (no
// measurement informs it: shared/reference/calibration.csv has no low-latency row); its time is
// the flat traffic's.
#ifndef PERFSIM_SIM_COMM_EP_DISPATCH_H_
#define PERFSIM_SIM_COMM_EP_DISPATCH_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "sim/comm/topology.h"
#include "sim/hw/chip.h"

namespace perfsim {

enum class EpKernelMode { kNormal, kLowLatency };
enum class EpPath { kNvlink, kHierarchical, kFlat };

// "normal", "low-latency"; "nvlink", "hierarchical", "flat".
absl::string_view EpKernelModeName(EpKernelMode mode);
absl::string_view EpPathName(EpPath path);

struct EpExchange {
  int64_t nodes = 1;          // NVLink domains
  int64_t gpus_per_node = 1;  // ranks per domain
  double tokens_per_rank = 0;
  double bytes_per_token = 0;
  // Probability that one token needs a given node / a given rank (uniform top-k routing).
  double p_node = 1;
  double p_rank = 1;
  bool combine = false;  // the transposed traffic
  EpKernelMode mode = EpKernelMode::kNormal;
  int64_t sms = 0;  // SMs the kernel is given; 0 = not stated (no SM limit)
};

// The path `mode` takes over `nodes` domains: kNvlink for one, else kHierarchical (normal) or
// kFlat (low-latency).
EpPath EpPathFor(EpKernelMode mode, int64_t nodes);

struct EpTime {
  EpPath path = EpPath::kNvlink;
  double nvlink_seconds = 0;  // transfer of the NVLink traffic (the flat traffic's on kFlat)
  double scale_out_seconds = 0;  // transfer of the IB stage (kHierarchical), 0 otherwise
  double sm_seconds = 0;         // SM copy at datasheet rate; 0 without an SM limit
  double sm_bytes = 0;           // the busiest rank's bytes through its SMs
  double fixed_seconds = 0;      // launch + collective overhead + the stages' latencies
  double seconds = 0;            // fixed + max(stages, SM copy), sm_copy fraction applied
  LinkFabric bound = LinkFabric::kNvlink;  // the class of the slower stage's busiest link
};

// InvalidArgument for a topology that is not nodes x gpus_per_node, or negative traffic.
absl::StatusOr<EpTime> TimeEpExchange(const EpExchange& ep, const Chip& chip,
                                      const Topology& topology);

}  // namespace perfsim

#endif  // PERFSIM_SIM_COMM_EP_DISPATCH_H_
