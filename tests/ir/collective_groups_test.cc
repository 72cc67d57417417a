// XLA's collective group modes and participating devices (sim/ir/collective_groups.h), with
// the groups derived by hand from XLA's definitions (collective_ops_utils_test.cc uses the same
// 3 replicas x 2 partitions setups).
#include "sim/ir/collective_groups.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/ir/hlo_parser.h"
#include "sim/ir/hlo_printer.h"
#include "sim/util/status_matchers.h"

namespace perfsim {
namespace {

using ::perfsim::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Groups = std::vector<std::vector<int64_t>>;

TEST(CollectiveGroups, ModeFromChannelAndGlobalIds) {
  EXPECT_EQ(GroupModeFor(false, std::nullopt).value(), CollectiveOpGroupMode::kCrossReplica);
  EXPECT_EQ(GroupModeFor(false, false).value(), CollectiveOpGroupMode::kCrossReplica);
  EXPECT_THAT(GroupModeFor(false, true).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("channel_id")));
  EXPECT_EQ(GroupModeFor(true, std::nullopt).value(), CollectiveOpGroupMode::kCrossPartition);
  EXPECT_EQ(GroupModeFor(true, false).value(),
            CollectiveOpGroupMode::kCrossReplicaAndPartition);
  EXPECT_EQ(GroupModeFor(true, true).value(), CollectiveOpGroupMode::kFlattenedId);
  EXPECT_EQ(CollectiveOpGroupModeName(CollectiveOpGroupMode::kCrossReplicaAndPartition),
            "cross_replica_and_partition");
}

TEST(CollectiveGroups, OnlyReduceAndGatherFamiliesCarryGlobalIds) {
  EXPECT_TRUE(CarriesUseGlobalDeviceIds(Opcode::kAllGather));
  EXPECT_TRUE(CarriesUseGlobalDeviceIds(Opcode::kAllGatherStart));
  EXPECT_TRUE(CarriesUseGlobalDeviceIds(Opcode::kAllReduce));
  EXPECT_TRUE(CarriesUseGlobalDeviceIds(Opcode::kAllReduceStart));
  EXPECT_TRUE(CarriesUseGlobalDeviceIds(Opcode::kReduceScatter));
  EXPECT_FALSE(CarriesUseGlobalDeviceIds(Opcode::kAllToAll));
  EXPECT_FALSE(CarriesUseGlobalDeviceIds(Opcode::kRaggedAllToAll));
  EXPECT_FALSE(CarriesUseGlobalDeviceIds(Opcode::kCollectivePermute));
  EXPECT_FALSE(CarriesUseGlobalDeviceIds(Opcode::kCollectiveBroadcast));
}

// 3 replicas x 2 partitions: device = replica * 2 + partition, so r0 = {0,1}, r1 = {2,3},
// r2 = {4,5} and p0 = {0,2,4}, p1 = {1,3,5}.
TEST(CollectiveGroups, CrossReplicaGroupsPerPartition) {
  // {{0},{1,2}} of replicas, once per partition: {r0p0}, {r0p1}, {r1p0,r2p0}, {r1p1,r2p1}.
  EXPECT_EQ(ParticipatingDeviceGroups({{0}, {1, 2}}, CollectiveOpGroupMode::kCrossReplica, 3, 2)
                .value(),
            (Groups{{0}, {1}, {2, 4}, {3, 5}}));
  // Empty: all replicas of each partition.
  EXPECT_EQ(ParticipatingDeviceGroups({}, CollectiveOpGroupMode::kCrossReplica, 3, 2).value(),
            (Groups{{0, 2, 4}, {1, 3, 5}}));
  EXPECT_THAT(ParticipatingDeviceGroups({{0, 3}}, CollectiveOpGroupMode::kCrossReplica, 3, 2)
                  .status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("expected replica ids in [0, 3); got 3")));
}

TEST(CollectiveGroups, CrossPartitionGroupsPerReplica) {
  // 3 replicas x 4 partitions (device = r * 4 + p), partition groups {0,1},{2,3}: per replica
  // r, {4r, 4r+1} and {4r+2, 4r+3}.
  EXPECT_EQ(
      ParticipatingDeviceGroups({{0, 1}, {2, 3}}, CollectiveOpGroupMode::kCrossPartition, 3, 4)
          .value(),
      (Groups{{0, 1}, {4, 5}, {8, 9}, {2, 3}, {6, 7}, {10, 11}}));
  EXPECT_THAT(ParticipatingDeviceGroups({{0, 4}}, CollectiveOpGroupMode::kCrossPartition, 3, 4)
                  .status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("expected partition ids in [0, 4); got 4")));
}

TEST(CollectiveGroups, CrossReplicaAndPartitionSpansEveryPartition) {
  // Replica group {1,2} with 2 partitions: r1p0, r1p1, r2p0, r2p1 = {2,3,4,5}.
  EXPECT_EQ(ParticipatingDeviceGroups({{0}, {1, 2}},
                                      CollectiveOpGroupMode::kCrossReplicaAndPartition, 3, 2)
                .value(),
            (Groups{{0, 1}, {2, 3, 4, 5}}));
  EXPECT_EQ(
      ParticipatingDeviceGroups({}, CollectiveOpGroupMode::kCrossReplicaAndPartition, 3, 2)
          .value(),
      (Groups{{0, 1, 2, 3, 4, 5}}));
  // Group size = listed size x num_partitions.
  EXPECT_EQ(SubgroupSize({{0}, {1, 2}}, CollectiveOpGroupMode::kCrossReplicaAndPartition, 3, 2),
            2);
  EXPECT_EQ(SubgroupSize({{0, 1}, {2}}, CollectiveOpGroupMode::kCrossReplicaAndPartition, 3, 2),
            4);
  EXPECT_EQ(SubgroupSize({}, CollectiveOpGroupMode::kCrossReplicaAndPartition, 3, 2), 6);
}

TEST(CollectiveGroups, FlattenedIdsAreDevicesAndMustBeListed) {
  EXPECT_EQ(ParticipatingDeviceGroups({{0}, {1, 2}, {3, 4, 5}},
                                      CollectiveOpGroupMode::kFlattenedId, 3, 2)
                .value(),
            (Groups{{0}, {1, 2}, {3, 4, 5}}));
  EXPECT_THAT(ParticipatingDeviceGroups({}, CollectiveOpGroupMode::kFlattenedId, 3, 2).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("explicit groups")));
  EXPECT_THAT(
      ParticipatingDeviceGroups({{0, 6}}, CollectiveOpGroupMode::kFlattenedId, 3, 2).status(),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("expected global device ids in [0, 6); got 6")));
  EXPECT_EQ(SubgroupSize({{0, 1, 2}, {3, 4, 5}}, CollectiveOpGroupMode::kFlattenedId, 3, 2), 3);
}

ReplicaGroups::MeshAxes Mesh(std::vector<ReplicaGroups::MeshAxes::Axis> axes,
                             std::vector<ReplicaGroups::MeshAxes::AxisRef> refs) {
  ReplicaGroups::MeshAxes mesh;
  mesh.axes = std::move(axes);
  mesh.group_axes = std::move(refs);
  return mesh;
}

TEST(CollectiveGroups, MeshAxesGroupAlongTheNamedAxes) {
  // mesh['a'=2,'b'=2]: device = 2a + b. {'b'}: devices differing in b, {0,1},{2,3}; {'a'}:
  // {0,2},{1,3} (hlo_parser_test__131's all-reduce uses {'axis_1'}).
  const std::vector<ReplicaGroups::MeshAxes::Axis> ab = {{"a", 2}, {"b", 2}};
  EXPECT_EQ(ExpandMeshAxesReplicaGroups(Mesh(ab, {{1, 0, 0}})).value(), (Groups{{0, 1}, {2, 3}}));
  EXPECT_EQ(ExpandMeshAxesReplicaGroups(Mesh(ab, {{0, 0, 0}})).value(), (Groups{{0, 2}, {1, 3}}));
  // Both axes, written b then a: the group walks them in that order, b major: 0,2,1,3.
  EXPECT_EQ(ExpandMeshAxesReplicaGroups(Mesh(ab, {{1, 0, 0}, {0, 0, 0}})).value(),
            (Groups{{0, 2, 1, 3}}));
  EXPECT_EQ(MeshAxesReplicaGroupsText(Mesh(ab, {{1, 0, 0}})), "mesh['a'=2,'b'=2] {'b'}");
}

TEST(CollectiveGroups, MeshSubAxesSplitTheirAxis) {
  // mesh['x'=8]: 'x':(1)2 splits x as [pre 1, size 2, rest 4] (pre major): device = 4s + r
  // with s the sub-axis; a group varies s: {0,4},{1,5},{2,6},{3,7}.
  const std::vector<ReplicaGroups::MeshAxes::Axis> x = {{"x", 8}};
  EXPECT_EQ(ExpandMeshAxesReplicaGroups(Mesh(x, {{0, 1, 2}})).value(),
            (Groups{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
  // 'x':(2)4: [2, 4] with the 4 minor: device = 4h + s, groups {0,1,2,3},{4,5,6,7}.
  EXPECT_EQ(ExpandMeshAxesReplicaGroups(Mesh(x, {{0, 2, 4}})).value(),
            (Groups{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  // 'x':(1)2 and 'x':(4)2 together: [2, 2, 2] (device = 4a + 2m + c) grouping a and c in the
  // order written, m across groups: m=0 gives {0,1,4,5}, m=1 gives {2,3,6,7}.
  EXPECT_EQ(ExpandMeshAxesReplicaGroups(Mesh(x, {{0, 1, 2}, {0, 4, 2}})).value(),
            (Groups{{0, 1, 4, 5}, {2, 3, 6, 7}}));
  EXPECT_EQ(MeshAxesReplicaGroupsText(Mesh(x, {{0, 1, 2}, {0, 4, 2}})),
            "mesh['x'=8] {'x':(1)2,'x':(4)2}");
  EXPECT_THAT(ExpandMeshAxesReplicaGroups(Mesh(x, {{0, 1, 3}})).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'x':(1)3")));
  EXPECT_THAT(ExpandMeshAxesReplicaGroups(Mesh(x, {{0, 0, 0}, {0, 1, 2}})).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("do not overlap")));
}

// The text form XLA prints after SPMD partitioning parses into its groups, prints back the
// same, and is checked like any replica groups: mesh['d'=2,'m'=4] {'m'} gives device = 4d + m
// grouped over m, {0,1,2,3},{4,5,6,7}: an all-gather of f32[2] over 4 devices is f32[8].
TEST(CollectiveGroups, MeshAxesReplicaGroupsRoundTripThroughText) {
  constexpr char kHlo[] = R"(HloModule m, replica_count=8

ENTRY e {
  x = f32[2] parameter(0)
  ROOT g = f32[8] all-gather(x), replica_groups=mesh['d'=2,'m'=4] {'m'}, dimensions={0}
})";
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Module> module, ParseHloModule(kHlo));
  const Instruction* g = module->entry()->root();
  ASSERT_TRUE(g->attributes().replica_groups.has_value());
  EXPECT_EQ(g->attributes().replica_groups->groups, (Groups{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  const std::string printed = PrintModule(*module);
  EXPECT_THAT(printed, HasSubstr("replica_groups=mesh['d'=2,'m'=4] {'m'}"));
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Module> again, ParseHloModule(printed));
  EXPECT_EQ(PrintModule(*again), printed);
}

TEST(CollectiveGroups, MeshAxesReplicaGroupErrorsAreLocated) {
  // The unknown axis 'z' is at line 4, column 68.
  constexpr char kHlo[] = R"(HloModule m
ENTRY e {
  x = f32[2] parameter(0)
  ROOT g = f32[8] all-gather(x), replica_groups=mesh['d'=2,'m'=4] {'z'}, dimensions={0}
})";
  EXPECT_THAT(ParseHloModule(kHlo).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("4:68: expected an axis of the mesh; got 'z'")));
}

}  // namespace
}  // namespace perfsim
