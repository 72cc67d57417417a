// The model-agnostic simulator (sim/simulator/simulator.h) on hand-written modules. Expected
// figures are derived from the op costs sim/cost gives for the same instructions
// (CostInstruction), never pinned: the tests check how the simulator combines them.
#include "sim/simulator/simulator.h"

#include <algorithm>
#include <memory>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/cost/op_cost.h"
#include "sim/hw/chip_registry.h"
#include "sim/ir/hlo_parser.h"
#include "sim/ir/verifier.h"

namespace perfsim {
namespace {

using ::testing::ElementsAre;

std::unique_ptr<Module> Parse(const std::string& text) {
  absl::StatusOr<std::unique_ptr<Module>> m = ParseHloModule(text, "test.hlo");
  EXPECT_TRUE(m.ok()) << m.status();
  if (!m.ok()) return nullptr;
  absl::Status verified = VerifyModule(**m);
  EXPECT_TRUE(verified.ok()) << verified;
  return *std::move(m);
}

const Instruction& Find(const Module& module, const std::string& name) {
  for (const auto& computation : module.computations()) {
    for (const auto& instruction : computation->instructions()) {
      if (instruction->name() == name) return *instruction;
    }
  }
  ADD_FAILURE() << "no instruction " << name;
  return *module.entry()->root();
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

Slice SetupFor(const Module& module, const std::string& hw) {
  absl::StatusOr<Chip> chip = ResolveChip(hw);
  EXPECT_TRUE(chip.ok()) << chip.status();
  absl::StatusOr<Topology> topology = TopologyForModule(module, *chip, "");
  EXPECT_TRUE(topology.ok()) << topology.status();
  return Slice{*chip, *topology};
}

// sim/cost's time of one instruction on the setup's chip and slice.
double CostOf(const Slice& s, const Instruction& instruction, int64_t devices) {
  absl::StatusOr<OpCost> c = CostInstruction(
      instruction, s.chip,
      {.mode = CostMode::kTrue, .num_devices = devices, .topology = &s.topology});
  EXPECT_TRUE(c.ok()) << c.status();
  return c.ok() ? c->seconds.value_or(-1) : -1;
}

// An async all-gather and an independent dot: the gather's time C is on the communication
// stream from 0, the dot's D on the compute stream from 0, so the step is max(C, D) (serial
// C + D), the communication busy C and the exposed part max(0, C - D).
constexpr char kOverlap[] = R"(HloModule overlap

ENTRY main {
  p = f32[1024,1024]{1,0} parameter(0)
  x = f32[1024,1024]{1,0} parameter(1)
  w = f32[1024,1024]{1,0} parameter(2)
  ag = (f32[1024,1024]{1,0}, f32[4096,1024]{1,0}) all-gather-start(p), replica_groups={{0,1,2,3}}, channel_id=1, use_global_device_ids=true, dimensions={0}
  d = f32[1024,1024]{1,0} dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  agd = f32[4096,1024]{1,0} all-gather-done(ag)
  ROOT t = (f32[4096,1024]{1,0}, f32[1024,1024]{1,0}) tuple(agd, d)
}
)";

TEST(Simulator, AsyncAllGatherOverlapsIndependentDot) {
  std::unique_ptr<Module> m = Parse(kOverlap);
  ASSERT_NE(m, nullptr);
  const Slice s = SetupFor(*m, "tpu_v5p");
  absl::StatusOr<Timeline> t = SimulateModule(*m, s.chip, s.topology);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->num_devices, 4);
  const double c = CostOf(s, Find(*m, "ag"), 4), d = CostOf(s, Find(*m, "d"), 4);
  ASSERT_GT(c, 0);
  ASSERT_GT(d, 0);
  EXPECT_DOUBLE_EQ(t->serial_seconds, c + d);
  EXPECT_DOUBLE_EQ(t->step_seconds, std::max(c, d));
  EXPECT_LT(t->step_seconds, t->serial_seconds);
  EXPECT_DOUBLE_EQ(t->communication_busy, c);
  EXPECT_DOUBLE_EQ(t->compute_busy, d);
  EXPECT_NEAR(t->exposed_communication, std::max(0.0, c - d), 1e-12 * c);
  EXPECT_LT(t->exposed_communication, t->communication_busy);
  const TimelineOp& ag = t->ops[IndexOf(*t, "ag")];
  EXPECT_EQ(ag.stream, Stream::kCommunication);
  EXPECT_THAT(ag.groups, ElementsAre(ElementsAre(0, 1, 2, 3)));
  const TimelineOp& done = t->ops[IndexOf(*t, "agd")];
  EXPECT_EQ(done.seconds, 0);
  EXPECT_EQ(done.stream, Stream::kNone);
  // The done waits for its start on every device.
  for (int64_t device = 0; device < 4; ++device) {
    EXPECT_EQ(t->schedule.device(device).start[IndexOf(*t, "agd")], c);
  }
}

// The all-reduce reads the dot: it starts when the dot is done on every member of its group
// (here all of them at D), and the step is D + A.
constexpr char kReduceAfterDot[] = R"(HloModule wait, replica_count=2, num_partitions=2

ENTRY main {
  x = f32[512,512]{1,0} parameter(0)
  d = f32[512,512]{1,0} dot(x, x), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT ar = f32[512,512]{1,0} all-reduce(d), replica_groups={{0,1}}, channel_id=1, to_apply=add
}

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
)";

TEST(Simulator, CollectiveWaitsForItsGroup) {
  std::unique_ptr<Module> m = Parse(kReduceAfterDot);
  ASSERT_NE(m, nullptr);
  const Slice s = SetupFor(*m, "tpu_v5p");
  absl::StatusOr<Timeline> t = SimulateModule(*m, s.chip, s.topology);
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->num_devices, 4);
  const int64_t ar = IndexOf(*t, "ar");
  // channel_id without use_global_device_ids: cross-replica-and-partition, replicas {0,1} of
  // every partition: global ids r * 2 + p = {0,1,2,3}, one group.
  EXPECT_THAT(t->ops[ar].groups, ElementsAre(ElementsAre(0, 1, 2, 3)));
  const double d = CostOf(s, Find(*m, "d"), 4), a = CostOf(s, Find(*m, "ar"), 4);
  for (int64_t device = 0; device < 4; ++device) {
    EXPECT_EQ(t->schedule.device(device).start[ar], d);
  }
  EXPECT_DOUBLE_EQ(t->step_seconds, d + a);
  EXPECT_DOUBLE_EQ(t->exposed_communication, a);
}

TEST(Simulator, CollectivePermuteGroupsAreItsConnectedPairs) {
  std::unique_ptr<Module> m = Parse(R"(HloModule permute

ENTRY main {
  x = f32[1024]{0} parameter(0)
  ROOT cp = f32[1024]{0} collective-permute(x), source_target_pairs={{0,1},{1,0},{2,3},{3,2}}
}
)");
  ASSERT_NE(m, nullptr);
  const Slice s = SetupFor(*m, "tpu_v5p");
  absl::StatusOr<Timeline> t = SimulateModule(*m, s.chip, s.topology);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_THAT(t->ops[IndexOf(*t, "cp")].groups,
              ElementsAre(ElementsAre(0, 1), ElementsAre(2, 3)));
}

// An all-gather wrapped in async-start/async-done (iota groups, 4 partitions) and a ring
// collective-permute in partition ids: the wrapper synchronises its inner collective's group,
// the ring is one group. One communication stream: the permute (after the dot) waits for the
// gather, so the step is A + P, and the dot (D < A) hides under the gather.
TEST(Simulator, AsyncWrapperAndPermuteRing) {
  std::unique_ptr<Module> m = Parse(R"(HloModule async_wrapped, replica_count=1, num_partitions=4

ag_comp {
  p = f32[256,256]{1,0} parameter(0)
  ROOT ag = f32[1024,256]{1,0} all-gather(p), replica_groups=[1,4]<=[4], channel_id=1, use_global_device_ids=true, dimensions={0}
}

ENTRY main {
  x = f32[256,256]{1,0} parameter(0)
  start = ((f32[256,256]{1,0}), f32[1024,256]{1,0}) async-start(x), calls=ag_comp
  d = f32[256,256]{1,0} dot(x, x), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  done = f32[1024,256]{1,0} async-done(start)
  cp = f32[256,256]{1,0} collective-permute(d), channel_id=2, source_target_pairs={{0,1},{1,2},{2,3},{3,0}}
  ROOT t = (f32[1024,256]{1,0}, f32[256,256]{1,0}) tuple(done, cp)
}
)");
  ASSERT_NE(m, nullptr);
  const Slice s = SetupFor(*m, "tpu_v5p");
  absl::StatusOr<Timeline> t = SimulateModule(*m, s.chip, s.topology);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_THAT(t->ops[IndexOf(*t, "start")].groups, ElementsAre(ElementsAre(0, 1, 2, 3)));
  EXPECT_THAT(t->ops[IndexOf(*t, "cp")].groups, ElementsAre(ElementsAre(0, 1, 2, 3)));
  const double a = CostOf(s, Find(*m, "start"), 4), d = CostOf(s, Find(*m, "d"), 4),
               p = CostOf(s, Find(*m, "cp"), 4);
  ASSERT_LT(d, a);
  EXPECT_EQ(t->schedule.device(0).start[IndexOf(*t, "d")], 0);
  EXPECT_DOUBLE_EQ(t->step_seconds, a + p);
  EXPECT_DOUBLE_EQ(t->communication_busy, a + p);
  EXPECT_NEAR(t->exposed_communication, a + p - d, 1e-12 * (a + p));
}

// A loop of 4 trips: body 4 times, condition 5 times, whether the count is XLA's
// known_trip_count or only the counted-loop pattern (i from 0, i < 4, i += 1).
std::string Loop(bool known) {
  return absl::StrCat(R"(HloModule loop, is_scheduled=true

body {
  s = (s32[], f32[256,256]{1,0}) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  x = f32[256,256]{1,0} get-tuple-element(s), index=1
  one = s32[] constant(1)
  n = s32[] add(i, one)
  y = f32[256,256]{1,0} dot(x, x), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT r = (s32[], f32[256,256]{1,0}) tuple(n, y)
}

cond {
  s = (s32[], f32[256,256]{1,0}) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  four = s32[] constant(4)
  ROOT lt = pred[] compare(i, four), direction=LT
}

ENTRY main {
  x = f32[256,256]{1,0} parameter(0)
  zero = s32[] constant(0)
  init = (s32[], f32[256,256]{1,0}) tuple(zero, x)
  ROOT w = (s32[], f32[256,256]{1,0}) while(init), condition=cond, body=body)",
                      known ? R"(, backend_config={"known_trip_count":{"n":"4"}})" : "", R"(
}
)");
}

TEST(Simulator, WhileWithKnownTripCountCountsItsBodyThatManyTimes) {
  for (bool known : {true, false}) {
    SCOPED_TRACE(known ? "known_trip_count" : "counted loop");
    std::unique_ptr<Module> m = Parse(Loop(known));
    ASSERT_NE(m, nullptr);
    const Slice s = SetupFor(*m, "tpu_v5p");
    absl::StatusOr<Timeline> t = SimulateModule(*m, s.chip, s.topology);
    ASSERT_TRUE(t.ok()) << t.status();
    double body = 0, condition = 0;
    for (const auto& instruction : Find(*m, "w").body()->instructions()) {
      body += CostOf(s, *instruction, 1);
    }
    for (const auto& instruction : Find(*m, "w").condition()->instructions()) {
      condition += CostOf(s, *instruction, 1);
    }
    ASSERT_GT(body, 0);
    const TimelineOp& w = t->ops[IndexOf(*t, "w")];
    EXPECT_DOUBLE_EQ(w.seconds, 4 * body + 5 * condition);
    // Counted in full (its lower_bound may still be set: tpu_v5p's description lacks the vector
    // rate the loop counter's add needs).
    EXPECT_TRUE(t->untimed.empty());
    // The dot is the body's work: 4 trips of 2·256³ FLOP.
    EXPECT_GE(w.flops, 4 * 2.0 * 256 * 256 * 256);
    EXPECT_DOUBLE_EQ(t->step_seconds, w.seconds);
  }
}

TEST(Simulator, WhileOfUnknownTripCountIsListedUntimed) {
  std::string text = Loop(false);
  // A bound read from the state: no pattern gives the count.
  text.replace(text.find("four = s32[] constant(4)"), 24, "four = s32[] get-tuple-element(s), index=0");
  std::unique_ptr<Module> m = Parse(text);
  ASSERT_NE(m, nullptr);
  const Slice s = SetupFor(*m, "tpu_v5p");
  absl::StatusOr<Timeline> t = SimulateModule(*m, s.chip, s.topology);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_THAT(t->untimed, ElementsAre("w"));
  EXPECT_TRUE(t->ops[IndexOf(*t, "w")].lower_bound);
  EXPECT_GT(t->ops[IndexOf(*t, "w")].seconds, 0);  // one trip, never a silent 0
}

TEST(Simulator, UnknownCustomCallIsListedUntimed) {
  std::unique_ptr<Module> m = Parse(R"(HloModule cc

ENTRY main {
  x = f32[1024]{0} parameter(0)
  k = f32[1024]{0} custom-call(x), custom_call_target="my_secret_kernel"
  e = f32[1024]{0} custom-call(k), custom_call_target="declared", backend_config={"cost_estimate":{"flops":1000,"transcendentals":0,"bytes_accessed":8192}}
  ROOT n = f32[1024]{0} negate(e)
}
)");
  ASSERT_NE(m, nullptr);
  const Slice s = SetupFor(*m, "gpu_h100");
  absl::StatusOr<Timeline> t = SimulateModule(*m, s.chip, s.topology);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_THAT(t->untimed, ElementsAre("k"));
  const TimelineOp& k = t->ops[IndexOf(*t, "k")];
  EXPECT_TRUE(k.lower_bound);
  // What is known of it, its HBM traffic and launch, is still counted.
  EXPECT_EQ(k.seconds, CostOf(s, Find(*m, "k"), 1));
  EXPECT_GT(k.seconds, 0);
  EXPECT_FALSE(t->ops[IndexOf(*t, "e")].lower_bound);
}

TEST(Simulator, SameBitsTwice) {
  std::unique_ptr<Module> m = Parse(kOverlap);
  ASSERT_NE(m, nullptr);
  const Slice s = SetupFor(*m, "gpu_h100");
  absl::StatusOr<Timeline> a = SimulateModule(*m, s.chip, s.topology);
  absl::StatusOr<Timeline> b = SimulateModule(*m, s.chip, s.topology);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->step_seconds, b->step_seconds);
  EXPECT_EQ(a->exposed_communication, b->exposed_communication);
  EXPECT_EQ(a->schedule.order, b->schedule.order);
  EXPECT_EQ(a->schedule.device(0).start, b->schedule.device(0).start);
}

TEST(Simulator, MeshSmallerThanTheModuleIsRefused) {
  std::unique_ptr<Module> m = Parse(kOverlap);
  ASSERT_NE(m, nullptr);
  absl::StatusOr<Chip> chip = ResolveChip("tpu_v5p");
  ASSERT_TRUE(chip.ok());
  absl::StatusOr<Topology> topology = TopologyForModule(*m, *chip, "1x1x1");
  ASSERT_FALSE(topology.ok());
  EXPECT_THAT(topology.status().message(),
              ::testing::HasSubstr("expected at least the 4 devices module overlap names"));
}

}  // namespace
}  // namespace perfsim
