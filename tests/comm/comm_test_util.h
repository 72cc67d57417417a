// Test chips with round interconnect numbers, so that golden times can be derived by hand.
// They start from a built-in chip (for the compute and memory fields, which collectives do not
// read) and replace the interconnect and efficiency.
#ifndef PERFSIM_TESTS_COMM_COMM_TEST_UTIL_H_
#define PERFSIM_TESTS_COMM_COMM_TEST_UTIL_H_

#include <string>
#include <vector>

#include "sim/comm/topology.h"
#include "sim/hw/chip.h"
#include "sim/hw/chip_registry.h"
#include "sim/util/status.h"

namespace perfsim {
namespace testing {

inline Chip MustLoadChip(const std::string& name) {
  absl::StatusOr<Chip> chip = LoadBuiltinChip(name);
  PERFSIM_CHECK(chip.ok()) << chip.status();
  return *std::move(chip);
}

inline Topology MustTopology(const Chip& chip, const std::string& shape,
                             int64_t devices_per_chip = 0) {
  Topology::Options options;
  options.devices_per_chip = devices_per_chip;
  absl::StatusOr<Topology> t = Topology::Create(chip, shape, options);
  PERFSIM_CHECK(t.ok()) << t.status();
  return *std::move(t);
}

// Every efficiency factor 1, no fixed cost unless asked (the built-in chips are calibrated:
// an unset efficiency block reads as datasheet fractions 1 and overheads 0).
inline void ResetEfficiency(HardwareSpec& spec, double fixed_seconds) {
  spec.clear_efficiency();
  spec.mutable_compute()->set_kernel_overhead_seconds(fixed_seconds);
  // A collective pays kernel_overhead_seconds too (no separate launch figure).
  spec.mutable_compute()->set_collective_launch_seconds(0);
}

// A TPU-like chip: `names` torus axes, 2 links per chip per axis (one per neighbour) of
// 1e11 B/s each way, 1 us per hop, wraparound on multiples of `wrap_multiple`, axes at most
// `max_size` long (0 = unbounded), `devices_per_chip` devices.
inline Chip TorusChip(const std::vector<std::string>& names, int64_t wrap_multiple,
                      int64_t max_size = 0, int64_t devices_per_chip = 1,
                      double fixed_seconds = 0) {
  HardwareSpec spec = MustLoadChip("tpu_v5p").proto();
  spec.set_name("test_torus");
  spec.mutable_compute()->set_devices_per_chip(devices_per_chip);
  InterconnectSpec& ici = *spec.mutable_interconnect();
  ici.clear_dimensions();
  for (const std::string& name : names) {
    InterconnectDimension& d = *ici.add_dimensions();
    d.set_name(name);
    d.set_kind(DIMENSION_KIND_TORUS_AXIS);
    d.set_size_chips(4);
    d.set_max_size_chips(max_size);
    d.set_wraparound(wrap_multiple == 4);
    d.set_wraparound_size_multiple_chips(wrap_multiple);
    d.set_link_bytes_per_second_per_direction(1e11);
    d.set_links_per_chip(2);
    d.set_latency_seconds(1e-6);
  }
  ici.set_domain_max_chips(0);
  ResetEfficiency(spec, fixed_seconds);
  absl::StatusOr<Chip> chip = Chip::FromProto(spec);
  PERFSIM_CHECK(chip.ok()) << chip.status();
  return *std::move(chip);
}

// A GPU-like chip: NVLink switch domains of 8 with a 4e11 B/s port per direction (16 links of
// 2.5e10), 1 us through the switch; an InfiniBand NIC of 5e10 B/s per GPU with a 10 us round trip.
inline Chip SwitchChip(double fixed_seconds = 0) {
  HardwareSpec spec = MustLoadChip("gpu_h100").proto();
  spec.set_name("test_switch");
  InterconnectSpec& net = *spec.mutable_interconnect();
  net.clear_dimensions();
  InterconnectDimension& d = *net.add_dimensions();
  d.set_name("nvlink");
  d.set_kind(DIMENSION_KIND_SWITCH);
  d.set_size_chips(8);
  d.set_max_size_chips(8);
  d.set_link_bytes_per_second_per_direction(2.5e10);
  d.set_links_per_chip(16);
  d.set_latency_seconds(1e-6);
  net.set_domain_max_chips(8);
  net.set_scale_out_bytes_per_second_per_chip(5e10);
  net.set_scale_out_round_trip_seconds(1e-5);
  ResetEfficiency(spec, fixed_seconds);
  absl::StatusOr<Chip> chip = Chip::FromProto(spec);
  PERFSIM_CHECK(chip.ok()) << chip.status();
  return *std::move(chip);
}

}  // namespace testing
}  // namespace perfsim

#endif  // PERFSIM_TESTS_COMM_COMM_TEST_UTIL_H_
