// The grouped-matmul model (sim/cost/grouped_matmul.h) on cases worked out by hand.
#include "sim/cost/grouped_matmul.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/cost/op_counts.h"
#include "sim/hw/chip_registry.h"
#include "sim/ir/hlo_parser.h"
#include "sim/util/status.h"
#include "sim/util/status_matchers.h"

namespace perfsim {
namespace {

using ::perfsim::testing::StatusIs;
using ::testing::HasSubstr;

// m=512 rows in 4 groups of {100, 0, 300, 112} rows, k=7168, n=2048, tiles (128, 512, 1024).
GroupedMatmulSpec MoeSpec() {
  GroupedMatmulSpec spec;
  spec.kind = GroupedMatmulKind::kGmm;
  spec.m = 512;
  spec.k = 7168;
  spec.n = 2048;
  spec.num_groups = 4;
  spec.group_sizes = std::vector<int64_t>{100, 0, 300, 112};
  spec.tm = 128;
  spec.tk = 512;
  spec.tn = 1024;
  spec.lhs_type = PrimitiveType::kBF16;
  spec.rhs_type = PrimitiveType::kBF16;
  spec.out_type = PrimitiveType::kF32;
  return spec;
}

TEST(GroupedMatmul, VisitsSharedTilesOncePerGroup) {
  PERFSIM_ASSERT_OK_AND_ASSIGN(GroupedMatmulWork w, CountGroupedMatmul(MoeSpec()));
  // Rows [0,100) -> tile 0; the empty group is skipped; [100,400) -> tiles 0..3;
  // [400,512) -> tile 3: 6 grid steps over 4 distinct tiles, 3 groups.
  EXPECT_EQ(w.tiles_m, 4);
  EXPECT_EQ(w.tiles_k, 14);
  EXPECT_EQ(w.tiles_n, 2);
  EXPECT_EQ(w.visited_m_tiles, 6);
  EXPECT_EQ(w.distinct_m_tiles, 4);
  EXPECT_EQ(w.groups_visited, 3);
  EXPECT_EQ(w.rows, 512);
  EXPECT_TRUE(w.group_sizes_known);
  // Useful 2*512*7168*2048; executed 6 steps * 2 n-tiles * 14 k-tiles * 2*128*512*1024.
  EXPECT_EQ(w.flops, 15032385536.0);
  EXPECT_EQ(w.executed_flops, 22548578304.0);
  // tiles_k > 1: lhs re-read per step and n-tile (2*6*128*7168*2 B), the whole weight of the
  // group re-streamed per step (6*7168*2048*2 B); out once per distinct tile (4*128*2048*4 B).
  EXPECT_EQ(w.lhs_bytes, 22020096.0);
  EXPECT_EQ(w.rhs_bytes, 176160768.0);
  EXPECT_EQ(w.out_bytes, 4194304.0);
  EXPECT_EQ(w.bytes_accessed, 22020096.0 + 176160768.0 + 4194304.0);
}

TEST(GroupedMatmul, OneKTileFetchesEachWeightOncePerGroupRun) {
  GroupedMatmulSpec spec = MoeSpec();
  spec.k = 512;  // tk = k: tiles_k = 1
  PERFSIM_ASSERT_OK_AND_ASSIGN(GroupedMatmulWork w, CountGroupedMatmul(spec));
  EXPECT_EQ(w.tiles_k, 1);
  // lhs: 2 n-tiles * 4 distinct tiles * 128*512*2 B; rhs: 3 groups * 512*2048*2 B.
  EXPECT_EQ(w.lhs_bytes, 1048576.0);
  EXPECT_EQ(w.rhs_bytes, 6291456.0);
}

TEST(GroupedMatmul, UnknownGroupSizesGiveTheUpperBound) {
  GroupedMatmulSpec spec = MoeSpec();
  spec.group_sizes.reset();
  PERFSIM_ASSERT_OK_AND_ASSIGN(GroupedMatmulWork w, CountGroupedMatmul(spec));
  // tiles_m + G - 1 = 4 + 4 - 1.
  EXPECT_EQ(w.visited_m_tiles, 7);
  EXPECT_EQ(w.distinct_m_tiles, 4);
  EXPECT_EQ(w.groups_visited, 4);
  EXPECT_EQ(w.rows, 512);
  EXPECT_FALSE(w.group_sizes_known);
}

TEST(GroupedMatmul, TgmmVisitsEmptyGroupsToZeroTheirGradient) {
  GroupedMatmulSpec spec = MoeSpec();
  spec.kind = GroupedMatmulKind::kTgmm;
  spec.m = 256;
  spec.num_groups = 3;
  spec.group_sizes = std::vector<int64_t>{0, 200, 56};
  PERFSIM_ASSERT_OK_AND_ASSIGN(GroupedMatmulWork w, CountGroupedMatmul(spec));
  // Steps: empty group 0 at tile 0; rows [0,200) -> tiles 0, 1; [200,256) -> tile 1: the tile
  // sequence 0 0 1 1 has 4 steps and 2 tile changes.
  EXPECT_EQ(w.visited_m_tiles, 4);
  EXPECT_EQ(w.distinct_m_tiles, 2);
  EXPECT_EQ(w.groups_visited, 3);
  EXPECT_EQ(w.rows, 256);
  // dW of all 3 groups written: 3*7168*2048*4 B.
  EXPECT_EQ(w.out_bytes, 3.0 * 7168 * 2048 * 4);
  // lhs tiles_n * distinct * tm*k*2 B; rhs tiles_k * distinct * tm*n*2 B.
  EXPECT_EQ(w.lhs_bytes, 2.0 * 2 * 128 * 7168 * 2);
  EXPECT_EQ(w.rhs_bytes, 14.0 * 2 * 128 * 2048 * 2);
}

TEST(GroupedMatmul, GroupOffsetSelectsTheLocalGroups) {
  GroupedMatmulSpec spec = MoeSpec();
  spec.m = 256;
  spec.num_groups = 2;
  spec.group_offset = 2;
  spec.group_sizes = std::vector<int64_t>{64, 64, 128, 0};
  PERFSIM_ASSERT_OK_AND_ASSIGN(GroupedMatmulWork w, CountGroupedMatmul(spec));
  // Local groups 2 (rows [128,256): tile 1) and 3 (empty, skipped by gmm).
  EXPECT_EQ(w.visited_m_tiles, 1);
  EXPECT_EQ(w.rows, 128);
  EXPECT_EQ(w.flops, 2.0 * 128 * 7168 * 2048);
}

TEST(GroupedMatmul, RejectsInconsistentSpecs) {
  GroupedMatmulSpec spec = MoeSpec();
  spec.group_sizes = std::vector<int64_t>{100, 0, 300, 113};
  EXPECT_THAT(CountGroupedMatmul(spec),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("expected group sizes summing to at most m = 512; got 513")));
  spec = MoeSpec();
  spec.group_sizes = std::vector<int64_t>{100, 0};
  EXPECT_THAT(CountGroupedMatmul(spec),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("group sizes; got 2")));
  spec = MoeSpec();
  spec.tk = 0;
  EXPECT_THAT(CountGroupedMatmul(spec),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("positive tiles")));
}

TEST(GroupedMatmul, TimeIsTheRooflineOfExecutedFlopsAndTraffic) {
  PERFSIM_ASSERT_OK_AND_ASSIGN(Chip chip, ResolveChip("tpu_v5p"));
  PERFSIM_ASSERT_OK_AND_ASSIGN(GroupedMatmulCost cost, CostGroupedMatmul(MoeSpec(), chip));
  // v5p (one device per chip): 4.59e14 bf16 FLOP/s, 2.765e12 B/s, 2 TensorCores sharing the
  // 2 n-tiles evenly, no kernel overhead in the description.
  EXPECT_DOUBLE_EQ(cost.compute_seconds, 22548578304.0 / 4.59e14);
  EXPECT_DOUBLE_EQ(cost.memory_seconds, (22020096.0 + 176160768.0 + 4194304.0) / 2.765e12);
  EXPECT_EQ(cost.bound, Bound::kMemory);
  // The grid: each of the 2 TensorCores runs ceil(2 n-tiles / 2) = 1 n-tile × 6 visited
  // m-tiles × 14 k-tiles = 84 steps; a step lasts at least 0.35 us
  // (compute.grid_step_overhead_seconds of tpu_v5p), 29.4 us in all, under the 73.2 us of DMA
  // the steps overlap with: the time is the memory time.
  EXPECT_EQ(cost.grid_steps_per_core, 84);
  EXPECT_DOUBLE_EQ(cost.grid_step_seconds, 84 * 0.35e-6);
  EXPECT_NEAR(cost.overhead_seconds, 0, 1e-18);
  EXPECT_DOUBLE_EQ(cost.seconds, cost.memory_seconds);
  EXPECT_TRUE(cost.unknown_rates.empty());
  // A TPU kernel pipelines its output block with the operands: no separate epilogue.
  EXPECT_EQ(cost.epilogue_seconds, 0.0);
  EXPECT_EQ(cost.operand_seconds, cost.memory_seconds);
}

// The built-in chip with its efficiency block cleared: datasheet peaks (fractions 1, overheads
// 0), whatever the shipped file is calibrated to.
Chip DatasheetChip(const std::string& name) {
  absl::StatusOr<Chip> chip = ResolveChip(name);
  PERFSIM_CHECK(chip.ok()) << chip.status();
  HardwareSpec spec = chip->proto();
  spec.clear_efficiency();
  absl::StatusOr<Chip> datasheet = Chip::FromProto(std::move(spec));
  PERFSIM_CHECK(datasheet.ok()) << datasheet.status();
  return *std::move(datasheet);
}

// DeepGEMM's FC2-like shape (shared/reference/calibration.csv M002): 4 groups of 8192 rows,
// k = 2048, n = 7168, fp8 operands, bf16 out. The spec's tiling is a TPU notion: on a GPU the
// kernel's own CTA tile is used (sim/cost/gpu_gemm.h).
GroupedMatmulSpec DeepGemmFc2Spec() {
  GroupedMatmulSpec spec;
  spec.m = 32768;
  spec.k = 2048;
  spec.n = 7168;
  spec.num_groups = 4;
  spec.group_sizes = std::vector<int64_t>(4, 8192);
  spec.tm = 128;
  spec.tk = 2048;
  spec.tn = 7168;
  spec.lhs_type = PrimitiveType::kF8E4M3FN;
  spec.rhs_type = PrimitiveType::kF8E4M3FN;
  spec.out_type = PrimitiveType::kBF16;
  return spec;
}

TEST(GroupedMatmul, GpuEpilogueWriteIsNotOverlappedWithTheMainLoop) {
  // H800 at datasheet peaks: 1.979e15 FLOP/s fp8, 3.35e12 B/s HBM, 132 SMs, 1 us launch.
  // CTA tile (128, 256) (gpu_gemm.h: the fewest waves): 4 groups × 64 m-tiles × 28 n-tiles =
  // 7168 CTAs in 55 waves (54.3):
  //   compute   2 * 32768 * 2048 * 7168 = 962072674304 flops (no padding)
  //             · 55·132/7168 / 1.979e15                                     = 492.4 us
  //   operands  each group's lhs 8192·2048 B and weight 2048·7168 B fit half the L2 (25 MiB),
  //             so each is read once: (67108864 + 58720256) B / 3.35e12      =  37.6 us
  //   epilogue  out 32768 * 7168 * 2 B = 469762048 / 3.35e12                  = 140.2 us
  // seconds = max(compute, operands) + epilogue + launch = 633.6 us, where a roofline over all
  // the bytes would give max(492.4, 177.8) + 1 = 493.4 us.
  const Chip chip = DatasheetChip("gpu_h800");
  PERFSIM_ASSERT_OK_AND_ASSIGN(GroupedMatmulCost cost, CostGroupedMatmul(DeepGemmFc2Spec(), chip));
  const double compute = 962072674304.0 * (55.0 * 132 / 7168) / 1.979e15;
  const double operands = (67108864.0 + 58720256.0) / 3.35e12;
  const double epilogue = 469762048.0 / 3.35e12;
  ASSERT_TRUE(cost.gpu_gemm.has_value());
  EXPECT_EQ(cost.gpu_gemm->tile.tm, 128);
  EXPECT_EQ(cost.gpu_gemm->tile.tn, 256);
  EXPECT_EQ(cost.gpu_gemm->waves, 55);
  EXPECT_DOUBLE_EQ(cost.work.flops, 962072674304.0);
  EXPECT_DOUBLE_EQ(cost.work.executed_flops, 962072674304.0);
  EXPECT_DOUBLE_EQ(cost.work.bytes_accessed, 67108864.0 + 58720256.0 + 469762048.0);
  EXPECT_DOUBLE_EQ(cost.compute_seconds, compute);
  EXPECT_DOUBLE_EQ(cost.operand_seconds, operands);
  EXPECT_DOUBLE_EQ(cost.epilogue_seconds, epilogue);
  EXPECT_DOUBLE_EQ(cost.memory_seconds, (67108864.0 + 58720256.0 + 469762048.0) / 3.35e12);
  EXPECT_DOUBLE_EQ(cost.overhead_seconds, 1e-6);
  EXPECT_DOUBLE_EQ(cost.seconds, compute + epilogue + 1e-6);
  EXPECT_EQ(cost.bound, Bound::kCompute);  // 492 us of compute vs 178 us of memory
  EXPECT_EQ(cost.grid_steps_per_core, 0);   // no Pallas grid on a GPU

  // The epilogue is HBM traffic: half the HBM efficiency doubles it and the operand time.
  HardwareSpec slower = chip.proto();
  slower.mutable_efficiency()->set_hbm_fraction_of_peak(0.5);
  PERFSIM_ASSERT_OK_AND_ASSIGN(Chip half, Chip::FromProto(std::move(slower)));
  PERFSIM_ASSERT_OK_AND_ASSIGN(GroupedMatmulCost derated,
                               CostGroupedMatmul(DeepGemmFc2Spec(), half));
  EXPECT_DOUBLE_EQ(derated.epilogue_seconds, 2 * epilogue);
  EXPECT_DOUBLE_EQ(derated.seconds, compute + 2 * epilogue + 1e-6);
}

TEST(GroupedMatmul, GpuMemoryBoundCallStreamsTheWeightsThenWritesTheOutput) {
  // Decode-like: one group of 64 bf16 rows through a [7168 x 2048] bf16 weight, f32 out, on
  // H100 at datasheet peaks (9.89e14 FLOP/s bf16, 3.35e12 B/s, 132 SMs). The kernel spreads
  // the call over the SMs: CTA tile (64, 16), 128 CTAs in one wave (gpu_gemm.h); 64 rows reach
  // wgmma's M, so no small-rows derate:
  //   compute   2 * 64 * 7168 * 2048 · 132/128 / 9.89e14                   = 1.96 us
  //   operands  (64 * 7168 * 2 + 7168 * 2048 * 2) B / 3.35e12  (each once)  = 9.04 us
  //   epilogue  64 * 2048 * 4 B / 3.35e12                                  = 0.16 us
  // seconds = 9.04 + 0.16 + 1 (launch); memory bound.
  GroupedMatmulSpec spec;
  spec.m = 64;
  spec.k = 7168;
  spec.n = 2048;
  spec.num_groups = 1;
  spec.group_sizes = std::vector<int64_t>{64};
  PERFSIM_ASSERT_OK_AND_ASSIGN(GroupedMatmulCost cost,
                               CostGroupedMatmul(spec, DatasheetChip("gpu_h100")));
  const double operands = (64.0 * 7168 * 2 + 7168.0 * 2048 * 2) / 3.35e12;
  const double epilogue = 64.0 * 2048 * 4 / 3.35e12;
  EXPECT_DOUBLE_EQ(cost.compute_seconds, 2.0 * 64 * 7168 * 2048 * (132.0 / 128) / 9.89e14);
  EXPECT_DOUBLE_EQ(cost.operand_seconds, operands);
  EXPECT_DOUBLE_EQ(cost.epilogue_seconds, epilogue);
  EXPECT_DOUBLE_EQ(cost.seconds, operands + epilogue + 1e-6);
  EXPECT_EQ(cost.bound, Bound::kMemory);
}

TEST(GroupedMatmul, GpuTgmmContractsTheGroupRowsAndZeroesEmptyGroups) {
  // dW[g] [k = 512, n = 256] = x[rows of g]^T · dy[rows of g], groups of {0, 1024} rows, bf16
  // in, f32 out, on an H100: each group is a GEMM with a [512, 256] output contracting its
  // rows. Whatever CTA tile the kernel picks: flops 2·1024·512·256 (the empty group none),
  // and both groups write their [512, 256] f32 gradient, the empty one as zeros.
  GroupedMatmulSpec spec;
  spec.kind = GroupedMatmulKind::kTgmm;
  spec.m = 1024;
  spec.k = 512;
  spec.n = 256;
  spec.num_groups = 2;
  spec.group_sizes = std::vector<int64_t>{0, 1024};
  PERFSIM_ASSERT_OK_AND_ASSIGN(GroupedMatmulCost cost,
                               CostGroupedMatmul(spec, DatasheetChip("gpu_h100")));
  ASSERT_TRUE(cost.gpu_gemm.has_value());
  EXPECT_EQ(cost.gpu_gemm->flops, 2.0 * 1024 * 512 * 256);
  EXPECT_EQ(cost.work.out_bytes, 2.0 * 512 * 256 * 4);
  // Operands (x^T 512 x 1024 and dy 1024 x 256, bf16) fit the L2: read once.
  EXPECT_EQ(cost.work.lhs_bytes, 512.0 * 1024 * 2);
  EXPECT_EQ(cost.work.rhs_bytes, 1024.0 * 256 * 2);
}

TEST(GroupedMatmul, PallasGridStepsCostTheirOverheadOnlyWhenItExceedsComputeAndDma) {
  // One group of 4096 rows through [7168 x 2048] (bf16 in, f32 out) on a datasheet v7x device
  // (1.1535e15 FLOP/s bf16, 3.69e12 B/s, one TensorCore) with tk = k and tn = n. The roofline
  // is the same for tm = 8 and tm = 128 (no tile waste: 4096 is a multiple of both; the weights
  // are read once either way):
  //   compute  2·4096·7168·2048 / 1.1535e15                                = 104.3 us
  //   memory   W = 7168·2048·2 B (the weights) / 3.69e12                   =   8.0 us
  //            D = (4096·7168·2 + 4096·2048·4) B (rows in, out) / 3.69e12  =  25.0 us
  // A Pallas step lasts max(compute, DMA, 0.35 us); the first step also fetches the group's
  // weights. tm = 8: 512 steps of 0.2 us of compute, so
  //   (D/512 + W) + 511 · 0.35 us = 187 us, overhead bound (179.2 us of step costs > 104.3);
  // tm = 128: 32 steps of 3.26 us, the first waiting for the weights:
  //   (D/32 + W) + 31 · 3.26 us = 109.8 us, compute bound.
  const Chip chip = DatasheetChip("tpu_v7x");
  GroupedMatmulSpec spec;
  spec.m = 4096;
  spec.k = 7168;
  spec.n = 2048;
  spec.num_groups = 1;
  spec.group_sizes = std::vector<int64_t>{4096};
  spec.tk = 7168;
  spec.tn = 2048;
  spec.tm = 8;
  PERFSIM_ASSERT_OK_AND_ASSIGN(GroupedMatmulCost small, CostGroupedMatmul(spec, chip));
  spec.tm = 128;
  PERFSIM_ASSERT_OK_AND_ASSIGN(GroupedMatmulCost large, CostGroupedMatmul(spec, chip));
  const double compute = 2.0 * 4096 * 7168 * 2048 / (2.307e15 / 2);
  const double w = 7168.0 * 2048 * 2 / (7.38e12 / 2);
  const double d = (4096.0 * 7168 * 2 + 4096.0 * 2048 * 4) / (7.38e12 / 2);
  EXPECT_EQ(small.grid_steps_per_core, 512);
  EXPECT_EQ(large.grid_steps_per_core, 32);
  EXPECT_DOUBLE_EQ(small.memory_seconds, large.memory_seconds);
  EXPECT_DOUBLE_EQ(large.memory_seconds, w + d);
  EXPECT_DOUBLE_EQ(small.seconds, d / 512 + w + 511 * 0.35e-6);
  EXPECT_DOUBLE_EQ(small.grid_step_seconds, 512 * 0.35e-6);
  // What the grid adds over the roofline is overhead (seconds = roofline + overhead).
  EXPECT_DOUBLE_EQ(small.overhead_seconds, small.seconds - compute);
  EXPECT_EQ(small.bound, Bound::kOverhead);
  EXPECT_DOUBLE_EQ(large.seconds, d / 32 + w + 31 * compute / 32);
  EXPECT_EQ(large.bound, Bound::kCompute);

  // XLA's native ragged-dot is not a Pallas kernel: no grid steps, so tm = 8 costs the
  // roofline, as tm = 128 does.
  spec.tm = 8;
  spec.implementation = GroupedMatmulImplementation::kXlaRaggedDot;
  PERFSIM_ASSERT_OK_AND_ASSIGN(GroupedMatmulCost xla, CostGroupedMatmul(spec, chip));
  EXPECT_EQ(xla.grid_steps_per_core, 0);
  EXPECT_DOUBLE_EQ(xla.seconds, compute);
  EXPECT_EQ(xla.bound, Bound::kCompute);
}

TEST(GroupedMatmul, OddNTilesLeaveAMegacoreIdle) {
  GroupedMatmulSpec spec = MoeSpec();
  spec.n = 1024;  // one n-tile for two TensorCores
  PERFSIM_ASSERT_OK_AND_ASSIGN(Chip chip, ResolveChip("tpu_v5p"));
  PERFSIM_ASSERT_OK_AND_ASSIGN(GroupedMatmulCost cost, CostGroupedMatmul(spec, chip));
  EXPECT_DOUBLE_EQ(cost.compute_seconds, 2.0 * cost.work.executed_flops / 4.59e14);
}

TEST(GroupedMatmul, ReadsTheCustomCallAndItsConstantGroupSizes) {
  absl::StatusOr<std::unique_ptr<Module>> module = ParseHloModule(R"(HloModule m
ENTRY e {
  x = bf16[256,64]{1,0} parameter(0)
  w = bf16[2,64,96]{2,1,0} parameter(1)
  g = s32[2]{0} constant({100, 120})
  ROOT o = f32[256,96]{1,0} custom-call(x, w, g), custom_call_target="perfsim.gmm", backend_config={"tiling":[128,64,96],"group_offset":0}
})",
                                                                  "gmm.hlo");
  ASSERT_TRUE(module.ok()) << module.status();
  const Instruction& gmm = *(*module)->entry()->root();
  PERFSIM_ASSERT_OK_AND_ASSIGN(GroupedMatmulSpec spec, GroupedMatmulSpecFromInstruction(gmm));
  EXPECT_EQ(spec.m, 256);
  EXPECT_EQ(spec.k, 64);
  EXPECT_EQ(spec.n, 96);
  EXPECT_EQ(spec.num_groups, 2);
  EXPECT_EQ(spec.tm, 128);
  ASSERT_TRUE(spec.group_sizes.has_value());
  EXPECT_THAT(*spec.group_sizes, ::testing::ElementsAre(100, 120));
  // True count: 2 * (100 + 120) * 64 * 96; XLA: -1 (a custom-call).
  EXPECT_EQ(CountInstruction(gmm, {.mode = CostMode::kTrue}).flops, 2.0 * 220 * 64 * 96);
  EXPECT_EQ(CountInstruction(gmm, {.mode = CostMode::kXlaCompatible}).flops, -1);
}

TEST(GroupedMatmul, FusedFfnKeepsTheHiddenActivationsOnChip) {
  absl::StatusOr<std::unique_ptr<Module>> module = ParseHloModule(R"(HloModule m
ENTRY e {
  x = bf16[256,64]{1,0} parameter(0)
  w0 = bf16[2,64,96]{2,1,0} parameter(1)
  w1 = bf16[2,64,96]{2,1,0} parameter(2)
  wo = bf16[2,96,64]{2,1,0} parameter(3)
  g = s32[2]{0} constant({100, 120})
  ROOT o = f32[256,64]{1,0} custom-call(x, w0, w1, wo, g), custom_call_target="perfsim.fused_ffn", backend_config={"tiling":[128,64,32],"tiled_dim":"F","activation":"silu"}
})",
                                                                  "ffn.hlo");
  ASSERT_TRUE(module.ok()) << module.status();
  const Instruction& ffn = *(*module)->entry()->root();
  PERFSIM_ASSERT_OK_AND_ASSIGN(GroupedMatmulSpec spec, GroupedMatmulSpecFromInstruction(ffn));
  EXPECT_EQ(spec.kind, GroupedMatmulKind::kFusedFfn);
  PERFSIM_ASSERT_OK_AND_ASSIGN(GroupedMatmulWork w, CountGroupedMatmul(spec));
  // Rows [0,100) -> tile 0, [100,220) -> tiles 0, 1: 3 steps, 2 distinct tiles, 220 rows.
  EXPECT_EQ(w.visited_m_tiles, 3);
  EXPECT_EQ(w.rows, 220);
  // 3 matmuls of 2*220*64*96 plus 2*220*96 gate products; 220*96 transcendentals.
  EXPECT_EQ(w.flops, 3.0 * 2 * 220 * 64 * 96 + 2.0 * 220 * 96);
  EXPECT_EQ(w.transcendentals, 220.0 * 96);
  // 3 steps x 3 F-tiles x 3 matmuls of 2*128*64*32.
  EXPECT_EQ(w.executed_flops, 27.0 * 2 * 128 * 64 * 32);
  // x per step (3*128*64*2 B); 3 F-tiles, so all three weights re-streamed per step
  // (3*3*64*96*2 B); out per distinct tile (2*128*64*4 B).
  EXPECT_EQ(w.lhs_bytes, 49152.0);
  EXPECT_EQ(w.rhs_bytes, 110592.0);
  EXPECT_EQ(w.out_bytes, 65536.0);
  const OpCounts c = CountInstruction(ffn, {.mode = CostMode::kTrue});
  EXPECT_EQ(c.flops, w.flops);
  EXPECT_EQ(c.transcendentals, w.transcendentals);
  // Each weight operand a third of the weight traffic; 8 B of group sizes.
  EXPECT_THAT(c.operand_bytes, ::testing::ElementsAre(49152, 36864, 36864, 36864, 8));
  EXPECT_EQ(c.bytes_accessed, 49152.0 + 110592.0 + 65536.0 + 8);
}

// XLA's ragged-dot on a GPU (kXlaRaggedDot): one dense dot contracting G·k (gmm) or G dots over
// every row (tgmm), whatever the group sizes; a grouped-GEMM kernel computes only the rows.
TEST(GroupedMatmul, XlaRaggedDotOnAGpuIsOneDenseDotOverEveryGroup) {
  PERFSIM_ASSERT_OK_AND_ASSIGN(Chip chip, ResolveChip("gpu_h200"));
  GroupedMatmulSpec spec{.kind = GroupedMatmulKind::kGmm,
                         .implementation = GroupedMatmulImplementation::kXlaRaggedDot,
                         .m = 8192, .k = 4096, .n = 14336, .num_groups = 8,
                         .group_sizes = std::vector<int64_t>{1024, 1024, 1024, 1024, 1024, 1024,
                                                             1024, 1024},
                         .lhs_type = PrimitiveType::kBF16, .rhs_type = PrimitiveType::kBF16,
                         .out_type = PrimitiveType::kBF16};
  const GpuGemmProblem dense = GpuGemmsOf(spec);
  ASSERT_EQ(dense.groups.size(), 1u);
  EXPECT_EQ(dense.groups[0].m, 8192);
  EXPECT_EQ(dense.groups[0].k, 8 * 4096);
  EXPECT_EQ(dense.groups[0].n, 14336);
  PERFSIM_ASSERT_OK_AND_ASSIGN(GroupedMatmulCost uniform, CostGroupedMatmul(spec, chip));
  spec.group_sizes = std::vector<int64_t>{3511, 1528, 940, 665, 509, 409, 340, 290};
  PERFSIM_ASSERT_OK_AND_ASSIGN(GroupedMatmulCost skewed, CostGroupedMatmul(spec, chip));
  EXPECT_EQ(uniform.seconds, skewed.seconds);
  // 2·G·m·k·n executed: 8x the useful 2·m·k·n.
  EXPECT_EQ(uniform.work.executed_flops, 2.0 * 8 * 8192 * 4096 * 14336);

  spec.implementation = GroupedMatmulImplementation::kGroupedGemmKernel;
  PERFSIM_ASSERT_OK_AND_ASSIGN(GroupedMatmulCost kernel, CostGroupedMatmul(spec, chip));
  EXPECT_GT(uniform.seconds, 6 * kernel.seconds);

  // tgmm: G batched dots of (k, n) over all m rows.
  spec.kind = GroupedMatmulKind::kTgmm;
  spec.implementation = GroupedMatmulImplementation::kXlaRaggedDot;
  const GpuGemmProblem batched = GpuGemmsOf(spec);
  ASSERT_EQ(batched.groups.size(), 8u);
  for (const GpuGemmGroup& g : batched.groups) {
    EXPECT_EQ(g.m, 4096);
    EXPECT_EQ(g.n, 14336);
    EXPECT_EQ(g.k, 8192);
  }
}

}  // namespace
}  // namespace perfsim
