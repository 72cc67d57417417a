// Per-instruction time (sim/cost/op_cost.h) and whole-module cost (module_cost.h); expected
// times are derived from the chip descriptions in the comments.
#include "sim/cost/op_cost.h"

#include <memory>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/comm/hlo_collectives.h"
#include "sim/cost/grouped_matmul.h"
#include "sim/cost/module_cost.h"
#include "sim/hw/chip_registry.h"
#include "sim/ir/hlo_parser.h"
#include "sim/ir/verifier.h"
#include "sim/util/status_matchers.h"

namespace perfsim {
namespace {

using ::testing::ElementsAre;
using ::testing::UnorderedElementsAre;

Chip Load(const char* name) {
  absl::StatusOr<Chip> chip = ResolveChip(name);
  PERFSIM_CHECK(chip.ok()) << chip.status();
  return *chip;
}

std::unique_ptr<Module> Parse(const std::string& text) {
  absl::StatusOr<std::unique_ptr<Module>> module = ParseHloModule(text, "test.hlo");
  PERFSIM_CHECK(module.ok()) << module.status();
  PERFSIM_CHECK(VerifyModule(**module).ok());
  return *std::move(module);
}

// The cost of `m`'s entry root instruction on `chip`.
absl::StatusOr<OpCost> CostRoot(const Module& m, const Chip& chip,
                                const CostOptions& options = {}) {
  return CostInstruction(*m.entry()->root(), chip, options);
}

constexpr char kExpMultiply[] = R"(HloModule m
fused {
  a = f32[1024]{0} parameter(0)
  b = f32[1024]{0} parameter(1)
  e = f32[1024]{0} exponential(a)
  ROOT m = f32[1024]{0} multiply(e, b)
}
ENTRY e {
  x = f32[1024]{0} parameter(0)
  y = f32[1024]{0} parameter(1)
  ROOT f = f32[1024]{0} fusion(x, y), kind=kLoop, calls=fused
})";

TEST(CostInstruction, ElementwiseKernelOnH100IsLaunchBound) {
  auto m = Parse(kExpMultiply);
  PERFSIM_ASSERT_OK_AND_ASSIGN(OpCost c, CostRoot(*m, Load("gpu_h100")));
  // 1024 multiplies at 6.69e13 FLOP/s on the vector units; the exponentials need
  // transcendentals_per_second, which gpu_h100 does not give; 3 x 4 KiB at 3.35e12 B/s; 1 us
  // launch overhead dominates.
  EXPECT_DOUBLE_EQ(c.compute_seconds, 1024 / 6.69e13);
  EXPECT_DOUBLE_EQ(c.memory_seconds, 12288 / 3.35e12);
  EXPECT_DOUBLE_EQ(c.overhead_seconds, 1e-6);
  ASSERT_TRUE(c.seconds.has_value());
  EXPECT_DOUBLE_EQ(*c.seconds, 12288 / 3.35e12 + 1e-6);
  EXPECT_EQ(c.bound, Bound::kOverhead);
  EXPECT_THAT(c.unknown_rates, ElementsAre("compute.transcendentals_per_second"));
}

TEST(CostInstruction, ElementwiseKernelOnTpuIsMemoryBoundWithUnknownVectorRate) {
  auto m = Parse(kExpMultiply);
  PERFSIM_ASSERT_OK_AND_ASSIGN(OpCost c, CostRoot(*m, Load("tpu_v5p")));
  EXPECT_EQ(c.compute_seconds, 0);
  EXPECT_DOUBLE_EQ(*c.seconds, 12288 / 2.765e12);
  EXPECT_EQ(c.bound, Bound::kMemory);
  EXPECT_THAT(c.unknown_rates, UnorderedElementsAre("compute.vector_f32_flops_per_second",
                                                    "compute.transcendentals_per_second"));
}

TEST(CostInstruction, LargeBf16DotIsComputeBound) {
  auto m = Parse(R"(HloModule m
ENTRY e {
  x = bf16[1024,1024]{1,0} parameter(0)
  w = bf16[1024,1024]{1,0} parameter(1)
  ROOT d = bf16[1024,1024]{1,0} dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})");
  PERFSIM_ASSERT_OK_AND_ASSIGN(OpCost c, CostRoot(*m, Load("tpu_v5p")));
  // 2^31 flops at 4.59e14 vs 3 x 2 MiB at 2.765e12 B/s.
  EXPECT_DOUBLE_EQ(c.compute_seconds, 2.0 * 1024 * 1024 * 1024 / 4.59e14);
  EXPECT_DOUBLE_EQ(c.memory_seconds, 3.0 * 1024 * 1024 * 2 / 2.765e12);
  EXPECT_EQ(c.bound, Bound::kCompute);
  EXPECT_DOUBLE_EQ(*c.seconds, c.compute_seconds);
}

TEST(CostInstruction, WhileLoopTimeUsesTheTripCountInBothModes) {
  auto m = Parse(R"(HloModule m
body {
  p = (s32[], f32[4]{0}) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  x = f32[4]{0} get-tuple-element(p), index=1
  one = s32[] constant(1)
  j = s32[] add(i, one)
  y = f32[4]{0} add(x, x)
  ROOT t = (s32[], f32[4]{0}) tuple(j, y)
}
cond {
  p = (s32[], f32[4]{0}) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(5)
  ROOT lt = pred[] compare(i, n), direction=LT
}
ENTRY e {
  init = (s32[], f32[4]{0}) parameter(0)
  ROOT w = (s32[], f32[4]{0}) while(init), condition=cond, body=body, backend_config={"known_trip_count":{"n":"5"}}
})");
  // Two kernels per iteration (the adds) times 5, one compare times 6: 16 launches of 1 us on
  // an H100, each far above its roofline time.
  for (CostMode mode : {CostMode::kTrue, CostMode::kXlaCompatible}) {
    PERFSIM_ASSERT_OK_AND_ASSIGN(OpCost c, CostRoot(*m, Load("gpu_h100"), {.mode = mode}));
    EXPECT_NEAR(c.overhead_seconds, 16e-6, 1e-15);
    EXPECT_NEAR(*c.seconds, 16e-6, 1e-9);
    EXPECT_EQ(c.bound, Bound::kOverhead);
  }
}

constexpr char kAllReduce[] = R"(HloModule m, num_partitions=8
add { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT s = f32[] add(a, b) }
ENTRY e {
  x = f32[1048576]{0} parameter(0)
  ROOT r = f32[1048576]{0} all-reduce(x), channel_id=1, replica_groups={{0,1,2,3,4,5,6,7}}, use_global_device_ids=true, to_apply=add
})";

TEST(CostInstruction, CollectivesAreTimedBySimComm) {
  auto m = Parse(kAllReduce);
  const Chip chip = Load("tpu_v5p");
  PERFSIM_ASSERT_OK_AND_ASSIGN(Topology topology, Topology::Create(chip, "2x2x2"));
  PERFSIM_ASSERT_OK_AND_ASSIGN(OpCost c,
                               CostRoot(*m, chip, {.num_devices = 8, .topology = &topology}));
  PERFSIM_ASSERT_OK_AND_ASSIGN(CollectiveCost direct,
                               CostCollectiveInstruction(*m->entry()->root(), topology));
  EXPECT_EQ(c.bound, Bound::kCommunication);
  ASSERT_TRUE(c.seconds.has_value());
  EXPECT_GT(*c.seconds, 0);
  EXPECT_EQ(*c.seconds, direct.seconds);
  EXPECT_EQ(c.communication_seconds, direct.seconds);
  // Counted per device: a ring all-reduce adds 7/8 of the elements.
  EXPECT_EQ(c.counts.flops, 1048576.0 * 7 / 8);
}

TEST(CostInstruction, CollectivesWithoutATopologyAreNotTimed) {
  auto m = Parse(kAllReduce);
  PERFSIM_ASSERT_OK_AND_ASSIGN(OpCost c, CostRoot(*m, Load("tpu_v5p")));
  EXPECT_FALSE(c.seconds.has_value());
  EXPECT_EQ(c.bound, Bound::kCommunication);
}

TEST(CostInstruction, GroupedMatmulCustomCallUsesTheGroupedModel) {
  auto m = Parse(R"(HloModule m
ENTRY e {
  x = bf16[512,7168]{1,0} parameter(0)
  w = bf16[4,7168,2048]{2,1,0} parameter(1)
  g = s32[4]{0} constant({100, 0, 300, 112})
  ROOT o = f32[512,2048]{1,0} custom-call(x, w, g), custom_call_target="perfsim.gmm", backend_config={"tiling":[128,512,1024]}
})");
  const Chip chip = Load("tpu_v5p");
  const Instruction& gmm = *m->entry()->root();
  PERFSIM_ASSERT_OK_AND_ASSIGN(OpCost c, CostInstruction(gmm, chip, {}));
  PERFSIM_ASSERT_OK_AND_ASSIGN(GroupedMatmulSpec spec, GroupedMatmulSpecFromInstruction(gmm));
  PERFSIM_ASSERT_OK_AND_ASSIGN(GroupedMatmulCost direct, CostGroupedMatmul(spec, chip));
  EXPECT_EQ(*c.seconds, direct.seconds);
  EXPECT_EQ(c.bound, Bound::kMemory);
  // The counts are the model's (grouped_matmul_test.cc derives them), plus 16 B of sizes.
  EXPECT_EQ(c.counts.flops, 15032385536.0);
  EXPECT_EQ(c.counts.bytes_accessed, 22020096.0 + 176160768.0 + 4194304.0 + 16);
}

TEST(CostModule, RowsFollowTheEntryAndTotalsAddUp) {
  auto m = Parse(kExpMultiply);
  PERFSIM_ASSERT_OK_AND_ASSIGN(ModuleCost cost, CostModule(*m, Load("gpu_h100"), {}));
  ASSERT_EQ(cost.instructions.size(), 3u);
  EXPECT_EQ(cost.instructions[2].instruction->name(), "f");
  EXPECT_EQ(cost.totals.flops, 1024);
  EXPECT_EQ(cost.totals.transcendentals, 1024);
  EXPECT_DOUBLE_EQ(cost.seconds, 12288 / 3.35e12 + 1e-6);
  EXPECT_EQ(cost.num_devices, 1);
  EXPECT_TRUE(cost.topology.empty());
}

TEST(CostModule, DeviceCountComesFromTheCollectives) {
  auto m = Parse(R"(HloModule m
ENTRY e {
  x = f32[16]{0} parameter(0)
  ROOT p = f32[16]{0} collective-permute(x), source_target_pairs={{0,5},{5,0}}
})");
  EXPECT_EQ(ModuleDeviceCount(*m), 6);
  PERFSIM_ASSERT_OK_AND_ASSIGN(ModuleCost gpu, CostModule(*m, Load("gpu_h100"), {}));
  EXPECT_EQ(gpu.untimed_instructions, 0);
  // 5 TPU v5p chips would be an axis of 5, which the torus rules forbid (at most 4 or a
  // multiple of 4): the slice grows to 6 chips, 3x2x1.
  PERFSIM_ASSERT_OK_AND_ASSIGN(Topology t, TopologyForDevices(Load("tpu_v5p"), 5));
  EXPECT_EQ(t.num_devices(), 6);
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::string shape, SliceShapeForDevices(Load("tpu_v5p"), 8));
  EXPECT_EQ(shape, "2x2x2");
}

// A chip with its efficiency factors replaced.
Chip WithEfficiency(const char* name, double matmul_fraction, double hbm_fraction) {
  HardwareSpec proto = Load(name).proto();
  proto.mutable_efficiency()->set_matmul_fraction_of_peak(matmul_fraction);
  proto.mutable_efficiency()->set_hbm_fraction_of_peak(hbm_fraction);
  absl::StatusOr<Chip> chip = Chip::FromProto(proto);
  PERFSIM_CHECK(chip.ok()) << chip.status();
  return *chip;
}

TEST(CostInstruction, MatmulFractionOfPeakDividesMatrixTimeOnly) {
  // roofline.h: matmul_fraction_of_peak scales the matrix-unit rate, so a dot's compute time
  // is divided by it; its HBM time is not (that is hbm_fraction_of_peak's).
  auto m = Parse(R"(HloModule m
ENTRY e {
  x = bf16[1024,1024]{1,0} parameter(0)
  w = bf16[1024,1024]{1,0} parameter(1)
  ROOT d = bf16[1024,1024]{1,0} dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})");
  PERFSIM_ASSERT_OK_AND_ASSIGN(OpCost full, CostRoot(*m, WithEfficiency("tpu_v5p", 1, 1)));
  PERFSIM_ASSERT_OK_AND_ASSIGN(OpCost half, CostRoot(*m, WithEfficiency("tpu_v5p", 0.5, 1)));
  // 2^31 flops at 0.5 × 4.59e14.
  EXPECT_DOUBLE_EQ(full.compute_seconds, 2.0 * 1024 * 1024 * 1024 / 4.59e14);
  EXPECT_DOUBLE_EQ(half.compute_seconds, 2.0 * 1024 * 1024 * 1024 / (0.5 * 4.59e14));
  EXPECT_DOUBLE_EQ(half.memory_seconds, full.memory_seconds);
}

TEST(CostInstruction, HbmFractionOfPeakDividesMemoryTimeOfEveryKernel) {
  // roofline.h: hbm_fraction_of_peak scales the HBM bandwidth of every kernel: an elementwise
  // op, a dot and a grouped matmul all see their memory time divided by it, and their compute
  // time unchanged.
  const Chip full = WithEfficiency("tpu_v5p", 1, 1);
  const Chip slower = WithEfficiency("tpu_v5p", 1, 0.8);
  auto elementwise = Parse(kExpMultiply);
  PERFSIM_ASSERT_OK_AND_ASSIGN(OpCost a, CostRoot(*elementwise, full));
  PERFSIM_ASSERT_OK_AND_ASSIGN(OpCost b, CostRoot(*elementwise, slower));
  // 3 × 4 KiB at 0.8 × 2.765e12 B/s.
  EXPECT_DOUBLE_EQ(b.memory_seconds, 12288 / (0.8 * 2.765e12));
  EXPECT_DOUBLE_EQ(*b.seconds, *a.seconds / 0.8);
  auto dot = Parse(R"(HloModule m
ENTRY e {
  x = bf16[1024,1024]{1,0} parameter(0)
  w = bf16[1024,1024]{1,0} parameter(1)
  ROOT d = bf16[1024,1024]{1,0} dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})");
  PERFSIM_ASSERT_OK_AND_ASSIGN(OpCost c, CostRoot(*dot, full));
  PERFSIM_ASSERT_OK_AND_ASSIGN(OpCost d, CostRoot(*dot, slower));
  EXPECT_DOUBLE_EQ(d.memory_seconds, 3.0 * 1024 * 1024 * 2 / (0.8 * 2.765e12));
  EXPECT_DOUBLE_EQ(d.compute_seconds, c.compute_seconds);
  GroupedMatmulSpec spec{.kind = GroupedMatmulKind::kGmm, .m = 512, .k = 7168, .n = 2048,
                         .num_groups = 4, .group_sizes = std::vector<int64_t>{100, 0, 300, 112},
                         .tm = 128, .tk = 512, .tn = 1024};
  PERFSIM_ASSERT_OK_AND_ASSIGN(GroupedMatmulCost e, CostGroupedMatmul(spec, full));
  PERFSIM_ASSERT_OK_AND_ASSIGN(GroupedMatmulCost f, CostGroupedMatmul(spec, slower));
  EXPECT_DOUBLE_EQ(f.memory_seconds, e.memory_seconds / 0.8);
  EXPECT_DOUBLE_EQ(f.compute_seconds, e.compute_seconds);
}

constexpr char kBatchedMatVec[] = R"(HloModule m
ENTRY e {
  r = f32[4096,8,7168]{2,1,0} parameter(0)
  w = f32[4096,8]{1,0} parameter(1)
  ROOT y = f32[4096,7168]{1,0} dot(r, w), lhs_batch_dims={0}, lhs_contracting_dims={1}, rhs_batch_dims={0}, rhs_contracting_dims={1}
})";

TEST(CostInstruction, MatrixVectorDotRunsOnTheVectorUnitsWithoutTilePadding) {
  // The MoE combine's weighted sum: for each of 4096 tokens, 8 rows of width 7168 weighted by
  // 8 scalars. In the [batch, m, k] x [batch, k, n] view: batch 4096, m 7168, k 8, n 1. XLA
  // strength-reduces it (multiply + reduce): 2·4096·7168·8 = 469,762,048 flops on the vector
  // units. On an H100 (vector f32 6.69e13 FLOP/s): 7.02 us of compute against
  // (4096·8·7168 + 4096·8 + 4096·7168)·4 B = 1,057,095,680 B at 3.35e12 B/s = 316 us: memory
  // bound. On MXU tiles it would have been padded to k = 256 (and n to a whole tile).
  auto m = Parse(kBatchedMatVec);
  PERFSIM_ASSERT_OK_AND_ASSIGN(OpCost h100, CostRoot(*m, Load("gpu_h100")));
  EXPECT_DOUBLE_EQ(h100.compute_seconds, 469762048.0 / 6.69e13);
  EXPECT_DOUBLE_EQ(h100.memory_seconds, 1057095680.0 / 3.35e12);
  EXPECT_EQ(h100.bound, Bound::kMemory);
  // v7x has no sourced vector rate: the work is not timed (the time is a lower bound), and it
  // is not charged 3.8 TFLOP of padded MXU passes either: the HBM time is the op's time.
  PERFSIM_ASSERT_OK_AND_ASSIGN(OpCost v7x, CostRoot(*m, Load("tpu_v7x")));
  EXPECT_EQ(v7x.compute_seconds, 0);
  EXPECT_EQ(v7x.bound, Bound::kMemory);
  EXPECT_THAT(v7x.unknown_rates, ElementsAre("compute.vector_f32_flops_per_second"));
  // With n = 2 it is a matrix product again: matrix units, padded tiles.
  auto two = Parse(R"(HloModule m
ENTRY e {
  r = f32[4096,8,7168]{2,1,0} parameter(0)
  w = f32[4096,8,2]{2,1,0} parameter(1)
  ROOT y = f32[4096,7168,2]{2,1,0} dot(r, w), lhs_batch_dims={0}, lhs_contracting_dims={1}, rhs_batch_dims={0}, rhs_contracting_dims={1}
})");
  PERFSIM_ASSERT_OK_AND_ASSIGN(OpCost mxu, CostRoot(*two, Load("tpu_v7x")));
  EXPECT_GT(mxu.compute_seconds, 0);
  EXPECT_TRUE(mxu.unknown_rates.empty());
}

TEST(CostInstruction, GatherReadsOnlyTheRowsItGathers) {
  // 4 rows of 7168 bf16 gathered from a [1048576, 7168] buffer (a receive buffer of which most
  // rows are padding): the op reads 4 rows and the 4 indices and writes 4 rows, in both
  // counting modes (XLA: operand 0 = sz(out)). 4·7168·2 = 57344 B per side, 16 B of indices.
  auto m = Parse(R"(HloModule m
ENTRY e {
  buffer = bf16[1048576,7168]{1,0} parameter(0)
  idx = s32[4]{0} parameter(1)
  ROOT g = bf16[4,7168]{1,0} gather(buffer, idx), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,7168}
})");
  for (CostMode mode : {CostMode::kTrue, CostMode::kXlaCompatible}) {
    PERFSIM_ASSERT_OK_AND_ASSIGN(OpCost c, CostRoot(*m, Load("tpu_v7x"), {.mode = mode}));
    EXPECT_DOUBLE_EQ(c.counts.bytes_accessed, 2 * 57344.0 + 16);
    EXPECT_THAT(c.counts.operand_bytes, ElementsAre(57344.0, 16.0));
  }
}

}  // namespace
}  // namespace perfsim
