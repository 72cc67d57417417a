// Logical mesh axes on physical dimensions (sim/comm/mesh.h).
#include "sim/comm/mesh.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/util/status_matchers.h"
#include "tests/comm/comm_test_util.h"

namespace perfsim {
namespace {

using ::perfsim::testing::MustLoadChip;
using ::perfsim::testing::MustTopology;
using ::perfsim::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(Mesh, ParsesAxesWithOneStar) {
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::vector<MeshAxis> axes, ParseMeshAxes("data=*,ep=64,tp=4"));
  ASSERT_EQ(axes.size(), 3u);
  EXPECT_EQ(axes[0].name, "data");
  EXPECT_EQ(axes[0].size, 0);
  EXPECT_EQ(axes[1].size, 64);
  EXPECT_THAT(ParseMeshAxes("ep=64,,tp=4"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("expected NAME=SIZE or NAME=* joined by ','")));
  EXPECT_THAT(ParseMeshAxes("ep=0"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("got 'ep=0'")));
  EXPECT_THAT(ParseMeshAxes("ep=4,ep=2"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("got 'ep' twice")));
}

TEST(Mesh, DefaultAssignmentTakesDimensionsMajorToMinor) {
  // v7x 4x8x8 with 2 devices per chip: x 4, y 8, z 8, core 2 = 512 devices.
  // data=2 takes the major half of x; ep=64 the rest of x (2), all of y (8) and the major 4 of
  // z; tp=4 the minor 2 of z and both cores.
  const Topology t = MustTopology(MustLoadChip("tpu_v7x"), "4x8x8");
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::vector<MeshAxis> axes, ParseMeshAxes("data=*,ep=64,tp=4"));
  PERFSIM_ASSERT_OK_AND_ASSIGN(Mesh mesh, Mesh::Create(t, axes));
  EXPECT_EQ(mesh.axes()[0].size, 2);
  EXPECT_EQ(mesh.ToString(), "data=2 [x:2/2] ep=64 [x:2 y:8 z:4/2] tp=4 [z:2 core:2]");

  const int64_t tp = mesh.FindAxis("tp");
  const int64_t ep = mesh.FindAxis("ep");
  const auto tp_groups = mesh.Groups(tp);
  EXPECT_EQ(tp_groups.size(), 128u);
  EXPECT_THAT(tp_groups[0], ElementsAre(0, 1, 2, 3));
  EXPECT_THAT(tp_groups[1], ElementsAre(4, 5, 6, 7));

  // The row-major mesh index is the device id.
  for (int64_t d = 0; d < t.num_devices(); d += 29) {
    const std::vector<int64_t> c = mesh.MeshCoordinates(d);
    EXPECT_EQ((c[0] * 64 + c[1]) * 4 + c[2], d);
    EXPECT_EQ(mesh.DeviceAt(c), d);
  }

  // ep of device 0: x in {0,1} (an open line of 2 on the wrapped x of 4), y all 8 (a closed
  // ring), z in {0,2,4,6} (a closed ring of 4 with stride 2).
  const GroupLayout layout = mesh.AxisLayout({ep});
  EXPECT_TRUE(layout.regular);
  EXPECT_THAT(layout.spans, ElementsAre(DimensionSpan{0, 2, 1, false}, DimensionSpan{1, 8, 1, true},
                                        DimensionSpan{2, 4, 2, true}));
  EXPECT_THAT(mesh.AxisLayout({tp}).spans,
              ElementsAre(DimensionSpan{2, 2, 1, false}, DimensionSpan{3, 2, 1, false}));
  // Both axes at once: 256 devices per group, 2 groups.
  EXPECT_EQ(mesh.Groups({ep, tp}).size(), 2u);
  EXPECT_EQ(mesh.GroupOf({ep, tp}, 0).size(), 256u);
}

TEST(Mesh, ExplicitAssignmentPutsAnAxisOnAMajorDimension) {
  // v5p 4x4x4: tp along x (the outermost dimension), ep over y and z.
  const Topology t = MustTopology(MustLoadChip("tpu_v5p"), "4x4x4");
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::vector<MeshAxis> axes, ParseMeshAxes("ep=16,tp=4"));
  PERFSIM_ASSERT_OK_AND_ASSIGN(
      Mesh mesh, Mesh::Create(t, axes, {{"tp", {{"x", 4}}}, {"ep", {{"y", 4}, {"z", 4}}}}));
  // tp group of device 0: x = 0..3 at y = z = 0: ids x*16.
  EXPECT_THAT(mesh.GroupOf({mesh.FindAxis("tp")}, 0), ElementsAre(0, 16, 32, 48));
  EXPECT_THAT(mesh.AxisLayout({mesh.FindAxis("tp")}).spans,
              ElementsAre(DimensionSpan{0, 4, 1, true}));
  EXPECT_EQ(mesh.ToString(), "ep=16 [y:4 z:4] tp=4 [x:4]");
}

TEST(Mesh, ExplicitAssignmentCanInterleaveOneDimension) {
  // x of 8 shared: a listed first is the major part, so a's values are 2 positions apart.
  const Topology t = MustTopology(MustLoadChip("tpu_v5p"), "8x4x4");
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::vector<MeshAxis> axes, ParseMeshAxes("a=4,b=32"));
  PERFSIM_ASSERT_OK_AND_ASSIGN(
      Mesh mesh, Mesh::Create(t, axes, {{"a", {{"x", 4}}}, {"b", {{"x", 2}, {"y", 4}, {"z", 4}}}}));
  EXPECT_THAT(mesh.GroupOf({mesh.FindAxis("a")}, 0), ElementsAre(0, 32, 64, 96));
  EXPECT_THAT(mesh.AxisLayout({mesh.FindAxis("a")}).spans,
              ElementsAre(DimensionSpan{0, 4, 2, true}));
}

TEST(Mesh, SizesThatDoNotFitAreErrors) {
  const Topology t = MustTopology(MustLoadChip("tpu_v5p"), "4x4x4");
  EXPECT_THAT(Mesh::Create(t, {{"ep", 16}, {"tp", 2}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("whose product is the 64 devices of tpu_v5p 4x4x4; got "
                                 "ep=16,tp=2")));
  EXPECT_THAT(Mesh::Create(t, {{"a", 0}, {"b", 0}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("at most one '*'")));
  // 3 GPU nodes of 8: an axis of 2 cannot take part of the 3 nodes.
  const Topology gpus = MustTopology(MustLoadChip("gpu_h100"), "24");
  EXPECT_THAT(Mesh::Create(gpus, {{"dp", 2}, {"ep", 12}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("axis 'dp' of size 2 does not split evenly")));
  EXPECT_THAT(Mesh::Create(t, {{"ep", 16}, {"tp", 4}}, {{"ep", {{"x", 4}, {"y", 4}}}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("expected parts for axis 'tp'; got none")));
  EXPECT_THAT(
      Mesh::Create(t, {{"ep", 16}, {"tp", 4}}, {{"ep", {{"x", 4}, {"y", 4}}}, {"tp", {{"w", 4}}}}),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("got w:4")));
  EXPECT_THAT(
      Mesh::Create(t, {{"ep", 16}, {"tp", 4}}, {{"ep", {{"x", 4}, {"y", 4}}}, {"tp", {{"x", 4}}}}),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("expected the parts of dimension x to multiply to its size 4; "
                         "got 16")));
}

}  // namespace
}  // namespace perfsim
