// Costing HLO collective instructions (sim/comm/hlo_collectives.h): bytes from shapes, replica
// groups in each id mode, async forms, ragged-all-to-all assumptions, and the committed JAX
// collective modules. Times are derived by hand in the comments and compared to a relative
// 1e-12 (rounding of a few operations).
#include "sim/comm/hlo_collectives.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/ir/hlo_parser.h"
#include "sim/util/status_matchers.h"
#include "tests/comm/comm_test_util.h"

namespace perfsim {
namespace {

using ::perfsim::testing::MustTopology;
using ::perfsim::testing::StatusIs;
using ::perfsim::testing::TorusChip;
using ::testing::HasSubstr;

constexpr double kW = 1e11;    // test torus link, one direction
constexpr double kHop = 1e-6;  // test torus hop

#define EXPECT_SECONDS(actual, expected) \
  EXPECT_NEAR((actual), (expected), 1e-12 * std::fabs(expected))

std::unique_ptr<Module> Parse(const std::string& text) {
  absl::StatusOr<std::unique_ptr<Module>> m = ParseHloModule(text, "test.hlo");
  PERFSIM_CHECK(m.ok()) << m.status();
  return *std::move(m);
}

std::unique_ptr<Module> ParseFile(const std::string& name) {
  std::ifstream in(std::string(PERFSIM_TESTDATA_DIR) + "/hlo/jax/" + name);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return Parse(buffer.str());
}

const Instruction& Find(const Module& module, const std::string& name) {
  for (const auto& c : module.computations()) {
    if (Instruction* i = c->FindInstruction(name)) return *i;
  }
  PERFSIM_CHECK(false) << "no instruction " << name;
  return *module.entry()->root();
}

// A ring of 8 chips: one torus axis of 8, wrapping (a multiple of 4).
Topology Ring8() { return MustTopology(TorusChip({"x"}, 4), "8"); }

TEST(HloCollectives, AllGatherBytesComeFromTheShapes) {
  // f32[2,4] is 32 bytes per device; gathered over 8 devices the result is 256 bytes. On the
  // closed ring of 8: 7/8 * 256 / (2 W) + 4 hops.
  const auto m = ParseFile("collective_all_gather.compiled.hlo");
  const Instruction& ag = *m->entry()->root();
  PERFSIM_ASSERT_OK_AND_ASSIGN(CollectiveCost c, CostCollectiveInstruction(ag, Ring8()));
  EXPECT_DOUBLE_EQ(c.bytes_per_device, 256);
  EXPECT_EQ(c.group_size, 8);
  EXPECT_EQ(c.num_groups, 1);
  EXPECT_EQ(c.time.algorithm, CollectiveAlgorithm::kBidirectionalRing);
  EXPECT_SECONDS(c.seconds, 7.0 / 8 * 256 / (2 * kW) + 4 * kHop);
}

TEST(HloCollectives, JaxReduceScatterAllReduceAndAllToAll) {
  const Topology t = Ring8();
  {
    // reduce-scatter f32[16,3] (192 bytes) -> f32[2,3]: 7/8 * 192 / 2W + 4 hops.
    const auto m = ParseFile("collective_reduce_scatter.compiled.hlo");
    PERFSIM_ASSERT_OK_AND_ASSIGN(CollectiveCost c,
                                 CostCollectiveInstruction(*m->entry()->root(), t));
    EXPECT_DOUBLE_EQ(c.bytes_per_device, 192);
    EXPECT_SECONDS(c.seconds, 7.0 / 8 * 192 / (2 * kW) + 4 * kHop);
  }
  {
    // all-reduce of f32[2,4] (32 bytes): two passes, 2 * (7/8 * 32 / 2W + 4 hops).
    const auto m = ParseFile("collective_all_reduce.compiled.hlo");
    PERFSIM_ASSERT_OK_AND_ASSIGN(CollectiveCost c,
                                 CostCollectiveInstruction(Find(*m, "psum_invariant.7"), t));
    EXPECT_SECONDS(c.seconds, 2 * (7.0 / 8 * 32 / (2 * kW) + 4 * kHop));
  }
  {
    // Tuple all-to-all of eight f32[2,3] (24 bytes each, 192 sent per device): on a closed
    // ring of 8 a link carries 8^2/8 = 8 flows of 192/8 = 24 bytes; the farthest peer is
    // 4 hops away: 192 / W + 4 hops.
    const auto m = ParseFile("collective_all_to_all.compiled.hlo");
    PERFSIM_ASSERT_OK_AND_ASSIGN(CollectiveCost c,
                                 CostCollectiveInstruction(Find(*m, "all-to-all"), t));
    EXPECT_DOUBLE_EQ(c.bytes_per_device, 192);
    EXPECT_SECONDS(c.seconds, 192 / kW + 4 * kHop);
  }
}

TEST(HloCollectives, JaxCollectivePermuteRoutesItsPairs) {
  // ppermute.6 shifts every device to the next (7 -> 0 over the wrap link): each link one flow
  // of 32 bytes, 1 hop. ppermute.7 swaps 0 <-> 3 (3 hops each way) and sends 5 -> 6.
  const auto m = ParseFile("collective_permute.compiled.hlo");
  PERFSIM_ASSERT_OK_AND_ASSIGN(CollectiveCost shift,
                               CostCollectiveInstruction(Find(*m, "ppermute.6"), Ring8()));
  EXPECT_SECONDS(shift.seconds, 32 / kW + kHop);
  PERFSIM_ASSERT_OK_AND_ASSIGN(CollectiveCost swap,
                               CostCollectiveInstruction(Find(*m, "ppermute.7"), Ring8()));
  EXPECT_SECONDS(swap.seconds, 32 / kW + 3 * kHop);
}

TEST(HloCollectives, RaggedAllToAllAssumptionsAndTrafficMatrix) {
  // input f32[8,3] = 96 bytes, output f32[10,3] = 120 bytes, 8 devices on the ring of 8.
  // Uniform input: 12 bytes to each peer; a link carries 8 flows: 96 / W + 4 hops.
  // Full output: 15 bytes from each peer: 120 / W + 4 hops.
  const auto m = ParseFile("collective_ragged_all_to_all.compiled.hlo");
  const Instruction& ragged = *m->entry()->root();
  const Topology t = Ring8();
  PERFSIM_ASSERT_OK_AND_ASSIGN(CollectiveCost uniform, CostCollectiveInstruction(ragged, t));
  EXPECT_SECONDS(uniform.seconds, 96 / kW + 4 * kHop);
  CollectiveCostOptions full;
  full.ragged_traffic = RaggedTraffic::kFullOutput;
  PERFSIM_ASSERT_OK_AND_ASSIGN(CollectiveCost worst, CostCollectiveInstruction(ragged, t, full));
  EXPECT_SECONDS(worst.seconds, 120 / kW + 4 * kHop);
  // A real matrix: device 0 sends 1000 bytes to 2 (two hops x+), device 1 sends 500 to 2: the
  // link 1 -> 2 carries 1500 bytes. 1500 / W + 2 hops.
  TrafficMatrix traffic = TrafficMatrix::Zero({0, 1, 2, 3, 4, 5, 6, 7});
  traffic.set(0, 2, 1000);
  traffic.set(1, 2, 500);
  CollectiveCostOptions given;
  given.traffic = &traffic;
  PERFSIM_ASSERT_OK_AND_ASSIGN(CollectiveCost real, CostCollectiveInstruction(ragged, t, given));
  EXPECT_SECONDS(real.seconds, 1500 / kW + 2 * kHop);
  EXPECT_EQ(real.time.busiest_link, "x+ from (1)");
  TrafficMatrix partial = TrafficMatrix::Zero({0, 1});
  given.traffic = &partial;
  EXPECT_THAT(CostCollectiveInstruction(ragged, t, given),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("traffic matrix: expected an entry for devices 0 -> 2")));
}

constexpr char kModes[] = R"(
HloModule modes, replica_count=2, num_partitions=4

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

ENTRY main {
  x = f32[256]{0} parameter(0)
  cross_replica = f32[256]{0} all-reduce(x), replica_groups={{0,1}}, to_apply=add
  replica_and_partition = f32[256]{0} all-reduce(x), channel_id=1, replica_groups={{0},{1}}, to_apply=add
  global = f32[256]{0} all-reduce(x), channel_id=2, replica_groups=[2,4]<=[4,2]T(1,0), use_global_device_ids=true, to_apply=add
  start = f32[256]{0} all-reduce-start(x), channel_id=3, replica_groups={{0},{1}}, to_apply=add
  done = f32[256]{0} all-reduce-done(start)
  ags = (f32[256]{0}, f32[1024]{0}) all-gather-start(x), channel_id=4, replica_groups={{0},{1}}, dimensions={0}
  agd = f32[1024]{0} all-gather-done(ags)
  bad = f32[256]{0} all-reduce(x), channel_id=5, replica_groups={{0,9}}, use_global_device_ids=true, to_apply=add
  ROOT sum = f32[256]{0} add(x, x)
}
)";

// The three modes an all-reduce can be in (XLA's CollectiveOpGroupMode,
// sim/ir/collective_groups.h): no channel_id: replica ids; a channel_id and no
// use_global_device_ids: replica ids, each group taking every partition; global device ids.
TEST(HloCollectives, ReplicaGroupIdModes) {
  // 8 devices as 2 replicas x 4 partitions (device = replica * 4 + partition) on an open line
  // of 8 (test 2D chip, "8x1": x of 8 does not wrap at multiples of 16). 1 KiB all-reduce.
  const Topology t = MustTopology(TorusChip({"x", "y"}, 16, 16), "8x1");
  const auto m = Parse(kModes);
  const double v = 1024;
  {
    // Without channel_id ids are replicas: {0,1} of partition p is devices {p, 4 + p}, 4 hops
    // apart (an open line of 2 at stride 4, sharing its links with 3 other groups):
    // 2 * (1/2 * V / (W/4) + 1 step * 4 hops).
    PERFSIM_ASSERT_OK_AND_ASSIGN(CollectiveCost c,
                                 CostCollectiveInstruction(Find(*m, "cross_replica"), t));
    EXPECT_EQ(c.num_groups, 4);
    EXPECT_EQ(c.group_size, 2);
    EXPECT_SECONDS(c.seconds, 2 * (0.5 * v / (kW / 4) + 4 * kHop));
  }
  {
    // With channel_id (and no use_global_device_ids) ids are replicas and each group takes
    // every partition: {0} is replica 0's partitions 0..3, devices 0..3, and {1} is devices
    // 4..7; each an open line of 4: 2 * (3/4 * V / W + 3 hops).
    PERFSIM_ASSERT_OK_AND_ASSIGN(CollectiveCost c,
                                 CostCollectiveInstruction(Find(*m, "replica_and_partition"), t));
    EXPECT_EQ(c.num_groups, 2);
    EXPECT_SECONDS(c.seconds, 2 * (0.75 * v / kW + 3 * kHop));
    // The -start form costs the same; its -done costs nothing.
    PERFSIM_ASSERT_OK_AND_ASSIGN(CollectiveCost s, CostCollectiveInstruction(Find(*m, "start"), t));
    EXPECT_SECONDS(s.seconds, c.seconds);
    PERFSIM_ASSERT_OK_AND_ASSIGN(CollectiveCost d, CostCollectiveInstruction(Find(*m, "done"), t));
    EXPECT_EQ(d.seconds, 0);
  }
  {
    // Global ids, iota [2,4]<=[4,2]T(1,0) = {0,2,4,6},{1,3,5,7}: lines of 4 at stride 2:
    // 2 * (3/4 * V / (W/2) + 3 steps * 2 hops).
    PERFSIM_ASSERT_OK_AND_ASSIGN(CollectiveCost c,
                                 CostCollectiveInstruction(Find(*m, "global"), t));
    EXPECT_EQ(c.num_groups, 2);
    EXPECT_SECONDS(c.seconds, 2 * (0.75 * v / (kW / 2) + 6 * kHop));
  }
  {
    // all-gather-start of 1 KiB per device over the same groups of 4: result 4 KiB, 3/4 of it
    // over the line.
    PERFSIM_ASSERT_OK_AND_ASSIGN(CollectiveCost c, CostCollectiveInstruction(Find(*m, "ags"), t));
    EXPECT_DOUBLE_EQ(c.bytes_per_device, 4096);
    EXPECT_SECONDS(c.seconds, 0.75 * 4096 / kW + 3 * kHop);
    PERFSIM_ASSERT_OK_AND_ASSIGN(CollectiveCost d, CostCollectiveInstruction(Find(*m, "agd"), t));
    EXPECT_EQ(d.seconds, 0);
  }
  EXPECT_THAT(CostCollectiveInstruction(Find(*m, "bad"), t),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("bad: replica_groups: expected global device ids in [0, 8); got 9")));
  EXPECT_THAT(CostCollectiveInstruction(Find(*m, "sum"), t),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("sum: expected a collective; got add")));
  EXPECT_FALSE(IsCollectiveInstruction(Find(*m, "sum")));
  EXPECT_TRUE(IsCollectiveInstruction(Find(*m, "done")));
  // A module of 8 devices does not fit a topology of 4.
  EXPECT_THAT(CostCollectiveInstruction(Find(*m, "global"),
                                        MustTopology(TorusChip({"x", "y"}, 16, 16), "4x1")),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("to fit the 4 devices")));
}

constexpr char kAsync[] = R"(
HloModule async, num_partitions=4

wrapped_all_gather {
  p = f32[64]{0} parameter(0)
  ROOT ag = f32[256]{0} all-gather(p), channel_id=1, replica_groups={{0,1,2,3}}, dimensions={0}, use_global_device_ids=true
}

ENTRY main {
  x = f32[64]{0} parameter(0)
  start = ((f32[64]{0}), f32[256]{0}) async-start(x), calls=wrapped_all_gather
  ROOT done = f32[256]{0} async-done(start)
}
)";

TEST(HloCollectives, AsyncStartCostsTheWrappedCollective) {
  // 256 bytes per device over 4 on the open line: 3/4 * 1024 / W + 3 hops.
  const Topology t = MustTopology(TorusChip({"x", "y"}, 16, 16), "8x1");
  const auto m = Parse(kAsync);
  EXPECT_TRUE(IsCollectiveInstruction(Find(*m, "start")));
  PERFSIM_ASSERT_OK_AND_ASSIGN(CollectiveCost c, CostCollectiveInstruction(Find(*m, "start"), t));
  EXPECT_SECONDS(c.seconds, 0.75 * 1024 / kW + 3 * kHop);
  PERFSIM_ASSERT_OK_AND_ASSIGN(CollectiveCost d, CostCollectiveInstruction(Find(*m, "done"), t));
  EXPECT_EQ(d.seconds, 0);
}

// Every collective of every real module we have (the XLA corpus in shared/reference and the
// committed JAX modules) costs without error on a 16x16 TPU v5e (256 devices, more than any
// module asks for), with a finite, non-negative time that is positive when bytes move.
TEST(HloCollectives, EveryRealModuleCosts) {
  const Topology t = MustTopology(testing::MustLoadChip("tpu_v5e"), "16x16");
  namespace fs = std::filesystem;
  std::vector<fs::path> files;
  for (const fs::path& dir : {fs::path(PERFSIM_SHARED_DIR) / "reference" / "xla_hlo_corpus",
                              fs::path(PERFSIM_TESTDATA_DIR) / "hlo" / "jax"}) {
    for (const auto& entry : fs::directory_iterator(dir)) {
      if (entry.path().extension() == ".hlo") files.push_back(entry.path());
    }
  }
  std::sort(files.begin(), files.end());
  int costed = 0;
  for (const fs::path& file : files) {
    std::ifstream in(file);
    std::stringstream buffer;
    buffer << in.rdbuf();
    absl::StatusOr<std::unique_ptr<Module>> m = ParseHloModule(buffer.str(), file.string());
    ASSERT_TRUE(m.ok()) << m.status();
    for (const auto& computation : (*m)->computations()) {
      for (const auto& instruction : computation->instructions()) {
        if (!IsCollectiveInstruction(*instruction)) continue;
        SCOPED_TRACE(file.filename().string() + ": " + instruction->name());
        PERFSIM_ASSERT_OK_AND_ASSIGN(CollectiveCost c, CostCollectiveInstruction(*instruction, t));
        EXPECT_TRUE(std::isfinite(c.seconds));
        EXPECT_GE(c.seconds, 0);
        if (c.time.busiest_link_bytes > 0) {
          EXPECT_GT(c.seconds, 0);
        }
        ++costed;
      }
    }
  }
  // 27 corpus modules and 11 JAX modules hold collectives; fewer means files went missing.
  EXPECT_GE(costed, 60);
}

}  // namespace
}  // namespace perfsim
