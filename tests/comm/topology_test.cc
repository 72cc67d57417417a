// Topology from hardware + slice shape (sim/comm/topology.h) and group layouts (group.h).
#include "sim/comm/topology.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/comm/group.h"
#include "sim/util/status_matchers.h"
#include "tests/comm/comm_test_util.h"

namespace perfsim {
namespace {

using ::perfsim::testing::MustLoadChip;
using ::perfsim::testing::MustTopology;
using ::perfsim::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(Topology, TpuV7xSliceHasACoreDimensionAndWrapsWholeCubes) {
  // 4x8x8 of v7x: every axis a multiple of 4 (whole OCS cubes), so all three wrap; each chip
  // is two JAX devices, so there are 512 devices.
  const Topology t = MustTopology(MustLoadChip("tpu_v7x"), "4x8x8");
  EXPECT_EQ(t.num_chips(), 256);
  EXPECT_EQ(t.num_devices(), 512);
  EXPECT_EQ(t.devices_per_chip(), 2);
  ASSERT_EQ(t.rank(), 4);
  EXPECT_EQ(t.dimension(0).name, "x");
  EXPECT_EQ(t.dimension(3).name, "core");
  EXPECT_EQ(t.dimension(3).kind, LinkKind::kOnChip);
  for (int d = 0; d < 3; ++d) {
    EXPECT_TRUE(t.dimension(d).wraparound) << d;
    // v7x: 100 GB/s per link one way, one link per neighbour (links_per_chip 2 / 2).
    EXPECT_DOUBLE_EQ(t.dimension(d).bytes_per_second_per_direction, 1e11);
  }
  EXPECT_EQ(t.slice_shape(), "4x8x8");
  // The on-chip copy is assumed at half a device's HBM share: 7.38 TB/s / 2 / 2 = 1845 GB/s.
  EXPECT_EQ(t.ToString(),
            "tpu_v7x 4x8x8: x torus 4 (wrap) 100 GB/s/dir, y torus 8 (wrap) 100 GB/s/dir, "
            "z torus 8 (wrap) 100 GB/s/dir, core on_chip 2 1845 GB/s/dir");
}

TEST(Topology, SmallTpuSlicesAreOpenMeshes) {
  // v5p 2x2x4: 2 is less than a cube edge (no wraparound); 4 is a whole cube edge.
  const Topology t = MustTopology(MustLoadChip("tpu_v5p"), "2x2x4");
  EXPECT_FALSE(t.dimension(0).wraparound);
  EXPECT_FALSE(t.dimension(1).wraparound);
  EXPECT_TRUE(t.dimension(2).wraparound);
  // v5e wraps only an axis of 16.
  const Topology e = MustTopology(MustLoadChip("tpu_v5e"), "8x16");
  EXPECT_FALSE(e.dimension(0).wraparound);
  EXPECT_TRUE(e.dimension(1).wraparound);
  EXPECT_EQ(e.num_devices(), 128);
}

TEST(Topology, DeviceIdsAreRowMajorLastDimensionFastest) {
  const Topology t = MustTopology(MustLoadChip("tpu_v7x"), "4x8x8");
  // id = ((x*8 + y)*8 + z)*2 + core
  EXPECT_THAT(t.Coordinates(0), ElementsAre(0, 0, 0, 0));
  EXPECT_THAT(t.Coordinates(1), ElementsAre(0, 0, 0, 1));
  EXPECT_THAT(t.Coordinates(2), ElementsAre(0, 0, 1, 0));
  EXPECT_THAT(t.Coordinates(((3 * 8 + 5) * 8 + 7) * 2 + 1), ElementsAre(3, 5, 7, 1));
  for (int64_t d = 0; d < t.num_devices(); d += 37) {
    EXPECT_EQ(t.DeviceId(t.Coordinates(d)), d);
  }
  EXPECT_EQ(t.ChipOf(7), 3);
}

TEST(Topology, GpuSlicesAreNvlinkDomainsJoinedByInfiniband) {
  const Chip h100 = MustLoadChip("gpu_h100");
  const Topology one = MustTopology(h100, "8");
  ASSERT_EQ(one.rank(), 1);
  EXPECT_EQ(one.dimension(0).kind, LinkKind::kSwitch);
  // NVLink 4: 18 links x 25 GB/s per direction = 450 GB/s per GPU port, derated by the
  // shipped file's NVLink fraction (issue 14).
  EXPECT_EQ(one.dimension(0).fabric, LinkFabric::kNvlink);
  EXPECT_DOUBLE_EQ(one.dimension(0).peak_bytes_per_second_per_direction, 18 * 2.5e10);
  EXPECT_DOUBLE_EQ(one.dimension(0).bytes_per_second_per_direction,
                   18 * 2.5e10 * h100.proto().efficiency().nvlink_fraction_of_peak());

  const Topology four_nodes = MustTopology(h100, "32");
  ASSERT_EQ(four_nodes.rank(), 2);
  EXPECT_EQ(four_nodes.dimension(0).name, "ib");
  EXPECT_EQ(four_nodes.dimension(0).kind, LinkKind::kScaleOut);
  EXPECT_EQ(four_nodes.dimension(0).size, 4);
  EXPECT_EQ(four_nodes.dimension(0).fabric, LinkFabric::kInfiniband);
  EXPECT_DOUBLE_EQ(four_nodes.dimension(0).peak_bytes_per_second_per_direction,
                   h100.proto().interconnect().scale_out_bytes_per_second_per_chip());
  EXPECT_DOUBLE_EQ(four_nodes.dimension(0).bytes_per_second_per_direction,
                   h100.proto().interconnect().scale_out_bytes_per_second_per_chip() *
                       h100.proto().efficiency().infiniband_fraction_of_peak());
  EXPECT_EQ(four_nodes.dimension(1).size, 8);
  EXPECT_EQ(four_nodes.slice_shape(), "4x8");
  // GPU 11 is local rank 3 of node 1.
  EXPECT_THAT(four_nodes.Coordinates(11), ElementsAre(1, 3));
  EXPECT_EQ(MustTopology(h100, "2x4").num_devices(), 8);
  EXPECT_EQ(MustTopology(MustLoadChip("gpu_gb200"), "144").dimension(1).size, 72);
}

TEST(Topology, EmptyShapeIsTheDefaultSlice) {
  EXPECT_EQ(MustTopology(MustLoadChip("tpu_v5p"), "").slice_shape(), "4x4x4");
  EXPECT_EQ(MustTopology(MustLoadChip("gpu_h100"), "").num_devices(), 8);
}

TEST(Topology, SlicesThatDoNotFitAreClearErrors) {
  const Chip v7x = MustLoadChip("tpu_v7x");
  EXPECT_THAT(Topology::Create(v7x, "4x8"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("expected 3 sizes (axes x, y, z; e.g. 4x4x4); got '4x8'")));
  EXPECT_THAT(Topology::Create(v7x, "4x4x6"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("expected axis z of at most 4 chips or a multiple of 4; got 6")));
  // 144 cubes of 64 chips = 9216 is the pod.
  EXPECT_THAT(Topology::Create(v7x, "16x32x32"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("expected at most 9216 chips (one ICI domain); got 16x32x32")));
  EXPECT_THAT(Topology::Create(MustLoadChip("tpu_v5e"), "32x8"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("expected axis x of at most 16 chips; got 32")));
  EXPECT_THAT(Topology::Create(v7x, "4x0x4"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("expected positive sizes joined by 'x'")));
  EXPECT_THAT(Topology::Create(v7x, "4x4x"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("got '4x4x'")));
  const Chip h100 = MustLoadChip("gpu_h100");
  EXPECT_THAT(Topology::Create(h100, "12"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("expected at most 8 GPUs (one NVLink domain) or a multiple of 8; "
                                 "got 12")));
  EXPECT_THAT(Topology::Create(h100, "2x16"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("expected at most 8 GPUs per NVLink domain; got 2x16")));
}

TEST(Topology, DevicesPerChipCanBeOverridden) {
  // Treating each v7x chip as one device (as if its two cores were one) removes "core".
  const Topology t = MustTopology(MustLoadChip("tpu_v7x"), "4x4x4", /*devices_per_chip=*/1);
  EXPECT_EQ(t.num_devices(), 64);
  EXPECT_EQ(t.rank(), 3);
}

TEST(GroupLayout, AxisOfATorusIsAClosedRing) {
  const Topology t = MustTopology(MustLoadChip("tpu_v5p"), "4x4x4");
  // x = 1, z = 2, y = 0..3: ids (1*4 + y)*4 + 2 = 18, 22, 26, 30.
  PERFSIM_ASSERT_OK_AND_ASSIGN(GroupLayout g, AnalyzeGroup(t, {18, 22, 26, 30}));
  EXPECT_TRUE(g.regular);
  EXPECT_THAT(g.spans, ElementsAre(DimensionSpan{1, 4, 1, true}));
}

TEST(GroupLayout, StridedAndPartialGroups) {
  const Topology t = MustTopology(MustLoadChip("tpu_v5p"), "4x4x8");
  // z positions 0, 2, 4, 6 go all the way round the ring of 8 with stride 2: a closed ring.
  PERFSIM_ASSERT_OK_AND_ASSIGN(GroupLayout strided, AnalyzeGroup(t, {0, 2, 4, 6}));
  EXPECT_THAT(strided.spans, ElementsAre(DimensionSpan{2, 4, 2, true}));
  // z positions 0..3: half the ring, an open line.
  PERFSIM_ASSERT_OK_AND_ASSIGN(GroupLayout half, AnalyzeGroup(t, {0, 1, 2, 3}));
  EXPECT_THAT(half.spans, ElementsAre(DimensionSpan{2, 4, 1, false}));
  // z positions 6, 7, 0, 1 cross the wrap link: still an open line of 4.
  PERFSIM_ASSERT_OK_AND_ASSIGN(GroupLayout across, AnalyzeGroup(t, {6, 7, 0, 1}));
  EXPECT_THAT(across.spans, ElementsAre(DimensionSpan{2, 4, 1, false}));
  // x = 0..1 by z = 0..1: a 2x2 product; x of size 4 wraps but 2 positions do not close it.
  PERFSIM_ASSERT_OK_AND_ASSIGN(GroupLayout square, AnalyzeGroup(t, {0, 1, 32, 33}));
  EXPECT_TRUE(square.regular);
  EXPECT_THAT(square.spans,
              ElementsAre(DimensionSpan{0, 2, 1, false}, DimensionSpan{2, 2, 1, false}));
  // Not a product (a diagonal) and not evenly spaced: irregular.
  PERFSIM_ASSERT_OK_AND_ASSIGN(GroupLayout diagonal, AnalyzeGroup(t, {0, 33}));
  EXPECT_FALSE(diagonal.regular);
  PERFSIM_ASSERT_OK_AND_ASSIGN(GroupLayout uneven, AnalyzeGroup(t, {0, 1, 3}));
  EXPECT_FALSE(uneven.regular);
}

TEST(GroupLayout, BadGroupsAreErrors) {
  const Topology t = MustTopology(MustLoadChip("tpu_v5p"), "4x4x4");
  EXPECT_THAT(AnalyzeGroup(t, {}), StatusIs(absl::StatusCode::kInvalidArgument,
                                            HasSubstr("expected at least one device")));
  EXPECT_THAT(AnalyzeGroup(t, {0, 64}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("expected device ids in [0, 64) of tpu_v5p 4x4x4; got 64")));
  EXPECT_THAT(AnalyzeGroup(t, {3, 3}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("expected distinct devices; got 3 twice")));
}

}  // namespace
}  // namespace perfsim
