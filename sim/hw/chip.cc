#include "sim/hw/chip.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "sim/util/proto_format.h"
#include "sim/util/status.h"

namespace perfsim {
namespace {

// Fills the fields whose absence has an obvious meaning, so that consumers never see "unset".
void ApplyDefaults(HardwareSpec& spec) {
  ComputeSpec& compute = *spec.mutable_compute();
  if (compute.devices_per_chip() == 0) compute.set_devices_per_chip(1);
  MatrixUnitSpec& unit = *compute.mutable_matrix_unit();
  if (!unit.has_small_rows_fraction_of_peak()) unit.set_small_rows_fraction_of_peak(1.0);

  EfficiencySpec& efficiency = *spec.mutable_efficiency();
  if (!efficiency.has_matmul_fraction_of_peak()) efficiency.set_matmul_fraction_of_peak(1.0);
  if (!efficiency.has_hbm_fraction_of_peak()) efficiency.set_hbm_fraction_of_peak(1.0);
  if (!efficiency.has_collective_ring_fraction_of_peak()) {
    efficiency.set_collective_ring_fraction_of_peak(1.0);
  }
  if (!efficiency.has_collective_bidirectional_ring_fraction_of_peak()) {
    efficiency.set_collective_bidirectional_ring_fraction_of_peak(1.0);
  }
  if (!efficiency.has_collective_direct_fraction_of_peak()) {
    efficiency.set_collective_direct_fraction_of_peak(1.0);
  }
  if (!efficiency.has_collective_hierarchical_fraction_of_peak()) {
    efficiency.set_collective_hierarchical_fraction_of_peak(1.0);
  }
  if (!efficiency.has_nvlink_fraction_of_peak()) efficiency.set_nvlink_fraction_of_peak(1.0);
  if (!efficiency.has_infiniband_fraction_of_peak()) {
    efficiency.set_infiniband_fraction_of_peak(1.0);
  }
  if (!efficiency.has_ici_fraction_of_peak()) efficiency.set_ici_fraction_of_peak(1.0);
  if (!efficiency.has_dcn_fraction_of_peak()) efficiency.set_dcn_fraction_of_peak(1.0);
  if (!efficiency.has_sm_copy_fraction_of_peak()) efficiency.set_sm_copy_fraction_of_peak(1.0);
  if (!efficiency.has_grouped_matmul_overhead_seconds_per_group()) {
    efficiency.set_grouped_matmul_overhead_seconds_per_group(0.0);
  }
  if (!efficiency.has_collective_overhead_seconds()) {
    efficiency.set_collective_overhead_seconds(0.0);
  }
  if (efficiency.fitted_on().empty()) {
    efficiency.set_fitted_on(
        "not calibrated: unset fractions default to 1 (datasheet peaks), overheads to 0");
  }
}

absl::string_view DimensionKindWord(DimensionKind kind) {
  switch (kind) {
    case DIMENSION_KIND_TORUS_AXIS:
      return "torus";
    case DIMENSION_KIND_RING:
      return "ring";
    case DIMENSION_KIND_SWITCH:
      return "switch";
    case DIMENSION_KIND_UNSPECIFIED:
    case DimensionKind_INT_MIN_SENTINEL_DO_NOT_USE_:
    case DimensionKind_INT_MAX_SENTINEL_DO_NOT_USE_:
      break;
  }
  return "?";
}

}  // namespace

absl::string_view MatmulDtypeName(MatmulDtype dtype) {
  switch (dtype) {
    case MatmulDtype::kBf16:
      return "bf16";
    case MatmulDtype::kF16:
      return "f16";
    case MatmulDtype::kFp8:
      return "fp8";
    case MatmulDtype::kInt8:
      return "int8";
    case MatmulDtype::kFp4:
      return "fp4";
    case MatmulDtype::kF32:
      return "f32";
  }
  return "?";
}

absl::StatusOr<Chip> Chip::FromProto(HardwareSpec proto, const TextProtoSource* source) {
  ApplyDefaults(proto);
  PERFSIM_RETURN_IF_ERROR(ValidateHardwareSpec(proto, source));
  return Chip(std::move(proto));
}

absl::StatusOr<Chip> Chip::FromText(absl::string_view text, absl::string_view filename) {
  HardwareSpec proto;
  PERFSIM_ASSIGN_OR_RETURN(TextProtoSource source, ParseTextProto(text, filename, &proto));
  return FromProto(std::move(proto), &source);
}

absl::StatusOr<Chip> Chip::Load(const std::string& path) {
  PERFSIM_ASSIGN_OR_RETURN(std::string text, ReadTextFile(path));
  return FromText(text, path);
}

double Chip::PeakMatmulFlopsPerSecond(MatmulDtype dtype) const {
  const ComputeSpec& compute = proto_.compute();
  switch (dtype) {
    case MatmulDtype::kBf16:
      return compute.peak_bf16_flops_per_second();
    case MatmulDtype::kF16:
      return compute.peak_fp16_flops_per_second();
    case MatmulDtype::kFp8:
      return compute.peak_fp8_flops_per_second();
    case MatmulDtype::kInt8:
      return compute.peak_int8_ops_per_second();
    case MatmulDtype::kFp4:
      return compute.peak_fp4_flops_per_second();
    case MatmulDtype::kF32:
      return compute.peak_f32_matmul_flops_per_second();
  }
  return 0;
}

int64_t Chip::ScratchLimitBytes() const {
  return is_tpu() ? proto_.memory().default_scoped_vmem_limit_bytes()
                  : proto_.memory().shared_memory_bytes_per_block();
}

int64_t Chip::ScratchPhysicalBytes() const {
  return is_tpu() ? proto_.memory().vmem_bytes_per_core()
                  : proto_.memory().shared_memory_bytes_per_sm();
}

double Chip::RidgeBf16FlopsPerByte() const {
  return proto_.compute().peak_bf16_flops_per_second() / proto_.memory().hbm_bytes_per_second();
}

std::string Chip::DefaultSliceShape() const {
  std::vector<int64_t> sizes;
  for (const InterconnectDimension& dim : proto_.interconnect().dimensions()) {
    sizes.push_back(dim.size_chips());
  }
  return absl::StrJoin(sizes, "x");
}

int64_t Chip::DefaultSliceChips() const {
  int64_t chips = 1;
  for (const InterconnectDimension& dim : proto_.interconnect().dimensions()) {
    chips *= dim.size_chips();
  }
  return chips;
}

std::string Chip::InterconnectSummary() const {
  const InterconnectSpec& net = proto_.interconnect();
  // Validation guarantees at least one dimension; the first one's link speed represents the
  // scale-up network (all dimensions of the built-in chips share it).
  const InterconnectDimension& first = net.dimensions(0);
  std::string wrapped;
  for (const InterconnectDimension& dim : net.dimensions()) {
    if (dim.wraparound()) wrapped += dim.name();
  }
  std::string summary = absl::StrCat(DimensionKindWord(first.kind()), " ", DefaultSliceShape());
  if (!wrapped.empty()) absl::StrAppend(&summary, " (wrap ", wrapped, ")");
  absl::StrAppend(
      &summary, ", ", first.links_per_chip(), "x",
      FormatQuantity("link_bytes_per_second", first.link_bytes_per_second_per_direction()), "/dir");
  if (net.scale_out_bytes_per_second_per_chip() > 0) {
    absl::StrAppend(&summary, ", out ",
                    FormatQuantity("bytes_per_second", net.scale_out_bytes_per_second_per_chip()));
  }
  return summary;
}

}  // namespace perfsim
