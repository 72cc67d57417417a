// ComputeArrayStats (sim/interp/output_stats.h) dispatches on the element type once and
// classifies narrow floats through a table; every bit pattern of every narrow type must count
// as NaN / Inf exactly when Literal::GetAsDouble decodes it to one, the per-element definition
// `perfsim run` used before.
#include "sim/interp/output_stats.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>

#include "gtest/gtest.h"
#include "sim/ir/literal.h"
#include "sim/ir/primitive_type.h"

namespace perfsim {
namespace {

// Every pattern of a type of `bits` bits, one per element.
Literal AllPatterns(PrimitiveType type, int bits) {
  const int64_t n = int64_t{1} << bits;
  Literal literal(Shape::Array(type, {n}));
  for (int64_t i = 0; i < n; ++i) literal.SetBits(i, static_cast<uint64_t>(i));
  return literal;
}

TEST(OutputStats, NarrowFloatsCountLikeGetAsDouble) {
  using P = PrimitiveType;
  for (const P type : {P::kBF16, P::kF16, P::kF8E5M2, P::kF8E4M3FN, P::kF8E4M3B11FNUZ,
                       P::kF8E5M2FNUZ, P::kF8E4M3FNUZ, P::kF8E4M3, P::kF8E3M4, P::kF8E8M0FNU,
                       P::kF6E3M2FN, P::kF6E2M3FN, P::kF4E2M1FN}) {
    const Literal all = AllPatterns(type, BitWidth(type));
    int64_t nan = 0;
    int64_t inf = 0;
    for (int64_t i = 0; i < all.element_count(); ++i) {
      nan += std::isnan(all.GetAsDouble(i)) ? 1 : 0;
      inf += std::isinf(all.GetAsDouble(i)) ? 1 : 0;
    }
    const ArrayStats stats = ComputeArrayStats(all);
    EXPECT_EQ(stats.nan_count, nan) << PrimitiveTypeName(type);
    EXPECT_EQ(stats.inf_count, inf) << PrimitiveTypeName(type);
    EXPECT_EQ(stats.fnv1a64, Fnv1a64(all.data())) << PrimitiveTypeName(type);
  }
  // Spot checks of the formats' spellings: bf16 has 2 infinities and 2·(2^7 − 1) NaNs;
  // f8e4m3fn no infinity and 2 NaNs (0x7f, 0xff).
  const ArrayStats bf16 = ComputeArrayStats(AllPatterns(PrimitiveType::kBF16, 16));
  EXPECT_EQ(bf16.inf_count, 2);
  EXPECT_EQ(bf16.nan_count, 254);
  const ArrayStats e4m3fn = ComputeArrayStats(AllPatterns(PrimitiveType::kF8E4M3FN, 8));
  EXPECT_EQ(e4m3fn.inf_count, 0);
  EXPECT_EQ(e4m3fn.nan_count, 2);
}

TEST(OutputStats, WideFloatsComplexAndIntegers) {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Literal f32(Shape::Array(PrimitiveType::kF32, {5}));
  Literal f64(Shape::Array(PrimitiveType::kF64, {5}));
  const double values[5] = {1.0, nan, -inf, inf, -0.0};
  for (int i = 0; i < 5; ++i) {
    f32.SetFromDouble(i, values[i]);
    f64.SetFromDouble(i, values[i]);
  }
  for (const Literal* l : {&f32, &f64}) {
    const ArrayStats s = ComputeArrayStats(*l);
    EXPECT_EQ(s.nan_count, 1);
    EXPECT_EQ(s.inf_count, 2);
  }
  // c64 {(nan, inf), (1, -inf), (2, 3)}: the first is NaN only, the second Inf.
  Literal c64(Shape::Array(PrimitiveType::kC64, {3}));
  const float parts[6] = {std::numeric_limits<float>::quiet_NaN(),
                          std::numeric_limits<float>::infinity(),
                          1.0f,
                          -std::numeric_limits<float>::infinity(),
                          2.0f,
                          3.0f};
  std::memcpy(c64.mutable_data().data(), parts, sizeof(parts));
  const ArrayStats c = ComputeArrayStats(c64);
  EXPECT_EQ(c.nan_count, 1);
  EXPECT_EQ(c.inf_count, 1);
  const ArrayStats s32 = ComputeArrayStats(AllPatterns(PrimitiveType::kS8, 8));
  EXPECT_EQ(s32.nan_count, 0);
  EXPECT_EQ(s32.inf_count, 0);
}

TEST(OutputStats, Fnv1a64IsTheStandardHash) {
  // FNV-1a 64 test vectors: "" -> the offset basis, "a" -> 0xaf63dc4c8601ec8c.
  EXPECT_EQ(Fnv1a64({}), 0xcbf29ce484222325ULL);
  const uint8_t a[] = {'a'};
  EXPECT_EQ(Fnv1a64(a), 0xaf63dc4c8601ec8cULL);
}

}  // namespace
}  // namespace perfsim
