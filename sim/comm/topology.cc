#include "sim/comm/topology.h"

#include <algorithm>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "sim/util/status.h"

namespace perfsim {
namespace {

constexpr int64_t kMaxDevices = kMaxSliceDevices;

std::string JoinSizes(absl::Span<const int64_t> sizes) { return absl::StrJoin(sizes, "x"); }

// TPU: one torus dimension per ICI axis of the hardware, with the hardware's wraparound rule.
absl::StatusOr<std::vector<TopologyDimension>> TorusDimensions(const Chip& chip,
                                                               const std::vector<int64_t>& sizes) {
  const InterconnectSpec& ici = chip.proto().interconnect();
  const int64_t axes = ici.dimensions_size();
  std::vector<std::string> names;
  for (const InterconnectDimension& d : ici.dimensions()) names.push_back(d.name());
  if (static_cast<int64_t>(sizes.size()) != axes) {
    return absl::InvalidArgumentError(
        absl::StrCat("slice shape for ", chip.name(), ": expected ", axes, " sizes (axes ",
                     absl::StrJoin(names, ", "), "; e.g. ", chip.DefaultSliceShape(), "); got '",
                     JoinSizes(sizes), "'"));
  }
  std::vector<TopologyDimension> dims;
  int64_t chips = 1;
  for (int64_t i = 0; i < axes; ++i) {
    const InterconnectDimension& spec = ici.dimensions(i);
    const int64_t size = sizes[i];
    if (spec.kind() != DIMENSION_KIND_TORUS_AXIS && spec.kind() != DIMENSION_KIND_RING) {
      return absl::InvalidArgumentError(absl::StrCat(
          chip.name(), ": expected TORUS_AXIS or RING interconnect dimensions on a TPU; got ",
          DimensionKind_Name(spec.kind()), " for ", spec.name()));
    }
    if (spec.max_size_chips() > 0 && size > spec.max_size_chips()) {
      return absl::InvalidArgumentError(
          absl::StrCat("slice shape for ", chip.name(), ": expected axis ", spec.name(),
                       " of at most ", spec.max_size_chips(), " chips; got ", size));
    }
    const int64_t multiple = spec.wraparound_size_multiple_chips();
    // Beyond one wraparound unit (an OCS cube of 4 on v4/v5p/v7x) an axis is made of whole
    // units: 2x4x4 and 4x4x8 exist, 4x4x6 does not.
    if (multiple > 0 && size > multiple && size % multiple != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "slice shape for ", chip.name(), ": expected axis ", spec.name(), " of at most ",
          multiple, " chips or a multiple of ", multiple, "; got ", size));
    }
    TopologyDimension dim;
    dim.name = spec.name();
    dim.kind = LinkKind::kTorus;
    dim.fabric = LinkFabric::kIci;
    dim.size = size;
    if (spec.kind() == DIMENSION_KIND_RING) {
      dim.wraparound = size > 2;
    } else {
      dim.wraparound = multiple > 0 && size % multiple == 0 && size > 2;
    }
    // links_per_chip counts both neighbours; half of them go to each.
    const int64_t links_per_neighbour = std::max<int64_t>(1, spec.links_per_chip() / 2);
    dim.bytes_per_second_per_direction =
        spec.link_bytes_per_second_per_direction() * static_cast<double>(links_per_neighbour);
    dim.hop_latency_seconds = spec.latency_seconds();
    dims.push_back(std::move(dim));
    chips *= size;
    if (chips > kMaxDevices) break;
  }
  if (ici.domain_max_chips() > 0 && chips > ici.domain_max_chips()) {
    return absl::InvalidArgumentError(
        absl::StrCat("slice shape for ", chip.name(), ": expected at most ", ici.domain_max_chips(),
                     " chips (one ICI domain); got ", JoinSizes(sizes)));
  }
  return dims;
}

// GPU: NVLink domains of the switch size, InfiniBand between them.
absl::StatusOr<std::vector<TopologyDimension>> SwitchDimensions(const Chip& chip,
                                                                const std::vector<int64_t>& sizes) {
  const InterconnectSpec& net = chip.proto().interconnect();
  const InterconnectDimension* nvlink = nullptr;
  for (const InterconnectDimension& d : net.dimensions()) {
    if (d.kind() == DIMENSION_KIND_SWITCH) nvlink = &d;
  }
  if (nvlink == nullptr || net.dimensions_size() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(chip.name(), ": expected one SWITCH interconnect dimension for a GPU; got ",
                     net.dimensions_size(), " dimensions"));
  }
  int64_t domain_max = nvlink->max_size_chips();
  if (domain_max <= 0) domain_max = net.domain_max_chips();
  if (domain_max <= 0) domain_max = nvlink->size_chips();

  int64_t domains = 1;
  int64_t per_domain = 1;
  if (sizes.size() == 1) {
    const int64_t n = sizes[0];
    if (n <= domain_max) {
      per_domain = n;
    } else if (n % domain_max == 0) {
      domains = n / domain_max;
      per_domain = domain_max;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("slice shape for ", chip.name(), ": expected at most ", domain_max,
                       " GPUs (one NVLink domain) or a multiple of ", domain_max, "; got ", n));
    }
  } else if (sizes.size() == 2) {
    domains = sizes[0];
    per_domain = sizes[1];
    if (per_domain > domain_max) {
      return absl::InvalidArgumentError(
          absl::StrCat("slice shape for ", chip.name(), ": expected at most ", domain_max,
                       " GPUs per NVLink domain; got ", JoinSizes(sizes)));
    }
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("slice shape for ", chip.name(),
                     ": expected N GPUs or DOMAINSxGPUS_PER_DOMAIN; got '", JoinSizes(sizes), "'"));
  }

  std::vector<TopologyDimension> dims;
  if (domains > 1) {
    TopologyDimension ib;
    ib.name = "ib";
    ib.kind = LinkKind::kScaleOut;
    ib.fabric = LinkFabric::kInfiniband;
    ib.size = domains;
    ib.bytes_per_second_per_direction = net.scale_out_bytes_per_second_per_chip();
    ib.hop_latency_seconds = net.scale_out_round_trip_seconds();
    if (ib.bytes_per_second_per_direction <= 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          chip.name(), ": expected scale_out_bytes_per_second_per_chip > 0 for a slice of ",
          domains, " NVLink domains; got ", ib.bytes_per_second_per_direction));
    }
    dims.push_back(std::move(ib));
  }
  TopologyDimension nv;
  nv.name = nvlink->name();
  nv.kind = LinkKind::kSwitch;
  nv.fabric = LinkFabric::kNvlink;
  nv.size = per_domain;
  nv.bytes_per_second_per_direction =
      nvlink->link_bytes_per_second_per_direction() * static_cast<double>(nvlink->links_per_chip());
  nv.hop_latency_seconds = nvlink->latency_seconds();
  dims.push_back(std::move(nv));
  return dims;
}

}  // namespace

absl::string_view LinkKindName(LinkKind kind) {
  switch (kind) {
    case LinkKind::kTorus:
      return "torus";
    case LinkKind::kSwitch:
      return "switch";
    case LinkKind::kScaleOut:
      return "scale_out";
    case LinkKind::kOnChip:
      return "on_chip";
  }
  return "?";
}

absl::string_view LinkFabricName(LinkFabric fabric) {
  switch (fabric) {
    case LinkFabric::kIci:
      return "ici";
    case LinkFabric::kNvlink:
      return "nvlink";
    case LinkFabric::kInfiniband:
      return "infiniband";
    case LinkFabric::kDcn:
      return "dcn";
    case LinkFabric::kOnChip:
      return "on_chip";
  }
  return "?";
}

double LinkFabricFraction(const EfficiencySpec& efficiency, LinkFabric fabric) {
  // An unset field reads 0 in a proto that did not go through Chip::FromProto: treat it as 1.
  auto or_one = [](bool has, double v) { return has ? v : 1.0; };
  switch (fabric) {
    case LinkFabric::kIci:
      return or_one(efficiency.has_ici_fraction_of_peak(), efficiency.ici_fraction_of_peak());
    case LinkFabric::kNvlink:
      return or_one(efficiency.has_nvlink_fraction_of_peak(),
                    efficiency.nvlink_fraction_of_peak());
    case LinkFabric::kInfiniband:
      return or_one(efficiency.has_infiniband_fraction_of_peak(),
                    efficiency.infiniband_fraction_of_peak());
    case LinkFabric::kDcn:
      return or_one(efficiency.has_dcn_fraction_of_peak(), efficiency.dcn_fraction_of_peak());
    case LinkFabric::kOnChip:
      return 1.0;
  }
  return 1.0;
}

absl::StatusOr<std::vector<int64_t>> ParseSliceShape(absl::string_view text) {
  std::vector<int64_t> sizes;
  for (absl::string_view part : absl::StrSplit(text, 'x')) {
    int64_t size = 0;
    if (!absl::SimpleAtoi(part, &size) || size <= 0 || size > kMaxDevices) {
      return absl::InvalidArgumentError(absl::StrCat(
          "slice shape: expected positive sizes joined by 'x' (e.g. 4x8x8); got '", text, "'"));
    }
    sizes.push_back(size);
  }
  return sizes;
}

absl::StatusOr<Topology> Topology::Create(const Chip& chip, absl::string_view slice_shape,
                                          Options options) {
  std::string shape_text(slice_shape);
  if (shape_text.empty()) shape_text = chip.DefaultSliceShape();
  PERFSIM_ASSIGN_OR_RETURN(std::vector<int64_t> sizes, ParseSliceShape(shape_text));

  Topology t;
  t.chip_name_ = chip.name();
  if (chip.is_gpu()) {
    PERFSIM_ASSIGN_OR_RETURN(t.dimensions_, SwitchDimensions(chip, sizes));
  } else {
    PERFSIM_ASSIGN_OR_RETURN(t.dimensions_, TorusDimensions(chip, sizes));
  }

  const int64_t hw_devices_per_chip = chip.proto().compute().devices_per_chip();
  t.devices_per_chip_ = options.devices_per_chip > 0 ? options.devices_per_chip
                                                     : std::max<int64_t>(1, hw_devices_per_chip);
  if (t.devices_per_chip_ > 1) {
    TopologyDimension core;
    core.name = "core";
    core.kind = LinkKind::kOnChip;
    core.fabric = LinkFabric::kOnChip;
    core.size = t.devices_per_chip_;
    // Not sourced: a copy between the devices of a chip reads and writes that device's share
    // of HBM (topology.h).
    core.bytes_per_second_per_direction =
        chip.hbm_bytes_per_second() / static_cast<double>(t.devices_per_chip_) / 2.0;
    core.hop_latency_seconds = 0;
    t.dimensions_.push_back(std::move(core));
  }

  // Each link at its class's efficiency (proto/hardware.proto, issue 14).
  for (TopologyDimension& d : t.dimensions_) {
    d.peak_bytes_per_second_per_direction = d.bytes_per_second_per_direction;
    d.fraction_of_peak = LinkFabricFraction(chip.proto().efficiency(), d.fabric);
    d.bytes_per_second_per_direction = d.peak_bytes_per_second_per_direction * d.fraction_of_peak;
  }

  int64_t devices = 1;
  for (const TopologyDimension& d : t.dimensions_) {
    devices *= d.size;
    if (devices > kMaxDevices) {
      return absl::InvalidArgumentError(absl::StrCat("slice shape: expected at most ", kMaxDevices,
                                                     " devices; got '", shape_text, "'"));
    }
  }
  t.num_devices_ = devices;
  int64_t stride = 1;
  for (int64_t i = t.rank() - 1; i >= 0; --i) {
    t.dimensions_[i].device_stride = stride;
    stride *= t.dimensions_[i].size;
  }
  // Coordinates of every device, row-major: the collective models look them up per device.
  auto table = std::make_shared<std::vector<int32_t>>(static_cast<size_t>(devices * t.rank()));
  for (int64_t d = 0, k = 0; d < devices; ++d) {
    for (int64_t i = 0; i < t.rank(); ++i, ++k) {
      (*table)[k] = static_cast<int32_t>((d / t.dimensions_[i].device_stride) % t.dimensions_[i].size);
    }
  }
  t.coordinates_ = std::move(table);

  std::vector<int64_t> shown;
  for (const TopologyDimension& d : t.dimensions_) {
    if (d.kind != LinkKind::kOnChip) shown.push_back(d.size);
  }
  t.slice_shape_ = JoinSizes(shown);
  const ComputeSpec& compute = chip.proto().compute();
  t.collective_fixed_seconds_ =
      (compute.collective_launch_seconds() > 0 ? compute.collective_launch_seconds()
                                               : compute.kernel_overhead_seconds()) +
      chip.proto().efficiency().collective_overhead_seconds();
  t.efficiency_ = chip.proto().efficiency();
  return t;
}

int64_t Topology::FindDimension(absl::string_view name) const {
  for (int64_t i = 0; i < rank(); ++i) {
    if (dimensions_[i].name == name) return i;
  }
  return -1;
}

std::vector<int64_t> Topology::Coordinates(int64_t device) const {
  const int32_t* c = CoordinatesOf(device);
  return std::vector<int64_t>(c, c + rank());
}

int64_t Topology::DeviceId(absl::Span<const int64_t> coordinates) const {
  int64_t id = 0;
  for (int64_t i = 0; i < rank(); ++i) id += coordinates[i] * dimensions_[i].device_stride;
  return id;
}

std::string Topology::ToString() const {
  std::vector<std::string> parts;
  for (const TopologyDimension& d : dimensions_) {
    std::string part = absl::StrCat(d.name, " ", LinkKindName(d.kind), " ", d.size);
    if (d.kind == LinkKind::kTorus) absl::StrAppend(&part, d.wraparound ? " (wrap)" : " (open)");
    absl::StrAppend(&part, " ", d.peak_bytes_per_second_per_direction / 1e9, " GB/s/dir");
    if (d.fraction_of_peak != 1) absl::StrAppend(&part, " x ", d.fraction_of_peak);
    parts.push_back(std::move(part));
  }
  return absl::StrCat(chip_name_, " ", slice_shape_, ": ", absl::StrJoin(parts, ", "));
}

}  // namespace perfsim
