// Ops that write their result into a dying operand's buffer (DeviceEvaluator::TakeOperandBuffer:
// elementwise ops and dynamic-update-slice) must never change a value anyone can still see:
// the caller's inputs, an input shared by several devices, a buffer held inside a live tuple
// or by a later operand. Each case checks the outputs against hand-derived values and that
// nothing visible changed.
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/util/status_matchers.h"
#include "tests/interp/interp_test_util.h"

namespace perfsim {
namespace {

using ::perfsim::testing::F32;
using ::perfsim::testing::RunHlo;
using ::perfsim::testing::Values;
using ::testing::ElementsAre;

TEST(InterpInPlace, CallersInputsAndSharedInputsStayUnchanged) {
  constexpr char kHlo[] = R"(
HloModule m
ENTRY e {
  x = f32[3] parameter(0)
  ROOT n = f32[3] negate(x)
})";
  // One input set for two devices: both read the same buffer, so neither may write it.
  const std::vector<std::vector<Literal>> inputs = {{F32({3}, {1, 2, 3})}};
  InterpreterOptions options;
  options.num_devices = 2;
  PERFSIM_ASSERT_OK_AND_ASSIGN(RunResult result, RunHlo(kHlo, inputs, options));
  EXPECT_THAT(Values(result.outputs[0][0]), ElementsAre(-1, -2, -3));
  EXPECT_THAT(Values(result.outputs[1][0]), ElementsAre(-1, -2, -3));
  EXPECT_THAT(Values(inputs[0][0]), ElementsAre(1, 2, 3));  // the caller's copy
}

TEST(InterpInPlace, ABufferInsideALiveTupleIsNotWritten) {
  // a dies at b, but the tuple t still holds it: b needs a buffer of its own, and t keeps -x.
  constexpr char kHlo[] = R"(
HloModule m
ENTRY e {
  x = f32[2] parameter(0)
  a = f32[2] negate(x)
  t = (f32[2]) tuple(a)
  b = f32[2] exponential(a)
  ROOT r = ((f32[2]), f32[2]) tuple(t, b)
})";
  const std::vector<std::vector<Literal>> inputs = {{F32({2}, {0, 1})}};
  PERFSIM_ASSERT_OK_AND_ASSIGN(RunResult result, RunHlo(kHlo, inputs));
  ASSERT_EQ(result.outputs[0].size(), 2u);
  EXPECT_THAT(Values(result.outputs[0][0].tuple_elements()[0]), ElementsAre(0, -1));
  EXPECT_THAT(Values(result.outputs[0][1]), ElementsAre(1, static_cast<double>(std::exp(-1.0f))));
}

TEST(InterpInPlace, LoopCarriedBufferUpdatedOneSliceAtATime) {
  // A 4-step loop writes row i of a [4,2] cache to i+1 (dynamic-update-slice on the carried
  // buffer, which dies with each step): [[1,1],[2,2],[3,3],[4,4]]. The entry's zero-filled
  // broadcast is only the loop's, so the first step may write into it too.
  constexpr char kHlo[] = R"(
HloModule m
cond {
  s = (s32[], f32[4,2]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  four = s32[] constant(4)
  ROOT lt = pred[] compare(i, four), direction=LT
}
body {
  s = (s32[], f32[4,2]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  cache = f32[4,2] get-tuple-element(s), index=1
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  v = f32[] convert(i1)
  row = f32[1,2] broadcast(v), dimensions={}
  zero = s32[] constant(0)
  updated = f32[4,2] dynamic-update-slice(cache, row, i, zero)
  ROOT t = (s32[], f32[4,2]) tuple(i1, updated)
}
ENTRY e {
  z = f32[] constant(0)
  cache = f32[4,2] broadcast(z), dimensions={}
  start = s32[] constant(0)
  init = (s32[], f32[4,2]) tuple(start, cache)
  loop = (s32[], f32[4,2]) while(init), condition=cond, body=body
  ROOT r = f32[4,2] get-tuple-element(loop), index=1
})";
  PERFSIM_ASSERT_OK_AND_ASSIGN(RunResult result, RunHlo(kHlo, {{}}));
  EXPECT_THAT(Values(result.outputs[0][0]), ElementsAre(1, 1, 2, 2, 3, 3, 4, 4));
  // Every step writes in place, so the cache is one 32-byte buffer for the whole run. Peak,
  // while row is made: constants z, start, four, one, zero (20) + cache (32) + i, i1, v (12)
  // + row (8) = 72 bytes; a copy per step would add another 32.
  EXPECT_EQ(result.observed_peak_bytes, 72);
}

TEST(InterpInPlace, AnOperandUsedTwiceIsNotWritten) {
  // x feeds both operands of the add and the later multiply: no operand dies alone at the add.
  constexpr char kHlo[] = R"(
HloModule m
ENTRY e {
  x = f32[2] parameter(0)
  s = f32[2] add(x, x)
  ROOT p = f32[2] multiply(s, x)
})";
  const std::vector<std::vector<Literal>> inputs = {{F32({2}, {2, 3})}};
  PERFSIM_ASSERT_OK_AND_ASSIGN(RunResult result, RunHlo(kHlo, inputs));
  EXPECT_THAT(Values(result.outputs[0][0]), ElementsAre(8, 18));  // (x + x) · x
}

}  // namespace
}  // namespace perfsim
