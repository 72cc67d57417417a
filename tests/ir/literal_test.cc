// Narrow-float conversions (float_types.h) and literals (literal.h).
//
// Expected bit patterns are derived by hand in the comments from each format's definition:
// value = 2^(exponent - bias) * 1.mantissa (normal) or 2^(1 - bias) * 0.mantissa (subnormal).
#include "sim/ir/literal.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/ir/float_types.h"

namespace perfsim {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
const double kNan = std::numeric_limits<double>::quiet_NaN();

constexpr PrimitiveType kNarrowTypes[] = {
    PrimitiveType::kF16,        PrimitiveType::kBF16,       PrimitiveType::kF8E5M2,
    PrimitiveType::kF8E4M3,     PrimitiveType::kF8E3M4,     PrimitiveType::kF8E4M3FN,
    PrimitiveType::kF8E4M3FNUZ, PrimitiveType::kF8E5M2FNUZ, PrimitiveType::kF8E4M3B11FNUZ,
    PrimitiveType::kF8E8M0FNU,  PrimitiveType::kF4E2M1FN,   PrimitiveType::kF6E3M2FN,
    PrimitiveType::kF6E2M3FN,
};

TEST(FloatTypes, Bf16TiesRoundToEven) {
  // bf16 keeps 7 mantissa bits: next to 1.0 (0x3f80) the spacing is 2^-7.
  // 1 + 2^-8 lies exactly between 1 (mantissa 0, even) and 1 + 2^-7 (mantissa 1, odd): down.
  EXPECT_EQ(EncodeFloat(PrimitiveType::kBF16, 1.0 + std::ldexp(1.0, -8)), 0x3f80u);
  // 1 + 3*2^-8 lies between 1 + 2^-7 (mantissa 1, odd) and 1 + 2^-6 (mantissa 2, even): up.
  EXPECT_EQ(EncodeFloat(PrimitiveType::kBF16, 1.0 + 3 * std::ldexp(1.0, -8)), 0x3f82u);
  // Just above the first tie rounds up to mantissa 1.
  EXPECT_EQ(EncodeFloat(PrimitiveType::kBF16, 1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -30)),
            0x3f81u);
}

TEST(FloatTypes, Bf16RoundsOnceFromDouble) {
  // x = 1 + 2^-8 + 2^-40 is above the bf16 tie, so it rounds up to 0x3f81. Going through
  // float first would round x to 1 + 2^-8 (2^-40 is below float's 2^-24 spacing) and then tie
  // down to 0x3f80: a double rounding the generic path avoids.
  const double x = 1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40);
  EXPECT_EQ(EncodeFloat(PrimitiveType::kBF16, x), 0x3f81u);
  EXPECT_EQ(FloatToBf16Bits(static_cast<float>(x)), 0x3f80u);
}

TEST(FloatTypes, FastBf16HelpersAgreeWithGenericConversion) {
  for (float f : {0.0f, -0.0f, 1.0f, 3.0f, 1.00390625f, 1.01171875f, -2.5e-39f, 3.3e38f,
                  3.4028235e38f, 1e-45f, 65504.0f}) {
    EXPECT_EQ(FloatToBf16Bits(f), EncodeFloat(PrimitiveType::kBF16, f)) << f;
  }
  // 3.0 = 1.5 * 2^1: exponent field 128, mantissa 0b1000000 -> 0x4040.
  EXPECT_EQ(FloatToBf16Bits(3.0f), 0x4040u);
  EXPECT_EQ(Bf16BitsToFloat(0x4040), 3.0f);
  EXPECT_TRUE(
      std::isnan(Bf16BitsToFloat(FloatToBf16Bits(std::numeric_limits<float>::quiet_NaN()))));
}

TEST(FloatTypes, F16MaxAndOverflow) {
  // f16: 5 exponent bits (bias 15), 10 mantissa bits. Max = (2 - 2^-10) * 2^15 = 65504, bits
  // 0 11110 1111111111 = 0x7bff; inf is 0x7c00.
  EXPECT_EQ(EncodeFloat(PrimitiveType::kF16, 65504), 0x7bffu);
  EXPECT_EQ(MaxFiniteValue(PrimitiveType::kF16), 65504);
  // 65520 is halfway between 65504 (0x7bff, odd) and 2^16 (0x7c00, even): rounds to inf.
  EXPECT_EQ(EncodeFloat(PrimitiveType::kF16, 65520), 0x7c00u);
  EXPECT_EQ(EncodeFloat(PrimitiveType::kF16, 65519), 0x7bffu);
  EXPECT_EQ(EncodeFloat(PrimitiveType::kF16, -kInf), 0xfc00u);
}

TEST(FloatTypes, Subnormals) {
  // f16 smallest subnormal: 2^(1-15) * 2^-10 = 2^-24 -> 0x0001.
  EXPECT_EQ(EncodeFloat(PrimitiveType::kF16, std::ldexp(1.0, -24)), 0x0001u);
  // 2^-25 ties between 0 (even) and 2^-24 (odd): 0. 1.5 * 2^-25 is above the tie: 0x0001.
  EXPECT_EQ(EncodeFloat(PrimitiveType::kF16, std::ldexp(1.0, -25)), 0x0000u);
  EXPECT_EQ(EncodeFloat(PrimitiveType::kF16, 1.5 * std::ldexp(1.0, -25)), 0x0001u);
  // Largest f16 subnormal (2^-14)(1 - 2^-10) = 0x03ff; the smallest normal 2^-14 = 0x0400.
  EXPECT_EQ(EncodeFloat(PrimitiveType::kF16, std::ldexp(1.0, -14) * (1 - std::ldexp(1.0, -10))),
            0x03ffu);
  EXPECT_EQ(DecodeFloat(PrimitiveType::kF16, 0x0400), std::ldexp(1.0, -14));
  // bf16 smallest subnormal: 2^(1-127) * 2^-7 = 2^-133.
  EXPECT_EQ(EncodeFloat(PrimitiveType::kBF16, std::ldexp(1.0, -133)), 0x0001u);
  // f8e4m3fn smallest subnormal: 2^(1-7) * 2^-3 = 2^-9 -> 0x01. 1.5 * 2^-9 ties between 0x01
  // (odd) and 0x02 (even): 0x02.
  EXPECT_EQ(EncodeFloat(PrimitiveType::kF8E4M3FN, std::ldexp(1.0, -9)), 0x01u);
  EXPECT_EQ(EncodeFloat(PrimitiveType::kF8E4M3FN, 1.5 * std::ldexp(1.0, -9)), 0x02u);
  EXPECT_EQ(DecodeFloat(PrimitiveType::kF8E4M3FN, 0x03), 3 * std::ldexp(1.0, -9));
}

TEST(FloatTypes, F8E4M3FnHasNoInfinityAndOverflowsToNan) {
  // e4m3fn: bias 7, all-ones exponent is a normal binade except mantissa 111 (NaN).
  // Max = 2^(15-7) * 1.75 = 448 -> 0 1111 110 = 0x7e.
  EXPECT_EQ(EncodeFloat(PrimitiveType::kF8E4M3FN, 448), 0x7eu);
  EXPECT_EQ(MaxFiniteValue(PrimitiveType::kF8E4M3FN), 448);
  // 464 ties between 448 (0x7e, even) and the NaN slot 480 (0x7f): stays 448.
  EXPECT_EQ(EncodeFloat(PrimitiveType::kF8E4M3FN, 464), 0x7eu);
  // 465 rounds past the max: NaN (XLA's convert does not saturate), keeping the sign.
  EXPECT_EQ(EncodeFloat(PrimitiveType::kF8E4M3FN, 465), 0x7fu);
  EXPECT_EQ(EncodeFloat(PrimitiveType::kF8E4M3FN, -1e9), 0xffu);
  EXPECT_EQ(EncodeFloat(PrimitiveType::kF8E4M3FN, kInf), 0x7fu);
  EXPECT_TRUE(std::isnan(DecodeFloat(PrimitiveType::kF8E4M3FN, 0x7f)));
  // 1.5 = 2^0 * 1.5: exponent field 7 (0111), mantissa 100 -> 0x3c.
  EXPECT_EQ(EncodeFloat(PrimitiveType::kF8E4M3FN, 1.5), 0x3cu);
}

TEST(FloatTypes, IeeeFp8FormatsHaveInfinity) {
  // e5m2: bias 15, max = 2^15 * 1.75 = 57344 = 0x7b; inf 0x7c. 61440 ties between 0x7b (odd)
  // and 0x7c (even): inf.
  EXPECT_EQ(EncodeFloat(PrimitiveType::kF8E5M2, 57344), 0x7bu);
  EXPECT_EQ(EncodeFloat(PrimitiveType::kF8E5M2, 61440), 0x7cu);
  EXPECT_EQ(DecodeFloat(PrimitiveType::kF8E5M2, 0x7c), kInf);
  // e4m3 (IEEE-like): bias 7, exponent 15 is inf/NaN, max = 2^7 * 1.875 = 240 = 0x77.
  EXPECT_EQ(MaxFiniteValue(PrimitiveType::kF8E4M3), 240);
  EXPECT_EQ(EncodeFloat(PrimitiveType::kF8E4M3, kInf), 0x78u);
  // e3m4: bias 3, max = 2^3 * (1 + 15/16) = 15.5 = 0x6f.
  EXPECT_EQ(MaxFiniteValue(PrimitiveType::kF8E3M4), 15.5);
  EXPECT_EQ(EncodeFloat(PrimitiveType::kF8E3M4, 15.5), 0x6fu);
}

TEST(FloatTypes, IeeeNanKeepsItsSign) {
  // Quiet NaN: all-ones exponent and the top mantissa bit.
  EXPECT_EQ(EncodeFloat(PrimitiveType::kBF16, kNan), 0x7fc0u);
  EXPECT_EQ(EncodeFloat(PrimitiveType::kBF16, -kNan), 0xffc0u);
  EXPECT_EQ(EncodeFloat(PrimitiveType::kF8E5M2, kNan), 0x7eu);
  EXPECT_EQ(EncodeFloat(PrimitiveType::kF32, -kNan), 0xffc00000u);
}

TEST(FloatTypes, FnuzFormatsHaveOneNanAndNoNegativeZero) {
  // The -0 pattern 0x80 is the only NaN; -0 encodes as +0.
  for (PrimitiveType type :
       {PrimitiveType::kF8E4M3FNUZ, PrimitiveType::kF8E5M2FNUZ, PrimitiveType::kF8E4M3B11FNUZ}) {
    EXPECT_EQ(EncodeFloat(type, -0.0), 0x00u) << PrimitiveTypeName(type);
    EXPECT_EQ(EncodeFloat(type, kNan), 0x80u);
    EXPECT_EQ(EncodeFloat(type, -kInf), 0x80u);
    EXPECT_TRUE(std::isnan(DecodeFloat(type, 0x80)));
  }
  // e4m3fnuz: bias 8, max = 2^(15-8) * 1.875 = 240 = 0x7f.
  EXPECT_EQ(MaxFiniteValue(PrimitiveType::kF8E4M3FNUZ), 240);
  // e5m2fnuz: bias 16, max = 2^(31-16) * 1.75 = 57344.
  EXPECT_EQ(MaxFiniteValue(PrimitiveType::kF8E5M2FNUZ), 57344);
  // e4m3b11fnuz: bias 11, max = 2^(15-11) * 1.875 = 30; 1.0 is exponent 11 = 0 1011 000.
  EXPECT_EQ(MaxFiniteValue(PrimitiveType::kF8E4M3B11FNUZ), 30);
  EXPECT_EQ(EncodeFloat(PrimitiveType::kF8E4M3B11FNUZ, 1.0), 0x58u);
}

TEST(FloatTypes, FiniteOnlyFormatsSaturate) {
  // f4e2m1fn holds 0, 0.5, 1, 1.5, 2, 3, 4, 6 (and negatives); max 6 = 0x7.
  EXPECT_EQ(MaxFiniteValue(PrimitiveType::kF4E2M1FN), 6);
  // 5 ties between 4 (0x6, even) and 6 (0x7): 4.
  EXPECT_EQ(EncodeFloat(PrimitiveType::kF4E2M1FN, 5), 0x6u);
  EXPECT_EQ(EncodeFloat(PrimitiveType::kF4E2M1FN, 7), 0x7u);
  EXPECT_EQ(EncodeFloat(PrimitiveType::kF4E2M1FN, -kInf), 0xfu);
  EXPECT_EQ(EncodeFloat(PrimitiveType::kF4E2M1FN, kNan), 0x0u);
  EXPECT_EQ(DecodeFloat(PrimitiveType::kF4E2M1FN, 0x1), 0.5);
  // f6e3m2fn: bias 3, max = 2^(7-3) * 1.75 = 28; f6e2m3fn: bias 1, max = 2^2 * 1.875 = 7.5.
  EXPECT_EQ(MaxFiniteValue(PrimitiveType::kF6E3M2FN), 28);
  EXPECT_EQ(MaxFiniteValue(PrimitiveType::kF6E2M3FN), 7.5);
  EXPECT_EQ(EncodeFloat(PrimitiveType::kF6E2M3FN, 100), 0x1fu);
}

TEST(FloatTypes, E8M0IsAnUnsignedPowerOfTwo) {
  // Value 2^(bits - 127): 1.0 is 0x7f; 0xff is NaN; no zero and no sign.
  EXPECT_EQ(EncodeFloat(PrimitiveType::kF8E8M0FNU, 1.0), 0x7fu);
  EXPECT_EQ(DecodeFloat(PrimitiveType::kF8E8M0FNU, 0x00), std::ldexp(1.0, -127));
  // Ties (1.5 * 2^k) round up, as ml_dtypes does: 1.5 -> 2 (0x80), 3 -> 4 (0x81).
  EXPECT_EQ(EncodeFloat(PrimitiveType::kF8E8M0FNU, 1.5), 0x80u);
  EXPECT_EQ(EncodeFloat(PrimitiveType::kF8E8M0FNU, 3.0), 0x81u);
  EXPECT_EQ(EncodeFloat(PrimitiveType::kF8E8M0FNU, 1.49), 0x7fu);
  EXPECT_EQ(EncodeFloat(PrimitiveType::kF8E8M0FNU, 0.0), 0xffu);
  EXPECT_EQ(EncodeFloat(PrimitiveType::kF8E8M0FNU, -1.0), 0xffu);
  EXPECT_EQ(EncodeFloat(PrimitiveType::kF8E8M0FNU, std::ldexp(1.0, -130)), 0x00u);
  // 2^127 is the max (0xfe); 1.5 * 2^127 rounds to 2^128, which would be 0xff: NaN.
  EXPECT_EQ(EncodeFloat(PrimitiveType::kF8E8M0FNU, std::ldexp(1.5, 127)), 0xffu);
}

TEST(FloatTypes, EveryNonNanPatternOfEveryNarrowTypeRoundTrips) {
  // Decoding then encoding a representable value must give back its exact bits.
  for (PrimitiveType type : kNarrowTypes) {
    const int bits = BitWidth(type);
    for (uint64_t pattern = 0; pattern < (uint64_t{1} << bits); ++pattern) {
      const double value = DecodeFloat(type, pattern);
      if (std::isnan(value)) continue;
      ASSERT_EQ(EncodeFloat(type, value), pattern)
          << PrimitiveTypeName(type) << " pattern " << pattern << " value " << value;
    }
  }
}

TEST(FloatTypes, F32MatchesTheNativeConversion) {
  for (double x :
       {0.1, 1.0 / 3.0, -2.5e-40, 1e-46, 3.4028235677973366e38, 5e-324, 16777217.0, 16777219.0}) {
    EXPECT_EQ(EncodeFloat(PrimitiveType::kF32, x), std::bit_cast<uint32_t>(static_cast<float>(x)))
        << x;
  }
  EXPECT_EQ(EncodeFloat(PrimitiveType::kF32, -1e300), 0xff800000u);
  // 2^128 * (1 - 2^-25) is the float overflow threshold: rounds to inf, even though it is
  // below 2^128.
  EXPECT_EQ(EncodeFloat(PrimitiveType::kF32, std::ldexp(1.0 - std::ldexp(1.0, -25), 128)),
            0x7f800000u);
}

// --- literals ---

TEST(Literal, StoresBf16RoundedToNearestEven) {
  Literal literal(Shape::Array(PrimitiveType::kBF16, {2}));
  literal.SetFromDouble(0, 1.0 + 3 * std::ldexp(1.0, -8));  // rounds up to 1 + 2^-6
  literal.SetFromDouble(1, -2.0);
  EXPECT_EQ(literal.GetAsDouble(0), 1.0 + std::ldexp(1.0, -6));
  EXPECT_EQ(literal.GetBits(1), 0xc000u);
  EXPECT_EQ(literal.data().size(), 4u);
}

TEST(Literal, ToStringFollowsXlaBraces) {
  Literal matrix(Shape::Array(PrimitiveType::kS32, {2, 2}));
  for (int i = 0; i < 4; ++i) matrix.SetFromInt64(i, i + 1);
  EXPECT_EQ(matrix.ToString(), "{ {1, 2}, {3, 4} }");
  Literal vector(Shape::Array(PrimitiveType::kF32, {3}));
  vector.SetFromDouble(0, 1.5);
  vector.SetFromDouble(1, -kInf);
  vector.SetFromDouble(2, kNan);
  EXPECT_EQ(vector.ToString(), "{1.5, -inf, nan}");
  Literal scalar(Shape::Scalar(PrimitiveType::kPred));
  scalar.SetFromInt64(0, 1);
  EXPECT_EQ(scalar.ToString(), "true");
  Literal empty(Shape::Array(PrimitiveType::kF32, {0}));
  EXPECT_EQ(empty.ToString(), "{}");
  Literal tuple = Literal::CreateTuple({Literal(Shape::Scalar(PrimitiveType::kS32)), vector});
  EXPECT_EQ(tuple.ToString(), "(0, {1.5, -inf, nan})");
  Literal complex(Shape::Scalar(PrimitiveType::kC64));
  complex.SetFromDouble(0, 2.5);
  EXPECT_EQ(complex.ToString(), "(2.5, 0)");
}

TEST(Literal, ElidedLiteralOwnsNoStorage) {
  // 10^12 f32 elements would be 4 TB; elided, it costs nothing.
  Literal elided = Literal::CreateElided(Shape::Array(PrimitiveType::kF32, {1000000, 1000000}));
  EXPECT_TRUE(elided.elided());
  EXPECT_TRUE(elided.data().empty());
  EXPECT_EQ(elided.GetAsDouble(5), 0.0);
  EXPECT_EQ(elided.ToString(), "{...}");
}

TEST(Literal, IntegersWrapFromInt64AndSaturateFromDouble) {
  Literal s8(Shape::Array(PrimitiveType::kS8, {3}));
  s8.SetFromInt64(0, 300);  // 300 - 256 = 44
  s8.SetFromDouble(1, 300.7);
  s8.SetFromDouble(2, kNan);
  EXPECT_EQ(s8.GetAsInt64(0), 44);
  EXPECT_EQ(s8.GetAsInt64(1), 127);
  EXPECT_EQ(s8.GetAsInt64(2), 0);
  Literal s4(Shape::Array(PrimitiveType::kS4, {2}));
  s4.SetFromInt64(0, 9);  // 4-bit two's complement: 9 - 16 = -7
  s4.SetFromInt64(1, -8);
  EXPECT_EQ(s4.GetAsInt64(0), -7);
  EXPECT_EQ(s4.GetAsInt64(1), -8);
  EXPECT_EQ(s4.ToString(), "{-7, -8}");
  Literal u8(Shape::Scalar(PrimitiveType::kU8));
  u8.SetFromInt64(0, -1);
  EXPECT_EQ(u8.GetAsInt64(0), 255);
  u8.SetFromDouble(0, -3.0);
  EXPECT_EQ(u8.GetAsInt64(0), 0);
  Literal u64(Shape::Scalar(PrimitiveType::kU64));
  u64.SetFromDouble(0, 1e30);
  EXPECT_EQ(u64.ToString(), "18446744073709551615");
}

TEST(Literal, ElementTextRoundTripsEveryNarrowFloatPatternNansIncluded) {
  for (PrimitiveType type : kNarrowTypes) {
    const int bits = BitWidth(type);
    for (uint64_t pattern = 0; pattern < (uint64_t{1} << bits); ++pattern) {
      const std::string text = FormatLiteralElement(type, pattern);
      const std::optional<uint64_t> parsed = ParseLiteralElement(type, text);
      ASSERT_TRUE(parsed.has_value()) << PrimitiveTypeName(type) << " " << text;
      ASSERT_EQ(*parsed, pattern) << PrimitiveTypeName(type) << " " << text;
    }
  }
}

TEST(Literal, FloatsPrintInShortestRoundTripForm) {
  // 0.1 is not exactly representable in any of these, but "0.1" reads back to the same bits.
  EXPECT_EQ(FormatLiteralElement(PrimitiveType::kF32, EncodeFloat(PrimitiveType::kF32, 0.1)),
            "0.1");
  EXPECT_EQ(FormatLiteralElement(PrimitiveType::kF64, EncodeFloat(PrimitiveType::kF64, 0.1)),
            "0.1");
  EXPECT_EQ(FormatLiteralElement(PrimitiveType::kBF16, EncodeFloat(PrimitiveType::kBF16, 0.1)),
            "0.1");
  // bf16(1/3) = 0x3eab = 0.333984375; "0.334" is the shortest text that rounds back to it
  // (bf16 spacing there is 2^-9 ~ 0.00195).
  EXPECT_EQ(FormatLiteralElement(PrimitiveType::kBF16, 0x3eab), "0.334");
  EXPECT_EQ(FormatLiteralElement(PrimitiveType::kF32, EncodeFloat(PrimitiveType::kF32, 1e6)),
            "1e+06");
  EXPECT_EQ(ParseLiteralElement(PrimitiveType::kF32, "1e+06"), 0x49742400u);
  EXPECT_EQ(FormatLiteralElement(PrimitiveType::kF16, 0x8000), "-0");
  EXPECT_EQ(FormatLiteralElement(PrimitiveType::kF64, EncodeFloat(PrimitiveType::kF64, -kNan)),
            "-nan");
}

TEST(Literal, NanPayloadsPrintAsXlaDoes) {
  // f32 NaN 0x7f800001: exponent all ones, mantissa 1 -- not the quiet NaN 0x7fc00000, whose
  // mantissa is only the top bit.
  EXPECT_EQ(FormatLiteralElement(PrimitiveType::kF32, 0x7f800001u), "nan(0x1)");
  EXPECT_EQ(FormatLiteralElement(PrimitiveType::kF32, 0xffc00000u), "-nan");
  EXPECT_EQ(FormatLiteralElement(PrimitiveType::kBF16, 0xff81u), "-nan(0x1)");
  EXPECT_EQ(ParseLiteralElement(PrimitiveType::kF32, "nan(0x1)"), 0x7f800001u);
  EXPECT_EQ(ParseLiteralElement(PrimitiveType::kF64, "-nan(0x8000000000001)"), 0xfff8000000000001u);
  // f8e4m3fn has one NaN per sign: a payload cannot be kept.
  EXPECT_EQ(ParseLiteralElement(PrimitiveType::kF8E4M3FN, "nan(0x1)"), 0x7fu);
  // A zero payload would be inf, and bf16 has only 7 mantissa bits.
  EXPECT_EQ(ParseLiteralElement(PrimitiveType::kF32, "nan(0x0)"), std::nullopt);
  EXPECT_EQ(ParseLiteralElement(PrimitiveType::kBF16, "nan(0x80)"), std::nullopt);
}

TEST(Literal, F32ElementTextRoundTripsSampledPatterns) {
  // Every 65537th pattern (an odd step, so all bit positions vary) plus the extremes.
  for (uint64_t pattern = 0; pattern <= 0xffffffffu; pattern += 65537) {
    const std::string text = FormatLiteralElement(PrimitiveType::kF32, pattern);
    ASSERT_EQ(ParseLiteralElement(PrimitiveType::kF32, text), pattern) << text;
  }
}

TEST(Literal, ParseElementChecksIntegerRanges) {
  EXPECT_EQ(ParseLiteralElement(PrimitiveType::kS8, "-128"), 0x80u);
  EXPECT_EQ(ParseLiteralElement(PrimitiveType::kS8, "128"), std::nullopt);
  EXPECT_EQ(ParseLiteralElement(PrimitiveType::kU8, "-1"), std::nullopt);
  EXPECT_EQ(ParseLiteralElement(PrimitiveType::kU64, "18446744073709551615"), 0xffffffffffffffffu);
  EXPECT_EQ(ParseLiteralElement(PrimitiveType::kS64, "9223372036854775808"), std::nullopt);
  EXPECT_EQ(ParseLiteralElement(PrimitiveType::kS4, "-8"), 0x8u);
  EXPECT_EQ(ParseLiteralElement(PrimitiveType::kS4, "8"), std::nullopt);
  EXPECT_EQ(ParseLiteralElement(PrimitiveType::kPred, "true"), 1u);
  EXPECT_EQ(ParseLiteralElement(PrimitiveType::kPred, "2"), std::nullopt);
  EXPECT_EQ(ParseLiteralElement(PrimitiveType::kS32, "1.5"), std::nullopt);
  EXPECT_EQ(ParseLiteralElement(PrimitiveType::kF32, "abc"), std::nullopt);
  EXPECT_EQ(ParseLiteralElement(PrimitiveType::kF32, "-inf"), 0xff800000u);
  // Too large for f32: inf, as the decimal value rounds past the max.
  EXPECT_EQ(ParseLiteralElement(PrimitiveType::kF32, "1e39"), 0x7f800000u);
}

TEST(Literal, EqualityComparesShapeAndBytes) {
  Literal a(Shape::Array(PrimitiveType::kS32, {2}));
  Literal b(Shape::Array(PrimitiveType::kS32, {2}));
  EXPECT_TRUE(a == b);
  b.SetFromInt64(1, 7);
  EXPECT_FALSE(a == b);
  EXPECT_FALSE(a == Literal(Shape::Array(PrimitiveType::kU32, {2})));
}

}  // namespace
}  // namespace perfsim
