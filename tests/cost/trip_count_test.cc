// Static trip counts (sim/cost/trip_count.h) and the true-mode slice views of a scan
// (op_counts.h: a contiguous layer of a stacked operand is an address offset), on small
// modules whose counts are derived in the comments.
#include "sim/cost/trip_count.h"

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/cost/op_counts.h"
#include "sim/ir/hlo_parser.h"
#include "sim/ir/verifier.h"

namespace perfsim {
namespace {

using ::testing::ElementsAre;

constexpr CountOptions kXla{.mode = CostMode::kXlaCompatible, .num_devices = 1};
constexpr CountOptions kTrue{.mode = CostMode::kTrue, .num_devices = 1};

std::unique_ptr<Module> Parse(const std::string& text) {
  absl::StatusOr<std::unique_ptr<Module>> module = ParseHloModule(text, "test.hlo");
  EXPECT_TRUE(module.ok()) << module.status();
  if (!module.ok()) return nullptr;
  const absl::Status verified = VerifyModule(**module);
  EXPECT_TRUE(verified.ok()) << verified;
  return *std::move(module);
}

const Instruction& Root(const Module& module) { return *module.entry()->root(); }

// A lowered `lax.scan` of 6 steps as JAX writes it: no backend_config, the counter at tuple
// index 0 starting from constant START, stepped by STEP, compared DIR with BOUND. Body: one
// f32[4] add (4 flops) and the s32 add (1); condition: one compare (1).
std::string CountedLoop(const std::string& start, const std::string& step,
                        const std::string& direction, const std::string& bound,
                        const std::string& config = "") {
  return absl::StrReplaceAll(R"(HloModule m
body {
  p = (s32[], f32[4]{0}) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  x = f32[4]{0} get-tuple-element(p), index=1
  step = s32[] constant(STEP)
  j = s32[] add(i, step)
  y = f32[4]{0} add(x, x)
  ROOT t = (s32[], f32[4]{0}) tuple(j, y)
}
cond {
  p = (s32[], f32[4]{0}) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(BOUND)
  ROOT c = pred[] compare(i, n), direction=DIR
}
ENTRY e {
  start = s32[] constant(START)
  x = f32[4]{0} parameter(0)
  init = (s32[], f32[4]{0}) tuple(start, x)
  ROOT w = (s32[], f32[4]{0}) while(init), condition=cond, body=body CONFIG
})",
                             {{"START", start},
                              {"STEP", step},
                              {"DIR", direction},
                              {"BOUND", bound},
                              {"CONFIG", config}});
}

TEST(StaticTripCount, CountedLoopWithoutBackendConfig) {
  auto m = Parse(CountedLoop("0", "1", "LT", "6"));
  EXPECT_EQ(KnownTripCount(Root(*m)), std::nullopt);
  EXPECT_EQ(CountedLoopTrips(Root(*m)), 6);
  EXPECT_EQ(StaticTripCount(Root(*m)), 6);
  // True: 6 bodies of 5 flops and 7 conditions of 1 = 37. XLA counts one of each: 6.
  EXPECT_EQ(CountInstruction(Root(*m), kTrue).flops, 6 * 5 + 7 * 1);
  EXPECT_EQ(CountInstruction(Root(*m), kXla).flops, 6);
}

TEST(StaticTripCount, StepsBoundsAndDirections) {
  // for (i = 10; i > 0; i -= 3): 10, 7, 4, 1 -> 4 trips.
  EXPECT_EQ(CountedLoopTrips(Root(*Parse(CountedLoop("10", "-3", "GT", "0")))), 4);
  // for (i = 0; i <= 6; i += 2): 0, 2, 4, 6 -> 4 trips.
  EXPECT_EQ(CountedLoopTrips(Root(*Parse(CountedLoop("0", "2", "LE", "6")))), 4);
  // A loop that never runs.
  EXPECT_EQ(CountedLoopTrips(Root(*Parse(CountedLoop("6", "1", "LT", "6")))), 0);
  // One that never ends, and one whose != never meets the bound: unknown.
  EXPECT_EQ(CountedLoopTrips(Root(*Parse(CountedLoop("0", "-1", "LT", "6")))), std::nullopt);
  EXPECT_EQ(CountedLoopTrips(Root(*Parse(CountedLoop("0", "4", "NE", "6")))), std::nullopt);
}

TEST(StaticTripCount, KnownTripCountWins) {
  // XLA's annotation is taken as written, even where the pattern would say otherwise.
  auto m = Parse(CountedLoop("0", "1", "LT", "6", R"(, backend_config={"known_trip_count":{"n":"5"}})"));
  EXPECT_EQ(StaticTripCount(Root(*m)), 5);
  EXPECT_EQ(CountedLoopTrips(Root(*m)), 6);
}

TEST(StaticTripCount, CompareWrappedInAFusion) {
  // XLA:CPU wraps the condition's lone compare in a fusion of its two operands.
  auto m = Parse(R"(HloModule m
body {
  p = (s32[], f32[4]{0}) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  x = f32[4]{0} get-tuple-element(p), index=1
  one = s32[] constant(1)
  j = s32[] add(i, one)
  ROOT t = (s32[], f32[4]{0}) tuple(j, x)
}
wrapped_compare {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT lt = pred[] compare(a, b), direction=LT
}
cond {
  p = (s32[], f32[4]{0}) parameter(0)
  n = s32[] constant(8)
  i = s32[] get-tuple-element(p), index=0
  ROOT c = pred[] fusion(i, n), kind=kLoop, calls=wrapped_compare
}
ENTRY e {
  start = s32[] constant(0)
  x = f32[4]{0} parameter(0)
  init = (s32[], f32[4]{0}) tuple(start, x)
  ROOT w = (s32[], f32[4]{0}) while(init), condition=cond, body=body
})");
  EXPECT_EQ(CountedLoopTrips(Root(*m)), 8);
}

TEST(StaticTripCount, CounterNotStartingFromAConstantIsUnknown) {
  auto m = Parse(R"(HloModule m
body {
  p = (s32[], f32[4]{0}) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  x = f32[4]{0} get-tuple-element(p), index=1
  one = s32[] constant(1)
  j = s32[] add(i, one)
  ROOT t = (s32[], f32[4]{0}) tuple(j, x)
}
cond {
  p = (s32[], f32[4]{0}) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(8)
  ROOT c = pred[] compare(i, n), direction=LT
}
ENTRY e {
  start = s32[] parameter(1)
  x = f32[4]{0} parameter(0)
  init = (s32[], f32[4]{0}) tuple(start, x)
  ROOT w = (s32[], f32[4]{0}) while(init), condition=cond, body=body
})");
  EXPECT_EQ(StaticTripCount(Root(*m)), std::nullopt);
  // Counted once in both modes: the body's counter add (1 flop) and the compare (1).
  EXPECT_EQ(CountInstruction(Root(*m), kTrue).flops, 1 + 1);
}

TEST(SliceView, ContiguousLayerOfAStackIsAnOffset) {
  // One layer [1,8,16] of a row-major stack [4,8,16] f32: XLA reads the slice (512 B) and the
  // first index (4 B) and writes the slice (512 B): 1028 B. True: an address offset, 0 B.
  auto m = Parse(R"(HloModule m
ENTRY e {
  w = f32[4,8,16]{2,1,0} parameter(0)
  i = s32[] parameter(1)
  z = s32[] constant(0)
  ROOT s = f32[1,8,16]{2,1,0} dynamic-slice(w, i, z, z), dynamic_slice_sizes={1,8,16}
})");
  EXPECT_EQ(CountInstruction(Root(*m), kXla).bytes_accessed, 512 + 4 + 512);
  const OpCounts c = CountInstruction(Root(*m), kTrue);
  EXPECT_EQ(c.bytes_accessed, 0);
  EXPECT_THAT(c.operand_bytes, ElementsAre(0, 0, 0, 0));
}

TEST(SliceView, StridedBlockIsStillACopy) {
  // A column block [4,8,1] of [4,8,16] is 32 pieces of 4 B: read 128 B, write 128 B, and the
  // true count reads all three indices (12 B): 268 B.
  auto m = Parse(R"(HloModule m
ENTRY e {
  w = f32[4,8,16]{2,1,0} parameter(0)
  i = s32[] parameter(1)
  z = s32[] constant(0)
  ROOT s = f32[4,8,1]{2,1,0} dynamic-slice(w, z, z, i), dynamic_slice_sizes={4,8,1}
})");
  EXPECT_EQ(CountInstruction(Root(*m), kTrue).bytes_accessed, 128 + 128 + 12);
}

TEST(SliceView, InPlaceUpdateOfALayerIsWrittenByItsProducer) {
  // dynamic-update-slice of one layer [1,8,16] into [4,8,16]: XLA reads the update (512 B)
  // and one index (4 B) and writes the update (512 B). True: the kernel that computed the
  // update writes it where it lies, 0 B here.
  auto m = Parse(R"(HloModule m
ENTRY e {
  w = f32[4,8,16]{2,1,0} parameter(0)
  u = f32[1,8,16]{2,1,0} parameter(1)
  i = s32[] parameter(2)
  z = s32[] constant(0)
  ROOT s = f32[4,8,16]{2,1,0} dynamic-update-slice(w, u, i, z, z)
})");
  EXPECT_EQ(CountInstruction(Root(*m), kXla).bytes_accessed, 512 + 4 + 512);
  EXPECT_EQ(CountInstruction(Root(*m), kTrue).bytes_accessed, 0);
}

TEST(SliceView, FusionOfASliceAndBitcastsIsAView) {
  // XLA:CPU's "dynamic-slice_bitcast_fusion" of a scan body, with the reversed index of the
  // backward scan (3 - i) computed inside: XLA charges the slice read and written plus the
  // index (512 + 512 + 4 B); true: a view, 0 B. A fusion that also computes on the layer is
  // a kernel and keeps its bytes: negate reads and writes 512 B, the index 4 B.
  const std::string text = R"(HloModule m
view {
  w = f32[4,8,16]{2,1,0} parameter(0)
  i = s32[] parameter(1)
  three = s32[] constant(3)
  r = s32[] subtract(three, i)
  z = s32[] constant(0)
  s = f32[1,8,16]{2,1,0} dynamic-slice(w, r, z, z), dynamic_slice_sizes={1,8,16}
  ROOT b = f32[8,16]{1,0} bitcast(s)
}
compute {
  w = f32[4,8,16]{2,1,0} parameter(0)
  i = s32[] parameter(1)
  z = s32[] constant(0)
  s = f32[1,8,16]{2,1,0} dynamic-slice(w, i, z, z), dynamic_slice_sizes={1,8,16}
  b = f32[8,16]{1,0} bitcast(s)
  ROOT n = f32[8,16]{1,0} negate(b)
}
ENTRY e {
  w = f32[4,8,16]{2,1,0} parameter(0)
  i = s32[] parameter(1)
  v = f32[8,16]{1,0} fusion(w, i), kind=kLoop, calls=view
  c = f32[8,16]{1,0} fusion(w, i), kind=kLoop, calls=compute
  ROOT t = (f32[8,16]{1,0}, f32[8,16]{1,0}) tuple(v, c)
})";
  auto m = Parse(text);
  const Instruction& view = *Root(*m).operand(0);
  const Instruction& compute = *Root(*m).operand(1);
  EXPECT_EQ(CountInstruction(view, kXla).bytes_accessed, 512 + 512 + 4);
  EXPECT_EQ(CountInstruction(view, kTrue).bytes_accessed, 0);
  EXPECT_EQ(CountInstruction(view, kTrue).flops, 0);
  EXPECT_EQ(CountInstruction(compute, kTrue).bytes_accessed, 512 + 512 + 4);
}

}  // namespace
}  // namespace perfsim
