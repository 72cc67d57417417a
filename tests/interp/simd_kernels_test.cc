// The vector kernels (sim/interp/simd_kernels.h) must give the bits of the scalar loops they
// replace. bf16 arithmetic runs through the interpreter on every bf16 bit pattern (NaNs of
// both signs and payloads, infinities, subnormals, values whose f32 result ties between two
// bf16s), 65536 + 5 elements so that the scalar tail runs too; the reference is the scalar
// definition, FloatToBf16Bits(op(a, b)) on the widened values.
#include "sim/interp/simd_kernels.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "sim/ir/float_types.h"
#include "tests/interp/interp_test_util.h"

namespace perfsim {
namespace {

using ::perfsim::interp::BinaryOp;
using ::perfsim::testing::Run1;

constexpr int64_t kCount = 65536 + 5;

Literal Bf16Patterns(uint32_t multiplier, uint32_t offset) {
  Literal literal(Shape::Array(PrimitiveType::kBF16, {kCount}));
  for (int64_t i = 0; i < kCount; ++i) {
    literal.SetBits(i, (static_cast<uint32_t>(i) * multiplier + offset) & 0xffff);
  }
  return literal;
}

float Widen(const Literal& l, int64_t i) {
  return Bf16BitsToFloat(static_cast<uint16_t>(l.GetBits(i)));
}

TEST(SimdKernels, Bf16ArithmeticMatchesTheScalarDefinition) {
  // b runs through the patterns in another order, so every a meets many kinds of b.
  const Literal a = Bf16Patterns(1, 0);
  const Literal b = Bf16Patterns(40503, 12345);
  for (const std::string op : {"add", "subtract", "multiply", "divide"}) {
    const std::string hlo =
        absl::StrCat("HloModule m\nENTRY e {\n  a = bf16[", kCount, "] parameter(0)\n  b = bf16[",
                     kCount, "] parameter(1)\n  ROOT r = bf16[", kCount, "] ", op, "(a, b)\n}\n");
    absl::StatusOr<std::vector<Literal>> out = Run1(hlo, {a, b});
    ASSERT_TRUE(out.ok()) << out.status();
    int64_t mismatches = 0;
    for (int64_t i = 0; i < kCount; ++i) {
      const float x = Widen(a, i);
      const float y = Widen(b, i);
      const float r = op == "add"        ? x + y
                      : op == "subtract" ? x - y
                      : op == "multiply" ? x * y
                                         : x / y;
      const uint64_t want = FloatToBf16Bits(r);
      const uint64_t got = (*out)[0].GetBits(i);
      if (got != want && ++mismatches <= 3) {
        ADD_FAILURE() << op << " element " << i << ": " << a.GetBits(i) << " op " << b.GetBits(i)
                      << " gives " << got << "; the scalar definition " << want;
      }
    }
    EXPECT_EQ(mismatches, 0) << op;
  }
}

TEST(SimdKernels, F32ArithmeticMatchesScalarOps) {
  // Specials, subnormals, signed zeros and ordinary values, 37 elements (two vectors and a
  // tail), each meeting another through a rotation.
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> pool = {
      0.0f,    -0.0f,           1.0f, -1.5f, inf,      -inf,     NAN,   1e-40f, -3e-39f,
      3.4e38f, 1.17549435e-38f, 7.0f, 0.1f,  -2.5e-7f, 65504.0f, 1e30f, -1e-30f};
  const int64_t n = 37;
  std::vector<float> a(n), b(n), out(n);
  for (int64_t i = 0; i < n; ++i) {
    a[i] = pool[i % pool.size()];
    b[i] = pool[(i * 7 + 3) % pool.size()];
  }
  for (const BinaryOp op :
       {BinaryOp::kAdd, BinaryOp::kSubtract, BinaryOp::kMultiply, BinaryOp::kDivide}) {
    if (!interp::simd::F32Binary(op, reinterpret_cast<const uint8_t*>(a.data()),
                                 reinterpret_cast<const uint8_t*>(b.data()),
                                 reinterpret_cast<uint8_t*>(out.data()), n)) {
      GTEST_SKIP() << "no AVX-512 on this machine";
    }
    for (int64_t i = 0; i < n; ++i) {
      const float want = op == BinaryOp::kAdd        ? a[i] + b[i]
                         : op == BinaryOp::kSubtract ? a[i] - b[i]
                         : op == BinaryOp::kMultiply ? a[i] * b[i]
                                                     : a[i] / b[i];
      uint32_t got_bits;
      uint32_t want_bits;
      std::memcpy(&got_bits, &out[i], 4);
      std::memcpy(&want_bits, &want, 4);
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(out[i])) << i;
      } else {
        EXPECT_EQ(got_bits, want_bits) << "op " << static_cast<int>(op) << " element " << i;
      }
    }
  }
}

TEST(SimdKernels, CountIeee16SpecialsIncludingTheTail) {
  const Literal all = Bf16Patterns(1, 0);  // every pattern, then 0..4 again
  int64_t nan = -1;
  int64_t inf = -1;
  if (!interp::simd::CountIeee16Specials(all.data().data(), kCount, 0x7f80, &nan, &inf)) {
    GTEST_SKIP() << "no AVX-512BW on this machine";
  }
  EXPECT_EQ(nan, 254);
  EXPECT_EQ(inf, 2);
  // The last 5 elements alone (the scalar tail only): 0x7f80..0x7f84 is inf then 4 NaNs.
  Literal tail(Shape::Array(PrimitiveType::kBF16, {5}));
  for (int64_t i = 0; i < 5; ++i) tail.SetBits(i, 0x7f80 + i);
  ASSERT_TRUE(interp::simd::CountIeee16Specials(tail.data().data(), 5, 0x7f80, &nan, &inf));
  EXPECT_EQ(nan, 4);
  EXPECT_EQ(inf, 1);
}

}  // namespace
}  // namespace perfsim
