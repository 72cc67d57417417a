// Roofline pieces (sim/cost/roofline.h) against figures derived from the chip descriptions.
#include "sim/cost/roofline.h"

#include "gtest/gtest.h"
#include "sim/hw/chip_registry.h"
#include "sim/util/status_matchers.h"

namespace perfsim {
namespace {

Chip Load(const char* name) {
  absl::StatusOr<Chip> chip = ResolveChip(name);
  PERFSIM_CHECK(chip.ok()) << chip.status();
  return *chip;
}

TEST(TimeMatmul, LargeMatmulRunsAtPeakWithoutWaste) {
  // tpu_v5p: tiles 8 x 128 (k 128), 2 TensorCores x 4 MXUs. 1024^3: 128*8 = 1024 output tiles,
  // 128 full waves of 8: executed = 2*1024^3, at 4.59e14 FLOP/s.
  const MatmulTime t = TimeMatmul({.m = 1024, .n = 1024, .k = 1024}, Load("tpu_v5p"));
  EXPECT_EQ(t.executed_flops, 2.0 * 1024 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(t.seconds, 2.0 * 1024 * 1024 * 1024 / 4.59e14);
  EXPECT_TRUE(t.unknown_rates.empty());
}

TEST(TimeMatmul, TinyMatmulPaysAWholeWaveOfPaddedTiles) {
  // 1x1x1 pads to one 8x128 tile with k = 128 on one unit; the wave is 8 units wide:
  // 8 * 2*8*128*128 = 2097152 flops.
  const MatmulTime t = TimeMatmul({.m = 1, .n = 1, .k = 1}, Load("tpu_v5p"));
  EXPECT_EQ(t.executed_flops, 2097152.0);
  EXPECT_DOUBLE_EQ(t.seconds, 2097152.0 / 4.59e14);
}

TEST(TimeMatmul, FewRowsOnHopperAreDeratedNotPadded) {
  // gpu_h100: wgmma m 64, n 8, k 16, 132 SMs x 4 units; m = 16 < 64 runs 16-row tiles at 0.63
  // of peak: 64/8 = 8 tiles, one wave of 528 units: 528 * 2*16*8*64 flops.
  const MatmulTime t = TimeMatmul({.m = 16, .n = 64, .k = 64}, Load("gpu_h100"));
  EXPECT_EQ(t.executed_flops, 528.0 * 2 * 16 * 8 * 64);
  EXPECT_DOUBLE_EQ(t.seconds, 528.0 * 2 * 16 * 8 * 64 / (9.89e14 * 0.63));
}

TEST(MatmulRate, PerDeviceAndPerOperandType) {
  // v7x: each TensorCore is a device, so half the chip's 2.307e15.
  EXPECT_DOUBLE_EQ(MatmulRateFor(PrimitiveType::kBF16, PrimitiveType::kBF16,
                                 MatmulPrecision::kDefault, Load("tpu_v7x"))
                       .flops_per_second,
                   2.307e15 / 2);
  // f32 on a TPU: bf16 passes, 1 by default and 6 at highest precision.
  const Chip v5p = Load("tpu_v5p");
  EXPECT_DOUBLE_EQ(
      MatmulRateFor(PrimitiveType::kF32, PrimitiveType::kF32, MatmulPrecision::kDefault, v5p)
          .flops_per_second,
      4.59e14);
  EXPECT_DOUBLE_EQ(
      MatmulRateFor(PrimitiveType::kF32, PrimitiveType::kF32, MatmulPrecision::kHighest, v5p)
          .flops_per_second,
      4.59e14 / 6);
  // Mixed bf16 x f32 runs at the f32 rate: TF32 on an H100, CUDA cores at highest precision.
  const Chip h100 = Load("gpu_h100");
  EXPECT_DOUBLE_EQ(
      MatmulRateFor(PrimitiveType::kBF16, PrimitiveType::kF32, MatmulPrecision::kDefault, h100)
          .flops_per_second,
      4.946e14);
  EXPECT_DOUBLE_EQ(
      MatmulRateFor(PrimitiveType::kF32, PrimitiveType::kF32, MatmulPrecision::kHighest, h100)
          .flops_per_second,
      6.69e13);
}

TEST(MatmulRate, MissingPeakIsReportedNotInvented) {
  // TPU v4 has no fp8 MXU rate in its description.
  const MatmulRate fp8 = MatmulRateFor(PrimitiveType::kF8E4M3FN, PrimitiveType::kF8E4M3FN,
                                       MatmulPrecision::kDefault, Load("tpu_v4"));
  EXPECT_EQ(fp8.flops_per_second, 0);
  EXPECT_EQ(fp8.unknown_rate, "compute.peak_fp8_flops_per_second");
  const MatmulTime t = TimeMatmul(
      {.m = 8, .n = 128, .k = 128, .lhs = PrimitiveType::kF8E4M3FN, .rhs = PrimitiveType::kF8E4M3FN},
      Load("tpu_v4"));
  EXPECT_EQ(t.seconds, 0);
  EXPECT_EQ(t.unknown_rates, std::vector<std::string>{"compute.peak_fp8_flops_per_second"});
}

TEST(CombineRoofline, MaxOfComputeAndMemoryPlusOverhead) {
  KernelTime t = CombineRoofline(2, 1, 0);
  EXPECT_EQ(t.seconds, 2);
  EXPECT_EQ(t.bound, Bound::kCompute);
  t = CombineRoofline(1, 2, 0.5);
  EXPECT_EQ(t.seconds, 2.5);
  EXPECT_EQ(t.bound, Bound::kMemory);
  t = CombineRoofline(1, 1, 5);
  EXPECT_EQ(t.seconds, 6);
  EXPECT_EQ(t.bound, Bound::kOverhead);
  EXPECT_EQ(CombineRoofline(0, 0, 0).bound, Bound::kNone);
}

TEST(DeviceRates, V7xDevicesGetHalfAChip) {
  const Chip v7x = Load("tpu_v7x");
  EXPECT_DOUBLE_EQ(DeviceHbmBytesPerSecond(v7x), v7x.hbm_bytes_per_second() / 2);
  EXPECT_EQ(DeviceCores(v7x), 1);
  EXPECT_EQ(DeviceCores(Load("tpu_v5p")), 2);
  EXPECT_EQ(DeviceCores(Load("gpu_h100")), 132);
}

}  // namespace
}  // namespace perfsim
