// comm_example: the collectives model (sim/comm) called directly, as the README shows it.
//
//   $ build/examples/comm_example             # the README's figures
//   $ build/examples/comm_example --timing    # also the wall time of routing the ragged matrix
//
// Every figure comes from the public API: Topology::Create on a built-in chip (sim/hw registry,
// the hardware/*.textproto files as shipped, efficiency factors included), Mesh::GroupOf for the
// groups, the *Time functions of collectives.h and RouteTraffic of traffic.h. The goldens of
// tests/comm cover the formulas; this program is documentation, so it checks nothing itself.
//
// Cases:
//   tpu_v7x 4x8x8 (512 devices), mesh data=*,ep=64,tp=4
//     ep all-to-all, 64 MiB sent per device; ep all-gather, 64 MiB result; tp all-reduce, 16 MiB
//   gpu_h100 2x8 (two NVLink domains of 8, InfiniBand between them), the 16 GPUs as one group
//     all-reduce, 1 GiB; all-to-all, 64 MiB sent per device
//   tpu_v7x ragged all-to-all: in every ep group each device sends 64 MiB, split over the group
//     with Zipf(1.2) popularity (member j, in GroupOf order, gets a share ∝ (j + 1)^-1.2, its
//     own share stays local). All 8 ep groups at once: one 512x512 matrix through RouteTraffic.
//
// Exit status: 0; 2 for an unknown argument; 1 if the library reports an error (a bug: every
// input here is fixed).
#include <chrono>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <numeric>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "sim/comm/collectives.h"
#include "sim/comm/mesh.h"
#include "sim/comm/topology.h"
#include "sim/comm/traffic.h"
#include "sim/hw/chip_registry.h"
#include "sim/util/status.h"

namespace perfsim {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kGiB = 1024.0 * kMiB;
constexpr double kZipfExponent = 1.2;

// "tpu_v7x efficiency: ring 1, bidirectional_ring 1, direct 1, hierarchical 1; fixed 1.0 us
// per collective". The collective factors of the chip's efficiency block as Chip applied
// defaults (unset = 1), and the fixed cost (kernel launch + collective_overhead_seconds).
std::string EfficiencyLine(const Topology& topology) {
  const EfficiencySpec& e = topology.efficiency();
  return absl::StrFormat(
      "%s efficiency: ring %g, bidirectional_ring %g, direct %g, hierarchical %g; fixed %.1f us "
      "per collective",
      topology.chip_name(), e.collective_ring_fraction_of_peak(),
      e.collective_bidirectional_ring_fraction_of_peak(), e.collective_direct_fraction_of_peak(),
      e.collective_hierarchical_fraction_of_peak(), topology.collective_fixed_seconds() * 1e6);
}

// One collective: label, time, algorithm, busiest link.
std::string CollectiveLine(absl::string_view label, const CollectiveTime& t) {
  return absl::StrFormat("%-44s %9.1f us  %-18s busiest %.3g B (%s)", label, t.seconds * 1e6,
                         CollectiveAlgorithmName(t.algorithm), t.busiest_link_bytes,
                         t.busiest_link);
}

// Every ep group's Zipf exchange, all groups in one matrix over every device of the topology
// (ids 0..n-1, row-major, so RouteTraffic takes its per-dimension path).
TrafficMatrix ZipfEpMatrix(const Topology& topology, const Mesh& mesh, int64_t ep_axis,
                           double bytes_per_device) {
  std::vector<int64_t> all(topology.num_devices());
  std::iota(all.begin(), all.end(), int64_t{0});
  TrafficMatrix matrix = TrafficMatrix::Zero(all);
  const int64_t ep = mesh.axes()[ep_axis].size;
  std::vector<double> share(ep);
  double total = 0;
  for (int64_t j = 0; j < ep; ++j) {
    share[j] = std::pow(static_cast<double>(j + 1), -kZipfExponent);
    total += share[j];
  }
  for (const std::vector<int64_t>& group : mesh.Groups(ep_axis)) {
    for (int64_t source : group) {
      for (int64_t j = 0; j < ep; ++j) {
        matrix.set(source, group[j], bytes_per_device * share[j] / total);
      }
    }
  }
  return matrix;
}

absl::Status Run(bool timing, std::ostream& out) {
  // TPU v7x 4x8x8: 256 chips, 2 devices each.
  PERFSIM_ASSIGN_OR_RETURN(Chip v7x, ResolveChip("tpu_v7x"));
  PERFSIM_ASSIGN_OR_RETURN(Topology v7x_slice, Topology::Create(v7x, "4x8x8"));
  PERFSIM_ASSIGN_OR_RETURN(std::vector<MeshAxis> axes, ParseMeshAxes("data=*,ep=64,tp=4"));
  PERFSIM_ASSIGN_OR_RETURN(Mesh mesh, Mesh::Create(v7x_slice, axes));
  const int64_t ep_axis = mesh.FindAxis("ep");
  const int64_t tp_axis = mesh.FindAxis("tp");
  const std::vector<int64_t> ep_group = mesh.GroupOf({ep_axis}, 0);
  const std::vector<int64_t> tp_group = mesh.GroupOf({tp_axis}, 0);

  out << v7x_slice.ToString() << "\n" << EfficiencyLine(v7x_slice) << "\n";
  out << mesh.ToString() << "\n";
  PERFSIM_ASSIGN_OR_RETURN(CollectiveTime ep_a2a, AllToAllTime(64 * kMiB, ep_group, v7x_slice));
  out << CollectiveLine("v7x ep=64 all-to-all, 64 MiB/device", ep_a2a) << "\n";
  PERFSIM_ASSIGN_OR_RETURN(CollectiveTime ep_ag, AllGatherTime(64 * kMiB, ep_group, v7x_slice));
  out << CollectiveLine("v7x ep=64 all-gather, 64 MiB result", ep_ag) << "\n";
  PERFSIM_ASSIGN_OR_RETURN(CollectiveTime tp_ar, AllReduceTime(16 * kMiB, tp_group, v7x_slice));
  out << CollectiveLine("v7x tp=4 all-reduce, 16 MiB", tp_ar) << "\n";

  // GPU H100 2x8: two NVLink domains of 8, InfiniBand between them; the whole slice as a group.
  PERFSIM_ASSIGN_OR_RETURN(Chip h100, ResolveChip("gpu_h100"));
  PERFSIM_ASSIGN_OR_RETURN(Topology h100_slice, Topology::Create(h100, "2x8"));
  std::vector<int64_t> all_gpus(h100_slice.num_devices());
  std::iota(all_gpus.begin(), all_gpus.end(), int64_t{0});
  out << h100_slice.ToString() << "\n" << EfficiencyLine(h100_slice) << "\n";
  PERFSIM_ASSIGN_OR_RETURN(CollectiveTime h100_ar, AllReduceTime(kGiB, all_gpus, h100_slice));
  out << CollectiveLine("h100 2x8 all-reduce, 1 GiB", h100_ar) << "\n";
  PERFSIM_ASSIGN_OR_RETURN(CollectiveTime h100_a2a, AllToAllTime(64 * kMiB, all_gpus, h100_slice));
  out << CollectiveLine("h100 2x8 all-to-all, 64 MiB/device", h100_a2a) << "\n";

  // Ragged: every ep group at once, Zipf(1.2) popularity.
  const TrafficMatrix zipf = ZipfEpMatrix(v7x_slice, mesh, ep_axis, 64 * kMiB);
  const auto start = std::chrono::steady_clock::now();
  PERFSIM_ASSIGN_OR_RETURN(TrafficTime ragged, RouteTraffic(zipf, v7x_slice));
  const double route_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  out << absl::StrFormat(
      "v7x ep ragged zipf(1.2) 64 MiB/device: %.1f us, busiest %.3g B (%s), slowest device %d\n",
      ragged.seconds * 1e6, ragged.busiest_link_bytes, ragged.busiest_link, ragged.slowest_device);
  if (timing) {
    // Wall time varies from run to run, so it stays out of the default output.
    out << absl::StrFormat("routing the %dx%d matrix took %.2f ms\n", zipf.size(), zipf.size(),
                           route_seconds * 1e3);
  }
  return absl::OkStatus();
}

}  // namespace
}  // namespace perfsim

int main(int argc, char** argv) {
  bool timing = false;
  for (int i = 1; i < argc; ++i) {
    const absl::string_view arg = argv[i];
    if (arg == "--timing") {
      timing = true;
    } else {
      std::cerr << "comm_example: expected no argument or --timing; got '" << arg << "'\n";
      return 2;
    }
  }
  const absl::Status status = perfsim::Run(timing, std::cout);
  if (!status.ok()) {
    std::cerr << "comm_example: " << status.message() << "\n";
    return 1;
  }
  return 0;
}
