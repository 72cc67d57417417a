// Complex element types (c64, c128) in the interpreter: arithmetic, the ops that change the
// element type (abs, real, imag, convert), dots without conjugation, XLA's special cases of
// pow, and the ops XLA does not define on complex numbers. Expected values are derived by hand
// in the comments.
#include <cmath>
#include <complex>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/util/status_matchers.h"
#include "tests/interp/interp_test_util.h"

namespace perfsim {
namespace {

using ::perfsim::testing::C64;
using ::perfsim::testing::ComplexValues;
using ::perfsim::testing::F32;
using ::perfsim::testing::Run1;
using ::perfsim::testing::StatusIs;
using ::perfsim::testing::Values;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

using Cd = std::complex<double>;

TEST(InterpComplex, ArithmeticFollowsTheFieldRules) {
  // a = 1 + 2i, b = 3 - i:
  //   a + b = 4 + i;  a - b = -2 + 3i;
  //   a * b = 3 - i + 6i - 2i^2 = 5 + 5i;
  //   a / b = a * conj(b) / |b|^2 = (1 + 2i)(3 + i) / 10 = (3 + i + 6i - 2) / 10 = 0.1 + 0.7i.
  // All of these are exact in f32 but 0.1 and 0.7, which round once.
  constexpr char kHlo[] = R"(
HloModule m
ENTRY e {
  a = c64[] parameter(0)
  b = c64[] parameter(1)
  s = c64[] add(a, b)
  d = c64[] subtract(a, b)
  p = c64[] multiply(a, b)
  q = c64[] divide(a, b)
  ROOT t = (c64[], c64[], c64[], c64[]) tuple(s, d, p, q)
})";
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::vector<Literal> out,
                               Run1(kHlo, {C64({}, {Cd(1, 2)}), C64({}, {Cd(3, -1)})}));
  EXPECT_EQ(ComplexValues(out[0])[0], Cd(4, 1));
  EXPECT_EQ(ComplexValues(out[1])[0], Cd(-2, 3));
  EXPECT_EQ(ComplexValues(out[2])[0], Cd(5, 5));
  const Cd q = ComplexValues(out[3])[0];
  EXPECT_NEAR(q.real(), 0.1, 1e-7);
  EXPECT_NEAR(q.imag(), 0.7, 1e-7);
}

TEST(InterpComplex, AbsRealAndImagGiveTheComponentType) {
  // |3 + 4i| = 5, |-5 - 12i| = 13 (Pythagorean triples, exact in f32).
  constexpr char kHlo[] = R"(
HloModule m
ENTRY e {
  z = c64[2] parameter(0)
  a = f32[2] abs(z)
  r = f32[2] real(z)
  i = f32[2] imag(z)
  ROOT t = (f32[2], f32[2], f32[2]) tuple(a, r, i)
})";
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::vector<Literal> out,
                               Run1(kHlo, {C64({2}, {Cd(3, 4), Cd(-5, -12)})}));
  EXPECT_EQ(out[0].shape().element_type(), PrimitiveType::kF32);
  EXPECT_THAT(Values(out[0]), ElementsAre(5, 13));
  EXPECT_THAT(Values(out[1]), ElementsAre(3, -5));
  EXPECT_THAT(Values(out[2]), ElementsAre(4, -12));
}

TEST(InterpComplex, ConvertFromRealHasZeroImaginaryPartAndWidensToC128) {
  constexpr char kHlo[] = R"(
HloModule m
ENTRY e {
  x = f32[2] parameter(0)
  c = c64[2] convert(x)
  ROOT w = c128[2] convert(c)
})";
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::vector<Literal> out, Run1(kHlo, {F32({2}, {1.5, -2})}));
  EXPECT_EQ(out[0].shape().element_type(), PrimitiveType::kC128);
  EXPECT_THAT(ComplexValues(out[0]), ElementsAre(Cd(1.5, 0), Cd(-2, 0)));
}

TEST(InterpComplex, ConvertToARealTypeTakesTheRealPartAndToPredIsRefused) {
  // As XLA:CPU's elemental emitter: complex -> a real type keeps the real part; complex -> pred
  // has no meaning (compare with 0 instead).
  constexpr char kReal[] = R"(
HloModule m
ENTRY e {
  z = c64[2] parameter(0)
  ROOT x = f32[2] convert(z)
})";
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::vector<Literal> out,
                               Run1(kReal, {C64({2}, {Cd(1.5, 1), Cd(-2, 2)})}));
  EXPECT_THAT(Values(out[0]), ElementsAre(1.5, -2));
  constexpr char kPred[] = R"(
HloModule m
ENTRY e {
  z = c64[2] parameter(0)
  ROOT x = pred[2] convert(z)
})";
  EXPECT_THAT(Run1(kPred, {C64({2}, {Cd(1, 1), Cd(2, 2)})}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("got pred")));
}

TEST(InterpComplex, DotDoesNotConjugate) {
  // [1 + i, 2] . [1 - i, i] = (1 + i)(1 - i) + 2i = 2 + 2i. With conjugation of the lhs it
  // would be (1 - i)(1 - i) + 2i = -2i + 2i = 0.
  constexpr char kHlo[] = R"(
HloModule m
ENTRY e {
  a = c64[2] parameter(0)
  b = c64[2] parameter(1)
  ROOT d = c64[] dot(a, b), lhs_contracting_dims={0}, rhs_contracting_dims={0}
})";
  PERFSIM_ASSERT_OK_AND_ASSIGN(
      std::vector<Literal> out,
      Run1(kHlo, {C64({2}, {Cd(1, 1), Cd(2, 0)}), C64({2}, {Cd(1, -1), Cd(0, 1)})}));
  EXPECT_EQ(ComplexValues(out[0])[0], Cd(2, 2));
}

TEST(InterpComplex, ExpAndExpm1) {
  // exp(i·pi) = -1 (to f32 rounding of pi). expm1(z) for z = 1e-6 + 1e-6 i: to first order
  // z + z^2/2 = 1e-6 + 1e-6 i + (2e-12 i)/2 = 1e-6 + (1e-6 + 1e-12) i; the real part is
  // 1e-6 - 0 + O(1e-18). Computed as exp(z) - 1 in f32 it would lose every digit (the spacing
  // of f32 next to 1 is 1.2e-7).
  constexpr char kHlo[] = R"(
HloModule m
ENTRY e {
  z = c64[2] parameter(0)
  e = c64[2] exponential(z)
  m = c64[2] exponential-minus-one(z)
  ROOT t = (c64[2], c64[2]) tuple(e, m)
})";
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::vector<Literal> out,
                               Run1(kHlo, {C64({2}, {Cd(0, M_PI), Cd(1e-6, 1e-6)})}));
  const Cd e = ComplexValues(out[0])[0];
  EXPECT_NEAR(e.real(), -1, 1e-6);
  EXPECT_NEAR(e.imag(), 0, 1e-6);
  const Cd m = ComplexValues(out[1])[1];
  EXPECT_NEAR(m.real(), 1e-6, 1e-12);
  EXPECT_NEAR(m.imag(), 1e-6, 1e-12);
}

TEST(InterpComplex, PowerHasXlasSpecialCases) {
  // pow(z, 0) = 1 for every z, 0 included (exp(0 · log 0) would be NaN);
  // pow(0, 2) = 0 for a real positive exponent (log 0 is -inf);
  // pow(i, 2) = -1.
  constexpr char kHlo[] = R"(
HloModule m
ENTRY e {
  z = c64[3] parameter(0)
  w = c64[3] parameter(1)
  ROOT p = c64[3] power(z, w)
})";
  PERFSIM_ASSERT_OK_AND_ASSIGN(
      std::vector<Literal> out,
      Run1(kHlo, {C64({3}, {Cd(0, 0), Cd(0, 0), Cd(0, 1)}), C64({3}, {Cd(0, 0), Cd(2, 0), Cd(2, 0)})}));
  const std::vector<Cd> p = ComplexValues(out[0]);
  EXPECT_EQ(p[0], Cd(1, 0));
  EXPECT_EQ(p[1], Cd(0, 0));
  EXPECT_NEAR(p[2].real(), -1, 1e-6);
  EXPECT_NEAR(p[2].imag(), 0, 1e-6);
}

TEST(InterpComplex, EqualityComparesButOrderingIsRefused) {
  constexpr char kEq[] = R"(
HloModule m
ENTRY e {
  a = c64[2] parameter(0)
  b = c64[2] parameter(1)
  ROOT c = pred[2] compare(a, b), direction=EQ
})";
  // 1 + 2i == 1 + 2i; 1 + 2i != 1 - 2i (same real part, same modulus).
  PERFSIM_ASSERT_OK_AND_ASSIGN(
      std::vector<Literal> out,
      Run1(kEq, {C64({2}, {Cd(1, 2), Cd(1, 2)}), C64({2}, {Cd(1, 2), Cd(1, -2)})}));
  EXPECT_THAT(Values(out[0]), ElementsAre(1, 0));
  constexpr char kLt[] = R"(
HloModule m
ENTRY e {
  a = c64[2] parameter(0)
  b = c64[2] parameter(1)
  ROOT c = pred[2] compare(a, b), direction=LT
})";
  EXPECT_THAT(Run1(kLt, {C64({2}, {Cd(1, 2), Cd(1, 2)}), C64({2}, {Cd(1, 2), Cd(1, -2)})}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("c64")));
}

TEST(InterpComplex, OpsDefinedOnRealsOnlyAreRefusedNamingTheType) {
  // maximum has no meaning on complex numbers.
  constexpr char kHlo[] = R"(
HloModule m
ENTRY e {
  a = c64[2] parameter(0)
  ROOT m = c64[2] maximum(a, a)
})";
  EXPECT_THAT(Run1(kHlo, {C64({2}, {Cd(1, 2), Cd(3, 4)})}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("c64")));
}

}  // namespace
}  // namespace perfsim
