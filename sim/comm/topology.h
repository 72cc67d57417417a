// The physical network of one slice: which devices exist, where they sit, and how they connect.
//
//   PERFSIM_ASSIGN_OR_RETURN(Chip chip, ResolveChip("tpu_v7x"));
//   PERFSIM_ASSIGN_OR_RETURN(Topology t, Topology::Create(chip, "4x8x8"));
//   t.num_chips();      // 256
//   t.num_devices();    // 512: v7x shows each TensorCore as its own JAX device
//   t.ToString();       // "tpu_v7x 4x8x8: x torus 4 (wrap) 100 GB/s/dir, y torus 8 (wrap)
//                       //  100 GB/s/dir, z torus 8 (wrap) 100 GB/s/dir, core on_chip 2 1845 GB/s/dir"
//
// Dimensions, outermost first. TPU: one TORUS dimension per slice axis ("x", "y", "z"), in the
// order of the hardware description; an axis gets wraparound links only when the hardware rule
// allows it for that length (its size is a multiple of wraparound_size_multiple_chips: 4 on
// v4/v5p/v7x, whole OCS cubes; 16 on v5e/v6e). GPU: "ib" (InfiniBand between NVLink domains,
// only when the slice has more than one domain), then "nvlink" (the switch inside a domain).
// A chip with several devices (TPU v7x) gets an innermost "core" dimension.
//
// Device ids are row-major over the dimensions, the last dimension fastest:
//   id = ((c0 * size1 + c1) * size2 + c2) ...      e.g. 4x8x8 (x2 cores): id = ((x*8+y)*8+z)*2+core
// so the devices of one chip, and then the chips of one NVLink domain, have consecutive ids.
//
// Link model (what collectives and the traffic router divide by; every rate below is the
// datasheet's times its link class's efficiency fraction, e.g. efficiency.nvlink_fraction_of_peak):
//   TORUS   each chip has links_per_chip / 2 links to each neighbour, each carrying
//           link_bytes_per_second_per_direction each way; a hop costs latency_seconds.
//   SWITCH  (NVLink) each chip has one port into the switch of links_per_chip x link bandwidth
//           per direction; every pair is one hop of latency_seconds.
//   SCALE_OUT (InfiniBand) each chip has its own NIC of scale_out_bytes_per_second_per_chip per
//           direction into a full-bisection fat tree; a message costs scale_out_round_trip_seconds
//           (XLA's GPU speed-of-light model charges one round trip per ring step).
//   ON_CHIP the devices of one chip exchange through memory. No die-to-die figure is sourced, so
//           the port is assumed to copy at half the device's share of HBM bandwidth (a copy reads
//           and writes), with no latency. The devices of a chip share its ICI links.
#ifndef PERFSIM_SIM_COMM_TOPOLOGY_H_
#define PERFSIM_SIM_COMM_TOPOLOGY_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "proto/hardware.pb.h"
#include "sim/hw/chip.h"

namespace perfsim {

// The most devices a slice may have; a larger slice shape, or a module naming a device id at or
// beyond it, is refused (InvalidArgument): collective routing is quadratic in the group size.
inline constexpr int64_t kMaxSliceDevices = int64_t{1} << 20;

enum class LinkKind { kTorus, kSwitch, kScaleOut, kOnChip };

// "torus", "switch", "scale_out", "on_chip".
absl::string_view LinkKindName(LinkKind kind);

// The technology of a dimension's links, which decides its efficiency factor
// (proto/hardware.proto EfficiencySpec, issue 14): TPU torus / ring axes are ICI, a GPU's switch
// dimension NVLink, its scale-out dimension InfiniBand; on-chip copies have no link factor.
enum class LinkFabric { kIci, kNvlink, kInfiniband, kDcn, kOnChip };

// "ici", "nvlink", "infiniband", "dcn", "on_chip".
absl::string_view LinkFabricName(LinkFabric fabric);
// The EfficiencySpec fraction of `fabric` (1 for kOnChip).
double LinkFabricFraction(const EfficiencySpec& efficiency, LinkFabric fabric);

struct TopologyDimension {
  std::string name;  // "x", "y", "z", "nvlink", "ib", "core"
  LinkKind kind = LinkKind::kTorus;
  int64_t size = 1;         // positions along this dimension
  bool wraparound = false;  // kTorus: the two ends are linked (a ring)
  LinkFabric fabric = LinkFabric::kIci;
  // kTorus: bytes/s from a chip to ONE neighbour in one direction (all parallel links together).
  // Others: bytes/s of one device's port into the switch, one direction. What the collectives
  // and the traffic router divide by: the datasheet rate times the fabric's efficiency fraction,
  // peak_bytes_per_second_per_direction * fraction_of_peak.
  double bytes_per_second_per_direction = 0;
  double peak_bytes_per_second_per_direction = 0;  // the datasheet's
  double fraction_of_peak = 1;                     // LinkFabricFraction of the chip
  double hop_latency_seconds = 0;
  // Device-id step between neighbouring positions (row-major; see the file comment).
  int64_t device_stride = 1;
};

class Topology {
 public:
  struct Options {
    // Devices per chip; 0 takes compute.devices_per_chip of the hardware (2 on TPU v7x). 1 treats
    // each chip as one device (as megacore TPUs and GPUs are).
    int64_t devices_per_chip = 0;
  };

  // `slice_shape`: TPU "AxBxC" (one size per ICI axis of the hardware, e.g. "4x8x8", "16x16");
  // GPU "N" (N GPUs, in NVLink domains of the domain size, InfiniBand between them) or
  // "NODESxPER_DOMAIN" (e.g. "2x8"). Empty: the hardware's default slice. InvalidArgument with
  // "expected X; got Y" when the shape does not fit the hardware's limits.
  static absl::StatusOr<Topology> Create(const Chip& chip, absl::string_view slice_shape,
                                         Options options);
  static absl::StatusOr<Topology> Create(const Chip& chip, absl::string_view slice_shape) {
    return Create(chip, slice_shape, Options());
  }

  const std::string& chip_name() const { return chip_name_; }
  const std::vector<TopologyDimension>& dimensions() const { return dimensions_; }
  const TopologyDimension& dimension(int64_t i) const { return dimensions_[i]; }
  int64_t rank() const { return static_cast<int64_t>(dimensions_.size()); }
  // Index of the dimension called `name`, or -1.
  int64_t FindDimension(absl::string_view name) const;

  int64_t num_devices() const { return num_devices_; }
  int64_t devices_per_chip() const { return devices_per_chip_; }
  int64_t num_chips() const { return num_devices_ / devices_per_chip_; }

  // Coordinates of `device` (0 <= device < num_devices()), one per dimension.
  std::vector<int64_t> Coordinates(int64_t device) const;
  // The same without a copy: rank() positions from a table made once per topology.
  const int32_t* CoordinatesOf(int64_t device) const {
    return coordinates_->data() + device * rank();
  }
  // Position of `device` along dimension `dimension`.
  int64_t Position(int64_t device, int64_t dimension) const {
    return (*coordinates_)[device * rank() + dimension];
  }
  // Inverse of Coordinates; coordinates must be in range.
  int64_t DeviceId(absl::Span<const int64_t> coordinates) const;
  // The chip a device belongs to, 0 .. num_chips()-1.
  int64_t ChipOf(int64_t device) const { return device / devices_per_chip_; }

  // The slice as written back: "4x8x8", "2x8" (GPU: domains x GPUs per domain), "8".
  const std::string& slice_shape() const { return slice_shape_; }
  // Every dimension with its kind, size, wraparound and datasheet bandwidth (example above),
  // followed by " x 0.65" when its link class's efficiency fraction is not 1.
  std::string ToString() const;

  // Fixed cost of one collective: the chip's collective_launch_seconds (its launch; the
  // kernel_overhead_seconds of any kernel when that is 0, not sourced) plus
  // efficiency.collective_overhead_seconds (calibrated, issue 7).
  double collective_fixed_seconds() const { return collective_fixed_seconds_; }
  // The chip's efficiency factors (unset ones are 1, see sim/hw/chip.h).
  const EfficiencySpec& efficiency() const { return efficiency_; }

 private:
  Topology() = default;

  std::string chip_name_;
  std::string slice_shape_;
  std::vector<TopologyDimension> dimensions_;
  int64_t num_devices_ = 1;
  int64_t devices_per_chip_ = 1;
  double collective_fixed_seconds_ = 0;
  EfficiencySpec efficiency_;
  // num_devices_ × rank() positions, shared by copies.
  std::shared_ptr<const std::vector<int32_t>> coordinates_;
};

// Parses "4x8x8" into {4, 8, 8}; every size a positive integer.
absl::StatusOr<std::vector<int64_t>> ParseSliceShape(absl::string_view text);

}  // namespace perfsim

#endif  // PERFSIM_SIM_COMM_TOPOLOGY_H_
