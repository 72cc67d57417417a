// reduce, reduce-window and select-and-scatter, with native and general reducers.
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/util/status_matchers.h"
#include "tests/interp/interp_test_util.h"

namespace perfsim {
namespace {

using ::perfsim::testing::Bf16;
using ::perfsim::testing::F32;
using ::perfsim::testing::Run1;
using ::perfsim::testing::Values;
using ::testing::ElementsAre;

TEST(InterpReduce, SumAndMaxOverOneDimension) {
  // x = [[1,2,3],[4,5,6]]: row sums 6, 15; column maxima 4, 5, 6.
  constexpr char kHlo[] = R"(
HloModule m
add { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT s = f32[] add(a, b) }
max { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT s = f32[] maximum(a, b) }
ENTRY e {
  x = f32[2,3] parameter(0)
  z = f32[] constant(0)
  ninf = f32[] constant(-inf)
  s = f32[2] reduce(x, z), dimensions={1}, to_apply=add
  m = f32[3] reduce(x, ninf), dimensions={0}, to_apply=max
  ROOT t = (f32[2], f32[3]) tuple(s, m)
})";
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::vector<Literal> out,
                               Run1(kHlo, {F32({2, 3}, {1, 2, 3, 4, 5, 6})}));
  EXPECT_THAT(Values(out[0]), ElementsAre(6, 15));
  EXPECT_THAT(Values(out[1]), ElementsAre(4, 5, 6));
}

TEST(InterpReduce, Bf16SumRoundsAtEveryStep) {
  // Summing [1, 2^-8, 2^-8, 2^-8, 2^-8] in order from init 0: each 1 + 2^-8 is a tie that
  // rounds back to 1.0 (bf16 spacing at 1 is 2^-7), so the bf16 result is 1.0; an f32
  // accumulator would give 1 + 2^-6 = 1.015625.
  constexpr char kHlo[] = R"(
HloModule m
add { a = bf16[] parameter(0)  b = bf16[] parameter(1)  ROOT s = bf16[] add(a, b) }
ENTRY e {
  x = bf16[5] parameter(0)
  z = bf16[] constant(0)
  ROOT s = bf16[] reduce(x, z), dimensions={0}, to_apply=add
})";
  const double e = std::ldexp(1.0, -8);
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::vector<Literal> out, Run1(kHlo, {Bf16({5}, {1, e, e, e, e})}));
  EXPECT_EQ(out[0].GetAsDouble(0), 1.0);
}

TEST(InterpReduce, VariadicArgmaxWithGeneralComparator) {
  // Argmax over [3, 7, 7, 1] keeping the first maximum: value 7 at index 1. The reducer takes
  // the candidate only when it is strictly greater, or equal with a smaller index.
  constexpr char kHlo[] = R"(
HloModule m
argmax {
  av = f32[] parameter(0)
  ai = s32[] parameter(1)
  bv = f32[] parameter(2)
  bi = s32[] parameter(3)
  gt = pred[] compare(bv, av), direction=GT
  eq = pred[] compare(bv, av), direction=EQ
  lt = pred[] compare(bi, ai), direction=LT
  tie = pred[] and(eq, lt)
  take = pred[] or(gt, tie)
  v = f32[] select(take, bv, av)
  i = s32[] select(take, bi, ai)
  ROOT r = (f32[], s32[]) tuple(v, i)
}
ENTRY e {
  x = f32[4] parameter(0)
  idx = s32[4] iota(), iota_dimension=0
  ninf = f32[] constant(-inf)
  big = s32[] constant(2147483647)
  ROOT r = (f32[], s32[]) reduce(x, idx, ninf, big), dimensions={0}, to_apply=argmax
})";
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::vector<Literal> out, Run1(kHlo, {F32({4}, {3, 7, 7, 1})}));
  EXPECT_EQ(out[0].GetAsDouble(0), 7);
  EXPECT_EQ(out[1].GetAsDouble(0), 1);
}

TEST(InterpReduce, ReduceWindowCumulativeSum) {
  // Inclusive cumsum of [1,2,3,4] as a reduce-window: size 4, low padding 3, stride 1.
  // Output i sums x[i-3..i] (padding contributes the init 0): 1, 3, 6, 10.
  constexpr char kHlo[] = R"(
HloModule m
add { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT s = f32[] add(a, b) }
ENTRY e {
  x = f32[4] parameter(0)
  z = f32[] constant(0)
  ROOT c = f32[4] reduce-window(x, z), window={size=4 pad=3_0}, to_apply=add
})";
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::vector<Literal> out, Run1(kHlo, {F32({4}, {1, 2, 3, 4})}));
  EXPECT_THAT(Values(out[0]), ElementsAre(1, 3, 6, 10));
}

TEST(InterpReduce, ReduceWindowStrideAndBaseDilation) {
  // Base dilation 2 turns [1,2,3] into [1,_,2,_,3] (holes are skipped); windows of size 2,
  // stride 2 over it: {1,_} = 1, {2,_} = 2 -> max pooling gives [1, 2].
  constexpr char kHlo[] = R"(
HloModule m
max { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT s = f32[] maximum(a, b) }
ENTRY e {
  x = f32[3] parameter(0)
  z = f32[] constant(-inf)
  ROOT c = f32[2] reduce-window(x, z), window={size=2 stride=2 lhs_dilate=2}, to_apply=max
})";
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::vector<Literal> out, Run1(kHlo, {F32({3}, {1, 2, 3})}));
  EXPECT_THAT(Values(out[0]), ElementsAre(1, 2));
}

TEST(InterpReduce, ReduceWindowMixedPrecisionAccumulatesInTheInputType) {
  // A bf16 init and result over f32 inputs with an f32 reducer (XLA allows the precisions to
  // differ; algebraic_simplifier_test modules 059-061 do this). The window is summed in f32 and
  // rounded to bf16 once: 1 + 3·2^-9 = 1.005859375 lies above the midpoint 1 + 2^-8 between the
  // bf16 neighbours 1 and 1 + 2^-7, so it rounds to 1.0078125. Summing in bf16 instead would
  // give 1 (each 1 + 2^-9 rounds back to 1), and an f32 result would be 1.005859375. The second
  // module's reducer passes through `copy`, so no native form matches it (the generic path).
  for (const char* root :
       {"ROOT s = f32[] add(a, b)", "s = f32[] add(a, b)  ROOT c = f32[] copy(s)"}) {
    const std::string hlo = absl::StrCat(R"(
HloModule m
add { a = f32[] parameter(0)  b = f32[] parameter(1)  )", root, R"( }
ENTRY e {
  x = f32[4] parameter(0)
  z = bf16[] constant(0)
  ROOT c = bf16[1] reduce-window(x, z), window={size=4}, to_apply=add
})");
    PERFSIM_ASSERT_OK_AND_ASSIGN(
        std::vector<Literal> out,
        Run1(hlo, {F32({4}, {1, 0.001953125, 0.001953125, 0.001953125})}));
    EXPECT_EQ(out[0].shape().element_type(), PrimitiveType::kBF16) << root;
    EXPECT_THAT(Values(out[0]), ElementsAre(1.0078125)) << root;
  }
}

TEST(InterpReduce, SelectAndScatterRoutesToTheWindowMaximum) {
  // Max-pool gradient: windows {0,1} and {2,3} of [1,5,4,2] have maxima at 1 and 2; source
  // [10, 20] lands there: [0, 10, 20, 0].
  constexpr char kHlo[] = R"(
HloModule m
ge { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT c = pred[] compare(a, b), direction=GE }
add { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT s = f32[] add(a, b) }
ENTRY e {
  x = f32[4] parameter(0)
  s = f32[2] parameter(1)
  z = f32[] constant(0)
  ROOT r = f32[4] select-and-scatter(x, s, z), window={size=2 stride=2}, select=ge, scatter=add
})";
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::vector<Literal> out,
                               Run1(kHlo, {F32({4}, {1, 5, 4, 2}), F32({2}, {10, 20})}));
  EXPECT_THAT(Values(out[0]), ElementsAre(0, 10, 20, 0));
}

}  // namespace
}  // namespace perfsim
