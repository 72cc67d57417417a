// Loop and producer fusion of unfused modules (sim/simulator/fusion.h), alone and through the
// simulator: an unfused elementwise chain against its compiled twin (one loop fusion), and a
// convert feeding a dot (issue 12, item 4). Expected bytes come from the shapes.
#include "sim/simulator/fusion.h"

#include <memory>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/hw/chip_registry.h"
#include "sim/ir/hlo_parser.h"
#include "sim/ir/verifier.h"
#include "sim/simulator/simulator.h"

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

absl::StatusOr<Timeline> Simulate(const Module& m, const std::string& hw) {
  absl::StatusOr<Chip> chip = ResolveChip(hw);
  if (!chip.ok()) return chip.status();
  absl::StatusOr<Topology> topology = TopologyForModule(m, *chip, "");
  if (!topology.ok()) return topology.status();
  return SimulateModule(m, *chip, *topology);
}

const TimelineOp& Op(const Timeline& t, const std::string& name) {
  for (const TimelineOp& op : t.ops) {
    if (op.name == name) return op;
  }
  ADD_FAILURE() << "no op " << name;
  return t.ops[0];
}

// exp(x) + y, times z: three elementwise ops of 4 MiB arrays.
constexpr char kUnfused[] = R"(HloModule chain

ENTRY main {
  x = f32[1024,1024]{1,0} parameter(0)
  y = f32[1024,1024]{1,0} parameter(1)
  z = f32[1024,1024]{1,0} parameter(2)
  a = f32[1024,1024]{1,0} exponential(x)
  b = f32[1024,1024]{1,0} add(a, y)
  ROOT c = f32[1024,1024]{1,0} multiply(b, z)
}
)";

constexpr char kFusedTwin[] = R"(HloModule chain_fused

fused {
  x = f32[1024,1024]{1,0} parameter(0)
  y = f32[1024,1024]{1,0} parameter(1)
  z = f32[1024,1024]{1,0} parameter(2)
  a = f32[1024,1024]{1,0} exponential(x)
  b = f32[1024,1024]{1,0} add(a, y)
  ROOT c = f32[1024,1024]{1,0} multiply(b, z)
}

ENTRY main {
  x = f32[1024,1024]{1,0} parameter(0)
  y = f32[1024,1024]{1,0} parameter(1)
  z = f32[1024,1024]{1,0} parameter(2)
  ROOT f = f32[1024,1024]{1,0} fusion(x, y, z), kind=kLoop, calls=fused
}
)";

TEST(Fusion, PlanMarksProducersWhoseUsersAllFuse) {
  std::unique_ptr<Module> m = Parse(kUnfused);
  ASSERT_NE(m, nullptr);
  const FusionPlan plan = PlanFusion(*m->entry());
  EXPECT_TRUE(plan.applied);
  // x y z a b c: parameters are not fusible; a and b feed elementwise ops; c is the root.
  EXPECT_THAT(plan.interior, ElementsAre(false, false, false, true, true, false));
  std::unique_ptr<Module> twin = Parse(kFusedTwin);
  ASSERT_NE(twin, nullptr);
  EXPECT_FALSE(PlanFusion(*twin->entry()).applied);
}

// Fused, the chain reads x, y, z and writes c once: 4 arrays of 4 MiB, the twin's bytes. Each
// op is memory-bound on the H100, so its time is its bytes over the bandwidth plus one launch
// for the chain, the twin's time.
TEST(Fusion, UnfusedChainCostsItsFusedTwin) {
  std::unique_ptr<Module> m = Parse(kUnfused), twin = Parse(kFusedTwin);
  ASSERT_NE(m, nullptr);
  ASSERT_NE(twin, nullptr);
  absl::StatusOr<Timeline> t = Simulate(*m, "gpu_h100"), f = Simulate(*twin, "gpu_h100");
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_TRUE(t->fused);
  EXPECT_FALSE(f->fused);
  const double array = 1024.0 * 1024 * 4;
  EXPECT_EQ(Op(*t, "a").bytes, array);      // reads x
  EXPECT_EQ(Op(*t, "b").bytes, array);      // reads y
  EXPECT_EQ(Op(*t, "c").bytes, 2 * array);  // reads z, writes c
  EXPECT_TRUE(Op(*t, "a").fused);
  EXPECT_EQ(Op(*f, "f").bytes, 4 * array);
  for (const char* name : {"a", "b", "c"}) ASSERT_EQ(Op(*t, name).bound, Bound::kMemory) << name;
  ASSERT_EQ(Op(*f, "f").bound, Bound::kMemory);
  EXPECT_NEAR(t->step_seconds, f->step_seconds, 1e-12 * f->step_seconds);
}

// Issue 12, item 4: a convert feeding a dot fuses into it. The convert reads its bf16 input
// (2 bytes an element) and writes nothing; the dot reads w and writes its result, not the f32
// copy of x.
TEST(Fusion, ConvertFusesIntoTheDotThatReadsIt) {
  std::unique_ptr<Module> m = Parse(R"(HloModule convert_dot

ENTRY main {
  x = bf16[512,1024]{1,0} parameter(0)
  w = f32[1024,256]{1,0} parameter(1)
  c = f32[512,1024]{1,0} convert(x)
  ROOT d = f32[512,256]{1,0} dot(c, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
)");
  ASSERT_NE(m, nullptr);
  absl::StatusOr<Timeline> t = Simulate(*m, "tpu_v5p");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_TRUE(Op(*t, "c").fused);
  EXPECT_EQ(Op(*t, "c").bytes, 512.0 * 1024 * 2);
  EXPECT_EQ(Op(*t, "d").bytes, 1024.0 * 256 * 4 + 512.0 * 256 * 4);
}

// Inside a call or a loop body the same fusion applies: the chain called once costs the chain
// in the entry (parameters and the call itself are free), and a loop of 3 trips
// over it costs 3 chains plus 4 conditions.
TEST(Fusion, AppliesInsideCallsAndLoopBodies) {
  std::unique_ptr<Module> chain = Parse(kUnfused);
  std::unique_ptr<Module> called = Parse(R"(HloModule called

chain {
  x = f32[1024,1024]{1,0} parameter(0)
  y = f32[1024,1024]{1,0} parameter(1)
  z = f32[1024,1024]{1,0} parameter(2)
  a = f32[1024,1024]{1,0} exponential(x)
  b = f32[1024,1024]{1,0} add(a, y)
  ROOT c = f32[1024,1024]{1,0} multiply(b, z)
}

ENTRY main {
  x = f32[1024,1024]{1,0} parameter(0)
  y = f32[1024,1024]{1,0} parameter(1)
  z = f32[1024,1024]{1,0} parameter(2)
  ROOT k = f32[1024,1024]{1,0} call(x, y, z), to_apply=chain
}
)");
  std::unique_ptr<Module> loop = Parse(R"(HloModule loop

body {
  s = (s32[], f32[1024,1024]{1,0}, f32[1024,1024]{1,0}) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  x = f32[1024,1024]{1,0} get-tuple-element(s), index=1
  y = f32[1024,1024]{1,0} get-tuple-element(s), index=2
  one = s32[] constant(1)
  n = s32[] add(i, one)
  a = f32[1024,1024]{1,0} exponential(x)
  b = f32[1024,1024]{1,0} add(a, y)
  c = f32[1024,1024]{1,0} multiply(b, y)
  ROOT r = (s32[], f32[1024,1024]{1,0}, f32[1024,1024]{1,0}) tuple(n, c, y)
}

cond {
  s = (s32[], f32[1024,1024]{1,0}, f32[1024,1024]{1,0}) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  three = s32[] constant(3)
  ROOT lt = pred[] compare(i, three), direction=LT
}

ENTRY main {
  x = f32[1024,1024]{1,0} parameter(0)
  y = f32[1024,1024]{1,0} parameter(1)
  zero = s32[] constant(0)
  init = (s32[], f32[1024,1024]{1,0}, f32[1024,1024]{1,0}) tuple(zero, x, y)
  ROOT w = (s32[], f32[1024,1024]{1,0}, f32[1024,1024]{1,0}) while(init), condition=cond, body=body
}
)");
  ASSERT_NE(chain, nullptr);
  ASSERT_NE(called, nullptr);
  ASSERT_NE(loop, nullptr);
  absl::StatusOr<Timeline> t = Simulate(*chain, "gpu_h100"), c = Simulate(*called, "gpu_h100"),
                           l = Simulate(*loop, "gpu_h100");
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_TRUE(l.ok()) << l.status();
  // The call is inlined (simulator.h step 1): its chain, fused by the callee's plan, is the
  // step, and the call itself takes no time.
  EXPECT_DOUBLE_EQ(c->step_seconds, t->step_seconds);
  EXPECT_EQ(Op(*c, "k").seconds, 0);
  EXPECT_TRUE(Op(*c, "k/a").fused);
  // The body's chain reads x and y, y again (fused: read once per operand use), writes c:
  // the same 4 arrays and one launch as the entry chain, whose z is the body's second y. The
  // counter add and the condition's compare are tiny kernels of their own.
  absl::StatusOr<Chip> chip = ResolveChip("gpu_h100");
  ASSERT_TRUE(chip.ok());
  const double launch = chip->proto().compute().kernel_overhead_seconds();
  const double body = t->step_seconds + launch;  // the chain, and the counter's add kernel
  const double condition = launch;               // the compare kernel
  // Tolerance: the 7 scalar kernels' own HBM time, a few bytes each at 3.35 TB/s (~2 ps each),
  // on top of their launches; 1e-10 s bounds it, 4 orders below the 25 us loop.
  EXPECT_NEAR(Op(*l, "w").seconds, 3 * body + 4 * condition, 1e-10);
  EXPECT_GT(Op(*l, "w").seconds, 3 * body + 4 * condition);
  EXPECT_TRUE(l->untimed.empty());
}

TEST(Fusion, ProducerWithAnOpaqueUserIsNotFused) {
  std::unique_ptr<Module> m = Parse(R"(HloModule kept

ENTRY main {
  x = f32[64]{0} parameter(0)
  a = f32[64]{0} negate(x)
  s = f32[64]{0} sort(a), dimensions={0}, to_apply=lt
  ROOT r = f32[64]{0} add(a, s)
}

lt {
  p = f32[] parameter(0)
  q = f32[] parameter(1)
  ROOT c = pred[] compare(p, q), direction=LT
}
)");
  ASSERT_NE(m, nullptr);
  const FusionPlan plan = PlanFusion(*m->entry());
  EXPECT_THAT(plan.interior, ElementsAre(false, false, false, false));
}

TEST(Fusion, FusedCostDropsTheWriteAndTheLaunch) {
  std::unique_ptr<Module> m = Parse(kUnfused);
  ASSERT_NE(m, nullptr);
  const Instruction& b = *m->entry()->instructions()[4];
  OpCost cost;
  cost.counts = OpCounts{.bytes_accessed = 300, .operand_bytes = {100, 100}, .output_bytes = 100};
  cost.compute_seconds = 1;
  cost.memory_seconds = 3;
  cost.overhead_seconds = 0.5;
  cost.seconds = 3.5;
  cost.bound = Bound::kMemory;
  const std::vector<bool> operand_interior = {true, false};
  const OpCost fused = FusedCost(b, cost, /*interior=*/true, operand_interior);
  EXPECT_EQ(fused.counts.bytes_accessed, 100);  // only y is read
  EXPECT_EQ(fused.memory_seconds, 1);
  EXPECT_EQ(fused.overhead_seconds, 0);
  EXPECT_EQ(fused.seconds, 1);
  EXPECT_EQ(fused.bound, Bound::kCompute);
  const std::vector<bool> none = {false, false};
  EXPECT_EQ(FusedCost(b, cost, false, none).seconds, 3.5);
}

}  // namespace
}  // namespace perfsim
