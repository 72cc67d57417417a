// Expert-parallel dispatch / combine (sim/comm/ep_dispatch.h) on the round-number test GPU of
// comm_test_util.h: NVLink domains of 8 with a 4e11 B/s port and 1 us through the switch, a
// 5e10 B/s NIC per GPU with a 10 us round trip, no fixed cost. Every golden is derived in its
// comment; relative tolerance 1e-12.
#include "sim/comm/ep_dispatch.h"

#include <cmath>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/util/status_matchers.h"
#include "tests/comm/comm_test_util.h"

namespace perfsim {
namespace {

using ::perfsim::testing::MustTopology;
using ::perfsim::testing::StatusIs;
using ::perfsim::testing::SwitchChip;

#define EXPECT_SECONDS(actual, expected) \
  EXPECT_NEAR((actual), (expected), 1e-12 * std::fabs(expected))

// The test GPU with SMs that copy 1e10 B/s each (and `fraction` of it).
Chip GpuWithSmRate(double fraction = 1.0) {
  HardwareSpec spec = SwitchChip().proto();
  spec.mutable_compute()->set_sm_copy_bytes_per_second_per_sm(1e10);
  spec.mutable_efficiency()->set_sm_copy_fraction_of_peak(fraction);
  absl::StatusOr<Chip> chip = Chip::FromProto(spec);
  PERFSIM_CHECK(chip.ok()) << chip.status();
  return *std::move(chip);
}

// 1000 tokens of 1000 B per rank; each rank needs a token with probability 0.5, each node 1.
EpExchange Exchange(int64_t nodes) {
  EpExchange ep;
  ep.nodes = nodes;
  ep.gpus_per_node = 8;
  ep.tokens_per_rank = 1000;
  ep.bytes_per_token = 1000;
  ep.p_node = 1;
  ep.p_rank = 0.5;
  return ep;
}

TEST(EpDispatch, OneNodeIsAnNvlinkAllToAll) {
  // Each rank sends 1000 * 0.5 * 1000 = 5e5 B to each of 7 others: 3.5e6 / 4e11 = 8.75 us,
  // + 1 us through the switch.
  const Chip chip = GpuWithSmRate();
  const Topology t = MustTopology(chip, "8");
  PERFSIM_ASSERT_OK_AND_ASSIGN(EpTime r, TimeEpExchange(Exchange(1), chip, t));
  EXPECT_EQ(r.path, EpPath::kNvlink);
  EXPECT_SECONDS(r.nvlink_seconds, 8.75e-6);
  EXPECT_EQ(r.sm_seconds, 0);  // no SM budget stated
  EXPECT_SECONDS(r.seconds, 9.75e-6);
}

TEST(EpDispatch, FewSmsBoundTheCopy) {
  // 2 SMs of 1e10 B/s: the rank's NVLink sends (3.5e6) and receives (3.5e6) pass through them,
  // 7e6 / 2e10 = 350 us, far above the 8.75 us link. seconds = 1 us + 350 us. At a fraction
  // of 0.5 of the SM rate: 700 us.
  EpExchange ep = Exchange(1);
  ep.sms = 2;
  const Chip chip = GpuWithSmRate();
  const Topology t = MustTopology(chip, "8");
  PERFSIM_ASSERT_OK_AND_ASSIGN(EpTime r, TimeEpExchange(ep, chip, t));
  EXPECT_DOUBLE_EQ(r.sm_bytes, 7e6);
  EXPECT_SECONDS(r.sm_seconds, 350e-6);
  EXPECT_SECONDS(r.seconds, 351e-6);
  const Chip slow = GpuWithSmRate(0.5);
  PERFSIM_ASSERT_OK_AND_ASSIGN(EpTime s, TimeEpExchange(ep, slow, MustTopology(slow, "8")));
  EXPECT_SECONDS(s.sm_seconds, 350e-6);  // at datasheet rate
  EXPECT_SECONDS(s.seconds, 701e-6);
  // 1000 SMs: 0.35 us of copy, under the link: the link's 9.75 us again.
  ep.sms = 1000;
  PERFSIM_ASSERT_OK_AND_ASSIGN(EpTime f, TimeEpExchange(ep, chip, t));
  EXPECT_SECONDS(f.seconds, 9.75e-6);
}

TEST(EpDispatch, NormalModeOverTwoNodesIsHierarchical) {
  // IB: each rank sends 1000 * 1 * 1000 = 1e6 B once, to its peer on the other node:
  //   1e6 / 5e10 = 20 us.
  // NVLink: the forwarder sends 2 nodes * 5e5 = 1e6 B to each of 7 ranks: 7e6 / 4e11 = 17.5 us.
  // Pipelined: max = 20 us (IB bounds), + 10 us IB round trip + 1 us switch = 31 us.
  // SMs (4 of 1e10): NVLink 7e6 out + 7e6 in + 1e6 staged for IB = 1.5e7 / 4e10 = 375 us.
  const Chip chip = GpuWithSmRate();
  const Topology t = MustTopology(chip, "2x8");
  PERFSIM_ASSERT_OK_AND_ASSIGN(EpTime r, TimeEpExchange(Exchange(2), chip, t));
  EXPECT_EQ(r.path, EpPath::kHierarchical);
  EXPECT_SECONDS(r.scale_out_seconds, 20e-6);
  EXPECT_SECONDS(r.nvlink_seconds, 17.5e-6);
  EXPECT_EQ(r.bound, LinkFabric::kInfiniband);
  EXPECT_SECONDS(r.seconds, 31e-6);
  EpExchange ep = Exchange(2);
  ep.sms = 4;
  PERFSIM_ASSERT_OK_AND_ASSIGN(EpTime s, TimeEpExchange(ep, chip, t));
  EXPECT_DOUBLE_EQ(s.sm_bytes, 1.5e7);
  EXPECT_SECONDS(s.seconds, 11e-6 + 375e-6);
  // Combine moves the same bytes the other way: the same time for uniform traffic.
  ep.combine = true;
  PERFSIM_ASSERT_OK_AND_ASSIGN(EpTime c, TimeEpExchange(ep, chip, t));
  EXPECT_SECONDS(c.seconds, s.seconds);
}

TEST(EpDispatch, LowLatencyModeSendsEveryPairDirectly) {
  // Flat: 5e5 B from each rank to each of 15 others. NVLink port: 7 * 5e5 = 3.5e6 -> 8.75 us;
  // NIC: 8 * 5e5 = 4e6 / 5e10 = 80 us (bounds). Longest route: IB then NVLink, 11 us. 91 us.
  EpExchange ep = Exchange(2);
  ep.mode = EpKernelMode::kLowLatency;
  const Chip chip = GpuWithSmRate();
  const Topology t = MustTopology(chip, "2x8");
  PERFSIM_ASSERT_OK_AND_ASSIGN(EpTime r, TimeEpExchange(ep, chip, t));
  EXPECT_EQ(r.path, EpPath::kFlat);
  EXPECT_EQ(r.bound, LinkFabric::kInfiniband);
  EXPECT_SECONDS(r.nvlink_seconds, 80e-6);
  EXPECT_EQ(r.scale_out_seconds, 0);
  EXPECT_SECONDS(r.seconds, 91e-6);
  // On one node low-latency mode is the NVLink exchange.
  EXPECT_EQ(EpPathFor(EpKernelMode::kLowLatency, 1), EpPath::kNvlink);
}

TEST(EpDispatch, HybridEpOnAnNvl72RackIsNvlinkBound) {
  // calibration.csv M072: HybridEP dispatch on 8 GB200s of one NVL72 rack, 32 SMs, 4096 FP8
  // tokens of 7168 + 4 * 56 = 7392 B, top-8 of 64 experts (8 per rank): a token needs a given
  // rank with P = 1 - C(56, 8) / C(64, 8) = 0.67907. Each rank sends 7 * 4096 * P * 7392 =
  // 143.92 MB. gpu_gb200 at datasheet efficiency (its sourced compute fields kept):
  //   NVLink port 18 x 50e9 = 9e11 B/s: 159.92 us
  //   SM copy (send + receive) 2 * 143.92 MB / (32 SMs * 6.288e10 B/s) = 143.05 us
  // so NVLink bounds it: 5 us collective launch + 1 us hop + 159.92 us = 165.92 us, i.e.
  // 8 * 4096 * P * 7392 B received / 165.92 us = 991 GB/s. The row's kernel-only figures,
  // 714-764 GB/s, are 0.72-0.77 of that: B200's NVLink 5 fraction fitted on M053 (0.718).
  HardwareSpec spec = ::perfsim::testing::MustLoadChip("gpu_gb200").proto();
  spec.clear_efficiency();
  PERFSIM_ASSERT_OK_AND_ASSIGN(Chip chip, Chip::FromProto(spec));
  double miss = 1;  // C(56, 8) / C(64, 8)
  for (int i = 0; i < 8; ++i) miss *= (56.0 - i) / (64.0 - i);
  EpExchange ep;
  ep.gpus_per_node = 8;
  ep.tokens_per_rank = 4096;
  ep.bytes_per_token = 7392;
  ep.p_rank = 1 - miss;
  ep.sms = 32;
  PERFSIM_ASSERT_OK_AND_ASSIGN(EpTime t, TimeEpExchange(ep, chip, MustTopology(chip, "8")));
  const double send = 7 * 4096 * (1 - miss) * 7392;
  EXPECT_EQ(t.path, EpPath::kNvlink);
  EXPECT_SECONDS(t.nvlink_seconds, send / 9e11);
  EXPECT_SECONDS(t.sm_seconds, 2 * send / (32 * 6.288e10));
  EXPECT_SECONDS(t.seconds, 6e-6 + send / 9e11);
  EXPECT_NEAR(8 * 4096 * (1 - miss) * 7392 / t.seconds / 1e9, 991.4, 0.1);
}

TEST(EpDispatch, RejectsATopologyOfAnotherShape) {
  const Chip chip = GpuWithSmRate();
  EXPECT_THAT(TimeEpExchange(Exchange(2), chip, MustTopology(chip, "8")),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::HasSubstr("2 x 8")));
}

}  // namespace
}  // namespace perfsim
