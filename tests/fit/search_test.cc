// Tiling search: candidates are legal, the winner is the fastest fitting one by the cost model
// (grouped matmuls) or the proxy (ragged gather, GPU tile), the estimates match hand-derived
// byte counts.
#include <algorithm>
#include <cstdint>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/cost/gpu_gemm.h"
#include "sim/cost/grouped_matmul.h"
#include "sim/fit/fit_report.h"
#include "sim/fit/tiling_cost.h"
#include "sim/fit/tiling_search.h"
#include "sim/hw/chip_registry.h"
#include "sim/util/status_matchers.h"

namespace perfsim {
namespace {

constexpr int64_t kMiB = 1024 * 1024;
constexpr PrimitiveType kBf16 = PrimitiveType::kBF16;
constexpr PrimitiveType kF32 = PrimitiveType::kF32;

Chip LoadChip(absl::string_view name) {
  absl::StatusOr<Chip> chip = LoadBuiltinChip(name);
  EXPECT_TRUE(chip.ok()) << chip.status();
  return *std::move(chip);
}

KernelProblem Problem(KernelKind kernel, ProblemShape shape, PrimitiveType dtype) {
  KernelProblem p;
  p.kernel = kernel;
  p.shape = shape;
  p.dtypes = {dtype, dtype, dtype};
  return p;
}

// The cost model's call (sim/cost/grouped_matmul.h) for a bf16 kernel of `shape` with tiles
// `t`, group sizes unknown: what a kernel PricedByCostModel must be priced as.
GroupedMatmulSpec Bf16CostSpec(GroupedMatmulKind kind, ProblemShape shape, Tiling t) {
  return GroupedMatmulSpec{.kind = kind,
                           .m = shape.m,
                           .k = shape.k,
                           .n = shape.n,
                           .num_groups = shape.groups,
                           .tm = t.tm,
                           .tk = t.tk,
                           .tn = t.tn,
                           .lhs_type = kBf16,
                           .rhs_type = kBf16,
                           .out_type = kBf16};
}

// DeepSeek-V3 wi_0 forward: 2048 tokens × K = 8 rows, D = 7168 -> F = 2048, 256 experts.
KernelProblem DeepSeekGmm() { return Problem(KernelKind::kGmm, {16384, 7168, 2048, 256}, kBf16); }

TEST(FitSearch, EveryCandidateIsLegalForEveryKernel) {
  const Chip tpu = LoadChip("tpu_v7x");
  const Chip gpu = LoadChip("gpu_h100");
  for (KernelKind kernel : AllKernels()) {
    KernelProblem p = Problem(kernel, {4096, 7168, 2048, 16}, kBf16);
    if (kernel == KernelKind::kRaggedGather) p.shape.n = 8;
    const Chip& chip = IsTpuKernel(kernel) ? tpu : gpu;
    const std::vector<Tiling> tilings = EnumerateTilings(p, chip);
    ASSERT_FALSE(tilings.empty()) << KernelName(kernel);
    for (const Tiling& t : tilings) {
      const KernelFootprint f = ComputeFootprint(p, t, chip);
      ASSERT_TRUE(f.violations.empty())
          << KernelName(kernel) << " " << TilingToString(t) << ": " << f.violations.front();
    }
  }
}

TEST(FitSearch, DeepSeekCandidatesCoverTheTileGrid) {
  // tm: multiples of 8 dividing 16384 = 8·2^i, i = 0..11 -> 12 values; tk: the 56 multiples of
  // 128 up to 7168 (all below the dense limit of 8192); tn: 16 multiples of 128 up to 2048.
  const std::vector<Tiling> tilings = EnumerateTilings(DeepSeekGmm(), LoadChip("tpu_v7x"));
  EXPECT_EQ(tilings.size(), 12u * 56u * 16u);
}

TEST(FitSearch, BestIsTheFastestFittingCandidateAndRunnersUpFollowInOrder) {
  const Chip chip = LoadChip("tpu_v7x");
  const KernelProblem p = DeepSeekGmm();
  PERFSIM_ASSERT_OK_AND_ASSIGN(TilingSearchResult r, SearchTilings(p, chip, {}));
  ASSERT_TRUE(r.best.has_value());
  EXPECT_TRUE(r.best->fits);
  EXPECT_LE(r.best->required_bytes, 32 * kMiB);
  EXPECT_EQ(r.runners_up.size(), 5u);
  // Brute force over the same candidates with the public fit check and proxy.
  int64_t fitting = 0;
  double fastest = 1e300;
  for (const Tiling& t : EnumerateTilings(p, chip)) {
    PERFSIM_ASSERT_OK_AND_ASSIGN(FitReport f, CheckFit(p, t, chip));
    if (!f.fits) continue;
    ++fitting;
    fastest = std::min(fastest, EstimateTilingCost(p, t, chip).seconds);
  }
  EXPECT_EQ(r.fitting, fitting);
  EXPECT_EQ(r.candidates, 12 * 56 * 16);
  EXPECT_EQ(r.best_cost.seconds, fastest);
  double previous = r.best_cost.seconds;
  for (const RankedTiling& runner : r.runners_up) {
    EXPECT_GE(runner.cost.seconds, previous);
    EXPECT_LE(runner.required_bytes, 32 * kMiB);
    previous = runner.cost.seconds;
  }
}

TEST(FitSearch, GridStepOverheadSeparatesRowTilesThatMoveTheSameBytes) {
  // DeepSeek-V3 gmm on v7x with tk = k and tn = 1024: every group's weights are read once per
  // n tile and every lhs row once per n tile, whatever tm is, so tm = 8 and tm = 64 move the
  // same HBM bytes: lhs 2·16384·7168·2, weights 256·7168·2048·2, out 16384·2048·2 B. What
  // differs is the grid: (m/tm + G - 1) visited m-tiles x 2 n-tiles:
  //   tm = 64: (256 + 255) x 2 = 1022 steps;  tm = 8: (2048 + 255) x 2 = 4606 steps.
  // A Pallas step lasts max(compute, DMA, 0.35 us) (grouped_matmul.h). The 256 · 2 = 512 steps
  // that start a group's run also fetch its [7168, 1024] weight block (W / 512 each, W = the
  // weights' HBM time); every step moves its share of the rest (D / steps). A tm = 8 step
  // computes 0.1 us, under 0.35 us: tm = 8 costs 512 · (W/512 + D/4606) + 4094 · 0.35 us.
  // A tm = 64 step computes c = 8x that (0.81 us): 512 · (W/512 + D/1022) + 510 · c. tm = 8
  // is about 1 ms slower; with the per-step cost at 0 the two differ only by how the
  // weight fetches hide, and the search's order would rest on that alone.
  const Chip chip = LoadChip("tpu_v7x");
  const KernelProblem p = DeepSeekGmm();
  const TilingCostEstimate t64 = EstimateTilingCost(p, Tiling{64, 7168, 1024}, chip);
  const TilingCostEstimate t8 = EstimateTilingCost(p, Tiling{8, 7168, 1024}, chip);
  EXPECT_EQ(t64.memory_seconds, t8.memory_seconds);
  EXPECT_EQ(t64.grid_steps, 1022);
  EXPECT_EQ(t8.grid_steps, 4606);
  const double hbm = 7.38e12 / 2 * chip.proto().efficiency().hbm_fraction_of_peak();
  const double w = 256.0 * 7168 * 2048 * 2 / hbm;
  const double d = (2.0 * 16384 * 7168 * 2 + 16384.0 * 2048 * 2) / hbm;
  EXPECT_DOUBLE_EQ(t8.memory_seconds, w + d);
  const double c64 = t64.compute_seconds / 1022;
  ASSERT_GT(c64, 0.35e-6);
  ASSERT_LT(t8.compute_seconds / 4606, 0.35e-6);
  const double fixed =
      chip.proto().compute().kernel_overhead_seconds() +
      256 * chip.proto().efficiency().grouped_matmul_overhead_seconds_per_group();
  EXPECT_NEAR(t8.seconds, 512 * (w / 512 + d / 4606) + 4094 * 0.35e-6 + fixed, 1e-12);
  EXPECT_NEAR(t64.seconds, 512 * (w / 512 + d / 1022) + 510 * c64 + fixed, 1e-12);
  EXPECT_GT(t8.seconds - t64.seconds, 0.5e-3);
  PERFSIM_ASSERT_OK_AND_ASSIGN(TilingSearchResult r, SearchTilings(p, chip, {}));
  ASSERT_TRUE(r.best.has_value());
  EXPECT_NE(r.best->tiling.tm, 8);
}

TEST(FitSearch, IsDeterministic) {
  const Chip chip = LoadChip("tpu_v5p");
  const KernelProblem p = Problem(KernelKind::kGmm, {16384, 1024, 1024, 8}, kF32);
  PERFSIM_ASSERT_OK_AND_ASSIGN(TilingSearchResult a, SearchTilings(p, chip, {}));
  PERFSIM_ASSERT_OK_AND_ASSIGN(TilingSearchResult b, SearchTilings(p, chip, {}));
  ASSERT_TRUE(a.best.has_value() && b.best.has_value());
  EXPECT_EQ(a.best->tiling, b.best->tiling);
  ASSERT_EQ(a.runners_up.size(), b.runners_up.size());
  for (size_t i = 0; i < a.runners_up.size(); ++i) {
    EXPECT_EQ(a.runners_up[i].tiling, b.runners_up[i].tiling);
  }
  // The f32 winner stays within v5p's 16 MiB scoped limit, unlike MaxText's default tiles.
  EXPECT_LE(a.best->required_bytes, 16 * kMiB);
}

TEST(FitSearch, DeepSeekFusedFfnTiledOverDHasNoFittingTilingOnV7x) {
  // Every D-tiled candidate holds wi_0 and wi_1 whole: 2 × 2·7168·2048·2 B = 112 MiB > 57.6 MiB,
  // so nothing fits and the closest miss is reported; the smallest candidate is tm = 8,
  // td = 128: 112 MiB + x 2·16·7168·2 (tm 8 -> 16 bf16 sublanes) + wo 2·2048·128·2 + out
  // 2·16·128·2 + h 8·2048·4 = 117440512 + 458752 + 1048576 + 8192 + 65536 = 119021568 B.
  const Chip chip = LoadChip("tpu_v7x");
  const ProblemShape deepseek{16384, 7168, 2048, 256};
  PERFSIM_ASSERT_OK_AND_ASSIGN(
      TilingSearchResult d,
      SearchTilings(Problem(KernelKind::kFusedFfnDTiled, deepseek, kBf16), chip, {}));
  EXPECT_FALSE(d.best.has_value());
  EXPECT_EQ(d.fitting, 0);
  ASSERT_TRUE(d.smallest_misfit.has_value());
  EXPECT_EQ(d.smallest_misfit->tiling, (Tiling{8, 128, 2048}));
  EXPECT_EQ(d.smallest_misfit->required_bytes, 119021568);
  PERFSIM_ASSERT_OK_AND_ASSIGN(
      TilingSearchResult f,
      SearchTilings(Problem(KernelKind::kFusedFfnFTiled, deepseek, kBf16), chip, {}));
  ASSERT_TRUE(f.best.has_value());
  EXPECT_TRUE(f.best->fits);
  EXPECT_EQ(f.best->tiling.tk, 7168);
}

TEST(FitSearch, VmemLimitOverrideNarrowsTheSearch) {
  const Chip chip = LoadChip("tpu_v7x");
  TilingSearchOptions options;
  options.vmem_limit_bytes = 4 * kMiB;
  PERFSIM_ASSERT_OK_AND_ASSIGN(TilingSearchResult r, SearchTilings(DeepSeekGmm(), chip, options));
  ASSERT_TRUE(r.best.has_value());
  EXPECT_LE(r.best->required_bytes, 4 * kMiB);
  EXPECT_EQ(r.best->limit_bytes, 4 * kMiB);
}

TEST(FitCost, GroupedMatmulIsPricedByTheCostModelWithUnknownGroupSizes) {
  // gmm m = 1024, k = 256, n = 256, 2 groups, bf16, tm = 512, tn = 256, group sizes unknown:
  // tiles_m = 2, visited m-tiles = tiles_m + G - 1 = 3 (the group boundary inside a tile),
  // distinct = 2, tiles_n = 1 (grouped_matmul.h's traffic rules).
  // tk = 256 (tiles_k = 1): lhs 1·2·512·256·2 = 524288; rhs once per group 2·256·256·2 =
  //   262144; out 2·512·256·2 = 524288 -> 1310720 B; 3 grid steps.
  // tk = 128 (tiles_k = 2): lhs 1·3·512·256·2 = 786432; rhs re-read per visited m-tile
  //   3·256·256·2 = 393216; out 524288 -> 1703936 B; 6 grid steps.
  // Executed work, whole tiles: 3 visited × 2·512·256·256 = 201326592 FLOP either way.
  const Chip chip = LoadChip("tpu_v5p");
  const KernelProblem p = Problem(KernelKind::kGmm, {1024, 256, 256, 2}, kBf16);
  ASSERT_TRUE(PricedByCostModel(p.kernel));
  const TilingCostEstimate whole_k = EstimateTilingCost(p, Tiling{512, 256, 256}, chip);
  const TilingCostEstimate split_k = EstimateTilingCost(p, Tiling{512, 128, 256}, chip);
  EXPECT_EQ(whole_k.hbm_bytes, 1310720);
  EXPECT_EQ(whole_k.grid_steps, 3);
  EXPECT_EQ(whole_k.flops, 201326592);
  EXPECT_EQ(split_k.hbm_bytes, 1703936);
  EXPECT_EQ(split_k.grid_steps, 6);
  EXPECT_EQ(split_k.flops, 201326592);
  // The time is the cost model's for the same call (no group sizes).
  PERFSIM_ASSERT_OK_AND_ASSIGN(
      GroupedMatmulCost cost,
      CostGroupedMatmul(Bf16CostSpec(GroupedMatmulKind::kGmm, p.shape, Tiling{512, 256, 256}),
                        chip));
  EXPECT_EQ(whole_k.seconds, cost.seconds);
  EXPECT_EQ(whole_k.memory_seconds, cost.memory_seconds);
  EXPECT_GT(whole_k.seconds, 0);
}

TEST(FitCost, WeightReReadsMakeASplitKSlowerWhenMemoryBound) {
  // One token row per expert region is the memory-bound decode case: m = 256 rows, 64 groups,
  // k = 7168, n = 2048, bf16, tm = 8. With tk = k each expert's [k, tn] weight is read once
  // per n tile; with tk = 1024 it is re-read for each of the tiles_m + G - 1 = 32 + 63 = 95
  // visited m-tiles instead of once per group (64): 95/64 of the weight bytes, which dominate.
  const Chip chip = LoadChip("tpu_v7x");
  const KernelProblem p = Problem(KernelKind::kGmm, {256, 7168, 2048, 64}, kBf16);
  const TilingCostEstimate whole_k = EstimateTilingCost(p, Tiling{8, 7168, 512}, chip);
  const TilingCostEstimate split_k = EstimateTilingCost(p, Tiling{8, 1024, 512}, chip);
  // rhs: 64·7168·2048·2 = 1879048192 B vs 95·7168·2048·2 = 2789212160 B; lhs 4 n-tiles ×
  // (32 distinct vs 95 visited) × 8·7168·2; out 32·8·2048·2 = 1048576.
  EXPECT_EQ(whole_k.hbm_bytes, 1879048192.0 + 4.0 * 32 * 8 * 7168 * 2 + 1048576);
  EXPECT_EQ(split_k.hbm_bytes, 2789212160.0 + 4.0 * 95 * 8 * 7168 * 2 + 1048576);
  EXPECT_LT(whole_k.seconds, split_k.seconds);
}

TEST(FitCost, FusedFfnAndV2KernelsArePricedByTheCostModel) {
  const Chip chip = LoadChip("tpu_v7x");
  // fused_ffn_f_tiled (tm, D, tf) = (256, 7168, 256) on DeepSeek-V3 experts, bf16: the cost
  // model's kFusedFfn with the same tiles.
  const KernelProblem ffn = Problem(KernelKind::kFusedFfnFTiled, {16384, 7168, 2048, 256}, kBf16);
  ASSERT_TRUE(PricedByCostModel(ffn.kernel));
  PERFSIM_ASSERT_OK_AND_ASSIGN(
      GroupedMatmulCost cost,
      CostGroupedMatmul(
          Bf16CostSpec(GroupedMatmulKind::kFusedFfn, ffn.shape, Tiling{256, 7168, 256}), chip));
  const TilingCostEstimate estimate = EstimateTilingCost(ffn, Tiling{256, 7168, 256}, chip);
  EXPECT_EQ(estimate.seconds, cost.seconds);
  // Visited m-tiles 64 + 255 = 319, tiles_f = 8: 319·8 grid steps.
  EXPECT_EQ(estimate.grid_steps, 319 * 8);
  // gmm_v2 with a fused activation: two [tk, tn] rhs blocks per step, priced as one gmm with n
  // and tn doubled, so twice the executed work of the plain gmm_v2.
  KernelProblem v2 = Problem(KernelKind::kGmmV2, {1024, 256, 256, 2}, kBf16);
  const TilingCostEstimate plain = EstimateTilingCost(v2, Tiling{512, 256, 256}, chip);
  v2.options.fuse_activation = true;
  const TilingCostEstimate fused = EstimateTilingCost(v2, Tiling{512, 256, 256}, chip);
  EXPECT_EQ(fused.flops, 2 * plain.flops);
  EXPECT_EQ(fused.grid_steps, plain.grid_steps);
}

TEST(FitCost, GpuKernelsArePricedByTheGpuGemmModelAndTheGatherByTheProxy) {
  EXPECT_FALSE(PricedByCostModel(KernelKind::kRaggedGather));
  EXPECT_FALSE(PricedByCostModel(KernelKind::kGpuGroupedGemm));
  EXPECT_THAT(TilingCostModelName(KernelKind::kRaggedGather),
              ::testing::HasSubstr("roofline proxy"));
  EXPECT_THAT(TilingCostModelName(KernelKind::kGpuGroupedGemm),
              ::testing::HasSubstr("CostGpuGemm"));
  EXPECT_THAT(TilingCostModelName(KernelKind::kGmm), ::testing::HasSubstr("CostGroupedMatmul"));
  // GPU: m = 1024, k = 512, n = 1024, one group, bf16, CTA tile 128×64×128 on an H100
  // (132 SMs): 8 × 8 = 64 CTAs in one wave, 8 k-steps each: 512 main-loop iterations. The
  // estimate is sim/cost/gpu_gemm.h's with that tile, plus the fixed costs.
  const Chip gpu = LoadChip("gpu_h100");
  const KernelProblem p = Problem(KernelKind::kGpuGroupedGemm, {1024, 512, 1024, 1}, kBf16);
  const TilingCostEstimate c = EstimateTilingCost(p, Tiling{128, 64, 128}, gpu);
  EXPECT_EQ(c.grid_steps, 512);
  const GpuGemmCost model = CostGpuGemm(
      GpuGemmProblem{.groups = {{.m = 1024, .n = 1024, .k = 512}},
                     .lhs_type = kBf16,
                     .rhs_type = kBf16,
                     .out_type = kBf16},
      GpuGemmTile{.tm = 128, .tn = 128, .tk = 64}, gpu);
  EXPECT_EQ(model.ctas, 64);
  EXPECT_DOUBLE_EQ(c.seconds, model.seconds + c.overhead_seconds);
  EXPECT_DOUBLE_EQ(c.hbm_bytes, model.lhs_bytes + model.rhs_bytes + model.out_bytes);
  // One wave of 64 CTAs on 132 SMs: the 68 idle SMs cost nothing more (one wave either way).
  EXPECT_EQ(model.waves, 1);
}

}  // namespace
}  // namespace perfsim
