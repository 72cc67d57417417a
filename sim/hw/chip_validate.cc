// ValidateHardwareSpec: every check of a hardware description, collected rather than returned
// one at a time, so that a user fixing a file sees all of its problems in one run.
#include <cmath>
#include <set>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "sim/hw/chip.h"
#include "sim/util/proto_format.h"

namespace perfsim {
namespace {

// Far above any real scale-up domain (the largest built-in is 9216 chips), low enough that
// Chip::DefaultSliceChips() cannot overflow.
constexpr int64_t kMaxSliceChips = int64_t{1} << 24;

// Plausibility bounds, so that a rate or size that passes validation cannot make a prediction
// inf, 0 or NaN (a rate of 1e-308 bytes/s once printed "step time inf us"). Each range is
// orders of magnitude wider than any chip built or announced: peak rates per chip between
// 1 GFLOP/s and 1 EFLOP/s (GB200's dense fp4 is 1e16), bandwidths between 1 MB/s and
// 1 PB/s (HBM3e is ~8e12), memories between 1 KiB and 1 PB, counts of units below 10^6.
struct Range {
  double min;
  double max;
  const char* unit;
};
constexpr Range kFlopsPerSecond{1e9, 1e18, "flop/s"};
constexpr Range kBytesPerSecond{1e6, 1e15, "bytes/s"};
constexpr Range kBytes{1024, 1e15, "bytes"};
constexpr Range kCount{1, 1e6, ""};

std::string Got(double value) {
  return value == 0 ? "got 0 (unset)" : absl::StrCat("got ", FormatDouble(value));
}

// The checks, each adding to `problems` under the field's path.
class HardwareChecker {
 public:
  explicit HardwareChecker(ConfigProblems& problems) : problems_(problems) {}

  void Positive(const std::string& path, double value) {
    if (!(std::isfinite(value) && value > 0)) problems_.Add(path, "expected > 0; " + Got(value));
  }
  // A required quantity within its plausibility range.
  void Plausible(const std::string& path, double value, const Range& range) {
    if (std::isfinite(value) && value >= range.min && value <= range.max) return;
    problems_.Add(path, absl::StrCat("expected ", Bounds(range), "; ", Got(value)));
  }
  // An optional one: 0 (unset) or within its range.
  void PlausibleOrUnset(const std::string& path, double value, const Range& range) {
    if (value == 0) return;
    if (std::isfinite(value) && value >= range.min && value <= range.max) return;
    problems_.Add(path, absl::StrCat("expected 0 (unset) or ", Bounds(range), "; got ",
                                     FormatDouble(value)));
  }
  void NonNegative(const std::string& path, double value) {
    if (!(std::isfinite(value) && value >= 0)) {
      problems_.Add(path, "expected >= 0; got " + FormatDouble(value));
    }
  }
  void Fraction(const std::string& path, double value) {
    if (!(std::isfinite(value) && value > 0 && value <= 1)) {
      problems_.Add(path, "expected a fraction in (0, 1]; " + Got(value));
    }
  }
  // A fixed cost in seconds: >= 0 and below a second (a larger one is a unit mistake).
  void OverheadSeconds(const std::string& path, double value) {
    if (!(std::isfinite(value) && value >= 0 && value < 1)) {
      problems_.Add(path, "expected seconds in [0, 1); " + Got(value));
    }
  }
  // A field that does not apply to this kind of chip must stay unset.
  void Unused(const std::string& path, double value, absl::string_view kind) {
    if (value != 0) {
      problems_.Add(path, absl::StrCat("expected 0 (does not apply to a ", kind, "); got ",
                                       FormatDouble(value)));
    }
  }
  void Add(const std::string& path, const std::string& message) { problems_.Add(path, message); }

 private:
  static std::string Bounds(const Range& range) {
    return absl::StrCat("a value in [", FormatDouble(range.min), ", ", FormatDouble(range.max),
                        "]", *range.unit ? " " : "", range.unit);
  }

  ConfigProblems& problems_;
};

bool IsRegistryName(absl::string_view name) {
  if (name.empty()) return false;
  for (char c : name) {
    if (!(absl::ascii_islower(c) || absl::ascii_isdigit(c) || c == '_')) return false;
  }
  return true;
}

void CheckCompute(const HardwareSpec& spec, HardwareChecker& check) {
  const ComputeSpec& c = spec.compute();
  check.Plausible("compute.peak_bf16_flops_per_second", c.peak_bf16_flops_per_second(),
                  kFlopsPerSecond);
  check.PlausibleOrUnset("compute.peak_fp16_flops_per_second", c.peak_fp16_flops_per_second(), kFlopsPerSecond);
  check.PlausibleOrUnset("compute.peak_fp8_flops_per_second", c.peak_fp8_flops_per_second(), kFlopsPerSecond);
  check.PlausibleOrUnset("compute.peak_int8_ops_per_second", c.peak_int8_ops_per_second(), kFlopsPerSecond);
  check.PlausibleOrUnset("compute.peak_fp4_flops_per_second", c.peak_fp4_flops_per_second(), kFlopsPerSecond);
  check.PlausibleOrUnset("compute.peak_f32_matmul_flops_per_second",
                          c.peak_f32_matmul_flops_per_second(), kFlopsPerSecond);
  check.PlausibleOrUnset("compute.vector_f32_flops_per_second", c.vector_f32_flops_per_second(), kFlopsPerSecond);
  check.PlausibleOrUnset("compute.transcendentals_per_second", c.transcendentals_per_second(), kFlopsPerSecond);
  check.NonNegative("compute.sparsecores_per_chip", c.sparsecores_per_chip());
  check.OverheadSeconds("compute.kernel_overhead_seconds", c.kernel_overhead_seconds());
  check.OverheadSeconds("compute.collective_launch_seconds", c.collective_launch_seconds());
  if (c.sm_copy_bytes_per_second_per_sm() != 0) {
    check.PlausibleOrUnset("compute.sm_copy_bytes_per_second_per_sm",
                           c.sm_copy_bytes_per_second_per_sm(), kBytesPerSecond);
  }
  check.OverheadSeconds("compute.grid_step_overhead_seconds", c.grid_step_overhead_seconds());
  check.Plausible("compute.devices_per_chip", c.devices_per_chip(), kCount);

  if (spec.kind() == CHIP_KIND_TPU) {
    check.Plausible("compute.tensorcores_per_chip", c.tensorcores_per_chip(), kCount);
    check.Unused("compute.sms_per_chip", c.sms_per_chip(), "TPU");
    if (c.tensorcores_per_chip() > 0 && c.devices_per_chip() > c.tensorcores_per_chip()) {
      check.Add("compute.devices_per_chip",
                absl::StrCat("expected <= tensorcores_per_chip (", c.tensorcores_per_chip(),
                             "); got ", c.devices_per_chip()));
    }
  } else if (spec.kind() == CHIP_KIND_GPU) {
    check.Plausible("compute.sms_per_chip", c.sms_per_chip(), kCount);
    check.Unused("compute.tensorcores_per_chip", c.tensorcores_per_chip(), "GPU");
    check.Unused("compute.sparsecores_per_chip", c.sparsecores_per_chip(), "GPU");
  }

  const MatrixUnitSpec& unit = c.matrix_unit();
  check.Plausible("compute.matrix_unit.contracting_elements", unit.contracting_elements(), kCount);
  check.Plausible("compute.matrix_unit.output_columns_elements", unit.output_columns_elements(), kCount);
  check.Plausible("compute.matrix_unit.output_rows_elements", unit.output_rows_elements(), kCount);
  check.Plausible("compute.matrix_unit.units_per_core", unit.units_per_core(), kCount);
  check.Fraction("compute.matrix_unit.small_rows_fraction_of_peak",
                 unit.small_rows_fraction_of_peak());
}

void CheckMemory(const HardwareSpec& spec, HardwareChecker& check) {
  const MemorySpec& m = spec.memory();
  check.Plausible("memory.hbm_capacity_bytes", m.hbm_capacity_bytes(), kBytes);
  check.Plausible("memory.hbm_bytes_per_second", m.hbm_bytes_per_second(), kBytesPerSecond);
  check.NonNegative("memory.cmem_bytes_per_chip", m.cmem_bytes_per_chip());
  check.NonNegative("memory.tensor_memory_bytes_per_sm", m.tensor_memory_bytes_per_sm());
  if (spec.kind() == CHIP_KIND_TPU) {
    check.Plausible("memory.vmem_bytes_per_core", m.vmem_bytes_per_core(), kBytes);
    check.Plausible("memory.default_scoped_vmem_limit_bytes", m.default_scoped_vmem_limit_bytes(), kBytes);
    check.Plausible("memory.smem_bytes_per_core", m.smem_bytes_per_core(), kBytes);
    if (m.vmem_bytes_per_core() > 0 &&
        m.default_scoped_vmem_limit_bytes() > m.vmem_bytes_per_core()) {
      check.Add("memory.default_scoped_vmem_limit_bytes",
                absl::StrCat("expected <= vmem_bytes_per_core (", m.vmem_bytes_per_core(),
                             "); got ", m.default_scoped_vmem_limit_bytes()));
    }
    check.Unused("memory.shared_memory_bytes_per_sm", m.shared_memory_bytes_per_sm(), "TPU");
    check.Unused("memory.shared_memory_bytes_per_block", m.shared_memory_bytes_per_block(), "TPU");
    check.Unused("memory.tensor_memory_bytes_per_sm", m.tensor_memory_bytes_per_sm(), "TPU");
    check.Unused("memory.l2_bytes", m.l2_bytes(), "TPU");
  } else if (spec.kind() == CHIP_KIND_GPU) {
    check.Plausible("memory.shared_memory_bytes_per_sm", m.shared_memory_bytes_per_sm(), kBytes);
    check.Plausible("memory.shared_memory_bytes_per_block", m.shared_memory_bytes_per_block(), kBytes);
    check.Plausible("memory.l2_bytes", m.l2_bytes(), kBytes);
    if (m.shared_memory_bytes_per_block() > m.shared_memory_bytes_per_sm() &&
        m.shared_memory_bytes_per_sm() > 0) {
      check.Add(
          "memory.shared_memory_bytes_per_block",
          absl::StrCat("expected <= shared_memory_bytes_per_sm (", m.shared_memory_bytes_per_sm(),
                       "); got ", m.shared_memory_bytes_per_block()));
    }
    check.Unused("memory.vmem_bytes_per_core", m.vmem_bytes_per_core(), "GPU");
    check.Unused("memory.default_scoped_vmem_limit_bytes", m.default_scoped_vmem_limit_bytes(),
                 "GPU");
    check.Unused("memory.smem_bytes_per_core", m.smem_bytes_per_core(), "GPU");
    check.Unused("memory.cmem_bytes_per_chip", m.cmem_bytes_per_chip(), "GPU");
  }
}

void CheckDimension(const InterconnectDimension& dim, const std::string& path,
                    HardwareChecker& check) {
  if (dim.name().empty()) {
    check.Add(path + ".name", "expected a name (\"x\", \"nvlink\"); got \"\"");
  }
  if (dim.kind() == DIMENSION_KIND_UNSPECIFIED || !DimensionKind_IsValid(dim.kind())) {
    check.Add(path + ".kind",
              absl::StrCat(
                  "expected DIMENSION_KIND_TORUS_AXIS, _RING or _SWITCH; got ",
                  dim.kind() == DIMENSION_KIND_UNSPECIFIED ? "unset" : absl::StrCat(dim.kind())));
  }
  check.Positive(path + ".size_chips", dim.size_chips());
  check.NonNegative(path + ".max_size_chips", dim.max_size_chips());
  if (dim.max_size_chips() > 0 && dim.size_chips() > dim.max_size_chips()) {
    check.Add(path + ".size_chips",
              absl::StrCat("expected <= max_size_chips (", dim.max_size_chips(), "); got ",
                           dim.size_chips()));
  }
  check.Plausible(path + ".link_bytes_per_second_per_direction",
                  dim.link_bytes_per_second_per_direction(), kBytesPerSecond);
  check.Plausible(path + ".links_per_chip", dim.links_per_chip(), kCount);
  check.OverheadSeconds(path + ".latency_seconds", dim.latency_seconds());
  check.NonNegative(path + ".wraparound_size_multiple_chips", dim.wraparound_size_multiple_chips());
  const bool torus = dim.kind() == DIMENSION_KIND_TORUS_AXIS;
  if (!torus && dim.wraparound()) {
    check.Add(path + ".wraparound",
              "expected false (only a TORUS_AXIS has wraparound links); got true");
  }
  if (!torus && dim.wraparound_size_multiple_chips() != 0) {
    check.Add(path + ".wraparound_size_multiple_chips",
              absl::StrCat("expected 0 (only a TORUS_AXIS has wraparound links); got ",
                           dim.wraparound_size_multiple_chips()));
  }
  if (torus && dim.wraparound() && dim.wraparound_size_multiple_chips() > 0 &&
      dim.size_chips() > 0 && dim.size_chips() % dim.wraparound_size_multiple_chips() != 0) {
    check.Add(path + ".wraparound",
              absl::StrCat("expected size_chips (", dim.size_chips(),
                           ") to be a multiple of wraparound_size_multiple_chips (",
                           dim.wraparound_size_multiple_chips(), ") for wraparound; got true"));
  }
}

void CheckInterconnect(const HardwareSpec& spec, HardwareChecker& check) {
  const InterconnectSpec& net = spec.interconnect();
  if (net.dimensions().empty()) {
    check.Add("interconnect.dimensions", "expected at least one dimension; got none");
  }
  std::set<std::string> names;
  // Counted in double so that absurd sizes cannot overflow before they are rejected.
  double chips = 1;
  for (int i = 0; i < net.dimensions_size(); ++i) {
    const InterconnectDimension& dim = net.dimensions(i);
    const std::string path = absl::StrCat("interconnect.dimensions[", i, "]");
    CheckDimension(dim, path, check);
    if (!dim.name().empty() && !names.insert(dim.name()).second) {
      check.Add(path + ".name",
                absl::StrCat("expected a unique name; got \"", dim.name(), "\" again"));
    }
    if (dim.size_chips() > 0) chips *= static_cast<double>(dim.size_chips());
  }
  if (chips > kMaxSliceChips) {
    check.Add("interconnect.dimensions",
              absl::StrCat("expected a default slice of at most ", kMaxSliceChips, " chips; got ",
                           FormatDouble(chips)));
  }
  check.NonNegative("interconnect.domain_max_chips", net.domain_max_chips());
  if (net.domain_max_chips() > 0 && chips <= kMaxSliceChips && chips > net.domain_max_chips()) {
    check.Add("interconnect.domain_max_chips",
              absl::StrCat("expected >= the chips of the default slice (", FormatDouble(chips),
                           "); got ", net.domain_max_chips()));
  }
  check.Positive("interconnect.chips_per_host", net.chips_per_host());
  check.PlausibleOrUnset("interconnect.scale_out_bytes_per_second_per_chip",
                         net.scale_out_bytes_per_second_per_chip(), kBytesPerSecond);
  check.OverheadSeconds("interconnect.scale_out_round_trip_seconds",
                        net.scale_out_round_trip_seconds());
}

void CheckEfficiency(const HardwareSpec& spec, HardwareChecker& check) {
  const EfficiencySpec& e = spec.efficiency();
  // Unset factors mean 1 (Chip::FromProto fills them in); only explicit values are checked here.
  if (e.has_matmul_fraction_of_peak()) {
    check.Fraction("efficiency.matmul_fraction_of_peak", e.matmul_fraction_of_peak());
  }
  if (e.has_hbm_fraction_of_peak()) {
    check.Fraction("efficiency.hbm_fraction_of_peak", e.hbm_fraction_of_peak());
  }
  if (e.has_collective_ring_fraction_of_peak()) {
    check.Fraction("efficiency.collective_ring_fraction_of_peak",
                   e.collective_ring_fraction_of_peak());
  }
  if (e.has_collective_bidirectional_ring_fraction_of_peak()) {
    check.Fraction("efficiency.collective_bidirectional_ring_fraction_of_peak",
                   e.collective_bidirectional_ring_fraction_of_peak());
  }
  if (e.has_collective_direct_fraction_of_peak()) {
    check.Fraction("efficiency.collective_direct_fraction_of_peak",
                   e.collective_direct_fraction_of_peak());
  }
  if (e.has_collective_hierarchical_fraction_of_peak()) {
    check.Fraction("efficiency.collective_hierarchical_fraction_of_peak",
                   e.collective_hierarchical_fraction_of_peak());
  }
  if (e.has_nvlink_fraction_of_peak()) {
    check.Fraction("efficiency.nvlink_fraction_of_peak", e.nvlink_fraction_of_peak());
  }
  if (e.has_infiniband_fraction_of_peak()) {
    check.Fraction("efficiency.infiniband_fraction_of_peak", e.infiniband_fraction_of_peak());
  }
  if (e.has_ici_fraction_of_peak()) {
    check.Fraction("efficiency.ici_fraction_of_peak", e.ici_fraction_of_peak());
  }
  if (e.has_dcn_fraction_of_peak()) {
    check.Fraction("efficiency.dcn_fraction_of_peak", e.dcn_fraction_of_peak());
  }
  if (e.has_sm_copy_fraction_of_peak()) {
    check.Fraction("efficiency.sm_copy_fraction_of_peak", e.sm_copy_fraction_of_peak());
  }
  if (e.has_grouped_matmul_overhead_seconds_per_group()) {
    check.OverheadSeconds("efficiency.grouped_matmul_overhead_seconds_per_group",
                          e.grouped_matmul_overhead_seconds_per_group());
  }
  if (e.has_collective_overhead_seconds()) {
    check.OverheadSeconds("efficiency.collective_overhead_seconds",
                          e.collective_overhead_seconds());
  }
}

}  // namespace

absl::Status ValidateHardwareSpec(const HardwareSpec& spec, const TextProtoSource* source) {
  ConfigProblems problems(source);
  HardwareChecker check(problems);
  if (!IsRegistryName(spec.name())) {
    check.Add("name",
              absl::StrCat("expected lower-case letters, digits and '_' (e.g. \"tpu_v5p\"); "
                           "got \"",
                           spec.name(), "\""));
  }
  if (spec.kind() != CHIP_KIND_TPU && spec.kind() != CHIP_KIND_GPU) {
    check.Add(
        "kind",
        absl::StrCat("expected CHIP_KIND_TPU or CHIP_KIND_GPU; got ",
                     spec.kind() == CHIP_KIND_UNSPECIFIED ? "unset" : absl::StrCat(spec.kind())));
  }
  CheckCompute(spec, check);
  CheckMemory(spec, check);
  CheckInterconnect(spec, check);
  CheckEfficiency(spec, check);
  return problems.ToStatus();
}

}  // namespace perfsim
