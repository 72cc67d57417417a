// dot_general and ragged-dot (all three ragged modes), and the blocked f32 kernel against a
// naive loop.
#include <cmath>
#include <limits>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/interp/dot_kernel.h"
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

TEST(InterpDot, BatchAndContractingDimensions) {
  // lhs [b=2, m=2, k=3], rhs [b=2, k=3, n=1] of ones scaled by batch:
  // batch 0: lhs rows [1,2,3], [4,5,6] . rhs [1,1,1] = 6, 15.
  // batch 1: lhs rows [1,1,1], [2,2,2] . rhs [2,2,2] = 6, 12.
  constexpr char kHlo[] = R"(
HloModule m
ENTRY e {
  a = f32[2,2,3] parameter(0)
  b = f32[2,3,1] parameter(1)
  ROOT d = f32[2,2,1] dot(a, b), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}
})";
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::vector<Literal> out,
                               Run1(kHlo, {F32({2, 2, 3}, {1, 2, 3, 4, 5, 6, 1, 1, 1, 2, 2, 2}),
                                           F32({2, 3, 1}, {1, 1, 1, 2, 2, 2})}));
  EXPECT_THAT(Values(out[0]), ElementsAre(6, 15, 6, 12));
}

TEST(InterpDot, ContractingDimensionFirstOnTheLhs) {
  // a^T b with a [k=2, m=2] = [[1,2],[3,4]], b [k=2, n=1] = [[1],[1]]: (1+3, 2+4) = (4, 6).
  constexpr char kHlo[] = R"(
HloModule m
ENTRY e {
  a = f32[2,2] parameter(0)
  b = f32[2,1] parameter(1)
  ROOT d = f32[2,1] dot(a, b), lhs_contracting_dims={0}, rhs_contracting_dims={0}
})";
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::vector<Literal> out,
                               Run1(kHlo, {F32({2, 2}, {1, 2, 3, 4}), F32({2, 1}, {1, 1})}));
  EXPECT_THAT(Values(out[0]), ElementsAre(4, 6));
}

TEST(InterpDot, Bf16DotAccumulatesInF32AndRoundsOnce) {
  // [1, 2^-8, 2^-8] . [1, 1, 1]: the f32 accumulator holds 1 + 2^-7 exactly, which bf16 can
  // represent. Rounding to bf16 after every add would lose both 2^-8 terms (each 1 + 2^-8 is a
  // tie rounding to 1.0) and give 1.0.
  constexpr char kHlo[] = R"(
HloModule m
ENTRY e {
  a = bf16[1,3] parameter(0)
  b = bf16[3,1] parameter(1)
  f = f32[1,1] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  h = bf16[1,1] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT t = (f32[1,1], bf16[1,1]) tuple(f, h)
})";
  const double e = std::ldexp(1.0, -8);
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::vector<Literal> out,
                               Run1(kHlo, {Bf16({1, 3}, {1, e, e}), Bf16({3, 1}, {1, 1, 1})}));
  EXPECT_EQ(out[0].GetAsDouble(0), 1.0078125);
  EXPECT_EQ(out[1].GetAsDouble(0), 1.0078125);
}

TEST(InterpDot, BlockedKernelMatchesNaiveLoopExactly) {
  // Small integers keep every partial sum exact in f32, so any blocking or packing bug shows
  // up as an exact mismatch. The sizes cross every block edge: m = 97 > kMc = 96 (and not a
  // multiple of the 6-row tile), n = 35 (not a multiple of 16), k = 300 > kKc = 256. The
  // leading dimensions are wider than the matrices to test strided access.
  const int64_t m = 97, n = 35, k = 300, lda = k + 3, ldb = n + 5, ldc = n + 1;
  std::vector<float> a(m * lda), b(k * ldb), c(m * ldc, 1.0f);
  for (int64_t i = 0; i < m * lda; ++i) a[i] = static_cast<float>((i * 31 + 7) % 7 - 3);
  for (int64_t i = 0; i < k * ldb; ++i) b[i] = static_cast<float>((i * 17 + 3) % 5 - 2);
  interp::MatMulAccumulateF32(a.data(), lda, b.data(), ldb, c.data(), ldc, m, n, k);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double want = 1.0;  // C starts at 1: the kernel accumulates
      for (int64_t p = 0; p < k; ++p) want += double{a[i * lda + p]} * double{b[p * ldb + j]};
      ASSERT_EQ(c[i * ldc + j], want) << "at (" << i << ", " << j << ")";
    }
    ASSERT_EQ(c[i * ldc + n], 1.0f) << "the padding column of row " << i << " was written";
  }
}

TEST(InterpRaggedDot, NonContractingEmptyGroupAndRowsPastTheLastGroup) {
  // lhs [5,2] rows r_i = [i, 1]; rhs [3,2,2] with rhs[g] = [[g+1, 0], [0, 1]], so
  // r_i @ rhs[g] = [i*(g+1), 1]. group_sizes [2, 0, 2]: rows 0-1 use group 0, group 1 is
  // empty, rows 2-3 use group 2, and row 4 (past sum = 4) is zero:
  //   [0,1], [1,1], [2*3,1] = [6,1], [3*3,1] = [9,1], [0,0].
  constexpr char kHlo[] = R"(
HloModule m
ENTRY e {
  x = f32[5,2] parameter(0)
  w = f32[3,2,2] parameter(1)
  gs = s32[3] parameter(2)
  ROOT y = f32[5,2] ragged-dot(x, w, gs), lhs_contracting_dims={1}, rhs_contracting_dims={1}, lhs_ragged_dims={0}, rhs_group_dims={0}
})";
  PERFSIM_ASSERT_OK_AND_ASSIGN(
      std::vector<Literal> out,
      Run1(kHlo, {F32({5, 2}, {0, 1, 1, 1, 2, 1, 3, 1, 4, 1}),
                  F32({3, 2, 2}, {1, 0, 0, 1, 2, 0, 0, 1, 3, 0, 0, 1}), S32({3}, {2, 0, 2})}));
  EXPECT_THAT(Values(out[0]), ElementsAre(0, 1, 1, 1, 6, 1, 9, 1, 0, 0));
}

TEST(InterpRaggedDot, GroupSizesWhoseSumWrapsInt64AreAnError) {
  // s64 group sizes [2, 2^63 - 1, 0]: the total wraps negative, which passed the "sum <= the
  // ragged dimension" check.
  constexpr char kHlo[] = R"(
HloModule m
ENTRY e {
  x = f32[5,2] parameter(0)
  w = f32[3,2,2] parameter(1)
  gs = s64[3] parameter(2)
  ROOT y = f32[5,2] ragged-dot(x, w, gs), lhs_contracting_dims={1}, rhs_contracting_dims={1}, lhs_ragged_dims={0}, rhs_group_dims={0}
})";
  EXPECT_THAT(Run1(kHlo, {F32({5, 2}, std::vector<double>(10, 1)),
                          F32({3, 2, 2}, std::vector<double>(12, 1)),
                          S64({3}, {2, std::numeric_limits<int64_t>::max(), 0})}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("group_sizes sum up to group 1: 2 + 9223372036854775807 "
                                 "overflows int64")));
}

TEST(InterpRaggedDot, ContractingModeSumsEachGroupsSegment) {
  // lhs [m=2, k=4] = [[1,2,3,4],[5,6,7,8]], rhs [k=4, n=1] = ones, group_sizes [1, 0, 3]:
  // group 0 sums k in [0,1): (1, 5); group 1 is empty: (0, 0); group 2 sums k in [1,4):
  // (2+3+4, 6+7+8) = (9, 21). The result is [g=3, m=2, n=1].
  constexpr char kHlo[] = R"(
HloModule m
ENTRY e {
  x = f32[2,4] parameter(0)
  w = f32[4,1] parameter(1)
  gs = s32[3] parameter(2)
  ROOT y = f32[3,2,1] ragged-dot(x, w, gs), lhs_contracting_dims={1}, rhs_contracting_dims={0}, lhs_ragged_dims={1}
})";
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::vector<Literal> out,
                               Run1(kHlo, {F32({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8}),
                                           F32({4, 1}, {1, 1, 1, 1}), S32({3}, {1, 0, 3})}));
  EXPECT_THAT(Values(out[0]), ElementsAre(1, 5, 0, 0, 9, 21));
}

TEST(InterpRaggedDot, BatchModeIsTheBatchedDot) {
  // lhs [b=2, m=1, k=2], rhs [b=2, k=2, n=1]: batch 0: [1,2].[1,1] = 3; batch 1: [3,4].[2,2]
  // = 14. group_sizes only partition the batch dimension.
  constexpr char kHlo[] = R"(
HloModule m
ENTRY e {
  x = f32[2,1,2] parameter(0)
  w = f32[2,2,1] parameter(1)
  gs = s32[2] parameter(2)
  ROOT y = f32[2,1,1] ragged-dot(x, w, gs), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}, lhs_ragged_dims={0}
})";
  PERFSIM_ASSERT_OK_AND_ASSIGN(
      std::vector<Literal> out,
      Run1(kHlo, {F32({2, 1, 2}, {1, 2, 3, 4}), F32({2, 2, 1}, {1, 1, 2, 2}), S32({2}, {1, 1})}));
  EXPECT_THAT(Values(out[0]), ElementsAre(3, 14));
}

TEST(InterpRaggedDot, GroupSizesPastTheRaggedDimensionAreAnError) {
  constexpr char kHlo[] = R"(
HloModule m
ENTRY e {
  x = f32[2,2] parameter(0)
  w = f32[2,2,2] parameter(1)
  gs = s32[2] parameter(2)
  ROOT y = f32[2,2] ragged-dot(x, w, gs), lhs_contracting_dims={1}, rhs_contracting_dims={1}, lhs_ragged_dims={0}, rhs_group_dims={0}
})";
  EXPECT_THAT(Run1(kHlo, {F32({2, 2}, {1, 2, 3, 4}), F32({2, 2, 2}, {1, 1, 1, 1, 1, 1, 1, 1}),
                          S32({2}, {2, 1})}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("y: expected group sizes summing to at most the ragged "
                                 "dimension's 2; got 3")));
}

TEST(InterpConvolution, OneDimensionalWithPaddingStrideAndReversal) {
  // x = [1,2,3,4,5] (batch 1, feature 1), kernel [1, 0, -1], padding 1 on each side:
  // out[s] = x[s-1] - x[s+1] with x = 0 outside: [-2, -2, -2, -2, 4]. Stride 2 keeps s = 0, 2,
  // 4: [-2, -2, 4]. Reversing the window uses [-1, 0, 1]: [2, 2, 2, 2, -4].
  constexpr char kHlo[] = R"(
HloModule m
ENTRY e {
  x = f32[1,5,1] parameter(0)
  w = f32[3,1,1] parameter(1)
  a = f32[1,5,1] convolution(x, w), window={size=3 pad=1_1}, dim_labels=b0f_0io->b0f
  b = f32[1,3,1] convolution(x, w), window={size=3 stride=2 pad=1_1}, dim_labels=b0f_0io->b0f
  c = f32[1,5,1] convolution(x, w), window={size=3 pad=1_1 rhs_reversal=1}, dim_labels=b0f_0io->b0f
  ROOT t = (f32[1,5,1], f32[1,3,1], f32[1,5,1]) tuple(a, b, c)
})";
  PERFSIM_ASSERT_OK_AND_ASSIGN(
      std::vector<Literal> out,
      Run1(kHlo, {F32({1, 5, 1}, {1, 2, 3, 4, 5}), F32({3, 1, 1}, {1, 0, -1})}));
  EXPECT_THAT(Values(out[0]), ElementsAre(-2, -2, -2, -2, 4));
  EXPECT_THAT(Values(out[1]), ElementsAre(-2, -2, 4));
  EXPECT_THAT(Values(out[2]), ElementsAre(2, 2, 2, 2, -4));
}

TEST(InterpConvolution, FeatureGroupsMakeADepthwiseConvolution) {
  // Two features, feature_group_count=2: output feature o sees only input feature o.
  // x[s][f] = [[1, 10], [2, 20]], kernel (size 1) weights [3, 5]: out = [[3, 50], [6, 100]].
  constexpr char kHlo[] = R"(
HloModule m
ENTRY e {
  x = f32[1,2,2] parameter(0)
  w = f32[1,1,2] parameter(1)
  ROOT y = f32[1,2,2] convolution(x, w), window={size=1}, dim_labels=b0f_0io->b0f, feature_group_count=2
})";
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::vector<Literal> out, Run1(kHlo, {F32({1, 2, 2}, {1, 10, 2, 20}),
                                                                     F32({1, 1, 2}, {3, 5})}));
  EXPECT_THAT(Values(out[0]), ElementsAre(3, 50, 6, 100));
}

TEST(InterpConvolution, LhsDilationInsertsHoles) {
  // lhs_dilate=2 spreads [1,2,3] to [1,_,2,_,3]; a size-1 window of weight 1 reads it back with
  // zeros in the holes: [1, 0, 2, 0, 3].
  constexpr char kHlo[] = R"(
HloModule m
ENTRY e {
  x = f32[1,1,3] parameter(0)
  w = f32[1,1,1] parameter(1)
  ROOT y = f32[1,1,5] convolution(x, w), window={size=1 lhs_dilate=2}, dim_labels=bf0_oi0->bf0
})";
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::vector<Literal> out,
                               Run1(kHlo, {F32({1, 1, 3}, {1, 2, 3}), F32({1, 1, 1}, {1})}));
  EXPECT_THAT(Values(out[0]), ElementsAre(1, 0, 2, 0, 3));
}

}  // namespace
}  // namespace perfsim
