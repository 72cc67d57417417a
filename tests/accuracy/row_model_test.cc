// Row models (sim/accuracy/row_model.h): datasheet physics against hand-derived goldens, and
// the closed-form factors against a re-simulation with the factors set in the chip.
//
// Tolerances: goldens to a relative 1e-9 (a few dozen floating-point operations, and the
// router sums up to 64^2 flows); factor consistency to 1e-12 (the same arithmetic reordered).
#include "sim/accuracy/row_model.h"

#include <cmath>
#include <variant>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/comm/collectives.h"
#include "sim/comm/topology.h"
#include "sim/cost/grouped_matmul.h"
#include "sim/util/status_matchers.h"
#include "tests/accuracy/accuracy_test_util.h"

namespace perfsim {
namespace {

using ::perfsim::testing::CalibrationRow;
using ::perfsim::testing::OneRow;
using ::perfsim::testing::StatusIs;
using ::testing::HasSubstr;

#define EXPECT_REL(actual, expected, rel) \
  EXPECT_NEAR((actual), (expected), (rel)*std::fabs(expected))

Scenario MustScenario(const Measurement& row) {
  absl::StatusOr<MappedRow> mapped = MapMeasurement(row);
  EXPECT_TRUE(mapped.ok()) << mapped.status();
  if (!mapped.ok() || !mapped->scenario.has_value()) return Scenario();
  return *mapped->scenario;
}

RowModel MustModel(const std::string& id) {
  absl::StatusOr<RowModel> model = BuildRowModel(MustScenario(CalibrationRow(id)));
  EXPECT_TRUE(model.ok()) << id << ": " << model.status();
  return model.ok() ? *model : RowModel();
}

// 1 - C(m - e, k) / C(m, k): some pick of k among m lands on the e marked ones.
double Hit(double m, double e, int k) {
  double miss = 1;
  for (int i = 0; i < k; ++i) miss *= (m - e - i) / (m - i);
  return 1 - miss;
}

TEST(RowModel, DeepGemmPhysicsIsTheFp8RooflinePlusTheEpilogueWrite) {
  // M001 on H800 (fp8 peak 1.979e15 FLOP/s, HBM 3.35e12 B/s, 132 SMs, 1 us launch): useful
  // flops 2 * 32768 * 7168 * 4096 in CTA tiles (128, 256) (sim/cost/gpu_gemm.h): 4096 CTAs in
  // 32 waves, 32·132/4096 of the work's time: 1003 us. Operands streamed under the main loop,
  // per group: the 58.7 MB of rows once, the 29.4 MB weight (over half the 50 MiB L2) once per
  // band of 28 of the 64 row tiles, 3 times: 4 · (8192·7168 + 3·7168·4096) B, 175 us. The
  // epilogue writes out 32768 * 4096 * 2 B (bf16) after the loop, 80 us, not overlapped
  // (sim/cost/grouped_matmul.h): seconds = max(1003, 175) + 80 + 1 us.
  const RowModel m = MustModel("M001");
  const double flops = 2.0 * 32768 * 7168 * 4096;
  const double compute = flops * (32.0 * 132 / 4096) / 1.979e15;
  const double operands = 4 * (8192.0 * 7168 + 3.0 * 7168 * 4096) / 3.35e12;
  const double epilogue = 32768.0 * 4096 * 2 / 3.35e12;
  const double seconds = std::max(compute, operands) + epilogue + 1e-6;
  EXPECT_REL(ModelSeconds(m, ChipFactors()), seconds, 1e-9);
  EXPECT_REL(ModelValue(m, ChipFactors()), flops / seconds / 1e12, 1e-9);
  // 60% of the matrix peak: the compute term grows by 1 / 0.6; 80% of the HBM rate slows the
  // epilogue by 1 / 0.8 (the operands stay hidden under compute).
  ChipFactors f;
  f.Set(FactorKind::kMatmul, 0.6);
  f.Set(FactorKind::kHbm, 0.8);
  EXPECT_REL(ModelSeconds(m, f), compute / 0.6 + epilogue / 0.8 + 1e-6, 1e-9);
  // The row is compute bound, and its epilogue informs the HBM fraction.
  EXPECT_TRUE(ModelInforms(m, FactorKind::kMatmul));
  EXPECT_TRUE(ModelInforms(m, FactorKind::kHbm));
  ASSERT_EQ(m.serial_terms.size(), 1u);
  EXPECT_EQ(m.serial_terms[0].factor, FactorKind::kHbm);
}

TEST(RowModel, ApiTimedRowsPayTheApiOverheadInsteadOfInformingTheChipOverhead) {
  // M057 (HybridEP) says "Torch API timing": one API call per row. M017 (DeepEP) says nothing
  // of the kind: device time.
  const RowModel api = MustModel("M057");
  const RowModel device = MustModel("M017");
  EXPECT_EQ(api.api_calls, 1);
  EXPECT_EQ(device.api_calls, 0);
  ChipFactors f;
  f.Set(FactorKind::kApiOverhead, 600e-6);
  EXPECT_REL(ModelSeconds(api, f), ModelSeconds(api, ChipFactors()) + 600e-6, 1e-12);
  EXPECT_EQ(ModelSeconds(device, f), ModelSeconds(device, ChipFactors()));
  // The API-timed row's fixed cost per call cannot be split between host and device: it
  // informs the API term, not the chip's collective overhead, which it still pays.
  EXPECT_TRUE(ModelInforms(api, FactorKind::kApiOverhead));
  EXPECT_FALSE(ModelInforms(api, FactorKind::kCommOverhead));
  // 2 nodes with 8 SMs: the SMs' copy bounds it (sim/comm/ep_dispatch.h), not a link.
  EXPECT_TRUE(ModelInforms(api, FactorKind::kSmCopy));
  EXPECT_FALSE(ModelInforms(device, FactorKind::kApiOverhead));
  EXPECT_TRUE(ModelInforms(device, FactorKind::kCommOverhead));
  ChipFactors chip_overhead;
  chip_overhead.Set(FactorKind::kCommOverhead, 5e-6);
  EXPECT_REL(ModelSeconds(api, chip_overhead), ModelSeconds(api, ChipFactors()) + 5e-6, 1e-12);
  // Not a chip property: a chip built with the factors has no field for it.
  EXPECT_FALSE(IsChipProperty(FactorKind::kApiOverhead));
  EXPECT_TRUE(IsChipProperty(FactorKind::kCommOverhead));
}

TEST(RowModel, TpuAllGatherPhysicsIsTheOpenLineRing) {
  // M180: 4 chips on an open y line of v5e (45e9 B/s per link and direction, 1 us per hop, no
  // launch cost sourced): (n-1)/n * V / W + (n-1) hops = 3/4 * 33554432 / 45e9 + 3 us.
  const RowModel m = MustModel("M180");
  const double transfer = 0.75 * 33554432.0 / 45e9;
  EXPECT_REL(ModelSeconds(m, ChipFactors()), transfer + 3e-6, 1e-9);
  EXPECT_REL(ModelValue(m, ChipFactors()), (transfer + 3e-6) * 1e6, 1e-9);
  ASSERT_EQ(m.terms.size(), 1u);
  EXPECT_EQ(m.terms[0].factor, FactorKind::kIci);  // the link class (issue 14)
  EXPECT_REL(m.terms[0].seconds, transfer, 1e-9);
  EXPECT_REL(m.fixed_seconds, 3e-6, 1e-9);
}

TEST(RowModel, DeepEpOneNodeIsTheExpectedNvlinkExchange) {
  // M015: 8 H800s, 4096 tokens of 7392 B, top-8 of 256 experts (32 per rank). A token reaches
  // a given rank with P = 1 - C(224, 8) / C(256, 8). Each rank's NVLink port (8 x 25e9 B/s)
  // receives from 7 peers 4096 * P * 7392 bytes each; time = 5 us collective launch (XLA's
  // NCCL launch) + 1.5 us hop + transfer. DeepEP's metric counts the 8 sources, the rank
  // itself included. No SM budget is stated: no SM term.
  const RowModel m = MustModel("M015");
  const double p = Hit(256, 32, 8);
  const double per_peer = 4096 * p * 7392;
  const double seconds = 5e-6 + 1.5e-6 + 7 * per_peer / 2e11;
  EXPECT_REL(ModelSeconds(m, ChipFactors()), seconds, 1e-9);
  EXPECT_REL(ModelValue(m, ChipFactors()), 8 * per_peer / seconds / 1e9, 1e-9);
}

TEST(RowModel, DeepEpTwoNodesTakesTheSlowerStage) {
  // M017: 2 nodes x 8 H800s; the node limit of 4 does not bind with 2 nodes. A token reaches
  // the other node with P_node = 1 - C(128, 8) / C(256, 8) and a given rank with
  // P_rank = 1 - C(240, 8) / C(256, 8).
  //   IB: each rank sends 4096 * P_node * 7392 B to its peer of the same index, over its 50e9
  //       B/s NIC; a hop costs the 31 us round trip.
  //   NVLink: each forwarder sends 2 * 4096 * P_rank * 7392 B (tokens of both nodes) to each
  //       of 7 peers; its port takes 7 of those at 2e11 B/s; a hop costs 1.5 us.
  // time = 5 us + max(IB, NVLink) + 31 us + 1.5 us; the metric counts (token, node) pairs,
  // the own node included: 2 * 4096 * P_node * 7392 B.
  const RowModel m = MustModel("M017");
  const double p_node = Hit(256, 128, 8);
  const double p_rank = Hit(256, 16, 8);
  const double ib = 4096 * p_node * 7392 / 5e10;
  const double nvl = 7 * 2 * 4096 * p_rank * 7392 / 2e11;
  const double seconds = 5e-6 + std::max(ib, nvl) + 31e-6 + 1.5e-6;
  EXPECT_REL(ModelSeconds(m, ChipFactors()), seconds, 1e-9);
  EXPECT_REL(ModelValue(m, ChipFactors()), 2 * 4096 * p_node * 7392 / seconds / 1e9, 1e-9);
  // The stages scale with their own link class's factor.
  ChipFactors f;
  f.Set(FactorKind::kInfiniband, 0.5);
  f.Set(FactorKind::kNvlink, 0.8);
  EXPECT_REL(ModelSeconds(m, f), 5e-6 + std::max(ib / 0.5, nvl / 0.8) + 32.5e-6, 1e-9);
}

TEST(RowModel, NodeLimitedRoutingNarrowsTheReach) {
  // M021: 8 nodes, at most 4 per token: a node is among the chosen with 4/8, and then reached
  // with 1 - C(96, 8) / C(128, 8) (the 8 picks among the 4 nodes' 128 experts).
  const RowModel m = MustModel("M021");
  const double p_node = 0.5 * Hit(128, 32, 8);
  // Metric bytes over the time: recover the bytes at a known time.
  const double seconds = ModelSeconds(m, ChipFactors());
  EXPECT_REL(ModelValue(m, ChipFactors()) * 1e9 * seconds, 8 * 4096 * p_node * 7392, 1e-9);
}

TEST(RowModel, FactorsMatchAResimulationWithTheFactorsInTheChip) {
  // Every factor away from its datasheet value, the overheads included: ChipWithFactors writes
  // them into the chip's efficiency block, which sim/cost and sim/comm apply on their own.
  ChipFactors f;
  f.Set(FactorKind::kMatmul, 0.6);
  f.Set(FactorKind::kHbm, 0.85);
  // Communication by link class; the per-algorithm fractions stay at 1, as the row models
  // hold them (proto/hardware.proto).
  f.Set(FactorKind::kNvlink, 0.7);
  f.Set(FactorKind::kInfiniband, 0.9);
  f.Set(FactorKind::kIci, 0.8);
  f.Set(FactorKind::kSmCopy, 0.75);
  f.Set(FactorKind::kGemmOverhead, 0.25e-6);
  f.Set(FactorKind::kCommOverhead, 7e-6);
  // Not a chip property and not paid by these device-timed rows: no effect on either side.
  f.Set(FactorKind::kApiOverhead, 1e-3);
  // A staged ring (M180, M181) and routed all-to-alls over NVLink and IB (M178, M179).
  for (const std::string id : {"M180", "M181", "M178", "M179"}) {
    const Scenario s = MustScenario(CalibrationRow(id));
    const CollectiveScenario& c = std::get<CollectiveScenario>(s.what);
    PERFSIM_ASSERT_OK_AND_ASSIGN(Chip chip, ChipWithFactors(s.chip, f));
    PERFSIM_ASSERT_OK_AND_ASSIGN(Topology topology, Topology::Create(chip, c.slice));
    absl::StatusOr<CollectiveTime> t = c.kind == CollectiveKind::kAllGather
                                           ? AllGatherTime(c.bytes, c.group, topology)
                                           : AllToAllTime(c.bytes, c.group, topology);
    ASSERT_TRUE(t.ok()) << t.status();
    // sim/comm charges the overhead once per collective. A plateau row (an achievable
    // bandwidth with no message size: M178, M179) is the large-message limit, where the
    // overhead has vanished, so its model leaves it out.
    const bool plateau = id == "M178" || id == "M179";
    EXPECT_EQ(c.plateau, plateau) << id;
    EXPECT_REL(ModelSeconds(MustModel(id), f), t->seconds - (plateau ? 7e-6 : 0.0), 1e-12) << id;
  }
  // Grouped matmuls: compute bound on H800 (M002, 4 groups; the epilogue write after the main
  // loop), memory bound on v7x (M099, 64 groups of which 30 have rows); the overhead is
  // charged per group, empty ones included.
  for (const std::string id : {"M002", "M099"}) {
    const Scenario gemm = MustScenario(CalibrationRow(id));
    PERFSIM_ASSERT_OK_AND_ASSIGN(Chip chip, ChipWithFactors(gemm.chip, f));
    const GroupedMatmulSpec& spec = std::get<GroupedGemmScenario>(gemm.what).spec;
    PERFSIM_ASSERT_OK_AND_ASSIGN(GroupedMatmulCost cost, CostGroupedMatmul(spec, chip));
    EXPECT_REL(ModelSeconds(MustModel(id), f), cost.seconds, 1e-12) << id;
    PERFSIM_ASSERT_OK_AND_ASSIGN(Chip datasheet, ChipWithFactors(gemm.chip, ChipFactors()));
    PERFSIM_ASSERT_OK_AND_ASSIGN(GroupedMatmulCost base, CostGroupedMatmul(spec, datasheet));
    EXPECT_EQ(spec.num_groups, id == "M002" ? 4 : 64) << id;
    EXPECT_REL(cost.overhead_seconds - base.overhead_seconds,
               static_cast<double>(spec.num_groups) * 0.25e-6, 1e-9)
        << id;
  }
}

TEST(RowModel, DatasheetChipIgnoresTheShippedCalibration) {
  // ChipWithFactors(name, ChipFactors()) is the physics column: fractions 1 and overheads 0,
  // whatever hardware/<name>.textproto was calibrated to.
  for (const char* name : {"gpu_h800", "gpu_h100", "tpu_v5e", "tpu_v7x"}) {
    PERFSIM_ASSERT_OK_AND_ASSIGN(Chip chip, ChipWithFactors(name, ChipFactors()));
    const EfficiencySpec& e = chip.proto().efficiency();
    EXPECT_EQ(e.matmul_fraction_of_peak(), 1.0) << name;
    EXPECT_EQ(e.hbm_fraction_of_peak(), 1.0) << name;
    EXPECT_EQ(e.collective_ring_fraction_of_peak(), 1.0) << name;
    EXPECT_EQ(e.collective_bidirectional_ring_fraction_of_peak(), 1.0) << name;
    EXPECT_EQ(e.collective_direct_fraction_of_peak(), 1.0) << name;
    EXPECT_EQ(e.collective_hierarchical_fraction_of_peak(), 1.0) << name;
    EXPECT_EQ(e.nvlink_fraction_of_peak(), 1.0) << name;
    EXPECT_EQ(e.infiniband_fraction_of_peak(), 1.0) << name;
    EXPECT_EQ(e.ici_fraction_of_peak(), 1.0) << name;
    EXPECT_EQ(e.sm_copy_fraction_of_peak(), 1.0) << name;
    EXPECT_EQ(e.grouped_matmul_overhead_seconds_per_group(), 0.0) << name;
    EXPECT_EQ(e.collective_overhead_seconds(), 0.0) << name;
  }
}

TEST(RowModel, HbmFactorAndOverheadApplyToGroupedMatmuls) {
  // M099 is memory bound on v7x (480 MiB of bf16 weights at 3.69e12 B/s per TensorCore vs a
  // small compute term): half the HBM efficiency doubles the memory term; the overhead adds
  // once per group of the call (64: the row's E, 34 of them empty).
  const RowModel m = MustModel("M099");
  ASSERT_EQ(m.terms.size(), 2u);
  const double memory = m.terms[1].seconds;
  EXPECT_EQ(m.terms[1].factor, FactorKind::kHbm);
  EXPECT_GT(memory, m.terms[0].seconds);
  EXPECT_EQ(m.invocations, 64);
  ChipFactors f;
  f.Set(FactorKind::kHbm, 0.5);
  f.Set(FactorKind::kGemmOverhead, 0.5e-6);
  f.Set(FactorKind::kCommOverhead, 1.0);  // another op class's: no effect
  EXPECT_REL(ModelSeconds(m, f), m.fixed_seconds + 2 * memory + 64 * 0.5e-6, 1e-12);
  // The row is memory bound, so it informs the HBM factor and its overhead, not the matmul
  // fraction (its compute term is hidden by the max) nor any collective factor.
  EXPECT_TRUE(ModelInforms(m, FactorKind::kHbm));
  EXPECT_TRUE(ModelInforms(m, FactorKind::kGemmOverhead));
  EXPECT_FALSE(ModelInforms(m, FactorKind::kMatmul));
  EXPECT_FALSE(ModelInforms(m, FactorKind::kCommOverhead));
  EXPECT_FALSE(ModelInforms(m, FactorKind::kNvlink));
}

TEST(RowModel, PlateauRowsNeitherPayNorInformTheOverhead) {
  // M178 states an achievable busBw with no message size: the plateau of a sweep.
  const RowModel m = MustModel("M178");
  EXPECT_EQ(m.invocations, 0);
  EXPECT_FALSE(ModelInforms(m, FactorKind::kCommOverhead));
  EXPECT_TRUE(ModelInforms(m, FactorKind::kNvlink));
  ChipFactors f;
  f.Set(FactorKind::kCommOverhead, 1e-3);
  EXPECT_EQ(ModelSeconds(m, f), ModelSeconds(m, ChipFactors()));
  // A row with a message size (M180) pays it once.
  const RowModel sized = MustModel("M180");
  EXPECT_REL(ModelSeconds(sized, f), ModelSeconds(sized, ChipFactors()) + 1e-3, 1e-12);
}

TEST(RowModel, MissingRateIsAnError) {
  // TPU v5e has no fp8 matrix rate (0 in its file): the row cannot be timed.
  const Scenario s =
      MustScenario(OneRow("A,kernel_grouped_gemm,TPU v5e,1,,,,,,fp8,,\"groups=2; M_per_group=256; "
                          "N=256; K=256\",t,5,us,,"));
  EXPECT_THAT(BuildRowModel(s), StatusIs(absl::StatusCode::kFailedPrecondition,
                                         HasSubstr("peak_fp8_flops_per_second")));
}

}  // namespace
}  // namespace perfsim
