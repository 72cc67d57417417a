// The GPU GEMM model (sim/cost/gpu_gemm.h): tile choice, waves and L2-aware traffic, on cases
// worked out by hand.
#include "sim/cost/gpu_gemm.h"

#include <string>
#include <utility>

#include "gtest/gtest.h"
#include "sim/hw/chip_registry.h"
#include "sim/util/status.h"

namespace perfsim {
namespace {

// The built-in chip with its efficiency block cleared (datasheet peaks), and optionally a
// different L2 (bytes; -1 keeps the chip's).
Chip DatasheetChip(const std::string& name, int64_t l2_bytes = -1) {
  absl::StatusOr<Chip> chip = ResolveChip(name);
  PERFSIM_CHECK(chip.ok()) << chip.status();
  HardwareSpec spec = chip->proto();
  spec.clear_efficiency();
  if (l2_bytes >= 0) spec.mutable_memory()->set_l2_bytes(l2_bytes);
  absl::StatusOr<Chip> datasheet = Chip::FromProto(std::move(spec));
  PERFSIM_CHECK(datasheet.ok()) << datasheet.status();
  return *std::move(datasheet);
}

// Mixtral 8x7B's wi forward on one expert-parallel H100 (ep = 8, 32768 tokens, top-2): the
// device's one expert gets 32768·2/8 = 8192 rows; D = 4096, F = 14336; bf16 in, f32 out.
GpuGemmProblem MixtralWi() {
  return GpuGemmProblem{.groups = {{.m = 8192, .n = 14336, .k = 4096}},
                        .lhs_type = PrimitiveType::kBF16,
                        .rhs_type = PrimitiveType::kBF16,
                        .out_type = PrimitiveType::kF32};
}

TEST(GpuGemm, ChoosesTheTileWithTheFewestWavesThenTheWidest) {
  // Tiles hold at most 128·256 outputs, so the fewest CTAs any tile gives is
  // 8192·14336 / 32768 = 3584, which (128, 256) and (256, 128) reach exactly: 28 waves of 132
  // SMs (27.15), last wave 3584 − 27·132 = 20 CTAs for both, no padding for both; the wider
  // tn wins. The k step is 128 bytes of bf16: 64.
  const GpuGemmTile tile = ChooseGpuGemmTile(MixtralWi(), DatasheetChip("gpu_h100"));
  EXPECT_EQ(tile.tm, 128);
  EXPECT_EQ(tile.tn, 256);
  EXPECT_EQ(tile.tk, 64);
  EXPECT_EQ(GpuGemmKStep(PrimitiveType::kF8E4M3FN, PrimitiveType::kF8E4M3FN), 128);
}

TEST(GpuGemm, SmallRowCountsSpreadOverTheSms) {
  // Decode: 64 rows through [7168 x 2048]. Every tile gives one wave; the fullest one has the
  // most CTAs: the smallest tile, (64, 16) (64 is wgmma's M on an H100), 2048/16 = 128 CTAs.
  const GpuGemmProblem p{.groups = {{.m = 64, .n = 2048, .k = 7168}}};
  const GpuGemmTile tile = ChooseGpuGemmTile(p, DatasheetChip("gpu_h100"));
  EXPECT_EQ(tile.tm, 64);
  EXPECT_EQ(tile.tn, 16);
  const GpuGemmCost c = CostGpuGemm(p, tile, DatasheetChip("gpu_h100"));
  EXPECT_EQ(c.ctas, 128);
  EXPECT_EQ(c.waves, 1);
}

TEST(GpuGemm, PanelsLongerThanHalfTheL2AreSharedWithinAWave) {
  // XLA's dense expansion of 32 groups of DeepSeek-V3's up projection (grouped_matmul.h,
  // kXlaRaggedDot): m = 32768, k = 32·7168 = 229376, n = 2048, bf16, tile (128, 256, tk 64)
  // on an H100 (132 SMs, half the L2 26214400 B). One lhs panel is 128·229376·2 = 58720256 B,
  // over half the L2, so no panel stays across waves. 256 x 8 tiles = 2048 CTAs in
  // W = ceil(2048 / 132) = 16 waves.
  //   Along m: a wave holds 132 / 8 = 16.5 rows of 8 tiles; its k-slices are
  //   (16.5·58720256 + 8·939524096 / 8)·64/229376 = 532480 B, under half the L2, so each lhs
  //   panel is read once (8 n-tiles <= 132: lhs · 1 = 32768·229376·2 = 15032385536 B) and the
  //   8 rhs panels once per wave (rhs · 1 · 16 = 229376·2048·2·16 = 15032385536 B).
  //   Along n: each rhs panel once, and 0.516 of the lhs per wave: 124 GB. Along m wins.
  // Every CTA reading its own panels would be lhs·8 + rhs·256 = 361 GB.
  const GpuGemmTile tile{.tm = 128, .tn = 256, .tk = 64};
  const GpuGemmProblem expanded{.groups = {{.m = 32768, .n = 2048, .k = 32 * 7168}}};
  const GpuGemmCost c = CostGpuGemm(expanded, tile, DatasheetChip("gpu_h100"));
  EXPECT_EQ(c.waves, 16);
  EXPECT_EQ(c.lhs_bytes, 15032385536.0);
  EXPECT_EQ(c.rhs_bytes, 15032385536.0);
}

TEST(GpuGemm, ReReadsAreServedByL2WithinABand) {
  // With (128, 256) on an H100 (L2 50 MiB = 52428800 B, half = 26214400 B):
  //   lhs 8192·4096·2 = 67108864 B, rhs 4096·14336·2 = 117440512 B (over half the L2).
  //   Along m: an lhs panel is 128·4096·2 = 1048576 B, a band is 25 m-tiles, 64 m-tiles make
  //   3 bands, so the rhs streams 3 times: 67108864 + 3·117440512 = 419430400 B.
  //   Along n: an rhs panel is 256·4096·2 = 2097152 B, a band 12 n-tiles, 56 n-tiles make 5
  //   bands: 5·67108864 + 117440512 = 452984832 B. Along m wins.
  // With a 1 KiB L2 no panel stays, and every CTA reads both of its panels from HBM:
  // lhs · 56 n-tiles + rhs · 64 m-tiles = 3758096384 + 7516192768 B, 27x more.
  const Chip chip = DatasheetChip("gpu_h100");
  const GpuGemmTile tile{.tm = 128, .tn = 256, .tk = 64};
  const GpuGemmCost c = CostGpuGemm(MixtralWi(), tile, chip);
  EXPECT_EQ(c.lhs_bytes, 67108864.0);
  EXPECT_EQ(c.rhs_bytes, 3 * 117440512.0);
  EXPECT_EQ(c.operand_reads_bytes, 56 * 67108864.0 + 64 * 117440512.0);
  EXPECT_EQ(c.out_bytes, 8192.0 * 14336 * 4);
  const GpuGemmCost no_l2 = CostGpuGemm(MixtralWi(), tile, DatasheetChip("gpu_h100", 1024));
  EXPECT_EQ(no_l2.lhs_bytes, 56 * 67108864.0);
  EXPECT_EQ(no_l2.rhs_bytes, 64 * 117440512.0);

  // Operands that fit half the L2 are read once: 1024^3 bf16 (2 MiB each).
  const GpuGemmCost small =
      CostGpuGemm(GpuGemmProblem{.groups = {{.m = 1024, .n = 1024, .k = 1024}}}, tile, chip);
  EXPECT_EQ(small.lhs_bytes, 1024.0 * 1024 * 2);
  EXPECT_EQ(small.rhs_bytes, 1024.0 * 1024 * 2);
}

TEST(GpuGemm, ComputeIsWaveQuantisedAndTheEpilogueFollowsIt) {
  // 3584 CTAs of 2·128·256·4096 flops = 962072674304 (= 2·8192·14336·4096: no padding) in 28
  // waves of 132 SMs: 28·132/3584 = 1.03125 of the work's time at 9.89e14 FLOP/s = 1003.2 us.
  // Operands 419430400 B / 3.35e12 = 125.2 us hide under it; the f32 output, 469762048 B,
  // is written after the main loop: 140.2 us. Seconds = 1003.2 + 140.2 us.
  const GpuGemmCost c = CostGpuGemm(MixtralWi(), GpuGemmTile{.tm = 128, .tn = 256, .tk = 64},
                                    DatasheetChip("gpu_h100"));
  EXPECT_EQ(c.ctas, 3584);
  EXPECT_EQ(c.waves, 28);
  EXPECT_EQ(c.executed_flops, 962072674304.0);
  EXPECT_EQ(c.flops, 962072674304.0);
  const double compute = 962072674304.0 * (28.0 * 132 / 3584) / 9.89e14;
  EXPECT_DOUBLE_EQ(c.compute_seconds, compute);
  EXPECT_DOUBLE_EQ(c.operand_seconds, 419430400.0 / 3.35e12);
  EXPECT_DOUBLE_EQ(c.epilogue_seconds, 469762048.0 / 3.35e12);
  EXPECT_DOUBLE_EQ(c.seconds, compute + 469762048.0 / 3.35e12);
  EXPECT_TRUE(c.unknown_rate.empty());
}

TEST(GpuGemm, EmptyGroupsRunNoCtasAndZeroKGroupsWriteTheirOutput) {
  // gmm with an empty group: no CTAs for it. A k = 0 group (tgmm's empty group) writes its
  // [128, 256] zeros: 128·256·4 B, one CTA, no flops.
  const GpuGemmProblem p{.groups = {{.m = 0, .n = 256, .k = 64}, {.m = 128, .n = 256, .k = 0}}};
  const GpuGemmCost c =
      CostGpuGemm(p, GpuGemmTile{.tm = 128, .tn = 256, .tk = 64}, DatasheetChip("gpu_h100"));
  EXPECT_EQ(c.ctas, 1);
  EXPECT_EQ(c.executed_flops, 0.0);
  EXPECT_EQ(c.out_bytes, 128.0 * 256 * 4);
  EXPECT_EQ(c.lhs_bytes + c.rhs_bytes, 0.0);
}

}  // namespace
}  // namespace perfsim
