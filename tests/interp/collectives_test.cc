// Collectives over virtual devices: data semantics, replica groups (explicit and iota),
// async pairs, ragged-all-to-all with sender-side offsets, determinism and failure modes.
#include <cstring>
#include <limits>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/util/status_matchers.h"
#include "tests/interp/interp_test_util.h"

namespace perfsim {
namespace {

using ::perfsim::testing::F32;
using ::perfsim::testing::RunHlo;
using ::perfsim::testing::S32;
using ::perfsim::testing::S64;
using ::perfsim::testing::StatusIs;
using ::perfsim::testing::Values;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// inputs[d] = {f(d)}.
template <typename F>
std::vector<std::vector<Literal>> PerDevice(int64_t n, F f) {
  std::vector<std::vector<Literal>> inputs(n);
  for (int64_t d = 0; d < n; ++d) inputs[d].push_back(f(d));
  return inputs;
}

InterpreterOptions Devices(int64_t n) {
  InterpreterOptions options;
  options.num_devices = n;
  return options;
}

TEST(InterpCollectives, AllReduceSumsWithinEachGroup) {
  // Device d contributes d + 1: group {0,1} sums 1 + 2 = 3, group {2,3} sums 3 + 4 = 7.
  constexpr char kHlo[] = R"(
HloModule m
add { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT s = f32[] add(a, b) }
ENTRY e {
  x = f32[1] parameter(0)
  ROOT r = f32[1] all-reduce(x), replica_groups={{0,1},{2,3}}, to_apply=add
})";
  PERFSIM_ASSERT_OK_AND_ASSIGN(
      RunResult result,
      RunHlo(kHlo, PerDevice(4, [](int64_t d) { return F32({1}, {d + 1.0}); }), Devices(4)));
  EXPECT_THAT(Values(result.outputs[0][0]), ElementsAre(3));
  EXPECT_THAT(Values(result.outputs[1][0]), ElementsAre(3));
  EXPECT_THAT(Values(result.outputs[2][0]), ElementsAre(7));
  EXPECT_THAT(Values(result.outputs[3][0]), ElementsAre(7));
}

TEST(InterpCollectives, AllGatherConcatenatesInGroupOrder) {
  // The group is written {1,0}, so device 1's block comes first: [10, 11, 0, 1].
  constexpr char kHlo[] = R"(
HloModule m
ENTRY e {
  x = f32[2] parameter(0)
  ROOT g = f32[4] all-gather(x), replica_groups={{1,0}}, dimensions={0}
})";
  PERFSIM_ASSERT_OK_AND_ASSIGN(RunResult result,
                               RunHlo(kHlo,
                                      PerDevice(2,
                                                [](int64_t d) {
                                                  return F32({2}, {10.0 * d, 10.0 * d + 1});
                                                }),
                                      Devices(2)));
  EXPECT_THAT(Values(result.outputs[0][0]), ElementsAre(10, 11, 0, 1));
  EXPECT_THAT(Values(result.outputs[1][0]), ElementsAre(10, 11, 0, 1));
}

TEST(InterpCollectives, ReduceScatterGivesEachMemberItsBlockOfTheSum) {
  // [1,2,3,4] + [10,20,30,40] = [11,22,33,44]; device 0 keeps [11,22], device 1 [33,44].
  constexpr char kHlo[] = R"(
HloModule m
add { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT s = f32[] add(a, b) }
ENTRY e {
  x = f32[4] parameter(0)
  ROOT r = f32[2] reduce-scatter(x), replica_groups={{0,1}}, dimensions={0}, to_apply=add
})";
  PERFSIM_ASSERT_OK_AND_ASSIGN(RunResult result,
                               RunHlo(kHlo,
                                      PerDevice(2,
                                                [](int64_t d) {
                                                  const double s = d == 0 ? 1 : 10;
                                                  return F32({4}, {s, 2 * s, 3 * s, 4 * s});
                                                }),
                                      Devices(2)));
  EXPECT_THAT(Values(result.outputs[0][0]), ElementsAre(11, 22));
  EXPECT_THAT(Values(result.outputs[1][0]), ElementsAre(33, 44));
}

TEST(InterpCollectives, AllToAllExchangesBlocksOfTheSplitDimension) {
  // d0 = [0,1,2,3], d1 = [4,5,6,7]; block j of each goes to device j and received blocks
  // concatenate in sender order: d0 gets [0,1,4,5], d1 gets [2,3,6,7].
  constexpr char kHlo[] = R"(
HloModule m
ENTRY e {
  x = f32[4] parameter(0)
  ROOT r = f32[4] all-to-all(x), replica_groups={{0,1}}, dimensions={0}
})";
  PERFSIM_ASSERT_OK_AND_ASSIGN(
      RunResult result,
      RunHlo(kHlo,
             PerDevice(2,
                       [](int64_t d) {
                         return F32({4}, {4.0 * d, 4.0 * d + 1, 4.0 * d + 2, 4.0 * d + 3});
                       }),
             Devices(2)));
  EXPECT_THAT(Values(result.outputs[0][0]), ElementsAre(0, 1, 4, 5));
  EXPECT_THAT(Values(result.outputs[1][0]), ElementsAre(2, 3, 6, 7));
}

TEST(InterpCollectives, CollectivePermuteSendsAlongPairsAndZeroFillsTheRest) {
  // 0 -> 1 -> 2: device 1 gets 0's value, device 2 gets 1's, device 0 nothing (zeros).
  constexpr char kHlo[] = R"(
HloModule m
ENTRY e {
  x = f32[1] parameter(0)
  ROOT p = f32[1] collective-permute(x), source_target_pairs={{0,1},{1,2}}
})";
  PERFSIM_ASSERT_OK_AND_ASSIGN(
      RunResult result,
      RunHlo(kHlo, PerDevice(3, [](int64_t d) { return F32({1}, {d + 5.0}); }), Devices(3)));
  EXPECT_THAT(Values(result.outputs[0][0]), ElementsAre(0));
  EXPECT_THAT(Values(result.outputs[1][0]), ElementsAre(5));
  EXPECT_THAT(Values(result.outputs[2][0]), ElementsAre(6));
}

constexpr char kRaggedAllToAll[] = R"(
HloModule m
ENTRY e {
  input = f32[4] parameter(0)
  output = f32[5] parameter(1)
  input_offsets = s32[3] parameter(2)
  send_sizes = s32[3] parameter(3)
  output_offsets = s32[3] parameter(4)
  recv_sizes = s32[3] parameter(5)
  ROOT r = f32[5] ragged-all-to-all(input, output, input_offsets, send_sizes, output_offsets, recv_sizes), replica_groups={{0,1,2}}
})";

// Three devices with uneven traffic (rows sent, sender -> receiver):
//   s0: 1 row (100) -> r0, 2 rows (101, 102) -> r1, none -> r2
//   s1: 1 row (200) -> r1, 3 rows (201..203) -> r2
//   s2: 1 row (300) -> r0
// output_offsets are the sender's: where in the *receiver's* output its rows land:
//   s0: r0 at 3, r1 at 0;  s1: r1 at 4, r2 at 1;  s2: r0 at 1.
// Outputs start at -1 and keep that value where nobody writes:
//   r0 = [-1, 300, -1, 100, -1]   (s2's row at 1, s0's at 3)
//   r1 = [101, 102, -1, -1, 200]
//   r2 = [-1, 201, 202, 203, -1]
// Reading output_offsets on the receiver's side instead would put s1's rows for r2 at
// r2.output_offsets[1] = 0 and s2's row for r0 at r0.output_offsets[2] = 0.
std::vector<std::vector<Literal>> RaggedInputs(double r1_from_s0) {
  const std::vector<std::vector<double>> input = {
      {100, 101, 102, 0}, {200, 201, 202, 203}, {300, 0, 0, 0}};
  const std::vector<std::vector<double>> input_offsets = {{0, 1, 3}, {0, 0, 1}, {0, 1, 1}};
  const std::vector<std::vector<double>> send_sizes = {{1, 2, 0}, {0, 1, 3}, {1, 0, 0}};
  const std::vector<std::vector<double>> output_offsets = {{3, 0, 0}, {0, 4, 1}, {1, 0, 0}};
  const std::vector<std::vector<double>> recv_sizes = {{1, 0, 1}, {r1_from_s0, 1, 0}, {0, 3, 0}};
  std::vector<std::vector<Literal>> inputs(3);
  for (int d = 0; d < 3; ++d) {
    inputs[d].push_back(F32({4}, input[d]));
    inputs[d].push_back(F32({5}, {-1, -1, -1, -1, -1}));
    inputs[d].push_back(S32({3}, input_offsets[d]));
    inputs[d].push_back(S32({3}, send_sizes[d]));
    inputs[d].push_back(S32({3}, output_offsets[d]));
    inputs[d].push_back(S32({3}, recv_sizes[d]));
  }
  return inputs;
}

TEST(InterpCollectives, RaggedAllToAllUsesSenderSideOffsetsAndKeepsUnwrittenRows) {
  PERFSIM_ASSERT_OK_AND_ASSIGN(RunResult result,
                               RunHlo(kRaggedAllToAll, RaggedInputs(2), Devices(3)));
  EXPECT_THAT(Values(result.outputs[0][0]), ElementsAre(-1, 300, -1, 100, -1));
  EXPECT_THAT(Values(result.outputs[1][0]), ElementsAre(101, 102, -1, -1, 200));
  EXPECT_THAT(Values(result.outputs[2][0]), ElementsAre(-1, 201, 202, 203, -1));
}

TEST(InterpCollectives, RaggedAllToAllRejectsRecvSizesThatDisagreeWithTheSender) {
  // Device 1 expects 1 row from device 0, which sends 2.
  EXPECT_THAT(RunHlo(kRaggedAllToAll, RaggedInputs(1), Devices(3)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("device 0 -> device 1: expected recv_sizes[0] = 1 to equal the "
                                 "sender's send_sizes[1]; got 2")));
}

// One f32[3] row from each of two devices to each, with s64 offsets: 12-byte rows, 4 of them.
constexpr char kRaggedAllToAllS64[] = R"(
HloModule m
ENTRY e {
  input = f32[4,3] parameter(0)
  output = f32[4,3] parameter(1)
  input_offsets = s64[2] parameter(2)
  send_sizes = s64[2] parameter(3)
  output_offsets = s64[2] parameter(4)
  recv_sizes = s64[2] parameter(5)
  ROOT r = f32[4,3] ragged-all-to-all(input, output, input_offsets, send_sizes, output_offsets, recv_sizes), replica_groups={{0,1}}
})";

std::vector<std::vector<Literal>> OneRowEachWay(int64_t input_offset, int64_t size,
                                                int64_t output_offset) {
  std::vector<std::vector<Literal>> inputs(1);
  inputs[0].push_back(F32({4, 3}, std::vector<double>(12, 1)));
  inputs[0].push_back(F32({4, 3}, std::vector<double>(12, 0)));
  inputs[0].push_back(S64({2}, {input_offset, input_offset}));
  inputs[0].push_back(S64({2}, {size, size}));
  inputs[0].push_back(S64({2}, {output_offset, output_offset}));
  inputs[0].push_back(S64({2}, {size, size}));
  return inputs;
}

constexpr int64_t kS64Max = std::numeric_limits<int64_t>::max();

TEST(InterpCollectives, RaggedAllToAllRefusesOutputOffsetsThatWrapInt64) {
  // 9223372036854775807 + 1 wraps to -2^63, which an unchecked `offset + size > rows` let
  // through: the row was copied to output + (2^63 - 1) * 12 bytes, 12 bytes before the buffer.
  EXPECT_THAT(RunHlo(kRaggedAllToAllS64, OneRowEachWay(0, 1, kS64Max), Devices(2)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr(": output rows output_offsets["),
                             HasSubstr("expected offset + size <= 4 with offset >= 0 and size >= "
                                       "0; got 9223372036854775807 + 1"))));
}

TEST(InterpCollectives, RaggedAllToAllRefusesInputOffsetsThatWrapInt64) {
  // The read side: the row came from 12 bytes before the input (heap bytes in the output).
  EXPECT_THAT(RunHlo(kRaggedAllToAllS64, OneRowEachWay(kS64Max, 1, 0), Devices(2)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr(": input rows input_offsets["),
                             HasSubstr("expected offset + size <= 4 with offset >= 0 and size >= "
                                       "0; got 9223372036854775807 + 1"))));
}

TEST(InterpCollectives, RaggedAllToAllRefusesSizesThatWrapInt64) {
  EXPECT_THAT(
      RunHlo(kRaggedAllToAllS64, OneRowEachWay(1, kS64Max, 0), Devices(2)),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("got 1 + 9223372036854775807")));
}

TEST(InterpCollectives, RaggedAllToAllAtTheLastRowStillCopies) {
  // The bound is inclusive: offset 3 + size 1 = 4 rows is in range on both sides.
  PERFSIM_ASSERT_OK_AND_ASSIGN(RunResult result,
                               RunHlo(kRaggedAllToAllS64, OneRowEachWay(3, 1, 3), Devices(2)));
  EXPECT_THAT(Values(result.outputs[0][0]), ElementsAre(0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1));
}

TEST(InterpCollectives, IotaGroupsAndPartitionIdWithGlobalDeviceIds) {
  // [2,2]<=[2,2]T(1,0) expands to {{0,2},{1,3}}. Each device contributes its partition id:
  // group {0,2} sums 2, group {1,3} sums 4.
  constexpr char kHlo[] = R"(
HloModule m, num_partitions=4
add { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT s = f32[] add(a, b) }
ENTRY e {
  p = u32[] partition-id()
  f = f32[] convert(p)
  ROOT r = f32[] all-reduce(f), channel_id=1, replica_groups=[2,2]<=[2,2]T(1,0), use_global_device_ids=true, to_apply=add
})";
  PERFSIM_ASSERT_OK_AND_ASSIGN(RunResult result,
                               RunHlo(kHlo, std::vector<std::vector<Literal>>(1), Devices(4)));
  EXPECT_EQ(result.outputs[0][0].GetAsDouble(0), 2);
  EXPECT_EQ(result.outputs[1][0].GetAsDouble(0), 4);
  EXPECT_EQ(result.outputs[2][0].GetAsDouble(0), 2);
  EXPECT_EQ(result.outputs[3][0].GetAsDouble(0), 4);
}

TEST(InterpCollectives, CrossReplicaAndCrossPartitionGroupsFollowXlaModes) {
  // 2 replicas x 2 partitions: device d = replica * 2 + partition, contributing d.
  // cr, no channel_id (cross-replica): ids are replica ids within a partition -> devices
  //   {0,2} (sum 2) and {1,3} (sum 4).
  // all, channel_id on an all-reduce without use_global_device_ids
  //   (cross-replica-and-partition): replicas {0,1} in every partition = all four devices,
  //   sum 0+1+2+3 = 6.
  // split, the same mode with groups {{0},{1}}: replica 0's partitions {0,1} (sum 1) and
  //   replica 1's {2,3} (sum 5).
  // bc, channel_id on collective-broadcast (cross-partition): partition ids within a replica,
  //   group {1,0} -> the root is partition 1: devices 0,1 get 1 and devices 2,3 get 3.
  constexpr char kHlo[] = R"(
HloModule m, replica_count=2, num_partitions=2
add { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT s = f32[] add(a, b) }
ENTRY e {
  x = f32[] parameter(0)
  cr = f32[] all-reduce(x), replica_groups={{0,1}}, to_apply=add
  all = f32[] all-reduce(x), channel_id=3, replica_groups={{0,1}}, to_apply=add
  split = f32[] all-reduce(x), channel_id=4, replica_groups={{0},{1}}, to_apply=add
  bc = f32[] collective-broadcast(x), channel_id=5, replica_groups={{1,0}}
  ROOT t = (f32[], f32[], f32[], f32[]) tuple(cr, all, split, bc)
})";
  PERFSIM_ASSERT_OK_AND_ASSIGN(
      RunResult result,
      RunHlo(kHlo, PerDevice(4, [](int64_t d) { return F32({}, {static_cast<double>(d)}); }),
             Devices(4)));
  const double cross_replica[] = {2, 4, 2, 4};
  const double replica_and_partition[] = {6, 6, 6, 6};
  const double split[] = {1, 1, 5, 5};
  const double broadcast[] = {1, 1, 3, 3};
  for (int d = 0; d < 4; ++d) {
    EXPECT_EQ(result.outputs[d][0].GetAsDouble(0), cross_replica[d]) << "device " << d;
    EXPECT_EQ(result.outputs[d][1].GetAsDouble(0), replica_and_partition[d]) << "device " << d;
    EXPECT_EQ(result.outputs[d][2].GetAsDouble(0), split[d]) << "device " << d;
    EXPECT_EQ(result.outputs[d][3].GetAsDouble(0), broadcast[d]) << "device " << d;
  }
}

// The all-gather the issue names: a channel_id and no use_global_device_ids, 2 replicas x 2
// partitions, groups {{0,1}} of replicas -> one group of all four devices in replica-major
// order (r0p0, r0p1, r1p0, r1p1 = devices 0,1,2,3), so f32[1] gathers to f32[4] = [0,1,2,3].
TEST(InterpCollectives, AllGatherWithChannelGathersReplicasTimesPartitions) {
  constexpr char kHlo[] = R"(
HloModule m, replica_count=2, num_partitions=2
ENTRY e {
  x = f32[1] parameter(0)
  ROOT g = f32[4] all-gather(x), channel_id=1, replica_groups={{0,1}}, dimensions={0}
})";
  PERFSIM_ASSERT_OK_AND_ASSIGN(
      RunResult result,
      RunHlo(kHlo, PerDevice(4, [](int64_t d) { return F32({1}, {static_cast<double>(d)}); }),
             Devices(4)));
  for (int d = 0; d < 4; ++d) {
    EXPECT_THAT(Values(result.outputs[d][0]), ElementsAre(0, 1, 2, 3)) << "device " << d;
  }
}

// replica_groups={} and no device count in the header: the declared f32[8] says 4 devices of
// f32[2]; run on 1 device the group is {0} and gathers f32[2]. That is the caller's device
// count, so InvalidArgument (perfsim run: exit 2), not an internal error.
TEST(InterpCollectives, EmptyGroupsOnTooFewDevicesAreAUsageError) {
  constexpr char kHlo[] = R"(
HloModule m
ENTRY e {
  x = f32[2] parameter(0)
  ROOT g = f32[8] all-gather(x), replica_groups={}, dimensions={0}
})";
  EXPECT_THAT(RunHlo(kHlo, PerDevice(1, [](int64_t d) { return F32({2}, {1, 2}); }), Devices(1)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("expected a replica group that gives the declared f32[8]; got "
                                 "f32[2] from a group of 1 of the 1 devices")));
  // On 4 devices the same module runs: [1,2] from each of the 4 members.
  PERFSIM_ASSERT_OK_AND_ASSIGN(
      RunResult result,
      RunHlo(kHlo, PerDevice(4, [](int64_t d) { return F32({2}, {1, 2}); }), Devices(4)));
  EXPECT_THAT(Values(result.outputs[3][0]), ElementsAre(1, 2, 1, 2, 1, 2, 1, 2));
}

TEST(InterpCollectives, DeviceCountMustMatchTheModuleHeader) {
  constexpr char kHlo[] = R"(
HloModule m, num_partitions=4
ENTRY e {
  ROOT p = u32[] partition-id()
})";
  EXPECT_THAT(RunHlo(kHlo, std::vector<std::vector<Literal>>(1), Devices(2)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("expected replica_count * num_partitions = 1 * 4 = 4 devices")));
}

TEST(InterpCollectives, AsyncStartDonePairs) {
  // all-gather-start/done and all-reduce-start/done behave like their synchronous forms:
  // gather [d] over 2 devices = [0, 1]; all-reduce of d = 1.
  constexpr char kHlo[] = R"(
HloModule m
add { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT s = f32[] add(a, b) }
ENTRY e {
  x = f32[1] parameter(0)
  gs = (f32[1], f32[2]) all-gather-start(x), replica_groups={{0,1}}, dimensions={0}
  g = f32[2] all-gather-done(gs)
  rs = f32[1] all-reduce-start(x), replica_groups={{0,1}}, to_apply=add
  r = f32[1] all-reduce-done(rs)
  ps = (f32[1], f32[1], u32[], u32[]) collective-permute-start(x), source_target_pairs={{0,1},{1,0}}
  p = f32[1] collective-permute-done(ps)
  ROOT t = (f32[2], f32[1], f32[1]) tuple(g, r, p)
})";
  PERFSIM_ASSERT_OK_AND_ASSIGN(
      RunResult result,
      RunHlo(kHlo, PerDevice(2, [](int64_t d) { return F32({1}, {static_cast<double>(d)}); }),
             Devices(2)));
  EXPECT_THAT(Values(result.outputs[0][0]), ElementsAre(0, 1));
  EXPECT_THAT(Values(result.outputs[0][1]), ElementsAre(1));
  EXPECT_THAT(Values(result.outputs[0][2]), ElementsAre(1));
  EXPECT_THAT(Values(result.outputs[1][2]), ElementsAre(0));
}

TEST(InterpCollectives, GenericAsyncStartDoneRunsTheWrappedComputation) {
  // async-start wraps an all-to-all in a computation; async-done yields its result. With
  // d0 = [0,1], d1 = [2,3]: d0 gets [0,2], d1 gets [1,3].
  constexpr char kHlo[] = R"(
HloModule m
wrapped { p = f32[2] parameter(0)  ROOT a = f32[2] all-to-all(p), replica_groups={{0,1}}, dimensions={0} }
ENTRY e {
  x = f32[2] parameter(0)
  s = ((f32[2]), f32[2], s32[]) async-start(x), calls=wrapped
  ROOT d = f32[2] async-done(s)
})";
  PERFSIM_ASSERT_OK_AND_ASSIGN(RunResult result,
                               RunHlo(kHlo,
                                      PerDevice(2,
                                                [](int64_t d) {
                                                  return F32({2}, {2.0 * d, 2.0 * d + 1});
                                                }),
                                      Devices(2)));
  EXPECT_THAT(Values(result.outputs[0][0]), ElementsAre(0, 2));
  EXPECT_THAT(Values(result.outputs[1][0]), ElementsAre(1, 3));
}

TEST(InterpCollectives, ResultsDoNotDependOnTheThreadCount) {
  // Sums of values of very different magnitude depend on the order of addition; the fold runs
  // in group order on every device, so one thread and eight threads give the same bits.
  constexpr char kHlo[] = R"(
HloModule m
add { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT s = f32[] add(a, b) }
ENTRY e {
  x = f32[3] parameter(0)
  r = f32[3] all-reduce(x), replica_groups={}, to_apply=add
  ROOT g = f32[24] all-gather(r), replica_groups={}, dimensions={0}
})";
  auto inputs = PerDevice(8, [](int64_t d) {
    return F32({3}, {1e8 / (d + 1), 1.0 / (d + 3), (d % 2 ? -1.0 : 1.0) * 1e-3 * d});
  });
  InterpreterOptions one = Devices(8);
  one.num_threads = 1;
  InterpreterOptions many = Devices(8);
  many.num_threads = 8;
  PERFSIM_ASSERT_OK_AND_ASSIGN(RunResult a, RunHlo(kHlo, inputs, one));
  PERFSIM_ASSERT_OK_AND_ASSIGN(RunResult b, RunHlo(kHlo, inputs, many));
  for (int d = 0; d < 8; ++d) {
    ASSERT_EQ(a.outputs[d][0].data().size(), b.outputs[d][0].data().size());
    EXPECT_EQ(std::memcmp(a.outputs[d][0].data().data(), b.outputs[d][0].data().data(),
                          a.outputs[d][0].data().size()),
              0)
        << "device " << d;
  }
}

TEST(InterpCollectives, ADeviceThatNeverReachesTheCollectiveIsAnErrorNotAHang) {
  // Only device 0 takes the branch with the all-reduce; device 1 ends without it.
  constexpr char kHlo[] = R"(
HloModule m
add { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT s = f32[] add(a, b) }
with { x = f32[] parameter(0)  ROOT r = f32[] all-reduce(x), replica_groups={{0,1}}, to_apply=add }
without { ROOT x = f32[] parameter(0) }
ENTRY e {
  x = f32[] parameter(0)
  id = u32[] replica-id()
  zero = u32[] constant(0)
  first = pred[] compare(id, zero), direction=EQ
  ROOT c = f32[] conditional(first, x, x), true_computation=with, false_computation=without
})";
  EXPECT_THAT(
      RunHlo(kHlo, PerDevice(2, [](int64_t d) { return F32({}, {1.0}); }), Devices(2)),
      StatusIs(absl::StatusCode::kAborted, HasSubstr("device 1 finished without reaching it")));
}

}  // namespace
}  // namespace perfsim
