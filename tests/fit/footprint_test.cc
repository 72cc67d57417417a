// Kernel footprints and fit reports against hand-derived byte counts. Every expected number is
// derived in the comment beside it from the formulas in shared/reference/backends.md 1b/1c
// (or, for kernels the references give no buffers for, from the model stated in the kernel's
// .cc file), never copied from the program's output.
#include <cstdint>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/fit/fit_report.h"
#include "sim/fit/kernels.h"
#include "sim/hw/chip_registry.h"
#include "sim/util/status_matchers.h"

namespace perfsim {
namespace {

using ::perfsim::testing::StatusIs;
using ::testing::HasSubstr;

constexpr int64_t kKiB = 1024;
constexpr int64_t kMiB = 1024 * 1024;
constexpr PrimitiveType kBf16 = PrimitiveType::kBF16;
constexpr PrimitiveType kF32 = PrimitiveType::kF32;

Chip LoadChip(absl::string_view name) {
  absl::StatusOr<Chip> chip = LoadBuiltinChip(name);
  EXPECT_TRUE(chip.ok()) << chip.status();
  return *std::move(chip);
}

KernelProblem Problem(KernelKind kernel, ProblemShape shape, PrimitiveType lhs, PrimitiveType rhs,
                      PrimitiveType out) {
  KernelProblem p;
  p.kernel = kernel;
  p.shape = shape;
  p.dtypes = {lhs, rhs, out};
  return p;
}

const FitBuffer* FindBuffer(const FitReport& report, absl::string_view name) {
  for (const FitBuffer& b : report.buffers) {
    if (b.name == name) return &b;
  }
  return nullptr;
}

// ---- megablox v1: the goldens ----

TEST(FitGolden, MegabloxGmmF32At512x1024x1024DoesNotFitV5pScopedLimit) {
  // backends.md 1b: VMEM = 2·tm·tk·4 + 2·tk·tn·4 + 2·tm·tn·4 + 4·tm·tn
  //   = 2·512·1024·4 (4 MiB) + 2·1024·1024·4 (8 MiB) + 2·512·1024·4 (4 MiB) + 4·512·1024 (2 MiB)
  //   = 18 MiB, against v5p's 16 MiB default scoped limit (backends.md 1c) -> short by 2 MiB;
  // physical VMEM 64 MiB, so it fits there. Third-party v5p log: "Scoped allocation with size
  // 18.00M and limit 16.00M".
  const Chip chip = LoadChip("tpu_v5p");
  PERFSIM_ASSERT_OK_AND_ASSIGN(
      FitReport r, CheckFit(Problem(KernelKind::kGmm, {16384, 1024, 1024, 8}, kF32, kF32, kF32),
                            Tiling{512, 1024, 1024}, chip));
  EXPECT_FALSE(r.fits);
  EXPECT_EQ(r.required_bytes, 18 * kMiB);
  EXPECT_EQ(r.limit_bytes, 16 * kMiB);
  EXPECT_EQ(r.margin_bytes, -2 * kMiB);
  EXPECT_EQ(r.physical_bytes, 64 * kMiB);
  EXPECT_TRUE(r.fits_physical);
  EXPECT_FALSE(r.fits_default_limit);
  EXPECT_THAT(r.reason, HasSubstr("short by 2 MiB"));
  EXPECT_THAT(r.reason, HasSubstr("a higher vmem_limit_bytes would make it fit"));
  ASSERT_NE(FindBuffer(r, "rhs"), nullptr);
  EXPECT_EQ(FindBuffer(r, "lhs")->bytes, 4 * kMiB);
  EXPECT_EQ(FindBuffer(r, "rhs")->bytes, 8 * kMiB);
  EXPECT_EQ(FindBuffer(r, "out")->bytes, 4 * kMiB);
  EXPECT_EQ(FindBuffer(r, "acc")->bytes, 2 * kMiB);
  EXPECT_EQ(FindBuffer(r, "acc")->count, 1);
  EXPECT_EQ(FindBuffer(r, "rhs")->count, 2);
}

TEST(FitGolden, MegabloxGmmBf16At512x1024x1024FitsV5p) {
  // bf16 in and out: 2·512·1024·2 (2 MiB) + 2·1024·1024·2 (4 MiB) + 2·512·1024·2 (2 MiB)
  //   + 4·512·1024 (2 MiB, the f32 accumulator) = 10 MiB <= 16 MiB, 6 MiB to spare.
  const Chip chip = LoadChip("tpu_v5p");
  PERFSIM_ASSERT_OK_AND_ASSIGN(
      FitReport r, CheckFit(Problem(KernelKind::kGmm, {16384, 1024, 1024, 8}, kBf16, kBf16, kBf16),
                            Tiling{512, 1024, 1024}, chip));
  EXPECT_TRUE(r.fits);
  EXPECT_EQ(r.required_bytes, 10 * kMiB);
  EXPECT_EQ(r.margin_bytes, 6 * kMiB);
  EXPECT_THAT(r.reason, HasSubstr("6 MiB to spare"));
}

TEST(FitGolden, SwappingKAndNChangesTheBlocksThatDependOnThem) {
  // bf16 gmm, tm = 512. Tiling (512, 1024, 2048):
  //   lhs 2·512·1024·2 = 2 MiB, rhs 2·1024·2048·2 = 8 MiB, out 2·512·2048·2 = 4 MiB,
  //   acc 4·512·2048 = 4 MiB -> 18 MiB.
  // Swapped (512, 2048, 1024): lhs 2·512·2048·2 = 4 MiB, rhs 8 MiB (tk·tn unchanged),
  //   out 2·512·1024·2 = 2 MiB, acc 4·512·1024 = 2 MiB -> 16 MiB.
  const Chip chip = LoadChip("tpu_v5p");
  const KernelProblem p = Problem(KernelKind::kGmm, {4096, 4096, 4096, 4}, kBf16, kBf16, kBf16);
  PERFSIM_ASSERT_OK_AND_ASSIGN(FitReport kn, CheckFit(p, Tiling{512, 1024, 2048}, chip));
  PERFSIM_ASSERT_OK_AND_ASSIGN(FitReport nk, CheckFit(p, Tiling{512, 2048, 1024}, chip));
  EXPECT_EQ(kn.required_bytes, 18 * kMiB);
  EXPECT_EQ(nk.required_bytes, 16 * kMiB);
  EXPECT_EQ(FindBuffer(kn, "lhs")->bytes, 2 * kMiB);
  EXPECT_EQ(FindBuffer(nk, "lhs")->bytes, 4 * kMiB);
  EXPECT_EQ(FindBuffer(kn, "rhs")->bytes, FindBuffer(nk, "rhs")->bytes);
  EXPECT_FALSE(kn.fits);  // 18 > 16 MiB
  EXPECT_TRUE(nk.fits);   // exactly the 16 MiB limit
  EXPECT_EQ(nk.margin_bytes, 0);
  // tgmm puts tk·tn in the output and accumulator instead: (512, 1024, 2048) bf16 ->
  //   2·(512·1024·2 + 512·2048·2) = 6 MiB, out 2·1024·2048·2 = 8 MiB, acc 4·1024·2048 = 8 MiB
  //   -> 22 MiB; swapped (512, 2048, 1024): 2·(2 + 1) MiB = 6 MiB, out 8 MiB, acc 8 MiB -> 22 MiB:
  //   for tgmm the swap leaves the total unchanged.
  KernelProblem t = p;
  t.kernel = KernelKind::kTgmm;
  PERFSIM_ASSERT_OK_AND_ASSIGN(FitReport tkn, CheckFit(t, Tiling{512, 1024, 2048}, chip));
  PERFSIM_ASSERT_OK_AND_ASSIGN(FitReport tnk, CheckFit(t, Tiling{512, 2048, 1024}, chip));
  EXPECT_EQ(tkn.required_bytes, 22 * kMiB);
  EXPECT_EQ(tnk.required_bytes, 22 * kMiB);
  EXPECT_EQ(FindBuffer(tkn, "lhs")->bytes, 2 * kMiB);
  EXPECT_EQ(FindBuffer(tnk, "lhs")->bytes, 4 * kMiB);
}

TEST(FitGolden, MegabloxWorkedNumbersOfTheReference) {
  const Chip chip = LoadChip("tpu_v5p");
  // backends.md 1b: default drhs tiles (512,1024,1024) bf16 tgmm = 2·(1+1) + 2·2 + 4 = 12 MiB.
  PERFSIM_ASSERT_OK_AND_ASSIGN(
      FitReport tgmm,
      CheckFit(Problem(KernelKind::kTgmm, {16384, 1024, 1024, 8}, kBf16, kBf16, kBf16),
               Tiling{512, 1024, 1024}, chip));
  EXPECT_EQ(tgmm.required_bytes, 12 * kMiB);
  // JAX default (128,128,128) bf16 gmm: 4 blocks of 128·128 at 2 B ×2 buffers (64 KiB each)
  // for lhs, rhs, out, plus the f32 accumulator 128·128·4 = 64 KiB -> 256 KiB.
  PERFSIM_ASSERT_OK_AND_ASSIGN(
      FitReport small,
      CheckFit(Problem(KernelKind::kGmm, {1024, 1024, 1024, 8}, kBf16, kBf16, kBf16),
               Tiling{128, 128, 128}, chip));
  EXPECT_EQ(small.required_bytes, 256 * kKiB);
}

TEST(FitFootprint, ExistingOutAddsADoubleBufferedOutputBlock) {
  // + 2·tm·tn·s_out = 2·512·1024·4 = 4 MiB on top of the 18 MiB f32 case -> 22 MiB.
  const Chip chip = LoadChip("tpu_v5p");
  KernelProblem p = Problem(KernelKind::kGmm, {16384, 1024, 1024, 8}, kF32, kF32, kF32);
  p.options.existing_out = true;
  PERFSIM_ASSERT_OK_AND_ASSIGN(FitReport r, CheckFit(p, Tiling{512, 1024, 1024}, chip));
  EXPECT_EQ(r.required_bytes, 22 * kMiB);
  EXPECT_EQ(FindBuffer(r, "existing_out")->bytes, 4 * kMiB);
}

TEST(FitFootprint, LhsBufferCountScalesOnlyTheLhs) {
  // tokamax input_buffer_count = 3: lhs 3·512·1024·2 = 3 MiB instead of 2 -> 11 MiB (bf16).
  const Chip chip = LoadChip("tpu_v5p");
  KernelProblem p = Problem(KernelKind::kGmm, {16384, 1024, 1024, 8}, kBf16, kBf16, kBf16);
  p.options.lhs_buffer_count = 3;
  PERFSIM_ASSERT_OK_AND_ASSIGN(FitReport r, CheckFit(p, Tiling{512, 1024, 1024}, chip));
  EXPECT_EQ(r.required_bytes, 11 * kMiB);
}

TEST(FitFootprint, BlocksAreAlignedToTheNativeTileOfTheirDtype) {
  // Tiling (8, 128, 128). A bf16 block [8, 128] occupies a native (16, 128) tile:
  //   lhs 2·16·128·2 = 8 KiB, out 2·16·128·2 = 8 KiB, rhs [128,128] 2·128·128·2 = 64 KiB,
  //   acc f32 [8,128] (8-sublane tile, no padding) 8·128·4 = 4 KiB -> 84 KiB.
  // In f32 the same blocks need no padding: lhs 2·8·128·4 = 8 KiB, out 8 KiB,
  //   rhs 2·128·128·4 = 128 KiB, acc 4 KiB -> 148 KiB.
  const Chip chip = LoadChip("tpu_v5p");
  PERFSIM_ASSERT_OK_AND_ASSIGN(
      FitReport bf16, CheckFit(Problem(KernelKind::kGmm, {64, 128, 128, 1}, kBf16, kBf16, kBf16),
                               Tiling{8, 128, 128}, chip));
  EXPECT_EQ(bf16.required_bytes, 84 * kKiB);
  const FitBuffer* lhs = FindBuffer(bf16, "lhs");
  EXPECT_EQ(DimsToString(lhs->block_shape), "[8,128]");
  EXPECT_EQ(DimsToString(lhs->allocated_shape), "[16,128]");
  PERFSIM_ASSERT_OK_AND_ASSIGN(
      FitReport f32, CheckFit(Problem(KernelKind::kGmm, {64, 128, 128, 1}, kF32, kF32, kF32),
                              Tiling{8, 128, 128}, chip));
  EXPECT_EQ(f32.required_bytes, 148 * kKiB);
  // A block wider than the array is still allocated whole: tn = 256 for n = 100 is legal
  // (a multiple of 128) and costs 2·128·256·2 = 128 KiB of rhs in bf16.
  PERFSIM_ASSERT_OK_AND_ASSIGN(
      FitReport wide, CheckFit(Problem(KernelKind::kGmm, {64, 128, 100, 1}, kBf16, kBf16, kBf16),
                               Tiling{8, 128, 256}, chip));
  EXPECT_TRUE(wide.violations.empty());
  EXPECT_EQ(FindBuffer(wide, "rhs")->bytes, 128 * kKiB);
}

TEST(FitFootprint, NativeTileSublanesFollowTheDtypeWidth) {
  EXPECT_EQ(NativeSublanes(PrimitiveType::kF32), 8);
  EXPECT_EQ(NativeSublanes(PrimitiveType::kBF16), 16);
  EXPECT_EQ(NativeSublanes(PrimitiveType::kS8), 32);
  EXPECT_EQ(NativeSublanes(PrimitiveType::kF8E4M3FN), 32);
  EXPECT_EQ(NativeSublanes(PrimitiveType::kS4), 64);
  // [3, 200] int4 -> [64, 256]: 64·256·4 bits = 8 KiB.
  EXPECT_EQ(ArrayBytes(AlignToNativeTile({3, 200}, PrimitiveType::kS4), PrimitiveType::kS4, 1),
            8 * kKiB);
}

// ---- rules reported like misfits ----

TEST(FitRules, TileThatDoesNotDivideMIsAMisfitWithTheRule) {
  const Chip chip = LoadChip("tpu_v5p");
  PERFSIM_ASSERT_OK_AND_ASSIGN(
      FitReport r, CheckFit(Problem(KernelKind::kGmm, {1000, 1024, 1024, 8}, kBf16, kBf16, kBf16),
                            Tiling{512, 1024, 1024}, chip));
  EXPECT_FALSE(r.fits);
  ASSERT_EQ(r.violations.size(), 1u);
  EXPECT_EQ(r.violations[0], "m % tm == 0: expected m (1000) divisible by tm (512)");
  EXPECT_THAT(r.reason, HasSubstr("breaks a rule of gmm"));
}

TEST(FitRules, LaneTileMustBeAMultipleOf128OrTheWholeDimension) {
  const Chip chip = LoadChip("tpu_v5p");
  const KernelProblem p = Problem(KernelKind::kGmm, {1024, 1000, 512, 8}, kBf16, kBf16, kBf16);
  PERFSIM_ASSERT_OK_AND_ASSIGN(FitReport bad, CheckFit(p, Tiling{128, 100, 512}, chip));
  EXPECT_FALSE(bad.fits);
  EXPECT_THAT(bad.violations, ::testing::ElementsAre(
                                  "tk: expected a multiple of 128 or the whole k (1000); got 100"));
  PERFSIM_ASSERT_OK_AND_ASSIGN(FitReport whole, CheckFit(p, Tiling{128, 1000, 512}, chip));
  EXPECT_TRUE(whole.violations.empty());
  EXPECT_TRUE(whole.fits);
}

TEST(FitRules, MegabloxV1RejectsQuantisedOperands) {
  const Chip chip = LoadChip("tpu_v5p");
  PERFSIM_ASSERT_OK_AND_ASSIGN(
      FitReport r,
      CheckFit(Problem(KernelKind::kGmm, {1024, 1024, 1024, 8}, kBf16, PrimitiveType::kS8, kBf16),
               Tiling{128, 128, 128}, chip));
  EXPECT_FALSE(r.fits);
  EXPECT_THAT(r.reason, HasSubstr("rhs dtype: expected one of bf16, f32; got s8"));
}

TEST(FitRules, TooManyGroupsOverflowSmemMetadata) {
  // groups = 300000, m = 1024, tm = 128 (8 m-tiles): SMEM metadata = 4 B × (group_offsets
  // 300001 + group_ids 300007 + m_tile_ids 300007 + group_offset 1) = 3600064 B > 1 MiB SMEM.
  const Chip chip = LoadChip("tpu_v5p");
  PERFSIM_ASSERT_OK_AND_ASSIGN(
      FitReport r,
      CheckFit(Problem(KernelKind::kGmm, {1024, 128, 128, 300000}, kBf16, kBf16, kBf16),
               Tiling{128, 128, 128}, chip));
  EXPECT_EQ(r.smem_required_bytes, 3600064);
  EXPECT_FALSE(r.fits);
  EXPECT_THAT(r.reason, HasSubstr("of SMEM; limit 1 MiB"));
}

// ---- GMM v2 / TGMM v2 ----

TEST(FitGolden, GmmV2FusedQuantisedFollowsTheV2Estimate) {
  // tm = 128, tk = 1024, tn = 512; lhs bf16, rhs s8, out bf16; fused activation (f = 2),
  // scales per 256 k-elements. backends.md 1b GMM v2, term by term:
  //   2·tm·tk·b_lhs            = 2·128·1024·2          = 512 KiB
  //   f·3·tk·tn·b_rhs          = 2·3·1024·512·1        = 3072 KiB
  //   f·2·⌈tk/qblk⌉·tn·4       = block [4, 1024] f32, aligned to [8, 1024]: 2·8·1024·4 = 64 KiB
  //                              (the kernel's own estimate, unaligned, says 32 KiB)
  //   tm·(f·tn)·acc            = 128·1024·4            = 512 KiB
  //   2·tm·tn·b_out            = 2·128·512·2           = 256 KiB
  //   sublane·tn·b_out         = 16·512·2              = 16 KiB
  //   total                                            = 4432 KiB
  // Limit: 0.9 × 64 MiB v7x VMEM = 60397977 B (the kernel sets its own limit).
  const Chip chip = LoadChip("tpu_v7x");
  KernelProblem p =
      Problem(KernelKind::kGmmV2, {8192, 7168, 2048, 32}, kBf16, PrimitiveType::kS8, kBf16);
  p.options.fuse_activation = true;
  p.options.quant_block_size = 256;
  PERFSIM_ASSERT_OK_AND_ASSIGN(FitReport r, CheckFit(p, Tiling{128, 1024, 512}, chip));
  EXPECT_EQ(r.required_bytes, 4432 * kKiB);
  EXPECT_EQ(FindBuffer(r, "rhs_scales")->bytes, 64 * kKiB);
  EXPECT_EQ(r.limit_bytes, 60397977);
  EXPECT_EQ(r.limits.default_limit_bytes, 32 * kMiB);
  EXPECT_TRUE(r.fits);
}

TEST(FitGolden, TgmmV2TriplesTheLhsAndAddsTheZeroBuffer) {
  // tm = 256, tk = tn = 1024, bf16 in, f32 out (backends.md 1b TGMM v2):
  //   tk·tn·(acc + 2·out) = 1024·1024·(4 + 8) = 12 MiB, 3·tm·tk·2 = 1.5 MiB,
  //   2·tm·tn·2 = 1 MiB, zero_ref 2 MiB -> 16.5 MiB.
  const Chip chip = LoadChip("tpu_v7x");
  PERFSIM_ASSERT_OK_AND_ASSIGN(
      FitReport r,
      CheckFit(Problem(KernelKind::kTgmmV2, {8192, 7168, 2048, 32}, kBf16, kBf16, kF32),
               Tiling{256, 1024, 1024}, chip));
  EXPECT_EQ(r.required_bytes, 16 * kMiB + 512 * kKiB);
  EXPECT_EQ(FindBuffer(r, "lhs")->count, 3);
}

// ---- fused expert FFN: DeepSeek-V3 on v7x ----

TEST(FitGolden, DeepSeekV3FusedFfnTiledOverDDoesNotFitV7xButTiledOverFDoes) {
  // DeepSeek-V3 experts: D = 7168, F = 2048, E = 256 (K = 8 routes 8 rows per token; m =
  // 2048 tokens · 8 = 16384 rows). bf16 throughout; limit 0.9 × 64 MiB = 57.6 MiB.
  // D-tiled (256, 512, 2048): x 2·256·7168·2 = 7 MiB, wi_0 2·7168·2048·2 = 56 MiB, wi_1 56 MiB,
  //   wo 2·2048·512·2 = 4 MiB, out 2·256·512·2 = 0.5 MiB, h 256·2048·4 = 2 MiB -> 125.5 MiB,
  //   over the 64 MiB physical VMEM too (the two weight blocks alone are 112 MiB for any td).
  // F-tiled (256, 7168, 256): x 7 MiB, wi_0 2·7168·256·2 = 7 MiB, wi_1 7 MiB,
  //   wo 2·256·7168·2 = 7 MiB, out 2·256·7168·2 = 7 MiB, acc 256·7168·4 = 7 MiB -> 42 MiB.
  const Chip chip = LoadChip("tpu_v7x");
  const ProblemShape deepseek{16384, 7168, 2048, 256};
  PERFSIM_ASSERT_OK_AND_ASSIGN(
      FitReport d, CheckFit(Problem(KernelKind::kFusedFfnDTiled, deepseek, kBf16, kBf16, kBf16),
                            Tiling{256, 512, 2048}, chip));
  PERFSIM_ASSERT_OK_AND_ASSIGN(
      FitReport f, CheckFit(Problem(KernelKind::kFusedFfnFTiled, deepseek, kBf16, kBf16, kBf16),
                            Tiling{256, 7168, 256}, chip));
  EXPECT_EQ(d.required_bytes, 125 * kMiB + 512 * kKiB);
  EXPECT_EQ(FindBuffer(d, "wi_0")->bytes, 56 * kMiB);
  EXPECT_FALSE(d.fits);
  EXPECT_FALSE(d.fits_physical);
  EXPECT_THAT(d.reason, HasSubstr("exceeds the 64 MiB of physical VMEM too"));
  EXPECT_EQ(f.required_bytes, 42 * kMiB);
  EXPECT_TRUE(f.fits);
  EXPECT_EQ(f.physical_bytes, 64 * kMiB);
}

TEST(FitRules, FusedFfnUntiledDimensionMustBeWhole) {
  const Chip chip = LoadChip("tpu_v7x");
  PERFSIM_ASSERT_OK_AND_ASSIGN(
      FitReport r,
      CheckFit(Problem(KernelKind::kFusedFfnDTiled, {4096, 7168, 2048, 256}, kBf16, kBf16, kBf16),
               Tiling{256, 512, 512}, chip));
  EXPECT_THAT(r.violations,
              ::testing::Contains("tf: fused_ffn_d_tiled holds F whole; expected tf == F (2048); "
                                  "got 512"));
}

// ---- SparseCore ragged gather ----

TEST(FitGolden, RaggedGatherChunksOfADeepSeekRowFitOneSubcore) {
  // bf16 rows of D = 7168 (14 KiB each). 16 rows per step: rows 2·16·7168·2 = 448 KiB,
  // indices 2·16·4 = 128 B -> 458880 B <= 512 KiB of a v7x subcore. 32 rows: 896 KiB + 256 B,
  // does not fit.
  const Chip chip = LoadChip("tpu_v7x");
  const KernelProblem p =
      Problem(KernelKind::kRaggedGather, {131072, 7168, 1, 1}, kBf16, kBf16, kBf16);
  PERFSIM_ASSERT_OK_AND_ASSIGN(FitReport r16, CheckFit(p, Tiling{16, 7168, 0}, chip));
  PERFSIM_ASSERT_OK_AND_ASSIGN(FitReport r32, CheckFit(p, Tiling{32, 7168, 0}, chip));
  EXPECT_EQ(r16.required_bytes, 458880);
  EXPECT_EQ(r16.limit_bytes, 512 * kKiB);
  EXPECT_TRUE(r16.fits);
  EXPECT_EQ(r32.required_bytes, 896 * kKiB + 256);
  EXPECT_FALSE(r32.fits);
  // The v6e subcore has 256 KiB: 16 full rows (448 KiB) do not fit there.
  PERFSIM_ASSERT_OK_AND_ASSIGN(FitReport v6e,
                               CheckFit(p, Tiling{16, 7168, 0}, LoadChip("tpu_v6e")));
  EXPECT_EQ(v6e.limit_bytes, 256 * kKiB);
  EXPECT_FALSE(v6e.fits);
}

TEST(FitGolden, RaggedGatherReduceAddsWeightsAndAccumulator) {
  // K = 8, 16 rows per step, D chunk 1024, bf16: rows 2·16·1024·2 = 64 KiB, indices 128 B,
  // weights 2·16·4 = 128 B, acc [16/8, 1024] f32 = 8 KiB -> 72 KiB + 256 B.
  const Chip chip = LoadChip("tpu_v5p");
  PERFSIM_ASSERT_OK_AND_ASSIGN(
      FitReport r,
      CheckFit(Problem(KernelKind::kRaggedGather, {4096, 7168, 8, 1}, kBf16, kBf16, kBf16),
               Tiling{16, 1024, 0}, chip));
  EXPECT_EQ(r.required_bytes, 72 * kKiB + 256);
  // 12 rows would split a group of 8.
  PERFSIM_ASSERT_OK_AND_ASSIGN(
      FitReport split,
      CheckFit(Problem(KernelKind::kRaggedGather, {4096, 7168, 8, 1}, kBf16, kBf16, kBf16),
               Tiling{12, 1024, 0}, chip));
  EXPECT_FALSE(split.fits);
  EXPECT_THAT(split.reason, HasSubstr("tr % K == 0"));
}

TEST(FitLimits, RaggedGatherNeedsSparseCoreMemory) {
  EXPECT_THAT(
      CheckFit(Problem(KernelKind::kRaggedGather, {4096, 7168, 1, 1}, kBf16, kBf16, kBf16),
               Tiling{16, 1024, 0}, LoadChip("tpu_v5e")),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("got tpu_v5e with no SparseCore")));
}

// ---- GPU grouped GEMM ----

TEST(FitGolden, GpuGroupedGemmStagesAgainstTheCtaSharedMemoryLimit) {
  // H100, bf16, CTA tile M = 128, N = 256, K = 64: per stage A 128·64·2 = 16 KiB and
  // B 64·256·2 = 32 KiB. 4 stages: 192 KiB + epilogue 128·256·2 = 64 KiB + barriers 8·8 B
  // = 256 KiB + 64 B > 227 KiB (232448 B) per CTA. 3 stages: 144 + 64 KiB + 48 B = 208 KiB
  // + 48 B, fits.
  const Chip chip = LoadChip("gpu_h100");
  KernelProblem p =
      Problem(KernelKind::kGpuGroupedGemm, {16384, 7168, 2048, 32}, kBf16, kBf16, kBf16);
  PERFSIM_ASSERT_OK_AND_ASSIGN(FitReport four, CheckFit(p, Tiling{128, 64, 256}, chip));
  EXPECT_EQ(four.required_bytes, 256 * kKiB + 64);
  EXPECT_EQ(four.limit_bytes, 232448);
  EXPECT_EQ(four.physical_bytes, 228 * kKiB);
  EXPECT_FALSE(four.fits);
  p.options.pipeline_stages = 3;
  PERFSIM_ASSERT_OK_AND_ASSIGN(FitReport three, CheckFit(p, Tiling{128, 64, 256}, chip));
  EXPECT_EQ(three.required_bytes, 208 * kKiB + 48);
  EXPECT_TRUE(three.fits);
}

TEST(FitRules, GpuTileMustMatchTheMmaShape) {
  // H100 wgmma: N a multiple of 8, K a multiple of 16 bf16 elements.
  const Chip chip = LoadChip("gpu_h100");
  PERFSIM_ASSERT_OK_AND_ASSIGN(
      FitReport r,
      CheckFit(Problem(KernelKind::kGpuGroupedGemm, {1024, 1024, 1024, 4}, kBf16, kBf16, kBf16),
               Tiling{128, 40, 100}, chip));
  EXPECT_THAT(r.violations,
              ::testing::ElementsAre("tn: expected a multiple of 8 (MMA N); got 100",
                                     "tk: expected a multiple of 16 (MMA K for the operand width); "
                                     "got 40"));
}

// ---- limits ----

TEST(FitLimits, ScopedDefaultsPerGeneration) {
  // backends.md 1c: 16 MiB on v4 (all of its VMEM), v5e, v5p; 32 MiB on v6e and (believed) v7x.
  struct Case {
    const char* chip;
    int64_t scoped;
    int64_t physical;
  };
  for (const Case& c :
       {Case{"tpu_v4", 16 * kMiB, 16 * kMiB}, Case{"tpu_v5e", 16 * kMiB, 128 * kMiB},
        Case{"tpu_v5p", 16 * kMiB, 64 * kMiB}, Case{"tpu_v6e", 32 * kMiB, 128 * kMiB},
        Case{"tpu_v7x", 32 * kMiB, 64 * kMiB}}) {
    PERFSIM_ASSERT_OK_AND_ASSIGN(FitLimits l,
                                 ResolveLimits(KernelKind::kGmm, LoadChip(c.chip), std::nullopt));
    EXPECT_EQ(l.limit_bytes, c.scoped) << c.chip;
    EXPECT_EQ(l.physical_bytes, c.physical) << c.chip;
    EXPECT_EQ(l.smem_limit_bytes, 1 * kMiB) << c.chip;
  }
}

TEST(FitLimits, OverrideReplacesTheLimitWithinPhysicalVmem) {
  // The 18 MiB f32 case fits once the limit is raised to 32 MiB (14 MiB to spare).
  const Chip chip = LoadChip("tpu_v5p");
  const KernelProblem p = Problem(KernelKind::kGmm, {16384, 1024, 1024, 8}, kF32, kF32, kF32);
  PERFSIM_ASSERT_OK_AND_ASSIGN(FitReport r, CheckFit(p, Tiling{512, 1024, 1024}, chip, 32 * kMiB));
  EXPECT_TRUE(r.fits);
  EXPECT_EQ(r.margin_bytes, 14 * kMiB);
  EXPECT_FALSE(r.fits_default_limit);
  EXPECT_THAT(CheckFit(p, Tiling{512, 1024, 1024}, chip, 65 * kMiB),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("VMEM limit: expected 1 to 67108864 bytes")));
}

TEST(FitLimits, KernelAndChipFamiliesMustMatch) {
  EXPECT_THAT(ResolveLimits(KernelKind::kGmm, LoadChip("gpu_h100"), std::nullopt),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("gmm: expected a TPU chip for this TPU kernel; got gpu_h100")));
  EXPECT_THAT(ResolveLimits(KernelKind::kGpuGroupedGemm, LoadChip("tpu_v5p"), std::nullopt),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("expected a GPU chip")));
  EXPECT_THAT(ResolveLimits(KernelKind::kGpuGroupedGemm, LoadChip("gpu_h100"), 1024),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("GPU shared memory")));
}

TEST(FitLimits, NonsenseSizesAreErrorsNotMisfits) {
  const Chip chip = LoadChip("tpu_v5p");
  EXPECT_THAT(CheckFit(Problem(KernelKind::kGmm, {0, 128, 128, 1}, kBf16, kBf16, kBf16),
                       Tiling{128, 128, 128}, chip),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("m: expected 1..")));
  EXPECT_THAT(CheckFit(Problem(KernelKind::kGmm, {128, 128, 128, 1}, kBf16, kBf16, kBf16),
                       Tiling{128, 0, 128}, chip),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("tiling tk: expected 1..")));
}

TEST(FitFormat, BytesInBinaryUnits) {
  EXPECT_EQ(FormatBytes(64), "64 B");
  EXPECT_EQ(FormatBytes(18 * kMiB), "18 MiB");
  EXPECT_EQ(FormatBytes(60397977), "57.6 MiB");
  EXPECT_EQ(FormatBytes(232448), "227 KiB");
  EXPECT_EQ(FormatBytes(-2 * kMiB), "-2 MiB");
}

}  // namespace
}  // namespace perfsim
