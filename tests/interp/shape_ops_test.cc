// Data-movement ops: broadcast, reshape, transpose, slice, dynamic-slice/update-slice (with
// XLA's index clamping), concatenate, pad (negative and interior), reverse, bitcast.
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/util/status_matchers.h"
#include "tests/interp/interp_test_util.h"

namespace perfsim {
namespace {

using ::perfsim::testing::F32;
using ::perfsim::testing::Run1;
using ::perfsim::testing::S32;
using ::perfsim::testing::Values;
using ::testing::ElementsAre;

TEST(InterpShape, BroadcastTransposeReshape) {
  // x = [1, 2, 3] broadcast into dim 1 of [2,3]: rows [1 2 3], [1 2 3].
  // Transposed: [[1,1],[2,2],[3,3]] -> row-major 1 1 2 2 3 3; reshaped to [6] unchanged.
  constexpr char kHlo[] = R"(
HloModule m
ENTRY e {
  x = f32[3] parameter(0)
  b = f32[2,3] broadcast(x), dimensions={1}
  t = f32[3,2] transpose(b), dimensions={1,0}
  ROOT r = f32[6] reshape(t)
})";
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::vector<Literal> out, Run1(kHlo, {F32({3}, {1, 2, 3})}));
  EXPECT_THAT(Values(out[0]), ElementsAre(1, 1, 2, 2, 3, 3));
}

TEST(InterpShape, SliceWithStride) {
  // x = 0..9; [1:8:3] picks 1, 4, 7.
  constexpr char kHlo[] = R"(
HloModule m
ENTRY e {
  x = f32[10] parameter(0)
  ROOT s = f32[3] slice(x), slice={[1:8:3]}
})";
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::vector<Literal> out,
                               Run1(kHlo, {F32({10}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9})}));
  EXPECT_THAT(Values(out[0]), ElementsAre(1, 4, 7));
}

TEST(InterpShape, DynamicSliceClampsStartIndices) {
  // x = [[0,1,2,3],[4,5,6,7],[8,9,10,11]], slice sizes {2,2}.
  // Start (5, -3) clamps to (min(5, 3-2), max(-3, 0)) = (1, 0): rows 1..2, cols 0..1
  // = [4,5,8,9].
  constexpr char kHlo[] = R"(
HloModule m
ENTRY e {
  x = f32[3,4] parameter(0)
  i = s32[] parameter(1)
  j = s32[] parameter(2)
  ROOT d = f32[2,2] dynamic-slice(x, i, j), dynamic_slice_sizes={2,2}
})";
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::vector<Literal> out,
                               Run1(kHlo, {F32({3, 4}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}),
                                           S32({}, {5}), S32({}, {-3})}));
  EXPECT_THAT(Values(out[0]), ElementsAre(4, 5, 8, 9));
}

TEST(InterpShape, DynamicSlicesTakeXlasOlderOneArrayForm) {
  // One s32[1] array of start indices on a rank-1 operand (change_op_data_type_test): start 9
  // of [0..9] with size 2 clamps to 10 - 2 = 8: [8, 9]. The update form writes [5, 6] at
  // start [1]: [0, 5, 6, 3].
  constexpr char kHlo[] = R"(
HloModule m
ENTRY e {
  x = f32[10] parameter(0)
  i = s32[1] parameter(1)
  d = f32[2] dynamic-slice(x, i), dynamic_slice_sizes={2}
  y = f32[4] constant({0, 1, 2, 3})
  u = f32[2] constant({5, 6})
  j = s32[1] constant({1})
  ROOT t = (f32[2], f32[4]) tuple(d, f32[4] dynamic-update-slice(y, u, j))
})";
  PERFSIM_ASSERT_OK_AND_ASSIGN(
      std::vector<Literal> out,
      Run1(kHlo, {F32({10}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}), S32({1}, {9})}));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_THAT(Values(out[0]), ElementsAre(8, 9));
  EXPECT_THAT(Values(out[1]), ElementsAre(0, 5, 6, 3));
}

TEST(InterpShape, DynamicUpdateSliceClampsStartIndices) {
  // A [2] update at start 3 of a [4] operand clamps to start 4 - 2 = 2: [0, 0, 7, 8].
  constexpr char kHlo[] = R"(
HloModule m
ENTRY e {
  x = f32[4] parameter(0)
  u = f32[2] parameter(1)
  i = s32[] parameter(2)
  ROOT d = f32[4] dynamic-update-slice(x, u, i)
})";
  PERFSIM_ASSERT_OK_AND_ASSIGN(
      std::vector<Literal> out,
      Run1(kHlo, {F32({4}, {0, 0, 0, 0}), F32({2}, {7, 8}), S32({}, {3})}));
  EXPECT_THAT(Values(out[0]), ElementsAre(0, 0, 7, 8));
}

TEST(InterpShape, ConcatenateAlongDimensionOne) {
  // [[1],[2]] ++ [[3,4],[5,6]] along dim 1 = [[1,3,4],[2,5,6]].
  constexpr char kHlo[] = R"(
HloModule m
ENTRY e {
  a = f32[2,1] parameter(0)
  b = f32[2,2] parameter(1)
  ROOT c = f32[2,3] concatenate(a, b), dimensions={1}
})";
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::vector<Literal> out,
                               Run1(kHlo, {F32({2, 1}, {1, 2}), F32({2, 2}, {3, 4, 5, 6})}));
  EXPECT_THAT(Values(out[0]), ElementsAre(1, 3, 4, 2, 5, 6));
}

TEST(InterpShape, PadWithInteriorAndNegativeEdges) {
  // x = [1, 2, 3], padding=-1_2_1 with value 9: interior padding gives [1 9 2 9 3]; low -1
  // drops the first element, high 2 appends two 9s: [9, 2, 9, 3, 9, 9].
  constexpr char kHlo[] = R"(
HloModule m
ENTRY e {
  x = f32[3] parameter(0)
  v = f32[] constant(9)
  ROOT p = f32[6] pad(x, v), padding=-1_2_1
})";
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::vector<Literal> out, Run1(kHlo, {F32({3}, {1, 2, 3})}));
  EXPECT_THAT(Values(out[0]), ElementsAre(9, 2, 9, 3, 9, 9));
}

TEST(InterpShape, ReverseOneDimension) {
  constexpr char kHlo[] = R"(
HloModule m
ENTRY e {
  x = f32[2,3] parameter(0)
  ROOT r = f32[2,3] reverse(x), dimensions={1}
})";
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::vector<Literal> out,
                               Run1(kHlo, {F32({2, 3}, {1, 2, 3, 4, 5, 6})}));
  EXPECT_THAT(Values(out[0]), ElementsAre(3, 2, 1, 6, 5, 4));
}

TEST(InterpShape, BitcastFollowsPhysicalLayouts) {
  // x = [[1,2,3],[4,5,6]] stored column-major ({0,1}): bytes 1 4 2 5 3 6. Bitcast to
  // f32[3,2]{1,0} (row-major) reads those bytes row by row: [[1,4],[2,5],[3,6]].
  constexpr char kHlo[] = R"(
HloModule m
ENTRY e {
  x = f32[2,3]{0,1} parameter(0)
  ROOT b = f32[3,2]{1,0} bitcast(x)
})";
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::vector<Literal> out,
                               Run1(kHlo, {F32({2, 3}, {1, 2, 3, 4, 5, 6})}));
  EXPECT_THAT(Values(out[0]), ElementsAre(1, 4, 2, 5, 3, 6));
}

}  // namespace
}  // namespace perfsim
