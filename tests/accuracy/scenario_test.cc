// From measurement rows to scenarios (sim/accuracy/scenario.h): the rows of
// shared/reference/calibration.csv map to what their cells say, rows perfsim cannot simulate
// are skipped with a reason, malformed numbers are errors with their location.
#include "sim/accuracy/scenario.h"

#include <map>
#include <set>
#include <variant>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/util/status_matchers.h"
#include "tests/accuracy/accuracy_test_util.h"

namespace perfsim {
namespace {

using ::perfsim::testing::CalibrationFile;
using ::perfsim::testing::CalibrationRow;
using ::perfsim::testing::OneRow;
using ::perfsim::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

Scenario MustMap(const Measurement& row) {
  absl::StatusOr<MappedRow> mapped = MapMeasurement(row);
  EXPECT_TRUE(mapped.ok()) << mapped.status();
  if (!mapped.ok()) return Scenario();
  EXPECT_TRUE(mapped->scenario.has_value()) << row.id << ": " << mapped->skipped_reason;
  return mapped->scenario.value_or(Scenario());
}

std::string SkipReason(const Measurement& row) {
  absl::StatusOr<MappedRow> mapped = MapMeasurement(row);
  EXPECT_TRUE(mapped.ok()) << mapped.status();
  if (!mapped.ok()) return "";
  EXPECT_FALSE(mapped->scenario.has_value()) << row.id;
  return mapped->skipped_reason;
}

TEST(Scenario, EveryReferenceRowMapsOrIsSkippedForAStatedReason) {
  // ../shared/reference/calibration.csv has 46 rows. Every row maps (issues 13, 14): 36 kernel
  // and collective rows to a closed-form scenario, 3 block and fused-layer rows to a whole-layer
  // simulation, the 7 whole training steps to a composed step (scenario_step.cc).
  ASSERT_EQ(CalibrationFile().rows.size(), 46u);
  const std::set<std::string> blocks = {"M103", "M165", "M173"};
  const std::set<std::string> steps = {"M108", "M111", "M119", "M132", "M137", "M148", "M153"};
  int mapped_rows = 0;
  int block_rows = 0;
  int step_rows = 0;
  for (const Measurement& row : CalibrationFile().rows) {
    absl::StatusOr<MappedRow> mapped = MapMeasurement(row);
    ASSERT_TRUE(mapped.ok()) << row.id << ": " << mapped.status();
    EXPECT_TRUE(mapped->skipped_reason.empty()) << row.id << ": " << mapped->skipped_reason;
    if (blocks.count(row.id) > 0) {
      EXPECT_TRUE(mapped->block.has_value()) << row.id << ": " << mapped->skipped_reason;
      EXPECT_FALSE(mapped->scenario.has_value()) << row.id;
      ++block_rows;
    } else if (steps.count(row.id) > 0) {
      EXPECT_TRUE(mapped->train_step.has_value()) << row.id << ": " << mapped->skipped_reason;
      EXPECT_FALSE(mapped->scenario.has_value()) << row.id;
      ++step_rows;
    } else {
      EXPECT_TRUE(mapped->scenario.has_value()) << row.id << ": " << mapped->skipped_reason;
      ++mapped_rows;
    }
  }
  EXPECT_EQ(mapped_rows, 36);
  EXPECT_EQ(block_rows, 3);
  EXPECT_EQ(step_rows, 7);
}

// The whole-step rows' columns become the step (scenario_step.cc): the parallelism strings,
// the metric, the MaxText batch without accumulation, the selective recompute of M153.
TEST(Scenario, WholeStepRowsMapTheirColumns) {
  std::map<std::string, StepRowScenario> by_id;
  for (const Measurement& row : CalibrationFile().rows) {
    absl::StatusOr<MappedRow> mapped = MapMeasurement(row);
    ASSERT_TRUE(mapped.ok());
    if (mapped->train_step.has_value()) by_id.emplace(row.id, *mapped->train_step);
  }
  ASSERT_EQ(by_id.size(), 7u);
  const StepRowScenario& m153 = by_id.at("M153");
  EXPECT_EQ(m153.mesh, "8x32");  // "every 32 GPUs (8 nodes) in one NVL domain"
  EXPECT_EQ(m153.metric, StepMetric::kModelTflopsPerDevice);
  EXPECT_TRUE(m153.megatron_flops);
  EXPECT_EQ(m153.step.parallelism().pp(), 8);
  EXPECT_EQ(m153.step.parallelism().vp(), 4);
  EXPECT_EQ(m153.step.parallelism().ep(), 32);
  EXPECT_EQ(m153.step.parallelism().zero(), ZERO_1);
  EXPECT_EQ(m153.step.remat().policy(), REMAT_SELECTIVE);
  EXPECT_THAT(std::vector<std::string>(m153.step.remat().recompute().begin(),
                                       m153.step.remat().recompute().end()),
              ::testing::ElementsAre("mlp", "moe_act"));
  EXPECT_EQ(m153.step.precision().compute(), PRECISION_MXFP8);
  const StepRowScenario& m132 = by_id.at("M132");
  EXPECT_EQ(m132.metric, StepMetric::kTokensPerSecondPerDevice);
  EXPECT_EQ(m132.mesh, "2x8");  // 16 H100s in 8-GPU nodes
  EXPECT_EQ(m132.step.parallelism().ep(), 16);
  const StepRowScenario& m111 = by_id.at("M111");
  EXPECT_EQ(m111.mesh, "16x16");
  EXPECT_EQ(m111.metric, StepMetric::kStepSeconds);
  EXPECT_EQ(m111.step.moe_backend(), "capacity_einsum");
  EXPECT_EQ(m111.step.micro_batch(), 12);  // 3072 sequences over fsdp 256
  EXPECT_EQ(m111.step.precision().param_bytes(), 4);  // "fp32 weights"
  EXPECT_EQ(m111.step.remat().policy(), REMAT_FULL);
  const StepRowScenario& m148 = by_id.at("M148");
  EXPECT_EQ(m148.step.parallelism().fsdp(), 64);
  EXPECT_EQ(m148.step.parallelism().zero(), ZERO_0);  // NeMo Automodel: FSDP2, not Megatron
}

TEST(Scenario, NewNotationsOfKernelRowsMapToTheirShapes) {
  // M084: "fwd FC1 (gate+up fused): M~32768 (4 groups x ~8192), N=4096, K=7168".
  const Scenario m084 = MustMap(CalibrationRow("M084"));
  const GroupedMatmulSpec& fc1 = std::get<GroupedGemmScenario>(m084.what).spec;
  EXPECT_EQ(fc1.m, 32768);
  EXPECT_EQ(fc1.k, 7168);
  EXPECT_EQ(fc1.n, 4096);
  EXPECT_THAT(*fc1.group_sizes, ElementsAre(8192, 8192, 8192, 8192));
  // M092: "MaxText DeepSeek-like gmm fwd: m=262144, k=7168, n=1024, groups=256": 1024 rows
  // per group.
  const Scenario m092 = MustMap(CalibrationRow("M092"));
  const GroupedMatmulSpec& v2 = std::get<GroupedGemmScenario>(m092.what).spec;
  EXPECT_EQ(v2.m, 262144);
  EXPECT_EQ(v2.k, 7168);
  EXPECT_EQ(v2.n, 1024);
  EXPECT_EQ(v2.num_groups, 256);
  EXPECT_EQ(v2.group_sizes->front(), 1024);
  // M177: "[262144,2560] x [64,2560,1280]" on B200.
  const Scenario quack = MustMap(CalibrationRow("M177"));
  EXPECT_EQ(quack.chip, "gpu_b200");
  const GroupedMatmulSpec& q = std::get<GroupedGemmScenario>(quack.what).spec;
  EXPECT_EQ(q.m, 262144);
  EXPECT_EQ(q.k, 2560);
  EXPECT_EQ(q.n, 1280);
  EXPECT_EQ(q.num_groups, 64);
  // M047 / M053: "SM90 (Hopper; SKU not stated)", "SM100 (Blackwell; ...)": the part perfsim
  // has, with the assumption in the description.
  const Scenario hopper = MustMap(CalibrationRow("M047"));
  EXPECT_EQ(hopper.chip, "gpu_h100");
  EXPECT_THAT(hopper.description, HasSubstr("SKU is not stated"));
  EXPECT_EQ(MustMap(CalibrationRow("M053")).chip, "gpu_b200");
  // M072: "NVL72 rack (MNNVL)" with 8 chips: 8 GPUs of one NVLink domain, not 72 per node.
  const Scenario rack = MustMap(CalibrationRow("M072"));
  EXPECT_EQ(rack.chip, "gpu_gb200");
  EXPECT_EQ(std::get<EpCommScenario>(rack.what).nodes, 1);
  EXPECT_EQ(std::get<EpCommScenario>(rack.what).gpus_per_node, 8);
}

TEST(Scenario, TimingMethodIsWhatTheRowSaysNotWhichLibraryItIs) {
  // The HybridEP rows say "Torch API timing" in backend_kernel; their notes also quote
  // kernel-only figures, which do not make the value a kernel time.
  for (const char* id : {"M057", "M058", "M059", "M060", "M061", "M062", "M063", "M064", "M065"}) {
    EXPECT_EQ(RowTimingMethod(CalibrationRow(id)), TimingMethod::kHostApi) << id;
    EXPECT_THAT(MustMap(CalibrationRow(id)).description, HasSubstr("timed around the host API"));
  }
  // DeepGEMM, DeepEP, "device time (xprof, ...)", NCCL statements: device time.
  for (const char* id : {"M001", "M015", "M098", "M178", "M180"}) {
    EXPECT_EQ(RowTimingMethod(CalibrationRow(id)), TimingMethod::kDevice) << id;
    EXPECT_EQ(MustMap(CalibrationRow(id)).timing, TimingMethod::kDevice) << id;
  }
  // The rule reads backend_kernel and metric, any case, for any library or category.
  const Measurement wall = OneRow(
      "A,kernel_grouped_gemm,H100 SXM,1,,,,,,bf16,my kernel,\"groups=2; M_per_group=256; N=256; "
      "K=256\",Wall-Clock time,5,us,,");
  EXPECT_EQ(RowTimingMethod(wall), TimingMethod::kHostApi);
  EXPECT_EQ(MustMap(wall).timing, TimingMethod::kHostApi);
  const Measurement notes_only = OneRow(
      "B,kernel_grouped_gemm,H100 SXM,1,,,,,,bf16,my kernel,\"groups=2; M_per_group=256; N=256; "
      "K=256\",kernel time,5,us,,API timing was 9 us");
  EXPECT_EQ(RowTimingMethod(notes_only), TimingMethod::kDevice);
}

TEST(Scenario, DeepGemmRowIsFourGroupsOfFp8OnTheKernelsCtaTile) {
  // M001: groups=4; M_per_group=8192; N=4096; K=7168, FP8 e4m3 in, BF16 out, H800.
  const Scenario s = MustMap(CalibrationRow("M001"));
  EXPECT_EQ(s.chip, "gpu_h800");
  EXPECT_EQ(s.metric, ScenarioMetric::kThroughput);
  EXPECT_EQ(s.unit, MeasurementUnit::kTeraflopsPerSecond);
  const GroupedMatmulSpec& spec = std::get<GroupedGemmScenario>(s.what).spec;
  EXPECT_EQ(spec.kind, GroupedMatmulKind::kGmm);
  EXPECT_EQ(spec.m, 4 * 8192);
  EXPECT_EQ(spec.k, 7168);
  EXPECT_EQ(spec.n, 4096);
  EXPECT_EQ(spec.num_groups, 4);
  EXPECT_THAT(*spec.group_sizes, ElementsAre(8192, 8192, 8192, 8192));
  EXPECT_EQ(spec.lhs_type, PrimitiveType::kF8E4M3FN);
  EXPECT_EQ(spec.rhs_type, PrimitiveType::kF8E4M3FN);
  EXPECT_EQ(spec.out_type, PrimitiveType::kBF16);
  // GPU: the kernel's CTA tile (sim/cost/gpu_gemm.h). Tiles hold at most 128·256 outputs, so
  // no tile gives fewer than 32768·4096 / 32768 = 4096 CTAs: 32 waves of 132 SMs, which
  // (128, 256) and (256, 128) reach (last wave 4096 − 31·132 = 4 CTAs for both, no padding);
  // the wider tn wins. The k step is 128 bytes of fp8.
  EXPECT_EQ(spec.tm, 128);
  EXPECT_EQ(spec.tk, 128);
  EXPECT_EQ(spec.tn, 256);
}

TEST(Scenario, TpuDecodeRowSpreadsTouchedGroupsAndUsesGmmV2Tiling) {
  // M098: E=64, K x N = 4096x2048, touched groups x rows = 30x3, lhs bf16, rhs fp8, gmm_v2.
  const Scenario s = MustMap(CalibrationRow("M098"));
  EXPECT_EQ(s.chip, "tpu_v7x");
  EXPECT_EQ(s.metric, ScenarioMetric::kTime);
  const GroupedMatmulSpec& spec = std::get<GroupedGemmScenario>(s.what).spec;
  EXPECT_EQ(spec.num_groups, 64);
  EXPECT_EQ(spec.m, 90);
  EXPECT_EQ(spec.k, 4096);
  EXPECT_EQ(spec.n, 2048);
  // Touched group i sits at floor(i * 64 / 30): 0, 2, 4, 6, 8, 10, 12, 14, 17, ...
  std::vector<int64_t> expected(64, 0);
  for (int i = 0; i < 30; ++i) expected[i * 64 / 30] = 3;
  EXPECT_EQ(*spec.group_sizes, expected);
  EXPECT_EQ(spec.lhs_type, PrimitiveType::kBF16);
  EXPECT_EQ(spec.rhs_type, PrimitiveType::kF8E4M3FN);
  EXPECT_EQ(spec.out_type, PrimitiveType::kBF16);
  // gmm_v2 default: tm = 128 * min(ceil(16/16), 2) / min(ceil(16/8), 2) = 64; tk = 4096 and
  // tn = 2048 (k, n rounded to 128) fit: 2*64*4096*2 (lhs) + 3*4096*2048 (rhs, triple
  // buffered) + small scale/acc/out blocks ~ 26 MiB < 0.9 * 64 MiB of v7x VMEM.
  EXPECT_EQ(spec.tm, 64);
  EXPECT_EQ(spec.tk, 4096);
  EXPECT_EQ(spec.tn, 2048);
}

TEST(Scenario, DeepEpRowsReadNodesTokensBytesAndNodeLimit) {
  // M017: EP16 over 2 nodes x 8 GPUs, 4096 tokens/rank, D=7168, top-8 of 256, node-limited
  // top-4 groups, dispatch FP8: 7168 + 4 * ceil(7168 / 128) = 7392 bytes per token.
  const Scenario s = MustMap(CalibrationRow("M017"));
  const EpCommScenario& ep = std::get<EpCommScenario>(s.what);
  EXPECT_EQ(ep.nodes, 2);
  EXPECT_EQ(ep.gpus_per_node, 8);
  EXPECT_EQ(ep.tokens_per_rank, 4096);
  EXPECT_EQ(ep.hidden, 7168);
  EXPECT_EQ(ep.top_k, 8);
  EXPECT_EQ(ep.experts, 256);
  EXPECT_EQ(ep.node_limit, 4);
  EXPECT_EQ(ep.op, EpOp::kDispatch);
  EXPECT_EQ(ep.dtype, PrimitiveType::kF8E4M3FN);
  EXPECT_EQ(ep.bytes_per_token, 7392);
  EXPECT_EQ(ep.bottleneck, LinkClass::kScaleOut);
  EXPECT_EQ(s.metric, ScenarioMetric::kLinkBandwidth);

  // M016: one node, combine in BF16 (2 * 7168 bytes), NVLink bandwidth.
  const Scenario s016 = MustMap(CalibrationRow("M016"));
  const EpCommScenario& one = std::get<EpCommScenario>(s016.what);
  EXPECT_EQ(one.nodes, 1);
  EXPECT_EQ(one.op, EpOp::kCombine);
  EXPECT_EQ(one.bytes_per_token, 14336);
  EXPECT_EQ(one.bottleneck, LinkClass::kNvlink);

  // M059: HybridEP on H100, no node limit, 128 experts.
  const Scenario s059 = MustMap(CalibrationRow("M059"));
  const EpCommScenario& hybrid = std::get<EpCommScenario>(s059.what);
  EXPECT_EQ(hybrid.node_limit, 0);
  EXPECT_EQ(hybrid.experts, 128);
  EXPECT_EQ(hybrid.op, EpOp::kCombine);
  EXPECT_EQ(hybrid.bottleneck, LinkClass::kScaleOut);
}

TEST(Scenario, CollectiveRows) {
  // M180: AllGather over Y (size 4) of bf16[2048, 8192] on a v5e 8x4 slice: ids are x*4 + y,
  // so the y line of chip (0,0) is {0, 1, 2, 3}; 2048 * 8192 * 2 bytes.
  const Scenario ag = MustMap(CalibrationRow("M180"));
  const CollectiveScenario& c = std::get<CollectiveScenario>(ag.what);
  EXPECT_EQ(c.kind, CollectiveKind::kAllGather);
  EXPECT_EQ(c.slice, "8x4");
  EXPECT_THAT(c.group, ElementsAre(0, 1, 2, 3));
  EXPECT_EQ(c.bytes, 2048.0 * 8192 * 2);
  EXPECT_EQ(ag.metric, ScenarioMetric::kTime);

  // M178: no op_shape; "all-to-all" in the metric (not "non-allreduce"), 8 H100s, busBw.
  const Scenario bus = MustMap(CalibrationRow("M178"));
  const CollectiveScenario& a2a = std::get<CollectiveScenario>(bus.what);
  EXPECT_EQ(a2a.kind, CollectiveKind::kAllToAll);
  EXPECT_EQ(a2a.slice, "8");
  EXPECT_EQ(a2a.group.size(), 8u);
  EXPECT_EQ(a2a.bytes, 1073741824.0);
  EXPECT_EQ(bus.metric, ScenarioMetric::kBusBandwidth);

  // M179: "2+ nodes" of 8 GPUs, alltoall named in `derived`, bytes on one NIC.
  const Scenario nic = MustMap(CalibrationRow("M179"));
  const CollectiveScenario& ib = std::get<CollectiveScenario>(nic.what);
  EXPECT_EQ(ib.kind, CollectiveKind::kAllToAll);
  EXPECT_EQ(ib.slice, "16");
  EXPECT_EQ(ib.link_dimension, "ib");
  EXPECT_EQ(nic.metric, ScenarioMetric::kLinkBandwidth);
}

TEST(Scenario, OtherShapeFormsAndBackwardOps) {
  // m=10 over 3 groups: 4, 3, 3. op=drhs is the weight-gradient tgmm.
  const Scenario even =
      MustMap(OneRow("A,kernel_grouped_gemm,H100,1,,,,,,bf16,,\"m=10; groups=3; N=256; K=512; "
                     "op=drhs\",t,5,us,,"));
  const GroupedMatmulSpec& tgmm = std::get<GroupedGemmScenario>(even.what).spec;
  EXPECT_EQ(tgmm.kind, GroupedMatmulKind::kTgmm);
  EXPECT_THAT(*tgmm.group_sizes, ElementsAre(4, 3, 3));
  EXPECT_EQ(tgmm.k, 512);
  EXPECT_EQ(tgmm.n, 256);
  // op=dlhs contracts over N: k and n swap.
  const Scenario dlhs =
      MustMap(OneRow("B,kernel_grouped_gemm,H100,1,,,,,,bf16,,\"group_sizes=[5,0,7]; N=256; K=512; "
                     "op=dlhs\",t,5,us,,"));
  const GroupedMatmulSpec& g = std::get<GroupedGemmScenario>(dlhs.what).spec;
  EXPECT_EQ(g.kind, GroupedMatmulKind::kGmm);
  EXPECT_THAT(*g.group_sizes, ElementsAre(5, 0, 7));
  EXPECT_EQ(g.m, 12);
  EXPECT_EQ(g.k, 256);
  EXPECT_EQ(g.n, 512);
}

TEST(Scenario, RowsPerfsimCannotSimulateAreSkippedWithAReason) {
  EXPECT_THAT(SkipReason(OneRow("A,kernel_grouped_gemm,MI300X,1,,,,,,bf16,,\"groups=1; "
                                "M_per_group=8; N=8; K=8\",t,5,us,,")),
              HasSubstr("'MI300X' is not a built-in chip"));
  EXPECT_THAT(SkipReason(OneRow("A,moe_layer,H100,8,,,,,,bf16,,,t,5,us,,")),
              HasSubstr("category 'moe_layer' is not simulated"));
  EXPECT_THAT(SkipReason(OneRow("A,collective,H100,8,,,,,,,,,t,5,furlongs,,")),
              HasSubstr("unit 'furlongs' is not one perfsim predicts"));
  EXPECT_THAT(SkipReason(OneRow("A,step,H100,8,,,,,,,,,t,5,s/step,,")), HasSubstr("whole step"));
  EXPECT_THAT(
      SkipReason(OneRow("A,kernel_grouped_gemm,H100,1,,,,,,bf16,,\"rows of some kind\",t,5,us,,")),
      HasSubstr("op_shape: expected"));
  EXPECT_THAT(SkipReason(OneRow(
                  "A,kernel_ep_comm,TPU v5e,8,,64,8,1024,4096 tokens,bf16,,dispatch,t,5,us,,")),
              HasSubstr("simulated on GPUs"));
  EXPECT_THAT(SkipReason(OneRow("A,collective,H100,8,,,,,,,,,time,5,us,,")),
              HasSubstr("name no collective"));
  EXPECT_THAT(SkipReason(OneRow("A,collective,H100,8,,,,,,,,,algbw of all-gather,5,GB/s,,")),
              HasSubstr("metric: expected busBw"));
}

TEST(Scenario, MalformedNumbersAreErrorsWithTheirLocation) {
  // The op_shape cell (its opening quote) is byte 41 of line 2; the E cell of the second row
  // is byte 26.
  const Measurement row = OneRow(
      "A,kernel_grouped_gemm,H100,1,,,,,,bf16,,\"groups=4; M_per_group=8; N=4O96; K=8\",t,5,us,,");
  EXPECT_THAT(
      MapMeasurement(row),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("x.csv:2:41: op_shape: expected a positive integer for N (got '4O96')")));
  EXPECT_THAT(
      MapMeasurement(OneRow("A,kernel_ep_comm,H100,8,,2x56,8,7168,4096,bf16,,dispatch,t,5,us,,")),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("x.csv:2:26: E: expected a non-negative integer")));
}

// Found by fuzz/csv_fuzzer: the size cells had no bound, so "groups=100000000000" allocated a
// group list of 800 GB and K = 9e18 overflowed int64 in the cost model (2·M·K·N). Sizes above
// 2^31 - 1 are not integers to the readers, a group list is at most 65536 long and a matmul at
// most 2^62 flops; each is an error at the cell.
TEST(Scenario, SizesBeyondAnyKernelAreErrorsNotCrashes) {
  const auto gemm = [](const std::string& shape) {
    return MapMeasurement(
        OneRow("A,kernel_grouped_gemm,H100,1,,,,,,bf16,,\"" + shape + "\",t,5,us,,"));
  };
  EXPECT_THAT(gemm("groups=4; M_per_group=8; N=8; K=9000000000000000000"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("x.csv:2:41: op_shape: expected a positive integer for K")));
  EXPECT_THAT(gemm("groups=100000; M_per_group=8; N=8; K=8"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("at most 65536 groups")));
  // 2 · (4 · 2e9 rows) · 2e9 · 8 = 2.56e20 flops > 2^62 = 4.6e18.
  EXPECT_THAT(gemm("groups=4; M_per_group=2000000000; N=2000000000; K=8"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("at most 2^62 flops")));
  EXPECT_THAT(MapMeasurement(OneRow("A,kernel_ep_comm,H100,8,,64,8,9000000000000000000,4096,"
                                    "bf16,,dispatch,t,5,us,,")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("D: expected a non-negative integer")));
  // The largest sizes still map.
  EXPECT_TRUE(gemm("groups=65536; M_per_group=8; N=2147483647; K=8").ok());
}

}  // namespace
}  // namespace perfsim
