// sim/util/checked_math.h: overflow is an error naming the quantity, never a wrap.
#include "sim/util/checked_math.h"

#include "gtest/gtest.h"

namespace perfsim {
namespace {

TEST(CheckedMath, MultiplicationThatWrapsIsAnError) {
  // 3 * 6148914691236517206 = 18446744073709551618 = 2^64 + 2: wraps to 2 in int64, the
  // "= 2 tokens" that predict once printed.
  absl::StatusOr<int64_t> tokens = CheckedMul("tokens = batch * seq", 3, 6148914691236517206);
  ASSERT_FALSE(tokens.ok());
  EXPECT_EQ(tokens.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(tokens.status().message(),
            "tokens = batch * seq: 3 * 6148914691236517206 overflows int64 (max "
            "9223372036854775807)");
  EXPECT_EQ(*CheckedMul("t", 4096, 512), 2097152);
  EXPECT_EQ(*CheckedMul("t", -3, 3), -9);
}

TEST(CheckedMath, AdditionAndSubtractionAtTheEdges) {
  EXPECT_EQ(*CheckedAdd("end", kInt64Max - 1, 1), kInt64Max);
  EXPECT_FALSE(CheckedAdd("end", kInt64Max, 1).ok());
  EXPECT_FALSE(CheckedSub("gap", std::numeric_limits<int64_t>::min(), 1).ok());
  EXPECT_EQ(*CheckedSub("gap", 5, 7), -2);
}

TEST(CheckedMath, ProductChecksEveryStep) {
  EXPECT_EQ(*CheckedProduct("elements", {2, 3, 7}), 42);
  EXPECT_EQ(*CheckedProduct("elements", {}), 1);
  // 2^31 * 2^31 * 4 = 2^64.
  absl::StatusOr<int64_t> p = CheckedProduct("bytes", {int64_t{1} << 31, int64_t{1} << 31, 4});
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().message(), "bytes: the product overflows int64 (max 9223372036854775807)");
}

TEST(CheckedMath, RangeCheckCatchesAnOffsetThatWraps) {
  // offset + size wraps to a small negative number: the case that once wrote before a buffer.
  EXPECT_FALSE(CheckRange("output_offsets + sizes", kInt64Max - 2, 12, 16).ok());
  EXPECT_FALSE(CheckRange("output_offsets + sizes", -4, 4, 16).ok());
  EXPECT_FALSE(CheckRange("output_offsets + sizes", 4, -1, 16).ok());
  EXPECT_FALSE(CheckRange("output_offsets + sizes", 5, 12, 16).ok());
  EXPECT_TRUE(CheckRange("output_offsets + sizes", 4, 12, 16).ok());
  EXPECT_EQ(CheckRange("output_offsets + sizes", 5, 12, 16).message(),
            "output_offsets + sizes: expected offset + size <= 16 with offset >= 0 and size >= 0; "
            "got 5 + 12");
}

TEST(CheckedMath, AtMostNamesTheLimit) {
  EXPECT_TRUE(CheckAtMost("--jobs", 64, 64).ok());
  EXPECT_EQ(CheckAtMost("--jobs", 10000, 64).message(), "--jobs: expected at most 64; got 10000");
}

}  // namespace
}  // namespace perfsim
