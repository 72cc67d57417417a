// Shape inference for collectives and their async -start forms.
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/ir/shape_inference.h"
#include "sim/util/status_matchers.h"
#include "tests/ir/test_builder.h"

namespace perfsim {
namespace {

using ::perfsim::testing::HloBuilder;
using ::perfsim::testing::InfersShape;
using ::perfsim::testing::StatusIs;
using ::perfsim::testing::TestModule;
using ::testing::HasSubstr;

MATCHER_P(FailsWith, substring, "") {
  return ::testing::ExplainMatchResult(
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(substring)), arg, result_listener);
}

ReplicaGroups Groups(std::vector<std::vector<int64_t>> groups) {
  ReplicaGroups g;
  g.groups = std::move(groups);
  return g;
}

Instruction* AddCollective(HloBuilder& b, Opcode opcode, absl::string_view shape,
                           std::vector<Instruction*> operands, ReplicaGroups groups,
                           std::optional<std::vector<int64_t>> dims = std::nullopt,
                           Computation* to_apply = nullptr) {
  Instruction* c = b.Add(opcode, shape, std::move(operands));
  c->mutable_attributes()->replica_groups = std::move(groups);
  c->mutable_attributes()->dimensions = std::move(dims);
  c->set_to_apply(to_apply);
  return c;
}

TEST(ShapeInference, AllGatherScalesDimensionByGroupSize) {
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* x = b.Parameter(0, "f32[128,32]");
  // Groups of 10 (iota [3,10]<=[6,5]T(1,0) expanded): 32 * 10 = 320.
  ReplicaGroups iota;
  iota.iota = ReplicaGroups::Iota{3, 10, {6, 5}, {1, 0}};
  iota.groups = ExpandIotaReplicaGroups(*iota.iota);
  EXPECT_THAT(InferShape(*AddCollective(b, Opcode::kAllGather, "f32[128,320]", {x}, iota,
                                        std::vector<int64_t>{1})),
              InfersShape("f32[128,320]"));
  EXPECT_THAT(InferShape(*AddCollective(b, Opcode::kAllGather, "f32[128,64]", {x},
                                        Groups({{0, 1, 2}, {3, 4, 5}}), std::vector<int64_t>{1})),
              InfersShape("f32[128,96]"));
}

TEST(ShapeInference, AllGatherWithUnknownGroupAcceptsWholeMultiples) {
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* x = b.Parameter(0, "f32[128,32]");
  // replica_groups={} and no replica_count in the module: the group size is unknown.
  EXPECT_THAT(InferShape(*AddCollective(b, Opcode::kAllGather, "f32[128,128]", {x}, Groups({}),
                                        std::vector<int64_t>{1})),
              InfersShape("f32[128,128]"));
  // 33 is not a multiple of 32, so the inferred shape (factor 1) differs from the declaration.
  EXPECT_THAT(InferShape(*AddCollective(b, Opcode::kAllGather, "f32[128,33]", {x}, Groups({}),
                                        std::vector<int64_t>{1})),
              InfersShape("f32[128,32]"));
}

TEST(ShapeInference, EmptyReplicaGroupsUseModuleReplicaCount) {
  TestModule m;
  m.module().AddHeaderAttribute("replica_count", "4");
  HloBuilder b = m.Entry();
  Instruction* x = b.Parameter(0, "f32[8]");
  EXPECT_THAT(InferShape(*AddCollective(b, Opcode::kAllGather, "f32[64]", {x}, Groups({}),
                                        std::vector<int64_t>{0})),
              InfersShape("f32[32]"));
}

TEST(ShapeInference, CollectiveRejectsUnequalReplicaGroups) {
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* x = b.Parameter(0, "f32[8]");
  EXPECT_THAT(InferShape(*AddCollective(b, Opcode::kAllGather, "f32[16]", {x},
                                        Groups({{0, 1}, {2}}), std::vector<int64_t>{0})),
              FailsWith("expected non-empty replica groups of equal size 2; got a group of 1"));
  EXPECT_THAT(InferShape(*AddCollective(b, Opcode::kAllGather, "f32[16]", {x},
                                        Groups({{0, 1}, {1, 2}}), std::vector<int64_t>{0})),
              FailsWith("expected distinct non-negative device ids in replica_groups; got 1"));
}

TEST(ShapeInference, AllGatherStartTupleOperands) {
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* x = b.Parameter(0, "f32[1024]");
  Instruction* y = b.Parameter(1, "f32[512]");
  Instruction* start =
      AddCollective(b, Opcode::kAllGatherStart, "((f32[1024], f32[512]), (f32[4096], f32[2048]))",
                    {x, y}, Groups({{0, 1, 2, 3}}), std::vector<int64_t>{0});
  EXPECT_THAT(InferShape(*start), InfersShape("((f32[1024], f32[512]), (f32[4096], f32[2048]))"));
  EXPECT_THAT(InferShape(*b.Add(Opcode::kAllGatherDone, "(f32[4096], f32[2048])", {start})),
              InfersShape("(f32[4096], f32[2048])"));
  Instruction* single = AddCollective(b, Opcode::kAllGatherStart, "(f32[1024], f32[2048])", {x},
                                      Groups({{0, 1}}), std::vector<int64_t>{0});
  EXPECT_THAT(InferShape(*single), InfersShape("(f32[1024], f32[2048])"));
}

TEST(ShapeInference, AllReduceTupleOperandsAndStartDone) {
  TestModule m;
  Computation* sum = m.ScalarBinary("sum", "f32");
  HloBuilder b = m.Entry();
  Instruction* x = b.Parameter(0, "f32[2,2]");
  Instruction* y = b.Parameter(1, "f32[3]");
  EXPECT_THAT(InferShape(*AddCollective(b, Opcode::kAllReduce, "(f32[2,2], f32[3])", {x, y},
                                        Groups({{0, 1}}), std::nullopt, sum)),
              InfersShape("(f32[2,2], f32[3])"));
  Instruction* start =
      AddCollective(b, Opcode::kAllReduceStart, "f32[2,2]", {x}, Groups({}), std::nullopt, sum);
  EXPECT_THAT(InferShape(*start), InfersShape("f32[2,2]"));
  EXPECT_THAT(InferShape(*b.Add(Opcode::kAllReduceDone, "f32[2,2]", {start})),
              InfersShape("f32[2,2]"));
}

TEST(ShapeInference, AllReduceRejectsReducerOfOtherType) {
  TestModule m;
  Computation* sum = m.ScalarBinary("sum", "s32");
  HloBuilder b = m.Entry();
  Instruction* x = b.Parameter(0, "f32[8]");
  EXPECT_THAT(InferShape(*AddCollective(b, Opcode::kAllReduce, "f32[8]", {x}, Groups({}),
                                        std::nullopt, sum)),
              FailsWith("expected to_apply computation sum taking (f32[], f32[])"));
}

TEST(ShapeInference, ReduceScatterDividesDimension) {
  TestModule m;
  Computation* add = m.ScalarBinary("add", "f32");
  HloBuilder b = m.Entry();
  Instruction* x = b.Parameter(0, "f32[8]");
  EXPECT_THAT(InferShape(*AddCollective(b, Opcode::kReduceScatter, "f32[4]", {x}, Groups({{0, 1}}),
                                        std::vector<int64_t>{0}, add)),
              InfersShape("f32[4]"));
  EXPECT_THAT(InferShape(*AddCollective(b, Opcode::kReduceScatter, "f32[2]", {x},
                                        Groups({{0, 1, 2}}), std::vector<int64_t>{0}, add)),
              FailsWith("expected dimension 0 of f32[8] divisible by the group size 3; got 8"));
}

TEST(ShapeInference, ReduceScatterWithUnknownGroupAcceptsWholeDivisors) {
  TestModule m;
  Computation* add = m.ScalarBinary("add", "u32");
  HloBuilder b = m.Entry();
  Instruction* x = b.Parameter(0, "u32[8]");
  Instruction* empty = b.Parameter(1, "u32[0]");
  // replica_groups={} without a replica_count: 8 -> 2 means a group of 4.
  EXPECT_THAT(InferShape(*AddCollective(b, Opcode::kReduceScatter, "u32[2]", {x}, Groups({}),
                                        std::vector<int64_t>{0}, add)),
              InfersShape("u32[2]"));
  // 3 does not divide 8: no group size explains it, and the operand shape comes back.
  EXPECT_THAT(InferShape(*AddCollective(b, Opcode::kReduceScatter, "u32[3]", {x}, Groups({}),
                                        std::vector<int64_t>{0}, add)),
              InfersShape("u32[8]"));
  EXPECT_THAT(InferShape(*AddCollective(b, Opcode::kReduceScatter, "u32[4]", {empty}, Groups({}),
                                        std::vector<int64_t>{0}, add)),
              InfersShape("u32[0]"));
}

TEST(ShapeInference, AllToAllArrayAndTupleForms) {
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* x = b.Parameter(0, "f32[128,32]");
  // Tuple form: no split dimension, a tuple result even for one operand.
  EXPECT_THAT(InferShape(*AddCollective(b, Opcode::kAllToAll, "(f32[128,32])", {x}, Groups({}))),
              InfersShape("(f32[128,32])"));
  EXPECT_THAT(InferShape(*AddCollective(b, Opcode::kAllToAll, "f32[128,32]", {x},
                                        Groups({{0, 1, 2, 3}}), std::vector<int64_t>{0})),
              InfersShape("f32[128,32]"));
  EXPECT_THAT(InferShape(*AddCollective(b, Opcode::kAllToAll, "f32[128,32]", {x},
                                        Groups({{0, 1, 2}}), std::vector<int64_t>{1})),
              FailsWith("expected split dimension 1 of f32[128,32] divisible by the group size "
                        "3; got 32"));
}

Instruction* AddRaggedAllToAll(HloBuilder& b, absl::string_view shape, absl::string_view input,
                               absl::string_view output, absl::string_view offsets,
                               absl::string_view sizes, ReplicaGroups groups) {
  Instruction* in = b.Add(Opcode::kParameter, input);
  Instruction* out = b.Add(Opcode::kParameter, output);
  Instruction* in_off = b.Add(Opcode::kParameter, offsets);
  Instruction* send = b.Add(Opcode::kParameter, sizes);
  Instruction* out_off = b.Add(Opcode::kParameter, offsets);
  Instruction* recv = b.Add(Opcode::kParameter, sizes);
  Instruction* ra2a = b.Add(Opcode::kRaggedAllToAll, shape, {in, out, in_off, send, out_off, recv});
  ra2a->mutable_attributes()->replica_groups = std::move(groups);
  return ra2a;
}

TEST(ShapeInference, RaggedAllToAllResultIsOutputShape) {
  TestModule m;
  HloBuilder b = m.Entry();
  // Receive buffer [R=24, D] differs from the send buffer [16, D]: the result is the buffer.
  EXPECT_THAT(InferShape(*AddRaggedAllToAll(b, "bf16[24,5,32]", "bf16[16,5,32]", "bf16[24,5,32]",
                                            "s64[4]", "s64[4]", Groups({{0, 1}}))),
              InfersShape("bf16[24,5,32]"));
}

TEST(ShapeInference, RaggedAllToAllRejectsBadOffsetsAndRows) {
  TestModule m;
  HloBuilder b = m.Entry();
  EXPECT_THAT(InferShape(*AddRaggedAllToAll(b, "f32[4]", "f32[4]", "f32[4]", "s32[2]", "s32[3]",
                                            Groups({{0, 1}}))),
              FailsWith("expected send_sizes of the shape of input_offsets s32[2]; got s32[3]"));
  EXPECT_THAT(InferShape(*AddRaggedAllToAll(b, "f32[4]", "f32[4]", "f32[4]", "f32[2]", "s32[2]",
                                            Groups({{0, 1}}))),
              FailsWith("expected an integer array of rank 1 or 2 as input_offsets; got f32[2]"));
  EXPECT_THAT(InferShape(*AddRaggedAllToAll(b, "f32[4,8]", "f32[4,4]", "f32[4,8]", "s32[2]",
                                            "s32[2]", Groups({{0, 1}}))),
              FailsWith("expected an output of the element type and row shape of input f32[4,4]; "
                        "got f32[4,8]"));
  EXPECT_THAT(InferShape(*AddRaggedAllToAll(b, "f32[4]", "f32[4]", "f32[4]", "s32[3]", "s32[3]",
                                            Groups({{0, 1}}))),
              FailsWith("expected offset and size vectors whose length is a multiple of the group "
                        "size 2; got 3"));
}

// hlo_verifier_test__063 of XLA's suite: offsets and sizes of rank 2, all four alike.
TEST(ShapeInference, RaggedAllToAllAcceptsRank2OffsetsAndSizes) {
  TestModule m;
  HloBuilder b = m.Entry();
  EXPECT_THAT(InferShape(*AddRaggedAllToAll(b, "bf16[4,16]", "bf16[4,16]", "bf16[4,16]",
                                            "s32[2,3]", "s32[2,3]", Groups({{0, 1}}))),
              InfersShape("bf16[4,16]"));
  EXPECT_THAT(InferShape(*AddRaggedAllToAll(b, "bf16[4,16]", "bf16[4,16]", "bf16[4,16]",
                                            "s32[2,3]", "s32[3,2]", Groups({{0, 1}}))),
              FailsWith("expected send_sizes of the shape of input_offsets s32[2,3]; got s32[3,2]"));
}

// A module of 2 replicas x 4 partitions. The group size of each mode (XLA's GetSubgroupSize):
//   all-gather, channel_id, no use_global_device_ids: cross-replica-and-partition, the listed
//     group {0,1} (2 replicas) x 4 partitions = 8: f32[8] -> f32[64];
//   the same with use_global_device_ids=true: flattened ids, groups of 4: f32[8] -> f32[32];
//   no channel_id: cross-replica, groups of the listed 2 replicas: f32[8] -> f32[16];
//   all-to-all with a channel_id: cross-partition, {0,1,2,3} are partitions: split by 4.
TEST(ShapeInference, CollectiveGroupSizeFollowsXlaGroupMode) {
  TestModule m;
  m.module().AddHeaderAttribute("replica_count", "2");
  m.module().AddHeaderAttribute("num_partitions", "4");
  HloBuilder b = m.Entry();
  Instruction* x = b.Parameter(0, "f32[8]");
  Instruction* replica_and_partition = AddCollective(b, Opcode::kAllGather, "f32[64]", {x},
                                                     Groups({{0, 1}}), std::vector<int64_t>{0});
  replica_and_partition->mutable_attributes()->channel_id = 1;
  EXPECT_THAT(InferShape(*replica_and_partition), InfersShape("f32[64]"));

  Instruction* flattened = AddCollective(b, Opcode::kAllGather, "f32[32]", {x},
                                         Groups({{0, 1, 2, 3}, {4, 5, 6, 7}}),
                                         std::vector<int64_t>{0});
  flattened->mutable_attributes()->channel_id = 2;
  flattened->mutable_attributes()->use_global_device_ids = true;
  EXPECT_THAT(InferShape(*flattened), InfersShape("f32[32]"));

  EXPECT_THAT(InferShape(*AddCollective(b, Opcode::kAllGather, "f32[16]", {x}, Groups({{0, 1}}),
                                        std::vector<int64_t>{0})),
              InfersShape("f32[16]"));

  Instruction* all_to_all = AddCollective(b, Opcode::kAllToAll, "f32[8]", {x},
                                          Groups({{0, 1, 2, 3}}), std::vector<int64_t>{0});
  all_to_all->mutable_attributes()->channel_id = 3;
  EXPECT_THAT(InferShape(*all_to_all), InfersShape("f32[8]"));
  Instruction* y = b.Parameter(1, "f32[6]");
  Instruction* uneven = AddCollective(b, Opcode::kAllToAll, "f32[6]", {y},
                                      Groups({{0, 1, 2, 3}}), std::vector<int64_t>{0});
  uneven->mutable_attributes()->channel_id = 4;
  EXPECT_THAT(InferShape(*uneven),
              FailsWith("split dimension 0 of f32[6] divisible by the group size 4; got 6"));
}

// XLA's CheckReplicaGroups: the ids named are 0..n-1 with n the mode's count (here 2 replicas
// in cross-replica mode); flattened ids need explicit groups; use_global_device_ids needs a
// channel_id; all-reduce alone may have groups of different sizes.
TEST(ShapeInference, CollectiveChecksReplicaGroupsAsXlaDoes) {
  TestModule m;
  m.module().AddHeaderAttribute("replica_count", "2");
  m.module().AddHeaderAttribute("num_partitions", "2");
  Computation* add = m.ScalarBinary("add", "f32");
  HloBuilder b = m.Entry();
  Instruction* x = b.Parameter(0, "f32[8]");
  EXPECT_THAT(InferShape(*AddCollective(b, Opcode::kAllGather, "f32[32]", {x},
                                        Groups({{0, 1, 2, 3}}), std::vector<int64_t>{0})),
              FailsWith("expected replica_groups of 2 ids in cross_replica mode; got 4"));
  EXPECT_THAT(InferShape(*AddCollective(b, Opcode::kAllGather, "f32[16]", {x}, Groups({{0, 2}}),
                                        std::vector<int64_t>{0})),
              FailsWith("expected replica_groups naming every id 0..1; got 1 missing"));
  Instruction* flattened =
      AddCollective(b, Opcode::kAllReduce, "f32[8]", {x}, Groups({}), std::nullopt, add);
  flattened->mutable_attributes()->channel_id = 1;
  flattened->mutable_attributes()->use_global_device_ids = true;
  EXPECT_THAT(InferShape(*flattened), FailsWith("explicit replica_groups with "
                                                "use_global_device_ids=true (flattened ids)"));
  Instruction* no_channel =
      AddCollective(b, Opcode::kAllReduce, "f32[8]", {x}, Groups({{0, 1}}), std::nullopt, add);
  no_channel->mutable_attributes()->use_global_device_ids = true;
  EXPECT_THAT(InferShape(*no_channel),
              FailsWith("expected a channel_id with use_global_device_ids=true; got none"));
  Instruction* uneven = AddCollective(b, Opcode::kAllReduce, "f32[8]", {x},
                                      Groups({{0}, {1, 2, 3}}), std::nullopt, add);
  uneven->mutable_attributes()->channel_id = 2;
  uneven->mutable_attributes()->use_global_device_ids = true;
  EXPECT_THAT(InferShape(*uneven), InfersShape("f32[8]"));
}

TEST(ShapeInference, CollectivePermuteStartWithContexts) {
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* x = b.Parameter(0, "f32[16,8]");
  Instruction* start = b.Add(Opcode::kCollectivePermuteStart, "(f32[16,8], f32[16,8])", {x});
  start->mutable_attributes()->source_target_pairs =
      std::vector<std::pair<int64_t, int64_t>>{{0, 3}, {1, 0}, {2, 1}, {3, 2}};
  EXPECT_THAT(InferShape(*start), InfersShape("(f32[16,8], f32[16,8])"));
  Instruction* with_context =
      b.Add(Opcode::kCollectivePermuteStart, "(f32[16,8], f32[16,8], u32[], u32[])", {x});
  EXPECT_THAT(InferShape(*with_context), InfersShape("(f32[16,8], f32[16,8], u32[], u32[])"));
  EXPECT_THAT(InferShape(*b.Add(Opcode::kCollectivePermuteDone, "f32[16,8]", {start})),
              InfersShape("f32[16,8]"));
}

TEST(ShapeInference, CollectivePermuteRejectsRepeatedTarget) {
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* x = b.Parameter(0, "f32[4]");
  Instruction* cp = b.Add(Opcode::kCollectivePermute, "f32[4]", {x});
  cp->mutable_attributes()->source_target_pairs =
      std::vector<std::pair<int64_t, int64_t>>{{0, 1}, {2, 1}};
  EXPECT_THAT(InferShape(*cp),
              FailsWith("expected each target at most once in source_target_pairs; got 1 2 times"));
}

TEST(ShapeInference, AsyncWrappedReduceScatter) {
  TestModule m;
  Computation* add = m.ScalarBinary("add", "f32");
  HloBuilder wrapped = m.NewComputation("async_computation");
  Instruction* p0 = wrapped.Parameter(0, "f32[4096]");
  Instruction* p1 = wrapped.Parameter(1, "f32[2048]");
  AddCollective(wrapped, Opcode::kReduceScatter, "(f32[1024], f32[512])", {p0, p1},
                Groups({{0, 1, 2, 3}}), std::vector<int64_t>{0}, add);
  HloBuilder b = m.Entry();
  Instruction* x = b.Parameter(0, "f32[4096]");
  Instruction* y = b.Parameter(1, "f32[2048]");
  Instruction* start =
      b.Add(Opcode::kAsyncStart, "((f32[4096], f32[2048]), (f32[1024], f32[512]))", {x, y});
  start->set_calls({wrapped.computation()});
  EXPECT_THAT(InferShape(*start), InfersShape("((f32[4096], f32[2048]), (f32[1024], f32[512]))"));
  EXPECT_THAT(InferShape(*b.Add(Opcode::kAsyncDone, "(f32[1024], f32[512])", {start})),
              InfersShape("(f32[1024], f32[512])"));
}

}  // namespace
}  // namespace perfsim
