// fft, triangular-solve, cholesky, batch-norm-*, complex, scan and scaled-dot in the
// interpreter. The JAX goldens (tests/testdata/linalg, made by tools/jax/linalg_goldens.py)
// check every fft_type and every triangular-solve option against jnp; the small cases below
// carry their derivation.
#include <cmath>
#include <complex>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/interp/npy.h"
#include "sim/util/textproto.h"
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

const std::string kDir = std::string(PERFSIM_TESTDATA_DIR) + "/linalg/";

struct GoldenCase {
  const char* name;
  int inputs;
  int outputs;
  double tolerance;  // absolute, on values of order 1
};

class LinalgJaxGolden : public ::testing::TestWithParam<GoldenCase> {};

std::vector<std::complex<double>> AsComplex(const Literal& literal) {
  if (IsComplex(literal.shape().element_type())) return ComplexValues(literal);
  std::vector<std::complex<double>> out;
  for (double v : Values(literal)) out.emplace_back(v, 0.0);
  return out;
}

TEST_P(LinalgJaxGolden, MatchesJax) {
  const GoldenCase& c = GetParam();
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::string hlo, ReadTextFile(kDir + c.name + ".hlo"));
  std::vector<Literal> inputs;
  for (int i = 0; i < c.inputs; ++i) {
    PERFSIM_ASSERT_OK_AND_ASSIGN(Literal in,
                                 ReadNpyFile(kDir + c.name + ".in" + std::to_string(i) + ".npy"));
    inputs.push_back(std::move(in));
  }
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::vector<Literal> outputs, Run1(hlo, std::move(inputs)));
  ASSERT_EQ(static_cast<int>(outputs.size()), c.outputs);
  for (int i = 0; i < c.outputs; ++i) {
    PERFSIM_ASSERT_OK_AND_ASSIGN(
        Literal want, ReadNpyFile(kDir + c.name + ".out" + std::to_string(i) + ".npy"));
    ASSERT_EQ(outputs[i].shape().dimensions(), want.shape().dimensions()) << "output " << i;
    ASSERT_EQ(outputs[i].shape().element_type(), want.shape().element_type()) << "output " << i;
    const std::vector<std::complex<double>> got = AsComplex(outputs[i]);
    const std::vector<std::complex<double>> expected = AsComplex(want);
    ASSERT_EQ(got.size(), expected.size());
    for (size_t k = 0; k < got.size(); ++k) {
      EXPECT_NEAR(got[k].real(), expected[k].real(), c.tolerance) << "output " << i << " [" << k << "]";
      EXPECT_NEAR(got[k].imag(), expected[k].imag(), c.tolerance) << "output " << i << " [" << k << "]";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, LinalgJaxGolden,
    ::testing::Values(GoldenCase{"fft_1d", 1, 1, 1e-5}, GoldenCase{"ifft_2d", 1, 1, 1e-5},
                      GoldenCase{"rfft_2d", 1, 1, 1e-5}, GoldenCase{"irfft_1d", 1, 1, 1e-5},
                      GoldenCase{"irfft_2d", 1, 1, 1e-5},
                      GoldenCase{"trsm_left_lower", 2, 1, 1e-5},
                      GoldenCase{"trsm_left_upper_transpose", 2, 1, 1e-5},
                      GoldenCase{"trsm_right_lower_unit", 2, 1, 1e-5},
                      GoldenCase{"trsm_left_lower_adjoint_c64", 2, 1, 1e-5},
                      GoldenCase{"cholesky_lower", 1, 1, 1e-5},
                      GoldenCase{"cholesky_upper", 1, 1, 1e-5},
                      GoldenCase{"batch_norm_training", 3, 3, 1e-5},
                      GoldenCase{"batch_norm_inference", 5, 1, 1e-5},
                      GoldenCase{"batch_norm_grad", 5, 3, 1e-5}),
    [](const ::testing::TestParamInfo<GoldenCase>& info) { return std::string(info.param.name); });

TEST(InterpLinalg, ComplexPairsRealAndImaginaryParts) {
  constexpr char kHlo[] = R"(
HloModule m
ENTRY e {
  re = f32[2] parameter(0)
  im = f32[2] parameter(1)
  ROOT z = c64[2] complex(re, im)
})";
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::vector<Literal> out,
                               Run1(kHlo, {F32({2}, {1, -3}), F32({2}, {2, 0.5})}));
  EXPECT_THAT(ComplexValues(out[0]),
              ElementsAre(std::complex<double>(1, 2), std::complex<double>(-3, 0.5)));
}

TEST(InterpLinalg, FftOfAnImpulseIsFlatAndIfftInvertsIt) {
  // DFT of the unit impulse [1, 0, 0, 0] is X[k] = sum_t x[t] w^(kt) = 1 for every k; the
  // inverse of [1, 1, 1, 1] is (1/4) sum_k 1·w^(-kt) = [1, 0, 0, 0].
  constexpr char kHlo[] = R"(
HloModule m
ENTRY e {
  x = c64[4] parameter(0)
  f = c64[4] fft(x), fft_type=FFT, fft_length={4}
  i = c64[4] fft(f), fft_type=IFFT, fft_length={4}
  ROOT t = (c64[4], c64[4]) tuple(f, i)
})";
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::vector<Literal> out, Run1(kHlo, {C64({4}, {1, 0, 0, 0})}));
  for (const auto& v : ComplexValues(out[0])) {
    EXPECT_NEAR(v.real(), 1.0, 1e-7);
    EXPECT_NEAR(v.imag(), 0.0, 1e-7);
  }
  const std::vector<std::complex<double>> back = ComplexValues(out[1]);
  for (int k = 0; k < 4; ++k) {
    EXPECT_NEAR(back[k].real(), k == 0 ? 1.0 : 0.0, 1e-7);
    EXPECT_NEAR(back[k].imag(), 0.0, 1e-7);
  }
}

TEST(InterpLinalg, TriangularSolveSubstitutesForward) {
  // a = [[2, 0], [1, 4]] (lower; the 9 above the diagonal is not read), b = [[4], [10]]:
  // 2·x0 = 4 -> x0 = 2; 1·x0 + 4·x1 = 10 -> x1 = 2.
  constexpr char kHlo[] = R"(
HloModule m
ENTRY e {
  a = f32[2,2] parameter(0)
  b = f32[2,1] parameter(1)
  ROOT x = f32[2,1] triangular-solve(a, b), left_side=true, lower=true, transpose_a=NO_TRANSPOSE
})";
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::vector<Literal> out,
                               Run1(kHlo, {F32({2, 2}, {2, 9, 1, 4}), F32({2, 1}, {4, 10})}));
  EXPECT_THAT(Values(out[0]), ElementsAre(2, 2));
}

TEST(InterpLinalg, CholeskyOfAProductGivesTheFactorBack) {
  // L = [[2, 0], [1, 3]]: L·L^T = [[4, 2], [2, 10]]. The upper triangle of the result is 0.
  constexpr char kHlo[] = R"(
HloModule m
ENTRY e {
  a = f32[2,2] parameter(0)
  ROOT l = f32[2,2] cholesky(a), lower=true
})";
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::vector<Literal> out, Run1(kHlo, {F32({2, 2}, {4, 2, 2, 10})}));
  EXPECT_THAT(Values(out[0]), ElementsAre(2, 0, 1, 3));
}

TEST(InterpLinalg, CholeskyOfAnIndefiniteMatrixIsNaN) {
  // [[1, 2], [2, 1]] has eigenvalues 3 and -1: no real factor; the batch element is NaN.
  constexpr char kHlo[] = R"(
HloModule m
ENTRY e {
  a = f32[2,2] parameter(0)
  ROOT l = f32[2,2] cholesky(a), lower=true
})";
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::vector<Literal> out, Run1(kHlo, {F32({2, 2}, {1, 2, 2, 1})}));
  for (double v : Values(out[0])) EXPECT_TRUE(std::isnan(v));
}

TEST(InterpLinalg, ScanThreadsTheCarryAndStacksOutputs) {
  // XLA's hlo_evaluator_test scan: running sum of {1, 2, 3, 4} from 0 is {1, 3, 6, 10} with
  // final carry 10; reversed it is {10, 9, 7, 4} (sums from the end) with final carry 10.
  constexpr char kHlo[] = R"(
HloModule m
add {
  x = f32[] parameter(0)
  c = f32[] parameter(1)
  s = f32[] add(x, c)
  ROOT t = (f32[], f32[]) tuple(s, s)
}
ENTRY e {
  input = f32[4] parameter(0)
  init = f32[] parameter(1)
  fwd = (f32[4], f32[]) scan(input, init), dimensions={0}, num_carries=1, to_apply=add
  rev = (f32[4], f32[]) scan(input, init), dimensions={0}, num_carries=1, is_reverse=true, to_apply=add
  f0 = f32[4] get-tuple-element(fwd), index=0
  f1 = f32[] get-tuple-element(fwd), index=1
  r0 = f32[4] get-tuple-element(rev), index=0
  ROOT t = (f32[4], f32[], f32[4]) tuple(f0, f1, r0)
})";
  PERFSIM_ASSERT_OK_AND_ASSIGN(std::vector<Literal> out,
                               Run1(kHlo, {F32({4}, {1, 2, 3, 4}), F32({}, {0})}));
  EXPECT_THAT(Values(out[0]), ElementsAre(1, 3, 6, 10));
  EXPECT_THAT(Values(out[1]), ElementsAre(10));
  EXPECT_THAT(Values(out[2]), ElementsAre(10, 9, 7, 4));
}

TEST(InterpLinalg, ScanAlongAnInnerDimensionSlicesThere) {
  // XLA's hlo_evaluator_test: input {{{1,2},{3,4}},{{5,6},{7,8}}} scanned along dimension 1
  // from zeros: step 0 adds x[:,0,:] = {{1,2},{5,6}}; step 1 adds x[:,1,:] = {{3,4},{7,8}},
  // giving {{4,6},{12,14}}. The outputs stack the running sums back along dimension 1.
  constexpr char kHlo[] = R"(
HloModule m
add {
  x = f32[2,2] parameter(0)
  c = f32[2,2] parameter(1)
  s = f32[2,2] add(x, c)
  ROOT t = (f32[2,2], f32[2,2]) tuple(s, s)
}
ENTRY e {
  input = f32[2,2,2] parameter(0)
  init = f32[2,2] parameter(1)
  ROOT scan = (f32[2,2,2], f32[2,2]) scan(input, init), dimensions={1}, num_carries=1, to_apply=add
})";
  PERFSIM_ASSERT_OK_AND_ASSIGN(
      std::vector<Literal> out,
      Run1(kHlo, {F32({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8}), F32({2, 2}, {0, 0, 0, 0})}));
  EXPECT_THAT(Values(out[0]), ElementsAre(1, 2, 4, 6, 5, 6, 12, 14));
  EXPECT_THAT(Values(out[1]), ElementsAre(4, 6, 12, 14));
}

TEST(InterpLinalg, ScaledDotIsRefusedByName) {
  constexpr char kHlo[] = R"(
HloModule m
ENTRY e {
  a = f32[2,4] parameter(0)
  b = f32[4,2] parameter(1)
  as = f32[2,2] parameter(2)
  bs = f32[2,2] parameter(3)
  ROOT d = f32[2,2] scaled-dot(a, b, as, bs), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})";
  EXPECT_THAT(Run1(kHlo, {F32({2, 4}, std::vector<double>(8, 1)), F32({4, 2}, std::vector<double>(8, 1)),
                          F32({2, 2}, {1, 1, 1, 1}), F32({2, 2}, {1, 1, 1, 1})}),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("scaled-dot")));
}

}  // namespace
}  // namespace perfsim
