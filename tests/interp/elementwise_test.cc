// Elementwise ops of the interpreter: XLA's semantics where C++ differs, and narrow-float
// rounding after every op. Expected values are derived by hand in the comments.
#include <cmath>
#include <cstdint>
#include <limits>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/util/status_matchers.h"
#include "tests/interp/interp_test_util.h"

namespace perfsim {
namespace {

using ::perfsim::testing::Bf16;
using ::perfsim::testing::F32;
using ::perfsim::testing::MakeLiteral;
using ::perfsim::testing::Run1;
using ::perfsim::testing::S32;
using ::perfsim::testing::StatusIs;
using ::perfsim::testing::Values;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

const double kNan = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

TEST(InterpElementwise, Bf16RoundsToNearestEvenAfterEveryOp) {
  // bf16 has 7 stored mantissa bits, so next to 1.0 the spacing is 2^-7.
  // a + b with a = 1, b = 2^-8 is 1 + 2^-8 exactly in f32: the midpoint between 1.0 (mantissa
  // 0, even) and 1 + 2^-7 (mantissa 1, odd), so it rounds to 1.0.
  // (a + b) + b: 1.0 + 2^-8 rounds to 1.0 again. Had the sum stayed in f32 between the two
  // adds, the result would be 1 + 2^-7 = 1.0078125.
  // c = 1 + 3*2^-8 lies between 1 + 2^-7 (odd) and 1 + 2^-6 (even): rounds up to 1.015625.
  constexpr char kHlo[] = R"(
HloModule m
ENTRY e {
  a = bf16[] parameter(0)
  b = bf16[] parameter(1)
  s = bf16[] add(a, b)
  t = bf16[] add(s, b)
  three = bf16[] constant(3)
  b3 = bf16[] multiply(b, three)
  c = bf16[] add(a, b3)
  ROOT r = (bf16[], bf16[], bf16[]) tuple(s, t, c)
})";
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::vector<Literal> out,
                               Run1(kHlo, {Bf16({}, {1.0}), Bf16({}, {std::ldexp(1.0, -8)})}));
  EXPECT_EQ(out[0].GetAsDouble(0), 1.0);
  EXPECT_EQ(out[1].GetAsDouble(0), 1.0);
  EXPECT_EQ(out[2].GetAsDouble(0), 1.015625);
}

TEST(InterpElementwise, ConvertF32ToBf16RoundsTiesToEven) {
  // 1 + 2^-8 (tie, down to even 1.0), 1 + 3*2^-8 (tie, up to even 1 + 2^-6),
  // 1 + 2^-8 + 2^-20 (above the tie: up to 1 + 2^-7), -(1 + 2^-8) (tie: -1.0).
  constexpr char kHlo[] = R"(
HloModule m
ENTRY e {
  x = f32[4] parameter(0)
  ROOT c = bf16[4] convert(x)
})";
  PERFSIM_ASSERT_OK_AND_ASSIGN(
      std::vector<Literal> out,
      Run1(kHlo, {F32({4}, {1.0 + std::ldexp(1.0, -8), 1.0 + 3 * std::ldexp(1.0, -8),
                            1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -20),
                            -(1.0 + std::ldexp(1.0, -8))})}));
  EXPECT_THAT(Values(out[0]), ElementsAre(1.0, 1.015625, 1.0078125, -1.0));
}

TEST(InterpElementwise, ConvertF32ToF16AndFp8RoundsTiesToEvenAndOverflowsPerFormat) {
  // f16 (10 mantissa bits, spacing 2^-10 at 1): 1 + 2^-11 is a tie, down to even 1.0;
  // 1 + 3*2^-11 is a tie between 1 + 2^-10 (odd) and 1 + 2^-9 (even): up. The largest finite
  // f16 is 65504 and the next step would be 65536, so 65519 rounds to 65504 and 65520 (the
  // tie, whose even neighbour is the overflow) to +inf.
  // f8e5m2 (2 mantissa bits, spacing 0.25 at 1): 1.125 ties to 1.0; 1.375 ties between 1.25
  // (odd) and 1.5 (even): 1.5. It has infinities: 1e6 (beyond 57344) is +inf.
  // f8e4m3fn (3 mantissa bits, spacing 0.125 at 1, no infinities, largest 448): 1.0625 ties to
  // 1.0; 1.1875 ties between 1.125 (odd) and 1.25 (even): 1.25. 464 is the tie between 448
  // (mantissa 110, even) and the NaN encoding 480: 448. 3 * 2^-10 is a subnormal tie between
  // 2^-9 (mantissa 001) and 2^-8 (010): 2^-8. 1000 is beyond the range: NaN, as ml_dtypes and
  // XLA give (the format has no infinity to saturate to).
  constexpr char kHlo[] = R"(
HloModule m
ENTRY e {
  h = f32[4] parameter(0)
  a = f32[3] parameter(1)
  b = f32[5] parameter(2)
  ch = f16[4] convert(h)
  ca = f8e5m2[3] convert(a)
  cb = f8e4m3fn[5] convert(b)
  ROOT r = (f16[4], f8e5m2[3], f8e4m3fn[5]) tuple(ch, ca, cb)
})";
  PERFSIM_ASSERT_OK_AND_ASSIGN(
      std::vector<Literal> out,
      Run1(kHlo, {F32({4}, {1.0 + std::ldexp(1.0, -11), 1.0 + 3 * std::ldexp(1.0, -11), 65519,
                            65520}),
                  F32({3}, {1.125, 1.375, 1e6}),
                  F32({5}, {1.0625, 1.1875, 464, 3 * std::ldexp(1.0, -10), 1000})}));
  EXPECT_THAT(Values(out[0]),
              ElementsAre(1.0, 1.0 + std::ldexp(1.0, -9), 65504, kInf));
  EXPECT_THAT(Values(out[1]), ElementsAre(1.0, 1.5, kInf));
  const std::vector<double> e4m3 = Values(out[2]);
  EXPECT_THAT(std::vector<double>(e4m3.begin(), e4m3.end() - 1),
              ElementsAre(1.0, 1.25, 448, std::ldexp(1.0, -8)));
  EXPECT_TRUE(std::isnan(e4m3.back()));
}

TEST(InterpElementwise, ConvertFloatToIntegerTruncatesSaturatesAndMapsNanToZero) {
  // XLA: truncation toward zero; out-of-range values saturate; NaN becomes 0.
  constexpr char kHlo[] = R"(
HloModule m
ENTRY e {
  x = f32[5] parameter(0)
  s = s32[5] convert(x)
  u = u8[5] convert(x)
  ROOT r = (s32[5], u8[5]) tuple(s, u)
})";
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::vector<Literal> out,
                               Run1(kHlo, {F32({5}, {3.7, -3.7, 1e10, -1e10, kNan})}));
  EXPECT_THAT(Values(out[0]), ElementsAre(3, -3, 2147483647.0, -2147483648.0, 0));
  // u8: 3.7 -> 3; -3.7 and -1e10 saturate at 0; 1e10 at 255.
  EXPECT_THAT(Values(out[1]), ElementsAre(3, 0, 255, 0, 0));
}

TEST(InterpElementwise, StochasticConvertRoundsUpWhenTheRandomBitsFallBelowTheFraction) {
  // XLA's rule: |x| is rounded down, then up when random < frac(|x|) * 2^32 (random is u32 for
  // an f32 x); the sign is put back. For |x| = 2.25 the threshold is 0.25 * 2^32 = 2^30:
  //   random 2^30 - 1 < 2^30 -> 3;   random 2^30 -> 2;   x = -2.25, random 0 -> -3;
  //   x = 5 (no fraction) -> 5 whatever the bits; NaN -> 0; +inf saturates to 127 in s8, and
  //   300 (beyond s8) to 127; -inf to -128.
  constexpr char kHlo[] = R"(
HloModule m
ENTRY e {
  x = f32[8] parameter(0)
  r = u32[8] parameter(1)
  ROOT s = s8[8] stochastic-convert(x, r)
})";
  const double t = std::ldexp(1.0, 30);
  PERFSIM_ASSERT_OK_AND_ASSIGN(
      std::vector<Literal> out,
      Run1(kHlo, {F32({8}, {2.25, 2.25, -2.25, 5, kNan, kInf, 300, -kInf}),
                  MakeLiteral(PrimitiveType::kU32, {8},
                              {t - 1, t, 0, 4294967295.0, 0, 0, 0, 0})}));
  EXPECT_THAT(Values(out[0]), ElementsAre(3, 2, -3, 5, 0, 127, 127, -128));
}

TEST(InterpElementwise, StochasticConvertRefusesRandomBitsOfAnotherWidth) {
  constexpr char kHlo[] = R"(
HloModule m
ENTRY e {
  x = f32[2] parameter(0)
  r = u16[2] parameter(1)
  ROOT s = s32[2] stochastic-convert(x, r)
})";
  EXPECT_THAT(Run1(kHlo, {F32({2}, {1, 2}), MakeLiteral(PrimitiveType::kU16, {2}, {0, 0})}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("expected a floating-point operand and unsigned random bits of "
                                 "its width and shape")));
}

TEST(InterpElementwise, IntegerDivideAndRemainderFollowXla) {
  // 7/2 = 3, -7/2 = -3 (toward zero), 5/0 = -1 (all bits set), INT_MIN/-1 = INT_MIN (wraps).
  // 7%2 = 1, -7%2 = -1 (sign of the dividend), 5%0 = 5, INT_MIN % -1 = 0.
  constexpr char kHlo[] = R"(
HloModule m
ENTRY e {
  a = s32[4] parameter(0)
  b = s32[4] parameter(1)
  q = s32[4] divide(a, b)
  r = s32[4] remainder(a, b)
  ROOT t = (s32[4], s32[4]) tuple(q, r)
})";
  const double int_min = -2147483648.0;
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::vector<Literal> out, Run1(kHlo, {S32({4}, {7, -7, 5, int_min}),
                                                                     S32({4}, {2, 2, 0, -1})}));
  EXPECT_THAT(Values(out[0]), ElementsAre(3, -3, -1, int_min));
  EXPECT_THAT(Values(out[1]), ElementsAre(1, -1, 5, 0));
}

TEST(InterpElementwise, IntegerAddWrapsAndShiftsSaturate) {
  // INT_MAX + 1 wraps to INT_MIN. Shifts by >= 32 (or negative) give 0, or the sign fill for
  // an arithmetic right shift: -8 >> 40 = -1. -8 >>> 1 (logical) = (2^32 - 8) / 2 = 2^31 - 4.
  constexpr char kHlo[] = R"(
HloModule m
ENTRY e {
  a = s32[3] parameter(0)
  b = s32[3] parameter(1)
  add = s32[3] add(a, b)
  shl = s32[3] shift-left(a, b)
  sra = s32[3] shift-right-arithmetic(a, b)
  srl = s32[3] shift-right-logical(a, b)
  ROOT t = (s32[3], s32[3], s32[3], s32[3]) tuple(add, shl, sra, srl)
})";
  PERFSIM_ASSERT_OK_AND_ASSIGN(
      std::vector<Literal> out,
      Run1(kHlo, {S32({3}, {2147483647.0, -8, -8}), S32({3}, {1, 40, 1})}));
  // add: INT_MAX + 1 wraps to INT_MIN; -8 + 40 = 32; -8 + 1 = -7.
  EXPECT_THAT(Values(out[0]), ElementsAre(-2147483648.0, 32, -7));
  // shift-left: INT_MAX << 1 = 0xFFFFFFFE = -2; -8 << 40 = 0; -8 << 1 = -16.
  EXPECT_THAT(Values(out[1]), ElementsAre(-2, 0, -16));
  EXPECT_THAT(Values(out[2]), ElementsAre(1073741823, -1, -4));
  EXPECT_THAT(Values(out[3]), ElementsAre(1073741823, 0, 2147483644.0));
}

TEST(InterpElementwise, SubByteIntegersWrapAtTheirWidth) {
  // s4 holds [-8, 7]: 7 + 1 wraps to -8; -8 - 1 wraps to 7.
  constexpr char kHlo[] = R"(
HloModule m
ENTRY e {
  a = s4[2] parameter(0)
  b = s4[2] parameter(1)
  ROOT s = s4[2] add(a, b)
})";
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::vector<Literal> out,
                               Run1(kHlo, {MakeLiteral(PrimitiveType::kS4, {2}, {7, -8}),
                                           MakeLiteral(PrimitiveType::kS4, {2}, {1, -1})}));
  EXPECT_THAT(Values(out[0]), ElementsAre(-8, 7));
}

TEST(InterpElementwise, CompareIsIeeeByDefaultAndTotalOrderWhenAsked) {
  // IEEE: NaN < 1 is false and NaN != NaN is true; -0 < +0 is false.
  // TOTALORDER: -0 < +0 is true and NaN sorts above +inf.
  constexpr char kHlo[] = R"(
HloModule m
ENTRY e {
  a = f32[3] parameter(0)
  b = f32[3] parameter(1)
  lt = pred[3] compare(a, b), direction=LT
  ne = pred[3] compare(a, b), direction=NE
  tlt = pred[3] compare(a, b), direction=LT, type=TOTALORDER
  ROOT t = (pred[3], pred[3], pred[3]) tuple(lt, ne, tlt)
})";
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::vector<Literal> out, Run1(kHlo, {F32({3}, {kNan, -0.0, kInf}),
                                                                     F32({3}, {1, 0.0, kNan})}));
  EXPECT_THAT(Values(out[0]), ElementsAre(0, 0, 0));
  EXPECT_THAT(Values(out[1]), ElementsAre(1, 0, 1));
  // NaN < 1: NaN is above everything, so false; -0 < +0: true; inf < NaN: true.
  EXPECT_THAT(Values(out[2]), ElementsAre(0, 1, 1));
}

TEST(InterpElementwise, MaximumAndMinimumPropagateNan) {
  constexpr char kHlo[] = R"(
HloModule m
ENTRY e {
  a = f32[2] parameter(0)
  b = f32[2] parameter(1)
  mx = f32[2] maximum(a, b)
  mn = f32[2] minimum(a, b)
  ROOT t = (f32[2], f32[2]) tuple(mx, mn)
})";
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::vector<Literal> out,
                               Run1(kHlo, {F32({2}, {kNan, 1}), F32({2}, {2, 3})}));
  EXPECT_TRUE(std::isnan(out[0].GetAsDouble(0)));
  EXPECT_EQ(out[0].GetAsDouble(1), 3);
  EXPECT_TRUE(std::isnan(out[1].GetAsDouble(0)));
  EXPECT_EQ(out[1].GetAsDouble(1), 1);
}

TEST(InterpElementwise, UnaryFloatOps) {
  // Reference values computed by hand: exp(0) = 1, log(e) = 1, rsqrt(4) = 0.5,
  // logistic(0) = 0.5, sign(-0) = -0, round-nearest-even(2.5) = 2, round-nearest-afz(2.5) = 3.
  constexpr char kHlo[] = R"(
HloModule m
ENTRY e {
  x = f32[1] parameter(0)
  zero = f32[1] constant({0})
  four = f32[1] constant({4})
  half5 = f32[1] constant({2.5})
  nz = f32[1] constant({-0})
  e1 = f32[1] exponential(zero)
  one = f32[1] constant({1})
  l = f32[1] log(e1)
  rs = f32[1] rsqrt(four)
  lg = f32[1] logistic(zero)
  sg = f32[1] sign(nz)
  re = f32[1] round-nearest-even(half5)
  ra = f32[1] round-nearest-afz(half5)
  ROOT t = (f32[1], f32[1], f32[1], f32[1], f32[1], f32[1], f32[1]) tuple(e1, l, rs, lg, sg, re, ra)
})";
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::vector<Literal> out, Run1(kHlo, {F32({1}, {0})}));
  EXPECT_EQ(out[0].GetAsDouble(0), 1.0);
  EXPECT_EQ(out[1].GetAsDouble(0), 0.0);
  EXPECT_EQ(out[2].GetAsDouble(0), 0.5);
  EXPECT_EQ(out[3].GetAsDouble(0), 0.5);
  EXPECT_TRUE(std::signbit(out[4].GetAsDouble(0)));
  EXPECT_EQ(out[5].GetAsDouble(0), 2.0);
  EXPECT_EQ(out[6].GetAsDouble(0), 3.0);
}

TEST(InterpElementwise, SelectAndClampWithScalarBounds) {
  // clamp(lo=0, x, hi=2) of [-1, 1, 5] = [0, 1, 2]; select picks a where p is true.
  constexpr char kHlo[] = R"(
HloModule m
ENTRY e {
  p = pred[3] parameter(0)
  a = f32[3] parameter(1)
  b = f32[3] parameter(2)
  s = f32[3] select(p, a, b)
  lo = f32[] constant(0)
  hi = f32[] constant(2)
  c = f32[3] clamp(lo, a, hi)
  ROOT t = (f32[3], f32[3]) tuple(s, c)
})";
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::vector<Literal> out,
                               Run1(kHlo, {MakeLiteral(PrimitiveType::kPred, {3}, {1, 0, 1}),
                                           F32({3}, {-1, 1, 5}), F32({3}, {10, 20, 30})}));
  EXPECT_THAT(Values(out[0]), ElementsAre(-1, 20, 5));
  EXPECT_THAT(Values(out[1]), ElementsAre(0, 1, 2));
}

TEST(InterpElementwise, IotaCountsAlongItsDimension) {
  constexpr char kHlo[] = R"(
HloModule m
ENTRY e {
  ROOT i = s32[2,3] iota(), iota_dimension=1
})";
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::vector<Literal> out, Run1(kHlo, {}));
  EXPECT_THAT(Values(out[0]), ElementsAre(0, 1, 2, 0, 1, 2));
}

TEST(InterpElementwise, BitcastConvertKeepsBits) {
  // 1.0f is 0x3f800000 = 1065353216.
  constexpr char kHlo[] = R"(
HloModule m
ENTRY e {
  x = f32[1] parameter(0)
  ROOT b = s32[1] bitcast-convert(x)
})";
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::vector<Literal> out, Run1(kHlo, {F32({1}, {1.0})}));
  EXPECT_THAT(Values(out[0]), ElementsAre(1065353216));
}

// jax.random's u32[n,2] -> u64[n] and back. XLA reinterprets the bytes in memory order and
// XLA:CPU is little-endian, so the first u32 of a pair is the low half:
// {1,2} -> 1 + 2 * 2^32 = 8589934593, {3,4} -> 3 + 4 * 2^32 = 17179869187
// (jax.lax.bitcast_convert_type with jax_enable_x64 on XLA:CPU gives these, both ways).
TEST(InterpElementwise, BitcastConvertChangesWidthInMemoryOrder) {
  constexpr char kWiden[] = R"(
HloModule m
ENTRY e {
  x = u32[2,2] parameter(0)
  ROOT b = u64[2] bitcast-convert(x)
})";
  PERFSIM_ASSERT_OK_AND_ASSIGN(
      std::vector<Literal> wide,
      Run1(kWiden, {MakeLiteral(PrimitiveType::kU32, {2, 2}, {1, 2, 3, 4})}));
  EXPECT_THAT(Values(wide[0]), ElementsAre(8589934593.0, 17179869187.0));
  constexpr char kNarrow[] = R"(
HloModule m
ENTRY e {
  x = u64[2] parameter(0)
  ROOT b = u32[2,2] bitcast-convert(x)
})";
  PERFSIM_ASSERT_OK_AND_ASSIGN(
      std::vector<Literal> narrow,
      Run1(kNarrow, {MakeLiteral(PrimitiveType::kU64, {2}, {8589934593.0, 17179869187.0})}));
  EXPECT_THAT(Values(narrow[0]), ElementsAre(1, 2, 3, 4));
}

TEST(InterpElementwise, ReducePrecisionRoundsLikeTheNarrowType) {
  // exponent_bits=8, mantissa_bits=7 is bf16's format: the same ties as the convert test.
  constexpr char kHlo[] = R"(
HloModule m
ENTRY e {
  x = f32[2] parameter(0)
  ROOT r = f32[2] reduce-precision(x), exponent_bits=8, mantissa_bits=7
})";
  PERFSIM_ASSERT_OK_AND_ASSIGN(
      std::vector<Literal> out,
      Run1(kHlo, {F32({2}, {1.0 + std::ldexp(1.0, -8), 1.0 + 3 * std::ldexp(1.0, -8)})}));
  EXPECT_THAT(Values(out[0]), ElementsAre(1.0, 1.015625));
}

TEST(InterpElementwise, PopcntAndClzCountWithinTheWidth) {
  // 0xF0 = 240: 4 bits set, 24 leading zeros in 32 bits; 1: 1 bit, 31 zeros; 0: 0, 32.
  constexpr char kHlo[] = R"(
HloModule m
ENTRY e {
  x = s32[3] parameter(0)
  p = s32[3] popcnt(x)
  c = s32[3] count-leading-zeros(x)
  ROOT t = (s32[3], s32[3]) tuple(p, c)
})";
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::vector<Literal> out, Run1(kHlo, {S32({3}, {240, 1, 0})}));
  EXPECT_THAT(Values(out[0]), ElementsAre(4, 1, 0));
  EXPECT_THAT(Values(out[1]), ElementsAre(24, 31, 32));
}

TEST(InterpElementwise, FloatOnlyOpOnIntegersIsAnError) {
  constexpr char kHlo[] = R"(
HloModule m
ENTRY e {
  x = s32[2] parameter(0)
  ROOT y = s32[2] exponential(x)
})";
  EXPECT_THAT(Run1(kHlo, {S32({2}, {1, 2})}), StatusIs(absl::StatusCode::kInvalidArgument,
                                                       HasSubstr("y: expected an element type")));
}

}  // namespace
}  // namespace perfsim
