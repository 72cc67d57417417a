// Tiling search: candidates are legal, the winner is the fastest fitting one by the proxy, the
// proxy's traffic model matches hand-derived byte counts.
#include <algorithm>
#include <cstdint>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
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

TEST(FitCost, GroupedMatmulTrafficMatchesTheBlockFetches) {
  // gmm m = 1024, k = 256, n = 256, 2 groups, bf16, tm = 512, tn = 256: tiles_m = 2, active
  // m-tiles = 2 + 2 - 1 = 3 (one tile straddles the group boundary), tiles_n = 1.
  // tk = 256 (tiles_k = 1): lhs 3·512·256·2 = 786432; rhs fetched once per group
  //   2·256·256·2 = 262144; out 3·512·256·2 = 786432 -> 1835008 B, 3 grid steps.
  // tk = 128 (tiles_k = 2): lhs 6·512·128·2 = 786432; rhs re-streamed per active tile
  //   3·2·128·256·2 = 393216; out 786432 -> 1966080 B, 6 grid steps.
  const Chip chip = LoadChip("tpu_v5p");
  const KernelProblem p = Problem(KernelKind::kGmm, {1024, 256, 256, 2}, kBf16);
  const TilingCostEstimate whole_k = EstimateTilingCost(p, Tiling{512, 256, 256}, chip);
  const TilingCostEstimate split_k = EstimateTilingCost(p, Tiling{512, 128, 256}, chip);
  EXPECT_EQ(whole_k.hbm_bytes, 1835008);
  EXPECT_EQ(whole_k.grid_steps, 3);
  EXPECT_EQ(split_k.hbm_bytes, 1966080);
  EXPECT_EQ(split_k.grid_steps, 6);
  // Work: 3 steps × 2·512·256·256 FLOP (128x128 MXU, no padding) = 201326592 FLOP.
  EXPECT_EQ(whole_k.flops, 201326592);
  // v5p: 4.59e14 FLOP/s, 2.765e12 B/s, one device per chip; time = max(compute, memory) +
  // 3 × 0.35 us.
  EXPECT_DOUBLE_EQ(whole_k.seconds,
                   std::max(201326592 / 4.59e14, 1835008 / 2.765e12) + 3 * 0.35e-6);
}

TEST(FitCost, V7xMxuPadsNarrowTilesTo256) {
  // On v7x (256×256 MXU) a tn = 128 block costs as much MXU work as tn = 256: flops per step
  // 2·tm·256·256 either way for tk = 256.
  const Chip chip = LoadChip("tpu_v7x");
  const KernelProblem p = Problem(KernelKind::kGmm, {1024, 256, 256, 1}, kBf16);
  const TilingCostEstimate narrow = EstimateTilingCost(p, Tiling{512, 256, 128}, chip);
  // 2 m-tiles × 2 n-tiles = 4 steps × 2·512·256·256 = 268435456 FLOP.
  EXPECT_EQ(narrow.grid_steps, 4);
  EXPECT_EQ(narrow.flops, 268435456);
}

}  // namespace
}  // namespace perfsim
