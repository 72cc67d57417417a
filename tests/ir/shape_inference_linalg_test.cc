// Shape inference for fft, triangular-solve, cholesky, batch-norm-*, complex and scaled-dot
// (sim/ir/shape_inference_linalg.cc) and scan (shape_inference_scan.cc).
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/ir/hlo_parser.h"
#include "sim/ir/shape_inference.h"
#include "sim/ir/verifier.h"
#include "sim/util/status_matchers.h"
#include "tests/ir/test_builder.h"

namespace perfsim {
namespace {

using ::perfsim::testing::HloBuilder;
using ::perfsim::testing::InfersShape;
using ::perfsim::testing::StatusIs;
using ::perfsim::testing::TestModule;
using ::testing::HasSubstr;

MATCHER_P(FailsWith, substring, "") {
  return ::testing::ExplainMatchResult(
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(substring)), arg, result_listener);
}

Instruction* Fft(HloBuilder& b, absl::string_view shape, Instruction* x, FftType type,
                 std::vector<int64_t> length) {
  Instruction* fft = b.Add(Opcode::kFft, shape, {x});
  fft->mutable_attributes()->fft_type = type;
  fft->mutable_attributes()->fft_length = std::move(length);
  return fft;
}

TEST(ShapeInference, RfftKeepsHalfTheLastLengthPlusOne) {
  // f32[5,64,32] over {64,32}: the last dimension becomes 32/2 + 1 = 17, the type c64.
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* x = b.Parameter(0, "f32[5,64,32]");
  EXPECT_THAT(InferShape(*Fft(b, "c64[5,64,17]", x, FftType::kRfft, {64, 32})),
              InfersShape("c64[5,64,17]"));
}

TEST(ShapeInference, IrfftRestoresTheLengthAndChecksTheHalfSpectrum) {
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* good = b.Parameter(0, "c64[3,5]");
  Instruction* bad = b.Parameter(1, "c64[3,6]");
  EXPECT_THAT(InferShape(*Fft(b, "f32[3,8]", good, FftType::kIrfft, {8})),
              InfersShape("f32[3,8]"));
  // 8/2 + 1 = 5 bins expected, 6 given.
  EXPECT_THAT(InferShape(*Fft(b, "f32[3,8]", bad, FftType::kIrfft, {8})),
              FailsWith("expected IRFFT innermost dimension to be fft_length/2+1 = 5; got 6"));
}

TEST(ShapeInference, FftNeedsAComplexOperandButNotMatchingLengths) {
  // XLA's own tests hold c64[8] fft(x), fft_length={32} as valid: FFT does not compare.
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* c = b.Parameter(0, "c64[8]");
  Instruction* r = b.Parameter(1, "f32[8]");
  EXPECT_THAT(InferShape(*Fft(b, "c64[8]", c, FftType::kFft, {32})), InfersShape("c64[8]"));
  EXPECT_THAT(InferShape(*Fft(b, "c64[8]", r, FftType::kFft, {8})),
              FailsWith("expected a complex operand for FFT; got f32[8]"));
}

TEST(ShapeInference, TriangularSolveSharesAsMinorDimensionWithB) {
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* a = b.Parameter(0, "f32[2,4,4]");
  Instruction* left = b.Parameter(1, "f32[2,4,3]");
  Instruction* right = b.Parameter(2, "f32[2,3,4]");
  Instruction* solve_left = b.Add(Opcode::kTriangularSolve, "f32[2,4,3]", {a, left});
  solve_left->mutable_attributes()->left_side = true;
  EXPECT_THAT(InferShape(*solve_left), InfersShape("f32[2,4,3]"));
  // Right side: b's minor dimension (4) is the shared one; [2,4,3] has 3 there.
  Instruction* solve_right = b.Add(Opcode::kTriangularSolve, "f32[2,3,4]", {a, right});
  EXPECT_THAT(InferShape(*solve_right), InfersShape("f32[2,3,4]"));
  Instruction* wrong = b.Add(Opcode::kTriangularSolve, "f32[2,4,3]", {a, left});
  EXPECT_THAT(InferShape(*wrong), FailsWith("expected b dimension 2 (right side) to equal a's 4; got 3"));
}

TEST(ShapeInference, CholeskyNeedsSquareMinorDimensions) {
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* a = b.Parameter(0, "f32[3,4]");
  EXPECT_THAT(InferShape(*b.Add(Opcode::kCholesky, "f32[3,4]", {a})),
              FailsWith("expected the two minor dimensions of a of equal size; got f32[3,4]"));
}

TEST(ShapeInference, BatchNormTrainingGivesPerFeatureStatistics) {
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* x = b.Parameter(0, "f32[8,4]");
  Instruction* scale = b.Parameter(1, "f32[4]");
  Instruction* offset = b.Parameter(2, "f32[3]");
  Instruction* ok = b.Add(Opcode::kBatchNormTraining, "(f32[8,4], f32[4], f32[4])", {x, scale, scale});
  ok->mutable_attributes()->feature_index = 1;
  EXPECT_THAT(InferShape(*ok), InfersShape("(f32[8,4], f32[4], f32[4])"));
  Instruction* bad = b.Add(Opcode::kBatchNormTraining, "(f32[8,4], f32[4], f32[4])", {x, scale, offset});
  bad->mutable_attributes()->feature_index = 1;
  EXPECT_THAT(InferShape(*bad),
              FailsWith("expected offset (operand 2) of shape f32[4] (one per feature); got f32[3]"));
}

TEST(ShapeInference, ComplexTakesTwoEqualRealArrays) {
  TestModule m;
  HloBuilder b = m.Entry();
  Instruction* re = b.Parameter(0, "f64[2,3]");
  Instruction* im = b.Parameter(1, "f64[2,3]");
  Instruction* ints = b.Parameter(2, "s32[2,3]");
  EXPECT_THAT(InferShape(*b.Add(Opcode::kComplex, "c128[2,3]", {re, im})), InfersShape("c128[2,3]"));
  EXPECT_THAT(InferShape(*b.Add(Opcode::kComplex, "c64[2,3]", {ints, ints})),
              FailsWith("expected an f32 or f64 real part; got s32[2,3]"));
}

TEST(ShapeInference, ScanStacksOutputsAndKeepsCarries) {
  // XLA's hlo_evaluator_test: body (f32[2] x, f32[2,2] carry) -> (f32[2], f32[2,2]) scanned
  // over f32[2,2] along dimension 0 (length 2) gives (f32[2,2], f32[2,2]).
  constexpr char kHlo[] = R"(HloModule m
body {
  x = f32[2] parameter(0)
  y = f32[2,2] parameter(1)
  b = f32[2,2] broadcast(x), dimensions={1}
  a = f32[2,2] add(b, y)
  ROOT t = (f32[2], f32[2,2]) tuple(x, a)
}
ENTRY e {
  input = f32[2,2] parameter(0)
  init = f32[2,2] parameter(1)
  ROOT scan = (f32[2,2], f32[2,2]) scan(input, init), dimensions={0}, num_carries=1, to_apply=body
})";
  absl::StatusOr<std::unique_ptr<Module>> module = ParseHloModule(kHlo, "scan.hlo");
  ASSERT_TRUE(module.ok()) << module.status();
  EXPECT_THAT(InferShape(*(*module)->entry()->root()), InfersShape("(f32[2,2], f32[2,2])"));
  EXPECT_TRUE(VerifyModule(**module).ok());
}

TEST(ShapeInference, ScanRejectsACarryThatChangesShape) {
  constexpr char kHlo[] = R"(HloModule m
body {
  x = f32[] parameter(0)
  c = f32[] parameter(1)
  b = f32[2] broadcast(c), dimensions={}
  ROOT t = (f32[], f32[2]) tuple(x, b)
}
ENTRY e {
  input = f32[4] parameter(0)
  init = f32[] parameter(1)
  ROOT scan = (f32[4], f32[]) scan(input, init), dimensions={0}, num_carries=1, to_apply=body
})";
  absl::StatusOr<std::unique_ptr<Module>> module = ParseHloModule(kHlo, "scan.hlo");
  ASSERT_TRUE(module.ok()) << module.status();
  EXPECT_THAT(InferShape(*(*module)->entry()->root()),
              FailsWith("expected carry 0 returned by body to keep its shape f32[]; got f32[2]"));
}

}  // namespace
}  // namespace perfsim
