// Kernel custom calls: perfsim.gmm / perfsim.tgmm (megablox semantics including
// group_offset, zeroed and never-written rows), the TopK custom call, and backend_config
// parsing.
#include "sim/interp/custom_calls.h"

#include <cmath>
#include <limits>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/util/status_matchers.h"
#include "tests/interp/interp_test_util.h"

namespace perfsim {
namespace {

using ::perfsim::testing::Bf16;
using ::perfsim::testing::F32;
using ::perfsim::testing::Run1;
using ::perfsim::testing::S32;
using ::perfsim::testing::S64;
using ::perfsim::testing::StatusIs;
using ::perfsim::testing::Values;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// lhs rows r_i = [i, 1]; rhs[g] = [[a_g, 0], [0, 1]], so r_i @ rhs[g] = [i * a_g, 1].
Literal RowsIAndOne(int64_t m) {
  std::vector<double> v;
  for (int64_t i = 0; i < m; ++i) {
    v.push_back(static_cast<double>(i));
    v.push_back(1);
  }
  return Bf16({m, 2}, v);
}

// rhs[g] = [[a[g], 0], [0, 1]] (bf16 [G, 2, 2]), RowsIAndOne's partner.
Literal ScaleFirstColumn(const std::vector<double>& a) {
  std::vector<double> v;
  for (double a_g : a) v.insert(v.end(), {a_g, 0, 0, 1});
  return Bf16({static_cast<int64_t>(a.size()), 2, 2}, v);
}

// The tgmm lhs x^T for x = RowsIAndOne(m), in f32: [[0, 1, ..., m - 1], [1, 1, ..., 1]].
Literal ColumnsIAndOne(int64_t m) {
  std::vector<double> v;
  for (int64_t i = 0; i < m; ++i) v.push_back(static_cast<double>(i));
  v.insert(v.end(), m, 1.0);
  return F32({2, m}, v);
}

TEST(InterpGmm, RowsPastTheLastGroupAreNeverWrittenSoPoisoned) {
  // G_local = G = 2, a = (1, 2), group_sizes [1, 2]: row 0 -> [0, 1]; rows 1, 2 -> [2, 1],
  // [4, 1]; row 3 belongs to no group and megablox leaves it uninitialised: NaN.
  constexpr char kHlo[] = R"(
HloModule m
ENTRY e {
  x = bf16[4,2] parameter(0)
  w = bf16[2,2,2] parameter(1)
  gs = s32[2] parameter(2)
  ROOT y = f32[4,2] custom-call(x, w, gs), custom_call_target="perfsim.gmm", backend_config={"tiling":[2,2,2]}
})";
  PERFSIM_ASSERT_OK_AND_ASSIGN(
      std::vector<Literal> out,
      Run1(kHlo, {RowsIAndOne(4), ScaleFirstColumn({1, 2}), S32({2}, {1, 2})}));
  const std::vector<double> y = Values(out[0]);
  EXPECT_THAT(std::vector<double>(y.begin(), y.begin() + 6), ElementsAre(0, 1, 2, 1, 4, 1));
  EXPECT_TRUE(std::isnan(y[6]) && std::isnan(y[7]));
}

TEST(InterpGmm, GroupOffsetComputesOnlyLocalGroupsAndZeroesTheRest) {
  // G = 3 groups of sizes [1, 2, 1], one local group (G_local = 1 < G) with offset 1 and
  // a = 5: rows 1, 2 -> [5, 1], [10, 1]; rows 0 and 3 are zeroed as megablox does.
  constexpr char kHlo[] = R"(
HloModule m
ENTRY e {
  x = bf16[4,2] parameter(0)
  w = bf16[1,2,2] parameter(1)
  gs = s32[3] parameter(2)
  ROOT y = f32[4,2] custom-call(x, w, gs), custom_call_target="perfsim.gmm", backend_config={"group_offset":1}
})";
  PERFSIM_ASSERT_OK_AND_ASSIGN(
      std::vector<Literal> out,
      Run1(kHlo, {RowsIAndOne(4), ScaleFirstColumn({5}), S32({3}, {1, 2, 1})}));
  EXPECT_THAT(Values(out[0]), ElementsAre(0, 0, 5, 1, 10, 1, 0, 0));
}

TEST(InterpGmm, DynamicGroupOffsetOperandOverridesTheConfig) {
  // Same as above with the offset 1 given as a fourth operand (config says 0).
  constexpr char kHlo[] = R"(
HloModule m
ENTRY e {
  x = bf16[4,2] parameter(0)
  w = bf16[1,2,2] parameter(1)
  gs = s32[3] parameter(2)
  off = s32[1] parameter(3)
  ROOT y = f32[4,2] custom-call(x, w, gs, off), custom_call_target="perfsim.gmm", backend_config={"group_offset":0}
})";
  PERFSIM_ASSERT_OK_AND_ASSIGN(
      std::vector<Literal> out,
      Run1(kHlo, {RowsIAndOne(4), ScaleFirstColumn({5}), S32({3}, {1, 2, 1}), S32({1}, {1})}));
  EXPECT_THAT(Values(out[0]), ElementsAre(0, 0, 5, 1, 10, 1, 0, 0));
}

TEST(InterpGmm, TransposedRhsIsStoredNByK) {
  // rhs[0] stored [n, k] = [[1, 2], [3, 4]] means the [k, n] matrix [[1, 3], [2, 4]];
  // row [1, 1] @ it = [3, 7].
  constexpr char kHlo[] = R"(
HloModule m
ENTRY e {
  x = f32[1,2] parameter(0)
  w = f32[1,2,2] parameter(1)
  gs = s32[1] parameter(2)
  ROOT y = f32[1,2] custom-call(x, w, gs), custom_call_target="perfsim.gmm", backend_config={"transpose_rhs":true}
})";
  PERFSIM_ASSERT_OK_AND_ASSIGN(
      std::vector<Literal> out,
      Run1(kHlo, {F32({1, 2}, {1, 1}), F32({1, 2, 2}, {1, 2, 3, 4}), S32({1}, {1})}));
  EXPECT_THAT(Values(out[0]), ElementsAre(3, 7));
}

TEST(InterpGmm, RowTileThatDoesNotDivideMIsAnError) {
  constexpr char kHlo[] = R"(
HloModule m
ENTRY e {
  x = bf16[4,2] parameter(0)
  w = bf16[2,2,2] parameter(1)
  gs = s32[2] parameter(2)
  ROOT y = f32[4,2] custom-call(x, w, gs), custom_call_target="perfsim.gmm", backend_config={"tiling":[3,128,128]}
})";
  EXPECT_THAT(Run1(kHlo, {RowsIAndOne(4), ScaleFirstColumn({1, 2}), S32({2}, {1, 2})}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("y: expected m = 4 to be a multiple of the row tile tm = 3")));
}

TEST(InterpGmm, GroupSizesWhoseSumWrapsInt64AreAnError) {
  // s64 group sizes [1, 2^63 - 1]: their running total wraps negative, which passed the
  // "sum <= m" check and made group 1's row count negative.
  constexpr char kHlo[] = R"(
HloModule m
ENTRY e {
  x = bf16[4,2] parameter(0)
  w = bf16[2,2,2] parameter(1)
  gs = s64[2] parameter(2)
  ROOT y = f32[4,2] custom-call(x, w, gs), custom_call_target="perfsim.gmm"
})";
  EXPECT_THAT(
      Run1(kHlo, {RowsIAndOne(4), ScaleFirstColumn({1, 2}),
                  S64({2}, {1, std::numeric_limits<int64_t>::max()})}),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("group_sizes[0..1] sum: 1 + 9223372036854775807 overflows int64")));
}

TEST(InterpGmm, GroupOffsetNearTheInt64LimitSelectsNoGroup) {
  // group_offset 2^63 - 1 plus local group 0 is past every group (and plus 1 would wrap):
  // nothing is computed and, G_local = 2 being all groups, the rows stay poisoned.
  constexpr char kHlo[] = R"(
HloModule m
ENTRY e {
  x = bf16[4,2] parameter(0)
  w = bf16[2,2,2] parameter(1)
  gs = s32[2] parameter(2)
  off = s64[1] parameter(3)
  ROOT y = f32[4,2] custom-call(x, w, gs, off), custom_call_target="perfsim.gmm"
})";
  PERFSIM_ASSERT_OK_AND_ASSIGN(
      std::vector<Literal> out,
      Run1(kHlo, {RowsIAndOne(4), ScaleFirstColumn({1, 2}), S32({2}, {2, 2}),
                  S64({1}, {std::numeric_limits<int64_t>::max()})}));
  for (double v : Values(out[0])) EXPECT_TRUE(std::isnan(v)) << v;
}

TEST(InterpTgmm, EachGroupGetsItsRowsProductAndEmptyGroupsAreZero) {
  // lhs = x^T with x rows [i, 1] (m = 4): lhs = [[0,1,2,3],[1,1,1,1]]; rhs [4,1] = ones.
  // group_sizes [1, 0, 3]: dw[0] = sum over row 0 of x_i^T = [0, 1]; dw[1] = 0 (empty);
  // dw[2] = sum over rows 1..3 = [1+2+3, 3] = [6, 3].
  constexpr char kHlo[] = R"(
HloModule m
ENTRY e {
  xt = f32[2,4] parameter(0)
  dy = f32[4,1] parameter(1)
  gs = s32[3] parameter(2)
  ROOT dw = f32[3,2,1] custom-call(xt, dy, gs), custom_call_target="perfsim.tgmm", backend_config={"tiling":[4,2,1]}
})";
  PERFSIM_ASSERT_OK_AND_ASSIGN(
      std::vector<Literal> out,
      Run1(kHlo, {ColumnsIAndOne(4), F32({4, 1}, {1, 1, 1, 1}), S32({3}, {1, 0, 3})}));
  EXPECT_THAT(Values(out[0]), ElementsAre(0, 1, 0, 0, 6, 3));
}

TEST(InterpTgmm, GroupOffsetSumsOnlyTheLocalGroupsAndIgnoresUncoveredRows) {
  // The expert-parallel case: G = 3 groups of sizes [1, 2, 0] over m = 4 rows, so row 3 is in
  // no group. This shard holds G_local = 2 groups starting at group_offset 1: groups 1 and 2.
  // lhs = x^T with x rows [i, 1]: columns [0,1], [1,1], [2,1], [3,1]; rhs = dy = [1, 10, 100,
  // 1000]^T.
  //   dw[0] = group 1 = rows 1..2: [1, 1] * 10 + [2, 1] * 100 = [210, 110];
  //   dw[1] = group 2 (empty): [0, 0].
  // Row 0 (group 0, another shard's) and row 3 (no group; its dy of 1000 would dominate any
  // sum it leaked into) contribute nothing.
  constexpr char kHlo[] = R"(
HloModule m
ENTRY e {
  xt = f32[2,4] parameter(0)
  dy = f32[4,1] parameter(1)
  gs = s32[3] parameter(2)
  ROOT dw = f32[2,2,1] custom-call(xt, dy, gs), custom_call_target="perfsim.tgmm", backend_config={"tiling":[4,2,1],"group_offset":1}
})";
  PERFSIM_ASSERT_OK_AND_ASSIGN(
      std::vector<Literal> out,
      Run1(kHlo, {ColumnsIAndOne(4), F32({4, 1}, {1, 10, 100, 1000}), S32({3}, {1, 2, 0})}));
  EXPECT_THAT(Values(out[0]), ElementsAre(210, 110, 0, 0));
}

TEST(InterpTgmm, RowsPastTheLastGroupNeverContribute) {
  // One group of 2 rows over m = 4 (G_local = G = 1, no offset): only rows 0..1 count.
  // dw[0] = [0, 1] * 1 + [1, 1] * 10 = [10, 11]; rows 2 and 3 (dy 100 and 1000) are outside.
  constexpr char kHlo[] = R"(
HloModule m
ENTRY e {
  xt = f32[2,4] parameter(0)
  dy = f32[4,1] parameter(1)
  gs = s32[1] parameter(2)
  ROOT dw = f32[1,2,1] custom-call(xt, dy, gs), custom_call_target="perfsim.tgmm", backend_config={"tiling":[4,2,1]}
})";
  PERFSIM_ASSERT_OK_AND_ASSIGN(
      std::vector<Literal> out,
      Run1(kHlo, {ColumnsIAndOne(4), F32({4, 1}, {1, 10, 100, 1000}), S32({1}, {2})}));
  EXPECT_THAT(Values(out[0]), ElementsAre(10, 11));
}

TEST(InterpTopKCustomCall, ReturnsTheLargestWithTheirIndices) {
  // XLA:CPU's TopK custom call with a greater-than comparator: [2, 9, 4] -> (9, 4), (1, 2).
  constexpr char kHlo[] = R"(
HloModule m
gt { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT c = pred[] compare(a, b), direction=GT }
ENTRY e {
  x = f32[1,3] parameter(0)
  ROOT t = (f32[1,2], s32[1,2]) custom-call(x), custom_call_target="TopK", called_computations={gt}
})";
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::vector<Literal> out, Run1(kHlo, {F32({1, 3}, {2, 9, 4})}));
  EXPECT_THAT(Values(out[0]), ElementsAre(9, 4));
  EXPECT_THAT(Values(out[1]), ElementsAre(1, 2));
}

TEST(InterpPinUnpin, CarryABufferThroughAWhileLoop) {
  // XLA's buffer type: Pin [1, 2] into b(s32[2]), then three iterations each Unpin, double and
  // Pin again: [1, 2] * 2^3 = [8, 16].
  constexpr char kHlo[] = R"(
HloModule m
cond {
  param = (s32[], b(s32[2])) parameter(0)
  count = s32[] get-tuple-element(param), index=0
  ROOT lt = pred[] compare(count, s32[] constant(3)), direction=LT
}
body {
  param = (s32[], b(s32[2])) parameter(0)
  count = s32[] get-tuple-element(param), index=0
  b3 = b(s32[2]) get-tuple-element(param), index=1
  v0 = s32[2] custom-call(b3), custom_call_target="Unpin", output_to_operand_aliasing={{}: (0, {})}
  v1 = s32[2] add(v0, v0)
  b6 = b(s32[2]) custom-call(v1), custom_call_target="Pin", output_to_operand_aliasing={{}: (0, {})}
  ROOT result = (s32[], b(s32[2])) tuple(s32[] add(count, s32[] constant(1)), b6)
}
ENTRY e {
  init = s32[2] parameter(0)
  b0 = b(s32[2]) custom-call(init), custom_call_target="Pin", output_to_operand_aliasing={{}: (0, {})}
  w = (s32[], b(s32[2])) while((s32[], b(s32[2])) tuple(s32[] constant(0), b0)), condition=cond, body=body
  b1 = b(s32[2]) get-tuple-element(w), index=1
  ROOT v = s32[2] custom-call(b1), custom_call_target="Unpin", output_to_operand_aliasing={{}: (0, {})}
})";
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::vector<Literal> out, Run1(kHlo, {S32({2}, {1, 2})}));
  EXPECT_THAT(Values(out[0]), ElementsAre(8, 16));
}

TEST(InterpPinUnpin, RefusesBufferTypedInputsAndUnknownInPlaceUpdates) {
  // Entry parameters are arrays the caller passes; a buffer-typed one is refused up front.
  EXPECT_THAT(Run1(R"(HloModule m
ENTRY e {
  p = b(s32[2]) parameter(0)
  ROOT v = s32[2] custom-call(p), custom_call_target="Unpin", output_to_operand_aliasing={{}: (0, {})}
})",
                   {S32({2}, {1, 2})}),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("has a buffer type")));
  // The in-place update between Pin and Unpin is a backend's kernel the interpreter lacks.
  EXPECT_THAT(Run1(R"(HloModule m
ENTRY e {
  p = s32[2] parameter(0)
  b0 = b(s32[2]) custom-call(p), custom_call_target="Pin", output_to_operand_aliasing={{}: (0, {})}
  b1 = b(s32[2]) custom-call(b0), custom_call_target="xla.gpu.add_one", output_to_operand_aliasing={{}: (0, {})}
  ROOT v = s32[2] custom-call(b1), custom_call_target="Unpin", output_to_operand_aliasing={{}: (0, {})}
})",
                   {S32({2}, {1, 2})}),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("got 'xla.gpu.add_one'")));
}

}  // namespace
}  // namespace perfsim
