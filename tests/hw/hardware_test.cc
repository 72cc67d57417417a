// Tests of the hardware descriptions: the built-in chips, their agreement with the reference
// data in shared/reference/hardware.csv, and validation (sim/hw/chip.h, chip_registry.h).
#include <cstdlib>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/hw/chip.h"
#include "sim/hw/chip_registry.h"
#include "sim/util/status_matchers.h"
#include "tests/hw/expected_errors.h"

namespace perfsim {
namespace {

using ::perfsim::testing::IsOk;
using ::perfsim::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr double kGiB = 1024.0 * 1024 * 1024;
constexpr double kMiB = 1024.0 * 1024;

Chip MustLoad(const std::string& name) {
  absl::StatusOr<Chip> chip = LoadBuiltinChip(name);
  PERFSIM_CHECK(chip.ok()) << chip.status();
  return *std::move(chip);
}

TEST(Hardware, BuiltinChipsAreTheThirteenDescribedGenerations) {
  EXPECT_THAT(
      BuiltinChipNames(),
      ElementsAre("gpu_a100", "gpu_b200", "gpu_b300", "gpu_gb200", "gpu_gb300", "gpu_h100",
                  "gpu_h200", "gpu_h800", "tpu_v4", "tpu_v5e", "tpu_v5p", "tpu_v6e", "tpu_v7x"));
}

class BuiltinChipTest : public ::testing::TestWithParam<std::string> {};

TEST_P(BuiltinChipTest, LoadsAndValidates) {
  absl::StatusOr<Chip> chip = LoadBuiltinChip(GetParam());
  ASSERT_THAT(chip, IsOk());
  EXPECT_EQ(chip->name(), GetParam());
  EXPECT_FALSE(chip->proto().display_name().empty());
  // The kind matches the file-name convention.
  EXPECT_EQ(chip->is_tpu(), absl::StartsWith(GetParam(), "tpu_"));
  EXPECT_EQ(chip->is_gpu(), absl::StartsWith(GetParam(), "gpu_"));
  // Every built-in file states what its efficiency factors were fitted on.
  EXPECT_FALSE(chip->proto().efficiency().fitted_on().empty());
  EXPECT_GT(chip->ScratchLimitBytes(), 0);
  EXPECT_LE(chip->ScratchLimitBytes(), chip->ScratchPhysicalBytes());
}

TEST_P(BuiltinChipTest, EmbeddedCopyMatchesTheSourceFile) {
  // The binary embeds hardware/*.textproto at build time; a stale copy would silently
  // describe an old chip.
  const EmbeddedTextProto* file = FindEmbeddedTextProto(BuiltinHardwareFiles(), GetParam());
  ASSERT_NE(file, nullptr);
  EXPECT_EQ(file->path, "hardware/" + GetParam() + ".textproto");
  PERFSIM_ASSERT_OK_AND_ASSIGN(
      std::string on_disk,
      ReadTextFile(std::string(PERFSIM_SOURCE_DIR "/") + std::string(file->path)));
  EXPECT_EQ(file->contents, on_disk);
}

INSTANTIATE_TEST_SUITE_P(AllChips, BuiltinChipTest, ::testing::ValuesIn(BuiltinChipNames()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

// Spot checks against rows of shared/reference/hardware.csv (value, unit, source in comments).
TEST(Hardware, SpotChecksAgreeWithTheReferenceRows) {
  // "NVIDIA H100 SXM5 80GB,hbm_bandwidth,3350,GB/s" (H100 datasheet via glennklockwood.com).
  EXPECT_EQ(MustLoad("gpu_h100").hbm_bytes_per_second(), 3.35e12);
  // "NVIDIA H100 SXM5 80GB,sms,132" and "peak_fp8_dense,1979,TFLOP/s".
  EXPECT_EQ(MustLoad("gpu_h100").proto().compute().sms_per_chip(), 132);
  EXPECT_EQ(MustLoad("gpu_h100").PeakMatmulFlopsPerSecond(MatmulDtype::kFp8), 1.979e15);
  // "TPU v5p,peak_bf16_dense,459,TFLOP/s per chip" (Google Cloud TPU docs: v5p).
  EXPECT_EQ(MustLoad("tpu_v5p").PeakMatmulFlopsPerSecond(MatmulDtype::kBf16), 4.59e14);
  // "TPU v5p,vmem_per_tensorcore,64,MiB" (jax tpu_info.py).
  EXPECT_EQ(MustLoad("tpu_v5p").ScratchPhysicalBytes(), 64 * kMiB);
  // "TPU v7x,hbm_capacity,192,GiB per chip" and 2 TensorCores, each its own JAX device.
  EXPECT_EQ(MustLoad("tpu_v7x").hbm_capacity_bytes(), 192 * kGiB);
  EXPECT_EQ(MustLoad("tpu_v7x").proto().compute().devices_per_chip(), 2);
  // "TPU v7x,peak_fp8,4614,TFLOP/s per chip"; "TPU v4,peak_fp8,none".
  EXPECT_EQ(MustLoad("tpu_v7x").PeakMatmulFlopsPerSecond(MatmulDtype::kFp8), 4.614e15);
  EXPECT_EQ(MustLoad("tpu_v4").PeakMatmulFlopsPerSecond(MatmulDtype::kFp8), 0);
  // "TPU v6e,mxu_dim,256x256" vs "TPU v5e,mxu_dim,128x128".
  EXPECT_EQ(MustLoad("tpu_v6e").proto().compute().matrix_unit().contracting_elements(), 256);
  EXPECT_EQ(MustLoad("tpu_v5e").proto().compute().matrix_unit().contracting_elements(), 128);
  // "NVIDIA B200,peak_fp4_dense,9000,TFLOP/s"; "NVIDIA GB200,nvswitch_domain,72,GPUs".
  EXPECT_EQ(MustLoad("gpu_b200").PeakMatmulFlopsPerSecond(MatmulDtype::kFp4), 9e15);
  EXPECT_EQ(MustLoad("gpu_gb200").DefaultSliceChips(), 72);
  // "NVIDIA GB300,nvswitch_domain,72,GPUs"; "NVIDIA B300,nvlink,...,8-GPU domain";
  // "NVIDIA GB300,peak_fp4_dense,15000,TFLOP/s"; "NVIDIA GB300,scaleout_per_gpu,800,Gb/s".
  EXPECT_EQ(MustLoad("gpu_gb300").DefaultSliceChips(), 72);
  EXPECT_EQ(MustLoad("gpu_b300").DefaultSliceChips(), 8);
  EXPECT_EQ(MustLoad("gpu_gb300").PeakMatmulFlopsPerSecond(MatmulDtype::kFp4), 15e15);
  EXPECT_EQ(MustLoad("gpu_gb300").proto().interconnect().scale_out_bytes_per_second_per_chip(),
            800e9 / 8);
  // "NVIDIA A100 SXM4 80GB,smem_per_sm_max,164,KB" (Ampere tuning guide).
  EXPECT_EQ(MustLoad("gpu_a100").ScratchPhysicalBytes(), 164 * 1024);
  // "NVIDIA H800 SXM5,scaleout_per_gpu,400,Gb/s CX7 IB" = 50 GB/s (DeepEP README).
  EXPECT_EQ(MustLoad("gpu_h800").proto().interconnect().scale_out_bytes_per_second_per_chip(),
            400e9 / 8);
}

TEST(Hardware, DefaultScopedVmemLimitsFollowTheObservedDefaults) {
  // backends.md 1c: 16 MiB on v5e/v5p ("limit 16.00M" OOMs), 32 MiB on v6e, v4 = its whole
  // 16 MiB, v7x believed 32 MiB.
  EXPECT_EQ(MustLoad("tpu_v4").ScratchLimitBytes(), 16 * kMiB);
  EXPECT_EQ(MustLoad("tpu_v5e").ScratchLimitBytes(), 16 * kMiB);
  EXPECT_EQ(MustLoad("tpu_v5p").ScratchLimitBytes(), 16 * kMiB);
  EXPECT_EQ(MustLoad("tpu_v6e").ScratchLimitBytes(), 32 * kMiB);
  EXPECT_EQ(MustLoad("tpu_v7x").ScratchLimitBytes(), 32 * kMiB);
  // GPUs: 227 KiB opt-in per block on Hopper (CUTLASS sm90_smem_capacity_bytes = 232448).
  EXPECT_EQ(MustLoad("gpu_h100").ScratchLimitBytes(), 232448);
}

TEST(Hardware, RidgePointsMatchTheReferenceTable) {
  // hardware.md "Ridge, bf16 (FLOP/B)": v5p 166, v7x 313, v6e 560; GPUs: H100 295, A100 153,
  // B200 281. Ridge = peak bf16 FLOP/s / HBM bytes/s, e.g. v5p 459e12 / 2.765e12 = 166.0.
  EXPECT_NEAR(MustLoad("tpu_v5p").RidgeBf16FlopsPerByte(), 166, 0.5);
  EXPECT_NEAR(MustLoad("tpu_v7x").RidgeBf16FlopsPerByte(), 313, 0.5);
  EXPECT_NEAR(MustLoad("tpu_v6e").RidgeBf16FlopsPerByte(), 560, 0.5);
  EXPECT_NEAR(MustLoad("gpu_h100").RidgeBf16FlopsPerByte(), 295, 0.5);
  EXPECT_NEAR(MustLoad("gpu_a100").RidgeBf16FlopsPerByte(), 153, 0.5);
  EXPECT_NEAR(MustLoad("gpu_b200").RidgeBf16FlopsPerByte(), 281, 0.5);
}

TEST(Hardware, DefaultSlicesFollowTheWraparoundRules) {
  // v5p/v7x: one 4x4x4 cube, every axis wraps (multiples of 4); v5e/v6e: a full 16x16 pod.
  EXPECT_EQ(MustLoad("tpu_v7x").DefaultSliceShape(), "4x4x4");
  EXPECT_EQ(MustLoad("tpu_v6e").DefaultSliceShape(), "16x16");
  EXPECT_EQ(MustLoad("gpu_h100").DefaultSliceShape(), "8");
  EXPECT_THAT(MustLoad("tpu_v5p").InterconnectSummary(), StartsWith("torus 4x4x4 (wrap xyz)"));
  EXPECT_THAT(MustLoad("gpu_h100").InterconnectSummary(), StartsWith("switch 8, 18x25 GB/s/dir"));
}

// ---------------------------------------------------------------------------------------------
// Cross-check against the whole reference CSV: the per-chip peaks, HBM and core counts in the
// textprotos must equal the CSV's value column (times its unit).

// Splits one CSV line into fields, honouring double quotes.
std::vector<std::string> SplitCsvLine(const std::string& line) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (char c : line) {
    if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      fields.emplace_back();
    } else {
      fields.back() += c;
    }
  }
  return fields;
}

TEST(Hardware, PeaksBandwidthsAndCoresMatchTheReferenceCsv) {
  std::ifstream csv(PERFSIM_SHARED_DIR "/reference/hardware.csv");
  if (!csv) GTEST_SKIP() << "shared/reference/hardware.csv not available";
  const std::map<std::string, std::string> chip_of_row = {
      {"TPU v4", "tpu_v4"},
      {"TPU v5e", "tpu_v5e"},
      {"TPU v5p", "tpu_v5p"},
      {"TPU v6e (Trillium)", "tpu_v6e"},
      {"TPU v7x (Ironwood, TPU7x)", "tpu_v7x"},
      {"NVIDIA A100 SXM4 80GB", "gpu_a100"},
      {"NVIDIA H100 SXM5 80GB", "gpu_h100"},
      {"NVIDIA H200 SXM 141GB", "gpu_h200"},
      {"NVIDIA B200 (HGX/DGX)", "gpu_b200"},
      {"NVIDIA GB200 (NVL72)", "gpu_gb200"},
      {"NVIDIA GB300 (NVL72, Blackwell Ultra)", "gpu_gb300"},
      {"NVIDIA B300 (HGX/DGX, Blackwell Ultra)", "gpu_b300"},
  };
  int checked = 0;
  std::string line;
  while (std::getline(csv, line)) {
    const std::vector<std::string> f = SplitCsvLine(line);
    if (f.size() < 3) continue;
    auto chip_name = chip_of_row.find(f[0]);
    if (chip_name == chip_of_row.end()) continue;
    const Chip chip = MustLoad(chip_name->second);
    const std::string& parameter = f[1];
    // The value column may carry a note ("148 (assumed = B200)"): take the leading number.
    const double value = std::strtod(f[2].c_str(), nullptr);
    const ComputeSpec& compute = chip.proto().compute();
    SCOPED_TRACE(line);
    if (parameter == "peak_bf16_dense") {
      EXPECT_EQ(compute.peak_bf16_flops_per_second(), value * 1e12);
    } else if (parameter == "peak_fp8_dense" || (parameter == "peak_fp8" && value > 0)) {
      EXPECT_EQ(compute.peak_fp8_flops_per_second(), value * 1e12);
    } else if (parameter == "peak_fp4_dense") {
      EXPECT_EQ(compute.peak_fp4_flops_per_second(), value * 1e12);
    } else if (parameter == "hbm_bandwidth") {
      EXPECT_EQ(chip.hbm_bytes_per_second(), value * 1e9);
    } else if (parameter == "sms") {
      EXPECT_EQ(compute.sms_per_chip(), value);
    } else if (parameter == "tensorcores_per_chip") {
      EXPECT_EQ(compute.tensorcores_per_chip(), value);
    } else if (parameter == "vmem_per_tensorcore") {
      EXPECT_EQ(chip.proto().memory().vmem_bytes_per_core(), value * kMiB);
    } else if (parameter == "mxu_per_tensorcore") {
      EXPECT_EQ(compute.matrix_unit().units_per_core(), value);
    } else if (parameter == "sparsecores_per_chip") {
      EXPECT_EQ(compute.sparsecores_per_chip(), value);
    } else {
      continue;
    }
    ++checked;
  }
  // 10 chips x (bf16, HBM bandwidth, cores) at least, plus the TPU-only rows, plus GB300 and B300.
  EXPECT_GE(checked, 48);
}

// ---------------------------------------------------------------------------------------------
// Validation.

TEST(HardwareValidation, InvalidFileReportsEveryProblemAtItsLine) {
  const std::string path = PERFSIM_TESTDATA_DIR "/hw/invalid_chip.textproto";
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::string text, ReadTextFile(path));
  absl::StatusOr<Chip> chip = Chip::FromText(text, "invalid_chip.textproto");
  ASSERT_THAT(chip, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("invalid_chip")));
  const std::vector<testing::ExpectedError> expected = testing::ReadExpectedErrors(text);
  ASSERT_EQ(expected.size(), 9u);  // The file has nine annotated problems.
  testing::ExpectErrorsMatch(chip.status().message(), "invalid_chip.textproto", expected);
}

TEST(HardwareValidation, SyntaxErrorsComeBackWithFileLineAndColumn) {
  EXPECT_THAT(Chip::FromText("name: \"x\"\nkind CHIP_KIND_TPU\n", "mine.textproto"),
              StatusIs(absl::StatusCode::kInvalidArgument, StartsWith("mine.textproto:2:")));
}

TEST(HardwareValidation, ProtoBuiltInCodeReportsFieldPaths) {
  HardwareSpec spec = MustLoad("tpu_v5p").proto();
  spec.mutable_memory()->set_default_scoped_vmem_limit_bytes(128 * 1024 * 1024);
  spec.mutable_interconnect()->mutable_dimensions(2)->set_size_chips(0);
  EXPECT_THAT(Chip::FromProto(spec),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "memory.default_scoped_vmem_limit_bytes: expected <= vmem_bytes_per_core "
                       "(67108864); got 134217728\n"
                       "interconnect.dimensions[2].size_chips: expected > 0; got 0 (unset)"));
}

TEST(HardwareValidation, EmptySpecListsEveryMissingRequiredField) {
  absl::StatusOr<Chip> chip = Chip::FromProto(HardwareSpec());
  ASSERT_FALSE(chip.ok());
  const std::string message(chip.status().message());
  EXPECT_THAT(message, HasSubstr("name: expected lower-case letters"));
  EXPECT_THAT(message, HasSubstr("kind: expected CHIP_KIND_TPU or CHIP_KIND_GPU; got unset"));
  EXPECT_THAT(message, HasSubstr("compute.peak_bf16_flops_per_second: expected a value in "
                                 "[1e+09, 1e+18] flop/s; got 0 (unset)"));
  EXPECT_THAT(message, HasSubstr("memory.hbm_bytes_per_second: expected a value in [1e+06, "
                                 "1e+15] bytes/s; got 0 (unset)"));
  EXPECT_THAT(message, HasSubstr("interconnect.dimensions: expected at least one dimension"));
}

TEST(HardwareValidation, RejectsNonFiniteAndMisplacedValues) {
  HardwareSpec spec = MustLoad("gpu_h100").proto();
  spec.mutable_memory()->set_hbm_bytes_per_second(std::numeric_limits<double>::quiet_NaN());
  spec.mutable_memory()->set_vmem_bytes_per_core(1024);  // A TPU-only field on a GPU.
  spec.mutable_interconnect()->mutable_dimensions(0)->set_wraparound_size_multiple_chips(4);
  spec.mutable_interconnect()->set_domain_max_chips(4);  // Smaller than the 8-GPU slice.
  absl::StatusOr<Chip> chip = Chip::FromProto(spec);
  ASSERT_FALSE(chip.ok());
  const std::string message(chip.status().message());
  EXPECT_THAT(message, HasSubstr("memory.hbm_bytes_per_second: expected a value in [1e+06, 1e+15] "
                                 "bytes/s; got nan"));
  EXPECT_THAT(message,
              HasSubstr("memory.vmem_bytes_per_core: expected 0 (does not apply to a GPU)"));
  EXPECT_THAT(message, HasSubstr("wraparound_size_multiple_chips: expected 0"));
  EXPECT_THAT(message, HasSubstr("interconnect.domain_max_chips: expected >= the chips of the "
                                 "default slice (8); got 4"));
}

TEST(HardwareValidation, RejectsNegativeFixedCosts) {
  // A Pallas grid step's fixed cost (compute field 15) is seconds like the kernel launch cost:
  // a negative one would make small tiles faster than their roofline.
  HardwareSpec spec = MustLoad("tpu_v5p").proto();
  spec.mutable_compute()->set_grid_step_overhead_seconds(-0.35e-6);
  spec.mutable_compute()->set_kernel_overhead_seconds(-1e-6);
  EXPECT_THAT(Chip::FromProto(spec),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "compute.kernel_overhead_seconds: expected seconds in [0, 1); got -1e-06\n"
                       "compute.grid_step_overhead_seconds: expected seconds in [0, 1); got "
                       "-3.5e-07"));
  // 0 is "not modelled", as on every GPU.
  spec.mutable_compute()->set_grid_step_overhead_seconds(0);
  spec.mutable_compute()->set_kernel_overhead_seconds(0);
  EXPECT_THAT(Chip::FromProto(spec).status(), IsOk());
}

TEST(HardwareValidation, RejectsRatesOutsideThePlausibleRange) {
  // Positive but absurd rates once passed and made predictions inf (1e-308 bytes/s) or 0.
  HardwareSpec spec = MustLoad("gpu_h100").proto();
  spec.mutable_memory()->set_hbm_bytes_per_second(1e-308);
  spec.mutable_compute()->set_peak_bf16_flops_per_second(1e30);
  spec.mutable_compute()->set_peak_fp8_flops_per_second(5);  // optional, but set: in range
  spec.mutable_interconnect()->mutable_dimensions(0)->set_latency_seconds(3600);
  absl::StatusOr<Chip> chip = Chip::FromProto(spec);
  ASSERT_FALSE(chip.ok());
  const std::string message(chip.status().message());
  EXPECT_THAT(message, HasSubstr("compute.peak_bf16_flops_per_second: expected a value in "
                                 "[1e+09, 1e+18] flop/s; got 1e+30"));
  EXPECT_THAT(message, HasSubstr("compute.peak_fp8_flops_per_second: expected 0 (unset) or a "
                                 "value in [1e+09, 1e+18] flop/s; got 5"));
  EXPECT_THAT(message, HasSubstr("memory.hbm_bytes_per_second: expected a value in [1e+06, "
                                 "1e+15] bytes/s; got 1e-308"));
  EXPECT_THAT(message, HasSubstr("interconnect.dimensions[0].latency_seconds: expected seconds "
                                 "in [0, 1); got 3.6e+03"));
  // Every built-in chip is inside every range.
  for (const char* name :
       {"tpu_v4", "tpu_v5e", "tpu_v5p", "tpu_v6e", "tpu_v7x", "gpu_a100", "gpu_h100", "gpu_h200",
        "gpu_h800", "gpu_b200", "gpu_gb200", "gpu_b300", "gpu_gb300"}) {
    EXPECT_THAT(Chip::FromProto(MustLoad(name).proto()).status(), IsOk()) << name;
  }
}

TEST(HardwareValidation, AbsurdSliceSizesAreRejectedWithoutOverflow) {
  HardwareSpec spec = MustLoad("tpu_v5p").proto();
  for (int i = 0; i < 3; ++i) {
    InterconnectDimension& dim = *spec.mutable_interconnect()->mutable_dimensions(i);
    dim.set_size_chips(int64_t{1} << 40);  // 2^120 chips in all: int64 would overflow.
    dim.set_max_size_chips(0);
    dim.set_wraparound(false);
  }
  EXPECT_THAT(Chip::FromProto(spec),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "interconnect.dimensions: expected a default slice of at most 16777216 "
                       "chips; got 1.329227995784916e+36"));
}

TEST(HardwareValidation, WraparoundNeedsAWholeNumberOfCubes) {
  HardwareSpec spec = MustLoad("tpu_v5p").proto();
  spec.mutable_interconnect()->mutable_dimensions(0)->set_size_chips(2);  // Still wraparound.
  EXPECT_THAT(
      Chip::FromProto(spec),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("interconnect.dimensions[0].wraparound: expected size_chips (2) to "
                         "be a multiple of wraparound_size_multiple_chips (4)")));
}

TEST(HardwareValidation, UnsetOptionalFactorsDefaultToOne) {
  PERFSIM_ASSERT_OK_AND_ASSIGN(Chip chip,
                               Chip::Load(PERFSIM_TESTDATA_DIR "/hw/valid_chip.textproto"));
  EXPECT_EQ(chip.name(), "toy_tpu");
  EXPECT_EQ(chip.proto().efficiency().matmul_fraction_of_peak(), 1.0);
  EXPECT_EQ(chip.proto().efficiency().collective_hierarchical_fraction_of_peak(), 1.0);
  EXPECT_EQ(chip.proto().efficiency().hbm_fraction_of_peak(), 1.0);
  // The link classes and the SM copy rate too (issue 14).
  EXPECT_EQ(chip.proto().efficiency().nvlink_fraction_of_peak(), 1.0);
  EXPECT_EQ(chip.proto().efficiency().infiniband_fraction_of_peak(), 1.0);
  EXPECT_EQ(chip.proto().efficiency().ici_fraction_of_peak(), 1.0);
  EXPECT_EQ(chip.proto().efficiency().dcn_fraction_of_peak(), 1.0);
  EXPECT_EQ(chip.proto().efficiency().sm_copy_fraction_of_peak(), 1.0);
  // Unset overheads are none.
  EXPECT_EQ(chip.proto().efficiency().grouped_matmul_overhead_seconds_per_group(), 0.0);
  EXPECT_EQ(chip.proto().efficiency().collective_overhead_seconds(), 0.0);
  EXPECT_THAT(chip.proto().efficiency().fitted_on(), HasSubstr("not calibrated"));
  EXPECT_EQ(chip.proto().compute().matrix_unit().small_rows_fraction_of_peak(), 1.0);
  EXPECT_EQ(chip.proto().compute().devices_per_chip(), 1);
}

TEST(HardwareValidation, LinkClassFractionsAreFractions) {
  HardwareSpec spec = MustLoad("gpu_h100").proto();
  spec.mutable_efficiency()->set_infiniband_fraction_of_peak(1.5);
  spec.mutable_efficiency()->set_nvlink_fraction_of_peak(0);
  spec.mutable_compute()->set_collective_launch_seconds(-1e-6);
  const absl::Status status = Chip::FromProto(spec).status();
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kInvalidArgument,
                               HasSubstr("efficiency.infiniband_fraction_of_peak")));
  EXPECT_THAT(status.message(), HasSubstr("efficiency.nvlink_fraction_of_peak"));
  EXPECT_THAT(status.message(), HasSubstr("compute.collective_launch_seconds"));
}

TEST(HardwareRegistry, GpusHaveSourcedCollectiveLaunchAndSmCopyRates) {
  // XLA's kNcclKernelLaunchOverhead (5 us) and 32 B/clock/SM at 1.98 GHz (H100).
  const Chip h100 = MustLoad("gpu_h100");
  EXPECT_EQ(h100.proto().compute().collective_launch_seconds(), 5e-6);
  EXPECT_DOUBLE_EQ(h100.proto().compute().sm_copy_bytes_per_second_per_sm(), 32 * 1.98e9);
}

TEST(HardwareRegistry, UnknownNameIsNotFoundListingTheKnownNames) {
  absl::StatusOr<Chip> chip = ResolveChip("tpu_v9");
  ASSERT_THAT(chip, StatusIs(absl::StatusCode::kNotFound, HasSubstr("unknown hardware 'tpu_v9'")));
  for (const std::string& name : BuiltinChipNames()) {
    EXPECT_THAT(chip.status().message(), HasSubstr(name));
  }
}

TEST(HardwareRegistry, PathsAreLoadedFromFiles) {
  PERFSIM_ASSERT_OK_AND_ASSIGN(Chip chip,
                               ResolveChip(PERFSIM_TESTDATA_DIR "/hw/valid_chip.textproto"));
  EXPECT_EQ(chip.name(), "toy_tpu");
  EXPECT_THAT(ResolveChip("/nonexistent/chip.textproto"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("/nonexistent/chip.textproto")));
}

}  // namespace
}  // namespace perfsim
