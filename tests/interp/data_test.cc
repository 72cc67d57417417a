// gather (with start-index clamping), scatter (duplicates, out-of-bounds windows), sort
// (stability, general comparators) and topk.
#include <limits>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/util/status_matchers.h"
#include "tests/interp/interp_test_util.h"

namespace perfsim {
namespace {

using ::perfsim::testing::F32;
using ::perfsim::testing::Run1;
using ::perfsim::testing::S32;
using ::perfsim::testing::S64;
using ::perfsim::testing::Values;
using ::testing::ElementsAre;

TEST(InterpGather, OutOfBoundsStartIndicesAreClamped) {
  // operand [5,2], row i = [10i, 10i+1]. Rows gathered at start indices 1, 7 and -2 with
  // slice {1,2}: 7 clamps to 5 - 1 = 4 and -2 to 0, giving rows 1, 4, 0.
  constexpr char kHlo[] = R"(
HloModule m
ENTRY e {
  x = f32[5,2] parameter(0)
  i = s32[3,1] parameter(1)
  ROOT g = f32[3,2] gather(x, i), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,2}
})";
  PERFSIM_ASSERT_OK_AND_ASSIGN(
      std::vector<Literal> out,
      Run1(kHlo, {F32({5, 2}, {0, 1, 10, 11, 20, 21, 30, 31, 40, 41}), S32({3, 1}, {1, 7, -2})}));
  EXPECT_THAT(Values(out[0]), ElementsAre(10, 11, 40, 41, 0, 1));
}

TEST(InterpGather, WindowClampsSoTheWholeSliceFits) {
  // A 2-row window starting at row 4 of a 5-row operand would overrun; the start clamps to
  // 5 - 2 = 3: rows 3 and 4.
  constexpr char kHlo[] = R"(
HloModule m
ENTRY e {
  x = f32[5] parameter(0)
  i = s32[1] parameter(1)
  ROOT g = f32[2] gather(x, i), offset_dims={0}, collapsed_slice_dims={}, start_index_map={0}, index_vector_dim=0, slice_sizes={2}
})";
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::vector<Literal> out,
                               Run1(kHlo, {F32({5}, {0, 1, 2, 3, 4}), S32({1}, {4})}));
  EXPECT_THAT(Values(out[0]), ElementsAre(3, 4));
}

TEST(InterpScatter, DuplicateIndicesCombineInUpdateOrder) {
  // Updates [1,2,3,4] at indices [1,1,3,1] into zeros[4]:
  //   add: out[1] = 1 + 2 + 4 = 7, out[3] = 3  -> [0, 7, 0, 3];
  //   set (the update computation returns its second parameter): the last update to index 1
  //   (4) wins -> [0, 4, 0, 3].
  constexpr char kHlo[] = R"(
HloModule m
add { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT s = f32[] add(a, b) }
set { a = f32[] parameter(0)  ROOT b = f32[] parameter(1) }
ENTRY e {
  x = f32[4] parameter(0)
  i = s32[4,1] parameter(1)
  u = f32[4] parameter(2)
  sa = f32[4] scatter(x, i, u), update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add
  ss = f32[4] scatter(x, i, u), update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=set
  ROOT t = (f32[4], f32[4]) tuple(sa, ss)
})";
  PERFSIM_ASSERT_OK_AND_ASSIGN(
      std::vector<Literal> out,
      Run1(kHlo, {F32({4}, {0, 0, 0, 0}), S32({4, 1}, {1, 1, 3, 1}), F32({4}, {1, 2, 3, 4})}));
  EXPECT_THAT(Values(out[0]), ElementsAre(0, 7, 0, 3));
  EXPECT_THAT(Values(out[1]), ElementsAre(0, 4, 0, 3));
}

TEST(InterpScatter, OutOfBoundsWindowsAreSkippedWhole) {
  // Windows of 2 elements at starts 3, -1 and 1 into a [4] operand: [3,5) and [-1,1) do not
  // fit and are dropped entirely; [1,3) gets 5 and 6. The multiply reducer also checks the
  // general (non-native) update path: 1 * 5, 1 * 6.
  constexpr char kHlo[] = R"(
HloModule m
mul_plus {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  m = f32[] multiply(a, b)
  z = f32[] constant(0)
  ROOT s = f32[] add(m, z)
}
ENTRY e {
  x = f32[4] parameter(0)
  i = s32[3,1] parameter(1)
  u = f32[3,2] parameter(2)
  ROOT s = f32[4] scatter(x, i, u), update_window_dims={1}, inserted_window_dims={}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=mul_plus
})";
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::vector<Literal> out,
                               Run1(kHlo, {F32({4}, {1, 1, 1, 1}), S32({3, 1}, {3, -1, 1}),
                                           F32({3, 2}, {9, 9, 9, 9, 5, 6})}));
  EXPECT_THAT(Values(out[0]), ElementsAre(1, 5, 6, 1));
}

TEST(InterpScatter, AnS64IndexWhoseWindowEndWrapsInt64IsDropped) {
  // A window of 2 at start 2^63 - 1 ends past the int64 limit: unchecked, start + 2 wrapped
  // negative, passed `start + extent > dim` and the update was written before the buffer.
  // Checked, the window is out of bounds and dropped like any other.
  constexpr char kHlo[] = R"(
HloModule m
set { a = f32[] parameter(0)  ROOT b = f32[] parameter(1) }
ENTRY e {
  x = f32[4] parameter(0)
  i = s64[2,1] parameter(1)
  u = f32[2,2] parameter(2)
  ROOT s = f32[4] scatter(x, i, u), update_window_dims={1}, inserted_window_dims={}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=set
})";
  PERFSIM_ASSERT_OK_AND_ASSIGN(
      std::vector<Literal> out,
      Run1(kHlo, {F32({4}, {1, 1, 1, 1}), S64({2, 1}, {std::numeric_limits<int64_t>::max(), 1}),
                  F32({2, 2}, {9, 9, 5, 6})}));
  EXPECT_THAT(Values(out[0]), ElementsAre(1, 5, 6, 1));
}

TEST(InterpSort, StableWithDuplicateKeys) {
  // keys [3,1,3,1,2] with payload [0..4]. Ascending, equal keys keep input order:
  // keys [1,1,2,3,3], payload [1,3,4,0,2]. Descending (GT): [3,3,2,1,1], payload [0,2,4,1,3].
  constexpr char kHlo[] = R"(
HloModule m
lt { a = s32[] parameter(0)  b = s32[] parameter(1)  c = s32[] parameter(2)  d = s32[] parameter(3)  ROOT r = pred[] compare(a, b), direction=LT }
gt { a = s32[] parameter(0)  b = s32[] parameter(1)  c = s32[] parameter(2)  d = s32[] parameter(3)  ROOT r = pred[] compare(a, b), direction=GT }
ENTRY e {
  k = s32[5] parameter(0)
  v = s32[5] iota(), iota_dimension=0
  up = (s32[5], s32[5]) sort(k, v), dimensions={0}, is_stable=true, to_apply=lt
  down = (s32[5], s32[5]) sort(k, v), dimensions={0}, is_stable=true, to_apply=gt
  k1 = s32[5] get-tuple-element(up), index=0
  v1 = s32[5] get-tuple-element(up), index=1
  k2 = s32[5] get-tuple-element(down), index=0
  v2 = s32[5] get-tuple-element(down), index=1
  ROOT t = (s32[5], s32[5], s32[5], s32[5]) tuple(k1, v1, k2, v2)
})";
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::vector<Literal> out, Run1(kHlo, {S32({5}, {3, 1, 3, 1, 2})}));
  EXPECT_THAT(Values(out[0]), ElementsAre(1, 1, 2, 3, 3));
  EXPECT_THAT(Values(out[1]), ElementsAre(1, 3, 4, 0, 2));
  EXPECT_THAT(Values(out[2]), ElementsAre(3, 3, 2, 1, 1));
  EXPECT_THAT(Values(out[3]), ElementsAre(0, 2, 4, 1, 3));
}

TEST(InterpSort, GeneralComparatorSortsLexicographicallyAlongDimensionZero) {
  // Columns of a [3,2] array sort independently along dim 0 by (a ascending, b descending),
  // an and/or of compares (native; sort_test.cc checks it against the interpreted path). Column 0: a = [2,1,2], b = [5,7,9] ->
  // (1,7), (2,9), (2,5). Column 1: a = [0,0,1], b = [1,2,3] -> (0,2), (0,1), (1,3).
  constexpr char kHlo[] = R"(
HloModule m
lex {
  a0 = f32[] parameter(0)
  a1 = f32[] parameter(1)
  b0 = f32[] parameter(2)
  b1 = f32[] parameter(3)
  lt = pred[] compare(a0, a1), direction=LT
  eq = pred[] compare(a0, a1), direction=EQ
  gt = pred[] compare(b0, b1), direction=GT
  tie = pred[] and(eq, gt)
  ROOT r = pred[] or(lt, tie)
}
ENTRY e {
  a = f32[3,2] parameter(0)
  b = f32[3,2] parameter(1)
  ROOT s = (f32[3,2], f32[3,2]) sort(a, b), dimensions={0}, to_apply=lex
})";
  PERFSIM_ASSERT_OK_AND_ASSIGN(
      std::vector<Literal> out,
      Run1(kHlo, {F32({3, 2}, {2, 0, 1, 0, 2, 1}), F32({3, 2}, {5, 1, 7, 2, 9, 3})}));
  EXPECT_THAT(Values(out[0]), ElementsAre(1, 0, 2, 0, 2, 1));
  EXPECT_THAT(Values(out[1]), ElementsAre(7, 2, 9, 1, 5, 3));
}

TEST(InterpTopK, TiesKeepTheLowerIndexFirst) {
  // [1,5,5,3]: the two largest are the 5s at indices 1 then 2; the two smallest 1 (index 0)
  // and 3 (index 3).
  constexpr char kHlo[] = R"(
HloModule m
ENTRY e {
  x = f32[1,4] parameter(0)
  big = (f32[1,2], s32[1,2]) topk(x), k=2, largest=true
  small = (f32[1,2], s32[1,2]) topk(x), k=2, largest=false
  bv = f32[1,2] get-tuple-element(big), index=0
  bi = s32[1,2] get-tuple-element(big), index=1
  sv = f32[1,2] get-tuple-element(small), index=0
  si = s32[1,2] get-tuple-element(small), index=1
  ROOT t = (f32[1,2], s32[1,2], f32[1,2], s32[1,2]) tuple(bv, bi, sv, si)
})";
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::vector<Literal> out, Run1(kHlo, {F32({1, 4}, {1, 5, 5, 3})}));
  EXPECT_THAT(Values(out[0]), ElementsAre(5, 5));
  EXPECT_THAT(Values(out[1]), ElementsAre(1, 2));
  EXPECT_THAT(Values(out[2]), ElementsAre(1, 3));
  EXPECT_THAT(Values(out[3]), ElementsAre(0, 3));
}

}  // namespace
}  // namespace perfsim
