// Ragged sizes from a routing (sim/moe/ragged_sizes.h) and the simulator's per-device times of
// routed ops (sim/simulator/routed.h), on a hand-derived case; and calls inlined into the
// schedule (simulator.h step 1).
//
// The case: E = 4 experts, K = 1, 2 devices, ep = 2 (EP rank r holds experts 2r and 2r + 1),
// 512 tokens per device, and a per-source routing file of rows {5, 1, 2, 0} and {0, 3, 3, 2}
// (each sums to 8; scaled to T·K = 512 assignments: x64, exact):
//   shard 0 = {320, 64, 128, 0}, shard 1 = {0, 192, 192, 128}.
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/comm/traffic.h"
#include "sim/cost/grouped_matmul.h"
#include "sim/cost/op_cost.h"
#include "sim/hw/chip_registry.h"
#include "sim/ir/hlo_parser.h"
#include "sim/ir/verifier.h"
#include "sim/moe/ragged_sizes.h"
#include "sim/simulator/simulator.h"

namespace perfsim {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

RoutingShape Shape4x2() {
  RoutingShape s;
  s.set_num_experts(4);
  s.set_experts_per_token(1);
  s.set_tokens_per_shard(512);
  s.set_token_shards(2);
  s.set_ep(2);
  s.set_tp(1);
  return s;
}

RoutingSpec HandRouting() {
  RoutingSpec r;
  r.kind = RoutingSpec::Kind::kFile;
  r.path = "hand";
  r.file_weights = {{5, 1, 2, 0}, {0, 3, 3, 2}};
  return r;
}

TEST(RaggedSizes, GroupSizesAndExchangeRowsByHand) {
  absl::StatusOr<RoutingLayout> layout = RoutingLayout::FromProto(Shape4x2());
  ASSERT_TRUE(layout.ok()) << layout.status();
  absl::StatusOr<RoutingMatrix> m = BuildLayoutRouting(HandRouting(), *layout);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->at(0, 0), 320);
  EXPECT_EQ(m->at(1, 3), 128);

  RaggedSizes own;  // a device's own assignments, all four experts
  own.set_rows(RaggedSizes::ROWS_DEVICE);
  own.set_group_count(4);
  EXPECT_THAT(*RaggedGroupSizes(own, *m, *layout, 1), ElementsAre(0, 192, 192, 128));

  // What EP rank r receives: experts 2r, 2r+1 summed over both shards.
  RaggedSizes received;
  received.set_rows(RaggedSizes::ROWS_EP_GROUP);
  received.set_group_offset_per_ep_rank(2);
  received.set_group_count(2);
  EXPECT_THAT(*RaggedGroupSizes(received, *m, *layout, 0), ElementsAre(320 + 0, 64 + 192));
  EXPECT_THAT(*RaggedGroupSizes(received, *m, *layout, 1), ElementsAre(128 + 192, 0 + 128));
  // Aligned to 100 rows: 320 -> 400, 256 -> 300.
  received.set_align(100);
  EXPECT_THAT(*RaggedGroupSizes(received, *m, *layout, 0), ElementsAre(400, 300));

  // ring_of_experts: all E groups of the EP group's rows, rolled left by r·E_l.
  RaggedSizes rolled;
  rolled.set_rows(RaggedSizes::ROWS_EP_GROUP);
  rolled.set_roll_per_ep_rank(2);
  rolled.set_group_count(4);
  EXPECT_THAT(*RaggedGroupSizes(rolled, *m, *layout, 1), ElementsAre(320, 128, 320, 256));

  // Towards the experts member i sends member j what its shard routes to j's experts:
  // 0 -> 0: 320 + 64, 0 -> 1: 128 + 0, 1 -> 0: 0 + 192, 1 -> 1: 192 + 128. Back: the transpose.
  EXPECT_THAT(RaggedExchangeRows(RaggedTransfer::DIRECTION_TO_EXPERTS, {0, 1}, *m, *layout),
              ElementsAre(384, 128, 192, 320));
  EXPECT_THAT(RaggedExchangeRows(RaggedTransfer::DIRECTION_FROM_EXPERTS, {0, 1}, *m, *layout),
              ElementsAre(384, 192, 128, 320));
  EXPECT_THAT(TruncateGroupSizes({300, 300, 300}, 700), ElementsAre(300, 300, 100));

  // Nothing usable: no rows, a group count beyond E, a device outside the layout.
  EXPECT_FALSE(RaggedGroupSizes(RaggedSizes(), *m, *layout, 0).has_value());
  own.set_group_count(5);
  EXPECT_FALSE(RaggedGroupSizes(own, *m, *layout, 0).has_value());
  own.set_group_count(4);
  EXPECT_FALSE(RaggedGroupSizes(own, *m, *layout, 2).has_value());
}

// Many distinct routing rows in one group (a per-source file of 64 different rows, one expert
// per rank): every entry is the matrix's own count, member by member (a regression: the
// per-row sums were once kept by pointer in a map that moved them as it grew).
TEST(RaggedSizes, ExchangeRowsWithManyDistinctRows) {
  constexpr int64_t kN = 64;
  RoutingShape s;
  s.set_num_experts(kN);
  s.set_experts_per_token(1);
  s.set_tokens_per_shard(16);
  s.set_token_shards(kN);
  s.set_ep(kN);
  s.set_tp(1);
  absl::StatusOr<RoutingLayout> layout = RoutingLayout::FromProto(s);
  ASSERT_TRUE(layout.ok()) << layout.status();
  RoutingSpec spec{.kind = RoutingSpec::Kind::kFile, .path = "distinct"};
  for (int source = 0; source < kN; ++source) {
    std::vector<double>& row = spec.file_weights.emplace_back(kN, 0.0);
    row[source] = 8;             // half to its own expert
    row[(source + 1) % kN] = 8;  // half to the next one
  }
  absl::StatusOr<RoutingMatrix> m = BuildLayoutRouting(spec, *layout);
  ASSERT_TRUE(m.ok()) << m.status();
  std::vector<int64_t> group(kN);
  for (int64_t d = 0; d < kN; ++d) group[d] = d;
  const std::vector<int64_t> to =
      RaggedExchangeRows(RaggedTransfer::DIRECTION_TO_EXPERTS, group, *m, *layout);
  const std::vector<int64_t> from =
      RaggedExchangeRows(RaggedTransfer::DIRECTION_FROM_EXPERTS, group, *m, *layout);
  ASSERT_EQ(to.size(), static_cast<size_t>(kN * kN));
  ASSERT_EQ(from.size(), static_cast<size_t>(kN * kN));
  for (int64_t i = 0; i < kN; ++i) {
    for (int64_t j = 0; j < kN; ++j) {
      const int64_t expected = (j == i || j == (i + 1) % kN) ? 8 : 0;
      EXPECT_EQ(to[i * kN + j], expected) << i << " -> " << j;
      EXPECT_EQ(from[j * kN + i], expected) << i << " <- " << j;
    }
  }
}

TEST(RaggedSizes, MalformedLayoutsAreRefused) {
  RoutingShape s = Shape4x2();
  s.set_ep(3);
  absl::StatusOr<RoutingLayout> l = RoutingLayout::FromProto(s);
  ASSERT_FALSE(l.ok());
  EXPECT_THAT(l.status().message(), HasSubstr("expected num_experts a multiple of ep"));
  s = Shape4x2();
  s.set_experts_per_token(5);
  EXPECT_THAT(RoutingLayout::FromProto(s).status().message(),
              HasSubstr("expected experts_per_token <= num_experts"));
  s = Shape4x2();
  s.set_tp(0);
  EXPECT_FALSE(RoutingLayout::FromProto(s).ok());
  EXPECT_FALSE(RoutingLayout::FromProto(RoutingShape()).ok());
}

// The hand case as a module: device d receives its EP group's rows for experts 2d, 2d+1
// (group sizes annotated ROWS_EP_GROUP, offset 2 per rank) into a buffer of T·K·ep = 1024
// rows, runs the ragged-dot of its two experts, after the dispatch ragged-all-to-all.
constexpr char kRouted[] = R"(HloModule routed

ENTRY main {
  x = f32[1024,64]{1,0} parameter(0)
  out = f32[1024,64]{1,0} parameter(1)
  offsets = s32[2]{0} parameter(2)
  sizes = s32[2]{0} parameter(3)
  w = f32[2,64,128]{2,1,0} parameter(4)
  gs = s32[2]{0} parameter(5), frontend_attributes={perfsim_annotation="ragged { rows: ROWS_EP_GROUP group_offset_per_ep_rank: 2 group_count: 2 routing { num_experts: 4 experts_per_token: 1 tokens_per_shard: 512 token_shards: 2 ep: 2 tp: 1 } }"}
  a2a = f32[1024,64]{1,0} ragged-all-to-all(x, out, offsets, sizes, offsets, sizes), replica_groups={{0,1}}, frontend_attributes={perfsim_annotation="traffic { direction: DIRECTION_TO_EXPERTS routing { num_experts: 4 experts_per_token: 1 tokens_per_shard: 512 token_shards: 2 ep: 2 tp: 1 } }"}
  ROOT rd = f32[1024,128]{1,0} ragged-dot(a2a, w, gs), lhs_contracting_dims={1}, rhs_contracting_dims={1}, lhs_ragged_dims={0}, rhs_group_dims={0}
}
)";

std::unique_ptr<Module> Parse(const std::string& text) {
  absl::StatusOr<std::unique_ptr<Module>> m = ParseHloModule(text, "test.hlo");
  EXPECT_TRUE(m.ok()) << m.status();
  if (!m.ok()) return nullptr;
  absl::Status verified = VerifyModule(**m);
  EXPECT_TRUE(verified.ok()) << verified;
  return *std::move(m);
}

int64_t IndexOf(const Timeline& t, const std::string& name) {
  for (size_t i = 0; i < t.ops.size(); ++i) {
    if (t.ops[i].name == name) return static_cast<int64_t>(i);
  }
  ADD_FAILURE() << "no op " << name;
  return 0;
}

struct Slice {
  Chip chip;
  Topology topology;
};

Slice SetupFor(const Module& m, const std::string& hw) {
  absl::StatusOr<Chip> chip = ResolveChip(hw);
  EXPECT_TRUE(chip.ok()) << chip.status();
  absl::StatusOr<Topology> topology = TopologyForModule(m, *chip, "");
  EXPECT_TRUE(topology.ok()) << topology.status();
  return Slice{*chip, *topology};
}

// The ragged-dot as a grouped matmul by hand: rows ragged, [1024, 64] x [2][64, 128], XLA's
// native ragged-dot with megablox's default tiles on a TPU (no tiling annotated).
double RaggedDotSeconds(const Chip& chip, std::vector<int64_t> sizes) {
  GroupedMatmulSpec spec{.kind = GroupedMatmulKind::kGmm,
                         .implementation = GroupedMatmulImplementation::kXlaRaggedDot,
                         .m = 1024,
                         .k = 64,
                         .n = 128,
                         .num_groups = 2,
                         .group_sizes = std::move(sizes),
                         .tm = 128,
                         .tk = 128,
                         .tn = 128,
                         .lhs_type = PrimitiveType::kF32,
                         .rhs_type = PrimitiveType::kF32,
                         .out_type = PrimitiveType::kF32};
  absl::StatusOr<GroupedMatmulCost> cost = CostGroupedMatmul(spec, chip);
  EXPECT_TRUE(cost.ok()) << cost.status();
  return cost.ok() ? cost->seconds : -1;
}

TEST(SimulatorRouting, GroupSizesAndTrafficComeFromTheRouting) {
  std::unique_ptr<Module> m = Parse(kRouted);
  ASSERT_NE(m, nullptr);
  const Slice s = SetupFor(*m, "tpu_v5p");
  absl::StatusOr<Timeline> t = SimulateModule(*m, s.chip, s.topology, {.routing = HandRouting()});
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->num_devices, 2);
  EXPECT_EQ(t->routed_ops, 2);

  // Device 0 holds experts 0, 1: sizes {320, 256}, rows [0, 320) [320, 576): m-tiles 0..2 and
  // 2..4, 6 visited; device 1 experts 2, 3: {320, 128}, tiles 0..2 and 2..3, 5 visited.
  const TimelineOp& rd = t->ops[IndexOf(*t, "rd")];
  ASSERT_EQ(rd.device_seconds.size(), 2u);
  const double rd0 = RaggedDotSeconds(s.chip, {320, 256}),
               rd1 = RaggedDotSeconds(s.chip, {320, 128});
  EXPECT_DOUBLE_EQ(rd.device_seconds[0], rd0);
  EXPECT_DOUBLE_EQ(rd.device_seconds[1], rd1);
  EXPECT_GT(rd0, rd1);
  // Different durations: two device classes; device 0 is the slowest, the op's figures its.
  EXPECT_EQ(t->schedule.num_classes(), 2);
  EXPECT_EQ(t->slowest_device, 0);
  EXPECT_DOUBLE_EQ(rd.seconds, rd0);
  EXPECT_EQ(rd.flops, 2.0 * (320 + 256) * 64 * 128);

  // The dispatch: rows {384, 128; 192, 320} of 64 f32 (256 bytes) routed over the slice, one
  // group, the same time on both members.
  TrafficMatrix traffic{.devices = {0, 1},
                        .bytes = {384 * 256.0, 128 * 256.0, 192 * 256.0, 320 * 256.0}};
  absl::StatusOr<TrafficTime> routed = RouteTraffic(traffic, s.topology);
  ASSERT_TRUE(routed.ok()) << routed.status();
  const TimelineOp& a2a = t->ops[IndexOf(*t, "a2a")];
  EXPECT_EQ(a2a.stream, Stream::kCommunication);
  EXPECT_THAT(a2a.device_seconds, ElementsAre(routed->seconds, routed->seconds));
  // HBM of device 0: its rows sent (384 + 128) and received (384 + 192); on the network it
  // sends 128 rows, device 1 sends 192.
  EXPECT_EQ(a2a.bytes, (384 + 128 + 384 + 192) * 256.0);
  EXPECT_EQ(a2a.sent_bytes, 128 * 256.0);
  EXPECT_EQ(a2a.max_sent_bytes, 192 * 256.0);

  // The ragged-dot waits for the dispatch: device d finishes at A + its ragged-dot.
  EXPECT_DOUBLE_EQ(t->schedule.device(1).finish[IndexOf(*t, "rd")], routed->seconds + rd1);
  EXPECT_DOUBLE_EQ(t->step_seconds, routed->seconds + rd0);
}

TEST(SimulatorRouting, UniformIsTheDefault) {
  std::unique_ptr<Module> m = Parse(kRouted);
  ASSERT_NE(m, nullptr);
  const Slice s = SetupFor(*m, "tpu_v5p");
  absl::StatusOr<Timeline> t = SimulateModule(*m, s.chip, s.topology);
  ASSERT_TRUE(t.ok()) << t.status();
  // Uniform: 512 / 4 = 128 assignments per expert from each shard; each rank receives 256
  // per expert: {256, 256} on both devices, one class.
  const TimelineOp& rd = t->ops[IndexOf(*t, "rd")];
  EXPECT_THAT(rd.device_seconds, ElementsAre(RaggedDotSeconds(s.chip, {256, 256}),
                                             RaggedDotSeconds(s.chip, {256, 256})));
  EXPECT_EQ(t->schedule.num_classes(), 1);
}

TEST(SimulatorRouting, WithoutAnnotationsTheStaticTimeStays) {
  std::string text = kRouted;
  // Drop both annotations.
  for (const char* key : {", frontend_attributes={perfsim_annotation=\"ragged",
                          ", frontend_attributes={perfsim_annotation=\"traffic"}) {
    const size_t at = text.find(key);
    ASSERT_NE(at, std::string::npos);
    text.erase(at, text.find("}\"}", at) + 3 - at);
  }
  std::unique_ptr<Module> m = Parse(text);
  ASSERT_NE(m, nullptr);
  const Slice s = SetupFor(*m, "tpu_v5p");
  absl::StatusOr<Timeline> t = SimulateModule(*m, s.chip, s.topology, {.routing = HandRouting()});
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->routed_ops, 0);
  for (const char* name : {"rd", "a2a"}) {
    const TimelineOp& op = t->ops[IndexOf(*t, name)];
    EXPECT_TRUE(op.device_seconds.empty()) << name;
    absl::StatusOr<OpCost> cost =
        CostInstruction(*op.instruction, s.chip,
                        {.mode = CostMode::kTrue, .num_devices = 2, .topology = &s.topology});
    ASSERT_TRUE(cost.ok()) << cost.status();
    EXPECT_EQ(op.seconds, cost->seconds.value_or(-1)) << name;
  }
}

TEST(SimulatorRouting, RoutingThatCannotFillTheModuleIsAnError) {
  std::unique_ptr<Module> m = Parse(kRouted);
  ASSERT_NE(m, nullptr);
  const Slice s = SetupFor(*m, "tpu_v5p");
  RoutingSpec narrow = HandRouting();
  narrow.file_weights = {{1, 2, 3}};  // 3 experts for a module of 4
  absl::StatusOr<Timeline> t = SimulateModule(*m, s.chip, s.topology, {.routing = narrow});
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(t.status().message(), HasSubstr("a2a"));

  // An annotated routing over 4 devices in a module of 2.
  std::string text = kRouted;
  for (size_t at = text.find("token_shards: 2"); at != std::string::npos;
       at = text.find("token_shards: 2", at)) {
    text.replace(at, 15, "token_shards: 4");
  }
  std::unique_ptr<Module> four = Parse(text);
  ASSERT_NE(four, nullptr);
  t = SimulateModule(*four, s.chip, s.topology);
  ASSERT_FALSE(t.ok());
  EXPECT_THAT(t.status().message(),
              HasSubstr("expected an annotated routing over the module's 2 devices"));
}

// A shard_map's gradient all-reduce inside a call: inlined, it is an op of its own on the
// communication stream, and compute that does not depend on it overlaps it.
constexpr char kCalled[] = R"(HloModule called, replica_count=1, num_partitions=4

add_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

body {
  g = f32[1024,1024]{1,0} parameter(0)
  ar = f32[1024,1024]{1,0} all-reduce(g), channel_id=1, replica_groups={{0,1,2,3}}, use_global_device_ids=true, to_apply=add_f32
  ROOT n = f32[1024,1024]{1,0} negate(ar)
}

ENTRY main {
  g = f32[1024,1024]{1,0} parameter(0)
  x = f32[1024,1024]{1,0} parameter(1)
  c = f32[1024,1024]{1,0} call(g), to_apply=body
  d = f32[1024,1024]{1,0} dot(x, x), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT t = (f32[1024,1024]{1,0}, f32[1024,1024]{1,0}) tuple(c, d)
}
)";

TEST(SimulatorCalls, CalledAllReduceIsCommunicationAndOverlaps) {
  std::unique_ptr<Module> m = Parse(kCalled);
  ASSERT_NE(m, nullptr);
  const Slice s = SetupFor(*m, "tpu_v5p");
  absl::StatusOr<Timeline> t = SimulateModule(*m, s.chip, s.topology);
  ASSERT_TRUE(t.ok()) << t.status();
  std::vector<std::string> names;
  for (const TimelineOp& op : t->ops) names.push_back(op.name);
  // The call's instructions come in front of it.
  EXPECT_THAT(names, ElementsAre("g", "x", "c/g", "c/ar", "c/n", "c", "d", "t"));
  const TimelineOp& ar = t->ops[IndexOf(*t, "c/ar")];
  EXPECT_EQ(ar.stream, Stream::kCommunication);
  EXPECT_THAT(ar.groups, ElementsAre(ElementsAre(0, 1, 2, 3)));
  const TimelineOp& call = t->ops[IndexOf(*t, "c")];
  EXPECT_EQ(call.seconds, 0);
  EXPECT_EQ(call.stream, Stream::kNone);
  // A = the all-reduce, N = the negate after it, D = the independent dot: the dot runs from 0
  // beside the all-reduce; the negate follows it once the compute stream is free.
  const double a = ar.seconds, n = t->ops[IndexOf(*t, "c/n")].seconds,
               d = t->ops[IndexOf(*t, "d")].seconds;
  ASSERT_GT(a, 0);
  ASSERT_GT(d, 0);
  EXPECT_EQ(t->communication_busy, a);
  EXPECT_DOUBLE_EQ(t->serial_seconds, a + n + d);
  EXPECT_DOUBLE_EQ(t->step_seconds, std::max(a, d) + n);
  EXPECT_LT(t->step_seconds, t->serial_seconds);
  // The call's users wait for its root.
  EXPECT_EQ(t->schedule.device(0).start[IndexOf(*t, "c")],
            t->schedule.device(0).finish[IndexOf(*t, "c/n")]);
}

// JAX's data-parallel shard_map over a scanned MLP (tools/jax, lowered, unfused): the body of
// the manual computation is a call, and its three gradient psums are all-reduces over the 8
// devices. Inlined, each is a communication op of its own, named after the call.
TEST(SimulatorCalls, ShardMapAllReducesOfAJaxScanAreCommunication) {
  std::ifstream in(std::string(PERFSIM_TESTDATA_DIR) + "/hlo/scan/mlp_scan_dp8_n4.lowered.hlo");
  std::stringstream text;
  text << in.rdbuf();
  std::unique_ptr<Module> m = Parse(text.str());
  ASSERT_NE(m, nullptr);
  const Slice s = SetupFor(*m, "tpu_v5p");
  absl::StatusOr<Timeline> t = SimulateModule(*m, s.chip, s.topology);
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->num_devices, 8);
  int64_t all_reduces = 0;
  double communication = 0;
  for (const TimelineOp& op : t->ops) {
    if (op.opcode != "all-reduce") continue;
    ++all_reduces;
    EXPECT_THAT(op.name, ::testing::StartsWith("shard_map.22/psum."));
    EXPECT_EQ(op.stream, Stream::kCommunication) << op.name;
    EXPECT_THAT(op.groups, ElementsAre(ElementsAre(0, 1, 2, 3, 4, 5, 6, 7))) << op.name;
    communication += op.seconds;
  }
  EXPECT_EQ(all_reduces, 3);
  EXPECT_GT(communication, 0);
  EXPECT_DOUBLE_EQ(t->communication_busy, communication);
}

}  // namespace
}  // namespace perfsim
