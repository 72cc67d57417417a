// reduce-window along one dimension with a native reducer takes a row-wise path
// (evaluator_reduce.cc ReduceWindowAlongOneDimension: closed-form window runs, a run equal to
// the previous output's reused). Each case here runs twice on the same input: with `add`
// as the reducer, and with the reducer's result passed through `copy`, which no native form
// matches, so the generic per-window path computes it; the bytes must be identical. Inputs
// are bf16 and f32 with mixed magnitudes, so that the order of the additions shows.
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "sim/util/status_matchers.h"
#include "tests/interp/interp_test_util.h"

namespace perfsim {
namespace {

using ::perfsim::testing::MakeLiteral;
using ::perfsim::testing::Run1;

std::string Module(const std::string& type, const std::string& in_dims,
                   const std::string& out_dims, const std::string& window, bool generic) {
  const std::string reducer =
      generic ? absl::StrCat("  s = ", type, "[] add(a, b)\n  ROOT r = ", type, "[] copy(s)\n")
              : absl::StrCat("  ROOT r = ", type, "[] add(a, b)\n");
  return absl::StrCat("HloModule rw\nsum {\n  a = ", type, "[] parameter(0)\n  b = ", type,
                      "[] parameter(1)\n", reducer, "}\nENTRY e {\n  x = ", type, "[", in_dims,
                      "] parameter(0)\n  z = ", type, "[] constant(0.25)\n  ROOT y = ", type, "[",
                      out_dims, "] reduce-window(x, z), window={", window, "}, to_apply=sum\n}\n");
}

void ExpectSameAsGeneric(const std::string& in_dims, const std::vector<int64_t>& dims,
                         const std::string& out_dims, const std::string& window) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::vector<double> values;
  for (int64_t i = 0; i < n; ++i) {
    values.push_back(((i * 7919) % 211 - 105) * (i % 5 == 0 ? 1000.0 : 0.013));
  }
  for (const std::string type : {"bf16", "f32"}) {
    const PrimitiveType t = type == "bf16" ? PrimitiveType::kBF16 : PrimitiveType::kF32;
    absl::StatusOr<std::vector<Literal>> fast =
        Run1(Module(type, in_dims, out_dims, window, false), {MakeLiteral(t, dims, values)});
    absl::StatusOr<std::vector<Literal>> generic =
        Run1(Module(type, in_dims, out_dims, window, true), {MakeLiteral(t, dims, values)});
    ASSERT_TRUE(fast.ok()) << fast.status();
    ASSERT_TRUE(generic.ok()) << generic.status();
    EXPECT_TRUE((*fast)[0].data() == (*generic)[0].data()) << type << " window " << window;
  }
}

TEST(ReduceWindowOneDimension, ReduceBroadcastBackMatchesGenericPath) {
  // Every output's window (2·16-1 = 31, padded 15 each side) covers the whole row of 16.
  ExpectSameAsGeneric("3,4,16", {3, 4, 16}, "3,4,16", "size=1x1x31 pad=0_0x0_0x15_15");
}

TEST(ReduceWindowOneDimension, CumulativeSumMatchesGenericPath) {
  ExpectSameAsGeneric("5,16", {5, 16}, "5,16", "size=1x16 pad=0_0x15_0");
}

TEST(ReduceWindowOneDimension, StridedDilatedAndPaddedWindowsMatchGenericPath) {
  // Along the middle dimension of [2,23,3]: size 4, stride 3, rhs dilation 2, padding 5/2:
  // padded 30, dilated window 7, (30-7)/3+1 = 8 outputs.
  ExpectSameAsGeneric("2,23,3", {2, 23, 3}, "2,8,3",
                      "size=1x4x1 stride=1x3x1 pad=0_0x5_2x0_0 rhs_dilate=1x2x1");
  // Padding wider than the row: some windows see no input and keep the init value.
  ExpectSameAsGeneric("4,3", {4, 3}, "4,9", "size=1x2 pad=0_0x4_3");
  // Negative padding trims the row.
  ExpectSameAsGeneric("4,9", {4, 9}, "4,3", "size=1x3 stride=1x2 pad=0_0x-1_-1");
}

TEST(ReduceWindowOneDimension, RowBlocksAndTheirRemainderMatchGenericPath) {
  // Rows go through each window 8 at a time: 3·7 = 21 rows are two blocks of 8 and one of 5,
  // along the middle dimension (rows of a block interleaved in memory) and along the last
  // (each row contiguous).
  ExpectSameAsGeneric("3,16,7", {3, 16, 7}, "3,16,7", "size=1x5x1 pad=0_0x2_2x0_0");
  ExpectSameAsGeneric("3,7,16", {3, 7, 16}, "3,7,16", "size=1x1x31 pad=0_0x0_0x15_15");
}

}  // namespace
}  // namespace perfsim
